"""Wong's contact on soil inside the vehicle: a wheel's net pull is its shear thrust at the slip less its
motion resistance, a force at the contact that acts as friction at rest (``model/wheel.py: soil_contact``,
``model/chassis.py: contact_impulses``)."""

import json

import numpy as np
import pytest

from acres_gym.constants import DRIVE_ALL_WHEEL, GEAR_LOW, GEAR_NEUTRAL, STANDARD_GRAVITY_MPS2
from acres_gym.envs.tasks.trafficability import level_pull_n
from acres_gym.params import load_vehicle
from acres_gym.paths import config_path
from acres_gym.sim import RangerSim
from acres_gym.terrain import flat, surface_row
from acres_gym.tools import scenarios

SOILS = sorted(json.loads(config_path("soils.json").read_text())["soils"])
SLIPS = np.linspace(0.0, 1.0, 51)


@pytest.mark.parametrize("soil", SOILS)
def test_a_wheel_held_at_a_slip_pulls_what_wongs_drawbar_pull_says(soil):
    for slip in (0.05, 0.2, 0.5, 0.8):
        r = scenarios.soil_wheel_rig(soil, slip)
        assert abs(r["slip"] - slip) < 0.01, (soil, slip, r)
        assert abs(r["pull_over_load"] - r["model_over_load"]) < 0.05, (soil, slip, r)


def _vehicle_pull_over_weight(soil):
    p = load_vehicle("polaris_ranger_crew_xp1000")
    row = surface_row(soil)
    weight = float(p.static_load_n.sum())
    return np.array([level_pull_n(p, row, float(i)) for i in SLIPS]) / weight


def _single_wheel_pull_over_load(soil):
    return np.array([scenarios.soil_drawbar_pull(soil, float(i))["pull_over_load"] for i in SLIPS])


def test_the_rigs_drawbar_pull_is_wongs_curve_at_its_slip():
    """A rig result is not trivially the model's: at a slip it misses by the curve's own change."""
    near = scenarios.soil_wheel_rig("dry_sand", 0.2)
    far = scenarios.soil_wheel_rig("dry_sand", 0.5)
    assert far["pull_over_load"] - near["pull_over_load"] > 0.1


@pytest.mark.parametrize("soil", SOILS)
def test_full_throttle_on_level_soil_goes_where_the_pull_says(soil):
    """L, AWD, 10 s of full throttle from rest: where the vehicle's drawbar pull (every wheel, the rear
    ones in the front ruts) is negative at every slip it stays below 1 m/s; where it exceeds 0.1 of the
    weight at some slip it passes 2 m/s."""
    vehicle = _vehicle_pull_over_weight(soil)
    wheel = _single_wheel_pull_over_load(soil)
    r = scenarios.full_throttle(GEAR_LOW, DRIVE_ALL_WHEEL, seconds=10.0, terrain=flat(soil))
    speed = r["top_speed_mps"]
    if vehicle.max() < 0.0:
        assert speed < 1.0, (soil, vehicle.max(), speed)
    elif vehicle.max() > 0.1:
        assert speed > 2.0, (soil, vehicle.max(), speed)
    print(f"{soil}: max pull/load {wheel.max():+.3f} (wheel), {vehicle.max():+.3f} (vehicle); 10 s: {speed:.2f} m/s")


def test_the_stall_soils_stop_the_vehicle_where_the_old_contact_let_it_run():
    """Snow and wet sandy loam: no tyre pulls at any slip on fresh soil (the rear ones in the ruts gain
    at most 0.02 W over the whole vehicle), and the vehicle does not propel itself."""
    for soil in ("snow", "sandy_loam_wet"):
        assert _single_wheel_pull_over_load(soil).max() < 0.0
        assert _vehicle_pull_over_weight(soil).max() < 0.02
        r = scenarios.full_throttle(GEAR_LOW, DRIVE_ALL_WHEEL, seconds=10.0, terrain=flat(soil))
        assert r["top_speed_mps"] < 1.0
        assert r["rear_spin_rad_s"] > 5.0  # the wheels spin in place: the engine drives them, the soil holds


def test_contact_resistance_never_pushes_a_parked_vehicle():
    sim = RangerSim(1, terrain=flat("dry_sand"))
    sim.state.gear = GEAR_NEUTRAL
    sim.state.gear_target = GEAR_NEUTRAL
    sim.run_seconds(2.0)
    x0 = sim.state.position_m[0].copy()
    sim.run_seconds(3.0)
    assert np.all(np.abs(sim.state.contact_resistance_n[0]) < 1.0)
    assert np.hypot(*(sim.state.position_m[0, :2] - x0[:2])) < 1e-3  # the sinkage settling, not a push


def test_contact_resistance_opposes_travel_with_its_full_capacity_when_moving():
    sim = RangerSim(1, terrain=flat("dry_sand"))
    sim.state.gear = GEAR_NEUTRAL
    sim.state.gear_target = GEAR_NEUTRAL
    sim.state.velocity_mps[0, 0] = 5.0
    sim.state.wheel_omega_rad_s[0, :] = 5.0 / sim.state.rolling_radius_m[0]
    sim.step(60)
    s = sim.state[0]
    assert s.velocity_mps[0] > 1.0
    np.testing.assert_allclose(-s.contact_resistance_n, s.motion_resistance_n, rtol=1e-12)
    weight = sim.params.mass_kg[0] * STANDARD_GRAVITY_MPS2
    assert 0.05 < s.motion_resistance_n.sum() / weight < 0.3


WET_SETS = {"sandy_loam": "sandy_loam_lll_wet", "clayey_soil": "clayey_soil_wet", "heavy_clay": "heavy_clay_wet",
            "lean_clay": "lean_clay_wet", "michigan_sandy_loam": "michigan_sandy_loam_wet",
            "hanamoto_sandy_loam": "sandy_loam_wet"}  # Wong's Table 2.3: the same soil at two moisture contents


def test_the_library_names_each_wet_set_with_its_moisture():
    library = json.loads(config_path("soils.json").read_text())["soils"]
    named = {name: entry["wet"]["value"] for name, entry in library.items() if "wet" in entry}
    assert named == WET_SETS
    for dry, wet in WET_SETS.items():
        assert library[wet]["moisture"]["value"] > library[dry]["moisture"]["value"]
        assert "Table 2.3" in library[dry]["wet"]["source"]
        row = surface_row(dry)
        wet_row = surface_row(wet)
        for f in ("n", "kc", "kphi", "cohesion_pa", "friction_deg", "shear_modulus_m"):
            assert row[f"soil_wet_{f}"] == wet_row[f"soil_{f}"]


@pytest.mark.parametrize("soil", sorted(WET_SETS))
def test_wetness_moves_a_soil_to_its_wet_measurement(soil):
    """The rig at wetness 0 pulls what the soil's own (dry) parameters give, at wetness 1 what its wet
    measurement's give: different figures, each Wong's for its cited set."""
    dry = scenarios.soil_wheel_rig(soil, 0.2, wetness=0.0)
    wet = scenarios.soil_wheel_rig(soil, 0.2, wetness=1.0)
    wet_soil = scenarios.soil_wheel_rig(WET_SETS[soil], 0.2, wetness=0.0)
    assert abs(dry["pull_over_load"] - wet["pull_over_load"]) > 0.05, (dry, wet)
    assert abs(wet["pull_over_load"] - wet_soil["pull_over_load"]) < 0.01
    assert abs(wet["model_over_load"] - wet_soil["model_over_load"]) < 0.01
    for r in (dry, wet):
        assert abs(r["pull_over_load"] - r["model_over_load"]) < 0.05
    half = scenarios.soil_drawbar_pull(soil, 0.2, wetness=0.5)["pull_over_load"]
    ends = sorted(scenarios.soil_drawbar_pull(soil, 0.2, wetness=w)["pull_over_load"] for w in (0.0, 1.0))
    assert ends[0] - 0.05 <= half <= ends[1] + 0.05


def test_a_soil_without_a_wet_measurement_ignores_wetness():
    a = scenarios.soil_wheel_rig("dry_sand", 0.2, wetness=0.0)
    b = scenarios.soil_wheel_rig("dry_sand", 0.2, wetness=1.0)
    assert a["pull_over_load"] == b["pull_over_load"]


def test_soil_at_wetness_ends_are_the_two_sets_exactly():
    from acres_gym.model.soil import soil_at_wetness
    row = surface_row("sandy_loam")
    wet = surface_row("sandy_loam_lll_wet")
    fields = ("n", "kc", "kphi", "cohesion_pa", "friction_deg", "shear_modulus_m")
    assert soil_at_wetness(row, 0.0) == tuple(row[f"soil_{f}"] for f in fields)
    np.testing.assert_allclose(soil_at_wetness(row, 1.0), [wet[f"soil_{f}"] for f in fields], rtol=1e-12)
    mid = soil_at_wetness(row, 0.5)
    assert mid[2] == pytest.approx(np.sqrt(row.soil_kphi * wet.soil_kphi))  # k_phi geometric
    assert mid[0] == pytest.approx(0.5 * (row.soil_n + wet.soil_n))  # n linear


def test_a_clay_that_the_tyre_does_not_sink_into_grips_as_rubber_on_firm_earth():
    """Dry heavy and lean clay bear the tyre without sinkage: the lugs cannot shear the soil, whose
    Mohr-Coulomb strength (A c + W tan phi) exceeds the load, so the shear runs along the rubber-soil
    interface at the rubber's friction on firm earth (``soil.RUBBER_ON_FIRM_SOIL_MU``). Their hill-start
    limits lie below dry asphalt's in every range and mode, and the simulated vehicle agrees: 50 % of dry
    heavy clay stalls in L / AWD where 50 % of dry asphalt climbs."""
    from acres_gym.constants import DRIVE_TWO_WHEEL, GEAR_HIGH
    from acres_gym.envs.tasks.trafficability import grade_limit
    from acres_gym.model.soil import RUBBER_ON_FIRM_SOIL_MU, max_shear_force, tyre_on_soil, tyre_shear_limit
    p = load_vehicle("polaris_ranger_crew_xp1000")
    load = float(p.static_load_n[2])
    asphalt = surface_row("dry_asphalt")
    for clay in ("heavy_clay", "lean_clay"):
        row = surface_row(clay)
        z, length, *_ = tyre_on_soil(load, p.tyre_width_m[2], p.tyre_radius_m, p.tyre_inflation_kpa * 1e3,
                                     p.tyre_carcass_pressure_kpa * 1e3, p.tyre_vertical_stiffness_n_m,
                                     p.tyre_hysteresis, p.tyre_section_m, row.soil_n, row.soil_kc, row.soil_kphi)
        args = (load, p.tyre_width_m[2] * length, length, row.soil_cohesion_pa, np.radians(row.soil_friction_deg),
                p.tyre_lug_area_share, p.tyre_lug_height_m)
        assert z < 1e-3 and max_shear_force(*args) > load
        assert tyre_shear_limit(*args, z) == pytest.approx(RUBBER_ON_FIRM_SOIL_MU * load, rel=0.05)
        for gear in (GEAR_HIGH, GEAR_LOW):
            for mode in (DRIVE_TWO_WHEEL, DRIVE_ALL_WHEEL):
                assert grade_limit(p, row, 0.0, gear, mode) <= grade_limit(p, asphalt, 0.0, gear, mode) + 1e-9
    # a soil the lugs sink into keeps its own strength
    sand = surface_row("dry_sand")
    z = scenarios.soil_static_sinkage("dry_sand")["sinkage_m"].min()
    assert z > p.tyre_lug_height_m
    assert tyre_shear_limit(1000.0, 0.05, 0.2, sand.soil_cohesion_pa, np.radians(sand.soil_friction_deg),
                            0.3, 0.019, z) == max_shear_force(1000.0, 0.05, 0.2, sand.soil_cohesion_pa,
                                                              np.radians(sand.soil_friction_deg), 0.3, 0.019)
    clay = scenarios.grade_climb("heavy_clay", DRIVE_ALL_WHEEL, percent=50.0, cargo_kg=0.0, seconds=6.0)
    paved = scenarios.grade_climb("dry_asphalt", DRIVE_ALL_WHEEL, percent=50.0, cargo_kg=0.0, seconds=6.0)
    assert clay["climbed_m"] < 1.5 and paved["climbed_m"] > 10.0
