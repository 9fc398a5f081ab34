"""Wong's contact on soil inside the vehicle: a wheel's net pull is its shear thrust at the slip less its
motion resistance, a force at the contact that acts as friction at rest (``model/wheel.py: soil_contact``,
``model/chassis.py: contact_impulses``)."""

import json

import numpy as np
import pytest

from acres_gym.constants import DRIVE_ALL_WHEEL, GEAR_LOW, GEAR_NEUTRAL, STANDARD_GRAVITY_MPS2
from acres_gym.params import load_vehicle
from acres_gym.paths import config_path
from acres_gym.sim import RangerSim
from acres_gym.terrain import flat, surface_row
from acres_gym.terrain.trafficability import level_pull_n
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
