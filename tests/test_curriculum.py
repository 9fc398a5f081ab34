"""``curriculum`` in a training config: each stage's env config replaces the training env from the first
rollout end at or past its ``from_steps``, in both backends alike, across an exact resume, and on a resume into
a curriculum; a malformed stage is a one-line error before anything is written."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from acres_gym.agents import backends
from acres_gym.agents.train_cli import main as train_main
from tests.test_backends import QUICK, ROUNDING, parameters

# the smoke config's 4 vehicles x 64 steps: a rollout is 256 steps, so the stage begins with the second rollout
STAGE = "curriculum=[{from_steps: 256, env_config: {max_episode_s: 2.0}}]"


def run(out, steps: int, *extra: str, backend: str = "lean") -> dict:
    return train_main(["--config", "smoke", "--backend", backend, "--total-steps", str(steps), "--out", str(out),
                       "--overwrite", *QUICK, *extra], prog="train.py")


def training_env_episode_s(out) -> float:
    with open(out / "state.pkl", "rb") as f:
        return pickle.load(f)["env"].venv.config["max_episode_s"]


@pytest.fixture(scope="module")
def staged(tmp_path_factory) -> dict:
    root = tmp_path_factory.mktemp("curriculum")
    runs = {backend: root / backend for backend in backends.BACKENDS}
    for backend, out in runs.items():
        run(out, 512, "--set", STAGE, backend=backend)
    run(root / "plain", 512)
    return {**runs, "plain": root / "plain"}


def test_the_stage_replaces_the_training_env_and_both_backends_follow_it_alike(staged):
    # QUICK sets the episodes to 3 s; the stage to 2 s
    assert training_env_episode_s(staged["plain"]) == 3.0
    for backend in backends.BACKENDS:
        assert training_env_episode_s(staged[backend]) == 2.0
    lean, sb3, plain = (parameters(staged[k] / "model.zip") for k in ("lean", "sb3", "plain"))
    for key in lean:
        np.testing.assert_allclose(lean[key], sb3[key], rtol=0, atol=ROUNDING, err_msg=key)
    assert any(np.abs(lean[k] - plain[k]).max() > 100 * ROUNDING for k in lean)  # the second rollout differs


def test_a_run_resumes_bit_for_bit_across_its_stage_and_into_a_curriculum(staged, tmp_path):
    half = tmp_path / "half"
    run(half, 256, "--set", STAGE)
    assert training_env_episode_s(half) == 2.0  # switched at the end of the first rollout, as the whole run did
    out = tmp_path / "resumed"
    report = run(out, 512, "--set", STAGE, "--resume", str(half / "model.zip"))
    assert report["exact_resume"] is True
    whole, resumed = parameters(staged["lean"] / "model.zip"), parameters(out / "model.zip")
    assert all(np.array_equal(whole[k], resumed[k]) for k in whole)
    # a run without the curriculum resumed with it: a new env, the stage it has reached in place at the start
    plain_half = tmp_path / "plain_half"
    run(plain_half, 256)
    into = tmp_path / "into"
    report = run(into, 512, "--set", STAGE, "--resume", str(plain_half / "model.zip"))
    assert report["exact_resume"] is False and training_env_episode_s(into) == 2.0


@pytest.mark.parametrize("value, message", [
    ("{from_steps: 256}", "curriculum = {'from_steps': 256}: expected a list"),
    ("[{from_steps: 256}]", "curriculum[0] = {'from_steps': 256}: expected {from_steps: N, env_config: {...}}"),
    ("[{from_steps: 0, env_config: {}}]", "curriculum[0].from_steps = 0: expected an integer above 0"),
    ("[{from_steps: 300, env_config: {}}, {from_steps: 200, env_config: {}}]",
     "curriculum[1].from_steps = 200: expected an integer above 300 (the stage before)"),
    ("[{from_steps: 256.0, env_config: {}}]", "curriculum[0].from_steps = 256.0: expected an integer above 0"),
    ("[{from_steps: 256, env_config: hill_climb}]", "curriculum[0].env_config = 'hill_climb': expected a mapping"),
    ("[{from_steps: 256, env_config: {max_episode_sec: 2}}]", "max_episode_sec"),
])
def test_a_malformed_curriculum_is_a_one_line_error_before_anything_is_written(tmp_path, capsys, value, message):
    with pytest.raises(SystemExit) as exc:
        run(tmp_path / "out", 512, "--set", f"curriculum={value}")
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "out").exists()
