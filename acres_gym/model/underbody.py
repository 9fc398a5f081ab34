"""The chassis underside against the ground: high-centring.

The underbody is the plane of the ground clearance (``dimensions.ground_clearance_m`` above level ground at
the static pose, the CG ``cg_height_m`` above it) between the axles, sampled at four points: a quarter and
three quarters of the wheelbase ahead of the rear axle, ``underbody_half_width_m`` either side of the centre
line. The ground is the terrain's surface, the soil's surface where the tyres sink into soil: a vehicle whose
wheels sink by about its clearance (deep snow, wet loam) rests its underbody on the soil, high-centred.

A point below the ground is pressed back along the ground normal by a penalty spring-damper,
N = k d + c (-v . n) >= 0 (``UNDERBODY_STIFFNESS_N_M``, ``UNDERBODY_DAMPING_N_S_M`` per point), and slides
with Coulomb friction ``underbody_friction`` x N in the ground plane, set-valued at rest: the chassis step
solves it with the soil's motion resistance (``model/chassis.py``: ``contact_impulses``). The state's
``high_centred`` is set while the underbody carries load, ``underbody_load_n`` the load it carries.
"""

import math

from numba import njit

from acres_gym.model.vec import cross, rotate
from acres_gym.terrain.sampling import sample_height

UNDERBODY_POINTS = 4
# A stiff penalty: the underbody sinks about 1 cm into the ground under a quarter of the weight per point, and
# the chassis (semi-implicit Euler at 120 Hz) stays well inside its stability limit with the four points.
UNDERBODY_STIFFNESS_N_M = 2.5e5
UNDERBODY_DAMPING_N_S_M = 6.0e3  # per point: about critical for the heave of the body on the four springs


@njit(cache=True)
def underbody_point(p, j):
    """Body-frame offset of underbody point ``j`` (0..3) from the CG, m."""
    x = -p.cg_forward_m + (0.25 if j < 2 else 0.75) * p.wheelbase_m
    y = (p.underbody_half_width_m if j % 2 == 0 else -p.underbody_half_width_m) - p.cg_left_m
    z = p.ground_clearance_m - p.cg_height_m
    return x, y, z


@njit(cache=True)
def prepare_underbody(p, s, w, ground):
    """Normal forces of the underbody points on ``ground`` (heights, surface ids, wetness, origin x, origin y,
    cell): writes the scratch record's ``underbody_load_n``, ``underbody_arm_m`` (the point less the CG, world)
    and ``underbody_normal`` (world), and the state's ``high_centred`` and ``underbody_load_n``."""
    height, _sid, _wet, origin_x, origin_y, cell = ground
    q = s.orientation_wxyz
    wx, wy, wz = rotate(q, s.angular_velocity_rad_s[0], s.angular_velocity_rad_s[1], s.angular_velocity_rad_s[2])
    total = 0.0
    for j in range(UNDERBODY_POINTS):
        bx, by, bz = underbody_point(p, j)
        rx, ry, rz = rotate(q, bx, by, bz)
        x, y, z = s.position_m[0] + rx, s.position_m[1] + ry, s.position_m[2] + rz
        h, gx, gy = sample_height(height, origin_x, origin_y, cell, x, y)
        load = 0.0
        if z < h:
            inv = 1.0 / math.sqrt(1.0 + gx * gx + gy * gy)
            nx, ny, nz = -gx * inv, -gy * inv, inv
            depth = (h - z) * nz
            ox, oy, oz = cross(wx, wy, wz, rx, ry, rz)
            approach = -((s.velocity_mps[0] + ox) * nx + (s.velocity_mps[1] + oy) * ny
                         + (s.velocity_mps[2] + oz) * nz)
            load = max(UNDERBODY_STIFFNESS_N_M * depth + UNDERBODY_DAMPING_N_S_M * approach, 0.0)
            w.underbody_normal[j, 0] = nx
            w.underbody_normal[j, 1] = ny
            w.underbody_normal[j, 2] = nz
        w.underbody_point_load_n[j] = load
        w.underbody_arm_m[j, 0] = rx
        w.underbody_arm_m[j, 1] = ry
        w.underbody_arm_m[j, 2] = rz
        total += load
    s.underbody_load_n = total
    s.high_centred = total > 0.0
