"""``acres-replay``: command logs in, reports and vehicle state out; bad input names its place."""

from __future__ import annotations

import csv
import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from acres_gym.paths import config_dir
from acres_gym.terrain import slope, to_file
from acres_gym.vehicle.replay import OUTPUT_COLUMNS, main, parse_commands, tick_at

DEFAULT_CONFIG_DIR = config_dir()

REQUIRED_OUTPUT = (
    "time_s", "x_m", "y_m", "z_m", "roll_rad", "pitch_rad", "yaw_rad", "speed_mps", "yaw_rate_rad_s",
    "engine_rpm", "cvt_ratio", "gear", "steering_wheel_angle_deg", "steering_cmd_deg", "steering_enabled",
    "throttle_percent_cmd", "throttle_percent_output", "brake_pressure_cmd_bar", "brake_pressure_output_bar",
    "ulc_vel_ref_mps", "ulc_accel_ref_mps2", "ulc_enabled", "vehicle_velocity_brake_mps",
    "vehicle_velocity_propulsion_mps", "fuel_used_g",
)
EXAMPLE = DEFAULT_CONFIG_DIR / "replay" / "example_commands.csv"


def write_log(path: Path, header: str, rows) -> Path:
    path.write_text(header + "\n" + "".join(row + "\n" for row in rows))
    return path


def run(tmp_path: Path, log: Path, *options: str, name: str = "out.csv") -> dict[str, np.ndarray]:
    """Run the CLI and read its output CSV into columns (floats; nan kept)."""
    out = tmp_path / name
    assert main([str(log), "--out", str(out), *options]) == 0
    with open(out, newline="") as f:
        reader = csv.reader(f)
        header = next(reader)
        rows = [[float(x) for x in row] for row in reader]
    assert tuple(header) == OUTPUT_COLUMNS
    data = np.array(rows)
    return {name: data[:, i] for i, name in enumerate(header)}


def rows_20hz(start: float, stop: float, fmt) -> list[str]:
    """One line per 50 ms from ``start`` to before ``stop`` (``fmt(t)`` gives the cells after time_s)."""
    return [f"{k / 20:.2f},{fmt(k / 20)}" for k in range(round(start * 20), round(stop * 20))]


def bad_input(capsys, argv) -> str:
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "usage: acres-replay" in err and "acres-replay: error:" in err
    return err


# --------------------------------------------------------------------------- round trip


def test_round_trip_drives_as_commanded(tmp_path):
    header = "time_s,enable,gear_cmd,steer_mode,steer_cmd,ulc_mode,ulc_cmd,ulc_limit_accel,brake_mode,brake_cmd"
    rows = ["0.00,1,4,3,0.05,1,3,1.5,,"]
    # later ULC and steering messages fill only their value: mode and limits repeat the first message
    rows += rows_20hz(0.05, 7.0, lambda t: ",,,0.05,,3,,,")
    rows += rows_20hz(7.0, 9.0, lambda t: ",,,,,,,1,30")  # steering and ULC messages stop; brake
    log = write_log(tmp_path / "log.csv", header, rows)
    d = run(tmp_path, log, "--out-hz", "20", "--duration", "9")

    assert len(d["time_s"]) == 9 * 20 + 1
    np.testing.assert_allclose(d["time_s"], np.arange(181) / 20, atol=1e-9)
    for name in REQUIRED_OUTPUT:
        assert name in d
    t = d["time_s"]
    cruise = (t >= 5.0) & (t <= 7.0)
    assert np.all(np.abs(d["vehicle_velocity_brake_mps"][cruise] - 3.0) < 0.3)
    assert np.all(d["ulc_enabled"][(t > 0) & (t <= 7.0)] == 1)
    assert np.all(d["ulc_vel_ref_mps"][(t > 3.5) & (t <= 7.0)] == 3.0)
    # curvature 0.05 1/m: the kinematic steering-wheel angle, and a left turn
    assert d["steering_cmd_deg"][t == 6.0][0] == pytest.approx(15.0 * math.degrees(math.atan(0.05 * 3.16)),
                                                               abs=0.5)
    assert d["y_m"][-1] > 2.0 and d["yaw_rad"][-1] > 0.5
    assert d["x_m"][-1] > 10.0
    assert d["fuel_used_g"][-1] > d["fuel_used_g"][0]
    # steering messages stopped at 7 s: timed out; the brake stops the vehicle
    assert d["steering_enabled"][-1] == 0 and d["steering_timeout"][-1] == 1 and math.isnan(d["steering_cmd_deg"][-1])
    assert d["brake_pressure_output_bar"][-1] == pytest.approx(30.0)
    assert abs(d["speed_mps"][-1]) < 0.05 and d["gear"][-1] == 4


def test_messages_take_effect_on_the_tick_at_or_after_their_time(tmp_path):
    log = write_log(tmp_path / "log.csv", "time_s,enable,steer_mode,steer_cmd", ["0,1,,", "0.01,,2,30"])
    d = run(tmp_path, log, "--duration", "0.05")
    assert len(d["time_s"]) == 7
    assert tick_at(0.01) == 2 and tick_at(0.05) == 6 and tick_at(0.0) == 0
    enabled = d["steering_enabled"]
    # the row at k / 120 s is the state after k ticks: the message acts on tick 2 (from 1 / 60 s)
    assert enabled.tolist() == [0, 0, 0, 1, 1, 1, 1]
    assert d["dbw_enabled"][1] == 1


def test_default_output_is_stdout_and_default_duration_one_second_past_the_log(tmp_path, capsys):
    log = write_log(tmp_path / "log.csv", "time_s,driver_throttle_pct", ["0,0", "0.5,0"])
    assert main([str(log), "--out-hz", "10"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[0].split(",") == list(OUTPUT_COLUMNS)
    assert len(lines) == 1 + 16  # 0 .. 1.5 s at 10 Hz
    assert float(lines[-1].split(",")[0]) == pytest.approx(1.5)


def test_example_log_drives_enables_shifts_turns_and_stops(tmp_path):
    d = run(tmp_path, EXAMPLE, "--out-hz", "4")
    t = d["time_s"]
    assert d["dbw_enabled"][t >= 0.25].min() == 1 and d["gear"][-1] == 4 and d["gear_reject"].max() == 0
    assert np.max(d["vehicle_velocity_brake_mps"]) == pytest.approx(5.0, abs=0.3)
    assert np.max(np.abs(d["steering_wheel_angle_deg"])) > 50.0 and d["yaw_rad"][-1] > 0.3
    assert d["brake_pressure_output_bar"][t == 20.0][0] == pytest.approx(20.0)
    assert np.all(np.abs(d["speed_mps"][(t >= 20.0) & (t <= 24.0)]) < 0.1)


# --------------------------------------------------------------------------- options


def test_set_overrides_a_parameter(tmp_path):
    log = write_log(tmp_path / "log.csv", "time_s,enable", ["0,0"])
    base = run(tmp_path, log, "--duration", "0.5", name="a.csv")
    biased = run(tmp_path, log, "--duration", "0.5", "--set", "dbw.bias.brake_bar=7",
                 "--set", "dbw.bias.throttle_pct=3", name="b.csv")
    assert base["brake_pressure_output_bar"].max() == 0.0
    np.testing.assert_allclose(biased["brake_pressure_output_bar"], 7.0)
    np.testing.assert_allclose(biased["throttle_percent_output"], 3.0)


def test_surface_changes_the_ground(tmp_path):
    log = write_log(tmp_path / "log.csv", "time_s,driver_throttle_pct", ["0,35"])
    asphalt = run(tmp_path, log, "--duration", "4", "--out-hz", "10", name="a.csv")
    grass = run(tmp_path, log, "--duration", "4", "--out-hz", "10", "--surface", "grass", name="g.csv")
    assert asphalt["x_m"][-1] - asphalt["x_m"][0] > 3.0
    assert grass["x_m"][-1] - grass["x_m"][0] < asphalt["x_m"][-1] - asphalt["x_m"][0] - 0.2


def test_slope_percent_tilts_the_ground_and_the_vehicle_rolls_back_in_neutral(tmp_path):
    log = write_log(tmp_path / "log.csv", "time_s,enable,gear_cmd", ["0,1,3"])
    d = run(tmp_path, log, "--duration", "4", "--out-hz", "10", "--slope-percent", "10")
    assert abs(d["pitch_rad"][0]) == pytest.approx(math.atan(0.10), abs=0.01)
    assert d["gear"][-1] == 3
    assert d["x_m"][-1] < d["x_m"][0] - 0.3 and d["z_m"][-1] < d["z_m"][0]


@pytest.mark.parametrize("kind", ["npz", "json", "yaml"])
def test_terrain_file_and_config(tmp_path, kind):
    if kind == "npz":
        terrain = to_file(slope(5.0, surface="grass", size_m=100.0), tmp_path / "t.npz")
    elif kind == "json":
        terrain = tmp_path / "t.json"
        terrain.write_text(json.dumps({"kind": "slope", "percent": 5.0, "surface": "grass", "size_m": 100}))
    else:
        terrain = tmp_path / "t.yaml"
        terrain.write_text("kind: slope\npercent: 5.0\nsurface: grass\nsize_m: 100\n")
    log = write_log(tmp_path / "log.csv", "time_s,enable", ["0,0"])
    d = run(tmp_path, log, "--duration", "0.5", "--out-hz", "10", "--terrain", str(terrain))
    assert abs(d["pitch_rad"][0]) == pytest.approx(math.atan(0.05), abs=0.01)


def test_vehicle_by_path(tmp_path):
    log = write_log(tmp_path / "log.csv", "time_s,enable", ["0,0"])
    vehicle = DEFAULT_CONFIG_DIR / "vehicles" / "polaris_ranger_crew_xp1000.json"
    d = run(tmp_path, log, "--duration", "0.1", "--vehicle", str(vehicle))
    assert len(d["time_s"]) == 13


# --------------------------------------------------------------------------- bad input


@pytest.mark.parametrize(("content", "expected"), [
    ("time_s,steer_cmd,bogus\n0,1,2\n", ["line 1, column 3", "unknown column 'bogus'"]),
    ("enable,steer_cmd\n1,0\n", ["line 1", "missing column 'time_s'"]),
    ("time_s,enable,steer_cmd\n0,1,0\n0.05,,abc\n", ["line 3, column 3 (steer_cmd)", "'abc' is not a number"]),
    ("time_s,enable\n0.5,1\n0.6,1\n0.2,1\n", ["line 4, column 1 (time_s)", "backwards"]),
    ("time_s,steer_mode\n0,7\n", ["line 2, column 2 (steer_mode)", "allowed: 0 (NONE), 2 (ANGLE)"]),
    ("time_s,throttle_mode\n0,1\n", ["line 2, column 2 (throttle_mode)", "14 (PERCENT)"]),
    ("time_s,brake_mode\n0,13\n", ["line 2, column 2 (brake_mode)", "1 (PRESSURE)"]),
    ("time_s,ulc_mode\n0,1.5\n", ["line 2, column 2 (ulc_mode)", "not a ulc_mode number"]),
    ("time_s,gear_cmd\n0,9\n", ["line 2, column 2 (gear_cmd)", "15 (CALIBRATE)"]),
    ("time_s,drive_mode\n0,3\n", ["line 2, column 2 (drive_mode)", "2 (awd)"]),
    ("time_s,steer_enable\n0,2\n", ["line 2, column 2 (steer_enable)", "not a boolean"]),
    ("time_s,steer_cmd\n0,nan\n", ["line 2, column 2 (steer_cmd)", "NaN"]),
    ("time_s,steer_cmd\n,1\n", ["line 2, column 1 (time_s)", "empty"]),
    ("time_s,steer_cmd\n-1,1\n", ["line 2, column 1 (time_s)", "not a time"]),
    ("# comment\ntime_s,steer_cmd\n0,1\n0.1,1,2\n", ["line 4", "3 cells", "header (line 2) has 2 columns"]),
    ("time_s,enable,enable\n0,1,1\n", ["line 1, column 3", "repeats column 2"]),
])
def test_bad_log_names_line_and_column(tmp_path, capsys, content, expected):
    log = tmp_path / "bad.csv"
    log.write_text(content)
    err = bad_input(capsys, [str(log), "--out", str(tmp_path / "out.csv")])
    assert f"{log}: " in err
    for text in expected:
        assert text in err
    assert not (tmp_path / "out.csv").exists()


@pytest.mark.parametrize(("options", "expected"), [
    (["--set", "dbw.brake.nope=1"], ["--set", "dbw.brake.nope"]),
    (["--set", "dbw.brake.max_bar=-5"], ["--set", "dbw.brake.max_bar", "-5"]),
    (["--set", "dbw.brake.max_bar=lots"], ["--set", "'lots' is not a number"]),
    (["--set", "dbw.brake.max_bar"], ["--set", "expected key=value"]),
    (["--surface", "lava"], ["--surface", "unknown surface 'lava'", "dry_asphalt"]),
    (["--out-hz", "7"], ["--out-hz 7", "must divide the 120 Hz"]),
    (["--out-hz", "240"], ["--out-hz 240", "must divide"]),
    (["--duration", "-1"], ["--duration", "positive"]),
    (["--vehicle", "no_such_vehicle"], ["--vehicle no_such_vehicle", "unknown vehicle"]),
    (["--terrain", "x.npz", "--surface", "grass"], ["--terrain cannot be combined"]),
    (["--terrain", "missing.npz"], ["--terrain", "missing.npz"]),
    (["--terrain", "t.txt"], ["--terrain", ".npz"]),
])
def test_bad_options(tmp_path, capsys, options, expected):
    log = write_log(tmp_path / "log.csv", "time_s,enable", ["0,1"])
    err = bad_input(capsys, [str(log), "--out", str(tmp_path / "out.csv"), *options])
    for text in expected:
        assert text in err


def test_missing_log_file(tmp_path, capsys):
    err = bad_input(capsys, [str(tmp_path / "nope.csv")])
    assert "nope.csv" in err


def test_parse_commands_reads_booleans_comments_and_blank_lines():
    messages = parse_commands(["# a log", "time_s, enable ,ulc_enable,ulc_cmd", "", "0,true,False,",
                               "0.05,,,2.5"], "mem")
    assert [m.line for m in messages] == [4, 5]
    assert messages[0].cells == {"enable": 1.0, "ulc_enable": 0.0}
    assert messages[1].cells == {"ulc_cmd": 2.5} and messages[1].tick == 6


def test_module_help_runs_as_a_script():
    result = subprocess.run([sys.executable, "-m", "acres_gym.vehicle.replay", "--help"], capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 0
    assert "usage: acres-replay" in result.stdout
    for option in ("--out", "--out-hz", "--duration", "--vehicle", "--surface", "--slope-percent",
                   "--terrain", "--set"):
        assert option in result.stdout
