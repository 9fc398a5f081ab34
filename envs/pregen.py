"""Episodes drawn ahead: the next episode of a vehicle prepared in a background thread while it drives.

A reset's cost is drawing the episode's terrain (fractal noise, surface patches), its vehicle record and, for
the navigation task, its route search. All of it is a pure function of the episode seed, the vehicle's slot in
the batch and its spawn point: ``RangerBatch.prepare(slot, seed)``. The environments know the seed the next
reset of a vehicle will use whenever that reset draws it from the vehicle's own generator (``reset()`` without
a seed, and every autoreset): they hand it to ``Pregenerator.submit`` when an episode starts, one worker thread
prepares the episode while the vehicle drives (the terrain kernels run without the GIL), and the reset takes
it with ``Pregenerator.take``. A reset whose seed or spawn point differs from the prepared one (a
``reset(seed=...)`` by the caller) draws its episode itself, as a reset without pre-generation does: both ways
run the same function on the same inputs, so an episode is the same whatever was prepared before, in any
process.

Threads: a draw is numpy and jitted kernels between lines of Python, and an environment stepping in a loop holds
the GIL most of the time. The worker needs the GIL to wake to a job and again after each numpy call or kernel
that released it (the terrain's two kernels, the vehicle record's derivation, numpy's larger calls), and a
thread waiting for the GIL gets it only once the switch interval has passed: at Python's default 5 ms, and
still at 100 us, a draw in the background takes several times its own work, longer than the path-following
task's episodes of random actions.
From the submit that queues a draw until the worker is done with it, the interpreter's switch interval is
``SWITCH_INTERVAL_S`` (``sys.setswitchinterval``); the previous one comes back when no draw is queued or
running (unless the caller changed it meanwhile). A short interval makes the reset after a short episode
wait far less for its draw, and costs the stepping thread nothing measurable (the figures at each interval
and the command that measures them: ``docs/performance.md``).

Memory: at most ``max_pending`` prepared episodes (one per vehicle at most; a new submit for a vehicle
replaces its old one), each about one terrain grid (20 bytes a grid point: 1.8 MB for the 300 m grid at 1 m;
the navigation task's ``route_time`` channel adds 8 bytes a route-grid cell), plus the one in progress.
``max_pending = 0`` turns pre-generation off.
"""

from __future__ import annotations

import os
import queue
import sys
import threading
import weakref
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor, wait
from typing import Any

MAX_PENDING = 64
"""Default bound on prepared episodes held at once (about 115 MB with the default 300 m grids)."""


SWITCH_INTERVAL_S = 0.00002
"""The interpreter's thread switch interval while a draw is queued or runs (see the module docstring)."""


class _FastSwitching:
    """Counts the draws running in all workers of the process; the first sets the switch interval to
    ``SWITCH_INTERVAL_S``, the last puts back the one it found (if nobody changed it in between)."""

    lock = threading.Lock()
    running = 0
    saved_s: float | None = None

    @classmethod
    def enter(cls) -> None:
        with cls.lock:
            cls.running += 1
            if cls.running == 1:
                cls.saved_s = sys.getswitchinterval()
                if cls.saved_s > SWITCH_INTERVAL_S:
                    sys.setswitchinterval(SWITCH_INTERVAL_S)

    @classmethod
    def exit(cls) -> None:
        with cls.lock:
            cls.running -= 1
            if cls.running == 0 and cls.saved_s is not None:
                if abs(sys.getswitchinterval() - min(cls.saved_s, SWITCH_INTERVAL_S)) < 1e-9:
                    sys.setswitchinterval(cls.saved_s)
                cls.saved_s = None


class _Waiting:
    """Counts the callers blocked on a draw that is not done (``Pregenerator.take`` and ``wait``): while any
    is, a batch worker hands a draw's parts to the side thread too (``beside``), so both cores serve the draws
    nobody else's work needs."""

    lock = threading.Lock()
    count = 0

    @classmethod
    def block_on(cls, wait_for: Callable[[], Any]) -> Any:
        with cls.lock:
            cls.count += 1
        try:
            return wait_for()
        finally:
            with cls.lock:
                cls.count -= 1


class _Beside:
    """The process's one side thread (``beside``), started on first use (again in a child made by ``fork()``,
    where the parent's thread does not exist: ``_after_fork_in_child``)."""

    lock = threading.Lock()
    pool: ThreadPoolExecutor | None = None


_worker = threading.local()  # ``_worker.parts_inline``: this thread is a worker that runs a draw's parts itself


def beside(fn: Callable[..., Any], *args: Any) -> Future:
    """Run ``fn(*args)`` in the process's side thread and return its future: one part of a draw that does not
    depend on the rest (the surface patches beside the heights, ``acres_gym.envs.randomization``), so a draw
    the caller waits for takes both cores of an idle machine. The parts' kernels run without the GIL, and each
    part draws from its own generator, so the draw is the same whichever part finishes first.

    In the worker of a batch of several vehicles (``Pregenerator(parts_inline=True)``) the part runs at once, in
    the worker (the future is done on return): their resets are spread over the steps, none waits for its
    draw, and a third thread would only add hand-offs of the GIL to the steps (a 64-vehicle vector env with
    resets steps faster without it, ``docs/performance.md``). Once a caller blocks on a draw that is not done
    (a reset that came before its draw, ``Pregenerator.wait``), nothing steps meanwhile and the parts go to the
    side thread again.
    A single vehicle's next reset may come before its background draw is done (episodes of random actions last
    tens of milliseconds), so its worker keeps the side thread."""
    if getattr(_worker, "parts_inline", False) and _Waiting.count == 0:
        done: Future = Future()
        try:
            done.set_result(fn(*args))
        except BaseException as exc:  # raised where the caller takes the result, as from the side thread
            done.set_exception(exc)
        return done
    with _Beside.lock:
        if _Beside.pool is None:
            _Beside.pool = ThreadPoolExecutor(1, thread_name_prefix="acres-gym-beside")
        return _Beside.pool.submit(fn, *args)


def _after_fork_in_child() -> None:
    """A child made by ``fork()`` has none of its parent's threads or queued draws: the side thread starts afresh
    on first use and the switch interval the draws set goes back."""
    _Beside.lock, _Beside.pool = threading.Lock(), None
    _Waiting.lock, _Waiting.count = threading.Lock(), 0
    _FastSwitching.lock = threading.Lock()
    saved, _FastSwitching.saved_s, _FastSwitching.running = _FastSwitching.saved_s, None, 0
    if saved is not None:
        sys.setswitchinterval(saved)


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def _work(jobs: queue.SimpleQueue, parts_inline: bool) -> None:
    """The worker thread: runs ``(future, build, args)`` jobs in order until it takes None (``beside`` runs in
    it when ``parts_inline``)."""
    _worker.parts_inline = parts_inline
    while True:
        job = jobs.get()
        if job is None:
            return
        future, build, args = job
        del job
        try:
            if future.set_running_or_notify_cancel():
                try:
                    future.set_result(build(*args))
                except BaseException as exc:  # handed to the reset that takes the episode
                    future.set_exception(exc)
        finally:
            _FastSwitching.exit()  # entered by the submit that queued the job
        del future, build, args  # hold nothing (the batch) while idle


class Pregenerator:
    """Prepares ``build(slot, seed)`` for the seeds the next resets will use (see the module docstring).

    The worker is a daemon thread: a process exits without finishing queued episodes, and the thread ends
    when the ``Pregenerator`` is closed or collected.

    Args:
        build: a pure function of ``(slot, seed)`` returning the prepared episode.
        max_pending: bound on prepared (and queued) episodes; 0 disables pre-generation.
        parts_inline: the worker runs the parts a draw hands to ``beside`` itself (batches of several vehicles).
    """

    def __init__(self, build: Callable[[int, int], Any], max_pending: int = MAX_PENDING,
                 parts_inline: bool = False) -> None:
        if isinstance(max_pending, bool) or not isinstance(max_pending, int) or max_pending < 0:
            raise ValueError(f"max_pending = {max_pending!r}: expected an integer >= 0")
        self._build = build
        self.max_pending = max_pending
        self.parts_inline = bool(parts_inline)
        self._pending: dict[int, tuple[int, Future]] = {}
        self._jobs: queue.SimpleQueue | None = None
        self._thread: threading.Thread | None = None
        self._pid = os.getpid()
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def _start(self) -> None:
        """A worker thread and its job queue; the queue gets None (the thread ends) when this object goes."""
        self._jobs = queue.SimpleQueue()
        self._thread = threading.Thread(target=_work, args=(self._jobs, self.parts_inline), name="acres-gym-pregen",
                                        daemon=True)
        self._thread.start()
        weakref.finalize(self, self._jobs.put, None)

    def submit(self, slot: int, seed: int) -> None:
        """Start preparing ``slot``'s episode for ``seed`` (replacing what was prepared for the slot), unless
        ``max_pending`` episodes are already held."""
        if self.max_pending == 0:
            return
        self._forget_after_fork()
        with self._lock:
            old = self._pending.pop(slot, None)
            if old is not None:
                old[1].cancel()
            if len(self._pending) >= self.max_pending:
                return
            if self._thread is None:
                self._start()
            future: Future = Future()
            _FastSwitching.enter()  # from now: the worker wakes to the job within the short interval
            self._jobs.put((future, self._build, (slot, seed)))
            self._pending[slot] = (seed, future)

    def take(self, slot: int, seed: int) -> Any | None:
        """The episode prepared for ``slot`` and ``seed`` (waiting for it if still in progress), or None when
        none was; whatever was prepared for the slot is dropped either way."""
        self._forget_after_fork()
        with self._lock:
            entry = self._pending.pop(slot, None)
        if entry is None or entry[0] != seed:
            if entry is not None:
                entry[1].cancel()
            self.misses += 1
            return None
        self.hits += 1
        future = entry[1]
        return future.result() if future.done() else _Waiting.block_on(future.result)

    def wait(self) -> None:
        """Block until every episode submitted so far is prepared (the benchmark charges a case with the
        background work its resets caused)."""
        self._forget_after_fork()
        with self._lock:
            futures = [future for _, future in self._pending.values()]
        if not all(future.done() for future in futures):
            _Waiting.block_on(lambda: wait(futures))

    def _forget_after_fork(self, _getpid: Callable[[], int] = os.getpid) -> None:
        """In a child process made by ``fork()`` the worker thread does not exist: start afresh. (``os.getpid``
        is bound at definition: a vector env collected while the interpreter shuts down closes this after the
        module's globals are gone.)"""
        if self._pid != _getpid():
            self._pid = _getpid()
            self._lock = threading.Lock()
            self._pending = {}
            self._jobs = self._thread = None

    @property
    def pending(self) -> int:
        """Episodes prepared or in progress."""
        return len(self._pending)

    def close(self) -> None:
        """Drop what was prepared and end the worker thread once its present job is done (a later
        ``submit`` starts a new one)."""
        self._forget_after_fork()
        with self._lock:
            for _, future in self._pending.values():
                future.cancel()
            self._pending.clear()
            if self._jobs is not None:
                self._jobs.put(None)
            self._jobs = self._thread = None

    def __getstate__(self) -> dict:
        """Pickled without its thread and prepared episodes (a copy prepares its own)."""
        state = self.__dict__.copy()
        state.update(_pending={}, _jobs=None, _thread=None, _lock=None, _pid=None)
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()
        self._pid = os.getpid()


def drawing() -> bool:
    """Whether a background draw is queued or running in this process (any ``Pregenerator``'s): a batch then
    steps its physics on the calling thread (``RangerSim.step(serial=True)``)."""
    return _FastSwitching.running > 0
