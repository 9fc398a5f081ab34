"""Gymnasium environments around the acres_gym simulator.

- ``acres_gym.envs.ranger_env.RangerEnv``: one vehicle, configured by a task config (``acres_gym.envs.config``);
- ``acres_gym.envs.tasks``: the registered environment classes ``RangerSpeedTracking``, ``RangerPathFollowing``,
  ``RangerHillClimb`` and ``RangerOffroadNavigation`` and their vector forms (ids in
  ``acres_gym.registration``); a task's logic (reference, errors, termination) is not there but in
  ``acres_gym.envs.task_logic`` (and ``acres_gym.envs.offroad`` for the navigation task);
- ``acres_gym.envs.vector_env.RangerVectorEnv``: N vehicles stepped by one simulator call;
- ``acres_gym.envs.sb3.RangerSB3VecEnv``: the vector env as a stable-baselines3 ``VecEnv``;
- ``acres_gym.envs.actions``, ``acres_gym.envs.observations``, ``acres_gym.envs.task_logic``,
  ``acres_gym.envs.rewards``, ``acres_gym.envs.randomization``:
  action modes, observation items, task references, reward plug-ins, per-episode randomisation;
- ``python -m acres_gym.envs.bench``: environment throughput.
"""
