"""Steering geometry (seed 002 ``StepUtvSteering``).

Bicycle angle = (steering wheel angle - centre offset) / steering ratio, then ideal Ackermann on the
front wheels (seed 000 ``Ackermann``). The rear wheels do not steer.
"""

import math

from numba import njit

from acres_gym.constants import WHEEL_FL, WHEEL_FR, WHEEL_RL, WHEEL_RR
from acres_gym.model.curves import ackermann

DEG_TO_RAD = math.pi / 180.0


@njit(cache=True)
def road_wheel_angle_rad(p, steering_wheel_deg):
    """Bicycle-model road-wheel angle, rad: (SWA - steering_center_deg) / steering_ratio."""
    return (steering_wheel_deg - p.steering_center_deg) / p.steering_ratio * DEG_TO_RAD


@njit(cache=True)
def step_steering(dt, p, s):
    """Sets the front wheel angles from the steering wheel angle and advances ``time_s`` (seed order)."""
    bicycle = road_wheel_angle_rad(p, s.steering_wheel_deg)
    left, right = ackermann(bicycle, p.wheelbase_m, p.track_front_m)
    s.road_wheel_angle_rad[WHEEL_FL] = left
    s.road_wheel_angle_rad[WHEEL_FR] = right
    s.road_wheel_angle_rad[WHEEL_RL] = 0.0
    s.road_wheel_angle_rad[WHEEL_RR] = 0.0
    s.road_wheel_rad = bicycle
    s.time_s += dt
