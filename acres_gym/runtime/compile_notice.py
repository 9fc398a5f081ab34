"""Says on stderr when acres_gym compiles its kernels, and how long that took.

Numba keeps compiled kernels in its on-disk cache; a kernel it does not find there (the first use after
installing or changing the code, or a new combination of argument types) is compiled on its first call, which
for the simulator and the environments takes from a few seconds to about a minute on two cores. Numba
announces every compilation through its event API (``numba.core.event``, kind ``"numba:compile"``; loading a
kernel from the cache is not one). ``install()`` (done on import) registers a listener for acres_gym's own
kernels: the first compilation of a batch prints ``acres_gym: compiling kernels ...`` (the first of the process
with what it means), and ``report()``, called at the end of the
calls that compile (the simulator's construction, an environment's ``reset`` and ``step``), prints the time
the batch took once no compilation is running. ``ACRES_GYM_QUIET=1`` silences both lines.
"""

from __future__ import annotations

import os
import sys
import threading
import time

from numba.core import event

QUIET_ENV = "ACRES_GYM_QUIET"
PACKAGE = "acres_gym"


def _quiet() -> bool:
    return os.environ.get(QUIET_ENV, "") not in ("", "0")


class _Notice(event.Listener):
    """Counts the compilations of acres_gym kernels in progress (nested ones included: a kernel compiles the
    kernels it calls) and sums the wall time of the outermost ones."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.depth = 0
        self.started = 0.0
        self.seconds = 0.0  # compile time not reported yet
        self.count = 0
        self.announced = False
        self.first = ("acres_gym: compiling kernels (first use after installing or changing the code; numba "
                      "caches them for later runs) ...")

    @staticmethod
    def _ours(ev: event.Event) -> bool:
        dispatcher = (ev.data or {}).get("dispatcher")
        module = getattr(getattr(dispatcher, "py_func", None), "__module__", "") or ""
        return module == PACKAGE or module.startswith(PACKAGE + ".")

    def on_start(self, ev: event.Event) -> None:
        if not self._ours(ev):
            return
        with self.lock:
            if self.depth == 0:
                self.started = time.perf_counter()
                if self.count == 0 and not _quiet():
                    print(self.first if not self.announced else "acres_gym: compiling more kernels ...",
                          file=sys.stderr, flush=True)
                    self.announced = True
            self.depth += 1

    def on_end(self, ev: event.Event) -> None:
        if not self._ours(ev):
            return
        with self.lock:
            self.depth -= 1
            self.count += 1
            if self.depth == 0:
                self.seconds += time.perf_counter() - self.started


_NOTICE = _Notice()
_INSTALLED = False


def install() -> None:
    """Register the listener (once per process)."""
    global _INSTALLED
    if not _INSTALLED:
        event.register("numba:compile", _NOTICE)
        _INSTALLED = True


def report() -> None:
    """Print the time of the compilations since the last report, if any finished and none is running."""
    notice = _NOTICE
    if notice.seconds == 0.0:  # the common case: one comparison
        return
    with notice.lock:
        if notice.depth > 0 or notice.seconds == 0.0:
            return
        seconds, count = notice.seconds, notice.count
        notice.seconds, notice.count = 0.0, 0
    if not _quiet():
        print(f"acres_gym: {count} kernel{'s' if count != 1 else ''} compiled in {seconds:.1f} s", file=sys.stderr,
              flush=True)


def compiled() -> tuple[int, float]:
    """(kernels compiled, seconds) not reported yet: for tests and tools."""
    with _NOTICE.lock:
        return _NOTICE.count, _NOTICE.seconds


install()
