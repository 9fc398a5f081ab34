"""Missing, damaged or half-saved run files are refused with one line and exit status 2 by export,
``--resume`` and evaluate, never a traceback; loading from outside the user's runs warns; the training command
from the package (``python -m acres_gym.train``, configs by name)."""

from __future__ import annotations

import io
import logging
import pickle
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import yaml

from acres_gym.agents import run_files
from acres_gym.agents.evaluate import main as evaluate_main
from acres_gym.agents.train_cli import main as train_main

ROOT = Path(__file__).resolve().parents[1]
SMOKE = ["--config", "smoke", "--seed", "3", "--set", "env_config.max_episode_s=3", "--set", "eval_every_steps=0",
         "--set", "baseline=null", "--set", "checkpoint_every_steps=0"]


@pytest.fixture(autouse=True)
def runs_here(tmp_path_factory, monkeypatch):
    monkeypatch.setenv(run_files.RUNS_ENV, str(tmp_path_factory.getbasetemp()))


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """A finished 256-step run (observations normalised)."""
    out = tmp_path_factory.mktemp("trained") / "run"
    train_main([*SMOKE, "--total-steps", "256", "--out", str(out)])
    return out


def _replace_in_zip(path: Path, member: str, data: bytes) -> None:
    with zipfile.ZipFile(path) as z:
        members = {name: z.read(name) for name in z.namelist()}
    members[member] = data
    path.unlink()  # a new file: the checkpoint's hard link keeps the original
    with zipfile.ZipFile(path, "w") as z:
        for name, content in members.items():
            z.writestr(name, content)


def _rewrite(path: Path, data: bytes) -> None:
    path.unlink()
    path.write_bytes(data)


def garbage_policy(run: Path) -> None:
    _replace_in_zip(run / "model.zip", "policy.pth", b"not a torch file" * 64)


def truncated_model(run: Path) -> None:
    _rewrite(run / "model.zip", (run / "model.zip").read_bytes()[:2000])


def truncated_normalizer(run: Path) -> None:
    _rewrite(run / "vecnormalize.pkl", (run / "vecnormalize.pkl").read_bytes()[:300])


def wrong_object_normalizer(run: Path) -> None:
    _rewrite(run / "vecnormalize.pkl", pickle.dumps({"obs_rms": [1.0, 2.0]}))


def missing_normalizer(run: Path) -> None:
    (run / "vecnormalize.pkl").unlink()


def non_yaml_config(run: Path) -> None:
    (run / "config.yaml").write_text("algo: ppo\nenv_id: [acres_gym/RangerSpeedTracking-v3\n")


def list_config(run: Path) -> None:
    (run / "config.yaml").write_text("- algo\n- env_id\n")


def truncated_state(run: Path) -> None:
    _rewrite(run / "state.pkl", (run / "state.pkl").read_bytes()[:500])


def wrong_object_state(run: Path) -> None:
    _rewrite(run / "state.pkl", pickle.dumps(["not", "a", "state"]))


# case -> (tampering, what the one line says); the run's file list is removed so that the file itself is read
# (a run made by hand or saved before the list existed), except in the last case
CASES = {
    "garbage policy.pth": (garbage_policy, "model.zip: not a readable PPO model"),
    "truncated model.zip": (truncated_model, "model.zip: not a stable-baselines3 model (not a zip file)"),
    "truncated normaliser": (truncated_normalizer, "vecnormalize.pkl: not a readable observation normaliser"),
    "wrong-object normaliser": (wrong_object_normalizer, "vecnormalize.pkl: holds a dict, not a VecNormalize"),
    "missing normaliser": (missing_normalizer, "vecnormalize.pkl is missing, and"),
    "non-YAML config": (non_yaml_config, "config.yaml: not a YAML file"),
    "list config": (list_config, "config.yaml: not a training config"),
}
RESUME_ONLY = {
    "truncated state": (truncated_state, "state.pkl: not a readable training state"),
    "wrong-object state": (wrong_object_state, "state.pkl: not a training state of this version"),
}


def tampered(run: Path, tmp_path: Path, tamper, keep_list: bool = False) -> Path:
    copy = tmp_path / "tampered"
    shutil.copytree(run, copy, ignore=shutil.ignore_patterns("checkpoints", "tensorboard"))
    if not keep_list:
        (copy / run_files.MANIFEST).unlink()
    tamper(copy)
    return copy


def one_line(err: str) -> str:
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err[-3000:]
    return lines[0]


@pytest.mark.parametrize("case", list(CASES))
def test_export_refuses_a_damaged_run_in_one_line(run, tmp_path, capsys, case):
    pytest.importorskip("onnx")
    from acres_gym.agents.export import main as export_main

    tamper, says = CASES[case]
    copy = tampered(run, tmp_path, tamper)
    capsys.readouterr()
    assert export_main([str(copy / "model.zip"), "--out", str(tmp_path / "policy")]) == 2
    line = one_line(capsys.readouterr().err)
    assert line.startswith("acres_gym.agents.export: ") and says in line, line
    assert not (tmp_path / "policy" / "policy.onnx").exists()


@pytest.mark.parametrize("case", [*CASES, *RESUME_ONLY])
def test_resume_refuses_a_damaged_run_in_one_line(run, tmp_path, capsys, case):
    tamper, says = {**CASES, **RESUME_ONLY}[case]
    copy = tampered(run, tmp_path, tamper)
    capsys.readouterr()
    with pytest.raises(SystemExit) as exit_info:
        train_main([*SMOKE, "--total-steps", "512", "--out", str(tmp_path / "resumed"), "--resume",
                    str(copy / "model.zip")])
    assert exit_info.value.code == 2
    line = one_line(capsys.readouterr().err)
    assert "error: --resume " in line and says in line, line
    assert not (tmp_path / "resumed" / "model.zip").exists()


@pytest.mark.parametrize("case", ["garbage policy.pth", "wrong-object normaliser", "non-YAML config"])
def test_evaluate_refuses_a_damaged_run_in_one_line(run, tmp_path, capsys, case):
    tamper, says = CASES[case]
    copy = tampered(run, tmp_path, tamper)
    capsys.readouterr()
    with pytest.raises(SystemExit) as exit_info:
        evaluate_main(["--model", str(copy / "model.zip"), "--episodes", "1"])
    assert exit_info.value.code == 2
    line = one_line(capsys.readouterr().err)
    assert "error: --model" in line and says in line, line


def test_a_file_changed_after_the_save_is_refused(run, tmp_path):
    copy = tampered(run, tmp_path, garbage_policy, keep_list=True)
    with pytest.raises(run_files.RunFileError, match=r"model.zip differs from the file saved"):
        run_files.load_run(copy / "model.zip")
    copy = tmp_path / "second"
    shutil.copytree(run, copy, ignore=shutil.ignore_patterns("checkpoints", "tensorboard"))
    (copy / "state.pkl").unlink()
    with pytest.raises(run_files.RunFileError, match=r"state.pkl is missing \(listed in"):
        run_files.load_run(copy)


def test_the_untouched_run_loads_and_its_copy_matches(run):
    files, config = run_files.load_run(run / "model.zip")
    assert config["normalize_observations"] is True and files.run_dir == run
    assert run_files.load_normalizer(files, config) is not None
    assert run_files.load_state(files, 1)["num_timesteps"] == 256
    checkpoint = run / "checkpoints" / "step_256"
    files, _ = run_files.load_run(checkpoint)
    assert files.run_dir == run and files.config == checkpoint / "config.yaml"


def test_loading_from_outside_the_runs_warns_once(run, tmp_path, monkeypatch, caplog):
    inside = run_files.locate  # the fixture's runs directory holds every test's files
    with caplog.at_level(logging.WARNING, logger="acres_gym"):
        inside(run / "model.zip")
    assert not caplog.records
    monkeypatch.setenv(run_files.RUNS_ENV, str(tmp_path / "my_runs"))
    with caplog.at_level(logging.WARNING, logger="acres_gym"):
        run_files.locate(run / "model.zip")
        run_files.locate(run / "model.zip")
    assert len(caplog.records) == 1
    message = caplog.records[0].getMessage()
    assert "\n" not in message and "outside the runs directory" in message and "trust" in message
    assert str(tmp_path / "my_runs") in message
    monkeypatch.delenv(run_files.RUNS_ENV)
    assert run_files.runs_dir() == Path("runs")


def test_python_m_acres_gym_train_takes_a_packaged_config_by_name(tmp_path):
    # from a directory without configs/: the name is found in the package
    done = subprocess.run([sys.executable, "-m", "acres_gym.train", *SMOKE, "--total-steps", "256", "--out",
                           str(tmp_path / "run")], cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert (tmp_path / "run" / "model.zip").is_file()
    assert yaml.safe_load((tmp_path / "run" / "config.yaml").read_text())["num_envs"] == 4  # smoke.yaml's
    done = subprocess.run([sys.executable, "-m", "acres_gym.train", "--config", "no_such_config"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert one_line(done.stderr).startswith("python -m acres_gym.train: error: ")


def test_the_training_shim_keeps_the_simulator_free_of_agents():
    code = ("import sys, acres_gym.train; "
            "bad = sorted(m for m in sys.modules if m.startswith(('acres_gym.agents', 'acres_gym.envs'))); "
            "assert not bad, bad")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_a_checkpoint_exports_like_a_run(run, tmp_path):
    pytest.importorskip("onnx")
    from acres_gym.agents.export import export

    manifest = export(run / "checkpoints" / "step_256", tmp_path / "policy")
    assert manifest["check"]["max_abs_action_error"] <= 1e-5
    assert manifest["observation"]["normalization"] is not None


def test_the_policy_of_a_damaged_zip_is_never_loaded_silently(run, tmp_path):
    copy = tampered(run, tmp_path, garbage_policy)
    with zipfile.ZipFile(copy / "model.zip") as z:
        assert z.read("policy.pth").startswith(b"not a torch file")
    with pytest.raises(run_files.RunFileError):
        run_files.load_model(run_files.locate(copy / "model.zip"), "ppo", device="cpu")
    # the original is untouched (a copy, not the hard-linked file)
    with zipfile.ZipFile(run / "model.zip") as z:
        import torch

        torch.load(io.BytesIO(z.read("policy.pth")))
