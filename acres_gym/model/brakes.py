"""Hydraulic brakes (seed 002 ``PrepareUtvWheel``): torque = line pressure x the axle's gain.

The torque is a friction capacity: it stops a wheel, it never drives it backwards (the driveline solve
treats it as set-valued, see ``acres_gym.model.driveline``).
"""

from numba import njit


@njit(cache=True)
def brake_torque_nm(p, wheel, line_pressure_bar):
    """Brake torque capacity of ``wheel`` (0 FL .. 3 RR), N m: max(p, 0) x brake_nm_per_bar[wheel]."""
    return max(line_pressure_bar, 0.0) * p.brake_nm_per_bar[wheel]
