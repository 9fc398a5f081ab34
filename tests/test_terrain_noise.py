"""The gradient-noise kernel against the per-point formula, bit for bit (the terrain of a seed must not change
when the kernel is made faster)."""

from __future__ import annotations

import numpy as np
import pytest

from acres_gym.runtime import libm
from acres_gym.terrain import noise, patches, rough_ground, shapes


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
    noise._perlin_on_grid(gx, gy, u, v, 0.37, got)
    assert np.array_equal(got, expected)
    assert not np.array_equal(got, start)


def _flood_labels(ids: np.ndarray) -> tuple[np.ndarray, int]:
    """Connected regions of equal id by a flood fill from each unlabelled point in row-major order."""
    ny, nx = ids.shape
    labels = np.full((ny, nx), -1, np.int64)
    n = 0
    for j0 in range(ny):
        for i0 in range(nx):
            if labels[j0, i0] >= 0:
                continue
            labels[j0, i0] = n
            stack = [(j0, i0)]
            while stack:
                j, i = stack.pop()
                for qj, qi in ((j, i - 1), (j, i + 1), (j - 1, i), (j + 1, i)):
                    if 0 <= qj < ny and 0 <= qi < nx and labels[qj, qi] < 0 and ids[qj, qi] == ids[j0, i0]:
                        labels[qj, qi] = n
                        stack.append((qj, qi))
            n += 1
    return labels, n


def _label_patches(ids: np.ndarray) -> tuple[np.ndarray, int]:
    """The labelling's runs (``patches._label_runs``) written out per grid point: (labels, regions)."""
    first, start, stop, number, count = patches._label_runs(ids)
    labels = np.empty(ids.shape, np.int64)
    patches._fill_runs(np.arange(count), first, start, stop, number, labels)
    return labels, count


@pytest.mark.parametrize("seed", range(6))
def test_patch_labels_equal_a_row_major_flood_fill(seed):
    rng = np.random.default_rng(seed)
    shape = (int(rng.integers(1, 60)), int(rng.integers(1, 60)))
    kinds = int(rng.integers(1, 5))
    if seed % 2:  # noise-like: many small regions, spirals and U shapes met from either arm
        ids = rng.integers(0, kinds, size=shape).astype(np.int32)
    else:  # patch-like: smooth bands
        y, x = np.mgrid[0:shape[0], 0:shape[1]]
        ids = (np.floor(np.sin(x / 4.0 + seed) * 2 + np.cos(y / 3.0) * 2) % kinds).astype(np.int32)
    labels, count = _label_patches(ids)
    expected, expected_count = _flood_labels(ids)
    assert count == expected_count
    assert np.array_equal(labels, expected)


def test_patch_labels_of_a_u_shape_join_both_arms():
    ids = np.array([[1, 0, 1],
                    [1, 0, 1],
                    [1, 1, 1]], dtype=np.int32)
    labels, count = _label_patches(ids)
    assert count == 2
    assert np.array_equal(labels, [[0, 1, 0], [0, 1, 0], [0, 0, 0]])


@pytest.mark.parametrize("kind", ["normal", "ties", "constant", "spread", "outliers", "sample_constant"])
def test_order_statistics_equal_numpy_partition(kind):
    """The histogram selection of the patch cut gives numpy.partition's order statistics, ties included, also
    when the strided values that set the histogram's range miss the extremes or are all equal."""
    rng = np.random.default_rng(len(kind))
    for _ in range(300 if kind in ("normal", "ties", "constant", "spread") else 60):
        n = int(rng.integers(1, 500))
        if kind == "normal":
            values = rng.normal(size=n)
        elif kind == "ties":
            values = rng.integers(0, 4, size=n).astype(float)
        elif kind == "constant":
            values = np.full(n, -2.5)
        elif kind == "spread":  # magnitudes up to 1e307: a span beyond the largest float
            values = rng.normal(size=n) * 10.0 ** rng.integers(-300, 308, size=n)
        else:  # more values than patches.ORDER_SAMPLE: only every few-th sets the range
            n = int(rng.integers(2 * patches.ORDER_SAMPLE, 6 * patches.ORDER_SAMPLE))
            stride = n // patches.ORDER_SAMPLE
            values = rng.normal(size=n) if kind == "outliers" else np.zeros(n)
            off_sample = np.flatnonzero(np.arange(n) % stride != 0)
            picked = rng.choice(off_sample, size=min(20, off_sample.size), replace=False)
            values[picked] = rng.normal(size=picked.size) * 1e6  # the extremes, none of them strided
            assert stride > 1
        ranks = np.unique(rng.integers(0, n, size=int(rng.integers(0, 6)))).astype(np.int64)
        if kind != "normal" and n > 1 and rng.random() < 0.5:  # the extremes themselves
            ranks = np.unique(np.concatenate([ranks, [0, n - 1]])).astype(np.int64)
        got = patches._order_statistics(values, ranks)
        expected = np.partition(values, ranks)[ranks] if ranks.size else np.empty(0)
        assert np.array_equal(got, expected)


def test_generated_terrains_pass_the_terrain_checks():
    """The generators build their terrains without the constructor's checks (``Terrain._unchecked``): what
    they build must be what the checked constructor accepts, unchanged."""
    from acres_gym.terrain import Terrain, rough, with_grade, with_patches

    terrain = rough(3, 0.07, size_m=60, cell_m=1.0, surface="grass", hill_wavelength_m=20, bump_wavelength_m=2,
                    flat_radius_m=4, spawn_xy=(5.0, -3.0))
    terrain = with_grade(terrain, 12.0, 0.7, through_xy=(5.0, -3.0))
    for wetness_range in ((0.1, 0.6), None):
        built = with_patches(terrain, 4, {"grass": 2, "gravel": 1, "mud": 1}, 8.0, wetness_range)
        checked = Terrain(built.height_m, built.surface_id, built.wetness, built.origin_x_m, built.origin_y_m,
                          built.cell_m, table=built.table)
        for name in ("height_m", "surface_id", "wetness"):
            array = getattr(built, name)
            assert array.flags.c_contiguous and array.dtype == getattr(checked, name).dtype
            assert np.array_equal(array, getattr(checked, name))
        assert (built.origin_x_m, built.origin_y_m, built.cell_m) == (checked.origin_x_m, checked.origin_y_m,
                                                                        checked.cell_m)


@pytest.mark.parametrize("case", range(6))
def test_grade_kernel_equals_the_plane_expression_bit_for_bit(case):
    """``with_grade`` adds the plane in one jitted pass: the heights are those of the array expression
    ``height + grade (cos d x + sin d y)`` (x, y from the grid's origin, minus the point the plane passes through),
    and the surface maps are copies."""
    from acres_gym.terrain import graded_height, rough, with_grade

    rng = np.random.default_rng(case)
    terrain = rough(case, 0.2, size_m=float(rng.uniform(20, 120)), cell_m=float(rng.choice([0.5, 1.0, 2.0])),
                    surface="grass", hill_wavelength_m=10.0, bump_wavelength_m=2.0, spawn_xy=(1.0, -2.0))
    percent, direction = float(rng.uniform(-80, 80)), float(rng.uniform(-7, 7))
    through = (float(rng.uniform(-30, 30)), float(rng.uniform(-30, 30)))
    ny, nx = terrain.shape
    x = terrain.origin_x_m + terrain.cell_m * np.arange(nx) - through[0]
    y = terrain.origin_y_m + terrain.cell_m * np.arange(ny) - through[1]
    expected = terrain.height_m + percent / 100.0 * (np.cos(direction) * x[None, :] + np.sin(direction) * y[:, None])
    tilted = with_grade(terrain, percent, direction, through)
    assert np.array_equal(tilted.height_m, expected)
    assert np.array_equal(graded_height(terrain, percent, direction, through), expected)
    assert np.array_equal(tilted.surface_id, terrain.surface_id) and tilted.surface_id is not terrain.surface_id
    assert np.array_equal(tilted.wetness, terrain.wetness) and tilted.wetness is not terrain.wetness


def test_lattice_gradients_equal_numpy_cos_and_sin_bit_for_bit():
    """The noise's gradients are computed in the kernel module: the same values numpy's cos and sin give (a
    platform whose numpy uses other routines than libm would draw other terrains from a seed)."""
    angle = np.random.default_rng(2).uniform(0.0, 2.0 * np.pi, size=(400, 500))
    gx, gy = noise._gradients(angle)
    assert np.array_equal(gx, np.cos(angle)) and np.array_equal(gy, np.sin(angle))


@pytest.mark.parametrize("n", [1, 7, 8, 9, 127, 128, 129, 136, 1000, 90601, 250007])
def test_pairwise_sum_equals_numpy_sum_bit_for_bit(n):
    rng = np.random.default_rng(n)
    values = rng.normal(size=n + 3) * 10.0 ** rng.uniform(-3.0, 3.0, size=n + 3)
    for lo in (0, 3):
        part = values[lo:lo + n].copy()
        assert libm.pairwise_sum(values, lo, n, False) == np.sum(part)
        assert libm.pairwise_sum(values, lo, n, True) == np.sum(part * part)
    # numpy's own mean of a grid is what the roughness scaling divides
    grid = values[:n].reshape(1, n)
    assert libm.pairwise_sum(values, 0, n, True) / n == np.mean(grid * grid)


def _noise_numpy(rng, x, y, wavelengths, amplitudes, cell):
    """The octaves drawn with numpy's generator methods in Python (the kernels only for the lattice)."""
    total = np.zeros((y.size, x.size))
    for n, (wavelength, amplitude) in enumerate(zip(wavelengths, amplitudes, strict=True)):
        if n > 0 and wavelength < 2.0 * cell:
            break
        offset = rng.uniform(0.0, 1.0, size=2)
        u = (x - x[0]) / wavelength + offset[0]
        v = (y - y[0]) / wavelength + offset[1]
        angle = rng.uniform(0.0, 2.0 * np.pi, size=(int(np.floor(v[-1])) + 2, int(np.floor(u[-1])) + 2))
        gx, gy = noise._gradients(angle)
        noise._perlin_on_grid(gx, gy, u, v, float(amplitude), total)
    return total


def _rough_numpy(seed, roughness, x, y, wavelengths, amplitudes, cell, sx, sy, radius, blend):
    """``rough``'s heights as whole-grid numpy expressions: octaves, level spawn area, RMS scaling."""
    noise = _noise_numpy(np.random.default_rng(seed), x, y, wavelengths, amplitudes, cell)
    r = np.hypot(x[None, :] - sx, y[:, None] - sy)
    inside = r <= radius
    level = noise[inside].mean() if inside.any() else noise.flat[np.argmin(r)]
    height = (noise - level) * _fade(np.clip((r - radius) / blend, 0.0, 1.0))
    rms = np.sqrt(np.mean(height * height))
    return height * (roughness / rms if rms > 0.0 else 0.0)


@pytest.mark.parametrize("case", [
    # (size, cell, hill, bump, octaves, radius, blend, spawn, roughness)
    (300.0, 1.0, 40.0, 4.0, 5, 6.0, 10.0, (3.0, -2.0), 0.05),
    (120.0, 0.5, 25.0, 1.7, 6, 5.0, 4.0, (-58.0, 40.2), 0.2),   # spawn near a corner: the window clipped
    (80.0, 1.0, 12.0, 0.5, 7, 0.3, 2.0, (10.5, -7.5), 0.1),     # no grid point within the radius
    (60.0, 2.0, 30.0, 9.0, 3, 0.0, 6.0, (200.0, 0.0), 0.3),     # spawn off the grid
    (50.0, 1.0, 10.0, 3.0, 4, 8.0, 3.0, (0.0, 0.0), 0.0),       # no roughness
])
def test_rough_kernel_equals_the_whole_grid_numpy_formula_bit_for_bit(case):
    size, cell, hill, bump, octaves, radius, blend, spawn, roughness = case
    for seed in (1, 2024):
        got = rough_ground.rough(seed, roughness, size_m=size, cell_m=cell, hill_wavelength_m=hill,
                             bump_wavelength_m=bump, octaves=octaves, flat_radius_m=radius, flat_blend_m=blend,
                             spawn_xy=spawn)
        ratio = (bump / hill) ** (1.0 / (octaves - 1))
        expected = _rough_numpy(seed, roughness, got.x_m, got.y_m, [hill * ratio**o for o in range(octaves)],
                                [0.5**o for o in range(octaves)], cell, *spawn, radius, blend)
        assert got.height_m.tobytes() == expected.tobytes()
        if roughness > 0.0:
            assert np.sqrt(np.mean(got.height_m**2)) == pytest.approx(roughness, rel=1e-12)


@pytest.mark.parametrize("wetness_range", [None, (0.1, 0.6)])
def test_patch_maps_kernel_equals_numpy_draws_bit_for_bit(wetness_range):
    from acres_gym.terrain import default_surfaces

    table = default_surfaces()
    x, y = shapes.grid_axes(150.0, 1.0)
    surfaces = {"grass": 3.0, "gravel": 1.0, "packed_dirt": 1.5}
    for seed in (5, 77):
        sid, wet = patches.patch_maps(x, y, 1.0, table, seed, surfaces, 12.0, wetness_range)
        rng = np.random.default_rng(seed)
        noise = _noise_numpy(rng, x, y, [24.0, 12.0, 6.0], [1.0, 0.5, 0.25], 1.0)
        ids, weights = patches._weights(surfaces, table)
        expected_sid = patches._cut_at_quantiles(noise, ids, weights)
        assert np.array_equal(sid, expected_sid)
        if wetness_range is None:
            expected_wet = np.asarray(table.records.default_wetness, dtype=np.float64)[sid]
        else:
            labels, count = _flood_labels(sid)
            expected_wet = rng.uniform(*wetness_range, size=count)[labels]
        assert wet.tobytes() == expected_wet.tobytes()


def test_rough_grid_is_rough_without_its_surface_maps():
    kwargs = dict(size_m=90.0, cell_m=1.0, hill_wavelength_m=30.0, bump_wavelength_m=3.0, flat_radius_m=4.0,
                  spawn_xy=(5.0, -3.0), center=(2.0, 1.0))
    terrain = rough_ground.rough(11, 0.1, **kwargs)
    height, ox, oy, cell = rough_ground.rough_grid(11, 0.1, **kwargs)
    assert height.tobytes() == terrain.height_m.tobytes()
    assert (ox, oy, cell) == (terrain.origin_x_m, terrain.origin_y_m, terrain.cell_m)
    with pytest.raises(ValueError, match="roughness_m"):
        rough_ground.rough_grid(11, -1.0, **kwargs)
