"""Gymnasium registration of the acres_gym environments (run by ``import acres_gym``).

Ids carry a version; a change of behaviour gets a new version instead of changing an existing one (the
old id then raises Gymnasium's ``DeprecatedEnv`` naming the new one; the version history is in each task's
docstring, ``acres_gym.envs.tasks``). Entry points are strings, so registering imports nothing from ``envs``:

========================================== ===================================================
id                                         entry points (``acres_gym.envs.tasks:``, single / vector)
========================================== ===================================================
``acres_gym/RangerSpeedTracking-v3``       ``RangerSpeedTracking`` / ``RangerSpeedTrackingVector``
``acres_gym/RangerPathFollowing-v3``       ``RangerPathFollowing`` / ``RangerPathFollowingVector``
``acres_gym/RangerHillClimb-v1``           ``RangerHillClimb`` / ``RangerHillClimbVector``
``acres_gym/RangerOffroadNavigation-v1``   ``RangerOffroadNavigation`` / ``RangerOffroadNavigationVector``
========================================== ===================================================

An id fixes its task, spaces and config: a config that changes the task kind (``task``) of an id is an
error naming the key, and so is a task config that is another id's own (``config="hill_climb"``) when it
changes the spaces (it names the key and the id to use); with equal spaces it keeps working.

The episode length follows the config everywhere: the ids are registered without ``max_episode_steps``, so
``gymnasium.make`` adds no ``TimeLimit`` of its own, and the environment truncates its episodes after the
config's ``max_episode_s`` (``max_episode_s`` x ``control_hz`` steps), whether it comes from the task file,
``config={...}``, a keyword (``max_episode_s=60``), ``gymnasium.make_vec`` or ``train.py --set
env_config.max_episode_s=40``. The environment's ``spec.max_episode_steps`` states that length (``make``
and ``make_vec`` set the spec; the environment fills in its own length). A ``max_episode_steps=`` given to
``gymnasium.make`` still adds a ``TimeLimit`` on top, and to ``make_vec`` a step limit: the shorter ends
the episode::

    import gymnasium
    import acres_gym  # noqa: F401  (registers the ids)

    env = gymnasium.make("acres_gym/RangerSpeedTracking-v3", render_mode="rgb_array")
    venv = gymnasium.make_vec("acres_gym/RangerSpeedTracking-v3", num_envs=16,
                              vectorization_mode="vector_entry_point")
"""

from __future__ import annotations

NAMESPACE = "acres_gym"

# id -> (task config name, entry point, vector entry point)
ENVIRONMENTS: dict[str, tuple[str, str, str]] = {
    f"{NAMESPACE}/RangerSpeedTracking-v3": ("speed_tracking", "acres_gym.envs.tasks:RangerSpeedTracking",
                                            "acres_gym.envs.tasks:RangerSpeedTrackingVector"),
    f"{NAMESPACE}/RangerPathFollowing-v3": ("path_following", "acres_gym.envs.tasks:RangerPathFollowing",
                                            "acres_gym.envs.tasks:RangerPathFollowingVector"),
    f"{NAMESPACE}/RangerHillClimb-v1": ("hill_climb", "acres_gym.envs.tasks:RangerHillClimb",
                                        "acres_gym.envs.tasks:RangerHillClimbVector"),
    f"{NAMESPACE}/RangerOffroadNavigation-v1": ("offroad_navigation", "acres_gym.envs.tasks:RangerOffroadNavigation",
                                                "acres_gym.envs.tasks:RangerOffroadNavigationVector"),
}


def id_for_config(task_config: str) -> str | None:
    """The registered id whose own task config is ``task_config`` (None if no id has it)."""
    return next((env_id for env_id, (name, _e, _v) in ENVIRONMENTS.items() if name == task_config), None)


def register_envs() -> list[str]:
    """Register every acres_gym id not registered yet; returns the ids (none without gymnasium, as on a
    vehicle computer that runs only ``acres_gym.vehicle.deploy``)."""
    try:
        from gymnasium.envs.registration import register, registry
    except ImportError:
        return []

    for env_id, (_task_config, entry_point, vector_entry_point) in ENVIRONMENTS.items():
        if env_id in registry:
            continue
        # no max_episode_steps: the environment truncates by its config (the module docstring)
        register(id=env_id, entry_point=entry_point, vector_entry_point=vector_entry_point,
                 disable_env_checker=False)
    return list(ENVIRONMENTS)


register_envs()
