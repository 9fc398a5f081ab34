"""acres_gym.runtime.libm: the C library's exponential and trigonometry over arrays, element for element."""

from __future__ import annotations

import math

import numpy as np
import pytest

from acres_gym.runtime import libm


def _values(seed: int = 3, n: int = 2000) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.concatenate([rng.normal(0.0, 3.0, n), rng.uniform(-745.0, 709.0, n), [0.0, -0.0, -np.inf, np.inf]])


def test_exp_is_the_c_librarys_exp_of_every_element_in_any_shape():
    x = _values()
    want = np.array([math.exp(v) if v < 709.8 else math.inf for v in x])
    got = libm.exp(x.reshape(2, -1))
    assert got.shape == (2, x.size // 2)
    assert got.reshape(-1).tobytes() == want.tobytes()
    assert np.isnan(libm.exp([np.nan]))[0]
    assert libm.exp(2.0).shape == () and float(libm.exp(2.0)) == math.exp(2.0)


def test_exp_in_place_writes_its_argument_and_refuses_arrays_it_cannot_write_through():
    x = _values(n=10)
    rows = np.stack([x, -x])
    top = rows[:1]
    assert libm.exp_in_place(top) is top
    assert rows[0].tobytes() == np.array([math.exp(v) for v in x]).tobytes()
    assert rows[1].tobytes() == (-x).tobytes()
    with pytest.raises(ValueError, match="C-contiguous float64"):
        libm.exp_in_place(rows[:, ::2])
    with pytest.raises(ValueError, match="float32"):
        libm.exp_in_place(np.zeros(3, dtype=np.float32))


def test_heading_frame_is_the_rotation_by_the_c_librarys_cosine_and_sine():
    rng = np.random.default_rng(8)
    dx, dy, yaw = rng.normal(0, 50, 500), rng.normal(0, 50, 500), rng.uniform(-10, 10, 500)
    cos_yaw, sin_yaw, forward, left, bearing = libm.heading_frame(dx, dy, yaw)
    for i in range(500):
        c, s = math.cos(yaw[i]), math.sin(yaw[i])
        f, lft = c * dx[i] + s * dy[i], -s * dx[i] + c * dy[i]
        assert (cos_yaw[i], sin_yaw[i], forward[i], left[i], bearing[i]) == (c, s, f, lft, math.atan2(lft, f))
    # the bearing of a point straight ahead, to the left, behind
    _, _, _, _, b = libm.heading_frame([1.0, 0.0, -1.0], [0.0, 1.0, 0.0], [0.0, 0.0, 0.0])
    assert b.tolist() == [0.0, math.pi / 2, math.pi]
