"""Evaluation of policies over seeded episodes, and a baseline-against-learned comparison.

``evaluate(policy_factory, env_id, episodes=8, seed=0)`` runs ``episodes`` episodes (episode ``k`` seeded
``seed + k``, as ``env.reset(seed=seed + k)`` of a single environment) in native vector environments of up
to ``batch`` vehicles, each vehicle's first episode counting, and returns the mean and per-episode
figures: return, speed RMSE (m/s, true forward speed against the target), lateral RMSE (m, rear-axle
midpoint from the path), fuel per km (g/km; and L/100 km), distance, failures (rollover, divergence, off
course or off terrain) and the share of episodes that ended early.

A policy factory is ``callable(venv) -> policy`` with ``policy(obs) -> actions`` for a batch and an optional
``policy.reset(rows)``: ``lambda venv: UlcPurePursuit(venv)``, ``SB3Policy.factory(model, ...)`` or, for an
RLlib checkpoint, ``acres_gym.agents.rllib.rllib_policy_factory(checkpoint_dir)``.

``compare({name: (factory, action_mode or None)}, env_id, ...)`` evaluates several on the same seeds and
``format_table`` prints them.

Command line: ``python -m acres_gym.agents.evaluate --env acres_gym/RangerSpeedTracking-v2 --episodes 8`` compares
the two classical baselines. On ``acres_gym/RangerOffroadNavigation-v0`` it compares ``straight_line`` and
``terrain_planner`` and reports, per episode and as a mean, ``success``, ``time_to_goal_s`` (NaN when not
reached; the mean over the episodes that reached it), ``fuel_used_g``, ``no_go``, ``stuck`` and
``rolled_over`` (``--json`` writes them all); ``--split test`` evaluates the held-out terrain distribution.
``--model runs/x/model.zip`` adds a trained model, ``--model runs/x/checkpoint`` an RLlib checkpoint of
``agents.rllib_train`` (the environment and its config then default to the ones it was trained on).
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
from acres_gym.agents.baselines import NAVIGATION_BASELINES, baseline_action_mode, make_baseline
from acres_gym.envs.config import dotted_overrides, load_config, merge_configs

FIGURES = ("episode_return", "episode_steps", "speed_rmse_mps", "lateral_rmse_m", "fuel_g_per_km", "distance_m",
           "fuel_used_g")
FUEL_DENSITY_KG_L = 0.745


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
    per_episode: list[dict[str, float]] = []
    t0 = time.perf_counter()
    steps = 0
    for start in range(0, episodes, batch):
        n = min(batch, episodes - start)
        venv = make_vector_env(env_id, n, config, action_mode)
        try:
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
                    row = {k: float(info[k][i]) for k in FIGURES}
                    for flag in ("rolled_over", "diverged", "off_course", "off_terrain", "path_complete"):
                        row[flag] = float(info[flag][i])
                    row["failed"] = float(max(row["rolled_over"], row["diverged"], row["off_course"],
                                              row["off_terrain"]))
                    row["early_end"] = float(bool(terminated[i]))
                    row.update(navigation_row(info, i))
                    row["seed"] = seed + start + int(i)
                    results[i] = row
                done |= ended
                if hasattr(policy, "reset") and ended.any():
                    policy.reset(ended)
            per_episode.extend(r for r in results if r is not None)
        finally:
            venv.close()
    mean = {k: float(np.mean([r[k] for r in per_episode])) for k in per_episode[0] if k != "seed"}
    if "time_to_goal_s" in mean:  # NaN where the goal was not reached: the mean over the episodes that reached it
        times = [r["time_to_goal_s"] for r in per_episode if math.isfinite(r["time_to_goal_s"])]
        mean["time_to_goal_s"] = float(np.mean(times)) if times else math.nan
    mean["l_per_100km"] = mean["fuel_g_per_km"] / 1e3 / FUEL_DENSITY_KG_L * 100.0
    return {"episodes": episodes, "seed": seed, "mean": mean, "per_episode": per_episode,
            "wall_s": time.perf_counter() - t0, "steps": steps}


NAVIGATION_FIGURES = ("success", "time_to_goal_s", "no_go", "stuck", "ground_cause", "goal_distance_m")


def navigation_row(info: Mapping[str, Any], i: int) -> dict[str, float]:
    """The navigation task's figures of vehicle ``i`` at its episode's end (empty for the path tasks):
    ``success`` (1 when the goal was reached), ``time_to_goal_s`` (NaN when not reached), ``no_go``,
    ``stuck``, ``ground_cause`` (why it ended short of the goal outside no-go areas: 1 soil, 2 grade,
    3 other, 4 high-centred) and the remaining ``goal_distance_m``."""
    if "goal_reached" not in info:
        return {}
    success = bool(info["goal_reached"][i])
    return {"success": float(success), "time_to_goal_s": float(info["time_s"][i]) if success else math.nan,
            "no_go": float(info["no_go"][i]), "stuck": float(info["stuck"][i]),
            "ground_cause": float(info["ground_cause"][i]), "goal_distance_m": float(info["goal_distance_m"][i])}


def format_navigation_table(results: Mapping[str, Mapping[str, Any]]) -> str:
    """A printable table of navigation results: success rate, time to goal, fuel, end causes."""
    cols = (("success", "success", "{:.2f}"), ("time to goal s", "time_to_goal_s", "{:.1f}"),
            ("fuel g", "fuel_used_g", "{:.1f}"), ("no-go", "no_go", "{:.2f}"), ("stuck", "stuck", "{:.2f}"),
            ("rolled over", "rolled_over", "{:.2f}"))
    lines = ["policy".ljust(18) + "".join(c[0].rjust(16) for c in cols)]
    for name, r in results.items():
        lines.append(name.ljust(18) + "".join((fmt.format(r["mean"][key]) if math.isfinite(r["mean"][key])
                                               else "nan").rjust(16) for _, key, fmt in cols))
    return "\n".join(lines)


def compare(entries: Mapping[str, tuple[Callable, str | None]], env_id: str, episodes: int = 8, seed: int = 0,
            config: Mapping | None = None, batch: int = 16) -> dict[str, dict[str, Any]]:
    """Evaluate several policies on the same seeds: ``{name: (factory, action_mode or None)}``."""
    return {name: evaluate(factory, env_id, episodes, seed, config, mode, batch)
            for name, (factory, mode) in entries.items()}


def baseline_entry(name: str) -> tuple[Callable, str]:
    """``(factory, action mode)`` of a classical baseline for ``compare``."""
    return (lambda venv: make_baseline(name, venv)), baseline_action_mode(name)


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
    """A printable table of ``compare`` results (means over the episodes)."""
    cols = (("return", "episode_return", "{:.1f}"), ("speed RMSE m/s", "speed_rmse_mps", "{:.3f}"),
            ("lateral RMSE m", "lateral_rmse_m", "{:.3f}"), ("fuel g/km", "fuel_g_per_km", "{:.1f}"),
            ("L/100km", "l_per_100km", "{:.2f}"), ("distance m", "distance_m", "{:.1f}"),
            ("failed", "failed", "{:.2f}"), ("steps", "episode_steps", "{:.0f}"))
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
                        help="a registered id (default: the model's, else acres_gym/RangerSpeedTracking-v2)")
    parser.add_argument("--episodes", type=int, default=8)
    parser.add_argument("--seed", type=int, default=100_000)
    parser.add_argument("--model", default=None, help="a model.zip saved by train.py (its run directory), or an "
                                                      "RLlib checkpoint directory of agents.rllib_train")
    parser.add_argument("--json", default=None, help="also write the results as JSON")
    parser.add_argument("--split", choices=("train", "test"), default=None,
                        help="the navigation task's terrain distribution (task_options.split): test = held out")
    add_config_arguments(parser)
    args = parser.parse_args(argv)
    env_id, config, entries = args.env or "acres_gym/RangerSpeedTracking-v2", {}, {}
    from acres_gym.agents.rllib import is_rllib_checkpoint  # imports Ray only when a checkpoint is loaded

    if args.model and is_rllib_checkpoint(args.model):
        from acres_gym.agents.rllib import load_checkpoint_policy, run_config_of

        factory, mode, config = load_checkpoint_policy(args.model)
        env_id = args.env or run_config_of(args.model)["env_id"]
        entries["learned"] = (factory, mode)
    elif args.model:
        from acres_gym.agents.sb3_models import load_run_config, load_run_policy

        factory, mode, config = load_run_policy(args.model)
        env_id = args.env or load_run_config(args.model)["env_id"]
        entries["learned"] = (factory, mode)
    names = NAVIGATION_BASELINES if "Navigation" in env_id else ("ulc_pure_pursuit", "pedal_pid")
    entries = {**{name: baseline_entry(name) for name in names}, **entries}
    if args.split is not None:
        args.overrides.append(f"task_options.split={args.split}")
    try:
        results = compare(entries, env_id, args.episodes, args.seed, config=config_from_arguments(config, args))
    except (ValueError, FileNotFoundError) as exc:
        parser.error(str(exc))
    print(f"{env_id}, {args.episodes} episodes (seeds from {args.seed}):")
    print(format_navigation_table(results) if "success" in next(iter(results.values()))["mean"]
          else format_table(results))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(results, f, indent=2)


if __name__ == "__main__":
    main()
