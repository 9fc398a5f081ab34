"""Suspension and tyre vertical compliance of one corner, and the ground probe.

Each corner is an independent suspension along the body's z axis (seed 002: "independent suspension
spring, damper and travel stops"). The top of the travel (the wheel-centre position at full bump) is the
hardpoint ``hardpoint_*_m`` from ``finalize_parameters``; the compression c runs from 0 at full droop to
``travel_m`` at full bump, ``droop_m`` at the static position. The wheel is massless (quasi-static):
the spring (wheel rate k_w, preloaded to carry the static corner load F_0 at c = droop), the quadratic
bump stop (K_b (c - c_b)^2 beyond c_b = travel - bump_stop_length) and the tyre's vertical spring k_t act
in series (seed: "wheel rates ... spring at the wheel, in series with the tyre"):

    k_w (c - droop) + F_0 + K_b max(0, c - c_b)^2 = k_t cos(theta) delta,
    delta = r_0 - (L - travel + c) cos(theta)

with L the distance from the hardpoint to the ground along the suspension axis and theta the angle
between that axis and the ground normal; c is clamped to the travel (droop and bump stops are rigid).
The damper (``damper_n_s_m``) acts on the compression rate; it is integrated implicitly with the corner
mass (docs/architecture.md, "Stiff contacts").
"""

import math

from numba import njit

from acres_gym.terrain.sampling import sample_height

PROBE_ITERATIONS = 4
MIN_AXIS_COS = 0.05  # suspension axis within ~87 deg of the ground normal, else no contact


@njit(cache=True)
def probe_ground(height, origin_x, origin_y, cell, px, py, pz, ux, uy, uz):
    """Ground probe along the suspension axis: the ray P - t u from the hardpoint P down the body's up
    axis u meets the terrain at t. Newton on f(t) = P_z - t u_z - h(P_xy - t u_xy).

    Returns (t, qx, qy, qz, nx, ny, nz): distance, ground point, unit ground normal.
    """
    h, gx, gy = sample_height(height, origin_x, origin_y, cell, px, py)
    t = (pz - h) / max(uz, MIN_AXIS_COS)
    for _ in range(PROBE_ITERATIONS):
        qx = px - t * ux
        qy = py - t * uy
        h, gx, gy = sample_height(height, origin_x, origin_y, cell, qx, qy)
        f = pz - t * uz - h
        df = -uz + gx * ux + gy * uy
        if abs(df) < 1e-9:
            break
        t -= f / df
    qx = px - t * ux
    qy = py - t * uy
    h, gx, gy = sample_height(height, origin_x, origin_y, cell, qx, qy)
    inv = 1.0 / math.sqrt(gx * gx + gy * gy + 1.0)
    return t, qx, qy, h, -gx * inv, -gy * inv, inv


@njit(cache=True)
def spring_equilibrium(p, wheel, probe_length_m, cos_theta):
    """Compression c, m, of the massless corner for the probe length L (module docstring), and the share
    of a change of L that reaches the suspension (the rest deflects the tyre): (c, share, clamped)."""
    k_w = p.wheel_rate_n_m[wheel]
    k_t = p.tyre_vertical_stiffness_n_m
    c0 = p.droop_m
    travel = p.travel_m
    c_b = travel - p.bump_stop_length_m
    k_b = p.bump_stop_rate_n_m2
    preload = p.static_load_n[wheel] - k_w * c0
    a = k_t * cos_theta * cos_theta
    b = k_t * cos_theta * (p.tyre_radius_m - (probe_length_m - travel) * cos_theta)
    rhs = b - preload
    c = rhs / (k_w + a)
    stiffness = k_w
    if c > c_b and k_b > 0.0:
        r = rhs - (k_w + a) * c_b
        x = (-(k_w + a) + math.sqrt((k_w + a) * (k_w + a) + 4.0 * k_b * r)) / (2.0 * k_b)
        c = c_b + x
        stiffness = k_w + 2.0 * k_b * x
    if c <= 0.0:
        return 0.0, 0.0, True
    if c >= travel:
        return travel, 0.0, True
    return c, a / (stiffness + a), False


@njit(cache=True)
def elastic_energy(p, wheel, compression_m, tyre_deflection_m):
    """Energy stored in the corner's spring, bump stop and tyre relative to the static spring, J."""
    dc = compression_m - p.droop_m
    e = p.static_load_n[wheel] * dc + 0.5 * p.wheel_rate_n_m[wheel] * dc * dc
    x = compression_m - (p.travel_m - p.bump_stop_length_m)
    if x > 0.0:
        e += p.bump_stop_rate_n_m2 * x * x * x / 3.0
    if tyre_deflection_m > 0.0:
        e += 0.5 * p.tyre_vertical_stiffness_n_m * tyre_deflection_m * tyre_deflection_m
    return e
