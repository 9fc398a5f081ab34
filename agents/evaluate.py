"""Evaluation of policies over seeded episodes, and a baseline-against-learned comparison.

``evaluate(policy_factory, env_id, episodes=8, seed=0)`` runs ``episodes`` episodes (episode ``k`` seeded
``seed + k``, as ``env.reset(seed=seed + k)`` of a single environment) in native vector environments of up
to ``batch`` vehicles, each vehicle's first episode counting, and returns the task's name and the mean and
per-episode figures the task declares (``acres_gym.envs.tasks.base.Task.episode_row``): for every task the
return, steps, distance, fuel (g, g/km, L/100 km), each failure flag of the task, ``failed`` (any of them:
the failure share) and ``success``, and the share of episodes that ended early; the path tasks add speed RMSE
(m/s, true forward speed against the target) and lateral RMSE (m, rear-axle midpoint from the path), the
navigation task the time to the goal (NaN when not reached; its mean is over the episodes that reached it),
the remaining distance to the goal and the ground cause.

A policy factory is ``callable(venv) -> policy`` with ``policy(obs) -> actions`` for a batch and an optional
``policy.reset(rows)``: ``lambda venv: UlcPurePursuit(venv)``, ``SB3Policy.factory(model, ...)`` or, for an
RLlib checkpoint, ``acres_gym.agents.rllib.rllib_policy_factory(checkpoint_dir)``.

``compare({name: (factory, action_mode or None)}, env_id, ...)`` evaluates several on the same seeds and
``format_table`` prints them.

Command line: ``python -m acres_gym.agents.evaluate --env acres_gym/RangerSpeedTracking-v3 --episodes 8`` compares
the task's classical baselines (``Scoring.baselines``: ``ulc_pure_pursuit`` and ``pedal_pid`` for the path
tasks, ``straight_line`` and ``terrain_planner`` for navigation) and prints the task's figures, the failure share
and each failure cause (``--json`` writes every figure per episode); ``--split test`` evaluates the navigation
task's held-out terrain distribution. ``--baselines straight_line`` keeps some of the task's baselines,
``--baselines none`` evaluates the model alone (a large held-out set without re-running the baselines).
``--model runs/x/model.zip`` adds a trained model, ``--model runs/x/checkpoint`` an RLlib checkpoint of
``agents.rllib_train`` (the environment and its config then default to the ones it was trained on);
``--model pretrained`` the policy shipped for ``--env`` (``acres_gym.agents.pretrained``), run through the
vehicle runtime.
``--config`` and ``--set key.sub=value`` change the task config, e.g.
``--set randomization.terrain.grade_pct=[0,15]``: robustness studies on other ground, payloads or biases. Bad
options stop with exit status 2 and a message naming them.
"""

from __future__ import annotations

import argparse
import json
import math
import time
from collections.abc import Callable, Mapping
from typing import Any

import gymnasium
import numpy as np

import acres_gym  # noqa: F401  (registers the ids)
from acres_gym.agents.baselines import baseline_action_mode, make_baseline
from acres_gym.agents.pretrained import PRETRAINED
from acres_gym.configuration import dotted_overrides, merge_configs, seed_argument
from acres_gym.envs.config import load_config
from acres_gym.envs.tasks import Task, task_class
from acres_gym.envs.tasks.base import FUEL_DENSITY_KG_L  # noqa: F401  (named here too)


def make_vector_env(env_id: str, num_envs: int, config: Mapping | str | None = None, action_mode: str | None = None,
                    autoreset_mode: str = "NextStep"):
    """The native vector env of a registered id, with config overrides (a dict, a task config name or a
    YAML path, merged over the id's own) and an action mode."""
    config = load_config(config)
    if action_mode is not None:
        config["action_mode"] = action_mode
    return gymnasium.make_vec(env_id, num_envs=num_envs, vectorization_mode="vector_entry_point",
                              config=config, autoreset_mode=autoreset_mode)


def evaluate(policy_factory: Callable[[Any], Callable], env_id: str, episodes: int = 8, seed: int = 0,
             config: Mapping | None = None, action_mode: str | None = None, batch: int = 16) -> dict[str, Any]:
    """Evaluate a policy over ``episodes`` seeded episodes (see the module docstring)."""
    if episodes < 1:
        raise ValueError(f"episodes = {episodes}: expected at least 1")
    if seed < 0:
        raise ValueError(f"seed = {seed}: expected at least 0 (episode k is seeded seed + k)")
    per_episode: list[dict[str, float]] = []
    t0 = time.perf_counter()
    steps = 0
    task: type[Task] | None = None
    for start in range(0, episodes, batch):
        n = min(batch, episodes - start)
        venv = make_vector_env(env_id, n, config, action_mode)
        try:
            task = task_class(venv.unwrapped.config["task"])
            policy = policy_factory(venv)
            obs, _ = venv.reset(seed=seed + start)
            if hasattr(policy, "reset"):
                policy.reset(np.ones(n, dtype=bool))
            done = np.zeros(n, dtype=bool)
            results: list[dict[str, float] | None] = [None] * n
            while not done.all():
                obs, _r, terminated, truncated, info = venv.step(policy(obs))
                steps += int((~done).sum())
                ended = (terminated | truncated) & ~done
                for i in np.flatnonzero(ended):
                    row = task.episode_row(info_of(info, int(i)), bool(truncated[i] and not terminated[i]))
                    row["early_end"] = float(bool(terminated[i]))
                    row["seed"] = seed + start + int(i)
                    results[i] = row
                done |= ended
                if hasattr(policy, "reset") and ended.any():
                    policy.reset(ended)
            per_episode.extend(r for r in results if r is not None)
        finally:
            venv.close()
    return {"task": task.name, "episodes": episodes, "seed": seed, "mean": task.mean_figures(per_episode),
            "per_episode": per_episode, "wall_s": time.perf_counter() - t0, "steps": steps}


def info_of(info: Mapping[str, Any], i: int) -> dict[str, Any]:
    """Vehicle ``i``'s entries of a vector env's ``info`` (its arrays; not the masks or nested dicts)."""
    return {k: v[i] for k, v in info.items() if isinstance(v, np.ndarray) and not k.startswith("_")}


def columns(task: type[Task]) -> list[tuple[str, str, str]]:
    """``(label, key, format)`` of the columns that show a task's results: the return, the task's own
    figures, the failure share and each failure cause, and the steps."""
    s = task.scoring
    return ([("return", "episode_return", "{:.1f}")] + [(f.label, f.key, f.fmt) for f in s.figures]
            + [("failed", "failed", "{:.2f}")] + [(flag.replace("_", " "), flag, "{:.2f}") for flag in s.failures]
            + [("steps", "episode_steps", "{:.0f}")])

def task_of(env_id: str, config: Mapping | None = None) -> type[Task]:
    """The task an id runs with config overrides (``config``'s ``task`` key, else the id's own config's)."""
    from acres_gym.registration import ENVIRONMENTS

    name = (config or {}).get("task")
    if name is None and env_id in ENVIRONMENTS:
        name = load_config(ENVIRONMENTS[env_id][0]).get("task")
    if name is None:
        raise ValueError(f"--env {env_id!r}: not an id of acres_gym and no task in the config")
    return task_class(name)


def compare(entries: Mapping[str, tuple[Callable, str | None]], env_id: str, episodes: int = 8, seed: int = 0,
            config: Mapping | None = None, batch: int = 16) -> dict[str, dict[str, Any]]:
    """Evaluate several policies on the same seeds: ``{name: (factory, action_mode or None)}``."""
    return {name: evaluate(factory, env_id, episodes, seed, config, mode, batch)
            for name, (factory, mode) in entries.items()}


def baseline_entry(name: str) -> tuple[Callable, str]:
    """``(factory, action mode)`` of a classical baseline for ``compare``."""
    return (lambda venv: make_baseline(name, venv)), baseline_action_mode(name)


def baseline_names(value: str | None, task: type[Task]) -> tuple[str, ...]:
    """The baselines ``--baselines`` names for ``task``: None = all of the task's (``Scoring.baselines``),
    ``"none"`` = none, else a comma-separated list of some of them."""
    allowed = task.scoring.baselines
    if value is None:
        return allowed
    if value.strip() == "none":
        return ()
    names = tuple(name.strip() for name in value.split(","))
    wrong = [name for name in names if name not in allowed]
    if wrong or len(set(names)) != len(names):
        problem = f"not a baseline of task {task.name!r}: {', '.join(wrong)}" if wrong else "a name repeated"
        raise ValueError(f"--baselines {value!r}: {problem}; allowed: a comma-separated list of "
                         f"{', '.join(allowed)}, or none")
    return names


def add_config_arguments(parser: argparse.ArgumentParser) -> None:
    """``--config`` and ``--set`` options: the task config of the evaluated environment."""
    parser.add_argument("--config", default=None,
                        help="a task config (name under configs/tasks or YAML path) merged over the environment's")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                        help="a task config value by dotted key, e.g. randomization.terrain.grade_pct=[0,15] "
                             "(repeatable; applied last)")


def config_from_arguments(base: Mapping | None, args: argparse.Namespace) -> dict:
    """``base`` (e.g. a trained model's env config), then ``--config``, then the ``--set`` values."""
    config = merge_configs(load_config(base), load_config(args.config))
    return merge_configs(config, dotted_overrides(args.overrides))


def format_table(results: Mapping[str, Mapping[str, Any]]) -> str:
    """A printable table of ``compare`` results (means over the episodes), in the columns of their task
    (``columns``)."""
    cols = columns(task_class(next(iter(results.values()))["task"]))
    header = ["policy"] + [c[0] for c in cols]
    rows = [[name] + [fmt.format(r["mean"][key]) if math.isfinite(r["mean"][key]) else "nan"
                      for _, key, fmt in cols] for name, r in results.items()]
    widths = [max(len(h), *(len(row[i]) for row in rows)) for i, h in enumerate(header)]
    def line(cells):
        padded = [c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths, strict=True))]
        return "  ".join(padded)

    return "\n".join([line(header)] + [line(row) for row in rows])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--env", default=None,
                        help="a registered id (default: the model's, else acres_gym/RangerSpeedTracking-v3)")
    parser.add_argument("--episodes", type=int, default=8)
    parser.add_argument("--seed", type=seed_argument, default=100_000, help="episode k is seeded seed + k")
    parser.add_argument("--model", default=None, help="a model.zip saved by train.py (its run directory), or an "
                                                      "RLlib checkpoint directory of agents.rllib_train, or "
                                                      "'pretrained': the policy shipped for --env")
    parser.add_argument("--json", default=None, help="also write the results as JSON")
    parser.add_argument("--split", choices=("train", "test"), default=None,
                        help="the navigation task's terrain distribution (task_options.split): test = held out")
    parser.add_argument("--baselines", default=None, metavar="NAME,...|none",
                        help="the task's baselines to compare with, comma-separated (default: all of them); none: "
                             "the model alone")
    add_config_arguments(parser)
    args = parser.parse_args(argv)
    env_id, config, entries = args.env or "acres_gym/RangerSpeedTracking-v3", {}, {}
    from acres_gym.agents.rllib import is_rllib_checkpoint  # imports Ray only when a checkpoint is loaded

    if args.model == PRETRAINED:
        from acres_gym.agents.pretrained import pretrained_policy

        try:
            factory, mode, config = pretrained_policy(env_id)
        except ValueError as exc:
            parser.exit(2, f"{parser.prog}: error: --model pretrained: {exc}\n")
        entries["pretrained"] = (factory, mode)
    elif args.model and is_rllib_checkpoint(args.model):
        from acres_gym.agents.rllib import load_checkpoint_policy, run_config_of

        factory, mode, config = load_checkpoint_policy(args.model)
        env_id = args.env or run_config_of(args.model)["env_id"]
        entries["learned"] = (factory, mode)
    elif args.model:
        from acres_gym.agents.run_files import RunFileError
        from acres_gym.agents.sb3_models import load_run_config, load_run_policy

        try:  # missing, damaged or half-saved run files: one line, exit status 2
            factory, mode, config = load_run_policy(args.model)
            env_id = args.env or load_run_config(args.model)["env_id"]
        except RunFileError as exc:
            parser.exit(2, f"{parser.prog}: error: --model: {exc}\n")
        entries["learned"] = (factory, mode)
    if args.split is not None:
        args.overrides.append(f"task_options.split={args.split}")
    try:
        config = config_from_arguments(config, args)
        names = baseline_names(args.baselines, task_of(env_id, config))
        if not names and not entries:
            raise ValueError("--baselines none without --model: nothing to evaluate")
        entries = {**{name: baseline_entry(name) for name in names}, **entries}
        results = compare(entries, env_id, args.episodes, args.seed, config=config)
    except (ValueError, FileNotFoundError) as exc:
        parser.error(str(exc))
    print(f"{env_id}, {args.episodes} episodes (seeds from {args.seed}):")
    print(format_table(results))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(results, f, indent=2)


if __name__ == "__main__":
    main()
