"""ROS 2 bags: ds_dbw_msgs commands written with rosbags' writer replay as their CSV twin does; the report
bag reads back with the reports' values and simulated-time stamps; bad bags are one-line errors."""

from __future__ import annotations

import math

import numpy as np
import pytest

pytest.importorskip("rosbags")

from rosbags.highlevel import AnyReader  # noqa: E402
from rosbags.rosbag2 import StoragePlugin, Writer  # noqa: E402

from acres_gym.paths import config_dir  # noqa: E402
from acres_gym.vehicle.bags import (  # noqa: E402
    read_bag_commands,
    read_bag_reports,
    typestore,
    write_command_bag,
)
from acres_gym.vehicle.replay import main, read_commands  # noqa: E402

EXAMPLE = config_dir() / "replay" / "example_commands.csv"
T0_NS = 1_700_000_000_123_000_000  # a wall-clock start, as a real recording has


def _header(store, time_ns):
    stamp = store.types["builtin_interfaces/msg/Time"](sec=time_ns // 10**9, nanosec=time_ns % 10**9)
    return store.types["std_msgs/msg/Header"](stamp=stamp, frame_id="")


def _write_hand_bag(path, storage):
    """A 3 s drive written message by message with rosbags' Writer: enable, shift to DRIVE, 40 % throttle
    with a 90 deg steering angle for 2.4 s, then 30 bar of brake; plus an IMU-like topic of another type."""
    store = typestore()
    t = store.types
    plugin = StoragePlugin.MCAP if storage == "mcap" else StoragePlugin.SQLITE3
    with Writer(path, version=9, storage_plugin=plugin) as w:
        conns = {name: w.add_connection(f"/vehicle/{name}", kind, typestore=store) for name, kind in (
            ("enable", "std_msgs/msg/Empty"), ("gear/cmd", "ds_dbw_msgs/msg/GearCmd"),
            ("steering/cmd", "ds_dbw_msgs/msg/SteeringCmd"), ("throttle/cmd", "ds_dbw_msgs/msg/ThrottleCmd"),
            ("brake/cmd", "ds_dbw_msgs/msg/BrakeCmd"), ("imu/data_raw", "std_msgs/msg/String"))}

        def put(name, time_s, msg):
            time_ns = T0_NS + round(time_s * 1e9)
            kind = conns[name].msgtype
            if hasattr(msg, "header"):
                msg.header = _header(store, time_ns)
            w.write(conns[name], time_ns, store.serialize_cdr(msg, kind))

        put("enable", 0.0, t["std_msgs/msg/Empty"]())
        gear = t["ds_dbw_msgs/msg/Gear"](value=t["ds_dbw_msgs/msg/Gear"].DRIVE)
        put("gear/cmd", 0.0, t["ds_dbw_msgs/msg/GearCmd"](header=_header(store, 0), cmd=gear,
                                                           cmd_manual=t["ds_dbw_msgs/msg/GearManual"](value=0),
                                                           return_to_park=False))
        for k in range(60):  # 20 Hz for 3 s
            s = 0.05 * k
            steer = t["ds_dbw_msgs/msg/SteeringCmd"]
            put("steering/cmd", s, steer(header=_header(store, 0), cmd=90.0, cmd_rate=0.0, cmd_accel=0.0,
                                         cmd_type=steer.CMD_ANGLE, enable=True, clear=False, ignore=False))
            if s < 2.4:
                thr = t["ds_dbw_msgs/msg/ThrottleCmd"]
                put("throttle/cmd", s, thr(header=_header(store, 0), cmd=40.0, rate_inc=0.0, rate_dec=0.0,
                                           cmd_type=thr.CMD_PERCENT, enable=True, clear=False, ignore=False))
            else:
                brk = t["ds_dbw_msgs/msg/BrakeCmd"]
                put("brake/cmd", s, brk(header=_header(store, 0), cmd=30.0, rate_inc=0.0, rate_dec=0.0,
                                        cmd_type=brk.CMD_PRESSURE, enable=True, clear=False, ignore=False,
                                        precharge_aeb=0))
            if k % 2 == 0:
                put("imu/data_raw", s, t["std_msgs/msg/String"](data="not a command"))


HAND_CSV_HEADER = ("time_s,enable,gear_cmd,steer_mode,steer_cmd,steer_enable,throttle_mode,throttle_cmd,"
                   "throttle_enable,brake_mode,brake_cmd,brake_enable")


def _write_hand_csv(path):
    rows = ["0,1,4,,,,,,,,,"]
    for k in range(60):
        s = 0.05 * k
        pedal = "14,40,1,,," if s < 2.4 else ",,,1,30,1"
        rows.append(f"{s:.2f},,,2,90,1,{pedal}")
    path.write_text(HAND_CSV_HEADER + "\n" + "\n".join(rows) + "\n")


@pytest.mark.parametrize("storage", ["sqlite3", "mcap"])
def test_hand_written_bag_replays_as_its_csv_twin(tmp_path, storage, capsys):
    bag = tmp_path / f"drive_{storage}"
    _write_hand_bag(bag, storage)
    commands = read_bag_commands(bag)
    assert commands.start_ns == T0_NS
    assert commands.counts["/vehicle/steering/cmd"] == 60 and commands.counts["/vehicle/enable"] == 1
    assert commands.skipped == {("/vehicle/imu/data_raw", "std_msgs/msg/String"): 30}
    csv_log = tmp_path / "drive.csv"
    _write_hand_csv(csv_log)
    assert main([str(bag), "--out", str(tmp_path / "from_bag.csv"), "--out-hz", "20"]) == 0
    assert "skipped 30 messages" in capsys.readouterr().err
    assert main([str(csv_log), "--out", str(tmp_path / "from_csv.csv"), "--out-hz", "20"]) == 0
    from_bag = (tmp_path / "from_bag.csv").read_text()
    assert from_bag == (tmp_path / "from_csv.csv").read_text()
    # the commands acted: moving, steered to 90 deg, then braked at 30 bar
    rows = [line.split(",") for line in from_bag.splitlines()]
    col = {name: k for k, name in enumerate(rows[0])}
    at_2_9 = rows[1 + 58]  # t = 2.9 s, the last message in force
    assert float(at_2_9[col["time_s"]]) == pytest.approx(2.9)
    assert abs(float(at_2_9[col["steering_wheel_angle_deg"]]) - 90.0) < 1.0
    assert float(at_2_9[col["brake_pressure_output_bar"]]) > 25.0
    assert max(float(r[col["speed_mps"]]) for r in rows[1:]) > 0.3


@pytest.mark.parametrize("storage", ["sqlite3", "mcap"])
def test_report_bag_reads_back_with_simulated_time_stamps(tmp_path, storage):
    commands = read_commands(EXAMPLE)
    bag = tmp_path / "commands"
    write_command_bag(bag, commands, storage=storage, start_ns=T0_NS)
    out_bag = tmp_path / "reports"
    csv_out = tmp_path / "reports.csv"
    assert main([str(bag), "--out-bag", str(out_bag), "--storage", storage, "--out", str(csv_out),
                 "--out-hz", "20"]) == 0
    # the same commands from the CSV give the identical CSV
    assert main([str(EXAMPLE), "--out", str(tmp_path / "csv.csv"), "--out-hz", "20"]) == 0
    assert csv_out.read_text() == (tmp_path / "csv.csv").read_text()
    table = np.genfromtxt(csv_out, delimiter=",", names=True)
    store = typestore()
    with AnyReader([out_bag], default_typestore=store) as reader:
        topics = {c.topic: c.msgtype for c in reader.connections}
        assert topics["/vehicle/steering/report"] == "ds_dbw_msgs/msg/SteeringReport"
        for name in ("throttle/report", "brake/report", "gear/report", "ulc/report", "vehicle_velocity",
                     "wheel_speeds", "dbw_enabled"):
            assert f"/vehicle/{name}" in topics
        steering = [(t, reader.deserialize(raw, c.msgtype)) for c, t, raw in reader.messages()
                    if c.topic == "/vehicle/steering/report"]
        gear = [reader.deserialize(raw, c.msgtype) for c, t, raw in reader.messages()
                if c.topic == "/vehicle/gear/report"]
    assert len(steering) == len(table)
    for k in (0, 100, len(table) - 1):
        time_ns, msg = steering[k]
        assert time_ns == T0_NS + round(table["time_s"][k] * 1e9)
        assert msg.header.stamp.sec * 10**9 + msg.header.stamp.nanosec == time_ns
        # CAN resolution 0.1 deg, carried as float32
        expected = round(table["steering_wheel_angle_deg"][k] / 0.1) * 0.1
        assert msg.steering_wheel_angle == pytest.approx(expected, abs=1e-4)
        assert math.isnan(msg.actuator_temp)  # not modelled: NaN, as the driver sends unknowns
    assert gear[-1].gear.value == int(table["gear"][-1])
    reports = read_bag_reports(out_bag)
    t, speed = reports["vehicle_velocity.vehicle_velocity_brake"]
    assert t[0] == 0.0 and len(t) == len(table)
    np.testing.assert_allclose(speed, np.round(table["vehicle_velocity_brake_mps"] * 360) / 360, atol=1e-5)


def test_bag_to_csv_round_trip(tmp_path):
    from acres_gym.vehicle.bags import to_csv_main

    commands = read_commands(EXAMPLE)
    bag = tmp_path / "commands"
    write_command_bag(bag, commands)
    out = tmp_path / "commands.csv"
    assert to_csv_main([str(bag), "--out", str(out)]) == 0
    again = read_commands(out)
    assert len(again) >= len(commands)
    assert main([str(bag), "--to-csv", "--out", str(tmp_path / "same.csv")]) == 0
    assert (tmp_path / "same.csv").read_text() == out.read_text()
    # the converted log replays to the identical output
    assert main([str(out), "--out", str(tmp_path / "a.csv"), "--out-hz", "20"]) == 0
    assert main([str(EXAMPLE), "--out", str(tmp_path / "b.csv"), "--out-hz", "20"]) == 0
    assert (tmp_path / "a.csv").read_text() == (tmp_path / "b.csv").read_text()


def _one_line_error(capsys, argv) -> str:
    with pytest.raises(SystemExit) as info:
        main(argv)
    assert info.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    return err


def test_bag_without_command_topics_is_an_error(tmp_path, capsys):
    store = typestore()
    bag = tmp_path / "no_commands"
    with Writer(bag, version=9) as w:
        c = w.add_connection("/vehicle/imu", "std_msgs/msg/String", typestore=store)
        w.write(c, 5, store.serialize_cdr(store.types["std_msgs/msg/String"](data="x"), "std_msgs/msg/String"))
    err = _one_line_error(capsys, [str(bag), "--out", str(tmp_path / "o.csv")])
    assert "no command topic under namespace '/vehicle'" in err and "/vehicle/imu" in err
    # another namespace finds nothing either, and says which
    err = _one_line_error(capsys, [str(bag), "--namespace", "/ranger", "--out", str(tmp_path / "o.csv")])
    assert "'/ranger'" in err


def test_unknown_message_type_on_a_command_topic_is_an_error(tmp_path, capsys):
    store = typestore()
    bag = tmp_path / "wrong_type"
    with Writer(bag, version=9) as w:
        c = w.add_connection("/vehicle/steering/cmd", "std_msgs/msg/Float32", typestore=store)
        w.write(c, 5, store.serialize_cdr(store.types["std_msgs/msg/Float32"](data=1.0), "std_msgs/msg/Float32"))
    err = _one_line_error(capsys, [str(bag), "--out", str(tmp_path / "o.csv")])
    assert "/vehicle/steering/cmd has message type std_msgs/msg/Float32" in err
    assert "ds_dbw_msgs/msg/SteeringCmd" in err


def test_unsupported_command_type_names_topic_and_message(tmp_path, capsys):
    store = typestore()
    t = store.types
    bag = tmp_path / "torque"
    with Writer(bag, version=9) as w:
        c = w.add_connection("/vehicle/steering/cmd", "ds_dbw_msgs/msg/SteeringCmd", typestore=store)
        msg = t["ds_dbw_msgs/msg/SteeringCmd"](header=_header(store, 0), cmd=1.0, cmd_rate=0.0, cmd_accel=0.0,
                                               cmd_type=1, enable=True, clear=False, ignore=False)
        w.write(c, 5, store.serialize_cdr(msg, "ds_dbw_msgs/msg/SteeringCmd"))
    err = _one_line_error(capsys, [str(bag), "--out", str(tmp_path / "o.csv")])
    assert "/vehicle/steering/cmd message 1" in err and "(cmd_type)" in err and "2 (ANGLE)" in err


def test_message_definitions_follow_the_reference():
    store = typestore()
    steer = store.types["ds_dbw_msgs/msg/SteeringCmd"]
    assert (steer.CMD_NONE, steer.CMD_ANGLE, steer.CMD_CURVATURE, steer.CMD_YAW_RATE, steer.CMD_PERCENT) == \
        (0, 2, 3, 4, 14)
    gear = store.types["ds_dbw_msgs/msg/Gear"]
    assert (gear.PARK, gear.REVERSE, gear.NEUTRAL, gear.DRIVE, gear.LOW, gear.CALIBRATE) == (1, 2, 3, 4, 5, 15)
    reject = store.types["ds_dbw_msgs/msg/GearReject"]
    assert reject.VEHICLE_SPEED == 6
    ulc = store.types["ds_dbw_msgs/msg/UlcCmd"]
    assert [f for f, _ in store.fielddefs["ds_dbw_msgs/msg/UlcCmd"][1]] == [
        "header", "cmd", "limit_accel", "limit_decel", "limit_jerk_throttle", "limit_jerk_brake", "cmd_type",
        "enable", "clear", "enable_shift", "enable_shift_park", "coast_decel"]
    assert (ulc.CMD_VELOCITY, ulc.CMD_ACCEL) == (1, 2)
    kinds = dict(store.fielddefs["ds_dbw_msgs/msg/BrakeReport"][1])
    assert kinds["pressure_output"][1][0] == "float32" and kinds["cmd_src"][1] == "ds_dbw_msgs/msg/CmdSrc"
