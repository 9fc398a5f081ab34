"""The policies shipped as package data (``acres_gym.agents.pretrained``): found by id, driven through the
vehicle runtime, each beating its task's baseline on the trainer's evaluation seeds; an id without one is a
one-line error naming the ids that have one."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml

import acres_gym  # noqa: F401
from acres_gym.agents.evaluate import baseline_entry, compare, task_of
from acres_gym.agents.evaluate import main as evaluate_main
from acres_gym.agents.pretrained import RuntimePolicy, pretrained_dir, pretrained_policy, shipped_ids, slug
from acres_gym.agents.training import beats
from acres_gym.agents.watch import resolve_policy
from acres_gym.configuration import merge_configs
from acres_gym.envs.config import load_config
from acres_gym.paths import config_path
from acres_gym.registration import ENVIRONMENTS

pytest.importorskip("onnxruntime")

SHIPPED = shipped_ids()
MISSING = sorted(set(ENVIRONMENTS) - set(SHIPPED))


def test_slug_is_the_ids_name_in_snake_case():
    assert slug("acres_gym/RangerSpeedTracking-v3") == "ranger_speed_tracking_v3"
    assert slug("acres_gym/RangerOffroadNavigation-v2") == "ranger_offroad_navigation_v2"


def test_at_least_one_policy_ships_and_each_manifest_records_its_training():
    assert SHIPPED, "no policy in configs/pretrained"
    for env_id in SHIPPED:
        folder = pretrained_dir(env_id)
        assert folder.name == slug(env_id)
        trained = json.loads((folder / "manifest.json").read_text())["trained"]
        train_config = yaml.safe_load(config_path("train", trained["config"] + ".yaml").read_text())
        assert trained["env_id"] == train_config["env_id"] == env_id
        assert trained["seed"] == train_config["seed"] and trained["algo"] == train_config["algo"]
        assert trained["steps"] >= trained["first_beats_baseline"]["steps"] > 0
        assert (folder / "policy.onnx").stat().st_size < 500_000  # an MLP's weights, not a run directory
        # the command that trained it: the config, the seed and the learner, and any setting that differs from
        # the config as it ships now (the total steps at least)
        command = trained["model"].split()
        assert command[:4] == ["python", "train.py", "--config", trained["config"]]
        assert command[command.index("--seed") + 1] == str(trained["seed"])
        assert command[command.index("--backend") + 1] == trained["backend"] in ("sb3", "lean")
        if "--total-steps" in command:
            assert command[command.index("--total-steps") + 1] == str(trained["total_steps"])
        else:
            assert trained["total_steps"] == train_config["total_steps"], env_id


@pytest.mark.parametrize("env_id", MISSING or ["acres_gym/NoSuchId-v0"])
def test_an_id_without_a_shipped_policy_is_one_line_naming_the_ids_with_one(env_id):
    with pytest.raises(ValueError) as info:
        pretrained_policy(env_id)
    message = str(info.value)
    assert "\n" not in message and repr(env_id) in message and "no pretrained policy" in message
    assert all(shipped in message for shipped in SHIPPED)
    with pytest.raises(ValueError, match="no pretrained policy"):
        resolve_policy("pretrained", env_id)


def test_evaluate_exits_2_with_one_line_for_an_id_without_a_policy(capsys):
    env_id = MISSING[0] if MISSING else "acres_gym/NoSuchId-v0"
    with pytest.raises(SystemExit) as info:
        evaluate_main(["--env", env_id, "--model", "pretrained", "--episodes", "1"])
    assert info.value.code == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "--model pretrained" in err and SHIPPED[0] in err


def test_the_loader_drives_a_vector_env_through_one_runtime_per_vehicle():
    """The shipped policy's factory on a 2-vehicle env: one runtime per vehicle, each action the runtime's for
    that vehicle's own reports (the vehicles differ), and a zero action for a vehicle being reset."""
    from acres_gym.agents.evaluate import make_vector_env

    env_id = SHIPPED[0]
    factory, mode, config = pretrained_policy(env_id)
    venv = make_vector_env(env_id, 2, config, mode)
    try:
        venv.reset(seed=[3, 4])
        policy = factory(venv)
        assert isinstance(policy, RuntimePolicy) and len(policy.runtimes) == 2
        policy.reset(np.ones(2, dtype=bool))
        history = []
        for _ in range(40):
            actions = policy(None)
            venv.step(actions)
            history.append(actions)
        assert actions.shape == (2, venv.single_action_space.shape[0]) and np.isfinite(history).all()
        assert max(np.abs(a[0] - a[1]).max() for a in history) > 1e-4
        assert np.array_equal(actions[1], policy.runtimes[1].last_action)
        venv.unwrapped._autoreset[:] = [True, False]
        actions = policy(None)
        assert not actions[0].any() and actions[1].any()
    finally:
        venv.close()


def test_the_package_lists_every_shipped_policy_folder():
    from setuptools.config.pyprojecttoml import load_file

    config = load_file(Path(__file__).resolve().parents[1] / "pyproject.toml")["tool"]["setuptools"]
    for env_id in SHIPPED:
        assert f"acres_gym.configs.pretrained.{slug(env_id)}" in config["packages"]
    assert any("*.onnx" in pattern for pattern in config["package-data"]["acres_gym.configs"])


@pytest.mark.slow
@pytest.mark.parametrize("env_id", SHIPPED)
def test_each_shipped_policy_beats_its_baseline_on_the_evaluation_seeds(env_id):
    """Through the runtime, on the trainer's evaluation seeds (its training config's ``eval_seed``, 8
    episodes; the held-out terrain split where the task has one), by the trainer's own rule
    (``acres_gym.agents.training.beats``)."""
    trained = json.loads((pretrained_dir(env_id) / "manifest.json").read_text())["trained"]
    train_config = yaml.safe_load(config_path("train", trained["config"] + ".yaml").read_text())
    factory, mode, config = pretrained_policy(env_id)
    task = task_of(env_id, config)
    if "splits" in load_config(ENVIRONMENTS[env_id][0]).get("task_options", {}):
        config = merge_configs(config, {"task_options": {"split": "test"}})
    baseline = train_config["baseline"]
    results = compare({"pretrained": (factory, mode), baseline: baseline_entry(baseline)}, env_id,
                      episodes=8, seed=train_config["eval_seed"], config=config)
    learned, base = results["pretrained"]["mean"], results[baseline]["mean"]
    metric = task.scoring.metric
    assert beats(learned, base, metric, task.scoring.higher_is_better), (metric, learned[metric], base[metric])


def test_evaluate_and_watch_run_the_shipped_policy_from_the_command_line(tmp_path):
    """``evaluate --model pretrained`` prints a ``pretrained`` row; ``watch --model pretrained`` drives."""
    env_id = SHIPPED[0]
    done = subprocess.run([sys.executable, "-m", "acres_gym.agents.evaluate", "--env", env_id, "--model",
                           "pretrained", "--episodes", "2"], capture_output=True, text=True, check=True)
    assert any(line.startswith("pretrained ") for line in done.stdout.splitlines())
    done = subprocess.run([sys.executable, "-m", "acres_gym.agents.watch", "--env", env_id, "--model", "pretrained",
                           "--frames", str(tmp_path), "--max-steps", "3"], capture_output=True, text=True, check=True,
                          env={**os.environ, "SDL_VIDEODRIVER": "dummy"})
    assert "episode 0" in done.stdout and len(list(tmp_path.glob("*.png"))) == 4
