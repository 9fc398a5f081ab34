"""Off-road episodes: hills, soil patches, wetness and no-go areas between a start and a goal, always solvable.

``offroad_episode(seed, config, table, grade_limits)`` is a pure function of its seed and config. It draws

- the ground: gentle fractal undulation (``generate.rough``) plus ``hills`` Gaussian hills whose height
  and radius give slopes from a few percent to beyond what the vehicle climbs on any soil (the steepest
  slope of a Gaussian hill of height h and radius s is 0.61 h / s);
- the surface: patches of the ``surfaces`` mix (``generate.with_patches``), each with a wetness drawn
  from ``wetness``;
- no-go areas (water, dense vegetation): ``no_go`` discs, a boolean mask beside the terrain (entering
  one ends an episode; the vehicle model does not see it);
- the start (at rest, heading within 0.5 rad of the goal's direction) and a goal ``goal_distance_m`` away,
  each on a pad of the ground's base surface (the first of ``surfaces``; ``PAD_M`` and ``GOAL_PAD_M`` radius)
  without features within ``PAD_M`` (room for a full turn onto the route and around the goal); then
  ``line_obstacles`` features centred on the straight line between them, each one of a no-go disc, a patch of
  an ``obstacle_surfaces`` soil or a steep hill, so that driving straight at the goal meets what the ground
  offers.

Solvability: on a grid of ``route_cell_m`` cells, ``route`` searches a path from start to goal through cells
the vehicle drives in L and AWD: the uphill grade of every step stays below ``grade_margin`` x the cell's
climbable grade from the model (``acres_gym.envs.tasks.trafficability.grade_limit_table``), the side slope below
``max_side_grade``, no cell lies within ``no_go_clearance_m`` of a no-go area or of impassable ground (a soil
the vehicle high-centres in or cannot propel itself on: ``trafficability.drivable`` of the cell's L / AWD
grade at ``grade_margin``) nor within ``edge_clearance_m`` of the edge. A draw without such a path is redrawn
(``redraws`` counts them), up to ``max_redraws`` times; then ``UnsolvableConfigError`` names the keys whose
relaxing gives the last draw a route.

Config: every key is declared in ``KEYS`` with its default, its form and its allowed range, and the reason for
that range (what the generator, the grid or the vehicle make of values beyond it); ``resolve_config`` checks
them all before anything is drawn (a few microseconds), each error naming the key, the value and the range.
Some bounds follow other keys (``BOUND_RULES``: ``hill_radius_m`` from one ``cell_m``, ``edge_clearance_m`` up
to ``edge_margin_m``, ``goal_distance_m`` up to the diagonal of the square inside the edge margin).

``route`` is the same grid search with a cost: travel time at ``speed_h_mps`` where H (AWD) climbs the
step and ``speed_l_mps`` where only L does; it returns the cells and the range each step needs. The
terrain planner baseline (``acres_gym.agents.baselines``) follows it.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numba import njit

from acres_gym.envs.tasks.trafficability import WETNESS_BINS, drivable
from acres_gym.terrain.grid import MAX_GRID_POINTS, Terrain
from acres_gym.terrain.patches import with_patches
from acres_gym.terrain.rough_ground import rough
from acres_gym.terrain.shapes import MIN_FEATURE_CELLS
from acres_gym.terrain.surfaces import SurfaceTable


@dataclass(frozen=True)
class TerrainKey:
    """One terrain-generator key: its default, its form, its allowed range and what makes that range.

    ``kind``: ``number``; ``integer``; ``range`` (a number or ``[low, high]``, drawn uniformly); ``count`` (an
    integer or ``[low, high]`` of integers, drawn uniformly); ``weights`` (``{surface name: weight}``, each
    weight in the range, their sum > 0). ``lo`` and ``hi`` are numbers or names of ``BOUND_RULES`` (bounds
    that follow other keys); ``lo_open`` excludes ``lo``."""

    default: Any
    kind: str
    lo: float | str
    hi: float | str
    why: str
    lo_open: bool = False


KEYS: dict[str, TerrainKey] = {
    "size_m": TerrainKey(
        300.0, "number", 0.0, 1e5, lo_open=True,
        why="the square terrain's side (in the task: randomization.terrain.size_m); the bound of "
            "randomization.terrain, whose grid point count MAX_GRID_POINTS bounds too"),
    "cell_m": TerrainKey(
        2.0, "number", 0.0, "size_m", lo_open=True,
        why="the terrain grid's spacing (in the task: randomization.terrain.cell_m); at least one cell per side"),
    "roughness_m": TerrainKey(
        [0.05, 0.3], "range", 0.0, 2.0,
        why="RMS of the fractal undulation; at 2 m its 4 m bumps are several times the vehicle's 0.3 m ground "
            "clearance, ground no route search of grades sees as anything but impassable"),
    "hills": TerrainKey(
        [3, 8], "count", 0, 100,
        why="number of Gaussian hills, each one pass over up to (8 hill_radius_m / cell_m)^2 grid points; 100 "
            "hills of the widest radius cover the 300 m ground many times over, more only stack up and slow "
            "every draw in proportion"),
    "hill_height_m": TerrainKey(
        [2.0, 14.0], "range", 0.0, 200.0,
        why="a hill's height; its steepest slope is 0.61 h / s, so 200 m is past any climbable grade at every "
            "allowed radius (1.2 at 100 m): higher hills test nothing new"),
    "hill_radius_m": TerrainKey(
        [10.0, 30.0], "range", "cell_m", 100.0,
        why="a hill's radius s: narrower than one grid cell it is a spike the grid cannot hold (0 gives NaN "
            "heights); its window spans 8 s, so past 100 m a hill is a tilt of the whole ground and costs a "
            "draw (8 s / cell_m)^2 points"),
    "surfaces": TerrainKey(
        {"grass": 3.0, "packed_dirt": 2.0, "sandy_loam": 2.0, "lete_sand": 1.0, "dry_sand": 1.0},
        "weights", 0.0, 1e6,
        why="relative weights of the patch soils (shares after normalising), names of the surface table (the "
            "first is the ground's base surface, under the start and the goal); the upper bound keeps their "
            "sum finite"),
    "patch_scale_m": TerrainKey(
        25.0, "number", "2 cell_m", 1e5,
        why="the soil patches' length scale: the patch generator resolves nothing under two grid cells and "
            "takes at most 1e5 m (generate.patch_plan)"),
    "wetness": TerrainKey(
        [0.0, 0.6], "range", 0.0, 1.0,
        why="a patch's wetness, a fraction of saturation: 0 dry to 1 saturated, the soil model's range"),
    "no_go": TerrainKey(
        [2, 6], "count", 0, 100,
        why="number of no-go discs, each one pass over its window; 100 discs of the widest radius cover the "
            "300 m ground many times over, more only slow every draw"),
    "no_go_radius_m": TerrainKey(
        [5.0, 15.0], "range", 0.0, 100.0,
        why="a no-go disc's radius: one of 100 m covers a third of the 300 m ground, which leaves no way round "
            "it on the default ground"),
    "goal_distance_m": TerrainKey(
        [80.0, 250.0], "range", 0.0, "inner diagonal",
        why="the goal's distance from the start, both inside the square edge_margin_m leaves: its diagonal "
            "sqrt(2) (size_m - 2 edge_margin_m) is the farthest two such points lie apart (and the shortest "
            "distance must fit its side)"),
    "edge_margin_m": TerrainKey(
        20.0, "number", 0.0, "half size", lo_open=False,
        why="start and goal keep this far from the terrain's edge: at half of size_m no ground is left for them"),
    "line_obstacles": TerrainKey(
        [2, 3], "count", 0, 10,
        why="features centred on the middle 40 % of the start-goal line; past 10 they only overlap each other"),
    "obstacle_surfaces": TerrainKey(
        {"clayey_soil_wet": 1.0, "snow": 1.0, "ice": 1.0}, "weights", 0.0, 1e6,
        why="relative weights of the soils of soil obstacles, names of the surface table; the upper bound keeps "
            "their sum finite"),
    "obstacle_radius_m": TerrainKey(
        [8.0, 18.0], "range", 0.0, 200.0,
        why="a line feature's radius, cut to keep the start and goal clear (at most half of goal_distance_m's "
            "250 m default), so past 200 m a radius changes nothing"),
    "route_cell_m": TerrainKey(
        2.0, "number", "cell_m", "8 cell_m",
        why="the route grid's cell, a whole number of terrain cells (rounded); past 8 cells a route cell "
            "averages away the no-go discs and hills the search plans around"),
    "grade_margin": TerrainKey(
        0.6, "number", 0.0, 1.0, lo_open=True,
        why="a step is drivable below this share of the climbable grade (the ULC launches with about 80 % of "
            "the full-throttle torque); past 1 a route would ask for more than the vehicle climbs"),
    "max_side_grade": TerrainKey(
        0.35, "number", 0.0, 2.0, lo_open=True,
        why="side slope limit of a drivable step (tan); 2 (63 deg) is twice the vehicle's static rollover "
            "threshold T / 2h (1.31 m / (2 x 0.67 m) = 0.98)"),
    "no_go_clearance_m": TerrainKey(
        2.0, "number", 0.0, 50.0,
        why="routes keep this far from no-go areas; at 50 m a single disc blocks a 100 m wide band of the "
            "300 m ground, and the blocking pass costs (clearance / route_cell_m)^2 per no-go cell"),
    "edge_clearance_m": TerrainKey(
        6.0, "number", 0.0, "edge_margin_m",
        why="routes keep this far from the terrain's edge: start and goal keep edge_margin_m, so a larger "
            "clearance walls them in"),
    "max_redraws": TerrainKey(
        30, "integer", 0, 100,
        why="draws without a route are redrawn up to this many times, each a draw and a route search (a few ms "
            "on the 300 m grid at 2 m); a config needing more than 100 should change, not wait"),
}
DEFAULTS: dict[str, Any] = {key: spec.default for key, spec in KEYS.items()}

BOUND_RULES: dict[str, Any] = {  # bounds that follow other keys (checked first: CHECK_ORDER)
    "size_m": lambda c: float(c["size_m"]),
    "cell_m": lambda c: float(c["cell_m"]),
    "2 cell_m": lambda c: MIN_FEATURE_CELLS * float(c["cell_m"]),
    "8 cell_m": lambda c: 8.0 * float(c["cell_m"]),
    "half size": lambda c: 0.5 * float(c["size_m"]),
    "edge_margin_m": lambda c: float(c["edge_margin_m"]),
    "inner diagonal": lambda c: math.sqrt(2.0) * (float(c["size_m"]) - 2.0 * float(c["edge_margin_m"])),
}
CHECK_ORDER = ("size_m", "cell_m", "edge_margin_m") + tuple(k for k in KEYS if k not in ("size_m", "cell_m",
                                                                                           "edge_margin_m"))
OBSTACLE_KINDS = ("no_go", "soil", "hill")
# radius of the pads around the start and the goal (the ground's base surface, no features): the route may
# leave the start in any direction and the vehicle may circle the goal once, and a full turn at the tightest
# curvature (0.2 1/m: 5 m at the rear axle) keeps the front wheels, a 3.16 m wheelbase ahead, within
# 5 + hypot(5, 3.16) = 10.9 m of where it began
PAD_M = 12.0
# radius of the goal's pad of the base surface: a vehicle that passes the goal outside its radius drives on
# until the goal leaves its tightest turning circle and then turns a full circle back onto it, up to
# 2 x 5 m beside its path and a wheelbase ahead; 20 m adds the turns' lag at speed (estimate)
GOAL_PAD_M = 20.0
RANGE_H, RANGE_L = 0, 1  # indices of the grade-limit table's range axis
AWD = 2  # index of AWD on its drive-mode axis
UNREACHABLE = np.inf


class UnsolvableConfigError(ValueError):
    """A terrain config whose draws keep failing the solvability check: ``max_redraws + 1`` draws in a row
    without a route. The message names the keys to relax (``offroad_episode``)."""


def _bound(c: dict, value: float | str) -> float:
    return float(value) if not isinstance(value, str) else float(BOUND_RULES[value](c))


def _bound_text(c: dict, value: float | str) -> str:
    return f"{value:g}" if not isinstance(value, str) else f"{_bound(c, value):g} ({value})"


def _is_number(v: Any) -> bool:
    return not isinstance(v, (bool, np.bool_)) and isinstance(v, (int, float, np.integer, np.floating))


def _check_key(key: str, value: Any, c: dict, name) -> Any:
    """``value`` of ``key`` checked against its declaration (``KEYS``): the value as given (a pair for ranges
    and counts), or ``ValueError`` naming ``name(key)``, the value and the allowed range with its reason."""
    spec = KEYS[key]
    lo, hi = _bound(c, spec.lo), _bound(c, spec.hi)
    interval = f"{'(' if spec.lo_open else '['}{_bound_text(c, spec.lo)}, {_bound_text(c, spec.hi)}]"
    integer = spec.kind in ("integer", "count")
    form = {"number": "a number", "integer": "an integer", "range": "a number or [low, high]",
            "count": "an integer or [low, high] of integers", "weights": "{surface name: weight}"}[spec.kind]

    def fail(detail: str = ""):
        raise ValueError(f"{name(key)} = {value!r}: expected {form} in {interval}{detail} ({spec.why})")

    def within(v: Any) -> bool:
        if not _is_number(v) or not math.isfinite(float(v)) or (integer and float(v) != int(v)):
            return False
        return (float(v) > lo if spec.lo_open else float(v) >= lo) and float(v) <= hi

    if spec.kind == "weights":
        if not isinstance(value, Mapping) or not value:
            fail()
        for surface, w in value.items():
            if not within(w):
                fail(f"; the weight of {surface!r} is {w!r}")
        if not sum(float(w) for w in value.values()) > 0.0:
            fail("; the weights sum to 0")
        return value
    if spec.kind in ("range", "count"):
        pair = (value, value) if _is_number(value) else value
        if not isinstance(pair, (list, tuple)) or len(pair) != 2 or not all(within(v) for v in pair):
            fail()
        if float(pair[0]) > float(pair[1]):
            fail("; low <= high")
        return tuple(pair)
    if not within(value):
        fail()
    return value


def _check(config: Mapping, table: SurfaceTable | None = None, name=None) -> dict:
    """The config with defaults filled in, every key checked against its declaration (``KEYS``), in
    ``CHECK_ORDER`` (bounds that follow other keys come after them); ``name(key)`` labels a key in errors."""
    name = name or (lambda key: f"offroad terrain: {key}")
    unknown = [k for k in config if k not in DEFAULTS and not str(k).startswith("_")]
    if unknown:
        raise ValueError(f"offroad terrain: unknown key {unknown[0]!r}; allowed keys: {', '.join(DEFAULTS)}")
    c = {**DEFAULTS, **{k: v for k, v in config.items() if not str(k).startswith("_")}}
    for key in CHECK_ORDER:
        c[key] = _check_key(key, c[key], c, name)
    points = (math.ceil(c["size_m"] / c["cell_m"] - 1e-9) + 1) ** 2
    if points > MAX_GRID_POINTS:
        raise ValueError(f"{name('cell_m')} = {c['cell_m']!r}: size_m = {c['size_m']!r} at this spacing gives "
                         f"{points} grid points, more than {MAX_GRID_POINTS} (a larger cell_m or a smaller size_m)")
    span = c["size_m"] - 2.0 * c["edge_margin_m"]
    if c["goal_distance_m"][0] > span:
        raise ValueError(f"{name('goal_distance_m')} = {list(c['goal_distance_m'])}: the shortest goal distance "
                         f"exceeds the {span:g} m the terrain offers inside its edge margin (size_m - 2 "
                         "edge_margin_m)")
    if table is not None:
        for key in ("surfaces", "obstacle_surfaces"):
            missing = [s for s in c[key] if s not in table]
            if missing:
                raise ValueError(f"{name(key)}: unknown surface {missing[0]!r}; known surfaces: "
                                 f"{', '.join(table.names)}")
    return c


def resolve_config(config: Mapping | None, table: SurfaceTable | None = None, name=None) -> dict:
    """The config with defaults filled in and checked (ranges as (low, high) tuples); with ``table``, the
    surface names too. ``name(key)`` labels a key in errors (default ``offroad terrain: <key>``)."""
    return _check(dict(config or {}), table, name)


@dataclass
class OffroadEpisode:
    """One drawn episode: terrain, no-go mask (same grid), start pose, goal and how it was drawn."""

    terrain: Terrain
    no_go: np.ndarray  # (ny, nx) bool
    start_xy: tuple[float, float]
    start_yaw: float
    goal_xy: tuple[float, float]
    redraws: int
    summary: dict[str, Any] = field(default_factory=dict)
    route_grid: RouteGrid | None = None  # the grid its solvability search ran on (``offroad_episode``)
    # the navigation task's time-to-goal field when its route_time channel asks for one (times (gy, gx) s, grid
    # origin (x, y) m, grid cell m: ``OffroadNavigationTask.route_times``)
    route_time: tuple[np.ndarray, tuple[float, float], float] | None = None


def _uniform(rng, pair) -> float:
    lo, hi = pair
    return float(lo) if hi <= lo else float(rng.uniform(lo, hi))


def _count(rng, pair) -> int:
    lo, hi = int(round(pair[0])), int(round(pair[1]))
    return int(rng.integers(lo, hi + 1))


def _pick(rng, weights: Mapping) -> str:
    names = list(weights)
    w = np.asarray([float(weights[n]) for n in names])
    return names[int(rng.choice(len(names), p=w / w.sum()))]


@njit(cache=True, nogil=True)
def _window(x_m, y_m, cx_m, cy_m, r_m):
    """Index bounds ``(j0, j1, i0, i1)`` of the grid points within ``r_m`` of (cx, cy) along each axis:
    ``np.searchsorted`` of ``cx - r`` (left) and ``cx + r`` (right) in the sorted ``x_m``, the same in ``y_m``."""
    i0, i1 = np.searchsorted(x_m, cx_m - r_m), np.searchsorted(x_m, cx_m + r_m, side="right")
    j0, j1 = np.searchsorted(y_m, cy_m - r_m), np.searchsorted(y_m, cy_m + r_m, side="right")
    return j0, j1, i0, i1


@njit(cache=True, nogil=True, error_model="numpy")
def _add_hill(height_m, x_m, y_m, cx_m, cy_m, peak_m, radius_m):
    """``height_m += peak_m exp(-d2 / (2 s s))`` (in place) over the points of ``_window(.., 4 s)``, a Gaussian
    hill of radius ``s`` at (cx, cy), ``d2 = (x - cx) ** 2 + (y - cy) ** 2``, the C library's ``exp`` (the same
    on every CPU). A radius of 0 gives NaN and -inf exponents as numpy's division does."""
    j0, j1, i0, i1 = _window(x_m, y_m, cx_m, cy_m, 4.0 * radius_m)
    den = 2.0 * radius_m * radius_m
    for j in range(j0, j1):
        dy = y_m[j] - cy_m
        for i in range(i0, i1):
            dx = x_m[i] - cx_m
            height_m[j, i] += peak_m * math.exp(-(dx * dx + dy * dy) / den)


@njit(cache=True, nogil=True)
def _fill_disc(grid, x_m, y_m, cx_m, cy_m, r_m, value):
    """``grid[j, i] = value`` (in place) at the points of ``_window(.., r)`` with
    ``(x - cx) ** 2 + (y - cy) ** 2 <= r * r``."""
    j0, j1, i0, i1 = _window(x_m, y_m, cx_m, cy_m, r_m)
    r2 = r_m * r_m
    for j in range(j0, j1):
        dy = y_m[j] - cy_m
        for i in range(i0, i1):
            dx = x_m[i] - cx_m
            if dx * dx + dy * dy <= r2:
                grid[j, i] = value


def _draw_once(rng, c: dict, table: SurfaceTable) -> OffroadEpisode:
    size = c["size_m"]
    half = 0.5 * size
    inner = half - c["edge_margin_m"]
    # start and goal: the goal at the drawn distance in a direction that keeps it inside
    sx, sy = (float(v) for v in rng.uniform(-inner, inner, 2))
    dist = _uniform(rng, c["goal_distance_m"])
    for _ in range(64):
        bearing = float(rng.uniform(-math.pi, math.pi))
        gx, gy = sx + dist * math.cos(bearing), sy + dist * math.sin(bearing)
        if abs(gx) <= inner and abs(gy) <= inner:
            break
    else:  # far from every edge in no direction: put the start at the centre and try again
        sx = sy = 0.0
        dist = min(dist, inner)
        bearing = float(rng.uniform(-math.pi, math.pi))
        gx, gy = dist * math.cos(bearing), dist * math.sin(bearing)
    yaw = math.atan2(gy - sy, gx - sx) + float(rng.uniform(-0.5, 0.5))  # roughly facing the goal
    base = rough(int(rng.integers(0, 2**31 - 1)), _uniform(rng, c["roughness_m"]), size_m=size, cell_m=c["cell_m"],
                 surface=next(iter(c["surfaces"])), hill_wavelength_m=60.0, bump_wavelength_m=4.0,
                 flat_radius_m=6.0, spawn_xy=(sx, sy), table=table)
    terrain = with_patches(base, rng, dict(c["surfaces"]), scale_m=c["patch_scale_m"],
                           wetness_range=tuple(c["wetness"]))
    x, y = terrain.x_m, terrain.y_m
    height = terrain.height_m
    sid = terrain.surface_id
    # the start and the goal on pads of the ground's base surface: a patch the vehicle cannot move on under its
    # front wheels, within the turn onto its route or around the goal, would decide the episode by where the
    # vehicle stands rather than by the way it chooses
    base_id = table.surface_id(next(iter(c["surfaces"])))
    _fill_disc(sid, x, y, sx, sy, PAD_M, base_id)
    _fill_disc(sid, x, y, gx, gy, GOAL_PAD_M, base_id)
    no_go = np.zeros(height.shape, dtype=bool)

    def keep_clear(cx, cy, r):  # features stay off the start's and the goal's pads
        return math.hypot(cx - sx, cy - sy) > r + PAD_M and math.hypot(cx - gx, cy - gy) > r + PAD_M

    def hill(cx, cy, h, s):  # height += h exp(-d2 / (2 s^2)) within 4 s
        _add_hill(height, x, y, cx, cy, h, s)

    for _ in range(_count(rng, c["hills"])):
        cx, cy = (float(v) for v in rng.uniform(-half, half, 2))
        s = _uniform(rng, c["hill_radius_m"])
        if keep_clear(cx, cy, 1.5 * s):
            hill(cx, cy, _uniform(rng, c["hill_height_m"]), s)
    for _ in range(_count(rng, c["no_go"])):
        cx, cy = (float(v) for v in rng.uniform(-half, half, 2))
        r = _uniform(rng, c["no_go_radius_m"])
        if keep_clear(cx, cy, r):
            _fill_disc(no_go, x, y, cx, cy, r, True)
    kinds = []
    for _ in range(_count(rng, c["line_obstacles"])):
        t = float(rng.uniform(0.3, 0.7))
        cx, cy = sx + t * (gx - sx), sy + t * (gy - sy)
        r = _uniform(rng, c["obstacle_radius_m"])
        kind = OBSTACLE_KINDS[int(rng.integers(0, len(OBSTACLE_KINDS)))]
        # on the line, the features keep only the start's and the goal's pads clear
        r = min(r, math.hypot(cx - sx, cy - sy) - PAD_M, math.hypot(cx - gx, cy - gy) - PAD_M)
        if r < 4.0:
            continue
        kinds.append(kind)
        if kind == "no_go":
            _fill_disc(no_go, x, y, cx, cy, r, True)
        elif kind == "soil":  # a weak soil over a rise its slopes make impassable for it (0.61 h / s = 0.35..0.6)
            _fill_disc(sid, x, y, cx, cy, r, table.surface_id(_pick(rng, c["obstacle_surfaces"])))
            hill(cx, cy, float(rng.uniform(0.35, 0.6)) / 0.61 * r / 1.5, r / 1.5)
        else:  # a hill steeper than any soil lets the vehicle climb: 0.61 h / s of about 1
            hill(cx, cy, 1.7 * r / 1.5 * float(rng.uniform(0.9, 1.3)), r / 1.5)
    terrain = Terrain._unchecked(height, sid, terrain.wetness, terrain.origin_x_m, terrain.origin_y_m,
                                 terrain.cell_m, table)  # finite hills on a generated terrain, ids of table
    # the share as numpy's mean gives it: the count (exact) over the number of points
    summary = {"goal_distance_m": dist, "line_obstacles": ",".join(kinds),
               "no_go_share": float(np.count_nonzero(no_go) / no_go.size)}
    return OffroadEpisode(terrain, no_go, (sx, sy), yaw, (gx, gy), 0, summary)


# --- the route grid -----------------------------------------------------------------------------------
@dataclass
class RouteGrid:
    """The coarse grid of the route search: cell centres, heights, climbable grades, blocked cells."""

    origin_xy_m: tuple[float, float]
    cell_m: float
    height_m: np.ndarray  # (gy, gx)
    limit_h: np.ndarray  # climbable grade in H / AWD (tan)
    limit_l: np.ndarray  # climbable grade in L / AWD (tan)
    blocked: np.ndarray  # bool

    def index(self, x: float, y: float) -> tuple[int, int]:
        gy, gx = self.height_m.shape
        i = min(max(round((x - self.origin_xy_m[0]) / self.cell_m), 0), gx - 1)
        j = min(max(round((y - self.origin_xy_m[1]) / self.cell_m), 0), gy - 1)
        return j, i

    def xy(self, j: int, i: int) -> tuple[float, float]:
        return self.origin_xy_m[0] + i * self.cell_m, self.origin_xy_m[1] + j * self.cell_m


@njit(cache=True, nogil=True)
def _grade_lookup(limit_h, limit_l, sid, wetness):
    """The H and L climbable grades ``limit_h[sid, bin]``, ``limit_l[sid, bin]`` of every point, where ``bin`` is
    ``wetness_bin(wetness)`` (``clip(rint(wetness * (WETNESS_BINS - 1)), 0, WETNESS_BINS - 1)``), as numpy's
    fancy index gives them: a negative id counts from the end, an id or bin outside the tables (a NaN
    wetness) raises IndexError. Table indices first, then the look-ups (two loops the compiler vectorises)."""
    n_sid, n_wet = limit_h.shape
    top = float(WETNESS_BINS - 1)
    flat_h, flat_l = np.ascontiguousarray(limit_h).ravel(), np.ascontiguousarray(limit_l).ravel()
    ids, wet = sid.ravel(), wetness.ravel()
    index = np.empty(ids.size, np.int64)
    inside = True
    for k in range(ids.size):
        s = ids[k] + n_sid if ids[k] < 0 else ids[k]
        b = min(max(np.rint(wet[k] * top), 0.0), top)
        inside &= (s >= 0) & (s < n_sid) & (b < n_wet) & (wet[k] == wet[k])
        index[k] = s * n_wet + int(b)
    if not inside:
        raise IndexError("route grid: a surface id or wetness bin outside the grade-limit table")
    out_h, out_l = np.empty(ids.size, flat_h.dtype), np.empty(ids.size, flat_l.dtype)
    for k in range(ids.size):
        out_h[k] = flat_h[index[k]]
        out_l[k] = flat_l[index[k]]
    return out_h.reshape(sid.shape), out_l.reshape(sid.shape)


@njit(cache=True, nogil=True)
def _blocked_cells(no_go, grow, edge):
    """The blocked cells of the route grid from its no-go cells: every cell at ``dj^2 + di^2 <= grow^2`` cells
    of a no-go cell, the offsets wrapping around the grid as ``np.roll`` does (``(j + dj) % gy``), then the
    first and last ``edge`` rows and columns. ``grow <= 0`` and ``edge <= 0`` add nothing."""
    gy, gx = no_go.shape
    blocked = no_go.copy()
    if grow > 0:
        for j in range(gy):
            for i in range(gx):
                if not no_go[j, i]:
                    continue
                for dj in range(-grow, grow + 1):
                    for di in range(-grow, grow + 1):
                        if dj * dj + di * di <= grow * grow:
                            blocked[(j + dj) % gy, (i + di) % gx] = True
    if edge > 0:
        blocked[:edge, :] = True
        blocked[max(gy - edge, 0):, :] = True
        blocked[:, :edge] = True
        blocked[:, max(gx - edge, 0):] = True
    return blocked


def route_grid(terrain: Terrain, no_go: np.ndarray, grade_limits: np.ndarray, cell_m: float,
               clearance_m: float, edge_m: float = DEFAULTS["edge_clearance_m"], *,
               margin: float = DEFAULTS["grade_margin"]) -> RouteGrid:
    """The route grid of a terrain: every ``cell_m / terrain.cell_m``-th point, each with the lowest
    climbable grade of the terrain points it stands for, blocked within ``clearance_m`` of no-go and of
    impassable ground (a cell whose L / AWD grade the route's ``margin`` leaves not ``drivable``: a soil the
    vehicle high-centres in or cannot propel itself on, kept clear as a no-go area is, since the front wheels
    run a wheelbase ahead of the route and cut its corners) and within ``edge_m`` of the terrain's edge."""
    k = max(1, int(round(cell_m / terrain.cell_m)))
    h = terrain.height_m
    ny, nx = h.shape
    gy, gx = ny // k, nx // k
    lim_h, lim_l = _grade_lookup(grade_limits[:, :, RANGE_H, AWD], grade_limits[:, :, RANGE_L, AWD],
                                 terrain.surface_id[:gy * k, :gx * k], terrain.wetness[:gy * k, :gx * k])
    if k == 1:  # blocks of one point: the mean is 0.0 + h (numpy's sum starts at 0.0, so -0.0 becomes 0.0)
        height = 0.0 + h
        no_go_cells = no_go[:gy, :gx].astype(bool, copy=False)
    else:  # numpy's reductions (the mean's summation order is numpy's)
        lim_h = lim_h.reshape(gy, k, gx, k).min(axis=(1, 3))
        lim_l = lim_l.reshape(gy, k, gx, k).min(axis=(1, 3))
        height = h[:gy * k, :gx * k].reshape(gy, k, gx, k).mean(axis=(1, 3))
        no_go_cells = no_go[:gy * k, :gx * k].reshape(gy, k, gx, k).any(axis=(1, 3))
    grow = int(math.ceil(clearance_m / (k * terrain.cell_m)))
    edge = int(math.ceil(edge_m / (k * terrain.cell_m)))
    impassable = ~drivable(lim_l, float(margin))
    blocked = _blocked_cells(no_go_cells | impassable, grow, edge)
    origin = (terrain.origin_x_m + 0.5 * (k - 1) * terrain.cell_m, terrain.origin_y_m + 0.5 * (k - 1) * terrain.cell_m)
    return RouteGrid(origin, k * terrain.cell_m, height, lim_h, lim_l, blocked)


# the 8 steps in the order of ``_search_heap``'s double loop: dj in (-1, 0, 1), then di in (-1, 0, 1)
_DJ = np.array([-1, -1, -1, 0, 0, 1, 1, 1], dtype=np.int64)
_DI = np.array([-1, 0, 1, -1, 1, -1, 0, 1], dtype=np.int64)
_PER_STEP = 32  # queue buckets per shortest step (any value >= 2 gives the same result)


@njit(inline="always")
def _step_cost(hp, hq, lhp, lhq, llp, llq, ha, hb, across, length, side_den, step_h, step_l, margin, max_side):
    """(drivable, time, needs L) of the step p -> q of ``length`` (``cell * sqrt(dj^2 + di^2)``) between the
    heights ``hp``, ``hq`` and H / L grade limits ``lh*``, ``ll*`` of its cells: its grade, its side slope from
    the heights ``ha``, ``hb`` of the cells across it (when ``across``: both exist) over ``side_den`` (twice
    the length), then H where both cells' H limit allows the grade, else L, else not drivable; the time is
    ``step_h`` or ``step_l`` (``length / speed``). Both searches cost their steps here."""
    grade = (hq - hp) / length
    side = 0.0
    if across:
        side = abs(ha - hb) / side_den
    if side > max_side:
        return False, 0.0, False
    limit_h = min(lhp, lhq)
    limit_l = min(llp, llq)
    if grade <= margin * limit_h and drivable(limit_h, margin):
        return True, step_h, False
    elif grade <= margin * limit_l and drivable(limit_l, margin):
        return True, step_l, True
    return False, 0.0, False


@njit(inline="always")
def _grid_step(height, lim_h, lim_l, cell, j, i, dj, di, margin, max_side, speed_h, speed_l):
    """``_step_cost`` of the step from cell (j, i) by (dj, di) on the grid (the target cell exists): its length,
    and the side slope from the neighbours on either side of the step where both exist. The heap search
    (``_search_heap``, forwards and backwards) costs every step here."""
    gy, gx = height.shape
    qj, qi = j + dj, i + di
    length = cell * math.sqrt(dj * dj + di * di)
    aj, ai, bj, bi = j - di, i + dj, j + di, i - dj
    across = 0 <= aj < gy and 0 <= ai < gx and 0 <= bj < gy and 0 <= bi < gx
    ha = height[aj, ai] if across else 0.0
    hb = height[bj, bi] if across else 0.0
    return _step_cost(height[j, i], height[qj, qi], lim_h[j, i], lim_h[qj, qi], lim_l[j, i], lim_l[qj, qi], ha, hb,
                      across, length, 2.0 * cell * math.sqrt(dj * dj + di * di), length / speed_h,
                      length / speed_l, margin, max_side)


@njit(cache=True, nogil=True)
def _grow(ek, en, enext, used):
    """The queue's entry pool (times, cells, links) at twice its size, the first ``used`` entries kept."""
    cap = 2 * ek.shape[0]
    ek2, en2, enext2 = np.empty(cap), np.empty(cap, np.int64), np.empty(cap, np.int64)
    ek2[:used] = ek[:used]
    en2[:used] = en[:used]
    enext2[:used] = enext[:used]
    return ek2, en2, enext2


@njit(cache=True, nogil=True)
def _search_heap(height, lim_h, lim_l, blocked, cell, sj, si, tj, ti, margin, max_side, speed_h, speed_l,
                 dist, pred, need_l, backward=False):
    """Dijkstra with a binary heap of (time, flat index) and lazy deletion: the definition ``_search`` keeps
    bit for bit, and its fallback when a step takes no time, a negative or a non-finite time, or the step
    times differ more than 64-fold. ``backward``: from (sj, si) backwards over the whole grid (pass a target
    outside it, -1): ``dist`` the least time of a route from each cell to (sj, si), each step r -> p costed as
    the forward search costs it, ``pred`` the next cell on that route and ``need_l`` whether its first step needs
    L (``time_to_goal``)."""
    gy, gx = height.shape
    dist[:, :] = np.inf
    pred[:, :] = -1
    need_l[:, :] = False
    dist[sj, si] = 0.0
    heap = [(0.0, sj * gx + si)]
    while len(heap) > 0:
        d, node = heapq.heappop(heap)
        j = node // gx
        i = node - j * gx
        if d > dist[j, i]:
            continue
        if j == tj and i == ti:
            return True
        for dj in range(-1, 2):
            for di in range(-1, 2):
                if dj == 0 and di == 0:
                    continue
                qj, qi = (j - dj, i - di) if backward else (j + dj, i + di)
                if qj < 0 or qj >= gy or qi < 0 or qi >= gx or blocked[qj, qi]:
                    continue
                fj, fi = (qj, qi) if backward else (j, i)  # where the step (dj, di) starts
                ok, step, low = _grid_step(height, lim_h, lim_l, cell, fj, fi, dj, di, margin, max_side, speed_h,
                                           speed_l)
                if not ok:
                    continue
                nd = d + step
                if nd < dist[qj, qi]:
                    dist[qj, qi] = nd
                    pred[qj, qi] = node
                    need_l[qj, qi] = low
                    heapq.heappush(heap, (nd, qj * gx + qi))
    return False


@njit(cache=True, nogil=True, boundscheck=False)
def _search(height, lim_h, lim_l, blocked, cell, sj, si, tj, ti, margin, max_side, speed_h, speed_l,
            dist, pred, need_l):
    """Dijkstra over the 8-neighbour grid (module docstring); fills ``dist`` (s), ``pred`` (flat index)
    and ``need_l`` (the step into a cell needs L). Returns True when the target was reached.
    ``dist``, ``pred`` and ``need_l`` are C-contiguous (``route`` allocates them).

    Bit-identical to ``_search_heap`` (heapq of (time, flat index) with lazy deletion), only faster (the figures
    and the command that compares the two: ``docs/performance.md``). How:

    - the queue pops the same cells in the same order: the least (time, flat index) first. Every step
      takes at least ``smin`` > 0 s, so a cell's time ``d + step`` lands in a later bucket of width
      ``smin / _PER_STEP`` than ``d`` (``int(t * inv_w)`` never decreases with t); a bucket is complete
      when its turn comes, and its entries are sorted by (time, index) then. Entries a shorter time
      replaced are dropped, as the heap skips them (``d > dist``). The search stops at the target.
    - each step's time and gear come from the same function (``_step_cost``); ``cell * sqrt(..)`` and
      ``length / speed`` are computed once per direction, the same roundings of the same operands.
    - neighbours already popped are skipped before their step is costed: popped times never decrease,
      so for them ``d + step < dist`` is always False in the heap search too.
    Steps of no time, negative or non-finite time (speeds <= 0, cell <= 0, NaN), or whose times differ
    by more than 64x (too many buckets) fall back to ``_search_heap``."""
    gy, gx = height.shape
    n = gy * gx
    off, soff_a, soff_b = np.empty(8, np.int64), np.empty(8, np.int64), np.empty(8, np.int64)
    length, side_den, step_h, step_l = np.empty(8), np.empty(8), np.empty(8), np.empty(8)
    for k in range(8):
        dj, di = _DJ[k], _DI[k]
        off[k] = dj * gx + di  # the neighbour q and the two cells across the step, as flat offsets
        soff_a[k] = -di * gx + dj
        soff_b[k] = di * gx - dj
        length[k] = cell * math.sqrt(dj * dj + di * di)
        side_den[k] = 2.0 * cell * math.sqrt(dj * dj + di * di)
        step_h[k] = length[k] / speed_h
        step_l[k] = length[k] / speed_l
    smin = min(step_h.min(), step_l.min())
    smax = max(step_h.max(), step_l.max())
    if not (smin > 0.0 and smax <= 64.0 * smin):
        return _search_heap(height, lim_h, lim_l, blocked, cell, sj, si, tj, ti, margin, max_side, speed_h,
                            speed_l, dist, pred, need_l)
    h, lh, ll = height.ravel(), lim_h.ravel(), lim_l.ravel()
    dd, pp, nl = dist.reshape(n), pred.reshape(n), need_l.reshape(n)
    dd[:] = np.inf
    pp[:] = -1
    nl[:] = False
    closed = blocked.copy().reshape(n)  # blocked, or popped (its time is final)
    inner = np.zeros((gy, gx), np.bool_)  # all 8 neighbours and the cells across each step exist
    inner[1:gy - 1, 1:gx - 1] = True
    inner = inner.reshape(n)
    # bucket queue: circular buckets of width smin / _PER_STEP, each a linked list of entries
    # (time ek, cell en, next enext) in a pool with a free list
    inv_w = _PER_STEP / smin
    span = int(smax * inv_w) + 2  # buckets the queued times can spread over
    nb = 1
    while nb < span:
        nb *= 2
    mask = nb - 1
    head = np.full(nb, -1, np.int64)
    cap = 1024
    ek, en, enext = np.empty(cap), np.empty(cap, np.int64), np.empty(cap, np.int64)
    sk, sn = np.empty(cap), np.empty(cap, np.int64)  # the bucket being popped, sorted
    src, tgt = sj * gx + si, tj * gx + ti
    dd[src] = 0.0
    ek[0], en[0], enext[0] = 0.0, src, -1
    head[0] = 0
    used, free, live, cur = 1, -1, 1, 0
    while live > 0:
        e = head[cur & mask]
        if e < 0:
            cur += 1
            continue
        head[cur & mask] = -1
        if sk.shape[0] < live:
            sk, sn = np.empty(cap), np.empty(cap, np.int64)
        m = 0
        while e >= 0:  # take the bucket's current entries, insertion-sorted by (time, cell)
            key, node, nxt = ek[e], en[e], enext[e]
            enext[e] = free
            free = e
            e = nxt
            live -= 1
            if key > dd[node]:
                continue
            t = m
            while t > 0 and (sk[t - 1] > key or (sk[t - 1] == key and sn[t - 1] > node)):
                sk[t] = sk[t - 1]
                sn[t] = sn[t - 1]
                t -= 1
            sk[t] = key
            sn[t] = node
            m += 1
        for s in range(m):
            d, p = sk[s], sn[s]
            closed[p] = True
            if p == tgt:
                return True
            if used + 8 > cap:  # room for this cell's pushes
                ek, en, enext = _grow(ek, en, enext, used)
                cap = ek.shape[0]
            hp, lhp, llp = h[p], lh[p], ll[p]
            interior = inner[p]
            for k in range(8):
                if interior:
                    q = p + off[k]
                    if closed[q]:
                        continue
                    ok, step, low = _step_cost(hp, h[q], lhp, lh[q], llp, ll[q], h[p + soff_a[k]],
                                               h[p + soff_b[k]], True, length[k], side_den[k], step_h[k],
                                               step_l[k], margin, max_side)
                else:
                    j = p // gx
                    i = p - j * gx
                    dj, di = _DJ[k], _DI[k]
                    qj, qi = j + dj, i + di
                    if qj < 0 or qj >= gy or qi < 0 or qi >= gx:
                        continue
                    q = qj * gx + qi
                    if closed[q]:
                        continue
                    aj, ai, bj, bi = j - di, i + dj, j + di, i - dj
                    across = 0 <= aj < gy and 0 <= ai < gx and 0 <= bj < gy and 0 <= bi < gx
                    ha = hb = 0.0
                    if across:
                        ha, hb = h[aj * gx + ai], h[bj * gx + bi]
                    ok, step, low = _step_cost(hp, h[q], lhp, lh[q], llp, ll[q], ha, hb, across, length[k],
                                               side_den[k], step_h[k], step_l[k], margin, max_side)
                if not ok:
                    continue
                nd = d + step
                if nd < dd[q]:
                    dd[q] = nd
                    pp[q] = p
                    nl[q] = low
                    if free >= 0:
                        x = free
                        free = enext[x]
                    else:
                        x = used
                        used += 1
                    b = int(nd * inv_w) & mask
                    ek[x], en[x], enext[x] = nd, q, head[b]
                    head[b] = x
                    live += 1
        cur += 1
    return False


@njit(cache=True, nogil=True)
def _route_points(pred, need_l, source, target, origin_x_m, origin_y_m, cell_m):
    """The cells from ``source`` to ``target`` (flat indices) along the predecessors ``pred`` of the search:
    their centres ``(origin_x + i cell, origin_y + j cell)`` (M, 2), m, and ``need_l`` of each."""
    gx = pred.shape[1]
    flat_pred, flat_low = pred.ravel(), need_l.ravel()
    n, node = 1, target
    while node != source:
        node = flat_pred[node]
        n += 1
    points, low = np.empty((n, 2)), np.empty(n, np.bool_)
    node = target
    for m in range(n - 1, -1, -1):
        j = node // gx
        i = node - j * gx
        points[m, 0] = origin_x_m + i * cell_m
        points[m, 1] = origin_y_m + j * cell_m
        low[m] = flat_low[node]
        if m > 0:
            node = flat_pred[node]
    return points, low


@dataclass
class Route:
    """A route on the grid: world points (M, 2), whether the step into each point needs L, travel time."""

    points: np.ndarray
    need_l: np.ndarray
    time_s: float


def route(grid: RouteGrid, start_xy, goal_xy, margin: float = DEFAULTS["grade_margin"],
          max_side: float = DEFAULTS["max_side_grade"], speed_h_mps: float = 6.0,
          speed_l_mps: float = 3.0) -> Route | None:
    """The quickest route from ``start_xy`` to ``goal_xy`` (module docstring), or None when there is none.
    The start cell is never blocked (the vehicle stands there)."""
    sj, si = grid.index(*start_xy)
    tj, ti = grid.index(*goal_xy)
    shape = grid.height_m.shape
    dist = np.empty(shape)
    pred = np.empty(shape, dtype=np.int64)
    need_l = np.empty(shape, dtype=np.bool_)
    blocked = grid.blocked.copy()
    blocked[sj, si] = False
    blocked[tj, ti] = False
    ok = _search(grid.height_m, grid.limit_h, grid.limit_l, blocked, float(grid.cell_m), sj, si, tj, ti,
                 float(margin), float(max_side), float(speed_h_mps), float(speed_l_mps), dist, pred, need_l)
    if not ok:
        return None
    pts, low = _route_points(pred, need_l, sj * shape[1] + si, tj * shape[1] + ti, float(grid.origin_xy_m[0]),
                             float(grid.origin_xy_m[1]), float(grid.cell_m))
    pts[0] = start_xy
    pts[-1] = goal_xy
    return Route(pts, low, float(dist[tj, ti]))


def time_to_goal(grid: RouteGrid, goal_xy, margin: float = DEFAULTS["grade_margin"],
                 max_side: float = DEFAULTS["max_side_grade"], speed_h_mps: float = 6.0,
                 speed_l_mps: float = 3.0) -> np.ndarray:
    """The travel time (s) of ``route`` from every cell of ``grid`` to ``goal_xy``, (gy, gx): for a cell that is
    not blocked, what ``route(grid, cell, goal_xy, ...).time_s`` gives, by one search backwards from the goal; inf
    on blocked cells and ground cut off from the goal. The goal cell is never blocked (as in ``route``)."""
    tj, ti = grid.index(*goal_xy)
    shape = grid.height_m.shape
    dist, pred, need_l = np.empty(shape), np.empty(shape, dtype=np.int64), np.empty(shape, dtype=np.bool_)
    blocked = grid.blocked.copy()
    blocked[tj, ti] = False
    _search_heap(grid.height_m, grid.limit_h, grid.limit_l, blocked, float(grid.cell_m), tj, ti, -1, -1,
                 float(margin), float(max_side), float(speed_h_mps), float(speed_l_mps), dist, pred, need_l, True)
    return dist


RELAXATIONS = (  # (what, keys that relax it): the checks of the route search, each lifted alone
    ("no-go areas", ("no_go", "no_go_radius_m", "no_go_clearance_m", "line_obstacles")),
    ("the edge clearance", ("edge_clearance_m",)),
    ("grades", ("hill_height_m", "hill_radius_m", "grade_margin", "surfaces", "obstacle_surfaces", "wetness",
                "line_obstacles")),
    ("side slopes", ("max_side_grade", "hill_height_m", "hill_radius_m", "roughness_m")),
)


def _blocking_keys(ep: OffroadEpisode, c: dict, grade_limits: np.ndarray) -> tuple[list[str], list[str]]:
    """Why ``ep`` has no route: the checks (``RELAXATIONS``) that, each lifted alone, let the search find one
    (all of them when none does alone), and the keys that relax them."""
    def found(no_go=ep.no_go, edge_m=c["edge_clearance_m"], limits=grade_limits, max_side=c["max_side_grade"]):
        grid = route_grid(ep.terrain, no_go, limits, c["route_cell_m"], c["no_go_clearance_m"], edge_m,
                          margin=c["grade_margin"])
        return route(grid, ep.start_xy, ep.goal_xy, c["grade_margin"], max_side) is not None

    climbs = np.full_like(grade_limits, 1e9)
    tries = [found(no_go=np.zeros_like(ep.no_go)), found(edge_m=0.0), found(limits=climbs),
             found(max_side=math.inf)]
    causes = [r for r, ok in zip(RELAXATIONS, tries, strict=True) if ok]
    keys = list(dict.fromkeys(k for _what, ks in (causes or RELAXATIONS) for k in ks))
    return [what for what, _ks in causes], keys


def offroad_episode(seed, config: Mapping | None, table: SurfaceTable, grade_limits: np.ndarray) -> OffroadEpisode:
    """Draw a solvable episode (module docstring) from ``seed`` (an integer or a ``SeedSequence``);
    ``grade_limits`` is ``grade_limit_table(params, table.records)`` of the vehicle. The config is checked
    before anything is drawn; ``max_redraws + 1`` draws without a route raise ``UnsolvableConfigError``
    naming the keys to relax."""
    c = resolve_config(config, table)
    rng = np.random.default_rng(seed)
    for redraws in range(int(c["max_redraws"]) + 1):
        ep = _draw_once(rng, c, table)
        grid = route_grid(ep.terrain, ep.no_go, grade_limits, c["route_cell_m"], c["no_go_clearance_m"],
                          c["edge_clearance_m"], margin=c["grade_margin"])
        found = route(grid, ep.start_xy, ep.goal_xy, c["grade_margin"], c["max_side_grade"])
        if found is not None:
            ep.redraws = redraws
            ep.route_grid = grid
            ep.summary["redraws"] = redraws
            ep.summary["route_time_s"] = found.time_s
            ep.summary["route_low_share"] = float(found.need_l.mean())
            return ep
    causes, keys = _blocking_keys(ep, c, grade_limits)
    why = (f"the last draw has a route once {' or '.join(causes)} stop blocking it" if causes else
           "the last draw has no route with any one of no-go areas, edge clearance, grades or side slopes lifted")
    raise UnsolvableConfigError(
        f"offroad terrain: no solvable episode in {c['max_redraws'] + 1} draw(s) (max_redraws = {c['max_redraws']}): "
        f"{why}; relax {', '.join(keys)} (fewer or smaller features, gentler hills, firmer soils or wider limits)")
