"""Compile every kernel the simulator and the registered environments use into numba's cache:
``python -m acres_gym.tools.warmup`` (``make`` runs it after installing).

Numba compiles a kernel on its first call unless its on-disk cache holds it, which makes the first
``gymnasium.make`` and ``reset`` of a fresh install wait (``acres_gym.runtime.compile_notice`` says so on stderr). This
builds each registered id once as a single environment and once as the native vector env of
``PARALLEL_MIN_VEHICLES`` vehicles (the parallel kernel and the vector env's passes), resets it and takes a few
steps with random actions, so later processes load every kernel from the cache. It prints the ids and the time
it took; nothing else of the environments is kept.
"""

from __future__ import annotations

import argparse
import sys
import time

import gymnasium
import numpy as np

import acres_gym  # noqa: F401  (registers the ids)
from acres_gym.runtime import compile_notice
from acres_gym.runtime.threading_layer import PARALLEL_MIN_VEHICLES

STEPS = 3


def registered_ids() -> list[str]:
    """The acres_gym ids of Gymnasium's registry that have an entry point."""
    return sorted(i for i, spec in gymnasium.registry.items() if i.startswith("acres_gym/") and spec.entry_point)


def warm(env_id: str, vehicles: int = PARALLEL_MIN_VEHICLES) -> None:
    """Reset and step ``env_id`` as a single env and as a vector env of ``vehicles``."""
    env = gymnasium.make(env_id)
    env.reset(seed=0)
    env.action_space.seed(0)
    for _ in range(STEPS):
        env.step(env.action_space.sample())
    env.reset()
    env.close()
    venv = gymnasium.make_vec(env_id, num_envs=vehicles, vectorization_mode="vector_entry_point")
    venv.reset(seed=0)
    rng = np.random.default_rng(0)
    for _ in range(STEPS):
        venv.step(rng.uniform(-1.0, 1.0, (vehicles, *venv.single_action_space.shape)).astype(np.float32))
    venv.close()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ids", nargs="*", default=None, help="ids to warm (default: every registered one)")
    args = parser.parse_args(argv)
    ids = registered_ids() if args.ids is None else args.ids
    unknown = [i for i in ids if i not in gymnasium.registry]
    if unknown:
        parser.error(f"unknown ids {unknown}; registered: {registered_ids()}")
    start = time.perf_counter()
    for env_id in ids:
        warm(env_id)
    compile_notice.report()
    print(f"acres_gym: the kernels of {len(ids)} ids are in numba's cache ({time.perf_counter() - start:.1f} s)",
          file=sys.stderr)


if __name__ == "__main__":
    main()
