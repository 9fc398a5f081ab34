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
  Gymnasium docstring. They are also reachable as ``acres_gym.envs.tasks.<Class>``, the entry points the ids
  name. The ids are declared by the task configs (``id: RangerHillClimb-v2``; ``acres_gym.registration``); an
  id with no class of its name here gets one made from its task file (``environment_class``), so a task with
  its own id needs no class.
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


def environment_class(name: str) -> type | None:
    """The environment class an id's entry point names (``RangerHillClimb``, ``RangerHillClimbVector``):
    the one in ``environments``, or for a declared id with no class there, a ``RangerEnv`` (``RangerVectorEnv``
    for ``...Vector``) subclass whose default config is the id's task file and whose docstring is that file's
    leading comment. None when no declared id has that name."""
    from acres_gym.envs.tasks import environments

    if name in _ENVIRONMENTS:
        return getattr(environments, name)
    from acres_gym.registration import ENVIRONMENTS

    vector = name.endswith("Vector")
    for env_id, (task_config, entry_point, vector_entry_point) in ENVIRONMENTS.items():
        if (vector_entry_point if vector else entry_point).rpartition(":")[2] != name:
            continue
        from acres_gym.envs.ranger_env import RangerEnv
        from acres_gym.envs.vector_env import RangerVectorEnv

        made = type(name, (RangerVectorEnv if vector else RangerEnv,),
                    {"default_config": task_config, "__module__": __name__,
                     "__doc__": _file_description(task_config, env_id)})
        globals()[name] = made  # one class per name, so the class is stable across makes
        return made
    return None


def _file_description(task_config: str, env_id: str) -> str:
    """The leading comment block of a task file, as a docstring (the id and the file when it has none)."""
    from acres_gym.envs.config import task_config_path

    path = task_config_path(task_config)
    lines = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.startswith("#"):
            break
        lines.append(line[1:].strip())
    return "\n".join(lines) or f"{env_id}: the task of {path}."


def __getattr__(name: str) -> Any:
    # the environment classes load on first use: they import the environment, which imports the tasks
    made = environment_class(name) if name[:1].isupper() else None
    if made is not None:
        return made
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *_ENVIRONMENTS])
