"""Action modes: normalised actions to DBW commands and back, and what the vehicle does with them."""

from __future__ import annotations

import numpy as np
import pytest

from acres_gym.constants import (
    DRIVE_ALL_WHEEL,
    DRIVE_TURF,
    GEAR_HIGH,
    GEAR_LOW,
    GEAR_NONE,
    GEAR_REJECT_VEHICLE_SPEED,
    PEDAL_PERCENT,
    STEER_ANGLE,
    STEER_CURVATURE,
    STEER_YAW_RATE,
    ULC_ACCEL,
    ULC_VELOCITY,
)
from acres_gym.envs.actions import ACTION_MODES, make_action_mode
from acres_gym.envs.tasks import RangerPathFollowing
from acres_gym.params import load_vehicle

BOX_MODES = [name for name in ACTION_MODES if name != "dbw_command"]
FLAT = {"randomization": {"terrain": {"kind": "flat", "surface": "dry_asphalt", "size_m": 200.0},
                          "patches": None, "wetness": None, "payload": {"cargo_kg": None, "occupants": None},
                          "biases": {"ulc_speed_mps": None, "throttle_pct": None, "brake_bar": None,
                                     "steering_center_deg": None}},
        "task_options": {"spawn_xy_m": [-60.0, 0.0], "spawn_yaw_rad": 0.0}}


@pytest.fixture(scope="module")
def params():
    return load_vehicle("polaris_ranger_crew_xp1000")


@pytest.mark.parametrize("name", BOX_MODES)
def test_encode_inverts_decode(name, params):
    mode = make_action_mode(name, params)
    actions = np.random.default_rng(0).uniform(-1.0, 1.0, (64, len(mode.components)))
    if name == "pedals":
        pass  # one signed axis: decode gives throttle or brake, encode their difference
    elif name == "steer_angle+pedals":
        actions[:, 1:] = np.abs(actions[:, 1:])  # the negative half of a pedal axis is the released pedal
    np.testing.assert_allclose(mode.encode(**mode.decode(actions)), actions, atol=1e-12)


@pytest.mark.parametrize("name, steer_mode, steer_key, ulc_mode", [
    ("steer_angle+pedals", STEER_ANGLE, "steering_wheel_deg", None),
    ("pedals", STEER_ANGLE, "steering_wheel_deg", None),
    ("curvature+ulc_velocity", STEER_CURVATURE, "curvature_per_m", ULC_VELOCITY),
    ("yaw_rate+ulc_velocity", STEER_YAW_RATE, "yaw_rate_rad_s", ULC_VELOCITY),
    ("steer_angle+ulc_accel", STEER_ANGLE, "steering_wheel_deg", ULC_ACCEL),
])
def test_modes_write_their_messages_in_dbw_units(name, steer_mode, steer_key, ulc_mode, params):
    from acres_gym.dbw.command import make_commands

    mode = make_action_mode(name, params)
    batch = mode.to_batch(np.full((3, len(mode.components)), 0.5), 3)
    decoded = mode.decode(batch)
    cmd = make_commands(3).view(np.ndarray)
    rows = np.array([True, False, True])
    mode.write(cmd, batch, rows)
    assert list(cmd["steer_mode"]) == [steer_mode, 0, steer_mode]
    np.testing.assert_array_equal(cmd["steer_cmd"][rows], decoded[steer_key][rows])
    assert cmd["steer_fresh"][0] and not cmd["steer_fresh"][1]
    if ulc_mode is None:
        assert cmd["throttle_mode"][0] == PEDAL_PERCENT and cmd["ulc_mode"][0] == 0
    else:
        assert cmd["ulc_mode"][0] == ulc_mode and cmd["throttle_mode"][0] == 0 and cmd["ulc_fresh"][0]


def test_yaw_rate_mode_scale_and_its_limits(params):
    mode = make_action_mode("yaw_rate+ulc_velocity", params)
    assert mode.decode(np.array([[0.5, 1.0]]))["yaw_rate_rad_s"][0] == pytest.approx(0.5)
    assert mode.decode(np.array([[0.5, 1.0]]))["ulc_speed_mps"][0] == pytest.approx(12.0)
    with pytest.raises(ValueError, match=r"yaw_rate_max_rad_s = 100.0: expected a number in \(0.0, 8.5\]"):
        make_action_mode("yaw_rate+ulc_velocity", params, {"yaw_rate_max_rad_s": 100.0})
    with pytest.raises(TypeError, match="give yaw_rate_rad_s and ulc_speed_mps"):
        mode.encode(curvature_per_m=0.1)


def _steady_yaw_rate(drive_mode: int) -> float:
    env = RangerPathFollowing(config={**FLAT, "action_mode": "yaw_rate+ulc_velocity", "max_episode_s": 30.0,
                                      "vehicle_overrides": {"driveline.default_drive_mode": drive_mode},
                                      "task_options": {**FLAT["task_options"], "max_lateral_error_m": 1e3}})
    env.reset(seed=0)
    action = env.action_mode.encode(yaw_rate_rad_s=0.0, ulc_speed_mps=5.0).astype(np.float32)
    for _ in range(160):  # 8 s: up to speed on a straight line
        env.step(action)
    action = env.action_mode.encode(yaw_rate_rad_s=0.3, ulc_speed_mps=5.0).astype(np.float32)
    rates = []
    for _ in range(120):  # 6 s of turning; the last 2 s are measured
        obs, *_ = env.step(action)
        rates.append(float(obs["yaw_rate"][0]))
    env.close()
    return float(np.mean(rates[-40:]))


def test_a_yaw_rate_command_turns_the_vehicle_at_that_rate():
    """Steady turn at 5 m/s on flat asphalt: the DBW maps 0.3 rad/s to the curvature 0.3 / v (measured
    speed) through the steering ratio and Ackermann geometry. With the open rear differential (Turf) the
    body yaw rate settles on the command; the locked rear axle of 2WD / AWD makes the rear tyres scrub and
    the vehicle understeer, so it turns slower."""
    turf = _steady_yaw_rate(DRIVE_TURF)
    awd = _steady_yaw_rate(DRIVE_ALL_WHEEL)
    assert turf == pytest.approx(0.3, rel=0.05)
    assert 0.6 * turf < awd < 0.95 * turf


@pytest.mark.parametrize("name", BOX_MODES)
def test_the_gear_axis_adds_a_range_component(name, params):
    plain = make_action_mode(name, params)
    mode = make_action_mode(name, params, {"gear_axis": True})
    assert mode.components == plain.components + ("range",) and mode.space.shape == (len(plain.components) + 1,)
    batch = np.zeros((5, len(mode.components)))
    batch[:, -1] = [-1.0, -0.34, 0.0, 0.34, 1.0]
    assert list(mode.decode(batch)["range_gear"]) == [GEAR_LOW, GEAR_LOW, GEAR_NONE, GEAR_HIGH, GEAR_HIGH]
    encoded = mode.encode(range_gear=np.array([GEAR_LOW, GEAR_NONE, GEAR_HIGH]))
    assert encoded.shape == (3, len(mode.components)) and list(encoded[:, -1]) == [-1.0, 0.0, 1.0]
    with pytest.raises(TypeError, match="range_gear needs action_options.gear_axis: true"):
        plain.encode(range_gear=GEAR_LOW)
    with pytest.raises(ValueError, match="gear_axis = 'yes'"):
        make_action_mode(name, params, {"gear_axis": "yes"})


def test_the_start_range_is_the_gear_of_every_episode_without_the_gear_axis():
    """start_range L: the first step of every episode sends low range (the default H), with or without the
    gear axis (whose dead band then sends nothing)."""
    for options, expected in [({}, GEAR_HIGH), ({"start_range": "L"}, GEAR_LOW),
                              ({"start_range": "L", "gear_axis": True}, GEAR_LOW)]:
        env = RangerPathFollowing(config={**FLAT, "action_options": options})
        mode = env.action_mode
        action = mode.encode(curvature_per_m=0.0, ulc_speed_mps=3.0).astype(np.float32)
        for seed in (0, 1):  # a second episode starts in the same range
            env.reset(seed=seed)
            for _ in range(150):
                obs, *_ = env.step(action)
            assert env.sim.state.gear[0] == expected, options
            assert obs["vehicle_velocity"][0] > 2.5
        env.close()
    with pytest.raises(ValueError, match=r"action_options.start_range = 'low' \(mode 'curvature\+ulc_velocity'\); "
                                         r"allowed: H, L"):
        RangerPathFollowing(config={**FLAT, "action_options": {"start_range": "low"}})


def test_a_gear_message_goes_out_only_when_the_range_changes(params):
    from acres_gym.dbw.command import make_commands
    from acres_gym.state import STATE_DTYPE

    mode = make_action_mode("curvature+ulc_velocity", params, {"gear_axis": True})
    state = np.zeros(3, STATE_DTYPE)
    state["gear_target"] = [GEAR_LOW, GEAR_HIGH, GEAR_HIGH]
    cmd = make_commands(3).view(np.ndarray)
    mode.write(cmd, mode.encode(range_gear=np.array([GEAR_LOW, GEAR_LOW, GEAR_NONE])), np.ones(3, bool), state)
    assert list(cmd["gear_cmd"]) == [GEAR_NONE, GEAR_LOW, GEAR_NONE]


def test_the_agent_chooses_low_range_and_a_moving_shift_is_refused():
    """Low range from the start (instead of the automatic H), then a request for H while rolling at 3 m/s:
    the Ranger shifts only below dbw.gear.shift_max_speed_mps (0.5 m/s), so the gear report rejects it
    (VEHICLE_SPEED) and L stays; stopped, the same request goes through."""
    env = RangerPathFollowing(config={**FLAT, "action_options": {"gear_axis": True}})
    env.reset(seed=0)
    mode, sim = env.action_mode, env.sim

    def drive(speed_mps, gear, steps):
        action = mode.encode(curvature_per_m=0.0, ulc_speed_mps=speed_mps, range_gear=gear).astype(np.float32)
        for _ in range(steps):
            obs, *_ = env.step(action)
        return obs

    obs = drive(3.0, GEAR_LOW, 200)
    assert sim.state.gear[0] == GEAR_LOW and obs["gear"].tolist() == [0, 0, 0, 0, 1]  # P R N H L one-hot
    assert obs["vehicle_velocity"][0] > 2.5
    drive(3.0, GEAR_HIGH, 10)
    assert sim.state.gear[0] == GEAR_LOW and sim.state.gear_reject[0] == GEAR_REJECT_VEHICLE_SPEED
    drive(0.0, GEAR_NONE, 160)  # stop (and keep the low range)
    obs = drive(0.0, GEAR_HIGH, 60)  # 3 s: the 1.5 s shift through N
    assert sim.state.gear[0] == GEAR_HIGH and obs["gear"].tolist() == [0, 0, 0, 1, 0]
    env.close()
