"""Terrain constructors: flat ground, slopes, surface splits, fractal rough ground, surface patches,
polygons, files and configs. Every constructor returns a :class:`~acres_gym.terrain.grid.Terrain`.

Grids are square by default (``size_m`` a number) or rectangular (``size_m=(size_x, size_y)``),
centred on ``center`` with ``ceil(size / cell) + 1`` points per side. A cell whose wetness is not
given gets its surface's ``default_wetness``. Random terrains draw only from the generator seeded by
the caller (``numpy.random.default_rng(seed)``): the same seed gives the same terrain, bit for bit.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numba import njit

from acres_gym.runtime import allocator, threading_layer  # noqa: F401  (freed terrain memory kept; the fork-safe layer)
from acres_gym.terrain.grid import MAX_GRID_POINTS, Terrain
from acres_gym.terrain.surfaces import SurfaceTable, default_surfaces

FILE_FORMAT = "acres_gym.terrain.npz/1"
MIN_FEATURE_CELLS = 2.0
"""The shortest hill wavelength and patch scale, in grid cells: shorter noise is finer than the grid
resolves (the octave filter drops it) and its lattice of (extent / wavelength)^2 gradients would exhaust
memory (a 1e-6 m wavelength on a 300 m grid asks for 639 PiB)."""


# --------------------------------------------------------------------------- argument checks
def _number(name: str, value, lo: float = -math.inf, hi: float = math.inf,
            lo_inclusive: bool = True) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise ValueError(f"{name} must be a number, got {value!r}")
    value = float(value)
    ok = math.isfinite(value) and (value >= lo if lo_inclusive else value > lo) and value <= hi
    if not ok:
        bracket = "[" if lo_inclusive else "("
        raise ValueError(f"{name} = {value} outside the allowed range {bracket}{lo}, {hi}]")
    return value


def _pair(name: str, value) -> tuple[float, float]:
    if np.ndim(value) == 0:
        v = _number(name, value)
        return v, v
    if len(value) != 2:
        raise ValueError(f"{name} must be a number or a pair (x, y), got {value!r}")
    return _number(f"{name}[0]", value[0]), _number(f"{name}[1]", value[1])


def _feature(name: str, value, cell: float) -> float:
    """A wavelength or scale of at least ``MIN_FEATURE_CELLS`` grid cells (at most 1e5 m)."""
    lo = MIN_FEATURE_CELLS * cell
    value = _number(name, value, 0.0, 1e5, lo_inclusive=False)
    if value < lo:
        raise ValueError(f"{name} = {value} is shorter than {MIN_FEATURE_CELLS:g} grid cells ({lo:g} m at cell_m = "
                         f"{cell:g} m): the grid cannot resolve it; allowed range [{lo:g}, 100000.0]")
    return value


def _seed(name: str, seed) -> int:
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"{name} must be an integer >= 0, got {seed!r}")
    return int(seed)


def _wetness(name: str, wetness, default: float) -> float:
    return default if wetness is None else _number(name, wetness, 0.0, 1.0)


def _table(table: SurfaceTable | None) -> SurfaceTable:
    return table if table is not None else default_surfaces()


def _grid(size_m, cell_m, center) -> tuple[int, int, float, float, float]:
    """(nx, ny, origin_x, origin_y, cell) of a grid of ``size_m`` centred on ``center``."""
    cell = _number("cell_m", cell_m, 0.0, 1e4, lo_inclusive=False)
    sx, sy = _pair("size_m", size_m)
    if sx <= 0.0 or sy <= 0.0:
        raise ValueError(f"size_m must be > 0, got {size_m!r}")
    cx, cy = _pair("center", center)
    nx = max(2, math.ceil(sx / cell - 1e-9) + 1)
    ny = max(2, math.ceil(sy / cell - 1e-9) + 1)
    if nx * ny > MAX_GRID_POINTS:
        raise ValueError(f"size_m = {size_m!r} with cell_m = {cell} gives {nx} x {ny} points, more than "
                         f"{MAX_GRID_POINTS}; use a larger cell_m or a smaller size_m")
    return nx, ny, cx - 0.5 * (nx - 1) * cell, cy - 0.5 * (ny - 1) * cell, cell


def uniform_surface(height: np.ndarray, ox: float, oy: float, cell: float, surface: str, wetness,
                    table: SurfaceTable | None) -> Terrain:
    """A terrain of the grid ``height`` (origin ``ox``, ``oy``, spacing ``cell``) covered by one ``surface`` of
    ``table`` (default: the default table) at ``wetness`` (None: the surface's default)."""
    t = _table(table)
    sid = t.surface_id(surface)
    w = _wetness("wetness", wetness, float(t.records.default_wetness[sid]))
    return Terrain._unchecked(np.ascontiguousarray(height, dtype=np.float64), np.full(height.shape, sid, np.int32),
                              np.full(height.shape, w), ox, oy, cell, table)


def grid_axes(size_m, cell_m: float = 1.0, center=(0.0, 0.0)) -> tuple[np.ndarray, np.ndarray]:
    """World x of the grid columns and y of the grid rows (m) of every constructor's grid of ``size_m`` at
    ``cell_m`` centred on ``center``: ``Terrain.x_m`` and ``Terrain.y_m`` of the terrain they build."""
    nx, ny, ox, oy, cell = _grid(size_m, cell_m, center)
    return ox + cell * np.arange(nx), oy + cell * np.arange(ny)


# --------------------------------------------------------------------------- simple shapes
def flat(surface: str = "dry_asphalt", size_m=400.0, cell_m: float = 1.0, center=(0.0, 0.0), *,
         wetness: float | None = None, table: SurfaceTable | None = None) -> Terrain:
    """Level ground at height 0 of one surface; ``wetness`` None uses the surface's default."""
    nx, ny, ox, oy, cell = _grid(size_m, cell_m, center)
    return uniform_surface(np.zeros((ny, nx)), ox, oy, cell, surface, wetness, table)


def slope(percent: float, surface: str = "dry_asphalt", size_m=400.0, cell_m: float = 1.0,
          center=(0.0, 0.0), *, wetness: float | None = None, table: SurfaceTable | None = None) -> Terrain:
    """A plane rising along +x: ``height = percent / 100 * x`` (zero at x = 0), one surface.

    The bilinear interpolant is exact on a plane, so the gradient is ``(percent / 100, 0)`` everywhere
    inside the grid.
    """
    return with_grade(flat(surface, size_m, cell_m, center, wetness=wetness, table=table), percent)


def split(x0_m: float, surface_before: str, surface_after: str, size_m=400.0, cell_m: float = 1.0,
          center=(0.0, 0.0), *, wetness_before: float | None = None, wetness_after: float | None = None,
          table: SurfaceTable | None = None) -> Terrain:
    """Level ground with ``surface_before`` for x < x0_m and ``surface_after`` from x0_m on.

    The grid is shifted (by less than half a cell) so that x0_m lies half-way between two grid
    columns; the nearest-point surface lookup then switches exactly at x0_m.
    """
    x0 = _number("x0_m", x0_m)
    nx, ny, ox, oy, cell = _grid(size_m, cell_m, center)
    k = round((x0 - ox) / cell - 0.5)
    ox = x0 - (k + 0.5) * cell
    t = _table(table)
    before, after = t.surface_id(surface_before), t.surface_id(surface_after)
    w_before = _wetness("wetness_before", wetness_before, float(t.records.default_wetness[before]))
    w_after = _wetness("wetness_after", wetness_after, float(t.records.default_wetness[after]))
    is_after = (ox + cell * np.arange(nx)) >= x0
    sid = np.broadcast_to(np.where(is_after, after, before).astype(np.int32), (ny, nx)).copy()
    wet = np.broadcast_to(np.where(is_after, w_after, w_before), (ny, nx)).copy()
    return Terrain(np.zeros((ny, nx)), sid, wet, ox, oy, cell, table=table)


# --------------------------------------------------------------------------- noise
@njit(cache=True, nogil=True)
def _fade(t):
    """Perlin's quintic fade 6t^5 - 15t^4 + 10t^3 (C2 at lattice lines)."""
    return t * t * t * (t * (t * 6.0 - 15.0) + 10.0)


@njit(cache=True, nogil=True)
def _smootherstep(t):
    """``_fade`` of ``t`` clipped to [0, 1] (as ``numpy.clip``: ``max`` then ``min`` by comparison)."""
    t = t if t > 0.0 else 0.0
    return _fade(t if t < 1.0 else 1.0)


@njit(cache=True, nogil=True)
def _column_terms(u):
    """Per grid column of lattice coordinate ``u``: the lattice column ``floor(u)``, the fraction ``f``
    inside it, ``f - 1`` and the quintic fade of ``f`` (the same arithmetic as per point)."""
    lattice = np.empty(u.size, np.int64)
    frac = np.empty(u.size)
    frac_m1 = np.empty(u.size)
    fade = np.empty(u.size)
    for i in range(u.size):
        lattice[i] = int(math.floor(u[i]))
        f = u[i] - lattice[i]
        frac[i] = f
        frac_m1[i] = f - 1.0
        fade[i] = _fade(f)
    return lattice, frac, frac_m1, fade


@njit(cache=True, nogil=True)
def _gradients(angle):
    """The unit lattice gradients ``(cos angle, sin angle)``, the C library's cosine and sine (the same on every
    CPU, where numpy's loops differ between AVX-512 and other machines)."""
    gx, gy = np.empty(angle.shape), np.empty(angle.shape)
    for j in range(angle.shape[0]):
        for i in range(angle.shape[1]):
            gx[j, i] = math.cos(angle[j, i])
            gy[j, i] = math.sin(angle[j, i])
    return gx, gy


@njit(cache=True, nogil=True)
def _perlin_on_grid(gx, gy, u, v, amplitude, out):
    """Adds ``amplitude`` times the gradient noise at every grid point (u[i], v[j]) (lattice units) to
    ``out``, from the lattice gradients (gx, gy)[row, col]: the four corners' dot products
    ``gx (u - col) + gy (v - row)`` blended with the quintic fade ``6t^5 - 15t^4 + 10t^3``.

    One thread, no GIL (a background thread can run it while Python steps an environment). What depends
    on the column only (lattice column, fraction, fade) is computed once per column; the corners' ``gx (u -
    col)`` products and their ``gy`` once per lattice row (the grid rows between two lattice lines share
    them), laid out per grid column, so every grid row is one loop over contiguous arrays that the compiler
    vectorises. Every point adds the same rounded products in the same order as a direct evaluation: the
    values are bit for bit those of the per-point formula."""
    lattice, frac, frac_m1, fade = _column_terms(u)
    nx = u.size
    x00, x10, x01, x11 = np.empty(nx), np.empty(nx), np.empty(nx), np.empty(nx)  # gx (u - col) per corner
    y00, y10, y01, y11 = np.empty(nx), np.empty(nx), np.empty(nx), np.empty(nx)  # gy per corner
    lattice_row = -1
    for j in range(v.size):
        jv = int(math.floor(v[j]))
        fv = v[j] - jv
        fv_m1 = fv - 1.0
        sv = _fade(fv)
        if jv != lattice_row:
            lattice_row = jv
            _corner_terms(gx[jv], gx[jv + 1], gy[jv], gy[jv + 1], lattice, frac, frac_m1, x00, x10, x01, x11,
                          y00, y10, y01, y11)
        row = out[j]
        for i in range(nx):
            n00 = x00[i] + y00[i] * fv
            n10 = x10[i] + y10[i] * fv
            n01 = x01[i] + y01[i] * fv_m1
            n11 = x11[i] + y11[i] * fv_m1
            a = n00 + fade[i] * (n10 - n00)
            b = n01 + fade[i] * (n11 - n01)
            row[i] += amplitude * (a + sv * (b - a))


@njit(cache=True, nogil=True, inline="always")
def _corner_terms(gx_low, gx_high, gy_low, gy_high, lattice, frac, frac_m1, x00, x10, x01, x11, y00, y10, y01,
                  y11):
    """Per grid column of one lattice row: the four corners' ``gx (u - col)`` products and ``gy`` values (the
    low and high lattice lines' gradients, ``_perlin_on_grid``)."""
    for i in range(lattice.size):
        c = lattice[i]
        x00[i] = gx_low[c] * frac[i]
        x10[i] = gx_low[c + 1] * frac_m1[i]
        x01[i] = gx_high[c] * frac[i]
        x11[i] = gx_high[c + 1] * frac_m1[i]
        y00[i] = gy_low[c]
        y10[i] = gy_low[c + 1]
        y01[i] = gy_high[c]
        y11[i] = gy_high[c + 1]


@njit(cache=True, nogil=True)
def _fractal_noise(rng, x, y, wavelengths, amplitudes, cell, out):
    """Adds the octaves of 2-D gradient (Perlin) noise to ``out`` (ny, nx) on the grid ``x`` (nx,) by ``y``
    (ny,): octave n has random unit gradients on a lattice of spacing ``wavelengths[n]`` (offset by a uniform
    fraction of a lattice cell on each axis) and amplitude ``amplitudes[n]``. Octaves shorter than two cells
    are not resolved: the first such octave after the first ends the sum.

    ``rng`` is a ``numpy.random.Generator``: the kernel draws from it what numpy's methods draw, in the same
    order (per octave the two offsets, then the lattice angles row by row), so the noise is a function of the
    generator's state alone, computed without the GIL."""
    for n in range(wavelengths.size):
        wavelength = wavelengths[n]
        if n > 0 and wavelength < 2.0 * cell:
            break
        offset = rng.uniform(0.0, 1.0, 2)
        u = (x - x[0]) / wavelength + offset[0]
        v = (y - y[0]) / wavelength + offset[1]
        angle = rng.uniform(0.0, 2.0 * np.pi, (int(math.floor(v[-1])) + 2, int(math.floor(u[-1])) + 2))
        gx, gy = _gradients(angle)
        _perlin_on_grid(gx, gy, u, v, amplitudes[n], out)


@njit(cache=True, nogil=True)
def _term(values, i, squared):
    return values[i] * values[i] if squared else values[i]


@njit(cache=True, nogil=True)
def _block_sum(values, lo, n, squared):
    """numpy's sum of at most 128 contiguous values (``_pairwise_sum``): below 8 values one after the other,
    else eight interleaved partial sums added pairwise, then the remaining values."""
    if n < 8:
        total = 0.0
        for i in range(lo, lo + n):
            total += _term(values, i, squared)
        return total
    r0, r1, r2, r3 = _term(values, lo, squared), _term(values, lo + 1, squared), _term(values, lo + 2, squared), \
        _term(values, lo + 3, squared)
    r4, r5, r6, r7 = _term(values, lo + 4, squared), _term(values, lo + 5, squared), \
        _term(values, lo + 6, squared), _term(values, lo + 7, squared)
    i = lo + 8
    while i < lo + n - n % 8:
        r0 += _term(values, i, squared)
        r1 += _term(values, i + 1, squared)
        r2 += _term(values, i + 2, squared)
        r3 += _term(values, i + 3, squared)
        r4 += _term(values, i + 4, squared)
        r5 += _term(values, i + 5, squared)
        r6 += _term(values, i + 6, squared)
        r7 += _term(values, i + 7, squared)
        i += 8
    total = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
    for k in range(i, lo + n):
        total += _term(values, k, squared)
    return total


@njit(cache=True, nogil=True)
def _pairwise_sum(values, lo, n, squared):
    """The sum of ``values[lo:lo + n]`` (of their squares when ``squared``) as numpy adds a contiguous
    float64 array (``numpy.sum``, ``numpy.mean``), so the result is numpy's bit for bit: a stretch of more
    than 128 values is the sum of its two halves (the first half's length rounded down to a multiple of 8),
    a shorter one ``_block_sum``. numpy recurses; this walks the same tree with a stack (a cached recursive
    kernel is not safe to load)."""
    start = np.empty(64, np.int64)  # per level of the walk: the stretch, and the left half's sum once known
    length = np.empty(64, np.int64)
    left = np.full(64, np.nan)
    right_pending = np.zeros(64, np.bool_)
    top = 0
    start[0], length[0] = lo, n
    while True:
        m = length[top]
        if m > 128:  # descend into the left half
            half = m // 2
            half -= half % 8
            right_pending[top] = True
            top += 1
            start[top], length[top] = start[top - 1], half
            continue
        value = _block_sum(values, start[top], m, squared)
        while True:  # hand the value up: start the right half of a stretch, or finish the stretch
            top -= 1
            if top < 0:
                return value
            half = length[top] // 2
            half -= half % 8
            if right_pending[top]:
                right_pending[top] = False
                left[top] = value
                top += 1
                start[top], length[top] = start[top - 1] + half, length[top - 1] - half
                break
            value = left[top] + value


@njit(cache=True, nogil=True)
def _count_below(ascending, value, or_equal):
    """How many of the ``ascending`` values are below ``value`` (also those equal to it when ``or_equal``):
    ``numpy.searchsorted(ascending, value, side="right" if or_equal else "left")``, by bisection."""
    lo, hi = 0, ascending.size
    while lo < hi:
        mid = (lo + hi) // 2
        if ascending[mid] < value or (or_equal and ascending[mid] == value):
            lo = mid + 1
        else:
            hi = mid
    return lo


@njit(cache=True, nogil=True)
def _flatten_spawn(height, x, y, sx, sy, radius, blend, cell):
    """``height = (height - level) * smootherstep((r - radius) / blend)`` in place, r the distance from (sx,
    sy) and ``level`` the mean height within ``radius`` (the nearest grid point's without one): level around
    the spawn point, blending into the hills over ``blend`` m.

    Beyond ``radius + blend`` the fade is exactly 1, so the distances and the fade are computed only in the
    window of grid points within ``radius + blend`` (plus two cells) of the spawn point on either axis (the
    values of the whole-grid formula, bit for bit); the points within ``radius`` are met in row-major order
    and their mean is numpy's (``_pairwise_sum``)."""
    reach = radius + blend + 2.0 * cell
    i0, i1 = _count_below(x, sx - reach, False), _count_below(x, sx + reach, True)
    j0, j1 = _count_below(y, sy - reach, False), _count_below(y, sy + reach, True)
    inside = np.empty((j1 - j0) * (i1 - i0))
    count = 0
    for j in range(j0, j1):
        for i in range(i0, i1):
            if math.hypot(x[i] - sx, y[j] - sy) <= radius:
                inside[count] = height[j, i]
                count += 1
    if count > 0:
        level = _pairwise_sum(inside, 0, count, False) / count
    else:  # no grid point within the radius: the nearest one's height, and the fade over the whole grid
        nearest, best = 0, math.inf
        for j in range(y.size):
            for i in range(x.size):
                r = math.hypot(x[i] - sx, y[j] - sy)
                if r < best:
                    nearest, best = j * x.size + i, r
        level = height.ravel()[nearest]
        i0, i1, j0, j1 = 0, x.size, 0, y.size
    for j in range(y.size):
        row = height[j]
        for i in range(x.size):
            row[i] -= level
    for j in range(j0, j1):
        row = height[j]
        for i in range(i0, i1):
            row[i] *= _smootherstep((math.hypot(x[i] - sx, y[j] - sy) - radius) / blend)


@njit(cache=True, nogil=True)
def _rough_height(rng, x, y, wavelengths, amplitudes, cell, sx, sy, radius, blend, roughness):
    """The heights of ``rough`` (ny, nx): the octaves (``_fractal_noise``), the flat spawn area
    (``_flatten_spawn``), then scaled to the RMS height ``roughness`` (RMS about z = 0 over the grid, the mean
    square numpy's). One call without the GIL."""
    height = np.zeros((y.size, x.size))
    _fractal_noise(rng, x, y, wavelengths, amplitudes, cell, height)
    _flatten_spawn(height, x, y, sx, sy, radius, blend, cell)
    flat = height.ravel()
    rms = math.sqrt(_pairwise_sum(flat, 0, flat.size, True) / flat.size)
    scale = roughness / rms if rms > 0.0 else 0.0
    for p in range(flat.size):
        flat[p] *= scale
    return height


def rough(seed: int, roughness_m: float, size_m=200.0, cell_m: float = 0.5, surface: str = "grass",
          hill_wavelength_m: float = 40.0, bump_wavelength_m: float = 3.0, octaves: int = 5,
          persistence: float = 0.5, *, flat_radius_m: float = 5.0, flat_blend_m: float = 10.0,
          spawn_xy=(0.0, 0.0), center=(0.0, 0.0), wetness: float | None = None,
          table: SurfaceTable | None = None) -> Terrain:
    """Fractal rough ground from gradient noise, with a flat spawn area, one surface.

    ``octaves`` layers of gradient noise with wavelengths from ``hill_wavelength_m`` down to
    ``bump_wavelength_m`` (geometric steps) and amplitudes ``persistence**o``, drawn from
    ``numpy.random.default_rng(seed)``. Within ``flat_radius_m`` of ``spawn_xy`` the ground is level at
    height 0; over the next ``flat_blend_m`` it blends smoothly (C2 fade) into the hills. The result is
    scaled so that its RMS height (about z = 0, over the whole grid) equals ``roughness_m``; octaves
    shorter than two cells cannot be resolved by the grid and are left out; ``hill_wavelength_m`` must
    span at least ``MIN_FEATURE_CELLS`` (2) cells.
    """
    height, ox, oy, cell = rough_grid(seed, roughness_m, size_m, cell_m, hill_wavelength_m, bump_wavelength_m,
                                      octaves, persistence, flat_radius_m=flat_radius_m, flat_blend_m=flat_blend_m,
                                      spawn_xy=spawn_xy, center=center)
    return uniform_surface(height, ox, oy, cell, surface, wetness, table)


def rough_grid(seed: int, roughness_m: float, size_m=200.0, cell_m: float = 0.5, hill_wavelength_m: float = 40.0,
               bump_wavelength_m: float = 3.0, octaves: int = 5, persistence: float = 0.5, *,
               flat_radius_m: float = 5.0, flat_blend_m: float = 10.0, spawn_xy=(0.0, 0.0), center=(0.0, 0.0)
               ) -> tuple[np.ndarray, float, float, float]:
    """The heights of :func:`rough` without its surface maps, for a caller that brings its own
    (``patch_maps``): ``(height_m (ny, nx), origin_x_m, origin_y_m, cell_m)``, the same arguments."""
    plan = rough_plan(size_m, cell_m, hill_wavelength_m, bump_wavelength_m, octaves, persistence,
                      flat_radius_m=flat_radius_m, flat_blend_m=flat_blend_m, center=center)
    return plan.heights(seed, roughness_m, spawn_xy)


@dataclass(frozen=True)
class RoughPlan:
    """The checked grid and octaves of :func:`rough_grid` (``rough_plan``), for drawing many episodes' heights
    on one grid without checking them again: ``heights(seed, roughness_m, spawn_xy)`` is ``rough_grid`` with
    the plan's other arguments, bit for bit."""

    x: np.ndarray
    y: np.ndarray
    origin_x_m: float
    origin_y_m: float
    cell_m: float
    wavelengths: np.ndarray
    amplitudes: np.ndarray
    flat_radius_m: float
    flat_blend_m: float

    def heights(self, seed: int, roughness_m: float, spawn_xy=(0.0, 0.0)) -> tuple[np.ndarray, float, float, float]:
        """``(height_m (ny, nx), origin_x_m, origin_y_m, cell_m)`` of ``rough_grid`` for ``seed``, ``roughness_m``
        and ``spawn_xy``."""
        seed = _seed("seed", seed)
        roughness = _number("roughness_m", roughness_m, 0.0, 1e3)
        sx, sy = _pair("spawn_xy", spawn_xy)
        height = _rough_height(np.random.default_rng(seed), self.x, self.y, self.wavelengths, self.amplitudes,
                               self.cell_m, sx, sy, self.flat_radius_m, self.flat_blend_m, roughness)
        return height, self.origin_x_m, self.origin_y_m, self.cell_m


def rough_plan(size_m=200.0, cell_m: float = 0.5, hill_wavelength_m: float = 40.0, bump_wavelength_m: float = 3.0,
               octaves: int = 5, persistence: float = 0.5, *, flat_radius_m: float = 5.0, flat_blend_m: float = 10.0,
               center=(0.0, 0.0)) -> RoughPlan:
    """The arguments of :func:`rough_grid` that do not change from episode to episode, checked once."""
    nx, ny, ox, oy, cell = _grid(size_m, cell_m, center)
    hill = _feature("hill_wavelength_m", hill_wavelength_m, cell)
    bump = _number("bump_wavelength_m", bump_wavelength_m, 0.0, hill, lo_inclusive=False)
    if isinstance(octaves, bool) or not isinstance(octaves, (int, np.integer)) or not 1 <= octaves <= 16:
        raise ValueError(f"octaves must be an integer in [1, 16], got {octaves!r}")
    persistence = _number("persistence", persistence, 0.0, 2.0, lo_inclusive=False)
    radius = _number("flat_radius_m", flat_radius_m, 0.0, 1e5)
    blend = _number("flat_blend_m", flat_blend_m, 0.0, 1e5, lo_inclusive=False)
    ratio = (bump / hill) ** (1.0 / (octaves - 1)) if octaves > 1 else 1.0
    wavelengths = [hill * ratio**o for o in range(octaves)]
    amplitudes = [persistence**o for o in range(octaves)]
    return RoughPlan(ox + cell * np.arange(nx), oy + cell * np.arange(ny), ox, oy, cell, np.array(wavelengths),
                     np.array(amplitudes), radius, blend)


# --------------------------------------------------------------------------- surface maps
@njit(cache=True, nogil=True)
def _root(parent, r):
    """The root of run ``r`` in the union-find forest ``parent`` (compressing the path)."""
    root = r
    while parent[root] != root:
        root = parent[root]
    while parent[r] != root:
        parent[r], r = root, parent[r]
    return root


@njit(cache=True, nogil=True)
def _label_runs(ids):
    """Connected regions (4-neighbour) of equal id, as runs: ``(first, start, stop, number, count)``.

    Each row ``j`` is cut into runs of equal id, runs ``first[j]`` to ``first[j + 1] - 1``, the run ``r``
    covering columns ``start[r]`` to ``stop[r] - 1``; a run joins (union-find) the runs of the row above that
    share a column and its id. ``number[r]`` is its region's number, regions numbered in the order of their
    first grid point in row-major order (the number a flood fill started at each unlabelled point in
    row-major order gives it); ``count`` regions."""
    ny, nx = ids.shape
    start = np.empty(ny * nx, np.int64)
    stop = np.empty(ny * nx, np.int64)
    parent = np.empty(ny * nx, np.int64)
    first = np.empty(ny + 1, np.int64)
    n = 0
    for j in range(ny):
        first[j] = n
        row = ids[j]
        start[n] = 0
        n += 1
        for i in range(1, nx):  # a run starts where the id changes: written always, kept when it changes
            start[n] = i
            n += row[i] != row[i - 1]
        for r in range(first[j], n):
            stop[r] = start[r + 1] if r + 1 < n else nx
            parent[r] = r
        if j > 0:
            a, b = first[j - 1], first[j]
            while a < first[j] and b < n:
                if start[a] < stop[b] and start[b] < stop[a] and ids[j - 1, start[a]] == ids[j, start[b]]:
                    ra, rb = _root(parent, a), _root(parent, b)
                    if ra != rb:
                        parent[max(ra, rb)] = min(ra, rb)
                ahead = stop[a] <= stop[b]  # the run that ends first gives way (branch-free: either is likely)
                a += ahead
                b += 1 - ahead
    first[ny] = n
    root_number = np.full(n, -1, np.int64)
    number = np.empty(n, np.int64)
    count = 0
    for r in range(n):
        root = _root(parent, r)
        if root_number[root] < 0:
            root_number[root] = count
            count += 1
        number[r] = root_number[root]
    return first, start[:n], stop[:n], number, count


@njit(cache=True, nogil=True)
def _fill_runs(values, first, start, stop, number, out):
    """``out[j, start[r]:stop[r]] = values[number[r]]`` for every run ``r`` of row ``j`` (``_label_runs``):
    a value per region, written run by run."""
    for j in range(out.shape[0]):
        for r in range(first[j], first[j + 1]):
            out[j, start[r]:stop[r]] = values[number[r]]


def _generator(rng) -> np.random.Generator:
    if isinstance(rng, np.random.Generator):
        return rng
    if isinstance(rng, (int, np.integer)) and not isinstance(rng, bool):
        return np.random.default_rng(_seed("rng", rng))
    raise ValueError(f"rng must be a numpy.random.Generator or an integer seed, got {rng!r}")


def _weights(surfaces, table: SurfaceTable) -> tuple[np.ndarray, np.ndarray]:
    if isinstance(surfaces, Mapping):
        names, weights = list(surfaces), [_number(f"weight of {n!r}", w, 0.0) for n, w in surfaces.items()]
    elif isinstance(surfaces, Sequence) and not isinstance(surfaces, str):
        names, weights = list(surfaces), [1.0] * len(surfaces)
    else:
        raise ValueError(f"surfaces must be a dict {{name: weight}} or a list of names, got {surfaces!r}")
    if not names:
        raise ValueError("surfaces must name at least one surface")
    if len(set(names)) != len(names):
        raise ValueError(f"surfaces names a surface twice: {names}")
    weights = np.asarray(weights)
    if weights.sum() <= 0.0:
        raise ValueError("surface weights must sum to > 0")
    return table.surface_ids(names), weights / weights.sum()


def _cut_at_quantiles(noise: np.ndarray, ids: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Surface ids by rank of ``noise``: the lowest ``weights[0]`` share of the points gets ``ids[0]``, the
    next ``weights[1]`` share ``ids[1]``, and so on (int32, the shape of ``noise``; ``_assign_by_rank``)."""
    flat = np.ascontiguousarray(noise, dtype=np.float64).ravel()
    out = np.empty(flat.size, np.int32)
    _assign_by_rank(flat, _quantile_ends(weights, flat.size), np.asarray(ids, dtype=np.int32), out)
    return out.reshape(noise.shape)


def _quantile_ends(weights: np.ndarray, points: int) -> np.ndarray:
    """How many of ``points`` lie below each cut between the groups of ``weights`` (shares summing to 1)."""
    return np.rint(np.cumsum(weights[:-1]) * points).astype(np.int64)


@njit(cache=True, nogil=True)
def _assign_by_rank(values, ends, ids, out):
    """``out[p]``: the id of the group of ``values[p]`` by rank, ``ends[k]`` values below the k-th cut
    (``_quantile_ends``). The cut values are the order statistics at the group boundaries
    (``_order_statistics``, linear time); a value takes the first group whose cut value is not below it. For
    distinct values this is exactly the assignment by rank."""
    last = np.empty(ends.size, np.int64)  # the rank of the highest value of each group
    for k in range(ends.size):
        last[k] = min(max(ends[k] - 1, 0), values.size - 1)
    cuts = _order_statistics(values, last)
    for k in range(ends.size):
        if ends[k] <= 0:  # an empty first group takes no value
            cuts[k] = -np.inf
    _assign_groups(values, cuts, ids, out)


ORDER_BINS = 4096
"""Bins of the histogram by which ``_order_statistics`` narrows each rank down to one bin."""
ORDER_SAMPLE = 4096
"""About this many values, evenly strided, set the histogram's range (``_order_statistics``)."""


@njit(cache=True, nogil=True)
def _value_range(values, stride):
    """(smallest, largest) of ``values[::stride]``."""
    low, high = values[0], values[0]
    for p in range(0, values.size, stride):
        v = values[p]
        low = v if v < low else low
        high = v if v > high else high
    return low, high


@njit(cache=True, nogil=True)
def _order_statistics(values, ranks):
    """The ``ranks[k]``-th smallest of the finite ``values`` (0 = the smallest) for each k: what
    ``numpy.partition(values, ranks)[ranks]`` gives, in a few linear passes without the GIL.

    A histogram of ``ORDER_BINS`` equal bins between the smallest and the largest of about ``ORDER_SAMPLE``
    evenly strided values (all values when those are equal), the values beyond them in the end bins, names
    the bin that holds each rank and the rank inside it; one more pass gathers the values of those bins,
    and each bin's values alone are sorted. The bin ``floor(clip((v - low) * scale, 0, ORDER_BINS - 1))``
    never decreases as v grows, so every value of a bin is at most every value of the next: the range only
    sets how evenly the values spread over the bins, never the result."""
    out = np.empty(ranks.size)
    if ranks.size == 0:
        return out
    low, high = _value_range(values, max(1, values.size // ORDER_SAMPLE))
    if not high > low:
        low, high = _value_range(values, 1)
    span = high - low
    if not span < math.inf:  # values so far apart that their difference overflows: sort them all
        return np.sort(values)[ranks]
    scale = (ORDER_BINS - 1) / span if span > 0.0 else 0.0  # 0: all values equal, one bin
    top = ORDER_BINS - 1.0
    bins = np.empty(values.size, np.int32)
    for p in range(values.size):  # (a loop of its own: the compiler vectorises it)
        t = (values[p] - low) * scale
        t = t if t > 0.0 else 0.0
        bins[p] = int(t if t < top else top)
    counts = np.zeros(ORDER_BINS + 1, np.int64)
    for p in range(values.size):
        counts[bins[p] + 1] += 1
    for b in range(ORDER_BINS):
        counts[b + 1] += counts[b]  # counts[b]: values below bin b
    # the bins holding the ranks, each gathered once into its own stretch of ``members``
    offset = np.full(ORDER_BINS, -1, np.int64)
    size = 0
    for k in range(ranks.size):
        b = np.searchsorted(counts, ranks[k], side="right") - 1
        if offset[b] < 0:
            offset[b] = size
            size += counts[b + 1] - counts[b]
    members = np.empty(size)
    filled = offset.copy()
    for p in range(values.size):
        at = filled[bins[p]]
        if at >= 0:
            members[at] = values[p]
            filled[bins[p]] = at + 1
    for b in range(ORDER_BINS):
        if offset[b] >= 0:
            members[offset[b]:filled[b]].sort()
    for k in range(ranks.size):
        b = np.searchsorted(counts, ranks[k], side="right") - 1
        out[k] = members[offset[b] + ranks[k] - counts[b]]
    return out


@njit(cache=True, nogil=True)
def _assign_groups(values, cuts, ids, out):
    """``out[p] = ids[number of cuts below values[p]]``: for the ascending ``cuts``, the group
    ``numpy.searchsorted(cuts, value, side="left")`` names, without the GIL. The count runs one cut at a
    time over all values (a branch-free loop the compiler vectorises)."""
    group = np.zeros(values.size, np.int32)
    for cut in cuts:
        for p in range(values.size):
            group[p] += cut < values[p]
    for p in range(values.size):
        out[p] = ids[group[p]]


def with_patches(terrain: Terrain, rng, surfaces, scale_m: float = 20.0,
                 wetness_range: tuple[float, float] | None = (0.0, 1.0)) -> Terrain:
    """A copy of ``terrain`` with its surface map replaced by patches of ``surfaces``.

    ``surfaces`` is ``{name: weight}`` or a list of names (equal weights). A smooth noise field
    (features about ``scale_m`` across) is cut at its quantiles, so the surfaces cover the grid
    points in proportion to the weights. Each connected patch gets one wetness drawn uniformly from
    ``wetness_range``; ``None`` keeps each surface's ``default_wetness`` (note that ``wet_asphalt`` and
    ``wet_grass`` differ from their dry twins only by that default). ``rng`` is a
    ``numpy.random.Generator`` or an integer seed; ``scale_m`` spans at least ``MIN_FEATURE_CELLS`` (2)
    grid cells. Heights are unchanged.
    """
    sid, wet = patch_maps(terrain.x_m, terrain.y_m, terrain.cell_m, terrain.surfaces, rng, surfaces, scale_m,
                          wetness_range)
    return Terrain._unchecked(terrain.height_m.copy(), sid, wet, terrain.origin_x_m, terrain.origin_y_m,
                              terrain.cell_m, terrain.table)


def patch_maps(x_m: np.ndarray, y_m: np.ndarray, cell_m: float, table: SurfaceTable, rng, surfaces,
               scale_m: float = 20.0, wetness_range: tuple[float, float] | None = (0.0, 1.0)
               ) -> tuple[np.ndarray, np.ndarray]:
    """The surface-id (int32) and wetness (float64) maps of :func:`with_patches` on the grid with columns
    ``x_m`` and rows ``y_m`` (m), ``table`` the surface table the ids index: the patches without a terrain,
    drawn from ``rng`` alone (the heights play no part), so they can be drawn beside the heights."""
    rng = _generator(rng)
    return patch_plan(x_m, y_m, cell_m, table, surfaces, scale_m, wetness_range).maps(rng)


@dataclass(frozen=True)
class PatchPlan:
    """The checked arguments of :func:`patch_maps` but its generator (``patch_plan``), for drawing many
    episodes' patches on one grid and surface mix without checking them again: ``maps(rng)`` is
    ``patch_maps`` with the plan's other arguments, bit for bit."""

    x: np.ndarray
    y: np.ndarray
    cell_m: float
    wavelengths: np.ndarray
    amplitudes: np.ndarray
    ends: np.ndarray
    ids: np.ndarray
    draw_wetness: bool
    wetness_low: float
    wetness_high: float
    default_wetness: np.ndarray

    def maps(self, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        """The surface-id and wetness maps drawn from ``rng`` (a ``numpy.random.Generator``)."""
        if not isinstance(rng, np.random.Generator):
            raise ValueError(f"rng must be a numpy.random.Generator, got {rng!r}")
        return _patch_maps(rng, self.x, self.y, self.wavelengths, self.amplitudes, self.cell_m, self.ends, self.ids,
                           self.draw_wetness, self.wetness_low, self.wetness_high, self.default_wetness)


def patch_plan(x_m: np.ndarray, y_m: np.ndarray, cell_m: float, table: SurfaceTable, surfaces,
               scale_m: float = 20.0, wetness_range: tuple[float, float] | None = (0.0, 1.0)) -> PatchPlan:
    """The arguments of :func:`patch_maps` but its generator, checked once."""
    scale = _feature("scale_m", scale_m, cell_m)
    ids, weights = _weights(surfaces, table)
    if wetness_range is not None:
        if len(wetness_range) != 2:
            raise ValueError(f"wetness_range must be (low, high), got {wetness_range!r}")
        lo = _number("wetness_range[0]", wetness_range[0], 0.0, 1.0)
        hi = _number("wetness_range[1]", wetness_range[1], lo, 1.0)
    else:
        lo = hi = 0.0
    x = np.ascontiguousarray(x_m, dtype=np.float64)
    y = np.ascontiguousarray(y_m, dtype=np.float64)
    return PatchPlan(x, y, float(cell_m), np.array([2.0 * scale, scale, 0.5 * scale]), np.array([1.0, 0.5, 0.25]),
                     _quantile_ends(weights, x.size * y.size), np.asarray(ids, dtype=np.int32),
                     wetness_range is not None, lo, hi,
                     np.ascontiguousarray(table.records.default_wetness, dtype=np.float64))


@njit(cache=True, nogil=True)
def _patch_maps(rng, x, y, wavelengths, amplitudes, cell, ends, ids, draw_wetness, wet_lo, wet_hi,
                default_wetness):
    """The maps of ``patch_maps`` in one call without the GIL: the smooth noise (``_fractal_noise``) cut at
    its quantiles (``_assign_by_rank``); then one wetness per connected patch drawn from ``rng`` uniformly in
    [wet_lo, wet_hi] (patches numbered in row-major order of their first point, ``_label_runs``), or without
    ``draw_wetness`` each surface's ``default_wetness``."""
    noise = np.zeros((y.size, x.size))
    _fractal_noise(rng, x, y, wavelengths, amplitudes, cell, noise)
    sid = np.empty((y.size, x.size), np.int32)
    _assign_by_rank(noise.ravel(), ends, ids, sid.ravel())
    wet = np.empty(sid.shape)
    if draw_wetness:
        first, start, stop, number, count = _label_runs(sid)
        _fill_runs(rng.uniform(wet_lo, wet_hi, count), first, start, stop, number, wet)
    else:
        for j in range(sid.shape[0]):
            for i in range(sid.shape[1]):
                wet[j, i] = default_wetness[sid[j, i]]
    return sid, wet


def _points_in_polygon(x: np.ndarray, y: np.ndarray, poly: np.ndarray) -> np.ndarray:
    """Even-odd rule for the grid points x (nx,) by y (ny,) -> bool (ny, nx)."""
    X, Y = np.meshgrid(x, y)
    inside = np.zeros(X.shape, dtype=bool)
    px, py = poly[:, 0], poly[:, 1]
    for k in range(len(poly)):
        x1, y1, x2, y2 = px[k], py[k], px[k - 1], py[k - 1]
        if y1 == y2:
            continue
        crosses = (y1 > Y) != (y2 > Y)
        x_cross = x1 + (Y - y1) * (x2 - x1) / (y2 - y1)
        inside ^= crosses & (X < x_cross)
    return inside


def with_polygons(terrain: Terrain, polygons) -> Terrain:
    """A copy of ``terrain`` with polygons painted on its surface map.

    ``polygons`` is a list of ``(polygon_xy, surface)`` or ``(polygon_xy, surface, wetness)``;
    ``polygon_xy`` is a sequence of at least 3 world (x, y) vertices (closed implicitly). Grid points
    inside a polygon (even-odd rule) get its surface and wetness (``None``: the surface's default);
    later polygons paint over earlier ones.
    """
    out = terrain.copy()
    table = terrain.surfaces
    x, y = terrain.x_m, terrain.y_m
    for n, item in enumerate(polygons):
        if not isinstance(item, (tuple, list)) or len(item) not in (2, 3):
            raise ValueError(f"polygon {n} must be (polygon_xy, surface) or (polygon_xy, surface, wetness)")
        poly = np.asarray(item[0], dtype=np.float64)
        if poly.ndim != 2 or poly.shape[1] != 2 or poly.shape[0] < 3 or not np.isfinite(poly).all():
            raise ValueError(f"polygon {n}: polygon_xy must be >= 3 finite (x, y) vertices, got shape "
                             f"{poly.shape}")
        sid = table.surface_id(item[1])
        w = _wetness(f"polygon {n} wetness", item[2] if len(item) == 3 else None,
                     float(table.records.default_wetness[sid]))
        # only the grid points inside the polygon's bounding box
        i0, i1 = np.searchsorted(x, poly[:, 0].min()), np.searchsorted(x, poly[:, 0].max(), side="right")
        j0, j1 = np.searchsorted(y, poly[:, 1].min()), np.searchsorted(y, poly[:, 1].max(), side="right")
        if i1 <= i0 or j1 <= j0:
            continue
        inside = _points_in_polygon(x[i0:i1], y[j0:j1], poly)
        out.surface_id[j0:j1, i0:i1][inside] = sid
        out.wetness[j0:j1, i0:i1][inside] = w
    return out


def with_wetness(terrain: Terrain, wetness) -> Terrain:
    """A copy of ``terrain`` with its wetness set to a number or an (ny, nx) array in 0..1."""
    wet = np.broadcast_to(np.asarray(wetness, dtype=np.float64), terrain.shape).copy()
    return Terrain(terrain.height_m.copy(), terrain.surface_id.copy(), wet, terrain.origin_x_m,
                   terrain.origin_y_m, terrain.cell_m, table=terrain.table)


def with_grade(terrain: Terrain, percent: float, direction_rad: float = 0.0, through_xy=(0.0, 0.0)) -> Terrain:
    """A copy of ``terrain`` tilted by a plane: heights plus ``percent / 100`` times the distance along
    the direction of ascent ``direction_rad`` (from +x, counter-clockwise), zero at ``through_xy``.

    The plane is exact under the bilinear interpolation, so on level ground the gradient is
    ``percent / 100 (cos d, sin d)`` everywhere inside the grid; on rough ground it adds to the bumps.
    """
    return Terrain._unchecked(graded_height(terrain, percent, direction_rad, through_xy), terrain.surface_id.copy(),
                              terrain.wetness.copy(), terrain.origin_x_m, terrain.origin_y_m, terrain.cell_m,
                              terrain.table)


def graded_height(terrain: Terrain, percent: float, direction_rad: float = 0.0, through_xy=(0.0, 0.0)
                  ) -> np.ndarray:
    """The heights of ``with_grade`` (a new array; the terrain is unchanged), for a caller that keeps the
    terrain's surface maps or replaces them."""
    grade = _number("percent", percent, -1000.0, 1000.0) / 100.0
    direction = _number("direction_rad", direction_rad)
    x0, y0 = (_number("through_xy[0]", through_xy[0]), _number("through_xy[1]", through_xy[1]))
    out = np.empty(terrain.shape)
    _add_plane(terrain.height_m, terrain.origin_x_m, terrain.origin_y_m, terrain.cell_m, grade, math.cos(direction),
               math.sin(direction), x0, y0, out)
    return out


@njit(cache=True, nogil=True)
def _add_plane(height, origin_x, origin_y, cell, grade, cos_d, sin_d, x0, y0, out):
    """``out[j, i] = height[j, i] + grade (cos_d x_i + sin_d y_j)`` with x_i = origin_x + cell i - x0 and y_j =
    origin_y + cell j - y0: the plane of ``with_grade``, rounded as its array expression rounds it."""
    ny, nx = height.shape
    cx = np.empty(nx)
    for i in range(nx):
        cx[i] = cos_d * (origin_x + cell * i - x0)
    for j in range(ny):
        sy = sin_d * (origin_y + cell * j - y0)
        for i in range(nx):
            out[j, i] = height[j, i] + grade * (cx[i] + sy)


# --------------------------------------------------------------------------- files
def to_file(terrain: Terrain, path: str | Path) -> Path:
    """Save a terrain to ``path`` (compressed ``.npz``; written exactly there) and return the path.

    The file holds the arrays, origin and cell, and the names of the surfaces used, with ids that
    index those names, so the terrain loads correctly into a table of another order.
    """
    path = Path(path)
    used = np.unique(terrain.surface_id)
    local = np.searchsorted(used, terrain.surface_id).astype(np.int32)
    names = np.array([terrain.surfaces.names[i] for i in used], dtype=str)
    with open(path, "wb") as f:
        np.savez_compressed(
            f, format=np.array(FILE_FORMAT), height_m=terrain.height_m, surface_id=local,
            wetness=terrain.wetness, origin_xy_m=np.array([terrain.origin_x_m, terrain.origin_y_m]),
            cell_m=np.array(terrain.cell_m), surface_names=names,
        )
    return path


def from_file(path: str | Path, table: SurfaceTable | None = None) -> Terrain:
    """Load a terrain saved by :func:`to_file`, mapping its surface names to ids of ``table``."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"terrain file {path} does not exist")
    with np.load(path, allow_pickle=False) as data:
        required = ("height_m", "surface_id", "wetness", "origin_xy_m", "cell_m", "surface_names")
        missing = [k for k in required if k not in data.files]
        if missing:
            raise ValueError(f"{path}: not a terrain file (missing {', '.join(missing)})")
        t = _table(table)
        names = [str(n) for n in data["surface_names"]]
        unknown = [n for n in names if n not in t]
        if unknown:
            raise ValueError(f"{path}: surfaces {unknown} are not in the surface table "
                             f"({', '.join(t.names)}); pass a table that has them")
        remap = np.array([t.surface_id(n) for n in names], dtype=np.int32)
        local = data["surface_id"]
        if local.size and (local.min() < 0 or local.max() >= len(names)):
            raise ValueError(f"{path}: surface ids outside the {len(names)} stored surface names")
        origin = data["origin_xy_m"]
        return Terrain(data["height_m"], remap[local], data["wetness"], float(origin[0]), float(origin[1]),
                       float(data["cell_m"]), table=table)


# --------------------------------------------------------------------------- configs
_GRID_KEYS = ("size_m", "cell_m", "center")
_KIND_KEYS: dict[str, tuple[str, ...]] = {
    "flat": ("surface", "wetness", *_GRID_KEYS),
    "slope": ("percent", "surface", "wetness", *_GRID_KEYS),
    "split": ("x0_m", "surface_before", "surface_after", "wetness_before", "wetness_after", *_GRID_KEYS),
    "rough": ("roughness_m", "surface", "wetness", "hill_wavelength_m", "bump_wavelength_m", "octaves",
              "persistence", "flat_radius_m", "flat_blend_m", "spawn_xy", *_GRID_KEYS),
    "file": ("path",),
}
_REQUIRED: dict[str, tuple[str, ...]] = {
    "flat": (), "slope": ("percent",), "split": ("x0_m", "surface_before", "surface_after"),
    "rough": ("roughness_m",), "file": ("path",),
}
_COMMON_KEYS = ("kind", "seed", "patches", "polygons", "name", "description")
_PATCH_KEYS = ("surfaces", "scale_m", "wetness_range")
_POLYGON_KEYS = ("xy", "surface", "wetness")
TERRAIN_KINDS: tuple[str, ...] = tuple(_KIND_KEYS)
"""The ``kind`` values :func:`from_config` accepts."""


def _check_keys(where: str, given, allowed) -> None:
    unknown = [k for k in given if not str(k).startswith("_") and k not in allowed]
    if unknown:
        raise ValueError(f"{where}: unknown key {unknown[0]!r}; allowed keys: {', '.join(allowed)}")


def from_config(config: Mapping, *, seed: int | None = None, table: SurfaceTable | None = None,
                base_dir: str | Path | None = None) -> Terrain:
    """Build a terrain from a config dict (as read from JSON/YAML).

    ``kind`` is one of ``flat``, ``slope``, ``split``, ``rough``, ``file``; the other keys are the
    constructor's arguments of the same names (``center``/``spawn_xy`` as ``[x, y]``, ``size_m`` a
    number or ``[x, y]``). Any kind may add ``patches`` (``{"surfaces": {name: weight} or [names],
    "scale_m": .., "wetness_range": [lo, hi] or null}``, or just ``{name: weight}``) and ``polygons``
    (``[{"xy": [[x, y], ...], "surface": name, "wetness": w}]``), applied in that order. ``seed``
    (default 0) seeds the rough heights and, through ``default_rng([seed, 1])``, the patches; the
    ``seed`` argument overrides the config's, for per-episode randomisation. A relative ``path`` is
    read from ``base_dir`` (default: the working directory). Keys starting with ``_`` are comments.
    """
    if not isinstance(config, Mapping):
        raise ValueError(f"terrain config must be a dict, got {type(config).__name__}")
    kind = config.get("kind")
    if kind not in _KIND_KEYS:
        raise ValueError(f"terrain config: unknown kind {kind!r}; allowed kinds: {', '.join(_KIND_KEYS)}")
    allowed = _COMMON_KEYS + _KIND_KEYS[kind]
    _check_keys(f"terrain config (kind {kind!r})", config, allowed)
    for key in _REQUIRED[kind]:
        if key not in config:
            raise ValueError(f"terrain config (kind {kind!r}): missing key {key!r}")
    seed = _seed("seed", seed if seed is not None else config.get("seed", 0))
    args = {k: config[k] for k in _KIND_KEYS[kind] if k in config}
    for key in ("center", "spawn_xy", "size_m"):
        if isinstance(args.get(key), list):
            args[key] = tuple(args[key])

    if kind == "file":
        path = Path(args["path"])
        if not path.is_absolute() and base_dir is not None:
            path = Path(base_dir) / path
        terrain = from_file(path, table=table)
    elif kind == "flat":
        terrain = flat(**args, table=table)
    elif kind == "slope":
        terrain = slope(**args, table=table)
    elif kind == "split":
        terrain = split(**args, table=table)
    else:
        terrain = rough(seed, **args, table=table)

    patches = config.get("patches")
    if patches is not None:
        if not isinstance(patches, Mapping):
            raise ValueError("terrain config: 'patches' must be a dict")
        if "surfaces" in patches:
            _check_keys("terrain config 'patches'", patches, _PATCH_KEYS)
            options = dict(patches)
        else:
            weights = {k: v for k, v in patches.items() if not str(k).startswith("_")}
            unknown = [k for k in weights if k not in terrain.surfaces]
            if unknown:
                raise ValueError(
                    f"terrain config 'patches': unknown key {unknown[0]!r}; give {{surface: weight}} with "
                    f"known surfaces ({', '.join(terrain.surfaces.names)}) or the full form with keys: "
                    f"{', '.join(_PATCH_KEYS)}")
            options = {"surfaces": weights}
        wr = options.get("wetness_range", (0.0, 1.0))
        if wr is not None and (not isinstance(wr, Sequence) or isinstance(wr, str)):
            raise ValueError(
                f"terrain config 'patches': wetness_range must be [low, high] or null, got {wr!r}")
        terrain = with_patches(terrain, np.random.default_rng([seed, 1]), options["surfaces"],
                               scale_m=options.get("scale_m", 20.0),
                               wetness_range=None if wr is None else tuple(wr))

    polygons = config.get("polygons")
    if polygons is not None:
        if not isinstance(polygons, Sequence) or isinstance(polygons, str):
            raise ValueError("terrain config: 'polygons' must be a list of {xy, surface, wetness}")
        items = []
        for n, p in enumerate(polygons):
            if not isinstance(p, Mapping) or "xy" not in p or "surface" not in p:
                raise ValueError(f"terrain config: polygon {n} must be a dict with 'xy' and 'surface' "
                                 f"(and optional 'wetness')")
            _check_keys(f"terrain config polygon {n}", p, _POLYGON_KEYS)
            items.append((p["xy"], p["surface"], p.get("wetness")))
        terrain = with_polygons(terrain, items)
    return terrain
