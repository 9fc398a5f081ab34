"""``train.py`` end to end on the smoke config: training, saving and evaluation in a subprocess."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]


def run_train(*args: str, timeout: float = 600.0) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(ROOT / "train.py"), *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout)


def test_train_smoke_saves_model_config_and_report(tmp_path, monkeypatch):
    monkeypatch.setenv("SDL_VIDEODRIVER", "dummy")
    out = tmp_path / "run"
    done = run_train("--config", "configs/train/smoke.yaml", "--total-steps", "256", "--seed", "3", "--out", str(out),
                     "--set", "env_config.max_episode_s=8", "--set", "algo_kwargs.learning_rate=0.0005")
    assert done.returncode == 0, done.stderr[-3000:]
    for name in ("model.zip", "config.yaml", "report.json", "vecnormalize.pkl"):
        assert (out / name).is_file(), name
    config = yaml.safe_load((out / "config.yaml").read_text())
    assert config["total_steps"] == 256 and config["seed"] == 3 and config["algo"] == "ppo"
    # --set merged into the file's sections: the other env_config keys stay
    assert config["env_config"]["max_episode_s"] == 8 and config["task_config"]["max_episode_s"] == 8
    assert config["env_config"]["randomization"]["patches"] is None
    assert config["algo_kwargs"] == {"n_steps": 64, "batch_size": 128, "n_epochs": 2, "learning_rate": 0.0005}
    assert config["task_config"]["task"] == "speed_tracking"  # the resolved task config, every default filled
    assert config["task_config"]["control_hz"] == 20 and "speed_error" in config["task_config"]["rewards"]
    report = json.loads((out / "report.json").read_text())
    assert report["total_steps"] >= 256
    assert set(report["evaluation"]) == {"learned", "ulc_pure_pursuit"}
    for figures in report["evaluation"].values():
        assert len(figures["per_episode"]) == 2
        assert {"episode_return", "speed_rmse_mps", "lateral_rmse_m", "fuel_g_per_km"} <= set(figures["mean"])
    assert "speed RMSE" in done.stdout  # the printed table

    from acres_gym.agents.sb3_models import load_run_policy

    factory, mode, env_config = load_run_policy(out / "model.zip")
    assert env_config == config["env_config"]

    # resuming continues the model and its normaliser for total_steps more
    again = run_train("--config", "configs/train/smoke.yaml", "--total-steps", "128", "--seed", "3",
                      "--out", str(tmp_path / "resumed"), "--resume", str(out / "model.zip"))
    assert again.returncode == 0, again.stderr[-3000:]
    assert "resuming from" in again.stdout
    resumed = json.loads((tmp_path / "resumed" / "report.json").read_text())
    assert resumed["total_steps"] >= report["total_steps"] + 128
    assert yaml.safe_load((tmp_path / "resumed" / "config.yaml").read_text())["resumed_from"].endswith("model.zip")
    bad = run_train("--config", "configs/train/smoke.yaml", "--out", str(tmp_path / "z"), "--resume",
                    str(tmp_path / "nothing.zip"), timeout=120)
    assert bad.returncode != 0 and "--resume" in bad.stderr and "no such model" in bad.stderr

    # watching the trained model uses its environment and config
    from acres_gym.agents.watch import resolve_policy, watch

    env_id, factory, mode, env_config = resolve_policy(str(out / "model.zip"), None)
    assert env_id == config["env_id"] and env_config == config["env_config"]
    rows = watch(env_id, factory, mode, env_config, frames_dir=tmp_path / "frames", max_steps=4, printer=None)
    assert rows[0]["steps"] == 4 and len(list((tmp_path / "frames").glob("*.png"))) == 5


def test_train_refuses_unknown_config_keys(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("algo: ppo\ntotal_step: 100\n")
    done = run_train("--config", str(bad), "--out", str(tmp_path / "x"), timeout=120)
    assert done.returncode != 0
    assert "unknown key 'total_step' (did you mean 'total_steps'?)" in done.stderr
    done = run_train("--config", "configs/train/smoke.yaml", "--out", str(tmp_path / "y"), "--set", "num_env=2",
                     timeout=120)
    assert done.returncode != 0
    assert "--set: unknown key 'num_env' (did you mean 'num_envs'?)" in done.stderr


def test_a_training_config_may_name_its_task_config(tmp_path):
    import argparse
    import importlib.util

    spec = importlib.util.spec_from_file_location("train_script", ROOT / "train.py")
    train = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(train)
    args = argparse.Namespace(total_steps=None, seed=None, out=str(tmp_path), overrides=["env_config.max_episode_s=9"])
    cfg = train.load_train_config(str(ROOT / "configs/train/ppo_hill_climb.yaml"), args)
    # the named task config becomes the dict it names, and --set merges into it
    assert cfg["env_config"]["action_options"] == {"gear_axis": True}
    assert cfg["env_config"]["randomization"]["terrain"]["grade_pct"] == [5.0, 35.0]
    assert cfg["env_config"]["max_episode_s"] == 9

    from acres_gym.agents.evaluate import make_vector_env

    venv = make_vector_env("acres_gym/RangerHillClimb-v0", 2, "hill_climb")
    assert venv.single_action_space.shape == (2,) and venv.config["action_options"]["gear_axis"] is True
    venv.close()
