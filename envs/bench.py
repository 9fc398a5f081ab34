"""Environment throughput: ``python -m acres_gym.envs.bench [--seconds S] [--env ID]``.

Then the off-road navigation id's rows (``navigation_rows``): steps per second single and with N = 64
(with resets), the share of a step spent building ``local_map`` and a step's wall time against a
path-following step in the same run.

Prints control steps per second of wall time (vehicle-steps per second for a vector env) at 20 Hz
control, random actions, for the single ``RangerEnv`` and the native ``RangerVectorEnv`` with N = 16 and
64. Each case is timed twice: with the episodes' resets (30 s episodes: terrain generation and
randomisation included, as training sees it) and without (the step alone: physics, reports, task,
rewards, observations). Figures depend on the machine and its load; nothing here is a test.
"""

from __future__ import annotations

import argparse
import os
import time

import gymnasium
import numpy as np

import acres_gym  # noqa: F401


def _time_single(env_id: str, seconds: float, resets: bool) -> float:
    env = gymnasium.make(env_id).unwrapped
    env.reset(seed=0)
    env.action_space.seed(0)
    actions = [env.action_space.sample() for _ in range(64)]
    steps = 0
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        _, _, terminated, truncated, _ = env.step(actions[steps % 64])
        steps += 1
        if terminated or truncated:
            if resets:
                env.reset()
            else:
                t_pause = time.perf_counter()
                env.reset()
                t0 += time.perf_counter() - t_pause
    return steps / (time.perf_counter() - t0)


def _time_vector(env_id: str, n: int, seconds: float, resets: bool) -> float:
    venv = gymnasium.make_vec(env_id, num_envs=n, vectorization_mode="vector_entry_point",
                              autoreset_mode="NextStep" if resets else "Disabled")
    venv.reset(seed=0)
    rng = np.random.default_rng(0)
    actions = [rng.uniform(-1, 1, (n, *venv.single_action_space.shape)).astype(np.float32) for _ in range(16)]
    steps = 0
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        _, _, terminated, truncated, _ = venv.step(actions[steps % 16])
        steps += 1
        ended = terminated | truncated
        if not resets and ended.any():
            t_pause = time.perf_counter()
            venv.reset(options={"reset_mask": ended})
            t0 += time.perf_counter() - t_pause
    rate = steps * n / (time.perf_counter() - t0)
    venv.close()
    return rate


NAVIGATION_ID = "acres_gym/RangerOffroadNavigation-v0"
PATH_ID = "acres_gym/RangerPathFollowing-v1"


def _step_seconds(env_id: str, n: int, seconds: float, **config) -> tuple[float, float]:
    """(wall time of one vector step of N vehicles without resets, share of it in the local_map kernel
    (0 for tasks without one)), random actions."""
    from acres_gym.envs import offroad

    kernel = offroad._fill_local_map
    spent = [0.0]

    def timed(*args):
        t = time.perf_counter()
        kernel(*args)
        spent[0] += time.perf_counter() - t

    offroad._fill_local_map = timed
    try:
        venv = gymnasium.make_vec(env_id, num_envs=n, vectorization_mode="vector_entry_point",
                                  autoreset_mode="Disabled", config=config)
        venv.reset(seed=0)
        rng = np.random.default_rng(0)
        actions = [rng.uniform(-1, 1, (n, *venv.single_action_space.shape)).astype(np.float32) for _ in range(16)]
        steps, spent[0] = 0, 0.0
        t0 = time.perf_counter()
        while time.perf_counter() - t0 < seconds:
            _, _, terminated, truncated, _ = venv.step(actions[steps % 16])
            steps += 1
            ended = terminated | truncated
            if ended.any():
                t_pause, map_before = time.perf_counter(), spent[0]
                venv.reset(options={"reset_mask": ended})
                t0 += time.perf_counter() - t_pause
                spent[0] = map_before
        wall = time.perf_counter() - t0
        venv.close()
    finally:
        offroad._fill_local_map = kernel
    return wall / steps, spent[0] / wall


def navigation_rows(seconds: float) -> list[str]:
    """The navigation id's rows: steps/s single and N = 64 with resets, the local_map share of a step (and
    the step's slow-down by the map: 1 / (1 - share)) and a step's wall time against a path-following
    step (N = 64, both at 20 Hz control) in the same run."""
    rows = [f"{NAVIGATION_ID} (10 Hz control)",
            f"{'single env, with resets':<28}{_time_single(NAVIGATION_ID, seconds, True):>22.0f}",
            f"{'vector env N = 64, resets':<28}{_time_vector(NAVIGATION_ID, 64, seconds, True):>22.0f}"]
    nav, share = _step_seconds(NAVIGATION_ID, 64, seconds, control_hz=20)
    path, _ = _step_seconds(PATH_ID, 64, seconds)
    rows.append(f"N = 64 at 20 Hz: local_map {100 * share:.1f} % of a step, which the map makes "
                f"{1.0 / (1.0 - share):.2f}x as slow as without it; a step takes {1e3 * nav:.2f} ms, a path-following "
                f"step {1e3 * path:.2f} ms ({nav / path:.2f}x: the navigation ground is mostly soil, whose tyre model "
                "costs more per tick than hard ground)")
    return rows


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=5.0, help="wall time per figure")
    parser.add_argument("--env", default="acres_gym/RangerSpeedTracking-v1")
    args = parser.parse_args(argv)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"{args.env}, 20 Hz control, {os.cpu_count()} CPUs, load average {load:.2f}")
    print(f"{'case':<28}{'steps/s with resets':>22}{'steps/s, steps only':>22}")
    rows = [("single env", lambda r: _time_single(args.env, args.seconds, r))]
    for n in (16, 64):
        rows.append((f"vector env N = {n}", lambda r, n=n: _time_vector(args.env, n, args.seconds, r)))
    for name, fn in rows:
        print(f"{name:<28}{fn(True):>22.0f}{fn(False):>22.0f}")
    if args.env != NAVIGATION_ID:
        print()
        for line in navigation_rows(args.seconds):
            print(line)


if __name__ == "__main__":
    main()
