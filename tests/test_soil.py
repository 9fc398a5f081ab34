"""Wong's tyre on soil (acres_gym.model.soil) and the soil library (acres_gym.terrain.soil_random)."""

import json
import math
import os
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from acres_gym.model import soil
from acres_gym.terrain.soil_random import DEFAULT_SCALE, draw_soil, load_soils
from acres_gym.terrain.soil_spec import SOIL_FIELDS, SOIL_KEYS, SOIL_SPEC, SOIL_WET_FIELDS

SOILS = load_soils()

# The reference sheet's illustrative wheel (reference/vehicle_and_soil.md §2.1).
W_REF, D_REF, B_REF = 2500.0, 0.686, 0.25

# The Ranger's rear tyre (27 x 11-14) as used below; the tread values are this test's assumptions.
RANGER_REAR = dict(width_m=0.279, radius_m=0.343, inflation_pa=70e3, carcass_pa=20e3,
                   tyre_vertical_stiffness_n_m=150e3, hysteresis=0.25, section_m=0.165)
TREAD = dict(tread_shear_compliance_m=0.005, lug_area_share=0.4, lug_height_m=0.019)


def bekker(name):
    s = SOILS[name]
    return s["soil_n"], s["soil_kc"], s["soil_kphi"]


def shear(name):
    s = SOILS[name]
    return s["soil_cohesion_pa"], math.radians(s["soil_friction_deg"]), s["soil_shear_modulus_m"]


def ranger_dp(name, slip, load_n=2600.0, **overrides):
    t = {**RANGER_REAR, **TREAD, **overrides}
    c, phi, k = shear(name)
    return soil.drawbar_pull(slip, load_n, t["width_m"], t["radius_m"], t["inflation_pa"], t["carcass_pa"],
                             t["tyre_vertical_stiffness_n_m"], t["hysteresis"], t["section_m"], *bekker(name),
                             c, phi, k, t["tread_shear_compliance_m"], t["lug_area_share"], t["lug_height_m"])


def ranger_on_soil(name, load_n=2600.0):
    t = RANGER_REAR
    return soil.tyre_on_soil(load_n, t["width_m"], t["radius_m"], t["inflation_pa"], t["carcass_pa"],
                             t["tyre_vertical_stiffness_n_m"], t["hysteresis"], t["section_m"], *bekker(name))


# --- the library ---------------------------------------------------------------------------------------

def test_library_holds_the_required_soils_in_si():
    required = {"dry_sand", "sandy_loam", "clayey_soil", "heavy_clay", "lean_clay", "lete_sand", "snow",
                "sandy_loam_wet", "clayey_soil_wet"}
    assert required <= set(SOILS)
    dry = SOILS["dry_sand"]
    own = {"soil_n": 1.1, "soil_kc": 990.0, "soil_kphi": 1528.43e3, "soil_cohesion_pa": 1040.0,
           "soil_friction_deg": 28.0, "soil_shear_modulus_m": 0.025}
    # no wet measurement of dry sand: its wet set is its own
    assert dry == pytest.approx({**own, **{"soil_wet_" + k[len("soil_"):]: v for k, v in own.items()}})
    assert SOILS["clayey_soil"]["soil_wet_friction_deg"] == SOILS["clayey_soil_wet"]["soil_friction_deg"]


def test_library_json_leaves_carry_units_and_sources():
    from acres_gym.terrain.soil_random import soils_path

    data = json.loads(soils_path().read_text(encoding="utf-8"))
    assert data["_about"]
    for name, entry in data["soils"].items():
        assert entry["description"], name
        for key in (*SOIL_KEYS, "moisture"):
            leaf = entry[key]
            assert set(leaf) == {"value", "unit", "source"}, (name, key)
            assert leaf["source"], (name, key)
        assert entry["shear_modulus"]["source"].startswith("estimate:"), name
        assert "Table 2.3" in entry["kphi"]["source"], name


# --- closed forms --------------------------------------------------------------------------------------

@pytest.mark.parametrize("name, z_expected, rc_expected", [
    ("dry_sand", 0.06446, 576.2),
    ("sandy_loam", 0.02200, 343.5),
    ("clayey_soil", 0.01945, 336.8),
])
def test_rigid_wheel_matches_the_reference_formulas(name, z_expected, rc_expected):
    n, kc, kphi = bekker(name)
    z = soil.rigid_sinkage(W_REF, B_REF, D_REF, n, kc, kphi)
    rc = soil.rigid_compaction_resistance(W_REF, B_REF, D_REF, n, kc, kphi)
    # the reference's formulas, transcribed independently
    z_ref = (3 * W_REF / ((3 - n) * (kc + B_REF * kphi) * math.sqrt(D_REF))) ** (2 / (2 * n + 1))
    a = (2 * n + 2) / (2 * n + 1)
    rc_ref = (3 * W_REF / math.sqrt(D_REF)) ** a / (
        (3 - n) ** a * (n + 1) * (kc + B_REF * kphi) ** (1 / (2 * n + 1)))
    assert z == pytest.approx(z_ref, rel=1e-12)
    assert rc == pytest.approx(rc_ref, rel=1e-12)
    assert z == pytest.approx(z_expected, rel=1e-3)
    assert rc == pytest.approx(rc_expected, rel=1e-3)
    # the second form of R_c: the work of pressing a rut of depth z0, b k_eq z0^(n+1) / (n+1)
    k_eq = soil.pressure_sinkage_modulus(kc, kphi, B_REF)
    assert rc == pytest.approx(B_REF * k_eq * z ** (n + 1) / (n + 1), rel=1e-10)
    # the load relation inverts the sinkage
    assert soil.rigid_wheel_load(z, B_REF, D_REF, n, kc, kphi) == pytest.approx(W_REF, rel=1e-10)


def test_critical_pressure_and_elastic_sinkage_of_the_reference_check():
    n, kc, kphi = bekker("dry_sand")
    assert soil.critical_ground_pressure(W_REF, B_REF, D_REF, n, kc, kphi) == pytest.approx(75e3, rel=0.02)
    assert soil.elastic_sinkage(100e3, B_REF, n, kc, kphi) == pytest.approx(0.08, rel=0.06)
    # p_gcr is the Bekker pressure under the lowest point of the rigid wheel
    z = soil.rigid_sinkage(W_REF, B_REF, D_REF, n, kc, kphi)
    k_eq = soil.pressure_sinkage_modulus(kc, kphi, B_REF)
    p_gcr = soil.critical_ground_pressure(W_REF, B_REF, D_REF, n, kc, kphi)
    assert p_gcr == pytest.approx(k_eq * z**n, rel=1e-10)


@pytest.mark.parametrize("name", ["dry_sand", "sandy_loam", "clayey_soil", "snow", "heavy_clay"])
def test_elastic_compaction_matches_wong(name):
    n, kc, kphi = bekker(name)
    p = 90e3
    k_eq = soil.pressure_sinkage_modulus(kc, kphi, B_REF)
    expected = B_REF * p ** ((n + 1) / n) / ((n + 1) * k_eq ** (1 / n))
    assert soil.elastic_compaction_resistance(p, B_REF, n, kc, kphi) == pytest.approx(expected, rel=1e-10)
    assert soil.elastic_sinkage(p, B_REF, n, kc, kphi) == pytest.approx((p / k_eq) ** (1 / n), rel=1e-12)


# --- mode selection and continuity ---------------------------------------------------------------------

def _on_soil(load_n, inflation_pa, name="dry_sand", carcass_pa=0.0):
    return soil.tyre_on_soil(load_n, B_REF, D_REF / 2, inflation_pa, carcass_pa, 150e3, 0.25, 0.165,
                             *bekker(name))


def test_mode_follows_the_critical_pressure():
    n, kc, kphi = bekker("dry_sand")
    z, length, rc, rh, mode = _on_soil(W_REF, 80e3)  # above p_gcr = 75 kPa: stays round
    assert mode == 0
    assert z == pytest.approx(soil.rigid_sinkage(W_REF, B_REF, D_REF, n, kc, kphi))
    assert rc == pytest.approx(soil.rigid_compaction_resistance(W_REF, B_REF, D_REF, n, kc, kphi))
    assert length == pytest.approx(math.sqrt(z * (D_REF - z)))
    assert rh == pytest.approx(0.25 * (W_REF / 150e3) / 0.165 * W_REF)

    z, length, rc, rh, mode = _on_soil(W_REF, 60e3, carcass_pa=10e3)  # 70 kPa < p_gcr: flattens
    assert mode == 1
    assert z == pytest.approx(soil.elastic_sinkage(70e3, B_REF, n, kc, kphi))
    assert rc == pytest.approx(soil.elastic_compaction_resistance(70e3, B_REF, n, kc, kphi))
    assert length > math.sqrt(z * (D_REF - z))  # the arc plus a flat patch


@pytest.mark.parametrize("name", ["dry_sand", "sandy_loam", "clayey_soil", "snow"])
def test_sinkage_contact_and_resistances_are_continuous_at_the_mode_switch(name):
    n, kc, kphi = bekker(name)
    p = 90e3
    e = 2 * n + 1
    k_eq = soil.pressure_sinkage_modulus(kc, kphi, B_REF)
    load_switch = (p / k_eq ** (1 / e)) ** (e / (2 * n)) * (3 - n) * B_REF * math.sqrt(D_REF) / 3
    below = _on_soil(load_switch * (1 - 1e-9), p, name)  # lighter: p_gcr < p, rigid
    above = _on_soil(load_switch * (1 + 1e-9), p, name)  # heavier: p_gcr > p, elastic
    assert (below[4], above[4]) == (0, 1)
    for a, b in zip(below[:4], above[:4], strict=True):
        assert a == pytest.approx(b, rel=1e-6)


def test_no_load_no_contact():
    assert _on_soil(0.0, 70e3) == (0.0, 0.0, 0.0, 0.0, 0)
    assert soil.gross_thrust(0.3, 0.0, 0.0, 0.0, 1e3, 0.5, 0.02, 0.4, 0.02) == (0.0, 0.0)


# --- shear ---------------------------------------------------------------------------------------------

THRUST_ARGS = dict(load_n=2600.0, contact_area_m2=0.279 * 0.2, contact_length_m=0.2, cohesion_pa=1040.0,
                   friction_rad=math.radians(28.0), shear_modulus_m=0.03, lug_area_share=0.4,
                   lug_height_m=0.02)


def thrust(slip, **overrides):
    a = {**THRUST_ARGS, **overrides}
    return soil.gross_thrust(slip, a["load_n"], a["contact_area_m2"], a["contact_length_m"], a["cohesion_pa"],
                             a["friction_rad"], a["shear_modulus_m"], a["lug_area_share"], a["lug_height_m"])


def f_max(**overrides):
    a = {**THRUST_ARGS, **overrides}
    return soil.max_shear_force(a["load_n"], a["contact_area_m2"], a["contact_length_m"], a["cohesion_pa"],
                                a["friction_rad"], a["lug_area_share"], a["lug_height_m"])


def test_max_shear_force_is_coulomb_plus_lug_side_shear():
    a = THRUST_ARGS
    plain = a["contact_area_m2"] * a["cohesion_pa"] + a["load_n"] * math.tan(a["friction_rad"])
    assert f_max(lug_height_m=0.0) == pytest.approx(plain)
    assert f_max(lug_area_share=1.0) == pytest.approx(plain)
    side = 2 * (1 - 0.4) * 0.02 * 0.2 * a["cohesion_pa"]
    assert f_max() == pytest.approx(plain + side)
    assert f_max(lug_height_m=0.03) > f_max() > f_max(lug_height_m=0.01)


def test_thrust_rises_monotonically_to_the_plateau():
    slips = np.linspace(0.0, 1.0, 201)
    forces = np.array([thrust(i)[0] for i in slips])
    assert forces[0] == 0.0
    assert np.all(np.diff(forces) > 0.0)
    assert forces[-1] < f_max()
    # a long patch (l / K = 1000) reaches the plateau A c + W tan(phi) within K / l
    long = dict(contact_length_m=3.0, contact_area_m2=0.279 * 3.0, shear_modulus_m=0.003)
    assert thrust(1.0, **long)[0] == pytest.approx(f_max(**long), rel=1.1e-3)
    expected = f_max() * (1 - 0.03 / (0.2 * 0.5) * (1 - math.exp(-0.2 * 0.5 / 0.03)))
    assert thrust(0.5)[0] == pytest.approx(expected, rel=1e-12)


def test_thrust_is_odd_and_clamped():
    for i in (1e-9, 1e-5, 0.01, 0.3, 1.0):
        assert thrust(-i)[0] == -thrust(i)[0]
        assert thrust(-i)[1] == thrust(i)[1]
    assert thrust(1.7) == (thrust(1.0)[0], 0.0)
    assert thrust(-3.0) == (-thrust(1.0)[0], 0.0)


def test_small_slip_limit_without_division_by_zero():
    slope = f_max() * 0.2 / (2 * 0.03)
    force, dforce = thrust(0.0)
    assert force == 0.0 and dforce == pytest.approx(slope, rel=1e-12)
    for i in (1e-12, 1e-7, 1e-5, 1e-4):
        force, dforce = thrust(i)
        assert math.isfinite(force) and force == pytest.approx(slope * i, rel=2 * i * 0.2 / 0.03 / 3 + 1e-12)
        assert dforce == pytest.approx(slope, rel=i * 0.2 / 0.03)
    # both sides of the series switch-over agree
    x_switch = soil.SMALL_SHEAR_ARG
    g_lo, dg_lo = soil.janosi_factor(x_switch * (1 - 1e-9))
    g_hi, dg_hi = soil.janosi_factor(x_switch * (1 + 1e-9))
    assert g_lo == pytest.approx(g_hi, rel=1e-8) and dg_lo == pytest.approx(dg_hi, rel=1e-8)


@pytest.mark.parametrize("slip", [-0.9, -0.2, -0.003, 0.0, 0.002, 0.05, 0.2, 0.6, 0.99])
def test_thrust_derivative_matches_finite_differences(slip):
    h = 1e-7
    numeric = (thrust(slip + h)[0] - thrust(slip - h)[0]) / (2 * h)
    assert thrust(slip)[1] == pytest.approx(numeric, rel=1e-6)


@settings(max_examples=60, deadline=None)
@given(
    length=st.floats(0.01, 1.0), k=st.floats(1e-4, 0.1), c=st.floats(0.0, 7e4), phi_deg=st.floats(0.0, 45.0),
    i1=st.floats(-1.0, 1.0), i2=st.floats(-1.0, 1.0),
)
def test_thrust_is_monotone_and_bounded(length, k, c, phi_deg, i1, i2):
    args = dict(contact_length_m=length, contact_area_m2=0.25 * length, shear_modulus_m=k, cohesion_pa=c,
                friction_rad=math.radians(phi_deg))
    lo, hi = sorted((i1, i2))
    f_lo, f_hi = thrust(lo, **args)[0], thrust(hi, **args)[0]
    assert f_lo <= f_hi
    assert abs(f_hi) <= f_max(**args) * (1 + 1e-12)
    assert thrust(hi, **args)[1] >= 0.0


def test_effective_shear_modulus_adds_the_tread():
    assert soil.effective_shear_modulus(0.025, 0.005) == pytest.approx(0.03)
    assert soil.effective_shear_modulus(0.0, 0.0) == soil.MIN_SHEAR_MODULUS_M
    # a more compliant tread pulls less at a given slip
    assert ranger_dp("dry_sand", 0.2, tread_shear_compliance_m=0.02) < ranger_dp("dry_sand", 0.2)


# --- the Ranger's rear tyre ----------------------------------------------------------------------------

@pytest.mark.parametrize("load_n", [2500.0, 2600.0, 3000.0])
def test_ranger_rear_tyre_on_sand(load_n):
    # LETE sand (dense): drawbar pull 0.2-0.5 of the load at 20 % slip
    assert 0.2 <= ranger_dp("lete_sand", 0.2, load_n) / load_n <= 0.5
    # LLL dry sand (loose): the tyre sinks ~6 cm and rolls against ~0.22 W, so 20 % slip is about the
    # self-propelled point and the pull only comes at higher slip
    z, _, rc, _, mode = ranger_on_soil("dry_sand", load_n)
    assert mode == 0 and 0.055 < z < 0.075 and 0.2 < rc / load_n < 0.25
    assert -0.05 <= ranger_dp("dry_sand", 0.2, load_n) / load_n <= 0.1
    assert 0.15 <= ranger_dp("dry_sand", 1.0, load_n) / load_n <= 0.35


@pytest.mark.parametrize("load_n", [2000.0, 2600.0, 3500.0])
@pytest.mark.parametrize("width_m", [0.229, 0.279])
def test_stall_soil_gives_no_pull_at_any_slip(load_n, width_m):
    pulls = [ranger_dp("sandy_loam_wet", i, load_n, width_m=width_m, hysteresis=0.0,
                       tread_shear_compliance_m=0.0, lug_height_m=0.025) for i in np.linspace(0.0, 1.0, 21)]
    assert max(pulls) < 0.0


def test_drawbar_pull_rises_with_slip_on_every_soil():
    for name in SOILS:
        pulls = [ranger_dp(name, i) for i in np.linspace(0.0, 1.0, 11)]
        assert np.all(np.diff(pulls) > 0.0), name
        assert pulls[0] < 0.0, name  # at zero slip only the resistances remain


# --- jit and no-jit ------------------------------------------------------------------------------------

def _py(f):
    return getattr(f, "py_func", f)


def test_jitted_equals_python():
    n, kc, kphi = bekker("sandy_loam")
    c, phi, k = shear("sandy_loam")
    for load_n, pressure in ((2600.0, 90e3), (2600.0, 150e3), (1200.0, 40e3)):
        args = (load_n, 0.279, 0.343, pressure, 20e3, 150e3, 0.25, 0.165, n, kc, kphi)
        jitted, python = soil.tyre_on_soil(*args), _py(soil.tyre_on_soil)(*args)
        assert jitted[4] == python[4]
        np.testing.assert_allclose(jitted[:4], python[:4], rtol=1e-13)
        dp_args = (0.2, *args, c, phi, k, 0.005, 0.4, 0.019)
        assert soil.drawbar_pull(*dp_args) == pytest.approx(_py(soil.drawbar_pull)(*dp_args), rel=1e-13)
    for slip in (0.0, 1e-6, 0.3, -0.7):
        t_args = (slip, 2600.0, 0.05, 0.18, c, phi, 0.03, 0.4, 0.02)
        np.testing.assert_allclose(soil.gross_thrust(*t_args), _py(soil.gross_thrust)(*t_args), rtol=1e-13)


def test_runs_without_jit():
    code = (
        "import math\n"
        "from acres_gym.model import soil\n"
        "assert not hasattr(soil.tyre_on_soil, 'py_func')\n"
        "dp = soil.drawbar_pull(0.2, 2600.0, 0.279, 0.343, 70e3, 20e3, 150e3, 0.25, 0.165, 0.79, 102e3,"
        " 5301e3, 1.3e3, math.radians(31.1), 0.012, 0.005, 0.4, 0.019)\n"
        "print(repr(dp))\n"
    )
    env = {**os.environ, "NUMBA_DISABLE_JIT": "1"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    expected = ranger_dp("lete_sand", 0.2)
    assert float(out.stdout) == pytest.approx(expected, rel=1e-12)


# --- draw_soil -----------------------------------------------------------------------------------------

def test_draw_soil_is_deterministic():
    a = [draw_soil(np.random.default_rng(7)) for _ in range(2)]
    assert a[0] == a[1]
    rng = np.random.default_rng(7)
    seq1 = [draw_soil(rng) for _ in range(5)]
    rng = np.random.default_rng(7)
    seq2 = [draw_soil(rng) for _ in range(5)]
    assert seq1 == seq2
    assert set(a[0]) == {"name", *SOIL_FIELDS, *SOIL_WET_FIELDS}


def test_draw_soil_stays_in_its_ranges():
    rng = np.random.default_rng(1)
    names = ["dry_sand", "clayey_soil"]
    seen = set()
    for _ in range(200):
        drawn = draw_soil(rng, names=names)
        seen.add(drawn["name"])
        base = SOILS[drawn["name"]]
        for p in SOIL_SPEC:
            lo, hi = DEFAULT_SCALE.get(p.key, (1.0, 1.0))
            assert base[p.field] * lo <= drawn[p.field] <= base[p.field] * hi, (p.key, drawn)
    assert seen == set(names)

    custom = draw_soil(rng, names="snow", scale={"n": (1.1, 1.1)})
    assert custom["soil_n"] == pytest.approx(1.6 * 1.1)
    assert custom["soil_kphi"] == SOILS["snow"]["soil_kphi"]  # a given scale replaces the defaults
    assert {k: v for k, v in draw_soil(rng, names=["lete_sand"], scale={}).items() if k != "name"} == \
        SOILS["lete_sand"]


def test_draw_soil_errors_name_the_allowed_values():
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match=r"unknown soil\(s\) 'quicksand'; allowed: dry_sand, .*snow"):
        draw_soil(rng, names=["dry_sand", "quicksand"])
    with pytest.raises(ValueError, match="names is empty"):
        draw_soil(rng, names=[])
    with pytest.raises(ValueError, match="unknown soil scale key 'k'; allowed: n, kc, kphi, cohesion"):
        draw_soil(rng, scale={"k": (0.9, 1.1)})
    with pytest.raises(ValueError, match=r"scale\['kphi'\] = \(1.3, 0.7\) must satisfy 0 < lo <= hi"):
        draw_soil(rng, scale={"kphi": (1.3, 0.7)})
    with pytest.raises(ValueError, match=r"scale\['cohesion'\] must be a pair"):
        draw_soil(rng, scale={"cohesion": 1.2})
    with pytest.raises(ValueError, match=r"n \(soil_n\) = 3.2 is outside the allowed range \[0.001, 2.99\]"):
        draw_soil(rng, names="snow", scale={"n": (2.0, 2.0)})


def test_config_dir_override_and_malformed_library(tmp_path, monkeypatch):
    from acres_gym.terrain.soil_random import soils_path

    library = json.loads(soils_path().read_text(encoding="utf-8"))
    library["soils"] = {"dry_sand": library["soils"]["dry_sand"]}
    (tmp_path / "soils.json").write_text(json.dumps(library), encoding="utf-8")
    monkeypatch.setenv("ACRES_GYM_CONFIG_DIR", str(tmp_path))
    assert list(load_soils()) == ["dry_sand"]
    assert draw_soil(np.random.default_rng(3))["name"] == "dry_sand"

    library["soils"]["dry_sand"]["kphi"]["unit"] = "N/m^(n+2)"
    (tmp_path / "soils.json").write_text(json.dumps(library), encoding="utf-8")
    expected = r"soils.dry_sand.kphi.unit is 'N/m\^\(n\+2\)', expected 'kN/m\^\(n\+2\)'"
    with pytest.raises(ValueError, match=expected):
        load_soils()

    library["soils"]["dry_sand"]["kphi"]["unit"] = "kN/m^(n+2)"
    library["soils"]["dry_sand"]["n"]["value"] = 3.5
    (tmp_path / "soils.json").write_text(json.dumps(library), encoding="utf-8")
    with pytest.raises(ValueError, match=r"soils.dry_sand: n \(soil_n\) = 3.5 is outside the allowed range"):
        load_soils()

    monkeypatch.setenv("ACRES_GYM_CONFIG_DIR", str(tmp_path / "missing"))
    with pytest.raises(ValueError, match="soil library not found"):
        load_soils()
