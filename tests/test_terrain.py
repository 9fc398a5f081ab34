"""Terrain grid, surface table, constructors and the jitted lookups."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from acres_gym.paths import config_path
from acres_gym.terrain import (
    SURFACE_DTYPE,
    Terrain,
    TerrainStack,
    flat,
    friction_coefficient,
    from_config,
    from_file,
    load_surface_table,
    make_surface_table,
    rough,
    sample_ground_k,
    sample_height,
    sample_height_k,
    sample_surface,
    slope,
    split,
    surface_friction,
    surface_id,
    surface_names,
    surface_normal,
    surface_row,
    surface_table,
    to_file,
    with_grade,
    with_patches,
    with_polygons,
    with_wetness,
)


def py(f):
    """The pure-Python body of a jitted function (itself when JIT is disabled)."""
    return getattr(f, "py_func", f)


def random_terrain(seed=0, shape=(7, 9), cell=0.7, origin=(-2.0, 1.5)):
    rng = np.random.default_rng(seed)
    n = len(surface_names())
    return Terrain(rng.normal(size=shape), rng.integers(0, n, size=shape), rng.uniform(size=shape),
                   origin[0], origin[1], cell)


def jit_height(t, x, y, f=sample_height):
    return f(t.height_m, t.origin_x_m, t.origin_y_m, t.cell_m, x, y)


# --------------------------------------------------------------------------- bilinear heights
def test_slope_plane_is_exact():
    t = slope(20.0, size_m=40.0, cell_m=1.0)
    rng = np.random.default_rng(1)
    x, y = rng.uniform(-19.9, 19.9, 200), rng.uniform(-19.9, 19.9, 200)
    np.testing.assert_allclose(t.height_at(x, y), 0.2 * x, atol=1e-12)
    gx, gy = t.gradient_at(x, y)
    np.testing.assert_allclose(gx, 0.2, atol=1e-12)
    np.testing.assert_allclose(gy, 0.0, atol=1e-12)
    np.testing.assert_allclose(t.normal_at(x, y), np.broadcast_to([-0.196116, 0.0, 0.980581], (200, 3)),
                               atol=1e-6)
    assert t.height_at(0.0, 5.0) == 0.0
    for xi, yi in zip(x[:20], y[:20], strict=True):
        h, dx, dy = jit_height(t, xi, yi)
        assert h == pytest.approx(0.2 * xi, abs=1e-12)
        assert (dx, dy) == pytest.approx((0.2, 0.0), abs=1e-12)
        assert surface_normal(dx, dy) == pytest.approx((-0.196116, 0.0, 0.980581), abs=1e-6)


def test_general_plane_is_exact():
    t = random_terrain()
    X, Y = t.grid_xy()
    t.height_m[:] = 0.3 * X - 0.7 * Y + 2.0
    rng = np.random.default_rng(2)
    x0, x1, y0, y1 = t.extent
    x, y = rng.uniform(x0, x1, 300), rng.uniform(y0, y1, 300)
    np.testing.assert_allclose(t.height_at(x, y), 0.3 * x - 0.7 * y + 2.0, atol=1e-12)
    gx, gy = t.gradient_at(x, y)
    np.testing.assert_allclose(gx, 0.3, atol=1e-12)
    np.testing.assert_allclose(gy, -0.7, atol=1e-12)


def test_interpolates_grid_points_and_is_continuous_across_cell_edges():
    t = random_terrain()
    X, Y = t.grid_xy()
    np.testing.assert_allclose(t.height_at(X, Y), t.height_m, atol=1e-12)
    eps = 1e-9
    rng = np.random.default_rng(3)
    ny, nx = t.shape
    for i in range(1, nx - 1):  # vertical cell edges
        xe = t.origin_x_m + i * t.cell_m
        y = rng.uniform(t.extent[2], t.extent[3], 5)
        assert np.abs(t.height_at(xe - eps, y) - t.height_at(xe + eps, y)).max() < 1e-7
    for j in range(1, ny - 1):  # horizontal cell edges
        ye = t.origin_y_m + j * t.cell_m
        x = rng.uniform(t.extent[0], t.extent[1], 5)
        assert np.abs(t.height_at(x, ye - eps) - t.height_at(x, ye + eps)).max() < 1e-7


def test_gradient_matches_finite_differences():
    t = random_terrain(seed=4)
    rng = np.random.default_rng(5)
    ny, nx = t.shape
    # points well inside cells, so a small central difference stays in one cell
    i = rng.integers(0, nx - 1, 200)
    j = rng.integers(0, ny - 1, 200)
    x = t.origin_x_m + (i + rng.uniform(0.1, 0.9, 200)) * t.cell_m
    y = t.origin_y_m + (j + rng.uniform(0.1, 0.9, 200)) * t.cell_m
    d = 1e-6
    fd_x = (t.height_at(x + d, y) - t.height_at(x - d, y)) / (2 * d)
    fd_y = (t.height_at(x, y + d) - t.height_at(x, y - d)) / (2 * d)
    gx, gy = t.gradient_at(x, y)
    np.testing.assert_allclose(gx, fd_x, atol=1e-6)
    np.testing.assert_allclose(gy, fd_y, atol=1e-6)


def test_jitted_lookups_equal_numpy_and_pure_python():
    t = random_terrain(seed=6)
    rng = np.random.default_rng(7)
    x0, x1, y0, y1 = t.extent
    x = np.concatenate([rng.uniform(x0 - 3, x1 + 3, 150), t.x_m, [x0, x1, x0 - 1, x1 + 1]])
    y = np.concatenate([rng.uniform(y0 - 3, y1 + 3, 150), np.resize(t.y_m, t.shape[1]), [y0, y1, y1, y0]])
    h = t.height_at(x, y)
    gx, gy = t.gradient_at(x, y)
    sid = t.surface_at(x, y)
    wet = t.wetness_at(x, y)
    for n in range(x.size):
        for hfun, sfun in ((sample_height, sample_surface), (py(sample_height), py(sample_surface))):
            expected = (h[n], gx[n], gy[n])
            assert jit_height(t, x[n], y[n], hfun) == pytest.approx(expected, rel=1e-13, abs=1e-13)
            assert sfun(t.surface_id, t.wetness, t.origin_x_m, t.origin_y_m, t.cell_m, x[n], y[n]) == (
                sid[n], wet[n])


def test_lookups_without_jit_in_a_fresh_process():
    script = textwrap.dedent("""
        import numpy as np
        from acres_gym.terrain import Terrain, sample_height, sample_surface, surface_friction, surface_table
        assert not hasattr(sample_height, "py_func")
        t = Terrain(np.arange(12.0).reshape(3, 4), np.zeros((3, 4), int), np.full((3, 4), 0.5), 1.0, 2.0, 0.5)
        h = sample_height(t.height_m, 1.0, 2.0, 0.5, 1.6, 2.3)
        assert np.allclose(h, (t.height_at(1.6, 2.3), *t.gradient_at(1.6, 2.3))), h
        assert sample_surface(t.surface_id, t.wetness, 1.0, 2.0, 0.5, 9.0, -9.0) == (0, 0.5)
        assert abs(surface_friction(surface_table(), 1, 1.0, 0.0) - surface_table().mu_wet[1]) < 1e-15
        print("ok")
    """)
    env = dict(os.environ, NUMBA_DISABLE_JIT="1")
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"


def test_batched_lookups_allocate_nothing_per_call_inside_a_kernel():
    script = textwrap.dedent("""
        from numba import njit
        from numba.core.runtime import rtsys
        from acres_gym.terrain import TerrainStack, rough, sample_ground_k, surface_friction, surface_table

        @njit
        def ticks(s_h, s_id, s_w, s_o, s_c, table, n):
            acc = 0.0
            for it in range(n):
                for k in range(s_h.shape[0]):
                    x = -30.0 + 0.01 * it
                    h, gx, gy, sid, w = sample_ground_k(s_h, s_id, s_w, s_o, s_c, k, x, 0.5 * x)
                    acc += h + gx + gy + surface_friction(table, sid, w, 2.0)
            return acc

        s = TerrainStack.from_terrains([rough(k, 0.3, size_m=40.0, cell_m=1.0) for k in range(3)])
        args = (s.height_m, s.surface_id, s.wetness, s.origin_xy_m, s.cell_m, surface_table())
        ticks(*args, 1)
        counts = []
        for n in (1, 5000):
            before = rtsys.get_allocation_stats().alloc
            ticks(*args, n)
            counts.append(rtsys.get_allocation_stats().alloc - before)
        assert counts[0] == counts[1], counts  # only the call's argument wrappers, not per tick
        print("ok")
    """)
    env = dict(os.environ, NUMBA_NRT_STATS="1")
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"


def test_outside_the_grid_heights_and_surfaces_clamp_to_the_edge():
    t = random_terrain(seed=8)
    x0, x1, y0, y1 = t.extent
    ys = t.y_m[1:-1] + 0.3 * t.cell_m
    # beyond the +x edge: the edge height, no x gradient, y gradient of the edge
    np.testing.assert_allclose(t.height_at(x1 + 5.0, ys), t.height_at(x1, ys), atol=1e-12)
    gx, gy = t.gradient_at(x1 + 5.0, ys)
    np.testing.assert_array_equal(gx, 0.0)
    np.testing.assert_allclose(gy, t.gradient_at(x1, ys)[1], atol=1e-12)
    # beyond a corner: the corner value, flat
    assert t.height_at(x0 - 100.0, y0 - 100.0) == t.height_m[0, 0]
    assert t.gradient_at(x0 - 100.0, y0 - 100.0) == (0.0, 0.0)
    assert t.height_at(np.inf, np.inf) == t.height_m[-1, -1]
    # surfaces and wetness of the nearest edge point
    assert t.surface_at(x0 - 50.0, t.y_m[2]) == t.surface_id[2, 0]
    assert t.wetness_at(t.x_m[3], y1 + 50.0) == t.wetness[-1, 3]
    assert t.surface_at(x1 + 1e6, y1 + 1e6, as_name=True) == surface_names()[t.surface_id[-1, -1]]
    # NaN positions give NaN heights (not a stray memory read) and a valid surface
    assert all(np.isnan(jit_height(t, np.nan, 0.0)))
    assert sample_surface(t.surface_id, t.wetness, t.origin_x_m, t.origin_y_m, t.cell_m, np.nan, 0.0)[0] == (
        t.surface_id[0, 0])
    assert np.isnan(t.height_at(np.nan, 1.0))


# --------------------------------------------------------------------------- constructors
def test_flat_and_slope_as_specified():
    t = flat("wet_asphalt", size_m=10.0, cell_m=0.5, center=(100.0, -20.0))
    assert t.shape == (21, 21)
    assert t.extent == (95.0, 105.0, -25.0, -15.0)
    assert (t.height_m == 0).all() and (t.surface_id == surface_id("wet_asphalt")).all()
    assert (t.wetness == 1.0).all()  # wet_asphalt's default wetness
    assert (flat(wetness=0.3, size_m=4.0).wetness == 0.3).all()
    s = slope(-8.0, "gravel", size_m=(60.0, 10.0), cell_m=2.0)
    assert s.shape == (6, 31)
    np.testing.assert_allclose(s.height_m, -0.08 * np.broadcast_to(s.x_m, s.shape), atol=1e-12)
    assert s.height_at(0.0, 0.0) == 0.0


def test_split_switches_surface_exactly_at_x0():
    t = split(3.3, "dry_asphalt", "ice", size_m=20.0, cell_m=1.0, wetness_after=0.4)
    assert (t.height_m == 0).all()
    ice, asphalt = surface_id("ice"), surface_id("dry_asphalt")
    x = np.array([-9.0, 3.3 - 1e-9, 3.3, 3.3 + 1e-9, 9.0])
    np.testing.assert_array_equal(t.surface_at(x, np.zeros(5)), [asphalt, asphalt, ice, ice, ice])
    np.testing.assert_array_equal(t.wetness_at(x, np.zeros(5)), [0.0, 0.0, 0.4, 0.4, 0.4])
    X, _ = t.grid_xy()
    assert ((t.surface_id == ice) == (X >= 3.3)).all()
    with pytest.raises(ValueError, match="unknown surface 'tarmac'"):
        split(0.0, "tarmac", "ice")


def test_rough_is_deterministic_by_seed_and_scales_with_roughness():
    kw = dict(size_m=60.0, cell_m=1.0)
    a = rough(3, 0.3, **kw)
    np.testing.assert_array_equal(a.height_m, rough(3, 0.3, **kw).height_m)
    assert not np.allclose(a.height_m, rough(4, 0.3, **kw).height_m)
    rms = lambda t: float(np.sqrt(np.mean(t.height_m**2)))  # noqa: E731
    assert rms(a) == pytest.approx(0.3, rel=1e-9)
    b = rough(3, 0.6, **kw)
    np.testing.assert_allclose(b.height_m, 2.0 * a.height_m, rtol=1e-12, atol=1e-15)
    assert (rough(3, 0.0, **kw).height_m == 0).all()
    # a level spawn area around the origin, blending into the hills
    r = np.hypot(*a.grid_xy())
    assert np.abs(a.height_m[r <= 5.0]).max() < 1e-12
    assert np.abs(a.height_m[r > 20.0]).max() > 0.1
    assert np.abs(a.height_at(0.7, -1.2)) < 1e-12 and a.gradient_at(0.7, -1.2) == (0.0, 0.0)
    assert (a.surface_id == surface_id("grass")).all()


def test_patches_cover_surfaces_in_proportion_and_wetness_per_patch():
    base = flat("grass", size_m=100.0, cell_m=1.0)
    t = with_patches(base, np.random.default_rng(0), {"grass": 3.0, "gravel": 1.0, "mud": 2.0},
                     scale_m=15.0, wetness_range=(0.2, 0.7))
    share = {n: np.mean(t.surface_id == surface_id(n)) for n in ("grass", "gravel", "mud")}
    assert share == pytest.approx({"grass": 0.5, "gravel": 1 / 6, "mud": 1 / 3}, abs=0.01)
    assert (t.wetness >= 0.2).all() and (t.wetness <= 0.7).all()
    # one wetness per connected patch: equal neighbours of equal surface
    same = t.surface_id[:, 1:] == t.surface_id[:, :-1]
    assert (t.wetness[:, 1:][same] == t.wetness[:, :-1][same]).all()
    same = t.surface_id[1:, :] == t.surface_id[:-1, :]
    assert (t.wetness[1:, :][same] == t.wetness[:-1, :][same]).all()
    assert len(np.unique(t.wetness)) > 3  # several patches
    # same seed, same map; the heights are untouched
    again = with_patches(base, 0, {"grass": 3.0, "gravel": 1.0, "mud": 2.0}, scale_m=15.0,
                         wetness_range=(0.2, 0.7))
    np.testing.assert_array_equal(t.surface_id, again.surface_id)
    np.testing.assert_array_equal(t.wetness, again.wetness)
    # a list means equal weights; wetness_range None keeps the surfaces' defaults
    d = with_patches(base, 1, ["dry_asphalt", "wet_asphalt"], wetness_range=None)
    assert np.mean(d.surface_id == surface_id("wet_asphalt")) == pytest.approx(0.5, abs=0.01)
    np.testing.assert_array_equal(d.wetness, (d.surface_id == surface_id("wet_asphalt")).astype(float))


def test_polygons_and_wetness():
    t = with_polygons(flat("grass", size_m=20.0), [
        ([(-2.5, -2.5), (2.5, -2.5), (2.5, 2.5), (-2.5, 2.5)], "ice", 0.5),
        ([(-0.5, -0.5), (5.5, -0.5), (-0.5, 5.5)], "mud"),
    ])
    assert t.surface_at(-1.0, -1.0, as_name=True) == "ice" and t.wetness_at(-1.0, -1.0) == 0.5
    assert t.surface_at(1.0, 1.0, as_name=True) == "mud"  # painted over
    assert t.wetness_at(1.0, 1.0) == surface_row("mud").default_wetness
    assert t.surface_at(-5.0, 5.0, as_name=True) == "grass"
    assert np.sum(t.surface_id == surface_id("ice")) == 25 - 9  # 5 x 5 points, 9 taken by the triangle
    assert (with_wetness(t, 0.25).wetness == 0.25).all()
    with pytest.raises(ValueError, match="polygon 0"):
        with_polygons(t, [([(0, 0), (1, 1)], "ice")])


# --------------------------------------------------------------------------- surface table
def test_surface_table_ids_and_names_round_trip():
    table, names = surface_table(), surface_names()
    assert table.dtype == SURFACE_DTYPE
    assert len(table) == len(names) == len(set(names))
    assert names[:8] == ("dry_asphalt", "wet_asphalt", "gravel", "grass", "wet_grass", "ice", "packed_dirt",
                         "mud")
    for i, n in enumerate(names):
        assert surface_id(n) == i
        assert surface_row(n) == table[i]
    soil = table.is_soil.astype(bool)
    assert not soil[:8].any() and (soil[8:] if soil.size > 8 else np.array([True])).all()
    assert not table.flags.writeable
    wet, dry = surface_row("wet_asphalt"), surface_row("dry_asphalt")
    assert wet.default_wetness == 1.0 and dry.default_wetness == 0.0
    assert friction_coefficient("wet_asphalt", wet.default_wetness) == dry.mu_wet
    with pytest.raises(ValueError, match="unknown surface 'lava'.*dry_asphalt"):
        surface_id("lava")


def test_every_surface_value_has_unit_and_source():
    with open(config_path("surfaces.json")) as f:
        surfaces = json.load(f)["surfaces"]
    for name, entry in surfaces.items():
        for key, leaf in entry.items():
            if key == "base":
                continue
            assert set(leaf) == {"value", "unit", "source"}, (name, key)
            assert leaf["source"].strip(), (name, key)


def test_friction_model():
    table = surface_table()
    g = surface_row("grass")
    # peak between dry and wet, film loss half at film_speed, none when dry
    assert friction_coefficient("grass", 0.5) == pytest.approx(0.5 * (g.mu_dry + g.mu_wet))
    half = g.mu_wet * (1 - g.film_loss / 2)
    assert friction_coefficient("grass", 1.0, g.film_speed_mps) == pytest.approx(half)
    assert friction_coefficient("grass", 0.0, 30.0) == g.mu_dry
    for sid in range(len(table)):
        for w, v in ((0.0, 0.0), (0.3, 2.0), (1.0, -40.0)):
            assert surface_friction(table, sid, w, v) == pytest.approx(
                friction_coefficient(table[sid], w, v), rel=1e-14)


def test_make_surface_table_adds_surfaces_and_soils(tmp_path):
    t = make_surface_table({
        "rubber_mat": {"mu_dry": {"value": 0.9, "unit": "1", "source": "test"}, "mu_wet": 0.6},
        "slick_grass": {"base": "grass", "mu_wet": 0.1},
        "sand_pit": {"n": 1.1, "kc": 0.99, "kphi": 1528.43, "cohesion": 1.04, "friction_angle": 28,
                     "shear_modulus": {"value": 2.5, "unit": "cm", "source": "test"}},
    })
    assert t.names[:len(surface_names())] == surface_names()
    assert t.names[-3:] == ("rubber_mat", "slick_grass", "sand_pit")
    mat, slick, pit = t.row("rubber_mat"), t.row("slick_grass"), t.row("sand_pit")
    assert (mat.is_soil, mat.mu_dry, mat.mu_wet, mat.rolling_resistance_scale) == (0, 0.9, 0.6, 1.0)
    assert slick.mu_wet == 0.1 and slick.mu_dry == surface_row("grass").mu_dry
    assert pit.is_soil == 1
    assert (pit.soil_kc, pit.soil_kphi, pit.soil_cohesion_pa) == pytest.approx((990.0, 1528430.0, 1040.0))
    assert pit.soil_shear_modulus_m == pytest.approx(0.025)
    assert pit.mu_dry == pytest.approx(np.tan(np.radians(28)))
    with pytest.raises(ValueError, match="unknown field 'mu_drry'"):
        make_surface_table({"x": {"mu_drry": 0.5, "mu_wet": 0.3}})
    with pytest.raises(ValueError, match="film_loss = 1.5 outside"):
        make_surface_table({"x": {"mu_dry": 0.5, "mu_wet": 0.3, "film_loss": 1.5}})
    with pytest.raises(ValueError, match="missing key 'kphi'"):
        make_surface_table({"x": {"n": 1.0, "kc": 1.0}})


def test_soils_file_is_converted_to_si_and_may_be_absent(tmp_path):
    soils = {"_about": "test", "soils": {"test_sand": {
        "n": {"value": 0.79, "unit": "1", "source": "s"},
        "kc": {"value": 102, "unit": "kN/m^(n+1)", "source": "s"},
        "kphi": {"value": 5301, "unit": "kN/m^(n+2)", "source": "s"},
        "cohesion": {"value": 1.3, "unit": "kPa", "source": "s"},
        "friction_angle": {"value": 31.1, "unit": "deg", "source": "s"},
        "shear_modulus": {"value": 0.012, "unit": "m", "source": "s"},
        "moisture": {"value": None, "unit": "%", "source": "s"},
    }}}
    path = tmp_path / "soils.json"
    path.write_text(json.dumps(soils))
    t = load_surface_table(soils_path=path)
    hard = t.names.index("test_sand")
    assert t.names[:hard] == surface_names()[:hard] and not t.records.is_soil[:hard].any()
    r = t.row("test_sand")
    assert (r.is_soil, r.soil_n, r.soil_kc, r.soil_kphi, r.soil_cohesion_pa, r.soil_friction_deg,
            r.soil_shear_modulus_m) == pytest.approx((1, 0.79, 102e3, 5301e3, 1.3e3, 31.1, 0.012))
    only_hard = load_surface_table(soils_path=tmp_path / "absent.json")
    assert not only_hard.records.is_soil.any() and "dry_asphalt" in only_hard
    soils["soils"]["test_sand"]["kc"]["unit"] = "lbf/in"
    path.write_text(json.dumps(soils))
    with pytest.raises(ValueError, match="'kc' has unit 'lbf/in'"):
        load_surface_table(soils_path=path)


# --------------------------------------------------------------------------- validation, files, stacks
def test_terrain_validation_names_the_field():
    z = np.zeros((3, 3))
    ids = np.zeros((3, 3), np.int32)
    with pytest.raises(ValueError, match="wetness has shape"):
        Terrain(z, ids, np.zeros((3, 4)))
    with pytest.raises(ValueError, match="at least 2 x 2"):
        Terrain(np.zeros((1, 3)), np.zeros((1, 3), int), np.zeros((1, 3)))
    with pytest.raises(ValueError, match="height_m must be finite"):
        Terrain(np.full((3, 3), np.nan), ids, z)
    with pytest.raises(ValueError, match="wetness must be in"):
        Terrain(z, ids, np.full((3, 3), 1.5))
    with pytest.raises(ValueError, match="surface_id contains 999"):
        Terrain(z, np.full((3, 3), 999), z)
    with pytest.raises(ValueError, match="cell_m must be > 0"):
        Terrain(z, ids, z, cell_m=0.0)
    with pytest.raises(ValueError, match="surface_id must be an integer"):
        Terrain(z, z, z)
    assert "Terrain 3 x 3 points" in Terrain(z, ids, z).describe()


def test_file_round_trip_keeps_surface_names(tmp_path):
    t = with_patches(rough(1, 0.2, size_m=30.0, cell_m=1.0), 2, ["gravel", "ice", "grass"])
    path = to_file(t, tmp_path / "t.npz")
    back = from_file(path)
    for name in ("height_m", "surface_id", "wetness"):
        np.testing.assert_array_equal(getattr(back, name), getattr(t, name))
    assert (back.origin_x_m, back.origin_y_m, back.cell_m) == (t.origin_x_m, t.origin_y_m, t.cell_m)
    # ids follow the names into a table of another order
    a = make_surface_table({"mat": {"mu_dry": 0.9, "mu_wet": 0.6}})
    ta = Terrain(t.height_m, np.where(t.surface_id == surface_id("ice"), a.surface_id("mat"), t.surface_id),
                 t.wetness, t.origin_x_m, t.origin_y_m, t.cell_m, table=a)
    to_file(ta, tmp_path / "a.npz")
    b = make_surface_table({"other": {"mu_dry": 0.2, "mu_wet": 0.1}, "mat": {"mu_dry": 0.9, "mu_wet": 0.6}})
    tb = from_file(tmp_path / "a.npz", table=b)
    assert b.surface_id("mat") != a.surface_id("mat")
    np.testing.assert_array_equal(np.asarray(b.names)[tb.surface_id], np.asarray(a.names)[ta.surface_id])
    with pytest.raises(ValueError, match="'mat'"):
        from_file(tmp_path / "a.npz")


def test_stack_replace_and_batched_lookup():
    terrains = [slope(10.0 * k, size_m=20.0) for k in range(3)]
    stack = TerrainStack.from_terrains(terrains)
    assert len(stack) == 3 and stack.height_m.shape == (3, 21, 21) and stack.origin_xy_m.shape == (3, 2)
    heights = stack.height_m
    new = split(0.0, "ice", "gravel", size_m=20.0, wetness_after=0.9)
    stack.replace(1, new)
    assert stack.height_m is heights  # in place
    back = stack.terrain(1)
    np.testing.assert_array_equal(back.surface_id, new.surface_id)
    assert (back.origin_x_m, back.cell_m) == (new.origin_x_m, new.cell_m)
    assert sample_height_k(stack.height_m, stack.origin_xy_m, stack.cell_m, 2, 3.0, 1.0) == pytest.approx(
        (0.6, 0.2, 0.0))
    h, gx, gy, sid, w = sample_ground_k(stack.height_m, stack.surface_id, stack.wetness, stack.origin_xy_m,
                                        stack.cell_m, 1, 2.0, 0.0)
    assert (h, gx, gy, sid, w) == (0.0, 0.0, 0.0, surface_id("gravel"), 0.9)
    with pytest.raises(ValueError, match=r"\(11, 11\).*\(21, 21\)"):
        stack.replace(0, flat(size_m=10.0))
    with pytest.raises(ValueError, match=r"terrain 1 has grid shape \(11, 11\); terrain 0 has \(21, 21\)"):
        TerrainStack.from_terrains([terrains[0], flat(size_m=10.0)])
    with pytest.raises(IndexError):
        stack.terrain(3)


def test_with_grade_adds_an_exact_plane_through_a_point():
    base = rough(seed=2, roughness_m=0.1, size_m=40.0, cell_m=1.0)
    tilted = with_grade(base, 12.0, math.radians(30.0), through_xy=(3.0, -4.0))
    g = 0.12 * np.array([math.cos(math.radians(30.0)), math.sin(math.radians(30.0))])
    for x, y in ((0.3, 0.7), (-12.2, 9.9), (15.5, -17.0)):
        rise = g @ np.array([x - 3.0, y + 4.0])
        assert tilted.height_at(x, y) == pytest.approx(base.height_at(x, y) + rise, abs=1e-12)
        assert np.subtract(tilted.gradient_at(x, y), base.gradient_at(x, y)) == pytest.approx(g, abs=1e-12)
    np.testing.assert_array_equal(tilted.surface_id, base.surface_id)
    assert with_grade(flat(size_m=10.0), -8.0).gradient_at(1.0, 2.0) == pytest.approx((-0.08, 0.0))
    with pytest.raises(ValueError, match="percent"):
        with_grade(base, float("nan"))


def test_from_config():
    t = from_config({"kind": "rough", "seed": 3, "roughness_m": 0.3, "surface": "grass", "size_m": 40,
                     "cell_m": 1.0, "patches": {"grass": 2, "mud": 1},
                     "polygons": [{"xy": [[-1, -1], [1, -1], [1, 1]], "surface": "ice"}]})
    assert np.sqrt(np.mean(t.height_m**2)) == pytest.approx(0.3)
    assert set(np.unique(t.surface_id)) == {surface_id(n) for n in ("grass", "mud", "ice")}
    again = from_config({"kind": "rough", "seed": 3, "roughness_m": 0.3, "size_m": 40, "cell_m": 1.0})
    np.testing.assert_array_equal(again.height_m, t.height_m)
    other = from_config({"kind": "rough", "seed": 3, "roughness_m": 0.3, "size_m": 40, "cell_m": 1.0}, seed=4)
    assert not np.array_equal(other.height_m, t.height_m)
    full = from_config({"kind": "flat", "size_m": [30, 10], "patches": {
        "surfaces": ["gravel", "ice"], "scale_m": 5, "wetness_range": None}})
    assert full.shape == (11, 31) and (full.wetness == 0).all()
    assert from_config({"kind": "slope", "percent": 15, "size_m": 10}).gradient_at(1.0, 1.0) == pytest.approx(
        (0.15, 0.0))
    with pytest.raises(ValueError, match="unknown kind 'hills'; allowed kinds: flat, slope, split, rough"):
        from_config({"kind": "hills"})
    with pytest.raises(ValueError, match="unknown key 'roughnes_m'; allowed keys: .*roughness_m"):
        from_config({"kind": "rough", "roughnes_m": 0.3})
    with pytest.raises(ValueError, match="missing key 'percent'"):
        from_config({"kind": "slope"})
    with pytest.raises(ValueError, match="'patches': unknown key 'scael_m'"):
        from_config({"kind": "flat", "patches": {"surfaces": ["ice"], "scael_m": 3}})
    with pytest.raises(ValueError, match="'patches': unknown key 'gravle'"):
        from_config({"kind": "flat", "patches": {"gravle": 1}})
    with pytest.raises(ValueError, match="cell_m = -1.0 outside"):
        from_config({"kind": "flat", "cell_m": -1})


def test_patch_quantile_cut_equals_the_assignment_by_rank():
    from acres_gym.terrain.patches import _cut_at_quantiles

    rng = np.random.default_rng(0)
    for _ in range(200):
        noise = rng.normal(size=tuple(rng.integers(1, 30, 2)))
        k = int(rng.integers(1, 6))
        ids = rng.permutation(10)[:k].astype(np.int32)
        weights = rng.uniform(0.0, 1.0, k) * (rng.random(k) > 0.2)
        weights = weights / weights.sum() if weights.sum() > 0 else np.eye(k)[0]
        # the definition: sort the points, hand out the shares in order
        order = np.argsort(noise, axis=None, kind="stable")
        bounds = np.rint(np.cumsum(weights) * noise.size).astype(np.int64)
        bounds[-1] = noise.size
        by_rank = np.empty(noise.size, np.int32)
        by_rank[order] = np.repeat(ids, np.diff(np.concatenate([[0], bounds])))
        np.testing.assert_array_equal(_cut_at_quantiles(noise, ids, weights), by_rank.reshape(noise.shape))
