"""Grids and plain ground: the grid arguments every constructor checks (``grid_axes``; square grids by
default, ``size_m`` a number, or rectangular, ``size_m=(size_x, size_y)``, centred on ``center`` with
``ceil(size / cell) + 1`` points per side), flat ground, planes (``slope``, ``with_grade``), surface splits,
polygons of surface and the wetness map. A cell whose wetness is not given gets its surface's
``default_wetness``."""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from acres_gym.terrain.grid import MAX_GRID_POINTS, Terrain
from acres_gym.terrain.surfaces import SurfaceTable, default_surfaces

MIN_FEATURE_CELLS = 2.0
"""The shortest hill wavelength and patch scale, in grid cells: shorter noise is finer than the grid
resolves (the octave filter drops it) and its lattice of (extent / wavelength)^2 gradients would exhaust
memory (a 1e-6 m wavelength on a 300 m grid asks for 639 PiB)."""


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
