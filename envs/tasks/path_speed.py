"""The tasks' references, vectorised over N vehicles: a smooth reference path and a target-speed profile.

Every episode draws, from the task's generator, a target speed per control step (piecewise-constant
targets of random duration, reached at a limited acceleration from rest, so the profile is feasible) and a
path (a curvature profile integrated from the spawn pose, sampled every ``path_spacing_m``). The path
stays on the ground: when the task has ``bounds`` (the batch gives the terrain less a margin), the part of
the path the profile can reach in an episode (its distance plus the longest preview) must lie inside
them; a path that leaves them is drawn again (new heading and shape, same largest curvature and speeds),
up to ``PATH_DRAWS`` times. If none fits, the path ends where it first leaves the bounds (``end_index``)
and the episode ends with ``path_complete`` there, never by driving off the terrain. After each
control step the task locates the vehicle on its path (the rear-axle midpoint against the nearest path
point, searched in a window ahead of the last one) and measures:

- ``lateral_error_m``: signed distance from the path (positive: the vehicle is left of it);
- ``heading_error_rad``: vehicle yaw minus path heading, wrapped to [-pi, pi);
- ``s_m``: arc length travelled along the path;
- ``target_speed``: target now and at ``speed_preview_s`` seconds ahead;
- ``path_points``: the path at ``path_preview_m`` metres ahead of the nearest point, in the body frame
  (x forward, y left, m, yaw only);
- ``off_course`` (|lateral error| > ``max_lateral_error_m``) and ``path_complete`` (the end of the path
  comes within the preview).

``speed_tracking`` and ``path_following`` share this machinery and differ in their defaults (a straight
path and a lively speed profile with stops; a winding path and a steadier speed limited by the lateral
acceleration the path asks for). Their scoring (``PATH_FIGURES``): speed RMSE (speed tracking's metric) and
lateral RMSE (path following's), fuel and distance, lower is better; an episode fails by leaving the
corridor (``off_course``), the terrain, rolling over or diverging, and succeeds by running to the time limit or
the path's end without failing. ``TaskFrame``, ``TASKS`` and ``make_task`` are those of
``acres_gym.envs.tasks.base``, named here too. The registered environment classes of the tasks (a default
config each) are in ``acres_gym.envs.tasks``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, ClassVar

import numpy as np
from numba import njit

from acres_gym.configuration import check_keys, draw_in_range, number, number_range, strip_comments
from acres_gym.envs.tasks.base import TASKS as TASKS  # named here too
from acres_gym.envs.tasks.base import Figure, Scoring, Task, TaskFrame, TaskView, register_task
from acres_gym.envs.tasks.base import make_task as make_task

SEARCH_BACK = 8  # path points searched behind the last nearest point
SEARCH_WINDOW = 96  # path points searched in all (48 m at 0.5 m spacing)
PATH_DRAWS = 16  # attempts at a path whose reachable part stays inside the bounds
PATH_REACH_MARGIN_M = 5.0  # path kept inside the bounds beyond the profile's distance and the preview


@dataclass
class PathEpisode:
    """One episode's draw of a path task: the speed profile (m/s per control step), the path (x, y, heading
    arrays), the index of its last usable point and the summary for ``info``."""

    profile: np.ndarray
    path: tuple[np.ndarray, np.ndarray, np.ndarray]
    end_index: int
    summary: dict[str, Any]


@njit(cache=True, nogil=True)
def _integrate_path(n_path, ds, x0, y0, yaw0, kappa_max, waves, straight_m):
    """The path of ``PathSpeedTask._draw_path``: at arc length s = i ds, the curvature ``kappa(s) = sum_k a_k
    sin(2 pi s / wavelength_k + phase_k)`` (``waves`` rows (wavelength, phase, a); none when ``kappa_max`` is
    0), scaled so its largest magnitude is ``kappa_max`` and faded in by the smoothstep ``t^2 (3 - 2 t)``, t = s /
    ``straight_m`` clipped to [0, 1]; the heading ``yaw0`` plus its trapezoidal integral, and x, y from ``(x0,
    y0)`` by the cosine and sine of each step's mean heading. Returns (x, y, heading) of ``n_path`` points,
    rounded as the array expressions they replace round them (running sums in order, no fused operations)."""
    s = np.empty(n_path)
    kappa = np.zeros(n_path)
    for i in range(n_path):
        s[i] = i * ds
    if kappa_max > 0.0:
        for k in range(waves.shape[0]):
            for i in range(n_path):
                kappa[i] += waves[k, 2] * np.sin(2.0 * np.pi * s[i] / waves[k, 0] + waves[k, 1])
        peak = 0.0
        for i in range(n_path):
            peak = max(peak, abs(kappa[i]))
        if peak > 0.0:
            scale = kappa_max / peak
            for i in range(n_path):
                kappa[i] *= scale
        if straight_m > 0.0:
            for i in range(n_path):
                t = min(max(s[i] / straight_m, 0.0), 1.0)
                kappa[i] *= t * t * (3.0 - 2.0 * t)
    heading, x, y = np.empty(n_path), np.empty(n_path), np.empty(n_path)
    turned, east, north = 0.0, 0.0, 0.0
    heading[0], x[0], y[0] = yaw0 + turned, x0 + east, y0 + north
    for i in range(1, n_path):
        turned += 0.5 * (kappa[i] + kappa[i - 1]) * ds
        heading[i] = yaw0 + turned
    for i in range(1, n_path):
        mid = 0.5 * (heading[i] + heading[i - 1])
        east += np.cos(mid) * ds
        north += np.sin(mid) * ds
        x[i], y[i] = x0 + east, y0 + north
    return x, y, heading


@njit(cache=True, nogil=True)
def _rate_limited(targets, up, down, out):
    """``out[k]``: the speed from rest following ``targets`` with steps of at most ``up`` and ``-down``:
    ``v += min(max(targets[k] - v, -down), up)``, with Python's ``min`` / ``max`` (the first argument
    unless the second is strictly smaller / larger)."""
    v = 0.0
    for k in range(targets.size):
        change = targets[k] - v
        if -down > change:
            change = -down
        if up < change:
            change = up
        v += change
        out[k] = v


@njit(cache=True)
def _locate(path_x, path_y, x, y, rows, window, index):
    """For each vehicle in ``rows``: the nearest path point to (x, y) among ``window`` points starting
    ``SEARCH_BACK`` behind its present index (kept inside the path); NaN distances never win."""
    n_path = path_x.shape[1]
    for i in range(index.shape[0]):
        if not rows[i]:
            continue
        start = min(max(index[i] - SEARCH_BACK, 0), n_path - window)
        best, best_d2 = start, np.inf
        for j in range(start, start + window):
            dx = path_x[i, j] - x[i]
            dy = path_y[i, j] - y[i]
            d2 = dx * dx + dy * dy
            if d2 < best_d2:
                best, best_d2 = j, d2
        index[i] = best


@njit(cache=True)
def _measure(path_x, path_y, path_heading, profile, index, end_index, preview_offsets, preview_steps,
             spacing_m, max_steps, x, y, yaw, steps, lateral, heading_error, s, target, points, complete):
    """The measurements of ``PathSpeedTask.measure`` for every vehicle (module docstring): signed lateral
    error and heading error against the nearest point, arc length, the target speed now and previewed,
    the path points ahead in the body frame (never past the path's end), and whether the end is near."""
    n_profile = profile.shape[1]
    last_offset = preview_offsets.max() if preview_offsets.size else 0
    for i in range(x.shape[0]):
        j = index[i]
        h = path_heading[i, j]
        dx = x[i] - path_x[i, j]
        dy = y[i] - path_y[i, j]
        ch, sh = np.cos(h), np.sin(h)
        lateral[i] = -sh * dx + ch * dy
        s[i] = j * spacing_m + (ch * dx + sh * dy)
        heading_error[i] = (yaw[i] - h + np.pi) % (2.0 * np.pi) - np.pi
        t = min(steps[i], max_steps)
        target[i, 0] = profile[i, min(t, n_profile - 1)]
        for m in range(preview_steps.size):
            target[i, m + 1] = profile[i, min(t + preview_steps[m], n_profile - 1)]
        cy, sy = np.cos(yaw[i]), np.sin(yaw[i])
        for m in range(preview_offsets.size):
            a = min(j + preview_offsets[m], end_index[i])
            qx = path_x[i, a] - x[i]
            qy = path_y[i, a] - y[i]
            points[i, m, 0] = cy * qx + sy * qy
            points[i, m, 1] = -sy * qx + cy * qy
        complete[i] = j >= end_index[i] - last_offset


@njit(cache=True)
def _locate_measure(path_x, path_y, path_heading, profile, index, end_index, preview_offsets, preview_steps,
                    spacing_m, max_steps, window, max_lateral_m, rows, kin, steps, errors, target, points, flags):
    """``_locate`` then ``_measure`` in one call, for the control step (``PathSpeedTask.locate_measure``):
    the position and yaw from the body kinematics ``kin`` (rows yaw 2, axle x 5, axle y 6); ``errors`` gets
    the rows lateral error, heading error and arc length, ``flags`` the rows off course (|lateral| above
    ``max_lateral_m``) and complete."""
    _locate(path_x, path_y, kin[5], kin[6], rows, window, index)
    _measure(path_x, path_y, path_heading, profile, index, end_index, preview_offsets, preview_steps, spacing_m,
             max_steps, kin[5], kin[6], kin[2], steps, errors[0], errors[1], errors[2], target, points, flags[1])
    for i in range(errors.shape[1]):
        flags[0, i] = np.abs(errors[0, i]) > max_lateral_m


PATH_SPEED_FACTOR = 1.2  # a default path is this much longer than the highest target speed covers
PATH_EXTRA_M = 20.0


def default_path_length_m(options: Mapping[str, Any], horizon_s: float) -> float:
    """The path length of ``path_length_m: null``: long enough for ``horizon_s`` at ``PATH_SPEED_FACTOR`` x
    the highest target speed, plus the longest preview and ``PATH_EXTRA_M``."""
    return (PATH_SPEED_FACTOR * options["speed_max_mps"] * horizon_s + max(options["path_preview_m"], default=0.0)
            + PATH_EXTRA_M)


def horizon_for_path_m(options: Mapping[str, Any], length_m: float) -> float:
    """The longest horizon, s, whose default path (``default_path_length_m``) is at most ``length_m``
    (inf for a task whose speed is 0)."""
    speed = PATH_SPEED_FACTOR * options["speed_max_mps"]
    room = length_m - max(options["path_preview_m"], default=0.0) - PATH_EXTRA_M
    return math.inf if speed <= 0.0 else room / speed


PATH_FIGURES = (Figure("speed_rmse_mps", "speed RMSE m/s"), Figure("lateral_rmse_m", "lateral RMSE m"),
                Figure("fuel_g_per_km", "fuel g/km", "{:.1f}"), Figure("l_per_100km", "L/100km", "{:.2f}"),
                Figure("distance_m", "distance m", "{:.1f}"))
PATH_BASELINES = ("ulc_pure_pursuit", "pedal_pid")


class PathSpeedTask(Task):
    """A reference path and a target-speed profile per vehicle (see the module docstring)."""

    name: ClassVar[str] = ""
    scoring: ClassVar[Scoring] = Scoring(metric="speed_rmse_mps", higher_is_better=False, figures=PATH_FIGURES,
                                         failures=("rolled_over", "diverged", "off_course", "off_terrain"),
                                         baselines=PATH_BASELINES)
    option_defaults: ClassVar[dict[str, Any]] = {
        "spawn_xy_m": [0.0, 0.0],
        "spawn_yaw_rad": 0.0,  # a number or a range [low, high]
        "path_length_m": None,  # null: long enough for the episode at the highest target speed
        "path_spacing_m": 0.5,
        "curvature_max_per_m": 0.0,  # the episode's largest curvature: a number or a range
        "curvature_wavelength_m": [40.0, 120.0],
        "straight_start_m": 10.0,
        "lateral_accel_max_mps2": 2.0,  # caps the target speed on a winding path
        "speed_min_mps": 0.0,
        "speed_max_mps": 10.0,
        "speed_segment_s": [4.0, 10.0],
        "stop_probability": 0.0,
        "speed_accel_mps2": 1.0,
        "speed_decel_mps2": 1.5,
        "speed_preview_s": [1.0, 2.0, 3.0],
        "path_preview_m": [2.0, 4.0, 6.0, 8.0, 10.0, 15.0, 20.0],
        "max_lateral_error_m": 4.0,
    }

    def __init__(self, n: int, dt_s: float, max_steps: int, options: Mapping | None = None,
                 bounds: tuple[float, float, float, float] | None = None) -> None:
        options = strip_comments(options or {})
        check_keys(f"task_options (task {self.name!r})", options, self.option_defaults)
        self.options = self._resolve({**self.option_defaults, **options})
        o = self.options
        self.n = n
        self.dt_s = dt_s
        self.max_steps = max_steps
        self.speed_preview_steps = np.array([int(round(t / dt_s)) for t in o["speed_preview_s"]], dtype=np.int64)
        self.preview_offsets = np.array([int(round(d / o["path_spacing_m"])) for d in o["path_preview_m"]],
                                        dtype=np.int64)
        horizon_s = max_steps * dt_s
        length = o["path_length_m"]
        if length is None:
            length = default_path_length_m(o, horizon_s)
            o["path_length_m"] = length
        self.n_path = int(math.ceil(length / o["path_spacing_m"])) + 1
        self.n_profile = max_steps + 1 + int(self.speed_preview_steps.max(initial=0))
        self.path_x = np.zeros((n, self.n_path))
        self.path_y = np.zeros((n, self.n_path))
        self.path_heading = np.zeros((n, self.n_path))
        self.profile = np.zeros((n, self.n_profile))
        self.index = np.zeros(n, dtype=np.int64)
        self.end_index = np.full(n, self.n_path - 1, dtype=np.int64)
        if bounds is not None:
            x_min, x_max, y_min, y_max = (float(b) for b in bounds)
            if not (x_min < x_max and y_min < y_max):
                raise ValueError(f"task bounds {bounds!r}: expected (x_min, x_max, y_min, y_max) with min < max")
            sx, sy = o["spawn_xy_m"]
            if not (x_min <= sx <= x_max and y_min <= sy <= y_max):
                raise ValueError(f"task_options (task {self.name!r}).spawn_xy_m = {o['spawn_xy_m']}: outside the "
                                 f"ground the path may use, x in [{x_min:g}, {x_max:g}] m, y in "
                                 f"[{y_min:g}, {y_max:g}] m (the terrain less its margin)")
            bounds = (x_min, x_max, y_min, y_max)
        self.bounds = bounds
        self.episode_summary: list[dict[str, float]] = [{} for _ in range(n)]

    @property
    def speed_points(self) -> int:
        """Length of the ``target_speed`` observation: now and the previews."""
        return 1 + len(self.options["speed_preview_s"])

    @property
    def path_points(self) -> int:
        """Number of observed path points."""
        return len(self.options["path_preview_m"])

    # --- options -------------------------------------------------------------------------------------
    def _resolve(self, o: dict) -> dict:
        where = f"task_options (task {self.name!r})"
        xy = o["spawn_xy_m"]
        if not isinstance(xy, (list, tuple)) or len(xy) != 2:
            raise ValueError(f"{where}.spawn_xy_m = {xy!r}: expected [x, y] in m")
        o["spawn_xy_m"] = [number(f"{where}.spawn_xy_m[0]", xy[0]), number(f"{where}.spawn_xy_m[1]", xy[1])]
        o["spawn_yaw_rad"] = list(number_range(f"{where}.spawn_yaw_rad", o["spawn_yaw_rad"], -10.0, 10.0))
        if o["path_length_m"] is not None:
            o["path_length_m"] = number(f"{where}.path_length_m", o["path_length_m"], 1.0, 1e5)
        o["path_spacing_m"] = number(f"{where}.path_spacing_m", o["path_spacing_m"], 0.05, 10.0)
        o["curvature_max_per_m"] = list(number_range(f"{where}.curvature_max_per_m", o["curvature_max_per_m"],
                                                     0.0, 0.2))
        o["curvature_wavelength_m"] = list(number_range(f"{where}.curvature_wavelength_m",
                                                        o["curvature_wavelength_m"], 1.0, 1e5))
        o["straight_start_m"] = number(f"{where}.straight_start_m", o["straight_start_m"], 0.0, 1e5)
        o["lateral_accel_max_mps2"] = number(f"{where}.lateral_accel_max_mps2", o["lateral_accel_max_mps2"],
                                             0.0, 20.0, lo_open=True)
        o["speed_min_mps"] = number(f"{where}.speed_min_mps", o["speed_min_mps"], 0.0, 45.0)
        o["speed_max_mps"] = number(f"{where}.speed_max_mps", o["speed_max_mps"], o["speed_min_mps"], 45.0)
        o["speed_segment_s"] = list(number_range(f"{where}.speed_segment_s", o["speed_segment_s"], 0.01, 1e5))
        o["stop_probability"] = number(f"{where}.stop_probability", o["stop_probability"], 0.0, 1.0)
        o["speed_accel_mps2"] = number(f"{where}.speed_accel_mps2", o["speed_accel_mps2"], 0.0, 20.0, lo_open=True)
        o["speed_decel_mps2"] = number(f"{where}.speed_decel_mps2", o["speed_decel_mps2"], 0.0, 20.0, lo_open=True)
        for key, hi in (("speed_preview_s", 60.0), ("path_preview_m", 500.0)):
            values = o[key]
            if not isinstance(values, (list, tuple)):
                raise ValueError(f"{where}.{key} = {values!r}: expected a list of numbers")
            o[key] = [number(f"{where}.{key}[{k}]", v, 0.0, hi, lo_open=True) for k, v in enumerate(values)]
        if not o["path_preview_m"]:
            raise ValueError(f"{where}.path_preview_m: give at least one preview distance")
        o["max_lateral_error_m"] = number(f"{where}.max_lateral_error_m", o["max_lateral_error_m"], 0.0, 1e4,
                                          lo_open=True)
        return o

    # --- episode draw --------------------------------------------------------------------------------
    def prepare(self, rng: np.random.Generator) -> PathEpisode:
        """Draw an episode's speed profile and path (see the module docstring) from the task stream ``rng``:
        a pure function of it, which ``draw`` writes into a vehicle's row."""
        o = self.options
        kappa_max = draw_in_range(rng, o["curvature_max_per_m"])
        speed_max = o["speed_max_mps"]
        if kappa_max > 0.0:
            speed_max = min(speed_max, math.sqrt(o["lateral_accel_max_mps2"] / kappa_max))
        profile = self._draw_profile(rng, speed_max)
        reach_m = (float(np.sum(profile[:self.max_steps + 1])) * self.dt_s
                   + max(o["path_preview_m"]) + PATH_REACH_MARGIN_M)
        need = min(self.n_path - 1, int(math.ceil(reach_m / o["path_spacing_m"])))
        best_end, best, draws = -1, None, 0
        while draws < PATH_DRAWS:
            draws += 1
            path = self._draw_path(rng, kappa_max)
            end = self._end_in_bounds(path[0], path[1])
            if end > best_end:
                best_end, best = end, path
            if end >= need:
                break
        summary = {"curvature_max_per_m": kappa_max, "speed_max_mps": speed_max,
                   "path_length_m": best_end * o["path_spacing_m"], "path_draws": draws}
        return PathEpisode(profile, best, best_end, summary)

    @staticmethod
    def spawn_xy(episode: PathEpisode) -> tuple[float, float]:
        """The start point of a prepared episode (the path's first point), m."""
        return float(episode.path[0][0]), float(episode.path[1][0])

    def draw(self, i: int, rng: np.random.Generator | None, episode: PathEpisode | None = None
             ) -> tuple[float, float, float]:
        """Write vehicle ``i``'s speed profile and path: ``episode`` from ``prepare`` (drawn from ``rng`` when
        None; with an episode, ``rng`` is not used and may be None); returns the spawn pose (x, y, yaw) of the
        rear-axle midpoint (the path's start)."""
        ep = self.prepare(rng) if episode is None else episode
        self.profile[i] = ep.profile
        self.path_x[i], self.path_y[i], self.path_heading[i] = ep.path
        self.end_index[i] = ep.end_index
        self.episode_summary[i] = dict(ep.summary)
        return float(ep.path[0][0]), float(ep.path[1][0]), float(ep.path[2][0])

    def _draw_profile(self, rng: np.random.Generator, speed_max: float) -> np.ndarray:
        """Piecewise-constant targets in [speed_min, speed_max] (or stops), reached at the task's limited
        acceleration and deceleration from rest: the profile, m/s per control step."""
        o = self.options
        speed_min = min(o["speed_min_mps"], speed_max)
        targets = np.empty(self.n_profile)
        k = 0
        while k < self.n_profile:
            steps = max(1, int(round(float(rng.uniform(*o["speed_segment_s"])) / self.dt_s)))
            stop = o["stop_probability"] > 0.0 and float(rng.random()) < o["stop_probability"]
            targets[k:k + steps] = 0.0 if stop else float(rng.uniform(speed_min, speed_max))
            k += steps
        profile = np.empty(self.n_profile)
        _rate_limited(targets, o["speed_accel_mps2"] * self.dt_s, o["speed_decel_mps2"] * self.dt_s, profile)
        return profile

    def _draw_path(self, rng: np.random.Generator, kappa_max: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """A path from the spawn point with a random heading: three sine components of curvature scaled to
        ``kappa_max`` (faded in over ``straight_start_m``), integrated every ``path_spacing_m``
        (``_integrate_path``). Returns (x, y, heading) arrays of ``n_path`` points."""
        o = self.options
        x0, y0 = o["spawn_xy_m"]
        yaw0 = draw_in_range(rng, o["spawn_yaw_rad"])
        waves = np.zeros((3, 3))  # wavelength, phase, amplitude of each component
        if kappa_max > 0.0:
            for k in range(3):
                waves[k, 0] = float(rng.uniform(*o["curvature_wavelength_m"]))
                waves[k, 1] = float(rng.uniform(0.0, 2.0 * np.pi))
                waves[k, 2] = float(rng.uniform(-1.0, 1.0))
        return _integrate_path(self.n_path, float(o["path_spacing_m"]), float(x0), float(y0), float(yaw0),
                               float(kappa_max), waves, float(o["straight_start_m"]))

    def _end_in_bounds(self, x: np.ndarray, y: np.ndarray) -> int:
        """Index of the last path point before the path first leaves ``bounds`` (all of it without)."""
        if self.bounds is None:
            return self.n_path - 1
        x_min, x_max, y_min, y_max = self.bounds
        outside = np.flatnonzero((x < x_min) | (x > x_max) | (y < y_min) | (y > y_max))
        return self.n_path - 1 if outside.size == 0 else max(int(outside[0]) - 1, 0)

    # --- measurement ---------------------------------------------------------------------------------
    def locate(self, x: np.ndarray, y: np.ndarray, rows: np.ndarray, restart: bool = False) -> None:
        """Move the nearest-point index of the vehicles in ``rows`` to their position (x, y); ``restart``
        searches from the start of the path."""
        if restart:
            self.index[rows] = 0
        _locate(self.path_x, self.path_y, np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64),
                np.asarray(rows, dtype=np.bool_), min(SEARCH_WINDOW, self.n_path), self.index)

    def measure(self, x: np.ndarray, y: np.ndarray, yaw: np.ndarray, steps: np.ndarray) -> TaskFrame:
        """The task's measurements for all vehicles at position (x, y), yaw, after ``steps`` control steps
        (a pure function of its inputs and the nearest-point indices)."""
        n, p, k = self.n, 1 + self.speed_preview_steps.size, self.preview_offsets.size
        lateral, heading_error, s = np.empty(n), np.empty(n), np.empty(n)
        target, points = np.empty((n, p)), np.empty((n, k, 2))
        complete = np.empty(n, dtype=np.bool_)
        _measure(self.path_x, self.path_y, self.path_heading, self.profile, self.index, self.end_index,
                 self.preview_offsets, self.speed_preview_steps, float(self.options["path_spacing_m"]),
                 int(self.max_steps), np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64),
                 np.asarray(yaw, dtype=np.float64), np.asarray(steps, dtype=np.int64),
                 lateral, heading_error, s, target, points, complete)
        return TaskFrame(
            lateral_error_m=lateral, heading_error_rad=heading_error, s_m=s, target_speed=target,
            path_points=points, off_course=np.abs(lateral) > self.options["max_lateral_error_m"],
            path_complete=complete,
        )

    def locate_measure(self, kin: np.ndarray, steps: np.ndarray, rows: np.ndarray) -> TaskFrame:
        """``locate`` the vehicles in ``rows`` and ``measure`` all of them in one jitted call, from the (7, N)
        body kinematics (``acres_gym.envs.core.KINEMATICS`` rows): what a control step does."""
        n, p, k = self.n, 1 + self.speed_preview_steps.size, self.preview_offsets.size
        errors, flags = np.empty((3, n)), np.empty((2, n), dtype=np.bool_)
        target, points = np.empty((n, p)), np.empty((n, k, 2))
        _locate_measure(self.path_x, self.path_y, self.path_heading, self.profile, self.index, self.end_index,
                        self.preview_offsets, self.speed_preview_steps, float(self.options["path_spacing_m"]),
                        int(self.max_steps), min(SEARCH_WINDOW, self.n_path),
                        float(self.options["max_lateral_error_m"]), rows, kin, steps, errors, target, points, flags)
        return TaskFrame(lateral_error_m=errors[0], heading_error_rad=errors[1], s_m=errors[2], target_speed=target,
                         path_points=points, off_course=flags[0], path_complete=flags[1])

    def path_world(self, i: int) -> np.ndarray:
        """Vehicle ``i``'s path up to its end as an (M, 2) array of world points (for rendering)."""
        end = int(self.end_index[i]) + 1
        return np.stack([self.path_x[i, :end], self.path_y[i, :end]], axis=-1)

    # --- the contract's hooks ------------------------------------------------------------------------
    def check_grid(self, grid_points: int, config: Mapping[str, Any], dt_s: float) -> None:
        """The episode's path may hold no more points than the terrain grid (it is drawn at every reset and
        only its part inside the terrain is used): a ``max_episode_s`` or ``path_length_m`` that asks for
        more names its bound for this terrain and speed."""
        n_path = self.n_path
        if n_path <= grid_points:
            return
        o = self.options
        spacing = o["path_spacing_m"]
        longest_m = (grid_points - 1) * spacing
        grid = (f"more than the {grid_points} points of the terrain grid (randomization.terrain.size_m / cell_m); "
                f"a larger terrain or a coarser path_spacing_m allows more")
        if config["task_options"].get("path_length_m") is not None:
            raise ValueError(f"task_options.path_length_m = {o['path_length_m']!r}: {n_path} path points at "
                             f"path_spacing_m = {spacing:g} m, {grid}; allowed: at most {longest_m:g} m")
        steps = math.floor(horizon_for_path_m(o, longest_m) / dt_s * (1.0 - 1e-12))  # whole control steps
        allowed = (f"allowed for this terrain and speed: max_episode_s <= {steps * dt_s:.10g}" if steps > 0
                   else "no episode length fits this terrain")
        raise ValueError(f"max_episode_s = {config['max_episode_s']!r}: the episode's path (for speed_max_mps "
                         f"= {o['speed_max_mps']:g}) is {o['path_length_m']:.6g} m, {n_path} points at "
                         f"path_spacing_m = {spacing:g} m, {grid}; {allowed}")

    def snapshot(self, rows: np.ndarray) -> np.ndarray:
        """The nearest-point indices of the vehicles in ``rows``."""
        return self.index[rows].copy()

    def restore(self, rows: np.ndarray, saved: np.ndarray) -> None:
        self.index[rows] = saved

    def view(self, i: int, frame: TaskFrame) -> TaskView:
        """The path, the point just ahead of the nearest one, and the target speed and lateral error."""
        ahead = min(int(self.index[i]) + 1, self.n_path - 1)
        return TaskView(path_xy=self.path_world(i), target_xy=(self.path_x[i, ahead], self.path_y[i, ahead]),
                        hud=[f"target {frame.target_speed[i, 0]:5.2f} m/s",
                             f"lat {frame.lateral_error_m[i]:+5.2f} m"])


@register_task
class SpeedTrackingTask(PathSpeedTask):
    """Follow a randomised speed profile (with stops) along a straight path."""

    name = "speed_tracking"
    option_defaults = {
        **PathSpeedTask.option_defaults,
        "spawn_xy_m": [-130.0, 0.0],
        "speed_min_mps": 1.0,
        "speed_max_mps": 10.0,
        "stop_probability": 0.15,
        "max_lateral_error_m": 8.0,
    }


@register_task
class PathFollowingTask(PathSpeedTask):
    """Follow a randomised winding path at a steadier target speed."""

    name = "path_following"
    scoring = replace(PathSpeedTask.scoring, metric="lateral_rmse_m")
    option_defaults = {
        **PathSpeedTask.option_defaults,
        "spawn_yaw_rad": [-math.pi, math.pi],
        "curvature_max_per_m": [0.02, 0.06],
        "speed_min_mps": 3.0,
        "speed_max_mps": 7.0,
        "speed_segment_s": [8.0, 15.0],
        "max_lateral_error_m": 4.0,
    }
