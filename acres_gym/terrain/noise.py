"""Gradient noise for the terrain generators: Perlin noise on the grid and its fractal sum of octaves
(``_fractal_noise``), so that a seed gives the same terrain, bit for bit, on every machine (the generators'
sums walk numpy's pairwise summation tree: ``acres_gym.runtime.libm.pairwise_sum``)."""

from __future__ import annotations

import math

import numpy as np
from numba import njit


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
