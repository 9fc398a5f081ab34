"""Environment throughput against the physics: ``python -m acres_gym.envs.bench [--seconds S] [--env ID]``.

Prints one table, measured in one run of this process (random actions, the task's default config):

- the physics-only ceiling: ``RangerSim.step(ticks_per_step)`` of the environments' own simulators (their
  terrain, vehicles and control rate), called in a loop as the environment calls it, for N = 1, 16 and 64,
  as vehicle-steps per second (vehicle-ticks per second / ticks per step); and N = 64 on one thread. The
  loop starts from the vehicles' states in the environment and goes back to them every
  ``PHYSICS_RESTORE_STEPS`` calls (off the clock), and the environment gets them back after the slice: left
  running for a whole slice, the vehicles drive off their terrain, where the physics costs far less than on
  the ground the episodes keep them on;
- the single ``RangerEnv``: steps per second with the episodes' resets and without them (the reset time
  taken out of the clock), and the reset time itself: median and 95th percentile of the resets that ended
  the timed episodes (the next episode prepared in the background while the last one ran,
  ``acres_gym.envs.pregen``), and of resets called back to back (nothing prepared: the draw itself);
- the native vector env (``gymnasium.make_vec(..., vectorization_mode="vector_entry_point")``) with N = 16
  and 64, with autoreset (``NextStep``) and without resets;
- beside each figure its ratio to the physics ceiling of the same N;
- which kernel the N = 16 and 64 ceilings' simulators ran at the end: ``RangerSim.step`` runs the one it
  measures to be faster, the parallel one unless other processes keep the cores busy.

The machine's load changes from second to second, so every figure is timed in ``--rounds`` slices and the
rounds interleave the figures: each sees the same load. Then the reset times of every registered id's
default config, and the off-road navigation id's rows (``navigation_rows``). Threads are set explicitly:
``--threads`` (default: all of Numba's threads, ``NUMBA_NUM_THREADS``) through ``numba.set_num_threads``
for every row but the one-thread row. Compare figures of one run; nothing here is a test.
"""

from __future__ import annotations

import argparse
import os
import time
from abc import ABC, abstractmethod

import gymnasium
import numba
import numpy as np

import acres_gym  # noqa: F401  (registers the ids)
from acres_gym.runtime import threading_layer  # noqa: F401  (the simulator's layer, before set_num_threads starts one)
from acres_gym.runtime.threading_layer import use_parallel

NAVIGATION_ID = "acres_gym/RangerOffroadNavigation-v2"
PATH_ID = "acres_gym/RangerPathFollowing-v3"


class Case(ABC):
    """One figure of the table, timed in slices (``run(seconds)``) that the rounds interleave with the other
    figures' slices, so that every figure sees the same load of the machine."""

    def __init__(self, name: str, n: int) -> None:
        self.name, self.n = name, n
        self.vehicle_steps = 0
        self.wall_s = 0.0
        self.reset_s: list[float] = []

    @property
    def rate(self) -> float:
        """Vehicle-steps per second over all slices."""
        return self.vehicle_steps / self.wall_s if self.wall_s > 0.0 else float("nan")

    @abstractmethod
    def run(self, seconds: float) -> None:
        """Time one slice of about ``seconds`` and add it to the totals."""

    def close(self) -> None:  # noqa: B027  (a figure without an environment of its own has nothing to release)
        """Release the environment."""


PHYSICS_RESTORE_STEPS = 40
"""Control steps (2 s at 20 Hz) after which the physics ceiling's loop puts its vehicles back to the states it
started from (see the module docstring)."""


class PhysicsCase(Case):
    """``RangerSim.step(ticks_per_step)`` of an environment's own simulator (its terrain, vehicles and control
    rate) in a loop, on ``threads`` Numba threads (None: the bench's setting), from the environment's present
    states: every ``PHYSICS_RESTORE_STEPS`` calls the state and command records go back to those of the slice's
    start (off the clock), and after the slice the environment has them back as they were."""

    def __init__(self, name: str, sim, ticks: int, threads: int | None = None) -> None:
        super().__init__(name, sim.n)
        self.sim, self.ticks, self.threads = sim, ticks, threads

    def run(self, seconds: float) -> None:
        before = numba.get_num_threads()
        if self.threads is not None:
            numba.set_num_threads(self.threads)
        state, commands = self.sim.state_plain, self.sim.commands_plain
        start = state.copy(), commands.copy()
        try:
            calls, paused = 0, 0.0
            t0 = time.perf_counter()
            while time.perf_counter() - t0 - paused < seconds:
                self.sim.step(self.ticks)
                calls += 1
                if calls % PHYSICS_RESTORE_STEPS == 0:
                    t_pause = time.perf_counter()
                    state[...], commands[...] = start
                    paused += time.perf_counter() - t_pause
            self.wall_s += time.perf_counter() - t0 - paused
            self.vehicle_steps += calls * self.n
        finally:
            state[...], commands[...] = start
            numba.set_num_threads(before)


class SingleCase(Case):
    """One ``RangerEnv`` stepped with random actions; an ended episode is reset and the reset timed.
    ``steps_only`` takes the reset time out of the clock, else the clock runs until the background draws
    the slice's resets started are done (their cost is this case's)."""

    def __init__(self, env, steps_only: bool = False, name: str = "") -> None:
        super().__init__(name, 1)
        self.env, self.steps_only = env, steps_only
        env.action_space.seed(0)
        self.actions = [env.action_space.sample() for _ in range(64)]
        self.count = 0

    def run(self, seconds: float) -> None:
        env, paused = self.env, 0.0
        t0 = time.perf_counter()
        while time.perf_counter() - t0 - paused < seconds:
            _, _, terminated, truncated, _ = env.step(self.actions[self.count % 64])
            self.count += 1
            if terminated or truncated:
                t_reset = time.perf_counter()
                env.reset()
                self.reset_s.append(time.perf_counter() - t_reset)
                if self.steps_only:
                    _settle(env)
                    paused += time.perf_counter() - t_reset
        if not self.steps_only:
            _settle(env)  # the next episodes the slice's resets set drawing: on this case's clock
        self.wall_s += time.perf_counter() - t0 - paused
        self.vehicle_steps = self.count

    def close(self) -> None:
        self.env.close()


class VectorCase(Case):
    """The native vector env of N vehicles with random actions: ``NextStep`` autoreset (the clock running
    until the background draws the slice's resets started are done), or (``steps_only``) ended vehicles
    reset off the clock."""

    def __init__(self, venv, steps_only: bool, name: str) -> None:
        super().__init__(name, venv.num_envs)
        self.venv, self.steps_only = venv, steps_only
        rng = np.random.default_rng(0)
        shape = (self.n, *venv.single_action_space.shape)
        self.actions = [rng.uniform(-1, 1, shape).astype(np.float32) for _ in range(16)]
        self.count = 0

    def run(self, seconds: float) -> None:
        venv, paused = self.venv, 0.0
        t0 = time.perf_counter()
        while time.perf_counter() - t0 - paused < seconds:
            _, _, terminated, truncated, _ = venv.step(self.actions[self.count % 16])
            self.count += 1
            ended = terminated | truncated
            if self.steps_only and ended.any():
                t_pause = time.perf_counter()
                venv.reset(options={"reset_mask": ended})
                _settle(venv)
                paused += time.perf_counter() - t_pause
        if not self.steps_only:
            _settle(venv)  # the next episodes the slice's resets set drawing: on this case's clock
        self.wall_s += time.perf_counter() - t0 - paused
        self.vehicle_steps = self.count * self.n

    def close(self) -> None:
        self.venv.close()


def _settle(env) -> None:
    """Wait for the episodes an environment is drawing in the background (``acres_gym.envs.pregen``; the
    code before it had none)."""
    pregen = getattr(env.unwrapped, "pregen", None)
    if pregen is not None:
        pregen.wait()


def _vector(env_id: str, n: int, resets: bool):
    venv = gymnasium.make_vec(env_id, num_envs=n, vectorization_mode="vector_entry_point",
                              autoreset_mode="NextStep" if resets else "Disabled")
    venv.reset(seed=0)
    return venv


def back_to_back_resets(env_id: str, count: int) -> np.ndarray:
    """Wall times of ``count`` resets called one after the other (new seeds, no steps between: the
    episode cannot have been prepared in the background), s."""
    env = gymnasium.make(env_id).unwrapped
    if hasattr(env, "pregen"):
        env.pregen.max_pending = 0
    env.reset(seed=0)
    times = []
    for _ in range(count):
        t = time.perf_counter()
        env.reset()
        times.append(time.perf_counter() - t)
    env.close()
    return np.array(times)


def _ms(times_s) -> str:
    """'median / p95 ms (count)' of reset wall times."""
    times_s = np.asarray(times_s)
    if times_s.size == 0:
        return "no episode ended"
    return f"{1e3 * np.median(times_s):.2f} / {1e3 * np.percentile(times_s, 95):.2f} ms ({times_s.size} resets)"


def table(env_id: str, seconds: float, rounds: int) -> list[str]:
    """The rows of the main table (see the module docstring): every figure timed in ``rounds`` slices of
    ``seconds / rounds``, the rounds interleaving the figures."""
    single, single_steps = gymnasium.make(env_id).unwrapped, gymnasium.make(env_id).unwrapped
    single.reset(seed=0)
    single_steps.reset(seed=0)
    ticks = single._batch.ticks_per_step
    vec = {(n, r): _vector(env_id, n, r) for n in (16, 64) for r in (True, False)}
    ceilings = {1: PhysicsCase("physics ceiling N = 1", single_steps.sim, ticks)}
    for n in (16, 64):
        ceilings[n] = PhysicsCase(f"physics ceiling N = {n}", vec[n, False].sim, ticks)
    cases = [ceilings[1], ceilings[16], ceilings[64],
             PhysicsCase("physics N = 64 on one thread", vec[64, False].sim, ticks, threads=1),
             SingleCase(single, name="single env, with resets"),
             SingleCase(single_steps, steps_only=True, name="single env, steps only")]
    for n in (16, 64):
        cases += [VectorCase(vec[n, True], False, f"vector env N = {n}, with resets"),
                  VectorCase(vec[n, False], True, f"vector env N = {n}, steps only")]
    for case in cases[4:]:  # a few steps first: every kernel loaded, the vehicles moving
        case.run(0.05)
        case.vehicle_steps, case.wall_s, case.reset_s = 0, 0.0, []
        case.count = 0
    for env in (single, single_steps, *vec.values()):  # the first episodes' background draws, off the clock
        _settle(env)
    for _ in range(rounds):
        for case in cases:
            case.run(seconds / rounds)
    rows = [f"{'case (' + str(ticks) + ' physics ticks per step)':<44}{'steps/s':>12}{'/ ceiling':>11}"]
    for case in cases:
        rows.append(f"{case.name:<44}{case.rate:>12.0f}{case.rate / ceilings[case.n].rate:>11.2f}")
    used = [f"N = {n} {'parallel' if use_parallel(n) and ceilings[n].sim.kernel_choice.parallel else 'one thread'}"
            for n in (16, 64)]
    rows.append(f"kernel the physics ceilings ran at the end (RangerSim.kernel_choice): {', '.join(used)}")
    ended = cases[4].reset_s + cases[5].reset_s
    rows.append(f"{'reset after an episode, median / p95':<44}{_ms(ended)}")
    rows.append(f"{'reset back to back, median / p95':<44}{_ms(back_to_back_resets(env_id, 30))}")
    for case in cases:
        case.close()
    return rows


def single_env(env_id: str, seconds: float, resets: bool = True) -> tuple[float, np.ndarray]:
    """(steps per second of one ``RangerEnv``, wall times of the resets that ended its episodes, s)."""
    env = gymnasium.make(env_id).unwrapped
    env.reset(seed=0)
    case = SingleCase(env, steps_only=not resets)
    case.run(seconds)
    case.close()
    return case.rate, np.array(case.reset_s)


def vector_env(env_id: str, n: int, seconds: float, resets: bool) -> float:
    """Vehicle-steps per second of the native vector env of N vehicles (autoreset, or without resets)."""
    case = VectorCase(_vector(env_id, n, resets), not resets, "")
    case.run(seconds)
    case.close()
    return case.rate


def reset_rows(seconds: float) -> list[str]:
    """Median and p95 reset time of every registered id's default config (resets that end episodes of
    random actions; and back to back)."""
    ids = sorted(i for i, spec in gymnasium.registry.items() if i.startswith("acres_gym/") and spec.entry_point)
    rows = [f"{'reset time of every id':<44}{'after an episode':>30}{'back to back':>30}"]
    for env_id in ids:
        _, ended = single_env(env_id, seconds)
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
                f"step {1e3 * path:.2f} ms ({nav / path:.2f}x: the map, and the soil under most of the navigation "
                "ground, whose tyre model costs more per tick than hard ground)")
    return rows


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=5.0, help="wall time per figure")
    parser.add_argument("--env", default="acres_gym/RangerSpeedTracking-v3")
    parser.add_argument("--threads", type=int, default=numba.config.NUMBA_NUM_THREADS,
                        help="Numba threads for the parallel kernels (default: all)")
    parser.add_argument("--rounds", type=int, default=5, help="slices per figure, interleaved (default 5)")
    parser.add_argument("--skip", nargs="*", default=[], choices=["resets", "navigation"],
                        help="leave out the per-id reset rows or the navigation rows")
    args = parser.parse_args(argv)
    if not 1 <= args.threads <= numba.config.NUMBA_NUM_THREADS:
        parser.error(f"--threads {args.threads}: allowed 1 to {numba.config.NUMBA_NUM_THREADS} "
                     "(NUMBA_NUM_THREADS)")
    if args.rounds < 1 or args.seconds <= 0.0:
        parser.error("--rounds must be >= 1 and --seconds > 0")
    numba.set_num_threads(args.threads)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"{args.env}, {os.cpu_count()} CPUs, load average {load:.2f}, Numba threads {args.threads}, "
          f"{args.seconds:g} s per figure in {args.rounds} interleaved rounds")
    for line in table(args.env, args.seconds, args.rounds):
        print(line, flush=True)
    print(f"threading layer {numba.threading_layer()}, load average at the end {os.getloadavg()[0]:.2f}")
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
