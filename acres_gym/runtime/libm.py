"""Elementwise exponential and trigonometry through the C library, for values that feed an episode.

numpy picks its float64 ``exp``, ``sin``, ``cos`` and ``arctan2`` loops by CPU: on AVX-512 machines they are
SIMD approximations whose last bit differs from the scalar C library's, which AVX2 and older machines run.
The few array expressions outside the jitted kernels that feed observations and rewards go through these
jitted loops instead (numba calls the C library, like the kernels do), so that a seed gives the same
episode, bit for bit, on every x86-64 machine, not only on machines of one kind.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

__all__ = ["exp", "exp_in_place", "heading_frame"]


@njit(cache=True, nogil=True)
def _exp_flat(values):
    for i in range(values.shape[0]):
        values[i] = math.exp(values[i])


def exp_in_place(values: np.ndarray) -> np.ndarray:
    """``values[...] = exp(values)`` of a C-contiguous float64 array; returns it."""
    if values.dtype != np.float64 or not values.flags.c_contiguous:
        raise ValueError(f"exp_in_place needs a C-contiguous float64 array, got {values.dtype} "
                         f"(contiguous: {values.flags.c_contiguous})")
    _exp_flat(values.reshape(-1))
    return values


def exp(values) -> np.ndarray:
    """``exp(values)`` as a new float64 array (the C library's exponential of every element)."""
    return exp_in_place(np.array(values, dtype=np.float64, order="C"))


@njit(cache=True, nogil=True)
def _heading_frame(dx, dy, yaw, cos_yaw, sin_yaw, forward, left, bearing):
    for i in range(dx.shape[0]):
        c, s = math.cos(yaw[i]), math.sin(yaw[i])
        cos_yaw[i], sin_yaw[i] = c, s
        forward[i] = c * dx[i] + s * dy[i]
        left[i] = -s * dx[i] + c * dy[i]
        bearing[i] = math.atan2(left[i], forward[i])


def heading_frame(dx, dy, yaw) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """World offsets ``(dx, dy)`` seen from headings ``yaw`` (rad), elementwise over 1-D arrays: ``(cos yaw,
    sin yaw, forward, left, bearing)`` with ``forward = cos yaw dx + sin yaw dy``, ``left = -sin yaw dx + cos yaw
    dy`` and ``bearing = atan2(left, forward)``."""
    dx, dy, yaw = (np.ascontiguousarray(a, dtype=np.float64).reshape(-1) for a in (dx, dy, yaw))
    out = tuple(np.empty(dx.shape[0]) for _ in range(5))
    _heading_frame(dx, dy, yaw, *out)
    return out
