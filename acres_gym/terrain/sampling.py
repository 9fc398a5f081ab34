"""Jitted terrain lookups for the physics tick: scalars in, scalars out, no allocation.

Grid point ``[j, i]`` of a terrain is at ``(origin_x + i cell, origin_y + j cell)``. Heights are the
bilinear interpolant of the grid points; outside the grid the query point is clamped to the grid's
edge, so the height continues the edge value and the gradient across that edge is 0. Surfaces and
wetness are those of the nearest grid point (the nearest edge point outside the grid), so a surface
border lies half-way between grid points.

For a batch of vehicles the terrains are stacked (:class:`acres_gym.terrain.grid.TerrainStack`):
vehicle ``k`` reads ``height_m[k]`` etc.; the ``*_k`` functions take the stacked arrays and ``k``.
A NaN coordinate gives a NaN height and gradient (so a diverging vehicle shows up as NaN state, not as
a wrong memory read) and the surface of grid point ``[0, 0]``.

Every function here runs unchanged with ``NUMBA_DISABLE_JIT=1``.
"""

from __future__ import annotations

import math

from numba import njit


@njit(cache=True)
def _cell_coordinate(f, n):
    """Cell index ``i`` in 0..n-2, fraction ``t`` in [0, 1] and gradient factor (0 when clamped)."""
    g = 1.0
    if f < 0.0:
        f = 0.0
        g = 0.0
    elif f > n - 1.0:
        f = n - 1.0
        g = 0.0
    i = int(f)
    if i > n - 2:
        i = n - 2
    return i, f - i, g


@njit(cache=True)
def _nearest_index(f, n):
    """Nearest grid index to the grid coordinate ``f`` (ties round up), clamped to 0..n-1."""
    f = f + 0.5
    if not f >= 0.0:  # also NaN
        return 0
    if f >= n:
        return n - 1
    return int(f)


@njit(cache=True)
def sample_height(height, origin_x, origin_y, cell, x, y):
    """Bilinear height ``h`` (m) at world ``(x, y)`` and its gradient ``(dh_dx, dh_dy)``.

    ``height`` is the (ny, nx) grid. Inside a cell with corner heights h00 = H[j, i], h10 = H[j, i+1],
    h01 = H[j+1, i], h11 = H[j+1, i+1] and fractions t (x), u (y):
    ``h = (1-u)((1-t) h00 + t h10) + u((1-t) h01 + t h11)``,
    ``dh_dx = ((1-u)(h10 - h00) + u(h11 - h01)) / cell``, ``dh_dy = ((1-t)(h01 - h00) + t(h11 - h10)) / cell``
    (the exact derivatives of the interpolant; on a cell edge the cell on the far side is used).
    Outside the grid the point is clamped to the edge and the gradient across it is 0.
    The unit normal is ``(-dh_dx, -dh_dy, 1) / sqrt(1 + dh_dx^2 + dh_dy^2)``.
    """
    if not (x == x and y == y):
        return math.nan, math.nan, math.nan
    ny, nx = height.shape
    i, t, gx = _cell_coordinate((x - origin_x) / cell, nx)
    j, u, gy = _cell_coordinate((y - origin_y) / cell, ny)
    h00 = height[j, i]
    h10 = height[j, i + 1]
    h01 = height[j + 1, i]
    h11 = height[j + 1, i + 1]
    a = h00 + t * (h10 - h00)
    b = h01 + t * (h11 - h01)
    h = a + u * (b - a)
    dh_dx = gx * ((1.0 - u) * (h10 - h00) + u * (h11 - h01)) / cell
    dh_dy = gy * (b - a) / cell
    return h, dh_dx, dh_dy


@njit(cache=True)
def sample_surface(surface_id, wetness, origin_x, origin_y, cell, x, y):
    """Surface id and wetness ``(sid, w)`` of the grid point nearest to world ``(x, y)``."""
    ny, nx = surface_id.shape
    i = _nearest_index((x - origin_x) / cell, nx)
    j = _nearest_index((y - origin_y) / cell, ny)
    return surface_id[j, i], wetness[j, i]


@njit(cache=True)
def sample_height_k(height_m, origin_xy_m, cell_m, k, x, y):
    """:func:`sample_height` on terrain ``k`` of a stack (arrays of a ``TerrainStack``)."""
    return sample_height(height_m[k], origin_xy_m[k, 0], origin_xy_m[k, 1], cell_m[k], x, y)


@njit(cache=True)
def sample_surface_k(surface_id, wetness, origin_xy_m, cell_m, k, x, y):
    """:func:`sample_surface` on terrain ``k`` of a stack (arrays of a ``TerrainStack``)."""
    return sample_surface(surface_id[k], wetness[k], origin_xy_m[k, 0], origin_xy_m[k, 1], cell_m[k], x, y)


@njit(cache=True)
def sample_ground_k(height_m, surface_id, wetness, origin_xy_m, cell_m, k, x, y):
    """Everything a wheel needs from terrain ``k`` at ``(x, y)``: ``(h, dh_dx, dh_dy, sid, w)``."""
    h, dh_dx, dh_dy = sample_height_k(height_m, origin_xy_m, cell_m, k, x, y)
    sid, w = sample_surface_k(surface_id, wetness, origin_xy_m, cell_m, k, x, y)
    return h, dh_dx, dh_dy, sid, w


@njit(cache=True)
def surface_normal(dh_dx, dh_dy):
    """Unit ground normal ``(nx, ny, nz)`` (z up) from the height gradient."""
    inv = 1.0 / math.sqrt(1.0 + dh_dx * dh_dx + dh_dy * dh_dy)
    return -dh_dx * inv, -dh_dy * inv, inv


@njit(cache=True)
def surface_friction(table, sid, wetness, slide_speed_mps):
    """Hard-ground friction coefficient of surface ``sid`` of the surface ``table`` (records).

    ``mu = (mu_dry + w (mu_wet - mu_dry)) (1 - w film_loss |v_s| / (|v_s| + film_speed_mps))``.
    Meaningful for hard surfaces (``is_soil == 0``); for soils it returns ``tan(phi)``.
    """
    r = table[sid]
    w = wetness
    v = abs(slide_speed_mps)
    mu = r.mu_dry + w * (r.mu_wet - r.mu_dry)
    return mu * (1.0 - w * r.film_loss * v / (v + r.film_speed_mps))
