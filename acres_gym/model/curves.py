"""The seed's engine-independent helpers (``seeds/000_*.txt``, ``AcresSimModel.h``): ``Torque``, ``Slip``
and ``Ackermann``, SI units, called every physics tick.

Each is a plain Python function that also works inside numba-jitted code: ``slip`` and ``ackermann`` are
``@njit`` functions; ``torque`` accepts a sequence of ``(rpm, N m)`` points, an ``(n, 2)`` array or
``None`` from Python, and an ``(n, 2)`` array or ``None`` inside jitted code (through a numba overload).
The kernels call ``torque_from_points`` on the parameter record's fixed-size curve arrays directly.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit, types
from numba.extending import overload

SLIP_SPEED_FLOOR_MPS = 0.2  # seed 000, Slip: "the 0.2 m/s floor keeps it finite near standstill"
ACKERMANN_MIN_STEER_RAD = 1e-5  # seed 000, Ackermann: "Below 1e-5 rad both angles are zero"
ACKERMANN_MIN_INNER_RADIUS_M = 0.1  # seed 000, Ackermann: "R - T/2 floored at 0.1 m"


@njit(cache=True)
def torque_from_points(rpm_points, nm_points, count, peak_torque_nm, max_rpm, rpm):
    """Full-load torque at ``rpm`` from the first ``count`` curve points (seed 000, ``Torque``).

    Linear interpolation; the curve is rescaled so its highest point equals ``peak_torque_nm``; below the
    first point the first point's torque, above the last the last point's; 0 at and above ``max_rpm``
    (fuel cut-off); 0 for an empty curve (or one whose highest point is not positive).
    """
    if count <= 0:
        return 0.0
    if rpm >= max_rpm:
        return 0.0
    highest = nm_points[0]
    for k in range(1, count):
        if nm_points[k] > highest:
            highest = nm_points[k]
    if highest <= 0.0:
        return 0.0
    scale = peak_torque_nm / highest
    if rpm <= rpm_points[0]:
        return nm_points[0] * scale
    last = count - 1
    if rpm >= rpm_points[last]:
        return nm_points[last] * scale
    for k in range(1, count):
        if rpm <= rpm_points[k]:
            r0 = rpm_points[k - 1]
            r1 = rpm_points[k]
            t0 = nm_points[k - 1]
            t1 = nm_points[k]
            w = (rpm - r0) / (r1 - r0) if r1 > r0 else 1.0
            return (t0 + w * (t1 - t0)) * scale
    return nm_points[last] * scale


def _as_curve_array(curve) -> np.ndarray:
    if curve is None:
        return np.zeros((0, 2))
    arr = np.asarray(curve, dtype=np.float64)
    if arr.size == 0:
        return np.zeros((0, 2))
    if arr.ndim != 2 or arr.shape[1] != 2:
        raise ValueError(
            f"torque curve must be a sequence of (rpm, N m) points or an (n, 2) array, got shape {arr.shape}"
        )
    return arr


def torque(curve, peak_torque_nm: float, max_rpm: float, rpm: float) -> float:
    """Full-load engine torque, N m, at ``rpm`` by linear interpolation of ``curve`` (seed 000 ``Torque``).

    ``curve``: ``(rpm, N m)`` points sorted by rising rpm (a sequence, an ``(n, 2)`` array) or ``None``.
    The curve is rescaled so its highest point equals ``peak_torque_nm``. Below the first point: the first
    point's torque; above the last: the last point's; at or above ``max_rpm``: 0 (fuel cut-off). ``None`` or
    an empty curve: 0.
    """
    arr = _as_curve_array(curve)
    return float(torque_from_points(arr[:, 0], arr[:, 1], arr.shape[0], float(peak_torque_nm),
                                    float(max_rpm), float(rpm)))


@overload(torque)
def _torque_jit(curve, peak_torque_nm, max_rpm, rpm):
    if isinstance(curve, types.NoneType):
        def impl_none(curve, peak_torque_nm, max_rpm, rpm):
            return 0.0
        return impl_none
    if isinstance(curve, types.Array) and curve.ndim == 2:
        def impl_array(curve, peak_torque_nm, max_rpm, rpm):
            return torque_from_points(curve[:, 0], curve[:, 1], curve.shape[0], peak_torque_nm, max_rpm, rpm)
        return impl_array
    return None


@njit(cache=True)
def slip(wheel_omega_rad_s, radius_m, speed_mps):
    """Longitudinal slip ratio (seed 000 ``Slip``): s = (omega r - v) / max(0.2, |omega r|, |v|).

    Positive when the wheel spins faster than it travels (driving), negative when it drags (braking).
    """
    surface_speed = wheel_omega_rad_s * radius_m
    denominator = max(SLIP_SPEED_FLOOR_MPS, abs(surface_speed), abs(speed_mps))
    return (surface_speed - speed_mps) / denominator


@njit(cache=True)
def ackermann(steering_rad, wheelbase_m, track_m):
    """Left and right front wheel angles, rad, for a bicycle angle (seed 000 ``Ackermann``).

    R = L / tan|delta| at the rear axle centre; inner wheel atan(L / (R - T/2)) with R - T/2 floored at
    0.1 m, outer wheel atan(L / (R + T/2)). Positive steers left; on a left turn the left wheel is the
    inner one. Below 1e-5 rad both angles are zero.
    """
    magnitude = abs(steering_rad)
    if magnitude < ACKERMANN_MIN_STEER_RAD:
        return 0.0, 0.0
    radius = wheelbase_m / math.tan(magnitude)
    inner = math.atan(wheelbase_m / max(radius - 0.5 * track_m, ACKERMANN_MIN_INNER_RADIUS_M))
    outer = math.atan(wheelbase_m / (radius + 0.5 * track_m))
    if steering_rad > 0.0:
        return inner, outer
    return -outer, -inner
