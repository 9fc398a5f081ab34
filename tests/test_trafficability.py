"""Trafficability (acres_gym.envs.tasks.trafficability) against full simulations of hill starts.

Every case is one vehicle of one RangerSim (each on its own slope of the surface): the brake held at
80 bar with full throttle for 1.5 s (the engine settles against the slipping clutch, no roll-back), then
the brake released and 5 s at full throttle in the case's range and drive mode. "climbs": more than 3 m
up the slope and still above 0.5 m/s; "stalls": less than 1.5 m.
"""

import math

import numpy as np
import pytest

from acres_gym.constants import DRIVE_ALL_WHEEL, DRIVE_TWO_WHEEL, GEAR_HIGH, GEAR_LOW, STANDARD_GRAVITY_MPS2
from acres_gym.envs.tasks.trafficability import (
    WETNESS_BINS,
    drawbar_margin_n,
    engine_force_n,
    grade_limit,
    grade_limit_table,
    trafficability,
    verdict,
)
from acres_gym.params import load_vehicle
from acres_gym.sim import RangerSim
from acres_gym.terrain import TerrainStack, default_surfaces, slope

# (surface, grade %, range, drive mode, expected verdict of the function)
CASES = [
    ("sandy_loam", 10, "H", "2wd", "climbs"),
    ("sandy_loam", 25, "L", "awd", "climbs"),
    ("sandy_loam", 60, "L", "awd", "stalls"),
    ("dry_sand", 15, "H", "awd", "climbs"),
    ("clayey_soil_wet", 25, "L", "awd", "stalls"),
    ("clayey_soil_wet", 5, "L", "awd", "climbs"),
    ("snow", 20, "L", "2wd", "stalls"),
    ("snow", 0, "L", "awd", "climbs"),
    ("sandy_loam_wet", 12, "H", "2wd", "stalls"),
    ("ice", 15, "L", "awd", "stalls"),
    ("sandy_loam_wet", 0, "L", "awd", "climbs"),
    ("dry_asphalt", 50, "L", "awd", "climbs"),
    ("dry_asphalt", 85, "L", "awd", "stalls"),
    ("grass", 30, "L", "2wd", "stalls"),
    ("grass", 30, "L", "awd", "climbs"),
    ("lete_sand", 35, "H", "2wd", "stalls"),
    ("lete_sand", 35, "L", "awd", "climbs"),
    ("clayey_soil", 15, "L", "2wd", "stalls"),
    ("clayey_soil", 8, "L", "awd", "climbs"),
    ("packed_dirt", 45, "L", "awd", "climbs"),
    ("mud", 20, "L", "awd", "climbs"),
]
GEARS = {"H": GEAR_HIGH, "L": GEAR_LOW}
MODES = {"2wd": DRIVE_TWO_WHEEL, "awd": DRIVE_ALL_WHEEL}


@pytest.fixture(scope="module")
def vehicle():
    return load_vehicle("polaris_ranger_crew_xp1000")


@pytest.fixture(scope="module")
def simulated():
    """Distance climbed and final speed of every case, all cases in one RangerSim."""
    terrains = [slope(g, surface=s, size_m=60.0) for s, g, _, _, _ in CASES]
    sim = RangerSim(len(CASES), terrain=TerrainStack.from_terrains(terrains))
    idx = np.arange(len(CASES))
    sim.reset(indices=idx, x_m=0.0, y_m=0.0, yaw_rad=0.0, terrain_index=idx)
    for k, (_s, _g, r, m, _v) in enumerate(CASES):
        sim.state.gear[k] = sim.state.gear_target[k] = GEARS[r]
        sim.commands.drive_mode[k] = MODES[m]
    sim.commands.driver_throttle_pct = 100.0
    sim.commands.driver_brake_bar = 80.0
    sim.run_seconds(1.5)
    x0 = sim.state.position_m[:, 0].copy()
    sim.commands.driver_brake_bar = 0.0
    sim.run_seconds(5.0)
    return sim.state.position_m[:, 0] - x0, sim.speed_mps.copy()


def test_enough_decisive_cases(vehicle):
    """At least 12 cases, both outcomes, every one decisive (not "marginal")."""
    verdicts = [verdict(vehicle, trafficability(vehicle, s, 0.0, g)[(r, m)]) for s, g, r, m, _ in CASES]
    assert verdicts == [case[4] for case in CASES]
    assert len(CASES) >= 12 and verdicts.count("climbs") >= 6 and verdicts.count("stalls") >= 6


@pytest.mark.parametrize("k", range(len(CASES)), ids=[f"{c[0]}-{c[1]}pct-{c[2]}-{c[3]}" for c in CASES])
def test_function_agrees_with_simulation(simulated, k):
    climbed, speed = simulated
    expected = CASES[k][4]
    if expected == "climbs":
        assert climbed[k] > 3.0 and speed[k] > 0.5, (climbed[k], speed[k])
    else:
        assert climbed[k] < 1.5, (climbed[k], speed[k])


def test_awd_never_below_two_wheel_and_l_never_below_h(vehicle):
    for name in default_surfaces().names:
        for grade in (0.0, 20.0, 40.0):
            t = trafficability(vehicle, name, 0.3, grade)
            assert t[("L", "awd")] >= t[("L", "2wd")] - 1e-9
            assert t[("L", "awd")] >= t[("H", "awd")] - 1e-9
            assert t[("H", "turf")] == pytest.approx(t[("H", "2wd")])


def test_grade_term_and_grade_limit(vehicle):
    """On asphalt (load transfer aside) a grade costs m g sin(theta); the grade limit is the root."""
    table = default_surfaces()
    row = table.row("sandy_loam")
    weight = vehicle.mass_kg * STANDARD_GRAVITY_MPS2
    m0 = drawbar_margin_n(vehicle, row, 0.0, 0.0, GEAR_LOW, DRIVE_ALL_WHEEL)
    assert m0 > 0.0
    g = grade_limit(vehicle, row, 0.0, GEAR_LOW, DRIVE_ALL_WHEEL)
    assert abs(drawbar_margin_n(vehicle, row, 0.0, g, GEAR_LOW, DRIVE_ALL_WHEEL)) < 1e-3 * weight
    # the engine side: H on dry asphalt is engine-limited, L is not (2.25x the rear ratio)
    ratio = engine_force_n(vehicle, GEAR_LOW) / engine_force_n(vehicle, GEAR_HIGH)
    assert ratio == pytest.approx(vehicle.rear_low_ratio / vehicle.rear_high_ratio)
    lim = grade_limit_table(np.array([vehicle]), table.records)
    assert lim.shape == (len(table), WETNESS_BINS, 2, 3)
    k = table.surface_id("sandy_loam")
    # the table leaves out the rut credit: the same where traction limits (L), lower where the engine does (H)
    assert lim[k, 0, 1, 2] == pytest.approx(g)
    assert lim[k, 0, 0, 2] < grade_limit(vehicle, row, 0.0, GEAR_HIGH, DRIVE_ALL_WHEEL)
    asphalt = table.surface_id("dry_asphalt")
    assert lim[asphalt, 0, 1, 2] == pytest.approx(grade_limit(vehicle, table.row("dry_asphalt"), 0.0, GEAR_LOW,
                                                              DRIVE_ALL_WHEEL))
    assert math.isfinite(lim.min())


def test_bad_inputs(vehicle):
    with pytest.raises(ValueError, match="wetness"):
        trafficability(vehicle, "grass", 1.5, 0.0)
    with pytest.raises(ValueError, match="grade_pct"):
        trafficability(vehicle, "grass", 0.0, float("nan"))
