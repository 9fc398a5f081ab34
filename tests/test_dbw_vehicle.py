"""Closed-loop drive-by-wire on the vehicle: the full ``RangerSim`` driven through DBW commands.

Every check runs the Ranger with the vehicle file's own ``dbw`` values (configs/vehicles), the way an
autonomy stack drives it: messages sent at a 20 Hz control rate (a new message on the first tick of
every 6-tick control step), the reports and the vehicle state read back. The figures checked are the
ones the DBW parameters promise: transport delays, rate limits, timeouts, the gear actuator's refusal
and shift time, and the ULC's speed step, stop and hold.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from acres_gym.constants import (
    DRIVE_TURF,
    DT_S,
    GEAR_HIGH,
    GEAR_NEUTRAL,
    GEAR_REJECT_NONE,
    GEAR_REJECT_VEHICLE_SPEED,
    GEAR_REVERSE,
    STEER_ANGLE,
    STEER_CURVATURE,
    STEER_YAW_RATE,
)
from acres_gym.params import load_vehicle
from acres_gym.sim import DEFAULT_VEHICLE
from acres_gym.terrain import slope
from acres_gym.tools.drive import TICKS_PER_STEP, first_index, kinematic_deg
from acres_gym.tools.drive import DbwDrive as Drive

# --------------------------------------------------------------------------- steering


@pytest.mark.parametrize("speed_mps", [0.0, 4.0], ids=["standing", "rolling"])
def test_steering_angle_step_delay_rate_and_settling(speed_mps):
    d = Drive()
    d.steer(STEER_ANGLE, 0.0)
    d.send("steer", "ulc")
    d.ulc(speed_mps, accel=1.5)
    d.run(8.0 if speed_mps else 1.0)
    assert d.s.steer_enabled[0] and abs(d.s.steering_wheel_deg[0]) < 1e-9
    if speed_mps:
        assert abs(d.s.speed_brake_mps[0] - speed_mps) < 0.3

    d.steer(STEER_ANGLE, 200.0, rate=100.0)
    r = d.run(3.5, "steering_wheel_deg", "steering_wheel_rate_deg_s", "steer_ref_deg")
    delay = d.p.steer_delay_s
    start = r["t"][first_index(np.abs(r["steering_wheel_deg"]) > 1e-9)] - DT_S  # since the message tick
    assert delay - DT_S <= start <= delay + DT_S
    rate = np.diff(np.concatenate([[0.0], r["steering_wheel_deg"]])) / DT_S
    assert np.max(np.abs(rate)) <= 102.0
    assert np.max(np.abs(r["steering_wheel_rate_deg_s"])) <= 102.0
    assert np.max(np.abs(np.diff(r["steer_ref_deg"]))) / DT_S <= 100.0 + 1e-9
    # 200 deg at 100 deg/s takes 2 s; the delay and the servo lag add a few tenths
    settled = r["t"] >= 2.8
    assert np.all(np.abs(r["steering_wheel_deg"][settled] - 200.0) < 1.0)
    assert np.max(r["steering_wheel_deg"]) < 201.0
    rep = d.reports()["steering"]
    assert rep["enabled"] and rep["cmd"] == pytest.approx(200.0)
    assert rep["steering_wheel_angle"] == pytest.approx(200.0, abs=1.0)


def test_curvature_and_yaw_rate_commands_follow_the_kinematic_map():
    d = Drive()
    d.c.drive_mode = DRIVE_TURF  # open rear differential: the path follows the wheels' geometry
    p = d.p
    curvature = 0.05
    d.steer(STEER_CURVATURE, curvature)
    d.send("steer")
    d.run(2.0, "steering_wheel_deg")
    expected = kinematic_deg(p, curvature)
    assert d.s.steer_target_deg[0] == pytest.approx(expected, abs=1e-9)  # standing
    assert d.s.steering_wheel_deg[0] == pytest.approx(expected, abs=0.5)

    d.ulc(3.0)
    d.send("steer", "ulc")
    d.run(12.0)
    assert d.s.steering_wheel_deg[0] == pytest.approx(expected, abs=0.1)  # rolling
    v = d.sim.speed_mps[0]
    assert d.s.angular_velocity_rad_s[0, 2] == pytest.approx(v * curvature, rel=0.03)

    yaw_rate = 0.15
    d.steer(STEER_YAW_RATE, yaw_rate)
    r = d.run(6.0, "steer_target_deg", "speed_brake_mps", "steering_wheel_deg")
    # every tick's target is the kinematic angle of yaw rate / measured speed (vehicle_velocity_brake)
    expected = [kinematic_deg(p, yaw_rate / v) for v in r["speed_brake_mps"]]
    np.testing.assert_allclose(r["steer_target_deg"], expected, atol=1e-9)
    assert r["steering_wheel_deg"][-1] == pytest.approx(expected[-1], abs=0.2)
    # the vehicle turns at about the commanded rate (measured speed within a few % of the true speed)
    assert d.s.angular_velocity_rad_s[0, 2] == pytest.approx(yaw_rate, rel=0.05)


def test_steering_times_out_without_messages_and_reengages():
    d = Drive()
    d.steer(STEER_ANGLE, 90.0)
    d.send("steer")
    d.run(2.0)
    assert d.s.steer_enabled[0] and d.s.steering_wheel_deg[0] == pytest.approx(90.0, abs=1.0)
    timeout = d.p.command_timeout_s

    d.send()  # messages stop: the last one went out on the first tick of the previous step
    r = d.run(0.25, "steer_enabled", "steer_timeout", "steering_wheel_deg")
    since_message = r["t"] + (TICKS_PER_STEP - 1) * DT_S  # time since the last message, end of tick
    off = first_index(r["steer_enabled"] == 0)
    assert since_message[off] == pytest.approx(timeout, abs=DT_S)
    assert np.all(r["steer_enabled"][:off] == 1) and np.all(r["steer_enabled"][off:] == 0)
    assert np.all(r["steer_timeout"][off:] == 1)
    rep = d.reports()["steering"]
    assert rep["timeout"] and not rep["enabled"] and math.isnan(rep["cmd"])
    held = d.s.steering_wheel_deg[0]
    assert np.all(np.abs(r["steering_wheel_deg"][off:] - held) < 1.0)  # the wheel stays where it is

    d.steer(STEER_ANGLE, -45.0)
    d.send("steer")
    r = d.run(2.5, "steer_enabled", "steer_timeout")
    assert r["steer_enabled"][0] == 1 and r["steer_timeout"][0] == 0
    rep = d.reports()["steering"]
    assert rep["enabled"] and not rep["timeout"]
    assert rep["steering_wheel_angle"] == pytest.approx(-45.0, abs=1.0)


# --------------------------------------------------------------------------- brake


def test_brake_pressure_step_delay_rise_and_release_tail():
    d = Drive()
    d.brake_bar(0.0)
    d.send("brake")
    d.run(0.5)
    p = d.p
    d.brake_bar(40.0)
    r = d.run(1.0, "brake_output_bar")
    out = r["brake_output_bar"]
    start = r["t"][first_index(out > 1e-9)] - DT_S
    assert p.brake_delay_s - DT_S <= start <= p.brake_delay_s + DT_S
    rise = np.diff(np.concatenate([[0.0], out])) / DT_S
    assert np.max(rise) <= p.brake_slew_bar_s + 1e-6
    assert np.max(rise) > 0.9 * p.brake_slew_bar_s  # the build-up reaches its rate limit
    assert np.max(out) <= 40.0 + 1e-9 and out[-1] == pytest.approx(40.0, abs=1e-6)
    # 40 bar at the rate limit takes 40 / slew s, plus the acceleration-limited start
    reached = r["t"][first_index(out >= 39.9)] - DT_S - start
    assert 40.0 / p.brake_slew_bar_s <= reached <= 40.0 / p.brake_slew_bar_s + 0.15
    assert d.reports()["brake"]["pressure_output"] == pytest.approx(40.0, abs=1e-6)

    d.brake_bar(0.0)
    r = d.run(2.5, "brake_output_bar")
    out = r["brake_output_bar"]
    start = r["t"][first_index(out < 40.0 - 1e-9)] - DT_S
    assert p.brake_delay_s - DT_S <= start <= p.brake_delay_s + DT_S
    assert np.all(np.diff(out) <= 1e-12)
    t10 = r["t"][first_index(out <= 10.0)]
    t1 = r["t"][first_index(out <= 1.0)]
    fast = t10 - start  # 40 -> 10 bar: the fast drop
    slow = t1 - t10  # 10 -> 1 bar: the slow tail
    assert fast < 0.3
    assert slow > 2.0 * fast
    assert 0.0 < out[-1] < 1.0  # still not quite released 2.5 s later


# --------------------------------------------------------------------------- gear


def test_gear_shift_refused_above_the_shift_speed_and_completed_below():
    d = Drive()
    p = d.p
    assert d.s.gear[0] == GEAR_HIGH
    d.ulc(2.0)
    d.send("ulc")
    d.run(6.0)
    assert d.s.speed_brake_mps[0] > p.gear_shift_max_speed_mps
    d.c.gear_cmd = GEAR_REVERSE
    d.run(0.5)
    assert d.s.gear_reject[0] == GEAR_REJECT_VEHICLE_SPEED == 6
    assert d.s.gear[0] == GEAR_HIGH and d.reports()["gear"]["reject"] == 6

    d.ulc(0.0)
    d.run(6.0)
    assert abs(d.s.speed_brake_mps[0]) < p.gear_shift_max_speed_mps and d.s.ulc_stop_hold[0]
    d.c.gear_cmd = GEAR_REVERSE
    r = d.run(2.0, "gear")
    assert d.s.gear_reject[0] == GEAR_REJECT_NONE and d.s.gear_cmd_report[0] == GEAR_REVERSE
    engaged = r["t"][first_index(r["gear"] == GEAR_REVERSE)]
    assert engaged == pytest.approx(p.gear_shift_s, abs=1.5 * DT_S)
    assert np.all(r["gear"][r["t"] < engaged] == GEAR_NEUTRAL)
    assert np.all(r["gear"][r["t"] >= engaged] == GEAR_REVERSE)
    assert d.reports()["gear"]["gear"] == GEAR_REVERSE


# --------------------------------------------------------------------------- ULC


def test_ulc_speed_step_reference_and_tracking():
    d = Drive()
    d.ulc(5.0, accel=1.0)
    d.send("ulc")
    r = d.run(15.0, "ulc_vel_ref_mps", "ulc_accel_ref_mps2", "ulc_vel_meas_mps")
    t, ref, acc, meas = r["t"], r["ulc_vel_ref_mps"], r["ulc_accel_ref_mps2"], r["ulc_vel_meas_mps"]
    # the reference ramps at the 1 m/s2 limit, never beyond the target, and eases in
    assert np.all(np.diff(ref) >= -1e-12) and np.max(ref) <= 5.0 + 1e-12
    assert np.max(acc) <= 1.0 + 1e-12
    mid = (t >= 1.5) & (t <= 3.5)
    assert np.ptp(acc[mid]) < 1e-9 and acc[mid][0] == pytest.approx(1.0)
    assert ref[np.searchsorted(t, 3.5)] - ref[np.searchsorted(t, 1.5)] == pytest.approx(2.0, abs=0.01)
    reached = t[first_index(ref >= 5.0)]
    winding = (acc > 1e-9) & (acc < 1.0 - 1e-9) & (t > 1.0)
    assert t[winding].min() > 3.5 and t[winding].max() <= reached + 1e-9
    assert np.ptp(t[winding]) >= 0.5  # eased in over at least half a second (jerk-limited)
    assert 5.0 <= reached <= 6.5 and ref[-1] == 5.0
    # the measured speed (vel_meas) settles at the target with a small overshoot
    overshoot = np.max(meas) - 5.0
    assert overshoot < 0.3
    late = t >= 8.0
    assert np.all(np.abs(meas[late] - 5.0) <= 0.2)
    rep = d.reports()["ulc"]
    assert rep["enabled"] and rep["vel_ref"] == 5.0 and abs(rep["vel_meas"] - 5.0) <= 0.2


def test_ulc_stops_and_holds_on_a_ten_percent_grade():
    d = Drive(terrain=slope(10.0))
    d.ulc(3.0)
    d.send("ulc")
    d.run(10.0)
    assert abs(d.s.ulc_vel_meas_mps[0] - 3.0) < 0.2  # climbing at the target
    d.ulc(0.0)
    r = d.run(6.0, "ulc_stop_hold")
    assert r["ulc_stop_hold"][-1] == 1 and abs(d.sim.speed_mps[0]) < 0.02
    x0 = d.s.position_m[0].copy()
    r = d.run(10.0, "ulc_stop_hold", "brake_output_bar")
    moved = np.linalg.norm(d.s.position_m[0] - x0)
    assert moved < 0.03
    assert np.all(r["ulc_stop_hold"] == 1)
    assert r["brake_output_bar"][-1] == pytest.approx(d.p.ulc_stop_brake_pct * 0.01 * d.p.brake_max_bar)


def test_user_throttle_preempts_the_ulc():
    d = Drive()
    d.ulc(3.0)
    d.send("ulc")
    d.run(6.0)
    assert d.s.ulc_enabled[0] and not d.s.ulc_preempted[0]
    d.throttle(20.0)
    d.send("ulc", "throttle")
    d.run(0.5)
    rep = d.reports()
    assert rep["ulc"]["preempted"] and not rep["ulc"]["enabled"]
    assert rep["throttle"]["enabled"] and rep["throttle"]["cmd_src"] == 0
    assert rep["throttle"]["percent_cmd"] == pytest.approx(20.0)
    assert d.s.throttle_pedal_pct[0] == pytest.approx(20.0)
    d.send("ulc")  # the user stops: the ULC takes over again once the throttle times out
    d.run(0.5)
    assert d.s.ulc_enabled[0] and not d.s.ulc_preempted[0]


# --------------------------------------------------------------------------- hardware biases


def _pair(**bias) -> list:
    """The calibrated vehicle and one with hardware biases (dotted keys under dbw.bias)."""
    return [load_vehicle(DEFAULT_VEHICLE),
            load_vehicle(DEFAULT_VEHICLE, overrides={f"dbw.bias.{k}": v for k, v in bias.items()})]


def test_ulc_speed_bias_makes_the_vehicle_settle_slower_by_the_bias():
    bias = 0.5
    d = Drive(n=2, params=_pair(ulc_speed_mps=bias))
    d.ulc(5.0, accel=1.0)
    d.send("ulc")
    d.run(14.0)
    r = d.run(2.0, "speed_brake_mps", "ulc_vel_meas_mps", vehicle=1)
    base = d.s.speed_brake_mps[0]
    assert abs(base - 5.0) < 0.2
    assert np.all(np.abs(r["ulc_vel_meas_mps"] - 5.0) < 0.2)  # the ULC sees its target
    assert np.mean(r["speed_brake_mps"]) == pytest.approx(base - bias, abs=0.1)
    assert np.all(np.abs(r["ulc_vel_meas_mps"] - r["speed_brake_mps"] - bias) < 1e-9)


def test_throttle_and_brake_biases_shift_the_outputs():
    d = Drive(n=2, params=_pair(throttle_pct=5.0, brake_bar=10.0))
    assert d.s.throttle_pedal_pct.tolist() == [0.0, 5.0]  # released pedals
    assert d.s.brake_output_bar.tolist() == [0.0, 10.0]
    d.throttle(15.0)
    d.brake_bar(30.0)
    d.send("throttle", "brake")
    d.run(1.0)
    np.testing.assert_allclose(d.s.throttle_pedal_pct, [15.0, 20.0])
    np.testing.assert_allclose(d.s.brake_output_bar, [30.0, 40.0])
    for v, expected in ((0, 30.0), (1, 40.0)):
        assert d.reports(v)["brake"]["pressure_output"] == pytest.approx(expected)
    d.brake_bar(100.0)  # the bias cannot push the line pressure beyond full scale
    d.run(1.5)
    np.testing.assert_allclose(d.s.brake_output_bar, [d.p.brake_max_bar] * 2)


def test_the_awd_switch_starts_at_the_vehicles_default_drive_mode():
    from acres_gym import RangerSim, load_vehicle
    from acres_gym.constants import DRIVE_ALL_WHEEL, DRIVE_TURF, DRIVE_TWO_WHEEL

    params = load_vehicle("polaris_ranger_crew_xp1000", overrides={"driveline.default_drive_mode": DRIVE_TURF})
    sim = RangerSim(2, params=params)
    sim.step(12)
    assert list(sim.state.drive_mode) == [DRIVE_TURF, DRIVE_TURF]  # commands no longer reset it to AWD
    sim.commands.drive_mode[1] = DRIVE_TWO_WHEEL  # the switch moves when a command says so
    sim.step(1)
    assert list(sim.state.drive_mode) == [DRIVE_TURF, DRIVE_TWO_WHEEL]
    sim.reset(indices=[1])
    sim.step(1)
    assert sim.state.drive_mode[1] == DRIVE_TURF and RangerSim(1).commands.drive_mode[0] == DRIVE_ALL_WHEEL
