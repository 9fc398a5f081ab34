"""The C allocator's thresholds (``acres_gym.runtime.allocator``): freed terrain memory is reused, not faulted in
afresh on every draw, and the user's own settings win."""

from __future__ import annotations

import platform
import subprocess
import sys

import pytest

from acres_gym.runtime import allocator

GLIBC = sys.platform.startswith("linux") and platform.libc_ver()[0] == "glibc"

COLD_RESETS = """
import resource
import gymnasium as gym
import acres_gym
from acres_gym.runtime import allocator

env = gym.make("acres_gym/RangerPathFollowing-v3").unwrapped
env.reset(seed=0)
env.unwrapped._batch.pregen.max_pending = 0
for seed in range(3):
    env.reset(seed=seed)
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for seed in range(10):
    env.reset(seed=100 + seed)
print(allocator.TUNED, (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) / 10)
"""


@pytest.mark.skipif(not GLIBC, reason="the thresholds are glibc's")
def test_a_cold_reset_reuses_freed_memory():
    """Ten resets of a caller-chosen seed (no episode prepared) after three: with the thresholds set, the
    draws' arrays come from memory the earlier draws freed. Without them, each reset of the 300 m grid faulted
    in about 700 pages (measured on Linux 6.x, glibc 2.36); the bound leaves room for the heap to grow."""
    out = subprocess.run([sys.executable, "-c", COLD_RESETS], capture_output=True, text=True, check=True,
                         env={**_clean_environment(), "NUMBA_NUM_THREADS": "1"})
    tuned, faults_per_reset = out.stdout.split()
    assert tuned == "True"
    assert float(faults_per_reset) < 50.0


@pytest.mark.parametrize("variable, value", [("ACRES_GYM_MALLOC", "default"),
                                             ("MALLOC_TRIM_THRESHOLD_", "131072"),
                                             ("MALLOC_MMAP_THRESHOLD_", "131072"),
                                             ("GLIBC_TUNABLES", "glibc.malloc.trim_threshold=131072")])
def test_the_users_settings_win(monkeypatch, variable, value):
    monkeypatch.setenv(variable, value)
    assert allocator._tune() is False


@pytest.mark.skipif(not GLIBC, reason="the thresholds are glibc's")
def test_the_thresholds_are_set_unless_the_user_chose():
    import os

    chose = any(v in os.environ for v in (allocator.OPT_OUT, *allocator._GLIBC_VARIABLES))
    assert allocator.TUNED is not chose


def _clean_environment() -> dict[str, str]:
    import os

    return {k: v for k, v in os.environ.items() if k not in (allocator.OPT_OUT, *allocator._GLIBC_VARIABLES)}
