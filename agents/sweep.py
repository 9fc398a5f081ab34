"""A Tune sweep of RLlib PPO runs with ASHA early stopping, and a table of the trials with their evaluation score.

    python -m acres_gym.agents.sweep --config configs/sweep/rllib_ppo_path_following_lr.yaml [--out DIR]
                                     [--address auto]

A sweep config (``configs/sweep/*.yaml``, keys in ``DEFAULTS``; unknown keys are an error):

    train_config   a training config of ``agents.rllib_train`` (a name under configs/train, or a path)
    set            dotted overrides of it for every trial ({num_env_runners: 0, ...})
    search         {dotted key: {grid: [...]} | {choice: [...]} | {uniform: [lo, hi]} | {loguniform: [lo, hi]}};
                   keys under algo_kwargs. (PPO arguments such as the learning rate) or env_config. (task
                   config values such as reward weights: env_config.rewards.lateral_error.weight)
    num_samples    samples of the search space (each grid point is run num_samples times)
    max_iterations training iterations of a trial that ASHA does not stop
    asha           {grace_period: iterations before a trial can be stopped, reduction_factor: keep 1 in n}
    metric, mode   what ASHA compares after each iteration (env_runners/episode_return_mean, max)
    max_concurrent_trials, checkpoint_every_iterations
    score, score_mode   the evaluation figure that ranks the trials (lateral_rmse_m, min; any figure of
                   agents.evaluate's means) and eval_episodes, eval_seed

Each trial's last checkpoint is evaluated by ``agents.evaluate`` on the same seeds (the trial's own task
config). ``<out>/trials.csv`` and ``trials.md`` list every trial: its searched values, iterations run
(fewer than max_iterations when ASHA stopped it), last metric value, evaluation figures, score, checkpoint.
"""

from __future__ import annotations

import argparse
import csv
import math
import os
from pathlib import Path
from typing import Any

import yaml

from acres_gym.agents.evaluate import evaluate
from acres_gym.agents.rllib import ppo_config, register_rllib_envs, rllib_policy_factory, start_ray
from acres_gym.agents.rllib_train import load_train_config
from acres_gym.configuration import check_keys, strip_comments
from acres_gym.envs.config import load_config
from acres_gym.paths import config_path

DEFAULTS: dict[str, Any] = {
    "train_config": "rllib_ppo_path_following",
    "set": {},
    "search": {},
    "num_samples": 1,
    "max_iterations": 50,
    "asha": {"grace_period": 5, "reduction_factor": 2},
    "metric": "env_runners/episode_return_mean",
    "mode": "max",
    "max_concurrent_trials": 2,
    "checkpoint_every_iterations": 5,
    "score": "lateral_rmse_m",
    "score_mode": "min",
    "eval_episodes": 8,
    "eval_seed": 100_000,
    "out": None,
}
SEARCHABLE = ("algo_kwargs", "env_config")
DOMAINS = ("grid", "choice", "uniform", "loguniform")
TABLE_FIGURES = ("episode_return", "lateral_rmse_m", "speed_rmse_mps", "failed")


def load_sweep_config(path: str, out: str | None = None) -> dict:
    given = yaml.safe_load(Path(path).read_text(encoding="utf-8")) or {}
    check_keys(str(path), given, DEFAULTS)
    cfg = {**DEFAULTS, **strip_comments(given)}
    check_keys(f"{path}: asha", cfg["asha"], DEFAULTS["asha"])
    cfg["asha"] = {**DEFAULTS["asha"], **cfg["asha"]}
    if cfg["mode"] not in ("min", "max") or cfg["score_mode"] not in ("min", "max"):
        raise ValueError(f"{path}: mode = {cfg['mode']!r}, score_mode = {cfg['score_mode']!r}; allowed: min, max")
    if not isinstance(cfg["max_iterations"], int) or cfg["max_iterations"] < cfg["asha"]["grace_period"]:
        raise ValueError(f"{path}: max_iterations = {cfg['max_iterations']!r}: expected an integer >= "
                         f"asha.grace_period ({cfg['asha']['grace_period']})")
    if out is not None:
        cfg["out"] = out
    if cfg["out"] is None:
        cfg["out"] = str(Path("runs") / Path(path).stem)
    return cfg


def domain(key: str, spec: Any):
    """A Tune search space from ``{grid: [...]}``, ``{choice: [...]}``, ``{uniform: [lo, hi]}`` or
    ``{loguniform: [lo, hi]}``."""
    from ray import tune

    if not isinstance(spec, dict) or len(spec) != 1 or next(iter(spec)) not in DOMAINS:
        raise ValueError(f"search.{key} = {spec!r}: expected one of {{grid: [...]}}, {{choice: [...]}}, "
                         "{uniform: [lo, hi]}, {loguniform: [lo, hi]}")
    kind, values = next(iter(spec.items()))
    if not isinstance(values, list) or not values or (kind in ("uniform", "loguniform") and len(values) != 2):
        raise ValueError(f"search.{key}.{kind} = {values!r}: expected a non-empty list ([lo, hi] for {kind})")
    if kind == "grid":
        return tune.grid_search(values)
    if kind == "choice":
        return tune.choice(values)
    return getattr(tune, kind)(float(values[0]), float(values[1]))


def set_dotted(cfg: dict, key: str, value: Any) -> None:
    parts = key.split(".")
    if parts[0] not in SEARCHABLE or len(parts) < 2:
        raise ValueError(f"search key {key!r}: expected algo_kwargs.<PPO argument> or env_config.<task config key>")
    node = cfg
    for part in parts[:-1]:
        node = node.setdefault(part, {})
        if not isinstance(node, dict):
            raise ValueError(f"search key {key!r}: {part!r} is a value, not a section")
    node[parts[-1]] = value


def trial_config(sweep: dict) -> dict:
    """The training config every trial starts from, with the search spaces in place."""
    path = sweep["train_config"]
    if "/" not in str(path) and not str(path).endswith((".yaml", ".yml")):
        path = config_path("train", f"{path}.yaml")
    overrides = [f"{k}={yaml.safe_dump(v, default_flow_style=True).strip()}" for k, v in sweep["set"].items()]
    cfg = load_train_config(str(path), overrides)
    cfg["env_config"] = load_config(cfg["env_config"])
    for key, spec in sweep["search"].items():
        set_dotted(cfg, key, domain(key, spec))
    return cfg


def _get(mapping: dict, key: str) -> Any:
    node: Any = mapping
    for part in key.split("/"):
        node = node.get(part) if isinstance(node, dict) else None
    return node


def _searched_value(config: dict, key: str) -> Any:
    """A searched value from a trial's resolved algorithm config dict."""
    parts = key.split(".")
    node = config.get("env_config", {}).get("config", {}) if parts[0] == "env_config" else config
    for part in parts[1:]:
        node = node.get(part) if isinstance(node, dict) else None
    return node


def run_sweep(sweep: dict, address: str | None = None) -> list[dict]:
    """Run the sweep; returns the table rows (also written to ``<out>/trials.csv`` and ``trials.md``)."""
    import ray
    from ray import tune
    from ray.rllib.algorithms.ppo import PPO
    from ray.tune.schedulers import ASHAScheduler

    out = Path(sweep["out"]).resolve()
    out.mkdir(parents=True, exist_ok=True)
    cfg = trial_config(sweep)
    # No episode has ended in a trial's first iterations (an episode is longer than an iteration's samples),
    # so their results lack the episode return: ASHA skips such results; Tune's strict check would stop.
    os.environ.setdefault("TUNE_DISABLE_STRICT_METRIC_CHECKING", "1")
    started_ray = not ray.is_initialized()
    if started_ray:
        start_ray(address)
    try:
        register_rllib_envs()
        scheduler = ASHAScheduler(time_attr="training_iteration", max_t=int(sweep["max_iterations"]),
                                  grace_period=int(sweep["asha"]["grace_period"]),
                                  reduction_factor=float(sweep["asha"]["reduction_factor"]))
        # The class, not the name "PPO": Tune resolves a name by importing every RLlib algorithm, one of which
        # makes an environment of its own at import time
        tuner = tune.Tuner(
            PPO, param_space=ppo_config(cfg),
            tune_config=tune.TuneConfig(metric=sweep["metric"], mode=sweep["mode"], scheduler=scheduler,
                                        num_samples=int(sweep["num_samples"]),
                                        max_concurrent_trials=int(sweep["max_concurrent_trials"])),
            run_config=tune.RunConfig(
                name="tune", storage_path=str(out), stop={"training_iteration": int(sweep["max_iterations"])},
                checkpoint_config=tune.CheckpointConfig(
                    checkpoint_frequency=int(sweep["checkpoint_every_iterations"]), checkpoint_at_end=True,
                    num_to_keep=1),
                verbose=1),
        )
        grid = tuner.fit()
    finally:
        if started_ray:
            ray.shutdown()

    rows = []
    for result in grid:
        trial_cfg = result.config or {}
        row: dict[str, Any] = {"trial": Path(result.path).name}
        row.update({key: _searched_value(trial_cfg, key) for key in sweep["search"]})
        metrics = result.metrics or {}
        row["iterations"] = metrics.get("training_iteration")
        row[sweep["metric"]] = _get(metrics, sweep["metric"])
        row["error"] = str(result.error).splitlines()[0] if result.error else ""
        checkpoint = result.checkpoint.path if result.checkpoint is not None else None
        if checkpoint is not None:
            env_config = trial_cfg.get("env_config", {}).get("config", cfg["env_config"])
            ev = evaluate(rllib_policy_factory(checkpoint), cfg["env_id"], episodes=int(sweep["eval_episodes"]),
                          seed=int(sweep["eval_seed"]), config=env_config)
            row.update({k: ev["mean"].get(k, math.nan) for k in TABLE_FIGURES})  # NaN: not a figure of the task
            row["score"] = ev["mean"][sweep["score"]] if sweep["score"] in ev["mean"] else None
        row["checkpoint"] = checkpoint
        rows.append(row)
    sign = 1.0 if sweep["score_mode"] == "min" else -1.0
    rows.sort(key=lambda r: sign * r["score"] if isinstance(r.get("score"), float) and math.isfinite(r["score"])
              else math.inf)
    write_table(rows, out, sweep)
    return rows


def write_table(rows: list[dict], out: Path, sweep: dict) -> None:
    columns = list(dict.fromkeys(k for row in rows for k in row))
    with open(out / "trials.csv", "w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=columns)
        writer.writeheader()
        writer.writerows(rows)

    def cell(value: Any) -> str:
        return f"{value:.4g}" if isinstance(value, float) else ("" if value is None else str(value))

    shown = [c for c in columns if c != "checkpoint"]
    lines = [f"score: {sweep['score']} ({sweep['score_mode']}) over {sweep['eval_episodes']} episodes, seeds from "
             f"{sweep['eval_seed']}", "", "| " + " | ".join(shown) + " |", "|" + " --- |" * len(shown)]
    lines += ["| " + " | ".join(cell(row.get(c)) for c in shown) + " |" for row in rows]
    (out / "trials.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))


def main(argv: list[str] | None = None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", required=True,
                        help="a sweep config, e.g. configs/sweep/rllib_ppo_path_following_lr.yaml")
    parser.add_argument("--out", default=None, help="sweep directory (default runs/<config name>)")
    parser.add_argument("--address", default=None, help="a running Ray cluster to join (auto, or host:port)")
    args = parser.parse_args(argv)
    try:
        sweep = load_sweep_config(args.config, args.out)
        trial_config(sweep)  # bad keys and search spaces stop here, before Ray starts
    except (ValueError, FileNotFoundError) as exc:
        parser.error(str(exc))
    return run_sweep(sweep, args.address)


if __name__ == "__main__":
    main()
