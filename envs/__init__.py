"""Gymnasium environments around the acres_gym simulator.

- ``envs.ranger_env.RangerEnv``: one vehicle, configured by a task config (``envs.config``);
- ``envs.tasks``: the registered tasks ``RangerSpeedTracking`` and ``RangerPathFollowing`` (ids
  ``acres_gym/RangerSpeedTracking-v1``, ``acres_gym/RangerPathFollowing-v1``) and their vector forms;
- ``envs.vector_env.RangerVectorEnv``: N vehicles stepped by one simulator call;
- ``envs.sb3.RangerSB3VecEnv``: the vector env as a stable-baselines3 ``VecEnv``;
- ``envs.actions``, ``envs.observations``, ``envs.task_logic``, ``envs.rewards``, ``envs.randomization``:
  action modes, observation items, task references, reward plug-ins, per-episode randomisation;
- ``python -m envs.bench``: environment throughput.
"""
