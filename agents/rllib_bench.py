"""Sampling throughput: RLlib env runners (native vector envs) against stable-baselines3 with as many vehicles.

    python -m acres_gym.agents.rllib_bench [--env acres_gym/RangerPathFollowing-v3] [--vehicles 16]
                                           [--runners 1 2] [--steps 256]

For each runner count k, RLlib PPO (the ``rllib_ppo_path_following`` policy network, exploring) samples
``--steps`` control steps per runner on k env runners of ``--vehicles`` vehicles each, all runners at once;
stable-baselines3 PPO (``ppo_path_following``'s network) collects a rollout of ``--steps`` steps on one
native vector env of k x ``--vehicles`` vehicles. Both after a warm-up of the same length. Prints env steps/s
(vehicle steps per wall second) of each and their ratio; ``--json`` writes them.
"""

from __future__ import annotations

import argparse
import json
import time

import gymnasium

import acres_gym  # noqa: F401  (registers the gymnasium ids)
from acres_gym.paths import config_path


def _runner_sample(steps: int):
    def sample(runner):
        return sum(len(e) for e in runner.sample(num_timesteps=steps, explore=True))
    return sample


def rllib_steps_per_s(env_id: str, runners: int, vehicles: int, steps: int) -> float:
    """Env steps/s of ``runners`` RLlib env runners sampling in parallel (``steps`` per vehicle each)."""
    from acres_gym.agents.rllib import ppo_config
    from acres_gym.agents.rllib_train import load_train_config

    cfg = load_train_config(str(config_path("train", "rllib_ppo_path_following.yaml")),
                            [f"env_id={env_id}", f"num_env_runners={runners}", f"vehicles_per_runner={vehicles}"])
    algo = ppo_config(cfg).build_algo()
    try:
        group = algo.env_runner_group
        sample = _runner_sample(steps * vehicles)
        group.foreach_env_runner(sample, local_env_runner=False)  # warm-up
        t0 = time.perf_counter()
        counts = group.foreach_env_runner(sample, local_env_runner=False)
        return sum(counts) / (time.perf_counter() - t0)
    finally:
        algo.stop()


def sb3_steps_per_s(env_id: str, vehicles: int, steps: int) -> float:
    """Env steps/s of a stable-baselines3 PPO rollout on one native vector env of ``vehicles`` vehicles."""
    import torch
    import yaml
    from stable_baselines3.common.vec_env import VecNormalize

    from acres_gym.agents.sb3_models import build_model
    from acres_gym.envs.sb3 import RangerSB3VecEnv

    torch.set_num_threads(1)
    train = yaml.safe_load(config_path("train", "ppo_path_following.yaml").read_text(encoding="utf-8"))
    venv = gymnasium.make_vec(env_id, num_envs=vehicles, vectorization_mode="vector_entry_point",
                              autoreset_mode="SameStep")
    env = VecNormalize(RangerSB3VecEnv(venv), norm_obs=True, norm_reward=False)
    model = build_model("ppo", env, 0, {"n_steps": steps}, train["policy_kwargs"])
    try:
        _, callback = model._setup_learn(total_timesteps=10 * steps * vehicles)
        callback.on_training_start(locals(), globals())
        model.collect_rollouts(model.env, callback, model.rollout_buffer, n_rollout_steps=steps)  # warm-up
        t0 = time.perf_counter()
        model.collect_rollouts(model.env, callback, model.rollout_buffer, n_rollout_steps=steps)
        return steps * vehicles / (time.perf_counter() - t0)
    finally:
        env.close()


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--env", default="acres_gym/RangerPathFollowing-v3")
    parser.add_argument("--vehicles", type=int, default=16, help="vehicles per RLlib env runner")
    parser.add_argument("--runners", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--steps", type=int, default=256, help="control steps per vehicle timed")
    parser.add_argument("--json", default=None)
    args = parser.parse_args(argv)
    import ray

    rows = {}
    from acres_gym.agents.rllib import register_rllib_envs, start_ray

    start_ray(num_cpus=max(args.runners) + 1, log_to_driver=False)
    try:

        register_rllib_envs()
        for k in args.runners:
            rows[k] = {"rllib": rllib_steps_per_s(args.env, k, args.vehicles, args.steps)}
    finally:
        ray.shutdown()
    for k in args.runners:
        rows[k]["sb3"] = sb3_steps_per_s(args.env, k * args.vehicles, args.steps)
    print(f"{args.env}, {args.vehicles} vehicles per runner, {args.steps} steps timed after as many of warm-up")
    print("runners  vehicles  RLlib steps/s  SB3 steps/s  RLlib/SB3")
    for k, r in rows.items():
        print(f"{k:7d}  {k * args.vehicles:8d}  {r['rllib']:13.0f}  {r['sb3']:11.0f}  {r['rllib'] / r['sb3']:9.2f}")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump({"env": args.env, "vehicles_per_runner": args.vehicles, "steps": args.steps, "rows": rows}, f,
                      indent=2)
    return rows


if __name__ == "__main__":
    main()
