"""Train PPO with RLlib on an acres_gym task (Ray env runners stepping native vector envs), then compare the
trained policy with a classical baseline.

    python -m acres_gym.agents.rllib_train --config configs/train/rllib_ppo_path_following.yaml
        [--total-steps N] [--seed S] [--out DIR] [--set algo_kwargs.lr=1e-4 --set num_env_runners=2 ...]
        [--resume runs/<run>/checkpoint | runs/<run>/checkpoints/iter_<n>] [--address auto]

Ray: without ``--address`` a local Ray instance is started; ``--address auto`` (or ``host:6379``) joins a
running cluster (``ray start --head`` on one machine, ``ray start --address=<head>:6379`` on the others),
whose env runners then spread over the machines. A run directory holds:

    config.yaml          the resolved training config and the resolved task config (reproduces the run)
    checkpoint/          the final RLlib algorithm checkpoint (RLModule, learner and optimizer state, the
                         runners' connector state such as the observation normaliser)
    checkpoints/iter_<n> checkpoints every ``checkpoint_every_iterations`` training iterations
    progress.csv         one row per training iteration: env steps, wall time, mean episode return
    report.json          training time and speed, evaluation of the checkpoint and the baseline

Training config keys (``configs/train/rllib_*.yaml``; unknown keys are an error): see
``acres_gym.agents.rllib.DEFAULTS``. ``num_env_runners`` Ray actors each step ``vehicles_per_runner``
vehicles in one simulator call; ``num_learners`` learner actors (0: the learner runs in this process);
``algo_kwargs`` are ``PPOConfig.training`` arguments (``lr``, ``train_batch_size_per_learner``,
``minibatch_size``, ``num_epochs``, ``gamma``, ``lambda_``, ...); ``model`` the ``DefaultModelConfig``.

``python -m acres_gym.agents.evaluate --model runs/<run>/checkpoint`` evaluates a checkpoint again.
"""

from __future__ import annotations

import argparse
import csv
import json
import time
from pathlib import Path

import torch
import yaml

from acres_gym.agents.evaluate import baseline_entry, compare, format_table
from acres_gym.agents.rllib import (
    DEFAULTS,
    is_rllib_checkpoint,
    ppo_config,
    register_rllib_envs,
    restore_observation_filter,
    rllib_policy_factory,
    start_ray,
    sync_observation_filter,
)
from acres_gym.configuration import (
    check_keys,
    dotted_overrides,
    merge_configs,
    seed_argument,
    strip_comments,
    to_builtins,
)
from acres_gym.envs.config import load_config


def load_train_config(path: str, overrides: list[str], total_steps: int | None = None, seed: int | None = None,
                      out: str | None = None) -> dict:
    """The training config: ``DEFAULTS``, then the YAML file, then ``--set`` values and the other options."""
    given = yaml.safe_load(Path(path).read_text(encoding="utf-8")) or {}
    check_keys(str(path), given, DEFAULTS)
    cfg = {**DEFAULTS, **strip_comments(given)}
    dotted = dotted_overrides(overrides)
    check_keys("--set", dotted, DEFAULTS)
    cfg = merge_configs(cfg, dotted)
    cfg["env_config"] = load_config(cfg["env_config"])  # a task config name or YAML path, as a dict
    for key, value in (("total_steps", total_steps), ("seed", seed), ("out", out)):
        if value is not None:
            cfg[key] = value
    if cfg["out"] is None:
        cfg["out"] = str(Path("runs") / f"{Path(path).stem}_seed{cfg['seed']}")
    return cfg


def env_steps(result: dict) -> int:
    """Environment steps sampled so far (over all runners) from an ``Algorithm.train()`` result."""
    return int(result.get("num_env_steps_sampled_lifetime", 0))


def episode_return(result: dict) -> float:
    return float(result.get("env_runners", {}).get("episode_return_mean", float("nan")))


def train(cfg: dict, resume: str | None = None, address: str | None = None) -> dict:
    """Train, checkpoint, evaluate; returns the report (also written to ``<out>/report.json``)."""
    import ray

    out = Path(cfg["out"])
    out.mkdir(parents=True, exist_ok=True)
    torch.set_num_threads(int(cfg["torch_threads"]))
    started_ray = not ray.is_initialized()
    if started_ray:
        start_ray(address)
    try:
        register_rllib_envs()
        config = ppo_config(cfg)
        resolved = {**cfg, "task_config": load_config(cfg["env_config"]), "resumed_from": resume,
                    "rllib": {"train_batch_size_per_learner": config.train_batch_size_per_learner,
                              "minibatch_size": config.minibatch_size, "num_epochs": config.num_epochs,
                              "lr": config.lr, "gamma": config.gamma, "lambda_": config.lambda_,
                              "rollout_fragment_length": config.get_rollout_fragment_length()}}
        (out / "config.yaml").write_text(yaml.safe_dump(to_builtins(resolved), sort_keys=False), encoding="utf-8")

        algo = config.build_algo()
        steps0 = 0
        if resume is not None:
            algo.restore_from_path(str(Path(resume).resolve()))
            restore_observation_filter(algo)  # the checkpoint's normaliser into the remote runners
            steps0 = int(algo.metrics.peek(("env_runners", "num_env_steps_sampled_lifetime"), default=0))
            print(f"resuming from {resume} at iteration {algo.iteration}, {steps0} env steps")

        rows = []
        progress = open(out / "progress.csv", "a" if resume else "w", newline="", encoding="utf-8")
        writer = csv.DictWriter(progress, fieldnames=["iteration", "env_steps", "wall_s", "episode_return_mean"])
        if not resume:
            writer.writeheader()
        t0 = time.perf_counter()
        steps = steps0
        every = int(cfg["checkpoint_every_iterations"])
        while steps - steps0 < int(cfg["total_steps"]):
            result = algo.train()
            steps = env_steps(result)
            wall = time.perf_counter() - t0
            rows.append({"iteration": algo.iteration, "env_steps": steps, "wall_s": round(wall, 2),
                         "episode_return_mean": episode_return(result)})
            writer.writerow(rows[-1])
            progress.flush()
            print(f"iter {algo.iteration:4d}  steps {steps:8d}  {wall:7.1f} s  "
                  f"return {rows[-1]['episode_return_mean']:.2f}", flush=True)
            if every and algo.iteration % every == 0:
                sync_observation_filter(algo)  # the runners' normaliser into the checkpoint (see its doc)
                algo.save_to_path(str((out / "checkpoints" / f"iter_{algo.iteration}").resolve()))
        train_s = time.perf_counter() - t0
        progress.close()
        sync_observation_filter(algo)
        checkpoint = str(algo.save_to_path(str((out / "checkpoint").resolve())))
        algo.stop()
    finally:
        if started_ray:
            ray.shutdown()

    entries = {"learned": (rllib_policy_factory(checkpoint), None)}
    if cfg["baseline"]:
        entries[cfg["baseline"]] = baseline_entry(cfg["baseline"])
    results = compare(entries, cfg["env_id"], episodes=int(cfg["eval_episodes"]), seed=int(cfg["eval_seed"]),
                      config=cfg["env_config"])
    trained = steps - steps0
    report = {
        "env_id": cfg["env_id"], "algo": "ppo (rllib)", "seed": cfg["seed"],
        "num_env_runners": cfg["num_env_runners"], "vehicles_per_runner": cfg["vehicles_per_runner"],
        "num_learners": cfg["num_learners"], "total_steps": steps, "iterations": len(rows),
        "train_wall_s": train_s, "train_steps_per_s": trained / train_s if train_s > 0 else None,
        "checkpoint": checkpoint, "resumed_from": resume,
        "evaluation": {name: {"mean": r["mean"], "per_episode": r["per_episode"]} for name, r in results.items()},
    }
    (out / "report.json").write_text(json.dumps(to_builtins(report), indent=2), encoding="utf-8")
    print(f"\ntrained PPO (RLlib) on {cfg['env_id']} to {steps} env steps in {train_s:.1f} s "
          f"({report['train_steps_per_s']:.0f} steps/s); run saved in {out}")
    print(f"evaluation over {cfg['eval_episodes']} episodes (seeds from {cfg['eval_seed']}):")
    print(format_table(results))
    return report


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description="Train PPO with RLlib on an acres_gym task.")
    parser.add_argument("--config", required=True,
                        help="a training config, e.g. configs/train/rllib_ppo_path_following.yaml")
    parser.add_argument("--total-steps", dest="total_steps", type=int, default=None)
    parser.add_argument("--seed", type=seed_argument, default=None)
    parser.add_argument("--out", default=None, help="run directory (default runs/<config>_seed<seed>)")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                        help="a config value by dotted key, e.g. num_env_runners=2 or algo_kwargs.lr=1e-4")
    parser.add_argument("--resume", default=None, metavar="CHECKPOINT",
                        help="continue from a checkpoint directory for total_steps more")
    parser.add_argument("--address", default=None,
                        help="a running Ray cluster to join (auto, or host:port); default: a local Ray instance")
    args = parser.parse_args(argv)
    try:
        cfg = load_train_config(args.config, args.overrides, args.total_steps, args.seed, args.out)
        ppo_config(cfg)  # bad values stop here, before Ray starts
        if args.resume is not None and not is_rllib_checkpoint(args.resume):
            raise FileNotFoundError(f"--resume {args.resume}: not an RLlib checkpoint (a run's checkpoint/ "
                                    "or checkpoints/iter_<n>)")
    except (ValueError, FileNotFoundError) as exc:
        parser.error(str(exc))
    return train(cfg, resume=args.resume, address=args.address)


if __name__ == "__main__":
    main()
