"""The off-road navigation task: reach a goal across generated ground, reading the ground on the way.

Every episode draws, from the task's generator, a solvable terrain with hills, soil patches, wetness and
no-go areas, a start pose and a goal (``acres_gym.envs.tasks.offroad``); the batch writes the terrain into
the vehicle's simulator slot. After each control step the task measures, for every vehicle:

- ``goal_distance_m`` and ``goal_bearing_rad``: the goal from the rear-axle midpoint in the body frame
  (bearing positive to the left); ``s_m`` is minus the distance, so the ``progress`` reward term is the
  distance gained toward the goal;
- the flags ``goal_reached`` (within ``goal_radius_m``), ``no_go`` (the rear- or front-axle midpoint in a
  no-go cell) and ``stuck`` (less than ``stuck_distance_m`` of movement in ``stuck_window_s``); each ends
  the episode (terminated);
- ``hazard_distance_m`` (``TaskFrame.values``, which reward terms read: ``clearance``): from the nearer of
  the rear- and front-axle midpoints to the nearest no-go cell or impassable ground (a cell whose L / AWD
  grade limit the generator's ``grade_margin`` leaves not ``trafficability.drivable``: what the route search and
  the terrain planner keep clear of), bilinear in a chamfer distance field drawn with each episode
  (``_hazard_distance``), capped at ``HAZARD_DISTANCE_CAP_M``;
- ``route_time_s`` (``TaskFrame.values``, only when a reward term reads it: ``route_progress``): the time to the
  goal along the quickest route from the rear-axle midpoint, bilinear in the ``route_time`` channel's route
  times (the route search over the whole terrain, hazards kept ``route_clearance_m`` away), where cells off the
  routes (blocked or cut off) hold the nearest route cell's time plus the straight way to it at
  ``ROUTE_FILL_SPEED_MPS`` (``_route_potential``), so that it is finite everywhere;
- ``local_map``: an egocentric grid (``local_map`` options), heading-up, built by one jitted kernel
  (``_fill_local_map``) over all vehicles:

  ================== ======= ======================================================================
  channel            unit    meaning
  ================== ======= ======================================================================
  ``height``         m       terrain height at the cell minus the height under the rear-axle midpoint
  ``grade``          1       slope of the terrain along the vehicle's heading at the cell (tan, + uphill)
  ``traction``       1       steepest grade a hill start climbs there in L / AWD (tan; from the soil,
                             wetness and the vehicle's tyres and driveline: ``grade_limit_table``; < 0
                             where even level ground stalls)
  ``no_go``          0 / 1   1 in a no-go area (water, dense vegetation) and beyond the terrain's edge (less
                             the 2 m margin where an episode ends off the terrain, ``TERRAIN_MARGIN_M``)
  ``route_time``     s       only when ``channels`` names it: the time to the goal from the nearest cell of
                             a route grid (``offroad.time_to_goal``: the generator's own solvability
                             search, run backwards from the goal over the whole terrain, with no-go areas
                             and impassable ground kept ``route_clearance_m`` away as the terrain planner
                             keeps them) less the least such time over the map's cells on the terrain;
                             capped at ``route_time_cap_s``, which cells with no route (blocked, cut off,
                             beyond the edge) read
  ``grade_margin``   1       only when ``channels`` names it: the traction channel less the grade
                             channel (tan): how much steeper the ground could rise along the heading
                             before a hill start there stalls; < 0 where it stalls, whatever the soil
  ================== ======= ======================================================================

  Row 0 is the farthest ahead, column 0 the farthest left; the rear-axle midpoint sits ``behind_m`` from
  the bottom edge, in the middle of the columns. Cells are ``cell_m`` square.
  ``local_map.stall_traction`` (default null) replaces the traction channel's negative values with one
  number in [-1, 0]: ground where even level ground stalls then reads the same whatever its soil (the held-out
  split's wet sandy loam reads -0.19 without it, the training split's wet clayey soil -0.02 and snow -1).
  The default ``channels`` are the first four, which read only the ground around the vehicle; ``route_time``
  gives the policy what the terrain planner baseline reads (a route over the whole terrain), as a vehicle
  that carries a map of all its ground has it: each episode's ``prepare`` then runs one more search (its cost:
  ``docs/performance.md``).

``ground_cause`` (an ``info`` figure of an episode that ends short of the goal and outside no-go areas:
stuck, off the terrain, rolled over or out of time): the ground where it ended when that is soil or grade,
else the ground it crawled on most (slower than ``CRAWL_MPS`` after the first ``CRAWL_AFTER_S``), if it
crawled:
1 soil (the surface under the vehicle is not ``trafficability.drivable`` in the range and drive mode engaged:
the generator's ``grade_margin`` x its climbable grade is below 5 %, as the route search keeps clear of),
2 grade (the steeper of the body's pitch and the terrain's grade over the next 4 m exceeds that drivable
grade, the slope across the heading exceeds the routes' ``max_side_grade``, or the vehicle rolled over
within 4 m of a slope steeper than that), 3 neither, 4 high-centred (its underbody
rested on the ground when the episode ended: the state's ``high_centred``, ``acres_gym.model.underbody``);
0 otherwise.

Scoring (``OffroadNavigationTask.scoring``): the success rate (the goal reached; higher is better), the time
to the goal (over the episodes that reached it), fuel, the distance left to the goal and the distance driven;
an episode fails by a no-go area, getting stuck, rolling over, diverging or leaving the terrain (an episode
out of time neither fails nor succeeds). The debug view (``view``) draws the goal and the ``local_map``.

Options (``task_options``): ``split`` (``train`` or ``test``) picks one of ``splits``, each a set of
terrain-generator keys (``acres_gym.envs.tasks.offroad.KEYS``, each declared with its allowed range and the reason
for it) merged over ``terrain``; the test split also salts the episode's terrain seed, so its ground never
coincides with a training episode's. The grid (``size_m``, ``cell_m``) is ``randomization.terrain``'s, so the
terrain sections do not take those two keys. Every terrain key of both splits is checked when the environment
is made, before anything is drawn, each error naming the key where it is set, its value and the allowed range;
a config whose draws keep failing the solvability check raises ``UnsolvableConfigError`` at reset, naming the
keys to relax.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np
from numba import njit

from acres_gym.configuration import check_keys, merge_configs, number, strip_comments
from acres_gym.constants import GEAR_LOW
from acres_gym.envs.observations import MAP_VALUE_MAX
from acres_gym.envs.tasks.base import (
    COMMON_FAILURES,
    Figure,
    Scoring,
    Task,
    TaskFrame,
    TaskView,
    on_terrain_bounds,
    register_task,
)
from acres_gym.envs.tasks.offroad import DEFAULTS as TERRAIN_DEFAULTS
from acres_gym.envs.tasks.offroad import (
    UnsolvableConfigError,
    offroad_episode,
    resolve_config,
    route_grid,
    time_to_goal,
)
from acres_gym.envs.tasks.trafficability import drivable, grade_limit_table, wetness_bin
from acres_gym.runtime import libm
from acres_gym.terrain.sampling import sample_height, sample_height_k, sample_surface_k

MAP_CHANNELS = ("height", "grade", "traction", "no_go", "route_time", "grade_margin")
# the local map's defaults (the one place they are written; the task config sets only what differs):
# 2 m cells, the terrain grid's own spacing; 16 rows of which 8 m behind the vehicle (24 m ahead); 16 columns,
# 16 m to each side; the four channels that read the ground (route_time, which reads a route search over the
# whole terrain, only when asked for)
# stall_traction null: the traction channel holds the grade limit as computed, negative values included
# route_time_cap_s 30 s: estimate, above the route time across the default map's diagonal (45 m) at the route
# search's L speed (3 m/s: 15 s), so the cap marks no-route cells rather than clipping routes on the map
# route_clearance_m 5 m: also the terrain planner's default clearance (agents.baselines.TerrainPlanner reads it here:
# the front axle runs a wheelbase, 3.16 m, ahead of the route and cuts its corners; the generator's 2 m only proves a
# route exists)
MAP_DEFAULTS = {"cell_m": 2.0, "rows": 16, "cols": 16, "behind_m": 8.0, "channels": list(MAP_CHANNELS[:4]),
                "stall_traction": None, "route_time_cap_s": 30.0, "route_clearance_m": 5.0}
SPLITS = ("train", "test")
GRID_KEYS = ("size_m", "cell_m")  # the terrain grid's, from randomization.terrain
TERRAIN_KEYS = tuple(k for k in TERRAIN_DEFAULTS if k not in GRID_KEYS)  # task_options.terrain and splits.<split>
TEST_SALT = 0x7E57  # mixed into the terrain seed of the test split
CRAWL_MPS = 0.5
HIGH_CENTRED_CAUSE = 4  # ground_cause of an episode that ended with the underbody on the ground
CRAWL_AFTER_S = 5.0
L_INDEX, AWD_INDEX = 1, 2  # axes of grade_limit_table
# hazard_distance_m reads at most this far (m): beyond the local map's reach to the side (16 m), so a clearance
# reward term of up to this distance sees its whole ramp
HAZARD_DISTANCE_CAP_M = 20.0
# route_time_s off the routes (within route_clearance_m of a hazard, or cut off from the goal): the route time of
# the nearest route cell plus the straight-line way to it at this speed (estimate: the route search's own L
# speed, the slowest it plans with), so the field is finite everywhere and grows away from the routes
ROUTE_FILL_SPEED_MPS = 3.0


@njit(inline="always")
def _map_cell_centre(x, y, cy, sy, front_m, map_cell, cols, r, q):
    """The world (x, y) of map cell (r, q) of a vehicle at (x, y) heading (cos, sin) = (cy, sy), m."""
    fwd = front_m - (r + 0.5) * map_cell
    left = (0.5 * cols - q - 0.5) * map_cell
    return x + cy * fwd - sy * left, y + sy * fwd + cy * left


@njit(inline="always")
def _route_time_at(route_time, origin, cell, px, py):
    """The route time of the route-grid cell nearest (px, py), s; inf outside the grid."""
    i = int(math.floor((px - origin[0]) / cell + 0.5))
    j = int(math.floor((py - origin[1]) / cell + 0.5))
    if 0 <= i < route_time.shape[1] and 0 <= j < route_time.shape[0]:
        return route_time[j, i]
    return math.inf


@njit(cache=True)
def _fill_local_map(height, origin, cell, traction, no_go, inside, route_time, route_origin, route_cell,
                    route_cap_s, x, y, yaw, channels, map_cell, rows, cols, front_m, out):
    """``out`` (N, C, rows, cols): the local maps of N vehicles (module docstring). ``channels`` holds the
    index into ``MAP_CHANNELS`` of each output channel; a cell whose centre lies outside ``inside`` (x_min,
    x_max, y_min, y_max: the terrain less ``TERRAIN_MARGIN_M``, where the episode ends off the terrain) is
    no-go, and reads ``route_cap_s`` in ``route_time``. ``route_time`` (N, gy, gx) holds each vehicle's time to
    its goal on its route grid (origin ``route_origin``, cells ``route_cell``); it is read only when a channel
    asks for it: the time at the nearest route cell less the least such time over the map's cells on the terrain,
    capped at ``route_cap_s``, which cells with no route read."""
    n = x.shape[0]
    ny, nx = height.shape[1], height.shape[2]
    wants_route = False
    for k in range(channels.shape[0]):
        wants_route |= channels[k] == 4
    for v in range(n):
        ox, oy, c = origin[v, 0], origin[v, 1], cell[v]
        h0 = sample_height(height[v], ox, oy, c, x[v], y[v])[0]
        cy, sy = math.cos(yaw[v]), math.sin(yaw[v])
        t_min = math.inf
        if wants_route:  # the least route time on the map: the channel's zero
            for r in range(rows):
                for q in range(cols):
                    px, py = _map_cell_centre(x[v], y[v], cy, sy, front_m, map_cell, cols, r, q)
                    if inside[0] < px < inside[1] and inside[2] < py < inside[3]:
                        t_min = min(t_min, _route_time_at(route_time[v], route_origin[v], route_cell[v], px, py))
        for r in range(rows):
            for q in range(cols):
                px, py = _map_cell_centre(x[v], y[v], cy, sy, front_m, map_cell, cols, r, q)
                i = min(max(int(math.floor((px - ox) / c + 0.5)), 0), nx - 1)
                j = min(max(int(math.floor((py - oy) / c + 0.5)), 0), ny - 1)
                off = not (inside[0] < px < inside[1] and inside[2] < py < inside[3])
                h, dh_dx, dh_dy = sample_height(height[v], ox, oy, c, px, py)
                for k in range(channels.shape[0]):
                    ch = channels[k]
                    if ch == 0:
                        out[v, k, r, q] = h - h0
                    elif ch == 1:  # the bilinear interpolant's gradient along the heading
                        out[v, k, r, q] = dh_dx * cy + dh_dy * sy
                    elif ch == 2:
                        out[v, k, r, q] = traction[v, j, i]
                    elif ch == 3:
                        out[v, k, r, q] = 1.0 if off else no_go[v, j, i]
                    elif ch == 5:  # the traction channel less the grade channel
                        out[v, k, r, q] = traction[v, j, i] - (dh_dx * cy + dh_dy * sy)
                    else:
                        t = math.inf if off else _route_time_at(route_time[v], route_origin[v], route_cell[v], px, py)
                        # a finite t is one of the times t_min is the least of (the same cells on the terrain)
                        out[v, k, r, q] = min(t - t_min, route_cap_s) if t < math.inf else route_cap_s


@njit(cache=True)
def _chamfer(out, free, step):
    """In place: each cell of ``out`` (ny, nx) where ``free`` becomes the least, over the cells, of their value
    plus the chamfer distance to them, in units of ``step`` per cell (sqrt(2) x ``step`` diagonally); the other
    cells keep theirs. Two passes over the 8 neighbours (Borgefors 1986): at most 8 % above the straight-line
    distance."""
    ny, nx = out.shape
    diagonal = math.sqrt(2.0) * step
    for j in range(ny):  # forward: the neighbours above and to the left
        for i in range(nx):
            if not free[j, i]:
                continue
            d = out[j, i]
            if i > 0:
                d = min(d, out[j, i - 1] + step)
            if j > 0:
                d = min(d, out[j - 1, i] + step)
                if i > 0:
                    d = min(d, out[j - 1, i - 1] + diagonal)
                if i < nx - 1:
                    d = min(d, out[j - 1, i + 1] + diagonal)
            out[j, i] = d
    for j in range(ny - 1, -1, -1):  # backward: below and to the right
        for i in range(nx - 1, -1, -1):
            if not free[j, i]:
                continue
            d = out[j, i]
            if i < nx - 1:
                d = min(d, out[j, i + 1] + step)
            if j < ny - 1:
                d = min(d, out[j + 1, i] + step)
                if i < nx - 1:
                    d = min(d, out[j + 1, i + 1] + diagonal)
                if i > 0:
                    d = min(d, out[j + 1, i - 1] + diagonal)
            out[j, i] = d


@njit(cache=True)
def _hazard_distance(hazard, cell_m, cap_m, out):
    """``out`` (ny, nx): the distance from each terrain point to the nearest point of ``hazard`` (ny, nx), m,
    capped at ``cap_m`` (``_chamfer`` from 0 on the hazard)."""
    ny, nx = hazard.shape
    for j in range(ny):
        for i in range(nx):
            out[j, i] = 0.0 if hazard[j, i] else cap_m
    _chamfer(out, ~hazard, cell_m)


@njit(cache=True)
def _route_potential(times, cell_m, fill_speed_mps, out):
    """``out`` (gy, gx): the route times ``times`` (s; inf on blocked and cut-off cells) with every infinite
    cell given the least, over the finite cells, of their time plus the straight-line (chamfer) way to them at
    ``fill_speed_mps``; all inf when no cell is finite (no route at all)."""
    out[:] = times
    _chamfer(out, ~np.isfinite(times), cell_m / fill_speed_mps)


@njit(cache=True)
def _sample_rows(field, origin, cell, x, y, out):
    """``out[v]``: vehicle v's ``field[v]`` (origin ``origin[v]``, cells ``cell[v]``), bilinear, at (x[v], y[v])."""
    for v in range(x.shape[0]):
        out[v] = sample_height_k(field, origin, cell, v, x[v], y[v])[0]


@njit(cache=True)
def _cells(no_go, origin, cell, x, y, out):
    """``out[v]`` = the no-go mask at the nearest cell of (x[v], y[v]) (0 outside the grid)."""
    ny, nx = no_go.shape[1], no_go.shape[2]
    for v in range(x.shape[0]):
        i = int(math.floor((x[v] - origin[v, 0]) / cell[v] + 0.5))
        j = int(math.floor((y[v] - origin[v, 1]) / cell[v] + 0.5))
        out[v] = no_go[v, j, i] != 0 if (0 <= i < nx and 0 <= j < ny) else False


@register_task
class OffroadNavigationTask(Task):
    """Reach a goal across generated ground (see the module docstring)."""

    name: ClassVar[str] = "offroad_navigation"
    scoring: ClassVar[Scoring] = Scoring(
        metric="success", higher_is_better=True, success_flag="goal_reached",
        figures=(Figure("success", "success rate", "{:.2f}"),
                 Figure("time_to_goal_s", "time to goal s", "{:.1f}", where_finite=True),
                 Figure("fuel_used_g", "fuel g", "{:.1f}"), Figure("goal_distance_m", "distance to goal m", "{:.1f}"),
                 Figure("distance_m", "distance m", "{:.1f}")),
        failures=("no_go", "stuck") + COMMON_FAILURES, baselines=("straight_line", "terrain_planner"))
    option_defaults: ClassVar[dict[str, Any]] = {
        "split": "train",
        "terrain": {},
        "splits": {"train": {}, "test": {}},
        "goal_radius_m": 3.0,
        "stuck_window_s": 15.0,
        "stuck_distance_m": 1.0,
        "local_map": dict(MAP_DEFAULTS),
    }
    flag_names: ClassVar[tuple[str, ...]] = ("goal_reached", "no_go", "stuck")
    value_names: ClassVar[tuple[str, ...]] = ("hazard_distance_m", "route_time_s")
    path_points = 1  # the goal as the one point of ``TaskFrame.path_points``

    def __init__(self, n: int, dt_s: float, max_steps: int, options: Mapping | None = None,
                 bounds: tuple[float, float, float, float] | None = None) -> None:
        options = strip_comments(options or {})
        check_keys(f"task_options (task {self.name!r})", options, self.option_defaults)
        self.options = self._resolve(merge_configs(self.option_defaults, options))
        o = self.options
        self.n, self.dt_s, self.max_steps = n, dt_s, max_steps
        m = o["local_map"]
        self.map_shape = (len(m["channels"]), m["rows"], m["cols"])
        self._channels = np.array([MAP_CHANNELS.index(c) for c in m["channels"]], dtype=np.int64)
        self._front_m = m["rows"] * m["cell_m"] - m["behind_m"]
        self.window_steps = max(1, int(round(o["stuck_window_s"] / dt_s)))
        self.goal = np.zeros((n, 2))
        self.start = np.zeros((n, 2))
        self.anchor = np.zeros((n, 2))
        self.anchor_step = np.zeros(n, dtype=np.int64)
        self.count = np.zeros(n, dtype=np.int64)
        self.stuck = np.zeros(n, dtype=bool)
        self.episode_summary: list[dict[str, Any]] = [{} for _ in range(n)]
        self._terrains: dict[int, Any] = {}
        self.table = None
        self.grade_limits = None
        self._reads_route_time = False  # read_values: a reward term reads route_time_s

    # --- options -------------------------------------------------------------------------------------
    def _resolve(self, o: dict) -> dict:
        where = f"task_options (task {self.name!r})"
        if o["split"] not in SPLITS:
            raise ValueError(f"{where}.split = {o['split']!r}; allowed: {', '.join(SPLITS)}")
        if not isinstance(o["splits"], Mapping) or set(o["splits"]) - set(SPLITS):
            raise ValueError(f"{where}.splits = {o['splits']!r}: expected {{train: {{...}}, test: {{...}}}}")
        if not isinstance(o["terrain"], Mapping):
            raise ValueError(f"{where}.terrain = {o['terrain']!r}: expected a mapping of terrain keys")
        sections = {"terrain": o["terrain"], **{f"splits.{k}": v or {} for k, v in o["splits"].items()}}
        for label, section in sections.items():
            if not isinstance(section, Mapping):
                raise ValueError(f"{where}.{label} = {section!r}: expected a mapping of terrain keys")
            for key in GRID_KEYS:
                if key in section:
                    raise ValueError(f"{where}.{label}.{key} = {section[key]!r}: the task draws its ground on the "
                                     f"terrain grid of randomization.terrain; set randomization.terrain.{key}")
            check_keys(f"{where}.{label}", section, TERRAIN_KEYS)
        for split, section in o["splits"].items():  # every bound checked now, each error naming its key
            resolve_config({**o["terrain"], **(section or {})}, name=self._terrain_key_name(split, o))
        o["goal_radius_m"] = number(f"{where}.goal_radius_m", o["goal_radius_m"], 0.0, 100.0, lo_open=True)
        o["stuck_window_s"] = number(f"{where}.stuck_window_s", o["stuck_window_s"], 0.0, 1e4, lo_open=True)
        o["stuck_distance_m"] = number(f"{where}.stuck_distance_m", o["stuck_distance_m"], 0.0, 1e3, lo_open=True)
        m = strip_comments(o["local_map"])
        check_keys(f"{where}.local_map", m, MAP_DEFAULTS)
        m = {**MAP_DEFAULTS, **m}
        m["cell_m"] = number(f"{where}.local_map.cell_m", m["cell_m"], 0.05, 20.0)
        for key in ("rows", "cols"):
            if isinstance(m[key], bool) or not isinstance(m[key], int) or not 1 <= m[key] <= 256:
                raise ValueError(f"{where}.local_map.{key} = {m[key]!r}: expected an integer in [1, 256]")
        m["behind_m"] = number(f"{where}.local_map.behind_m", m["behind_m"], 0.0, m["rows"] * m["cell_m"])
        if not isinstance(m["channels"], (list, tuple)) or not m["channels"] \
                or any(c not in MAP_CHANNELS for c in m["channels"]) or len(set(m["channels"])) != len(m["channels"]):
            raise ValueError(f"{where}.local_map.channels = {m['channels']!r}: expected a list of distinct names "
                             f"from {', '.join(MAP_CHANNELS)}")
        m["channels"] = list(m["channels"])
        if m["stall_traction"] is not None:
            m["stall_traction"] = number(f"{where}.local_map.stall_traction", m["stall_traction"], -1.0, 0.0)
        m["route_time_cap_s"] = number(f"{where}.local_map.route_time_cap_s", m["route_time_cap_s"], 0.0,
                                       MAP_VALUE_MAX, lo_open=True)  # within the observation's bounds
        m["route_clearance_m"] = number(f"{where}.local_map.route_clearance_m", m["route_clearance_m"], 0.0, 50.0)
        o["local_map"] = m
        return o

    def _terrain_key_name(self, split: str, o: dict | None = None):
        """Labels of the terrain keys of ``split`` in errors: where the key is set (the split's section, the
        ``terrain`` section or, for the grid, ``randomization.terrain``)."""
        o = self.options if o is None else o
        where = f"task_options (task {self.name!r})"
        section = o["splits"].get(split) or {}

        def name(key: str) -> str:
            if key in GRID_KEYS:
                return f"randomization.terrain.{key}"
            return f"{where}.{'splits.' + split if key in section else 'terrain'}.{key}"
        return name

    def terrain_config(self, split: str | None = None) -> dict:
        """The terrain-generator config of ``split`` (default: the episode split), grid size from the batch's
        terrain."""
        o = self.options
        return {**o["terrain"], **(o["splits"].get(split or o["split"]) or {}), **self._grid}

    # --- binding to the batch ------------------------------------------------------------------------
    def bind(self, randomizer, sim) -> None:
        """Take the surface table, vehicle and grid of the batch (called once by ``RangerBatch``)."""
        t = randomizer.config["terrain"]
        self._grid = {"size_m": float(t["size_m"]), "cell_m": float(t["cell_m"])}
        self.table = randomizer.table
        self.params = randomizer.base_params
        self.wheelbase_m = float(self.params.wheelbase_m)
        self.grade_limits = grade_limit_table(np.array([self.params]), self.table.records)
        shape = sim.terrain.shape
        self.traction = np.zeros((self.n, *shape), dtype=np.float64)
        self.no_go = np.zeros((self.n, *shape), dtype=np.uint8)
        self.hazard_distance = np.full((self.n, *shape), HAZARD_DISTANCE_CAP_M)  # m, _hazard_distance's field
        # each vehicle's time to its goal on its route grid (the route_time channel; (N, 1, 1) of inf without it,
        # sized by the first episode drawn with it: the grid's shape follows the split's route_cell_m)
        self.route_time = np.full((self.n, 1, 1), np.inf)
        self.route_origin = np.zeros((self.n, 2))
        self.route_cell = np.ones(self.n)
        self.route_potential = np.full((self.n, 1, 1), np.inf)  # s, _route_potential's field (route_time_s)
        self._inside = on_terrain_bounds(randomizer.extent)  # local_map marks the cells beyond it no-go
        for split in self.options["splits"]:  # both splits against the grid and the surface table
            resolved = resolve_config(self.terrain_config(split), self.table, name=self._terrain_key_name(split))
            if split == self.options["split"]:
                self.terrain_config_resolved = resolved
        self.sim = sim

    def read_values(self, names: frozenset[str]) -> None:
        """``route_time_s`` is measured only when a reward term reads it (each episode's ``prepare`` then runs
        the route search of the ``route_time`` channel)."""
        self._reads_route_time = "route_time_s" in names

    @property
    def _wants_routes(self) -> bool:
        """Whether episodes carry their route times (the ``route_time`` channel or ``route_time_s``)."""
        return "route_time" in self.options["local_map"]["channels"] or self._reads_route_time

    # --- episode draw --------------------------------------------------------------------------------
    def prepare(self, rng: np.random.Generator):
        """The episode's terrain, start and goal (``offroad_episode``: terrain, solvability and route search)
        and, with the ``route_time`` channel or a reader of ``route_time_s``, its time-to-goal field
        (``route_times``), from the task stream ``rng``: a pure function of it, which ``draw`` writes into the
        task (the pre-generation thread runs it ahead). The episode's route grid is dropped once read (prepared
        episodes keep only what ``draw`` writes)."""
        seed = int(rng.integers(0, 2**63 - 1))
        split = self.options["split"]
        if split == "test":
            seed = np.random.SeedSequence([seed, TEST_SALT])
        try:
            ep = offroad_episode(seed, self.terrain_config_resolved, self.table, self.grade_limits)
        except UnsolvableConfigError as exc:  # the keys named are those of task_options.terrain / splits.<split>
            raise UnsolvableConfigError(f"task_options (task {self.name!r}), split {split!r}: {exc}") from None
        if self._wants_routes:
            ep.route_time = self.route_times(ep)
        ep.route_grid = None
        return ep

    @staticmethod
    def spawn_xy(episode) -> tuple[float, float]:
        """The start point of a prepared episode, m."""
        return float(episode.start_xy[0]), float(episode.start_xy[1])

    def draw(self, i: int, rng: np.random.Generator | None, episode=None) -> tuple[float, float, float]:
        """Write vehicle ``i``'s terrain, start and goal: ``episode`` from ``prepare`` (drawn from ``rng``
        when None; with an episode, ``rng`` is not used and may be None); returns the start pose (x, y, yaw)."""
        ep = self.prepare(rng) if episode is None else episode
        self._terrains[i] = ep.terrain
        lim = self.grade_limits[ep.terrain.surface_id, wetness_bin(ep.terrain.wetness), L_INDEX, AWD_INDEX]
        stall = self.options["local_map"]["stall_traction"]
        self.traction[i] = lim if stall is None else np.where(lim < 0.0, stall, lim)
        hazard = (ep.no_go != 0) | ~drivable(lim, self.terrain_config_resolved["grade_margin"])
        _hazard_distance(hazard, float(ep.terrain.cell_m), HAZARD_DISTANCE_CAP_M, self.hazard_distance[i])
        if self._wants_routes:  # prepared by prepare, or here from the episode
            times, origin, cell = ep.route_time if ep.route_time is not None else self.route_times(ep)
            if self.route_time.shape[1:] != times.shape:
                self.route_time = np.full((self.n, *times.shape), np.inf)
                self.route_potential = np.full((self.n, *times.shape), np.inf)
            self.route_time[i], self.route_origin[i], self.route_cell[i] = times, origin, cell
            _route_potential(times, float(cell), ROUTE_FILL_SPEED_MPS, self.route_potential[i])
        self.no_go[i] = ep.no_go
        self.goal[i] = ep.goal_xy
        self.start[i] = ep.start_xy
        self.episode_summary[i] = {**ep.summary, "split": self.options["split"]}
        return ep.start_xy[0], ep.start_xy[1], ep.start_yaw

    def route_times(self, ep) -> tuple[np.ndarray, tuple[float, float], float]:
        """(times (gy, gx) s, grid origin (x, y) m, grid cell m): the time to the goal from every cell of a route
        grid (``offroad.time_to_goal``, with the generator's ``grade_margin`` and ``max_side_grade``), for the
        ``route_time`` channel: the grid of the episode's solvability search (``ep.route_grid``) with no-go areas
        and impassable ground kept ``route_clearance_m`` away (as the terrain planner keeps them), or the
        search's own grid when that wider clearance cuts the start off the goal (as the planner falls back)."""
        c = self.terrain_config_resolved
        grid = ep.route_grid
        clearance_m = self.options["local_map"]["route_clearance_m"]
        if clearance_m > c["no_go_clearance_m"]:
            wide = route_grid(ep.terrain, ep.no_go, self.grade_limits, c["route_cell_m"], clearance_m,
                              c["edge_clearance_m"], margin=c["grade_margin"])
            times = time_to_goal(wide, ep.goal_xy, c["grade_margin"], c["max_side_grade"])
            if math.isfinite(times[wide.index(*ep.start_xy)]):
                grid = wide
        if grid is ep.route_grid:
            times = time_to_goal(grid, ep.goal_xy, c["grade_margin"], c["max_side_grade"])
        return times, grid.origin_xy_m, float(grid.cell_m)

    def episode_terrain(self, i: int):
        """The terrain drawn for vehicle ``i`` by the last ``draw`` (handed over once)."""
        return self._terrains.pop(i, None)

    # --- measurement ---------------------------------------------------------------------------------
    def locate(self, x: np.ndarray, y: np.ndarray, rows: np.ndarray, restart: bool = False) -> None:
        """Advance the stuck clocks of the vehicles in ``rows`` (``restart``: a new episode)."""
        rows = np.asarray(rows, dtype=bool)
        if restart:
            self.anchor[rows, 0] = x[rows]
            self.anchor[rows, 1] = y[rows]
            self.anchor_step[rows] = 0
            self.count[rows] = 0
            self.stuck[rows] = False
            return
        self.count[rows] += 1
        moved = rows & (np.hypot(x - self.anchor[:, 0], y - self.anchor[:, 1]) >= self.options["stuck_distance_m"])
        self.anchor[moved, 0] = x[moved]
        self.anchor[moved, 1] = y[moved]
        self.anchor_step[moved] = self.count[moved]
        self.stuck[rows] = (self.count - self.anchor_step)[rows] >= self.window_steps

    def measure(self, x: np.ndarray, y: np.ndarray, yaw: np.ndarray, steps: np.ndarray) -> TaskFrame:
        n = self.n
        dx, dy = self.goal[:, 0] - x, self.goal[:, 1] - y
        dist = np.hypot(dx, dy)
        cy, sy, bx, by, bearing = libm.heading_frame(dx, dy, yaw)
        terrain = self.sim.terrain
        hit_rear = np.empty(n, dtype=np.bool_)
        hit_front = np.empty(n, dtype=np.bool_)
        fx, fy = x + self.wheelbase_m * cy, y + self.wheelbase_m * sy  # the front-axle midpoint
        _cells(self.no_go, terrain.origin_xy_m, terrain.cell_m, x, y, hit_rear)
        _cells(self.no_go, terrain.origin_xy_m, terrain.cell_m, fx, fy, hit_front)
        no_go = hit_rear | hit_front
        rear_m, front_m = np.empty(n), np.empty(n)  # the hazard field at the rear- and front-axle midpoints
        _sample_rows(self.hazard_distance, terrain.origin_xy_m, terrain.cell_m, x, y, rear_m)
        _sample_rows(self.hazard_distance, terrain.origin_xy_m, terrain.cell_m, fx, fy, front_m)
        values = {"hazard_distance_m": np.minimum(rear_m, front_m)}
        if self._wants_routes:
            values["route_time_s"] = np.empty(n)
            _sample_rows(self.route_potential, self.route_origin, self.route_cell, x, y, values["route_time_s"])
        reached = dist <= self.options["goal_radius_m"]
        m = self.options["local_map"]
        local = np.empty((n, *self.map_shape))
        _fill_local_map(terrain.height_m, terrain.origin_xy_m, terrain.cell_m, self.traction, self.no_go, self._inside,
                        self.route_time, self.route_origin, self.route_cell, float(m["route_time_cap_s"]),
                        np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64),
                        np.asarray(yaw, dtype=np.float64), self._channels, float(m["cell_m"]), int(m["rows"]),
                        int(m["cols"]), float(self._front_m), local)
        zeros = np.zeros(n)
        return TaskFrame(
            lateral_error_m=zeros, heading_error_rad=bearing, s_m=-dist, target_speed=np.zeros((n, 1)),
            path_points=np.stack([bx, by], axis=1)[:, None, :], off_course=no_go, path_complete=reached,
            flags={"goal_reached": reached, "no_go": no_go, "stuck": self.stuck.copy()},
            values=values,
            goal=np.stack([dist, bearing], axis=1), local_map=local,
        )

    def after_step(self, batch, rows, frame, state, speed, ended, task_flags) -> None:
        """The ground causes of ``batch`` (a ``RangerBatch`` running this task), after each control step:
        counted into ``batch.crawl_counts`` on every step a vehicle in ``rows`` crawls, then, for an episode
        that ends short of the goal (not at a no-go area), ``batch.ground_cause``: the cause where it ended if
        that is soil or grade, else the cause it crawled on most (``ground_cause``)."""
        ax, ay = frame.axle_x_m, frame.axle_y_m

        def cause(i):
            return self.ground_cause(int(i), float(ax[i]), float(ay[i]), float(frame.yaw_rad[i]),
                                     float(frame.pitch_rad[i]), int(state["gear"][i]), int(state["drive_mode"][i]),
                                     bool(state["rolled_over"][i]))

        crawl = rows & (np.abs(speed) < CRAWL_MPS) & (batch.steps * batch.dt_s > CRAWL_AFTER_S)
        for i in np.flatnonzero(crawl):
            batch.crawl_counts[i, cause(i)] += 1
        short = rows & ended & ~task_flags["goal_reached"] & ~task_flags["no_go"]
        for i in np.flatnonzero(short):
            if state["high_centred"][i]:
                batch.ground_cause[i] = HIGH_CENTRED_CAUSE
                continue
            counts, end = batch.crawl_counts[i], cause(i)
            batch.ground_cause[i] = end if end in (1, 2) or not counts[1:].any() else int(np.argmax(counts[1:]) + 1)

    def ground_cause(self, i: int, x: float, y: float, yaw: float, pitch: float, gear: int, drive_mode: int,
                     rolled: bool = False) -> int:
        """The ground under vehicle ``i`` (module docstring): 1 soil, 2 grade, 3 neither."""
        st = self.sim.terrain
        arrays = (st.height_m, st.origin_xy_m, st.cell_m, i)
        sid, wet = sample_surface_k(st.surface_id, st.wetness, st.origin_xy_m, st.cell_m, i, x, y)
        b = int(wetness_bin(float(wet)))
        r = L_INDEX if gear == GEAR_LOW else 0
        margin = self.terrain_config_resolved["grade_margin"]
        if not drivable(self.grade_limits[sid, b, r, int(drive_mode)], margin):
            return 1
        limit = margin * self.grade_limits[sid, b, r, int(drive_mode)]
        h0, dh_dx, dh_dy = sample_height_k(*arrays, x, y)
        side = abs(-math.sin(yaw) * dh_dx + math.cos(yaw) * dh_dy)
        steep = self.terrain_config_resolved["max_side_grade"]
        if side > steep:  # across a slope steeper than routes allow
            return 2
        if rolled:  # a rollover among slopes steeper than routes allow (within 4 m)
            for dx in (-4.0, 0.0, 4.0):
                for dy in (-4.0, 0.0, 4.0):
                    _h, gx, gy = sample_height_k(*arrays, x + dx, y + dy)
                    if math.hypot(gx, gy) > steep:
                        return 2
        ahead = max((sample_height_k(*arrays, x + d * math.cos(yaw), y + d * math.sin(yaw))[0] - h0) / d
                    for d in (1.0, 2.0, 3.0, 4.0))
        grade = max(ahead, -math.tan(pitch))  # nose up is negative pitch
        if grade > limit:
            return 2
        return 3

    # --- the contract's hooks ------------------------------------------------------------------------
    def infos(self, batch) -> dict[str, np.ndarray]:
        """``ground_cause`` and the remaining ``goal_distance_m`` of every vehicle."""
        return {"ground_cause": batch.ground_cause.copy(), "goal_distance_m": -batch.frame.task.s_m.copy()}

    def info_row(self, batch, i: int) -> dict[str, Any]:
        return {"ground_cause": batch.ground_cause.item(i), "goal_distance_m": -batch.frame.task.s_m.item(i)}

    @classmethod
    def episode_row(cls, info: Mapping[str, Any], truncated: bool) -> dict[str, float]:
        """The shared figures, and ``time_to_goal_s`` (NaN when the goal was not reached), the remaining
        ``goal_distance_m`` and ``ground_cause`` (why it ended short of the goal outside no-go areas: 1 soil,
        2 grade, 3 other; 0 otherwise)."""
        row = super().episode_row(info, truncated)
        row["time_to_goal_s"] = float(info["time_s"]) if row["success"] else math.nan
        row["goal_distance_m"] = float(info["goal_distance_m"])
        row["ground_cause"] = float(info["ground_cause"])
        return row

    def view(self, i: int, frame: TaskFrame) -> TaskView:
        """The goal and its circle, the distance and bearing to it, the policy's ``local_map`` and the no-go
        areas."""
        dist, bearing = float(frame.goal[i, 0]), float(frame.goal[i, 1])
        m = self.options["local_map"]
        return TaskView(goal_xy=(float(self.goal[i, 0]), float(self.goal[i, 1])),
                        goal_radius_m=float(self.options["goal_radius_m"]),
                        hud=[f"goal {dist:6.1f} m  bearing {math.degrees(bearing):+4.0f} deg"],
                        local_map=frame.local_map[i], map_channels=tuple(m["channels"]),
                        map_vehicle_rc=(self._front_m / m["cell_m"], 0.5 * m["cols"]), no_go=self.no_go[i])
