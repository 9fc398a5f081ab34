"""One default per option: a task config (``configs/tasks/*.yaml``) sets only what differs from the code's
defaults (the task's ``option_defaults``, the navigation map's ``MAP_DEFAULTS``, the terrain generator's
``DEFAULTS``), so no default is written twice."""

from __future__ import annotations

import pytest

from acres_gym.envs.config import available_task_configs, load_config
from acres_gym.envs.tasks import task_class
from acres_gym.envs.tasks.offroad import DEFAULTS as TERRAIN_DEFAULTS


def _as_lists(value):
    if isinstance(value, (list, tuple)):
        return [_as_lists(v) for v in value]
    return value


def repeated_defaults(given: dict, defaults: dict, where: str) -> list[str]:
    """The keys of ``given`` (at any depth) whose value is the default's."""
    found = []
    for key, value in given.items():
        if key not in defaults:
            continue
        if isinstance(value, dict) and isinstance(defaults[key], dict):
            found += repeated_defaults(value, defaults[key], f"{where}.{key}")
        elif _as_lists(value) == _as_lists(defaults[key]):
            found.append(f"{where}.{key} = {value!r}")
    return found


def test_the_check_finds_a_repeated_default():
    defaults = {"a": 1.0, "m": {"rows": 16, "channels": ["x", "y"]}, "r": (0.0, 1.0)}
    given = {"a": 2.0, "m": {"rows": 16, "channels": ["x"]}, "r": [0.0, 1.0]}
    assert repeated_defaults(given, defaults, "t") == ["t.m.rows = 16", "t.r = [0.0, 1.0]"]


@pytest.mark.parametrize("name", available_task_configs())
def test_a_task_config_sets_only_what_differs_from_the_code(name):
    config = load_config(name)
    options = config.get("task_options") or {}
    found = repeated_defaults(options, task_class(config["task"]).option_defaults, "task_options")
    if isinstance(options.get("terrain"), dict):
        found += repeated_defaults(options["terrain"], TERRAIN_DEFAULTS, "task_options.terrain")
    assert not found, f"configs/tasks/{name}.yaml repeats the code's defaults: {found}"
