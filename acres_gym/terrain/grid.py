"""The terrain grid: heights, surface ids and wetness on a regular grid, one terrain or a stack of them.

Grid point ``[j, i]`` is at world ``(origin_x_m + i cell_m, origin_y_m + j cell_m)`` (x east/forward,
y north/left, z up). Heights between grid points are bilinear; surface and wetness are those of the
nearest grid point. Outside the grid, heights clamp to the edge values (the terrain continues flat
at the edge height, gradient 0 across the edge) and surfaces/wetness are those of the nearest edge
point. The Python helpers here run the jitted lookups of :mod:`acres_gym.terrain.sampling` over arrays
of points.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from numba import njit

from acres_gym.terrain.sampling import sample_height
from acres_gym.terrain.surfaces import SurfaceTable, default_surfaces

MAX_GRID_POINTS = 64_000_000
"""Largest grid (points) a terrain may have (512 MB of heights); a guard against unit mistakes."""


@njit(cache=True)
def _sample_many(height, origin_x, origin_y, cell, xs, ys, out):
    for k in range(xs.size):
        out[k, 0], out[k, 1], out[k, 2] = sample_height(height, origin_x, origin_y, cell, xs[k], ys[k])


def _bilinear(height: np.ndarray, origin_x: float, origin_y: float, cell: float, x, y):
    """:func:`acres_gym.terrain.sampling.sample_height` over arrays of points -> (h, dh_dx, dh_dy)."""
    x, y = np.broadcast_arrays(np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64))
    out = np.empty((x.size, 3))
    _sample_many(np.ascontiguousarray(height, dtype=np.float64), float(origin_x), float(origin_y), float(cell),
                 np.ascontiguousarray(x).ravel(), np.ascontiguousarray(y).ravel(), out)
    return tuple(out[:, k].reshape(x.shape) for k in range(3))


def _nearest(f, n):
    f = np.asarray(f, dtype=np.float64) + 0.5
    f = np.where(f >= 0.0, f, 0.0)  # also NaN -> 0
    return np.minimum(np.minimum(f, n - 0.5).astype(np.int64), n - 1)


def _scalar_or_array(v, scalar: bool):
    return v[()].item() if scalar else v


@dataclass(eq=False, repr=False)
class Terrain:
    """A height map with a surface and a wetness per grid point.

    ``height_m`` (ny, nx) float64 heights, m; ``surface_id`` (ny, nx) int32 ids into the surface table;
    ``wetness`` (ny, nx) float64 in 0..1; ``origin_x_m``, ``origin_y_m`` world position of grid point
    ``[0, 0]``; ``cell_m`` grid spacing, m; ``table`` the :class:`SurfaceTable` the ids refer to
    (``None``: the default table). Arrays are converted to contiguous arrays of those dtypes.
    """

    height_m: np.ndarray
    surface_id: np.ndarray
    wetness: np.ndarray
    origin_x_m: float = 0.0
    origin_y_m: float = 0.0
    cell_m: float = 1.0
    table: SurfaceTable | None = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        self.height_m = np.ascontiguousarray(self.height_m, dtype=np.float64)
        sid = np.asarray(self.surface_id)
        if sid.dtype.kind not in "iu":
            raise ValueError(f"surface_id must be an integer array, got dtype {sid.dtype}")
        self.wetness = np.ascontiguousarray(self.wetness, dtype=np.float64)
        if self.height_m.ndim != 2:
            raise ValueError(f"height_m must be 2-D (ny, nx), got shape {self.height_m.shape}")
        ny, nx = self.height_m.shape
        if ny < 2 or nx < 2:
            raise ValueError(f"height_m must have at least 2 x 2 points, got shape {self.height_m.shape}")
        if self.height_m.size > MAX_GRID_POINTS:
            raise ValueError(f"height_m has {self.height_m.size} points, more than {MAX_GRID_POINTS}")
        for name, arr in (("surface_id", sid), ("wetness", self.wetness)):
            if arr.shape != self.height_m.shape:
                raise ValueError(
                    f"{name} has shape {arr.shape}; it must match height_m {self.height_m.shape}")
        if not np.isfinite(self.height_m).all():
            raise ValueError("height_m must be finite (no NaN or inf)")
        if not ((self.wetness >= 0.0) & (self.wetness <= 1.0)).all():  # also catches NaN
            bad = self.wetness[~((self.wetness >= 0.0) & (self.wetness <= 1.0))][0]
            raise ValueError(f"wetness must be in [0, 1], found {bad}")
        n_surfaces = len(self.surfaces)
        if sid.min() < 0 or sid.max() >= n_surfaces:
            bad = sid.min() if sid.min() < 0 else sid.max()
            raise ValueError(f"surface_id contains {bad}; valid ids are 0..{n_surfaces - 1} "
                             f"({', '.join(self.surfaces.names)})")
        self.surface_id = np.ascontiguousarray(sid, dtype=np.int32)
        for name in ("origin_x_m", "origin_y_m", "cell_m"):
            value = float(getattr(self, name))
            if not math.isfinite(value):
                raise ValueError(f"{name} must be finite, got {value}")
            setattr(self, name, value)
        if self.cell_m <= 0.0:
            raise ValueError(f"cell_m must be > 0, got {self.cell_m}")

    @classmethod
    def _unchecked(cls, height_m: np.ndarray, surface_id: np.ndarray, wetness: np.ndarray, origin_x_m: float,
                   origin_y_m: float, cell_m: float, table: SurfaceTable | None) -> Terrain:
        """A terrain over arrays that satisfy every check of the constructor by construction (contiguous
        float64 heights, finite; int32 ids of ``table``; float64 wetness in 0..1; one shape), taken as they
        are: what the generators of :mod:`acres_gym.terrain.generate` build from checked arguments, where
        the constructor's checks would cost more than the drawing of a 300 m grid's surface map."""
        terrain = cls.__new__(cls)
        terrain.height_m, terrain.surface_id, terrain.wetness = height_m, surface_id, wetness
        terrain.origin_x_m, terrain.origin_y_m, terrain.cell_m = float(origin_x_m), float(origin_y_m), float(cell_m)
        terrain.table = table
        return terrain

    def __repr__(self) -> str:
        ny, nx = self.shape
        x0, x1, y0, y1 = self.extent
        return (f"Terrain({nx} x {ny} points, cell_m={self.cell_m:g}, x {x0:g}..{x1:g} m, "
                f"y {y0:g}..{y1:g} m)")

    # --- geometry
    @property
    def surfaces(self) -> SurfaceTable:
        """The surface table the ids refer to (the default table when ``table`` is None)."""
        return self.table if self.table is not None else default_surfaces()

    @property
    def shape(self) -> tuple[int, int]:
        """Grid shape (ny, nx)."""
        return self.height_m.shape

    @property
    def extent(self) -> tuple[float, float, float, float]:
        """World extent of the grid points: (x_min, x_max, y_min, y_max), m."""
        ny, nx = self.shape
        return (self.origin_x_m, self.origin_x_m + (nx - 1) * self.cell_m,
                self.origin_y_m, self.origin_y_m + (ny - 1) * self.cell_m)

    @property
    def x_m(self) -> np.ndarray:
        """World x of the grid columns, shape (nx,)."""
        return self.origin_x_m + self.cell_m * np.arange(self.shape[1])

    @property
    def y_m(self) -> np.ndarray:
        """World y of the grid rows, shape (ny,)."""
        return self.origin_y_m + self.cell_m * np.arange(self.shape[0])

    def grid_xy(self) -> tuple[np.ndarray, np.ndarray]:
        """World coordinates (X, Y) of every grid point, each of shape (ny, nx)."""
        return np.meshgrid(self.x_m, self.y_m)

    # --- lookups (vectorised; scalars in give Python scalars out)
    def height_at(self, x, y):
        """Bilinear height at world points (x, y), m; clamped to the edge values outside the grid."""
        scalar = np.ndim(x) == 0 and np.ndim(y) == 0
        h, _, _ = _bilinear(self.height_m, self.origin_x_m, self.origin_y_m, self.cell_m, x, y)
        return _scalar_or_array(h, scalar)

    def gradient_at(self, x, y):
        """Height gradient ``(dh_dx, dh_dy)`` of the bilinear surface at (x, y); 0 across a clamped edge."""
        scalar = np.ndim(x) == 0 and np.ndim(y) == 0
        _, gx, gy = _bilinear(self.height_m, self.origin_x_m, self.origin_y_m, self.cell_m, x, y)
        return _scalar_or_array(gx, scalar), _scalar_or_array(gy, scalar)

    def normal_at(self, x, y) -> np.ndarray:
        """Unit ground normals (z up) at (x, y): array of shape ``broadcast(x, y).shape + (3,)``."""
        _, gx, gy = _bilinear(self.height_m, self.origin_x_m, self.origin_y_m, self.cell_m, x, y)
        inv = 1.0 / np.sqrt(1.0 + gx * gx + gy * gy)
        return np.stack([-gx * inv, -gy * inv, inv], axis=-1)

    def _nearest_ij(self, x, y):
        x, y = np.broadcast_arrays(np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64))
        ny, nx = self.shape
        j = _nearest((y - self.origin_y_m) / self.cell_m, ny)
        i = _nearest((x - self.origin_x_m) / self.cell_m, nx)
        return j, i

    def surface_at(self, x, y, *, as_name: bool = False):
        """Surface of the nearest grid point to (x, y): ids (int32), or names with ``as_name=True``."""
        scalar = np.ndim(x) == 0 and np.ndim(y) == 0
        j, i = self._nearest_ij(x, y)
        ids = self.surface_id[j, i]
        if as_name:
            names = self.surfaces.names
            if scalar:
                return names[int(ids)]
            return np.asarray(names, dtype=object)[ids]
        return _scalar_or_array(ids, scalar)

    def wetness_at(self, x, y):
        """Wetness (0..1) of the nearest grid point to (x, y)."""
        scalar = np.ndim(x) == 0 and np.ndim(y) == 0
        j, i = self._nearest_ij(x, y)
        return _scalar_or_array(self.wetness[j, i], scalar)

    # --- utilities
    def copy(self) -> Terrain:
        """A deep copy (arrays copied, same surface table)."""
        return Terrain(self.height_m.copy(), self.surface_id.copy(), self.wetness.copy(),
                       self.origin_x_m, self.origin_y_m, self.cell_m, table=self.table)

    def describe(self) -> str:
        """A few printable lines: grid, extent, height and slope statistics, surface shares."""
        ny, nx = self.shape
        x0, x1, y0, y1 = self.extent
        h = self.height_m
        gy, gx = np.gradient(h, self.cell_m)
        slope = 100.0 * np.hypot(gx, gy)
        lines = [
            f"Terrain {nx} x {ny} points, cell {self.cell_m:g} m, x {x0:g}..{x1:g} m, y {y0:g}..{y1:g} m",
            f"  height: min {h.min():.3f} m, max {h.max():.3f} m, rms {np.sqrt(np.mean(h * h)):.3f} m; "
            f"slope: mean {slope.mean():.1f} %, max {slope.max():.1f} %",
        ]
        ids, counts = np.unique(self.surface_id, return_counts=True)
        names = self.surfaces.names
        for sid, count in zip(ids, counts, strict=True):
            w = self.wetness[self.surface_id == sid]
            lines.append(f"  {names[sid]:<16}{100.0 * count / h.size:6.1f} % of points, "
                         f"wetness {w.min():.2f}..{w.max():.2f}")
        return "\n".join(lines)


class TerrainStack:
    """K terrains of one grid shape stacked for a batch of vehicles (vehicle ``k`` uses terrain ``k``).

    Arrays: ``height_m`` (K, ny, nx) float64, ``surface_id`` (K, ny, nx) int32, ``wetness``
    (K, ny, nx) float64, ``origin_xy_m`` (K, 2) float64, ``cell_m`` (K,) float64. They are allocated
    once; :meth:`replace` writes a new terrain into slot ``k`` in place, so kernels holding the arrays
    see the change. All terrains share one surface table.
    """

    def __init__(self, height_m, surface_id, wetness, origin_xy_m, cell_m,
                 table: SurfaceTable | None = None) -> None:
        self.height_m = np.ascontiguousarray(height_m, dtype=np.float64)
        self.surface_id = np.ascontiguousarray(surface_id, dtype=np.int32)
        self.wetness = np.ascontiguousarray(wetness, dtype=np.float64)
        self.origin_xy_m = np.ascontiguousarray(origin_xy_m, dtype=np.float64)
        self.cell_m = np.ascontiguousarray(cell_m, dtype=np.float64)
        self.table = table
        k = self.height_m.shape[0] if self.height_m.ndim == 3 else -1
        if k < 1:
            raise ValueError(f"height_m must be (K, ny, nx) with K >= 1, got shape {self.height_m.shape}")
        for name in ("surface_id", "wetness"):
            if getattr(self, name).shape != self.height_m.shape:
                raise ValueError(f"{name} has shape {getattr(self, name).shape}; it must match height_m "
                                 f"{self.height_m.shape}")
        if self.origin_xy_m.shape != (k, 2):
            raise ValueError(f"origin_xy_m must have shape ({k}, 2), got {self.origin_xy_m.shape}")
        if self.cell_m.shape != (k,):
            raise ValueError(f"cell_m must have shape ({k},), got {self.cell_m.shape}")

    @classmethod
    def from_terrains(cls, terrains: Sequence[Terrain]) -> TerrainStack:
        """Stack terrains of equal grid shape and surface table (order = vehicle index)."""
        terrains = list(terrains)
        if not terrains:
            raise ValueError("from_terrains needs at least one terrain")
        first = terrains[0]
        for n, t in enumerate(terrains[1:], start=1):
            _check_compatible(first.shape, first.surfaces, t, f"terrain {n}", "terrain 0")
        return cls(
            np.stack([t.height_m for t in terrains]),
            np.stack([t.surface_id for t in terrains]),
            np.stack([t.wetness for t in terrains]),
            np.array([[t.origin_x_m, t.origin_y_m] for t in terrains]),
            np.array([t.cell_m for t in terrains]),
            table=first.table,
        )

    @classmethod
    def repeat(cls, terrain: Terrain, k: int) -> TerrainStack:
        """A stack of ``k`` copies of one terrain."""
        if k < 1:
            raise ValueError(f"k must be >= 1, got {k}")
        return cls.from_terrains([terrain] * int(k))

    def __len__(self) -> int:
        return self.height_m.shape[0]

    @property
    def shape(self) -> tuple[int, int]:
        """Grid shape (ny, nx) shared by all terrains."""
        return self.height_m.shape[1:]

    @property
    def surfaces(self) -> SurfaceTable:
        """The surface table the ids refer to."""
        return self.table if self.table is not None else default_surfaces()

    def _check_index(self, k: int) -> int:
        k = int(k)
        if not 0 <= k < len(self):
            raise IndexError(f"terrain index {k} outside 0..{len(self) - 1}")
        return k

    def replace(self, k: int, terrain: Terrain) -> None:
        """Write ``terrain`` into slot ``k`` in place (same grid shape and surface table required)."""
        k = self._check_index(k)
        _check_compatible(self.shape, self.surfaces, terrain, "the new terrain", "the stack")
        self.height_m[k] = terrain.height_m
        self.surface_id[k] = terrain.surface_id
        self.wetness[k] = terrain.wetness
        self.origin_xy_m[k, 0] = terrain.origin_x_m
        self.origin_xy_m[k, 1] = terrain.origin_y_m
        self.cell_m[k] = terrain.cell_m

    def ground(self, k: int) -> GroundView:
        """Terrain ``k``'s height grid as a :class:`GroundView` (no copy, no checks): its ``height_at`` and
        ``normal_at`` without the cost of a whole :class:`Terrain`."""
        k = self._check_index(k)
        return GroundView(self.height_m[k], float(self.origin_xy_m[k, 0]), float(self.origin_xy_m[k, 1]),
                          float(self.cell_m[k]))

    def terrain(self, k: int) -> Terrain:
        """Terrain ``k`` as a :class:`Terrain` (arrays copied)."""
        k = self._check_index(k)
        return Terrain(self.height_m[k].copy(), self.surface_id[k].copy(), self.wetness[k].copy(),
                       self.origin_xy_m[k, 0], self.origin_xy_m[k, 1], self.cell_m[k], table=self.table)


@dataclass
class GroundView:
    """A height grid viewed in place (``TerrainStack.ground``): :class:`Terrain`'s ``height_at``, ``gradient_at``
    and ``normal_at`` over it, by the same arithmetic."""

    height_m: np.ndarray
    origin_x_m: float
    origin_y_m: float
    cell_m: float

    height_at = Terrain.height_at
    gradient_at = Terrain.gradient_at
    normal_at = Terrain.normal_at


def _check_compatible(shape, table: SurfaceTable, terrain: Terrain, what: str, ref: str) -> None:
    if terrain.shape != tuple(shape):
        raise ValueError(f"{what} has grid shape {terrain.shape}; {ref} has {tuple(shape)}")
    if terrain.surfaces.names != table.names:
        raise ValueError(f"{what} uses a different surface table ({len(terrain.surfaces)} surfaces: "
                         f"{', '.join(terrain.surfaces.names)}) than {ref} ({', '.join(table.names)})")
