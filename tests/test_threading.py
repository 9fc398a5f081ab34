"""Parallel kernels and processes: a process that stepped the simulator can still fork workers, and TBB is the
layer where its package is installed.

With GNU OpenMP as Numba's threading layer, a fork after a parallel kernel ran leaves the children broken
(``AsyncVectorEnv`` workers died with ``EOFError``). ``acres_gym.model.threading_layer`` selects a fork-safe layer.
"""

from __future__ import annotations

import os
import platform
import subprocess
import sys

import numpy as np
import pytest

from acres_gym import RangerSim
from acres_gym.dbw.reports import CAN_RESOLUTION, report_table
from acres_gym.envs.core import kinematics_array
from acres_gym.model import threading_layer
from acres_gym.model.tick import run_ticks, run_ticks_serial

FORK_AFTER_PARALLEL = """
import gymnasium, numpy as np, acres_gym
from acres_gym import RangerSim
sim = RangerSim({n}); sim.commands.driver_throttle_pct = 30.0; sim.step(12)        # the parallel kernel ran
env = gymnasium.make("acres_gym/RangerSpeedTracking-v2"); env.reset(seed=0); env.step(env.action_space.sample())
venv = gymnasium.make_vec("acres_gym/RangerSpeedTracking-v2", num_envs=2, vectorization_mode="async")
venv.reset(seed=0)
for _ in range(5):
    venv.step(venv.action_space.sample())
venv.close()
from stable_baselines3.common.vec_env import SubprocVecEnv
sb3 = SubprocVecEnv([lambda: gymnasium.make("acres_gym:acres_gym/RangerSpeedTracking-v2")] * 2)  # default start
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
from acres_gym.model import threading_layer
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
