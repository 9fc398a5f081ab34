"""``acres_gym.agents.profile_training``: the parts of a short training run add up to its wall time."""

from __future__ import annotations

import argparse
import math
import time

import pytest

from acres_gym.agents import profile_training as pt


def smoke_config(*overrides: str) -> dict:
    ns = argparse.Namespace(total_steps=None, seed=None, out=None,
                            overrides=["env_config.max_episode_s=4", "eval_episodes=1", *overrides])
    return pt.train_script().load_train_config("smoke", ns)


def test_exclusive_sections_and_the_remainder_add_up_to_the_wall_time():
    timer = pt.SectionTimer()
    timer.start()
    timer.enter("update")
    time.sleep(0.02)
    timer.enter("inference")  # nested: counts only for the inner section
    time.sleep(0.03)
    timer.leave()
    timer.pause()  # left out of everything
    time.sleep(0.05)
    timer.resume()
    timer.leave()
    time.sleep(0.01)  # in no section: "other"
    timer.stop()
    seconds = timer.seconds()
    assert seconds["inference"] == pytest.approx(0.03, abs=0.015)
    assert seconds["update"] == pytest.approx(0.02, abs=0.015)
    assert seconds["other"] == pytest.approx(0.01, abs=0.015)
    assert timer.wall_s == pytest.approx(0.06, abs=0.03)  # the paused 0.05 s left out
    assert sum(seconds.values()) == pytest.approx(timer.wall_s, rel=1e-9)


def test_a_profiled_run_accounts_for_its_wall_time():
    r = pt.profile_run(smoke_config(), steps=512)
    assert r["steps"] == 512 and r["updates"] == 2 and r["evaluations"] == 1
    shares = r["shares"]
    assert set(shares) == set(pt.ROWS)
    assert all(v >= 0.0 for v in shares.values())
    assert sum(shares.values()) == pytest.approx(1.0, abs=1e-9)
    assert sum(r["seconds"].values()) == pytest.approx(r["wall_s"], rel=1e-6)
    for part in ("env step", "normaliser", "inference", "update", "evaluation", "logging"):
        assert r["seconds"][part] > 0.0, part
    # the untimed remainder is a small part of the run: the rows cover where the time goes
    assert shares["other"] < 0.25
    assert math.isfinite(r["train_steps_per_s"]) and r["train_steps_per_s"] > 0
    assert r["raw_env_steps"] == 2 * 64 * 4  # one rollout's length after each of the two rollouts
    assert r["raw_env_steps_per_s"] > 0


def test_the_command_line_prints_the_table_and_compares_variants(capsys):
    result = pt.main(["--config", "smoke", "--steps", "256", "--no-eval", "--set", "env_config.max_episode_s=4",
                      "--variant", "torch_threads=2"])
    out = capsys.readouterr().out
    for row in pt.ROWS:
        assert row in out
    assert "training / raw env" in out and "ratio to the base" in out
    assert result["ratios"]["base"] == 1.0
    assert result["runs"]["torch_threads=2"][0]["torch_threads"] == 2


def test_bad_options_stop_with_a_message(capsys):
    with pytest.raises(SystemExit) as exc:
        pt.main(["--config", "smoke", "--steps", "0"])
    assert exc.value.code == 2 and "--steps = 0" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exc:
        pt.main(["--config", "smoke", "--set", "no_such_key=1"])
    assert exc.value.code == 2 and "no_such_key" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exc:
        pt.main(["--config", "sac_path_following"])
    assert exc.value.code == 2 and "algo = 'sac'" in capsys.readouterr().err
    with pytest.raises(ValueError, match="algo = 'sac'"):
        pt.profile_run(smoke_config("algo=sac"), steps=64)


def test_a_variant_value_may_hold_commas():
    assert pt._variant_overrides("policy_kwargs.net_arch=[64,64],algo_kwargs.n_epochs=5") == [
        "policy_kwargs.net_arch=[64,64]", "algo_kwargs.n_epochs=5"]
    assert pt._variant_overrides("torch_threads=2, backend=lean") == ["torch_threads=2", "backend=lean"]


def test_the_lean_rollouts_actor_and_update_are_timed_in_numpy_and_in_torch(capsys):
    """``actor=torch`` and ``update=torch`` (the profiler's keys) run the lean rollouts' actor by torch's layers and
    the update by torch's autograd: variants of the same run, with their own inference and update rows."""
    result = pt.main(["--config", "smoke", "--steps", "256", "--no-eval", "--set", "env_config.max_episode_s=4",
                      "--backend", "lean", "--variant", "actor=torch", "--variant", "update=torch"])
    assert set(result["runs"]) == {"base", "actor=torch", "update=torch"}
    base, actor, update = (result["runs"][k][0] for k in ("base", "actor=torch", "update=torch"))
    assert (base["actor"], base["update"]) == ("numpy", "numpy")
    assert (actor["actor"], actor["update"]) == ("torch", "numpy")
    assert (update["actor"], update["update"]) == ("numpy", "torch")
    for run in (base, actor, update):
        assert run["seconds"]["inference"] > 0.0 and run["seconds"]["update"] > 0.0
    with pytest.raises(SystemExit) as exc:
        pt.main(["--config", "smoke", "--variant", "actor=jax"])
    assert exc.value.code == 2 and "actor = 'jax'; allowed: numpy, torch" in capsys.readouterr().err
