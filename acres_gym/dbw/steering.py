"""Steering actuator (seed ``StepDbw``, steering paragraph).

Under DBW control:

1. Mode conversion (``steering_target_deg``), clamped to the command ranges, then to the lock:
   angle, deg, within +-``steer_command_deg``; percent within +-100 % of ``steer_command_deg``;
   curvature within +-``max_curvature_per_m`` through the firmware's kinematic map
   (``curvature_to_steering_wheel_deg``: ratio x atan(curvature x wheelbase)); yaw rate within
   +-``max_yaw_rate_rad_s`` as the curvature yaw rate / v at the present measured speed
   (vehicle_velocity_brake, at least ``YAW_RATE_MIN_SPEED_MPS`` in magnitude), that curvature clamped
   to its range. ``steer_limiting_value`` says a clamp acted.
2. The time-optimal reference generator (``time_optimal_step``) moves the reference toward the target
   within the command's rate and acceleration limits (0 = ``steer_default_rate_deg_s`` /
   ``steer_default_accel_deg_s2``; inf or negative = unlimited; other values raised to at least
   100 deg/s and 300 deg/s^2 and capped at the message's 1016 deg/s and 25400 deg/s^2). It starts
   from the actual angle, at rest, when control engages.
3. Transport delay ``steer_delay_s`` (ring buffer), then the servo: a first-order lag of
   ``steer_tau_s`` (integrated exactly) whose step is limited by the column motor's slew
   ``steer_slew_deg_s``; the angle stays within +-``steer_lock_deg``.

Without DBW control the wheel follows the driver's ``driver_steering_deg`` (within the lock) when
``driver_steers`` is set, otherwise it stays where it is; the reference then follows the actual angle,
so control engages without a jump.
"""

from __future__ import annotations

import math

from numba import njit

from acres_gym.constants import STEER_ANGLE, STEER_CURVATURE, STEER_PERCENT, STEER_YAW_RATE
from acres_gym.dbw.command import MSG_STEER
from acres_gym.dbw.delay import delay_line
from acres_gym.dbw.enables import command_rate

STEER_RATE_MIN_DEG_S = 100.0  # firmware: a non-zero rate is raised to at least this
STEER_ACCEL_MIN_DEG_S2 = 300.0
STEER_RATE_MAX_DEG_S = 1016.0  # SteeringCmd.cmd_rate range
STEER_ACCEL_MAX_DEG_S2 = 25400.0  # SteeringCmd.cmd_accel range
YAW_RATE_MIN_SPEED_MPS = 0.1  # the yaw-rate map divides by at least this speed
LIMITING_RATE_TOL_DEG = 0.05  # reference this far from the target counts as rate limited


@njit(cache=True)
def clamp(x, lo, hi):
    return min(max(x, lo), hi)


@njit(cache=True)
def kinematic_ratio(p):
    """Steering ratio of the firmware's kinematic map (0 in the parameters = the vehicle's)."""
    return p.kinematic_ratio if p.kinematic_ratio > 0.0 else p.steering_ratio


@njit(cache=True)
def kinematic_wheelbase_m(p):
    """Wheelbase of the firmware's kinematic map (0 in the parameters = the vehicle's), m."""
    return p.kinematic_wheelbase_m if p.kinematic_wheelbase_m > 0.0 else p.wheelbase_m


@njit(cache=True)
def curvature_to_steering_wheel_deg(p, curvature_per_m):
    """Steering wheel angle for a path curvature on the kinematic map, deg (seed
    ``CurvatureToSteeringWheelDeg``): ratio x atan(curvature x wheelbase), positive left."""
    return math.degrees(kinematic_ratio(p) * math.atan(curvature_per_m * kinematic_wheelbase_m(p)))


@njit(cache=True)
def steering_target_deg(p, mode, value, speed_mps):
    """Steering wheel angle a command asks for, clamped to the command range and the lock.

    Returns (angle_deg, limited): ``limited`` is True when a range or the lock clipped the command.
    """
    limited = False
    if mode == STEER_ANGLE:
        angle = clamp(value, -p.steer_command_deg, p.steer_command_deg)
        limited = angle != value
    elif mode == STEER_PERCENT:
        pct = clamp(value, -100.0, 100.0)
        limited = pct != value
        angle = pct * 0.01 * p.steer_command_deg
    elif mode == STEER_CURVATURE or mode == STEER_YAW_RATE:
        if mode == STEER_CURVATURE:
            curvature = value
        else:
            yaw = clamp(value, -p.max_yaw_rate_rad_s, p.max_yaw_rate_rad_s)
            limited = yaw != value
            v = speed_mps
            if abs(v) < YAW_RATE_MIN_SPEED_MPS:
                v = -YAW_RATE_MIN_SPEED_MPS if v < 0.0 else YAW_RATE_MIN_SPEED_MPS
            curvature = yaw / v
        k = clamp(curvature, -p.max_curvature_per_m, p.max_curvature_per_m)
        limited = limited or k != curvature
        angle = curvature_to_steering_wheel_deg(p, k)
    else:
        return 0.0, False
    locked = clamp(angle, -p.steer_lock_deg, p.steer_lock_deg)
    return locked, limited or locked != angle


@njit(cache=True)
def stopping_speed(distance, accel, dt):
    """Largest speed from which a speed cut by accel dt every tick (x += v dt after each cut) stops
    within ``distance``: sqrt((accel dt / 2)^2 + 2 accel distance) - accel dt / 2 (the discrete-time
    sqrt(2 accel distance))."""
    half = 0.5 * accel * dt
    return math.sqrt(half * half + 2.0 * accel * distance) - half


@njit(cache=True)
def time_optimal_step(x, v, target, v_max, a_max, dt):
    """One tick of the time-optimal (bang-bang) approach of ``x`` to ``target``.

    The speed aims at sign(e) min(v_max, stop(|e|), |e| / dt), e = target - x: as fast as the rate
    limit allows while it can still stop at the target decelerating at a_max, and no further than the
    target in this tick. stop(e) = sqrt((a_max dt / 2)^2 + 2 a_max e) - a_max dt / 2 is the
    discrete-time form of sqrt(2 a_max e) (exact for this update: from stop(e) the speed can be wound
    down by a_max dt per tick without passing the target). The speed changes by at most a_max dt per
    tick; x += v dt. A tick that reaches the target at a speed it can shed in one tick lands on it
    (the speed reaches 0 on the next). ``v_max`` and ``a_max`` may be inf (unlimited). Returns (x, v).
    """
    e = target - x
    ae = abs(e)
    dv = a_max * dt
    if ae > 0.0:
        reach = min(v_max, ae / dt)
        if dv < math.inf:
            reach = min(reach, stopping_speed(ae, a_max, dt))
        v_aim = reach if e > 0.0 else -reach
    else:
        v_aim = 0.0
    v_new = min(max(v_aim, v - dv), v + dv)
    x_new = x + v_new * dt
    if (target - x_new) * e <= 0.0 and abs(v_new) <= dv:
        return target, v_new  # landed; the speed reaches 0 next tick
    return x_new, v_new


@njit(cache=True)
def step_steering_actuator(dt, p, cmd, s, engaged_now):
    """Advance the steering actuator by one tick (see the module docstring)."""
    m = s.msg[MSG_STEER]  # the last valid message
    old = s.steering_wheel_deg
    if s.steer_enabled:
        if engaged_now:
            s.steer_ref_deg = old
            s.steer_ref_rate_deg_s = 0.0
        target, limited = steering_target_deg(p, m.steer_mode, m.steer_cmd, s.speed_brake_mps)
        s.steer_target_deg = target
        s.steer_limiting_value = limited
        rate = command_rate(m.steer_rate_deg_s, p.steer_default_rate_deg_s,
                            STEER_RATE_MIN_DEG_S, STEER_RATE_MAX_DEG_S)
        accel = command_rate(m.steer_accel_deg_s2, p.steer_default_accel_deg_s2,
                             STEER_ACCEL_MIN_DEG_S2, STEER_ACCEL_MAX_DEG_S2)
        ref, ref_rate = time_optimal_step(s.steer_ref_deg, s.steer_ref_rate_deg_s, target, rate, accel, dt)
        s.steer_ref_deg = ref
        s.steer_ref_rate_deg_s = ref_rate
        s.steer_limiting_rate = abs(target - ref) > LIMITING_RATE_TOL_DEG
        delayed = delay_line(s.steer_ring, s.ring_head, ref, p.steer_delay_s, dt)
        alpha = 1.0 - math.exp(-dt / p.steer_tau_s) if p.steer_tau_s > 0.0 else 1.0
        max_step = p.steer_slew_deg_s * dt
        step = clamp(alpha * (delayed - old), -max_step, max_step)
        new = clamp(old + step, -p.steer_lock_deg, p.steer_lock_deg)
    else:
        new = old
        if cmd.driver_steers and not math.isnan(cmd.driver_steering_deg):
            new = clamp(cmd.driver_steering_deg, -p.steer_lock_deg, p.steer_lock_deg)
        s.steer_target_deg = new
        s.steer_ref_deg = new
        s.steer_ref_rate_deg_s = 0.0
        s.steer_limiting_value = False
        s.steer_limiting_rate = False
        delay_line(s.steer_ring, s.ring_head, new, p.steer_delay_s, dt)
    s.steering_wheel_rate_deg_s = (new - old) / dt if dt > 0.0 else 0.0
    s.steering_wheel_deg = new
