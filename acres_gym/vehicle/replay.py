"""``acres-replay``: run a recorded DBW command log through the DBW layer and the vehicle.

Reads a CSV of timed DBW messages (the ds_dbw_msgs commands an autonomy stack sent, and the driver's
inputs), or a ROS 2 bag of ds_dbw_msgs command topics (``acres_gym.vehicle.bags``: sqlite3 or MCAP, topics under
``--namespace``, default ``/vehicle``), replays them on one Ranger at the 120 Hz physics tick and writes a
CSV of the reports and the vehicle state at a chosen rate, or (``--out-bag DIR``, ``--storage
sqlite3|mcap``) a bag of the report topics stamped with the simulated time; ``--with-commands`` copies
the commands into that bag (a log ``acres-calibrate`` can fit), ``--to-csv`` only converts a bag's
commands into the CSV below.

Usage::

    acres-replay --list-examples                       # the example logs shipped with the package
    acres-replay --example example_commands --out drive.csv --out-hz 20
    acres-replay configs/replay/example_commands.csv --out drive.csv --out-hz 20
    acres-replay log.csv --surface grass --slope-percent 8 --set dbw.bias.brake_bar=5 > drive.csv
    python -m acres_gym.vehicle.replay log.csv --terrain my_terrain.npz --duration 60 --out drive.csv
    acres-replay drive.mcap --out-bag drive_sim --storage mcap

Input. The first line names the columns: ``time_s`` (s, required) and any of

- system: ``enable`` (0 / 1: the system enable, dbw_enabled, from that time on);
- steering (SteeringCmd): ``steer_mode`` (0 NONE, 2 ANGLE, 3 CURVATURE, 4 YAW_RATE, 14 PERCENT),
  ``steer_cmd`` (deg, 1/m, rad/s or %), ``steer_rate`` (deg/s), ``steer_accel`` (deg/s^2),
  ``steer_enable``;
- throttle (ThrottleCmd): ``throttle_mode`` (0 NONE, 13 PEDAL_RAW, 14 PERCENT), ``throttle_cmd`` (%),
  ``throttle_rate_inc``, ``throttle_rate_dec`` (%/s), ``throttle_enable``;
- brake (BrakeCmd): ``brake_mode`` (0 NONE, 1 PRESSURE, 14 PERCENT), ``brake_cmd`` (bar or %),
  ``brake_rate_inc``, ``brake_rate_dec`` (command unit per s), ``brake_enable``;
- gear (GearCmd): ``gear_cmd`` (ds_dbw Gear: 0 NONE, 1 P, 2 R, 3 N, 4 DRIVE = H, 5 LOW = L; 6, 7 and
  15 are valid Gear values the Ranger refuses as UNSUPPORTED);
- ULC (UlcCmd): ``ulc_mode`` (0 NONE, 1 VELOCITY, 2 ACCEL), ``ulc_cmd`` (m/s or m/s^2),
  ``ulc_limit_accel``, ``ulc_limit_decel`` (m/s^2), ``ulc_limit_jerk_throttle``,
  ``ulc_limit_jerk_brake`` (m/s^3), ``ulc_enable``, ``ulc_coast_decel``;
- ``drive_mode`` (the AWD switch: 0 turf, 1 2WD, 2 AWD, from that time on);
- driver inputs, from that time on: ``driver_throttle_pct`` (%), ``driver_brake_bar`` (bar),
  ``driver_steering_deg`` (deg; once given, the driver holds the wheel there whenever steering is not
  under DBW control).

Each further line is what arrived at ``time_s``: a message for every subsystem (steering, throttle,
brake, ULC, gear) with at least one filled cell; an empty cell leaves that field as the subsystem's
previous message had it (before the first message: mode NONE, value 0, rate and limit fields 0 = the
firmware default, enable 1, coast 0), and a subsystem with only empty cells gets no message. Times
never decrease; lines starting with ``#`` and blank lines are skipped. Rate and limit fields follow
ds_dbw_msgs: 0 = default, ``inf`` or a negative value = unlimited. Booleans are 0 / 1 (or
true / false). As on the vehicle, a steering, throttle, brake or ULC message stays in force for the
command timeout (0.1 s) only: a log must repeat them (20 Hz is usual) to keep a subsystem engaged.

Timing. A message takes effect on the first physics tick (1/120 s) starting at or after its time.
The run lasts ``--duration`` (default: the last message time + 1 s), rounded to whole ticks. A run
longer than ``--max-duration`` (default ``MAX_DURATION_S`` = 3600 s of simulated time, about 60 MB of
output at 20 Hz) is refused before it starts: a stray time stamp (a message at t = 1e6 s) would
otherwise run for hours; raise the cap for a longer log.

Output. One row per 1 / ``--out-hz`` s from time 0 to the end (the state after that many ticks),
with the columns ``OUTPUT_COLUMNS``: time, pose (position of the centre of mass, ZYX Euler angles),
forward speed and yaw rate (body frame), engine and CVT, gear, then the reports: steering wheel angle
and command (the reference; ``nan`` while steering is not under DBW control), the pedal command and
output (the emulated pedal the engine sees, throttle bias included), the brake pressure command and
output (the line pressure, bias included), the ULC reference (``nan`` while the ULC is not engaged),
the VehicleVelocity speeds and the fuel used; after those the enables, timeouts, command sources, gear
command and reject, the ULC's measurement, preemption and stop hold, the drive mode and the wheel
speeds. Booleans are written 0 / 1. Values are the model's at full precision (``dbw_reports`` and the
environments' observations round them to the CAN resolution of the messages).

Bad input (an unknown column, a cell that is not a number, a time going backwards, a mode number
outside its enum, no ``time_s`` column, a cell longer than the CSV field limit of 131,072 characters;
an unknown or out-of-range ``--set`` key, an unknown surface or vehicle, an ``--out-hz`` that does not
divide 120, a run longer than ``--max-duration``) stops with exit status 2 and a message on stderr
naming the line and column, or the option. So does an output that cannot be written (a full disk,
``--out /dev/full``) or that is closed early (a broken pipe, ``acres-replay log.csv | head``): one
line on stderr, no traceback. A bag that cannot be read, decoded or trusted (``acres_gym.vehicle.bags``: a
corrupt payload or sqlite page, metadata that disagrees with the storage, more messages than
``--max-messages``, default ``acres_gym.vehicle.bags.DEFAULT_MAX_MESSAGES`` = 500,000) stops the same way, with
one line naming the bag, the topic and the message, without the usage text.

Example logs. The package ships example command logs (``<config dir>/replay``: four CSV logs and
``example_drive.mcap``, a bag of commands and noisy reports of the model that ``acres-calibrate`` can fit,
made by ``acres_gym.vehicle.calibrate.write_example_drive``). ``--list-examples`` lists them with a line each;
``--example NAME`` (the file name, with or without its suffix) runs one in place of a log path, from an
installed wheel as from the repository. ``acres-bag-to-csv`` and ``acres-calibrate`` take ``--example``
for the bags among them.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

import numpy as np

from acres_gym.constants import (
    PHYSICS_HZ,
    WHEEL_NAMES,
)
from acres_gym.dbw.command import clear_sent, mark_sent
from acres_gym.dbw.reports import REPORT_FIELDS, REPORT_ROW, report_table
from acres_gym.model.vec import euler_from_quaternion
from acres_gym.vehicle.cli import (  # noqa: F401  (the example logs and the errors are part of the command line)
    EXAMPLE_ABOUT,
    EXAMPLE_SUFFIXES,
    EXAMPLES_SUBDIR,
    add_example_options,
    example_listing,
    example_log,
    example_logs,
    example_path,
    fail,
    write_output,
)
from acres_gym.vehicle.command_log import (  # noqa: F401  (the log format, read here and named by the replay)
    GEAR_VALUES,
    INPUT_COLUMNS,
    SUBSYSTEMS,
    TIME_COLUMN,
    Column,
    Message,
    ReplayInputError,
    parse_commands,
    read_commands,
    tick_at,
)

MAX_DURATION_S = 3600.0
"""Default cap on the simulated time of one replay, s (``--max-duration``)."""

# Output columns in order: (column, source, key). Source "report": the exact report field "message.field" of
# ``acres_gym.dbw.reports`` (``report_table(exact=True)``, typed by the report spec); "state": the state field
# ``key`` as it is (no report gating); "vehicle": a value of the body or the ledger computed in ``_row``.
OUTPUT_SPEC: tuple[tuple[str, str, str], ...] = (
    ("time_s", "vehicle", "time_s"), ("x_m", "vehicle", "x_m"), ("y_m", "vehicle", "y_m"), ("z_m", "vehicle", "z_m"),
    ("roll_rad", "vehicle", "roll_rad"), ("pitch_rad", "vehicle", "pitch_rad"), ("yaw_rad", "vehicle", "yaw_rad"),
    ("speed_mps", "vehicle", "speed_mps"), ("yaw_rate_rad_s", "vehicle", "yaw_rate_rad_s"),
    ("engine_rpm", "state", "engine_rpm"), ("cvt_ratio", "state", "cvt_ratio"), ("gear", "report", "gear.gear"),
    ("steering_wheel_angle_deg", "report", "steering.steering_wheel_angle"),
    ("steering_cmd_deg", "report", "steering.cmd"), ("steering_enabled", "report", "steering.enabled"),
    ("throttle_percent_cmd", "state", "throttle_cmd_pct"), ("throttle_percent_output", "state", "throttle_pedal_pct"),
    ("brake_pressure_cmd_bar", "state", "brake_cmd_bar"), ("brake_pressure_output_bar", "state", "brake_output_bar"),
    ("ulc_vel_ref_mps", "report", "ulc.vel_ref"), ("ulc_accel_ref_mps2", "report", "ulc.accel_ref"),
    ("ulc_enabled", "report", "ulc.enabled"),
    ("vehicle_velocity_brake_mps", "report", "vehicle_velocity.vehicle_velocity_brake"),
    ("vehicle_velocity_propulsion_mps", "report", "vehicle_velocity.vehicle_velocity_propulsion"),
    ("fuel_used_g", "vehicle", "fuel_used_g"),
    # further report fields
    ("dbw_enabled", "report", "dbw_enabled.data"), ("steering_timeout", "report", "steering.timeout"),
    ("throttle_enabled", "report", "throttle.enabled"), ("throttle_timeout", "report", "throttle.timeout"),
    ("throttle_cmd_src", "report", "throttle.cmd_src"), ("throttle_percent_input", "state", "throttle_input_pct"),
    ("brake_enabled", "report", "brake.enabled"), ("brake_timeout", "report", "brake.timeout"),
    ("brake_cmd_src", "report", "brake.cmd_src"), ("brake_pressure_input_bar", "state", "brake_input_bar"),
    ("gear_cmd", "report", "gear.cmd"), ("gear_reject", "report", "gear.reject"),
    ("ulc_vel_meas_mps", "report", "ulc.vel_meas"), ("ulc_accel_meas_mps2", "report", "ulc.accel_meas"),
    ("ulc_preempted", "report", "ulc.preempted"), ("ulc_timeout", "report", "ulc.timeout"),
    ("ulc_stop_hold", "state", "ulc_stop_hold"), ("drive_mode", "state", "drive_mode"),
    *((f"wheel_speed_{name}_rad_s", "report", f"wheel_speeds.{name}") for name in WHEEL_NAMES),
    ("diverged", "state", "diverged"),
)
OUTPUT_COLUMNS: tuple[str, ...] = tuple(column for column, _source, _key in OUTPUT_SPEC)


# --------------------------------------------------------------------------- running


def _apply(c, message: Message, fresh: set[str]) -> None:
    """Write one message's cells into the command records ``c`` (every vehicle) and note the subsystems
    that received a message."""
    for name, value in message.cells.items():
        column = INPUT_COLUMNS[name]
        if column.kind == "bool":
            c[column.field] = bool(value)
        elif column.kind == "enum":
            c[column.field] = int(value)
        else:
            c[column.field] = value
        if column.group in SUBSYSTEMS:
            fresh.add(column.group)
        elif name == "driver_steering_deg":
            c["driver_steers"] = True


_CAST = {"f": float, "b": bool, "i": int}
_REPORT_CAST = {f"{m}.{f}": _CAST[kind] for m, f, kind in REPORT_FIELDS}


def _row(sim) -> list:
    """The output row of vehicle 0 (``OUTPUT_SPEC``)."""
    s = sim.state[0]
    table = report_table(sim.params[:1], sim.state[:1], exact=True)[:, 0]
    roll, pitch, yaw = euler_from_quaternion(s.orientation_wxyz)
    vehicle = {"time_s": float(s.time_s), "x_m": float(s.position_m[0]), "y_m": float(s.position_m[1]),
               "z_m": float(s.position_m[2]), "roll_rad": roll, "pitch_rad": pitch, "yaw_rad": yaw,
               "speed_mps": float(sim.speed_mps[0]), "yaw_rate_rad_s": float(s.angular_velocity_rad_s[2]),
               "fuel_used_g": 1e3 * float(s.fuel_used_kg)}
    values: list = []
    for _column, source, key in OUTPUT_SPEC:
        if source == "report":
            values.append(_REPORT_CAST[key](table[REPORT_ROW[key]]))
        elif source == "state":
            values.append(s[key].item())
        else:
            values.append(vehicle[key])
    return values


def _format(value) -> str:
    if isinstance(value, (bool, np.bool_)):
        return "1" if value else "0"
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    return format(float(value), ".9g")


def check_duration(duration_s: float, max_duration_s: float = MAX_DURATION_S, what: str = "--duration") -> float:
    """``duration_s`` if it is a positive number of seconds within ``max_duration_s``, else a
    ``ReplayInputError`` naming ``what``, the value and the cap."""
    if not (math.isfinite(duration_s) and duration_s > 0.0):
        raise ReplayInputError(f"{what} {duration_s!r}: expected a positive number of seconds")
    if duration_s > max_duration_s:
        raise ReplayInputError(f"{what} {duration_s:g} s: longer than the cap of {max_duration_s:g} s of "
                               "simulated time (--max-duration); check the log's time stamps or raise the cap")
    return duration_s


def default_duration(messages: Sequence[Message]) -> float:
    """The default run length: the last message time + 1 s."""
    return (messages[-1].time_s if messages else 0.0) + 1.0


def replay(messages: Sequence[Message], sim, duration_s: float | None = None, out_hz: float = PHYSICS_HZ,
           write=None, observe=None, max_duration_s: float = MAX_DURATION_S) -> list[list] | None:
    """Run ``messages`` on the vehicles of ``sim`` (a ``RangerSim`` just reset; every vehicle gets the same
    messages) for ``duration_s`` (default: the last message time + 1 s, at most ``max_duration_s``) and
    produce one row every 1 / ``out_hz`` s, from time 0 (the start state) to the end.

    Messages take effect on the first tick starting at or after their time; between messages the
    command record is held (``RangerSim.step`` in chunks), with the fresh flags and the gear event on
    the chunk's first tick only. A row is ``observe(sim)`` (default: the ``OUTPUT_COLUMNS`` row of
    vehicle 0). Rows go to ``write(row)`` when given (then None is returned), else they are returned
    as a list.
    """
    every = ticks_per_row(out_hz)
    if duration_s is None:
        duration_s = check_duration(default_duration(messages), max_duration_s,
                                    "duration (the last message time + 1 s)")
    else:
        check_duration(duration_s, max_duration_s)
    end = int(round(duration_s * PHYSICS_HZ))
    rows: list[list] = []
    emit = write if write is not None else rows.append
    row_of = observe if observe is not None else _row
    c = sim.commands
    for name in SUBSYSTEMS:
        c[f"{name}_enable"] = True  # the default of a message that leaves its enable cell empty
    by_tick: dict[int, list[Message]] = {}
    for m in messages:
        by_tick.setdefault(m.tick, []).append(m)
    message_ticks = sorted(t for t in by_tick if t < end)
    k = 0  # index into message_ticks
    tick = 0
    emit(row_of(sim))
    clear_sent(c)
    while tick < end:
        fresh: set[str] = set()
        if k < len(message_ticks) and message_ticks[k] == tick:
            for m in by_tick[tick]:
                _apply(c, m, fresh)
            k += 1
        mark_sent(c, fresh)
        stop = min(end, (tick // every + 1) * every)
        if k < len(message_ticks):
            stop = min(stop, message_ticks[k])
        sim.step(stop - tick)
        clear_sent(c)  # the messages and the gear event count once
        tick = stop
        if tick % every == 0:
            emit(row_of(sim))
    return None if write is not None else rows


def ticks_per_row(out_hz: float) -> int:
    """Physics ticks per output row; ``out_hz`` must divide 120."""
    try:
        hz = float(out_hz)
    except (TypeError, ValueError):
        raise ReplayInputError(f"--out-hz {out_hz!r}: expected a rate in Hz that divides {PHYSICS_HZ}") from None
    ticks = PHYSICS_HZ / hz if math.isfinite(hz) and hz > 0.0 else math.nan
    if not (ticks >= 1.0 and abs(ticks - round(ticks)) < 1e-9):
        divisors = [d for d in range(1, PHYSICS_HZ + 1) if PHYSICS_HZ % d == 0]
        raise ReplayInputError(f"--out-hz {out_hz:g}: must divide the {PHYSICS_HZ} Hz physics rate "
                               f"(e.g. {', '.join(str(PHYSICS_HZ // d) for d in divisors[:8])})")
    return int(round(ticks))


# --------------------------------------------------------------------------- command line


def _parse_set(items: Sequence[str]) -> dict:
    """``--set key=value`` items -> overrides (numbers, true / false, or a JSON list)."""
    overrides: dict = {}
    for item in items:
        key, sep, text = item.partition("=")
        key, text = key.strip(), text.strip()
        if not sep or not key or not text:
            raise ReplayInputError(f"--set {item!r}: expected key=value, e.g. dbw.bias.brake_bar=5")
        if text.lower() in ("true", "false"):
            value: object = text.lower() == "true"
        else:
            try:
                value = float(text)
            except ValueError:
                try:
                    value = json.loads(text)
                except json.JSONDecodeError:
                    value = None
                if not isinstance(value, list):
                    raise ReplayInputError(f"--set {item!r}: {text!r} is not a number") from None
        overrides[key] = value
    return overrides


def _terrain(args):
    from acres_gym.terrain import flat, from_config, from_file, slope

    surface = args.surface or "dry_asphalt"
    if args.terrain is not None:
        path = Path(args.terrain)
        suffix = path.suffix.lower()
        if suffix == ".npz":
            return from_file(path)
        if suffix in (".json", ".yaml", ".yml"):
            try:
                with open(path, encoding="utf-8") as f:
                    if suffix == ".json":
                        config = json.load(f)
                    else:
                        import yaml

                        config = yaml.safe_load(f)
            except OSError as exc:
                raise ReplayInputError(f"--terrain {path}: {exc.strerror or exc}") from None
            except (json.JSONDecodeError, ValueError) as exc:
                raise ReplayInputError(f"--terrain {path}: not valid {suffix[1:].upper()}: {exc}") from None
            except Exception as exc:  # yaml.YAMLError
                raise ReplayInputError(f"--terrain {path}: not valid YAML: {exc}") from None
            try:
                return from_config(config, base_dir=path.parent)
            except (ValueError, TypeError, FileNotFoundError) as exc:
                raise ReplayInputError(f"--terrain {path}: {exc}") from None
        raise ReplayInputError(f"--terrain {path}: expected an .npz terrain file (acres_gym.terrain.to_file) "
                               "or a .json / .yaml terrain config")
    if args.slope_percent is not None:
        return slope(args.slope_percent, surface=surface)
    return flat(surface)


def terrain_from_args(args) -> object:
    """The terrain of the ``--terrain`` / ``--surface`` / ``--slope-percent`` options (default flat dry
    asphalt); a ``ReplayInputError`` naming the option when it cannot be built."""
    try:
        return _terrain(args)
    except ReplayInputError:
        raise
    except (ValueError, FileNotFoundError) as exc:
        option = "--terrain" if args.terrain else ("--surface" if args.surface else "--slope-percent")
        raise ReplayInputError(f"{option}: {exc}") from None


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="acres-replay",
        description="Replay a CSV log of DBW commands (ds_dbw_msgs units) on the Ranger model and write a "
                    "CSV of the DBW reports and the vehicle state.",
        epilog="Example: acres-replay --example example_commands --out drive.csv --out-hz 20",
    )
    parser.add_argument("commands", nargs="?",
                        help="command log: a CSV (time_s, then any of the command columns) or a ROS 2 bag of "
                             "ds_dbw_msgs commands (a directory, .db3 or .mcap)")
    add_example_options(parser)
    parser.add_argument("--out", metavar="FILE", default=None,
                        help="output CSV (default: stdout, unless --out-bag is given)")
    parser.add_argument("--out-bag", metavar="DIR", default=None,
                        help="write the report topics as a ROS 2 bag (a new directory) stamped with the "
                             "simulated time")
    parser.add_argument("--storage", choices=("sqlite3", "mcap"), default="sqlite3",
                        help="storage of --out-bag (default sqlite3)")
    parser.add_argument("--with-commands", action="store_true",
                        help="also write the command topics into --out-bag (a log for acres-calibrate)")
    parser.add_argument("--namespace", default="/vehicle",
                        help="topic namespace of the bags read and written (default /vehicle)")
    parser.add_argument("--max-messages", type=int, default=None, metavar="N",
                        help="refuse bags with more than N command messages (each held in memory, about 0.7 KB; "
                             "default acres_gym.vehicle.bags.DEFAULT_MAX_MESSAGES = 500,000)")
    parser.add_argument("--to-csv", action="store_true",
                        help="only convert the bag's commands into a CSV command log (to --out) and stop")
    parser.add_argument("--out-hz", type=float, default=float(PHYSICS_HZ), metavar="HZ",
                        help=f"output rows per second; must divide {PHYSICS_HZ} (default {PHYSICS_HZ})")
    parser.add_argument("--duration", type=float, default=None, metavar="S",
                        help="simulated time, s (default: the last message time + 1 s)")
    parser.add_argument("--max-duration", type=float, default=MAX_DURATION_S, metavar="S",
                        help=f"refuse runs longer than S s of simulated time (default {MAX_DURATION_S:g})")
    parser.add_argument("--vehicle", default=None, metavar="NAME|PATH",
                        help="vehicle parameter file: a name under configs/vehicles or a JSON path "
                             "(default: the Polaris Ranger CREW XP 1000)")
    parser.add_argument("--surface", default=None, metavar="NAME",
                        help="flat terrain of this surface (default dry_asphalt), e.g. grass, gravel, "
                             "packed_dirt, dry_sand")
    parser.add_argument("--slope-percent", type=float, default=None, metavar="P",
                        help="a plane rising P %% along +x (of --surface)")
    parser.add_argument("--terrain", default=None, metavar="FILE",
                        help="terrain: an .npz from acres_gym.terrain.to_file, or a JSON / YAML terrain config")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", dest="overrides",
                        help="override a vehicle parameter by its dotted key, e.g. dbw.bias.brake_bar=5 "
                             "(repeatable)")
    return parser


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point (``acres-replay``); returns 0, exits with status 2 on bad input."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        commands = example_log(parser, args, "commands")
        if commands is None:
            return 0
        args.commands = commands
        if args.terrain is not None and (args.surface is not None or args.slope_percent is not None):
            raise ReplayInputError("--terrain cannot be combined with --surface or --slope-percent")
        if not (math.isfinite(args.max_duration) and args.max_duration > 0.0):
            raise ReplayInputError(f"--max-duration {args.max_duration:g}: expected a positive number of seconds")
        if args.duration is not None:
            check_duration(args.duration, args.max_duration)
        if args.max_messages is not None:
            from acres_gym.vehicle.bags import check_max_messages

            check_max_messages(args.max_messages)
        every = ticks_per_row(args.out_hz)
        overrides = _parse_set(args.overrides)
        from acres_gym.params import load_vehicle
        from acres_gym.sim import DEFAULT_VEHICLE, RangerSim

        vehicle = args.vehicle or DEFAULT_VEHICLE
        try:
            params = load_vehicle(vehicle)
        except (ValueError, FileNotFoundError) as exc:
            raise ReplayInputError(f"--vehicle {vehicle}: {exc}") from None
        if overrides:
            try:
                params = load_vehicle(vehicle, overrides=overrides)
            except ValueError as exc:
                raise ReplayInputError(f"--set: {exc}") from None
        terrain = terrain_from_args(args)
        from acres_gym.vehicle.bags import is_bag

        bag_start_ns = 0
        if is_bag(args.commands):
            from acres_gym.vehicle.bags import DEFAULT_MAX_MESSAGES, read_bag_commands

            max_messages = DEFAULT_MAX_MESSAGES if args.max_messages is None else args.max_messages
            bag = read_bag_commands(args.commands, args.namespace, max_messages)
            messages, bag_start_ns = bag.messages, bag.start_ns
            print(f"{parser.prog}: {args.commands}: {bag.summary()}", file=sys.stderr)
            if args.to_csv:
                from acres_gym.vehicle.bags import write_commands_csv

                write_output(parser, args.out or "-", lambda out: write_commands_csv(out, messages))
                return 0
        elif args.to_csv:
            raise ReplayInputError(f"--to-csv: {args.commands} is not a ROS 2 bag (a directory, .db3 or .mcap)")
        else:
            messages = read_commands(args.commands)
        if args.duration is None:
            check_duration(default_duration(messages), args.max_duration, "duration (the last message time + 1 s)")
        sim = RangerSim(1, params=params, terrain=terrain)
    except ReplayInputError as exc:
        fail(parser, exc)

    def write_rows(out: TextIO) -> None:
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(OUTPUT_COLUMNS)
        replay(messages, sim, args.duration, PHYSICS_HZ / every,
               write=lambda row: writer.writerow([_format(v) for v in row]), max_duration_s=args.max_duration)

    if args.out_bag is not None:
        from acres_gym.dbw.reports import report_table
        from acres_gym.vehicle.bags import ReportBagWriter, dropped_columns, write_command_bag

        try:
            bag_writer = ReportBagWriter(args.out_bag, args.storage, args.namespace, bag_start_ns)
        except ReplayInputError as exc:
            fail(parser, exc)
        try:
            if args.with_commands:
                write_command_bag(args.out_bag, messages, namespace=args.namespace, start_ns=bag_start_ns,
                                  writer=bag_writer)
                dropped = dropped_columns(messages)
                if dropped:
                    print(f"{parser.prog}: warning: no ds_dbw command topic carries {', '.join(dropped)}; "
                          "left out of --out-bag", file=sys.stderr)
            replay(messages, sim, args.duration, PHYSICS_HZ / every,
                   observe=lambda sim: (float(sim.state.time_s[0]), report_table(sim.params, sim.state)[:, 0]),
                   write=lambda row: bag_writer.write_reports(*row), max_duration_s=args.max_duration)
            bag_writer.close()
        except OSError as exc:
            parser.exit(2, f"{parser.prog}: error: --out-bag {args.out_bag}: cannot write: {exc.strerror or exc}\n")
        if args.out is None:
            return _warn_diverged(sim)
        sim = RangerSim(1, params=params, terrain=terrain)  # the CSV from a fresh start
    write_output(parser, args.out or "-", write_rows)
    return _warn_diverged(sim)


def _warn_diverged(sim) -> int:
    if sim.state.diverged[0]:
        print(f"acres-replay: warning: the vehicle diverged at t = {sim.state.time_s[0]:.3f} s; the state "
              "is frozen from there", file=sys.stderr)
    return 0


__all__ = ["EXAMPLE_ABOUT", "INPUT_COLUMNS", "MAX_DURATION_S", "OUTPUT_COLUMNS", "Message", "ReplayInputError",
           "add_example_options", "check_duration", "default_duration", "example_listing", "example_log",
           "example_logs", "example_path", "fail", "parse_commands", "read_commands", "replay", "tick_at",
           "ticks_per_row", "write_output", "main"]


if __name__ == "__main__":
    sys.exit(main())
