"""A driver's seat: drive the Ranger from the keyboard (or a gamepad) through its DBW commands, record the
drive as an ``acres-replay`` command log and, optionally, as a demonstration dataset.

``python -m acres_gym.agents.teleop`` opens the pygame view of ``acres_gym/RangerSpeedTracking-v3``
(``--env`` any registered id, ``--config`` / ``--set`` its task config as in ``acres_gym.agents.evaluate``,
``--seed`` the episode) and drives it in real time at the control rate. The environment runs with
``action_mode: dbw_command``, so every step sends the same DBW messages an agent's commands become:
steering wheel angle (SteeringCmd ANGLE, deg), throttle pedal (ThrottleCmd PERCENT), brake pedal (BrakeCmd
PERCENT), gear / range (GearCmd, an event) and the AWD switch (``drive_mode``). The episode's
observations, rewards and dynamics are the task's own.

Keyboard (held keys ramp the pedals and the wheel; releasing lets them return):

=====================  =========================================================================
up / w                 throttle: rises at ``THROTTLE_RISE_PCT_S`` to 100 %, falls at ``THROTTLE_FALL_PCT_S``
down / s               brake: rises at ``BRAKE_RISE_PCT_S`` to 100 %, falls at ``BRAKE_FALL_PCT_S``
space                  full brake at once (held)
left / a, right / d    steering wheel towards the lock at ``STEER_RATE_DEG_S``; back to centre when released
h, l, r, n, p          gear: range H (DRIVE), range L (LOW), reverse, neutral, park
1, 2, 3                AWD switch: turf, 2WD, AWD
escape / q             stop (the window's close button too)
=====================  =========================================================================

A gamepad (the first joystick pygame sees) drives as well: left stick x steers (the stick's position is
the wheel's share of the lock), the right / left triggers are throttle / brake (0-100 %, from their rest
position read at start), buttons A, X, B, Y, back give H, L, R, N, P and the shoulder buttons step the
AWD switch down / up. Axis and button numbers are those of SDL's game-controller layout (``PAD_*``); other
pads may number them differently. The keyboard's pedal and wheel positions and the pad's are combined by
taking the larger deflection.

The first step sends range H unless a gear key was pressed (as the environments do for agents). The
drive ends when the episode does, or on escape / q.

Outputs:

- ``--log drive.csv``: the command log, one line per control step with every field that was sent, in the
  ``acres-replay`` format (``acres_gym.vehicle.replay``), full precision. Its first lines (comments, which the
  replay skips) name the environment, the task config, the seed and the control rate.
  ``--replay drive.csv --out replayed.csv`` rebuilds that episode (same id, config and seed: the same
  terrain, vehicle and start) and runs the log through ``acres_gym.vehicle.replay.replay``, writing the
  ``acres-replay`` output columns once per control step: the trajectory of the drive. The plain
  ``acres-replay drive.csv`` command line replays it on its own default ground (flat dry asphalt, the
  default vehicle, start at the origin heading +x), which is the same only for an episode on that ground.
- ``--demo drive.npz``: a demonstration dataset for imitation learning (``save_demo`` / ``load_demo``),
  NumPy ``.npz`` with Minari-style keys (T+1 observations for T actions), one episode of T steps:

  ===========================  ==============  ===============================================================
  key                          shape, dtype    meaning
  ===========================  ==============  ===============================================================
  ``observations/<name>``      (T+1, ...) f4   each observation entry after the reset and after every step
  ``actions``                  (T, K) f8       the DBW command fields sent at each step, in ds_dbw units
  ``action_fields``            (K,) str        their names (``DbwCommandMode.FIELDS``: steer_mode, steer_cmd, ...)
  ``rewards``                  (T,) f8         the task's reward of each step
  ``terminations``             (T,) bool       the step ended the episode by termination
  ``truncations``              (T,) bool       the step ended the episode by the time limit
  ``time_s``                   (T,) f8         time of each step's command, s from the reset
  ``positions_m``              (T+1, 3) f8     the centre of mass after the reset and after every step (world)
  ``env_id``, ``config``       () str          the environment id and its task config (JSON)
  ``seed``                     () int          the reset seed
  ``format``                   () str          ``DEMO_FORMAT``
  ===========================  ==============  ===============================================================

Tests and scripts drive without a window: ``drive(..., source=ScriptedKeys([...]))`` feeds key presses
step by step through the same key handling (``SDL_VIDEODRIVER=dummy`` and ``render_mode=None`` work).
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

import acres_gym  # noqa: F401  (registers the ids)
from acres_gym.configuration import merge_configs, seed_argument
from acres_gym.constants import (
    DRIVE_ALL_WHEEL,
    DRIVE_TURF,
    DRIVE_TWO_WHEEL,
    GEAR_HIGH,
    GEAR_LOW,
    GEAR_NEUTRAL,
    GEAR_NONE,
    GEAR_PARK,
    GEAR_REVERSE,
    PEDAL_PERCENT,
    STEER_ANGLE,
    ULC_NONE,
)
from acres_gym.envs.actions import DbwCommandMode
from acres_gym.envs.config import load_config
from acres_gym.vehicle.replay import INPUT_COLUMNS

DEFAULT_ENV = "acres_gym/RangerSpeedTracking-v3"
DEMO_FORMAT = "acres-gym-demo-1"
THROTTLE_RISE_PCT_S = 60.0
THROTTLE_FALL_PCT_S = 150.0
BRAKE_RISE_PCT_S = 150.0
BRAKE_FALL_PCT_S = 300.0
STEER_RATE_DEG_S = 360.0

KEY_HELP = ("acres-gym teleop: up/down or w/s throttle/brake, left/right or a/d steer, space full brake, "
            "h/l/r/n/p gear, 1/2/3 turf/2WD/AWD, q quit")
# key name (pygame.key.name) -> held control or one-shot event
HELD_KEYS = {"up": "throttle", "w": "throttle", "down": "brake", "s": "brake", "space": "full_brake",
             "left": "left", "a": "left", "right": "right", "d": "right"}
EVENT_KEYS = {"h": ("gear", GEAR_HIGH), "l": ("gear", GEAR_LOW), "r": ("gear", GEAR_REVERSE),
              "n": ("gear", GEAR_NEUTRAL), "p": ("gear", GEAR_PARK), "1": ("drive_mode", DRIVE_TURF),
              "2": ("drive_mode", DRIVE_TWO_WHEEL), "3": ("drive_mode", DRIVE_ALL_WHEEL),
              "escape": ("quit", 1), "q": ("quit", 1)}
# gamepad (SDL game-controller layout): buttons A, B, X, Y, back, shoulders
PAD_BUTTONS = {0: ("gear", GEAR_HIGH), 2: ("gear", GEAR_LOW), 1: ("gear", GEAR_REVERSE), 3: ("gear", GEAR_NEUTRAL),
               6: ("gear", GEAR_PARK), 4: ("drive_step", -1), 5: ("drive_step", 1)}
PAD_STEER_AXIS, PAD_BRAKE_AXIS, PAD_THROTTLE_AXIS = 0, 4, 5
PAD_DEADZONE = 0.08  # of the stick's travel

# DbwCommandMode field -> acres-replay column
FIELD_COLUMNS = {column.field: name for name, column in INPUT_COLUMNS.items()}
ENABLES = {"steer": "steer_mode", "throttle": "throttle_mode", "brake": "brake_mode", "ulc": "ulc_mode"}


@dataclass
class Controls:
    """One control step of input: the held controls, the one-shot events, and a gamepad's positions
    (None without one)."""

    held: set[str] = field(default_factory=set)
    events: list[tuple[str, int]] = field(default_factory=list)
    pad_steer: float | None = None  # -1 (right lock) .. 1 (left lock)
    pad_throttle: float | None = None  # 0..1
    pad_brake: float | None = None  # 0..1


class Driver:
    """Turns ``Controls`` into the DBW command fields of one control step (``DbwCommandMode.FIELDS``)."""

    def __init__(self, steer_lock_deg: float, dt_s: float, drive_mode: int) -> None:
        self.steer_lock_deg = float(steer_lock_deg)
        self.dt_s = float(dt_s)
        self.steering_deg = 0.0
        self.throttle_pct = 0.0
        self.brake_pct = 0.0
        self.drive_mode = int(drive_mode)
        self.first = True
        self.quit = False

    def command(self, controls: Controls) -> dict[str, Any]:
        dt = self.dt_s
        held = controls.held
        gear = GEAR_NONE
        for kind, value in controls.events:
            if kind == "gear":
                gear = value
            elif kind == "drive_mode":
                self.drive_mode = value
            elif kind == "drive_step":
                self.drive_mode = min(DRIVE_ALL_WHEEL, max(DRIVE_TURF, self.drive_mode + value))
            elif kind == "quit":
                self.quit = True
        if self.first and gear == GEAR_NONE:
            gear = GEAR_HIGH
        self.first = False
        self.throttle_pct = _ramp(self.throttle_pct, "throttle" in held, THROTTLE_RISE_PCT_S, THROTTLE_FALL_PCT_S,
                                  dt)
        self.brake_pct = 100.0 if "full_brake" in held else _ramp(self.brake_pct, "brake" in held,
                                                                   BRAKE_RISE_PCT_S, BRAKE_FALL_PCT_S, dt)
        direction = ("left" in held) - ("right" in held)
        step = STEER_RATE_DEG_S * dt
        if direction:
            self.steering_deg = min(self.steer_lock_deg, max(-self.steer_lock_deg,
                                                             self.steering_deg + direction * step))
        else:
            self.steering_deg = math.copysign(max(0.0, abs(self.steering_deg) - step), self.steering_deg)
        throttle, brake, steering = self.throttle_pct, self.brake_pct, self.steering_deg
        if controls.pad_throttle is not None:
            throttle = max(throttle, 100.0 * min(1.0, max(0.0, controls.pad_throttle)))
        if controls.pad_brake is not None:
            brake = max(brake, 100.0 * min(1.0, max(0.0, controls.pad_brake)))
        if controls.pad_steer is not None:
            pad = self.steer_lock_deg * min(1.0, max(-1.0, controls.pad_steer))
            steering = pad if abs(pad) > abs(steering) else steering
        command = {key: 0 for key in DbwCommandMode.FIELDS}
        command.update(system_enable=1, steer_mode=STEER_ANGLE, steer_cmd=float(steering),
                       throttle_mode=PEDAL_PERCENT, throttle_cmd=float(throttle), brake_mode=PEDAL_PERCENT,
                       brake_cmd=float(brake), gear_cmd=int(gear), ulc_mode=ULC_NONE, drive_mode=self.drive_mode)
        for key, space in DbwCommandMode.FIELDS.items():
            command[key] = float(command[key]) if space.dtype.kind == "f" else int(command[key])
        return command


def _ramp(value: float, held: bool, rise: float, fall: float, dt: float) -> float:
    return min(100.0, value + rise * dt) if held else max(0.0, value - fall * dt)


# --------------------------------------------------------------------------- input sources


class ScriptedKeys:
    """Key presses per control step for driving without a keyboard: ``[(steps, keys), ...]`` holds the
    keys (``pygame.key.name`` names: "up", "left", "h", ...) for that many steps; a key that is not held
    in the previous segment is pressed anew (its one-shot event fires once, on the segment's first step)."""

    def __init__(self, segments: Sequence[tuple[int, Iterable[str]]]) -> None:
        self.steps: list[Controls] = []
        previous: set[str] = set()
        for count, keys in segments:
            keys = set(keys)
            unknown = keys - set(HELD_KEYS) - set(EVENT_KEYS)
            if unknown:
                raise ValueError(f"scripted keys {sorted(unknown)}: known keys are "
                                 f"{', '.join(sorted(set(HELD_KEYS) | set(EVENT_KEYS)))}")
            for k in range(int(count)):
                pressed = keys - previous if k == 0 else set()
                self.steps.append(Controls(held={HELD_KEYS[key] for key in keys if key in HELD_KEYS},
                                           events=[EVENT_KEYS[key] for key in sorted(pressed) if key in EVENT_KEYS]))
            previous = keys
        self.index = 0

    def poll(self) -> Controls:
        if self.index >= len(self.steps):
            return Controls(events=[("quit", 1)])
        self.index += 1
        return self.steps[self.index - 1]


class PygameInput:
    """The keyboard (from pygame's key events, so held keys are tracked without ``key.get_pressed``) and
    the first gamepad pygame sees."""

    def __init__(self) -> None:
        import pygame

        self.pygame = pygame
        pygame.joystick.init()
        self.pad = pygame.joystick.Joystick(0) if pygame.joystick.get_count() > 0 else None
        if self.pad is not None and self.pad.get_numaxes() <= PAD_THROTTLE_AXIS:
            self.pad = None  # no triggers where the game-controller layout puts them
        # the triggers' rest positions (-1 in SDL's layout, 0 on some drivers), read at start
        self.rest = {a: self.pad.get_axis(a) for a in (PAD_BRAKE_AXIS, PAD_THROTTLE_AXIS)} if self.pad else {}
        self.held_keys: set[str] = set()

    def _trigger(self, axis: int) -> float:
        rest = min(self.rest[axis], 0.9)
        return max(0.0, (self.pad.get_axis(axis) - rest) / (1.0 - rest))

    def poll(self) -> Controls:
        pg = self.pygame
        controls = Controls()
        for ev in pg.event.get((pg.KEYDOWN, pg.KEYUP, pg.JOYBUTTONDOWN, pg.QUIT)):
            if ev.type == pg.QUIT:
                controls.events.append(("quit", 1))
            elif ev.type == pg.KEYDOWN:
                name = pg.key.name(ev.key)
                self.held_keys.add(name)
                if name in EVENT_KEYS:
                    controls.events.append(EVENT_KEYS[name])
            elif ev.type == pg.KEYUP:
                self.held_keys.discard(pg.key.name(ev.key))
            elif ev.type == pg.JOYBUTTONDOWN and ev.button in PAD_BUTTONS:
                controls.events.append(PAD_BUTTONS[ev.button])
        controls.held = {HELD_KEYS[k] for k in self.held_keys if k in HELD_KEYS}
        if self.pad is not None:
            stick = -self.pad.get_axis(PAD_STEER_AXIS)  # stick right = steer right
            controls.pad_steer = stick if abs(stick) > PAD_DEADZONE else 0.0
            controls.pad_throttle = self._trigger(PAD_THROTTLE_AXIS)
            controls.pad_brake = self._trigger(PAD_BRAKE_AXIS)
        return controls


# --------------------------------------------------------------------------- logs


def log_row(time_s: float, command: Mapping[str, Any]) -> dict[str, str]:
    """The ``acres-replay`` cells of one control step's command (what ``DbwCommandMode.write`` sends:
    every field, each subsystem's enable set when its mode is not NONE; the gear only when commanded)."""
    row = {"time_s": f"{time_s:.6f}"}
    for key, value in command.items():
        column = FIELD_COLUMNS[key]
        if key == "gear_cmd" and int(value) == GEAR_NONE:
            row[column] = ""
        else:
            row[column] = repr(float(value)) if DbwCommandMode.FIELDS[key].dtype.kind == "f" else str(int(value))
    for group, mode in ENABLES.items():
        row[f"{group}_enable"] = "1" if int(command[mode]) != 0 else "0"
    return row


def log_columns() -> list[str]:
    """Column order of a teleop log."""
    return ["time_s", *[FIELD_COLUMNS[k] for k in DbwCommandMode.FIELDS], *[f"{g}_enable" for g in ENABLES]]


def write_log(path: str | Path, rows: Sequence[Mapping[str, str]], header: Mapping[str, Any]) -> None:
    """Write a command log: comment lines of ``header`` (JSON values), then the CSV."""
    with open(path, "w", newline="", encoding="utf-8") as f:
        f.write("# acres-gym teleop drive (acres-replay command log)\n")
        for key, value in header.items():
            f.write(f"# {key}: {json.dumps(value)}\n")
        writer = csv.DictWriter(f, fieldnames=log_columns(), lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)


def read_log_header(path: str | Path) -> dict[str, Any]:
    """The ``# key: json`` comment lines at the top of a teleop log."""
    header: dict[str, Any] = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            if not line.startswith("#"):
                break
            key, sep, value = line[1:].partition(":")
            if sep:
                try:
                    header[key.strip()] = json.loads(value)
                except json.JSONDecodeError:
                    continue
    return header


def save_demo(path: str | Path, drive: Mapping[str, Any]) -> None:
    """Save a drive (``drive``'s result) as a demonstration dataset (module docstring)."""
    fields = list(DbwCommandMode.FIELDS)
    arrays: dict[str, Any] = {
        "actions": np.array([[float(c[k]) for k in fields] for c in drive["commands"]], dtype=np.float64).reshape(
            len(drive["commands"]), len(fields)),
        "action_fields": np.array(fields),
        "rewards": np.asarray(drive["rewards"], dtype=np.float64),
        "terminations": np.asarray(drive["terminations"], dtype=bool),
        "truncations": np.asarray(drive["truncations"], dtype=bool),
        "time_s": np.asarray(drive["time_s"], dtype=np.float64),
        "positions_m": np.asarray(drive["positions_m"], dtype=np.float64),
        "env_id": np.array(drive["env_id"]),
        "config": np.array(json.dumps(drive["config"])),
        "seed": np.array(int(drive["seed"])),
        "format": np.array(DEMO_FORMAT),
    }
    for name in drive["observations"][0]:
        arrays[f"observations/{name}"] = np.stack([o[name] for o in drive["observations"]]).astype(np.float32)
    np.savez_compressed(path, **arrays)


def load_demo(path: str | Path) -> dict[str, Any]:
    """Load a demonstration dataset: a dict of the arrays, with ``observations`` a dict by name,
    ``env_id`` and ``format`` as str, ``seed`` as int and ``config`` as a dict."""
    with np.load(path, allow_pickle=False) as data:
        if "format" not in data.files or str(data["format"]) != DEMO_FORMAT:
            found = str(data["format"]) if "format" in data.files else "none"
            raise ValueError(f"{path}: format {found!r}; expected a {DEMO_FORMAT!r} demonstration file")
        out: dict[str, Any] = {"observations": {}}
        for key in data.files:
            if key.startswith("observations/"):
                out["observations"][key.split("/", 1)[1]] = data[key]
            else:
                out[key] = data[key]
    for key in ("env_id", "format"):
        out[key] = str(out[key])
    out["seed"] = int(out["seed"])
    out["config"] = json.loads(str(out["config"]))
    out["action_fields"] = [str(f) for f in out["action_fields"]]
    return out


# --------------------------------------------------------------------------- driving


def make_env(env_id: str, config: Mapping | None, render_mode: str | None):
    """The environment of a drive: ``env_id`` with ``config`` and ``action_mode: dbw_command``."""
    import gymnasium

    env_config = merge_configs(load_config(config), {"action_mode": "dbw_command"})
    return gymnasium.make(env_id, config=env_config, render_mode=render_mode)


def drive(env_id: str = DEFAULT_ENV, config: Mapping | None = None, seed: int = 0, source=None,
          render_mode: str | None = "human", max_steps: int | None = None, log: str | Path | None = None,
          demo: str | Path | None = None) -> dict[str, Any]:
    """Drive one episode with the commands of ``source`` (default: the keyboard and gamepad) and return
    ``{"env_id", "config", "seed", "commands", "observations", "rewards", "terminations", "truncations",
    "time_s", "positions_m", "steps", "end"}`` (``positions_m``: the centre of mass after the reset and
    after each step). ``log`` / ``demo`` write the command log and the demonstration dataset."""
    env = make_env(env_id, config, render_mode)
    try:
        base = env.unwrapped
        obs, _info = env.reset(seed=seed)
        if source is None:
            if render_mode != "human":
                raise ValueError("driving from the keyboard needs render_mode='human' (a window for the keys)")
            source = PygameInput()
            source.pygame.display.set_caption(KEY_HELP)
        dt = 1.0 / base.control_hz
        params = base.sim.params[0]
        driver = Driver(float(params.steer_lock_deg), dt, int(base.sim.commands.drive_mode[0]))
        result: dict[str, Any] = {"env_id": env_id, "config": load_config(config), "seed": int(seed), "commands": [],
                                  "observations": [obs], "rewards": [], "terminations": [], "truncations": [],
                                  "time_s": [], "positions_m": [base.sim.state.position_m[0].copy()], "end": "stopped"}
        step = 0
        while max_steps is None or step < max_steps:
            command = driver.command(source.poll())
            if driver.quit or getattr(base, "window_closed", False):
                break
            obs, reward, terminated, truncated, info = env.step(command)
            result["commands"].append(command)
            result["time_s"].append(step * dt)
            result["observations"].append(obs)
            result["rewards"].append(float(reward))
            result["terminations"].append(bool(terminated))
            result["truncations"].append(bool(truncated))
            result["positions_m"].append(base.sim.state.position_m[0].copy())
            step += 1
            if terminated or truncated:
                flags = [k for k in ("rolled_over", "diverged", "off_course", "off_terrain", "path_complete")
                         if info.get(k)]
                result["end"] = ", ".join(flags) if flags else "time limit"
                break
        result["steps"] = step
        result["positions_m"] = np.array(result["positions_m"])
    finally:
        env.close()
    if log is not None:
        write_log(log, [log_row(t, c) for t, c in zip(result["time_s"], result["commands"], strict=True)],
                  {"env_id": env_id, "config": result["config"], "seed": int(seed),
                   "control_hz": int(round(1.0 / dt))})
    if demo is not None:
        save_demo(demo, result)
    return result


def episode_sim(env):
    """A one-vehicle ``RangerSim`` in the state of ``env``'s vehicle now (parameters, terrain, the
    episode's surface table, state and commands): where an ``acres-replay`` of the episode starts."""
    from acres_gym.envs.randomization import live_surface_records
    from acres_gym.sim import RangerSim

    base = env.unwrapped
    sim = RangerSim(1, params=base.sim.params[0].copy(), terrain=base.sim.terrain.terrain(0))
    live_surface_records(sim)[:] = live_surface_records(base.sim)
    sim.state[0] = base.sim.state[0]
    sim.commands[0] = base.sim.commands[0]
    sim.state.terrain_index[0] = 0
    sim.observe()  # its reports and body motion of the state just written
    return sim


def replay_log(path: str | Path, write=None) -> list[list] | None:
    """Replay a teleop log with ``acres_gym.vehicle.replay.replay`` on the episode it was driven in (rebuilt from the
    log's env id, config and seed): one ``acres_gym.vehicle.replay.OUTPUT_COLUMNS`` row per control step, the start
    included, returned as a list or passed to ``write(row)``."""
    from acres_gym.vehicle.replay import read_commands, replay

    header = read_log_header(path)
    missing = [k for k in ("env_id", "seed", "control_hz") if k not in header]
    if missing:
        raise ValueError(f"{path}: not a teleop log (missing header lines: {', '.join(missing)})")
    messages = read_commands(path)
    env = make_env(header["env_id"], header.get("config"), None)
    try:
        env.reset(seed=int(header["seed"]))
        sim = episode_sim(env)
    finally:
        env.close()
    hz = int(header["control_hz"])
    return replay(messages, sim, duration_s=len(messages) / hz, out_hz=hz, write=write)


def replay_positions(path: str | Path) -> np.ndarray:
    """The centre-of-mass positions (steps + 1, 3) of ``replay_log``."""
    from acres_gym.vehicle.replay import OUTPUT_COLUMNS

    i = OUTPUT_COLUMNS.index("x_m")
    return np.array([row[i:i + 3] for row in replay_log(path)], dtype=float)


def main(argv: list[str] | None = None) -> None:
    from acres_gym.agents.evaluate import add_config_arguments, config_from_arguments
    from acres_gym.render import NoDisplayError

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--env", default=DEFAULT_ENV, help=f"a registered id (default {DEFAULT_ENV})")
    parser.add_argument("--seed", type=seed_argument, default=0, help="reset seed of the episode")
    parser.add_argument("--log", default="drive.csv", help="command log to write (acres-replay CSV; default "
                                                            "drive.csv)")
    parser.add_argument("--demo", default=None, help="also save a demonstration dataset (.npz)")
    parser.add_argument("--max-steps", dest="max_steps", type=int, default=None, help="stop after this many steps")
    parser.add_argument("--replay", default=None, metavar="LOG",
                        help="replay a teleop log on its episode through acres_gym.vehicle.replay and write the "
                             "acres-replay output CSV (--out) instead of driving")
    parser.add_argument("--out", default="-", help="output CSV of --replay (default: stdout)")
    add_config_arguments(parser)
    args = parser.parse_args(argv)
    try:
        if args.replay is not None:
            from acres_gym.vehicle.replay import OUTPUT_COLUMNS
            from acres_gym.vehicle.replay import _format as cell  # the acres-replay output formatting

            out = sys.stdout if args.out == "-" else open(args.out, "w", newline="", encoding="utf-8")
            try:
                writer = csv.writer(out, lineterminator="\n")
                writer.writerow(OUTPUT_COLUMNS)
                replay_log(args.replay, write=lambda row: writer.writerow([cell(v) for v in row]))
            finally:
                if out is not sys.stdout:
                    out.close()
            return
        config = config_from_arguments(None, args)
        result = drive(args.env, config, args.seed, max_steps=args.max_steps, log=args.log, demo=args.demo)
    except (ValueError, OSError, NoDisplayError) as exc:
        parser.error(str(exc))
    print(f"{result['steps']} steps, return {sum(result['rewards']):.1f}, ended: {result['end']}; "
          f"log {args.log}" + (f", demonstration {args.demo}" if args.demo else ""))


if __name__ == "__main__":
    main()
