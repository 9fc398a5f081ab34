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
to them (each field's ``resolution`` in ``REPORT_SPEC``): the steering wheel angle and its command to 0.1 deg,
pedal percentages to 0.025 %, brake pressures to 0.05 bar, the ULC's speeds to 0.02 m/s and accelerations to 0.05 m/s^2,
the VehicleVelocity speeds to 0.01 km/h. Wheel speeds (no resolution given) and the steering limits
stay exact. ``dbw_reports(..., exact=True)`` skips the rounding (the model's own values).

Each field is declared once in ``REPORT_SPEC`` (message, field, dtype, unit, resolution); the kernel
writes the fields of a record by name, so the table's rows follow the spec whatever order the kernel
writes in. ``flatten_reports`` turns the nested dict into ``{"steering.steering_wheel_angle": array, ...}``.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from acres_gym.constants import (
    PEDAL_BRAKE_PRESSURE,
    PEDAL_NONE,
    PEDAL_PERCENT,
    STEER_ANGLE,
    STEER_NONE,
    ULC_NONE,
    WHEEL_FL,
    WHEEL_FR,
    WHEEL_NAMES,
    WHEEL_RL,
    WHEEL_RR,
)
from acres_gym.dbw.command import MSG_STEER, MSG_ULC
from acres_gym.dbw.enables import AGE_TOLERANCE_S
from acres_gym.records import Field

DIR_PRNDL = 1  # VehicleVelocity.dir_src: the sign comes from the gear

# CAN resolutions in the field's unit (reference/ds_dbw_msgs.md: SteeringReport angle 0.1 deg; ThrottleReport
# 0.025 %; BrakeReport 0.05 bar and 0.025 %; UlcReport vel 0.02 m/s, accel 0.05 m/s^2; VehicleVelocity 0.01 km/h)
KMH = 1.0 / 3.6
DEG, PCT, BAR, MPS, MPS2 = 0.1, 0.025, 0.05, 0.02, 0.05
f8, i8, b1 = np.float64, np.int64, np.bool_


def _message(message: str, rows) -> tuple[Field, ...]:
    """Report fields of one message from rows (field, dtype, unit, CAN resolution or 0 = exact, doc)."""
    return tuple(Field(f"{message}_{name}", dtype, (), unit, math.nan, "reports", doc, message, name, resolution)
                 for name, dtype, unit, resolution, doc in rows)


# Every report field in message order (``acres_gym.records.Field``; the record field is message_field, the
# rest value NaN: a report has no value before it is filled). ``fill_reports`` writes them by name.
REPORT_SPEC: tuple[Field, ...] = (
    _message("steering", [
        ("steering_wheel_angle", f8, "deg", DEG, "actual steering wheel angle"),
        ("cmd", f8, "deg", DEG, "the reference; NaN when not enabled"),
        ("cmd_type", i8, "enum", 0.0, "ANGLE with a current command, else NONE"),
        ("limiting_value", b1, "bool", 0.0, "command clipped to its range or the lock"),
        ("limiting_rate", b1, "bool", 0.0, "reference moving at its rate limits"),
        ("ready", b1, "bool", 0.0, ""), ("enabled", b1, "bool", 0.0, ""),
        ("override_active", b1, "bool", 0.0, ""), ("timeout", b1, "bool", 0.0, ""), ("fault", b1, "bool", 0.0, ""),
        ("limit_value", f8, "deg", 0.0, "steer_lock_deg"), ("limit_rate", f8, "deg/s", 0.0, "steer_slew_deg_s"),
        ("cmd_src", i8, "enum", 0.0, "CmdSrc")])
    + _message("throttle", [
        ("cmd_type", i8, "enum", 0.0, "PEDAL_*"), ("percent_input", f8, "%", PCT, "the driver's pedal"),
        ("percent_cmd", f8, "%", PCT, "after the rate limits"), ("percent_output", f8, "%", PCT, "the pedal"),
        ("ready", b1, "bool", 0.0, ""), ("enabled", b1, "bool", 0.0, ""), ("override_active", b1, "bool", 0.0, ""),
        ("timeout", b1, "bool", 0.0, ""), ("fault", b1, "bool", 0.0, ""), ("cmd_src", i8, "enum", 0.0, "1: ULC")])
    + _message("brake", [
        ("cmd_type", i8, "enum", 0.0, "PEDAL_*"), ("pressure_input", f8, "bar", BAR, "PRESSURE only"),
        ("pressure_cmd", f8, "bar", BAR, "PRESSURE only"), ("pressure_output", f8, "bar", BAR, "PRESSURE only"),
        ("percent_input", f8, "%", PCT, "PERCENT only"), ("percent_cmd", f8, "%", PCT, "PERCENT only"),
        ("percent_output", f8, "%", PCT, "PERCENT only"), ("ready", b1, "bool", 0.0, ""),
        ("enabled", b1, "bool", 0.0, ""), ("override_active", b1, "bool", 0.0, ""), ("timeout", b1, "bool", 0.0, ""),
        ("fault", b1, "bool", 0.0, ""), ("cmd_src", i8, "enum", 0.0, "1: ULC")])
    + _message("gear", [
        ("gear", i8, "enum", 0.0, "NEUTRAL during a shift"), ("cmd", i8, "enum", 0.0, "last accepted command"),
        ("driver", i8, "enum", 0.0, "the driver's lever"), ("reject", i8, "enum", 0.0, "GearReject"),
        ("ready", b1, "bool", 0.0, "")])
    + _message("ulc", [
        ("cmd_type", i8, "enum", 0.0, "ULC_*"), ("vel_ref", f8, "m/s", MPS, "NaN while not enabled"),
        ("vel_meas", f8, "m/s", MPS, ""), ("accel_ref", f8, "m/s^2", MPS2, "NaN while not enabled"),
        ("accel_meas", f8, "m/s^2", MPS2, ""), ("coast_decel", b1, "bool", 0.0, ""), ("ready", b1, "bool", 0.0, ""),
        ("enabled", b1, "bool", 0.0, ""), ("override_active", b1, "bool", 0.0, ""),
        ("preempted", b1, "bool", 0.0, ""), ("timeout", b1, "bool", 0.0, "")])
    + _message("vehicle_velocity", [
        ("vehicle_velocity_brake", f8, "m/s", 0.01 * KMH, "all four wheels, signed by the gear"),
        ("vehicle_velocity_propulsion", f8, "m/s", 0.01 * KMH, "rear wheels, signed by the gear"),
        ("dir_src", i8, "enum", 0.0, "DIR_PRNDL")])
    + _message("wheel_speeds", [(name, f8, "rad/s", 0.0, "") for name in WHEEL_NAMES])
    + _message("dbw_enabled", [("data", b1, "bool", 0.0, "")])
)
REPORT_RECORD_DTYPE = np.dtype((np.record, [(f.name, np.float64) for f in REPORT_SPEC]))
"""The kernel's output record: every report field as a float (booleans 0 / 1, integers as floats)."""
_KIND = {np.dtype(f8): "f", np.dtype(b1): "b", np.dtype(i8): "i"}
REPORT_FIELDS: tuple[tuple[str, str, str], ...] = tuple(
    (f.message, f.msg_field, _KIND[np.dtype(f.dtype)]) for f in REPORT_SPEC)
"""Every report field in message order: (message, field, kind: "f" float, "b" bool, "i" integer)."""
REPORT_ROW: dict[str, int] = {f"{m}.{f}": k for k, (m, f, _) in enumerate(REPORT_FIELDS)}
"""Row of ``"message.field"`` in the report table."""
REPORT_RESOLUTION: dict[tuple[str, str], float] = {
    (f.message, f.msg_field): f.resolution for f in REPORT_SPEC if f.resolution > 0.0}
"""(message, field) -> CAN resolution in the field's unit, for the fields sent at a resolution."""

CAN_RESOLUTION = np.zeros(1, REPORT_RECORD_DTYPE)
"""The record of every field's CAN resolution ((1,) ``REPORT_RECORD_DTYPE``, 0 = exact), as the kernels take it."""
for _f in REPORT_SPEC:
    CAN_RESOLUTION[_f.name] = _f.resolution
_EXACT = np.zeros(1, REPORT_RECORD_DTYPE)


@njit(cache=True)
def _current(age_s, timeout_s):
    return age_s < timeout_s - AGE_TOLERANCE_S


@njit(cache=True)
def _b(flag):
    """A boolean report field as a float: 1.0 or 0.0."""
    return 1.0 if flag else 0.0


@njit(cache=True)
def _q(value, resolution):
    """``value`` rounded to ``resolution`` (0 = exact)."""
    return np.rint(value / resolution) * resolution if resolution > 0.0 else value


@njit(cache=True)
def _steering(p, s, q, r):
    """SteeringReport of one vehicle into the report record ``r`` (``q``: resolutions by field)."""
    on = s.steer_enabled
    current = _current(s.steer_age_s, p.command_timeout_s) and s.msg[MSG_STEER].steer_mode != STEER_NONE
    r.steering_steering_wheel_angle = _q(s.steering_wheel_deg, q.steering_steering_wheel_angle)
    r.steering_cmd = _q(s.steer_ref_deg if on else np.nan, q.steering_cmd)
    r.steering_cmd_type = STEER_ANGLE if current else STEER_NONE
    r.steering_limiting_value = _b(s.steer_limiting_value and on)
    r.steering_limiting_rate = _b(s.steer_limiting_rate and on)
    r.steering_ready = 1.0
    r.steering_enabled = _b(on)
    r.steering_override_active = 0.0
    r.steering_timeout = _b(s.steer_timeout)
    r.steering_fault = 0.0
    r.steering_limit_value = p.steer_lock_deg
    r.steering_limit_rate = p.steer_slew_deg_s
    r.steering_cmd_src = 0.0


@njit(cache=True)
def _throttle(s, q, r):
    """ThrottleReport of one vehicle (pedal values NaN while cmd_type is NONE)."""
    filled = s.throttle_report_type != PEDAL_NONE
    r.throttle_cmd_type = s.throttle_report_type
    r.throttle_percent_input = _q(s.throttle_input_pct if filled else np.nan, q.throttle_percent_input)
    r.throttle_percent_cmd = _q(s.throttle_cmd_pct if filled else np.nan, q.throttle_percent_cmd)
    r.throttle_percent_output = _q(s.throttle_pedal_pct if filled else np.nan, q.throttle_percent_output)
    r.throttle_ready = 1.0
    r.throttle_enabled = _b(s.throttle_enabled)
    r.throttle_override_active = 0.0
    r.throttle_timeout = _b(s.throttle_timeout)
    r.throttle_fault = 0.0
    r.throttle_cmd_src = s.throttle_cmd_src


@njit(cache=True)
def _brake(p, s, q, r):
    """BrakeReport of one vehicle: pressures for PRESSURE, percent of brake_max_bar for PERCENT, else NaN."""
    bar = s.brake_report_type == PEDAL_BRAKE_PRESSURE
    pct = s.brake_report_type == PEDAL_PERCENT
    to_pct = 100.0 / p.brake_max_bar
    nan = np.nan
    r.brake_cmd_type = s.brake_report_type
    r.brake_pressure_input = _q(s.brake_input_bar if bar else nan, q.brake_pressure_input)
    r.brake_pressure_cmd = _q(s.brake_cmd_bar if bar else nan, q.brake_pressure_cmd)
    r.brake_pressure_output = _q(s.brake_output_bar if bar else nan, q.brake_pressure_output)
    r.brake_percent_input = _q(s.brake_input_bar * to_pct if pct else nan, q.brake_percent_input)
    r.brake_percent_cmd = _q(s.brake_cmd_bar * to_pct if pct else nan, q.brake_percent_cmd)
    r.brake_percent_output = _q(s.brake_output_bar * to_pct if pct else nan, q.brake_percent_output)
    r.brake_ready = 1.0
    r.brake_enabled = _b(s.brake_enabled)
    r.brake_override_active = 0.0
    r.brake_timeout = _b(s.brake_timeout)
    r.brake_fault = 0.0
    r.brake_cmd_src = s.brake_cmd_src


@njit(cache=True)
def _gear_and_speeds(s, q, r):
    """GearReport, VehicleVelocity, WheelSpeeds and dbw_enabled of one vehicle."""
    r.gear_gear = s.gear
    r.gear_cmd = s.gear_cmd_report
    r.gear_driver = s.gear_driver
    r.gear_reject = s.gear_reject
    r.gear_ready = 1.0
    r.vehicle_velocity_vehicle_velocity_brake = _q(s.speed_brake_mps, q.vehicle_velocity_vehicle_velocity_brake)
    r.vehicle_velocity_vehicle_velocity_propulsion = _q(s.speed_propulsion_mps,
                                                        q.vehicle_velocity_vehicle_velocity_propulsion)
    r.vehicle_velocity_dir_src = DIR_PRNDL
    w = s.wheel_omega_rad_s
    r.wheel_speeds_front_left = w[WHEEL_FL]
    r.wheel_speeds_front_right = w[WHEEL_FR]
    r.wheel_speeds_rear_left = w[WHEEL_RL]
    r.wheel_speeds_rear_right = w[WHEEL_RR]
    r.dbw_enabled_data = _b(s.dbw_enabled)


@njit(cache=True)
def _ulc(p, s, q, r):
    """UlcReport of one vehicle (references NaN while not enabled)."""
    on = s.ulc_enabled
    current = _current(s.ulc_age_s, p.command_timeout_s)
    r.ulc_cmd_type = s.msg[MSG_ULC].ulc_mode if current else ULC_NONE
    r.ulc_vel_ref = _q(s.ulc_vel_ref_mps if on else np.nan, q.ulc_vel_ref)
    r.ulc_vel_meas = _q(s.ulc_vel_meas_mps, q.ulc_vel_meas)
    r.ulc_accel_ref = _q(s.ulc_accel_ref_mps2 if on else np.nan, q.ulc_accel_ref)
    r.ulc_accel_meas = _q(s.ulc_accel_meas_mps2, q.ulc_accel_meas)
    r.ulc_coast_decel = _b(s.msg[MSG_ULC].ulc_coast_decel and current)
    r.ulc_ready = 1.0
    r.ulc_enabled = _b(on)
    r.ulc_override_active = 0.0
    r.ulc_preempted = _b(s.ulc_preempted)
    r.ulc_timeout = _b(s.ulc_timeout)


@njit(cache=True)
def vehicle_report(p, s, q, r):
    """Every report field of one vehicle (parameter record ``p``, state record ``s``) into the report record
    ``r``, each written by name and rounded to its CAN resolution (``q``: the record of resolutions, 0 =
    exact). The physics kernels call it for each vehicle they advance (``acres_gym.model.tick.run_ticks``)."""
    _steering(p, s, q, r)
    _throttle(s, q, r)
    _brake(p, s, q, r)
    _gear_and_speeds(s, q, r)
    _ulc(p, s, q, r)


@njit(cache=True)
def fill_reports(params, state, resolution, out):
    """Every report field of N vehicles into ``out`` ((N,) ``REPORT_RECORD_DTYPE``), each written by name and
    rounded to its CAN resolution (``resolution``: one record of resolutions, 0 = exact). ``params`` has
    length N or 1."""
    q = resolution[0]
    for i in range(state.shape[0]):
        vehicle_report(params[i] if params.shape[0] > 1 else params[0], state[i], q, out[i])


def report_table(params: np.ndarray, state: np.ndarray, exact: bool = False) -> np.ndarray:
    """All report fields of N vehicles as one (len(REPORT_FIELDS), N) float64 array (``fill_reports``), rows in
    ``REPORT_SPEC`` order: row ``REPORT_ROW["ulc.vel_meas"]`` is that field. Rounded to the CAN resolution
    unless ``exact``."""
    p = params if params.ndim == 1 else np.atleast_1d(params)
    s = state if state.ndim == 1 else np.atleast_1d(state)
    # the records over a plain float64 buffer (every field is float64): numpy allocates a structured array of
    # this many fields several times slower than the same bytes as floats
    out = np.ndarray(s.shape[0], REPORT_RECORD_DTYPE, np.empty(s.shape[0] * len(REPORT_SPEC)))
    fill_reports(p, s, _EXACT if exact else CAN_RESOLUTION, out)
    return np.ascontiguousarray(out.view(np.float64).reshape(s.shape[0], len(REPORT_SPEC)).T)


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
