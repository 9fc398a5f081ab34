"""Ids declared by the task configs: ``id: <Name>-v<N>`` in a file under ``configs/tasks`` registers
``acres_gym/<Name>-v<N>`` (``acres_gym.registration``), so a new task with its own id is a task module and a
task file, nothing else."""

from __future__ import annotations

import gymnasium
import numpy as np
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
        resolve_top_level({"task": "speed_tracking", "id": "RangerHillClimb-v1"})
    env = gymnasium.make("acres_gym/RangerHillClimb-v1")
    assert "id" not in env.unwrapped.config
    env.close()


PARKED_FILE = """\
# A test task: stand still for a second.
# Nothing to do but wait.
id: RangerStandStill-v0
task: test_stand_still
max_episode_s: 1.0
action_mode: pedals
observations: [yaw_rate, roll_pitch]
randomization: {terrain: {kind: flat, size_m: 60.0}}
"""


@pytest.fixture
def stand_still_task():
    """A task written in the test against the contract alone, registered for the test's length."""
    from acres_gym.envs.tasks import TASKS, Figure, Scoring, Task, TaskFrame, register_task
    from acres_gym.envs.tasks.base import COMMON_FAILURES

    @register_task
    class StandStill(Task):
        name = "test_stand_still"
        scoring = Scoring(metric="fuel_used_g", higher_is_better=False, failures=COMMON_FAILURES,
                          figures=(Figure("fuel_used_g", "fuel g"),))

        def __init__(self, n, dt_s, max_steps, options=None, bounds=None):
            self.n, self.options, self.episode_summary = n, dict(options or {}), [{} for _ in range(n)]

        def prepare(self, rng):
            return 0.0

        @staticmethod
        def spawn_xy(episode):
            return 0.0, 0.0

        def draw(self, i, rng, episode=None):
            return 0.0, 0.0, episode

        def locate(self, x, y, rows, restart=False):
            pass

        def measure(self, x, y, yaw, steps):
            zero, no = np.zeros(self.n), np.zeros(self.n, dtype=bool)
            return TaskFrame(zero, zero, zero, np.zeros((self.n, 1)), np.zeros((self.n, 0, 2)), no, no)

    yield StandStill
    TASKS.pop("test_stand_still", None)
    for env_id in ("acres_gym/RangerStandStill-v0",):
        registry.pop(env_id, None)
        registration.ENVIRONMENTS.pop(env_id, None)


def test_a_task_file_with_an_id_registers_it_with_no_other_change(tmp_path, stand_still_task):
    (tmp_path / "stand_still.yaml").write_text(PARKED_FILE, encoding="utf-8")
    (tmp_path / "no_id.yaml").write_text("task: speed_tracking\n", encoding="utf-8")
    assert registration.register_envs(tmp_path) == ["acres_gym/RangerStandStill-v0"]
    assert registration.ENVIRONMENTS["acres_gym/RangerStandStill-v0"][0] == str(tmp_path / "stand_still.yaml")

    env = gymnasium.make("acres_gym/RangerStandStill-v0")
    assert env.spec.max_episode_steps == 20 and env.action_space.shape == (1,)
    assert type(env.unwrapped).__name__ == "RangerStandStill"
    assert type(env.unwrapped).__doc__ == "A test task: stand still for a second.\nNothing to do but wait."
    obs, _ = env.reset(seed=3)
    steps, done = 0, False
    while not done:
        obs, reward, terminated, truncated, info = env.step(np.zeros(1, np.float32))
        steps, done = steps + 1, terminated or truncated
    assert steps == 20 and truncated and not terminated
    env.close()
    # the class is made once: a second make is the same class
    assert type(gymnasium.make("acres_gym/RangerStandStill-v0").unwrapped) is type(env.unwrapped)

    venv = gymnasium.make_vec("acres_gym/RangerStandStill-v0", num_envs=3, vectorization_mode="vector_entry_point")
    assert type(venv).__name__ == "RangerStandStillVector" and venv.num_envs == 3
    venv.reset(seed=1)
    venv.step(np.zeros((3, 1), np.float32))
    venv.close()


def test_malformed_or_repeated_ids_are_refused_naming_the_files(tmp_path):
    (tmp_path / "a.yaml").write_text("id: ranger-v1\ntask: speed_tracking\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"a\.yaml: id = 'ranger-v1'.*RangerHillClimb-v1"):
        registration.task_ids(tmp_path)
    (tmp_path / "a.yaml").write_text("id: acres_gym/RangerX-v1\n", encoding="utf-8")
    with pytest.raises(ValueError, match="no namespace"):
        registration.task_ids(tmp_path)
    (tmp_path / "a.yaml").write_text("id: RangerX-v1\ntask: speed_tracking\n", encoding="utf-8")
    (tmp_path / "b.yaml").write_text("id: RangerX-v1\ntask: path_following\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"a\.yaml and .*b\.yaml both declare id = 'RangerX-v1'"):
        registration.task_ids(tmp_path)
