"""Numba's threading layer for the parallel kernels, and which kernel a call uses.

The parallel kernel (``model.tick.run_ticks``) runs on Numba's threading layer.
With GNU OpenMP, the layer Numba picks by default where it is present, a process that has run a parallel
kernel cannot ``fork()`` safely (``gymnasium``'s ``AsyncVectorEnv`` and ``multiprocessing`` with the fork start
method then fail), and on a loaded machine its spinning threads make short calls many times slower than one
thread. This module selects the ``forksafe`` layer when it is imported, before any parallel kernel
runs, unless the user chose a layer with ``NUMBA_THREADING_LAYER``: TBB where it loads, else Numba's own
``workqueue``. Both are safe to fork.

TBB comes with the project (the ``tbb`` package on x86-64 Linux). Its workers steal work from each other, so
a kernel whose threads share the cores with other work (an episode drawn in the background, another process)
finishes with the threads that got the cores; ``workqueue`` hands each thread a fixed share and waits for the
slowest, and its empty call costs more (the figures and the commands that compare the layers:
``docs/performance.md``, "Figures behind the design choices"). The ``tbb`` wheel puts its library in the
environment's ``lib`` directory, where Numba's own lookup (the library's name alone) does not search;
``_load_tbb`` loads it by its path first, and Numba's lookup then finds it loaded.
``workqueue`` is not thread-safe: without TBB, step one simulator per thread at most.

Which kernel a call runs: batches below ``PARALLEL_MIN_VEHICLES`` run on the calling thread; larger ones on the
kernel their simulator's ``KernelChoice`` measures to be faster on the machine as it is now (when other processes
keep the cores busy, one thread beats the parallel kernel, by far).
"""

from __future__ import annotations

import ctypes
import importlib.metadata
import os
import sys
import time
from collections.abc import Callable
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
"""Batches smaller than this run on the calling thread: with busy processes beside it, the parallel kernel gains
nothing on small batches and loses on the smallest (more on ``workqueue``), while on an idle machine it gains
at every size. ``python -m acres_gym.tools.bench`` prints both kernels (``docs/performance.md``)."""


def use_parallel(n_vehicles: int) -> bool:
    """Whether a call advancing ``n_vehicles`` should use the parallel kernel."""
    return n_vehicles >= PARALLEL_MIN_VEHICLES and numba.get_num_threads() > 1


PROBE_INTERVAL_S = 0.5
"""How often (wall time) a simulator's calls try the kernel they are not using (``KernelChoice``)."""
MAX_PROBE_INTERVAL_S = 8.0
"""The longest interval between tries of a kernel that lost by more than ``LOSS_FOR_BACKOFF`` each time."""
LOSS_FOR_BACKOFF = 1.5
"""A tried kernel this many times as slow as the one in use is tried again after twice the interval."""
PROBE_CALLS = 3
"""Consecutive calls a try runs on the other kernel; each kernel is judged by the median cost of its last
``PROBE_CALLS`` calls (one call may catch a preemption, or the parallel threads waking up)."""
PARALLEL_WORTH = 1.3
"""The parallel kernel is used only while it advances a batch at least this many times as fast as one thread:
below that its second thread's core does more for the machine elsewhere (a background draw, another process).
Two processes stepping 64 vehicles each on 2 cores, each measuring only its own calls, see the parallel kernel
at an even ratio, yet both run slower on it than each would on one thread (``docs/performance.md``)."""
LOSS_TO_STOP_A_TRY = 3.0
"""A tried call this many times as costly as the median of the kernel in use ends its try at once (a loss)."""


class KernelChoice:
    """Which kernel the calls of one simulator use, chosen by measuring both on the machine as it is now.

    On an idle machine the parallel kernel advances a batch faster than one thread, but when other processes keep
    the cores busy its threads wait for each other, and it falls far behind one thread (the figures:
    ``docs/performance.md``). So the calls use one kernel, time themselves (``time.perf_counter``, the cost per
    vehicle-tick) and every ``PROBE_INTERVAL_S`` (and after ``PROBE_CALLS`` calls of the kernel in use at least) run
    ``PROBE_CALLS`` calls on the other kernel; whichever has the lower median cost of its last ``PROBE_CALLS`` calls
    is used until the next try, the parallel kernel's cost counted ``PARALLEL_WORTH`` times (it takes a second
    core). A kernel that lost by more than ``LOSS_FOR_BACKOFF`` times is tried half as often each time (up to
    ``MAX_PROBE_INTERVAL_S``), and a tried call ``LOSS_TO_STOP_A_TRY`` times as costly as the kernel in use ends its
    try at once, so trying costs a few percent at most. The parallel kernel comes first. Both kernels give the same
    values bit for bit: the choice never changes a result, only its wall time.

    ``clock`` (default ``time.perf_counter``) is the time in seconds the calls and tries are measured with."""

    __slots__ = ("_clock", "_costs", "_in_use", "_trying", "_settled", "_next_try_s", "_interval_s")

    def __init__(self, clock: Callable[[], float] = time.perf_counter) -> None:
        self._clock = clock
        self._costs: tuple[list[float], list[float]] = ([], [])  # serial, parallel: last costs per vehicle-tick
        self._in_use = 1  # 1: the parallel kernel
        self._trying = 0  # calls left in the present try of the other kernel
        self._settled = 0  # calls of the kernel in use since the last try (a try waits for PROBE_CALLS of them)
        self._interval_s = PROBE_INTERVAL_S
        self._next_try_s = clock() + PROBE_INTERVAL_S

    @property
    def parallel(self) -> bool:
        """Whether the kernel in use between tries is the parallel one."""
        return self._in_use == 1

    def pick(self) -> bool:
        """Whether the next call runs the parallel kernel (the one in use, or the other during a try)."""
        if self._trying == 0 and self._settled >= PROBE_CALLS and self._clock() >= self._next_try_s:
            self._trying = PROBE_CALLS
            self._costs[1 - self._in_use].clear()  # the try is judged by its own calls
        return (self._in_use == 1) != (self._trying > 0)

    def record(self, parallel: bool, seconds: float, work: int) -> None:
        """Record a call of ``parallel``'s kernel that took ``seconds`` for ``work`` vehicle-ticks; the end of a
        try compares the two kernels."""
        if work <= 0:
            return
        mode = 1 if parallel else 0
        costs = self._costs[mode]
        costs.append(seconds / work)
        del costs[:-PROBE_CALLS]
        if mode == self._in_use or self._trying == 0:
            self._settled += mode == self._in_use
            return
        weight = (1.0, PARALLEL_WORTH)  # per kernel (serial, parallel): how its cost counts
        in_use = weight[self._in_use] * _median(self._costs[self._in_use])  # (a try follows calls of the one in use)
        self._trying -= 1
        if self._trying > 0 and weight[mode] * costs[-1] <= LOSS_TO_STOP_A_TRY * in_use:
            return
        self._trying = 0
        tried = weight[mode] * _median(costs)
        if tried < in_use:
            self._in_use, self._interval_s = mode, PROBE_INTERVAL_S
        elif tried > LOSS_FOR_BACKOFF * in_use:
            self._interval_s = min(2.0 * self._interval_s, MAX_PROBE_INTERVAL_S)
        else:
            self._interval_s = PROBE_INTERVAL_S
        self._settled = 0
        self._next_try_s = self._clock() + self._interval_s


def _median(values: list[float]) -> float:
    """The median of a few values."""
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else 0.5 * (ordered[middle - 1] + ordered[middle])
