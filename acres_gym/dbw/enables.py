"""Messages, timeouts, enables and preemption (seed ``StepDbw``: "timeouts and enables").

A message arrives once per control step: on the step's first tick (``message_tick``) every subsystem
whose ``*_fresh`` flag is set gets its message checked and latched whole into the state's slot for it
(``s.msg[MSG_STEER]`` ...: the command record as it arrived); the subsystem reads its own fields there on
every tick. A message with a NaN value or an unknown ``cmd_type``
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

from acres_gym.constants import PEDAL_NONE, STEER_NONE, ULC_NONE
from acres_gym.dbw.command import COMMAND_MODES, MSG_BRAKE, MSG_STEER, MSG_THROTTLE, MSG_ULC

AGE_TOLERANCE_S = 1e-9  # ages are sums of dt: a message exactly command_timeout_s old has timed out

# The mode numbers a message may carry, from the one table of them (``COMMAND_MODES``); numba reads a global
# tuple as a constant, so the jitted checks below compare against it without a lookup.
STEER_MODES = tuple(sorted(COMMAND_MODES["steer_mode"]))
THROTTLE_MODES = tuple(sorted(COMMAND_MODES["throttle_mode"]))
BRAKE_MODES = tuple(sorted(COMMAND_MODES["brake_mode"]))
ULC_MODES = tuple(sorted(COMMAND_MODES["ulc_mode"]))


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
def mode_known(mode, modes):
    """``mode`` is one of the numbers in ``modes`` (a tuple of ``COMMAND_MODES`` keys)."""
    for known in modes:
        if mode == known:
            return True
    return False


@njit(cache=True)
def steer_message_valid(cmd):
    if not mode_known(cmd.steer_mode, STEER_MODES):
        return False
    return not (math.isnan(cmd.steer_cmd) or math.isnan(cmd.steer_rate_deg_s)
                or math.isnan(cmd.steer_accel_deg_s2))


@njit(cache=True)
def throttle_message_valid(cmd):
    if not mode_known(cmd.throttle_mode, THROTTLE_MODES):
        return False
    return not (math.isnan(cmd.throttle_cmd) or math.isnan(cmd.throttle_rate_inc_pct_s)
                or math.isnan(cmd.throttle_rate_dec_pct_s))


@njit(cache=True)
def brake_message_valid(cmd):
    if not mode_known(cmd.brake_mode, BRAKE_MODES):
        return False
    return not (math.isnan(cmd.brake_cmd) or math.isnan(cmd.brake_rate_inc)
                or math.isnan(cmd.brake_rate_dec))


@njit(cache=True)
def ulc_message_valid(cmd):
    if not mode_known(cmd.ulc_mode, ULC_MODES):
        return False
    return not (math.isnan(cmd.ulc_cmd) or math.isnan(cmd.ulc_limit_accel_mps2)
                or math.isnan(cmd.ulc_limit_decel_mps2) or math.isnan(cmd.ulc_limit_jerk_throttle_mps3)
                or math.isnan(cmd.ulc_limit_jerk_brake_mps3))


@njit(cache=True)
def _latch(fresh, valid, msg, slot, cmd, age_s, timeout, invalid):
    """One subsystem's message: a fresh, valid one is latched whole into ``msg[slot]``; returns the
    subsystem's new (age_s, timeout, invalid): (0, False, False) when latched, ``invalid`` True when a fresh
    message was ignored, unchanged without a message."""
    if not fresh:
        return age_s, timeout, invalid
    if not valid:
        return age_s, timeout, True
    msg[slot] = cmd
    return 0.0, False, False


@njit(cache=True)
def accept_messages(cmd, s):
    """Latch this control step's fresh, valid messages into the state's ``msg`` slots (call on the step's
    first tick only)."""
    s.steer_age_s, s.steer_timeout, s.steer_msg_invalid = _latch(
        cmd.steer_fresh, steer_message_valid(cmd), s.msg, MSG_STEER, cmd, s.steer_age_s, s.steer_timeout,
        s.steer_msg_invalid)
    s.throttle_age_s, s.throttle_timeout, s.throttle_msg_invalid = _latch(
        cmd.throttle_fresh, throttle_message_valid(cmd), s.msg, MSG_THROTTLE, cmd, s.throttle_age_s,
        s.throttle_timeout, s.throttle_msg_invalid)
    s.brake_age_s, s.brake_timeout, s.brake_msg_invalid = _latch(
        cmd.brake_fresh, brake_message_valid(cmd), s.msg, MSG_BRAKE, cmd, s.brake_age_s, s.brake_timeout,
        s.brake_msg_invalid)
    s.ulc_age_s, s.ulc_timeout, s.ulc_msg_invalid = _latch(
        cmd.ulc_fresh, ulc_message_valid(cmd), s.msg, MSG_ULC, cmd, s.ulc_age_s, s.ulc_timeout, s.ulc_msg_invalid)


@njit(cache=True)
def message_current(age_s, timeout_s):
    """The last valid message is younger than the command timeout."""
    return age_s < timeout_s - AGE_TOLERANCE_S


@njit(cache=True)
def _engagement(want, age_s, timeout_s, was_enabled, timeout):
    """(enabled, timeout) of one subsystem this tick: enabled while wanted (the system and the latched message
    enable it with a mode other than NONE) and its last valid message is current; the timeout flag is raised
    when an enabled subsystem that is still wanted drops out because its message is no longer current."""
    current = message_current(age_s, timeout_s)
    return want and current, timeout or (was_enabled and want and not current)


@njit(cache=True)
def update_enables(p, cmd, s):
    """Enabled flags, timeouts and ULC preemption for this tick (see the module docstring)."""
    system = cmd.system_enable
    s.dbw_enabled = system
    timeout_s = p.command_timeout_s
    m = s.msg
    on, s.steer_timeout = _engagement(system and m[MSG_STEER].steer_enable and m[MSG_STEER].steer_mode != STEER_NONE,
                                      s.steer_age_s, timeout_s, s.steer_enabled, s.steer_timeout)
    s.steer_enabled = on
    on, s.throttle_timeout = _engagement(
        system and m[MSG_THROTTLE].throttle_enable and m[MSG_THROTTLE].throttle_mode != PEDAL_NONE,
        s.throttle_age_s, timeout_s, s.throttle_enabled, s.throttle_timeout)
    s.throttle_enabled = on
    on, s.brake_timeout = _engagement(system and m[MSG_BRAKE].brake_enable and m[MSG_BRAKE].brake_mode != PEDAL_NONE,
                                      s.brake_age_s, timeout_s, s.brake_enabled, s.brake_timeout)
    s.brake_enabled = on
    on, s.ulc_timeout = _engagement(system and m[MSG_ULC].ulc_enable and m[MSG_ULC].ulc_mode != ULC_NONE,
                                    s.ulc_age_s, timeout_s, s.ulc_enabled, s.ulc_timeout)
    s.ulc_preempted = on and (s.throttle_enabled or s.brake_enabled)
    s.ulc_enabled = on and not s.ulc_preempted


@njit(cache=True)
def age_messages(dt, s):
    """Advance the message ages by one tick (at the end of the step)."""
    s.steer_age_s += dt
    s.throttle_age_s += dt
    s.brake_age_s += dt
    s.ulc_age_s += dt
