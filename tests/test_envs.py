"""The Gymnasium environments: every registered acres_gym id, checked the way Gymnasium checks its own.

Checks run over the registry (``gymnasium.registry``), so a new id is covered without editing this file.
Most tests use a small flat terrain (``FAST``) to keep resets cheap; the registered configs themselves go
through ``check_env``, determinism and the space checks.
"""

from __future__ import annotations

import copy
import math
import os
import pickle
import subprocess
import sys
import warnings

import gymnasium
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import acres_gym  # noqa: F401  (registers the ids)
from acres_gym.constants import GEAR_HIGH, PEDAL_PERCENT, STEER_ANGLE, ULC_VELOCITY

ENV_IDS = sorted(k for k in gymnasium.registry if k.startswith("acres_gym/"))
FAST = {"randomization": {"terrain": {"kind": "flat", "size_m": 200.0, "cell_m": 2.0, "surface": "dry_asphalt"},
                          "patches": None, "wetness": None},
        "task_options": {"spawn_xy_m": [-80.0, 0.0], "spawn_yaw_rad": 0.0}}
# the navigation task draws its own ground: a smaller grid keeps its resets cheap
FAST_NAVIGATION = {"randomization": {"terrain": {"kind": "flat", "size_m": 200.0, "cell_m": 2.0, "surface": "grass"}},
                   "task_options": {"terrain": {"goal_distance_m": [60.0, 120.0]}}}
# stable-baselines3 calls any 3-D Box an image (uint8, 0-255, at least 36 x 36 for its default CNN); local_map
# is a float32 map of metres and grades for a custom feature extractor (acres_gym.agents.sb3_models)
SB3_MAP_WARNINGS = ("It seems that your observation (space )?local_map is an image",
                    "The minimal resolution for an image is 36x36")


def fast(env_id: str) -> dict:
    """The small flat config of an id (``FAST``, or ``FAST_NAVIGATION`` for the navigation task)."""
    return FAST_NAVIGATION if "Navigation" in env_id else FAST


def make(env_id: str, **kwargs) -> gymnasium.Env:
    return gymnasium.make(env_id, **kwargs).unwrapped


def rollout(env, seed: int, steps: int, action_seed: int = 0):
    obs, info = env.reset(seed=seed)
    env.action_space.seed(action_seed)
    out = [(obs, 0.0, False, False, info)]
    for _ in range(steps):
        out.append(env.step(env.action_space.sample()))
        if out[-1][2] or out[-1][3]:
            break
    return out


def assert_obs_equal(a: dict, b: dict) -> None:
    assert a.keys() == b.keys()
    for k in a:
        assert a[k].dtype == b[k].dtype and np.array_equal(a[k], b[k]), k


def test_the_registry_holds_the_versioned_ids():
    assert "acres_gym/RangerSpeedTracking-v3" in ENV_IDS
    assert "acres_gym/RangerPathFollowing-v3" in ENV_IDS
    for env_id in ENV_IDS:
        spec = gymnasium.spec(env_id)
        assert spec.version is not None
        assert isinstance(spec.entry_point, str) and isinstance(spec.vector_entry_point, str)
        env = make(env_id)
        # no TimeLimit from the registry: the env truncates by its config, and its spec says how long
        assert spec.max_episode_steps is None
        steps = round(env.config["max_episode_s"] * env.control_hz)
        assert env.spec.max_episode_steps == env.max_episode_steps == steps
    # a superseded version says which one replaced it
    with pytest.warns(DeprecationWarning, match="RangerSpeedTracking-v0 is out of date"), \
            pytest.raises(gymnasium.error.DeprecatedEnv, match="version v0 .* deprecated.*RangerSpeedTracking-v3"):
        gymnasium.make("acres_gym/RangerSpeedTracking-v0")
    with pytest.warns(DeprecationWarning, match="RangerPathFollowing-v1 is out of date"), \
            pytest.raises(gymnasium.error.DeprecatedEnv, match="version v1 .* deprecated.*RangerPathFollowing-v3"):
        gymnasium.make("acres_gym/RangerPathFollowing-v1")


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_check_env(env_id):
    env = make(env_id)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the checker's warnings are failures here
        check_env(env, skip_render_check=True)


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_stable_baselines3_check_env(env_id):
    from stable_baselines3.common.env_checker import check_env as sb3_check_env

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for message in SB3_MAP_WARNINGS:
            warnings.filterwarnings("ignore", message=message)
        sb3_check_env(make(env_id))


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_same_seed_and_actions_give_bit_identical_observations(env_id):
    a = rollout(make(env_id), seed=123, steps=40)
    b = rollout(make(env_id), seed=123, steps=40)
    assert len(a) == len(b)
    for (oa, ra, ta, tra, ia), (ob, rb, tb, trb, ib) in zip(a, b, strict=True):
        assert_obs_equal(oa, ob)
        assert ra == rb and ta == tb and tra == trb
        assert ia["reward_terms"] == ib["reward_terms"]
    # the same env reset with the same seed repeats its episode
    env = make(env_id)
    first = rollout(env, seed=5, steps=10)
    again = rollout(env, seed=5, steps=10)
    for x, y in zip(first, again, strict=True):
        assert_obs_equal(x[0], y[0])
    # another seed draws another episode
    other = rollout(env, seed=6, steps=0)[0][4]
    assert other["episode_seed"] != first[0][4]["episode_seed"]
    assert other["randomization"] != first[0][4]["randomization"]


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_observations_lie_in_fixed_spaces_and_flatten(env_id):
    env = make(env_id)
    space_before = copy.deepcopy(env.observation_space)
    flat = gymnasium.wrappers.FlattenObservation(gymnasium.make(env_id, config=fast(env_id)))
    for seed in (0, 1):
        for obs, *_ in rollout(env, seed=seed, steps=30, action_seed=seed):
            assert env.observation_space.contains(obs)
            assert all(np.isfinite(v).all() for v in obs.values())
        assert env.observation_space == space_before  # spaces never change on reset
    obs, _ = flat.reset(seed=0)
    assert obs.ndim == 1 and flat.observation_space.contains(obs)
    obs, *_ = flat.step(flat.action_space.sample())
    assert flat.observation_space.contains(obs)


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_reward_terms_sum_to_the_reward(env_id):
    env = make(env_id, config=fast(env_id))
    for _obs, reward, _t, _tr, info in rollout(env, seed=3, steps=40)[1:]:
        terms = info["reward_terms"]
        assert set(terms) == set(env.config["rewards"])
        assert np.isclose(sum(terms.values()), reward, rtol=0, atol=1e-12)


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_pickle_and_deepcopy_continue_the_episode(env_id):
    env = make(env_id, config=fast(env_id))
    rollout(env, seed=2, steps=10)
    action = env.action_space.sample()
    clones = [pickle.loads(pickle.dumps(env)), copy.deepcopy(env)]
    expected = env.step(action)
    for clone in clones:
        got = clone.step(action)
        assert_obs_equal(got[0], expected[0])
        assert got[1:] == expected[1:]  # reward, ends and the info with the episode's running figures


def test_info_reports_the_episode():
    env = make("acres_gym/RangerSpeedTracking-v3", config=FAST)
    obs, info = env.reset(seed=0)
    for key in ("episode_seed", "randomization", "reward_terms", "rolled_over", "diverged", "off_course",
                "off_terrain", "path_complete", "speed_mps", "target_speed_mps", "speed_rmse_mps", "fuel_g_per_km"):
        assert key in info
    for _ in range(60):
        obs, reward, terminated, truncated, info = env.step(np.array([0.5], dtype=np.float32))
    assert info["speed_mps"] > 1.0 and info["distance_m"] > 2.0 and info["fuel_used_g"] > 0.0
    assert obs["gear"][3] == 1.0  # H engaged (P, R, N, H, L)
    assert obs["dbw_enabled"][0] == 1.0 and obs["report_valid"][1] == 1.0  # the throttle is reported


# --- episode ends -------------------------------------------------------------------------------------
def test_truncation_after_max_episode_s():
    env = make("acres_gym/RangerSpeedTracking-v3", config={**FAST, "max_episode_s": 1.0})
    env.reset(seed=0)
    for k in range(20):
        _, _, terminated, truncated, info = env.step(env.action_space.sample() * 0)
        assert not terminated
        assert truncated == (k == 19)


def test_leaving_the_path_corridor_terminates():
    env = make("acres_gym/RangerPathFollowing-v3",
               config={**FAST, "task_options": {**FAST["task_options"], "max_lateral_error_m": 1.0}})
    env.reset(seed=0)
    for _ in range(400):
        _, reward, terminated, truncated, info = env.step(np.array([1.0, 0.0], dtype=np.float32))  # full left
        if terminated or truncated:
            break
    assert terminated and info["off_course"] and not info["rolled_over"]
    assert info["reward_terms"]["off_course"] == -env.config["rewards"]["off_course"]["weight"]


def test_rollover_terminates_with_its_flag():
    env = make("acres_gym/RangerSpeedTracking-v3", config=FAST)
    env.reset(seed=0)
    q = env.sim.state.orientation_wxyz[0]
    q[:] = [np.cos(np.pi / 4), np.sin(np.pi / 4), 0.0, 0.0]  # rolled 90 deg onto its side
    _, reward, terminated, truncated, info = env.step(np.zeros(1, dtype=np.float32))
    assert terminated and info["rolled_over"] and not truncated
    assert info["reward_terms"]["rollover"] < 0


def test_a_diverged_vehicle_ends_its_episode_with_finite_observations():
    env = make("acres_gym/RangerSpeedTracking-v3", config=FAST)
    env.reset(seed=0)
    env.sim.state.wheel_omega_rad_s[0, 1] = np.nan  # a numerical failure inside the physics
    obs, reward, terminated, truncated, info = env.step(np.zeros(1, dtype=np.float32))
    assert np.isnan(env.sim.state.position_m).any()  # the state holds NaNs ...
    assert terminated and info["diverged"]
    assert np.isfinite(reward)
    assert all(np.isfinite(v).all() for v in obs.values())  # ... the observation does not
    assert env.observation_space.contains(obs)
    assert all(np.isfinite(v) for v in info["reward_terms"].values())


# --- bad input -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("action_mode, bad, component", [
    ("pedals", [np.nan], "pedal"),
    ("steer_angle+pedals", [0.0, np.nan, 0.0], "throttle"),
    ("steer_angle+pedals", [0.0, 0.0, np.inf], "brake"),
    ("curvature+ulc_velocity", [-np.inf, 0.0], "curvature"),
    ("steer_angle+ulc_accel", [0.0, np.nan], "ulc_accel"),
])
def test_nan_or_inf_actions_raise_naming_the_component(action_mode, bad, component):
    env = make("acres_gym/RangerSpeedTracking-v3", config={**FAST, "action_mode": action_mode})
    env.reset(seed=0)
    with pytest.raises(ValueError, match=f"'{component}'"):
        env.step(np.array(bad, dtype=np.float32))
    with pytest.raises(ValueError, match="shape"):
        env.step(np.zeros(7, dtype=np.float32))


@pytest.mark.parametrize("hz", [1, 5, 9])
def test_control_below_10_hz_is_refused(hz):
    with pytest.raises(ValueError, match=r"control_hz = \d+ is below 10 Hz.*0\.1 s.*allowed: 10, 12, 15, 20"):
        make("acres_gym/RangerSpeedTracking-v3", control_hz=hz)


def test_control_rate_must_divide_the_physics_rate():
    with pytest.raises(ValueError, match=r"control_hz = 50.*allowed: 10, 12, 15, 20, 24, 30, 40, 60, 120"):
        make("acres_gym/RangerSpeedTracking-v3", control_hz=50)
    env = make("acres_gym/RangerSpeedTracking-v3", config=FAST, control_hz=10, max_episode_s=2.0)
    assert env._batch.ticks_per_step == 12 and env.max_episode_steps == 20
    env.reset(seed=0)
    env.step(env.action_space.sample())
    assert env.sim.state.time_s[0] == pytest.approx(0.1)


@pytest.mark.parametrize("config, message", [
    ({"contol_hz": 20}, r"unknown key 'contol_hz' \(did you mean 'control_hz'\?\); allowed keys: task, "),
    ({"task_options": {"speed_max": 5}}, r"task_options \(task '\w+'\): unknown key 'speed_max'.*speed_max_mps"),
    ({"action_mode": "throttle"}, r"action_mode = 'throttle'; known action modes: steer_angle\+pedals"),
    ({"action_options": {"steer_max": 100}}, r"action_options .*unknown key 'steer_max'"),
    ({"observations": ["speed"]}, r"unknown observation 'speed'; known: steering_wheel_angle"),
    ({"rewards": {"speed_eror": {"weight": 1}}}, r"unknown reward term 'speed_eror'; known terms: .*speed_error"),
    ({"rewards": {"speed_error": {"sigma": 1}}}, r"rewards.speed_error: unknown key 'sigma'.*scale"),
    ({"randomization": {"terain": {}}}, r"randomization: unknown key 'terain' \(did you mean 'terrain'\?\)"),
    ({"randomization": {"terrain": {"kind": "hills"}}}, r"randomization.terrain.kind = 'hills'; allowed: flat, rough"),
    ({"randomization": {"payload": {"occupants": [1, 9]}}}, r"mass.occupants"),
    ({"randomization": {"terrain": {"grade_pct": [0, 150]}}},
     r"randomization.terrain.grade_pct\[1\] = 150.0: expected a number in \[-100.0, 100.0\]"),
    ({"randomization": {"patches": {"surfaces": {"lava": 1}}}}, r"unknown surface 'lava'"),
    ({"max_episode_s": -1}, r"max_episode_s = -1"),
    ({"render_mode": "window"}, r"render_mode = 'window'"),
    ({"task": "parking"}, r"task = 'parking'; known tasks: offroad_navigation, speed_tracking, path_following"),
])
def test_bad_configs_raise_naming_the_key(config, message):
    with pytest.raises(ValueError, match=message):
        make("acres_gym/RangerSpeedTracking-v3", config=config)


def test_unknown_reset_options_are_refused():
    env = make("acres_gym/RangerSpeedTracking-v3", config=FAST)
    with pytest.raises(ValueError, match="reset options"):
        env.reset(seed=0, options={"start_speed": 3})


# --- action modes and plug-ins -------------------------------------------------------------------------
def test_dbw_command_mode_drives_with_raw_messages():
    env = make("acres_gym/RangerSpeedTracking-v3", config={**FAST, "action_mode": "dbw_command"})
    assert isinstance(env.action_space, gymnasium.spaces.Dict)
    env.reset(seed=0)
    command = {"steer_mode": STEER_ANGLE, "steer_cmd": 0.0, "ulc_mode": ULC_VELOCITY, "ulc_cmd": 5.0}
    for _ in range(200):
        obs, *_ = env.step(command)
    assert 4.0 < obs["vehicle_velocity"][0] < 6.0
    assert env.sim.state.gear[0] == GEAR_HIGH
    with pytest.raises(ValueError, match="'steer_cmd' is nan"):
        env.step({**command, "steer_cmd": np.nan})
    with pytest.raises(ValueError, match="unknown key 'steer'"):
        env.step({"steer": 1.0})
    with pytest.raises(ValueError, match="throttle_mode"):
        env.step({"throttle_mode": 7, "throttle_cmd": 10.0})  # 7 is no ThrottleCmd type
    env.step({"throttle_mode": PEDAL_PERCENT, "throttle_cmd": 10.0})


def test_commands_are_resent_every_step():
    env = make("acres_gym/RangerPathFollowing-v3", config=FAST)
    env.reset(seed=0)
    for _ in range(5):
        env.step(np.array([0.0, 0.5], dtype=np.float32))
        c = env.sim.commands[0]
        assert c.system_enable and c.steer_fresh and c.ulc_fresh and c.steer_enable and c.ulc_enable
    s = env.sim.state[0]
    assert s.steer_enabled and s.ulc_enabled and not s.steer_timeout and not s.ulc_timeout


def test_reward_plugins_by_decorator_and_entry_point(monkeypatch):
    from acres_gym.envs import rewards

    @rewards.register_reward("test_standstill")
    class Standstill(rewards.RewardTerm):
        def __init__(self, below_mps: float = 0.5):
            self.below_mps = below_mps

        def __call__(self, ctx):
            return (np.abs(ctx.speed_mps) < self.below_mps).astype(float)

    env = make("acres_gym/RangerSpeedTracking-v3", config={**FAST, "rewards": {"test_standstill": {"weight": 2.0}}})
    env.reset(seed=0)
    _, _, _, _, info = env.step(np.zeros(1, dtype=np.float32))
    assert info["reward_terms"]["test_standstill"] == 2.0

    class FakeEntryPoint:
        name = "test_from_entry_point"

        def load(self):
            return Standstill

    monkeypatch.setattr(rewards, "_entry_points_loaded", False)
    monkeypatch.setattr(rewards, "entry_points",
                        lambda group: [FakeEntryPoint()] if group == "acres_gym.rewards" else [])
    assert rewards.reward_class("test_from_entry_point") is Standstill
    monkeypatch.delitem(rewards.REWARD_TERMS, "test_standstill")
    monkeypatch.delitem(rewards.REWARD_TERMS, "test_from_entry_point")


def test_randomization_draws_payload_biases_and_soil_from_the_seed():
    cfg = {"randomization": {"terrain": {"kind": "rough", "size_m": 120.0, "cell_m": 1.0, "surface": "grass",
                                         "roughness_m": [0.02, 0.06]},
                             "patches": {"surfaces": {"grass": 1, "soil": 1}, "scale_m": 10.0},
                             "wetness": [0.1, 0.3],
                             "payload": {"cargo_kg": [0, 150], "occupants": [1, 4]},
                             "biases": {"throttle_pct": [-2, 2], "steering_center_deg": [-3, 3]}},
           "task_options": {"spawn_xy_m": [0.0, 0.0]}}
    env = make("acres_gym/RangerPathFollowing-v3", config=cfg)
    seen = []
    for seed in range(3):
        _, info = env.reset(seed=seed)
        r = info["randomization"]
        p = env.sim.params[0]
        assert 0.0 <= r["cargo_kg"] <= 150.0 and p.cargo_kg == r["cargo_kg"] and p.occupants == r["occupants"]
        assert p.throttle_bias_pct == r["throttle_pct"] and p.steering_center_deg == r["steering_center_deg"]
        assert 0.02 <= r["roughness_m"] <= 0.06
        assert r["soil"] in env.config["randomization"]["soil"]["names"]
        t = env.sim.terrain
        assert np.ptp(t.height_m[0]) > 0.0 and len(np.unique(t.surface_id[0])) == 2
        seen.append(r)
    assert seen[0] != seen[1] != seen[2]
    _, info = env.reset(seed=1)
    assert info["randomization"] == seen[1]


def test_each_vehicle_draws_its_patches_on_its_own_soil_slot_and_a_pickled_randomiser_draws_the_same():
    """The randomiser keeps one patch plan per vehicle (the soil surface is the vehicle's slot of the table):
    the same seed gives two vehicles the same patches, each with its own soil slot, and the plans, left out of
    a pickle, come back the same."""
    from acres_gym.envs.core import episode_rngs
    from acres_gym.envs.randomization import Randomizer

    cfg = {"terrain": {"kind": "rough", "size_m": 60.0, "cell_m": 1.0, "roughness_m": [0.02, 0.06]},
           "patches": {"surfaces": {"grass": 1, "soil": 1}, "scale_m": 10.0}, "wetness": [0.1, 0.3]}
    rz = Randomizer(cfg, 3, "polaris_ranger_crew_xp1000", None)
    draws = [rz.draw(slot, episode_rngs(11), (0.0, 0.0)) for slot in (0, 2, 0)]
    soil = [rz.table.surface_id(f"episode_soil_{slot}") for slot in (0, 2)]
    grass = rz.table.surface_id("grass")
    first, second = draws[0].terrain.surface_id, draws[1].terrain.surface_id
    assert set(np.unique(first)) == {grass, soil[0]} and set(np.unique(second)) == {grass, soil[1]}
    assert np.array_equal(first == soil[0], second == soil[1])
    assert np.array_equal(draws[2].terrain.surface_id, first)
    assert np.array_equal(draws[0].terrain.height_m, draws[1].terrain.height_m)
    copy = pickle.loads(pickle.dumps(rz))
    again = copy.draw(2, episode_rngs(11), (0.0, 0.0))
    assert np.array_equal(again.terrain.surface_id, second) and np.array_equal(again.terrain.height_m,
                                                                                 draws[1].terrain.height_m)
    assert np.array_equal(again.terrain.wetness, draws[1].terrain.wetness)


@pytest.mark.parametrize("direction_deg, roll_sign, pitch_sign", [(0.0, 0, -1), (90.0, 1, 0), (180.0, 0, 1)])
def test_a_drawn_grade_tilts_the_ground_and_the_spawned_vehicle(direction_deg, roll_sign, pitch_sign):
    # speed tracking heads along +x; body axes x forward, y left, z up: ascent along +x lifts the nose
    # (a negative rotation about y, pitch < 0), ascent toward +y lifts the left side (roll > 0)
    cfg = {"randomization": {"terrain": {"kind": "flat", "size_m": 120.0, "grade_pct": [5.0, 20.0],
                                         "grade_direction_deg": direction_deg},
                             "patches": None},
           "task_options": {"spawn_xy_m": [-40.0, 3.0]}}
    env = make("acres_gym/RangerSpeedTracking-v3", config=cfg)
    obs, info = env.reset(seed=4)
    grade = info["randomization"]["grade_pct"]
    assert 5.0 <= grade <= 20.0 and info["randomization"]["grade_direction_deg"] == direction_deg
    d = math.radians(direction_deg)
    gx, gy = env.sim.terrain.terrain(0).gradient_at(10.0, -7.0)
    assert (gx, gy) == pytest.approx((grade / 100 * math.cos(d), grade / 100 * math.sin(d)), abs=1e-12)
    assert env.sim.terrain.terrain(0).height_at(-40.0, 3.0) == pytest.approx(0.0, abs=1e-9)  # through the spawn
    tilt = math.atan(grade / 100)
    roll, pitch = (float(v) for v in obs["roll_pitch"])
    assert roll == pytest.approx(roll_sign * tilt, abs=1e-6) and pitch == pytest.approx(pitch_sign * tilt, abs=1e-6)
    # the same seed draws the same grade; another seed another one
    assert env.reset(seed=4)[1]["randomization"]["grade_pct"] == grade
    assert env.reset(seed=5)[1]["randomization"]["grade_pct"] != grade


# --- layering ------------------------------------------------------------------------------------------
def test_the_simulator_library_imports_neither_envs_nor_agents():
    code = ("import sys, acres_gym, gymnasium; gymnasium.spec('acres_gym/RangerSpeedTracking-v3'); "
            "import acres_gym.sim, acres_gym.dbw.reports; "
            "bad = sorted(m for m in sys.modules if m.split('.')[:2] in (['acres_gym', 'envs'], "
            "['acres_gym', 'agents']) or m.split('.')[0] in ('envs', 'agents')); "
            "assert not bad, bad; "
            "import acres_gym.envs.tasks, acres_gym.envs.sb3, acres_gym.envs.vector_env; "
            "bad = sorted(m for m in sys.modules if m.split('.')[:2] == ['acres_gym', 'agents'] "
            "or m.split('.')[0] in ('envs', 'agents')); assert not bad, bad")
    subprocess.run([sys.executable, "-c", code], check=True, env={**os.environ, "PYTHONWARNINGS": "ignore"})


def test_dotted_overrides_build_nested_sections():
    from acres_gym.configuration import dotted_overrides, merge_configs

    got = dotted_overrides(["randomization.terrain.grade_pct=[0, 15]", "control_hz=10", "randomization.patches=null",
                            "action_mode=curvature+ulc_velocity", "rewards.energy={weight: 0.5}"])
    assert got == {"randomization": {"terrain": {"grade_pct": [0, 15]}, "patches": None}, "control_hz": 10,
                   "action_mode": "curvature+ulc_velocity", "rewards": {"energy": {"weight": 0.5}}}
    merged = merge_configs({"randomization": {"terrain": {"kind": "rough", "grade_pct": 0}}}, got)
    assert merged["randomization"]["terrain"] == {"kind": "rough", "grade_pct": [0, 15]}
    for bad, message in (("control_hz", "expected key.sub.key=value"), ("a..b=1", "expected key.sub.key=value"),
                         ("x=[1, 2", "not valid YAML")):
        with pytest.raises(ValueError, match=message):
            dotted_overrides([bad])
    with pytest.raises(ValueError, match="'a' is already set to a value"):
        dotted_overrides(["a=1", "a.b=2"])


def test_an_exponent_without_a_dot_is_a_number(tmp_path):
    """``3e-4`` is a number in a config file and after ``--set`` (YAML 1.1 alone reads it as a string, and a
    learning rate written so stopped the run); text that only looks like one stays text."""
    from acres_gym.configuration import dotted_overrides, read_yaml

    assert dotted_overrides(["algo_kwargs.learning_rate=3e-4", "n=1E5", "s=lin_3e-4", "q='2e-3'"]) == {
        "algo_kwargs": {"learning_rate": 3e-4}, "n": 1e5, "s": "lin_3e-4", "q": "2e-3"}
    path = tmp_path / "c.yaml"
    path.write_text("learning_rate: -2e-3\nsteps: 300_000\nname: v3e-4\n", encoding="utf-8")
    assert read_yaml(path) == {"learning_rate": -2e-3, "steps": 300000, "name": "v3e-4"}


def test_environment_kernels_run_without_jit():
    """Reports, body kinematics and the task's path search and measures are jitted per control step; with
    NUMBA_DISABLE_JIT=1 they run as plain Python and give the same observations."""
    import json
    import os
    import subprocess
    import sys

    code = (
        "import json, numpy as np, gymnasium, acres_gym\n"
        "env = gymnasium.make('acres_gym/RangerPathFollowing-v3', config={'max_episode_s': 2.0, 'randomization': "
        "{'terrain': {'kind': 'flat', 'size_m': 100.0}, 'patches': None}, 'task_options': {'spawn_xy_m': [0, 0]}})\n"
        "obs, _ = env.reset(seed=3)\n"
        "for k in range(8):\n"
        "    obs, *_ = env.step(np.array([0.3, 0.5], dtype=np.float32))\n"
        "print(json.dumps({k: v.tolist() for k, v in obs.items()}))\n"
    )
    outputs = []
    for flag in ("1", "0"):
        done = subprocess.run([sys.executable, "-c", code], env=dict(os.environ, NUMBA_DISABLE_JIT=flag),
                              capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr[-2000:]
        outputs.append(json.loads(done.stdout.strip().splitlines()[-1]))
    plain, jitted = outputs
    assert plain.keys() == jitted.keys()
    for key in plain:
        np.testing.assert_allclose(plain[key], jitted[key], rtol=1e-5, atol=1e-5, err_msg=key)
    assert plain["ulc_vel_ref"][0] > 0.1 and plain["steering_wheel_angle"][0] != 0.0  # commands took effect
