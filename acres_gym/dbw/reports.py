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
from numba import njit

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


# Every report field in message order: (message, field, kind: "f" float, "b" bool, "i" integer). The
# kernel ``fill_report_table`` writes them in this order, one row each.
REPORT_FIELDS: tuple[tuple[str, str, str], ...] = (
    ("steering", "steering_wheel_angle", "f"), ("steering", "cmd", "f"), ("steering", "cmd_type", "i"),
    ("steering", "limiting_value", "b"), ("steering", "limiting_rate", "b"), ("steering", "ready", "b"),
    ("steering", "enabled", "b"), ("steering", "override_active", "b"), ("steering", "timeout", "b"),
    ("steering", "fault", "b"), ("steering", "limit_value", "f"), ("steering", "limit_rate", "f"),
    ("steering", "cmd_src", "i"),
    ("throttle", "cmd_type", "i"), ("throttle", "percent_input", "f"), ("throttle", "percent_cmd", "f"),
    ("throttle", "percent_output", "f"), ("throttle", "ready", "b"), ("throttle", "enabled", "b"),
    ("throttle", "override_active", "b"), ("throttle", "timeout", "b"), ("throttle", "fault", "b"),
    ("throttle", "cmd_src", "i"),
    ("brake", "cmd_type", "i"), ("brake", "pressure_input", "f"), ("brake", "pressure_cmd", "f"),
    ("brake", "pressure_output", "f"), ("brake", "percent_input", "f"), ("brake", "percent_cmd", "f"),
    ("brake", "percent_output", "f"), ("brake", "ready", "b"), ("brake", "enabled", "b"),
    ("brake", "override_active", "b"), ("brake", "timeout", "b"), ("brake", "fault", "b"),
    ("brake", "cmd_src", "i"),
    ("gear", "gear", "i"), ("gear", "cmd", "i"), ("gear", "driver", "i"), ("gear", "reject", "i"),
    ("gear", "ready", "b"),
    ("ulc", "cmd_type", "i"), ("ulc", "vel_ref", "f"), ("ulc", "vel_meas", "f"), ("ulc", "accel_ref", "f"),
    ("ulc", "accel_meas", "f"), ("ulc", "coast_decel", "b"), ("ulc", "ready", "b"), ("ulc", "enabled", "b"),
    ("ulc", "override_active", "b"), ("ulc", "preempted", "b"), ("ulc", "timeout", "b"),
    ("vehicle_velocity", "vehicle_velocity_brake", "f"), ("vehicle_velocity", "vehicle_velocity_propulsion", "f"),
    ("vehicle_velocity", "dir_src", "i"),
    *(("wheel_speeds", name, "f") for name in WHEEL_NAMES),
    ("dbw_enabled", "data", "b"),
)
REPORT_ROW: dict[str, int] = {f"{m}.{f}": k for k, (m, f, _) in enumerate(REPORT_FIELDS)}
"""Row of ``"message.field"`` in the report table."""

_RESOLUTION_BY_ROW = np.zeros(len(REPORT_FIELDS))  # per table row; 0 = exact
for (_m, _f), _q in REPORT_RESOLUTION.items():
    _RESOLUTION_BY_ROW[REPORT_ROW[f"{_m}.{_f}"]] = _q
_EXACT = np.zeros(len(REPORT_FIELDS))


@njit(cache=True)
def _current(age_s, timeout_s):
    return age_s < timeout_s - AGE_TOLERANCE_S


@njit(cache=True)
def _b(flag):
    """A boolean report field as a float: 1.0 or 0.0."""
    return 1.0 if flag else 0.0


@njit(cache=True)
def _put(out, start, i, resolution, values):
    """Writes ``values`` (floats) to rows ``start, start + 1, ...`` of column ``i``, each rounded to its
    row's resolution (0 = exact); returns the next row."""
    for k in range(len(values)):
        q = resolution[start + k]
        out[start + k, i] = np.rint(values[k] / q) * q if q > 0.0 else values[k]
    return start + len(values)


@njit(cache=True)
def fill_report_table(params, state, resolution, out):
    """Every report field of N vehicles into ``out`` (len(REPORT_FIELDS), N) float64, one row per field in
    ``REPORT_FIELDS`` order (booleans 0 / 1, integers as floats, NaN for an absent value), rounded to the
    CAN resolution of each row (``resolution`` per row, 0 = exact). ``params`` has length N or 1."""
    nan = np.nan
    for i in range(state.shape[0]):
        s = state[i]
        p = params[i] if params.shape[0] > 1 else params[0]
        timeout_s = p.command_timeout_s
        steer_on = s.steer_enabled
        steer_current = _current(s.steer_age_s, timeout_s) and s.steer_msg_mode != STEER_NONE
        t_filled = s.throttle_report_type != PEDAL_NONE
        is_bar = s.brake_report_type == PEDAL_BRAKE_PRESSURE
        is_pct = s.brake_report_type == PEDAL_PERCENT
        to_pct = 100.0 / p.brake_max_bar
        ulc_on = s.ulc_enabled
        ulc_current = _current(s.ulc_age_s, timeout_s)
        f = float  # every value a float (_b for booleans): homogeneous tuples, one per message, written by _put
        k = _put(out, 0, i, resolution, (  # steering
            f(s.steering_wheel_deg), s.steer_ref_deg if steer_on else nan,
            f(STEER_ANGLE if steer_current else STEER_NONE), _b(s.steer_limiting_value and steer_on),
            _b(s.steer_limiting_rate and steer_on), 1.0, _b(steer_on), 0.0, _b(s.steer_timeout), 0.0,
            f(p.steer_lock_deg), f(p.steer_slew_deg_s), 0.0))
        k = _put(out, k, i, resolution, (  # throttle
            f(s.throttle_report_type), s.throttle_input_pct if t_filled else nan,
            s.throttle_cmd_pct if t_filled else nan, s.throttle_pedal_pct if t_filled else nan, 1.0,
            _b(s.throttle_enabled), 0.0, _b(s.throttle_timeout), 0.0, f(s.throttle_cmd_src)))
        k = _put(out, k, i, resolution, (  # brake
            f(s.brake_report_type), s.brake_input_bar if is_bar else nan, s.brake_cmd_bar if is_bar else nan,
            s.brake_output_bar if is_bar else nan, s.brake_input_bar * to_pct if is_pct else nan,
            s.brake_cmd_bar * to_pct if is_pct else nan, s.brake_output_bar * to_pct if is_pct else nan, 1.0,
            _b(s.brake_enabled), 0.0, _b(s.brake_timeout), 0.0, f(s.brake_cmd_src)))
        k = _put(out, k, i, resolution, (  # gear
            f(s.gear), f(s.gear_cmd_report), f(s.gear_driver), f(s.gear_reject), 1.0))
        k = _put(out, k, i, resolution, (  # ulc
            f(s.ulc_msg_mode if ulc_current else ULC_NONE), s.ulc_vel_ref_mps if ulc_on else nan,
            f(s.ulc_vel_meas_mps), s.ulc_accel_ref_mps2 if ulc_on else nan, f(s.ulc_accel_meas_mps2),
            _b(s.ulc_msg_coast_decel and ulc_current), 1.0, _b(ulc_on), 0.0, _b(s.ulc_preempted), _b(s.ulc_timeout)))
        k = _put(out, k, i, resolution, (  # vehicle_velocity
            f(s.speed_brake_mps), f(s.speed_propulsion_mps), f(DIR_PRNDL)))
        w = s.wheel_omega_rad_s
        k = _put(out, k, i, resolution, (f(w[0]), f(w[1]), f(w[2]), f(w[3])))  # wheel_speeds
        _put(out, k, i, resolution, (_b(s.dbw_enabled),))  # dbw_enabled


def report_table(params: np.ndarray, state: np.ndarray, exact: bool = False) -> np.ndarray:
    """All report fields of N vehicles as one (len(REPORT_FIELDS), N) float64 array (``fill_report_table``);
    row ``REPORT_ROW["ulc.vel_meas"]`` is that field. Rounded to the CAN resolution unless ``exact``."""
    p = np.atleast_1d(params)
    s = np.atleast_1d(state)
    out = np.empty((len(REPORT_FIELDS), s.shape[0]))
    fill_report_table(p, s, _EXACT if exact else _RESOLUTION_BY_ROW, out)
    return out


_DTYPES = {"f": np.float64, "b": np.bool_, "i": np.int64}


def dbw_reports(params: np.ndarray, state: np.ndarray, exact: bool = False) -> dict[str, dict[str, np.ndarray]]:
    """All reports of N vehicles (see the module docstring); ``params`` and ``state`` have length N
    (or ``params`` length 1, shared). Values are rounded to their CAN resolution unless ``exact``."""
    table = report_table(params, state, exact)
    reports: dict[str, dict[str, np.ndarray]] = {}
    for k, (message, name, kind) in enumerate(REPORT_FIELDS):
        row = table[k]
        reports.setdefault(message, {})[name] = row if kind == "f" else row.astype(_DTYPES[kind])
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
