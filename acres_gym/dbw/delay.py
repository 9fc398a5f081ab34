"""Delay lines of the DBW layer: fixed-size ring buffers of one sample per tick.

The seed keeps its delay histories in deques of (time, value); here they are ring buffers of
``RING_TICKS`` samples (enough for delays up to 0.5 s at 120 Hz) that all share one write index, the state's
``ring_head``, advanced once per tick. A delay that is not a whole number of ticks is read by linear
interpolation between the two neighbouring samples (``delay_line``).
"""

from __future__ import annotations

import math

from numba import njit

RING_TICKS = 64  # samples per delay line: 0.5 s at 120 Hz needs 61 (60 ticks plus one to interpolate)


@njit(cache=True)
def delay_line(ring, head, value, delay_s, dt):
    """Write this tick's ``value`` at ``head`` and return the value ``delay_s`` ago.

    Sample k ticks back is ``ring[head - k]``; a delay of d = delay_s / dt ticks reads
    ring[head - floor(d)] + frac(d) (ring[head - floor(d) - 1] - ring[head - floor(d)]), so a whole
    number of ticks is an exact shift and 0 passes ``value`` through. d is clamped to
    [0, RING_TICKS - 1].
    """
    ring[head] = value
    lag = delay_s / dt if dt > 0.0 else 0.0
    if not lag > 0.0:  # also catches NaN
        return value
    if lag > RING_TICKS - 1:
        lag = RING_TICKS - 1.0
    k = int(math.floor(lag))
    frac = lag - k
    newer = ring[(head - k + RING_TICKS) % RING_TICKS]
    if frac == 0.0:
        return newer
    older = ring[(head - k - 1 + 2 * RING_TICKS) % RING_TICKS]
    return newer + frac * (older - newer)


@njit(cache=True)
def fill_ring(ring, value):
    """Set every sample of a delay line to ``value`` (a history that has always been ``value``)."""
    for i in range(RING_TICKS):
        ring[i] = value
