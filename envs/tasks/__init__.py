"""The tasks: what each asks of the vehicle, when its episode ends, and the environments that run it.

A task is one module here plus its config under ``configs/tasks`` (its parameters, rewards and
randomisation), and is run by the generic environment (``acres_gym.envs.core.RangerBatch``: the physics,
the DBW layer, the end conditions every task shares: rollover, divergence, leaving the terrain):

- ``base``: the contract every task keeps (``Task``: its draw, its measurements, optional hooks and its
  ``Scoring``), ``TaskFrame``, and the registry (``register_task``, ``make_task``, ``TASKS``); the task
  modules are imported with this package (one line below each), so their tasks are registered;

- ``path_speed``: the path tasks (speed tracking, path following and hill climbing, which is speed
  tracking on soil grades): the reference path and speed profile of each episode, the errors against
  them, the corridor and the path's end (``PathSpeedTask``);
- ``navigation``: off-road navigation to a goal (``OffroadNavigationTask``): the solvable terrain of each
  episode, the goal, no-go areas, getting stuck, the egocentric ``local_map``, and why an episode fell
  short (``after_step``);
- ``environments``: the registered environment classes (``RangerSpeedTracking``, ``RangerPathFollowing``,
  ``RangerHillClimb``, ``RangerOffroadNavigation`` and their vector forms), each a default config and its
  Gymnasium docstring; the ids are in ``acres_gym.registration``. They are also reachable as
  ``acres_gym.envs.tasks.<Class>``, the entry points the ids name.
"""

from __future__ import annotations

from typing import Any

from acres_gym.envs.tasks import navigation, path_speed  # noqa: E402, F401  (each registers its tasks)
from acres_gym.envs.tasks.base import (
    TASKS,
    Figure,
    Scoring,
    Task,
    TaskFrame,
    TaskView,
    make_task,
    register_task,
    task_class,
)

__all__ = ["TASKS", "Figure", "Scoring", "Task", "TaskFrame", "TaskView", "make_task", "register_task", "task_class"]

_ENVIRONMENTS = ("RangerSpeedTracking", "RangerPathFollowing", "RangerHillClimb", "RangerOffroadNavigation",
                 "RangerSpeedTrackingVector", "RangerPathFollowingVector", "RangerHillClimbVector",
                 "RangerOffroadNavigationVector")


def __getattr__(name: str) -> Any:
    # the environment classes load on first use: they import the environment, which imports the tasks
    if name in _ENVIRONMENTS:
        from acres_gym.envs.tasks import environments

        return getattr(environments, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *_ENVIRONMENTS])
