"""Watch a policy drive an episode in the pygame window, or save its frames as PNG files.

``python -m acres_gym.agents.watch`` shows the vehicle's ULC with pure-pursuit steering on
``acres_gym/RangerPathFollowing-v3``; ``--policy`` takes a baseline name (``ulc_pure_pursuit``,
``pedal_pid``), ``random`` (uniform actions from the action space, seeded), ``pretrained`` (the policy shipped
for ``--env``, run through the vehicle runtime: ``acres_gym.agents.pretrained``) or the ``model.zip`` of a
``train.py`` run, whose environment and task config are then used (``--env`` overrides the id); ``--model``
is another name of ``--policy``. Episode
``k`` is seeded ``seed + k``, as in ``acres_gym.agents.evaluate``, so what you watch is what the evaluation scored.
``--config`` and ``--set key.sub=value`` change the task config as in ``acres_gym.agents.evaluate``.

The window runs in real time (the control rate); closing it stops. ``--frames DIR`` draws off screen
instead (no display needed) and writes ``DIR/episode<k>_<step>.png``, the frame after the reset and one
after every step. Each episode ends with a line of the figures its task declares (the path tasks: speed
and lateral RMSE, fuel and distance; navigation: whether it reached the goal, the time to it, fuel and the
distance left to it) and how it ended. ``--split test`` watches the navigation task's held-out terrain
distribution, as in ``acres_gym.agents.evaluate``.

In the window, M shows the next channel of the navigation task's ``local_map`` inset, 1-9 a channel by
number.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

import acres_gym  # noqa: F401  (registers the ids)
from acres_gym.agents.baselines import BASELINES, baseline_action_mode, make_baseline
from acres_gym.agents.evaluate import add_config_arguments, columns, config_from_arguments, info_of
from acres_gym.agents.pretrained import PRETRAINED
from acres_gym.configuration import seed_argument
from acres_gym.envs.config import load_config
from acres_gym.envs.tasks import Task, task_class

DEFAULT_ENV = "acres_gym/RangerPathFollowing-v3"


def resolve_policy(policy: str, env_id: str | None, seed: int = 0) -> tuple[str, Callable, str | None, dict]:
    """``(env id, policy factory, action mode or None, env config)`` for a policy named on the command line.

    ``policy`` is a baseline name, ``random``, ``pretrained`` or the path of a ``model.zip`` saved by
    ``train.py``.
    """
    if policy == PRETRAINED:
        from acres_gym.agents.pretrained import pretrained_policy

        env_id = env_id or DEFAULT_ENV
        return (env_id, *pretrained_policy(env_id))
    if policy in BASELINES:
        return env_id or DEFAULT_ENV, (lambda venv: make_baseline(policy, venv)), baseline_action_mode(policy), {}
    if policy == "random":
        def random_factory(venv):
            venv.action_space.seed(seed)
            return lambda _obs: venv.action_space.sample()

        return env_id or DEFAULT_ENV, random_factory, None, {}
    path = Path(policy)
    if path.suffix == ".zip" or path.exists():
        from acres_gym.agents.sb3_models import load_run_config, load_run_policy

        factory, mode, config = load_run_policy(path)
        return env_id or load_run_config(path)["env_id"], factory, mode, dict(config)
    raise ValueError(f"--policy {policy!r}: expected one of {', '.join(BASELINES)}, 'random', 'pretrained' or "
                     "the model.zip of a train.py run")


def _save_png(frame: np.ndarray, path: Path) -> None:
    import pygame

    pygame.image.save(pygame.surfarray.make_surface(np.ascontiguousarray(frame.transpose(1, 0, 2))), str(path))


def _end_reason(task: type[Task], info: Mapping[str, Any], truncated: bool) -> str:
    flags = [flag for flag in task.scoring.end_flags if flag in info and bool(info[flag][0])]
    return ", ".join(flags) if flags else ("time limit" if truncated else "stopped")


def summary_line(task: type[Task], row: Mapping[str, Any]) -> str:
    """An episode's line: its return and steps, the figures its task declares, and how it ended."""
    figures = [f"{label} {fmt.format(row[key])}" for label, key, fmt in columns(task)[1:-1]
               if key in row and key not in task.scoring.failures and key != "failed"]
    return (f"episode {row['episode']} (seed {row['seed']}): return {row['episode_return']:.1f} over "
            f"{row['steps']} steps, " + ", ".join(figures) + f", ended: {row['end']}")


def watch(env_id: str = DEFAULT_ENV, policy_factory: Callable | None = None, action_mode: str | None = None,
          config: Mapping | None = None, episodes: int = 1, seed: int = 0, frames_dir: str | Path | None = None,
          max_steps: int | None = None, printer: Callable[[str], None] | None = print) -> list[dict[str, Any]]:
    """Run ``episodes`` episodes of one vehicle, shown in a window or saved as frames (module docstring).

    ``policy_factory(venv) -> policy`` as in ``acres_gym.agents.evaluate`` (default: the ULC with pure pursuit);
    ``max_steps`` cuts each episode short. Returns one dict of figures per episode.
    """
    import gymnasium

    if episodes < 1:
        raise ValueError(f"episodes = {episodes}: expected at least 1")
    if max_steps is not None and max_steps < 1:
        raise ValueError(f"max_steps = {max_steps}: expected at least 1 (or None: whole episodes)")
    if policy_factory is None:
        policy_factory = lambda venv: make_baseline("ulc_pure_pursuit", venv)  # noqa: E731
        action_mode = action_mode or baseline_action_mode("ulc_pure_pursuit")
    env_config = load_config(config)
    if action_mode is not None:
        env_config["action_mode"] = action_mode
    out = Path(frames_dir) if frames_dir is not None else None
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
    render_mode = "rgb_array" if out is not None else "human"
    venv = gymnasium.make_vec(env_id, num_envs=1, vectorization_mode="vector_entry_point", config=env_config,
                              render_mode=render_mode, autoreset_mode="Disabled")
    results: list[dict[str, Any]] = []
    try:
        task = task_class(venv.unwrapped.config["task"])
        policy = policy_factory(venv)
        for k in range(episodes):
            obs, info = venv.reset(seed=seed + k)
            if hasattr(policy, "reset"):
                policy.reset(np.ones(1, dtype=bool))
            step, ended, truncated = 0, False, False
            if out is not None:
                _save_png(venv.render()[0], out / f"episode{k}_{step:05d}.png")
            while not ended and not venv.window_closed and (max_steps is None or step < max_steps):
                obs, _reward, term, trunc, info = venv.step(policy(obs))
                step += 1
                ended, truncated = bool(term[0] or trunc[0]), bool(trunc[0])
                if out is not None:
                    _save_png(venv.render()[0], out / f"episode{k}_{step:05d}.png")
            row: dict[str, Any] = task.episode_row(info_of(info, 0), truncated)
            row.update(episode=k, seed=seed + k, steps=step,
                       end=_end_reason(task, info, truncated) if ended else "stopped")
            results.append(row)
            if printer is not None:
                printer(summary_line(task, row))
            if venv.window_closed:
                break
    finally:
        venv.close()
    return results


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--env", default=None, help=f"a registered id (default: the model's, else {DEFAULT_ENV})")
    parser.add_argument("--policy", "--model", dest="policy", default="ulc_pure_pursuit",
                        help=f"{', '.join(BASELINES)}, random, pretrained (the policy shipped for --env) or "
                             "runs/<run>/model.zip")
    parser.add_argument("--episodes", type=int, default=1)
    parser.add_argument("--seed", type=seed_argument, default=0, help="episode k is seeded seed + k")
    parser.add_argument("--frames", default=None, help="save PNG frames in this directory instead of a window")
    parser.add_argument("--max-steps", dest="max_steps", type=int, default=None, help="cut episodes short")
    parser.add_argument("--split", choices=("train", "test"), default=None,
                        help="the navigation task's terrain distribution (task_options.split): test = held out")
    add_config_arguments(parser)
    args = parser.parse_args(argv)
    if args.split is not None:
        args.overrides.append(f"task_options.split={args.split}")
    from acres_gym.render import NoDisplayError

    try:
        env_id, factory, mode, config = resolve_policy(args.policy, args.env, args.seed)
        config = config_from_arguments(config, args)
        watch(env_id, factory, mode, config, episodes=args.episodes, seed=args.seed, frames_dir=args.frames,
              max_steps=args.max_steps)
    except (ValueError, FileNotFoundError, NoDisplayError) as exc:
        parser.error(str(exc))


if __name__ == "__main__":
    main()
