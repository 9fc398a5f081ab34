"""The observation normaliser's per-step arithmetic in one compiled pass (``ObsNormalizer``'s float32 path).

``update_moments`` is SB3's ``RunningMeanStd.update`` (``update_from_moments``) over the concatenated
entries of a batch of float32 observations, in place and to the bit: the batch mean and variance are
reduced in float32 in numpy's order (``np.mean`` / ``np.var`` over the first axis: a wider entry's column
row by row; a one-element entry's column over a contiguous copy, which numpy sums pairwise:
``acres_gym.runtime.libm.pairwise_sum``), each divided by the row count and rounded to float32 as numpy's
``true_divide`` rounds it; the running figures follow ``update_from_moments`` operation by operation, in float64 but for
``batch_var * batch_count``, which numpy keeps in float32. ``normalize`` is
``np.clip((flat - mean) / sqrt(var + epsilon), -clip, clip).astype(np.float32)`` element by element.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from acres_gym.runtime.libm import pairwise_sum


@njit(cache=True, nogil=True)
def _column_sum(flat, c, pairwise, scratch):
    """The float32 sum of column ``c`` of ``flat`` as numpy's reduction adds it: from 0, pairwise over a
    contiguous copy (in ``scratch``) or row by row."""
    n = flat.shape[0]
    if pairwise:
        for i in range(n):
            scratch[i] = flat[i, c]
        return np.float32(0.0) + pairwise_sum(scratch, 0, n, False)
    total = np.float32(0.0)
    for i in range(n):
        total += flat[i, c]
    return total


@njit(cache=True, nogil=True)
def _column_moments(flat, c, pairwise, scratch, squares):
    """The float32 mean and variance of column ``c`` of ``flat`` (n rows), as ``np.mean`` / ``np.var`` reduce
    it: pairwise (a one-element entry) or row by row; ``scratch`` (n,) and ``squares`` (n, 1) are float32 work
    space."""
    n = flat.shape[0]
    mean = np.float32(_column_sum(flat, c, pairwise, scratch) / n)  # numpy's float32 true_divide, rounded once
    for i in range(n):
        d = flat[i, c] - mean
        squares[i, 0] = d * d
    return mean, np.float32(_column_sum(squares, 0, pairwise, scratch) / n)


@njit(cache=True, nogil=True)
def update_moments(flat, single, mean, var, denominator, count, epsilon):
    """``RunningMeanStd.update_from_moments`` of every column in place: ``flat`` (n, k) float32 observations,
    ``single[c]`` whether column c is a one-element entry, ``mean`` / ``var`` (k,) float64 running figures
    over ``count`` samples; ``denominator`` becomes ``sqrt(var + epsilon)``. Returns the new count."""
    n = flat.shape[0]
    scratch = np.empty(n, dtype=np.float32)
    squares = np.empty((n, 1), dtype=np.float32)
    tot_count = count + n
    for c in range(flat.shape[1]):
        batch_mean, batch_var = _column_moments(flat, c, single[c], scratch, squares)
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
