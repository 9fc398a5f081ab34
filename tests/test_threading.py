"""Parallel kernels and processes: a process that stepped the simulator can still fork workers, and TBB is the
layer where its package is installed.

With GNU OpenMP as Numba's threading layer, a fork after a parallel kernel ran leaves the children broken
(``AsyncVectorEnv`` workers died with ``EOFError``). ``acres_gym.runtime.threading_layer`` selects a fork-safe layer.
"""

from __future__ import annotations

import os
import platform
import subprocess
import sys

import numba
import numpy as np
import pytest

from acres_gym import RangerSim
from acres_gym.dbw.reports import CAN_RESOLUTION, report_table
from acres_gym.envs.core import kinematics_array
from acres_gym.model.tick import run_ticks, run_ticks_serial
from acres_gym.runtime import threading_layer

FORK_AFTER_PARALLEL = """
import gymnasium, numpy as np, acres_gym
from acres_gym import RangerSim
sim = RangerSim({n}); sim.commands.driver_throttle_pct = 30.0; sim.step(12)        # the parallel kernel ran
env = gymnasium.make("acres_gym/RangerSpeedTracking-v3"); env.reset(seed=0); env.step(env.action_space.sample())
venv = gymnasium.make_vec("acres_gym/RangerSpeedTracking-v3", num_envs=2, vectorization_mode="async")
venv.reset(seed=0)
for _ in range(5):
    venv.step(venv.action_space.sample())
venv.close()
from stable_baselines3.common.vec_env import SubprocVecEnv
sb3 = SubprocVecEnv([lambda: gymnasium.make("acres_gym:acres_gym/RangerSpeedTracking-v3")] * 2)  # default start
sb3.reset()
for _ in range(5):
    sb3.step(np.stack([sb3.action_space.sample() for _ in range(2)]))
sb3.close()
import numba
print("ok", numba.threading_layer())
"""


def test_async_and_subprocess_vector_envs_work_after_the_parent_ran_the_parallel_kernel():
    n = threading_layer.PARALLEL_MIN_VEHICLES
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_THREADING_LAYER"}
    result = subprocess.run([sys.executable, "-c", FORK_AFTER_PARALLEL.format(n=n)], capture_output=True, text=True,
                            timeout=600, env={**env, "PYTHONWARNINGS": "ignore"})
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.split()[0] == "ok" and result.stdout.split()[1] != "omp"


def test_small_batches_run_on_the_calling_thread_and_both_kernels_agree():
    assert not threading_layer.use_parallel(1)
    assert not threading_layer.use_parallel(threading_layer.PARALLEL_MIN_VEHICLES - 1)
    n = threading_layer.PARALLEL_MIN_VEHICLES
    sims = [RangerSim(n) for _ in range(2)]
    for sim, kernel in zip(sims, (run_ticks, run_ticks_serial), strict=True):
        sim.commands.driver_throttle_pct = np.linspace(0.0, 80.0, n)
        sim.commands.driver_steering_deg = np.linspace(-200.0, 200.0, n)
        kernel(sim.params, sim.state, sim.work, sim.commands, 240, sim.terrain_args, CAN_RESOLUTION, sim._reports,
               sim._kinematics)
    by_step = RangerSim(n)  # RangerSim.step(serial=True): the calling thread's kernel whatever the batch
    by_step.commands.driver_throttle_pct = np.linspace(0.0, 80.0, n)
    by_step.commands.driver_steering_deg = np.linspace(-200.0, 200.0, n)
    by_step.step(240, serial=True)
    for field in ("position_m", "velocity_mps", "engine_rpm", "wheel_omega_rad_s", "fuel_used_kg"):
        np.testing.assert_array_equal(sims[0].state[field], sims[1].state[field])
        np.testing.assert_array_equal(sims[0].state[field], by_step.state[field])
    assert np.all(sims[0].state.position_m[1:, 0] > 0.0)                                 # they drove
    for sim in (*sims, by_step):  # the reports and body motion each kernel wrote of the state it left
        assert sim.report_table().tobytes() == report_table(sim.params, sim.state).tobytes()
        assert sim.body_kinematics().tobytes() == kinematics_array(sim.state, sim.params).tobytes()


LAYER_IN_USE = """
import numba, acres_gym
from acres_gym.runtime import threading_layer
acres_gym.RangerSim(threading_layer.PARALLEL_MIN_VEHICLES).step(2)
print(numba.threading_layer(), threading_layer.TBB_PATH)
"""


def _run(code: str, **environ) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_THREADING_LAYER"}
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600,
                          env={**env, **environ})


@pytest.mark.skipif(not (sys.platform.startswith("linux") and platform.machine() == "x86_64"),
                    reason="the tbb package is a dependency on x86-64 Linux only")
def test_the_parallel_kernel_runs_on_tbb_and_the_users_choice_wins():
    result = _run(LAYER_IN_USE)
    assert result.returncode == 0, result.stderr[-3000:]
    layer, path = result.stdout.split()
    assert layer == "tbb" and path.endswith("libtbb.so.12") and os.path.isfile(path)
    result = _run(LAYER_IN_USE, NUMBA_THREADING_LAYER="workqueue")
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.split() == ["workqueue", "None"]


@pytest.mark.skipif(not (sys.platform.startswith("linux") and platform.machine() == "x86_64"),
                    reason="the tbb package is a dependency on x86-64 Linux only")
def test_the_tbb_runtime_is_found_through_the_package_when_not_under_the_prefix(monkeypatch, tmp_path):
    """A ``--user`` or ``--prefix`` install puts the library elsewhere than ``sys.prefix/lib``: the package's
    file list finds it; without the package there is nothing to load."""
    import importlib.metadata

    monkeypatch.setattr(sys, "prefix", str(tmp_path))
    path = threading_layer._load_tbb()
    assert path is not None and path.endswith(threading_layer.TBB_LIBRARY) and os.path.isfile(path)

    def missing(name):
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "files", missing)
    assert threading_layer._load_tbb() is None


class _Clock:
    """A clock the test moves by hand (s)."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _calls(choice: threading_layer.KernelChoice, count: int, cost_s: dict[bool, float]) -> list[bool]:
    """``count`` calls: each asks ``pick`` and records the cost per vehicle-tick of the kernel it got."""
    picked = []
    for _ in range(count):
        parallel = choice.pick()
        choice.record(parallel, cost_s[parallel] * 64, 64)
        picked.append(parallel)
    return picked


def test_the_kernel_choice_follows_the_faster_kernel_and_tries_a_loser_less_often():
    assert 4.0 > threading_layer.LOSS_TO_STOP_A_TRY > threading_layer.LOSS_FOR_BACKOFF
    clock = _Clock()
    choice = threading_layer.KernelChoice(clock)
    interval, calls = threading_layer.PROBE_INTERVAL_S, threading_layer.PROBE_CALLS
    slow_parallel = {True: 4e-6, False: 1e-6}  # the parallel kernel 4x as slow (a loaded machine)
    assert _calls(choice, 5, slow_parallel) == [True] * 5 and choice.parallel  # parallel first, until a try
    clock.now += interval
    assert _calls(choice, calls, slow_parallel) == [False] * calls  # the try of one thread wins
    assert not choice.parallel and _calls(choice, 5, slow_parallel) == [False] * 5
    waits = []
    for _ in range(6):  # the losing parallel kernel: tried again after 2x, 4x, 8x, 16x the interval, then no later
        wait = 0.0
        while not _calls(choice, 1, slow_parallel)[0]:
            clock.now += 0.25 * interval
            wait += 0.25 * interval
        # a tried call over LOSS_TO_STOP_A_TRY times as costly ends the try: the next calls are one thread's
        assert _calls(choice, calls - 1, slow_parallel) == [False] * (calls - 1)
        waits.append(wait)
        assert not choice.parallel
    assert waits == pytest.approx([interval, 2 * interval, 4 * interval, 8 * interval,
                                   threading_layer.MAX_PROBE_INTERVAL_S, threading_layer.MAX_PROBE_INTERVAL_S])
    fast_parallel = {True: 0.6e-6, False: 1e-6}  # the machine idle again: the next try of parallel wins
    assert _calls(choice, calls, fast_parallel) == [False] * calls  # (a try waits for calls of the kernel in use)
    clock.now += threading_layer.MAX_PROBE_INTERVAL_S
    assert _calls(choice, 2 * calls, fast_parallel) == [True] * (2 * calls) and choice.parallel
    clock.now += interval  # and back to the short interval: one thread is tried after half a second
    assert _calls(choice, calls, fast_parallel) == [False] * calls and choice.parallel
    choice.record(True, 1.0, 0)  # a call of zero ticks tells nothing
    assert _calls(choice, 1, fast_parallel) == [True]


@pytest.fixture
def two_numba_threads():
    """Two Numba threads for the test (another test may have left the count at one), the count put back after."""
    threads = numba.get_num_threads()
    numba.set_num_threads(2)
    yield
    numba.set_num_threads(threads)


@pytest.mark.skipif(numba.config.NUMBA_NUM_THREADS < 2, reason="the parallel kernel needs two threads")
def test_a_batch_runs_on_the_calling_thread_when_the_parallel_kernel_is_slower(monkeypatch, two_numba_threads):
    """The simulator times its calls: a parallel kernel slower than one thread (here made so) is left after
    its first try, and the values are those of the calling thread's kernel alone."""
    import time

    from acres_gym import sim as sim_module

    def slow_parallel(*args):
        time.sleep(0.02)
        run_ticks(*args)

    used = []
    monkeypatch.setattr(sim_module, "run_ticks", lambda *args: (used.append(True), slow_parallel(*args)))
    monkeypatch.setattr(threading_layer, "PROBE_INTERVAL_S", 0.05)
    n = threading_layer.PARALLEL_MIN_VEHICLES
    sims = [RangerSim(n), RangerSim(n)]
    for sim in sims:
        sim.commands.driver_throttle_pct = np.linspace(0.0, 80.0, n)
    for _ in range(12):
        sims[0].step(6)
        sims[1].step(6, serial=True)
        time.sleep(0.002)
    assert not sims[0].kernel_choice.parallel
    # parallel for the calls before the first try (at least PROBE_CALLS of them), then not again for a while
    assert threading_layer.PROBE_CALLS <= len(used) <= 2 * threading_layer.PROBE_CALLS
    np.testing.assert_array_equal(sims[0].state.position_m, sims[1].state.position_m)
    assert sims[0].report_table().tobytes() == sims[1].report_table().tobytes()


def test_a_try_is_judged_by_its_own_calls_not_by_older_ones():
    """Cheap calls of the parallel kernel from before the machine got busy do not win a try its new calls lose."""
    clock = _Clock()
    choice = threading_layer.KernelChoice(clock)
    interval, calls = threading_layer.PROBE_INTERVAL_S, threading_layer.PROBE_CALLS
    _calls(choice, calls, {True: 0.5e-6, False: 0.1e-6})
    clock.now += interval
    assert _calls(choice, calls, {True: 0.5e-6, False: 0.1e-6}) == [False] * calls and not choice.parallel
    busy = {True: 10e-6, False: 1e-6}  # both slower now, the parallel kernel far more (older calls: 0.5e-6)
    _calls(choice, calls, busy)
    clock.now += interval
    assert _calls(choice, 2, busy) == [True, False] and not choice.parallel


def test_the_parallel_kernel_must_be_worth_its_second_core():
    """Faster, but by less than PARALLEL_WORTH: one thread is used (the other core is left to other work)."""
    clock = _Clock()
    choice = threading_layer.KernelChoice(clock)
    calls, worth = threading_layer.PROBE_CALLS, threading_layer.PARALLEL_WORTH
    barely = {True: 1e-6 / (0.9 * worth), False: 1e-6}
    _calls(choice, calls, barely)
    clock.now += threading_layer.PROBE_INTERVAL_S
    assert _calls(choice, calls, barely) == [False] * calls and not choice.parallel
    clearly = {True: 1e-6 / (1.1 * worth), False: 1e-6}  # while one thread is in use, parallel is tried and wins
    _calls(choice, calls, clearly)
    clock.now += threading_layer.PROBE_INTERVAL_S
    assert _calls(choice, calls, clearly) == [True] * calls and choice.parallel
