"""Train PPO or SAC on an acres_gym task, then compare the trained policy with a classical baseline.

    python train.py --config configs/train/ppo_speed_tracking.yaml [--total-steps N] [--seed S] [--out DIR]
                    [--set env_config.randomization.terrain.grade_pct=[0,15] --set algo_kwargs.gamma=0.99 ...]
                    [--resume runs/<run>/model.zip | runs/<run>/checkpoints/model_<steps>_steps.zip]

Reads top to bottom: the training config, the environment (the native vector env, N vehicles stepped by
one simulator call, behind the stable-baselines3 adapter), the model, training with checkpoints, the
saved run, the evaluation. A run directory holds:

    config.yaml          the resolved training config and the resolved task config (reproduces the run)
    model.zip            the trained model (stable-baselines3 format)
    vecnormalize.pkl     the observation normaliser, when ``normalize_observations`` is on
    checkpoints/         model_<steps>_steps.zip (and the normaliser) every ``checkpoint_every_steps``
    report.json          training time and speed, evaluation of the model and the baseline
    tensorboard/         training curves, when tensorboard is installed

Training config keys (``configs/train/*.yaml``; unknown keys are an error):

    algo: ppo | sac                  env_id: a registered id (acres_gym/RangerSpeedTracking-v1)
    env_config: task config overrides (as gymnasium.make(env_id, config=...)): a dict, or the name of a
                task config under configs/tasks (hill_climb)
    num_envs, total_steps, seed, out, device, torch_threads
    normalize_observations, normalize_rewards: VecNormalize on the observations / rewards
    algo_kwargs: arguments of PPO / SAC;  policy_kwargs: net_arch, activation_fn (a name), log_std_init, ...
    checkpoint_every_steps: 0 = no checkpoints
    eval_episodes, eval_seed, baseline (ulc_pure_pursuit | pedal_pid | null)
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import re
import time
from pathlib import Path

import gymnasium
import torch
import yaml
from stable_baselines3.common.callbacks import CheckpointCallback
from stable_baselines3.common.vec_env import VecNormalize

import acres_gym  # noqa: F401  (registers the gymnasium ids)
from acres_gym.agents.evaluate import baseline_entry, compare, format_table
from acres_gym.agents.sb3_models import SB3Policy, algorithm_class, build_model
from acres_gym.envs.config import check_keys, dotted_overrides, load_config, merge_configs, plain, strip_comments
from acres_gym.envs.sb3 import RangerSB3VecEnv

DEFAULTS = {
    "algo": "ppo",
    "env_id": "acres_gym/RangerSpeedTracking-v1",
    "env_config": {},
    "num_envs": 16,
    "total_steps": 200_000,
    "seed": 0,
    "out": None,
    "device": "cpu",
    "torch_threads": 1,
    "normalize_observations": True,
    "normalize_rewards": False,
    "algo_kwargs": {},
    "policy_kwargs": {},
    "checkpoint_every_steps": 50_000,
    "eval_episodes": 8,
    "eval_seed": 100_000,
    "baseline": "ulc_pure_pursuit",
}


def load_train_config(path: str, args: argparse.Namespace) -> dict:
    """The training config: defaults, then the YAML file, then the command line."""
    given = yaml.safe_load(Path(path).read_text(encoding="utf-8")) or {}
    check_keys(str(path), given, DEFAULTS)
    cfg = {**DEFAULTS, **strip_comments(given)}
    if cfg["env_config"] is not None and not isinstance(cfg["env_config"], dict):
        cfg["env_config"] = load_config(cfg["env_config"])  # a task config name or YAML path, as a dict
    overrides = dotted_overrides(getattr(args, "overrides", None) or [])
    check_keys("--set", overrides, DEFAULTS)
    cfg = merge_configs(cfg, overrides)
    for key in ("total_steps", "seed", "out"):
        if getattr(args, key) is not None:
            cfg[key] = getattr(args, key)
    if cfg["out"] is None:
        cfg["out"] = str(Path("runs") / f"{Path(path).stem}_seed{cfg['seed']}")
    return cfg


def make_env(cfg: dict):
    """The training environment of a training config: ``num_envs`` vehicles of ``env_id`` with its
    ``env_config`` in one simulator (``SameStep`` autoreset, as ``RangerSB3VecEnv`` needs); the episode
    length is the config's ``max_episode_s``."""
    return gymnasium.make_vec(cfg["env_id"], num_envs=cfg["num_envs"], vectorization_mode="vector_entry_point",
                              config=cfg["env_config"], autoreset_mode="SameStep")


def resume_files(model_zip: str) -> tuple[Path, Path | None]:
    """The model to resume from and its observation normaliser: ``vecnormalize.pkl`` beside a run's
    ``model.zip``, ``model_vecnormalize_<steps>_steps.pkl`` beside a checkpoint ``model_<steps>_steps.zip``
    (None when the run did not normalise)."""
    model = Path(model_zip)
    if not model.is_file():
        raise FileNotFoundError(f"--resume {model_zip}: no such model (a run's model.zip or a checkpoint .zip)")
    steps = re.fullmatch(r"model_(\d+)_steps", model.stem)
    name = f"model_vecnormalize_{steps.group(1)}_steps.pkl" if steps else "vecnormalize.pkl"
    normalizer = model.parent / name
    return model, normalizer if normalizer.is_file() else None


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description="Train PPO or SAC on an acres_gym task.")
    parser.add_argument("--config", required=True, help="a training config, e.g. configs/train/smoke.yaml")
    parser.add_argument("--total-steps", dest="total_steps", type=int, default=None)
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--out", default=None, help="run directory (default runs/<config>_seed<seed>)")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                        help="a config value by dotted key, e.g. env_config.max_episode_s=20 or "
                             "algo_kwargs.learning_rate=1e-4 (repeatable)")
    parser.add_argument("--resume", default=None, metavar="MODEL_ZIP",
                        help="continue from a saved model (a run's model.zip or a checkpoint) for total_steps more")
    args = parser.parse_args(argv)

    # --- 1. the config ---------------------------------------------------------------------------------
    cfg = load_train_config(args.config, args)
    out = Path(cfg["out"])
    out.mkdir(parents=True, exist_ok=True)
    torch.set_num_threads(int(cfg["torch_threads"]))

    # --- 2. the environment: N vehicles in one simulator, as an SB3 VecEnv ------------------------------
    venv = make_env(cfg)
    env = RangerSB3VecEnv(venv)
    env.seed(cfg["seed"])
    resume = resume_files(args.resume) if args.resume else None
    if resume is not None and resume[1] is not None:
        env = VecNormalize.load(str(resume[1]), env)  # the normaliser's statistics continue too
        env.training = True
    elif cfg["normalize_observations"] or cfg["normalize_rewards"]:
        gamma = cfg["algo_kwargs"].get("gamma", 0.99)
        env = VecNormalize(env, norm_obs=cfg["normalize_observations"], norm_reward=cfg["normalize_rewards"],
                           gamma=gamma)

    # --- 3. save the resolved config beside the model ---------------------------------------------------
    resolved = {**cfg, "task_config": venv.config, "resumed_from": str(resume[0]) if resume else None}
    (out / "config.yaml").write_text(yaml.safe_dump(plain(resolved), sort_keys=False), encoding="utf-8")

    # --- 4. the model --------------------------------------------------------------------------------------
    tensorboard = str(out / "tensorboard") if importlib.util.find_spec("tensorboard") else None
    if resume is None:
        model = build_model(cfg["algo"], env, cfg["seed"], cfg["algo_kwargs"], cfg["policy_kwargs"],
                            tensorboard_log=tensorboard, device=cfg["device"], verbose=1)
    else:
        model = algorithm_class(cfg["algo"]).load(str(resume[0]), env=env, device=cfg["device"],
                                                  tensorboard_log=tensorboard)
        print(f"resuming from {resume[0]} at {model.num_timesteps} steps")

    # --- 5. training, with checkpoints ----------------------------------------------------------------------
    callbacks = []
    if cfg["checkpoint_every_steps"]:
        every = max(1, int(cfg["checkpoint_every_steps"]) // cfg["num_envs"])
        callbacks.append(CheckpointCallback(save_freq=every, save_path=str(out / "checkpoints"), name_prefix="model",
                                            save_vecnormalize=isinstance(env, VecNormalize)))
    t0 = time.perf_counter()
    model.learn(total_timesteps=int(cfg["total_steps"]), callback=callbacks or None, progress_bar=False,
                reset_num_timesteps=resume is None)
    train_s = time.perf_counter() - t0
    model.save(str(out / "model.zip"))
    normalizer = env if isinstance(env, VecNormalize) else None
    if normalizer is not None:
        normalizer.save(str(out / "vecnormalize.pkl"))

    # --- 6. evaluation: the trained policy against the baseline, on the same seeds -------------------------
    entries = {"learned": (SB3Policy.factory(model, normalizer), None)}
    if cfg["baseline"]:
        entries[cfg["baseline"]] = baseline_entry(cfg["baseline"])
    results = compare(entries, cfg["env_id"], episodes=int(cfg["eval_episodes"]), seed=int(cfg["eval_seed"]),
                      config=cfg["env_config"])
    report = {
        "env_id": cfg["env_id"], "algo": cfg["algo"], "seed": cfg["seed"], "num_envs": cfg["num_envs"],
        "total_steps": int(model.num_timesteps), "train_wall_s": train_s,
        "train_steps_per_s": model.num_timesteps / train_s if train_s > 0 else None,
        "evaluation": {name: {"mean": r["mean"], "per_episode": r["per_episode"]} for name, r in results.items()},
    }
    (out / "report.json").write_text(json.dumps(plain(report), indent=2), encoding="utf-8")
    env.close()
    print(f"\ntrained {cfg['algo'].upper()} on {cfg['env_id']} for {model.num_timesteps} steps in {train_s:.1f} s "
          f"({report['train_steps_per_s']:.0f} steps/s); run saved in {out}")
    print(f"evaluation over {cfg['eval_episodes']} episodes (seeds from {cfg['eval_seed']}):")
    print(format_table(results))
    return report


if __name__ == "__main__":
    main()
