"""Classical baselines for the acres_gym tasks, as callables ``action = policy(obs)``.

- ``UlcPurePursuit``: the vehicle's own ULC follows the target speed (a ULC velocity command) and a
  pure-pursuit law steers (a curvature command): for the ``curvature+ulc_velocity`` action mode (and
  ``dbw_command``, where it sends the same two messages).
- ``PedalPid``: a PID with speed feed-forward on the throttle and brake pedals (percent), the same
  pure-pursuit law turned into a steering wheel angle: for ``steer_angle+pedals`` (its default in the
  evaluation) and ``pedals``.

With the gear axis (``action_options.gear_axis``) both choose the range at the start of each episode
(``RangeChooser``: L when the ground ahead climbs more than 10 %, else H).

Both read only the observation (target speed and path points in the body frame, reported speeds), work on
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

from acres_gym.constants import GEAR_HIGH, GEAR_LOW, GEAR_NONE

BASELINES = ("ulc_pure_pursuit", "pedal_pid")


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


def make_baseline(name: str, env: Any, **kwargs: Any):
    """The baseline called ``name`` (``ulc_pure_pursuit`` or ``pedal_pid``) for ``env``."""
    classes = {"ulc_pure_pursuit": UlcPurePursuit, "pedal_pid": PedalPid}
    if name not in classes:
        raise ValueError(f"unknown baseline {name!r}; known: {', '.join(classes)}")
    return classes[name](env, **kwargs)


def baseline_action_mode(name: str) -> str:
    """The action mode a baseline drives by default: both steer by pure pursuit, so they follow the
    winding paths as well as the straight line (the pedal PID also runs in ``pedals``, wheel held
    straight)."""
    return {"ulc_pure_pursuit": "curvature+ulc_velocity", "pedal_pid": "steer_angle+pedals"}[name]
