"""DBW reports with ds_dbw_msgs field names, vectorised over the vehicle axis (once per control step).

``dbw_reports(params, state)`` takes the parameter and state arrays of N vehicles and returns a dict of
messages, each a dict of length-N numpy arrays (copies: later steps do not change them):

- ``steering`` (SteeringReport): steering_wheel_angle, cmd (the reference, NaN when not enabled),
  cmd_type (ANGLE for angle, curvature, yaw-rate and percent commands, as the CAN report; NONE
  without a current command), limiting_value, limiting_rate, ready, enabled, override_active,
  timeout, fault, limit_value (``steer_lock_deg``), limit_rate (``steer_slew_deg_s``), cmd_src;
- ``throttle`` (ThrottleReport): cmd_type, percent_input (the driver's pedal), percent_cmd,
  percent_output (pedal %, NaN when cmd_type is NONE), ready, enabled, override_active, timeout,
  fault, cmd_src (1 while the ULC drives it, cmd_type PERCENT then);
- ``brake`` (BrakeReport): cmd_type, pressure_input / pressure_cmd / pressure_output (bar, filled for
  PRESSURE only), percent_input / percent_cmd / percent_output (% of brake_max_bar, filled for
  PERCENT only), NaN otherwise; ready, enabled, override_active, timeout, fault, cmd_src (the ULC's
  brake requests appear as PRESSURE);
- ``gear`` (GearReport): gear (NEUTRAL during a shift), cmd (last accepted command), driver, reject,
  ready;
- ``ulc`` (UlcReport): cmd_type, vel_ref, vel_meas, accel_ref, accel_meas (vel_ref and accel_ref NaN
  while not enabled), coast_decel, ready, enabled, override_active, preempted, timeout;
- ``vehicle_velocity`` (VehicleVelocity): vehicle_velocity_brake, vehicle_velocity_propulsion,
  dir_src (DIR_PRNDL);
- ``wheel_speeds`` (WheelSpeeds): front_left, front_right, rear_left, rear_right, rad/s;
- ``dbw_enabled`` (std_msgs/Bool): data.

The line pressure and pedal the vehicle uses are always in the state (``brake_output_bar``,
``throttle_pedal_pct``) for observers that need them without a command.

Values travel over CAN at fixed resolutions (``reference/ds_dbw_msgs.md``), so the reports are rounded
to them (``REPORT_RESOLUTION``): the steering wheel angle and its command to 0.1 deg, pedal percentages
to 0.025 %, brake pressures to 0.05 bar, the ULC's speeds to 0.02 m/s and accelerations to 0.05 m/s^2,
the VehicleVelocity speeds to 0.01 km/h. Wheel speeds (no resolution given) and the steering limits
stay exact. ``dbw_reports(..., exact=True)`` skips the rounding (the model's own values).

``flatten_reports`` turns the nested dict into ``{"steering.steering_wheel_angle": array, ...}``.
"""

from __future__ import annotations

import numpy as np

from acres_gym.constants import (
    PEDAL_BRAKE_PRESSURE,
    PEDAL_NONE,
    PEDAL_PERCENT,
    STEER_ANGLE,
    STEER_NONE,
    ULC_NONE,
    WHEEL_NAMES,
)
from acres_gym.dbw.enables import AGE_TOLERANCE_S

DIR_PRNDL = 1  # VehicleVelocity.dir_src: the sign comes from the gear

# (message, field) -> CAN resolution in the field's unit (reference/ds_dbw_msgs.md: SteeringReport angle
# 0.1 deg; ThrottleReport 0.025 %; BrakeReport 0.05 bar and 0.025 %; UlcReport vel 0.02 m/s, accel
# 0.05 m/s^2; VehicleVelocity 0.01 km/h)
KMH = 1.0 / 3.6
REPORT_RESOLUTION: dict[tuple[str, str], float] = {
    ("steering", "steering_wheel_angle"): 0.1,
    ("steering", "cmd"): 0.1,
    **{("throttle", f): 0.025 for f in ("percent_input", "percent_cmd", "percent_output")},
    **{("brake", f): 0.05 for f in ("pressure_input", "pressure_cmd", "pressure_output")},
    **{("brake", f): 0.025 for f in ("percent_input", "percent_cmd", "percent_output")},
    ("ulc", "vel_ref"): 0.02,
    ("ulc", "vel_meas"): 0.02,
    ("ulc", "accel_ref"): 0.05,
    ("ulc", "accel_meas"): 0.05,
    ("vehicle_velocity", "vehicle_velocity_brake"): 0.01 * KMH,
    ("vehicle_velocity", "vehicle_velocity_propulsion"): 0.01 * KMH,
}


def _current(age_s: np.ndarray, timeout_s: np.ndarray) -> np.ndarray:
    return age_s < timeout_s - AGE_TOLERANCE_S


def _f(x) -> np.ndarray:
    return np.array(x, dtype=np.float64, copy=True)


def _b(x) -> np.ndarray:
    return np.array(x, dtype=bool, copy=True)


def _i(x) -> np.ndarray:
    return np.array(x, dtype=np.int64, copy=True)


_RESOLUTION_COLUMN = np.array(list(REPORT_RESOLUTION.values()))[:, None]


def dbw_reports(params: np.ndarray, state: np.ndarray, exact: bool = False) -> dict[str, dict[str, np.ndarray]]:
    """All reports of N vehicles (see the module docstring); ``params`` and ``state`` have length N
    (or ``params`` length 1, shared). Values are rounded to their CAN resolution unless ``exact``."""
    p = np.atleast_1d(params)
    s = np.atleast_1d(state)
    n = s.shape[0]
    nan = np.nan
    false = np.zeros(n, dtype=bool)
    true = np.ones(n, dtype=bool)
    timeout_s = np.broadcast_to(p["command_timeout_s"], (n,))
    brake_max = np.broadcast_to(p["brake_max_bar"], (n,))

    steer_on = s["steer_enabled"]
    steer_current = _current(s["steer_age_s"], timeout_s) & (s["steer_msg_mode"] != STEER_NONE)
    steering = {
        "steering_wheel_angle": _f(s["steering_wheel_deg"]),
        "cmd": _f(np.where(steer_on, s["steer_ref_deg"], nan)),
        "cmd_type": _i(np.where(steer_current, STEER_ANGLE, STEER_NONE)),
        "limiting_value": _b(s["steer_limiting_value"] & steer_on),
        "limiting_rate": _b(s["steer_limiting_rate"] & steer_on),
        "ready": _b(true),
        "enabled": _b(steer_on),
        "override_active": _b(false),
        "timeout": _b(s["steer_timeout"]),
        "fault": _b(false),
        "limit_value": _f(np.broadcast_to(p["steer_lock_deg"], (n,))),
        "limit_rate": _f(np.broadcast_to(p["steer_slew_deg_s"], (n,))),
        "cmd_src": _i(np.zeros(n)),
    }

    t_type = s["throttle_report_type"]
    t_filled = t_type != PEDAL_NONE
    throttle = {
        "cmd_type": _i(t_type),
        "percent_input": _f(np.where(t_filled, s["throttle_input_pct"], nan)),
        "percent_cmd": _f(np.where(t_filled, s["throttle_cmd_pct"], nan)),
        "percent_output": _f(np.where(t_filled, s["throttle_pedal_pct"], nan)),
        "ready": _b(true),
        "enabled": _b(s["throttle_enabled"]),
        "override_active": _b(false),
        "timeout": _b(s["throttle_timeout"]),
        "fault": _b(false),
        "cmd_src": _i(s["throttle_cmd_src"]),
    }

    b_type = s["brake_report_type"]
    is_bar = b_type == PEDAL_BRAKE_PRESSURE
    is_pct = b_type == PEDAL_PERCENT
    to_pct = 100.0 / brake_max
    brake = {
        "cmd_type": _i(b_type),
        "pressure_input": _f(np.where(is_bar, s["brake_input_bar"], nan)),
        "pressure_cmd": _f(np.where(is_bar, s["brake_cmd_bar"], nan)),
        "pressure_output": _f(np.where(is_bar, s["brake_output_bar"], nan)),
        "percent_input": _f(np.where(is_pct, s["brake_input_bar"] * to_pct, nan)),
        "percent_cmd": _f(np.where(is_pct, s["brake_cmd_bar"] * to_pct, nan)),
        "percent_output": _f(np.where(is_pct, s["brake_output_bar"] * to_pct, nan)),
        "ready": _b(true),
        "enabled": _b(s["brake_enabled"]),
        "override_active": _b(false),
        "timeout": _b(s["brake_timeout"]),
        "fault": _b(false),
        "cmd_src": _i(s["brake_cmd_src"]),
    }

    gear = {
        "gear": _i(s["gear"]),
        "cmd": _i(s["gear_cmd_report"]),
        "driver": _i(s["gear_driver"]),
        "reject": _i(s["gear_reject"]),
        "ready": _b(true),
    }

    ulc_on = s["ulc_enabled"]
    ulc_current = _current(s["ulc_age_s"], timeout_s)
    ulc = {
        "cmd_type": _i(np.where(ulc_current, s["ulc_msg_mode"], ULC_NONE)),
        "vel_ref": _f(np.where(ulc_on, s["ulc_vel_ref_mps"], nan)),
        "vel_meas": _f(s["ulc_vel_meas_mps"]),
        "accel_ref": _f(np.where(ulc_on, s["ulc_accel_ref_mps2"], nan)),
        "accel_meas": _f(s["ulc_accel_meas_mps2"]),
        "coast_decel": _b(s["ulc_msg_coast_decel"] & ulc_current),
        "ready": _b(true),
        "enabled": _b(ulc_on),
        "override_active": _b(false),
        "preempted": _b(s["ulc_preempted"]),
        "timeout": _b(s["ulc_timeout"]),
    }

    vehicle_velocity = {
        "vehicle_velocity_brake": _f(s["speed_brake_mps"]),
        "vehicle_velocity_propulsion": _f(s["speed_propulsion_mps"]),
        "dir_src": _i(np.full(n, DIR_PRNDL)),
    }

    omega = s["wheel_omega_rad_s"]
    wheel_speeds = {name: _f(omega[:, i]) for i, name in enumerate(WHEEL_NAMES)}

    reports = {
        "steering": steering,
        "throttle": throttle,
        "brake": brake,
        "gear": gear,
        "ulc": ulc,
        "vehicle_velocity": vehicle_velocity,
        "wheel_speeds": wheel_speeds,
        "dbw_enabled": {"data": _b(s["dbw_enabled"])},
    }
    if not exact:
        # one block for all rounded fields: three array operations instead of three per field
        block = np.stack([reports[message][name] for message, name in REPORT_RESOLUTION])
        np.divide(block, _RESOLUTION_COLUMN, out=block)
        np.round(block, out=block)
        np.multiply(block, _RESOLUTION_COLUMN, out=block)
        for k, (message, name) in enumerate(REPORT_RESOLUTION):
            reports[message][name] = block[k]
    return reports


def flatten_reports(reports: dict) -> dict[str, np.ndarray]:
    """``{"message.field": array}`` from the nested reports (a plain array keeps its own name)."""
    flat: dict[str, np.ndarray] = {}
    for message, fields in reports.items():
        if isinstance(fields, dict):
            for name, value in fields.items():
                flat[f"{message}.{name}"] = value
        else:
            flat[message] = fields
    return flat
