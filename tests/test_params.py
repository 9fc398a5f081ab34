"""Vehicle parameter file and the parameter API (``acres_gym.params``; seed 002 ``SetUtvParameter`` /
``FinalizeUtvParameters``)."""

from __future__ import annotations

import copy
import json
import math
import re
import warnings

import numpy as np
import pytest

from acres_gym import paths
from acres_gym.params import (
    UnknownVehicleError,
    finalize_parameters,
    load_vehicle,
    make_params_array,
    new_params,
    parameter_table,
    params_to_dict,
    set_parameter,
    set_parameters,
)
from acres_gym.schema import (
    DERIVED,
    MAX_TORQUE_POINTS,
    PARAMS_DTYPE,
    SCHEMA,
    SCHEMA_BY_KEY,
    TORQUE_CURVE_NM_KEY,
    TORQUE_CURVE_RPM_KEY,
)

G = 9.80665
NAME = "polaris_ranger_crew_xp1000"
VEHICLE_FILE = paths.config_dir() / "vehicles" / f"{NAME}.json"
IDLE_RANGE = r"expected a finite number in \[100, 5000\] rpm"
CURVE_UNITS = {TORQUE_CURVE_RPM_KEY: "rpm", TORQUE_CURVE_NM_KEY: "N m"}

# Defaults stated by the seed (FUtvParameters / FDbwParameters / FUtvState).
SEED_DEFAULTS = {
    "dbw.steering.lock_deg": 487.0,
    "dbw.steering.command_deg": 280.0,
    "dbw.steering.max_curvature_per_m": 0.2,
    "dbw.steering.max_yaw_rate_rad_s": 8.5,
    "dbw.command_timeout_s": 0.1,
    "dbw.ulc_actuator_timeout_s": 0.087,
    "dbw.speed_scale": 0.93,
    "driveline.park_hold_nm": 20000.0,
    "mass.occupants": 1,
    "cvt.initial_ratio": 3.2,
    "driveline.front_ring_ratio": 0.926,
    "dbw.bias.ulc_speed_mps": 0.0,
    "dbw.bias.throttle_pct": 0.0,
    "dbw.bias.brake_bar": 0.0,
}


def _leaves(node, prefix=""):
    out = {}
    for name, child in node.items():
        if name.startswith("_"):
            continue
        key = prefix + name
        if isinstance(child, dict) and "value" in child:
            out[key] = child
        else:
            assert isinstance(child, dict), f"{key} is neither a leaf nor a group"
            out.update(_leaves(child, key + "."))
    return out


@pytest.fixture(scope="module")
def doc():
    with VEHICLE_FILE.open(encoding="utf-8") as f:
        return json.load(f)


@pytest.fixture(scope="module")
def leaves(doc):
    return _leaves(doc)


@pytest.fixture(scope="module")
def vehicle():
    return load_vehicle(NAME)


def _set_leaf(doc, key, value):
    node = doc
    parts = key.split(".")
    for part in parts[:-1]:
        node = node[part]
    node[parts[-1]]["value"] = value


def _write(tmp_path, doc, name="synthetic.json"):
    path = tmp_path / name
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


# ----------------------------------------------------------------------------------------------------
# The vehicle file


def test_file_covers_every_schema_key_with_value_unit_source(doc, leaves):
    assert isinstance(doc.get("_about"), str) and doc["_about"].strip()
    expected = {p.key: p.unit for p in SCHEMA} | CURVE_UNITS
    assert set(leaves) == set(expected)
    for key, leaf in leaves.items():
        assert set(leaf) == {"value", "unit", "source"}, key
        assert leaf["unit"] == expected[key], key
        assert isinstance(leaf["source"], str) and leaf["source"].strip(), key


def test_every_source_says_where_it_comes_from(leaves):
    for key, leaf in leaves.items():
        source = leaf["source"]
        assert re.match(r"^(seed 002: |reference: |estimate: )\S", source), (key, source)
        if not source.startswith(("seed 002:", "reference:")):
            assert source.startswith("estimate:"), key


def test_sources_claim_no_more_than_they_back(leaves, vehicle):
    """Figures a source quotes are what the model gives; values leaning on another vehicle or on no
    reference are estimates that say so."""
    # "middle of A-B": the value is that middle
    for key, leaf in leaves.items():
        m = re.search(r"middle of [^0-9]*(\d[\d,.]*)\s*[–-]\s*(\d[\d,.]*)", leaf["source"])
        if m:
            lo, hi = (float(x.replace(",", "")) for x in m.groups())
            assert leaf["value"] == pytest.approx(0.5 * (lo + hi)), (key, leaf["source"])
    # the wheel-rate sources quote the corner masses and ride frequencies finalize_parameters gives
    kt = vehicle.tyre_vertical_stiffness_n_m
    for axle, corners in (("front", (0, 1)), ("rear", (2, 3))):
        source = leaves[f"suspension.{axle}_wheel_rate_n_m"]["source"]
        kg = re.search(r"corner masses (\d+) / (\d+) kg", source)
        hz = re.search(r"(\d\.\d+) / (\d\.\d+) Hz", source)
        assert kg and hz, source
        for k, i in enumerate(corners):
            mass = vehicle.static_load_n[i] / 9.80665
            kw = vehicle.wheel_rate_n_m[i]
            ride = math.sqrt(kw * kt / (kw + kt) / mass) / (2.0 * math.pi)
            assert float(kg.group(k + 1)) == pytest.approx(mass, abs=0.5), (axle, source)
            assert float(hz.group(k + 1)) == pytest.approx(ride, abs=0.005), (axle, source)
    # the L/H ratio rests on a figure of another Polaris vehicle; the demand-drive ratio on none
    for key in ("driveline.rear_low_ratio", "driveline.front_drive_ratio"):
        assert leaves[key]["source"].startswith("estimate:"), key
    assert "different" in leaves["driveline.rear_low_ratio"]["source"]
    assert "no figure found" in leaves["driveline.front_drive_ratio"]["source"]
    # the ULC's default limits are not documented anywhere the project has (reference sheet)
    for key in ("default_accel_mps2", "default_decel_mps2", "default_jerk_throttle_mps3", "default_jerk_brake_mps3"):
        source = leaves[f"dbw.ulc.{key}"]["source"]
        assert source.startswith("estimate:") and "not documented" in source, (key, source)
        assert "plot" not in source or "does not have" in source, (key, source)


def test_seed_defaults_equal_the_seed(leaves, vehicle):
    for key, value in SEED_DEFAULTS.items():
        assert leaves[key]["value"] == value, key
        assert leaves[key]["source"].startswith("seed 002:"), key
        assert vehicle[SCHEMA_BY_KEY[key].field] == pytest.approx(value), key


def test_torque_curve_leaves(leaves):
    rpm = leaves[TORQUE_CURVE_RPM_KEY]["value"]
    nm = leaves[TORQUE_CURVE_NM_KEY]["value"]
    assert 8 <= len(rpm) == len(nm) <= 12
    assert all(b > a for a, b in zip(rpm[:-1], rpm[1:], strict=True))
    assert rpm[-1] <= leaves["engine.max_rpm"]["value"]
    assert min(nm) >= 0.0


def test_loaded_vehicle_is_finalised_and_consistent(vehicle):
    p = vehicle
    parts = (p.dry_mass_kg + p.fluids_kg + p.roof_equipment_kg + p.bay_equipment_kg
             + p.occupants * p.occupant_kg + p.cargo_kg)
    assert p.mass_kg == pytest.approx(parts)
    assert 1000.0 <= p.mass_kg <= 1100.0
    assert 0.0 < p.cg_forward_m < p.wheelbase_m
    assert 0.6 <= p.cg_height_m <= 0.7
    assert 350.0 <= p.ixx_kg_m2 <= 450.0
    assert 1300.0 <= p.iyy_kg_m2 <= 1700.0
    assert 1300.0 <= p.izz_kg_m2 <= 1700.0
    assert np.all(p.static_load_n > 0.0)
    assert p.static_load_n.sum() == pytest.approx(p.mass_kg * G)
    n = p.torque_curve_count
    assert p.peak_torque_nm == pytest.approx(max(p.torque_curve_nm[:n]))
    assert 85.0 <= p.peak_torque_nm <= 90.0
    power_kw = p.torque_curve_nm[:n] * p.torque_curve_rpm[:n] * math.pi / 30.0 / 1000.0
    assert 59.0 <= power_kw.max() <= 63.0
    # the front ring turns at front_ring_ratio x the rear carrier in every gear
    for gear in ("low", "high", "reverse"):
        rear = p[f"rear_{gear}_ratio"]
        front = p[f"front_{gear}_ratio"] * p.front_drive_ratio
        assert rear / front == pytest.approx(p.front_ring_ratio, rel=1e-4), gear
    assert p.ulc_mass_kg == pytest.approx(p.mass_kg, rel=0.02)
    np.testing.assert_allclose(p.tyre_width_m, [p.front_tyre_width_m] * 2 + [p.rear_tyre_width_m] * 2)
    np.testing.assert_allclose(p.brake_nm_per_bar,
                               [p.front_brake_nm_per_bar] * 2 + [p.rear_brake_nm_per_bar] * 2)


# ----------------------------------------------------------------------------------------------------
# Mass properties of a small synthetic vehicle


def _synthetic_mass(**changes):
    """Mass group with only a dry vehicle: 1000 kg at (1.5, 0, 0.5) m, radii of gyration 0.5 / 1.0 / 1.2 m."""
    group = {
        "dry_kg": 1000.0, "fluids_kg": 0.0, "roof_equipment_kg": 0.0, "bay_equipment_kg": 0.0,
        "occupant_kg": 80.0, "occupants": 0, "cargo_kg": 0.0,
        "dry_cg_forward_m": 1.5, "dry_cg_left_m": 0.0, "dry_cg_height_m": 0.5,
        "dry_gyration_roll_m": 0.5, "dry_gyration_pitch_m": 1.0, "dry_gyration_yaw_m": 1.2,
        "fluids_x_m": 1.0, "fluids_y_m": 0.0, "fluids_z_m": 0.5,
        "roof_x_m": 1.0, "roof_y_m": 0.0, "roof_z_m": 2.0,
        "bay_x_m": 0.4, "bay_y_m": 0.3, "bay_z_m": 1.0,
        "seat_front_x_m": 2.0, "seat_rear_x_m": 1.0, "seat_lateral_m": 0.4, "occupant_z_m": 1.0,
        "cargo_x_m": 0.0, "cargo_y_m": 0.0, "cargo_z_m": 1.0,
    }
    group.update(changes)
    return {name: {"value": v, "unit": SCHEMA_BY_KEY[f"mass.{name}"].unit, "source": "estimate: test"}
            for name, v in group.items()}


def _synthetic(tmp_path, doc, wheelbase=3.0, track=1.2, **mass_changes):
    d = copy.deepcopy(doc)
    d["mass"] = _synthetic_mass(**mass_changes)
    _set_leaf(d, "dimensions.wheelbase_m", wheelbase)
    _set_leaf(d, "dimensions.track_front_m", track)
    _set_leaf(d, "dimensions.track_rear_m", track)
    return load_vehicle(_write(tmp_path, d))


def test_dry_vehicle_only(tmp_path, doc):
    p = _synthetic(tmp_path, doc)
    assert p.mass_kg == pytest.approx(1000.0)
    assert (p.cg_forward_m, p.cg_left_m, p.cg_height_m) == pytest.approx((1.5, 0.0, 0.5))
    assert p.ixx_kg_m2 == pytest.approx(1000.0 * 0.5**2)
    assert p.iyy_kg_m2 == pytest.approx(1000.0 * 1.0**2)
    assert p.izz_kg_m2 == pytest.approx(1000.0 * 1.2**2)
    # CG at mid-wheelbase on the centreline: a quarter of the weight on each corner
    np.testing.assert_allclose(p.static_load_n, [1000.0 * G / 4] * 4)


def test_one_point_mass_parallel_axis(tmp_path, doc):
    # 100 kg electronics bay at (0.4, 0.3, 1.0) m on top of the 1000 kg dry vehicle at (1.5, 0, 0.5) m
    p = _synthetic(tmp_path, doc, bay_equipment_kg=100.0)
    assert p.mass_kg == pytest.approx(1100.0)
    assert p.cg_forward_m == pytest.approx(1.4)  # (1000 * 1.5 + 100 * 0.4) / 1100
    assert p.cg_left_m == pytest.approx(30.0 / 1100.0)
    assert p.cg_height_m == pytest.approx(6.0 / 11.0)  # (500 + 100) / 1100
    # two bodies about their common CG: own inertia + reduced mass x distance^2
    mu = 1000.0 * 100.0 / 1100.0
    dx, dy, dz = 0.4 - 1.5, 0.3, 0.5
    assert p.ixx_kg_m2 == pytest.approx(250.0 + mu * (dy**2 + dz**2))
    assert p.iyy_kg_m2 == pytest.approx(1000.0 + mu * (dx**2 + dz**2))
    assert p.izz_kg_m2 == pytest.approx(1440.0 + mu * (dx**2 + dy**2))


def test_occupants_fill_seats_in_order(tmp_path, doc):
    # seats: driver (front, +lat), front passenger (front, -lat), rear left, rear right,
    # rear centre, front centre
    seat_y = [0.4, -0.4, 0.4, -0.4, 0.0, 0.0]
    seat_x = [2.0, 2.0, 1.0, 1.0, 1.0, 2.0]
    for n in range(7):
        p = _synthetic(tmp_path, doc, occupants=n)
        m = 1000.0 + 80.0 * n
        assert p.mass_kg == pytest.approx(m)
        assert p.cg_left_m == pytest.approx(80.0 * sum(seat_y[:n]) / m, abs=1e-12), n
        assert p.cg_forward_m == pytest.approx((1500.0 + 80.0 * sum(seat_x[:n])) / m), n
        assert p.cg_height_m == pytest.approx((500.0 + 80.0 * n) / m), n


def test_static_loads_moment_balance(vehicle, tmp_path, doc):
    for p in (vehicle, _synthetic(tmp_path, doc, occupants=1, bay_equipment_kg=60.0)):
        fl, fr, rl, rr = p.static_load_n
        weight = p.mass_kg * G
        assert fl + fr + rl + rr == pytest.approx(weight)
        # pitch: moments about the rear axle
        assert (fl + fr) * p.wheelbase_m == pytest.approx(weight * p.cg_forward_m)
        # roll, per axle: (left - right) track / 2 = axle load x lateral offset
        assert (fl - fr) * p.track_front_m / 2 == pytest.approx((fl + fr) * p.cg_left_m)
        assert (rl - rr) * p.track_rear_m / 2 == pytest.approx((rl + rr) * p.cg_left_m)
        assert p.cg_left_m != 0.0


def test_wheel_set(vehicle):
    p = vehicle
    np.testing.assert_allclose(p.hardpoint_x_m, [p.wheelbase_m - p.cg_forward_m] * 2 + [-p.cg_forward_m] * 2)
    half_f, half_r = p.track_front_m / 2, p.track_rear_m / 2
    np.testing.assert_allclose(p.hardpoint_y_m, np.array([half_f, -half_f, half_r, -half_r]) - p.cg_left_m)
    i = 2  # rear left, by hand
    kt, kw, load = p.tyre_vertical_stiffness_n_m, p.rear_wheel_rate_n_m, p.static_load_n[i]
    z = p.tyre_radius_m - load / kt - p.cg_height_m + p.travel_m - p.droop_m
    assert p.hardpoint_z_m[i] == pytest.approx(z)
    assert p.damper_n_s_m[i] == pytest.approx(2 * p.damping_ratio * math.sqrt(kw * kt / (kw + kt) * load / G))
    np.testing.assert_allclose(p.wheel_rate_n_m, [p.front_wheel_rate_n_m] * 2 + [p.rear_wheel_rate_n_m] * 2)


# ----------------------------------------------------------------------------------------------------
# set_parameter / set_parameters


def test_set_plain_and_dbw_keys(vehicle):
    p = vehicle.copy()
    assert set_parameter(p, "engine.idle_rpm", 1300) is True
    assert p.idle_rpm == 1300.0
    assert set_parameter(p, "dbw.steering.delay_s", 0.08) is True
    assert p.steer_delay_s == 0.08
    assert set_parameter(p, "driveline.adc", True) is True
    assert p.adc == 1
    assert set_parameter(p, "mass.occupants", 3.0) is True
    assert p.occupants == 3 and isinstance(p.occupants, np.integer)
    finalize_parameters(p)
    assert p.mass_kg == pytest.approx(vehicle.mass_kg + 2 * p.occupant_kg)


def test_set_torque_curve_points():
    p = new_params()
    assert set_parameter(p, "engine.torque_curve_rpm[0]", 1000) is True
    assert p.torque_curve_count == 1
    set_parameter(p, "engine.torque_curve_nm[0]", 50)
    set_parameter(p, "engine.torque_curve_nm[1]", 70)  # grows the curve
    set_parameter(p, "engine.torque_curve_rpm[1]", 3000)
    assert p.torque_curve_count == 2
    assert list(p.torque_curve_rpm[:2]) == [1000.0, 3000.0]
    assert list(p.torque_curve_nm[:2]) == [50.0, 70.0]
    set_parameter(p, "engine.torque_curve_nm[0]", 55)  # below the count: replaces
    assert p.torque_curve_count == 2 and p.torque_curve_nm[0] == 55.0
    with pytest.raises(ValueError, match=r"engine\.torque_curve_rpm\[5\].*\[0, 2\]"):
        set_parameter(p, "engine.torque_curve_rpm[5]", 5000)  # would leave a gap
    with pytest.raises(ValueError, match=rf"\[0, {MAX_TORQUE_POINTS - 1}\]"):
        set_parameter(p, f"engine.torque_curve_rpm[{MAX_TORQUE_POINTS}]", 5000)
    with pytest.raises(ValueError, match=r"engine\.torque_curve_nm\[1\] = -5: .*\[0, 5000\] N m"):
        set_parameter(p, "engine.torque_curve_nm[1]", -5)


def test_set_whole_curve_and_finalise(vehicle):
    p = vehicle.copy()
    set_parameters(p, {TORQUE_CURVE_RPM_KEY: [1000, 4000, 8000], TORQUE_CURVE_NM_KEY: [40, 100, 60]})
    assert p.torque_curve_count == 3
    assert np.all(p.torque_curve_rpm[3:] == 0.0) and np.all(p.torque_curve_nm[3:] == 0.0)
    assert finalize_parameters(p) is p
    assert p.peak_torque_nm == 100.0
    with pytest.raises(ValueError, match="same length"):
        set_parameters(p, {TORQUE_CURVE_RPM_KEY: [1000, 4000], TORQUE_CURVE_NM_KEY: [40, 100, 60]})


def test_unknown_key_warns_once_and_returns_false(vehicle):
    p = vehicle.copy()
    with pytest.warns(UserWarning, match="engine.idle_rmp") as record:
        assert set_parameter(p, "engine.idle_rmp", 1300) is False
    assert len(record) == 1
    assert "engine.idle_rpm" in str(record[0].message)  # the suggestion
    assert p.idle_rpm == vehicle.idle_rpm
    with pytest.warns(UserWarning) as record:
        unknown = set_parameters(p, {"foo.bar": 1, "engine.idle_rpm": 1250, "dbw.steering.dealy_s": 0.1})
    assert unknown == ["foo.bar", "dbw.steering.dealy_s"]
    assert len(record) == 1
    assert "foo.bar" in str(record[0].message) and "dbw.steering.dealy_s" in str(record[0].message)
    assert p.idle_rpm == 1250.0
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert set_parameters(p, {"engine.idle_rpm": 1200}) == []
    with pytest.raises(ValueError, match=r"mass\.occupants = 9"):
        set_parameters(p, {"engine.idle_rpm": 1300, "mass.occupants": 9})
    assert p.idle_rpm == 1200.0  # all or nothing
    set_parameters(p, {"engine.idle_rpm": 1250, "mass.occupants": 2}, all_or_nothing=False)
    assert (p.idle_rpm, p.occupants) == (1250.0, 2)  # the same values without the copy
    with pytest.raises(ValueError, match=r"mass\.occupants = 9"):
        set_parameters(p, {"engine.idle_rpm": 1300, "mass.occupants": 9}, all_or_nothing=False)
    assert p.idle_rpm == 1300.0  # written straight: the caller drops such a record


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("engine.idle_rpm", float("nan"), r"engine\.idle_rpm = nan: " + IDLE_RANGE),
        ("engine.idle_rpm", float("inf"), r"engine\.idle_rpm = inf: " + IDLE_RANGE),
        ("engine.idle_rpm", 50, r"engine\.idle_rpm = 50: " + IDLE_RANGE),
        ("engine.idle_rpm", "1200", r"engine\.idle_rpm = '1200': " + IDLE_RANGE),
        ("mass.occupants", 7, r"mass\.occupants = 7: expected an integer in \[0, 6\]"),
        ("mass.occupants", 2.5, r"mass\.occupants = 2\.5: expected an integer in \[0, 6\]"),
        ("driveline.ebs", 2, r"driveline\.ebs = 2: expected 0 or 1"),
        ("mass.dry_kg", 0.0, r"mass\.dry_kg = 0: expected a finite number in \(0, 10000\] kg"),
        ("mass.dry_kg", -10.0, r"mass\.dry_kg = -10: expected a finite number in \(0, 10000\] kg"),
        ("dimensions.wheelbase_m", 0.0,
         r"dimensions\.wheelbase_m = 0: expected a finite number in \[0\.5, 6\] m"),
        ("tyre.vertical_stiffness_n_m", -1.0,
         r"tyre\.vertical_stiffness_n_m = -1: expected a finite number in \[20000, 1e\+07\] N/m"),
        ("suspension.front_wheel_rate_n_m", -2e4,
         r"suspension\.front_wheel_rate_n_m = -20000: expected a finite number in \(0, 1e\+06\] N/m"),
        ("dbw.brake.max_bar", float("nan"), r"dbw\.brake\.max_bar = nan: .*\(0, 300\] bar"),
    ],
)
def test_bad_values_raise_naming_key_and_range(vehicle, key, value, message):
    p = vehicle.copy()
    before = p[SCHEMA_BY_KEY[key].field]
    with pytest.raises(ValueError, match=message):
        set_parameter(p, key, value)
    assert p[SCHEMA_BY_KEY[key].field] == before


def test_finalize_rejects_values_written_directly(vehicle):
    p = vehicle.copy()
    p.tyre_vertical_stiffness_n_m = -5.0  # bypassing set_parameter
    p.idle_rpm = float("nan")
    with pytest.raises(ValueError) as info:
        finalize_parameters(p)
    text = str(info.value)
    assert "tyre.vertical_stiffness_n_m = -5: expected a finite number in [20000, 1e+07] N/m" in text
    assert "engine.idle_rpm = nan: expected a finite number in [100, 5000] rpm" in text


def test_unsorted_curve_is_rejected(vehicle):
    p = vehicle.copy()
    p.torque_curve_rpm[3] = p.torque_curve_rpm[2] - 100.0
    with pytest.raises(ValueError, match=r"engine\.torque_curve_rpm\[3\] = \d+: expected a finite number in "
                                         r"\(\d+, 20000\] rpm \(the curve's rpm must rise strictly\)"):
        finalize_parameters(p)
    q = vehicle.copy()
    q.torque_curve_nm[2] = -1.0
    with pytest.raises(ValueError, match=r"engine\.torque_curve_nm\[2\] = -1: .*\[0, 5000\] N m"):
        finalize_parameters(q)
    r = vehicle.copy()
    r.torque_curve_count = 1
    with pytest.raises(ValueError, match="2 to 16 torque-curve points"):
        finalize_parameters(r)


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"engine.idle_rpm": 4000, "engine.max_rpm": 3000},
         r"engine\.idle_rpm = 4000: .*engine\.max_rpm = 3000"),
        ({"cvt.high_ratio": 3.5}, r"cvt\.high_ratio = 3\.5: expected a value below cvt\.low_ratio = 3\.2"),
        ({"cvt.initial_ratio": 0.5}, r"cvt\.initial_ratio = 0\.5: expected a value in \[0\.75, 3\.2\]"),
        ({"cvt.engage_rpm": 3000}, r"cvt\.engage_rpm = 3000: expected a value below cvt\.full_engage_rpm"),
        ({"suspension.droop_m": 0.3}, r"suspension\.droop_m = 0\.3: expected a value in \[0, 0\.28\] m"),
        ({"suspension.bump_stop_length_m": 0.3}, r"suspension\.bump_stop_length_m = 0\.3: .*\[0, 0\.28\] m"),
        ({"fuel.initial_l": 50}, r"fuel\.initial_l = 50: expected a value in \[0, 43\] L"),
        ({"cvt.shift_light_rpm": 7000},
         r"cvt\.shift_light_rpm = 7000: expected a value in \[100, 6800\] rpm"),
        ({"mass.cargo_kg": 2000, "mass.cargo_x_m": -3.0},
         r"centre of mass .*cg_forward_m = -?[\d.]+ m is outside the wheelbase \(0, 3\.16\) m"),
        ({"mass.dry_cg_left_m": 0.9}, r"cg_left_m = [\d.]+ m is outside the front track \(-0\.66, 0\.66\) m"),
    ],
)
def test_cross_checks(vehicle, changes, message):
    p = vehicle.copy()
    set_parameters(p, changes)
    with pytest.raises(ValueError, match=message):
        finalize_parameters(p)
    assert p.mass_kg == vehicle.mass_kg  # a failed finalise leaves the derived fields alone


CROSS_FIELDS = ["idle_rpm", "max_rpm", "cvt_high_ratio", "cvt_low_ratio", "cvt_initial_ratio", "engage_rpm",
                "full_engage_rpm", "droop_m", "travel_m", "bump_stop_length_m", "fuel_tank_l", "fuel_initial_l",
                "tyre_section_m", "tyre_radius_m", "shift_light_rpm", "shift_full_rpm", "rear_low_ratio",
                "rear_high_ratio", "rear_reverse_ratio", "front_low_ratio", "front_high_ratio", "front_reverse_ratio",
                "front_drive_ratio", "front_ring_ratio"]


def test_the_jitted_cross_checks_agree_with_the_messages(vehicle):
    """``_cross_checks_pass`` (finalize's fast path) fails exactly when ``_validate_cross`` reports something:
    every field the cross checks read, moved by random positive factors around the thresholds (the range checks
    before them exclude the rest), one to three at a time, or set equal to another (the boundaries of the strict
    and non-strict comparisons)."""
    from acres_gym.params import _cross_checks_pass, _validate_cross
    from acres_gym.records import structured_view

    rng = np.random.default_rng(7)
    verdicts = set()
    for trial in range(3000):
        rec = np.zeros(1, vehicle.dtype).view(np.recarray)
        rec[0] = vehicle
        for name in rng.choice(CROSS_FIELDS, size=int(rng.integers(1, 4)), replace=False):
            if trial % 3 == 0:  # onto another field's value: equality cases
                rec[name] = rec[str(rng.choice(CROSS_FIELDS))]
            else:
                rec[name] = rec[name] * rng.choice([0.5, 0.9, 0.996, 0.999, 1.0, 1.001, 1.004, 1.1, 2.0])
        passed = bool(_cross_checks_pass(structured_view(rec), 0))
        assert passed == (not _validate_cross(rec[0])), {f: rec[f][0] for f in CROSS_FIELDS}
        verdicts.add(passed)
    assert verdicts == {True, False}


def test_fuel_check_only_with_a_modelled_tank(vehicle):
    p = vehicle.copy()
    set_parameters(p, {"fuel.tank_l": 0.0, "fuel.initial_l": 50.0})
    finalize_parameters(p)


# ----------------------------------------------------------------------------------------------------
# load_vehicle


def test_load_by_path_and_overrides(vehicle):
    p = load_vehicle(VEHICLE_FILE, overrides={"mass.occupants": 2, "mass.cargo_kg": 100.0})
    assert p.occupants == 2
    assert p.mass_kg == pytest.approx(vehicle.mass_kg + vehicle.occupant_kg + 100.0)
    assert isinstance(p, np.record) and p.dtype == PARAMS_DTYPE
    assert load_vehicle(str(VEHICLE_FILE)).mass_kg == pytest.approx(vehicle.mass_kg)
    with pytest.raises(ValueError, match="unknown override keys: 'mass.ocupants'.*mass.occupants"):
        load_vehicle(NAME, overrides={"mass.ocupants": 2})
    with pytest.raises(ValueError, match=r"mass\.occupants = 7: expected an integer in \[0, 6\]"):
        load_vehicle(NAME, overrides={"mass.occupants": 7})


def test_record_writes_through(vehicle):
    p = vehicle.copy()
    p.idle_rpm = 1111.0
    p.static_load_n[0] = 1.0
    assert p["idle_rpm"] == 1111.0 and p["static_load_n"][0] == 1.0


def test_unknown_vehicle_lists_available():
    with pytest.raises(UnknownVehicleError, match=rf"unknown vehicle 'no_such_utv'.*{NAME}"):
        load_vehicle("no_such_utv")
    with pytest.raises(ValueError):
        load_vehicle("no_such_utv")
    with pytest.raises(FileNotFoundError):
        load_vehicle("no_such_utv")


def test_missing_key_and_bad_leaf(tmp_path, doc):
    d = copy.deepcopy(doc)
    del d["engine"]["idle_rpm"]
    with pytest.raises(ValueError, match=r"missing parameter keys: engine\.idle_rpm"):
        load_vehicle(_write(tmp_path, d))
    d = copy.deepcopy(doc)
    del d["dbw"]["steering"]["delay_s"]["unit"]
    with pytest.raises(ValueError, match=r"leaf dbw\.steering\.delay_s lacks unit"):
        load_vehicle(_write(tmp_path, d))
    d = copy.deepcopy(doc)
    d["engine"]["idle_rpm"]["source"] = " "
    with pytest.raises(ValueError, match=r"engine\.idle_rpm has an empty source"):
        load_vehicle(_write(tmp_path, d))
    d = copy.deepcopy(doc)
    d["engine"]["idle_rpm"] = 1200
    with pytest.raises(ValueError, match=r"engine\.idle_rpm = 1200 is not a leaf"):
        load_vehicle(_write(tmp_path, d))
    d = copy.deepcopy(doc)
    d["mass"]["dry_kg"]["unit"] = "lb"
    with pytest.raises(ValueError, match=r"mass\.dry_kg has unit 'lb', expected 'kg'"):
        load_vehicle(_write(tmp_path, d))
    d = copy.deepcopy(doc)
    d["engine"]["idle_rpm"]["value"] = -1
    with pytest.raises(ValueError, match=r"engine\.idle_rpm = -1: " + IDLE_RANGE):
        load_vehicle(_write(tmp_path, d))


def test_unknown_json_keys_are_reported_not_fatal(tmp_path, doc, vehicle):
    d = copy.deepcopy(doc)
    d["engine"]["turbo_boost_bar"] = {"value": 1.0, "unit": "bar", "source": "estimate: none"}
    d["extras"] = {"colour": {"value": 3, "unit": "1", "source": "estimate: none"}}
    with pytest.warns(UserWarning, match=r"engine\.turbo_boost_bar.*extras\.colour") as record:
        p = load_vehicle(_write(tmp_path, d))
    assert len(record) == 1
    assert p.mass_kg == pytest.approx(vehicle.mass_kg)


def test_config_dir_env_var(tmp_path, monkeypatch, doc):
    (tmp_path / "vehicles").mkdir()
    d = copy.deepcopy(doc)
    _set_leaf(d, "mass.cargo_kg", 50.0)
    _write(tmp_path / "vehicles", d, "test_utv.json")
    monkeypatch.setenv(paths.CONFIG_DIR_ENV, str(tmp_path))
    assert paths.available_vehicles() == ["test_utv"]
    assert load_vehicle("test_utv").cargo_kg == 50.0
    with pytest.raises(UnknownVehicleError, match="available vehicles in .*: test_utv"):
        load_vehicle(NAME)


# ----------------------------------------------------------------------------------------------------
# Export and batches


def test_table_and_dict_round_trip(vehicle):
    table = parameter_table(vehicle)
    keys = [k for k, _v, _u in table]
    assert len(keys) == len(set(keys)) == len(SCHEMA) + 2 + len(DERIVED)
    d = params_to_dict(vehicle)
    assert d["engine.idle_rpm"] == vehicle.idle_rpm
    assert d["derived.mass_kg"] == vehicle.mass_kg
    assert len(d[TORQUE_CURVE_RPM_KEY]) == vehicle.torque_curve_count
    assert len(d["derived.static_load_n"]) == 4
    json.dumps(d)  # plain Python values
    primary = params_to_dict(vehicle, derived=False)
    assert not any(k.startswith("derived.") for k in primary)
    again = load_vehicle(NAME, overrides=primary)
    assert again.tobytes() == vehicle.tobytes()


def test_make_params_array(vehicle):
    batch = make_params_array(vehicle, 3)
    assert isinstance(batch, np.recarray) and batch.shape == (3,) and batch.dtype == PARAMS_DTYPE
    assert batch.flags.c_contiguous
    np.testing.assert_array_equal(batch.mass_kg, [vehicle.mass_kg] * 3)
    heavy = load_vehicle(NAME, overrides={"mass.occupants": 4})
    mixed = make_params_array([vehicle, heavy], 2)
    assert mixed.occupants.tolist() == [1, 4]
    batch.idle_rpm[0] = 999.0  # a copy, not a view of the record
    assert vehicle.idle_rpm != 999.0
    with pytest.raises(ValueError, match="expected 3 parameter records, got 2"):
        make_params_array([vehicle, heavy], 3)
    with pytest.raises(ValueError, match="not finalised"):
        make_params_array(new_params(), 2)
    with pytest.raises(ValueError, match="n = 0"):
        make_params_array(vehicle, 0)


def test_front_gearing_must_give_the_front_ring_ratio():
    """The model turns the front ring at rear / (front x front drive) of the carrier; a gearing that
    contradicts driveline.front_ring_ratio is refused, naming the key."""
    p = load_vehicle("polaris_ranger_crew_xp1000")
    for gear in ("low", "high", "reverse"):
        ring = p[f"rear_{gear}_ratio"] / (p[f"front_{gear}_ratio"] * p.front_drive_ratio)
        assert abs(ring - p.front_ring_ratio) < 0.005 * p.front_ring_ratio
    with pytest.raises(ValueError, match="driveline.front_high_ratio"):
        load_vehicle("polaris_ranger_crew_xp1000", overrides={"driveline.front_high_ratio": 3.0})


def test_finalize_with_primary_values_checked_skips_only_the_range_checks():
    """``primary_checked=True`` (the episode randomiser: a finalised base with checked overrides) derives the same
    record; the cross checks still run, the per-value ranges do not."""
    from acres_gym.params import finalize_parameters, load_vehicle, set_parameters
    from acres_gym.sim import DEFAULT_VEHICLE

    base = load_vehicle(DEFAULT_VEHICLE)
    full, quick = base.copy(), base.copy()
    for rec in (full, quick):
        set_parameters(rec, {"mass.cargo_kg": 180.0, "mass.occupants": 3})
    finalize_parameters(full)
    finalize_parameters(quick, primary_checked=True)
    assert full.tobytes() == quick.tobytes()
    crossed = base.copy()
    crossed.idle_rpm = crossed.max_rpm + 100.0
    with pytest.raises(ValueError, match="engine.idle_rpm"):
        finalize_parameters(crossed, primary_checked=True)
    out_of_range = base.copy()
    out_of_range.dry_mass_kg = -1.0  # below its range, and still a positive total mass
    with pytest.raises(ValueError, match="mass.dry_kg|dry_mass"):
        finalize_parameters(out_of_range)
    finalize_parameters(out_of_range, primary_checked=True)  # the caller vouched for the values


def test_finalize_derives_the_same_record_wherever_it_lives():
    """A record in a one-row array is derived in place; a row of a longer or two-dimensional array, or of a plain
    structured array, through a copy: the same bytes every way, and the array's other rows untouched."""
    from acres_gym.sim import DEFAULT_VEHICLE

    vehicle = load_vehicle(DEFAULT_VEHICLE)
    one = np.recarray(1, PARAMS_DTYPE)
    one[0] = vehicle
    one.cargo_kg[0] = 300.0
    finalize_parameters(one[0])
    assert one.mass_kg[0] == vehicle.mass_kg + 300.0
    grid = np.zeros((2, 2), PARAMS_DTYPE).view(np.recarray)
    grid[1, 1] = vehicle
    grid.cargo_kg[1, 1] = 300.0
    finalize_parameters(grid[1, 1])
    rows = np.zeros(3, PARAMS_DTYPE)
    rows[2] = vehicle
    rows["cargo_kg"][2] = 300.0
    finalize_parameters(rows[2])
    assert grid[1, 1].tobytes() == one[0].tobytes() == rows[2].tobytes()
    assert rows["mass_kg"][0] == 0.0 and grid.mass_kg[0, 0] == 0.0
