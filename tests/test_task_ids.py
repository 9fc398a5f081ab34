"""Ids declared by the task configs: ``id: <Name>-v<N>`` in a file under ``configs/tasks`` registers
``acres_gym/<Name>-v<N>`` (``acres_gym.registration``), so a new task with its own id is a task module and a
task file, nothing else (``tests/test_tasks.py`` registers one written in the test)."""

from __future__ import annotations

import gymnasium
import pytest
import yaml
from gymnasium.envs.registration import registry

import acres_gym  # noqa: F401  (registers the ids)
from acres_gym import registration
from acres_gym.envs.config import load_config, resolve_top_level, tasks_dir


def test_every_registered_id_is_the_one_its_task_file_declares():
    declared = {}
    for path in sorted(tasks_dir().glob("*.yaml")):
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        if data.get("id"):
            declared[f"acres_gym/{data['id']}"] = path.stem
    assert len(declared) == 4
    assert {env_id: entry[0] for env_id, entry in registration.ENVIRONMENTS.items()} == declared
    for env_id, (task_config, entry_point, vector_entry_point) in registration.ENVIRONMENTS.items():
        spec = registry[env_id]
        assert spec.entry_point == entry_point and spec.vector_entry_point == vector_entry_point
        assert registration.id_for_config(task_config) == env_id
        env_class = gymnasium.envs.registration.load_env_creator(entry_point)
        assert env_class.default_config == task_config
        assert "## Version History" in env_class.__doc__  # the shipped ids keep their documented classes


def test_the_id_declaration_never_reaches_an_environment_config():
    assert "id" in yaml.safe_load((tasks_dir() / "hill_climb.yaml").read_text(encoding="utf-8"))
    assert "id" not in load_config("hill_climb")
    with pytest.raises(ValueError, match="'id'"):
        resolve_top_level({"task": "speed_tracking", "id": "RangerHillClimb-v2"})
    env = gymnasium.make("acres_gym/RangerHillClimb-v2")
    assert "id" not in env.unwrapped.config
    env.close()


def test_malformed_or_repeated_ids_are_refused_naming_the_files(tmp_path):
    (tmp_path / "a.yaml").write_text("id: ranger-v1\ntask: speed_tracking\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"a\.yaml: id = 'ranger-v1'.*RangerHillClimb-v2"):
        registration.task_ids(tmp_path)
    (tmp_path / "a.yaml").write_text("id: acres_gym/RangerX-v1\n", encoding="utf-8")
    with pytest.raises(ValueError, match="no namespace"):
        registration.task_ids(tmp_path)
    (tmp_path / "a.yaml").write_text("id: RangerX-v1\ntask: speed_tracking\n", encoding="utf-8")
    (tmp_path / "b.yaml").write_text("id: RangerX-v1\ntask: path_following\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"a\.yaml and .*b\.yaml both declare id = 'RangerX-v1'"):
        registration.task_ids(tmp_path)
