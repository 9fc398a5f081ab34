"""Universal Longitudinal Controller (seed ``StepDbw``, ULC paragraph; ``FDbwParameters`` ULC rows).

Command limits as the firmware decodes them (``ulc_limit``): 0 = the default parameter
(``ulc_default_*``); inf or negative = the maximum; others clamped to accel 0.3..3 m/s^2, decel
0.3..6 m/s^2, jerks 1..25 m/s^3. Commands are clamped to the decoder ranges: velocity -7..45 m/s,
acceleration -6..3 m/s^2.

The controller works in the direction of travel of the engaged gear (d = -1 in reverse, else +1):
speeds, references and accelerations below are d times the signed values the reports show. It cannot
reverse the travel direction, so a velocity target is at least 0.

Velocity mode. The speed reference x moves toward the target at the acceleration / deceleration limit
and eases in as if its acceleration were wound down at the jerk limit: rate
sign(e) min(a_max, sqrt(2 j |e|)) (e = target - x; a_max = accel limit rising, decel limit falling;
j = the jerk that winds the acceleration back to 0: brake jerk while rising, throttle jerk while
falling). The acceleration reference a_ref tracks that rate, rising at most at the throttle jerk and
falling at most at the brake jerk; x integrates a_ref and never passes the target (``ulc_reference_step``).

Acceleration mode. a_ref tracks the command (within -decel..accel limit) at the jerk limits; x
integrates it from the measured speed at engagement, at least 0 and within ``ACCEL_MODE_LEASH_MPS``
of the measured speed (the speed loop then tracks the acceleration without winding up).

Control law (both modes), on the measured speed v (vel_meas, speed bias included):
e = x - v; demand D = a_ref + ``ulc_kp_per_s`` e. The pedal switches with hysteresis: throttle when
D > ``ulc_throttle_on_mps2``, brake when D < ``ulc_brake_on_mps2``, else the pedal in use stays.

- throttle: offset + accel a_ref + speed fade e + integral I (``ulc_throttle_law_pct``), %, within
  0..100, fade = clamp(|v| / ``ulc_launch_speed_mps``, 0, 1); I = integral of e dt while on the
  throttle, clamped to +-``ulc_integral_limit_m``;
- brake: the pressure that decelerates ``ulc_mass_kg`` at -D with the vehicle's brake gain
  2 (front_brake_nm_per_bar + rear_brake_nm_per_bar) / tyre_radius_m, N/bar (``ulc_brake_bar``);
  none with ``coast_decel`` (slowing down by coasting);
- stop hold: with the target at 0 (velocity mode) or a command <= 0 (acceleration mode) and
  |v| < ``ulc_stop_speed_mps``, the brake holds ``ulc_stop_brake_pct`` % of brake_max_bar (also with
  coast_decel: holding still is not slowing down), the throttle is 0 and the integral is reset, so a
  launch ramps the pedal up through the integral.

When control engages, x starts at the measured speed (at least 0), a_ref, I and the pedal at 0. The
requests reach the throttle and brake after ``ulc_delay_s``; after the ULC disengages (disabled,
timeout, preemption) they keep its last output for ``ulc_actuator_timeout_s``.
"""

from __future__ import annotations

import math

from numba import njit

from acres_gym.constants import GEAR_REVERSE, ULC_VELOCITY
from acres_gym.dbw.command import MSG_ULC
from acres_gym.dbw.delay import delay_line
from acres_gym.dbw.steering import stopping_speed

ULC_VEL_MIN_MPS = -7.0  # decoder range of the velocity command
ULC_VEL_MAX_MPS = 45.0
ULC_ACCEL_CMD_MIN_MPS2 = -6.0  # decoder range of the acceleration command
ULC_ACCEL_CMD_MAX_MPS2 = 3.0
ULC_ACCEL_LIMIT_MPS2 = (0.3, 3.0)  # clamps of the command's limit fields
ULC_DECEL_LIMIT_MPS2 = (0.3, 6.0)
ULC_JERK_LIMIT_MPS3 = (1.0, 25.0)
ACCEL_MODE_LEASH_MPS = 1.0  # acceleration mode: the speed reference stays this close to vel_meas

ULC_PEDAL_NONE = 0
ULC_PEDAL_THROTTLE = 1
ULC_PEDAL_BRAKE = 2


@njit(cache=True)
def ulc_limit(value, default, lo, hi):
    """Effective ULC limit: 0 -> ``default``; inf or negative -> ``hi``; else clamp(value, lo, hi)."""
    if value == 0.0:
        return default
    if value < 0.0 or math.isinf(value):
        return hi
    return min(max(value, lo), hi)


@njit(cache=True)
def ulc_limits(p, s):
    """(accel, decel, jerk_throttle, jerk_brake) of the latched command, m/s^2 and m/s^3."""
    accel = ulc_limit(s.msg[MSG_ULC].ulc_limit_accel_mps2, p.ulc_default_accel_mps2,
                      ULC_ACCEL_LIMIT_MPS2[0], ULC_ACCEL_LIMIT_MPS2[1])
    decel = ulc_limit(s.msg[MSG_ULC].ulc_limit_decel_mps2, p.ulc_default_decel_mps2,
                      ULC_DECEL_LIMIT_MPS2[0], ULC_DECEL_LIMIT_MPS2[1])
    jerk_throttle = ulc_limit(s.msg[MSG_ULC].ulc_limit_jerk_throttle_mps3, p.ulc_default_jerk_throttle_mps3,
                              ULC_JERK_LIMIT_MPS3[0], ULC_JERK_LIMIT_MPS3[1])
    jerk_brake = ulc_limit(s.msg[MSG_ULC].ulc_limit_jerk_brake_mps3, p.ulc_default_jerk_brake_mps3,
                           ULC_JERK_LIMIT_MPS3[0], ULC_JERK_LIMIT_MPS3[1])
    return accel, decel, jerk_throttle, jerk_brake


@njit(cache=True)
def ulc_reference_step(x, a, target, accel_max, decel_max, jerk_rise, jerk_fall, dt):
    """One tick of the velocity-mode reference: returns (x, a_ref) (see the module docstring).

    Rate aimed at: sign(e) min(a_max, sqrt(2 j |e|), |e| / dt), the square root in its discrete-time
    form (``stopping_speed``: winding a_ref down by j dt per tick from it stops at the target); a_ref
    moves toward the rate by at most jerk_rise dt up or jerk_fall dt down; x += a_ref dt. A tick that
    reaches the target with an acceleration the jerk limit can wind down in one tick lands on it (and
    a_ref reaches 0 on the next).
    """
    e = target - x
    if e > 0.0:
        rate = min(accel_max, stopping_speed(e, jerk_fall, dt), e / dt)
    elif e < 0.0:
        rate = -min(decel_max, stopping_speed(-e, jerk_rise, dt), -e / dt)
    else:
        rate = 0.0
    if rate > a:
        a_new = min(rate, a + jerk_rise * dt)
    else:
        a_new = max(rate, a - jerk_fall * dt)
    x_new = x + a_new * dt
    wind = jerk_fall if a_new > 0.0 else jerk_rise
    if (target - x_new) * e <= 0.0 and abs(a_new) <= wind * dt:
        return target, a_new  # landed; a_ref reaches 0 next tick
    return x_new, a_new


@njit(cache=True)
def ulc_throttle_law_pct(p, accel_ref, error, speed_meas, integral):
    """ULC throttle, % (before the 0..100 clamp): offset + accel a_ref + speed fade e + integral I,
    fade = clamp(|v_meas| / launch_speed, 0, 1)."""
    fade = min(max(abs(speed_meas) / p.ulc_launch_speed_mps, 0.0), 1.0)
    return (p.ulc_throttle_offset_pct + p.ulc_throttle_accel_pct * accel_ref
            + p.ulc_throttle_speed_pct * fade * error + p.ulc_throttle_integral_pct * integral)


@njit(cache=True)
def ulc_brake_bar(p, demand_mps2):
    """Pressure that decelerates ulc_mass_kg at -demand with the vehicle's brake gain, bar, within
    0..brake_max_bar: m max(-D, 0) r / (2 (front + rear N m/bar))."""
    if demand_mps2 >= 0.0:
        return 0.0
    newton_per_bar = 2.0 * (p.front_brake_nm_per_bar + p.rear_brake_nm_per_bar) / p.tyre_radius_m
    if not newton_per_bar > 0.0:
        return p.brake_max_bar
    return min(-demand_mps2 * p.ulc_mass_kg / newton_per_bar, p.brake_max_bar)


@njit(cache=True)
def step_ulc(dt, p, s, engaged_now):
    """Advance the ULC by one tick and update its (delayed) throttle and brake outputs."""
    d = -1.0 if s.gear == GEAR_REVERSE else 1.0
    v = d * s.ulc_vel_meas_mps
    if s.ulc_enabled:
        if engaged_now:
            s.ulc_vel_ref_mps = d * max(v, 0.0)
            s.ulc_accel_ref_mps2 = 0.0
            s.ulc_integral_m = 0.0
            s.ulc_pedal = ULC_PEDAL_NONE
        accel, decel, jerk_throttle, jerk_brake = ulc_limits(p, s)
        x = d * s.ulc_vel_ref_mps
        a = d * s.ulc_accel_ref_mps2
        if s.msg[MSG_ULC].ulc_mode == ULC_VELOCITY:
            target = max(d * min(max(s.msg[MSG_ULC].ulc_cmd, ULC_VEL_MIN_MPS), ULC_VEL_MAX_MPS), 0.0)
            x, a = ulc_reference_step(x, a, target, accel, decel, jerk_throttle, jerk_brake, dt)
            stop_request = target <= 0.0
        else:
            command = d * min(max(s.msg[MSG_ULC].ulc_cmd, ULC_ACCEL_CMD_MIN_MPS2), ULC_ACCEL_CMD_MAX_MPS2)
            a_target = min(max(command, -decel), accel)
            if a_target > a:
                a = min(a_target, a + jerk_throttle * dt)
            else:
                a = max(a_target, a - jerk_brake * dt)
            x = min(max(x + a * dt, v - ACCEL_MODE_LEASH_MPS, 0.0), v + ACCEL_MODE_LEASH_MPS,
                    ULC_VEL_MAX_MPS)
            stop_request = a_target <= 0.0
        e = x - v
        demand = a + p.ulc_kp_per_s * e
        if demand > p.ulc_throttle_on_mps2:
            s.ulc_pedal = ULC_PEDAL_THROTTLE
        elif demand < p.ulc_brake_on_mps2:
            s.ulc_pedal = ULC_PEDAL_BRAKE
        throttle = 0.0
        brake = 0.0
        stop_hold = stop_request and abs(v) < p.ulc_stop_speed_mps
        if stop_hold:
            s.ulc_integral_m = 0.0
            s.ulc_pedal = ULC_PEDAL_BRAKE
            brake = p.ulc_stop_brake_pct * 0.01 * p.brake_max_bar
            if not s.msg[MSG_ULC].ulc_coast_decel:
                brake = max(brake, ulc_brake_bar(p, demand))
        elif s.ulc_pedal == ULC_PEDAL_THROTTLE:
            limit = p.ulc_integral_limit_m
            s.ulc_integral_m = min(max(s.ulc_integral_m + e * dt, -limit), limit)
            throttle = min(max(ulc_throttle_law_pct(p, a, e, v, s.ulc_integral_m), 0.0), 100.0)
        elif s.ulc_pedal == ULC_PEDAL_BRAKE and not s.msg[MSG_ULC].ulc_coast_decel:
            brake = ulc_brake_bar(p, demand)
        s.ulc_vel_ref_mps = d * x
        s.ulc_accel_ref_mps2 = d * a
        s.ulc_demand_mps2 = demand
        s.ulc_stop_hold = stop_hold
        s.ulc_throttle_pct = throttle
        s.ulc_brake_bar = brake
        s.ulc_hold_s = p.ulc_actuator_timeout_s
    else:
        s.ulc_pedal = ULC_PEDAL_NONE
        s.ulc_stop_hold = False
        s.ulc_demand_mps2 = 0.0
        s.ulc_throttle_pct = 0.0
        s.ulc_brake_bar = 0.0
        s.ulc_hold_s = max(s.ulc_hold_s - dt, 0.0)
    throttle_out = delay_line(s.ulc_throttle_ring, s.ring_head, s.ulc_throttle_pct, p.ulc_delay_s, dt)
    brake_out = delay_line(s.ulc_brake_ring, s.ring_head, s.ulc_brake_bar, p.ulc_delay_s, dt)
    if s.ulc_enabled:
        s.ulc_throttle_out_pct = throttle_out
        s.ulc_brake_out_bar = brake_out
