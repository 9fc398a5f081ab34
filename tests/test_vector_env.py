"""The native vector env and the stable-baselines3 adapter.

``RangerVectorEnv`` must step its N vehicles with one simulator call, behave exactly like N single envs
seeded ``seed + i`` (autoreset included), and the SB3 adapter must give stable-baselines3 what it expects.
"""

from __future__ import annotations

import gymnasium
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode

import acres_gym  # noqa: F401
from acres_gym.envs.sb3 import RangerSB3VecEnv
from acres_gym.envs.tasks import (
    RangerPathFollowing,
    RangerPathFollowingVector,
    RangerSpeedTracking,
    RangerSpeedTrackingVector,
)
from acres_gym.envs.vector_env import RangerVectorEnv

SHORT = {"max_episode_s": 2.0,
         "randomization": {"terrain": {"kind": "rough", "size_m": 160.0, "cell_m": 1.0, "roughness_m": [0.0, 0.05]},
                           "patches": {"surfaces": {"grass": 1, "gravel": 1, "soil": 1}, "scale_m": 10.0}},
         "task_options": {"spawn_xy_m": [-60.0, 0.0]}}


def test_one_simulator_call_steps_all_vehicles(monkeypatch):
    venv = RangerSpeedTrackingVector(num_envs=6, config=SHORT)
    venv.reset(seed=0)
    calls = []
    step = venv.sim.step
    monkeypatch.setattr(venv.sim, "step",
                        lambda n, commands=None, serial=False: calls.append(n) or step(n, commands, serial))
    t0 = venv.sim.state.time_s.copy()
    venv.step(np.zeros((6, 1), dtype=np.float32))
    assert calls == [6]  # one call of 6 ticks (20 Hz)
    assert np.allclose(venv.sim.state.time_s - t0, 0.05)


@pytest.mark.parametrize("single_cls, vector_cls, mode", [
    (RangerSpeedTracking, RangerSpeedTrackingVector, None),
    (RangerPathFollowing, RangerPathFollowingVector, "steer_angle+pedals"),
])
def test_vector_env_equals_single_envs_on_the_same_seeds(single_cls, vector_cls, mode):
    cfg = dict(SHORT, **({"action_mode": mode} if mode else {}))
    n = 3
    venv = vector_cls(num_envs=n, config=cfg)
    envs = [single_cls(config=cfg) for _ in range(n)]
    vobs, vinfo = venv.reset(seed=10)
    for i, env in enumerate(envs):
        obs, info = env.reset(seed=10 + i)
        assert info["episode_seed"] == vinfo["episode_seed"][i]
        for k in obs:
            assert np.array_equal(obs[k], vobs[k][i]), k
    rng = np.random.default_rng(0)
    pending = [False] * n
    resets = 0
    for t in range(90):  # episodes of 40 steps: two autoresets per vehicle
        actions = rng.uniform(-1, 1, (n, *venv.single_action_space.shape)).astype(np.float32)
        vobs, vrew, vterm, vtrunc, vinfo = venv.step(actions)
        for i, env in enumerate(envs):
            if pending[i]:  # NEXT_STEP autoreset: this step returns the first observation of the next episode
                obs, _ = env.reset()
                rew, term, trunc = 0.0, False, False
                pending[i] = False
                resets += 1
            else:
                obs, rew, term, trunc, info = env.step(actions[i])
                pending[i] = term or trunc
                assert info["reward_terms"] == {k: v[i] for k, v in vinfo["reward_terms"].items()
                                                if not k.startswith("_")}
            for k in obs:
                assert np.array_equal(obs[k], vobs[k][i]), (t, i, k)  # bit-identical
            assert rew == vrew[i] and term == vterm[i] and trunc == vtrunc[i], (t, i)
    assert resets >= 2 * n


def test_same_step_autoreset_returns_the_next_episode_and_the_final_observation():
    n = 2
    venv = RangerSpeedTrackingVector(num_envs=n, config=SHORT, autoreset_mode="SameStep")
    assert venv.metadata["autoreset_mode"] == AutoresetMode.SAME_STEP
    single = RangerSpeedTracking(config=SHORT)
    venv.reset(seed=4)
    single.reset(seed=4)
    action = np.zeros((n, 1), dtype=np.float32)
    for _ in range(39):
        _, _, term, trunc, info = venv.step(action)
        single_obs, *_ = single.step(action[0])
        assert not (term | trunc).any() and "final_obs" not in info
    obs, rew, term, trunc, info = venv.step(action)
    final_single, _, _, trunc_single, _ = single.step(action[0])
    assert trunc.all() and trunc_single
    assert info["_final_obs"].all()
    for k in obs:
        assert np.array_equal(info["final_obs"][k][0], final_single[k])
    next_single, _ = single.reset()
    for k in obs:
        assert np.array_equal(obs[k][0], next_single[k])  # the first observation of the next episode
    assert info["final_info"]["episode_steps"][0] == 40 and info["episode_steps"][0] == 0


def test_partial_reset_and_disabled_autoreset():
    venv = RangerSpeedTrackingVector(num_envs=3, config=SHORT, autoreset_mode="Disabled")
    obs, info = venv.reset(seed=1)
    for _ in range(40):
        obs, rew, term, trunc, info = venv.step(np.zeros((3, 1), dtype=np.float32))
    assert trunc.all()
    with pytest.raises(RuntimeError, match="reset_mask"):
        venv.step(np.zeros((3, 1), dtype=np.float32))
    mask = np.array([False, True, True])
    obs, info = venv.reset(options={"reset_mask": mask})
    assert list(info["_episode_seed"]) == [False, True, True]
    with pytest.raises(RuntimeError, match=r"vehicles \[0\]"):
        venv.step(np.zeros((3, 1), dtype=np.float32))
    venv.reset(options={"reset_mask": np.array([True, False, False])})
    venv.step(np.zeros((3, 1), dtype=np.float32))
    with pytest.raises(ValueError, match="reset_mask"):
        venv.reset(options={"reset_mask": np.zeros(3, dtype=bool)})


def test_make_vec_uses_the_native_vector_env():
    venv = gymnasium.make_vec("acres_gym/RangerPathFollowing-v3", num_envs=4, vectorization_mode="vector_entry_point",
                              config=SHORT)
    assert isinstance(venv, RangerVectorEnv) and venv.num_envs == 4
    obs, _ = venv.reset(seed=0)
    assert venv.observation_space.contains(obs)
    actions = venv.action_space.sample()
    obs, rew, term, trunc, info = venv.step(actions)
    assert venv.observation_space.contains(obs) and rew.shape == (4,) and term.dtype == bool
    with pytest.raises(ValueError, match=r"action of vehicle 2, component 'curvature' is nan"):
        bad = actions.copy()
        bad[2, 0] = np.nan
        venv.step(bad)


# --- stable-baselines3 --------------------------------------------------------------------------------
def test_sb3_adapter_speaks_the_vec_env_protocol():
    from stable_baselines3.common.vec_env import VecCheckNan, VecEnv

    with pytest.raises(ValueError, match="SameStep"):
        RangerSB3VecEnv(RangerSpeedTrackingVector(num_envs=2, config=SHORT))
    env = RangerSB3VecEnv.from_config(SHORT, num_envs=3, env_class=RangerSpeedTrackingVector)
    assert isinstance(env, VecEnv) and env.num_envs == 3
    assert env.observation_space == env.venv.single_observation_space
    env = VecCheckNan(env, raise_exception=True)  # raises on NaN or inf in observations, rewards, actions
    env.seed(7)
    obs = env.reset()
    assert isinstance(obs, dict)
    for key, space in env.observation_space.spaces.items():
        assert obs[key].shape == (3, *space.shape) and obs[key].dtype == space.dtype
    done_seen = 0
    for _ in range(41):
        actions = np.stack([env.action_space.sample() for _ in range(3)])
        obs, rewards, dones, infos = env.step(actions)
        assert rewards.shape == (3,) and rewards.dtype == np.float32 and dones.shape == (3,)
        assert isinstance(infos, list) and len(infos) == 3
        for i, info in enumerate(infos):
            assert "TimeLimit.truncated" in info
            if dones[i]:
                done_seen += 1
                assert info["TimeLimit.truncated"]
                assert set(info["terminal_observation"]) == set(obs)
                assert info["episode"]["l"] == 40 and np.isfinite(info["episode"]["r"])
                assert "speed_rmse_mps" in info["metrics"]
    assert done_seen == 3
    assert env.get_attr("control_hz") == [20, 20, 20]
    assert env.env_is_wrapped(gymnasium.Wrapper) == [False, False, False]
    env.close()


def test_ppo_learns_a_few_hundred_steps_on_the_native_vector_env():
    from stable_baselines3 import PPO

    env = RangerSB3VecEnv.from_config(SHORT, num_envs=4, env_class=RangerPathFollowingVector)
    model = PPO("MultiInputPolicy", env, n_steps=32, batch_size=64, n_epochs=1, seed=0, device="cpu",
                policy_kwargs={"net_arch": [32, 32]})
    model.learn(total_timesteps=256)
    assert model.num_timesteps >= 256
    action, _ = model.predict(env.reset(), deterministic=True)
    assert action.shape == (4, 2)


def test_sac_from_a_training_config_learns_and_acts_through_sb3_policy():
    from acres_gym.agents.sb3_models import SB3Policy, build_model

    env = RangerSB3VecEnv.from_config(SHORT, num_envs=2, env_class=RangerPathFollowingVector)
    model = build_model("sac", env, seed=0, algo_kwargs={"learning_starts": 64, "batch_size": 32,
                                                         "buffer_size": 1000, "gradient_steps": 1},
                        policy_kwargs={"net_arch": [32, 32]})
    model.learn(total_timesteps=160)
    assert model.num_timesteps >= 160 and model.replay_buffer.size() > 64
    policy = SB3Policy.factory(model)(None)
    obs = env.reset()
    first, second = policy(obs), policy(obs)
    assert first.shape == (2, 2) and np.all(np.abs(first) <= 1.0)
    np.testing.assert_array_equal(first, second)  # deterministic actions
