"""Numba's threading layer for the parallel kernels, and which kernel a call uses.

The parallel kernel (``model.tick.run_ticks``) runs on Numba's threading layer.
With GNU OpenMP, the layer Numba picks by default where it is present, a process that has run a parallel
kernel cannot ``fork()`` safely (``gymnasium``'s ``AsyncVectorEnv`` and ``multiprocessing`` with the fork start
method then fail), and on a loaded machine its spinning threads make short calls many times slower than one
thread (measured under load with 8 other jobs on 2 cores: 64 vehicles x 6 ticks 30 ms with OpenMP against 5.7
ms on one thread). The ``forksafe`` layer (TBB where it can be loaded, else Numba's own ``workqueue``) is safe
to fork and stays within a few percent of one thread under load.

This module selects it when it is imported, before any parallel kernel runs, unless the user chose a layer
with ``NUMBA_THREADING_LAYER``. ``workqueue`` is not thread-safe: step one simulator per thread at most, or set
``NUMBA_THREADING_LAYER=tbb`` (with TBB installed) to call kernels from several Python threads.
"""

from __future__ import annotations

import os

import numba

if not os.environ.get("NUMBA_THREADING_LAYER"):
    numba.config.THREADING_LAYER = "forksafe"

PARALLEL_MIN_VEHICLES = 16
"""Batches smaller than this run on the calling thread: below it, handing vehicles to worker threads costs more
than it saves on 2 cores (a 2- and 8-vehicle batch ran 1.4x and 1.6x slower in parallel under load, 16 and
more ran 5-13 % faster; ``python -m acres_gym.tools.bench`` prints both)."""


def use_parallel(n_vehicles: int) -> bool:
    """Whether a call advancing ``n_vehicles`` should use the parallel kernel."""
    return n_vehicles >= PARALLEL_MIN_VEHICLES and numba.get_num_threads() > 1
