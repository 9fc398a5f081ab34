"""The driveline solve's building blocks: the wheel side rises with the trial carrier speed, the
friction model is set-valued at rest, and the bisection balances both sides."""

import numpy as np
import pytest

from acres_gym.constants import DRIVE_ALL_WHEEL, GEAR_HIGH
from acres_gym.model.driveline import (
    _open_diff_exact,
    front_torque,
    open_diff_bisection,
    open_diff_wheel_torque,
    rear_torque,
    solve_carrier_speed,
    transmission_torque,
)
from acres_gym.model.wheel import free_spin, shaft_torque, spin_for_torque
from acres_gym.sim import RangerSim
from acres_gym.terrain import split


@pytest.fixture(scope="module")
def driving_state():
    """A state mid-launch on an ice/asphalt split (rears slipping, front demand drive in play)."""
    sim = RangerSim(1, terrain=split(1.58, "ice", "dry_asphalt"))
    sim.commands.driver_throttle_pct = 100.0
    sim.commands.driver_brake_bar = 2.0
    sim.step(90)
    return sim


def test_wheel_spin_model_inverses():
    rng = np.random.default_rng(0)
    for _ in range(200):
        a, b, f = rng.normal(0, 300), rng.uniform(50, 5000), rng.uniform(0, 400)
        w = free_spin(a, b, f)
        if w != 0.0:
            assert abs(shaft_torque(a, b, f, w, 1.0)) < 1e-9 * max(1.0, abs(a))
        else:
            assert abs(a) <= f  # friction holds the wheel
        t = rng.normal(0, 600)
        w = spin_for_torque(a, b, f, t)
        side = 1.0 if t > a else -1.0
        assert abs(shaft_torque(a, b, f, w, side) - t) < 1e-9 * max(1.0, abs(t)) or (w == 0.0 and abs(t - a) <= f)


@pytest.mark.parametrize("open_diff", [False, True])
def test_wheel_side_rises_with_the_carrier_speed(driving_state, open_diff):
    s = driving_state.state[0]
    w = driving_state.work[0]
    speeds = np.linspace(-80.0, 80.0, 641)
    wheels = [rear_torque(s, w, c, 1.0, open_diff) + front_torque(s, w, c, 1.0, not open_diff, False) for c in speeds]
    assert np.all(np.diff(wheels) >= -1e-9)
    assert rear_torque(s, w, 0.0, -1.0, open_diff) <= rear_torque(s, w, 0.0, 1.0, open_diff)


def test_engine_side_falls_with_the_carrier_speed(driving_state):
    sim = driving_state
    p, s = sim.params[0], sim.state[0]
    from acres_gym.model.cvt import gear_ratios
    reduction, _ = gear_ratios(p, GEAR_HIGH)
    speeds = np.linspace(-50.0, 120.0, 341)
    engine = [transmission_torque(p, s, c, True, reduction, 120.0, 0.0) for c in speeds]
    assert np.all(np.diff(engine) <= 1e-9)


def test_bisection_balances_the_two_sides(driving_state):
    sim = driving_state
    p, s = sim.params[0], sim.state[0]
    w = sim.work[0]
    from acres_gym.model.cvt import gear_ratios
    reduction, _ = gear_ratios(p, GEAR_HIGH)
    c = solve_carrier_speed(p, s, w, False, True, False, True, reduction, 120.0, 0.0, 0.0)
    assert c > 0.0
    wheels = rear_torque(s, w, c, 1.0, False) + front_torque(s, w, c, 1.0, True, False)
    engine = transmission_torque(p, s, c, True, reduction, 120.0, 0.0)
    scale = max(abs(wheels), 1.0)
    assert abs(wheels - engine) < 1e-6 * scale + 1e-3


def test_open_differential_splits_torque_equally(driving_state):
    s = driving_state.state[0]
    w = driving_state.work[0]
    c = 20.0
    t = open_diff_wheel_torque(s, w, c, 1.0)
    left = spin_for_torque(w.wheel_lin_a_nm[2], w.wheel_lin_b_nm_s[2], s.resist_torque_nm[2], t)
    right = spin_for_torque(w.wheel_lin_a_nm[3], w.wheel_lin_b_nm_s[3], s.resist_torque_nm[3], t)
    assert abs(0.5 * (left + right) - c) < 1e-6


def _bisected_open_diff_torque(al, bl, fl, ar, br, fr, c):
    """The torque on each wheel whose two end-of-tick speeds average c, by bisection on the torque."""
    lo, hi = -1e6, 1e6
    for _ in range(80):
        mid = 0.5 * (lo + hi)
        if 0.5 * (spin_for_torque(al, bl, fl, mid) + spin_for_torque(ar, br, fr, mid)) < c:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


def test_the_open_differential_torque_is_solved_exactly():
    """The mean spin of the two rear wheels is piecewise linear in their common torque, so the open
    differential's torque comes from one linear equation on the right segment (``_open_diff_exact``): the same
    torque as bisection to 1e-12, and the wheels' speeds average c to 1e-9, for friction bands apart,
    overlapping, nested and of zero width, and c of either sign or zero."""
    rng = np.random.default_rng(3)
    cases = 0
    for i in range(3000):
        al, ar = rng.normal(0.0, 300.0, 2)
        bl, br = rng.uniform(50.0, 5000.0, 2)
        fl, fr = rng.uniform(0.0, 400.0, 2)
        if i % 4 == 1:
            fl = 0.0  # a wheel without friction (no band)
        elif i % 4 == 2:
            fl, al = 3.0 * fr + 50.0, ar  # the right wheel's band inside the left's
        c = 0.0 if i % 3 == 0 else rng.normal(0.0, 30.0)
        if c == 0.0 and max(al - fl, ar - fr) <= min(al + fl, ar + fr):
            continue  # both wheels can stand: open_diff_wheel_torque takes an end of the band, not this solve
        t = _open_diff_exact(al, bl, fl, ar, br, fr, c)
        want = _bisected_open_diff_torque(al, bl, fl, ar, br, fr, c)
        assert abs(t - want) <= 1e-12 * (1.0 + abs(want)) + 1e-9
        mean = 0.5 * (spin_for_torque(al, bl, fl, t) + spin_for_torque(ar, br, fr, t))
        assert abs(mean - c) <= 1e-9 * (1.0 + abs(c))
        cases += 1
    assert cases > 2000


def test_the_open_differential_agrees_with_its_bisection_on_a_launch(driving_state):
    s = driving_state.state[0]
    w = driving_state.work[0]
    for c in np.linspace(-40.0, 60.0, 101):
        if c == 0.0:
            continue  # at rest the torque is set-valued: the end of the band on the side asked for
        want = open_diff_bisection(s, w, c)
        assert abs(open_diff_wheel_torque(s, w, c, 1.0) - want) <= 1e-12 * (1.0 + abs(want))


def _braked_stall(drive_mode, adc=False, throttle_pct=100.0, brake_bar=40.0, ticks=240):
    """Gear H at a standstill on flat asphalt with full throttle against the brakes (audit D5)."""
    sim = RangerSim(1, overrides={"driveline.adc": adc})
    sim.state.gear = GEAR_HIGH
    sim.state.gear_target = GEAR_HIGH
    sim.commands.drive_mode = drive_mode
    sim.commands.driver_throttle_pct = throttle_pct
    sim.commands.driver_brake_bar = brake_bar
    x0 = sim.state.position_m[0].copy()
    park, held = [], []
    for _ in range(ticks):
        sim.step(1)
        s = sim.state[0]
        park.append(float(s.park_torque_nm))
        held.append(s.carrier_omega_rad_s == 0.0)
    return sim, np.array(park), np.array(held), float(np.linalg.norm(sim.state.position_m[0] - x0))


@pytest.mark.parametrize("adc", [False, True])
def test_braked_stall_in_awd_books_the_hold_on_the_front_not_the_park_pawl(adc):
    """Full throttle against 40 bar in H, AWD: the rears alone cannot hold the carrier, the demand drive
    catches the braked fronts and they hold it. No park torque outside P, the fronts reported engaged,
    and the shaft torques add up to the transmission torque at the carrier."""
    sim, park, held, moved = _braked_stall(DRIVE_ALL_WHEEL, adc=adc)
    s, p = sim.state[0], sim.params[0]
    assert moved < 1e-3 and held[-60:].all()
    assert np.all(park == 0.0), park.min()
    rear_capacity = 2.0 * (p.rear_brake_nm_per_bar * s.brake_output_bar + p.bearing_drag_nm)
    assert s.carrier_torque_nm > 1.2 * rear_capacity  # the case: the rears alone cannot hold it
    assert s.front_engaged[0] and s.front_engaged[1]
    front = s.shaft_torque_nm[:2]
    assert np.all(front > 0.0)
    assert s.front_ring_torque_nm == pytest.approx(front.sum(), rel=1e-12)
    carrier = s.shaft_torque_nm[2] + s.shaft_torque_nm[3] + s.front_ring_ratio * s.front_ring_torque_nm
    assert carrier == pytest.approx(s.carrier_torque_nm, rel=1e-9)
    # every held wheel within its friction band: |T - a| <= f
    band = np.abs(s.shaft_torque_nm - sim.work[0].wheel_lin_a_nm) - s.resist_torque_nm
    assert np.all(band <= 1e-9 * np.maximum(1.0, s.resist_torque_nm))


def test_held_carrier_within_the_rear_band_leaves_the_fronts_free():
    """A light throttle the rear brakes hold alone: the overrunning clutch carries nothing."""
    sim, park, _held, moved = _braked_stall(DRIVE_ALL_WHEEL, throttle_pct=20.0)
    s = sim.state[0]
    assert moved < 1e-3 and np.all(park == 0.0)
    assert not s.front_engaged[0] and not s.front_engaged[1]
    assert s.front_ring_torque_nm == 0.0 and np.all(s.shaft_torque_nm[:2] == 0.0)
    assert s.shaft_torque_nm[2] + s.shaft_torque_nm[3] == pytest.approx(s.carrier_torque_nm, rel=1e-9)
