"""A drive-by-wire driver for the batched simulator: commands sent at a control rate, state recorded.

``DbwDrive`` wraps a ``RangerSim`` the way an autonomy stack drives the vehicle: the command values stay
in ``sim.commands``; the subsystems named with ``send(...)`` get a fresh message on the first tick of
every control step (``TICKS_PER_STEP`` ticks, 20 Hz); ``run(seconds, *fields)`` advances whole control
steps tick by tick and returns each named state field after every tick. The DBW tests, the validation
table and classical controllers use it.
"""

from __future__ import annotations

import math

import numpy as np

from acres_gym.constants import DT_S, PEDAL_BRAKE_PRESSURE, PEDAL_PERCENT, ULC_VELOCITY
from acres_gym.dbw.command import MESSAGE_SUBSYSTEMS, clear_sent, mark_sent
from acres_gym.dbw.reports import dbw_reports
from acres_gym.sim import RangerSim

TICKS_PER_STEP = 6  # 20 Hz control
SUBSYSTEMS = MESSAGE_SUBSYSTEMS


class DbwDrive:
    """A ``RangerSim`` (vehicle 0 of N) driven tick by tick with messages at the control rate.

    ``send(...)`` names the subsystems whose message goes out at every control step from now on (the
    command values stay in ``c``); ``run(seconds, *fields)`` advances whole control steps and returns
    each state field after every tick, plus ``t`` (time since the start of this run, s, at the end of
    each tick).
    """

    def __init__(self, n: int = 1, params=None, terrain=None, yaw_rad: float = 0.0):
        self.sim = RangerSim(n, params=params, terrain=terrain)
        self.sim.reset(yaw_rad=yaw_rad)
        self.c = self.sim.commands
        self.c.system_enable = True
        self.sending: set[str] = set()
        self.ticks = 0

    @property
    def s(self):
        return self.sim.state

    @property
    def p(self):
        return self.sim.params[0]

    def send(self, *subsystems: str) -> None:
        unknown = set(subsystems) - set(SUBSYSTEMS)
        if unknown:
            raise ValueError(f"send(): unknown subsystem(s) {sorted(unknown)}; allowed: {SUBSYSTEMS}")
        self.sending = set(subsystems)

    def run(self, seconds: float, *fields: str, vehicle: int = 0) -> dict[str, np.ndarray]:
        n = int(round(seconds / DT_S / TICKS_PER_STEP)) * TICKS_PER_STEP
        out = {f: np.empty(n) for f in fields}
        out["t"] = (np.arange(n) + 1) * DT_S
        for k in range(n):
            if self.ticks % TICKS_PER_STEP == 0:
                mark_sent(self.c, self.sending)
            self.sim.step(1)
            clear_sent(self.c)  # the messages and a gear command count once
            self.ticks += 1
            for f in fields:
                out[f][k] = self.s[f][vehicle]
        return out

    def reports(self, vehicle: int = 0) -> dict:
        return {m: {k: v[vehicle] for k, v in fields.items()}
                for m, fields in dbw_reports(self.sim.params, self.sim.state).items()}

    # command setters (the values stay in the command record until changed)
    def steer(self, mode, value, rate=0.0, accel=0.0, enable=True):
        c = self.c
        c.steer_mode, c.steer_cmd, c.steer_rate_deg_s, c.steer_accel_deg_s2 = mode, value, rate, accel
        c.steer_enable = enable

    def throttle(self, value, enable=True):
        self.c.throttle_mode, self.c.throttle_cmd, self.c.throttle_enable = PEDAL_PERCENT, value, enable

    def brake_bar(self, value, enable=True):
        self.c.brake_mode, self.c.brake_cmd, self.c.brake_enable = PEDAL_BRAKE_PRESSURE, value, enable

    def ulc(self, speed_mps, accel=0.0, decel=0.0, enable=True):
        c = self.c
        c.ulc_mode, c.ulc_cmd = ULC_VELOCITY, speed_mps
        c.ulc_limit_accel_mps2, c.ulc_limit_decel_mps2 = accel, decel
        c.ulc_limit_jerk_throttle_mps3 = c.ulc_limit_jerk_brake_mps3 = 0.0
        c.ulc_enable = enable


def first_index(mask: np.ndarray) -> int:
    idx = np.flatnonzero(mask)
    return int(idx[0]) if idx.size else -1


def kinematic_deg(p, curvature_per_m: float) -> float:
    """The seed's kinematic map: ratio x atan(curvature x wheelbase), deg (the vehicle's own ratio and
    wheelbase when the dbw kinematic values are 0)."""
    ratio = p.kinematic_ratio if p.kinematic_ratio > 0 else p.steering_ratio
    base = p.kinematic_wheelbase_m if p.kinematic_wheelbase_m > 0 else p.wheelbase_m
    return math.degrees(ratio * math.atan(curvature_per_m * base))
