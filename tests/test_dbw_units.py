"""Unit tests of the drive-by-wire layer on its own (no vehicle): actuators, ULC, gear, reports.

The state is a stand-alone record of ``DBW_STATE_SPEC`` plus the two vehicle fields the layer reads
(``time_s``, ``wheel_omega_rad_s``); the tests set the wheel spins to impose a measured speed and
advance ``time_s`` themselves. Commands are sent once per control step of 6 ticks (20 Hz).
"""

from __future__ import annotations

import math
import os
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest
from numba import njit
from numba.core.dispatcher import Dispatcher

from acres_gym.constants import (
    DRIVE_ALL_WHEEL,
    DRIVE_TURF,
    DT_S,
    GEAR_HIGH,
    GEAR_NEUTRAL,
    GEAR_NONE,
    GEAR_PARK,
    GEAR_REJECT_NONE,
    GEAR_REJECT_SHIFT_IN_PROGRESS,
    GEAR_REJECT_UNSUPPORTED,
    GEAR_REJECT_VEHICLE_SPEED,
    GEAR_REVERSE,
    PEDAL_BRAKE_PRESSURE,
    PEDAL_NONE,
    PEDAL_PERCENT,
    PEDAL_RAW,
    STEER_ANGLE,
    STEER_CURVATURE,
    STEER_PERCENT,
    STEER_YAW_RATE,
    ULC_ACCEL,
    ULC_VELOCITY,
)
from acres_gym.dbw.command import COMMAND_DTYPE, check_commands, make_commands
from acres_gym.dbw.delay import RING_TICKS, delay_line
from acres_gym.dbw.reports import REPORT_RESOLUTION, dbw_reports, flatten_reports
from acres_gym.dbw.spec import DBW_STATE_SPEC
from acres_gym.dbw.step import brake_output_bar, curvature_to_steering_wheel_deg, reset_dbw_from_params, step_dbw
from acres_gym.dbw.throttle import raw_to_pedal_pct
from acres_gym.dbw.ulc import ULC_PEDAL_BRAKE, ULC_PEDAL_THROTTLE, ulc_limit, ulc_throttle_law_pct
from acres_gym.records import Field, make_template, spec_dtype
from acres_gym.schema import PARAMS_DTYPE, SCHEMA_BY_FIELD

VEHICLE_FIELDS = (Field("time_s", np.float64, (), "s"), Field("wheel_omega_rad_s", np.float64, (4,), "rad/s"))
STATE_DTYPE = spec_dtype(DBW_STATE_SPEC + VEHICLE_FIELDS)
DBW_STATE_NAMES = [f.name for f in DBW_STATE_SPEC]
TEMPLATE = make_template(DBW_STATE_SPEC + VEHICLE_FIELDS, np.dtype((np.record, STATE_DTYPE)))


def reset_dbw(p, s):
    """The vehicle reset restricted to the DBW fields: the template at rest, then the parameter pass."""
    for name in DBW_STATE_NAMES:
        s[name] = TEMPLATE[0][name]
    reset_dbw_from_params(p, s)
TICKS_PER_STEP = 6  # 20 Hz control
JIT = os.environ.get("NUMBA_DISABLE_JIT", "0") in ("", "0")

# Plausible values for the Ranger (the vehicle fields the DBW layer reads, and the dbw group).
PARAMS = {
    # vehicle
    "wheelbase_m": 3.16,
    "steering_ratio": 15.0,
    "steering_center_deg": 0.0,
    "tyre_radius_m": 0.343,
    "front_brake_nm_per_bar": 9.0,
    "rear_brake_nm_per_bar": 6.0,
    "default_gear": GEAR_HIGH,
    "default_drive_mode": DRIVE_ALL_WHEEL,
    # dbw.steering
    "steer_default_rate_deg_s": 400.0,
    "steer_default_accel_deg_s2": 2000.0,
    "steer_delay_s": 0.05,
    "steer_tau_s": 0.06,
    "steer_slew_deg_s": 600.0,
    "steer_lock_deg": 487.0,
    "steer_command_deg": 280.0,
    "max_curvature_per_m": 0.2,
    "max_yaw_rate_rad_s": 8.5,
    "kinematic_ratio": 0.0,
    "kinematic_wheelbase_m": 0.0,
    # dbw timeouts
    "command_timeout_s": 0.1,
    "ulc_actuator_timeout_s": 0.087,
    # dbw.throttle
    "throttle_delay_s": 0.04,
    "throttle_default_rate_pct_s": 0.0,
    # dbw.brake
    "brake_max_bar": 80.0,
    "brake_delay_s": 0.06,
    "brake_slew_bar_s": 120.0,
    "brake_apply_accel_bar_s2": 1500.0,
    "brake_release_tau_s": 0.08,
    "brake_release_exponent": 1.0,
    # dbw.gear
    "gear_shift_s": 1.2,
    "gear_shift_max_speed_mps": 0.5,
    # dbw.ulc
    "ulc_default_accel_mps2": 1.0,
    "ulc_default_decel_mps2": 1.5,
    "ulc_default_jerk_throttle_mps3": 2.0,
    "ulc_default_jerk_brake_mps3": 3.0,
    "ulc_kp_per_s": 0.8,
    "ulc_delay_s": 0.05,
    "ulc_throttle_offset_pct": 4.0,
    "ulc_throttle_accel_pct": 15.0,
    "ulc_throttle_speed_pct": 15.0,
    "ulc_throttle_integral_pct": 1.0,
    "ulc_integral_limit_m": 5.0,
    "ulc_launch_speed_mps": 1.0,
    "ulc_throttle_on_mps2": 0.05,
    "ulc_brake_on_mps2": -0.3,
    "ulc_mass_kg": 1050.0,
    "ulc_stop_brake_pct": 30.0,
    "ulc_stop_speed_mps": 0.2,
    # dbw speed measurement and hardware shifts
    "speed_scale": 0.93,
    "ulc_speed_bias_mps": 0.0,
    "throttle_bias_pct": 0.0,
    "brake_bias_bar": 0.0,
}


def make_params(**overrides) -> np.recarray:
    p = np.zeros(1, PARAMS_DTYPE).view(np.recarray)
    for name, value in {**PARAMS, **overrides}.items():
        p[name] = value
    return p


def newton_per_bar(p) -> float:
    return 2.0 * (p.front_brake_nm_per_bar[0] + p.rear_brake_nm_per_bar[0]) / p.tyre_radius_m[0]


class Rig:
    """One vehicle's DBW layer, stepped tick by tick from Python."""

    def __init__(self, **overrides):
        self.p = make_params(**overrides)
        self.s = np.zeros(1, STATE_DTYPE).view(np.recarray)
        reset_dbw(self.p[0], self.s[0])
        self.c = make_commands(1)
        self.c.system_enable = True
        self.ticks = 0

    def set_speed(self, speed_mps: float) -> None:
        """Spin all four wheels so the measured speed magnitude is ``speed_mps``."""
        self.s.wheel_omega_rad_s[0][:] = abs(speed_mps) / (self.p.tyre_radius_m[0] * self.p.speed_scale[0])

    def tick(self) -> None:
        message = self.ticks % TICKS_PER_STEP == 0
        step_dbw(DT_S, self.p[0], self.c[0], self.s[0], message)
        self.s.time_s += DT_S
        self.ticks += 1

    def run(self, seconds: float, *fields: str) -> dict[str, np.ndarray]:
        """Run whole control steps covering ``seconds``; returns each field after every tick."""
        n = int(round(seconds / DT_S / TICKS_PER_STEP)) * TICKS_PER_STEP
        out = {f: np.empty(n) for f in fields}
        for k in range(n):
            self.tick()
            for f in fields:
                out[f][k] = self.s[f][0]
        return out

    def reports(self) -> dict[str, np.ndarray]:
        return flatten_reports(dbw_reports(self.p, self.s))

    # command helpers: each sets a message that is sent at every control step
    def steer(self, mode, value, rate=0.0, accel=0.0, enable=True):
        c = self.c
        c.steer_mode, c.steer_cmd, c.steer_rate_deg_s, c.steer_accel_deg_s2 = mode, value, rate, accel
        c.steer_enable = enable
        c.steer_fresh = True

    def throttle(self, mode, value, inc=0.0, dec=0.0, enable=True):
        c = self.c
        c.throttle_mode, c.throttle_cmd = mode, value
        c.throttle_rate_inc_pct_s, c.throttle_rate_dec_pct_s = inc, dec
        c.throttle_enable = enable
        c.throttle_fresh = True

    def brake(self, mode, value, inc=0.0, dec=0.0, enable=True):
        c = self.c
        c.brake_mode, c.brake_cmd, c.brake_rate_inc, c.brake_rate_dec = mode, value, inc, dec
        c.brake_enable = enable
        c.brake_fresh = True

    def ulc(self, mode, value, accel=0.0, decel=0.0, jerk_throttle=0.0, jerk_brake=0.0, enable=True,
            coast=False):
        c = self.c
        c.ulc_mode, c.ulc_cmd = mode, value
        c.ulc_limit_accel_mps2, c.ulc_limit_decel_mps2 = accel, decel
        c.ulc_limit_jerk_throttle_mps3, c.ulc_limit_jerk_brake_mps3 = jerk_throttle, jerk_brake
        c.ulc_enable, c.ulc_coast_decel = enable, coast
        c.ulc_fresh = True


def first_index(mask: np.ndarray) -> int:
    idx = np.flatnonzero(mask)
    return int(idx[0]) if idx.size else -1


def crossing_time(t: np.ndarray, x: np.ndarray, level: float) -> float:
    """First time a falling ``x`` passes ``level`` (linear interpolation between ticks)."""
    k = first_index(x <= level)
    assert k > 0
    return float(t[k - 1] + (t[k] - t[k - 1]) * (x[k - 1] - level) / (x[k - 1] - x[k]))


# --------------------------------------------------------------------------- layout and reset


def test_fixture_values_within_schema_bounds():
    for name, value in PARAMS.items():
        row = SCHEMA_BY_FIELD[name]
        assert row.lo <= value <= row.hi, name


def test_state_fields_hold_the_vehicle_outputs():
    names = DBW_STATE_NAMES
    assert len(names) == len(set(names))
    for name in ("steering_wheel_deg", "throttle_pedal_pct", "brake_output_bar", "gear", "drive_mode"):
        assert name in names
    assert "time_s" not in names and "wheel_omega_rad_s" not in names
    for field in DBW_STATE_SPEC:
        if field.name.endswith("_ring"):
            assert field.shape == (RING_TICKS,)
    assert RING_TICKS * DT_S > 0.5  # delays up to 0.5 s (the schema's limit) fit


def test_reset_sets_defaults_and_restores_a_used_state():
    rig = Rig(default_gear=GEAR_PARK, default_drive_mode=DRIVE_TURF)
    s = rig.s
    assert s.gear[0] == GEAR_PARK and s.drive_mode[0] == DRIVE_TURF
    assert np.isinf(s.steer_age_s[0]) and not s.steer_enabled[0]
    assert s.steering_wheel_deg[0] == 0.0 and s.brake_output_bar[0] == 0.0
    fresh = s.copy()

    rig.set_speed(0.0)
    rig.steer(STEER_ANGLE, 90.0)
    rig.brake(PEDAL_BRAKE_PRESSURE, 20.0)
    rig.ulc(ULC_VELOCITY, 2.0)
    rig.c.gear_cmd = GEAR_REVERSE
    rig.run(0.5)
    assert s.steering_wheel_deg[0] != 0.0
    reset_dbw(rig.p[0], s[0])
    for name in STATE_DTYPE.names:
        if name != "time_s":
            assert np.array_equal(s[name], fresh[name]), name


# --------------------------------------------------------------------------- delay line


def test_delay_line_is_an_exact_shift_for_whole_ticks_and_interpolates_between():
    ring = np.zeros(RING_TICKS)
    signal = np.sin(np.arange(300) * 0.1) + np.arange(300) * 0.01
    out5, out_half = np.empty(300), np.empty(300)
    ring_half = np.zeros(RING_TICKS)
    for k in range(300):
        head = k % RING_TICKS
        out5[k] = delay_line(ring, head, signal[k], 5 * DT_S, DT_S)
        out_half[k] = delay_line(ring_half, head, signal[k], 5.25 * DT_S, DT_S)
    assert np.array_equal(out5[5:], signal[:-5])
    assert np.array_equal(out5[:5], np.zeros(5))
    expected = signal[1:-5] + 0.25 * (signal[:-6] - signal[1:-5])  # 5.25 ticks back
    assert np.allclose(out_half[6:], expected, atol=1e-12)
    # zero delay passes through; a delay longer than the ring is clamped to RING_TICKS - 1 ticks
    assert delay_line(np.zeros(RING_TICKS), 3, 7.0, 0.0, DT_S) == 7.0
    long_ring = np.arange(RING_TICKS, dtype=float)
    assert delay_line(long_ring, 10, 10.0, 10.0, DT_S) == long_ring[(10 - (RING_TICKS - 1)) % RING_TICKS]


# --------------------------------------------------------------------------- steering


def test_steering_angle_step_delay_rate_and_settling():
    rig = Rig()
    rig.steer(STEER_ANGLE, 200.0, rate=100.0)
    r = rig.run(4.0, "steering_wheel_deg", "steer_ref_deg", "steer_ref_rate_deg_s")
    wheel = r["steering_wheel_deg"]
    delay_ticks = int(round(PARAMS["steer_delay_s"] / DT_S))
    assert np.all(wheel[:delay_ticks] == 0.0)
    assert first_index(wheel > 0.0) == delay_ticks  # moves once the transport delay has passed
    assert r["steer_ref_deg"][0] > 0.0  # the reference starts at once
    assert np.max(np.diff(np.r_[0.0, wheel])) / DT_S <= 100.0 * 1.02
    assert np.max(r["steer_ref_rate_deg_s"]) <= 100.0 + 1e-9
    assert np.max(wheel) <= 200.0 + 1e-6  # no overshoot
    settled = first_index(np.abs(wheel - 200.0) < 1.0)
    assert 0 < settled * DT_S < 2.0 + 0.5  # 2 s at 100 deg/s plus delay and lag
    assert np.all(np.abs(wheel[settled:] - 200.0) < 1.0)
    assert abs(wheel[-1] - 200.0) < 1e-3


def test_steering_reference_rate_and_accel_limits_decoding():
    # 0 = the default rate (400 deg/s) and acceleration (2000 deg/s^2)
    rig = Rig()
    rig.steer(STEER_ANGLE, 250.0)
    r = rig.run(1.5, "steer_ref_rate_deg_s")
    assert math.isclose(np.max(r["steer_ref_rate_deg_s"]), 400.0)
    assert math.isclose(r["steer_ref_rate_deg_s"][0], 2000.0 * DT_S)
    # a small non-zero rate and acceleration are raised to 100 deg/s and 300 deg/s^2
    rig = Rig()
    rig.steer(STEER_ANGLE, 150.0, rate=30.0, accel=50.0)
    r = rig.run(2.5, "steer_ref_rate_deg_s")
    assert math.isclose(np.max(r["steer_ref_rate_deg_s"]), 100.0)
    assert math.isclose(r["steer_ref_rate_deg_s"][0], 300.0 * DT_S)
    # inf = unlimited: the reference jumps to the target
    rig = Rig()
    rig.steer(STEER_ANGLE, 150.0, rate=math.inf, accel=math.inf)
    rig.tick()
    assert rig.s.steer_ref_deg[0] == 150.0


def test_curvature_and_yaw_rate_use_the_kinematic_map():
    p = make_params()
    kappa = 0.1
    expected = math.degrees(15.0 * math.atan(kappa * 3.16))
    assert math.isclose(curvature_to_steering_wheel_deg(p[0], kappa), expected)

    rig = Rig()
    rig.steer(STEER_CURVATURE, kappa, rate=math.inf, accel=math.inf)
    rig.run(1.5)
    assert math.isclose(rig.s.steer_target_deg[0], expected, rel_tol=1e-12)
    assert abs(rig.s.steering_wheel_deg[0] - expected) < 1e-3
    rep = rig.reports()
    assert rep["steering.cmd_type"][0] == STEER_ANGLE  # curvature appears as an angle command
    assert not rep["steering.limiting_value"][0]

    # the firmware's own ratio and wheelbase when given
    rig = Rig(kinematic_ratio=16.0, kinematic_wheelbase_m=3.0)
    rig.steer(STEER_CURVATURE, kappa)
    rig.tick()
    assert math.isclose(rig.s.steer_target_deg[0], math.degrees(16.0 * math.atan(0.3)), rel_tol=1e-12)

    # yaw rate / measured speed
    rig = Rig()
    rig.set_speed(4.0)
    rig.steer(STEER_YAW_RATE, 0.3, rate=math.inf, accel=math.inf)
    rig.run(1.5)
    speed = rig.s.speed_brake_mps[0]
    assert math.isclose(speed, 4.0, rel_tol=1e-12)
    yaw_expected = math.degrees(15.0 * math.atan(0.3 / speed * 3.16))
    assert math.isclose(rig.s.steer_target_deg[0], yaw_expected, rel_tol=1e-12)
    assert abs(rig.s.steering_wheel_deg[0] - yaw_expected) < 1e-3


def test_percent_mode_and_clamping_to_the_command_range_and_lock():
    rig = Rig()
    rig.steer(STEER_PERCENT, -50.0, rate=math.inf, accel=math.inf)
    rig.run(1.0)
    assert math.isclose(rig.s.steer_target_deg[0], -140.0)
    assert abs(rig.s.steering_wheel_deg[0] + 140.0) < 1e-3

    rig = Rig()
    rig.steer(STEER_ANGLE, 400.0, rate=math.inf, accel=math.inf)
    rig.run(1.5)
    rep = rig.reports()
    assert rig.s.steer_target_deg[0] == 280.0
    assert rep["steering.limiting_value"][0]
    assert rep["steering.cmd"][0] == 280.0
    assert abs(rep["steering.steering_wheel_angle"][0] - 280.0) < 1e-3

    rig = Rig(steer_command_deg=600.0)
    rig.steer(STEER_ANGLE, 550.0, rate=math.inf, accel=math.inf)
    rig.run(2.0)
    assert rig.s.steer_target_deg[0] == 487.0 and rig.s.steer_limiting_value[0]
    assert rig.s.steering_wheel_deg[0] <= 487.0
    assert rig.reports()["steering.limit_value"][0] == 487.0

    rig = Rig()
    rig.steer(STEER_CURVATURE, 0.5)
    rig.tick()
    assert rig.s.steer_limiting_value[0]
    assert math.isclose(rig.s.steer_target_deg[0], curvature_to_steering_wheel_deg(rig.p[0], 0.2))


def test_steering_timeout_disables_and_messages_reengage():
    rig = Rig()
    rig.steer(STEER_ANGLE, 60.0)
    rig.run(1.0)
    assert rig.s.steer_enabled[0]
    rig.c.steer_fresh = False  # messages stop
    r = rig.run(0.2, "steer_enabled", "steer_timeout", "steering_wheel_deg")
    t = (np.arange(r["steer_enabled"].size) + TICKS_PER_STEP) * DT_S  # since the last message
    assert np.all(r["steer_enabled"][t < 0.1 - 1e-9])
    assert not np.any(r["steer_enabled"][t >= 0.1 - 1e-9])
    assert r["steer_timeout"][-1]
    off = ~r["steer_enabled"].astype(bool)
    assert np.all(r["steering_wheel_deg"][off] == r["steering_wheel_deg"][-1])  # the wheel stays put
    rep = rig.reports()
    assert rep["steering.timeout"][0] and not rep["steering.enabled"][0]
    assert np.isnan(rep["steering.cmd"][0])

    rig.steer(STEER_ANGLE, -30.0)
    rig.run(2.0)
    assert rig.s.steer_enabled[0] and not rig.s.steer_timeout[0]
    assert abs(rig.s.steering_wheel_deg[0] + 30.0) < 1e-3


def test_driver_steering_applies_only_when_not_under_control():
    rig = Rig()
    rig.c.driver_steering_deg = 45.0
    rig.run(0.1)
    assert rig.s.steering_wheel_deg[0] == 0.0  # driver_steers not set: the wheel stays put
    rig.c.driver_steers = True
    rig.run(0.1)
    assert rig.s.steering_wheel_deg[0] == 45.0
    rig.steer(STEER_ANGLE, 0.0)
    rig.run(2.0)
    assert abs(rig.s.steering_wheel_deg[0]) < 1e-3  # DBW control wins


# --------------------------------------------------------------------------- brake


def test_brake_pressure_step_apply_and_release_law():
    rig = Rig()
    rig.brake(PEDAL_BRAKE_PRESSURE, 40.0)
    r = rig.run(1.0, "brake_output_bar", "time_s")
    out = r["brake_output_bar"]
    delay_ticks = int(PARAMS["brake_delay_s"] / DT_S)
    assert np.all(out[:delay_ticks] == 0.0)
    assert out[delay_ticks] > 0.0
    rate = np.diff(np.r_[0.0, out]) / DT_S
    assert np.max(rate) <= PARAMS["brake_slew_bar_s"] * (1 + 1e-9)
    assert np.max(np.diff(rate)) / DT_S <= PARAMS["brake_apply_accel_bar_s2"] * (1 + 1e-9)
    assert np.max(out) <= 40.0 + 1e-9
    assert out[-1] == 40.0
    rep = rig.reports()
    assert rep["brake.pressure_output"][0] == 40.0 and rep["brake.pressure_cmd"][0] == 40.0
    assert np.isnan(rep["brake.percent_output"][0])

    rig.brake(PEDAL_BRAKE_PRESSURE, 0.0)
    r = rig.run(3.0, "brake_output_bar", "time_s")
    t, out = r["time_s"], r["brake_output_bar"]
    assert np.all(np.diff(out) <= 0.0)
    t_fast = crossing_time(t, out, 20.0) - crossing_time(t, out, 40.0 - 1e-9)
    t_slow = crossing_time(t, out, 2.0) - crossing_time(t, out, 4.0)
    tau, n = PARAMS["brake_release_tau_s"], PARAMS["brake_release_exponent"]
    # above 10 bar a lag of tau; below, dp/dt = -p / (tau (10 / p)^n)
    assert t_fast == pytest.approx(tau * math.log(2.0), abs=1.5 * DT_S)
    assert t_slow == pytest.approx(tau * 10.0**n / n * (2.0**-n - 4.0**-n), rel=0.05)
    assert t_slow > 3.0 * t_fast


def test_brake_percent_mode_rate_limits_and_driver():
    rig = Rig()
    rig.brake(PEDAL_PERCENT, 50.0, inc=10.0)  # 10 %/s is raised to 50 %/s = 40 bar/s
    r = rig.run(2.0, "brake_cmd_bar", "brake_output_bar")
    assert math.isclose(np.max(np.diff(r["brake_cmd_bar"])) / DT_S, 40.0)
    assert r["brake_output_bar"][-1] == pytest.approx(40.0)
    rep = rig.reports()
    assert rep["brake.cmd_type"][0] == PEDAL_PERCENT
    assert rep["brake.percent_output"][0] == pytest.approx(50.0)
    assert np.isnan(rep["brake.pressure_output"][0])

    rig = Rig()
    rig.c.driver_brake_bar = 25.0
    rig.tick()
    assert rig.s.brake_output_bar[0] == 25.0  # the driver's foot: no actuator delay
    assert math.isclose(brake_output_bar(rig.p[0], rig.s[0]), 25.0)
    rep = rig.reports()
    assert rep["brake.cmd_type"][0] == PEDAL_NONE and np.isnan(rep["brake.pressure_output"][0])


# --------------------------------------------------------------------------- throttle


def test_throttle_rate_limits_delay_and_raw_mapping():
    rig = Rig()
    rig.throttle(PEDAL_PERCENT, 60.0, inc=100.0, dec=30.0)
    r = rig.run(1.0, "throttle_cmd_pct", "throttle_pedal_pct")
    cmd, pedal = r["throttle_cmd_pct"], r["throttle_pedal_pct"]
    assert math.isclose(np.max(np.diff(np.r_[0.0, cmd])) / DT_S, 100.0)
    assert cmd[-1] == 60.0
    lag = PARAMS["throttle_delay_s"] / DT_S  # 4.8 ticks
    k0 = int(lag)
    frac = lag - k0
    expected = cmd[: -k0] + frac * (np.r_[0.0, cmd[: -k0 - 1]] - cmd[: -k0])
    assert np.allclose(pedal[k0:], expected, atol=1e-9)
    rig.throttle(PEDAL_PERCENT, 0.0, inc=100.0, dec=30.0)  # 30 %/s is raised to 100 %/s
    r = rig.run(1.0, "throttle_cmd_pct")
    assert math.isclose(np.min(np.diff(r["throttle_cmd_pct"])) / DT_S, -100.0)

    # 0 = the default rate (when the default is 0: unlimited)
    rig = Rig()
    rig.throttle(PEDAL_PERCENT, 50.0)
    rig.tick()
    assert rig.s.throttle_cmd_pct[0] == 50.0
    rig = Rig(throttle_default_rate_pct_s=250.0)
    rig.throttle(PEDAL_PERCENT, 50.0)
    rig.tick()
    assert math.isclose(rig.s.throttle_cmd_pct[0], 250.0 * DT_S)

    for raw, pct in ((15.0, 0.0), (80.0, 100.0), (47.5, 50.0), (5.0, 0.0), (95.0, 100.0)):
        assert math.isclose(raw_to_pedal_pct(raw), pct, abs_tol=1e-12)
    rig = Rig()
    rig.throttle(PEDAL_RAW, 41.0, inc=math.inf)
    rig.run(0.5)
    assert math.isclose(rig.s.throttle_pedal_pct[0], 40.0)
    rep = rig.reports()
    assert rep["throttle.cmd_type"][0] == PEDAL_RAW and rep["throttle.enabled"][0]
    assert math.isclose(rep["throttle.percent_output"][0], 40.0)


def test_throttle_follows_the_driver_without_control():
    rig = Rig()
    rig.c.driver_throttle_pct = 30.0
    rig.run(0.5)
    assert rig.s.throttle_pedal_pct[0] == 30.0
    rep = rig.reports()
    assert rep["throttle.cmd_type"][0] == PEDAL_NONE and np.isnan(rep["throttle.percent_output"][0])


# --------------------------------------------------------------------------- gear


def test_gear_shift_speed_limit_duration_and_rejects():
    rig = Rig()
    rig.set_speed(1.0)
    rig.c.gear_cmd = GEAR_REVERSE
    rig.run(0.1)
    assert rig.s.gear[0] == GEAR_HIGH
    assert rig.reports()["gear.reject"][0] == GEAR_REJECT_VEHICLE_SPEED

    rig.set_speed(0.3)  # below gear_shift_max_speed_mps
    rig.c.gear_cmd = GEAR_REVERSE
    rig.tick()
    rig.c.gear_cmd = GEAR_NONE
    r = rig.run(1.5, "gear", "time_s")
    assert rig.s.gear_reject[0] == GEAR_REJECT_NONE
    shifted = r["time_s"][first_index(r["gear"] == GEAR_REVERSE)] - r["time_s"][0] + DT_S
    assert shifted == pytest.approx(PARAMS["gear_shift_s"], abs=DT_S + 1e-9)
    assert np.all(r["gear"][r["gear"] != GEAR_REVERSE] == GEAR_NEUTRAL)  # neutral during the shift
    rep = rig.reports()
    assert rep["gear.gear"][0] == GEAR_REVERSE and rep["gear.cmd"][0] == GEAR_REVERSE
    assert rig.s.speed_brake_mps[0] < 0.0  # reverse: negative speed

    rig.c.gear_cmd = GEAR_HIGH
    rig.run(0.1)
    rig.c.gear_cmd = GEAR_PARK  # while the shift to H runs
    rig.run(0.1)
    assert rig.s.gear_reject[0] == GEAR_REJECT_SHIFT_IN_PROGRESS
    rig.c.gear_cmd = GEAR_NONE
    rig.run(1.5)
    assert rig.s.gear[0] == GEAR_HIGH
    rig.c.gear_cmd = 6  # MANUAL: not on this vehicle
    rig.run(0.1)
    assert rig.s.gear_reject[0] == GEAR_REJECT_UNSUPPORTED and rig.s.gear[0] == GEAR_HIGH


def test_gear_commands_need_dbw_and_the_lever_acts_without():
    rig = Rig()
    rig.c.system_enable = False
    rig.c.gear_cmd = GEAR_PARK
    rig.run(2.0)
    assert rig.s.gear[0] == GEAR_HIGH
    rig.c.gear_cmd = GEAR_NONE
    rig.c.driver_gear = GEAR_PARK
    rig.run(1.5)
    assert rig.s.gear[0] == GEAR_PARK
    assert rig.reports()["gear.driver"][0] == GEAR_PARK


# --------------------------------------------------------------------------- speeds


def test_measured_speeds_from_the_wheels():
    rig = Rig()
    omega = np.array([10.0, 12.0, 8.0, 6.0])
    rig.s.wheel_omega_rad_s[0][:] = omega
    rig.tick()
    k = PARAMS["tyre_radius_m"] * PARAMS["speed_scale"]
    exact = flatten_reports(dbw_reports(rig.p, rig.s, exact=True))
    assert math.isclose(exact["vehicle_velocity.vehicle_velocity_brake"][0], 9.0 * k)
    assert math.isclose(exact["vehicle_velocity.vehicle_velocity_propulsion"][0], 7.0 * k)
    assert math.isclose(exact["ulc.vel_meas"][0], 9.0 * k)
    # the messages carry them at the CAN resolution: 0.01 km/h, and 0.02 m/s for the ULC
    rep = rig.reports()
    kmh = 0.01 / 3.6
    assert rep["vehicle_velocity.vehicle_velocity_brake"][0] == pytest.approx(round(9.0 * k / kmh) * kmh, abs=1e-12)
    assert rep["vehicle_velocity.vehicle_velocity_propulsion"][0] == pytest.approx(round(7.0 * k / kmh) * kmh,
                                                                                   abs=1e-12)
    assert rep["ulc.vel_meas"][0] == pytest.approx(round(9.0 * k / 0.02) * 0.02, abs=1e-12)
    assert rep["ulc.vel_meas"][0] != exact["ulc.vel_meas"][0]
    assert rep["vehicle_velocity.dir_src"][0] == 1
    assert rep["wheel_speeds.front_right"][0] == 12.0 and rep["wheel_speeds.rear_right"][0] == 6.0


def test_reports_carry_their_can_resolution():
    rig = Rig()
    rig.steer(STEER_ANGLE, 123.456)
    rig.throttle(PEDAL_PERCENT, 33.3333)
    rig.s.wheel_omega_rad_s[0][:] = 17.77
    rig.run(0.5)
    rep, exact = rig.reports(), flatten_reports(dbw_reports(rig.p, rig.s, exact=True))
    for (message, name), resolution in REPORT_RESOLUTION.items():
        key = f"{message}.{name}"
        if np.isnan(exact[key][0]):
            assert np.isnan(rep[key][0]), key
            continue
        steps = rep[key][0] / resolution
        assert steps == pytest.approx(round(steps), abs=1e-9), key  # a whole number of steps
        assert abs(rep[key][0] - exact[key][0]) <= 0.5 * resolution + 1e-12, key  # the nearest one
    assert rep["steering.steering_wheel_angle"][0] != exact["steering.steering_wheel_angle"][0]
    assert rep["wheel_speeds.front_left"][0] == exact["wheel_speeds.front_left"][0]


# --------------------------------------------------------------------------- ULC


def test_ulc_velocity_reference_ramps_and_eases_in_without_overshoot():
    rig = Rig()
    rig.ulc(ULC_VELOCITY, 5.0)
    r = rig.run(8.0, "ulc_vel_ref_mps", "ulc_accel_ref_mps2")
    v, a = r["ulc_vel_ref_mps"], r["ulc_accel_ref_mps2"]
    slope = np.diff(v) / DT_S
    mid = (v[1:] > 1.5) & (v[1:] < 3.5)
    assert np.allclose(slope[mid], PARAMS["ulc_default_accel_mps2"])
    assert np.max(v) <= 5.0 and v[-1] == 5.0
    jerk = np.diff(np.r_[0.0, a]) / DT_S
    assert np.max(jerk) <= PARAMS["ulc_default_jerk_throttle_mps3"] + 1e-9
    assert np.min(jerk) >= -PARAMS["ulc_default_jerk_brake_mps3"] - 1e-9
    # eases in: the last 0.1 m/s takes longer than at the full rate
    t_last = np.count_nonzero((v > 4.9) & (v < 5.0)) * DT_S
    assert t_last > 0.1 / PARAMS["ulc_default_accel_mps2"] * 1.5
    assert np.all(np.diff(v) >= 0.0)

    rig.ulc(ULC_VELOCITY, 2.0)
    r = rig.run(4.0, "ulc_vel_ref_mps")
    v = r["ulc_vel_ref_mps"]
    slope = np.diff(v) / DT_S
    assert np.allclose(slope[(v[1:] > 2.8) & (v[1:] < 4.2)], -PARAMS["ulc_default_decel_mps2"])
    assert np.min(v) >= 2.0 and v[-1] == 2.0


def test_ulc_limit_decoding():
    lo_hi = [(0.3, 3.0), (0.3, 6.0), (1.0, 25.0), (1.0, 25.0)]
    for lo, hi in lo_hi:
        assert ulc_limit(0.0, 1.7, lo, hi) == 1.7
        assert ulc_limit(math.inf, 1.7, lo, hi) == hi
        assert ulc_limit(-1.0, 1.7, lo, hi) == hi
        assert ulc_limit(0.01, 1.7, lo, hi) == lo
        assert ulc_limit(100.0, 1.7, lo, hi) == hi
        assert ulc_limit(0.5 * (lo + hi), 1.7, lo, hi) == 0.5 * (lo + hi)
    for accel, slope in ((10.0, 3.0), (0.1, 0.3), (math.inf, 3.0), (-1.0, 3.0), (2.0, 2.0)):
        rig = Rig()
        rig.ulc(ULC_VELOCITY, 40.0, accel=accel, jerk_throttle=25.0)
        r = rig.run(3.0, "ulc_accel_ref_mps2")
        assert math.isclose(np.max(r["ulc_accel_ref_mps2"]), slope)
    rig = Rig()
    rig.ulc(ULC_VELOCITY, 40.0, jerk_throttle=100.0)
    r = rig.run(0.2, "ulc_accel_ref_mps2")
    assert math.isclose(r["ulc_accel_ref_mps2"][0], 25.0 * DT_S)


@pytest.mark.parametrize("speed", [0.0, 0.5, 2.0])
def test_ulc_throttle_law_against_hand_computation(speed):
    rig = Rig(ulc_throttle_integral_pct=3.0)
    rig.set_speed(speed)
    rig.ulc(ULC_VELOCITY, speed + 3.0)
    p = PARAMS
    integral = 0.0
    seen_integral_limit = False
    for _ in range(int(8.0 / DT_S)):
        rig.tick()
        s = rig.s
        if s.ulc_pedal[0] != ULC_PEDAL_THROTTLE:
            assert s.ulc_throttle_pct[0] == 0.0
            continue
        e = s.ulc_vel_ref_mps[0] - s.ulc_vel_meas_mps[0]
        integral = min(max(integral + e * DT_S, -p["ulc_integral_limit_m"]), p["ulc_integral_limit_m"])
        fade = min(speed / p["ulc_launch_speed_mps"], 1.0)
        expected = (p["ulc_throttle_offset_pct"] + p["ulc_throttle_accel_pct"] * s.ulc_accel_ref_mps2[0]
                    + p["ulc_throttle_speed_pct"] * fade * e + 3.0 * integral)
        assert s.ulc_integral_m[0] == pytest.approx(integral, abs=1e-12)
        assert s.ulc_throttle_pct[0] == pytest.approx(min(max(expected, 0.0), 100.0), abs=1e-9)
        seen_integral_limit |= integral == p["ulc_integral_limit_m"]
    assert seen_integral_limit  # the speed never follows: the integral runs into its clamp
    assert rig.s.ulc_integral_m[0] == p["ulc_integral_limit_m"]
    # the pure law, term by term
    pr = make_params()[0]
    assert ulc_throttle_law_pct(pr, 0.0, 0.0, 0.0, 0.0) == p["ulc_throttle_offset_pct"]
    assert ulc_throttle_law_pct(pr, 1.0, 0.0, 0.0, 0.0) == 4.0 + 15.0
    assert ulc_throttle_law_pct(pr, 0.0, 1.0, 0.0, 0.0) == 4.0  # no proportional part at standstill
    assert ulc_throttle_law_pct(pr, 0.0, 1.0, 0.25, 0.0) == 4.0 + 15.0 * 0.25
    assert ulc_throttle_law_pct(pr, 0.0, 1.0, -3.0, 0.0) == 4.0 + 15.0
    assert ulc_throttle_law_pct(pr, 0.0, 0.0, 0.0, 2.0) == 4.0 + 2.0


def test_ulc_output_delay_reaches_the_pedal():
    rig = Rig()
    rig.set_speed(1.0)
    rig.ulc(ULC_VELOCITY, 4.0)
    r = rig.run(2.0, "ulc_throttle_pct", "ulc_throttle_out_pct")
    k = int(round(PARAMS["ulc_delay_s"] / DT_S))
    assert np.array_equal(r["ulc_throttle_out_pct"][k:], r["ulc_throttle_pct"][:-k])


def test_ulc_brake_allocation_stop_hold_and_coast():
    rig = Rig()
    rig.set_speed(3.0)
    rig.ulc(ULC_VELOCITY, 3.0)
    rig.run(1.0)
    rig.ulc(ULC_VELOCITY, 0.0)
    r = rig.run(1.0, "ulc_pedal", "ulc_demand_mps2", "ulc_brake_bar", "ulc_throttle_pct")
    braking = r["ulc_pedal"] == ULC_PEDAL_BRAKE
    assert np.any(braking)
    expected = PARAMS["ulc_mass_kg"] * -r["ulc_demand_mps2"][braking] / newton_per_bar(rig.p)
    assert np.allclose(r["ulc_brake_bar"][braking], np.clip(expected, 0.0, PARAMS["brake_max_bar"]))
    assert np.all(r["ulc_throttle_pct"][braking] == 0.0)

    rig.set_speed(0.0)  # standing still with the reference falling to zero: stop hold
    rig.run(3.0)
    hold = PARAMS["ulc_stop_brake_pct"] / 100.0 * PARAMS["brake_max_bar"]
    assert rig.s.ulc_stop_hold[0] and rig.s.ulc_integral_m[0] == 0.0
    assert rig.s.brake_output_bar[0] == pytest.approx(hold)
    rep = rig.reports()
    assert rep["brake.cmd_src"][0] == 1 and rep["brake.cmd_type"][0] == PEDAL_BRAKE_PRESSURE

    rig = Rig()
    rig.set_speed(3.0)
    rig.ulc(ULC_VELOCITY, 0.0, coast=True)
    r = rig.run(1.0, "ulc_brake_bar", "brake_output_bar")
    assert np.all(r["ulc_brake_bar"] == 0.0) and np.all(r["brake_output_bar"] == 0.0)
    assert rig.reports()["ulc.coast_decel"][0]
    rig.set_speed(0.0)
    rig.run(1.0)
    assert rig.s.brake_output_bar[0] == pytest.approx(hold)  # holding still is not slowing down


def test_ulc_acceleration_mode_is_jerk_limited():
    rig = Rig()
    rig.set_speed(2.0)
    rig.ulc(ULC_ACCEL, 1.5, accel=3.0, jerk_throttle=5.0)
    r = rig.run(1.0, "ulc_accel_ref_mps2", "ulc_vel_ref_mps")
    a = r["ulc_accel_ref_mps2"]
    assert math.isclose(a[0], 5.0 * DT_S)
    assert np.max(np.diff(a)) / DT_S <= 5.0 + 1e-9
    assert a[-1] == 1.5
    assert np.all(np.abs(r["ulc_vel_ref_mps"] - 2.0) <= 1.0 + 1e-12)
    rig.ulc(ULC_ACCEL, -9.0, jerk_brake=4.0)  # clamped to the default decel limit
    r = rig.run(2.0, "ulc_accel_ref_mps2")
    assert r["ulc_accel_ref_mps2"][-1] == -PARAMS["ulc_default_decel_mps2"]
    assert np.min(np.diff(r["ulc_accel_ref_mps2"])) / DT_S >= -4.0 - 1e-9


def test_user_throttle_preempts_the_ulc_and_its_outputs_time_out():
    rig = Rig()
    rig.ulc(ULC_VELOCITY, 0.0)
    rig.run(1.0)
    hold = PARAMS["ulc_stop_brake_pct"] / 100.0 * PARAMS["brake_max_bar"]
    assert rig.s.ulc_enabled[0] and rig.s.brake_cmd_bar[0] == pytest.approx(hold)

    rig.throttle(PEDAL_PERCENT, 20.0)
    r = rig.run(0.5, "ulc_enabled", "ulc_preempted", "brake_cmd_src", "brake_cmd_bar", "throttle_cmd_pct")
    assert not np.any(r["ulc_enabled"]) and np.all(r["ulc_preempted"])
    assert r["throttle_cmd_pct"][-1] == 20.0
    rep = rig.reports()
    assert rep["ulc.preempted"][0] and not rep["ulc.enabled"][0]
    assert rep["throttle.cmd_src"][0] == 0 and rep["throttle.enabled"][0]
    # the brake keeps the ULC's last output for ulc_actuator_timeout_s, then follows the driver (0)
    held = np.count_nonzero(r["brake_cmd_src"] == 1)
    assert held * DT_S == pytest.approx(PARAMS["ulc_actuator_timeout_s"], abs=DT_S)
    assert np.all(r["brake_cmd_bar"][:held] == pytest.approx(hold))
    assert np.all(r["brake_cmd_bar"][held:] == 0.0)

    # user commands stop: the ULC, still commanded, engages again
    rig.c.throttle_fresh = False
    rig.run(0.5)
    assert rig.s.ulc_enabled[0] and not rig.s.ulc_preempted[0]


def test_ulc_timeout_flag():
    rig = Rig()
    rig.ulc(ULC_VELOCITY, 1.0)
    rig.run(0.5)
    rig.c.ulc_fresh = False
    rig.run(0.3)
    rep = rig.reports()
    assert rep["ulc.timeout"][0] and not rep["ulc.enabled"][0] and np.isnan(rep["ulc.vel_ref"][0])


# --------------------------------------------------------------------------- biases


def test_hardware_biases():
    rig = Rig(throttle_bias_pct=5.0, brake_bias_bar=3.0, ulc_speed_bias_mps=0.3)
    assert rig.s.throttle_pedal_pct[0] == 5.0 and rig.s.brake_output_bar[0] == 3.0  # at reset
    rig.set_speed(2.0)
    rig.throttle(PEDAL_PERCENT, 50.0)
    rig.brake(PEDAL_BRAKE_PRESSURE, 20.0)
    rig.run(1.0)
    assert rig.s.throttle_pedal_pct[0] == 55.0
    assert rig.s.brake_output_bar[0] == pytest.approx(23.0)
    rep = rig.reports()
    assert rep["ulc.vel_meas"][0] == pytest.approx(2.3)
    assert rep["vehicle_velocity.vehicle_velocity_brake"][0] == pytest.approx(2.0)
    rig.throttle(PEDAL_PERCENT, 98.0, inc=math.inf)
    rig.run(0.5)
    assert rig.s.throttle_pedal_pct[0] == 100.0

    rig = Rig(brake_bias_bar=-3.0)
    rig.brake(PEDAL_BRAKE_PRESSURE, 2.0)
    rig.run(1.0)
    assert rig.s.brake_output_bar[0] == 0.0
    rig.brake(PEDAL_BRAKE_PRESSURE, 40.0)
    rig.run(1.0)
    assert rig.s.brake_output_bar[0] == pytest.approx(37.0)

    rig = Rig(ulc_speed_bias_mps=0.3, default_gear=GEAR_REVERSE)
    rig.set_speed(2.0)
    rig.tick()
    assert rig.s.speed_brake_mps[0] == pytest.approx(-2.0)
    assert rig.s.ulc_vel_meas_mps[0] == pytest.approx(-2.3)  # reads high in the travel direction


# --------------------------------------------------------------------------- invalid input


def _assert_no_nan(s):
    for name in DBW_STATE_NAMES:
        record = np.asarray(s[name])
        for sub in record.dtype.names or (None,):  # the latched messages: each command field
            values = np.asarray(record if sub is None else record[sub], dtype=float)
            assert not np.any(np.isnan(values)), (name, sub)


def test_nan_messages_are_ignored_and_flagged():
    rig = Rig()
    rig.steer(STEER_ANGLE, 50.0, rate=math.inf, accel=math.inf)
    rig.throttle(PEDAL_PERCENT, 10.0)
    rig.brake(PEDAL_BRAKE_PRESSURE, 5.0)
    rig.run(1.0)
    rig.steer(STEER_ANGLE, math.nan)
    rig.throttle(PEDAL_PERCENT, 30.0, inc=math.nan)
    rig.brake(PEDAL_BRAKE_PRESSURE, math.nan)
    rig.ulc(ULC_VELOCITY, math.nan)
    rig.c.driver_steering_deg = math.nan
    rig.c.driver_steers = True
    rig.c.driver_throttle_pct = math.nan
    rig.c.driver_brake_bar = math.nan
    rig.run(0.05)
    s = rig.s
    _assert_no_nan(s)
    assert s.steer_msg_invalid[0] and s.throttle_msg_invalid[0] and s.brake_msg_invalid[0]
    assert s.ulc_msg_invalid[0] and not s.ulc_enabled[0]
    assert s.steer_enabled[0] and s.steer_target_deg[0] == 50.0  # the last valid message still acts
    assert s.throttle_cmd_pct[0] == 10.0
    rig.run(0.3)  # only invalid messages: the subsystems time out, the wheel stays put
    _assert_no_nan(s)
    assert not s.steer_enabled[0] and s.steer_timeout[0]
    assert abs(s.steering_wheel_deg[0] - 50.0) < 1e-3
    assert s.throttle_pedal_pct[0] == 0.0 and s.brake_output_bar[0] == 0.0
    rig.steer(STEER_ANGLE, 20.0)
    rig.tick()
    assert not s.steer_msg_invalid[0] and s.steer_enabled[0]


def test_unknown_modes_are_invalid_messages():
    rig = Rig()
    rig.steer(1, 5.0)  # CMD_TORQUE: not supported
    rig.brake(8, -2.0)  # CMD_ACCEL
    rig.run(0.1)
    assert rig.s.steer_msg_invalid[0] and not rig.s.steer_enabled[0]
    assert rig.s.brake_msg_invalid[0] and not rig.s.brake_enabled[0]


def test_check_commands_rejects_nan_and_unknown_values():
    cmd = make_commands(3)
    check_commands(cmd)
    cmd.steer_rate_deg_s[1] = math.inf  # unlimited is fine
    check_commands(cmd)
    cmd.steer_cmd[2] = math.nan
    with pytest.raises(ValueError, match=r"steer_cmd.*\[2\]"):
        check_commands(cmd)
    cmd.steer_cmd[2] = 0.0
    cmd.ulc_mode[0] = 7
    with pytest.raises(ValueError, match="ulc_mode"):
        check_commands(cmd)
    cmd.ulc_mode[0] = 0
    cmd.driver_gear[0] = 9
    with pytest.raises(ValueError, match="driver_gear"):
        check_commands(cmd)


# --------------------------------------------------------------------------- reports


def test_reports_shapes_names_and_copies():
    n = 3
    p = make_params()
    s = np.zeros(n, STATE_DTYPE).view(np.recarray)
    c = make_commands(n)
    for i in range(n):
        reset_dbw(p[0], s[i])
    c.system_enable = True
    c.steer_mode, c.steer_cmd, c.steer_enable, c.steer_fresh = STEER_CURVATURE, 0.05, True, True
    c.brake_mode[1], c.brake_cmd[1] = PEDAL_BRAKE_PRESSURE, 10.0
    c.brake_enable[1], c.brake_fresh[1] = True, True
    c.ulc_mode[2], c.ulc_cmd[2], c.ulc_enable[2], c.ulc_fresh[2] = ULC_VELOCITY, 2.0, True, True
    for k in range(60):
        for i in range(n):
            step_dbw(DT_S, p[0], c[i], s[i], k % TICKS_PER_STEP == 0)
    reports = dbw_reports(p, s)
    assert set(reports) == {"steering", "throttle", "brake", "gear", "ulc", "vehicle_velocity",
                            "wheel_speeds", "dbw_enabled"}
    flat = flatten_reports(reports)
    for name in ("steering.steering_wheel_angle", "steering.cmd", "steering.cmd_type", "steering.enabled",
                 "steering.timeout", "steering.limiting_value", "steering.limiting_rate",
                 "steering.limit_value", "steering.limit_rate", "throttle.cmd_type", "throttle.percent_input",
                 "throttle.percent_cmd", "throttle.percent_output", "throttle.enabled", "throttle.timeout",
                 "brake.cmd_type", "brake.pressure_input", "brake.pressure_cmd", "brake.pressure_output",
                 "brake.percent_input", "brake.percent_cmd", "brake.percent_output", "brake.enabled",
                 "brake.timeout", "gear.gear", "gear.cmd", "gear.driver", "gear.reject", "ulc.cmd_type",
                 "ulc.vel_ref", "ulc.vel_meas", "ulc.accel_ref", "ulc.accel_meas", "ulc.enabled",
                 "ulc.preempted", "ulc.timeout", "ulc.coast_decel", "vehicle_velocity.vehicle_velocity_brake",
                 "vehicle_velocity.vehicle_velocity_propulsion", "vehicle_velocity.dir_src",
                 "wheel_speeds.front_left", "wheel_speeds.front_right", "wheel_speeds.rear_left",
                 "wheel_speeds.rear_right", "dbw_enabled.data"):
        assert flat[name].shape == (n,), name
    assert np.all(flat["steering.cmd_type"] == STEER_ANGLE)
    assert np.all(flat["dbw_enabled.data"])
    assert np.array_equal(np.isnan(flat["brake.pressure_output"]), [True, False, False])
    assert flat["brake.cmd_src"][2] == 1  # the ULC drives vehicle 2's brake (stop hold)
    assert np.array_equal(np.isnan(flat["ulc.vel_ref"]), [True, True, False])
    assert flat["ulc.cmd_type"][2] == ULC_VELOCITY and flat["ulc.cmd_type"][0] == 0
    before = flat["steering.steering_wheel_angle"].copy()
    step_dbw(DT_S, p[0], c[0], s[0], True)
    assert np.array_equal(flat["steering.steering_wheel_angle"], before)  # a copy, not a view
    assert flat["steering.cmd_type"].dtype == np.int64 and flat["steering.enabled"].dtype == bool


def test_drive_mode_follows_the_switch():
    rig = Rig()
    rig.c.drive_mode = DRIVE_TURF
    rig.tick()
    assert rig.s.drive_mode[0] == DRIVE_TURF
    rig.c.drive_mode = 9  # not a switch position: ignored
    rig.tick()
    assert rig.s.drive_mode[0] == DRIVE_TURF


# --------------------------------------------------------------------------- jitted loop


LOG_FIELDS = ("steering_wheel_deg", "throttle_pedal_pct", "brake_output_bar", "ulc_vel_ref_mps", "gear")


@njit(cache=True)
def drive(dt, params, commands, states, ticks_per_step, log):
    """Step vehicle 0 through ``commands`` (one per control step), logging a few outputs per tick."""
    p = params[0]
    s = states[0]
    k = 0
    for step in range(commands.shape[0]):
        cmd = commands[step]
        for tick in range(ticks_per_step):
            step_dbw(dt, p, cmd, s, tick == 0)
            s.time_s += dt
            if k < log.shape[0]:
                log[k, 0] = s.steering_wheel_deg
                log[k, 1] = s.throttle_pedal_pct
                log[k, 2] = s.brake_output_bar
                log[k, 3] = s.ulc_vel_ref_mps
                log[k, 4] = s.gear
            k += 1
    return k


def scenario_commands(steps: int) -> np.recarray:
    """Steering sweeps, ULC speed changes, a gear command and some user brake steps."""
    c = np.zeros(steps, COMMAND_DTYPE).view(np.recarray)
    c.system_enable = True
    c.drive_mode = DRIVE_ALL_WHEEL
    t = np.arange(steps) * TICKS_PER_STEP * DT_S
    c.steer_mode = STEER_ANGLE
    c.steer_cmd = 250.0 * np.sin(0.7 * t)
    c.steer_enable = True
    c.steer_fresh = True
    c.ulc_mode = ULC_VELOCITY
    c.ulc_cmd = np.where((t % 20.0) < 10.0, 6.0, 1.0)
    c.ulc_enable = True
    c.ulc_fresh = True
    c.gear_cmd[steps // 3] = GEAR_NEUTRAL
    braking = (t % 7.0) > 6.0
    c.brake_mode = np.where(braking, PEDAL_BRAKE_PRESSURE, PEDAL_NONE)
    c.brake_cmd = 30.0
    c.brake_enable = braking
    c.brake_fresh = True
    return c


def run_scenario(steps: int) -> np.ndarray:
    p = make_params()
    s = np.zeros(1, STATE_DTYPE).view(np.recarray)
    reset_dbw(p[0], s[0])
    s.wheel_omega_rad_s[0][:] = [10.0, 10.5, 9.8, 10.2]
    log = np.zeros((steps * TICKS_PER_STEP, len(LOG_FIELDS)))
    drive(DT_S, p, scenario_commands(steps), s, TICKS_PER_STEP, log)
    return log


@pytest.mark.skipif(not JIT, reason="numba JIT disabled")
def test_step_dbw_compiles_and_a_10000_tick_loop_is_fast():
    assert isinstance(step_dbw, Dispatcher) and isinstance(reset_dbw_from_params, Dispatcher)
    p = make_params()
    s = np.zeros(1, STATE_DTYPE).view(np.recarray)
    c = make_commands(1)
    reset_dbw(p[0], s[0])
    step_dbw(DT_S, p[0], c[0], s[0], True)  # the jitted function itself, called from Python
    assert len(step_dbw.signatures) >= 1
    run_scenario(2)  # compile the loop (or load it from the cache)
    steps = 10_000 // TICKS_PER_STEP + 1
    reset_dbw(p[0], s[0])
    commands = scenario_commands(steps)
    log = np.zeros((0, len(LOG_FIELDS)))
    t0 = time.perf_counter()
    ticks = drive(DT_S, p, commands, s, TICKS_PER_STEP, log)
    elapsed = time.perf_counter() - t0
    print(f"\nstep_dbw: {ticks} ticks in {elapsed * 1e3:.2f} ms = {ticks / elapsed:,.0f} ticks/s")
    assert ticks >= 10_000
    assert s.time_s[0] == pytest.approx(ticks * DT_S)
    assert s.steer_enabled[0] and (s.ulc_enabled[0] or s.ulc_preempted[0])
    _assert_no_nan(s)


@pytest.mark.skipif(not JIT, reason="compares against the jitted run")
def test_same_results_without_jit(tmp_path):
    steps = 200
    jitted = run_scenario(steps)
    out = tmp_path / "nojit.npy"
    code = textwrap.dedent(f"""
        import sys
        import numpy as np
        sys.path.insert(0, {os.path.dirname(__file__)!r})
        import test_dbw_units as t
        np.save({str(out)!r}, t.run_scenario({steps}))
    """)
    env = dict(os.environ, NUMBA_DISABLE_JIT="1")
    subprocess.run([sys.executable, "-c", code], check=True, env=env, timeout=600)
    plain = np.load(out)
    assert np.allclose(plain, jitted, rtol=1e-9, atol=1e-9)
    assert np.ptp(jitted[:, 0]) > 100.0 and np.max(jitted[:, 2]) > 0.0  # the scenario did something


def test_message_validators_accept_exactly_the_modes_of_command_modes():
    """The jitted checks read their mode sets from ``COMMAND_MODES``: every listed mode passes, every other
    number in the field's range fails, and a NaN value fails whatever the mode."""
    from acres_gym.dbw.command import COMMAND_MODES
    from acres_gym.dbw.enables import (
        brake_message_valid,
        steer_message_valid,
        throttle_message_valid,
        ulc_message_valid,
    )

    checks = {"steer_mode": (steer_message_valid, "steer_cmd"),
              "throttle_mode": (throttle_message_valid, "throttle_cmd"),
              "brake_mode": (brake_message_valid, "brake_cmd"), "ulc_mode": (ulc_message_valid, "ulc_cmd")}
    for field, (valid, value_field) in checks.items():
        cmd = make_commands(1)
        accepted = []
        for mode in range(0, 32):
            cmd[field] = mode
            if valid(cmd[0]):
                accepted.append(mode)
        assert accepted == sorted(COMMAND_MODES[field]), field
        cmd[field] = max(COMMAND_MODES[field])
        cmd[value_field] = math.nan
        assert not valid(cmd[0]), field
