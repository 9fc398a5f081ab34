"""The C allocator's thresholds for terrain-sized arrays: freed memory kept for the next draw.

A reset draws its terrain into a few dozen arrays of 0.4-2 MB each (300 m grid at 1 m). With glibc's default
settings, arrays that large are mapped from the kernel on allocation and handed back when freed (or the heap is
trimmed), so every draw faults its pages in afresh, a large part of a cold reset, and the background draws that
share the cores with a vector env's physics pay the same (the figures, and the command that compares the two
settings with ``ACRES_GYM_MALLOC=default``: ``docs/performance.md``).

This module, imported by the terrain generators, sets glibc's ``M_MMAP_THRESHOLD`` to ``MMAP_THRESHOLD_BYTES``
(arrays up to that size come from the heap, where freed memory is reused) and ``M_TRIM_THRESHOLD`` to
``TRIM_THRESHOLD_BYTES`` (a heap keeps up to that much free memory instead of returning it), through
``mallopt``. The cost is memory the process keeps after a draw: at most ``TRIM_THRESHOLD_BYTES`` free per heap
(glibc keeps one heap per thread that allocates: the main thread, a pre-generation worker, the side thread of a
draw). It changes nothing elsewhere: not on other systems or C libraries, not when the user set glibc's own
variables (``MALLOC_MMAP_THRESHOLD_``, ``MALLOC_TRIM_THRESHOLD_``, or ``GLIBC_TUNABLES``), and not with
``ACRES_GYM_MALLOC=default``. ``TUNED`` says whether the thresholds were set.
"""

from __future__ import annotations

import ctypes
import os
import platform
import sys

MMAP_THRESHOLD_BYTES = 32 * 1024 * 1024
"""Largest allocation served from the heap (glibc's upper bound for this setting on 64-bit systems)."""

TRIM_THRESHOLD_BYTES = 64 * 1024 * 1024
"""Free memory a heap keeps before returning it to the system (a draw of the default grid peaks near 20 MB)."""

OPT_OUT = "ACRES_GYM_MALLOC"
"""Environment variable: ``default`` leaves the C allocator's settings alone."""

_GLIBC_VARIABLES = ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "GLIBC_TUNABLES")
_M_TRIM_THRESHOLD = -1  # glibc malloc.h
_M_MMAP_THRESHOLD = -3


def _tune() -> bool:
    if os.environ.get(OPT_OUT, "").lower() == "default" or any(v in os.environ for v in _GLIBC_VARIABLES):
        return False
    if not sys.platform.startswith("linux") or platform.libc_ver()[0] != "glibc":
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes, mallopt.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
    return bool(mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES)) and bool(mallopt(_M_TRIM_THRESHOLD,
                                                                                   TRIM_THRESHOLD_BYTES))


TUNED = _tune()
"""Whether this process's glibc thresholds were set (see the module docstring)."""
