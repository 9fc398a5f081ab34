"""Messages, timeouts, enables and preemption (seed ``StepDbw``: "timeouts and enables").

A message arrives once per control step: on the step's first tick (``message_tick``) every subsystem
whose ``*_fresh`` flag is set gets its message checked and latched into the state (``*_msg_*``); the
other ticks of the step use the latched values. A message with a NaN value or an unknown ``cmd_type``
is invalid: it is ignored as a whole (the previous valid message stays in force until it times out)
and ``*_msg_invalid`` is set until the next valid message. The Python-side check
``acres_gym.dbw.command.check_commands`` rejects such commands with an error before they get here.

A subsystem is under DBW control while the system is enabled, its latched ``enable`` is set, its
latched mode is not NONE and its last valid message is younger than ``command_timeout_s``. When it
drops out for the last reason alone its ``*_timeout`` flag is set; the next valid message clears it,
and an enabled one re-engages the subsystem. The ULC is also disengaged ("preempted") while user
throttle or brake commands are under control.

Rate and limit fields follow ds_dbw_msgs: 0 = the default, infinity or any negative value = unlimited,
other values raised to the firmware's minimum (``command_rate``).
"""

from __future__ import annotations

import math

from numba import njit

from acres_gym.constants import (
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

AGE_TOLERANCE_S = 1e-9  # ages are sums of dt: a message exactly command_timeout_s old has timed out


@njit(cache=True)
def command_rate(rate, default, minimum, maximum):
    """Effective rate or limit of a command field: 0 -> ``default``; inf or negative -> inf (unlimited);
    otherwise clamp(rate, ``minimum``, ``maximum``) (the firmware raises small non-zero values)."""
    if rate == 0.0:
        return default
    if rate < 0.0 or math.isinf(rate):
        return math.inf
    return min(max(rate, minimum), maximum)


@njit(cache=True)
def steer_message_valid(cmd):
    m = cmd.steer_mode
    if not (m == STEER_NONE or m == STEER_ANGLE or m == STEER_CURVATURE or m == STEER_YAW_RATE
            or m == STEER_PERCENT):
        return False
    return not (math.isnan(cmd.steer_cmd) or math.isnan(cmd.steer_rate_deg_s)
                or math.isnan(cmd.steer_accel_deg_s2))


@njit(cache=True)
def throttle_message_valid(cmd):
    m = cmd.throttle_mode
    if not (m == PEDAL_NONE or m == PEDAL_RAW or m == PEDAL_PERCENT):
        return False
    return not (math.isnan(cmd.throttle_cmd) or math.isnan(cmd.throttle_rate_inc_pct_s)
                or math.isnan(cmd.throttle_rate_dec_pct_s))


@njit(cache=True)
def brake_message_valid(cmd):
    m = cmd.brake_mode
    if not (m == PEDAL_NONE or m == PEDAL_BRAKE_PRESSURE or m == PEDAL_PERCENT):
        return False
    return not (math.isnan(cmd.brake_cmd) or math.isnan(cmd.brake_rate_inc)
                or math.isnan(cmd.brake_rate_dec))


@njit(cache=True)
def ulc_message_valid(cmd):
    m = cmd.ulc_mode
    if not (m == ULC_NONE or m == ULC_VELOCITY or m == ULC_ACCEL):
        return False
    return not (math.isnan(cmd.ulc_cmd) or math.isnan(cmd.ulc_limit_accel_mps2)
                or math.isnan(cmd.ulc_limit_decel_mps2) or math.isnan(cmd.ulc_limit_jerk_throttle_mps3)
                or math.isnan(cmd.ulc_limit_jerk_brake_mps3))


@njit(cache=True)
def accept_messages(cmd, s):
    """Latch this control step's fresh, valid messages (call on the step's first tick only)."""
    if cmd.steer_fresh:
        if steer_message_valid(cmd):
            s.steer_msg_mode = cmd.steer_mode
            s.steer_msg_cmd = cmd.steer_cmd
            s.steer_msg_rate_deg_s = cmd.steer_rate_deg_s
            s.steer_msg_accel_deg_s2 = cmd.steer_accel_deg_s2
            s.steer_msg_enable = cmd.steer_enable
            s.steer_msg_invalid = False
            s.steer_age_s = 0.0
            s.steer_timeout = False
        else:
            s.steer_msg_invalid = True
    if cmd.throttle_fresh:
        if throttle_message_valid(cmd):
            s.throttle_msg_mode = cmd.throttle_mode
            s.throttle_msg_cmd = cmd.throttle_cmd
            s.throttle_msg_rate_inc_pct_s = cmd.throttle_rate_inc_pct_s
            s.throttle_msg_rate_dec_pct_s = cmd.throttle_rate_dec_pct_s
            s.throttle_msg_enable = cmd.throttle_enable
            s.throttle_msg_invalid = False
            s.throttle_age_s = 0.0
            s.throttle_timeout = False
        else:
            s.throttle_msg_invalid = True
    if cmd.brake_fresh:
        if brake_message_valid(cmd):
            s.brake_msg_mode = cmd.brake_mode
            s.brake_msg_cmd = cmd.brake_cmd
            s.brake_msg_rate_inc = cmd.brake_rate_inc
            s.brake_msg_rate_dec = cmd.brake_rate_dec
            s.brake_msg_enable = cmd.brake_enable
            s.brake_msg_invalid = False
            s.brake_age_s = 0.0
            s.brake_timeout = False
        else:
            s.brake_msg_invalid = True
    if cmd.ulc_fresh:
        if ulc_message_valid(cmd):
            s.ulc_msg_mode = cmd.ulc_mode
            s.ulc_msg_cmd = cmd.ulc_cmd
            s.ulc_msg_limit_accel_mps2 = cmd.ulc_limit_accel_mps2
            s.ulc_msg_limit_decel_mps2 = cmd.ulc_limit_decel_mps2
            s.ulc_msg_limit_jerk_throttle_mps3 = cmd.ulc_limit_jerk_throttle_mps3
            s.ulc_msg_limit_jerk_brake_mps3 = cmd.ulc_limit_jerk_brake_mps3
            s.ulc_msg_enable = cmd.ulc_enable
            s.ulc_msg_coast_decel = cmd.ulc_coast_decel
            s.ulc_msg_invalid = False
            s.ulc_age_s = 0.0
            s.ulc_timeout = False
        else:
            s.ulc_msg_invalid = True


@njit(cache=True)
def message_current(age_s, timeout_s):
    """The last valid message is younger than the command timeout."""
    return age_s < timeout_s - AGE_TOLERANCE_S


@njit(cache=True)
def update_enables(p, cmd, s):
    """Enabled flags, timeouts and ULC preemption for this tick (see the module docstring)."""
    system = cmd.system_enable
    s.dbw_enabled = system
    timeout_s = p.command_timeout_s

    want = system and s.steer_msg_enable and s.steer_msg_mode != STEER_NONE
    on = want and message_current(s.steer_age_s, timeout_s)
    if s.steer_enabled and want and not on:
        s.steer_timeout = True
    s.steer_enabled = on

    want = system and s.throttle_msg_enable and s.throttle_msg_mode != PEDAL_NONE
    on = want and message_current(s.throttle_age_s, timeout_s)
    if s.throttle_enabled and want and not on:
        s.throttle_timeout = True
    s.throttle_enabled = on

    want = system and s.brake_msg_enable and s.brake_msg_mode != PEDAL_NONE
    on = want and message_current(s.brake_age_s, timeout_s)
    if s.brake_enabled and want and not on:
        s.brake_timeout = True
    s.brake_enabled = on

    want = system and s.ulc_msg_enable and s.ulc_msg_mode != ULC_NONE
    current = message_current(s.ulc_age_s, timeout_s)
    preempted = want and current and (s.throttle_enabled or s.brake_enabled)
    on = want and current and not preempted
    if s.ulc_enabled and want and not current:
        s.ulc_timeout = True
    s.ulc_preempted = preempted
    s.ulc_enabled = on


@njit(cache=True)
def age_messages(dt, s):
    """Advance the message ages by one tick (at the end of the step)."""
    s.steer_age_s += dt
    s.throttle_age_s += dt
    s.brake_age_s += dt
    s.ulc_age_s += dt
