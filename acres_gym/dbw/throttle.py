"""Throttle pedal emulation (seed ``StepDbw``: "throttle pedal emulation with rate limits").

The pedal command (the report's percent_cmd) comes from, in this order:

1. user throttle commands under DBW control: percent mode 0..100 %; raw mode maps 15..80 % of the
   pedal sensor's analog range linearly onto 0..100 % pedal (``raw_to_pedal_pct``); the command moves
   toward it within the message's rate limits (``rate_inc_pct_s`` rising, ``rate_dec_pct_s``
   falling; 0 = ``throttle_default_rate_pct_s``, itself 0 = unlimited; inf or negative = unlimited;
   other values raised to at least 100 %/s);
2. the ULC while it is engaged or within its actuator timeout: its delayed throttle request, within
   the default rate limits;
3. otherwise the driver's pedal ``driver_throttle_pct`` (NaN = released), unlimited.

The pedal the engine sees is that command after ``throttle_delay_s``, plus ``throttle_bias_pct``
(a hardware shift), within 0..100 % (percent_output).
"""

from __future__ import annotations

import math

from numba import njit

from acres_gym.constants import PEDAL_NONE, PEDAL_PERCENT, PEDAL_RAW
from acres_gym.dbw.command import MSG_THROTTLE
from acres_gym.dbw.delay import delay_line
from acres_gym.dbw.enables import command_rate, message_current

RAW_LOW_PCT = 15.0  # raw pedal-sensor percent at a released pedal
RAW_HIGH_PCT = 80.0  # raw pedal-sensor percent at a floored pedal
THROTTLE_RATE_MIN_PCT_S = 100.0  # firmware: a non-zero rate is raised to at least this
CMD_SRC_USER = 0  # ds_dbw CmdSrc
CMD_SRC_ULC = 1


@njit(cache=True)
def raw_to_pedal_pct(raw_pct):
    """Pedal percent for a raw pedal-sensor percent: 15 % -> 0 %, 80 % -> 100 %, clamped."""
    return min(max((raw_pct - RAW_LOW_PCT) * (100.0 / (RAW_HIGH_PCT - RAW_LOW_PCT)), 0.0), 100.0)


@njit(cache=True)
def throttle_request_pct(mode, value):
    """Pedal percent a throttle command asks for (0 for NONE)."""
    if mode == PEDAL_RAW:
        return raw_to_pedal_pct(value)
    if mode == PEDAL_PERCENT:
        return min(max(value, 0.0), 100.0)
    return 0.0


@njit(cache=True)
def rate_limited(x, target, rate_up, rate_down, dt):
    """``x`` moved toward ``target`` by at most rate_up dt (rising) or rate_down dt (falling)."""
    if target > x:
        return min(target, x + rate_up * dt)
    return max(target, x - rate_down * dt)


@njit(cache=True)
def ulc_drives_actuators(s):
    """The ULC is engaged, or its last output is still held (``ulc_actuator_timeout_s``)."""
    return s.ulc_enabled or s.ulc_hold_s > 0.0


@njit(cache=True)
def step_throttle(dt, p, cmd, s):
    """Advance the pedal emulation by one tick (see the module docstring)."""
    m = s.msg[MSG_THROTTLE]  # the last valid message
    default_rate = p.throttle_default_rate_pct_s if p.throttle_default_rate_pct_s > 0.0 else math.inf
    driver = cmd.driver_throttle_pct
    driver = 0.0 if math.isnan(driver) else min(max(driver, 0.0), 100.0)
    s.throttle_input_pct = driver
    if s.throttle_enabled:
        target = throttle_request_pct(m.throttle_mode, m.throttle_cmd)
        up = command_rate(m.throttle_rate_inc_pct_s, default_rate, THROTTLE_RATE_MIN_PCT_S, math.inf)
        down = command_rate(m.throttle_rate_dec_pct_s, default_rate, THROTTLE_RATE_MIN_PCT_S, math.inf)
        s.throttle_cmd_pct = rate_limited(s.throttle_cmd_pct, target, up, down, dt)
        s.throttle_report_type = m.throttle_mode
        s.throttle_cmd_src = CMD_SRC_USER
    elif ulc_drives_actuators(s):
        s.throttle_cmd_pct = rate_limited(s.throttle_cmd_pct, s.ulc_throttle_out_pct,
                                          default_rate, default_rate, dt)
        s.throttle_report_type = PEDAL_PERCENT
        s.throttle_cmd_src = CMD_SRC_ULC
    else:
        s.throttle_cmd_pct = driver
        current = message_current(s.throttle_age_s, p.command_timeout_s)
        s.throttle_report_type = m.throttle_mode if current else PEDAL_NONE
        s.throttle_cmd_src = CMD_SRC_USER
    delayed = delay_line(s.throttle_ring, s.ring_head, s.throttle_cmd_pct, p.throttle_delay_s, dt)
    s.throttle_pedal_pct = min(max(delayed + p.throttle_bias_pct, 0.0), 100.0)
