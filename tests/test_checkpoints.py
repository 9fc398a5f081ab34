"""Checkpoints survive an interrupt: an interrupt at every step of a save leaves the previous complete
checkpoint and no half one, training ends with one line naming it (exit status 130), and ``--resume`` from it
continues the run bit for bit; ``keep_checkpoints`` keeps the newest ones."""

from __future__ import annotations

import argparse
import io
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest
import torch

from acres_gym.agents import run_files, training
from acres_gym.agents.train_cli import RunError, load_train_config
from acres_gym.agents.train_cli import main as train_main

ROOT = Path(__file__).resolve().parents[1]
# 4 vehicles x 64 steps = 256 steps per PPO update, a checkpoint after each; nothing evaluated but the end
SMOKE = ["--config", "smoke", "--seed", "7", "--set", "env_config.max_episode_s=3", "--set",
         "checkpoint_every_steps=256", "--set", "eval_every_steps=0", "--set", "baseline=null"]
INTERRUPTED = re.compile(r"interrupted at (\d+) steps; resume from the newest complete checkpoint with "
                         r"--resume (\S+)$")


def policy(model_zip: Path) -> dict:
    with zipfile.ZipFile(model_zip) as z:
        return torch.load(io.BytesIO(z.read("policy.pth")))


def same_parameters(a: Path, b: Path) -> bool:
    pa, pb = policy(a), policy(b)
    return pa.keys() == pb.keys() and all(torch.equal(pa[k], pb[k]) for k in pa)


def assert_complete(checkpoint: Path) -> None:
    """Every file a checkpoint lists is there with its SHA-256, and each one reads."""
    files, config = run_files.load_run(checkpoint)
    assert run_files.load_state(files, 1)["num_timesteps"] == int(checkpoint.name.split("_")[1])
    assert run_files.load_normalizer(files, config) is not None
    run_files.load_model(files, config["algo"], device="cpu")


@pytest.fixture(autouse=True)
def runs_here(tmp_path_factory, monkeypatch):
    """The test's runs are the user's runs (no warning about loading from elsewhere)."""
    monkeypatch.setenv(run_files.RUNS_ENV, str(tmp_path_factory.getbasetemp()))


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """An uninterrupted run of 1024 steps with its checkpoints at 256, 512, 768 and 1024."""
    run = tmp_path_factory.mktemp("reference") / "run"
    train_main([*SMOKE, "--total-steps", "1024", "--set", "keep_checkpoints=10", "--out", str(run)])
    assert [p.name for p in run_files.checkpoints(run)] == ["step_256", "step_512", "step_768", "step_1024"]
    return run


class Interrupter:
    """Raises KeyboardInterrupt at the ``at``-th file-system step of the saves (a file written, a rename, a
    link, a removal); a file being written is left cut in half, as by an interrupt in the middle of it."""

    def __init__(self, at: int) -> None:
        self.at, self.calls, self.fired = at, 0, None

    def wrap(self, name, real):
        def step(*args):
            self.calls += 1
            if self.calls == self.at:
                self.fired = (name, str(args[0]))
                if name == "_write":
                    path, writer = args
                    writer(path)
                    data = path.read_bytes()
                    path.write_bytes(data[: len(data) // 2])
                raise KeyboardInterrupt
            return real(*args)

        return step

    def install(self, monkeypatch) -> None:
        for name in ("_write", "_rename", "_link", "_remove"):
            monkeypatch.setattr(run_files, name, self.wrap(name, getattr(run_files, name)))


@pytest.mark.slow
def test_an_interrupt_at_every_step_of_a_save_leaves_the_previous_checkpoint(reference, tmp_path, capsys,
                                                                             monkeypatch):
    # the report's two plots (matplotlib: most of each of the many runs here) are no part of the saves interrupted
    for name in ("plot_learning_curve", "plot_evaluation"):
        monkeypatch.setattr(training, name, lambda *args, **kwargs: None)
    base = tmp_path / "base"
    shutil.copytree(reference / "checkpoints" / "step_256", base / "checkpoints" / "step_256")
    shutil.copy(reference / "config.yaml", base / "config.yaml")
    steps_interrupted: set[str] = set()
    k = 0
    while True:
        k += 1
        run = tmp_path / f"run_{k}"
        shutil.copytree(base, run)
        capsys.readouterr()
        with monkeypatch.context() as patch:
            interrupter = Interrupter(k)
            interrupter.install(patch)
            # from 256 to 768 steps: a checkpoint at 512, the final one at 768 (step_256 then removed: keep 2),
            # the run's own files from it
            args = [*SMOKE, "--total-steps", "768", "--set", "keep_checkpoints=2", "--out", str(run),
                    "--resume", str(run / "checkpoints" / "step_256")]
            if k > 60:
                pytest.fail("the saves never finished")
            try:
                train_main(args)
            except SystemExit as exc:
                assert exc.code == 130, capsys.readouterr().err[-2000:]
            else:
                assert interrupter.fired is None
                break
        assert interrupter.fired is not None
        steps_interrupted.add(interrupter.fired[0])
        err = capsys.readouterr().err
        assert "Traceback" not in err
        lines = [line for line in err.splitlines() if "interrupted" in line]
        assert len(lines) == 1, err[-2000:]
        found = INTERRUPTED.search(lines[0])
        assert found, lines[0]
        named = Path(found.group(2))
        # the checkpoints directory: complete checkpoints only, the newest one named; nothing half written or
        # half removed left beside them or in the run directory
        complete = run_files.checkpoints(run)
        assert complete and named == complete[-1], (interrupter.fired, lines[0], complete)
        assert sorted((run / "checkpoints").iterdir()) == complete, interrupter.fired
        assert not [e.name for e in run.iterdir() if e.name.startswith(".")], interrupter.fired
        for checkpoint in complete:
            assert_complete(checkpoint)
        steps = int(named.name.split("_")[1])
        assert steps in (256, 512, 768)
        # the run's own files: complete, or refused with the checkpoint to use
        if (run / run_files.MANIFEST).exists():
            try:
                run_files.load_run(run)
            except run_files.RunFileError as exc:
                assert "checkpoints/step_768" in str(exc), (interrupter.fired, str(exc))
            else:
                assert steps == 768
        # --resume from the named checkpoint continues the uninterrupted run bit for bit
        train_main([*SMOKE, "--total-steps", str(steps + 256), "--set", "keep_checkpoints=2", "--out", str(run),
                    "--resume", str(named)])
        assert same_parameters(run / "model.zip", reference / "checkpoints" / f"step_{steps + 256}" / "model.zip")
        assert not [e for e in (run / "checkpoints").iterdir() if e.name.startswith(".")]
        run_files.load_run(run)
    # every kind of step was interrupted: file writes, renames, links and removals
    assert steps_interrupted == {"_write", "_rename", "_link", "_remove"}, steps_interrupted
    assert k > 20
    # the run that was not interrupted: the newest 2 checkpoints, the run's files those of step_768
    assert [p.name for p in run_files.checkpoints(run)] == ["step_512", "step_768"]
    assert same_parameters(run / "model.zip", reference / "checkpoints" / "step_768" / "model.zip")
    assert os.path.samefile(run / "model.zip", run / "checkpoints" / "step_768" / "model.zip")


@pytest.mark.slow
def test_sigint_ends_training_with_the_checkpoint_to_resume_from(tmp_path):
    run = tmp_path / "run"
    # A shell starts background jobs with SIGINT ignored, and Python keeps a signal ignored at its start; the run
    # under test is a foreground one (Ctrl-C), so it starts with SIGINT at its default whoever runs the suite.
    proc = subprocess.Popen([sys.executable, str(ROOT / "train.py"), *SMOKE, "--total-steps", "1000000",
                             "--out", str(run)], cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        deadline = time.monotonic() + 600
        while not (run / "checkpoints" / "step_512").is_dir():
            assert proc.poll() is None, proc.communicate()[1][-2000:]
            assert time.monotonic() < deadline
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, err[-2000:]
    assert "Traceback" not in err
    last = err.strip().splitlines()[-1]
    found = INTERRUPTED.search(last)
    assert found and last.startswith("train.py: "), last
    named = Path(found.group(2))
    complete = run_files.checkpoints(run)
    assert named == complete[-1] and int(found.group(1)) >= int(named.name.split("_")[1]) >= 512
    assert len(complete) <= 3  # keep_checkpoints defaults to 3
    assert sorted((run / "checkpoints").iterdir()) == complete  # nothing half written or half removed
    for checkpoint in complete:
        assert_complete(checkpoint)


def test_counts_and_seeds_are_checked():
    """Every integer key of a training config is checked before a run starts (eval_episodes = 0 used to fail
    at the first evaluation, a negative total_steps trained one rollout)."""
    args = argparse.Namespace(total_steps=None, seed=None, out="x", overrides=[])
    assert load_train_config("smoke", args)["keep_checkpoints"] == 3
    least = {"total_steps": 1, "eval_episodes": 1, "keep_checkpoints": 1, "eval_every_steps": 0,
             "checkpoint_every_steps": 0}
    for key, lo in least.items():
        args.overrides = [f"{key}={lo}"]
        assert load_train_config("smoke", args)[key] == lo
        for bad in (str(lo - 1), "2.5", "true", "three"):
            args.overrides = [f"{key}={bad}"]
            with pytest.raises(RunError, match=rf"^{key} = .*: expected an integer >= {lo} \(.+\)$"):
                load_train_config("smoke", args)
    args.overrides = ["total_steps=2e5"]  # YAML 1.2 reads 2e5 as a float: a whole one is a count
    assert load_train_config("smoke", args)["total_steps"] == 200_000
    for key in ("seed", "eval_seed"):
        args.overrides = [f"{key}=4294967295"]
        assert load_train_config("smoke", args)[key] == 2**32 - 1
        for bad in ("-1", "4294967296", "1.5", "true", "zero"):
            args.overrides = [f"{key}={bad}"]
            with pytest.raises(RunError, match=rf"^{key} = .*: expected an integer from 0 to 4294967295 \(.+\)$"):
                load_train_config("smoke", args)


def test_older_checkpoints_go_only_once_a_newer_one_is_complete(tmp_path, monkeypatch):
    run = tmp_path / "run"

    def writers(n):
        return {run_files.MODEL: lambda p: p.write_bytes(b"model %d" % n),
                run_files.STATE: lambda p: p.write_bytes(b"state %d" % n)}

    for n in (1, 2, 3):
        run_files.write_checkpoint(run, n, writers(n), keep=2)
    assert [p.name for p in run_files.checkpoints(run)] == ["step_2", "step_3"]
    # a save that fails half way removes nothing
    failing = writers(4)
    failing[run_files.STATE] = lambda p: (_ for _ in ()).throw(KeyboardInterrupt)
    with pytest.raises(KeyboardInterrupt):
        run_files.write_checkpoint(run, 4, failing, keep=2)
    assert [p.name for p in run_files.checkpoints(run)] == ["step_2", "step_3"]
    assert sorted(os.listdir(run / "checkpoints")) == ["step_2", "step_3"]
    # the same steps again (a run resumed from an earlier checkpoint) replace the checkpoint whole
    run_files.write_checkpoint(run, 3, writers(30), keep=2)
    assert (run / "checkpoints" / "step_3" / "model.zip").read_bytes() == b"model 30"
    # a leftover of a killed save is cleared by the next one and never counts as a checkpoint
    (run / "checkpoints" / ".step_9.partial").mkdir()
    (run / "checkpoints" / ".step_9.partial" / "model.zip").write_bytes(b"half")
    assert [p.name for p in run_files.checkpoints(run)] == ["step_2", "step_3"]
    last = {**writers(5), run_files.REPLAY_BUFFER: lambda p: p.write_bytes(b"replay" * 100)}
    run_files.write_checkpoint(run, 5, last, keep=1)
    assert sorted(os.listdir(run / "checkpoints")) == ["step_5"]
    # its file list: SHA-256 of each file, the size only of the replay buffer
    checkpoint = run_files.locate(run / "checkpoints" / "step_5")
    run_files.check_complete(checkpoint)
    (checkpoint.state).write_bytes(b"state 6")  # the same size
    with pytest.raises(run_files.RunFileError, match=r"state.pkl differs from the file saved \(its SHA-256"):
        run_files.check_complete(checkpoint)
    (checkpoint.state).write_bytes(b"state 5")
    run_files.check_complete(checkpoint)
    (checkpoint.replay_buffer).write_bytes(b"replay" * 50)
    with pytest.raises(run_files.RunFileError, match=r"replay_buffer.pkl differs from the file saved \(its size"):
        run_files.check_complete(checkpoint)
