"""Gymnasium environments around the acres_gym simulator.

- ``acres_gym.envs.ranger_env.RangerEnv``: one vehicle, configured by a task config (``acres_gym.envs.config``);
- ``acres_gym.envs.tasks``: the task contract (``base``: ``Task``, its ``Scoring``, ``TaskFrame``,
  ``register_task``), the tasks, one module each (``path_speed``: speed tracking, path following, hill
  climbing; ``navigation``: off-road navigation), and the registered environment classes
  (``RangerSpeedTracking``, ``RangerPathFollowing``, ``RangerHillClimb``, ``RangerOffroadNavigation`` and
  their vector forms; ids in ``acres_gym.registration``);
- ``acres_gym.envs.core.RangerBatch``: what every task shares: the simulator, actions, end conditions,
  rewards and observations of N vehicles;
- ``acres_gym.envs.vector_env.RangerVectorEnv``: N vehicles stepped by one simulator call;
- ``acres_gym.envs.sb3.RangerSB3VecEnv``: the vector env as a stable-baselines3 ``VecEnv``;
- ``acres_gym.envs.actions``, ``acres_gym.envs.observations``, ``acres_gym.envs.rewards``,
  ``acres_gym.envs.randomization``: action modes, observation items, reward plug-ins, per-episode
  randomisation;
- ``python -m acres_gym.envs.bench``: environment throughput.
"""

import sys as _sys

from acres_gym.envs.tasks import navigation as _navigation
from acres_gym.envs.tasks import path_speed as _path_speed

# Environments pickled by earlier versions (training checkpoints) name the task modules by their old paths.
_sys.modules.setdefault("acres_gym.envs.task_logic", _path_speed)
_sys.modules.setdefault("acres_gym.envs.offroad", _navigation)
