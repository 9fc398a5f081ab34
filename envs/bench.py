"""Environment throughput against the physics: ``python -m acres_gym.envs.bench [--seconds S] [--env ID]``.

Prints one table, measured in one run of this process (random actions, the task's default config):

- the physics-only ceiling: ``RangerSim.step(ticks_per_step)`` of the environment's own simulator (its
  terrain, vehicles and control rate), called in a loop as the environment calls it, for N = 1, 16 and 64,
  as vehicle-steps per second (vehicle-ticks per second / ticks per step); and N = 64 on one thread;
- the single ``RangerEnv``: steps per second with the episodes' resets and without them (the reset time
  taken out of the clock), and the reset time itself (median and 95th percentile of the resets that ended
  the timed episodes, and of resets called back to back, which no pre-generation can hide);
- the native vector env (``gymnasium.make_vec(..., vectorization_mode="vector_entry_point")``) with N = 16
  and 64, with autoreset (``NextStep``) and without resets;
- beside each figure its ratio to the physics ceiling of the same N.

Then the median reset time of every registered id's default config, and the off-road navigation id's
rows (``navigation_rows``). The threads are set explicitly: ``--threads`` (default: all of Numba's threads)
through ``numba.set_num_threads`` for every row but the one-thread row. Figures depend on the machine and
its load (the load average is printed); compare figures of one run. Nothing here is a test.
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable

import gymnasium
import numba
import numpy as np

import acres_gym  # noqa: F401  (registers the ids)

NAVIGATION_ID = "acres_gym/RangerOffroadNavigation-v0"
PATH_ID = "acres_gym/RangerPathFollowing-v1"
WARMUP_STEPS = 50


def _ticks_per_step(env_id: str) -> int:
    """Physics ticks per control step of ``env_id``'s default config."""
    env = gymnasium.make(env_id).unwrapped
    ticks = env._batch.ticks_per_step
    env.close()
    return ticks


def physics_ceiling(env_id: str, n: int, seconds: float) -> float:
    """Vehicle-steps per second of the physics alone: ``RangerSim.step(ticks_per_step)`` of a vector env's
    own simulator (N vehicles after a seeded reset and a few random steps), in a loop."""
    venv = gymnasium.make_vec(env_id, num_envs=n, vectorization_mode="vector_entry_point",
                              autoreset_mode="Disabled")
    venv.reset(seed=0)
    rng = np.random.default_rng(0)
    for _ in range(WARMUP_STEPS):  # the vehicles moving, the kernel loaded
        venv.step(rng.uniform(-1, 1, (n, *venv.single_action_space.shape)).astype(np.float32))
    sim, ticks = venv.sim, venv.unwrapped._batch.ticks_per_step
    calls = 0
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        sim.step(ticks)
        calls += 1
    rate = calls * n / (time.perf_counter() - t0)
    venv.close()
    return rate


def single_env(env_id: str, seconds: float, resets: bool) -> tuple[float, np.ndarray]:
    """(steps per second of one ``RangerEnv``, the wall times of the resets that ended its episodes, s).
    Without ``resets`` the reset time is taken out of the clock."""
    env = gymnasium.make(env_id).unwrapped
    env.reset(seed=0)
    env.action_space.seed(0)
    actions = [env.action_space.sample() for _ in range(64)]
    steps, reset_s, paused = 0, [], 0.0
    t0 = time.perf_counter()
    while time.perf_counter() - t0 - paused < seconds:
        _, _, terminated, truncated, _ = env.step(actions[steps % 64])
        steps += 1
        if terminated or truncated:
            t_reset = time.perf_counter()
            env.reset()
            reset_s.append(time.perf_counter() - t_reset)
            if not resets:
                paused += reset_s[-1]
    rate = steps / (time.perf_counter() - t0 - paused)
    env.close()
    return rate, np.array(reset_s)


def back_to_back_resets(env_id: str, count: int) -> np.ndarray:
    """Wall times of ``count`` resets called one after the other (new seeds, no steps between), s."""
    env = gymnasium.make(env_id).unwrapped
    env.reset(seed=0)
    times = []
    for _ in range(count):
        t = time.perf_counter()
        env.reset()
        times.append(time.perf_counter() - t)
    env.close()
    return np.array(times)


def vector_env(env_id: str, n: int, seconds: float, resets: bool) -> float:
    """Vehicle-steps per second of the native vector env of N vehicles: with ``NextStep`` autoreset, or
    without resets (ended vehicles reset off the clock)."""
    venv = gymnasium.make_vec(env_id, num_envs=n, vectorization_mode="vector_entry_point",
                              autoreset_mode="NextStep" if resets else "Disabled")
    venv.reset(seed=0)
    rng = np.random.default_rng(0)
    actions = [rng.uniform(-1, 1, (n, *venv.single_action_space.shape)).astype(np.float32) for _ in range(16)]
    steps, paused = 0, 0.0
    t0 = time.perf_counter()
    while time.perf_counter() - t0 - paused < seconds:
        _, _, terminated, truncated, _ = venv.step(actions[steps % 16])
        steps += 1
        ended = terminated | truncated
        if not resets and ended.any():
            t_pause = time.perf_counter()
            venv.reset(options={"reset_mask": ended})
            paused += time.perf_counter() - t_pause
    rate = steps * n / (time.perf_counter() - t0 - paused)
    venv.close()
    return rate


def _with_threads(threads: int, fn: Callable[[], float]) -> float:
    """``fn()`` with Numba's thread count set to ``threads``, restoring the previous count."""
    before = numba.get_num_threads()
    numba.set_num_threads(threads)
    try:
        return fn()
    finally:
        numba.set_num_threads(before)


def _ms(times_s: np.ndarray) -> str:
    """'median / p95 ms (count)' of reset wall times."""
    if times_s.size == 0:
        return "no episode ended"
    return f"{1e3 * np.median(times_s):.2f} / {1e3 * np.percentile(times_s, 95):.2f} ms ({times_s.size} resets)"


def table(env_id: str, seconds: float) -> list[str]:
    """The rows of the main table (see the module docstring)."""
    ticks = _ticks_per_step(env_id)
    ceiling = {n: physics_ceiling(env_id, n, seconds) for n in (1, 16, 64)}
    one_thread = _with_threads(1, lambda: physics_ceiling(env_id, 64, seconds))
    rows = [f"{'case':<44}{'steps/s':>12}{'/ ceiling':>11}"]

    def row(name: str, rate: float, n: int) -> None:
        rows.append(f"{name:<44}{rate:>12.0f}{rate / ceiling[n]:>11.2f}")

    for n in (1, 16, 64):
        row(f"physics ceiling N = {n} ({ticks} ticks/step)", ceiling[n], n)
    row("physics N = 64 on one thread", one_thread, 64)
    with_resets, ended_resets = single_env(env_id, seconds, True)
    steps_only, more_resets = single_env(env_id, seconds, False)
    row("single env, with resets", with_resets, 1)
    row("single env, steps only", steps_only, 1)
    for n in (16, 64):
        row(f"vector env N = {n}, with resets", vector_env(env_id, n, seconds, True), n)
        row(f"vector env N = {n}, steps only", vector_env(env_id, n, seconds, False), n)
    rows.append(f"{'reset after an episode, median / p95':<44}{_ms(np.concatenate([ended_resets, more_resets]))}")
    rows.append(f"{'reset back to back, median / p95':<44}{_ms(back_to_back_resets(env_id, 30))}")
    return rows


def reset_rows(seconds: float) -> list[str]:
    """Median and p95 reset time of every registered id's default config (resets that end episodes of
    random actions; and back to back)."""
    ids = sorted(i for i, spec in gymnasium.registry.items() if i.startswith("acres_gym/") and spec.entry_point)
    rows = [f"{'reset time of every id':<44}{'after an episode':>30}{'back to back':>30}"]
    for env_id in ids:
        _, ended = single_env(env_id, seconds, True)
        rows.append(f"{env_id:<44}{_ms(ended):>30}{_ms(back_to_back_resets(env_id, 20)):>30}")
    return rows


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
            f"{'single env, with resets':<44}{single_env(NAVIGATION_ID, seconds, True)[0]:>12.0f}",
            f"{'vector env N = 64, with resets':<44}{vector_env(NAVIGATION_ID, 64, seconds, True):>12.0f}"]
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
    parser.add_argument("--threads", type=int, default=numba.config.NUMBA_NUM_THREADS,
                        help="Numba threads for the parallel kernels (default: all)")
    parser.add_argument("--skip", nargs="*", default=[], choices=["resets", "navigation"],
                        help="leave out the per-id reset rows or the navigation rows")
    args = parser.parse_args(argv)
    if not 1 <= args.threads <= numba.config.NUMBA_NUM_THREADS:
        parser.error(f"--threads {args.threads}: allowed 1 to {numba.config.NUMBA_NUM_THREADS} "
                     "(NUMBA_NUM_THREADS)")
    numba.set_num_threads(args.threads)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"{args.env}, {os.cpu_count()} CPUs, load average {load:.2f}, Numba threads {args.threads} "
          f"(threading layer {numba.config.THREADING_LAYER}), {args.seconds:g} s per figure")
    for line in table(args.env, args.seconds):
        print(line, flush=True)
    if "resets" not in args.skip:
        print()
        for line in reset_rows(args.seconds):
            print(line, flush=True)
    if "navigation" not in args.skip and args.env != NAVIGATION_ID:
        print()
        for line in navigation_rows(args.seconds):
            print(line, flush=True)


if __name__ == "__main__":
    main()
