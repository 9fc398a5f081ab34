"""Small 3-vector and quaternion helpers for jitted code: scalars in, tuples out, no allocation.

Quaternions are (w, x, y, z), unit, rotating body-frame vectors into the world frame.
"""

import math

from numba import njit


@njit(cache=True)
def cross(ax, ay, az, bx, by, bz):
    """a x b."""
    return ay * bz - az * by, az * bx - ax * bz, ax * by - ay * bx


@njit(cache=True)
def dot(ax, ay, az, bx, by, bz):
    """a . b."""
    return ax * bx + ay * by + az * bz


@njit(cache=True)
def normalize(x, y, z):
    """a / |a| (a zero vector stays zero)."""
    n = math.sqrt(x * x + y * y + z * z)
    if n <= 0.0:
        return 0.0, 0.0, 0.0
    return x / n, y / n, z / n


@njit(cache=True)
def rotate(q, x, y, z):
    """Body vector (x, y, z) in the world frame: q v q*."""
    w, qx, qy, qz = q[0], q[1], q[2], q[3]
    tx = 2.0 * (qy * z - qz * y)
    ty = 2.0 * (qz * x - qx * z)
    tz = 2.0 * (qx * y - qy * x)
    return (x + w * tx + (qy * tz - qz * ty),
            y + w * ty + (qz * tx - qx * tz),
            z + w * tz + (qx * ty - qy * tx))


@njit(cache=True)
def rotate_inverse(q, x, y, z):
    """World vector (x, y, z) in the body frame: q* v q."""
    w, qx, qy, qz = q[0], -q[1], -q[2], -q[3]
    tx = 2.0 * (qy * z - qz * y)
    ty = 2.0 * (qz * x - qx * z)
    tz = 2.0 * (qx * y - qy * x)
    return (x + w * tx + (qy * tz - qz * ty),
            y + w * ty + (qz * tx - qx * tz),
            z + w * tz + (qx * ty - qy * tx))


@njit(cache=True)
def integrate_orientation(q, wx, wy, wz, dt):
    """q <- q (x) exp(omega_body dt / 2), renormalised (exact rotation by the body rate over dt)."""
    angle = math.sqrt(wx * wx + wy * wy + wz * wz) * dt
    if angle < 1e-12:
        dw, dx, dy, dz = 1.0, 0.5 * wx * dt, 0.5 * wy * dt, 0.5 * wz * dt
    else:
        half = 0.5 * angle
        k = math.sin(half) / (angle / dt)
        dw, dx, dy, dz = math.cos(half), wx * k, wy * k, wz * k
    w, x, y, z = q[0], q[1], q[2], q[3]
    nw = w * dw - x * dx - y * dy - z * dz
    nx = w * dx + x * dw + y * dz - z * dy
    ny = w * dy - x * dz + y * dw + z * dx
    nz = w * dz + x * dy - y * dx + z * dw
    n = math.sqrt(nw * nw + nx * nx + ny * ny + nz * nz)
    q[0] = nw / n
    q[1] = nx / n
    q[2] = ny / n
    q[3] = nz / n


@njit(cache=True)
def euler_from_quaternion(q):
    """(roll, pitch, yaw), rad, ZYX convention."""
    w, x, y, z = q[0], q[1], q[2], q[3]
    roll = math.atan2(2.0 * (w * x + y * z), 1.0 - 2.0 * (x * x + y * y))
    sp = 2.0 * (w * y - z * x)
    sp = min(1.0, max(-1.0, sp))
    pitch = math.asin(sp)
    yaw = math.atan2(2.0 * (w * z + x * y), 1.0 - 2.0 * (y * y + z * z))
    return roll, pitch, yaw
