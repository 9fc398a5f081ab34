"""The engine-independent helpers ``torque``, ``slip`` and ``ackermann`` (acres_gym.model.curves) against
every clause of their specification (seed 000, ``AcresSimModel.h``: ``Torque``, ``Slip``, ``Ackermann``)."""

import json
import math
import os
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from numba import njit

from acres_gym.model.curves import (
    ACKERMANN_MIN_INNER_RADIUS_M,
    ACKERMANN_MIN_STEER_RAD,
    SLIP_SPEED_FLOOR_MPS,
    ackermann,
    slip,
    torque,
    torque_from_points,
)

# A curve whose highest point (200 N m at 2000 rpm) is in the middle, not at the end.
HUMP = [(1000.0, 100.0), (2000.0, 200.0), (3000.0, 150.0)]
# A curve rising to its last point.
RISING = [(1000.0, 50.0), (2000.0, 80.0), (3000.0, 100.0)]
MAX_RPM = 5000.0  # well above both curves' last point unless a test says otherwise

L_M, T_M = 2.64, 1.9  # the seed's Ackermann example: wheelbase and front track


# ------------------------------------------------------------------------------------------ Torque
class TestTorqueInterpolation:
    def test_at_the_points(self):
        # peak 200 = the curve's own highest point: no rescaling
        for rpm, nm in HUMP:
            assert torque(HUMP, 200.0, MAX_RPM, rpm) == pytest.approx(nm, rel=1e-12)

    @pytest.mark.parametrize(("rpm", "expected"), [
        (1500.0, 150.0),  # half way from 100 to 200
        (1250.0, 125.0),
        (2000.0, 200.0),
        (2500.0, 175.0),  # half way from 200 down to 150
        (2900.0, 155.0),
    ])
    def test_linear_between_points(self, rpm, expected):
        assert torque(HUMP, 200.0, MAX_RPM, rpm) == pytest.approx(expected, rel=1e-12)

    def test_linear_in_rpm_within_a_segment(self):
        rpms = np.linspace(1000.0, 2000.0, 11)
        values = np.array([torque(HUMP, 200.0, MAX_RPM, r) for r in rpms])
        np.testing.assert_allclose(np.diff(values), np.full(10, 10.0), rtol=1e-9)

    @settings(max_examples=200, deadline=None)
    @given(st.floats(1000.0, 3000.0))
    def test_between_neighbouring_points(self, rpm):
        k = int(np.searchsorted([p[0] for p in HUMP], rpm))
        k = min(max(k, 1), len(HUMP) - 1)
        (r0, t0), (r1, t1) = HUMP[k - 1], HUMP[k]
        expected = t0 + (rpm - r0) / (r1 - r0) * (t1 - t0)
        assert torque(HUMP, 200.0, MAX_RPM, rpm) == pytest.approx(expected, rel=1e-12, abs=1e-12)


class TestTorqueRescaling:
    @pytest.mark.parametrize("peak", [50.0, 200.0, 700.0, 1234.5])
    def test_highest_point_equals_peak_when_it_is_not_the_last(self, peak):
        assert torque(HUMP, peak, MAX_RPM, 2000.0) == pytest.approx(peak, rel=1e-12)
        # the other points scale with it
        assert torque(HUMP, peak, MAX_RPM, 1000.0) == pytest.approx(0.5 * peak, rel=1e-12)
        assert torque(HUMP, peak, MAX_RPM, 3000.0) == pytest.approx(0.75 * peak, rel=1e-12)
        assert torque(HUMP, peak, MAX_RPM, 2500.0) == pytest.approx(0.875 * peak, rel=1e-12)

    def test_highest_point_equals_peak_when_it_is_the_last(self):
        assert torque(RISING, 700.0, MAX_RPM, 3000.0) == pytest.approx(700.0, rel=1e-12)
        assert torque(RISING, 700.0, MAX_RPM, 1000.0) == pytest.approx(350.0, rel=1e-12)

    def test_highest_point_first(self):
        falling = [(1000.0, 90.0), (2000.0, 60.0), (3000.0, 30.0)]
        assert torque(falling, 300.0, MAX_RPM, 1000.0) == pytest.approx(300.0, rel=1e-12)
        assert torque(falling, 300.0, MAX_RPM, 3000.0) == pytest.approx(100.0, rel=1e-12)

    @settings(max_examples=100, deadline=None)
    @given(st.lists(st.floats(1.0, 500.0), min_size=1, max_size=12), st.floats(1.0, 2000.0))
    def test_maximum_over_the_curve_is_the_peak(self, nms, peak):
        curve = [(1000.0 + 250.0 * k, nm) for k, nm in enumerate(nms)]
        rpms = [r for r, _ in curve]
        values = [torque(curve, peak, 1e6, r) for r in rpms]
        assert max(values) == pytest.approx(peak, rel=1e-12)
        for (_, nm), value in zip(curve, values, strict=True):
            assert value == pytest.approx(nm * peak / max(nms), rel=1e-12)

    @settings(max_examples=100, deadline=None)
    @given(st.lists(st.floats(1.0, 500.0), min_size=2, max_size=12), st.floats(1.0, 2000.0),
           st.floats(0.0, 10000.0))
    def test_never_above_the_peak(self, nms, peak, rpm):
        curve = [(1000.0 + 250.0 * k, nm) for k, nm in enumerate(nms)]
        value = torque(curve, peak, 1e6, rpm)
        assert 0.0 < value <= peak * (1.0 + 1e-12)


class TestTorqueOutsideTheCurve:
    @pytest.mark.parametrize("rpm", [999.999, 800.0, 1.0, 0.0, -500.0])
    def test_below_first_point_gives_first_points_torque(self, rpm):
        assert torque(HUMP, 200.0, MAX_RPM, rpm) == pytest.approx(100.0, rel=1e-12)
        assert torque(HUMP, 400.0, MAX_RPM, rpm) == pytest.approx(200.0, rel=1e-12)  # rescaled too

    @pytest.mark.parametrize("rpm", [3000.001, 3500.0, 4999.0])
    def test_above_last_point_gives_last_points_torque(self, rpm):
        assert torque(HUMP, 200.0, MAX_RPM, rpm) == pytest.approx(150.0, rel=1e-12)
        assert torque(HUMP, 400.0, MAX_RPM, rpm) == pytest.approx(300.0, rel=1e-12)  # rescaled too

    def test_single_point_curve_is_flat_at_the_peak(self):
        for rpm in (0.0, 1500.0, 4000.0):
            assert torque([(1500.0, 80.0)], 120.0, MAX_RPM, rpm) == pytest.approx(120.0, rel=1e-12)


class TestTorqueFuelCut:
    @pytest.mark.parametrize("rpm", [MAX_RPM, MAX_RPM + 1e-9, MAX_RPM + 1.0, 2 * MAX_RPM, 1e9])
    def test_zero_at_and_above_max_rpm(self, rpm):
        assert torque(HUMP, 200.0, MAX_RPM, rpm) == 0.0

    def test_just_below_max_rpm_is_the_last_points_torque(self):
        assert torque(HUMP, 200.0, MAX_RPM, MAX_RPM - 1e-6) == pytest.approx(150.0, rel=1e-12)

    def test_max_rpm_inside_the_curve_range(self):
        max_rpm = 2500.0  # between the 2nd and 3rd points
        assert torque(HUMP, 200.0, max_rpm, 2500.0) == 0.0
        assert torque(HUMP, 200.0, max_rpm, 2800.0) == 0.0
        assert torque(HUMP, 200.0, max_rpm, 3000.0) == 0.0
        assert torque(HUMP, 200.0, max_rpm, 3500.0) == 0.0
        # below the cut-off the curve is unchanged, rescaling included
        assert torque(HUMP, 200.0, max_rpm, 2499.0) == pytest.approx(175.0 + 0.05, rel=1e-12)
        assert torque(HUMP, 400.0, max_rpm, 1500.0) == pytest.approx(300.0, rel=1e-12)

    def test_max_rpm_below_the_first_point(self):
        assert torque(HUMP, 200.0, 500.0, 400.0) == pytest.approx(100.0, rel=1e-12)
        assert torque(HUMP, 200.0, 500.0, 500.0) == 0.0
        assert torque(HUMP, 200.0, 500.0, 1500.0) == 0.0

    @settings(max_examples=200, deadline=None)
    @given(st.floats(0.0, 6000.0), st.floats(0.0, 6000.0))
    def test_zero_exactly_when_at_or_above_max_rpm(self, max_rpm, rpm):
        value = torque(HUMP, 200.0, max_rpm, rpm)
        if rpm >= max_rpm:
            assert value == 0.0
        else:
            assert value >= 100.0  # the lowest point of the curve


class TestTorqueCurveForms:
    @pytest.mark.parametrize("empty", [None, [], (), np.zeros((0, 2)), np.zeros(0)])
    @pytest.mark.parametrize("rpm", [0.0, 1500.0, 4000.0, MAX_RPM + 1.0])
    def test_null_or_empty_curve_gives_zero(self, empty, rpm):
        assert torque(empty, 700.0, MAX_RPM, rpm) == 0.0

    @pytest.mark.parametrize("rpm", [500.0, 1000.0, 1750.0, 2000.0, 2600.0, 3000.0, 4200.0, MAX_RPM])
    def test_list_of_tuples_array_and_points_agree(self, rpm):
        as_list = torque(HUMP, 700.0, MAX_RPM, rpm)
        as_tuple = torque(tuple(HUMP), 700.0, MAX_RPM, rpm)
        as_lists = torque([list(p) for p in HUMP], 700.0, MAX_RPM, rpm)
        arr = np.array(HUMP)
        as_array = torque(arr, 700.0, MAX_RPM, rpm)
        as_fortran = torque(np.asfortranarray(arr), 700.0, MAX_RPM, rpm)
        as_int = torque(np.array(HUMP, dtype=np.int64), 700.0, MAX_RPM, rpm)
        core = torque_from_points(arr[:, 0].copy(), arr[:, 1].copy(), len(HUMP), 700.0, MAX_RPM, rpm)
        assert as_list == as_tuple == as_lists == as_array == as_fortran == as_int == core

    def test_returns_a_python_float(self):
        assert type(torque(np.array(HUMP), 700.0, MAX_RPM, 1500.0)) is float
        assert type(torque(None, 700.0, MAX_RPM, 1500.0)) is float

    def test_core_uses_only_the_first_count_points(self):
        # the parameter record holds fixed-size arrays; points past the count are ignored
        rpm = np.array([1000.0, 2000.0, 3000.0, 0.0, 0.0])
        nm = np.array([100.0, 200.0, 150.0, 999.0, 999.0])
        assert torque_from_points(rpm, nm, 3, 200.0, MAX_RPM, 2500.0) == pytest.approx(175.0)
        assert torque_from_points(rpm, nm, 0, 200.0, MAX_RPM, 2500.0) == 0.0

    @pytest.mark.parametrize("bad", [
        np.zeros((3, 3)),
        np.zeros((4, 1)),
        np.array([1000.0, 100.0, 2000.0]),
        np.zeros((2, 2, 2)),
        [(1000.0, 100.0, 5.0), (2000.0, 200.0, 5.0)],
        [1000.0, 100.0],
    ])
    def test_bad_shape_raises_value_error(self, bad):
        with pytest.raises(ValueError, match=r"\(n, 2\)"):
            torque(bad, 700.0, MAX_RPM, 1500.0)

    def test_ragged_points_raise_value_error(self):
        with pytest.raises(ValueError):
            torque([(1000.0, 100.0), (2000.0,)], 700.0, MAX_RPM, 1500.0)


# ------------------------------------------------------------------------------------------ Slip
class TestSlip:
    @pytest.mark.parametrize(("omega", "radius", "v"), [
        (10.0, 0.3, 2.0),
        (10.0, 0.3, 3.0),
        (0.0, 0.33, 5.0),
        (30.0, 0.33, 0.0),
        (-10.0, 0.3, -2.0),
        (20.0, 0.343, 7.5),
        (5.0, 0.343, 1.0),
    ])
    def test_formula(self, omega, radius, v):
        expected = (omega * radius - v) / max(0.2, abs(omega * radius), abs(v))
        assert slip(omega, radius, v) == pytest.approx(expected, rel=1e-15, abs=0.0)

    def test_worked_values(self):
        assert slip(10.0, 0.3, 2.0) == pytest.approx(1.0 / 3.0)  # (3 - 2) / 3
        assert slip(10.0, 0.3, 6.0) == pytest.approx(-0.5)  # (3 - 6) / 6
        assert slip(10.0, 0.3, 3.0) == 0.0  # free rolling

    def test_positive_when_driving(self):
        assert slip(12.0, 0.33, 3.0) > 0.0  # wheel surface faster than the ground
        assert slip(2.0, 0.33, 0.0) > 0.0  # spinning up from rest

    def test_sign_follows_omega_r_minus_v_in_reverse(self):
        assert slip(-12.0, 0.33, -3.0) < 0.0  # driving backwards: the wheel surface leads, backwards
        assert slip(-6.0, 0.33, -3.0) > 0.0  # braking backwards

    def test_negative_when_braking(self):
        assert slip(6.0, 0.33, 3.0) < 0.0  # wheel surface slower than the ground

    def test_locked_wheel_is_minus_one(self):
        assert slip(0.0, 0.33, 4.0) == -1.0
        assert slip(0.0, 0.33, -4.0) == 1.0

    def test_spinning_in_place_is_plus_one(self):
        assert slip(20.0, 0.33, 0.0) == 1.0

    def test_finite_at_standstill(self):
        s = slip(0.0, 0.33, 0.0)
        assert math.isfinite(s)
        assert s == 0.0
        assert math.isfinite(slip(0.0, 0.0, 0.0))

    def test_floor_near_standstill(self):
        assert SLIP_SPEED_FLOOR_MPS == 0.2
        assert slip(0.1, 1.0, 0.0) == pytest.approx(0.5)  # omega r = 0.1 m/s, v = 0: 0.1 / 0.2
        assert slip(1.0, 0.1, 0.0) == pytest.approx(0.5)
        assert slip(0.0, 0.33, 0.1) == pytest.approx(-0.5)
        assert slip(0.15 / 0.3, 0.3, 0.05) == pytest.approx(0.5)  # (0.15 - 0.05) / 0.2
        # at the floor the usual denominator takes over continuously
        assert slip(0.2, 1.0, 0.0) == pytest.approx(1.0)

    def test_floor_makes_the_slip_proportional_to_the_sliding_speed(self):
        for dv in (0.001, 0.01, 0.05):
            assert slip(0.0, 0.33, dv) == pytest.approx(-dv / 0.2)

    @settings(max_examples=400, deadline=None)
    @given(st.floats(-200.0, 200.0), st.floats(0.05, 1.0), st.floats(-60.0, 60.0))
    def test_range_outside_the_floor_region(self, omega, radius, v):
        surface = omega * radius
        assume(max(abs(surface), abs(v)) >= 0.2)  # outside the floor region
        assume(surface * v >= 0.0)  # the wheel turns in the direction of travel (or is locked / still)
        s = slip(omega, radius, v)
        assert -1.0 <= s <= 1.0

    @settings(max_examples=400, deadline=None)
    @given(st.floats(-200.0, 200.0), st.floats(0.05, 1.0), st.floats(-60.0, 60.0))
    def test_bounded_and_finite_everywhere(self, omega, radius, v):
        # A wheel spinning against the direction of travel gives |s| up to 2: |omega r - v| <= 2 max(...).
        s = slip(omega, radius, v)
        assert math.isfinite(s)
        assert -2.0 <= s <= 2.0

    def test_wheel_spinning_against_travel_leaves_the_unit_range(self):
        assert slip(10.0, 0.3, -3.0) == pytest.approx(2.0)

    @settings(max_examples=200, deadline=None)
    @given(st.floats(-0.19, 0.19), st.floats(-0.19, 0.19))
    def test_floor_region_uses_the_floor(self, surface, v):
        assert slip(surface, 1.0, v) == pytest.approx((surface - v) / 0.2, rel=1e-12, abs=1e-15)


# ------------------------------------------------------------------------------------------ Ackermann
def _expected_ackermann(delta, wheelbase, track):
    radius = wheelbase / math.tan(abs(delta))
    inner = math.atan(wheelbase / max(radius - track / 2.0, 0.1))
    outer = math.atan(wheelbase / (radius + track / 2.0))
    return (inner, outer) if delta > 0 else (-outer, -inner)


class TestAckermann:
    def test_seed_example(self):
        left, right = ackermann(0.3, L_M, T_M)
        assert left > right > 0.0

    @pytest.mark.parametrize("delta", [1e-4, 0.01, 0.1, 0.3, 0.5, 0.8, 1.0])
    def test_formula_left_turn(self, delta):
        radius = L_M / math.tan(delta)
        left, right = ackermann(delta, L_M, T_M)
        assert left == pytest.approx(math.atan(L_M / (radius - T_M / 2)), rel=1e-13)
        assert right == pytest.approx(math.atan(L_M / (radius + T_M / 2)), rel=1e-13)

    def test_worked_value(self):
        radius = 2.64 / math.tan(0.3)  # 8.534 m
        left, right = ackermann(0.3, 2.64, 1.9)
        assert left == pytest.approx(math.atan(2.64 / (radius - 0.95)))
        assert right == pytest.approx(math.atan(2.64 / (radius + 0.95)))
        assert math.degrees(left) == pytest.approx(19.19, abs=0.01)
        assert math.degrees(right) == pytest.approx(15.55, abs=0.01)

    @pytest.mark.parametrize("delta", [0.01, 0.3, 0.7, 1.0, 1.3])
    def test_symmetric_for_negative_steering(self, delta):
        left, right = ackermann(delta, L_M, T_M)
        left_n, right_n = ackermann(-delta, L_M, T_M)
        assert left_n == pytest.approx(-right, rel=1e-15)
        assert right_n == pytest.approx(-left, rel=1e-15)
        # on a right turn the right wheel is the inner one: larger magnitude
        assert right_n < left_n < 0.0

    def test_inner_above_and_outer_below_the_bicycle_angle(self):
        for delta in (0.05, 0.3, 0.6):
            left, right = ackermann(delta, L_M, T_M)
            assert left > delta > right

    @pytest.mark.parametrize("delta", [0.0, 1e-7, 9.99e-6, -9.99e-6, -1e-7, -0.0])
    def test_below_threshold_both_zero(self, delta):
        assert ACKERMANN_MIN_STEER_RAD == 1e-5
        assert ackermann(delta, L_M, T_M) == (0.0, 0.0)

    def test_at_threshold_steers(self):
        left, right = ackermann(1e-5, L_M, T_M)
        assert left > 0.0 and right > 0.0
        assert left == pytest.approx(1e-5, rel=1e-3) and right == pytest.approx(1e-5, rel=1e-3)
        left_n, right_n = ackermann(-1e-5, L_M, T_M)
        assert left_n < 0.0 and right_n < 0.0

    def test_inner_radius_floor(self):
        assert ACKERMANN_MIN_INNER_RADIUS_M == 0.1
        # R - T/2 < 0.1 m needs tan(delta) > L / (T/2 + 0.1) = 2.514, delta > 1.192 rad
        for delta in (1.2, 1.3, 1.45, 1.55):
            radius = L_M / math.tan(delta)
            assert radius - T_M / 2 < 0.1
            left, right = ackermann(delta, L_M, T_M)
            assert left == pytest.approx(math.atan(L_M / 0.1), rel=1e-13)  # 1.5329 rad
            assert right == pytest.approx(math.atan(L_M / (radius + T_M / 2)), rel=1e-13)
            assert 0.0 < right < left < math.pi / 2
            left_n, right_n = ackermann(-delta, L_M, T_M)
            assert right_n == pytest.approx(-math.atan(L_M / 0.1), rel=1e-13)
            assert left_n == pytest.approx(-right, rel=1e-15)

    def test_floor_keeps_the_inner_angle_continuous_and_monotone(self):
        deltas = np.linspace(1.0, 1.5, 501)
        inner = np.array([ackermann(d, L_M, T_M)[0] for d in deltas])
        assert np.all(np.diff(inner) >= 0.0)
        assert np.max(np.diff(inner)) < 0.01
        # without the floor, R - T/2 <= 0 would give a wheel pointing the wrong way or a division by zero
        assert np.all((inner > 0.0) & (inner < math.pi / 2))

    @settings(max_examples=300, deadline=None)
    @given(st.floats(-1.5, 1.5), st.floats(1.0, 4.0), st.floats(0.5, 2.5))
    def test_matches_the_formula(self, delta, wheelbase, track):
        left, right = ackermann(delta, wheelbase, track)
        if abs(delta) < 1e-5:
            assert (left, right) == (0.0, 0.0)
            return
        exp_left, exp_right = _expected_ackermann(delta, wheelbase, track)
        assert left == pytest.approx(exp_left, rel=1e-12)
        assert right == pytest.approx(exp_right, rel=1e-12)
        assert abs(left) >= abs(right) if delta > 0 else abs(right) >= abs(left)

    @settings(max_examples=300, deadline=None)
    @given(st.floats(0.001, 1.0), st.floats(1.0, 4.0), st.floats(0.5, 2.5))
    def test_wheels_share_the_turn_centre(self, delta, wheelbase, track):
        # Ackermann condition (outside the floor): cot(outer) - cot(inner) = T / L
        assume(wheelbase / math.tan(delta) - track / 2 >= 0.1)
        inner, outer = ackermann(delta, wheelbase, track)
        assert 1.0 / math.tan(outer) - 1.0 / math.tan(inner) == pytest.approx(track / wheelbase, rel=1e-9)


# ------------------------------------------------------------------------------------------ jitted use
@njit
def _helpers_in_jit(curve, peak, max_rpm, rpms, omegas, radius, speeds, deltas, wheelbase, track):
    torques = np.empty(rpms.size)
    for k in range(rpms.size):
        torques[k] = torque(curve, peak, max_rpm, rpms[k])
    slips = np.empty(omegas.size)
    for k in range(omegas.size):
        slips[k] = slip(omegas[k], radius, speeds[k])
    wheels = np.empty((deltas.size, 2))
    for k in range(deltas.size):
        left, right = ackermann(deltas[k], wheelbase, track)
        wheels[k, 0] = left
        wheels[k, 1] = right
    return torques, slips, wheels


@njit
def _torque_of_none_in_jit(rpm):
    return torque(None, 700.0, 7000.0, rpm)


RPMS = np.array([0.0, 999.0, 1000.0, 1500.0, 2000.0, 2500.0, 3000.0, 4000.0, 4999.0, 5000.0, 6000.0])
OMEGAS = np.array([0.0, 0.3, 10.0, 0.0, 10.0, -10.0, 20.0])
SPEEDS = np.array([0.0, 0.0, 2.0, 4.0, 6.0, -2.0, -3.0])
DELTAS = np.array([0.0, 5e-6, 1e-5, 0.3, -0.3, 0.8, -1.3, 1.5])


class TestInsideJittedCode:
    def test_helpers_called_from_njit_match_python(self):
        curve = np.array(HUMP)
        torques, slips, wheels = _helpers_in_jit(curve, 700.0, MAX_RPM, RPMS, OMEGAS, 0.3, SPEEDS, DELTAS,
                                                 L_M, T_M)
        for k, rpm in enumerate(RPMS):
            assert torques[k] == torque(HUMP, 700.0, MAX_RPM, rpm)
        for k in range(OMEGAS.size):
            assert slips[k] == slip.py_func(OMEGAS[k], 0.3, SPEEDS[k])
            assert slips[k] == slip(OMEGAS[k], 0.3, SPEEDS[k])
        for k, delta in enumerate(DELTAS):
            assert tuple(wheels[k]) == ackermann(delta, L_M, T_M)
            assert tuple(wheels[k]) == ackermann.py_func(delta, L_M, T_M)

    def test_non_contiguous_curve_in_jit(self):
        wide = np.zeros((3, 4))
        wide[:, 1] = [p[0] for p in HUMP]
        wide[:, 3] = [p[1] for p in HUMP]
        view = wide[:, 1::2]  # an (n, 2) view with strides
        torques, _, _ = _helpers_in_jit(view, 700.0, MAX_RPM, RPMS, OMEGAS, 0.3, SPEEDS, DELTAS, L_M, T_M)
        np.testing.assert_array_equal(torques, [torque(HUMP, 700.0, MAX_RPM, r) for r in RPMS])

    def test_empty_curve_in_jit(self):
        torques, _, _ = _helpers_in_jit(np.zeros((0, 2)), 700.0, MAX_RPM, RPMS, OMEGAS, 0.3, SPEEDS, DELTAS,
                                        L_M, T_M)
        assert np.all(torques == 0.0)

    def test_none_curve_in_jit(self):
        assert _torque_of_none_in_jit(1500.0) == 0.0

    def test_same_results_with_jit_disabled(self):
        script = (
            "import json, numpy as np\n"
            "from acres_gym.model.curves import torque, slip, ackermann\n"
            f"curve = np.array({HUMP!r})\n"
            f"rpms = {RPMS.tolist()!r}\n"
            f"omegas = {OMEGAS.tolist()!r}\n"
            f"speeds = {SPEEDS.tolist()!r}\n"
            f"deltas = {DELTAS.tolist()!r}\n"
            f"print(json.dumps({{'torque': [torque(curve, 700.0, {MAX_RPM!r}, r) for r in rpms],\n"
            "    'none': torque(None, 700.0, 7000.0, 1500.0),\n"
            "    'slip': [slip(w, 0.3, v) for w, v in zip(omegas, speeds)],\n"
            f"    'ackermann': [list(ackermann(d, {L_M!r}, {T_M!r})) for d in deltas]}}))\n"
        )
        env = dict(os.environ, NUMBA_DISABLE_JIT="1")
        out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True,
                             timeout=120, check=True)
        got = json.loads(out.stdout)
        assert got["torque"] == [torque(HUMP, 700.0, MAX_RPM, r) for r in RPMS]
        assert got["none"] == 0.0
        expected_slip = [slip(w, 0.3, v) for w, v in zip(OMEGAS, SPEEDS, strict=True)]
        np.testing.assert_allclose(got["slip"], expected_slip, rtol=1e-13, atol=0.0)
        np.testing.assert_allclose(got["ackermann"], [ackermann(d, L_M, T_M) for d in DELTAS],
                                   rtol=1e-13, atol=0.0)
