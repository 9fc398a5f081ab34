"""The drive-by-wire step (seed ``StepDbw``) and the parameter pass of its reset.

``step_dbw(dt, p, cmd, s, message_tick)`` advances one vehicle's DBW layer by one tick, first in the
physics step (before the steering, powertrain and wheels). ``p`` is a parameter record
(``acres_gym.schema.PARAMS_DTYPE``), ``cmd`` a command record (``acres_gym.dbw.command.COMMAND_DTYPE``,
held for all ticks of a control step), ``s`` the vehicle state record holding ``DBW_STATE_SPEC``
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

from numba import njit

from acres_gym.constants import DRIVE_ALL_WHEEL, DRIVE_TURF
from acres_gym.dbw.brake_pressure import brake_output_bar, step_brake
from acres_gym.dbw.delay import RING_TICKS
from acres_gym.dbw.enables import accept_messages, age_messages, update_enables
from acres_gym.dbw.gear import step_gear
from acres_gym.dbw.speed import measure_speeds
from acres_gym.dbw.steering import curvature_to_steering_wheel_deg, step_steering_actuator
from acres_gym.dbw.throttle import step_throttle
from acres_gym.dbw.ulc import step_ulc

__all__ = ["step_dbw", "reset_dbw_from_params", "curvature_to_steering_wheel_deg", "brake_output_bar"]


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
    step_steering_actuator(dt, p, cmd, s, s.steer_enabled and not steer_was_enabled)
    step_ulc(dt, p, s, s.ulc_enabled and not ulc_was_enabled)
    step_throttle(dt, p, cmd, s)
    step_brake(dt, p, cmd, s)
    if DRIVE_TURF <= cmd.drive_mode <= DRIVE_ALL_WHEEL:
        s.drive_mode = cmd.drive_mode
    age_messages(dt, s)
    s.ring_head = (s.ring_head + 1) % RING_TICKS


@njit(cache=True)
def reset_dbw_from_params(p, s):
    """The reset's parameter pass over the DBW fields (spec rest value ``FROM_PARAMS``; the other fields
    come from the template at rest): gear ``default_gear`` (also the shift target), the AWD switch at
    ``default_drive_mode``, and the released pedals as the vehicle sees them, hardware biases included.
    Call it after the template copy: the brake output reads the (released) line pressure."""
    s.gear = p.default_gear
    s.gear_target = p.default_gear
    s.drive_mode = p.default_drive_mode
    s.throttle_pedal_pct = min(max(p.throttle_bias_pct, 0.0), 100.0)
    s.brake_output_bar = brake_output_bar(p, s)
