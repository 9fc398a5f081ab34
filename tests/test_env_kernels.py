"""The jitted passes of an environment step compute exactly what their numpy definitions compute.

The step's arithmetic around the physics runs in a few jitted passes (``acres_gym.envs.core``): the reward
terms (``RewardSet._compute_builtin``), the observation assembly (``ObservationBuilder.build``), the Box
modes' DBW messages (``ActionMode.write``). Each is checked here bit for bit against the definition it
replaces, on random inputs that include the edge values (NaN report fields, clipping, -0.0), so a change to
either side that parts them fails here, not only in the golden record.
"""

from __future__ import annotations

import copy
import pickle

import gymnasium
import numpy as np
import pytest
import yaml

import acres_gym  # noqa: F401  (registers the ids)
from acres_gym.constants import PEDAL_NONE, PEDAL_PERCENT, ULC_NONE
from acres_gym.dbw.command import clear_sent, make_commands, send
from acres_gym.envs.actions import ACTION_MODES, make_action_mode
from acres_gym.envs.observations import ITEMS
from acres_gym.envs.rewards import SHAPES, RewardSet, RewardTerm, StepContext, register_reward
from acres_gym.params import load_vehicle
from acres_gym.sim import DEFAULT_VEHICLE, RangerSim
from acres_gym.terrain import rough

TERMS = ("speed_error", "lateral_error", "heading_error", "control_effort", "action_rate", "energy", "progress",
         "alive", "rollover", "off_course", "time", "goal", "no_go", "stuck")


def _context(rng: np.random.Generator, n: int, k: int = 2) -> StepContext:
    flags = {"goal_reached": rng.random(n) < 0.5, "no_go": rng.random(n) < 0.5, "stuck": rng.random(n) < 0.5}
    return StepContext(
        dt_s=0.05, speed_mps=rng.normal(5.0, 3.0, n), target_speed_mps=rng.uniform(0.0, 10.0, n),
        lateral_error_m=rng.normal(0.0, 1.0, n), heading_error_rad=rng.normal(0.0, 0.3, n),
        progress_m=rng.normal(0.3, 0.1, n), distance_m=rng.uniform(0.0, 0.5, n), fuel_step_kg=rng.uniform(0, 1e-4, n),
        action=rng.uniform(-1.0, 1.0, (n, k)), previous_action=rng.uniform(-1.0, 1.0, (n, k)),
        rolled_over=rng.random(n) < 0.1, diverged=rng.random(n) < 0.1, off_course=rng.random(n) < 0.1,
        terminated=rng.random(n) < 0.1, flags=flags)


def _same(a: dict, b: dict) -> bool:
    return list(a) == list(b) and all(a[key].tobytes() == b[key].tobytes() for key in a)


def _variants(term: str) -> list[dict]:
    if term.endswith("_error"):
        return [{"shape": shape, "scale": 0.7} for shape in SHAPES]
    if term == "energy":
        return [{}, {"per_km": True}]
    if term == "alive":
        return [{"value": 0.3}]
    return [{}]


@pytest.mark.parametrize("term", TERMS)
@pytest.mark.parametrize("n", [1, 257])
def test_reward_kernel_equals_each_terms_call(term, n):
    rng = np.random.default_rng(len(term) * 1000 + n)
    for params in _variants(term):
        rewards = RewardSet({term: {"weight": 0.7, **params}, "rollover": 2.0} if term != "rollover" else {term: 0.7})
        assert rewards._kernel is not None
        for _ in range(20):
            ctx = _context(rng, n)
            total, parts = rewards.compute(ctx)
            want_total, want_parts = rewards._compute_terms(ctx, n)
            assert total.tobytes() == want_total.tobytes(), (term, params)
            assert _same(parts, want_parts), (term, params)


def test_reward_kernel_keeps_term_order_and_sums_like_numpy():
    """Terms with an exponential are stored first in the kernel; the weighted terms still come back in the
    config's order and their sum is numpy's, term after term, from 0 (a -0.0 first term gives +0.0)."""
    config = {"rollover": 1.0, "lateral_error": {"weight": 1.0, "scale": 0.5}, "action_rate": 0.1,
              "heading_error": {"weight": 0.3, "shape": "exponential"}, "energy": {"weight": 0.5, "per_km": True},
              "speed_error": 0.3, "time": 1.0, "progress": 0.2}
    rewards = RewardSet(config)
    rng = np.random.default_rng(3)
    for n in (1, 5, 300):
        for k in (1, 2, 7, 9):  # 8 and more components take the term-by-term path (numpy's pairwise sum)
            ctx = _context(rng, n, k)
            total, parts = rewards.compute(ctx)
            want_total, want_parts = rewards._compute_terms(ctx, n)
            assert list(parts) == list(config)
            assert total.tobytes() == want_total.tobytes() and _same(parts, want_parts)
    zero = RewardSet({"rollover": 1.0})
    ctx = _context(rng, 1)
    ctx.rolled_over[:] = ctx.diverged[:] = False
    total, parts = zero.compute(ctx)
    assert np.signbit(parts["rollover"][0]) and not np.signbit(total[0])


@pytest.mark.filterwarnings("ignore:overflow:RuntimeWarning")
def test_reward_kernel_names_a_term_that_is_not_finite():
    rewards = RewardSet({"speed_error": {"weight": 1.0, "shape": "squared", "scale": 1e-300}, "time": 1.0})
    ctx = _context(np.random.default_rng(0), 3)
    with pytest.raises(ValueError, match="reward term 'speed_error'"):
        rewards.compute(ctx)


def test_plug_in_terms_take_the_term_by_term_path():
    @register_reward("test_kernel_half_speed")
    class HalfSpeed(RewardTerm):
        def __call__(self, ctx):
            return 0.5 * ctx.speed_mps

    rewards = RewardSet({"test_kernel_half_speed": 2.0, "time": 1.0})
    assert rewards._kernel is None
    ctx = _context(np.random.default_rng(1), 4)
    total, parts = rewards.compute(ctx)
    np.testing.assert_array_equal(parts["test_kernel_half_speed"], 2.0 * (0.5 * ctx.speed_mps))
    np.testing.assert_array_equal(total, 0.0 + parts["test_kernel_half_speed"] + parts["time"])


def _numpy_observation(builder, frame, row):
    """Vehicle ``row``'s observation by the items' own definitions: each item's values (report rows copied,
    the others by their ``value``) side by side, clipped to the space's bound vectors (numpy's clip with
    array bounds), NaN as 0, float32."""
    from acres_gym.dbw.reports import REPORT_ROW

    n = frame.speed_mps.shape[0]
    values, lows, highs = [], [], []
    for name in builder.names:
        item, space = ITEMS[name], builder.space[name]
        if item.source == "report":
            values.append(np.stack([frame.report_table[REPORT_ROW[f]] for f in item.report_fields], axis=1))
        else:
            values.append(np.reshape(item.value(frame), (n, -1)))
        lows.append(space.low.astype(np.float64).ravel())
        highs.append(space.high.astype(np.float64).ravel())
    buf = np.clip(np.concatenate(values, axis=1), np.concatenate(lows), np.concatenate(highs))
    buf[np.isnan(buf)] = 0.0
    one = buf.astype(np.float32)[row]
    return {name: one[sl].reshape(shape) for name, (sl, shape) in builder.slices.items()}


@pytest.mark.parametrize("env_id", ["acres_gym/RangerPathFollowing-v3", "acres_gym/RangerOffroadNavigation-v2"])
def test_observation_assembly_equals_the_items_definitions(env_id):
    env = gymnasium.make(env_id).unwrapped
    env.reset(seed=4)
    rng = np.random.default_rng(0)
    batch = env._batch
    for step in range(40):
        env.step(env.action_space.sample())
        frame = copy.copy(batch.frame)
        if step % 4 == 0:  # edge values: absent report fields, values beyond the bounds, -0.0
            frame.report_table = frame.report_table.copy()
            rows = rng.integers(0, frame.report_table.shape[0], 12)
            frame.report_table[rows[:4]] = np.nan
            frame.report_table[rows[4:8]] = 1e9 * rng.choice([-1.0, 1.0], 4)[:, None]
            frame.report_table[rows[8:]] = -0.0
        got, want = batch.observer.build(frame, 0), _numpy_observation(batch.observer, frame, 0)
        assert _same(got, want), step
    env.close()


def _reference_messages(mode, cmd, batch, rows):
    """A Box mode's messages written field by field with ``send`` (the ds_dbw message and field names)."""
    d = mode.decode(batch)
    o = mode.options
    send(cmd, "Enable", rows, data=True)
    steer_mode, steer_key = mode.steer_command
    send(cmd, "SteeringCmd", rows, cmd_type=steer_mode, cmd=d[steer_key][rows], cmd_rate=o["steer_rate_deg_s"],
         cmd_accel=o["steer_accel_deg_s2"], enable=True)
    if mode.ulc_command is None:
        send(cmd, "ThrottleCmd", rows, cmd_type=PEDAL_PERCENT, cmd=d["throttle_pct"][rows],
             rate_inc=o["throttle_rate_inc_pct_s"], rate_dec=o["throttle_rate_dec_pct_s"], enable=True)
        send(cmd, "BrakeCmd", rows, cmd_type=PEDAL_PERCENT, cmd=d["brake_pct"][rows],
             rate_inc=o["brake_rate_inc_pct_s"], rate_dec=o["brake_rate_dec_pct_s"], enable=True)
        cmd["ulc_mode"][rows], cmd["ulc_enable"][rows] = ULC_NONE, False
        clear_sent(cmd, rows, subsystems=("ulc",), events=False)
    else:
        ulc_mode, key = mode.ulc_command
        send(cmd, "UlcCmd", rows, cmd_type=ulc_mode, cmd=d[key][rows], limit_accel=o["ulc_limit_accel_mps2"],
             limit_decel=o["ulc_limit_decel_mps2"], limit_jerk_throttle=o["ulc_limit_jerk_throttle_mps3"],
             limit_jerk_brake=o["ulc_limit_jerk_brake_mps3"], coast_decel=o["ulc_coast_decel"], enable=True)
        for name in ("throttle", "brake"):
            cmd[f"{name}_mode"][rows], cmd[f"{name}_enable"][rows] = PEDAL_NONE, False
        clear_sent(cmd, rows, subsystems=("throttle", "brake"), events=False)


@pytest.mark.parametrize("name", [m for m in ACTION_MODES if m != "dbw_command"])
def test_box_modes_write_the_messages_of_their_spec(name):
    params = load_vehicle(DEFAULT_VEHICLE)
    options = {"steer_rate_deg_s": 300.0, "steer_accel_deg_s2": "inf"}
    options.update({"throttle_rate_inc_pct_s": 40.0, "brake_rate_dec_pct_s": 80.0} if "ulc" not in name else
                   {"ulc_limit_accel_mps2": 1.5, "ulc_limit_jerk_brake_mps3": 4.0, "ulc_coast_decel": True})
    mode = make_action_mode(name, params, options)
    rng = np.random.default_rng(7)
    n = 9
    for rows in (np.ones(n, dtype=bool), rng.random(n) < 0.5):
        batch = mode.to_batch(rng.uniform(-1.2, 1.2, (n, mode.flat_dim)), n)
        batch[:4] = np.array([-0.0, 0.0, 1.0, -1.0])[:, None]  # signed zeros and the ends of the range
        start = make_commands(n).view(np.ndarray)
        start["throttle_mode"], start["ulc_mode"], start["brake_fresh"] = PEDAL_PERCENT, 1, True  # held messages
        got, want = start.copy(), start.copy()
        mode.write(got, batch, rows)
        _reference_messages(mode, want, batch, rows)
        assert got.tobytes() == want.tobytes(), [f for f in got.dtype.names if not np.array_equal(got[f], want[f])]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_actions_are_checked_and_clipped_as_numpy_does(dtype):
    mode = make_action_mode("steer_angle+pedals", load_vehicle(DEFAULT_VEHICLE))
    rng = np.random.default_rng(3)
    for n in (1, 7):
        actions = rng.uniform(-1.5, 1.5, (n, 3)).astype(dtype)
        actions[0] = [-0.0, 1.0, -1.0]
        want = actions.astype(np.float64).clip(-1.0, 1.0)
        assert mode.to_batch(actions, n).tobytes() == want.tobytes()
        if n == 1:
            assert mode.to_batch(actions[0], 1).tobytes() == want.tobytes()
        actions[-1, 1] = np.nan
        with pytest.raises(ValueError, match="'throttle' is nan"):
            mode.to_batch(actions, n)
    with pytest.raises(ValueError, match="shape"):
        mode.to_batch(np.zeros(6, dtype=dtype), 2)


def test_sim_plain_views_follow_their_records_through_copies():
    sim = RangerSim(2, terrain=rough(seed=3, roughness_m=0.05, size_m=60.0))
    sim.step(24)
    for other in (copy.deepcopy(sim), pickle.loads(pickle.dumps(sim))):
        for name in ("params", "state", "work", "commands", "_surfaces"):
            assert np.shares_memory(getattr(other, name), getattr(other, f"{name}_plain")), name
        twin = copy.deepcopy(sim)
        other.step(24)
        twin.step(24)
        assert other.state.tobytes() == twin.state.tobytes()
    sim.state = sim.state.copy()  # assigning a record refreshes its view
    assert np.shares_memory(sim.state, sim.state_plain)


def test_ground_view_samples_the_stack_as_its_terrain_does():
    sim = RangerSim(1, terrain=[rough(seed=s, roughness_m=0.1, size_m=40.0) for s in (5, 6)])
    rng = np.random.default_rng(2)
    x, y = rng.uniform(-25.0, 25.0, 50), rng.uniform(-25.0, 25.0, 50)
    for k in range(2):
        terrain, ground = sim.terrain.terrain(k), sim.terrain.ground(k)
        assert np.shares_memory(ground.height_m, sim.terrain.height_m)
        np.testing.assert_array_equal(ground.height_at(x, y), terrain.height_at(x, y))
        np.testing.assert_array_equal(ground.normal_at(x, y), terrain.normal_at(x, y))
        assert ground.height_at(1.5, -2.0) == terrain.height_at(1.5, -2.0)


def _older_copy(env):
    """A copy of ``env`` restored from the state a version without the jitted passes pickled (independent
    stats and flag arrays, no kernel arrays in the rewards and the observation builder, a frame without its
    kinematics array), through the classes' ``__setstate__``."""
    copy_ = copy.deepcopy(env)
    state = dict(copy_._batch.__dict__)
    for key in ("_stats", "_flags", "_all_rows", "_no_rows", "_inside"):
        state.pop(key)
    state["stats"] = {key: value.copy() for key, value in state["stats"].items()}
    state["flags"] = {key: value.copy() for key, value in state["flags"].items()}
    state["frame"] = copy.copy(state["frame"])
    del state["frame"].kinematics  # the dataclass's default (None) shows through, as for an older frame
    for name, keys in (("rewards", ("_kernel", "_rows", "_n_exp", "_row_list", "_no_flag", "_names")),
                       ("observer", ("_derived_kinds", "_derived_columns", "_columns", "_row_entries", "_scratch"))):
        obj = copy.copy(state[name])
        obj.__dict__ = {key: value for key, value in obj.__dict__.items() if key not in keys}
        state[name] = pickle.loads(pickle.dumps(obj))
    older = type(copy_._batch).__new__(type(copy_._batch))
    older.__setstate__(state)
    copy_._batch = older
    return copy_


@pytest.mark.parametrize("env_id", ["acres_gym/RangerSpeedTracking-v3", "acres_gym/RangerOffroadNavigation-v2"])
def test_environments_pickled_without_the_jitted_passes_continue_the_episode(env_id):
    """A training checkpoint written before the step's jitted passes existed holds the environment in its
    older form; unpickled now, it continues the episode exactly as the environment it was taken from."""
    env = gymnasium.make(env_id).unwrapped
    env.reset(seed=8)
    env.action_space.seed(1)
    actions = [env.action_space.sample() for _ in range(40)]
    for a in actions[:10]:
        env.step(a)
    older = _older_copy(env)
    assert older._batch.frame.kinematics is not None and older._batch.rewards._kernel is not None
    for a in actions[10:]:
        want, got = env.step(a), older.step(a)
        assert _same(want[0], got[0]) and want[1:4] == got[1:4] and want[4] == got[4]
    env.close()
    older.close()


def _reference_infos(b) -> dict:
    """``RangerBatch.infos`` by its numpy definition."""
    f, t, st = b.frame, b.frame.task, b.stats
    steps = np.maximum(b.steps, 1)
    fuel_g = 1e3 * (b.sim.state_plain["fuel_used_kg"] - st["fuel0_kg"])
    km = st["distance_m"] / 1e3
    info = {
        "time_s": b.steps * b.dt_s,
        "speed_mps": np.where(np.isfinite(f.speed_mps), f.speed_mps, 0.0),
        "target_speed_mps": t.target_speed[:, 0].copy(),
        "lateral_error_m": np.where(np.isfinite(t.lateral_error_m), t.lateral_error_m, 0.0),
        "heading_error_rad": np.where(np.isfinite(t.heading_error_rad), t.heading_error_rad, 0.0),
        "distance_m": st["distance_m"].copy(),
        "fuel_used_g": np.where(np.isfinite(fuel_g), fuel_g, 0.0),
        "episode_return": st["return"].copy(),
        "episode_steps": b.steps.copy(),
        "speed_rmse_mps": np.sqrt(st["speed_sq"] / steps),
        "lateral_rmse_m": np.sqrt(st["lateral_sq"] / steps),
        "fuel_g_per_km": np.where(km > 1e-3, fuel_g / np.maximum(km, 1e-3), 0.0),
        "reward_terms": {k: v.copy() for k, v in b.last_terms.items()},
    }
    for key, value in b.flags.items():
        info[key] = value.copy()
    return info


def _same_tree(a: dict, b: dict) -> bool:
    if list(a) != list(b):
        return False
    return all(_same_tree(a[k], b[k]) if isinstance(a[k], dict)
               else a[k].dtype == b[k].dtype and a[k].tobytes() == b[k].tobytes() for k in a)


@pytest.mark.parametrize("env_id", ["acres_gym/RangerSpeedTracking-v3", "acres_gym/RangerPathFollowing-v3"])
def test_vector_infos_equal_their_numpy_definition(env_id):
    venv = gymnasium.make_vec(env_id, num_envs=6, vectorization_mode="vector_entry_point")
    venv.reset(seed=2)
    b = venv.unwrapped._batch
    rng = np.random.default_rng(0)
    for _ in range(30):
        venv.step(rng.uniform(-1, 1, (6, *venv.single_action_space.shape)).astype(np.float32))
    assert _same_tree(b.infos(), _reference_infos(b))
    t = b.frame.task  # non-finite measures, no steps and no distance take the guarded branches
    b.frame.speed_mps[0], t.lateral_error_m[1], t.heading_error_rad[2] = np.nan, np.inf, -np.inf
    b.steps[3], b.stats["distance_m"][4], b.stats["fuel0_kg"][5] = 0, 0.0, np.nan
    assert _same_tree(b.infos(), _reference_infos(b))
    venv.close()


@pytest.mark.parametrize("env_id", ["acres_gym/RangerPathFollowing-v3", "acres_gym/RangerOffroadNavigation-v2"])
def test_single_env_info_is_its_row_of_the_vector_infos(env_id):
    """``info_row`` (the single env's info) equals ``info_of(infos(), i)`` value for value and type for type,
    for a vehicle of a batch of one and of a larger batch, with the guarded branches taken too."""
    for n, i in ((1, 0), (4, 2)):
        venv = gymnasium.make_vec(env_id, num_envs=n, vectorization_mode="vector_entry_point")
        venv.reset(seed=5)
        b = venv.unwrapped._batch
        rng = np.random.default_rng(1)
        for _ in range(12):
            venv.step(rng.uniform(-1, 1, (n, *venv.single_action_space.shape)).astype(np.float32))
        for poison in (False, True):
            if poison:  # non-finite measures and fuel, no steps and no distance
                b.frame.speed_mps[i], b.frame.task.lateral_error_m[i] = np.nan, np.inf
                b.steps[i], b.stats["distance_m"][i], b.stats["fuel0_kg"][i] = 0, 0.0, np.nan
            row = b.info_row(i)
            expected = b.info_of(b.infos(), i)
            assert list(row) == list(expected)
            for key, value in row.items():
                want = expected[key]
                assert type(value) is type(want), key
                if isinstance(value, dict):
                    assert list(value) == list(want) and all(
                        np.float64(value[k]).tobytes() == np.float64(want[k]).tobytes() for k in value)
                else:
                    assert np.array(value).tobytes() == np.array(want).tobytes(), key
        venv.close()


def _reference_path(n_path, ds, x0, y0, yaw0, kappa_max, waves, straight_m):
    """The path tasks' path as numpy array expressions (what ``_integrate_path`` replaces)."""
    s = np.arange(n_path) * ds
    kappa = np.zeros(n_path)
    if kappa_max > 0.0:
        for wavelength, phase, amplitude in waves:
            kappa += amplitude * np.sin(2.0 * np.pi * s / wavelength + phase)
        peak = np.max(np.abs(kappa))
        if peak > 0.0:
            kappa *= kappa_max / peak
        if straight_m > 0.0:
            t = np.clip(s / straight_m, 0.0, 1.0)
            kappa *= t * t * (3.0 - 2.0 * t)
    heading = yaw0 + np.concatenate([[0.0], np.cumsum(0.5 * (kappa[1:] + kappa[:-1]) * ds)])
    mid = 0.5 * (heading[1:] + heading[:-1])
    x = x0 + np.concatenate([[0.0], np.cumsum(np.cos(mid) * ds)])
    y = y0 + np.concatenate([[0.0], np.cumsum(np.sin(mid) * ds)])
    return x, y, heading


def test_path_integration_equals_its_array_expressions():
    from acres_gym.envs.tasks.path_speed import _integrate_path

    rng = np.random.default_rng(7)
    for case in range(300):
        n_path, ds = int(rng.integers(2, 900)), float(rng.choice([0.5, 1.0, 1.7]))
        kappa_max = 0.0 if case % 7 == 0 else float(rng.uniform(0.0, 0.3))
        straight = 0.0 if case % 5 == 0 else float(rng.uniform(0.0, 40.0))
        waves = np.column_stack([rng.uniform(20.0, 150.0, 3), rng.uniform(0.0, 2 * np.pi, 3), rng.uniform(-1, 1, 3)])
        if case % 11 == 0:
            waves[:, 2] = 0.0  # no curvature at all: the scaling is skipped
        args = (n_path, ds, float(rng.normal(0, 50)), float(rng.normal(0, 50)), float(rng.uniform(-4, 4)),
                kappa_max, waves, straight)
        for got, expected in zip(_integrate_path(*args), _reference_path(*args), strict=True):
            assert np.array_equal(got, expected)


def test_an_unlimited_rate_is_accepted_as_the_string_or_the_float_and_the_env_remakes_from_its_config():
    """inf = unlimited, given as "inf", YAML's .inf or the float: an environment made again from its resolved
    config (which holds the float, as a run's saved config does) gets the same mode; -inf and NaN are refused."""
    import gymnasium

    params = load_vehicle(DEFAULT_VEHICLE)
    for value in ("inf", "Infinity", float("inf"), yaml.safe_load(".inf")):
        mode = make_action_mode("steer_angle+pedals", params, {"steer_rate_deg_s": value})
        assert mode.options["steer_rate_deg_s"] == float("inf")
    for bad in (float("-inf"), float("nan"), -1.0):
        with pytest.raises(ValueError, match=r"action_options\.steer_rate_deg_s"):
            make_action_mode("steer_angle+pedals", params, {"steer_rate_deg_s": bad})
    env = gymnasium.make("acres_gym/RangerPathFollowing-v3", action_mode="steer_angle+pedals",
                         action_options={"steer_rate_deg_s": "inf"})
    again = gymnasium.make("acres_gym/RangerPathFollowing-v3", config=env.unwrapped.config)
    assert again.unwrapped.config["action_options"] == env.unwrapped.config["action_options"]
    assert again.unwrapped.config["action_options"]["steer_rate_deg_s"] == float("inf")
    env.close()
    again.close()
