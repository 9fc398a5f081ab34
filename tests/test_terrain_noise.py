"""The gradient-noise kernel against the per-point formula, bit for bit (the terrain of a seed must not change
when the kernel is made faster)."""

from __future__ import annotations

import numpy as np
import pytest

from acres_gym.terrain import generate


def _fade(t: np.ndarray) -> np.ndarray:
    return t * t * t * (t * (t * 6.0 - 15.0) + 10.0)


def _reference(gx, gy, u, v, amplitude, out) -> None:
    """The per-point formula of ``_perlin_on_grid``'s docstring in numpy (one rounding per operation, no
    fused multiply-add)."""
    iu = np.floor(u).astype(np.int64)
    jv = np.floor(v).astype(np.int64)
    fu, fv = u - iu, v - jv
    su, sv = _fade(fu)[None, :], _fade(fv)[:, None]
    j, i = jv[:, None], iu[None, :]
    fu, fv = fu[None, :], fv[:, None]
    n00 = gx[j, i] * fu + gy[j, i] * fv
    n10 = gx[j, i + 1] * (fu - 1.0) + gy[j, i + 1] * fv
    n01 = gx[j + 1, i] * fu + gy[j + 1, i] * (fv - 1.0)
    n11 = gx[j + 1, i + 1] * (fu - 1.0) + gy[j + 1, i + 1] * (fv - 1.0)
    a = n00 + su * (n10 - n00)
    b = n01 + su * (n11 - n01)
    out += amplitude * (a + sv * (b - a))


@pytest.mark.parametrize("wavelength_cells", [2.0, 3.3, 7.9, 8.0, 20.0, 40.0, 150.0])
def test_noise_kernel_equals_the_per_point_formula_bit_for_bit(wavelength_cells):
    rng = np.random.default_rng(int(wavelength_cells * 10))
    nx, ny = 301, 173
    u = np.arange(nx) / wavelength_cells + rng.uniform()
    v = np.arange(ny) / wavelength_cells + rng.uniform()
    angle = rng.uniform(0.0, 2.0 * np.pi, size=(int(v[-1]) + 2, int(u[-1]) + 2))
    gx, gy = np.cos(angle), np.sin(angle)
    start = rng.normal(size=(ny, nx))
    expected, got = start.copy(), start.copy()
    _reference(gx, gy, u, v, 0.37, expected)
    generate._perlin_on_grid(gx, gy, u, v, 0.37, got)
    assert np.array_equal(got, expected)
    assert not np.array_equal(got, start)
