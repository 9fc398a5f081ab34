"""Brake pressure (seed ``StepDbw``: "brake pressure with a delay, a rate- and acceleration-limited
build-up and a pressure-dependent release"; ``UtvBrakeOutputBar``).

The pressure command (the report's pressure_cmd) comes from, in this order:

1. user brake commands under DBW control: pressure mode, bar, or percent mode, % of
   ``brake_max_bar``, within 0..brake_max_bar, moved toward within the message's rate limits
   (``rate_inc`` / ``rate_dec`` in the command's unit per s; 0 = none beyond the actuator's own, inf or
   negative = none, other values raised to at least 20 bar/s or 50 %/s);
2. the ULC while it is engaged or within its actuator timeout: its delayed brake request;
3. otherwise the driver's foot: ``driver_brake_bar`` (NaN = released) is the line pressure directly,
   without the actuator's delay or dynamics.

For 1 and 2 the command passes ``brake_delay_s`` and then the actuator:

- apply (delayed command above the pressure): the pressure moves time-optimally toward it with the
  rate limit ``brake_slew_bar_s`` and the acceleration limit ``brake_apply_accel_bar_s2`` (starting
  from its present rate if rising, within the rate limit, from rest otherwise);
- release (delayed command at or below the pressure): a first-order lag toward the command,
  p' = cmd + (p - cmd) exp(-dt / tau(p)), with tau(p) = ``brake_release_tau_s`` at and above 10 bar
  and tau(p) = brake_release_tau_s (10 bar / p)^``brake_release_exponent`` below: the fast drop and
  the slow tail of the recorded release.

The wheels brake with ``brake_output_bar`` = pressure + ``brake_bias_bar`` within 0..brake_max_bar.
"""

from __future__ import annotations

import math

from numba import njit

from acres_gym.constants import PEDAL_BRAKE_PRESSURE, PEDAL_NONE, PEDAL_PERCENT
from acres_gym.dbw.command import MSG_BRAKE
from acres_gym.dbw.delay import delay_line
from acres_gym.dbw.enables import command_rate, message_current
from acres_gym.dbw.steering import time_optimal_step
from acres_gym.dbw.throttle import CMD_SRC_ULC, CMD_SRC_USER, rate_limited, ulc_drives_actuators

BRAKE_RATE_MIN_BAR_S = 20.0  # firmware: a non-zero pressure rate is raised to at least this
BRAKE_RATE_MIN_PCT_S = 50.0  # ... and a non-zero percent rate to at least this
RELEASE_REFERENCE_BAR = 10.0  # pressure at which the release lag is brake_release_tau_s
RELEASE_FLOOR_BAR = 1e-3  # the release lag is evaluated at no less than this pressure


@njit(cache=True)
def release_tau_s(p, pressure_bar):
    """Release time constant at a pressure, s: tau (10 bar / max(pressure, 1e-3 bar))^n below 10 bar,
    tau at and above."""
    if pressure_bar >= RELEASE_REFERENCE_BAR:
        return p.brake_release_tau_s
    return p.brake_release_tau_s * (RELEASE_REFERENCE_BAR / max(pressure_bar, RELEASE_FLOOR_BAR)) ** \
        p.brake_release_exponent


@njit(cache=True)
def brake_output_bar(p, s):
    """Line pressure the brake actuator applies, bar (seed ``UtvBrakeOutputBar``): the modelled
    pressure plus ``brake_bias_bar``, within 0 and ``brake_max_bar``."""
    return min(max(s.brake_pressure_bar + p.brake_bias_bar, 0.0), p.brake_max_bar)


@njit(cache=True)
def brake_request_bar(p, mode, value):
    """Pressure a brake command asks for, bar, within 0..brake_max_bar (0 for NONE)."""
    if mode == PEDAL_BRAKE_PRESSURE:
        bar = value
    elif mode == PEDAL_PERCENT:
        bar = value * 0.01 * p.brake_max_bar
    else:
        return 0.0
    return min(max(bar, 0.0), p.brake_max_bar)


@njit(cache=True)
def brake_actuator(dt, p, s, command_bar):
    """One tick of the line pressure toward the (delayed) command: apply or release."""
    pressure = s.brake_pressure_bar
    if command_bar > pressure:
        rate0 = min(max(s.brake_rate_bar_s, 0.0), p.brake_slew_bar_s)
        new, rate = time_optimal_step(pressure, rate0, command_bar, p.brake_slew_bar_s,
                                      p.brake_apply_accel_bar_s2, dt)
    else:
        new = command_bar + (pressure - command_bar) * math.exp(-dt / release_tau_s(p, pressure))
        rate = (new - pressure) / dt
    s.brake_pressure_bar = new
    s.brake_rate_bar_s = rate


@njit(cache=True)
def step_brake(dt, p, cmd, s):
    """Advance the brake by one tick (see the module docstring) and set ``brake_output_bar``."""
    m = s.msg[MSG_BRAKE]  # the last valid message
    driver = cmd.driver_brake_bar
    driver = 0.0 if math.isnan(driver) else min(max(driver, 0.0), p.brake_max_bar)
    s.brake_input_bar = driver
    if s.brake_enabled:
        target = brake_request_bar(p, m.brake_mode, m.brake_cmd)
        if m.brake_mode == PEDAL_PERCENT:
            per_s = 0.01 * p.brake_max_bar
            up = command_rate(m.brake_rate_inc, math.inf, BRAKE_RATE_MIN_PCT_S, math.inf) * per_s
            down = command_rate(m.brake_rate_dec, math.inf, BRAKE_RATE_MIN_PCT_S, math.inf) * per_s
        else:
            up = command_rate(m.brake_rate_inc, math.inf, BRAKE_RATE_MIN_BAR_S, math.inf)
            down = command_rate(m.brake_rate_dec, math.inf, BRAKE_RATE_MIN_BAR_S, math.inf)
        s.brake_cmd_bar = rate_limited(s.brake_cmd_bar, target, up, down, dt)
        s.brake_report_type = m.brake_mode
        s.brake_cmd_src = CMD_SRC_USER
        brake_actuator(dt, p, s, delay_line(s.brake_ring, s.ring_head, s.brake_cmd_bar, p.brake_delay_s, dt))
    elif ulc_drives_actuators(s):
        s.brake_cmd_bar = min(max(s.ulc_brake_out_bar, 0.0), p.brake_max_bar)
        s.brake_report_type = PEDAL_BRAKE_PRESSURE
        s.brake_cmd_src = CMD_SRC_ULC
        brake_actuator(dt, p, s, delay_line(s.brake_ring, s.ring_head, s.brake_cmd_bar, p.brake_delay_s, dt))
    else:
        s.brake_cmd_bar = driver
        current = message_current(s.brake_age_s, p.command_timeout_s)
        s.brake_report_type = m.brake_mode if current else PEDAL_NONE
        s.brake_cmd_src = CMD_SRC_USER
        delay_line(s.brake_ring, s.ring_head, driver, p.brake_delay_s, dt)
        s.brake_rate_bar_s = (driver - s.brake_pressure_bar) / dt if dt > 0.0 else 0.0
        s.brake_pressure_bar = driver
    s.brake_output_bar = brake_output_bar(p, s)
