"""ROS 2 bags of ``ds_dbw_msgs`` 2.x topics: commands in, reports out, read and written with ``rosbags``.

A vehicle with a Dataspeed kit records its DBW traffic as ROS 2 bags (sqlite3 or MCAP storage). This
module turns the command topics of such a bag into the timed messages ``acres_gym.vehicle.replay`` runs on the
model, writes the model's reports back as a bag, and reads the recorded reports for calibration
(``acres_gym.vehicle.calibrate``). ROS itself is not needed: ``rosbags`` (the ``[ros]`` extra) reads and writes
bags in pure Python.

Message definitions. ``acres_gym/msg/ds_dbw_msgs/*.msg`` hold the definitions of the messages used here
(commands, reports and their enum field types), written from the ds_dbw_msgs 2.3.11 fact sheet
(``reference/ds_dbw_msgs.md``: field names, types, order and enum constants); ``typestore()`` registers
them with a ROS 2 Jazzy type store (``std_msgs``, ``builtin_interfaces``). A bag that embeds its own
definitions (every rosbag2 file written by ROS 2 Iron or later, and every MCAP file) is decoded with
those, so fields are read by name even if a vehicle's ds_dbw_msgs version orders them differently;
older bags without definitions are decoded with the package's.

Topics, under a namespace (default ``/vehicle``):

=====================  ===========================  ====================================================
topic                  type                         replayed as (``acres_gym.vehicle.replay`` input columns)
=====================  ===========================  ====================================================
``steering/cmd``       ds_dbw_msgs/SteeringCmd      steer_mode = cmd_type, steer_cmd = cmd, steer_rate =
                                                    cmd_rate, steer_accel = cmd_accel, steer_enable
``throttle/cmd``       ds_dbw_msgs/ThrottleCmd      throttle_mode, throttle_cmd, throttle_rate_inc/_dec,
                                                    throttle_enable
``brake/cmd``          ds_dbw_msgs/BrakeCmd         brake_mode, brake_cmd, brake_rate_inc/_dec,
                                                    brake_enable
``gear/cmd``           ds_dbw_msgs/GearCmd          gear_cmd = cmd.value
``ulc/cmd``            ds_dbw_msgs/UlcCmd           ulc_mode, ulc_cmd, ulc_limit_*, ulc_enable,
                                                    ulc_coast_decel
``enable``             std_msgs/Empty               enable = 1 (dbw_enabled from then on)
``disable``            std_msgs/Empty               enable = 0
=====================  ===========================  ====================================================

``clear``, ``ignore``, ``precharge_aeb``, ``cmd_manual``, ``return_to_park``, ``enable_shift`` and
``enable_shift_park`` have no counterpart in the model and are not replayed. Command types the model
does not implement (steering TORQUE, brake TORQUE and ACCEL, ...) are errors that name the topic, the
message and the allowed values, as in a CSV log. A message's time is its log time (the bag's receive
time stamp) less the time of the bag's first message. Messages on any other topic (IMU, GPS, the
reports themselves, ...) are skipped and counted (``BagCommands.skipped``).

Checks. A bag is read only if it is consistent; anything else is a ``BagError`` naming the bag, the topic
and, for a message, its number and time (one line; ``acres-replay`` and ``acres-bag-to-csv`` print it and
exit with status 2):

- the bag cannot be opened (not a bag, a damaged ``metadata.yaml``, a damaged sqlite page or MCAP
  record), or a stored message cannot be read or decoded (a corrupt payload, a log time that is not an
  integer number of nanoseconds);
- the directory's ``metadata.yaml`` disagrees with its storage files: a topic's message type or message
  count differs, or stored messages lie outside the time span the metadata gives (e.g. negated time
  stamps); the messages read per topic differ from the count the bag states; a log time is negative;
- more than ``max_messages`` messages would be held (``DEFAULT_MAX_MESSAGES`` = 500,000 by default,
  ``--max-messages``; each held message takes about 0.7 KB, so the default holds up to about 350 MB: an
  hour of commands on five topics at 25 Hz each is 450,000 messages).

Reports. ``ReportBagWriter`` writes, at each output time, ``steering/report``, ``throttle/report``,
``brake/report``, ``gear/report``, ``ulc/report``, ``vehicle_velocity``, ``wheel_speeds`` and
``dbw_enabled`` (std_msgs/Bool) with the values of ``acres_gym.dbw.reports`` (rounded to the CAN
resolution of each message, as the vehicle publishes them). Header stamps and log times are the
simulated time plus the start time of the input bag (0 for a CSV input), so a report bag lines up with
the command bag it came from. Fields the model does not produce are NaN (floats: unknown, as the
driver sends them) or false / 0.

Typical use::

    acres-replay drive.mcap --out-bag drive_sim/ --storage mcap      # replay, write the report topics
    acres-replay drive.db3 --out drive.csv                             # replay, write today's CSV
    acres-bag-to-csv drive.mcap --out commands.csv                     # the commands as a CSV log
"""

from __future__ import annotations

import argparse
import csv
import functools
import math
import sys
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

import numpy as np

from acres_gym.dbw.reports import REPORT_FIELDS
from acres_gym.vehicle.command_log import INPUT_COLUMNS, SUBSYSTEMS, TIME_COLUMN, Message, ReplayInputError, parse_cell

DEFAULT_NAMESPACE = "/vehicle"
PACKAGE = "ds_dbw_msgs"

# command topic (relative to the namespace) -> message type
COMMAND_TOPICS: dict[str, str] = {
    "steering/cmd": "ds_dbw_msgs/msg/SteeringCmd",
    "throttle/cmd": "ds_dbw_msgs/msg/ThrottleCmd",
    "brake/cmd": "ds_dbw_msgs/msg/BrakeCmd",
    "gear/cmd": "ds_dbw_msgs/msg/GearCmd",
    "ulc/cmd": "ds_dbw_msgs/msg/UlcCmd",
    "enable": "std_msgs/msg/Empty",
    "disable": "std_msgs/msg/Empty",
}

# command topic -> (replay input column, message field; "cmd.value" reads a nested enum field)
COMMAND_FIELDS: dict[str, tuple[tuple[str, str], ...]] = {
    "steering/cmd": (("steer_mode", "cmd_type"), ("steer_cmd", "cmd"), ("steer_rate", "cmd_rate"),
                     ("steer_accel", "cmd_accel"), ("steer_enable", "enable")),
    "throttle/cmd": (("throttle_mode", "cmd_type"), ("throttle_cmd", "cmd"), ("throttle_rate_inc", "rate_inc"),
                     ("throttle_rate_dec", "rate_dec"), ("throttle_enable", "enable")),
    "brake/cmd": (("brake_mode", "cmd_type"), ("brake_cmd", "cmd"), ("brake_rate_inc", "rate_inc"),
                  ("brake_rate_dec", "rate_dec"), ("brake_enable", "enable")),
    "gear/cmd": (("gear_cmd", "cmd.value"),),
    "ulc/cmd": (("ulc_mode", "cmd_type"), ("ulc_cmd", "cmd"), ("ulc_limit_accel", "limit_accel"),
                ("ulc_limit_decel", "limit_decel"), ("ulc_limit_jerk_throttle", "limit_jerk_throttle"),
                ("ulc_limit_jerk_brake", "limit_jerk_brake"), ("ulc_enable", "enable"),
                ("ulc_coast_decel", "coast_decel")),
}
GROUP_TOPIC = {"steer": "steering/cmd", "throttle": "throttle/cmd", "brake": "brake/cmd", "gear": "gear/cmd",
               "ulc": "ulc/cmd"}

# report message of acres_gym.dbw.reports -> (topic relative to the namespace, message type)
REPORT_TOPICS: dict[str, tuple[str, str]] = {
    "steering": ("steering/report", "ds_dbw_msgs/msg/SteeringReport"),
    "throttle": ("throttle/report", "ds_dbw_msgs/msg/ThrottleReport"),
    "brake": ("brake/report", "ds_dbw_msgs/msg/BrakeReport"),
    "gear": ("gear/report", "ds_dbw_msgs/msg/GearReport"),
    "ulc": ("ulc/report", "ds_dbw_msgs/msg/UlcReport"),
    "vehicle_velocity": ("vehicle_velocity", "ds_dbw_msgs/msg/VehicleVelocity"),
    "wheel_speeds": ("wheel_speeds", "ds_dbw_msgs/msg/WheelSpeeds"),
    "dbw_enabled": ("dbw_enabled", "std_msgs/msg/Bool"),
}

STORAGES = ("sqlite3", "mcap")
BAG_SUFFIXES = (".db3", ".mcap")

DEFAULT_MAX_MESSAGES = 500_000
"""Default cap on the messages one read of a bag holds in memory (``--max-messages``; module docstring)."""


class BagError(ReplayInputError):
    """A bag the replay cannot use; the message (one line) names the bag, the topic and the message."""

    with_usage = False  # an error in the data, not in the command line: no usage text with it

    def __init__(self, message: str) -> None:
        super().__init__(_one_line(message))


def _one_line(text) -> str:
    """``text`` with every run of whitespace (newlines included) as one space."""
    return " ".join(str(text).split())


def _describe(exc: BaseException) -> str:
    """An exception from rosbags, sqlite or a decoder as one line: its type (unless a plain reader error) and
    its message."""
    text = _one_line(exc) or "(no message)"
    name = type(exc).__name__
    return text if name in ("ReaderError", "AnyReaderError", "OSError") else f"{name}: {text}"


def check_max_messages(value) -> int:
    """``value`` as a message cap (an integer >= 1), else a ``BagError`` naming ``--max-messages``."""
    try:
        cap = int(value)
        ok = cap == value and cap >= 1
    except (TypeError, ValueError, OverflowError):
        ok = False
    if not ok:
        raise BagError(f"--max-messages {value!r}: expected an integer >= 1 (default {DEFAULT_MAX_MESSAGES:,})")
    return cap


def _require_rosbags():
    try:
        import rosbags  # noqa: F401
    except ImportError:
        raise BagError("reading and writing ROS 2 bags needs rosbags: pip install 'acres-gym[ros]'") from None


def is_bag(path: str | Path) -> bool:
    """Whether ``path`` is a ROS 2 bag: a directory (with ``metadata.yaml`` or storage files) or a
    ``.db3`` / ``.mcap`` storage file."""
    path = Path(path)
    return path.is_dir() or path.suffix.lower() in BAG_SUFFIXES


def topic_name(namespace: str, relative: str) -> str:
    """``/vehicle`` + ``steering/cmd`` -> ``/vehicle/steering/cmd`` (an empty namespace gives ``/steering/cmd``)."""
    return f"{namespace.rstrip('/')}/{relative}" if namespace.strip("/") else f"/{relative}"


@functools.lru_cache(maxsize=1)
def typestore():
    """A ROS 2 Jazzy type store with the package's ``ds_dbw_msgs`` definitions registered."""
    _require_rosbags()
    from rosbags.typesys import Stores, get_types_from_msg, get_typestore

    store = get_typestore(Stores.ROS2_JAZZY)
    types = {}
    root = resources.files("acres_gym") / "msg" / PACKAGE
    for entry in sorted(root.iterdir(), key=lambda e: e.name):
        if entry.name.endswith(".msg"):
            types.update(get_types_from_msg(entry.read_text(encoding="utf-8"), f"{PACKAGE}/msg/{entry.name[:-4]}"))
    store.register(types)
    return store


# --------------------------------------------------------------------------- reading commands


@dataclass
class BagCommands:
    """The command messages of a bag, ready for ``acres_gym.vehicle.replay.replay``."""

    messages: list[Message]
    start_ns: int  # log time of the bag's first message (time 0 of the replay)
    counts: Counter = field(default_factory=Counter)  # replayed messages per topic
    skipped: Counter = field(default_factory=Counter)  # skipped messages per (topic, type)

    def summary(self) -> str:
        """One line: messages replayed and skipped."""
        used = sum(self.counts.values())
        skipped = sum(self.skipped.values())
        text = f"{used} command messages on {len(self.counts)} topics"
        if skipped:
            kinds = ", ".join(f"{topic} ({kind}) x{n}" for (topic, kind), n in sorted(self.skipped.items()))
            text += f"; skipped {skipped} messages of other topics: {kinds}"
        return text


def _float32_decimal(x) -> float:
    """A float32 field as the shortest decimal that reads back to it (0.1f -> 0.1, as the sender wrote it)."""
    return float(str(np.float32(x)))


def _field(msg, name: str):
    for part in name.split("."):
        msg = getattr(msg, part)
    return msg


def _cells(topic: str, msg, where: str) -> dict[str, float]:
    cells: dict[str, float] = {}
    for column_name, field_name in COMMAND_FIELDS[topic]:
        try:
            raw = _field(msg, field_name)
        except AttributeError:
            raise BagError(f"{where}: the message has no field {field_name!r}") from None
        column = INPUT_COLUMNS[column_name]
        if column.kind == "bool":
            text = "1" if raw else "0"
        elif column.kind == "enum":
            text = str(int(raw))
        else:
            text = repr(_float32_decimal(raw))
        try:
            cells[column_name] = parse_cell(text, column_name, column, f"{where} ({field_name})")
        except ReplayInputError as exc:  # a value the command does not allow: an error in the bag's data
            raise BagError(str(exc)) from None
    return cells


def _open_reader(path: Path):
    _require_rosbags()
    from rosbags.highlevel import AnyReader, AnyReaderError

    if not path.exists():
        raise BagError(f"cannot read the bag {path}: no such file or directory")
    try:
        reader = AnyReader([path], default_typestore=typestore())
        reader.open()
    except Exception as exc:  # rosbags, sqlite3, mcap and YAML errors alike: the file is not a usable bag
        kind = "" if isinstance(exc, (AnyReaderError, OSError)) else f"{type(exc).__name__}: "
        raise BagError(f"{path}: not a readable ROS 2 bag: {kind}{_one_line(exc)}") from None
    try:
        _check_metadata(reader, path)
    except BaseException:
        reader.close()
        raise
    return reader


def _check_metadata(reader, path: Path) -> None:
    """A bag directory's ``metadata.yaml`` against its storage files: the message type and count of every
    topic, and the time span of the stored messages (rosbags reads the directory's topics, counts and start
    time from the metadata, and silently leaves out messages whose topic type differs in the storage)."""
    for bag in getattr(reader, "readers", ()):
        directory = getattr(bag, "storage", None)
        storages = getattr(directory, "storages", None)
        if storages is None:  # a single .db3 / .mcap file: its topics and counts come from the file itself
            continue
        declared: dict[str, tuple[set[str], int]] = {}
        for c in directory.connections:
            types, count = declared.get(c.topic, (set(), 0))
            declared[c.topic] = (types | {c.msgtype}, count + int(c.msgcount))
        stored: dict[str, tuple[set[str], int]] = {}
        for storage in storages:
            for c in storage.connections:
                types, count = stored.get(c.topic, (set(), 0))
                stored[c.topic] = (types | {c.msgtype}, count + int(c.msgcount))
        for topic in sorted(set(declared) | set(stored)):
            if topic not in stored:
                raise BagError(f"{path}: metadata.yaml lists topic {topic}, which the storage does not hold")
            if topic not in declared:
                raise BagError(f"{path}: the storage holds topic {topic}, which metadata.yaml does not list")
            (meta_types, meta_count), (store_types, store_count) = declared[topic], stored[topic]
            if meta_types != store_types:
                raise BagError(f"{path}: topic {topic} has message type {', '.join(sorted(meta_types))} in "
                               f"metadata.yaml but {', '.join(sorted(store_types))} in the storage")
            if meta_count != store_count:
                raise BagError(f"{path}: topic {topic} has {meta_count} messages in metadata.yaml but "
                               f"{store_count} in the storage")
        held = [s.metadata for s in storages if s.metadata.message_count]
        if held:
            first = min(m.start_time for m in held)
            last = max(m.end_time for m in held) - 1
            meta = directory.metadata
            if first < meta.start_time or last >= meta.end_time:
                raise BagError(f"{path}: the stored messages span log times {first} to {last} ns, outside the "
                               f"span metadata.yaml gives ({meta.start_time} to {meta.end_time - 1} ns)")


def _stored_messages(reader, path: Path, connections) -> Iterator[tuple[object, int, bytes]]:
    """``reader.messages(connections)`` with every storage error a ``BagError``, each log time checked (an
    integer number of ns, not negative, within the bag's span) and, at the end, the messages read per
    topic checked against the count the bag states."""
    start, end = reader.start_time, reader.end_time
    read: Counter = Counter()
    messages = reader.messages(connections=connections)
    while True:
        try:
            connection, timestamp, raw = next(messages)
        except StopIteration:
            break
        except Exception as exc:  # sqlite (a damaged page), MCAP (a damaged chunk), decompression
            raise BagError(f"{path}: cannot read the stored messages (after {sum(read.values())} messages): "
                           f"{_describe(exc)}") from None
        key = (connection.id, connection.topic, connection.msgtype)
        n = read[key] + 1
        if type(timestamp) is not int:
            raise BagError(f"{path}: {connection.topic} message {n}: log time {timestamp!r} is not an integer "
                           "number of nanoseconds")
        if timestamp < 0 or not start <= timestamp < end:
            why = "negative" if timestamp < 0 else f"outside the bag's span {start} to {end - 1} ns"
            raise BagError(f"{path}: {connection.topic} message {n}: log time {timestamp} ns is {why}")
        read[key] = n
        yield connection, timestamp, raw
    for c in connections:
        n = read[(c.id, c.topic, c.msgtype)]
        if n != int(c.msgcount):
            raise BagError(f"{path}: topic {c.topic} ({c.msgtype}): the bag states {int(c.msgcount)} messages "
                           f"but {n} were read")


def _check_count(path: Path, connections, max_messages: int, what: str) -> None:
    total = sum(int(c.msgcount) for c in connections)
    if total > max_messages:
        raise BagError(f"{path}: {total:,} {what} messages, more than --max-messages {max_messages:,} (each is "
                       "held in memory, about 0.7 KB); raise --max-messages to read this bag")


def _decode(reader, raw: bytes, connection, where: str):
    try:
        return reader.deserialize(raw, connection.msgtype)
    except Exception as exc:  # a payload that is not a valid CDR message of its type
        raise BagError(f"{where}: cannot decode the {connection.msgtype} payload ({len(raw)} bytes): "
                       f"{_describe(exc)}") from None


def read_bag_commands(path: str | Path, namespace: str = DEFAULT_NAMESPACE,
                      max_messages: int = DEFAULT_MAX_MESSAGES) -> BagCommands:
    """The command messages of a bag (see the module docstring), in log-time order.

    Raises:
        BagError: no command topic under ``namespace``, a command topic of another message type, a
            command the model does not implement, more than ``max_messages`` command messages, or a bag
            that cannot be read or is inconsistent (module docstring); the message names it.
    """
    path = Path(path)
    max_messages = check_max_messages(max_messages)
    reader = _open_reader(path)
    try:
        topics = {topic_name(namespace, rel): rel for rel in COMMAND_TOPICS}
        found = [c for c in reader.connections if c.topic in topics]
        if not found:
            present = ", ".join(sorted({c.topic for c in reader.connections})) or "none"
            expected = ", ".join(topics)
            raise BagError(f"{path}: no command topic under namespace {namespace!r} (expected any of {expected}); "
                           f"topics in the bag: {present}")
        for c in found:
            expected_type = COMMAND_TOPICS[topics[c.topic]]
            if c.msgtype != expected_type:
                raise BagError(f"{path}: topic {c.topic} has message type {c.msgtype}; expected {expected_type}")
        _check_count(path, found, max_messages, "command")
        start_ns = int(reader.start_time)
        result = BagCommands([], start_ns)
        for index, (connection, timestamp, raw) in enumerate(_stored_messages(reader, path, reader.connections)):
            rel = topics.get(connection.topic)
            if rel is None:
                result.skipped[(connection.topic, connection.msgtype)] += 1
                continue
            time_s = (timestamp - start_ns) * 1e-9
            where = f"{path}: {connection.topic} message {result.counts[connection.topic] + 1} at t = {time_s:.3f} s"
            if rel in ("enable", "disable"):
                cells = {"enable": 1.0 if rel == "enable" else 0.0}
            else:
                cells = _cells(rel, _decode(reader, raw, connection, where), where)
            result.counts[connection.topic] += 1
            result.messages.append(Message(index + 1, time_s, cells))
        return result
    finally:
        reader.close()


# --------------------------------------------------------------------------- reading reports


def read_bag_reports(path: str | Path, namespace: str = DEFAULT_NAMESPACE,
                     max_messages: int = DEFAULT_MAX_MESSAGES) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """The recorded report fields of a bag: ``{"message.field": (time_s, values)}`` for every float field
    of ``acres_gym.dbw.reports.REPORT_FIELDS`` whose topic is in the bag (times from the bag's first
    message, as ``read_bag_commands``; booleans and enums as 0 / 1 and numbers).

    Raises:
        BagError: a report topic of another message type, more than ``max_messages`` report messages, or
            a bag that cannot be read or is inconsistent (module docstring); the message names it.
    """
    path = Path(path)
    max_messages = check_max_messages(max_messages)
    reader = _open_reader(path)
    try:
        wanted = {topic_name(namespace, rel): (message, kind) for message, (rel, kind) in REPORT_TOPICS.items()}
        connections = [c for c in reader.connections if c.topic in wanted]
        if not connections:  # (an empty filter would read every topic)
            return {}
        for c in connections:
            expected_type = wanted[c.topic][1]
            if c.msgtype != expected_type:
                raise BagError(f"{path}: topic {c.topic} has message type {c.msgtype}; expected {expected_type}")
        _check_count(path, connections, max_messages, "report")
        start_ns = reader.start_time
        times: dict[str, list[float]] = {}
        values: dict[str, list[list[float]]] = {}
        fields_of = {m: [(f, k) for (mm, f, k) in REPORT_FIELDS if mm == m] for m in REPORT_TOPICS}
        for connection, timestamp, raw in _stored_messages(reader, path, connections):
            message, _kind = wanted[connection.topic]
            where = f"{path}: {connection.topic} message {len(times.get(message, ())) + 1}"
            msg = _decode(reader, raw, connection, where)
            row = []
            for name, _k in fields_of[message]:
                value = getattr(msg, name, math.nan)
                value = getattr(value, "value", value)
                try:
                    row.append(float(value))
                except (TypeError, ValueError):
                    raise BagError(f"{where}: field {name} is {value!r}, not a number") from None
            times.setdefault(message, []).append((timestamp - start_ns) * 1e-9)
            values.setdefault(message, []).append(row)
        out: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        for message, rows in values.items():
            t = np.asarray(times[message])
            table = np.asarray(rows, dtype=float)
            for j, (name, _k) in enumerate(fields_of[message]):
                out[f"{message}.{name}"] = (t, table[:, j])
        return out
    finally:
        reader.close()


# --------------------------------------------------------------------------- writing


def _default_message(store, typename: str):
    """A message of ``typename`` with every float NaN, bool false, integer 0, string empty."""
    from rosbags.interfaces import Nodetype

    _consts, fields = store.fielddefs[typename]
    kwargs = {}
    for name, (node, detail) in fields:
        if node == Nodetype.BASE:
            base = detail[0]
            kwargs[name] = (math.nan if base.startswith("float") else False if base == "bool"
                            else "" if base == "string" else 0)
        elif node == Nodetype.NAME:
            kwargs[name] = _default_message(store, detail)
        else:
            raise TypeError(f"{typename}.{name}: array fields are not used here")
    return store.types[typename](**kwargs)


def _stamp(store, time_ns: int):
    return store.types["builtin_interfaces/msg/Time"](sec=int(time_ns // 1_000_000_000),
                                                       nanosec=int(time_ns % 1_000_000_000))


def _set(msg, name: str, value: float) -> None:
    current = getattr(msg, name)
    if hasattr(current, "value"):  # a ds_dbw_msgs enum field type (Gear, CmdSrc, ...)
        current.value = int(value)
    elif isinstance(current, bool):
        setattr(msg, name, bool(value))
    elif isinstance(current, int):
        setattr(msg, name, int(value))
    else:
        setattr(msg, name, float(value))


class _BagWriter:
    """A rosbags ``Writer`` with one connection per topic, opened on ``path`` (which must not exist)."""

    def __init__(self, path: str | Path, storage: str = "sqlite3") -> None:
        _require_rosbags()
        from rosbags.rosbag2 import StoragePlugin, Writer, WriterError

        if storage not in STORAGES:
            raise BagError(f"--storage {storage!r}: expected one of {', '.join(STORAGES)}")
        self.store = typestore()
        plugin = StoragePlugin.MCAP if storage == "mcap" else StoragePlugin.SQLITE3
        try:
            self.writer = Writer(Path(path), version=9, storage_plugin=plugin)
            self.writer.open()
        except (WriterError, OSError) as exc:
            raise BagError(f"--out-bag {path}: {exc}") from None
        self.connections: dict[str, object] = {}

    def write(self, topic: str, msgtype: str, time_ns: int, msg) -> None:
        connection = self.connections.get(topic)
        if connection is None:
            connection = self.writer.add_connection(topic, msgtype, typestore=self.store)
            self.connections[topic] = connection
        self.writer.write(connection, int(time_ns), self.store.serialize_cdr(msg, msgtype))

    def close(self) -> None:
        self.writer.close()


class ReportBagWriter(_BagWriter):
    """Writes the report topics of vehicle 0, one set per ``write_reports`` call (see the module docstring)."""

    def __init__(self, path: str | Path, storage: str = "sqlite3", namespace: str = DEFAULT_NAMESPACE,
                 start_ns: int = 0) -> None:
        super().__init__(path, storage)
        self.namespace = namespace
        self.start_ns = int(start_ns)
        self._fields = {m: [(k, f) for k, (mm, f, _kind) in enumerate(REPORT_FIELDS) if mm == m]
                        for m in REPORT_TOPICS}

    def write_reports(self, time_s: float, column: np.ndarray) -> None:
        """Write every report topic at simulated time ``time_s`` from one column of
        ``acres_gym.dbw.reports.report_table`` (``len(REPORT_FIELDS)`` values)."""
        time_ns = self.start_ns + int(round(time_s * 1e9))
        for message, (rel, msgtype) in REPORT_TOPICS.items():
            msg = _default_message(self.store, msgtype)
            if hasattr(msg, "header"):
                msg.header.stamp = _stamp(self.store, time_ns)
            for k, name in self._fields[message]:
                _set(msg, name, column[k])
            self.write(topic_name(self.namespace, rel), msgtype, time_ns, msg)


def command_bag_messages(messages: Sequence[Message]) -> Iterator[tuple[float, str, object]]:
    """``(time_s, topic relative to the namespace, message)`` for a CSV command log: each line gives one
    message per subsystem it fills, with the subsystem's previous message's values in its empty cells
    (the replay's rule), and ``enable`` cells become ``enable`` / ``disable`` messages. Drive mode and
    driver inputs have no ds_dbw command topic and are left out (see ``dropped_columns``)."""
    store = typestore()
    current: dict[str, float] = {name: 0.0 for name in INPUT_COLUMNS}
    for name in SUBSYSTEMS:
        current[f"{name}_enable"] = 1.0
    reverse = {topic: {col: fld for col, fld in fields} for topic, fields in COMMAND_FIELDS.items()}
    for m in messages:
        current.update(m.cells)
        if "enable" in m.cells:
            rel = "enable" if m.cells["enable"] else "disable"
            yield m.time_s, rel, store.types["std_msgs/msg/Empty"]()
        groups = {INPUT_COLUMNS[name].group for name in m.cells}
        for group, rel in GROUP_TOPIC.items():
            if group not in groups:
                continue
            msg = _default_message(store, COMMAND_TOPICS[rel])
            for column_name, field_name in reverse[rel].items():
                target, _, leaf = field_name.rpartition(".")
                _set(_field(msg, target) if target else msg, leaf, current[column_name])
            yield m.time_s, rel, msg


def dropped_columns(messages: Iterable[Message]) -> list[str]:
    """Columns of a CSV log that no ds_dbw command topic carries (drive mode, driver inputs)."""
    return sorted({name for m in messages for name in m.cells
                   if INPUT_COLUMNS[name].group in ("drive", "driver")})


def write_command_bag(path: str | Path, messages: Sequence[Message], storage: str = "sqlite3",
                      namespace: str = DEFAULT_NAMESPACE, start_ns: int = 0, writer: _BagWriter | None = None) -> None:
    """Write a CSV command log as a bag of ds_dbw command topics (``command_bag_messages``) at
    ``start_ns`` + each message's time; into ``writer`` (left open) when given."""
    own = writer is None
    bag = writer if writer is not None else _BagWriter(path, storage)
    try:
        for time_s, rel, msg in command_bag_messages(messages):
            time_ns = start_ns + int(round(time_s * 1e9))
            if hasattr(msg, "header"):
                msg.header.stamp = _stamp(bag.store, time_ns)
            bag.write(topic_name(namespace, rel), COMMAND_TOPICS[rel], time_ns, msg)
    finally:
        if own:
            bag.close()


def write_commands_csv(out, messages: Sequence[Message]) -> None:
    """A command log in the replay's CSV form: ``time_s`` and every column any message fills."""
    columns = [name for name in INPUT_COLUMNS if any(name in m.cells for m in messages)]
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow([TIME_COLUMN, *columns])
    for m in messages:
        cells = [repr(m.time_s)]
        for name in columns:
            value = m.cells.get(name)
            if value is None:
                cells.append("")
            elif INPUT_COLUMNS[name].kind in ("bool", "enum"):
                cells.append(str(int(value)))
            else:
                cells.append(repr(value))
        writer.writerow(cells)


# --------------------------------------------------------------------------- acres-bag-to-csv


def to_csv_main(argv: list[str] | None = None) -> int:
    """``acres-bag-to-csv BAG [--out FILE] [--namespace NS] [--max-messages N]`` (or ``--example NAME``): a
    bag's commands as a replay CSV log."""
    from acres_gym.vehicle.cli import add_example_options, example_log, fail, write_output

    parser = argparse.ArgumentParser(
        prog="acres-bag-to-csv",
        description="Convert the ds_dbw_msgs command topics of a ROS 2 bag (sqlite3 or MCAP) into the CSV "
                    "command log of acres-replay, for inspection.")
    parser.add_argument("bag", nargs="?", help="ROS 2 bag: a directory, or a .db3 / .mcap file")
    add_example_options(parser, "bag")
    parser.add_argument("--out", default="-", metavar="FILE", help="output CSV (default: stdout)")
    parser.add_argument("--namespace", default=DEFAULT_NAMESPACE, help=f"topic namespace (default {DEFAULT_NAMESPACE})")
    parser.add_argument("--max-messages", type=int, default=DEFAULT_MAX_MESSAGES, metavar="N",
                        help=f"refuse bags with more than N command messages (each held in memory, about "
                             f"0.7 KB; default {DEFAULT_MAX_MESSAGES:,})")
    args = parser.parse_args(argv)
    try:
        bag = example_log(parser, args, "bag", kinds=("bag",))
        if bag is None:
            return 0
        commands = read_bag_commands(bag, args.namespace, args.max_messages)
    except ReplayInputError as exc:
        fail(parser, exc)
    write_output(parser, args.out, lambda out: write_commands_csv(out, commands.messages))
    print(f"{parser.prog}: {commands.summary()}", file=sys.stderr)
    return 0


__all__ = ["BagCommands", "BagError", "COMMAND_TOPICS", "DEFAULT_MAX_MESSAGES", "DEFAULT_NAMESPACE", "REPORT_TOPICS",
           "ReportBagWriter", "check_max_messages", "command_bag_messages", "dropped_columns", "is_bag",
           "read_bag_commands", "read_bag_reports", "topic_name", "typestore", "write_command_bag",
           "write_commands_csv", "to_csv_main"]


if __name__ == "__main__":
    sys.exit(to_csv_main())
