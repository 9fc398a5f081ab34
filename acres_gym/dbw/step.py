"""The drive-by-wire step (seed ``StepDbw``) and its reset.

``step_dbw(dt, p, cmd, s, message_tick)`` advances one vehicle's DBW layer by one tick, first in the
physics step (before the steering, powertrain and wheels). ``p`` is a parameter record
(``acres_gym.schema.PARAMS_DTYPE``), ``cmd`` a command record (``acres_gym.dbw.command.COMMAND_DTYPE``,
held for all ticks of a control step), ``s`` the vehicle state record holding ``DBW_STATE_FIELDS``
and the vehicle's ``wheel_omega_rad_s``; ``message_tick`` is True on the first tick of a control step
only: then the ``*_fresh`` messages are latched and ``gear_cmd`` acts.

Order within a tick: measured speeds (from the wheel spins the vehicle left), messages, enables and
timeouts, gear, steering, ULC, throttle, brake, drive mode; then the message ages and the delay lines'
write index advance.

All functions here are ``numba.njit`` plain functions over records, allocation-free; they also run
without JIT (``NUMBA_DISABLE_JIT=1``), where the records must be ``numpy.record`` (rows of a
``numpy.recarray``) for attribute access.
"""

from __future__ import annotations

import math

from numba import njit

from acres_gym.constants import DRIVE_ALL_WHEEL, DRIVE_TURF, GEAR_NONE, PEDAL_NONE
from acres_gym.dbw.brake import brake_output_bar, step_brake
from acres_gym.dbw.enables import accept_messages, age_messages, update_enables
from acres_gym.dbw.gear import step_gear
from acres_gym.dbw.speed import measure_speeds
from acres_gym.dbw.state import RING_TICKS, fill_ring
from acres_gym.dbw.steering import curvature_to_steering_wheel_deg, step_steering
from acres_gym.dbw.throttle import CMD_SRC_USER, step_throttle
from acres_gym.dbw.ulc import ULC_PEDAL_NONE, step_ulc

__all__ = ["step_dbw", "reset_dbw", "curvature_to_steering_wheel_deg", "brake_output_bar"]


@njit(cache=True)
def step_dbw(dt, p, cmd, s, message_tick):
    """Advance the DBW layer by one tick of ``dt`` s (see the module docstring).

    Writes what the vehicle reads: ``steering_wheel_deg``, ``throttle_pedal_pct``,
    ``brake_output_bar``, ``gear`` (GEAR_NEUTRAL while a shift is in progress) and ``drive_mode``.
    """
    measure_speeds(dt, p, s)
    if message_tick:
        accept_messages(cmd, s)
    steer_was_enabled = s.steer_enabled
    ulc_was_enabled = s.ulc_enabled
    update_enables(p, cmd, s)
    step_gear(dt, p, cmd, s, message_tick)
    step_steering(dt, p, cmd, s, s.steer_enabled and not steer_was_enabled)
    step_ulc(dt, p, s, s.ulc_enabled and not ulc_was_enabled)
    step_throttle(dt, p, cmd, s)
    step_brake(dt, p, cmd, s)
    if DRIVE_TURF <= cmd.drive_mode <= DRIVE_ALL_WHEEL:
        s.drive_mode = cmd.drive_mode
    age_messages(dt, s)
    s.ring_head = (s.ring_head + 1) % RING_TICKS


@njit(cache=True)
def reset_dbw(p, s):
    """Reset the DBW fields: gear ``default_gear``, drive mode ``default_drive_mode``, steering wheel
    at 0 deg, pedals released, no messages (ages inf), nothing enabled, delay lines cleared.

    The vehicle fields (``time_s``, ``wheel_omega_rad_s``) are the vehicle's to reset.
    """
    s.steering_wheel_deg = 0.0
    s.gear = p.default_gear
    s.drive_mode = p.default_drive_mode
    s.dbw_enabled = False
    s.ring_head = 0

    s.steer_msg_mode = 0
    s.steer_msg_cmd = 0.0
    s.steer_msg_rate_deg_s = 0.0
    s.steer_msg_accel_deg_s2 = 0.0
    s.steer_msg_enable = False
    s.steer_msg_invalid = False
    s.throttle_msg_mode = 0
    s.throttle_msg_cmd = 0.0
    s.throttle_msg_rate_inc_pct_s = 0.0
    s.throttle_msg_rate_dec_pct_s = 0.0
    s.throttle_msg_enable = False
    s.throttle_msg_invalid = False
    s.brake_msg_mode = 0
    s.brake_msg_cmd = 0.0
    s.brake_msg_rate_inc = 0.0
    s.brake_msg_rate_dec = 0.0
    s.brake_msg_enable = False
    s.brake_msg_invalid = False
    s.ulc_msg_mode = 0
    s.ulc_msg_cmd = 0.0
    s.ulc_msg_limit_accel_mps2 = 0.0
    s.ulc_msg_limit_decel_mps2 = 0.0
    s.ulc_msg_limit_jerk_throttle_mps3 = 0.0
    s.ulc_msg_limit_jerk_brake_mps3 = 0.0
    s.ulc_msg_enable = False
    s.ulc_msg_coast_decel = False
    s.ulc_msg_invalid = False

    s.steer_enabled = False
    s.throttle_enabled = False
    s.brake_enabled = False
    s.ulc_enabled = False
    s.steer_age_s = math.inf
    s.throttle_age_s = math.inf
    s.brake_age_s = math.inf
    s.ulc_age_s = math.inf
    s.steer_timeout = False
    s.throttle_timeout = False
    s.brake_timeout = False
    s.ulc_timeout = False
    s.ulc_preempted = False

    s.steer_target_deg = 0.0
    s.steer_ref_deg = 0.0
    s.steer_ref_rate_deg_s = 0.0
    s.steering_wheel_rate_deg_s = 0.0
    s.steer_limiting_value = False
    s.steer_limiting_rate = False
    fill_ring(s.steer_ring, 0.0)

    s.throttle_input_pct = 0.0
    s.throttle_cmd_pct = 0.0
    s.throttle_report_type = PEDAL_NONE
    s.throttle_cmd_src = CMD_SRC_USER
    fill_ring(s.throttle_ring, 0.0)

    s.brake_input_bar = 0.0
    s.brake_cmd_bar = 0.0
    s.brake_pressure_bar = 0.0
    s.brake_rate_bar_s = 0.0
    s.brake_report_type = PEDAL_NONE
    s.brake_cmd_src = CMD_SRC_USER
    fill_ring(s.brake_ring, 0.0)

    s.gear_target = p.default_gear
    s.gear_shift_left_s = 0.0
    s.gear_cmd_report = GEAR_NONE
    s.gear_reject = 0
    s.gear_driver = GEAR_NONE

    s.speed_brake_mps = 0.0
    s.speed_propulsion_mps = 0.0
    s.speed_primed = False
    s.ulc_vel_meas_mps = 0.0
    s.ulc_accel_meas_mps2 = 0.0

    s.ulc_vel_ref_mps = 0.0
    s.ulc_accel_ref_mps2 = 0.0
    s.ulc_integral_m = 0.0
    s.ulc_demand_mps2 = 0.0
    s.ulc_pedal = ULC_PEDAL_NONE
    s.ulc_stop_hold = False
    s.ulc_throttle_pct = 0.0
    s.ulc_brake_bar = 0.0
    s.ulc_throttle_out_pct = 0.0
    s.ulc_brake_out_bar = 0.0
    s.ulc_hold_s = 0.0
    fill_ring(s.ulc_throttle_ring, 0.0)
    fill_ring(s.ulc_brake_ring, 0.0)

    # released pedals as the vehicle sees them (hardware biases included)
    s.throttle_pedal_pct = min(max(p.throttle_bias_pct, 0.0), 100.0)
    s.brake_output_bar = brake_output_bar(p, s)
