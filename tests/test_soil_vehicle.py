"""The Ranger on deformable ground: Wong's tyre on soil inside the vehicle model."""

import math

import numpy as np
import pytest

from acres_gym.constants import DRIVE_ALL_WHEEL, DRIVE_TWO_WHEEL, GEAR_HIGH
from acres_gym.model.soil import drawbar_pull
from acres_gym.params import load_vehicle
from acres_gym.sim import RangerSim
from acres_gym.terrain import flat, surface_row, with_patches
from acres_gym.tools import scenarios


@pytest.mark.parametrize("soil", ["dry_sand", "sandy_loam", "clayey_soil"])
def test_static_sinkage_on_the_vehicle_matches_the_closed_form(soil):
    r = scenarios.soil_static_sinkage(soil)
    assert r["max_relative_error"] < 0.10
    assert np.all(r["sinkage_m"] > 0.005)


def test_drawbar_pull_rises_monotonically_to_a_plateau_on_dry_sand():
    p = load_vehicle("polaris_ranger_crew_xp1000")
    row = surface_row("dry_sand")
    load = float(p.static_load_n[2])
    slips = np.linspace(0.0, 1.0, 101)
    pulls = np.array([
        drawbar_pull(i, load, p.tyre_width_m[2], p.tyre_radius_m, p.tyre_inflation_kpa * 1e3,
                     p.tyre_carcass_pressure_kpa * 1e3, p.tyre_vertical_stiffness_n_m, p.tyre_hysteresis,
                     p.tyre_section_m, row.soil_n, row.soil_kc, row.soil_kphi, row.soil_cohesion_pa,
                     math.radians(row.soil_friction_deg), row.soil_shear_modulus_m, p.tyre_shear_compliance_m,
                     p.tyre_lug_area_share, p.tyre_lug_height_m)
        for i in slips])
    assert np.all(np.diff(pulls) > 0.0)
    gains = np.diff(pulls)
    assert gains[-1] < 0.1 * gains[0]  # flattening toward the plateau
    print("dry sand DP/W at 20 % slip:", pulls[20] / load)


def test_sand_is_slower_than_asphalt_and_its_motion_resistance():
    asphalt = scenarios.full_throttle(GEAR_HIGH, seconds=30.0)
    sand = scenarios.full_throttle(GEAR_HIGH, seconds=30.0, terrain=flat("dry_sand"))
    assert sand["top_speed_mps"] < asphalt["top_speed_mps"] - 2.0
    r = scenarios.soil_motion_resistance("dry_sand", 5.0)
    assert abs(r["speed_mps"] - 5.0) < 0.3
    assert 0.04 <= r["coefficient"] <= 0.25
    print(f"dry sand motion resistance at 5 m/s: {r['coefficient']:.3f}")


def test_soft_grade_2wd_stalls_awd_climbs():
    """20 % dry sand with 450 kg in L: two driven tyres cannot pull the grade, four can (the hill-start
    limits of ``terrain.trafficability``: about 15 % in 2WD, 27 % in AWD)."""
    two = scenarios.grade_climb("dry_sand", DRIVE_TWO_WHEEL, percent=20.0, cargo_kg=450.0)
    awd = scenarios.grade_climb("dry_sand", DRIVE_ALL_WHEEL, percent=20.0, cargo_kg=450.0)
    assert two["speed_mps"] < 0.3 and two["rear_slip"] > 0.8
    assert awd["speed_mps"] > 1.0 and awd["climbed_m"] > 10.0


def test_wet_sandy_loam_grade_stalls_in_both_modes():
    """Wet sandy loam: no tyre pulls itself along on fresh soil (Wong's drawbar pull is negative at every
    slip), so 15 % stalls in AWD as in 2WD."""
    for mode in (DRIVE_TWO_WHEEL, DRIVE_ALL_WHEEL):
        r = scenarios.grade_climb("sandy_loam_wet", mode, percent=15.0, cargo_kg=450.0)
        assert r["speed_mps"] < 0.3 and r["climbed_m"] < 1.0 and r["rear_slip"] > 0.8


def test_asphalt_to_sand_has_no_force_spike():
    r = scenarios.surface_transition("dry_asphalt", "dry_sand", 10.0)
    assert r["peak_load_ratio"] < 2.0


def test_energy_ledger_closes_on_soil():
    book = scenarios.drive_cycle_ledger(60.0, terrain=flat("sandy_loam"))
    assert book["soil_j"] > 0.02 * book["fuel_j"]
    assert abs(book["residual_share"]) < 0.01


def test_patches_put_each_wheel_on_its_own_surface():
    """On a patchwork of asphalt and sand each wheel reads the surface under its own contact point:
    wheels on sand sink, wheels that have been on asphalt for a while do not."""
    terrain = with_patches(flat("dry_asphalt", size_m=100.0, cell_m=0.5), np.random.default_rng(2),
                           {"dry_asphalt": 1.0, "dry_sand": 1.0}, scale_m=4.0)
    sim = RangerSim(1, terrain=terrain)
    sand = sim.terrain.surfaces.surface_id("dry_sand")
    sim.commands.driver_throttle_pct = 40.0
    seen = set()
    mixed = 0
    for _ in range(80):
        sim.step(6)
        ids = sim.state.surface_id[0]
        seen.update(int(i) for i in ids)
        if (ids == sand).any() and (ids != sand).any():
            mixed += 1
            sinking = sim.state.sinkage_m[0][ids == sand]
            assert np.all(sinking > 0.0)
    assert seen == {sand, sim.terrain.surfaces.surface_id("dry_asphalt")}
    assert mixed > 0


def test_low_range_climbs_a_steep_soft_grade_where_high_range_stalls():
    """35 % sandy loam with 450 kg, AWD, full throttle from rest: L has 2.25x the wheel torque of H (rear
    ratios 26.19 / 11.64) and climbs (its hill-start limit is about 39 %, so slowly, at 60-70 % slip); H cannot
    turn the wheels against the grade."""
    high = scenarios.grade_climb("sandy_loam", DRIVE_ALL_WHEEL, percent=35.0, gear=GEAR_HIGH)
    low = scenarios.grade_climb("sandy_loam", DRIVE_ALL_WHEEL, percent=35.0)
    assert high["speed_mps"] < 0.3 and high["climbed_m"] < 1.0
    assert low["speed_mps"] > 1.5 and low["climbed_m"] > 15.0
