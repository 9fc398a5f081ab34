"""Fractal rough ground: hills and bumps of gradient noise over a surface, with a flattened spawn area
(``rough``, ``rough_grid``; ``rough_plan`` checks the arguments once for many draws). Random terrains draw only
from the generator seeded by the caller (``numpy.random.default_rng(seed)``)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numba import njit

from acres_gym.runtime.libm import pairwise_sum
from acres_gym.terrain.grid import Terrain
from acres_gym.terrain.noise import (
    _count_below,
    _fractal_noise,
    _smootherstep,
)
from acres_gym.terrain.shapes import (
    _feature,
    _grid,
    _number,
    _pair,
    _seed,
    uniform_surface,
)
from acres_gym.terrain.surfaces import SurfaceTable


@njit(cache=True, nogil=True)
def _flatten_spawn(height, x, y, sx, sy, radius, blend, cell):
    """``height = (height - level) * smootherstep((r - radius) / blend)`` in place, r the distance from (sx,
    sy) and ``level`` the mean height within ``radius`` (the nearest grid point's without one): level around
    the spawn point, blending into the hills over ``blend`` m.

    Beyond ``radius + blend`` the fade is exactly 1, so the distances and the fade are computed only in the
    window of grid points within ``radius + blend`` (plus two cells) of the spawn point on either axis (the
    values of the whole-grid formula, bit for bit); the points within ``radius`` are met in row-major order
    and their mean is numpy's (``pairwise_sum``)."""
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
        level = pairwise_sum(inside, 0, count, False) / count
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
    rms = math.sqrt(pairwise_sum(flat, 0, flat.size, True) / flat.size)
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
