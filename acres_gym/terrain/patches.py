"""Surface patches: maps of surfaces and wetness drawn from gradient noise cut at the surfaces' weights
(``with_patches``, ``patch_maps``; ``patch_plan`` checks the arguments once for many draws), with the connected
regions of one surface labelled so each draws its own wetness."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from numba import njit

from acres_gym.terrain.grid import Terrain
from acres_gym.terrain.noise import (
    _fractal_noise,
)
from acres_gym.terrain.shapes import (
    _feature,
    _number,
    _seed,
)
from acres_gym.terrain.surfaces import SurfaceTable


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
