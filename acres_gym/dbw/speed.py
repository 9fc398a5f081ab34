"""Measured speeds: VehicleVelocity and the ULC's speed and acceleration measurement.

The wheel-speed sensors see spin, not direction (ds_dbw ``dir_src`` = DIR_PRNDL): each speed is the
mean wheel spin |omega| times ``tyre_radius_m`` times ``speed_scale`` (seed ``SpeedScale``: measured /
(wheel spin x unloaded tyre radius)), negative while the engaged gear is reverse.

- ``vehicle_velocity_brake``: all four wheels (the brake system's sensors);
- ``vehicle_velocity_propulsion``: the rear (driven) wheels;
- the ULC regulates ``vel_meas`` = vehicle_velocity_brake + ``ulc_speed_bias_mps`` in the direction of
  travel (seed ``UlcSpeedBiasMps``: a sensor reading high by this much);
- ``accel_meas`` is the derivative of vel_meas through a first-order filter of ``ACCEL_MEAS_TAU_S``.
"""

from __future__ import annotations

import math

from numba import njit

from acres_gym.constants import GEAR_REVERSE, WHEEL_FL, WHEEL_FR, WHEEL_RL, WHEEL_RR

ACCEL_MEAS_TAU_S = 0.1  # filter on the differentiated speed (the report's 0.05 m/s^2 steps stay calm)


@njit(cache=True)
def gear_direction(gear):
    """+1, or -1 while the engaged gear is reverse (the sign of the measured speeds)."""
    return -1.0 if gear == GEAR_REVERSE else 1.0


@njit(cache=True)
def measure_speeds(dt, p, s):
    """Update the VehicleVelocity speeds and the ULC's vel_meas / accel_meas from the wheel spins."""
    w = s.wheel_omega_rad_s
    scale = p.tyre_radius_m * p.speed_scale * gear_direction(s.gear)
    s.speed_brake_mps = 0.25 * (abs(w[WHEEL_FL]) + abs(w[WHEEL_FR]) + abs(w[WHEEL_RL]) + abs(w[WHEEL_RR])) * scale
    s.speed_propulsion_mps = 0.5 * (abs(w[WHEEL_RL]) + abs(w[WHEEL_RR])) * scale

    v = s.speed_brake_mps + gear_direction(s.gear) * p.ulc_speed_bias_mps
    if s.speed_primed and dt > 0.0:
        raw = (v - s.ulc_vel_meas_mps) / dt
        alpha = 1.0 - math.exp(-dt / ACCEL_MEAS_TAU_S)
        s.ulc_accel_meas_mps2 += alpha * (raw - s.ulc_accel_meas_mps2)
    s.ulc_vel_meas_mps = v
    s.speed_primed = True
