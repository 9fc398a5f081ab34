"""The training callbacks' task metric per task: RMSEs where lower is better, success for a goal task."""

from __future__ import annotations

import gymnasium
import numpy as np

import acres_gym  # noqa: F401
from acres_gym.agents import training
from acres_gym.envs.sb3 import RangerSB3VecEnv


def test_each_task_has_its_metric_and_direction():
    assert training.task_metric({"task": "speed_tracking"}) == "speed_rmse_mps"
    assert training.task_metric({"task": "path_following"}) == "lateral_rmse_m"
    assert training.task_metric({"task": "offroad_navigation"}) == "success"
    base = {"success": 0.3, "speed_rmse_mps": 0.2, "failed": 0.0, "distance_m": 100.0}
    assert training.beats({**base, "success": 0.5}, base, "success")
    assert not training.beats({**base, "success": 0.3}, base, "success")
    assert training.beats({**base, "speed_rmse_mps": 0.1}, base, "speed_rmse_mps")
    assert not training.beats({**base, "speed_rmse_mps": 0.1, "distance_m": 10.0}, base, "speed_rmse_mps")


def test_a_navigation_episode_succeeds_when_its_goal_is_reached():
    info = {"episode": {"r": 1.0, "l": 10}, "metrics": {"goal_reached": True, "no_go": False, "stuck": False}}
    (row,) = training._finished_episodes([info])
    assert row["success"] == 1.0 and row["failed"] == 0.0
    info["metrics"] = {"goal_reached": False, "no_go": True, "stuck": False}
    (row,) = training._finished_episodes([info])
    assert row["success"] == 0.0 and row["failed"] == 1.0


def test_the_sb3_vecenv_passes_the_navigation_flags_at_the_end_of_an_episode():
    venv = gymnasium.make_vec("acres_gym/RangerOffroadNavigation-v0", num_envs=2,
                              vectorization_mode="vector_entry_point", autoreset_mode="SameStep",
                              config={"max_episode_s": 1.0})
    env = RangerSB3VecEnv(venv)
    env.seed(3)
    env.reset()
    ended = []
    for _ in range(12):
        _, _, dones, infos = env.step(np.zeros((2, env.action_space.shape[0]), np.float32))
        ended += [info for info, done in zip(infos, dones, strict=True) if done]
    env.close()
    assert ended and all({"goal_reached", "no_go", "stuck"} <= set(info["metrics"]) for info in ended)
    assert not any(info["metrics"]["goal_reached"] for info in ended)  # 1 s at rest reaches no goal
