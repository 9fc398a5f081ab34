"""``DbwCommand``: one control step's drive-by-wire commands and driver inputs (seed ``FDbwCommand``).

Values are in ds_dbw_msgs units (deg, %, bar, m/s, m/s^2). A command record is held for the ticks of a
control step; the ``*_fresh`` flags and ``gear_cmd`` mean "a message arrived" and act on the first tick
of the step only (``RangerSim.step`` takes care of it). Rate and limit fields: 0 = the default,
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

COMMAND_FIELDS = [
    ("system_enable", np.bool_),  # dbw_enabled (/vehicle/enable)
    # steering (SteeringCmd)
    ("steer_mode", np.int64),  # STEER_* enum
    ("steer_cmd", np.float64),  # deg | 1/m | rad/s | %
    ("steer_rate_deg_s", np.float64),  # 0 = default, inf = unlimited
    ("steer_accel_deg_s2", np.float64),
    ("steer_enable", np.bool_),
    ("steer_fresh", np.bool_),
    # throttle (ThrottleCmd)
    ("throttle_mode", np.int64),  # PEDAL_PERCENT | PEDAL_RAW
    ("throttle_cmd", np.float64),  # %
    ("throttle_rate_inc_pct_s", np.float64),
    ("throttle_rate_dec_pct_s", np.float64),
    ("throttle_enable", np.bool_),
    ("throttle_fresh", np.bool_),
    # brake (BrakeCmd)
    ("brake_mode", np.int64),  # PEDAL_PERCENT | PEDAL_BRAKE_PRESSURE
    ("brake_cmd", np.float64),  # % | bar
    ("brake_rate_inc", np.float64),  # cmd unit per s
    ("brake_rate_dec", np.float64),
    ("brake_enable", np.bool_),
    ("brake_fresh", np.bool_),
    # gear (GearCmd, event based: GEAR_NONE = no message)
    ("gear_cmd", np.int64),
    # ULC (UlcCmd)
    ("ulc_mode", np.int64),  # ULC_* enum
    ("ulc_cmd", np.float64),  # m/s | m/s^2
    ("ulc_limit_accel_mps2", np.float64),
    ("ulc_limit_decel_mps2", np.float64),
    ("ulc_limit_jerk_throttle_mps3", np.float64),
    ("ulc_limit_jerk_brake_mps3", np.float64),
    ("ulc_enable", np.bool_),
    ("ulc_coast_decel", np.bool_),
    ("ulc_fresh", np.bool_),
    # driver inputs (act when a subsystem is not under DBW control)
    ("driver_steers", np.bool_),
    ("driver_steering_deg", np.float64),
    ("driver_throttle_pct", np.float64),
    ("driver_brake_bar", np.float64),
    ("driver_gear", np.int64),  # gear lever, GEAR_NONE = leave as is
    # AWD switch
    ("drive_mode", np.int64),  # DRIVE_* enum
    # external torque at the rear carrier (a dynamometer / test input), N m
    ("carrier_drive_nm", np.float64),
]

COMMAND_DTYPE = np.dtype(COMMAND_FIELDS)
# One dtype object for every command array (numba looks array types up by their dtype object).
COMMAND_RECORD_DTYPE = np.dtype((np.record, COMMAND_DTYPE))


def make_commands(n: int = 1) -> np.recarray:
    """N neutral commands: nothing under DBW control, driver pedals released, AWD switch on AWD."""
    cmd = np.zeros(n, COMMAND_RECORD_DTYPE).view(np.recarray)
    cmd.drive_mode = DRIVE_ALL_WHEEL
    return cmd


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
