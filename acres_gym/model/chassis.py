"""The 6-DOF chassis: a rigid body with the finalised mass properties, driven by the four contact
forces (normal load along the ground normal, tyre forces in the ground plane, applied at the contact
points), the soil's motion resistance at the contacts, the underbody where it rests on the ground
(``model/underbody.py``), gravity and aerodynamic drag -1/2 rho CdA |v| v (still air).

Semi-implicit Euler: velocities first (Euler's equations in the body frame with the principal inertias
Ixx, Iyy, Izz about the CG; products of inertia are not modelled), then the soil's motion resistance at
the contacts and the underbody's friction as impulses (``contact_impulses``), then position and the exact
rotation by the new
body rate. Afterwards the chassis side of the ledger (seed ``AccountChassis``): the tyre forces'
work at the mid-tick contact velocities, the suspension's, and the drag's.
"""

import math

import numpy as np
from numba import njit

from acres_gym.constants import DIVERGED_SPEED, STANDARD_GRAVITY_MPS2
from acres_gym.model.vec import cross, integrate_orientation, rotate, rotate_inverse

ROLLOVER_TILT_DEG = 70.0
ROLLOVER_UP_Z = math.cos(ROLLOVER_TILT_DEG * math.pi / 180.0)
DIVERGED_SPEED_MPS = 200.0


BODY_KINEMATICS = ("roll", "pitch", "yaw", "speed", "yaw_rate", "axle_x", "axle_y")
"""What ``body_kinematics`` returns, in order (rad, m/s, rad/s, m)."""


@njit(cache=True)
def body_kinematics(p, s):
    """Roll, pitch, yaw (ZYX) from the quaternion (w, x, y, z), forward speed of the CG (world velocity on the
    body x axis), body yaw rate, and the world (x, y) of the rear-axle midpoint (CG position less the rotated
    CG offset) of one vehicle (parameter record ``p``, state record ``s``): ``BODY_KINEMATICS``."""
    q, v, pos = s.orientation_wxyz, s.velocity_mps, s.position_m
    w, x, y, z = q[0], q[1], q[2], q[3]
    r00 = 1.0 - 2.0 * (y * y + z * z)
    r01 = 2.0 * (x * y - w * z)
    r02 = 2.0 * (x * z + w * y)
    r10 = 2.0 * (x * y + w * z)
    r11 = 1.0 - 2.0 * (x * x + z * z)
    r12 = 2.0 * (y * z - w * x)
    r20 = 2.0 * (x * z - w * y)
    r21 = 2.0 * (y * z + w * x)
    r22 = 1.0 - 2.0 * (x * x + y * y)
    cf, cl, ch = p.cg_forward_m, p.cg_left_m, p.cg_height_m
    return (np.arctan2(r21, r22), np.arcsin(min(max(-r20, -1.0), 1.0)), np.arctan2(r10, r00),
            r00 * v[0] + r10 * v[1] + r20 * v[2], s.angular_velocity_rad_s[2],
            pos[0] - (r00 * cf + r01 * cl + r02 * ch), pos[1] - (r10 * cf + r11 * cl + r12 * ch))


@njit(cache=True)
def flag_diverged(s, reason):
    """Marks the vehicle diverged (it is frozen from the next tick) with the first reason found."""
    if not s.diverged:
        s.diverged_reason = reason
    s.diverged = True


@njit(cache=True)
def contact_force(s, w, i):
    """World-frame force of contact i on the chassis: (normal part, tyre part) as two 3-tuples."""
    n = s.normal_load_n[i]
    fx = s.tyre_fx_n[i]
    fy = s.tyre_fy_n[i]
    tx = w.tyre_dir_x[i]
    ty = w.tyre_dir_y[i]
    cn = s.contact_normal[i]
    return (n * cn[0], n * cn[1], n * cn[2],
            fx * tx[0] + fy * ty[0], fx * tx[1] + fy * ty[1], fx * tx[2] + fy * ty[2])


CONTACT_SWEEPS = 4  # Gauss-Seidel sweeps of the contact friction impulses (soil resistance, underbody)


@njit(cache=True)
def _set_row(q, m, ix, iy, iz, w, k, tx, ty, tz, rx, ry, rz):
    """Row k of the contact friction solve: the world direction t and, in the body frame, a = r x t of
    the arm r (from the CG), and the inverse effective mass 1/m + sum_k a_k^2 / I_k along t."""
    cx, cy, cz = cross(rx, ry, rz, tx, ty, tz)
    ax, ay, az = rotate_inverse(q, cx, cy, cz)
    w.contact_row[k, 0] = tx
    w.contact_row[k, 1] = ty
    w.contact_row[k, 2] = tz
    w.contact_row[k, 3] = ax
    w.contact_row[k, 4] = ay
    w.contact_row[k, 5] = az
    w.contact_row[k, 6] = 1.0 / m + ax * ax / ix + ay * ay / iy + az * az / iz


@njit(cache=True)
def _friction_row(w, k, m, ix, iy, iz, held, cap, v1x, v1y, v1z, w1x, w1y, w1z):
    """One projected Gauss-Seidel row (``_set_row``): the impulse P along t that stops the point's velocity
    along t, u = t . v1 + w1 . a, accumulated with ``held`` and clamped to [-cap, cap]; u changes by P times
    the row's inverse mass. Returns (accumulated impulse, v1, w1)."""
    tx, ty, tz = w.contact_row[k, 0], w.contact_row[k, 1], w.contact_row[k, 2]
    ax, ay, az = w.contact_row[k, 3], w.contact_row[k, 4], w.contact_row[k, 5]
    u = tx * v1x + ty * v1y + tz * v1z + w1x * ax + w1y * ay + w1z * az
    new = min(max(held - u / w.contact_row[k, 6], -cap), cap)
    dp = new - held
    return (new, v1x + dp * tx / m, v1y + dp * ty / m, v1z + dp * tz / m,
            w1x + dp * ax / ix, w1y + dp * ay / iy, w1z + dp * az / iz)


@njit(cache=True)
def _underbody_tangents(w, j):
    """Two unit directions in the ground plane under underbody point j: the body's heading projected, and
    the normal x that."""
    nx, ny, nz = w.underbody_normal[j, 0], w.underbody_normal[j, 1], w.underbody_normal[j, 2]
    # any direction across the normal serves: world x projected, or world y where the normal is along x
    ex, ey, ez = (1.0, 0.0, 0.0) if abs(nx) < 0.9 else (0.0, 1.0, 0.0)
    d = ex * nx + ey * ny + ez * nz
    ax, ay, az = ex - d * nx, ey - d * ny, ez - d * nz
    norm = math.sqrt(ax * ax + ay * ay + az * az)
    ax, ay, az = ax / norm, ay / norm, az / norm
    bx, by, bz = cross(nx, ny, nz, ax, ay, az)
    return ax, ay, az, bx, by, bz


@njit(cache=True)
def contact_impulses(dt, p, s, w, px, py, pz, v1x, v1y, v1z, w1x, w1y, w1z):
    """The contacts' Coulomb friction on the end-of-tick velocities (v1, body rate w1), by projected
    Gauss-Seidel (``CONTACT_SWEEPS``, ``_friction_row``; each row's direction, arm and effective mass
    set once per tick, ``_set_row``):

    * the soil's motion resistance (Wong: drawbar pull = thrust - R_c - R_h) along each wheel's heading,
      capacity R_i = ``w.soil_resistance_n[i]``: -R_i sgn(u_i) while the contact moves, set-valued in
      [-R_i, R_i] at rest, taking what holds the contact still and never more, so it never pushes a parked
      vehicle; the force (P / dt, + forward) goes to ``s.contact_resistance_n``;
    * the underbody's friction (``model/underbody.py``) in the ground plane under each point resting on the
      ground, capacity ``underbody_friction`` x its normal force along each of two directions.

    Returns the new (v1, w1).
    """
    m = p.mass_kg
    ix, iy, iz = p.ixx_kg_m2, p.iyy_kg_m2, p.izz_kg_m2
    q = s.orientation_wxyz
    for i in range(4):
        s.contact_resistance_n[i] = 0.0
        w.underbody_impulse_n_s[i, 0] = 0.0
        w.underbody_impulse_n_s[i, 1] = 0.0
    for i in range(4):  # rows 0-3 the wheels, 4 + 2 j and 5 + 2 j the underbody points' two directions
        if w.soil_resistance_n[i] > 0.0 and s.in_contact[i]:
            _set_row(q, m, ix, iy, iz, w, i, w.tyre_dir_x[i, 0], w.tyre_dir_x[i, 1], w.tyre_dir_x[i, 2],
                     s.contact_point_m[i, 0] - px, s.contact_point_m[i, 1] - py, s.contact_point_m[i, 2] - pz)
        if w.underbody_point_load_n[i] > 0.0:
            ax, ay, az, bx, by, bz = _underbody_tangents(w, i)
            rx, ry, rz = w.underbody_arm_m[i, 0], w.underbody_arm_m[i, 1], w.underbody_arm_m[i, 2]
            _set_row(q, m, ix, iy, iz, w, 4 + 2 * i, ax, ay, az, rx, ry, rz)
            _set_row(q, m, ix, iy, iz, w, 5 + 2 * i, bx, by, bz, rx, ry, rz)
    for _sweep in range(CONTACT_SWEEPS):
        for i in range(4):
            cap = w.soil_resistance_n[i] * dt
            if cap <= 0.0 or not s.in_contact[i]:
                continue
            held, v1x, v1y, v1z, w1x, w1y, w1z = _friction_row(
                w, i, m, ix, iy, iz, s.contact_resistance_n[i] * dt, cap, v1x, v1y, v1z, w1x, w1y, w1z)
            s.contact_resistance_n[i] = held / dt
        for j in range(4):
            cap = p.underbody_friction * w.underbody_point_load_n[j] * dt
            if cap <= 0.0:
                continue
            for d in range(2):
                held, v1x, v1y, v1z, w1x, w1y, w1z = _friction_row(
                    w, 4 + 2 * j + d, m, ix, iy, iz, w.underbody_impulse_n_s[j, d], cap,
                    v1x, v1y, v1z, w1x, w1y, w1z)
                w.underbody_impulse_n_s[j, d] = held
    return v1x, v1y, v1z, w1x, w1y, w1z


@njit(cache=True)
def _has_friction_contacts(s, w):
    """Whether a soil resistance or the underbody acts this tick (else the chassis step is the hard-ground
    one, bit for bit)."""
    if s.high_centred:
        return True
    for i in range(4):
        if s.in_contact[i] and w.soil_resistance_n[i] > 0.0:
            return True
    return False


@njit(cache=True)
def step_chassis(dt, p, s, w, wheel_contact_power_w, elastic_before_j):
    """Integrates the chassis over the tick and books its side of the ledger."""
    m = p.mass_kg
    q = s.orientation_wxyz
    px, py, pz = s.position_m[0], s.position_m[1], s.position_m[2]
    vx, vy, vz = s.velocity_mps[0], s.velocity_mps[1], s.velocity_mps[2]
    fx, fy, fz = 0.0, 0.0, -m * STANDARD_GRAVITY_MPS2
    tqx, tqy, tqz = 0.0, 0.0, 0.0
    for i in range(4):
        if not s.in_contact[i]:
            continue
        nx, ny, nz, gx, gy, gz = contact_force(s, w, i)
        cx, cy, cz = nx + gx, ny + gy, nz + gz
        rx = s.contact_point_m[i, 0] - px
        ry = s.contact_point_m[i, 1] - py
        rz = s.contact_point_m[i, 2] - pz
        ax, ay, az = cross(rx, ry, rz, cx, cy, cz)
        fx += cx
        fy += cy
        fz += cz
        tqx += ax
        tqy += ay
        tqz += az
    if s.high_centred:
        for j in range(4):
            load = w.underbody_point_load_n[j]
            if load <= 0.0:
                continue
            normal = w.underbody_normal[j]
            cx, cy, cz = load * normal[0], load * normal[1], load * normal[2]
            ax, ay, az = cross(w.underbody_arm_m[j, 0], w.underbody_arm_m[j, 1], w.underbody_arm_m[j, 2], cx, cy, cz)
            fx += cx
            fy += cy
            fz += cz
            tqx += ax
            tqy += ay
            tqz += az
    speed = math.sqrt(vx * vx + vy * vy + vz * vz)
    drag = 0.5 * p.air_density_kg_m3 * p.drag_area_m2 * speed
    fx -= drag * vx
    fy -= drag * vy
    fz -= drag * vz
    w.force_world_n[0] = fx
    w.force_world_n[1] = fy
    w.force_world_n[2] = fz

    # Euler's equations in the body frame
    bx, by, bz = rotate_inverse(q, tqx, tqy, tqz)
    w.torque_body_nm[0] = bx
    w.torque_body_nm[1] = by
    w.torque_body_nm[2] = bz
    w0x, w0y, w0z = s.angular_velocity_rad_s[0], s.angular_velocity_rad_s[1], s.angular_velocity_rad_s[2]
    ix, iy, iz = p.ixx_kg_m2, p.iyy_kg_m2, p.izz_kg_m2
    gyx, gyy, gyz = cross(w0x, w0y, w0z, ix * w0x, iy * w0y, iz * w0z)
    w1x = w0x + dt * (bx - gyx) / ix
    w1y = w0y + dt * (by - gyy) / iy
    w1z = w0z + dt * (bz - gyz) / iz
    v1x = vx + dt * fx / m
    v1y = vy + dt * fy / m
    v1z = vz + dt * fz / m
    soil = _has_friction_contacts(s, w)
    if soil:
        u1x, u1y, u1z, r1x, r1y, r1z = contact_impulses(dt, p, s, w, px, py, pz, v1x, v1y, v1z, w1x, w1y, w1z)
        w.force_world_n[0] += m * (u1x - v1x) / dt
        w.force_world_n[1] += m * (u1y - v1y) / dt
        w.force_world_n[2] += m * (u1z - v1z) / dt
        w.torque_body_nm[0] += ix * (r1x - w1x) / dt
        w.torque_body_nm[1] += iy * (r1y - w1y) / dt
        w.torque_body_nm[2] += iz * (r1z - w1z) / dt
        v1x, v1y, v1z, w1x, w1y, w1z = u1x, u1y, u1z, r1x, r1y, r1z
    else:
        for i in range(4):
            s.contact_resistance_n[i] = 0.0

    # chassis ledger at the mid-tick velocities (before the pose moves)
    mvx, mvy, mvz = 0.5 * (vx + v1x), 0.5 * (vy + v1y), 0.5 * (vz + v1z)
    mwx, mwy, mwz = rotate(q, 0.5 * (w0x + w1x), 0.5 * (w0y + w1y), 0.5 * (w0z + w1z))
    tyre_work = 0.0
    normal_work = 0.0
    for i in range(4):
        if not s.in_contact[i]:
            continue
        nx, ny, nz, gx, gy, gz = contact_force(s, w, i)
        rx = s.contact_point_m[i, 0] - px
        ry = s.contact_point_m[i, 1] - py
        rz = s.contact_point_m[i, 2] - pz
        ox, oy, oz = cross(mwx, mwy, mwz, rx, ry, rz)
        ux, uy, uz = mvx + ox, mvy + oy, mvz + oz
        tyre_work += (gx * ux + gy * uy + gz * uz) * dt
        normal_work += (nx * ux + ny * uy + nz * uz) * dt
        if soil:  # the resistance's work is the soil's heat
            r = s.contact_resistance_n[i]
            s.e_soil_j -= r * (w.tyre_dir_x[i, 0] * ux + w.tyre_dir_x[i, 1] * uy + w.tyre_dir_x[i, 2] * uz) * dt
    if s.high_centred:  # the underbody's normal and friction work: soil (or ground) deformation
        for j in range(4):
            load = w.underbody_point_load_n[j]
            if load <= 0.0:
                continue
            rx, ry, rz = w.underbody_arm_m[j, 0], w.underbody_arm_m[j, 1], w.underbody_arm_m[j, 2]
            ox, oy, oz = cross(mwx, mwy, mwz, rx, ry, rz)
            ux, uy, uz = mvx + ox, mvy + oy, mvz + oz
            ax, ay, az, bx, by, bz = _underbody_tangents(w, j)
            pa, pb = w.underbody_impulse_n_s[j, 0], w.underbody_impulse_n_s[j, 1]
            s.e_soil_j -= (load * dt * (w.underbody_normal[j, 0] * ux + w.underbody_normal[j, 1] * uy
                                        + w.underbody_normal[j, 2] * uz)
                           + pa * (ax * ux + ay * uy + az * uz) + pb * (bx * ux + by * uy + bz * uz))
    w.chassis_work_j = tyre_work
    s.e_tyre_slip_j += wheel_contact_power_w * dt - tyre_work
    elastic_now = 0.0
    for i in range(4):
        elastic_now += s.elastic_energy_j[i]
    s.e_damper_j += -normal_work - (elastic_now - elastic_before_j)
    s.e_aero_j += drag * (mvx * mvx + mvy * mvy + mvz * mvz) * dt

    # advance the state
    s.acceleration_mps2[0] = (v1x - vx) / dt
    s.acceleration_mps2[1] = (v1y - vy) / dt
    s.acceleration_mps2[2] = (v1z - vz) / dt
    s.velocity_mps[0] = v1x
    s.velocity_mps[1] = v1y
    s.velocity_mps[2] = v1z
    s.angular_velocity_rad_s[0] = w1x
    s.angular_velocity_rad_s[1] = w1y
    s.angular_velocity_rad_s[2] = w1z
    s.position_m[0] = px + dt * v1x
    s.position_m[1] = py + dt * v1y
    s.position_m[2] = pz + dt * v1z
    integrate_orientation(q, w1x, w1y, w1z, dt)
    _ux, _uy, up_z = rotate(q, 0.0, 0.0, 1.0)
    s.rolled_over = up_z < ROLLOVER_UP_Z
    speed1 = v1x * v1x + v1y * v1y + v1z * v1z
    w2 = w1x * w1x + w1y * w1y + w1z * w1z
    if not (speed1 < DIVERGED_SPEED_MPS * DIVERGED_SPEED_MPS and w2 < 1e4):
        flag_diverged(s, DIVERGED_SPEED)
