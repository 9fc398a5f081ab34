"""Validation-table rows of the drive-by-wire layer on the full vehicle (``python -m acres_gym.tools.validate``).

Each row is ``(name, unit, low, high, source, measure, kind)`` (kind: ``acres_gym.tools.validate``'s
"independent" or "consistency"); ``measure()`` runs a fresh ``DbwDrive`` with the
vehicle file's own DBW constants at a 20 Hz control rate. The same manoeuvres are checked in
``tests/test_dbw_vehicle.py``.
"""

from __future__ import annotations

import math

import numpy as np

from acres_gym.constants import DRIVE_TURF, DT_S, STEER_ANGLE, STEER_CURVATURE, STEER_YAW_RATE
from acres_gym.params import load_vehicle
from acres_gym.terrain import slope
from acres_gym.tools.drive import DbwDrive, first_index, kinematic_deg


def steering_step(target_deg: float = 200.0, rate_deg_s: float = 100.0) -> dict:
    """Angle step at a commanded rate: delay to first motion, peak rate, final error."""
    d = DbwDrive()
    d.steer(STEER_ANGLE, 0.0)
    d.send("steer")
    d.run(0.5)
    d.steer(STEER_ANGLE, target_deg, rate=rate_deg_s)
    r = d.run(4.0, "steering_wheel_deg")
    angle = r["steering_wheel_deg"]
    rate = np.diff(np.concatenate([[0.0], angle])) / DT_S
    start = r["t"][first_index(np.abs(angle) > 1e-9)] - DT_S
    return {"delay_s": start, "max_rate_deg_s": float(np.max(np.abs(rate))),
            "final_error_deg": float(abs(angle[-1] - target_deg)), "delay_param_s": float(d.p.steer_delay_s)}


def curvature_angle(curvature_per_m: float = 0.05) -> float:
    """Steering wheel angle a curvature command settles at, minus the seed's kinematic map, deg."""
    d = DbwDrive()
    d.steer(STEER_CURVATURE, curvature_per_m)
    d.send("steer")
    d.run(4.0)
    return float(d.s.steering_wheel_deg[0] - kinematic_deg(d.p, curvature_per_m))


def brake_step(target_bar: float = 40.0) -> dict:
    """Pressure step: peak build-up rate against the slew limit."""
    d = DbwDrive()
    d.brake_bar(0.0)
    d.send("brake")
    d.run(0.5)
    d.brake_bar(target_bar)
    r = d.run(1.0, "brake_output_bar")
    rise = np.diff(np.concatenate([[0.0], r["brake_output_bar"]])) / DT_S
    return {"max_rise_bar_s": float(np.max(rise)), "slew_bar_s": float(d.p.brake_slew_bar_s),
            "final_bar": float(r["brake_output_bar"][-1])}


def ulc_step(target_mps: float = 5.0, accel_mps2: float = 1.0) -> dict:
    """ULC velocity step from rest on flat dry asphalt: overshoot of the measured speed and its largest
    error after 8 s."""
    d = DbwDrive()
    d.ulc(target_mps, accel=accel_mps2)
    d.send("ulc")
    r = d.run(15.0, "ulc_vel_meas_mps")
    meas = r["ulc_vel_meas_mps"]
    late = r["t"] >= 8.0
    return {"overshoot_mps": float(np.max(meas) - target_mps),
            "late_error_mps": float(np.max(np.abs(meas[late] - target_mps)))}


def ulc_stop_hold(percent: float = 10.0) -> float:
    """Climb at 3 m/s with the ULC, command 0, wait 6 s, then the motion over 10 s of stop hold, m."""
    d = DbwDrive(terrain=slope(percent))
    d.ulc(3.0)
    d.send("ulc")
    d.run(10.0)
    d.ulc(0.0)
    d.run(6.0)
    x0 = d.s.position_m[0].copy()
    d.run(10.0)
    return math.hypot(*(d.s.position_m[0] - x0))


def yaw_rate_turn(yaw_rate_rad_s: float = 0.3, speed_mps: float = 5.0) -> float:
    """Steady turn on flat dry asphalt with the open rear differential (Turf): the ULC at ``speed_mps``,
    then a yaw-rate command; the body yaw rate over the last 2 s of 6 s, as % error from the command."""
    params = load_vehicle("polaris_ranger_crew_xp1000", overrides={"driveline.default_drive_mode": DRIVE_TURF})
    d = DbwDrive(params=params)
    d.ulc(speed_mps)
    d.steer(STEER_YAW_RATE, 0.0)
    d.send("ulc", "steer")
    d.run(8.0)
    d.steer(STEER_YAW_RATE, yaw_rate_rad_s)
    d.run(4.0)
    rates = []
    for _ in range(40):  # 2 s of control steps
        d.run(0.05)
        rates.append(float(d.s.angular_velocity_rad_s[0, 2]))
    return 100.0 * (float(np.mean(rates)) - yaw_rate_rad_s) / yaw_rate_rad_s


DBW_CHECKS = [
    ("DBW steering 0->200 deg at 100 deg/s: peak rate", "deg/s", 0.0, 102.0,
     "commanded rate limit (ds_dbw SteeringCmd.cmd_rate)", lambda: steering_step()["max_rate_deg_s"], "consistency"),
    ("DBW steering step: final error", "deg", 0.0, 1.0, "reference generator settles on the command",
     lambda: steering_step()["final_error_deg"], "consistency"),
    ("DBW curvature 0.05 1/m: angle - kinematic map", "deg", -0.5, 0.5,
     "ratio x atan(curvature x wheelbase) (seed CurvatureToSteeringWheelDeg)", curvature_angle,
     "consistency"),
    ("DBW yaw rate 0.3 rad/s at 5 m/s (Turf): error", "%", -5.0, 5.0,
     "yaw rate mapped kinematically with the measured speed (seed DbwSteerYawRate)", yaw_rate_turn,
     "independent"),
    ("DBW brake 0->40 bar: peak build-up rate / slew", "1", 0.9, 1.0 + 1e-9,
     "rate-limited build-up (seed BrakeSlewBarS)",
     lambda: (lambda r: r["max_rise_bar_s"] / r["slew_bar_s"])(brake_step()), "consistency"),
    ("DBW ULC 0->5 m/s at 1 m/s2: overshoot", "m/s", -0.2, 0.3, "ULC speed step (project acceptance band)",
     lambda: ulc_step()["overshoot_mps"], "consistency"),
    ("DBW ULC 0->5 m/s: error after 8 s", "m/s", 0.0, 0.2, "ULC speed step (project acceptance band)",
     lambda: ulc_step()["late_error_mps"], "consistency"),
    ("DBW ULC stop hold on 10 % grade: motion in 10 s", "m", 0.0, 0.03, "ULC stop hold (seed StepDbw)",
     ulc_stop_hold, "consistency"),
]
