"""The classical baselines and the evaluation helper.

Thresholds come from measurements (seeds 0..7, the speed-tracking profiles on flat dry asphalt, no
payload, bias or soil randomisation): the ULC with pure pursuit tracks with a mean speed RMSE of 0.27 m/s
(episodes 0.18..0.34 m/s), the pedal PID with 0.27 m/s. The profile changes its target every 4..10 s with
ramps of 1 m/s^2 up and 1.5 m/s^2 down and stops, and the ULC follows through its own rate limits and
lags; 0.4 m/s leaves room for numerical changes in the model without letting a broken controller (0.6 to
1.2 m/s with no lead on the target, several m/s without a working ULC) pass.
"""

from __future__ import annotations

import json

import gymnasium
import numpy as np
import pytest

from acres_gym.agents.baselines import PedalPid, UlcPurePursuit, make_baseline
from acres_gym.agents.evaluate import baseline_entry, compare, evaluate, format_table
from acres_gym.envs.tasks import RangerPathFollowing, RangerSpeedTracking

FLAT = {"randomization": {"terrain": {"kind": "flat", "surface": "dry_asphalt"}, "patches": None, "wetness": None,
                          "payload": {"cargo_kg": None, "occupants": None},
                          "biases": {"ulc_speed_mps": None, "throttle_pct": None, "brake_bar": None}}}
SPEED = "acres_gym/RangerSpeedTracking-v3"
PATH = "acres_gym/RangerPathFollowing-v3"


def test_ulc_baseline_tracks_the_speed_profile_on_flat_asphalt():
    r = evaluate(lambda venv: UlcPurePursuit(venv), SPEED, episodes=8, seed=0, config=FLAT,
                 action_mode="curvature+ulc_velocity")
    m = r["mean"]
    assert m["speed_rmse_mps"] < 0.4, m
    assert max(e["speed_rmse_mps"] for e in r["per_episode"]) < 0.5
    assert m["failed"] == 0.0 and m["episode_steps"] == 600 and m["lateral_rmse_m"] < 0.05
    assert 100.0 < m["fuel_g_per_km"] < 400.0 and m["distance_m"] > 50.0


def test_pedal_pid_tracks_the_speed_profile_on_flat_asphalt():
    r = evaluate(lambda venv: PedalPid(venv), SPEED, episodes=8, seed=0, config=FLAT, action_mode="pedals")
    assert r["mean"]["speed_rmse_mps"] < 0.4, r["mean"]
    assert r["mean"]["failed"] == 0.0


def test_pure_pursuit_follows_the_winding_path():
    r = evaluate(lambda venv: UlcPurePursuit(venv), PATH, episodes=4, seed=0, config=FLAT)
    assert r["mean"]["lateral_rmse_m"] < 0.3 and r["mean"]["failed"] == 0.0, r["mean"]


def test_baselines_work_on_single_observations_and_refuse_other_action_modes():
    env = RangerSpeedTracking(config={**FLAT, "action_mode": "steer_angle+pedals"})
    policy = PedalPid(env)
    obs, _ = env.reset(seed=0)
    policy.reset()
    for _ in range(100):
        action = policy(obs)
        assert action.shape == (3,) and env.action_space.contains(action)
        obs, *_ = env.step(action)
    assert obs["vehicle_velocity"][0] > 0.5
    with pytest.raises(ValueError, match="curvature\\+ulc_velocity"):
        UlcPurePursuit(env)
    with pytest.raises(ValueError, match="unknown baseline"):
        make_baseline("mpc", env)


def test_ulc_baseline_through_raw_dbw_commands():
    env = RangerPathFollowing(config={**FLAT, "action_mode": "dbw_command"})
    policy = UlcPurePursuit(env)
    obs, _ = env.reset(seed=1)
    for _ in range(200):
        obs, _, terminated, truncated, info = env.step(policy(obs))
        assert not terminated
    assert abs(info["lateral_error_m"]) < 0.5 and info["speed_mps"] > 2.0


def test_compare_and_table():
    results = compare({"ulc": baseline_entry("ulc_pure_pursuit"), "pid": baseline_entry("pedal_pid")}, SPEED,
                      episodes=2, seed=5, config={**FLAT, "max_episode_s": 5.0})
    assert set(results) == {"ulc", "pid"}
    assert [e["seed"] for e in results["ulc"]["per_episode"]] == [5, 6]
    table = format_table(results)
    assert "speed RMSE m/s" in table and table.count("\n") == 2
    assert np.isfinite(results["pid"]["mean"]["l_per_100km"])


def test_watch_saves_one_frame_per_step_and_reports_the_episode(tmp_path, monkeypatch):
    monkeypatch.setenv("SDL_VIDEODRIVER", "dummy")
    from acres_gym.agents.watch import resolve_policy, watch

    env_id, factory, mode, config = resolve_policy("ulc_pure_pursuit", None)
    assert env_id == PATH and mode == "curvature+ulc_velocity" and config == {}
    lines = []
    rows = watch(env_id, factory, mode, {**FLAT, "max_episode_s": 0.5}, episodes=2, seed=7,
                 frames_dir=tmp_path, printer=lines.append)
    # 0.5 s at 20 Hz: 10 steps and the time limit; the frame after the reset and one per step
    assert [r["steps"] for r in rows] == [10, 10] and [r["end"] for r in rows] == ["time limit"] * 2
    assert [r["seed"] for r in rows] == [7, 8]
    assert len(list(tmp_path.glob("episode0_*.png"))) == 11 and (tmp_path / "episode1_00010.png").is_file()
    assert "episode 1 (seed 8)" in lines[1] and "ended: time limit" in lines[1]
    # the same seed is the same episode as the evaluation's
    evaluated = evaluate(factory, env_id, episodes=1, seed=7, config={**FLAT, "max_episode_s": 0.5},
                         action_mode=mode)
    assert evaluated["per_episode"][0]["episode_return"] == pytest.approx(rows[0]["episode_return"], rel=1e-12)


def test_watch_random_policy_and_bad_policy_names(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("SDL_VIDEODRIVER", "dummy")
    from acres_gym.agents.watch import resolve_policy, watch

    env_id, factory, mode, _ = resolve_policy("random", SPEED, seed=1)
    rows = watch(env_id, factory, mode, FLAT, frames_dir=tmp_path, max_steps=3, printer=None)
    assert rows[0]["steps"] == 3 and rows[0]["end"] == "stopped"
    with pytest.raises(ValueError, match=r"max_steps = 0: expected at least 1 \(or None: whole episodes\)"):
        watch(env_id, factory, mode, FLAT, frames_dir=tmp_path, max_steps=0, printer=None)
    with pytest.raises(ValueError, match="--policy 'pid'.*ulc_pure_pursuit, pedal_pid"):
        resolve_policy("pid", None)
    with pytest.raises(FileNotFoundError, match="no model at"):
        resolve_policy(str(tmp_path / "missing.zip"), None)
    from acres_gym.agents.watch import main

    with pytest.raises(SystemExit) as stop:
        main(["--seed", "-2", "--frames", str(tmp_path)])
    err = capsys.readouterr().err
    assert stop.value.code == 2 and "argument --seed: '-2': expected an integer from 0 to 4294967295" in err


def test_evaluate_command_line_with_config_overrides(capsys):
    from acres_gym.agents.evaluate import main

    main(["--episodes", "1", "--seed", "3", "--set", "max_episode_s=0.5",
          "--set", "randomization.terrain={kind: flat, surface: dry_asphalt, grade_pct: 10}",
          "--set", "randomization.patches=null"])
    out = capsys.readouterr().out
    assert out.startswith("acres_gym/RangerSpeedTracking-v3, 1 episodes (seeds from 3):")
    rows = {line.split()[0]: line.split() for line in out.splitlines()[2:]}
    assert set(rows) == {"ulc_pure_pursuit", "pedal_pid"} and rows["pedal_pid"][-1] == "10"  # 0.5 s at 20 Hz
    with pytest.raises(SystemExit) as stop:
        main(["--episodes", "1", "--set", "randomization.terain.kind=flat"])
    assert stop.value.code == 2
    assert "unknown key 'terain' (did you mean 'terrain'?)" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["--set", "control_hz"])
    assert "--set 'control_hz': expected key.sub.key=value" in capsys.readouterr().err
    with pytest.raises(SystemExit) as stop:  # Gymnasium refuses negative seeds: one line, not its traceback
        main(["--seed", "-1"])
    err = capsys.readouterr().err
    assert stop.value.code == 2 and "argument --seed: '-1': expected an integer from 0 to 4294967295" in err
    with pytest.raises(ValueError, match="seed = -4: expected at least 0"):
        evaluate(lambda venv: None, SPEED, episodes=1, seed=-4)


def test_evaluate_command_line_chooses_baselines(capsys, tmp_path):
    from acres_gym.agents.evaluate import main

    short = ["--episodes", "1", "--seed", "3", "--set", "max_episode_s=0.5"]
    main(short + ["--baselines", "pedal_pid", "--json", str(tmp_path / "r.json")])
    rows = [line.split()[0] for line in capsys.readouterr().out.splitlines()[2:]]
    assert rows == ["pedal_pid"]
    assert list(json.loads((tmp_path / "r.json").read_text())) == ["pedal_pid"]
    for value, message in [("straight_line", "not a baseline of task 'speed_tracking': straight_line"),
                           ("pedal_pid,pedal_pid", "a name repeated"),
                           ("none", "--baselines none without --model: nothing to evaluate")]:
        with pytest.raises(SystemExit) as stop:
            main(short + ["--baselines", value])
        assert stop.value.code == 2
        err = capsys.readouterr().err
        assert message in err and ("allowed: a comma-separated list of ulc_pure_pursuit, pedal_pid, or none" in err
                                   or value == "none")


@pytest.mark.parametrize("grade_pct, expected", [(20.0, "L"), (5.0, "H")])
def test_baselines_choose_low_range_on_a_steep_start(grade_pct, expected):
    from acres_gym.constants import GEAR_HIGH, GEAR_LOW

    gear = {"L": GEAR_LOW, "H": GEAR_HIGH}[expected]
    config = {"max_episode_s": 4.0, "randomization": {"terrain": {"grade_pct": grade_pct, "roughness_m": 0.0},
                                                      "patches": None}}
    for name in ("ulc_pure_pursuit", "pedal_pid"):
        factory, mode = baseline_entry(name)
        venv = gymnasium.make_vec(SPEED, num_envs=2, vectorization_mode="vector_entry_point", autoreset_mode="Disabled",
                                  config={**config, "action_mode": mode, "action_options": {"gear_axis": True}})
        policy = factory(venv)
        obs, _ = venv.reset(seed=1)
        policy.reset(np.ones(2, dtype=bool))
        for _ in range(60):  # 3 s: the 1.5 s shift through N
            obs, *_ = venv.step(policy(obs))
        assert list(venv.unwrapped._batch.sim.state.gear) == [gear, gear], name
        venv.close()


def test_watch_on_navigation_reports_the_tasks_figures_and_takes_a_split(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("SDL_VIDEODRIVER", "dummy")
    from acres_gym.agents.watch import main

    main(["--env", "acres_gym/RangerOffroadNavigation-v2", "--policy", "straight_line", "--split", "test",
          "--seed", "2", "--frames", str(tmp_path), "--max-steps", "3", "--set", "max_episode_s=0.2"])
    line = capsys.readouterr().out.strip().splitlines()[-1]
    assert line.startswith("episode 0 (seed 2): return ") and "over 2 steps" in line  # 0.2 s at 10 Hz
    assert "success rate 0.00" in line and "distance to goal m" in line and "time to goal s nan" in line
    assert "RMSE" not in line and "ended: time limit" in line and "path_complete" not in line
    assert len(list(tmp_path.glob("episode0_*.png"))) == 3
