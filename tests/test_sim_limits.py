"""The model at the edge of its validity: a tyre too soft for its load is refused, a tyre that bottoms out
is recorded (``tyre_bottomed``: a rim strike the vehicle survives), a body that sinks through the ground is
flagged (``diverged`` with ``diverged_reason``) before the contact forces run away, and the rolling radius
never falls below the rim."""

import math

import numpy as np
import pytest

from acres_gym.constants import (
    DIVERGED_BELOW_GROUND,
    DIVERGED_NONE,
)
from acres_gym.model.ledger import LEDGER_LOSS_FIELDS
from acres_gym.params import load_vehicle
from acres_gym.sim import RangerSim

VEHICLE = "polaris_ranger_crew_xp1000"


def test_a_tyre_too_soft_for_its_load_is_refused():
    with pytest.raises(ValueError, match=r"tyre\.vertical_stiffness_n_m = 5000"):
        load_vehicle(VEHICLE, overrides={"tyre.vertical_stiffness_n_m": 5000.0})  # below the range
    # in the range, but the heaviest static corner load deflects it more than half its section height
    with pytest.raises(ValueError, match=r"tyre\.vertical_stiffness_n_m = 30000.*half of tyre\.section_m"):
        load_vehicle(VEHICLE, overrides={"tyre.vertical_stiffness_n_m": 30000.0})
    with pytest.raises(ValueError, match=r"tyre\.vertical_stiffness_n_m = 60000"):
        load_vehicle(VEHICLE, overrides={"tyre.vertical_stiffness_n_m": 60000.0, "mass.cargo_kg": 1000.0})
    with pytest.raises(ValueError, match=r"tyre\.section_m = 0\.4"):
        load_vehicle(VEHICLE, overrides={"tyre.section_m": 0.4})  # no rim left inside the 0.343 m radius
    p = load_vehicle(VEHICLE, overrides={"mass.cargo_kg": 2000.0})  # the heaviest cargo, stock tyre
    assert np.max(p.static_load_n) / p.tyre_vertical_stiffness_n_m <= 0.5 * p.tyre_section_m


def _run(sim, seconds):
    """Steps tick by tick until the vehicle diverges; the extremes seen on the way."""
    p = sim.params[0]
    rim = p.tyre_radius_m - p.tyre_section_m
    worst = {"rolling_radius_m": math.inf, "deflection_m": 0.0, "load_n": 0.0}
    for _ in range(int(seconds * 120)):
        sim.step(1)
        s = sim.state[0]
        worst["rolling_radius_m"] = min(worst["rolling_radius_m"], float(s.rolling_radius_m.min()))
        worst["deflection_m"] = max(worst["deflection_m"], float(s.tyre_deflection_m.max()))
        worst["load_n"] = max(worst["load_n"], float(s.normal_load_n.max()))
        if s.diverged:
            break
    ledger = [float(sim.state[0][name]) for name in LEDGER_LOSS_FIELDS]
    return worst, rim, ledger


def test_a_landing_the_tyres_take_is_not_flagged():
    sim = RangerSim(1)
    sim.state.velocity_mps[0, 2] = -3.0  # a 0.46 m drop
    worst, rim, _ = _run(sim, 2.0)
    assert not sim.state.diverged[0] and sim.state.diverged_reason[0] == DIVERGED_NONE
    assert not sim.state.tyre_bottomed[0]
    assert worst["deflection_m"] < 0.5 * sim.params[0].tyre_section_m


def test_a_landing_that_bottoms_a_tyre_is_recorded_and_the_vehicle_lands():
    """A rim strike is an event (``tyre_bottomed``), not a divergence: the vehicle bounces, then stands on
    its wheels at its initial ride height."""
    sim = RangerSim(1)
    ride_height_m = float(sim.state.position_m[0, 2])
    sim.state.velocity_mps[0, 2] = -8.0  # a 3.3 m drop: the rims reach the ground
    worst, rim, ledger = _run(sim, 5.0)
    assert sim.state.tyre_bottomed[0] and not sim.state.diverged[0]
    assert abs(sim.state.velocity_mps[0, 2]) < 0.01
    assert sim.state.position_m[0, 2] == pytest.approx(ride_height_m, abs=0.005)
    assert worst["rolling_radius_m"] >= rim - 1e-12
    assert worst["deflection_m"] < sim.params[0].tyre_radius_m  # the rim strikes; the hub stays above ground
    assert all(math.isfinite(e) and abs(e) < 1e6 for e in ledger)


@pytest.mark.parametrize("roll_rate_rad_s", [3.0, 6.0, 10.0])
def test_a_tumbling_body_is_flagged_before_it_falls_through_the_ground(roll_rate_rad_s):
    """A vehicle launched into a roll: the body has no contact of its own, so once it is on its roof
    it sinks into the ground; it is flagged then, not when its wheels touch down from below."""
    sim = RangerSim(1)
    sim.state.angular_velocity_rad_s[0, 0] = roll_rate_rad_s
    sim.state.velocity_mps[0, 2] = 3.0
    worst, rim, ledger = _run(sim, 6.0)
    s = sim.state[0]
    assert s.diverged and s.diverged_reason == DIVERGED_BELOW_GROUND
    assert worst["rolling_radius_m"] >= rim - 1e-12
    assert worst["deflection_m"] < sim.params[0].tyre_radius_m
    assert worst["load_n"] < 2e5
    assert s.position_m[2] > -1.0  # flat ground at z = 0
    assert all(math.isfinite(e) and abs(e) < 1e7 for e in ledger)
