"""``train.py`` end to end on the smoke config: training, saving and evaluation in a subprocess."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
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
    for name in ("model.zip", "config.yaml", "report.json", "vecnormalize.pkl", "state.pkl", "report.md",
                 "learning_curve.png", "evaluation.png"):
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
    assert report["total_steps"] == 256 == report["trained_steps"]
    assert "first_beats_baseline" in report and report["total_train_wall_s"] >= report["train_wall_s"] > 0
    assert set(report["evaluation"]) == {"learned", "ulc_pure_pursuit"}
    for figures in report["evaluation"].values():
        assert len(figures["per_episode"]) == 2
        assert {"episode_return", "speed_rmse_mps", "lateral_rmse_m", "fuel_g_per_km"} <= set(figures["mean"])
    assert "speed RMSE" in done.stdout  # the printed table

    from acres_gym.agents.sb3_models import load_run_policy

    factory, mode, env_config = load_run_policy(out / "model.zip")
    assert env_config == config["env_config"]

    # resuming continues the model and its normaliser up to the (larger) total
    again = run_train("--config", "configs/train/smoke.yaml", "--total-timesteps", "512", "--seed", "3",
                      "--out", str(tmp_path / "resumed"), "--resume", str(out / "model.zip"),
                      "--set", "env_config.max_episode_s=8", "--set", "algo_kwargs.learning_rate=0.0005")
    assert again.returncode == 0, again.stderr[-3000:]
    assert "resuming from" in again.stdout and "not an exact continuation" not in again.stdout
    resumed = json.loads((tmp_path / "resumed" / "report.json").read_text())
    assert resumed["total_steps"] == 512 and resumed["trained_steps"] == 512 - report["total_steps"]
    assert resumed["exact_resume"] is True
    assert yaml.safe_load((tmp_path / "resumed" / "config.yaml").read_text())["resumed_from"].endswith("model.zip")

    # watching the trained model uses its environment and config
    from acres_gym.agents.watch import resolve_policy, watch

    env_id, factory, mode, env_config = resolve_policy(str(out / "model.zip"), None)
    assert env_id == config["env_id"] and env_config == config["env_config"]
    rows = watch(env_id, factory, mode, env_config, frames_dir=tmp_path / "frames", max_steps=4, printer=None)
    assert rows[0]["steps"] == 4 and len(list((tmp_path / "frames").glob("*.png"))) == 5


def one_line_error(done: subprocess.CompletedProcess) -> str:
    assert done.returncode == 2, done.stderr[-2000:]
    assert "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    return lines[0]


def test_train_refuses_unknown_config_keys(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("algo: ppo\ntotal_step: 100\n")
    done = run_train("--config", str(bad), "--out", str(tmp_path / "x"), timeout=120)
    assert "unknown key 'total_step' (did you mean 'total_steps'?)" in one_line_error(done)


def test_train_user_errors_are_one_line_with_status_2(tmp_path, capsys):
    import importlib.util

    spec = importlib.util.spec_from_file_location("train_script", ROOT / "train.py")
    train = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(train)

    def error(*args: str) -> str:
        with pytest.raises(SystemExit) as exit_info:
            train.main(list(args))
        assert exit_info.value.code == 2
        lines = capsys.readouterr().err.strip().splitlines()
        assert len(lines) == 1 and "Traceback" not in lines[0]
        return lines[0]

    smoke = str(ROOT / "configs/train/smoke.yaml")
    missing = error("--config", str(tmp_path / "missing.yaml"))
    assert "config file" in missing and "missing.yaml does not exist" in missing
    missing = error("--config", "no_such_config")  # a name: looked up under configs/train
    assert "train/no_such_config.yaml does not exist" in missing
    assert "--set: unknown key 'num_env' (did you mean 'num_envs'?)" in error("--config", smoke, "--out",
                                                                             str(tmp_path / "y"), "--set", "num_env=2")
    assert "no such model" in error("--config", smoke, "--out", str(tmp_path / "z"), "--resume",
                                    str(tmp_path / "nothing.zip"))
    # a run directory holding an earlier run, and a resume into another environment
    run = tmp_path / "run"
    (run / "checkpoints").mkdir(parents=True)
    (run / "config.yaml").write_text("env_id: acres_gym/RangerSpeedTracking-v3\nalgo: ppo\n")
    (run / "model.zip").write_bytes(b"")
    assert "--overwrite" in error("--config", smoke, "--out", str(run))
    assert "trained with env_id acres_gym/RangerSpeedTracking-v3, the config asks for " \
           "acres_gym/RangerPathFollowing-v3" in error("--config", smoke, "--out", str(tmp_path / "w"),
                                                        "--set", "env_id=acres_gym/RangerPathFollowing-v3",
                                                        "--resume", str(run / "model.zip"))
    assert "would delete the model resumed from" in error("--config", smoke, "--out", str(tmp_path),
                                                          "--overwrite", "--resume", str(run / "model.zip"))
    # --overwrite replaces the earlier run: its stale checkpoints go
    stale = run / "checkpoints" / "model_999999_steps.zip"
    stale.write_bytes(b"")
    report = train.main(["--config", smoke, "--out", str(run), "--overwrite", "--total-steps", "256",
                         "--set", "baseline=null", "--set", "checkpoint_every_steps=0", "--set", "eval_every_steps=0"])
    assert report["total_steps"] == 256 and not stale.exists() and (run / "model.zip").stat().st_size > 0


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
    assert cfg["env_config"]["randomization"]["terrain"]["grade_pct"] == [5.0, 19.0]
    assert cfg["env_config"]["max_episode_s"] == 9

    from acres_gym.agents.evaluate import make_vector_env

    venv = make_vector_env("acres_gym/RangerHillClimb-v2", 2, "hill_climb")
    assert venv.single_action_space.shape == (2,) and venv.config["action_options"]["gear_axis"] is True
    venv.close()


def test_a_short_navigation_run_reports_the_tasks_own_figures(tmp_path, monkeypatch):
    """The report of a navigation run (a few hundred steps, a tiny policy) shows success, time to goal, distance to
    the goal, the failure share and each failure cause, and no path figures."""
    monkeypatch.setenv("SDL_VIDEODRIVER", "dummy")
    out = tmp_path / "nav"
    done = run_train("--config", "configs/train/ppo_offroad_navigation.yaml", "--total-steps", "256", "--seed", "1",
                     "--out", str(out), "--set", "num_envs=2", "--set", "algo_kwargs.n_steps=64",
                     "--set", "algo_kwargs.batch_size=64", "--set", "algo_kwargs.n_epochs=1",
                     "--set", "env_config.max_episode_s=5", "--set", "eval_episodes=2",
                     "--set", "checkpoint_every_steps=0", "--set", "policy_kwargs.net_arch=[16,16]")
    assert done.returncode == 0, done.stderr[-3000:]
    table = (out / "report.md").read_text().split("## Evaluation", 1)[1]
    header = next(line for line in table.splitlines() if line.startswith("| policy"))
    columns = [c.strip() for c in header.strip("|").split("|")]
    for wanted in ("success rate", "time to goal s", "fuel g", "distance to goal m", "failed share", "stuck share",
                   "no go share", "rolled over share"):
        assert wanted in columns, (wanted, columns)
    assert not any("RMSE" in c or "lateral" in c for c in columns), columns
    assert "success rate" in done.stdout and "RMSE" not in done.stdout  # train.py's table
    report = json.loads((out / "report.json").read_text())
    assert report["task_metric"] == "success"
    for figures in report["evaluation"].values():
        assert {"success", "time_to_goal_s", "goal_distance_m", "stuck", "no_go", "failed"} <= set(figures["mean"])
        assert not {"speed_rmse_mps", "lateral_rmse_m"} & set(figures["mean"])
        assert figures["mean"]["failed"] >= max(figures["mean"][k] for k in ("stuck", "no_go", "rolled_over"))
