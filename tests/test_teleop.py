"""The driver's seat (``acres_gym.agents.teleop``): key handling, the command log and its replay, the
demonstration dataset. Headless: scripted keys, or pygame key events on the dummy video driver."""

from __future__ import annotations

import os

os.environ.setdefault("SDL_VIDEODRIVER", "dummy")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

from acres_gym.agents import teleop  # noqa: E402
from acres_gym.constants import DRIVE_ALL_WHEEL, DRIVE_TURF, GEAR_HIGH, GEAR_LOW, GEAR_NONE  # noqa: E402
from acres_gym.vehicle.replay import read_commands  # noqa: E402

# rough ground with grass and soil patches, random payload and biases: the replay must rebuild all of it
CONFIG = {"randomization": {"terrain": {"kind": "rough", "size_m": 160.0, "cell_m": 1.0, "roughness_m": 0.1},
                            "patches": {"surfaces": {"grass": 1, "soil": 1}, "scale_m": 10.0},
                            "payload": {"cargo_kg": [0, 300]}},
          "task_options": {"spawn_xy_m": [0.0, 0.0]}}
KEYS = [(20, {"up"}), (20, {"up", "left"}), (5, {"up", "left", "1"}), (15, {"down"}), (10, set()),
        (10, {"up", "right", "3"}), (10, {"space"})]


def test_driver_ramps_pedals_and_wheel_and_sends_events_once():
    d = teleop.Driver(steer_lock_deg=500.0, dt_s=0.05, drive_mode=DRIVE_ALL_WHEEL)
    first = d.command(teleop.Controls())
    assert first["gear_cmd"] == GEAR_HIGH  # the first step selects H, as the environments do
    assert d.command(teleop.Controls())["gear_cmd"] == GEAR_NONE
    for _ in range(20):  # 1 s of throttle and left
        c = d.command(teleop.Controls(held={"throttle", "left"}))
    assert c["throttle_cmd"] == pytest.approx(teleop.THROTTLE_RISE_PCT_S)
    assert c["steer_cmd"] == pytest.approx(min(500.0, teleop.STEER_RATE_DEG_S))
    for _ in range(40):
        c = d.command(teleop.Controls(held={"left"}))
    assert c["steer_cmd"] == 500.0 and c["throttle_cmd"] == 0.0  # at the lock; the pedal fell back
    c = d.command(teleop.Controls(events=[("gear", GEAR_LOW), ("drive_mode", DRIVE_TURF)]))
    assert c["gear_cmd"] == GEAR_LOW and c["drive_mode"] == DRIVE_TURF
    assert c["steer_cmd"] == pytest.approx(500.0 - teleop.STEER_RATE_DEG_S * 0.05)  # returning to centre
    assert d.command(teleop.Controls(held={"full_brake"}))["brake_cmd"] == 100.0
    # a gamepad: stick and triggers give the wheel and the pedals directly (the larger of pad and keys)
    d = teleop.Driver(steer_lock_deg=500.0, dt_s=0.05, drive_mode=DRIVE_ALL_WHEEL)
    c = d.command(teleop.Controls(pad_steer=-0.5, pad_throttle=0.25, pad_brake=0.0))
    assert c["steer_cmd"] == -250.0 and c["throttle_cmd"] == 25.0
    assert set(c) == set(teleop.DbwCommandMode.FIELDS)


def test_pygame_key_events_are_held_until_released():
    import pygame

    pygame.display.init()
    pygame.display.set_mode((32, 32))
    source = teleop.PygameInput()
    pygame.event.post(pygame.event.Event(pygame.KEYDOWN, key=pygame.K_UP))
    pygame.event.post(pygame.event.Event(pygame.KEYDOWN, key=pygame.K_l))
    c = source.poll()
    assert c.held == {"throttle"} and c.events == [("gear", GEAR_LOW)]
    assert source.poll().held == {"throttle"}  # still held, no new event
    pygame.event.post(pygame.event.Event(pygame.KEYUP, key=pygame.K_UP))
    assert source.poll().held == set()
    pygame.display.quit()


@pytest.mark.parametrize("env_id", ["acres_gym/RangerSpeedTracking-v3", "acres_gym/RangerPathFollowing-v3"])
def test_a_scripted_drive_replays_to_the_same_trajectory(tmp_path, env_id):
    log = tmp_path / "drive.csv"
    result = teleop.drive(env_id, CONFIG, seed=5, source=teleop.ScriptedKeys(KEYS), render_mode=None, log=log)
    steps = sum(n for n, _ in KEYS)
    assert result["steps"] == steps
    path = result["positions_m"]
    assert np.linalg.norm(path[-1, :2] - path[0, :2]) > 2.0  # it went somewhere
    # the log is an acres-replay command log: one message per step, every field, the gear only when sent
    messages = read_commands(log)
    assert len(messages) == steps
    assert [m.time_s for m in messages[:3]] == pytest.approx([0.0, 0.05, 0.1])
    assert messages[0].cells["gear_cmd"] == GEAR_HIGH and "gear_cmd" not in messages[1].cells
    assert messages[30].cells["throttle_cmd"] == result["commands"][30]["throttle_cmd"]
    assert {m.cells["drive_mode"] for m in messages} == {DRIVE_ALL_WHEEL, DRIVE_TURF}
    replayed = teleop.replay_positions(log)
    assert replayed.shape == path.shape
    np.testing.assert_array_equal(replayed, path)


def test_replay_command_line_writes_the_trajectory(tmp_path, capsys):
    log, out = tmp_path / "drive.csv", tmp_path / "replayed.csv"
    result = teleop.drive(config=CONFIG, seed=2, source=teleop.ScriptedKeys(KEYS[:2]), render_mode=None, log=log)
    teleop.main(["--replay", str(log), "--out", str(out)])
    import csv

    with open(out, newline="") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == result["steps"] + 1
    np.testing.assert_allclose([float(rows[-1]["x_m"]), float(rows[-1]["y_m"])], result["positions_m"][-1, :2],
                               rtol=1e-8)
    with pytest.raises(SystemExit):
        teleop.main(["--replay", str(out)])  # not a teleop log: a one-line error
    assert "not a teleop log" in capsys.readouterr().err


def test_a_drive_saves_and_loads_as_a_demonstration(tmp_path):
    demo = tmp_path / "drive.npz"
    result = teleop.drive(config=CONFIG, seed=1, source=teleop.ScriptedKeys(KEYS[:3]), render_mode=None, demo=demo)
    data = teleop.load_demo(demo)
    t = result["steps"]
    assert data["format"] == teleop.DEMO_FORMAT and data["env_id"] == teleop.DEFAULT_ENV and data["seed"] == 1
    assert data["config"] == CONFIG
    assert data["actions"].shape == (t, len(teleop.DbwCommandMode.FIELDS))
    throttle = data["action_fields"].index("throttle_cmd")
    np.testing.assert_array_equal(data["actions"][:, throttle], [c["throttle_cmd"] for c in result["commands"]])
    np.testing.assert_array_equal(data["rewards"], result["rewards"])
    assert data["rewards"].shape == data["terminations"].shape == data["truncations"].shape == (t,)
    assert data["positions_m"].shape == (t + 1, 3)
    speeds = data["observations"]["speed_mps"] if "speed_mps" in data["observations"] else None
    for name, values in data["observations"].items():
        assert values.shape[0] == t + 1, name
        np.testing.assert_array_equal(values[-1], np.asarray(result["observations"][-1][name], dtype=np.float32))
    assert speeds is None or speeds[-1] > speeds[0]
    np.savez(tmp_path / "other.npz", a=np.zeros(1))
    with pytest.raises(ValueError, match="format"):
        teleop.load_demo(tmp_path / "other.npz")


def test_gamepad_triggers_count_from_their_rest_position():
    import pygame

    class Pad:  # a stand-in for pygame.joystick.Joystick
        def __init__(self, axes):
            self.axes = axes

        def get_axis(self, i):
            return self.axes[i]

    pygame.display.init()
    pygame.display.set_mode((32, 32))
    source = teleop.PygameInput()
    for rest in (-1.0, 0.0):  # SDL's layout, and drivers whose triggers rest at 0
        source.pad = Pad([0.5, 0, 0, 0, rest, rest])
        source.rest = {teleop.PAD_BRAKE_AXIS: rest, teleop.PAD_THROTTLE_AXIS: rest}
        c = source.poll()
        assert (c.pad_throttle, c.pad_brake, c.pad_steer) == (0.0, 0.0, -0.5)
        source.pad.axes[teleop.PAD_THROTTLE_AXIS] = 1.0
        source.pad.axes[teleop.PAD_BRAKE_AXIS] = rest + 0.5 * (1.0 - rest)
        source.pad.axes[teleop.PAD_STEER_AXIS] = 0.05  # inside the dead zone
        c = source.poll()
        assert (c.pad_throttle, c.pad_brake, c.pad_steer) == (1.0, 0.5, 0.0)
    pygame.display.quit()
