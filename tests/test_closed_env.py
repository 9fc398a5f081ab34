"""A closed environment refuses to run: ``step``, ``reset`` and ``render`` after ``close()`` raise Gymnasium's
``ClosedEnvironmentError`` naming the method, for the single env (as ``gymnasium.make`` wraps it and bare), the
native vector env and the stable-baselines3 adapter; closing twice is harmless."""

from __future__ import annotations

import os
import re

import gymnasium
import numpy as np
import pytest
from gymnasium.error import ClosedEnvironmentError

import acres_gym  # noqa: F401  (registers the ids)
from acres_gym.envs.sb3 import RangerSB3VecEnv
from acres_gym.envs.tasks import RangerPathFollowing, RangerPathFollowingVector

os.environ.setdefault("SDL_VIDEODRIVER", "dummy")  # rgb_array environments; nothing is drawn after a close
ENV_IDS = sorted(k for k in gymnasium.registry if k.startswith("acres_gym/"))
# small flat ground keeps the resets cheap (as tests/test_envs.py)
FAST = {"randomization": {"terrain": {"kind": "flat", "size_m": 200.0, "cell_m": 2.0, "surface": "dry_asphalt"},
                          "patches": None, "wetness": None},
        "task_options": {"spawn_xy_m": [-80.0, 0.0], "spawn_yaw_rad": 0.0}}
FAST_NAVIGATION = {"randomization": {"terrain": {"kind": "flat", "size_m": 200.0, "cell_m": 2.0, "surface": "grass"}},
                   "task_options": {"terrain": {"goal_distance_m": [60.0, 120.0]}}}


def small(env_id: str) -> dict:
    return FAST_NAVIGATION if "Navigation" in env_id else FAST


def refused(name: str, method: str) -> str:
    return re.escape(f"{name}.{method}() called after close(); the environment is closed: make a new one")


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_a_closed_single_env_refuses_step_reset_and_render(env_id):
    env = gymnasium.make(env_id, config=small(env_id), render_mode="rgb_array")
    name = type(env.unwrapped).__name__
    env.reset(seed=0)
    action = env.action_space.sample()
    env.step(action)  # open: it runs
    env.close()
    env.close()  # again: nothing
    with pytest.raises(ClosedEnvironmentError, match=refused(name, "step")):
        env.step(action)
    with pytest.raises(ClosedEnvironmentError, match=refused(name, "reset")):
        env.reset(seed=0)
    with pytest.raises(ClosedEnvironmentError, match=refused(name, "render")):
        env.unwrapped.render()


def test_a_closed_bare_env_refuses_before_its_first_reset():
    env = RangerPathFollowing(small("path"))
    env.close()
    with pytest.raises(ClosedEnvironmentError, match=refused("RangerPathFollowing", "reset")):
        env.reset(seed=0)
    with pytest.raises(ClosedEnvironmentError, match=refused("RangerPathFollowing", "step")):
        env.step(np.zeros(env.action_space.shape, dtype=np.float32))


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_a_closed_vector_env_refuses_step_reset_and_render(env_id):
    venv = gymnasium.make_vec(env_id, num_envs=2, vectorization_mode="vector_entry_point", config=small(env_id),
                              render_mode="rgb_array")
    name = type(venv).__name__
    venv.reset(seed=0)
    actions = venv.action_space.sample()
    venv.step(actions)
    venv.close()
    venv.close()
    assert venv.closed
    with pytest.raises(ClosedEnvironmentError, match=refused(name, "step")):
        venv.step(actions)
    with pytest.raises(ClosedEnvironmentError, match=refused(name, "reset")):
        venv.reset(seed=0)
    with pytest.raises(ClosedEnvironmentError, match=refused(name, "render")):
        venv.render()


def test_a_closed_sb3_adapter_refuses_step_and_reset():
    venv = RangerSB3VecEnv.from_config(small("path"), num_envs=2, env_class=RangerPathFollowingVector)
    venv.reset()
    actions = np.zeros((2, *venv.action_space.shape), dtype=np.float32)
    venv.step(actions)
    venv.close()
    venv.close()
    assert venv.venv.closed
    with pytest.raises(ClosedEnvironmentError, match=refused("RangerSB3VecEnv", "step_async")):
        venv.step(actions)
    with pytest.raises(ClosedEnvironmentError, match=refused("RangerSB3VecEnv", "reset")):
        venv.reset()
    venv._actions = actions  # an action queued before the close is not stepped either
    with pytest.raises(ClosedEnvironmentError, match=refused("RangerSB3VecEnv", "step_wait")):
        venv.step_wait()
