"""Gymnasium registration of the acres_gym environments (run by ``import acres_gym``).

A task config declares its own id: the top-level ``id`` key of a file under ``configs/tasks``
(``id: RangerHillClimb-v2``) registers ``acres_gym/<id>`` with that file as the id's config, so a new task
with its own id touches ``envs/tasks/`` and ``configs/tasks/`` only. Ids carry a version; a change of
behaviour gets a new version instead of changing an existing one (the old id then raises Gymnasium's
``DeprecatedEnv`` naming the new one; the version history is in each task's docstring,
``acres_gym.envs.tasks``). Entry points are strings named after the id (``acres_gym.envs.tasks:<Name>`` and
``<Name>Vector``), so registering reads the task files and imports nothing from ``envs``; the environment
class is the one of that name in ``acres_gym.envs.tasks.environments`` (with its Gymnasium docstring), or one
made from the task file for an id that has no class of its own. ``ENVIRONMENTS`` lists the ids with their task
configs and entry points (the documentation's environments page shows each).

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

import re
from pathlib import Path

NAMESPACE = "acres_gym"
ID_KEY = "id"
"""The top-level key of a task config that declares the id the file registers."""
ID_PATTERN = re.compile(r"[A-Z][A-Za-z0-9]*-v(0|[1-9][0-9]*)")
"""A declared id: a class-like name and a version (``RangerHillClimb-v2``), no namespace."""
ENTRY_MODULE = "acres_gym.envs.tasks"


def _task_files(folder: Path | None) -> list[Path]:
    if folder is None:
        from acres_gym import paths

        folder = paths.config_path("tasks")
    return sorted(Path(folder).glob("*.yaml")) if Path(folder).is_dir() else []


def _declared_id(path: Path) -> str | None:
    """The ``id`` a task file declares (None when it declares none); ``ValueError`` naming the file, the
    value and the form an id takes when it is malformed."""
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    data = yaml.load(path.read_text(encoding="utf-8"), Loader=loader)  # noqa: S506  (a safe loader)
    if not isinstance(data, dict) or data.get(ID_KEY) is None:
        return None
    value = data[ID_KEY]
    if not isinstance(value, str) or not ID_PATTERN.fullmatch(value):
        raise ValueError(f"{path}: {ID_KEY} = {value!r}: expected a name and a version such as "
                         f"'RangerHillClimb-v2' (no namespace; {NAMESPACE}/ is added)")
    return value


def task_ids(folder: str | Path | None = None) -> dict[str, tuple[str, str, str]]:
    """The ids the task files of ``folder`` (default: the config directory's ``tasks``) declare: id ->
    (its task config: a name under the config directory's ``tasks``, or the file's path for another
    folder; entry point; vector entry point). Two files declaring one id raise ``ValueError`` naming both."""
    packaged = folder is None
    ids: dict[str, tuple[str, str, str]] = {}
    where: dict[str, Path] = {}
    for path in _task_files(None if folder is None else Path(folder)):
        declared = _declared_id(path)
        if declared is None:
            continue
        env_id = f"{NAMESPACE}/{declared}"
        if env_id in ids:
            raise ValueError(f"task configs {where[env_id]} and {path} both declare {ID_KEY} = {declared!r}; "
                             f"an id has one task config")
        name = declared.rsplit("-v", 1)[0]
        ids[env_id] = (path.stem if packaged else str(path), f"{ENTRY_MODULE}:{name}",
                       f"{ENTRY_MODULE}:{name}Vector")
        where[env_id] = path
    return ids


# id -> (task config, entry point, vector entry point), from the task files (``task_ids``); filled by
# ``register_envs``, so a process without gymnasium (the vehicle runtime: numpy and onnxruntime only) reads no
# task file and needs no yaml
ENVIRONMENTS: dict[str, tuple[str, str, str]] = {}


def id_for_config(task_config: str) -> str | None:
    """The registered id whose own task config is ``task_config`` (None if no id has it)."""
    return next((env_id for env_id, (name, _e, _v) in ENVIRONMENTS.items() if name == task_config), None)


def register_envs(folder: str | Path | None = None) -> list[str]:
    """Register every id the task files declare (``task_ids(folder)``) that is not registered yet, and add
    them to ``ENVIRONMENTS``; returns the ids. Without gymnasium (a vehicle computer that runs only
    ``acres_gym.vehicle.deploy``) it registers nothing and reads no task file, so neither gymnasium nor yaml
    is needed there."""
    try:
        from gymnasium.envs.registration import register, registry
    except ImportError:
        return []

    declared = task_ids(folder)
    for env_id, (_task_config, entry_point, vector_entry_point) in declared.items():
        if env_id in registry:
            continue
        # no max_episode_steps: the environment truncates by its config (the module docstring)
        register(id=env_id, entry_point=entry_point, vector_entry_point=vector_entry_point,
                 disable_env_checker=False)
    ENVIRONMENTS.update(declared)
    return list(declared)


register_envs()
