"""``DbwCommand``: one control step's drive-by-wire commands and driver inputs (seed ``FDbwCommand``).

Each field is declared once in ``COMMAND_SPEC`` with its unit, rest value and ds_dbw message and field; the
dtype, the neutral command (``make_commands``), the message table (``MESSAGE_FIELDS``) and the arrival flags
derive from it. Values are in ds_dbw_msgs units (deg, %, bar, m/s, m/s^2). A command record is held for the
ticks of a control step; the ``*_fresh`` flags (``mark_sent``) and ``gear_cmd`` mean "a message arrived": the
DBW layer latches the messages once, at the start of the step, and the gear acts on its first tick
(``clear_sent`` clears them after the step). Rate and limit fields: 0 = the default,
``inf`` = unlimited (ds_dbw_msgs convention).

NaN is never a valid value. ``check_commands`` rejects a batch holding one (or an unknown mode) with an
error naming the field and the vehicles; the jitted DBW step, which cannot raise, treats a message with
a NaN value or an unknown mode as invalid and ignores it (see ``acres_gym.dbw.enables``), and NaN driver
inputs as released pedals and a wheel left where it is.
"""

from __future__ import annotations

import numpy as np

from acres_gym.constants import (
    DRIVE_ALL_WHEEL,
    DRIVE_TURF,
    GEAR_LOW,
    GEAR_NONE,
    PEDAL_BRAKE_PRESSURE,
    PEDAL_NONE,
    PEDAL_PERCENT,
    PEDAL_RAW,
    STEER_ANGLE,
    STEER_CURVATURE,
    STEER_NONE,
    STEER_PERCENT,
    STEER_YAW_RATE,
    ULC_ACCEL,
    ULC_NONE,
    ULC_VELOCITY,
)
from acres_gym.records import Field, make_template, spec_dtype, structured_view

f8, i8, b1 = np.float64, np.int64, np.bool_


def _message(message: str, rows) -> tuple[Field, ...]:
    """Command fields of one ds_dbw message from rows (field, dtype, unit, message field or None, doc); the
    message field None marks the subsystem's "a message arrived" flag."""
    return tuple(Field(name, dtype, (), unit, 0, "command", doc, message, msg_field)
                 for name, dtype, unit, msg_field, doc in rows)


# Every command field (``acres_gym.records.Field``) with its ds_dbw message and field; rest values are the
# neutral command of ``make_commands`` (nothing under DBW control; the AWD switch on AWD).
COMMAND_SPEC: tuple[Field, ...] = (
    _message("Enable", [("system_enable", b1, "bool", "data", "dbw_enabled (/vehicle/enable)")])
    + _message("SteeringCmd", [
        ("steer_mode", i8, "enum", "cmd_type", "STEER_*"), ("steer_cmd", f8, "deg|1/m|rad/s|%", "cmd", "by mode"),
        ("steer_rate_deg_s", f8, "deg/s", "cmd_rate", "0 = default, inf = unlimited"),
        ("steer_accel_deg_s2", f8, "deg/s^2", "cmd_accel", "0 = default, inf = unlimited"),
        ("steer_enable", b1, "bool", "enable", ""), ("steer_fresh", b1, "bool", None, "a message arrived")])
    + _message("ThrottleCmd", [
        ("throttle_mode", i8, "enum", "cmd_type", "PEDAL_PERCENT | PEDAL_RAW"),
        ("throttle_cmd", f8, "%", "cmd", ""), ("throttle_rate_inc_pct_s", f8, "%/s", "rate_inc", ""),
        ("throttle_rate_dec_pct_s", f8, "%/s", "rate_dec", ""), ("throttle_enable", b1, "bool", "enable", ""),
        ("throttle_fresh", b1, "bool", None, "a message arrived")])
    + _message("BrakeCmd", [
        ("brake_mode", i8, "enum", "cmd_type", "PEDAL_PERCENT | PEDAL_BRAKE_PRESSURE"),
        ("brake_cmd", f8, "%|bar", "cmd", "by mode"), ("brake_rate_inc", f8, "%/s|bar/s", "rate_inc", "cmd unit per s"),
        ("brake_rate_dec", f8, "%/s|bar/s", "rate_dec", "cmd unit per s"), ("brake_enable", b1, "bool", "enable", ""),
        ("brake_fresh", b1, "bool", None, "a message arrived")])
    + _message("GearCmd", [("gear_cmd", i8, "enum", "cmd", "event based: GEAR_NONE = no message")])
    + _message("UlcCmd", [
        ("ulc_mode", i8, "enum", "cmd_type", "ULC_*"), ("ulc_cmd", f8, "m/s|m/s^2", "cmd", "by mode"),
        ("ulc_limit_accel_mps2", f8, "m/s^2", "limit_accel", ""),
        ("ulc_limit_decel_mps2", f8, "m/s^2", "limit_decel", ""),
        ("ulc_limit_jerk_throttle_mps3", f8, "m/s^3", "limit_jerk_throttle", ""),
        ("ulc_limit_jerk_brake_mps3", f8, "m/s^3", "limit_jerk_brake", ""),
        ("ulc_enable", b1, "bool", "enable", ""), ("ulc_coast_decel", b1, "bool", "coast_decel", ""),
        ("ulc_fresh", b1, "bool", None, "a message arrived")])
    + (Field("driver_steers", b1, (), "bool", 0, "driver", "the driver holds the wheel"),
       Field("driver_steering_deg", f8, (), "deg", 0, "driver", "the driver's wheel angle"),
       Field("driver_throttle_pct", f8, (), "%", 0, "driver", "the driver's pedal"),
       Field("driver_brake_bar", f8, (), "bar", 0, "driver", "the driver's line pressure"),
       Field("driver_gear", i8, (), "enum", GEAR_NONE, "driver", "gear lever, GEAR_NONE = leave as is"),
       Field("drive_mode", i8, (), "enum", DRIVE_ALL_WHEEL, "driver", "the AWD switch, DRIVE_*"),
       Field("carrier_drive_nm", f8, (), "N m", 0, "test", "external torque at the rear carrier (a dynamometer)"))
)
COMMAND_DTYPE = spec_dtype(COMMAND_SPEC)
# One dtype object for every command array (numba looks array types up by their dtype object).
COMMAND_RECORD_DTYPE = np.dtype((np.record, COMMAND_DTYPE))
COMMAND_TEMPLATE = make_template(COMMAND_SPEC, COMMAND_RECORD_DTYPE)

# The subsystems whose last valid message the DBW layer latches (slot k of the state's ``msg``), and their
# "a message arrived" flags; a gear command is an event (``gear_cmd`` other than GEAR_NONE).
MESSAGE_SUBSYSTEMS = ("steer", "throttle", "brake", "ulc")
MSG_STEER, MSG_THROTTLE, MSG_BRAKE, MSG_ULC = range(len(MESSAGE_SUBSYSTEMS))
ARRIVAL_FIELDS: tuple[str, ...] = tuple(f.name for f in COMMAND_SPEC if f.message and f.msg_field is None)
EVENT_FIELDS: tuple[str, ...] = ("gear_cmd",)
MESSAGE_FIELDS: dict[str, dict[str, str]] = {}
"""ds_dbw message -> {command field: message field} (arrival flags left out)."""
for _f in COMMAND_SPEC:
    if _f.message and _f.msg_field:
        MESSAGE_FIELDS.setdefault(_f.message, {})[_f.name] = _f.msg_field


def make_commands(n: int = 1) -> np.recarray:
    """N neutral commands (``COMMAND_TEMPLATE``): nothing under DBW control, driver pedals released, AWD switch
    on AWD."""
    return np.repeat(COMMAND_TEMPLATE, n).view(np.recarray)


ARRIVAL_OF: dict[str, str] = {f.message: f.name for f in COMMAND_SPEC if f.message and f.msg_field is None}
"""ds_dbw message -> its "a message arrived" flag (GearCmd has none: ``gear_cmd`` is itself the event)."""


# ds_dbw message -> {message field: command field}, for ``send``
_FIELD_OF: dict[str, dict[str, str]] = {message: {msg_field: name for name, msg_field in fields.items()}
                                        for message, fields in MESSAGE_FIELDS.items()}


def send(cmd: np.ndarray, message: str, /, rows=slice(None), **fields) -> None:
    """Writes one ds_dbw command ``message`` into the command record for ``rows``: ``fields`` by their message
    field names (``send(cmd, "UlcCmd", cmd_type=ULC_VELOCITY, cmd=8.0, enable=True)``) and its "a message
    arrived" flag."""
    field_of = _FIELD_OF.get(message)
    if field_of is None:
        raise ValueError(f"send(): unknown message {message!r}; allowed: {sorted(MESSAGE_FIELDS)}")
    if not field_of.keys() >= fields.keys():
        unknown = sorted(set(fields) - set(field_of))
        raise ValueError(f"send(): {message} has no field(s) {unknown}; allowed: {sorted(field_of)}")
    for msg_field, value in fields.items():
        cmd[field_of[msg_field]][rows] = value
    arrival = ARRIVAL_OF.get(message)
    if arrival is not None:
        cmd[arrival][rows] = True


def _check_subsystems(where: str, subsystems) -> None:
    unknown = [name for name in subsystems if name not in MESSAGE_SUBSYSTEMS]
    if unknown:
        raise ValueError(f"{where}: unknown subsystem(s) {unknown}; allowed: {list(MESSAGE_SUBSYSTEMS)}")


def mark_sent(cmd: np.ndarray, subsystems, rows=slice(None)) -> None:
    """Sets the "a message arrived" flag of each of ``subsystems`` (``MESSAGE_SUBSYSTEMS`` names) for ``rows``:
    the DBW layer latches those messages at the start of the next ``RangerSim.step``."""
    _check_subsystems("mark_sent()", subsystems)
    for name in subsystems:
        cmd[f"{name}_fresh"][rows] = True


def clear_sent(cmd: np.ndarray, rows=slice(None), subsystems=MESSAGE_SUBSYSTEMS, events: bool = True) -> None:
    """Clears the "a message arrived" flags of ``subsystems`` (default all, ``ARRIVAL_FIELDS``) and, with
    ``events``, the one-shot events (``EVENT_FIELDS``: the gear command) for ``rows``, after the step that
    consumed them; the message contents stay (a held command). ``clear_sent(cmd, subsystems=())`` clears the
    events alone (a sender that re-sends its messages every step); ``events=False`` with a few subsystems
    withdraws their messages before a step."""
    key = (tuple(subsystems), bool(events))
    names = _CLEARED.get(key)
    if names is None:
        _check_subsystems("clear_sent()", key[0])
        fields = [f"{s}_fresh" for s in key[0]] + (list(EVENT_FIELDS) if events else [])
        names = _CLEARED[key] = [(name, structured_view(COMMAND_TEMPLATE)[name][0]) for name in fields]
    for name, rest in names:
        cmd[name][rows] = rest


_CLEARED: dict[tuple[tuple[str, ...], bool], list] = {}  # clear_sent's (field, rest value) lists, by its arguments


GEAR_CMD_MAX = 15  # ds_dbw Gear.CALIBRATE, the largest Gear value

# Modes the DBW layer accepts, per mode field.
COMMAND_MODES = {
    "steer_mode": {STEER_NONE: "NONE", STEER_ANGLE: "ANGLE", STEER_CURVATURE: "CURVATURE",
                   STEER_YAW_RATE: "YAW_RATE", STEER_PERCENT: "PERCENT"},
    "throttle_mode": {PEDAL_NONE: "NONE", PEDAL_RAW: "PEDAL_RAW", PEDAL_PERCENT: "PERCENT"},
    "brake_mode": {PEDAL_NONE: "NONE", PEDAL_BRAKE_PRESSURE: "PRESSURE", PEDAL_PERCENT: "PERCENT"},
    "ulc_mode": {ULC_NONE: "NONE", ULC_VELOCITY: "VELOCITY", ULC_ACCEL: "ACCEL"},
}


def check_commands(cmd: np.ndarray) -> None:
    """Raise ``ValueError`` if a command batch holds a NaN, an unknown mode, gear or drive mode.

    The message names the field, the offending vehicles and the allowed values. Infinite values are
    allowed (rate and limit fields: unlimited; setpoints are clamped to their ranges).
    """
    cmd = np.atleast_1d(cmd)
    for name in cmd.dtype.names:
        values = cmd[name]
        if values.dtype.kind == "f":
            bad = np.flatnonzero(np.isnan(values))
            if bad.size:
                raise ValueError(f"DbwCommand.{name} is NaN for vehicle(s) {bad.tolist()}; "
                                 "send a number (rates and limits: 0 = default, inf = unlimited)")
    for name, modes in COMMAND_MODES.items():
        bad = np.flatnonzero(~np.isin(cmd[name], list(modes)))
        if bad.size:
            allowed = ", ".join(f"{k} ({v})" for k, v in modes.items())
            raise ValueError(f"DbwCommand.{name} = {cmd[name][bad].tolist()} for vehicle(s) "
                             f"{bad.tolist()}; allowed: {allowed}")
    bad = np.flatnonzero((cmd["gear_cmd"] < GEAR_NONE) | (cmd["gear_cmd"] > GEAR_CMD_MAX))
    if bad.size:
        raise ValueError(f"DbwCommand.gear_cmd = {cmd['gear_cmd'][bad].tolist()} for vehicle(s) "
                         f"{bad.tolist()}; allowed: ds_dbw Gear values {GEAR_NONE}..{GEAR_CMD_MAX} "
                         "(the vehicle rejects all but P, R, N, H, L as UNSUPPORTED)")
    bad = np.flatnonzero((cmd["driver_gear"] < GEAR_NONE) | (cmd["driver_gear"] > GEAR_LOW))
    if bad.size:
        raise ValueError(f"DbwCommand.driver_gear = {cmd['driver_gear'][bad].tolist()} for vehicle(s) "
                         f"{bad.tolist()}; allowed: {GEAR_NONE}..{GEAR_LOW} (NONE, P, R, N, H, L)")
    bad = np.flatnonzero((cmd["drive_mode"] < DRIVE_TURF) | (cmd["drive_mode"] > DRIVE_ALL_WHEEL))
    if bad.size:
        raise ValueError(f"DbwCommand.drive_mode = {cmd['drive_mode'][bad].tolist()} for vehicle(s) "
                         f"{bad.tolist()}; allowed: {DRIVE_TURF}..{DRIVE_ALL_WHEEL} (turf, 2wd, awd)")
