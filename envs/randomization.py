"""Per-episode randomisation: terrain, surfaces and soil, wetness, payload and hardware biases.

Everything is drawn from generators the environment derives from its reset seed (``reset(seed=...)``),
one independent stream per part, so the same seed gives the same episode bit for bit, and changing one
part of the config does not shift the draws of another. The ``randomization`` section of a task config::

    randomization:
      terrain:                 # the ground of every episode
        kind: rough            # flat | rough (fractal hills with a flat spawn area, acres_gym.terrain.rough)
        size_m: 300            # square grid, centred on the origin
        cell_m: 1.0
        surface: grass         # base surface (a name of configs/surfaces.json or soils.json, or "soil")
        roughness_m: [0.0, 0.08]   # RMS height, a number or a uniform range [low, high]
        hill_wavelength_m: 40
        bump_wavelength_m: 4
        flat_radius_m: 6       # level ground around the spawn point
        grade_pct: 0           # a tilt of the whole ground, % (rise / run): a number or a range
        grade_direction_deg: 0 # direction of ascent from +x, counter-clockwise, deg: a number or a range
      patches:                 # null = one surface; else patches of surfaces (acres_gym.terrain.with_patches)
        surfaces: {grass: 3, gravel: 1, packed_dirt: 1, soil: 1}
        scale_m: 20
      wetness: [0.0, 0.5]      # per patch (or for the whole ground without patches); null = surface defaults
      soil:                    # what "soil" means this episode (acres_gym.terrain.soil_random.draw_soil)
        names: null            # soils of configs/soils.json to pick from; null = all
        scale: null            # relative ranges of the soil parameters; null = draw_soil's defaults (a range
                               # that could draw a soil outside the limits of terrain/soil_spec.py is refused)
      payload:
        cargo_kg: [0, 200]     # mass.cargo_kg; null = the vehicle file's value
        occupants: [1, 4]      # mass.occupants (integers, inclusive)
      biases:                  # hardware biases; null = the vehicle file's value
        ulc_speed_mps: [-0.1, 0.1]     # dbw.bias.ulc_speed_mps
        throttle_pct: [-2, 2]          # dbw.bias.throttle_pct
        brake_bar: [-2, 2]             # dbw.bias.brake_bar
        steering_center_deg: [-3, 3]   # steering.center_deg

Every value that is a range may also be a single number (no randomisation). A grade tilts the flat or
rough ground by a plane through the spawn point (``acres_gym.terrain.with_grade``): ``grade_pct: [0, 20]``
with ``grade_direction_deg: 0`` makes every speed-tracking episode a climb of up to 20 % along its line
(the vehicle spawns aligned with the ground, at rest, in gear after the first step). Surface ``soil`` is the soil
drawn for the episode: each vehicle of a batch has its own soil row in the surface table
(``episode_soil_<k>``), rewritten at its reset. The parameter record of a draw is the vehicle's record
with the payload and bias overrides applied and finalised again (``acres_gym.params``), cached by the
overrides, so an episode without payload randomisation costs no re-finalising.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from acres_gym.configuration import check_keys, draw_in_range, merge_configs, number, number_range, strip_comments
from acres_gym.envs.pregen import beside
from acres_gym.params import finalize_parameters, load_vehicle, set_parameters
from acres_gym.terrain import (
    MIN_FEATURE_CELLS,
    PatchPlan,
    RoughPlan,
    SurfaceTable,
    Terrain,
    TerrainStack,
    default_surfaces,
    flat,
    graded_height,
    grid_axes,
    make_surface_table,
    patch_plan,
    rough_plan,
    uniform_surface,
)
from acres_gym.terrain.grid import MAX_GRID_POINTS
from acres_gym.terrain.soil_random import DEFAULT_SCALE, check_draws, draw_soil, load_soils
from acres_gym.terrain.soil_spec import SOIL_FIELDS, SOIL_KEYS, SOIL_SPEC, SOIL_WET_FIELDS

SOIL_SURFACE = "soil"
SOIL_SLOT = "episode_soil_{}"

DEFAULTS: dict[str, Any] = {
    "terrain": {"kind": "flat", "size_m": 300.0, "cell_m": 1.0, "surface": "dry_asphalt", "roughness_m": 0.0,
                "hill_wavelength_m": 40.0, "bump_wavelength_m": 4.0, "flat_radius_m": 6.0, "grade_pct": 0.0,
                "grade_direction_deg": 0.0},
    "patches": None,
    "wetness": None,
    "soil": {"names": None, "scale": None},
    "payload": {"cargo_kg": None, "occupants": None},
    "biases": {"ulc_speed_mps": None, "throttle_pct": None, "brake_bar": None, "steering_center_deg": None},
}
PATCH_DEFAULTS = {"surfaces": None, "scale_m": 20.0}
TERRAIN_KINDS = ("flat", "rough")
MAX_GRADE_PCT = 100.0  # 45 deg: beyond any grade the vehicle can hold or climb

# randomisation key -> vehicle parameter key
PARAMETER_KEYS = {
    ("payload", "cargo_kg"): "mass.cargo_kg",
    ("payload", "occupants"): "mass.occupants",
    ("biases", "ulc_speed_mps"): "dbw.bias.ulc_speed_mps",
    ("biases", "throttle_pct"): "dbw.bias.throttle_pct",
    ("biases", "brake_bar"): "dbw.bias.brake_bar",
    ("biases", "steering_center_deg"): "steering.center_deg",
}


@dataclass
class Draw:
    """One vehicle's randomised episode: terrain, parameter record, soil, and a summary for ``info``."""

    terrain: Terrain
    params: np.ndarray  # a (1,) array of PARAMS_DTYPE
    soil: dict | None
    summary: dict[str, Any] = field(default_factory=dict)


@functools.lru_cache(maxsize=256)
def _params_for(base_bytes: bytes, overrides: tuple) -> np.ndarray:
    """The finalised record of the base record with ``overrides`` applied (cached by its inputs)."""
    from acres_gym.schema import PARAMS_DTYPE

    # a copy through its bytes: far cheaper than numpy's copy of a record array (docs/performance.md)
    rec = np.recarray(1, PARAMS_DTYPE, buf=bytearray(base_bytes))
    if overrides:  # the base record is a finalised one and set_parameters checks each value it sets
        set_parameters(rec[0], dict(overrides), all_or_nothing=False)  # (a fresh record, dropped if this raises)
        finalize_parameters(rec[0], primary_checked=True)
    rec.flags.writeable = False
    return rec


def live_surface_records(sim) -> np.recarray:
    """The surface-table records a ``RangerSim`` hands to its kernels (written in place for the episode
    soils): ``RangerSim.surface_records``."""
    return sim.surface_records


class Randomizer:
    """Draws and applies the per-episode randomisation of N vehicles (see the module docstring)."""

    def __init__(self, config: Mapping | None, n: int, vehicle: str, vehicle_overrides: Mapping | None,
                 vehicle_overlay=None) -> None:
        self.n = n
        self.config = self._resolve(strip_comments(config or {}))
        self._check_batch_grid()
        self.uses_soil = self._uses_soil()
        self._soils = load_soils() if self._uses_soil() else None
        if self.uses_soil:
            soils = self._soils
            first = soils[next(iter(soils))]
            slot = {p.key: {"value": first[p.field], "unit": p.si_unit, "source": "episode soil slot"}
                    for p in SOIL_SPEC}
            self.table: SurfaceTable = make_surface_table({SOIL_SLOT.format(k): dict(slot) for k in range(n)})
        else:
            self.table = default_surfaces()
        self._check_surfaces()
        self.vehicle = vehicle
        self.base_params = load_vehicle(vehicle, overrides=dict(vehicle_overrides or {}), overlay=vehicle_overlay)
        self._base_bytes = np.array([self.base_params]).tobytes()
        self._check_parameter_ranges()
        self._rough: RoughPlan | None = None  # the terrain plans, made on first use
        self._patches: dict[int, PatchPlan] = {}  # by slot

    # --- config --------------------------------------------------------------------------------------
    def _resolve(self, config: dict) -> dict:
        check_keys("randomization", config, DEFAULTS)
        out = merge_configs(DEFAULTS, {k: v for k, v in config.items() if k not in ("patches", "wetness")})
        out["patches"] = config.get("patches", DEFAULTS["patches"])
        out["wetness"] = config.get("wetness", DEFAULTS["wetness"])
        t = strip_comments(out["terrain"])
        check_keys("randomization.terrain", t, DEFAULTS["terrain"])
        if t["kind"] not in TERRAIN_KINDS:
            raise ValueError(f"randomization.terrain.kind = {t['kind']!r}; allowed: {', '.join(TERRAIN_KINDS)}")
        t["size_m"] = number("randomization.terrain.size_m", t["size_m"], 0.0, 1e5, lo_open=True)
        t["cell_m"] = number("randomization.terrain.cell_m", t["cell_m"], 0.0, t["size_m"], lo_open=True)
        t["roughness_m"] = list(number_range("randomization.terrain.roughness_m", t["roughness_m"], 0.0, 100.0))
        t["hill_wavelength_m"] = _feature("randomization.terrain.hill_wavelength_m", t["hill_wavelength_m"],
                                          t["cell_m"])
        t["bump_wavelength_m"] = number("randomization.terrain.bump_wavelength_m", t["bump_wavelength_m"], 0.0,
                                        t["hill_wavelength_m"], lo_open=True)
        t["flat_radius_m"] = number("randomization.terrain.flat_radius_m", t["flat_radius_m"], 0.0, 1e5)
        t["grade_pct"] = list(number_range("randomization.terrain.grade_pct", t["grade_pct"], -MAX_GRADE_PCT,
                                           MAX_GRADE_PCT))
        t["grade_direction_deg"] = list(number_range("randomization.terrain.grade_direction_deg",
                                                     t["grade_direction_deg"], -360.0, 360.0))
        out["terrain"] = t
        if out["patches"] is not None:
            p = strip_comments(out["patches"]) if isinstance(out["patches"], Mapping) else None
            if p is None:
                raise ValueError("randomization.patches: expected {surfaces: {name: weight}, scale_m: m} or null")
            check_keys("randomization.patches", p, PATCH_DEFAULTS)
            p = {**PATCH_DEFAULTS, **p}
            if not isinstance(p["surfaces"], Mapping) or not p["surfaces"]:
                raise ValueError("randomization.patches.surfaces: expected {surface name: weight, ...}")
            p["surfaces"] = {str(k): number(f"randomization.patches.surfaces.{k}", w, 0.0)
                             for k, w in p["surfaces"].items()}
            p["scale_m"] = _feature("randomization.patches.scale_m", p["scale_m"], t["cell_m"])
            out["patches"] = p
        if out["wetness"] is not None:
            out["wetness"] = list(number_range("randomization.wetness", out["wetness"], 0.0, 1.0))
        s = strip_comments(out["soil"] or {})
        check_keys("randomization.soil", s, DEFAULTS["soil"])
        s = {**DEFAULTS["soil"], **s}
        if s["scale"] is not None:
            if not isinstance(s["scale"], Mapping):
                raise ValueError("randomization.soil.scale: expected {parameter: [low, high]} or null")
            check_keys("randomization.soil.scale", s["scale"], SOIL_KEYS)
        out["soil"] = s
        for section in ("payload", "biases"):
            sec = strip_comments(out[section] or {})
            check_keys(f"randomization.{section}", sec, DEFAULTS[section])
            out[section] = {**DEFAULTS[section], **sec}
            for key, value in out[section].items():
                if value is not None:
                    integer = key == "occupants"
                    out[section][key] = list(number_range(f"randomization.{section}.{key}", value, integer=integer))
        return out

    def _check_batch_grid(self) -> None:
        """The terrain grids of all N vehicles together hold at most ``MAX_GRID_POINTS`` points (each
        vehicle keeps its own grid: 20 bytes a point, 1.28 GB at the bound)."""
        points = self.grid_points
        if self.n * points > MAX_GRID_POINTS:
            t = self.config["terrain"]
            raise ValueError(f"randomization.terrain: size_m = {t['size_m']:g} with cell_m = {t['cell_m']:g} gives "
                             f"{points} grid points per vehicle, {self.n * points} for {self.n} vehicles, more than "
                             f"{MAX_GRID_POINTS}; allowed: at most {MAX_GRID_POINTS // self.n} points per vehicle "
                             f"(a smaller size_m, a larger cell_m or fewer vehicles)")

    def _uses_soil(self) -> bool:
        patches = self.config["patches"]
        names = list(patches["surfaces"]) if patches else []
        return SOIL_SURFACE in names or self.config["terrain"]["surface"] == SOIL_SURFACE

    def _check_surfaces(self) -> None:
        names = [self.config["terrain"]["surface"]]
        if self.config["patches"]:
            names += list(self.config["patches"]["surfaces"])
        for name in names:
            if name != SOIL_SURFACE and name not in self.table:
                raise ValueError(f"randomization: unknown surface {name!r}; known surfaces: "
                                 f"{', '.join(n for n in self.table.names if not n.startswith('episode_soil_'))}"
                                 f", or {SOIL_SURFACE!r} (the episode's drawn soil)")
        if self.uses_soil:
            # a bad soil name or scale, or one that could draw a soil outside the limits of SOIL_SPEC, fails
            # here, not at a reset
            try:
                check_draws(self.config["soil"]["names"], self._soil_scale(), soils=self._soils)
            except ValueError as exc:
                raise ValueError(f"randomization.soil: {exc}") from None

    def _soil_scale(self):
        scale = self.config["soil"]["scale"]
        return None if scale is None else {k: tuple(v) for k, v in scale.items()}

    def _check_parameter_ranges(self) -> None:
        """Build the records at both ends of every range (a bad range fails now, naming the key)."""
        for end in (0, 1):
            overrides = {}
            for (section, key), pkey in PARAMETER_KEYS.items():
                value = self.config[section][key]
                if value is not None:
                    overrides[pkey] = int(value[end]) if key == "occupants" else float(value[end])
            try:
                _params_for(self._base_bytes, tuple(sorted(overrides.items())))
            except ValueError as exc:
                raise ValueError(f"randomization: {exc}") from None

    # --- terrain -------------------------------------------------------------------------------------
    def _surface_name(self, name: str, slot: int) -> str:
        return SOIL_SLOT.format(slot) if name == SOIL_SURFACE else name

    def base_terrain(self) -> Terrain:
        """The flat ground a batch starts with (and the grid shape every drawn terrain has)."""
        t = self.config["terrain"]
        surface = self._surface_name(t["surface"], 0)
        return flat(surface, size_m=t["size_m"], cell_m=t["cell_m"], table=self.table)

    def initial_stack(self) -> TerrainStack:
        return TerrainStack.repeat(self.base_terrain(), self.n)

    @property
    def extent(self) -> tuple[float, float, float, float]:
        """(x_min, x_max, y_min, y_max) of the terrain grids, m."""
        half = 0.5 * (math.ceil(self.config["terrain"]["size_m"] / self.config["terrain"]["cell_m"] - 1e-9)
                      * self.config["terrain"]["cell_m"])
        return -half, half, -half, half

    @property
    def grid_points(self) -> int:
        """Points of each vehicle's terrain grid."""
        t = self.config["terrain"]
        side = max(2, math.ceil(t["size_m"] / t["cell_m"] - 1e-9) + 1)
        return side * side

    # --- draws ---------------------------------------------------------------------------------------
    def draw(self, slot: int, rngs: Mapping[str, np.random.Generator], spawn_xy: tuple[float, float]) -> Draw:
        """The randomised episode of the vehicle in ``slot``; ``rngs`` holds the generators ``terrain``,
        ``patches``, ``soil`` and ``vehicle``."""
        cfg = self.config
        t = cfg["terrain"]
        wet = cfg["wetness"]
        patches = None
        if cfg["patches"]:  # drawn beside the heights: the patches' own generator, no heights needed
            patches = beside(self._patch_plan(slot).maps, rngs["patches"])
        try:
            height, origin, summary = self._ground(slot, rngs["terrain"], spawn_xy)
        finally:
            maps = patches.result() if patches is not None else None
        if maps is not None:  # the patches replace the base surface
            terrain = Terrain._unchecked(height, *maps, *origin, t["cell_m"], self.table)
            summary["wetness"] = float(np.mean(terrain.wetness))
        else:
            w = None if wet is None else draw_in_range(rngs["patches"], wet)
            terrain = uniform_surface(height, *origin, t["cell_m"], self._surface_name(t["surface"], slot), w,
                                      self.table)
            summary["wetness"] = float(np.mean(terrain.wetness)) if w is None else w
        if summary["grade_pct"] != 0.0:  # the surface maps are kept, not copied
            graded = graded_height(terrain, summary["grade_pct"], math.radians(summary["grade_direction_deg"]),
                                   through_xy=spawn_xy)
            terrain = Terrain._unchecked(graded, terrain.surface_id, terrain.wetness, *origin, t["cell_m"],
                                         self.table)
        soil = None
        if self.uses_soil:
            soil = draw_soil(rngs["soil"], cfg["soil"]["names"], self._soil_scale(), soils=self._soils)
            summary["soil"] = soil["name"]
        params = self._vehicle(rngs["vehicle"], summary)
        summary["mass_kg"] = float(params.mass_kg[0])
        return Draw(terrain=terrain, params=params, soil=soil, summary=summary)

    def _ground(self, slot: int, rng: np.random.Generator, spawn_xy: tuple[float, float]
                ) -> tuple[np.ndarray, tuple[float, float], dict]:
        """The episode's heights (flat or rough), the grid's origin (x, y) and their summary with the grade
        drawn (``draw`` adds the surface maps, the patches' or the base surface's, then the grade)."""
        t = self.config["terrain"]
        summary: dict[str, Any] = {}
        if t["kind"] == "rough":
            roughness = draw_in_range(rng, t["roughness_m"])
            seed = int(rng.integers(0, 2**31 - 1))
            height, ox, oy, _ = self._rough_plan().heights(seed, roughness, spawn_xy)
        else:
            roughness = 0.0
            x, y = grid_axes(t["size_m"], t["cell_m"])
            height, ox, oy = np.zeros((y.size, x.size)), float(x[0]), float(y[0])
        summary["roughness_m"] = roughness
        summary["grade_pct"] = draw_in_range(rng, t["grade_pct"])  # (applied once the surface maps are in)
        summary["grade_direction_deg"] = draw_in_range(rng, t["grade_direction_deg"])
        return height, (ox, oy), summary

    def _rough_plan(self) -> RoughPlan:
        """The checked grid and octaves of the rough heights (``terrain.rough_plan``), made on first use."""
        if self._rough is None:
            t = self.config["terrain"]
            self._rough = rough_plan(t["size_m"], t["cell_m"], t["hill_wavelength_m"], t["bump_wavelength_m"],
                                     flat_radius_m=t["flat_radius_m"])
        return self._rough

    def _patch_plan(self, slot: int) -> PatchPlan:
        """The checked arguments of the surface patches of vehicle ``slot`` (``terrain.patch_plan``; the
        episode soil's surface is the slot's own), made on first use."""
        plan = self._patches.get(slot)
        if plan is None:
            t, p, wet = self.config["terrain"], self.config["patches"], self.config["wetness"]
            weights = {self._surface_name(k, slot): w for k, w in p["surfaces"].items()}
            plan = self._patches[slot] = patch_plan(*grid_axes(t["size_m"], t["cell_m"]), t["cell_m"], self.table,
                                                    weights, p["scale_m"], None if wet is None else tuple(wet))
        return plan

    def _vehicle(self, rng: np.random.Generator, summary: dict[str, Any]) -> np.ndarray:
        """The episode's parameter record: payload and biases drawn (and added to ``summary``)."""
        cfg = self.config
        overrides = {}
        for (section, key), pkey in PARAMETER_KEYS.items():
            value = cfg[section][key]
            if value is None:
                continue
            if key == "occupants":
                overrides[pkey] = int(rng.integers(int(value[0]), int(value[1]) + 1))
            else:
                overrides[pkey] = draw_in_range(rng, value)
            summary[key] = overrides[pkey]
        return _params_for(self._base_bytes, tuple(sorted(overrides.items())))

    def apply(self, sim, slot: int, draw: Draw) -> None:
        """Write a draw into vehicle ``slot`` of ``sim`` (before ``sim.reset`` of that vehicle)."""
        sim.terrain.replace(slot, draw.terrain)
        sim.params[slot] = draw.params[0]
        if draw.soil is not None:
            records = live_surface_records(sim)
            row = self.table.surface_id(SOIL_SLOT.format(slot))
            for f in SOIL_FIELDS + SOIL_WET_FIELDS:
                records[f][row] = draw.soil[f]
            mu = math.tan(math.radians(draw.soil["soil_friction_deg"]))
            records["mu_dry"][row] = mu
            records["mu_wet"][row] = mu

    def resolved(self) -> dict:
        """The resolved ``randomization`` section (for the saved config)."""
        return self.config

    def __getstate__(self) -> dict:
        """Pickled without the terrain plans (made again on first use; a pickle of a version without them
        loads the same way)."""
        return {key: value for key, value in self.__dict__.items() if key not in ("_rough", "_patches")}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._rough, self._patches = None, {}


def _feature(where: str, value: Any, cell_m: float) -> float:
    """A hill wavelength or patch scale of at least ``MIN_FEATURE_CELLS`` cells of the terrain grid: finer
    noise is below the grid's resolution and its gradient lattice grows as (size / wavelength)^2 (a 1e-6 m
    wavelength on the 300 m grid asks for 639 PiB)."""
    lo = MIN_FEATURE_CELLS * cell_m
    value = number(where, value, 0.0, 1e5, lo_open=True)
    if value < lo:
        raise ValueError(f"{where} = {value!r}: expected at least {lo:g} m, {MIN_FEATURE_CELLS:g} cells of "
                         f"randomization.terrain.cell_m = {cell_m:g} m (finer features are below the grid's "
                         f"resolution); allowed: [{lo:g}, 100000.0]")
    return value


__all__ = ["DEFAULTS", "DEFAULT_SCALE", "Draw", "Randomizer", "live_surface_records"]
