"""Engine, CVT, gearbox, AWD driveline and the energy ledger against the seed and reference figures."""

import math

import numpy as np
import pytest

from acres_gym.constants import (
    DRIVE_ALL_WHEEL,
    DRIVE_TURF,
    DRIVE_TWO_WHEEL,
    GEAR_HIGH,
    GEAR_LOW,
    GEAR_NEUTRAL,
    GEAR_PARK,
    GEAR_REVERSE,
    RPM_TO_RAD_S,
)
from acres_gym.model.cvt import clutch_forward_capacity, ebs_capacity, shift_speed_rpm, target_ratio
from acres_gym.model.engine import TOP_SPEED_GOVERNOR_BAND_MPS, engine_curves, step_engine, top_speed_governor
from acres_gym.params import load_vehicle
from acres_gym.sim import RangerSim
from acres_gym.tools import scenarios


@pytest.fixture(scope="module")
def p():
    return load_vehicle("polaris_ranger_crew_xp1000")


# --- the seed's formulas, evaluated directly ---------------------------------------------------------

def test_engine_curves_follow_the_seed(p):
    rpm = 3000.0
    wot, friction, pumping = engine_curves(p, rpm)
    volume = p.displacement_l * 1e-3
    fmep = p.fmep_a_bar + p.fmep_b_bar_per_krpm * 3.0 + p.fmep_c_bar_per_krpm2 * 9.0
    assert math.isclose(friction, fmep * 1e5 * volume / (4 * math.pi), rel_tol=1e-12)
    assert math.isclose(pumping, p.pumping_bar * 1e5 * volume / (4 * math.pi), rel_tol=1e-12)
    assert wot > 0
    assert engine_curves(p, p.max_rpm)[0] == 0.0  # rev limiter: 0 at and above max_rpm


@pytest.mark.parametrize("case", ["rev_limiter", "empty_tank", "closed_throttle", "fuelled"])
def test_pumping_loss_follows_the_torque_request(p, case):
    """Seed StepUtvPowertrain: brake torque = indicated - friction - (1 - u) pumping with u the torque
    request; a fuel cut (rev limiter, empty tank) stops the indicated torque but leaves the throttle
    where the request put it (audit D2)."""
    sim = RangerSim(1)
    s = sim.state[0]
    s.engine_rpm = p.max_rpm + 50.0 if case == "rev_limiter" else 5000.0
    s.throttle_pedal_pct = 0.0 if case == "closed_throttle" else 60.0
    s.engine_request = 0.0 if case == "closed_throttle" else 0.6
    if case == "empty_tank":
        s.fuel_remaining_l = 0.0
    step_engine(1.0 / 120.0, sim.params[0], s, 0.0)
    u = float(s.engine_request)
    _wot, friction, pumping = engine_curves(p, float(s.engine_rpm))
    assert bool(s.fuelled) == (case == "fuelled")
    assert s.pumping_torque_nm == pytest.approx((1.0 - u) * pumping, rel=1e-12, abs=1e-12)
    if case != "fuelled":
        assert s.indicated_torque_nm == 0.0
        assert s.engine_torque_nm == pytest.approx(-friction - (1.0 - u) * pumping, rel=1e-12)
    if case in ("rev_limiter", "empty_tank"):
        assert 0.5 < u < 0.7 and s.pumping_torque_nm < 0.5 * pumping


def test_shift_speed_and_target_ratio(p):
    assert math.isclose(shift_speed_rpm(p, 0.0), p.shift_light_rpm)
    assert math.isclose(shift_speed_rpm(p, p.peak_torque_nm), p.shift_full_rpm)
    half = shift_speed_rpm(p, 0.5 * p.peak_torque_nm)
    light, full = p.shift_light_rpm, p.shift_full_rpm
    assert math.isclose(half, math.sqrt(light ** 2 + 0.5 * (full ** 2 - light ** 2)))
    assert target_ratio(p, 0.0, 50.0) == p.cvt_low_ratio
    assert target_ratio(p, 1e4, 0.0) == p.cvt_high_ratio
    secondary = 300.0
    assert math.isclose(target_ratio(p, secondary, p.peak_torque_nm), p.shift_full_rpm * RPM_TO_RAD_S / secondary)


def test_clutch_capacities(p):
    engage = p.engage_rpm * RPM_TO_RAD_S
    full = p.full_engage_rpm * RPM_TO_RAD_S
    assert clutch_forward_capacity(p, 0.99 * engage) == 0.0
    assert clutch_forward_capacity(p, full) == p.clutch_capacity_nm
    mid = math.sqrt(0.5 * (engage ** 2 + full ** 2))
    assert math.isclose(clutch_forward_capacity(p, mid), 0.5 * p.clutch_capacity_nm)
    assert ebs_capacity(p, p.idle_rpm) == 0.0
    assert ebs_capacity(p, p.engage_rpm) == p.ebs_capacity_nm


# --- the vehicle -------------------------------------------------------------------------------------

def test_idle_settles_in_neutral():
    r = scenarios.idle_in_neutral(seconds=3.0)
    assert abs(r["rpm"] - r["idle_rpm"]) <= 30.0
    assert r["spread_rpm"] < 5.0


def test_no_creep_in_high_at_idle():
    r = scenarios.creep_in_gear(GEAR_HIGH, seconds=5.0)
    assert r["moved_m"] < 1e-3
    assert r["rpm"] < load_vehicle("polaris_ranger_crew_xp1000").engage_rpm


@pytest.fixture(scope="module")
def wot_high():
    return scenarios.full_throttle(GEAR_HIGH, seconds=40.0)


@pytest.fixture(scope="module")
def wot_low():
    return scenarios.full_throttle(GEAR_LOW, seconds=25.0)


def test_full_throttle_top_speed_and_launch(wot_high):
    assert 24.0 <= wot_high["top_speed_mps"] <= 29.0
    assert 4.0 <= wot_high["time_to_30mph_s"] <= 9.0
    print(f"0-30 mph: {wot_high['time_to_30mph_s']:.2f} s, top speed {wot_high['top_speed_mps']:.2f} m/s")


def test_top_speed_is_the_parameter(p, wot_high):
    """engine.top_speed_mps is the top speed reached: the governor lets the whole request through up to
    it (wheel spin x rolling radius) and cuts it over the band above, so full throttle in H on level
    asphalt tops out within 1 % of it (audit D6: 26.64 m/s for 27.7 when the band lay below)."""
    assert top_speed_governor(p, p.top_speed_mps) == 1.0
    assert top_speed_governor(p, -p.top_speed_mps) == 1.0
    assert top_speed_governor(p, p.top_speed_mps + 0.5 * TOP_SPEED_GOVERNOR_BAND_MPS) == pytest.approx(0.5)
    assert top_speed_governor(p, p.top_speed_mps + TOP_SPEED_GOVERNOR_BAND_MPS) == 0.0
    assert wot_high["top_speed_mps"] == pytest.approx(p.top_speed_mps, rel=0.01)


def test_engine_held_near_the_full_load_shift_speed_while_upshifting(wot_high):
    """While the belt upshifts at full load the engine stays within 300 rpm of the full-load shift
    speed (from 1 s after the ratio leaves the low stop: the launch transient is excluded)."""
    shift = wot_high["shift_full_rpm"]
    assert abs(wot_high["shift_rpm_max"] - shift) <= 300.0
    assert abs(wot_high["shift_rpm_min"] - shift) <= 300.0


def test_low_range(wot_high, wot_low):
    """L: at the same engine speed the wheels turn slower by the L/H reduction ratio; its top speed is
    the rev-limited one and lower; the launch to 5 m/s is quicker."""
    p = load_vehicle("polaris_ranger_crew_xp1000")
    reduction = p.rear_low_ratio / p.rear_high_ratio
    spin_per_rpm_high = wot_high["rear_spin_rad_s"] / wot_high["engine_rpm"]
    spin_per_rpm_low = wot_low["rear_spin_rad_s"] / wot_low["engine_rpm"]
    assert math.isclose(spin_per_rpm_high / spin_per_rpm_low, reduction, rel_tol=0.03)
    assert wot_low["top_speed_mps"] < wot_high["top_speed_mps"] / 1.5
    assert wot_low["engine_rpm"] > p.max_rpm - 150.0  # on the limiter
    assert wot_low["time_to_5_s"] < wot_high["time_to_5_s"]


def test_engine_braking_with_and_without_ebs():
    with_ebs = scenarios.coast_down(ebs=True)
    without = scenarios.coast_down(ebs=False)
    assert with_ebs["mean_decel_mps2"] > 1.03 * without["mean_decel_mps2"]
    assert with_ebs["first_2s_decel_mps2"] > 0.2  # engine braking through the belt from 15 m/s


def test_adc_puts_braking_torque_on_the_front():
    adc = scenarios.coast_down(ebs=True, adc=True)
    plain = scenarios.coast_down(ebs=True, adc=False)
    assert plain["front_shaft_nm_first_2s"] == 0.0
    assert adc["front_shaft_nm_first_2s"] < -50.0
    assert adc["first_2s_decel_mps2"] > plain["first_2s_decel_mps2"]


def test_park_holds_on_30_percent_grade_and_neutral_rolls():
    parked = scenarios.hold_on_grade(percent=30.0, brake_bar=0.0, gear=GEAR_PARK, seconds=10.0)
    assert parked["moved_m"] < 0.01
    assert parked["park_torque_nm"] > 0.0
    rolling = scenarios.hold_on_grade(percent=30.0, brake_bar=0.0, gear=GEAR_NEUTRAL, seconds=3.0)
    assert rolling["moved_m"] > 1.0


def test_turf_vs_2wd_rear_wheel_speeds():
    turf = scenarios.steady_circle(250.0, 2.0, DRIVE_TURF, seconds=20.0)
    locked = scenarios.steady_circle(250.0, 2.0, DRIVE_TWO_WHEEL, seconds=20.0)
    ratio = turf["rear_left_rad_s"] / turf["rear_right_rad_s"]
    assert math.isclose(ratio, turf["geometric_rear_ratio"], rel_tol=0.02)
    assert locked["rear_left_rad_s"] == locked["rear_right_rad_s"]


def test_awd_demand_drive_on_split_surface():
    two = scenarios.split_launch(DRIVE_TWO_WHEEL)
    awd = scenarios.split_launch(DRIVE_ALL_WHEEL)
    assert awd["front_engaged"] and not two["front_engaged"]
    assert awd["time_to_target_s"] < two["time_to_target_s"]


def test_reverse_drives_backward():
    sim = RangerSim(1)
    sim.state.gear = GEAR_REVERSE
    sim.state.gear_target = GEAR_REVERSE
    sim.commands.driver_throttle_pct = 50.0
    sim.run_seconds(4.0)
    assert sim.speed_mps[0] < -3.0
    assert sim.state.drive_ratio[0] < 0.0


def test_energy_ledger_closes_over_a_drive_cycle():
    book = scenarios.drive_cycle_ledger(60.0)
    assert book["fuel_j"] > 1e6
    assert abs(book["residual_share"]) < 0.01
    assert book["final_speed_mps"] < 0.05
    for key in ("thermal_j", "engine_friction_j", "belt_gear_j", "brake_j", "rolling_j", "aero_j"):
        assert book[key] > 0.0


def test_fuel_use_at_15_mps():
    r = scenarios.cruise_fuel(15.0)
    assert abs(r["speed_mps"] - 15.0) < 0.3
    assert 8.0 <= r["l_per_100km"] <= 25.0
    print(f"fuel at 15 m/s: {r['l_per_100km']:.1f} L/100 km")


@pytest.mark.parametrize("gear", [GEAR_HIGH, GEAR_LOW, GEAR_REVERSE, GEAR_NEUTRAL, GEAR_PARK])
@pytest.mark.parametrize("mode", [DRIVE_TURF, DRIVE_TWO_WHEEL, DRIVE_ALL_WHEEL])
def test_no_tick_rate_oscillation(gear, mode):
    """Engine, clutch and wheel speeds carry no tick-rate oscillation: at a standstill with throttle
    and brake both applied (settled: no ripple either), and at full throttle (accelerating, or on the
    rev limiter in L, R and neutral)."""
    stall = scenarios.hold_chatter(gear, mode, throttle_pct=40.0, brake_bar=40.0)
    assert abs(stall["speed_mps"]) < 0.01
    assert stall["engine_ripple_rpm"] < 1.0
    assert stall["wheel_ripple_rad_s"] < 0.01
    wot = scenarios.hold_chatter(gear, mode, throttle_pct=100.0, brake_bar=0.0)
    for r in (stall, wot):
        assert r["engine_rpm"] < 0.5
        assert r["clutch_slip_rad_s"] < 0.05
        assert r["wheel_rad_s"] < 0.005


@pytest.mark.parametrize("shift_tau_s", [0.05, 0.1])
def test_no_oscillation_with_a_fast_cvt(shift_tau_s):
    """A fast belt shift must not couple with the engine inertia into a tick-rate oscillation."""
    r = scenarios.hold_chatter(GEAR_HIGH, DRIVE_ALL_WHEEL, 100.0, 0.0, seconds=6.0,
                               overrides={"cvt.shift_tau_s": shift_tau_s})
    assert r["engine_rpm"] < 0.5
    assert r["wheel_rad_s"] < 0.005


def test_tick_rate_amplitude_measures_what_it_says():
    t = np.arange(240)
    trend = 3.0 * t + 0.01 * t ** 2
    assert scenarios.tick_rate_amplitude(trend) < 1e-9
    wobble = trend + 2.0 * (-1.0) ** t
    assert math.isclose(scenarios.tick_rate_amplitude(wobble), 2.0, rel_tol=1e-9)
