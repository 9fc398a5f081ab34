"""Numba's threading layer for the parallel kernels, and which kernel a call uses.

The parallel kernel (``model.tick.run_ticks``) runs on Numba's threading layer.
With GNU OpenMP, the layer Numba picks by default where it is present, a process that has run a parallel
kernel cannot ``fork()`` safely (``gymnasium``'s ``AsyncVectorEnv`` and ``multiprocessing`` with the fork start
method then fail), and on a loaded machine its spinning threads make short calls many times slower than one
thread (measured under load with 8 other jobs on 2 cores: 64 vehicles x 6 ticks 30 ms with OpenMP against 5.7
ms on one thread). This module selects the ``forksafe`` layer when it is imported, before any parallel kernel
runs, unless the user chose a layer with ``NUMBA_THREADING_LAYER``: TBB where it loads, else Numba's own
``workqueue``. Both are safe to fork.

TBB comes with the project (the ``tbb`` package on x86-64 Linux). Its workers steal work from each other, so
a kernel whose threads share the cores with other work (an episode drawn in the background, another process)
finishes with the threads that got the cores; ``workqueue`` hands each thread a fixed share and waits for the
slowest. Measured on 2 shared cores (``python -m acres_gym.envs.bench``, two runs per layer, alternating): the
physics of 64 vehicles 103,600-104,400 vehicle-steps/s on TBB against 60,100-69,200 on ``workqueue`` (one
thread: 54,700-59,200), of 16 vehicles 88,000-95,200 against 29,500-37,200; the 64-vehicle vector env with
resets 52,200-54,000 against 29,900-33,400. ``python -m acres_gym.tools.bench --quick`` on the same machine: a
64-vehicle call of 6 ticks 2.08-2.14x the one-vehicle rate on TBB, 1.14x on ``workqueue``, whose empty call
(``step(0)``) took 87 us against 10-11 us. The ``tbb`` wheel puts its library in the environment's ``lib``
directory, where Numba's own lookup (the library's name alone) does not search; ``_load_tbb`` loads it by its
path first, and Numba's lookup then finds it loaded.
``workqueue`` is not thread-safe: without TBB, step one simulator per thread at most.
"""

from __future__ import annotations

import ctypes
import importlib.metadata
import os
import sys
from pathlib import Path

import numba

TBB_LIBRARY = "libtbb.so.12"
"""The TBB runtime Numba's ``tbb`` layer links to (Linux)."""


def _load_tbb() -> str | None:
    """Load the TBB runtime of the installed ``tbb`` package by its path (see the module docstring); its path,
    or None when there is none to load (not installed, not Linux, or it does not load: Numba then falls back
    to ``workqueue``)."""
    if not sys.platform.startswith("linux"):
        return None
    path = Path(sys.prefix, "lib", TBB_LIBRARY)  # where pip puts the wheel's data files (a venv, a system install)
    if not path.is_file():  # elsewhere (a --user or --prefix install): the package's file list says where
        try:
            files = importlib.metadata.files("tbb") or ()
        except importlib.metadata.PackageNotFoundError:
            return None
        located = [Path(file.locate()) for file in files if file.name == TBB_LIBRARY]
        if not located:
            return None
        path = located[0]
    try:
        ctypes.CDLL(str(path.resolve()), mode=ctypes.RTLD_GLOBAL)
    except OSError:
        return None
    return str(path.resolve())


if not os.environ.get("NUMBA_THREADING_LAYER"):
    numba.config.THREADING_LAYER = "forksafe"
if os.environ.get("NUMBA_THREADING_LAYER", "forksafe") in ("forksafe", "threadsafe", "tbb"):
    TBB_PATH = _load_tbb()
else:
    TBB_PATH = None

PARALLEL_MIN_VEHICLES = 16
"""Batches smaller than this run on the calling thread. On TBB, with 4 busy processes beside it on 2 cores, a
batch of 2, 8 and 32 vehicles ran 0.91, 0.90 and 0.96 times as fast in parallel as on one thread, 16 and 64
1.00 and 1.12 times (on an idle machine 1.4-1.8 times at every size); on ``workqueue`` small batches lose more
(0.41 times at 2 vehicles under that load). ``python -m acres_gym.tools.bench`` prints both kernels."""


def use_parallel(n_vehicles: int) -> bool:
    """Whether a call advancing ``n_vehicles`` should use the parallel kernel."""
    return n_vehicles >= PARALLEL_MIN_VEHICLES and numba.get_num_threads() > 1
