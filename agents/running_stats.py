"""The observation normaliser's per-step arithmetic in one compiled pass (``ObsNormalizer``'s float32 path).

``update_moments`` is SB3's ``RunningMeanStd.update`` (``update_from_moments``) over the concatenated
entries of a batch of float32 observations, in place and to the bit: the batch mean and variance are
reduced in float32 in numpy's order (``np.mean`` / ``np.var`` over the first axis: a wider entry's column
row by row; a one-element entry's column over a contiguous copy, which numpy sums pairwise,
``pairwise_sum``), each divided by the row count and rounded to float32 as numpy's ``true_divide`` rounds it;
the running figures follow ``update_from_moments`` operation by operation, in float64 but for
``batch_var * batch_count``, which numpy keeps in float32. ``normalize`` is
``np.clip((flat - mean) / sqrt(var + epsilon), -clip, clip).astype(np.float32)`` element by element.
"""

from __future__ import annotations

import numpy as np
from numba import njit

PAIRWISE_BLOCK = 128  # numpy's PW_BLOCKSIZE: below it a sum runs in eight interleaved partial sums


@njit(cache=True, nogil=True)
def _block_sum(a, start, n, stride):
    """numpy's ``pairwise_sum`` of at most ``PAIRWISE_BLOCK`` values: under 8 one running sum; else eight
    partial sums combined as ``((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))`` and the rest added in order."""
    if n < 8:
        res = np.float32(-0.0)
        for i in range(n):
            res += a[start + i * stride]
        return res
    r0, r1, r2, r3 = a[start], a[start + stride], a[start + 2 * stride], a[start + 3 * stride]
    r4, r5, r6, r7 = a[start + 4 * stride], a[start + 5 * stride], a[start + 6 * stride], a[start + 7 * stride]
    i = 8
    while i < n - n % 8:
        k = start + i * stride
        r0 += a[k]
        r1 += a[k + stride]
        r2 += a[k + 2 * stride]
        r3 += a[k + 3 * stride]
        r4 += a[k + 4 * stride]
        r5 += a[k + 5 * stride]
        r6 += a[k + 6 * stride]
        r7 += a[k + 7 * stride]
        i += 8
    res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
    while i < n:
        res += a[start + i * stride]
        i += 1
    return res


@njit(cache=True, nogil=True)
def pairwise_sum(a, start, n, stride):
    """numpy's ``pairwise_sum`` of the float32 values ``a[start], a[start + stride], ...`` (``n`` of them), in
    float32: up to ``PAIRWISE_BLOCK`` values ``_block_sum``; above it the sums of the two halves (the first a
    multiple of 8 long), each summed so, added. The halving runs on an explicit stack (numba's cache does not
    keep recursive functions)."""
    if n <= PAIRWISE_BLOCK:
        return _block_sum(a, start, n, stride)
    depth = 64
    node_start = np.empty(depth, dtype=np.int64)
    node_n = np.empty(depth, dtype=np.int64)
    left_done = np.zeros(depth, dtype=np.bool_)
    left_sum = np.empty(depth, dtype=np.float32)
    top = 0
    node_start[0], node_n[0] = start, n
    while True:
        m = node_n[top]
        if m > PAIRWISE_BLOCK:  # descend into the first half
            half = m // 2
            half -= half % 8
            left_done[top] = False
            node_start[top + 1], node_n[top + 1] = node_start[top], half
            top += 1
            continue
        value = _block_sum(a, node_start[top], m, stride)
        while True:  # hand the value up: a first half waits for its second, a second completes its parent
            if top == 0:
                return value
            top -= 1
            if not left_done[top]:
                left_done[top], left_sum[top] = True, value
                half = node_n[top] // 2
                half -= half % 8
                node_start[top + 1] = node_start[top] + half * stride
                node_n[top + 1] = node_n[top] - half
                top += 1
                break
            value = left_sum[top] + value


@njit(cache=True, nogil=True)
def _column_moments(flat, c, pairwise, squares):
    """The float32 mean and variance of column ``c`` of ``flat`` (n rows), as ``np.mean`` / ``np.var`` reduce
    it: pairwise (a one-element entry) or row by row; ``squares`` is scratch of n float32."""
    n = flat.shape[0]
    if pairwise:
        column = np.ascontiguousarray(flat[:, c])
        total = np.float32(0.0) + pairwise_sum(column, 0, n, 1)
    else:
        total = np.float32(0.0)
        for i in range(n):
            total += flat[i, c]
    mean = np.float32(total / n)  # float64 quotient rounded once: numpy's float32 true_divide
    for i in range(n):
        d = flat[i, c] - mean
        squares[i] = d * d
    if pairwise:
        total = np.float32(0.0) + pairwise_sum(squares, 0, n, 1)
    else:
        total = np.float32(0.0)
        for i in range(n):
            total += squares[i]
    return mean, np.float32(total / n)


@njit(cache=True, nogil=True)
def update_moments(flat, single, mean, var, denominator, count, epsilon):
    """``RunningMeanStd.update_from_moments`` of every column in place: ``flat`` (n, k) float32 observations,
    ``single[c]`` whether column c is a one-element entry, ``mean`` / ``var`` (k,) float64 running figures
    over ``count`` samples; ``denominator`` becomes ``sqrt(var + epsilon)``. Returns the new count."""
    n = flat.shape[0]
    squares = np.empty(n, dtype=np.float32)
    tot_count = count + n
    for c in range(flat.shape[1]):
        batch_mean, batch_var = _column_moments(flat, c, single[c], squares)
        delta = np.float64(batch_mean) - mean[c]
        new_mean = mean[c] + delta * n / tot_count
        m_a = var[c] * count
        m_b = np.float64(batch_var * np.float32(n))  # float32 times a Python int stays float32 in numpy
        m_2 = m_a + m_b + delta * delta * count * n / (count + n)
        mean[c] = new_mean
        var[c] = m_2 / (count + n)
        denominator[c] = np.sqrt(var[c] + epsilon)
    return n + count


@njit(cache=True, nogil=True)
def normalize(flat, mean, denominator, clip, out):
    """``out`` (float32) = ``(flat - mean) / denominator`` in float64, clipped to [-clip, clip] (NaN kept)."""
    for i in range(flat.shape[0]):
        for c in range(flat.shape[1]):
            z = (np.float64(flat[i, c]) - mean[c]) / denominator[c]
            if z < -clip:
                z = -clip
            elif z > clip:
                z = clip
            out[i, c] = z
    return out
