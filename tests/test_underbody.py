"""The chassis underside against the ground (``model/underbody.py``) and the wheel's sinkage bound
(``model/wheel.py``): a vehicle sunk to its ground clearance rests on its underbody, high-centred."""

import json

import gymnasium
import numpy as np
import pytest

import acres_gym  # noqa: F401  (registers the ids)
from acres_gym.constants import DRIVE_ALL_WHEEL, GEAR_LOW, GEAR_NEUTRAL, STANDARD_GRAVITY_MPS2
from acres_gym.model.ledger import stored_energy
from acres_gym.paths import config_path
from acres_gym.sim import RangerSim
from acres_gym.terrain import flat

SOILS = sorted(json.loads(config_path("soils.json").read_text())["soils"])


def _dropped(surface, height_m=0.3, seconds=5.0, throttle_pct=0.0):
    """A vehicle let fall ``height_m`` onto flat ``surface``; returns the sim and the largest sinkage seen."""
    sim = RangerSim(1, terrain=flat(surface))
    gear = GEAR_LOW if throttle_pct > 0.0 else GEAR_NEUTRAL
    sim.state.gear = sim.state.gear_target = gear
    sim.commands.drive_mode = DRIVE_ALL_WHEEL
    sim.commands.driver_throttle_pct = throttle_pct
    sim.state.position_m[0, 2] += height_m
    sim.state.e_stored0_j[0] = sim.state.e_stored_j[0] = stored_energy(sim.params_plain[0], sim.state_plain[0])
    deepest = 0.0
    for _ in range(int(seconds * 120)):
        sim.step(1)
        deepest = max(deepest, float(sim.state.sinkage_m[0].max()))
    return sim, deepest


@pytest.mark.parametrize("soil", SOILS)
def test_sinkage_never_exceeds_the_tyre_radius(soil):
    sim, deepest = _dropped(soil, throttle_pct=100.0)
    assert deepest <= sim.params.tyre_radius_m[0]
    assert not sim.state.diverged[0]


def test_a_vehicle_dropped_onto_deep_snow_ends_high_centred():
    sim, deepest = _dropped("snow")
    s = sim.state[0]
    weight = sim.params.mass_kg[0] * STANDARD_GRAVITY_MPS2
    assert deepest == pytest.approx(sim.params.tyre_radius_m[0])  # the wheels sank to the bound
    assert s.high_centred
    assert 0.03 * weight < s.underbody_load_n < 0.5 * weight
    # at rest: the wheels and the underbody carry the weight
    assert s.underbody_load_n + s.normal_load_n.sum() == pytest.approx(weight, rel=0.02)
    assert abs(s.velocity_mps).max() < 0.01


@pytest.mark.parametrize("surface", ["dry_asphalt", "dry_sand", "sandy_loam"])
def test_firm_ground_leaves_the_underbody_clear(surface):
    sim, _ = _dropped(surface)
    assert not sim.state.high_centred[0] and sim.state.underbody_load_n[0] == 0.0


def test_a_high_centred_vehicle_stays_put_under_full_throttle():
    """On deep snow in L / AWD at full throttle: the wheels spin, the underbody rests and the soil holds."""
    sim, _ = _dropped("snow", throttle_pct=100.0, seconds=10.0)
    s = sim.state[0]
    assert s.high_centred
    assert np.hypot(*s.velocity_mps[:2]) < 0.2
    assert s.wheel_omega_rad_s[2:].mean() > 5.0


def test_the_ledger_closes_through_a_drop_onto_snow():
    """The fall and the sinking's potential energy go to the dampers and, through the underbody, the soil;
    the books close within 1 % of it."""
    sim, _ = _dropped("snow")
    book = sim.ledger(0)
    assert book["stored_change_j"] < -3000.0
    assert book["soil_j"] > 50.0
    assert abs(book["residual_j"]) < 0.01 * abs(book["stored_change_j"])


def test_navigation_reports_a_high_centred_end():
    """A navigation episode on ground turned to snow ends stuck with the underbody on the snow: its
    ``ground_cause`` is 4 (high-centred)."""
    env = gymnasium.make("acres_gym/RangerOffroadNavigation-v2",
                         config={"randomization": {"terrain": {"size_m": 200.0}},
                                 "task_options": {"terrain": {"goal_distance_m": [60, 100]}}})
    env.reset(seed=2)
    sim = env.unwrapped._batch.sim
    snow = sim.terrain.surfaces.surface_id("snow")
    sim.terrain.surface_id[0][:] = snow
    drive = np.array([1.0, 0.0, 1.0, 1.0], np.float32)
    for _ in range(400):
        _, _, terminated, truncated, info = env.step(drive)
        if terminated or truncated:
            break
    assert info["stuck"] and info["ground_cause"] == 4
    env.close()
