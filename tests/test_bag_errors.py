"""Broken and inconsistent bags: each is one line on stderr and exit status 2 in ``acres-replay`` and
``acres-bag-to-csv`` (never a traceback), naming the bag and what is wrong. The bags are written with rosbags'
writer, then damaged with sqlite edits, a byte-level page overwrite or an edited ``metadata.yaml``."""

from __future__ import annotations

import sqlite3

import pytest
import yaml

pytest.importorskip("rosbags")

from rosbags.rosbag2 import Writer  # noqa: E402

from acres_gym.vehicle import replay  # noqa: E402
from acres_gym.vehicle.bags import DEFAULT_MAX_MESSAGES, read_bag_commands, read_bag_reports, to_csv_main, typestore  # noqa: E402

T0_NS = 1_700_000_000_000_000_000
STEER = "ds_dbw_msgs/msg/SteeringCmd"
THROTTLE = "ds_dbw_msgs/msg/ThrottleCmd"


def _write_bag(path, steps: int = 60, payload: int = 0) -> None:
    """enable, then ``steps`` steering and throttle commands at 20 Hz (sqlite3 storage); ``payload`` > 0 adds an
    IMU-like string topic with messages of that many characters (to fill sqlite pages)."""
    store = typestore()
    t = store.types
    header = t["std_msgs/msg/Header"](stamp=t["builtin_interfaces/msg/Time"](sec=0, nanosec=0), frame_id="")
    with Writer(path, version=9) as w:
        enable = w.add_connection("/vehicle/enable", "std_msgs/msg/Empty", typestore=store)
        steer = w.add_connection("/vehicle/steering/cmd", STEER, typestore=store)
        throttle = w.add_connection("/vehicle/throttle/cmd", THROTTLE, typestore=store)
        other = w.add_connection("/vehicle/imu", "std_msgs/msg/String", typestore=store) if payload else None
        w.write(enable, T0_NS, store.serialize_cdr(t["std_msgs/msg/Empty"](), "std_msgs/msg/Empty"))
        for k in range(steps):
            time_ns = T0_NS + k * 50_000_000
            msg = t[STEER](header=header, cmd=10.0 * k, cmd_rate=0.0, cmd_accel=0.0, cmd_type=2, enable=True,
                           clear=False, ignore=False)
            w.write(steer, time_ns, store.serialize_cdr(msg, STEER))
            msg = t[THROTTLE](header=header, cmd=20.0, rate_inc=0.0, rate_dec=0.0, cmd_type=14, enable=True,
                              clear=False, ignore=False)
            w.write(throttle, time_ns, store.serialize_cdr(msg, THROTTLE))
            if other is not None:
                text = t["std_msgs/msg/String"](data="x" * payload)
                w.write(other, time_ns, store.serialize_cdr(text, "std_msgs/msg/String"))


def _db(bag):
    (db,) = bag.glob("*.db3")
    return db


def _sql(bag, *statements) -> None:
    with sqlite3.connect(_db(bag)) as conn:
        for statement in statements:
            conn.execute(statement)


def _edit_metadata(bag, edit) -> None:
    path = bag / "metadata.yaml"
    doc = yaml.safe_load(path.read_text())
    edit(doc["rosbag2_bagfile_information"])
    path.write_text(yaml.safe_dump(doc))


def _topic(info, name):
    return next(t for t in info["topics_with_message_count"] if t["topic_metadata"]["name"] == name)


def _error(capsys, argv, entry) -> str:
    """Run ``entry`` (acres-replay's or acres-bag-to-csv's main): exit status 2 and exactly one line on stderr."""
    with pytest.raises(SystemExit) as info:
        entry(argv)
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    print(lines[0])  # shown with pytest -s
    return lines[0]


ENTRIES = [pytest.param(replay.main, id="acres-replay"), pytest.param(to_csv_main, id="acres-bag-to-csv")]


def _both(capsys, bag, tmp_path, entry, *options) -> str:
    return _error(capsys, [str(bag), "--out", str(tmp_path / "out.csv"), *options], entry)


@pytest.fixture
def bag(tmp_path):
    path = tmp_path / "drive"
    _write_bag(path)
    return path


def test_the_clean_bag_reads(bag):
    commands = read_bag_commands(bag)
    assert commands.counts == {"/vehicle/enable": 1, "/vehicle/steering/cmd": 60, "/vehicle/throttle/cmd": 60}
    assert commands.messages[-1].time_s == pytest.approx(59 * 0.05)


@pytest.mark.parametrize("entry", ENTRIES)
def test_corrupt_payload(bag, tmp_path, capsys, entry):
    # the 10th steering message: 3 bytes, far short of a SteeringCmd
    _sql(bag, "UPDATE messages SET data = x'000100' WHERE id = (SELECT messages.id FROM messages JOIN topics "
              "ON messages.topic_id = topics.id WHERE topics.name = '/vehicle/steering/cmd' LIMIT 1 OFFSET 9)")
    err = _both(capsys, bag, tmp_path, entry)
    assert f"{bag}: /vehicle/steering/cmd message 10 at t = 0.450 s: cannot decode the {STEER} payload (3 bytes)" \
        in err


@pytest.mark.parametrize("entry", ENTRIES)
def test_text_timestamp(bag, tmp_path, capsys, entry):
    _sql(bag, "UPDATE messages SET timestamp = 'yesterday' WHERE id = 5")
    err = _both(capsys, bag, tmp_path, entry)
    assert "log time 'yesterday' is not an integer number of nanoseconds" in err and str(bag) in err


def test_every_damaged_sqlite_page_is_one_line(tmp_path, capsys):
    """Each page of the database in turn gets a garbage page header: the bag is refused when it is opened, or
    when the damaged page is reached while reading (a CorruptError mid-way), or, for a page of another
    topic's payload that is never decoded, read as before; never a traceback."""
    from acres_gym.vehicle.bags import BagError

    clean = tmp_path / "clean"
    _write_bag(clean, steps=20, payload=10_000)  # payloads over a page long: overflow pages read only mid-way
    data = _db(clean).read_bytes()
    page = 4096
    outcomes: dict[str, list[int]] = {"open": [], "mid-way": [], "read": []}
    for k in range(1, len(data) // page):
        bag = tmp_path / f"page{k}"
        bag.mkdir()
        (bag / "metadata.yaml").write_bytes((clean / "metadata.yaml").read_bytes())
        damaged = bytearray(data)
        damaged[k * page:k * page + 4] = b"\xff\xff\xff\xff"
        (bag / _db(clean).name).write_bytes(bytes(damaged))
        try:
            read_bag_commands(bag)
            outcomes["read"].append(k)
        except BagError as exc:
            text = str(exc)
            assert "\n" not in text and str(bag) in text
            if "not a readable ROS 2 bag" in text:
                outcomes["open"].append(k)
            else:
                assert "cannot read the stored messages" in text and "CorruptError" in text, text
                outcomes["mid-way"].append(k)
    assert outcomes["open"] and outcomes["mid-way"], outcomes
    mid_way = tmp_path / f"page{outcomes['mid-way'][0]}"
    for entry in (replay.main, to_csv_main):
        err = _both(capsys, mid_way, tmp_path, entry)
        assert f"{mid_way}: cannot read the stored messages (after" in err and "malformed" in err


@pytest.mark.parametrize("entry", ENTRIES)
def test_negated_timestamps_disagree_with_the_metadata(bag, tmp_path, capsys, entry):
    _sql(bag, "UPDATE messages SET timestamp = -timestamp")
    err = _both(capsys, bag, tmp_path, entry)
    assert f"the stored messages span log times -{T0_NS + 59 * 50_000_000} to -{T0_NS} ns" in err
    assert f"outside the span metadata.yaml gives ({T0_NS} to {T0_NS + 59 * 50_000_000} ns)" in err


def test_negated_timestamps_in_a_storage_file_alone(bag, tmp_path, capsys):
    _sql(bag, "UPDATE messages SET timestamp = -timestamp")
    err = _error(capsys, [str(_db(bag)), "--out", str(tmp_path / "o.csv")], replay.main)
    assert "log time -" in err and "ns is negative" in err


@pytest.mark.parametrize("entry", ENTRIES)
def test_topic_type_edited_in_the_storage(bag, tmp_path, capsys, entry):
    _sql(bag, f"UPDATE topics SET type = '{THROTTLE}' WHERE name = '/vehicle/steering/cmd'")
    err = _both(capsys, bag, tmp_path, entry)
    assert (f"topic /vehicle/steering/cmd has message type {STEER} in metadata.yaml but {THROTTLE} in the storage"
            in err)


@pytest.mark.parametrize("entry", ENTRIES)
def test_topic_type_edited_in_the_metadata(bag, tmp_path, capsys, entry):
    _edit_metadata(bag, lambda info: _topic(info, "/vehicle/steering/cmd")["topic_metadata"].update(type=THROTTLE))
    err = _both(capsys, bag, tmp_path, entry)
    assert f"has message type {THROTTLE} in metadata.yaml but {STEER} in the storage" in err


@pytest.mark.parametrize("entry", ENTRIES)
def test_message_counts_that_differ(bag, tmp_path, capsys, entry):
    _edit_metadata(bag, lambda info: _topic(info, "/vehicle/steering/cmd").update(message_count=40))
    err = _both(capsys, bag, tmp_path, entry)
    assert "topic /vehicle/steering/cmd has 40 messages in metadata.yaml but 60 in the storage" in err


def test_messages_deleted_from_the_storage(bag, tmp_path, capsys):
    _sql(bag, "DELETE FROM messages WHERE id IN (SELECT id FROM messages ORDER BY id DESC LIMIT 7)")
    err = _error(capsys, [str(bag), "--out", str(tmp_path / "o.csv")], replay.main)
    assert "in metadata.yaml but" in err and "in the storage" in err


@pytest.mark.parametrize("entry", ENTRIES)
def test_message_cap(bag, tmp_path, capsys, entry):
    err = _both(capsys, bag, tmp_path, entry, "--max-messages", "100")
    assert f"{bag}: 121 command messages, more than --max-messages 100" in err
    assert entry([str(bag), "--out", str(tmp_path / "ok.csv"), "--max-messages", "121"]) == 0
    capsys.readouterr()
    err = _both(capsys, bag, tmp_path, entry, "--max-messages", "0")
    assert "--max-messages 0: expected an integer >= 1" in err


def test_message_cap_defaults_and_reports(bag):
    assert DEFAULT_MAX_MESSAGES == 500_000
    assert len(read_bag_commands(bag).messages) == 121
    with pytest.raises(ValueError, match="more than --max-messages 120"):
        read_bag_commands(bag, max_messages=120)


def test_report_reading_checks_the_same(tmp_path):
    import numpy as np

    from acres_gym.dbw.reports import REPORT_FIELDS
    from acres_gym.vehicle.bags import ReportBagWriter

    bag = tmp_path / "reports"
    writer = ReportBagWriter(bag, start_ns=T0_NS)
    for k in range(20):
        writer.write_reports(0.05 * k, np.zeros(len(REPORT_FIELDS)))
    writer.close()
    assert len(read_bag_reports(bag)["steering.steering_wheel_angle"][0]) == 20
    with pytest.raises(ValueError, match="160 report messages, more than --max-messages 100"):
        read_bag_reports(bag, max_messages=100)
    _sql(bag, "UPDATE messages SET data = x'00' WHERE id = 3")
    with pytest.raises(ValueError, match="message 1: cannot decode"):
        read_bag_reports(bag)


def test_damaged_mcap_bytes_are_one_line_errors(tmp_path):
    """300 MCAP files with 3 random bytes changed each: read as before (a changed byte inside a payload field
    is just another value), or refused with a one-line BagError; no other exception."""
    import random

    from acres_gym.paths import config_path
    from acres_gym.vehicle.bags import BagError, write_command_bag

    clean = tmp_path / "clean"
    write_command_bag(clean, replay.read_commands(config_path("replay", "example_commands.csv"))[:100],
                      storage="mcap")
    (storage,) = clean.glob("*.mcap")
    data = storage.read_bytes()
    rng = random.Random(0)
    refused = 0
    damaged_file = tmp_path / "damaged.mcap"
    for _ in range(300):
        damaged = bytearray(data)
        for _ in range(3):
            damaged[rng.randrange(len(damaged))] = rng.randrange(256)
        damaged_file.write_bytes(bytes(damaged))
        try:
            read_bag_commands(damaged_file)
        except BagError as exc:
            assert "\n" not in str(exc) and str(damaged_file) in str(exc)
            refused += 1
    assert refused > 100
