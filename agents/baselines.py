"""Classical baselines for the acres_gym tasks, as callables ``action = policy(obs)``.

- ``UlcPurePursuit``: the vehicle's own ULC follows the target speed (a ULC velocity command) and a
  pure-pursuit law steers (a curvature command): for the ``curvature+ulc_velocity`` action mode (and
  ``dbw_command``, where it sends the same two messages).
- ``PedalPid``: a PID with speed feed-forward on the throttle and brake pedals (percent), the same
  pure-pursuit law turned into a steering wheel angle: for ``steer_angle+pedals`` (its default in the
  evaluation) and ``pedals``.

With the gear axis (``action_options.gear_axis``) both choose the range at the start of each episode
(``RangeChooser``: L when the ground ahead climbs more than 10 %, else H).

For ``RangerOffroadNavigation``: ``StraightLine`` (no map: the ULC and pure pursuit straight at the goal,
H and AWD) and ``TerrainPlanner`` (a grid search on the true terrain with the trafficability function,
range and drive mode per segment, followed with the ULC and pure pursuit; a reference that sees the
whole map).

The first two read only the observation (target speed and path points in the body frame, reported speeds), work on
one observation (``{name: (shape)}``) or a batch (``{name: (N, shape)}``) and return the matching action.
Build them for an environment (single or vector): ``UlcPurePursuit(env)``, so they know its action mode,
control rate and path preview distances. ``reset(rows=None)`` clears the PID's integrators (all
vehicles, or the boolean mask ``rows``); call it at the start of every episode.

Pure pursuit: with the lookahead distance ``L = clip(lookahead_s x v + lookahead_min_m, lookahead_min_m,
lookahead_max_m)``, the path point at that distance ahead (interpolated between the observed preview
points) at (x, y) in the body frame of the rear axle gives the curvature ``2 y / (x^2 + y^2)``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from acres_gym.constants import DRIVE_ALL_WHEEL, DRIVE_TWO_WHEEL, GEAR_HIGH, GEAR_LOW, GEAR_NONE
from acres_gym.envs.tasks.navigation import MAP_DEFAULTS

BASELINES = ("ulc_pure_pursuit", "pedal_pid", "straight_line", "terrain_planner")
NAVIGATION_BASELINES = ("straight_line", "terrain_planner")


def _unwrap(env: Any) -> Any:
    return getattr(env, "unwrapped", env)


def _batched(obs: dict[str, np.ndarray]) -> tuple[dict[str, np.ndarray], bool]:
    single = np.asarray(obs["target_speed"]).ndim == 1
    if single:
        return {k: np.asarray(v)[None] for k, v in obs.items()}, True
    return {k: np.asarray(v) for k, v in obs.items()}, False


class PurePursuit:
    """The pure-pursuit steering law on the observed path points (see the module docstring)."""

    def __init__(self, preview_m, lookahead_s: float = 0.8, lookahead_min_m: float = 3.0,
                 lookahead_max_m: float = 15.0, curvature_max_per_m: float = 0.2) -> None:
        self.preview_m = np.asarray(preview_m, dtype=float)
        self.lookahead_s = lookahead_s
        self.lookahead_min_m = lookahead_min_m
        self.lookahead_max_m = min(lookahead_max_m, float(self.preview_m.max()))
        self.curvature_max_per_m = curvature_max_per_m

    def curvature(self, points: np.ndarray, speed_mps: np.ndarray) -> np.ndarray:
        """Curvature (1/m) toward the lookahead point of the body-frame path points, (N, 2K) as observed
        ([x1, y1, x2, y2, ...]) or (N, K, 2)."""
        points = np.asarray(points, dtype=float).reshape(points.shape[0], -1, 2)
        look = np.clip(self.lookahead_s * np.abs(speed_mps) + self.lookahead_min_m, self.lookahead_min_m,
                       self.lookahead_max_m)
        k = np.clip(np.searchsorted(self.preview_m, look), 1, len(self.preview_m) - 1)
        d0, d1 = self.preview_m[k - 1], self.preview_m[k]
        w = np.clip((look - d0) / np.maximum(d1 - d0, 1e-9), 0.0, 1.0)[:, None]
        rows = np.arange(points.shape[0])
        p = (1.0 - w) * points[rows, k - 1] + w * points[rows, k]
        d2 = np.maximum(p[:, 0] ** 2 + p[:, 1] ** 2, 1e-6)
        return np.clip(2.0 * p[:, 1] / d2, -self.curvature_max_per_m, self.curvature_max_per_m)


class RangeChooser:
    """The range rule of the baselines when the action mode has the gear axis: at the start of an episode
    (the vehicle stands, so the DBW layer accepts the shift) L if the ground ahead climbs more than
    ``low_range_grade`` (the body pitch), else H; then no further request. It follows the OEM advice of
    reference §1.1 (L for towing, low speed and rough terrain) in the one form a standing start allows."""

    def __init__(self, low_range_grade: float = 0.10) -> None:
        self.pitch_rad = -math.atan(low_range_grade)  # nose up is negative pitch (body y axis to the left)
        self.pending: np.ndarray | None = None

    def reset(self, rows: np.ndarray | None = None) -> None:
        if self.pending is not None:
            self.pending[slice(None) if rows is None else np.asarray(rows, dtype=bool)] = True

    def __call__(self, o: dict[str, np.ndarray]) -> np.ndarray:
        n = o["target_speed"].shape[0]
        if self.pending is None or self.pending.shape[0] != n:
            self.pending = np.ones(n, dtype=bool)
        pitch = o["roll_pitch"][:, 1] if "roll_pitch" in o else np.zeros(n)
        choice = np.where(pitch < self.pitch_rad, GEAR_LOW, GEAR_HIGH)
        gear = np.where(self.pending, choice, GEAR_NONE)
        self.pending[:] = False
        return gear


class UlcPurePursuit:
    """The ULC on the target speed and pure pursuit on the path (``curvature+ulc_velocity``, ``dbw_command``).

    Args:
        env: the environment (single or vector) whose action mode and path preview it uses.
        speed_lead_s: command the target this far ahead, to make up for the ULC's own lag (0.5 s: the
            lowest speed RMSE on flat asphalt among 0, 0.5 and 1 s).
        lookahead_s, lookahead_min_m, lookahead_max_m: pure-pursuit lookahead.
    """

    name = "ulc_pure_pursuit"
    action_modes = ("curvature+ulc_velocity", "dbw_command")

    def __init__(self, env: Any, speed_lead_s: float = 0.5, lookahead_s: float = 0.8,
                 lookahead_min_m: float = 3.0, lookahead_max_m: float = 15.0) -> None:
        u = _unwrap(env)
        self.mode = u.action_mode
        if self.mode.name not in self.action_modes:
            raise ValueError(f"UlcPurePursuit drives the action modes {self.action_modes}; the environment uses "
                             f"{self.mode.name!r} (create it with action_mode='curvature+ulc_velocity')")
        options = u.task.options
        self.speed_preview_s = np.concatenate([[0.0], np.asarray(options["speed_preview_s"], dtype=float)])
        self.speed_lead_s = float(speed_lead_s)
        kmax = float(self.mode.options.get("curvature_max_per_m", u.sim.params.max_curvature_per_m[0]))
        self.pursuit = PurePursuit(options["path_preview_m"], lookahead_s, lookahead_min_m, lookahead_max_m, kmax)
        self.ranges = RangeChooser()

    def reset(self, rows: np.ndarray | None = None) -> None:
        """A new episode for the vehicles in ``rows`` (the ULC keeps its own state; the range is chosen
        again)."""
        self.ranges.reset(rows)

    def target(self, obs: dict[str, np.ndarray]) -> np.ndarray:
        """The commanded speed: the target profile at ``speed_lead_s`` ahead (interpolated)."""
        t = obs["target_speed"]
        return np.array([np.interp(self.speed_lead_s, self.speed_preview_s, row) for row in t])

    def __call__(self, obs: dict[str, np.ndarray]):
        o, single = _batched(obs)
        speed = o["vehicle_velocity"][:, 0]
        kappa = self.pursuit.curvature(o["path_points"], speed)
        v = self.target(o)
        if self.mode.name == "dbw_command":
            from acres_gym.constants import STEER_CURVATURE, ULC_VELOCITY

            n = len(v)
            action = {"steer_mode": np.full(n, STEER_CURVATURE), "steer_cmd": kappa,
                      "ulc_mode": np.full(n, ULC_VELOCITY), "ulc_cmd": v}
            return {k: a[0] for k, a in action.items()} if single else action
        gear = {"range_gear": self.ranges(o)} if self.mode.gear_axis else {}
        action = self.mode.encode(curvature_per_m=kappa, ulc_speed_mps=v, **gear).astype(np.float32)
        return action[0] if single else action


class PedalPid:
    """A PID on the throttle and brake pedals with speed feed-forward; pure pursuit for the steering.

    The pedal demand (percent, positive throttle, negative brake) is
    ``u = ff_offset_pct + ff_pct_per_mps x v_target + kp x e + ki x int(e) + kd x de/dt`` with
    ``e = v_target - vehicle_velocity_brake``; the brake gets ``-brake_gain x u`` below
    ``-brake_deadband_pct``. The integral is clamped to +-``integral_limit`` (m) and frozen while the
    demand saturates. With a zero target and a speed below 0.3 m/s it holds ``hold_brake_pct``. The
    defaults came from a grid search on the speed-tracking profiles on flat asphalt (speed RMSE 0.26 m/s
    over 4 episodes); ``speed_lead_s`` looks ahead in the target to make up for the engine and CVT lag.
    """

    name = "pedal_pid"
    action_modes = ("pedals", "steer_angle+pedals")

    def __init__(self, env: Any, kp: float = 30.0, ki: float = 1.0, kd: float = 0.0, ff_offset_pct: float = 8.0,
                 ff_pct_per_mps: float = 1.0, brake_gain: float = 1.0, brake_deadband_pct: float = 2.0,
                 integral_limit: float = 8.0, hold_brake_pct: float = 30.0, speed_lead_s: float = 0.8,
                 lookahead_s: float = 0.8, lookahead_min_m: float = 3.0, lookahead_max_m: float = 15.0) -> None:
        u = _unwrap(env)
        self.mode = u.action_mode
        if self.mode.name not in self.action_modes:
            raise ValueError(f"PedalPid drives the action modes {self.action_modes}; the environment uses "
                             f"{self.mode.name!r}")
        self.dt_s = 1.0 / u.control_hz
        self.n = getattr(u, "num_envs", 1)
        self.kp, self.ki, self.kd = kp, ki, kd
        self.ff_offset_pct, self.ff_pct_per_mps = ff_offset_pct, ff_pct_per_mps
        self.brake_gain, self.brake_deadband_pct = brake_gain, brake_deadband_pct
        self.integral_limit, self.hold_brake_pct = integral_limit, hold_brake_pct
        options = u.task.options
        self.speed_preview_s = np.concatenate([[0.0], np.asarray(options["speed_preview_s"], dtype=float)])
        self.speed_lead_s = float(speed_lead_s)
        p = u.sim.params
        self.wheelbase_m = float(p.wheelbase_m[0])
        self.steering_ratio = float(p.steering_ratio[0])
        self.pursuit = PurePursuit(options["path_preview_m"], lookahead_s, lookahead_min_m, lookahead_max_m)
        self.integral = np.zeros(self.n)
        self.last_error = np.zeros(self.n)
        self.fresh = np.ones(self.n, dtype=bool)
        self.ranges = RangeChooser()

    def reset(self, rows: np.ndarray | None = None) -> None:
        rows = np.ones(self.n, dtype=bool) if rows is None else np.asarray(rows, dtype=bool)
        self.integral[rows] = 0.0
        self.last_error[rows] = 0.0
        self.fresh[rows] = True
        self.ranges.reset(rows)

    def __call__(self, obs: dict[str, np.ndarray]):
        o, single = _batched(obs)
        n = o["target_speed"].shape[0]
        if n != self.n:
            raise ValueError(f"PedalPid was built for {self.n} vehicle(s), got a batch of {n}")
        target_now = o["target_speed"][:, 0]
        target = np.array([np.interp(self.speed_lead_s, self.speed_preview_s, row) for row in o["target_speed"]])
        speed = o["vehicle_velocity"][:, 0]
        error = target - speed
        derivative = np.where(self.fresh, 0.0, (error - self.last_error) / self.dt_s)
        demand = (self.ff_offset_pct * (target > 0.05) + self.ff_pct_per_mps * target + self.kp * error
                  + self.ki * self.integral + self.kd * derivative)
        saturated = (demand > 100.0) & (error > 0) | (demand < -100.0) & (error < 0)
        self.integral = np.where(saturated, self.integral,
                                 np.clip(self.integral + error * self.dt_s, -self.integral_limit, self.integral_limit))
        self.last_error = error
        self.fresh[:] = False
        throttle = np.clip(demand, 0.0, 100.0)
        brake = np.clip(-self.brake_gain * demand - self.brake_deadband_pct, 0.0, 100.0)
        hold = (target_now <= 0.05) & (np.abs(speed) < 0.3)
        throttle = np.where(hold, 0.0, throttle)
        brake = np.where(hold, np.maximum(brake, self.hold_brake_pct), brake)
        kappa = self.pursuit.curvature(o["path_points"], speed)
        wheel_deg = np.degrees(self.steering_ratio * np.arctan(kappa * self.wheelbase_m))
        gear = {"range_gear": self.ranges(o)} if self.mode.gear_axis else {}
        action = self.mode.encode(steering_wheel_deg=wheel_deg, throttle_pct=throttle, brake_pct=brake, **gear)
        action = action.astype(np.float32)
        return action[0] if single else action


def _goal_curvature(bx: np.ndarray, by: np.ndarray, kmax: float, final: bool | np.ndarray = False) -> np.ndarray:
    """Pure pursuit toward a body-frame point: 2 y / (x^2 + y^2), clipped to +-kmax; a point behind
    (x <= 0) gets the full curvature toward its side (left when straight behind); where ``final`` (the
    point is the goal itself), a point inside the tightest turning circle (radius 1 / kmax) on its side
    gets 0 (straight on until it is reachable, instead of circling it)."""
    k = np.clip(2.0 * by / np.maximum(bx * bx + by * by, 1e-6), -kmax, kmax)
    k = np.where(bx > 0.0, k, np.where(by >= 0.0, kmax, -kmax))
    # a point inside the tightest turning circle on its side cannot be reached turning: go straight first
    radius = 1.0 / kmax
    inside = bx * bx + (np.abs(by) - radius) ** 2 < radius * radius
    return np.where(inside & final, 0.0, k)


def _navigation_axes(mode: Any, range_gear: Any, drive_mode: Any) -> dict[str, Any]:
    """``encode``'s range and AWD-switch values for the axes ``mode`` has; without an axis the environment's
    gear (H) or the vehicle's ``driveline.default_drive_mode`` holds."""
    return {key: value for key, value, has in (("range_gear", range_gear, mode.gear_axis),
                                                ("drive_mode", drive_mode, mode.drive_axis)) if has}


class StraightLine:
    """The off-road navigation baseline without a map: the ULC at a cruise speed and pure pursuit
    straight at the goal, in H and AWD (``RangerOffroadNavigation``'s action mode: curvature, speed,
    range, drive mode): it pursues the point ``lookahead_m`` ahead on the line to the goal, so it turns
    onto the line and then keeps to it. It slows to ``approach_gain`` x distance + 1 m/s near the goal.
    Without the gear axis it drives in the gear the environment engages (H), without the drive axis in the
    vehicle's ``driveline.default_drive_mode`` (AWD on the stock vehicle)."""

    name = "straight_line"

    def __init__(self, env: Any, speed_mps: float = 5.0, approach_gain: float = 0.3, lookahead_m: float = 8.0) -> None:
        self.lookahead_m = float(lookahead_m)
        u = _unwrap(env)
        self.mode = u.action_mode
        if self.mode.name != "curvature+ulc_velocity":
            raise ValueError("StraightLine drives curvature+ulc_velocity (the RangerOffroadNavigation action "
                             f"mode); the environment uses {self.mode.name!r}")
        self.kmax = float(self.mode.options["curvature_max_per_m"])
        self.speed_mps = float(speed_mps)
        self.approach_gain = float(approach_gain)

    def reset(self, rows: np.ndarray | None = None) -> None:
        """Nothing to clear (the range request is repeated; the DBW layer shifts only when stopped)."""

    def __call__(self, obs: dict[str, np.ndarray]):
        single = np.asarray(obs["goal"]).ndim == 1
        goal = np.atleast_2d(np.asarray(obs["goal"], dtype=float))
        dist, bearing = goal[:, 0], goal[:, 1]
        look = np.minimum(dist, self.lookahead_m)  # a point on the line to the goal: turn onto it, then straight
        kappa = _goal_curvature(look * np.cos(bearing), look * np.sin(bearing), self.kmax, dist <= self.lookahead_m)
        v = np.minimum(self.speed_mps, self.approach_gain * dist + 1.0)
        action = self.mode.encode(curvature_per_m=kappa, ulc_speed_mps=v,
                                  **_navigation_axes(self.mode, GEAR_HIGH, DRIVE_ALL_WHEEL)).astype(np.float32)
        return action[0] if single else action


class TerrainPlanner:
    """The off-road navigation reference: a grid search on the TRUE terrain of each episode (it reads the
    environment's terrain, no-go mask and the trafficability table, so it sees what a policy's
    ``local_map`` does not), then the ULC and pure pursuit along the route.

    The route is ``acres_gym.envs.tasks.offroad.route`` over the task's route grid (steps that H / AWD climbs
    at ``speed_h_mps``, steps only L / AWD climbs at ``speed_l_mps``, grades within ``grade_margin`` of the
    climbable ones (the ULC launches with less than full throttle), no-go areas kept ``clearance_m`` away,
    at most ``lateral_accel_mps2`` in the turns;
    the generator's own margins where these leave no route). Per segment it chooses the range and the drive mode:
    L where a step within ``preview_m`` needs
    it (the vehicle stops for the shift, which the DBW layer refuses while moving), back to H once
    ``release_m`` ahead needs no L (and L for ``release_m`` after a stall in H: slower than 0.2 m/s for
    ``stall_s``, as a driver does when the ULC's launch torque in H is not enough; AWD then too); 2WD where the
    trafficability function says 2WD in that range climbs
    the next ``preview_m`` with the route's margin on ground where 2WD climbs at least
    ``two_wheel_min_grade``, else AWD. It slows for the turns within ``turn_preview_m``. It needs the gear
    axis (``action_options.gear_axis``); without the drive axis it drives in the vehicle's
    ``driveline.default_drive_mode`` throughout (AWD on the stock vehicle, which the routes assume).
    """

    name = "terrain_planner"

    def __init__(self, env: Any, speed_h_mps: float = 5.0, speed_l_mps: float = 2.5, lookahead_m: float = 5.0,
                 preview_m: float = 15.0, release_m: float = 30.0,
                 clearance_m: float = MAP_DEFAULTS["route_clearance_m"], stall_s: float = 3.0,
                 grade_margin: float = 0.6, lateral_accel_mps2: float = 1.5,
                 turn_preview_m: float = 12.0, two_wheel_min_grade: float = 0.15) -> None:
        self.env = _unwrap(env)
        self.turn_preview_m = float(turn_preview_m)
        self.two_wheel_min_grade = float(two_wheel_min_grade)
        self.lateral_accel_mps2 = float(lateral_accel_mps2)
        self.grade_margin = float(grade_margin)
        self.stall_s = float(stall_s)
        self.mode = self.env.action_mode
        if self.mode.name != "curvature+ulc_velocity" or not self.mode.gear_axis:
            raise ValueError("TerrainPlanner drives curvature+ulc_velocity with action_options.gear_axis: true (it "
                             f"shifts to L where the route needs it); the environment uses {self.mode.name!r} "
                             f"with gear_axis: {self.mode.gear_axis}")
        self.kmax = float(self.mode.options["curvature_max_per_m"])
        self.speed_h_mps, self.speed_l_mps = float(speed_h_mps), float(speed_l_mps)
        self.lookahead_m, self.preview_m, self.release_m = float(lookahead_m), float(preview_m), float(release_m)
        self.clearance_m = float(clearance_m)
        n = getattr(self.env, "num_envs", 1)
        self.routes: list[Any] = [None] * n
        self.cursor = np.zeros(n, dtype=np.int64)
        self.low = np.zeros(n, dtype=bool)
        self.stale = np.ones(n, dtype=bool)
        self.slow_s = np.zeros(n)
        self.hold_l_until_m = np.full(n, -np.inf)
        self.dt_s = 1.0 / self.env.control_hz

    def reset(self, rows: np.ndarray | None = None) -> None:
        """Plan again for the vehicles in ``rows`` (all by default) at their next action."""
        rows = np.ones(self.stale.shape[0], dtype=bool) if rows is None else np.asarray(rows, dtype=bool)
        self.stale[rows] = True

    def _plan(self, i: int) -> None:
        from acres_gym.envs.tasks.offroad import route, route_grid

        task = self.env.task
        c = task.terrain_config_resolved
        terrain = self.env.sim.terrain.terrain(i)
        grid = route_grid(terrain, task.no_go[i].astype(bool), task.grade_limits, c["route_cell_m"],
                          max(self.clearance_m, c["no_go_clearance_m"]), c["edge_clearance_m"],
                          margin=self.grade_margin)
        f = self.env._batch.frame
        start = (float(f.axle_x_m[i]), float(f.axle_y_m[i]))
        found = route(grid, start, tuple(task.goal[i]), self.grade_margin, c["max_side_grade"],
                      self.speed_h_mps, self.speed_l_mps)
        if found is None:  # the wider margins closed every way: the generator's own
            grid = route_grid(terrain, task.no_go[i].astype(bool), task.grade_limits, c["route_cell_m"],
                              c["no_go_clearance_m"], c["edge_clearance_m"], margin=c["grade_margin"])
            found = route(grid, start, tuple(task.goal[i]), c["grade_margin"], c["max_side_grade"],
                          self.speed_h_mps, self.speed_l_mps)
        if found is not None:
            two_wd = self._two_wheel_ok(terrain, found.points, c["grade_margin"])
            found = (found.points, found.need_l, two_wd, np.concatenate(
                [[0.0], np.cumsum(np.hypot(*np.diff(found.points, axis=0).T))]))
        self.routes[i] = found
        self.cursor[i] = 0
        self.low[i] = False
        self.stale[i] = False
        self.slow_s[i] = 0.0
        self.hold_l_until_m[i] = -np.inf

    def _two_wheel_ok(self, terrain, points: np.ndarray, margin: float) -> np.ndarray:
        """Per route step: 2WD in H climbs it by the trafficability table (both ends' surfaces)."""
        from acres_gym.envs.tasks.trafficability import wetness_bin

        lim = self.env.task.grade_limits
        sid = terrain.surface_at(points[:, 0], points[:, 1])
        wb = wetness_bin(terrain.wetness_at(points[:, 0], points[:, 1]))
        two = lim[sid, wb, 0, 1]
        h = terrain.height_at(points[:, 0], points[:, 1])
        step = np.maximum(np.hypot(*np.diff(points, axis=0).T), 1e-6)
        grade = np.concatenate([[0.0], np.diff(h) / step])
        two = np.minimum(two, np.concatenate([[two[0]], two[:-1]]))
        return (grade <= margin * two) & (two >= self.two_wheel_min_grade)

    def __call__(self, obs: dict[str, np.ndarray]):
        single = np.asarray(obs["goal"]).ndim == 1
        goal = np.atleast_2d(np.asarray(obs["goal"], dtype=float))
        n = goal.shape[0]
        f = self.env._batch.frame
        x, y, yaw = f.axle_x_m, f.axle_y_m, f.yaw_rad
        speed = f.speed_mps  # the true speed: spinning wheels make the wheel-speed reports read high
        gear_now = self.env.sim.state.gear
        kappa, v = np.zeros(n), np.zeros(n)
        gear, drive = np.full(n, GEAR_HIGH), np.full(n, DRIVE_ALL_WHEEL)
        for i in range(n):
            if self.stale[i]:
                self._plan(i)
            r = self.routes[i]
            if r is None:  # no route (never on a drawn episode): straight at the goal
                d, b = goal[i]
                kappa[i] = _goal_curvature(np.array([d * math.cos(b)]), np.array([d * math.sin(b)]), self.kmax, True)[0]
                v[i] = min(self.speed_h_mps, 0.3 * d + 1.0)
                continue
            pts, need_l, two_wd, s = r
            headings = np.arctan2(np.diff(pts[:, 1]), np.diff(pts[:, 0])) if len(pts) > 1 else np.zeros(1)
            # nearest route point at or after the cursor (a window ahead)
            lo = int(self.cursor[i])
            hi = min(len(pts), lo + 40)
            k = lo + int(np.argmin(np.hypot(pts[lo:hi, 0] - x[i], pts[lo:hi, 1] - y[i])))
            self.cursor[i] = k
            look = np.searchsorted(s, s[k] + self.lookahead_m)
            look = min(look, len(pts) - 1)
            dx, dy = pts[look, 0] - x[i], pts[look, 1] - y[i]
            c, sn = math.cos(yaw[i]), math.sin(yaw[i])
            kappa[i] = _goal_curvature(np.array([c * dx + sn * dy]), np.array([-sn * dx + c * dy]), self.kmax,
                                       look == len(pts) - 1)[0]
            ahead = (s >= s[k]) & (s <= s[k] + self.preview_m)
            # a stall in H (slower than 0.2 m/s for stall_s while driving): L for the next release_m
            self.slow_s[i] = self.slow_s[i] + self.dt_s if (abs(speed[i]) < 0.2 and not self.low[i]
                                                            and int(gear_now[i]) == GEAR_HIGH) else 0.0
            if self.slow_s[i] >= self.stall_s:  # L and AWD from here for release_m
                self.hold_l_until_m[i] = s[k] + self.release_m
                self.slow_s[i] = 0.0
            if need_l[ahead].any() or s[k] < self.hold_l_until_m[i]:
                self.low[i] = True
            elif self.low[i] and not need_l[(s >= s[k]) & (s <= s[k] + self.release_m)].any():
                self.low[i] = False
            want = GEAR_LOW if self.low[i] else GEAR_HIGH
            cruise = self.speed_l_mps if self.low[i] else self.speed_h_mps
            d = float(goal[i, 0])
            if int(gear_now[i]) != want:  # stop for the shift (refused while moving)
                v[i] = 0.0
                gear[i] = want if abs(speed[i]) < 0.1 else GEAR_NONE
            else:
                # the turns ahead: the largest heading change within turn_preview_m, as a curvature
                near = (s >= s[k]) & (s <= s[k] + self.turn_preview_m)
                psi = headings[np.clip(np.flatnonzero(near), 0, len(headings) - 1)]
                turn = np.max(np.abs(np.angle(np.exp(1j * (psi - headings[min(k, len(headings) - 1)]))))) \
                    / self.turn_preview_m if psi.size else 0.0
                bend = max(abs(kappa[i]), turn, 1e-6)
                v[i] = min(cruise, 0.3 * d + 1.0, math.sqrt(self.lateral_accel_mps2 / bend))
                gear[i] = want
            drive[i] = DRIVE_TWO_WHEEL if (two_wd[ahead].all() and s[k] >= self.hold_l_until_m[i]) else DRIVE_ALL_WHEEL
        action = self.mode.encode(curvature_per_m=kappa, ulc_speed_mps=v,
                                  **_navigation_axes(self.mode, gear, drive)).astype(np.float32)
        return action[0] if single else action


def make_baseline(name: str, env: Any, **kwargs: Any):
    """The baseline called ``name`` (``ulc_pure_pursuit``, ``pedal_pid``, ``straight_line`` or
    ``terrain_planner``) for ``env``."""
    classes = {"ulc_pure_pursuit": UlcPurePursuit, "pedal_pid": PedalPid, "straight_line": StraightLine,
               "terrain_planner": TerrainPlanner}
    if name not in classes:
        raise ValueError(f"unknown baseline {name!r}; known: {', '.join(classes)}")
    return classes[name](env, **kwargs)


def baseline_action_mode(name: str) -> str:
    """The action mode a baseline drives by default: both steer by pure pursuit, so they follow the
    winding paths as well as the straight line (the pedal PID also runs in ``pedals``, wheel held
    straight)."""
    return {"ulc_pure_pursuit": "curvature+ulc_velocity", "pedal_pid": "steer_angle+pedals"}.get(name)
