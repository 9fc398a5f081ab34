"""The environments at their edges: every sampled action is valid, no silent coercion of DBW command
fields, decode/encode on one action or a batch, bounds on configs that would exhaust time or memory,
non-finite reward terms, and an episode length that follows the config through every way of making an env.

Checks run over the registry (``gymnasium.registry``), so a new id is covered without editing this file.
"""

from __future__ import annotations

import gymnasium
import numpy as np
import pytest

import acres_gym  # noqa: F401  (registers the ids)
from acres_gym.constants import GEAR_HIGH, GEAR_LOW, PEDAL_PERCENT, STEER_ANGLE, ULC_VELOCITY
from acres_gym.dbw.command import check_commands, make_commands
from acres_gym.envs.actions import ACTION_MODES, make_action_mode
from acres_gym.params import load_vehicle

ENV_IDS = sorted(k for k in gymnasium.registry if k.startswith("acres_gym/"))
SAMPLES = 1000


@pytest.fixture(scope="module")
def params():
    return load_vehicle("polaris_ranger_crew_xp1000")


def _accepts(mode, batches: list) -> None:
    """What the environment does with checked actions (``to_batch``) before the physics: write their
    messages and check them (``check_commands`` raises on an invalid mode, gear or drive mode)."""
    if isinstance(batches[0], dict):
        batch = {key: np.concatenate([b[key] for b in batches]) for key in batches[0]}
    else:
        batch = np.concatenate(batches)
    n = len(batch["steer_mode"]) if isinstance(batch, dict) else batch.shape[0]
    cmd = make_commands(n).view(np.ndarray)
    mode.write(cmd, batch, np.ones(n, dtype=bool))
    check_commands(cmd)


# --- 1. every sample of every action space is a valid action ---------------------------------------------
@pytest.mark.parametrize("env_id", ENV_IDS)
@pytest.mark.parametrize("action_mode", list(ACTION_MODES))
def test_every_sample_of_every_action_space_is_a_valid_action(env_id, action_mode):
    """1,000 samples of the single env's action space and 1,000 vehicle actions of the vector env's all
    pass the environment's action path; the first 20 drive the vehicle through ``step``."""
    env = gymnasium.make(env_id, action_mode=action_mode)
    mode = env.unwrapped.action_mode
    env.action_space.seed(0)
    samples = [env.action_space.sample() for _ in range(SAMPLES)]
    assert all(env.action_space.contains(action) for action in samples)
    _accepts(mode, [mode.to_batch(action, 1) for action in samples])
    env.reset(seed=0)
    for action in samples[:20]:
        _, _, terminated, truncated, _ = env.step(action)
        if terminated or truncated:
            env.reset()
    env.close()
    venv = gymnasium.make_vec(env_id, num_envs=8, vectorization_mode="vector_entry_point", action_mode=action_mode)
    venv.action_space.seed(0)
    batches = [venv.action_space.sample() for _ in range(SAMPLES // 8)]
    assert all(venv.action_space.contains(batch) for batch in batches)
    _accepts(mode, [mode.to_batch(batch, 8) for batch in batches])
    venv.close()


def test_the_mode_fields_keep_their_ds_dbw_constants(params):
    space = make_action_mode("dbw_command", params).space
    space.seed(1)
    seen = {key: {int(space.sample()[key]) for _ in range(300)}
            for key in ("steer_mode", "throttle_mode", "brake_mode", "ulc_mode")}
    assert seen == {"steer_mode": {0, 2, 3, 4, 14}, "throttle_mode": {0, 13, 14}, "brake_mode": {0, 1, 14},
                    "ulc_mode": {0, 1, 2}}
    assert space["steer_mode"].contains(np.int64(14)) and not space["steer_mode"].contains(np.int64(1))
    flat = gymnasium.spaces.flatten_space(space)  # one-hot of 0..14 for the steering mode
    assert flat.shape[0] == gymnasium.spaces.flatdim(space)


# --- 2. no silent coercion of dbw_command fields ----------------------------------------------------------
DRIVE = {"steer_mode": STEER_ANGLE, "steer_cmd": 0.0, "ulc_mode": ULC_VELOCITY, "ulc_cmd": 3.0}


@pytest.mark.parametrize("field, value, message", [
    ("steer_mode", 2.5, r"'steer_mode' is 2.5; allowed: 0 \(NONE\), 2 \(ANGLE\)"),
    ("gear_cmd", 2.5, r"'gear_cmd' is 2.5; allowed: the integers 0..15"),
    ("throttle_mode", 1, r"'throttle_mode' is 1; allowed: 0 \(NONE\), 13 \(PEDAL_RAW\), 14 \(PERCENT\)"),
    ("system_enable", 99, r"'system_enable' is 99; allowed: 0, 1, false or true"),
    ("ulc_coast_decel", -1, r"'ulc_coast_decel' is -1; allowed"),
    ("throttle_cmd", "1.0", r"'throttle_cmd': expected a number, got str '1.0'"),
    ("gear_cmd", 2**70, r"'gear_cmd' is 1.18\d*e\+21; allowed: the integers 0..15"),
    ("steer_mode", "x", r"'steer_mode': expected one of 0 \(NONE\).*got str 'x'"),
    ("steer_cmd", {"deg": 1.0}, r"'steer_cmd': expected a number, got dict"),
    ("drive_mode", True, r"'drive_mode': expected one of the integers 0..2, got bool True"),
    ("brake_cmd", [1.0, "2"], r"'brake_cmd': expected a number, got list"),
])
def test_dbw_command_fields_are_not_coerced(params, field, value, message):
    mode = make_action_mode("dbw_command", params)
    with pytest.raises(ValueError, match=message):
        mode.to_batch({**DRIVE, field: value}, 1)


def test_string_and_dict_actions_are_refused_with_the_mode_named(params):
    with pytest.raises(ValueError, match=r"'dbw_command': expected a dict of command fields .* got str"):
        make_action_mode("dbw_command", params).to_batch("steer_mode=2", 1)
    pedals = make_action_mode("pedals", params)
    for action in ("0.5", ["0.5"], {"pedal": 0.5}, [True]):
        with pytest.raises(ValueError, match=r"action mode 'pedals': expected numbers in \[-1, 1\] \(pedal\), got"):
            pedals.to_batch(action, 1)


def test_valid_dbw_values_still_pass(params):
    """Integers, integer-valued floats, bools for the flags, and Python integers as big as a Box field
    takes (clamped by the DBW layer) are accepted with their values."""
    mode = make_action_mode("dbw_command", params)
    batch = mode.to_batch({**DRIVE, "steer_mode": 2.0, "system_enable": True, "ulc_coast_decel": np.bool_(False),
                           "brake_mode": PEDAL_PERCENT, "brake_cmd": 2**70, "gear_cmd": np.int32(GEAR_HIGH)}, 1)
    assert batch["steer_mode"].dtype == np.int64 and batch["steer_mode"][0] == STEER_ANGLE
    assert batch["system_enable"][0] == 1 and batch["ulc_coast_decel"][0] == 0 and batch["gear_cmd"][0] == GEAR_HIGH
    assert batch["brake_cmd"][0] == float(2**70)
    two = mode.to_batch({"steer_mode": [0, 2], "steer_cmd": np.array([0.0, 10.0])}, 2)
    assert two["steer_mode"].tolist() == [0, 2]
    with pytest.raises(ValueError, match=r"'steer_mode' of vehicle 1 is 7"):
        mode.to_batch({"steer_mode": [0, 7]}, 2)


# --- decode / encode: one action or a batch --------------------------------------------------------------
@pytest.mark.parametrize("name", [n for n in ACTION_MODES if n != "dbw_command"])
def test_decode_and_encode_take_one_action_or_a_batch(name, params):
    mode = make_action_mode(name, params, {"gear_axis": True})
    k = len(mode.components)
    batch = np.random.default_rng(0).uniform(-1.0, 1.0, (5, k))
    decoded = mode.decode(batch)
    for i in range(5):
        one = mode.decode(batch[i])  # a single env's action
        assert set(one) == set(decoded)
        for key, value in one.items():
            assert np.ndim(value) == 0 and value == decoded[key][i], key
        again = mode.encode(**one)
        assert again.shape == (k,)
        np.testing.assert_array_equal(again, mode.encode(**{key: v[i:i + 1] for key, v in decoded.items()})[0])
    assert mode.encode(**decoded).shape == (5, k)
    single = mode.decode(batch[0].astype(np.float32).tolist())  # a list works too
    assert single["range_gear"] == decoded["range_gear"][0]
    # as the environment does: clipped, NaN refused, a wrong shape named
    assert mode.decode(np.full(k, 5.0))["range_gear"] == GEAR_HIGH
    assert mode.decode(np.full(k, -5.0))["range_gear"] == GEAR_LOW
    with pytest.raises(ValueError, match="is nan"):
        mode.decode(np.full(k, np.nan))
    with pytest.raises(ValueError, match=rf"expected one action of shape \({k},\) or a batch of shape \(N, {k}\)"):
        mode.decode(np.zeros((2, 2, k)))


def test_decode_in_an_env_as_the_readme_shows_it():
    env = gymnasium.make("acres_gym/RangerSpeedTracking-v3")
    action = np.array([-0.25], dtype=np.float32)
    decoded = env.unwrapped.action_mode.decode(action)
    assert decoded["brake_pct"] == pytest.approx(25.0) and decoded["throttle_pct"] == 0.0
    assert env.unwrapped.action_mode.encode(brake_pct=25.0) == pytest.approx(action)
    env.close()


def test_dbw_command_decode_of_one_action_or_a_batch(params):
    mode = make_action_mode("dbw_command", params)
    one = mode.decode(DRIVE)
    assert one["steer_mode"] == STEER_ANGLE and one["ulc_cmd"] == 3.0 and np.ndim(one["ulc_cmd"]) == 0
    two = mode.decode({"ulc_mode": ULC_VELOCITY, "ulc_cmd": [1.0, 2.0]})
    assert two["ulc_cmd"].tolist() == [1.0, 2.0] and two["ulc_mode"].tolist() == [ULC_VELOCITY] * 2


# --- the episode length follows the config everywhere ----------------------------------------------------
LONG = {"max_episode_s": 40.0,  # 800 steps at 20 Hz: longer than the task file's 30 s (600 steps)
        "randomization": {"terrain": {"kind": "flat", "size_m": 200.0, "cell_m": 2.0, "surface": "dry_asphalt"},
                          "patches": None, "wetness": None},
        "task_options": {"spawn_xy_m": [-80.0, 0.0], "spawn_yaw_rad": 0.0}}
STEPS = 800


def _episode_length(env, skip: int = 0) -> int:
    """Control steps until the episodes end, standing still (zero pedal). ``skip`` > 0 fast-forwards a
    native vector env's step counters by that many steps after the reset (its truncation is the same
    ``RangerBatch`` code as the single env's, run in full by the other tests; threads make long vector
    runs slow on a loaded machine)."""
    env.reset(seed=0)
    if skip:
        env.unwrapped._batch.steps[:] += skip
    shape = env.action_space.shape
    for step in range(1 + skip, 2 * STEPS):
        _, _, terminated, truncated, _ = env.step(np.zeros(shape, dtype=np.float32))
        if np.any(terminated):
            raise AssertionError(f"terminated at step {step}")
        if np.any(truncated):
            assert np.all(truncated)
            return step
    raise AssertionError("never truncated")


@pytest.mark.parametrize("how", ["keyword", "config"])
def test_the_episode_length_follows_the_config_in_make(how):
    kwargs = {"config": {**LONG, "action_mode": "pedals"}} if how == "config" else {
        "config": {k: v for k, v in LONG.items() if k != "max_episode_s"}, "max_episode_s": 40.0}
    env = gymnasium.make("acres_gym/RangerSpeedTracking-v3", **kwargs)
    assert env.spec.max_episode_steps == env.unwrapped.spec.max_episode_steps == STEPS
    assert _episode_length(env) == STEPS
    env.close()
    short = gymnasium.make("acres_gym/RangerSpeedTracking-v3", config={**LONG, "max_episode_s": 2.0})
    assert short.spec.max_episode_steps == 40 and _episode_length(short) == 40
    # an explicit max_episode_steps adds a TimeLimit on top: the shorter limit ends the episode
    capped = gymnasium.make("acres_gym/RangerSpeedTracking-v3", config=LONG, max_episode_steps=30)
    assert capped.spec.max_episode_steps == 30 and _episode_length(capped) == 30


@pytest.mark.parametrize("mode", ["vector_entry_point", "sync"])
def test_the_episode_length_follows_the_config_in_make_vec(mode):
    venv = gymnasium.make_vec("acres_gym/RangerSpeedTracking-v3", num_envs=2, vectorization_mode=mode, config=LONG)
    if mode == "vector_entry_point":
        assert venv.spec.max_episode_steps == venv.unwrapped.max_episode_steps == STEPS
    assert _episode_length(venv, skip=STEPS - 5 if mode == "vector_entry_point" else 0) == STEPS
    venv.close()


@pytest.mark.slow  # imports torch and stable-baselines3 through train.py
def test_the_episode_length_follows_train_py_set():
    """``train.py --set env_config.max_episode_s=40``: the training environment of the smoke config."""
    import argparse
    import importlib.util
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    spec = importlib.util.spec_from_file_location("train_script", root / "train.py")
    train = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(train)
    args = argparse.Namespace(total_steps=None, seed=None, out=None, overrides=["env_config.max_episode_s=40"])
    cfg = train.load_train_config(str(root / "configs" / "train" / "smoke.yaml"), args)
    venv = train.make_env(cfg)
    assert venv.spec.max_episode_steps == venv.unwrapped.max_episode_steps == STEPS
    assert venv.num_envs == cfg["num_envs"] and venv.unwrapped.config["max_episode_s"] == 40.0
    assert _episode_length(venv, skip=STEPS - 5) == STEPS
    venv.close()


# --- a reward term that is not finite raises ------------------------------------------------------------
FLAT = {k: v for k, v in LONG.items() if k != "max_episode_s"}


def test_a_reward_term_that_overflows_raises_naming_the_term():
    """``squared`` with scale 1e-300: (e / 1e-300)^2 overflows to inf at the first speed error of about
    1e-146 m/s, so the term is -inf; it was replaced by 0 every step."""
    env = gymnasium.make("acres_gym/RangerSpeedTracking-v3", config={
        **FLAT, "rewards": {"speed_error": {"shape": "squared", "scale": 1e-300}}}).unwrapped
    env.reset(seed=0)
    with pytest.raises(ValueError, match=r"reward term 'speed_error' \(weight=1\.0, shape='squared', "
                                         r"scale=1e-300\) is -inf for vehicle 0"), \
            np.errstate(over="ignore"):
        for _ in range(100):  # the target speed leaves 0 within the first second
            env.step(np.zeros(1, dtype=np.float32))


def test_a_plugin_term_that_returns_nan_raises(monkeypatch):
    from acres_gym.envs import rewards

    @rewards.register_reward("test_nan_term")
    class NanTerm(rewards.RewardTerm):
        def __init__(self, after_steps: int = 3) -> None:
            self.after_steps = after_steps
            self.calls = 0

        def __call__(self, ctx):
            self.calls += 1
            return np.full(ctx.speed_mps.shape, np.nan if self.calls > self.after_steps else 0.0)

    monkeypatch.setitem(rewards.REWARD_TERMS, "test_nan_term", NanTerm)
    venv = gymnasium.make_vec("acres_gym/RangerSpeedTracking-v3", num_envs=2, vectorization_mode="vector_entry_point",
                              config={**FLAT, "rewards": {"test_nan_term": {"weight": 2.0}}})
    venv.reset(seed=0)
    for _ in range(3):
        venv.step(np.zeros((2, 1), dtype=np.float32))
    with pytest.raises(ValueError, match=r"'test_nan_term' \(weight=2\.0, after_steps=3\) is nan for vehicle 0"):
        venv.step(np.zeros((2, 1), dtype=np.float32))


# --- configs that would exhaust time or memory are refused with their bound ------------------------------
@pytest.mark.parametrize("override, message", [
    ({"randomization": {"terrain": {"hill_wavelength_m": 1e-6}}},
     r"randomization.terrain.hill_wavelength_m = 1e-06: expected at least 2 m, 2 cells of "
     r"randomization.terrain.cell_m = 1 m .*allowed: \[2, 100000.0\]"),
    ({"randomization": {"terrain": {"cell_m": 2.0, "hill_wavelength_m": 3.9}}},
     r"hill_wavelength_m = 3.9: expected at least 4 m"),
    ({"randomization": {"patches": {"scale_m": 0.01}}},
     r"randomization.patches.scale_m = 0.01: expected at least 2 m, 2 cells .*allowed: \[2, 100000.0\]"),
    ({"max_episode_s": 1e6}, r"max_episode_s = 1000000.0: expected a number in \(0.0, 3600.0\]"),
    ({"max_episode_s": 3600.0, "task_options": {"speed_max_mps": 45.0}},
     r"max_episode_s = 3600.0: the episode's path \(for speed_max_mps = 45\) is 194440 m, 388881 points .* more "
     r"than the 90601 points of the terrain grid.*allowed for this terrain and speed: max_episode_s <= 838.1$"),
    ({"task_options": {"path_length_m": 1e5, "path_spacing_m": 0.05}},
     r"task_options.path_length_m = 100000.0: 2000001 path points .*allowed: at most 4530 m"),
])
def test_configs_that_would_exhaust_memory_or_time_name_their_bound(override, message):
    """At the registered task's 300 m grid of 1 m cells: a 1e-6 m hill wavelength asked for a 639 PiB
    noise lattice, a 0.01 m patch scale for 5 GB and 20 s, a 1e6 s episode for 2.5 GB and a minute per
    reset; each is refused when the environment is made."""
    with pytest.raises(ValueError, match=message):
        gymnasium.make("acres_gym/RangerSpeedTracking-v3", config=override)


def test_the_bounds_themselves_are_allowed():
    """The smallest wavelength and patch scale (2 cells) and the longest episode the grid allows are
    accepted; the first two draw their terrain."""
    small = {"size_m": 40.0, "cell_m": 1.0, "kind": "rough", "roughness_m": 0.1}
    env = gymnasium.make("acres_gym/RangerSpeedTracking-v3", config={
        "randomization": {"terrain": {**small, "hill_wavelength_m": 2.0, "bump_wavelength_m": 2.0},
                          "patches": {"surfaces": {"grass": 1, "gravel": 1}, "scale_m": 2.0}},
        "task_options": {"spawn_xy_m": [-10.0, 0.0]}})
    env.reset(seed=0)
    env.close()
    longest = gymnasium.make("acres_gym/RangerSpeedTracking-v3", max_episode_s=838.1,
                             task_options={"speed_max_mps": 45.0})
    assert longest.unwrapped.task.n_path <= 90601
    longest.close()
    with pytest.raises(ValueError, match="max_episode_s <= 838.1$"):
        gymnasium.make("acres_gym/RangerSpeedTracking-v3", max_episode_s=838.15, task_options={"speed_max_mps": 45.0})


def test_the_terrain_generators_refuse_features_finer_than_the_grid():
    from acres_gym.terrain import flat, from_config, rough, with_patches

    with pytest.raises(ValueError, match=r"hill_wavelength_m = 1e-06 is shorter than 2 grid cells \(1 m at cell_m = "
                                         r"0.5 m\).*allowed range \[1, 100000.0\]"):
        rough(0, 0.1, size_m=300.0, hill_wavelength_m=1e-6)
    with pytest.raises(ValueError, match=r"scale_m = 0.01 is shorter than 2 grid cells \(2 m at cell_m = 1 m\)"):
        with_patches(flat(size_m=20.0), 0, ["grass", "gravel"], scale_m=0.01)
    with pytest.raises(ValueError, match=r"scale_m = 1.0 is shorter than 2 grid cells"):
        from_config({"kind": "flat", "size_m": 20, "patches": {"surfaces": ["gravel", "ice"], "scale_m": 1.0}})
    assert rough(0, 0.1, size_m=20.0, cell_m=0.5, hill_wavelength_m=1.0, bump_wavelength_m=1.0).shape == (41, 41)


def test_the_terrain_grids_of_a_batch_are_bounded_together(monkeypatch):
    """Each vehicle keeps its own grid (20 bytes a point): N vehicles together hold at most
    ``MAX_GRID_POINTS`` (64 million, 1.28 GB); here the bound is lowered to 1 million to stay cheap."""
    from acres_gym.envs import randomization

    monkeypatch.setattr(randomization, "MAX_GRID_POINTS", 1_000_000)
    flat = {"randomization": {"terrain": {"kind": "flat"}, "patches": None}}
    venv = gymnasium.make_vec("acres_gym/RangerSpeedTracking-v3", num_envs=11, vectorization_mode="vector_entry_point",
                              config=flat)  # 11 x 90601 points
    venv.close()
    with pytest.raises(ValueError, match=r"randomization.terrain: size_m = 300 with cell_m = 1 gives 90601 grid points "
                                         r"per vehicle, 1087212 for 12 vehicles, more than 1000000; allowed: at most "
                                         r"83333 points per vehicle"):
        gymnasium.make_vec("acres_gym/RangerSpeedTracking-v3", num_envs=12, vectorization_mode="vector_entry_point",
                           config=flat)


def test_another_action_mode_drops_only_the_ids_own_options_it_does_not_take():
    """The navigation id's ULC speed options belong to its own mode: choosing pedals leaves them out, but
    an option the user gives that pedals do not take is still an error naming it."""
    env = gymnasium.make("acres_gym/RangerOffroadNavigation-v2", action_mode="steer_angle+pedals")
    options = env.unwrapped.config["action_options"]
    assert "ulc_speed_max_mps" not in options and options["gear_axis"] and options["drive_axis"]
    assert env.action_space.shape == (5,)  # steering, throttle, brake, range, drive mode
    env.close()
    with pytest.raises(ValueError, match="unknown key 'ulc_speed_max_mps'"):
        gymnasium.make("acres_gym/RangerOffroadNavigation-v2", action_mode="steer_angle+pedals",
                       action_options={"ulc_speed_max_mps": 3.0})
