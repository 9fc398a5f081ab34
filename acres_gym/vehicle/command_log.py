"""The DBW command log: a CSV of timed ds_dbw messages (the commands an autonomy stack sent, and the driver's
inputs), its columns (``INPUT_COLUMNS``, ``TIME_COLUMN``) and its reader (``parse_commands``, ``read_commands``).

The format is described in ``acres-replay --help``'s module (``acres_gym.vehicle.replay``, "Input"); the replay
runs these messages, the bag reader (``acres_gym.vehicle.bags``) turns ROS 2 bags into them, and a bad log
raises ``ReplayInputError`` naming the line and the column.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from acres_gym.constants import DRIVE_MODE_NAMES, PHYSICS_HZ
from acres_gym.dbw.command import COMMAND_MODES, MESSAGE_SUBSYSTEMS

# ds_dbw_msgs Gear values (NONE, PARK, REVERSE, NEUTRAL, DRIVE, LOW, MANUAL, SPORT, CALIBRATE)
GEAR_VALUES = {0: "NONE", 1: "PARK", 2: "REVERSE", 3: "NEUTRAL", 4: "DRIVE (H)", 5: "LOW (L)", 6: "MANUAL",
               7: "SPORT", 15: "CALIBRATE"}

SUBSYSTEMS = MESSAGE_SUBSYSTEMS

@dataclass(frozen=True)
class Column:
    """One input column: the command-record field it sets, its group and its kind."""

    field: str
    group: str  # "steer" | "throttle" | "brake" | "ulc" | "gear" | "system" | "drive" | "driver"
    kind: str = "float"  # "float" | "bool" | "enum"
    values: dict[int, str] | None = None  # allowed numbers of an enum


def _enum(field_name: str, group: str, values: dict[int, str]) -> Column:
    return Column(field_name, group, "enum", values)


INPUT_COLUMNS: dict[str, Column] = {
    "enable": Column("system_enable", "system", "bool"),
    "steer_mode": _enum("steer_mode", "steer", COMMAND_MODES["steer_mode"]),
    "steer_cmd": Column("steer_cmd", "steer"),
    "steer_rate": Column("steer_rate_deg_s", "steer"),
    "steer_accel": Column("steer_accel_deg_s2", "steer"),
    "steer_enable": Column("steer_enable", "steer", "bool"),
    "throttle_mode": _enum("throttle_mode", "throttle", COMMAND_MODES["throttle_mode"]),
    "throttle_cmd": Column("throttle_cmd", "throttle"),
    "throttle_rate_inc": Column("throttle_rate_inc_pct_s", "throttle"),
    "throttle_rate_dec": Column("throttle_rate_dec_pct_s", "throttle"),
    "throttle_enable": Column("throttle_enable", "throttle", "bool"),
    "brake_mode": _enum("brake_mode", "brake", COMMAND_MODES["brake_mode"]),
    "brake_cmd": Column("brake_cmd", "brake"),
    "brake_rate_inc": Column("brake_rate_inc", "brake"),
    "brake_rate_dec": Column("brake_rate_dec", "brake"),
    "brake_enable": Column("brake_enable", "brake", "bool"),
    "gear_cmd": _enum("gear_cmd", "gear", GEAR_VALUES),
    "ulc_mode": _enum("ulc_mode", "ulc", COMMAND_MODES["ulc_mode"]),
    "ulc_cmd": Column("ulc_cmd", "ulc"),
    "ulc_limit_accel": Column("ulc_limit_accel_mps2", "ulc"),
    "ulc_limit_decel": Column("ulc_limit_decel_mps2", "ulc"),
    "ulc_limit_jerk_throttle": Column("ulc_limit_jerk_throttle_mps3", "ulc"),
    "ulc_limit_jerk_brake": Column("ulc_limit_jerk_brake_mps3", "ulc"),
    "ulc_enable": Column("ulc_enable", "ulc", "bool"),
    "ulc_coast_decel": Column("ulc_coast_decel", "ulc", "bool"),
    "drive_mode": _enum("drive_mode", "drive", DRIVE_MODE_NAMES),
    "driver_throttle_pct": Column("driver_throttle_pct", "driver"),
    "driver_brake_bar": Column("driver_brake_bar", "driver"),
    "driver_steering_deg": Column("driver_steering_deg", "driver"),
}
TIME_COLUMN = "time_s"

class ReplayInputError(ValueError):
    """A command log or an option the replay cannot use; the message names the place."""


@dataclass
class Message:
    """One input line: the filled cells (input column -> value) that arrived at ``time_s``."""

    line: int
    time_s: float
    cells: dict[str, float] = field(default_factory=dict)

    @property
    def tick(self) -> int:
        """First physics tick starting at or after ``time_s``."""
        return tick_at(self.time_s)


def tick_at(time_s: float) -> int:
    """Index of the first tick (of 1/120 s) that starts at or after ``time_s`` (1e-6 tick tolerance for
    times written in decimals)."""
    return max(0, math.ceil(time_s * PHYSICS_HZ - 1e-6))


# --------------------------------------------------------------------------- reading the log


def parse_cell(text: str, name: str, column: Column | None, where: str) -> float:
    """The value of one cell of column ``name`` (``column`` None: the time), checked against the column's kind;
    a ``ReplayInputError`` naming ``where`` otherwise."""
    word = text.strip().lower()
    if column is not None and column.kind == "bool" and word in ("true", "false"):
        return 1.0 if word == "true" else 0.0
    try:
        value = float(word)
    except ValueError:
        raise ReplayInputError(f"{where}: {text.strip()!r} is not a number") from None
    if math.isnan(value):
        raise ReplayInputError(f"{where}: NaN is not a value (leave the cell empty for no message)")
    if column is None:  # time_s
        if not math.isfinite(value) or value < 0.0:
            raise ReplayInputError(f"{where}: {text.strip()!r} is not a time (finite seconds >= 0)")
        return value
    if column.kind == "bool":
        if value not in (0.0, 1.0):
            raise ReplayInputError(f"{where}: {text.strip()!r} is not a boolean (0 / 1 or true / false)")
    elif column.kind == "enum":
        assert column.values is not None
        if not (math.isfinite(value) and value == int(value) and int(value) in column.values):
            allowed = ", ".join(f"{k} ({v})" for k, v in column.values.items())
            raise ReplayInputError(f"{where}: {text.strip()!r} is not a {name} number; allowed: {allowed}")
    elif column.group == "driver" and not math.isfinite(value):
        raise ReplayInputError(f"{where}: {text.strip()!r} is not a finite driver input")
    return value


def parse_commands(lines: Iterable[str], source: str = "<commands>") -> list[Message]:
    """Parse a command log (see the module docstring) into messages in time order.

    Raises:
        ReplayInputError: naming ``source``, the line and the column of the first problem.
    """
    reader = csv.reader(lines)
    try:
        return _parse_rows(reader, source)
    except csv.Error as exc:
        line = reader.line_num
        if "field limit" in str(exc):
            raise ReplayInputError(f"{source}: line {line}: a cell longer than the CSV field limit of "
                                   f"{csv.field_size_limit():,} characters") from None
        raise ReplayInputError(f"{source}: line {line}: not a valid CSV line: {exc}") from None


def _parse_rows(reader, source: str) -> list[Message]:
    header: list[str] | None = None
    messages: list[Message] = []
    previous: Message | None = None
    for row in reader:
        line = reader.line_num
        if not row or all(not cell.strip() for cell in row) or row[0].lstrip().startswith("#"):
            continue
        if header is None:
            header = [cell.strip() for cell in row]
            header_line = line
            if header and header[0].startswith("\ufeff"):
                header[0] = header[0][1:]
            seen: dict[str, int] = {}
            for i, name in enumerate(header, start=1):
                if name != TIME_COLUMN and name not in INPUT_COLUMNS:
                    known = ", ".join((TIME_COLUMN, *INPUT_COLUMNS))
                    raise ReplayInputError(f"{source}: line {line}, column {i}: unknown column {name!r}; "
                                           f"known columns: {known}")
                if name in seen:
                    raise ReplayInputError(f"{source}: line {line}, column {i}: column {name!r} repeats "
                                           f"column {seen[name]}")
                seen[name] = i
            if TIME_COLUMN not in seen:
                raise ReplayInputError(f"{source}: line {line}: missing column {TIME_COLUMN!r} (the time of "
                                       "each message, s; expected as the first column)")
            time_index = seen[TIME_COLUMN] - 1
            continue
        if len(row) != len(header):
            raise ReplayInputError(f"{source}: line {line}: {len(row)} cells, but the header (line "
                                   f"{header_line}) has {len(header)} columns")
        cell = row[time_index]
        where = f"{source}: line {line}, column {time_index + 1} ({TIME_COLUMN})"
        if not cell.strip():
            raise ReplayInputError(f"{where}: empty; every line needs the time its messages arrived")
        time_s = parse_cell(cell, TIME_COLUMN, None, where)
        if previous is not None and time_s < previous.time_s:
            raise ReplayInputError(f"{where}: time goes backwards: {time_s:g} s after {previous.time_s:g} s "
                                   f"on line {previous.line}")
        message = Message(line, time_s)
        for i, (name, text) in enumerate(zip(header, row, strict=True), start=1):
            if name == TIME_COLUMN or not text.strip():
                continue
            where = f"{source}: line {line}, column {i} ({name})"
            message.cells[name] = parse_cell(text, name, INPUT_COLUMNS[name], where)
        messages.append(message)
        previous = message
    if header is None:
        raise ReplayInputError(f"{source}: line 1: missing column {TIME_COLUMN!r}: the log is empty (expected "
                               "a header line naming the columns)")
    return messages


def read_commands(path: str | Path) -> list[Message]:
    """Read a command log file (see ``parse_commands``)."""
    path = Path(path)
    try:
        with open(path, newline="", encoding="utf-8-sig") as f:
            return parse_commands(f, str(path))
    except OSError as exc:
        raise ReplayInputError(f"cannot read the command log {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise ReplayInputError(f"{path}: not a text (UTF-8) CSV file") from None
