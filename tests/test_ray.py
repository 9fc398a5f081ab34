"""RLlib and Tune on a local Ray instance: one PPO iteration on every registered id with the native vector env,
a checkpoint saved, restored and evaluated by agents.evaluate, a two-trial ASHA sweep writing its table."""

from __future__ import annotations

import csv
import json

import numpy as np
import pytest
import yaml

ray = pytest.importorskip("ray")

import acres_gym  # noqa: E402,F401
from acres_gym.agents.evaluate import evaluate  # noqa: E402
from acres_gym.agents.rllib import (  # noqa: E402
    DEFAULTS,
    is_rllib_checkpoint,
    load_checkpoint_policy,
    make_rllib_env,
    ppo_config,
    register_rllib_envs,
    start_ray,
)
from acres_gym.envs.vector_env import RangerVectorEnv  # noqa: E402
from acres_gym.registration import ENVIRONMENTS  # noqa: E402

TINY = {"train_batch_size_per_learner": 64, "minibatch_size": 32, "num_epochs": 1}
VEHICLES = 4


@pytest.fixture(scope="module")
def local_ray():
    start_ray(num_cpus=2, log_to_driver=False, configure_logging=False)
    register_rllib_envs()
    yield
    ray.shutdown()


def tiny_config(env_id: str, **extra) -> dict:
    return {**DEFAULTS, "env_id": env_id, "num_env_runners": 0, "vehicles_per_runner": VEHICLES,
            "algo_kwargs": dict(TINY), "model": {"fcnet_hiddens": [16]}, **extra}


def test_rllib_env_is_the_native_vector_env():
    env = make_rllib_env("acres_gym/RangerPathFollowing-v3", {"num_envs": 3, "config": {"control_hz": 10}})
    try:
        assert isinstance(env.unwrapped, RangerVectorEnv)
        assert env.num_envs == 3
        assert env.unwrapped.control_hz == 10
    finally:
        env.close()
    with pytest.raises(ValueError, match="colour"):
        make_rllib_env("acres_gym/RangerPathFollowing-v3", {"num_envs": 2, "colour": 1})


def test_bad_training_config_names_the_key():
    with pytest.raises(ValueError, match=r"vehicles_per_runner = 0: expected an integer >= 1 \(vehicles"):
        ppo_config(tiny_config("acres_gym/RangerPathFollowing-v3", vehicles_per_runner=0))
    for key, bad, allowed in [("total_steps", 0, ">= 1"), ("eval_episodes", -1, ">= 1"),
                              ("num_env_runners", 1.5, ">= 0"), ("seed", -1, "from 0 to 4294967295")]:
        with pytest.raises(ValueError, match=rf"^{key} = {bad}: expected an integer {allowed} \("):
            ppo_config(tiny_config("acres_gym/RangerPathFollowing-v3", **{key: bad}))
    with pytest.raises(ValueError, match="env_id"):
        ppo_config(tiny_config("acres_gym/NoSuchTask-v1"))


@pytest.mark.slow
@pytest.mark.parametrize("env_id", sorted(ENVIRONMENTS))
def test_one_ppo_iteration_on_the_vector_env(local_ray, env_id):
    algo = ppo_config(tiny_config(env_id)).build_algo()
    try:
        runner = algo.env_runner
        assert isinstance(runner.env.unwrapped, RangerVectorEnv)  # one env of N vehicles, not N envs
        assert runner.env.unwrapped.num_envs == VEHICLES
        result = algo.train()
        assert result["num_env_steps_sampled_lifetime"] >= TINY["train_batch_size_per_learner"]
        learner = result["learners"]["default_policy"]
        assert np.isfinite(learner["total_loss"])
    finally:
        algo.stop()


@pytest.mark.slow
def test_checkpoint_save_restore_evaluate(local_ray, tmp_path):
    env_id = "acres_gym/RangerPathFollowing-v3"
    cfg = tiny_config(env_id)
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(cfg), encoding="utf-8")
    algo = ppo_config(cfg).build_algo()
    try:
        algo.train()
        ckpt = algo.save_to_path(str(tmp_path / "checkpoint"))
        weights = algo.get_module().state_dict()
    finally:
        algo.stop()
    assert is_rllib_checkpoint(ckpt)

    restored = ppo_config(cfg).build_algo()
    try:
        restored.restore_from_path(ckpt)
        for key, value in restored.get_module().state_dict().items():
            np.testing.assert_array_equal(np.asarray(value), np.asarray(weights[key]), err_msg=key)
        steps = restored.metrics.peek(("env_runners", "num_env_steps_sampled_lifetime"), default=0)
        assert steps >= TINY["train_batch_size_per_learner"]
    finally:
        restored.stop()

    factory, mode, env_config = load_checkpoint_policy(ckpt)
    first = evaluate(factory, env_id, episodes=2, seed=100_000, config={**env_config, "max_episode_s": 3.0})
    again = evaluate(factory, env_id, episodes=2, seed=100_000, config={**env_config, "max_episode_s": 3.0})
    assert first["mean"]["episode_steps"] > 0 and np.isfinite(first["mean"]["episode_return"])
    # deterministic policy, frozen normaliser: the same seeds give the same figures
    assert first["mean"]["episode_return"] == again["mean"]["episode_return"]

    # the command line takes the checkpoint directory as --model (environment and config from its run)
    from acres_gym.agents.evaluate import main

    main(["--model", ckpt, "--episodes", "2", "--seed", "100000", "--set", "max_episode_s=3.0",
          "--json", str(tmp_path / "eval.json")])
    cli = json.loads((tmp_path / "eval.json").read_text(encoding="utf-8"))
    assert cli["learned"]["mean"]["episode_return"] == first["mean"]["episode_return"]
    assert set(cli) == {"learned", "ulc_pure_pursuit", "pedal_pid"}


@pytest.mark.slow
# RLlib registers its env runner's environment again for every runner; any other warning (an observation outside
# its space, a space's bounds cast) fails the sweep
@pytest.mark.filterwarnings("error::UserWarning", "ignore:.*Overriding environment rllib-single-agent-env-v0")
def test_two_trial_asha_sweep_writes_its_table(local_ray, tmp_path):
    from acres_gym.agents.sweep import load_sweep_config, run_sweep

    sweep_file = tmp_path / "sweep.yaml"
    sweep_file.write_text(yaml.safe_dump({
        "set": {"num_env_runners": 0, "vehicles_per_runner": VEHICLES, "algo_kwargs": TINY,
                "model": {"fcnet_hiddens": [16]}, "env_config": {"max_episode_s": 0.5}},
        "search": {"algo_kwargs.lr": {"grid": [1e-4, 1e-3]}},
        "max_iterations": 2, "asha": {"grace_period": 1, "reduction_factor": 2},
        "checkpoint_every_iterations": 1, "eval_episodes": 2,
    }), encoding="utf-8")
    rows = run_sweep(load_sweep_config(str(sweep_file), out=str(tmp_path / "sweep")))
    assert sorted(r["algo_kwargs.lr"] for r in rows) == [1e-4, 1e-3]
    with open(tmp_path / "sweep" / "trials.csv", encoding="utf-8") as f:
        table = list(csv.DictReader(f))
    assert len(table) == 2
    for row in table:
        assert 1 <= int(row["iterations"]) <= 2
        assert np.isfinite(float(row["score"]))
    scores = [float(r["score"]) for r in table]
    assert scores == sorted(scores)  # ranked by lateral RMSE, best first
    assert (tmp_path / "sweep" / "trials.md").read_text(encoding="utf-8").count("\n") >= 5


def _module_of(cfg: dict):
    """The RLModule ``ppo_config(cfg)`` builds for path following (no Ray instance needed)."""
    import gymnasium
    from ray.rllib.connectors.env_to_module import FlattenObservations

    env = gymnasium.make("acres_gym/RangerPathFollowing-v3")
    try:
        flat = FlattenObservations(input_observation_space=env.observation_space,
                                   input_action_space=env.action_space).observation_space
        config = ppo_config(cfg)
        spec = config.rl_module_spec
        spec.observation_space, spec.action_space = flat, env.action_space
        spec.model_config = config.model_config  # as AlgorithmConfig.get_rl_module_spec merges them
        return spec.build(), flat
    finally:
        env.close()


def test_initial_log_std_and_orthogonal_init_as_sb3():
    import torch

    from acres_gym.agents.rllib_train import load_train_config

    shipped = load_train_config("configs/train/rllib_ppo_path_following.yaml", [])
    assert shipped["model"]["log_std_init"] == -0.5 and shipped["model"]["free_log_std"]
    module, flat = _module_of({**shipped, "model": {**shipped["model"], "fcnet_hiddens": [16]}})
    assert type(module).__name__ == "SB3LikePPOTorchRLModule"
    # one state-independent log std per action, started at log_std_init: std exp(-0.5) = 0.607
    np.testing.assert_allclose(module.pi.log_std.detach().numpy(), [-0.5, -0.5])
    with torch.no_grad():
        out = module.forward_inference({"obs": torch.randn(8, flat.shape[0])})["action_dist_inputs"].numpy()
    np.testing.assert_allclose(np.exp(out[:, 2:]), np.exp(-0.5), rtol=1e-6)
    assert np.abs(out[:, :2]).max() < 0.2  # ortho_init: means start near 0 (gain 0.01)
    for layer in module.encoder.modules():
        if isinstance(layer, torch.nn.Linear):  # orthogonal hidden layers, gain sqrt(2), zero biases
            assert not layer.bias.detach().numpy().any()

    plain_module, _ = _module_of(tiny_config("acres_gym/RangerPathFollowing-v3"))
    assert type(plain_module).__name__ == "DefaultPPOTorchRLModule"  # without the keys: RLlib's default
    with pytest.raises(ValueError, match="free_log_std"):
        ppo_config(tiny_config("acres_gym/RangerPathFollowing-v3", model={"log_std_init": -1.0}))


@pytest.mark.slow
def test_checkpoint_of_remote_runners_keeps_the_observation_statistics(local_ray, tmp_path):
    """With remote env runners RLlib leaves the checkpointed (driver's) normaliser empty;
    sync_observation_filter puts the runners' statistics there, restore_observation_filter back into them."""
    from acres_gym.agents.rllib import RLlibPolicy, restore_observation_filter, sync_observation_filter

    def _filter_stats(runner):  # a local function: Ray ships it by value (the test module is not importable there)
        from ray.rllib.connectors.env_to_module import MeanStdFilter

        (piece,) = [c for c in runner._env_to_module.connectors if isinstance(c, MeanStdFilter)]
        stats = piece._filters[None].running_stats
        return stats.n, stats.mean.copy(), stats.std.copy()

    cfg = tiny_config("acres_gym/RangerPathFollowing-v3", num_env_runners=1)
    algo = ppo_config(cfg).build_algo()
    try:
        algo.train()
        remote = algo.env_runner_group.foreach_env_runner(_filter_stats, local_env_runner=False)[0]
        assert remote[0] >= TINY["train_batch_size_per_learner"]
        assert _filter_stats(algo.env_runner)[0] == remote[0]  # ppo_config's on_train_result callback
        assert sync_observation_filter(algo) == 1
        ckpt = algo.save_to_path(str(tmp_path / "checkpoint"))
    finally:
        algo.stop()
    policy = RLlibPolicy(ckpt)
    (piece,) = [c for c in policy.env_to_module.connectors if type(c).__name__ == "MeanStdFilter"]
    saved = piece._filters[None].running_stats
    assert saved.n == remote[0]
    np.testing.assert_allclose(saved.mean, remote[1])
    np.testing.assert_allclose(saved.std, remote[2])

    restored = ppo_config(cfg).build_algo()
    try:
        restored.restore_from_path(ckpt)
        assert restore_observation_filter(restored) == 1
        again = restored.env_runner_group.foreach_env_runner(_filter_stats, local_env_runner=False)[0]
        assert again[0] == remote[0]
        np.testing.assert_allclose(again[1], remote[1])
    finally:
        restored.stop()
