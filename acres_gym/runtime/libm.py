"""Elementwise exponential and trigonometry through the C library, for values that feed an episode.

numpy picks its float64 ``exp``, ``sin``, ``cos`` and ``arctan2`` loops by CPU: on AVX-512 machines they are
SIMD approximations whose last bit differs from the scalar C library's, which AVX2 and older machines run.
The few array expressions outside the jitted kernels that feed observations and rewards go through these
jitted loops instead (numba calls the C library, like the kernels do), so that a seed gives the same
episode, bit for bit, on every x86-64 machine, not only on machines of one kind.

``pairwise_sum`` is numpy's order of additions for a contiguous sum, for kernels whose sums must be numpy's
to the bit (the terrain generators' means, the observation normaliser's running statistics).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

__all__ = ["exp", "exp_in_place", "heading_frame", "pairwise_sum"]


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


@njit(cache=True, nogil=True)
def _term(values, i, squared):
    return values[i] * values[i] if squared else values[i]


@njit(cache=True, nogil=True)
def _block_sum(values, lo, n, squared):
    """numpy's sum of at most 128 contiguous values (``pairwise_sum``): below 8 values one after the other,
    else eight interleaved partial sums added pairwise, then the remaining values."""
    if n < 8:
        total = values.dtype.type(0.0)
        for i in range(lo, lo + n):
            total += _term(values, i, squared)
        return total
    r0, r1, r2, r3 = _term(values, lo, squared), _term(values, lo + 1, squared), _term(values, lo + 2, squared), \
        _term(values, lo + 3, squared)
    r4, r5, r6, r7 = _term(values, lo + 4, squared), _term(values, lo + 5, squared), \
        _term(values, lo + 6, squared), _term(values, lo + 7, squared)
    i = lo + 8
    while i < lo + n - n % 8:
        r0 += _term(values, i, squared)
        r1 += _term(values, i + 1, squared)
        r2 += _term(values, i + 2, squared)
        r3 += _term(values, i + 3, squared)
        r4 += _term(values, i + 4, squared)
        r5 += _term(values, i + 5, squared)
        r6 += _term(values, i + 6, squared)
        r7 += _term(values, i + 7, squared)
        i += 8
    total = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
    for k in range(i, lo + n):
        total += _term(values, k, squared)
    return total


@njit(cache=True, nogil=True)
def pairwise_sum(values, lo, n, squared):
    """The sum of ``values[lo:lo + n]`` (of their squares when ``squared``) as numpy adds a contiguous
    array (``numpy.sum``, ``numpy.mean``), in the array's own type (float64 or float32), so the result is
    numpy's bit for bit: a stretch of more
    than 128 values is the sum of its two halves (the first half's length rounded down to a multiple of 8),
    a shorter one ``_block_sum``. numpy recurses; this walks the same tree with a stack (a cached recursive
    kernel is not safe to load)."""
    start = np.empty(64, np.int64)  # per level of the walk: the stretch, and the left half's sum once known
    length = np.empty(64, np.int64)
    left = np.empty(64, values.dtype)
    right_pending = np.zeros(64, np.bool_)
    top = 0
    start[0], length[0] = lo, n
    while True:
        m = length[top]
        if m > 128:  # descend into the left half
            half = m // 2
            half -= half % 8
            right_pending[top] = True
            top += 1
            start[top], length[top] = start[top - 1], half
            continue
        value = _block_sum(values, start[top], m, squared)
        while True:  # hand the value up: start the right half of a stretch, or finish the stretch
            top -= 1
            if top < 0:
                return value
            half = length[top] // 2
            half -= half % 8
            if right_pending[top]:
                right_pending[top] = False
                left[top] = value
                top += 1
                start[top], length[top] = start[top - 1] + half, length[top - 1] - half
                break
            value = left[top] + value
