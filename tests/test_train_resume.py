"""``train.py --resume`` continues a run bit for bit; evaluations never change what is learned; the report,
its plots and the task metrics in TensorBoard; what counts as beating the baseline."""

from __future__ import annotations

import importlib.util
import io
import json
import pickle
import shutil
import zipfile
from pathlib import Path

import numpy as np
import pytest
import torch

from acres_gym.agents.training import beats

ROOT = Path(__file__).resolve().parents[1]
# 4 vehicles x 64 steps = 256 steps per PPO update; 3 s episodes (60 steps) so that episodes finish
SMOKE = ["--config", str(ROOT / "configs/train/smoke.yaml"), "--seed", "5", "--set", "env_config.max_episode_s=3",
         "--set", "checkpoint_every_steps=256"]


def train_module():
    spec = importlib.util.spec_from_file_location("train_script", ROOT / "train.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def saved(run: Path, name: str = "model.zip") -> tuple[dict, dict, object]:
    with zipfile.ZipFile(run / name) as z:
        params = torch.load(io.BytesIO(z.read("policy.pth")))
        optimizer = torch.load(io.BytesIO(z.read("policy.optimizer.pth")))
    with open(run / "vecnormalize.pkl", "rb") as f:
        normalizer = pickle.load(f)
    return params, optimizer, normalizer


def max_difference(a: dict, b: dict) -> float:
    assert a.keys() == b.keys()
    return max(float((a[k] - b[k]).abs().max()) for k in a)


def test_resume_equals_the_uninterrupted_run_bit_for_bit(tmp_path):
    train = train_module()
    # the uninterrupted run: 3 updates, a checkpoint after each, evaluations after the first and second
    full = tmp_path / "full"
    report = train.main([*SMOKE, "--total-timesteps", "768", "--set", "eval_every_steps=256", "--out", str(full)])
    assert report["total_steps"] == 768 and report["trained_steps"] == 768
    assert [e["steps"] for e in report["evaluations"]] == [256, 512, 768]  # the last one is the final evaluation
    # resumed from the first checkpoint, without the evaluation at 512 steps
    resumed = tmp_path / "resumed"
    again = train.main([*SMOKE, "--total-steps", "768", "--set", "eval_every_steps=0", "--out", str(resumed),
                        "--resume", str(full / "checkpoints" / "step_256")])
    assert again["exact_resume"] and again["trained_steps"] == 512 and again["total_steps"] == 768
    assert again["train_steps_per_s"] == pytest.approx(512 / again["train_wall_s"])  # its own steps only
    p_full, o_full, n_full = saved(full)
    p_res, o_res, n_res = saved(resumed)
    assert max_difference(p_full, p_res) == 0.0  # parameters ...
    assert max_difference(o_full["state"][0], o_res["state"][0]) == 0.0  # ... Adam's moments
    for key in n_full.obs_rms:  # the normaliser counted every observation once
        assert n_full.obs_rms[key].count == n_res.obs_rms[key].count
        assert np.array_equal(n_full.obs_rms[key].mean, n_res.obs_rms[key].mean)
        assert np.array_equal(n_full.obs_rms[key].var, n_res.obs_rms[key].var)
    # the same final evaluation, and the history carried over from the checkpoint
    assert again["evaluation"]["learned"]["per_episode"] == report["evaluation"]["learned"]["per_episode"]
    assert [e["steps"] for e in again["evaluations"]] == [256, 768]

    # an older run's flat checkpoint names, without the saved training state (a new environment, generators
    # re-seeded by load): it resumes, but it is not the same run
    legacy = tmp_path / "legacy" / "checkpoints"
    legacy.mkdir(parents=True)
    for name, old_name in (("model.zip", "model_256_steps.zip"),
                           ("vecnormalize.pkl", "model_vecnormalize_256_steps.pkl")):
        shutil.copy(full / "checkpoints" / "step_256" / name, legacy / old_name)
    shutil.copy(full / "config.yaml", legacy.parent / "config.yaml")
    inexact = train.main([*SMOKE, "--total-steps", "512", "--set", "eval_every_steps=0", "--set", "baseline=null",
                          "--out", str(tmp_path / "inexact"), "--resume", str(legacy / "model_256_steps.zip")])
    assert not inexact["exact_resume"]
    with zipfile.ZipFile(full / "checkpoints" / "step_512" / "model.zip") as z:
        p_mid = torch.load(io.BytesIO(z.read("policy.pth")))
    p_inexact, _, _ = saved(tmp_path / "inexact")
    assert max_difference(p_mid, p_inexact) > 0.0

    # the report: markdown beside the JSON, both plots, the task metrics in TensorBoard
    for name in ("report.md", "learning_curve.png", "evaluation.png", "state.pkl"):
        assert (full / name).is_file(), name
    text = (full / "report.md").read_text()
    assert "![learning curve](learning_curve.png)" in text and "| ulc_pure_pursuit |" in text
    saved_report = json.loads((full / "report.json").read_text())
    beat = saved_report["first_beats_baseline"]
    assert beat is None or beat["steps"] in (256, 512, 768)
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(str(next((full / "tensorboard").iterdir())))
    events.Reload()
    tags = set(events.Tags()["scalars"])
    assert {"task/speed_rmse_mps", "task/lateral_rmse_m", "task/fuel_g_per_km", "task/success_rate",
            "task/failure_rate", "task/failure/rolled_over", "eval/speed_rmse_mps"} <= tags
    # 768 steps are 192 per vehicle: three 60-step episodes each, 12 in the learning curve
    assert len(saved_report["evaluations"]) == 3
    assert sum(1 for _ in events.Scalars("task/success_rate")) >= 1


def test_what_beats_the_baseline():
    baseline = {"speed_rmse_mps": 0.24, "failed": 0.25, "distance_m": 400.0}
    assert beats({"speed_rmse_mps": 0.14, "failed": 0.0, "distance_m": 390.0}, baseline, "speed_rmse_mps")
    assert not beats({"speed_rmse_mps": 0.30, "failed": 0.0, "distance_m": 400.0}, baseline, "speed_rmse_mps")
    assert not beats({"speed_rmse_mps": 0.14, "failed": 0.5, "distance_m": 400.0}, baseline, "speed_rmse_mps")
    # a parked vehicle: no lateral error, but it did not drive the course
    assert not beats({"lateral_rmse_m": 0.0, "failed": 0.0, "distance_m": 10.0},
                     {"lateral_rmse_m": 0.09, "failed": 0.0, "distance_m": 400.0}, "lateral_rmse_m")
