"""The training callbacks read each task's declared metric and figures: RMSEs where lower is better, success for
a goal task; a short navigation run reports the task's own figures."""

from __future__ import annotations

import math

import gymnasium
import numpy as np

import acres_gym  # noqa: F401
from acres_gym.agents import training
from acres_gym.envs.sb3 import RangerSB3VecEnv
from acres_gym.envs.tasks import task_class


def test_each_task_has_its_metric_and_direction():
    assert training.task_metric({"task": "speed_tracking"}) == "speed_rmse_mps"
    assert training.task_metric({"task": "path_following"}) == "lateral_rmse_m"
    assert training.task_metric({"task": "offroad_navigation"}) == "success"
    assert task_class("offroad_navigation").scoring.higher_is_better
    assert not task_class("speed_tracking").scoring.higher_is_better
    base = {"success": 0.3, "speed_rmse_mps": 0.2, "failed": 0.0, "distance_m": 100.0}
    assert training.beats({**base, "success": 0.5}, base, "success", higher_is_better=True)
    assert not training.beats({**base, "success": 0.3}, base, "success", higher_is_better=True)
    assert training.beats({**base, "speed_rmse_mps": 0.1}, base, "speed_rmse_mps")
    assert not training.beats({**base, "speed_rmse_mps": 0.1, "distance_m": 10.0}, base, "speed_rmse_mps")


NAV_END = {"time_s": 12.0, "episode_return": 3.0, "episode_steps": 120, "distance_m": 30.0, "fuel_used_g": 9.0,
           "fuel_g_per_km": 300.0, "goal_distance_m": 2.0, "ground_cause": 0, "rolled_over": False,
           "diverged": False, "off_course": False, "off_terrain": False}


def test_a_navigation_episode_succeeds_when_its_goal_is_reached_and_fails_by_any_cause():
    nav = task_class("offroad_navigation")
    info = {"episode": {"r": 1.0, "l": 10},
            "metrics": {**NAV_END, "goal_reached": True, "no_go": False, "stuck": False}}
    (row,) = training._finished_episodes([info], nav)
    assert row["success"] == 1.0 and row["failed"] == 0.0 and row["time_to_goal_s"] == 12.0
    for cause in ("no_go", "stuck"):
        info["metrics"] = {**NAV_END, "goal_reached": False, "no_go": False, "stuck": False, cause: True}
        (row,) = training._finished_episodes([info], nav)
        assert row["success"] == 0.0 and row["failed"] == 1.0 and row[cause] == 1.0, cause
        assert math.isnan(row["time_to_goal_s"]) and "lateral_rmse_m" not in row


def test_the_sb3_vecenv_passes_the_navigation_flags_at_the_end_of_an_episode():
    venv = gymnasium.make_vec("acres_gym/RangerOffroadNavigation-v2", num_envs=2,
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
    assert ended and all({"goal_reached", "no_go", "stuck", "goal_distance_m", "time_s"} <= set(info["metrics"])
                         for info in ended)
    assert not any(info["metrics"]["goal_reached"] for info in ended)  # 1 s at rest reaches no goal
    rows = training._finished_episodes(ended, training.task_of_env(env))
    assert all(r["success"] == 0.0 and r["goal_distance_m"] > 0 for r in rows)
