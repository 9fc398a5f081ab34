"""Gear actuator (seed ``StepDbw``: "gear actuator"; ds_dbw GearCmd / GearReport).

Gear commands are events (GearCmd has no timeout): ``gear_cmd`` other than GEAR_NONE on the first
tick of a control step is one request, acted on only while DBW is enabled (the node forwards gear
commands only then). A request is refused, with ``gear_reject``:

- UNSUPPORTED for a gear the Ranger does not have (only P, R, N, H, L);
- SHIFT_IN_PROGRESS while a shift is running;
- VEHICLE_SPEED when |vehicle_velocity_brake| exceeds ``gear_shift_max_speed_mps``.

An accepted request for another gear starts a shift that takes ``gear_shift_s``: during it the engaged
``gear`` is GEAR_NEUTRAL (no drive, no park lock), then the target gear engages. A request for the
engaged gear is accepted and changes nothing.

While DBW is not enabled the driver's lever ``driver_gear`` (a position, GEAR_NONE = leave as is) is
followed through the same actuator: whenever it differs from the engaged gear, no shift is running and
the speed is within the shift limit, a shift to it starts (no reject is reported for the lever).
"""

from __future__ import annotations

from numba import njit

from acres_gym.constants import (
    GEAR_LOW,
    GEAR_NEUTRAL,
    GEAR_NONE,
    GEAR_PARK,
    GEAR_REJECT_NONE,
    GEAR_REJECT_SHIFT_IN_PROGRESS,
    GEAR_REJECT_UNSUPPORTED,
    GEAR_REJECT_VEHICLE_SPEED,
)

SHIFT_DONE_TOL_S = 1e-9  # remaining shift time below this counts as done (sums of dt)


@njit(cache=True)
def gear_supported(gear):
    """P, R, N, H or L."""
    return GEAR_PARK <= gear <= GEAR_LOW


@njit(cache=True)
def start_shift(p, s, gear):
    """Begin a shift to ``gear`` (nothing to do when it is already engaged)."""
    if gear == s.gear:
        s.gear_target = gear
        return
    s.gear_target = gear
    if p.gear_shift_s > 0.0:
        s.gear = GEAR_NEUTRAL
        s.gear_shift_left_s = p.gear_shift_s
    else:
        s.gear = gear
        s.gear_shift_left_s = 0.0


@njit(cache=True)
def step_gear(dt, p, cmd, s, message_tick):
    """Advance a running shift, then act on this tick's gear command or the driver's lever."""
    if s.gear_shift_left_s > 0.0:
        s.gear_shift_left_s -= dt
        if s.gear_shift_left_s <= SHIFT_DONE_TOL_S:
            s.gear_shift_left_s = 0.0
            s.gear = s.gear_target
    s.gear_driver = cmd.driver_gear
    shifting = s.gear_shift_left_s > 0.0
    too_fast = abs(s.speed_brake_mps) > p.gear_shift_max_speed_mps
    if s.dbw_enabled:
        request = cmd.gear_cmd
        if message_tick and request != GEAR_NONE:
            if not gear_supported(request):
                s.gear_reject = GEAR_REJECT_UNSUPPORTED
            elif shifting:
                s.gear_reject = GEAR_REJECT_SHIFT_IN_PROGRESS
            elif too_fast:
                s.gear_reject = GEAR_REJECT_VEHICLE_SPEED
            else:
                s.gear_reject = GEAR_REJECT_NONE
                s.gear_cmd_report = request
                start_shift(p, s, request)
    else:
        lever = cmd.driver_gear
        if gear_supported(lever) and lever != s.gear and not shifting and not too_fast:
            start_shift(p, s, lever)
