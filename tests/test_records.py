"""The record specs (``acres_gym.records``): state, command and report records declared once, with the
dtype, the reset template, the report table and the replay columns derived from them."""

from __future__ import annotations

import math

import numpy as np
import pytest

from acres_gym.constants import GEAR_HIGH, GEAR_NONE, STEER_ANGLE, ULC_VELOCITY
from acres_gym.dbw.command import (
    ARRIVAL_FIELDS,
    COMMAND_DTYPE,
    COMMAND_SPEC,
    MESSAGE_FIELDS,
    MESSAGE_SUBSYSTEMS,
    clear_sent,
    make_commands,
    mark_sent,
    send,
)
from acres_gym.dbw.reports import (
    REPORT_FIELDS,
    REPORT_RECORD_DTYPE,
    REPORT_RESOLUTION,
    REPORT_ROW,
    REPORT_SPEC,
    dbw_reports,
    report_table,
)
from acres_gym.dbw.spec import DBW_STATE_SPEC
from acres_gym.records import FROM_PARAMS, Field, make_template, spec_dtype, spec_table
from acres_gym.sim import RangerSim
from acres_gym.state import (
    CHASSIS_SPEC,
    LEDGER_SPEC,
    POWERTRAIN_SPEC,
    SCRATCH_DTYPE,
    SCRATCH_SPEC,
    STATE_DTYPE,
    STATE_SPEC,
    STATE_TEMPLATE,
    WHEEL_SPEC,
)
from acres_gym.vehicle.replay import OUTPUT_COLUMNS, OUTPUT_SPEC

SUBSYSTEM_SPECS = (CHASSIS_SPEC, WHEEL_SPEC, POWERTRAIN_SPEC, LEDGER_SPEC, DBW_STATE_SPEC)


def test_every_state_field_is_in_exactly_one_spec_with_a_unit_and_an_owner():
    for name in STATE_DTYPE.names:
        owners = [spec for spec in SUBSYSTEM_SPECS if any(f.name == name for f in spec)]
        assert len(owners) == 1, name
    assert [f.name for f in STATE_SPEC] == list(STATE_DTYPE.names)
    for f in STATE_SPEC + COMMAND_SPEC + REPORT_SPEC:
        assert f.unit and f.owner, f.name
    for f in STATE_SPEC:
        assert STATE_DTYPE[f.name].base == np.dtype(f.dtype) and STATE_DTYPE[f.name].shape == f.shape, f.name


def test_per_tick_scratch_is_its_own_record_outside_the_state():
    assert not set(SCRATCH_DTYPE.names) & set(STATE_DTYPE.names)
    assert [f.name for f in SCRATCH_SPEC] == list(SCRATCH_DTYPE.names)
    sim = RangerSim(3)
    assert sim.work.shape == (3,) and sim.work.dtype == np.dtype((np.record, SCRATCH_DTYPE))
    sim.commands.driver_throttle_pct = 30.0
    sim.step(12)
    assert np.all(sim.work.tyre_stiffness_x_n_m > 0.0)  # the tick wrote its intermediates there


def test_spec_dtype_rejects_a_repeated_name_and_the_template_holds_rest_values():
    spec = (Field("a_m", np.float64, (), "m", 2.0), Field("a_m", np.float64, (), "m"))
    with pytest.raises(TypeError, match="a_m"):
        spec_dtype(spec)
    spec = (Field("a_m", np.float64, (3,), "m", 2.0), Field("b_s", np.float64, (), "s", math.inf),
            Field("c", np.int64, (), "1", FROM_PARAMS))
    dtype = spec_dtype(spec)
    template = make_template(spec, np.dtype((np.record, dtype)))
    assert template.a_m.tolist() == [[2.0, 2.0, 2.0]] and np.isinf(template.b_s[0]) and template.c[0] == 0
    assert [row[0] for row in spec_table(spec)] == ["a_m", "b_s", "c"]


def test_state_template_holds_each_rest_value():
    for f in STATE_SPEC:
        value = STATE_TEMPLATE[f.name][0]
        expected = 0 if f.rest == FROM_PARAMS else f.rest
        if value.dtype.names:  # a nested record (the latched messages): all zero
            assert not np.asarray(value).tobytes().strip(b"\0"), f.name
        else:
            assert np.all(value == expected), f.name
    assert np.all(np.isinf(STATE_TEMPLATE.steer_age_s)) and np.all(STATE_TEMPLATE.in_contact == 1)


def test_reset_is_the_template_plus_the_parameter_pass():
    sim = RangerSim(2)
    sim.commands.driver_throttle_pct = 60.0
    sim.commands.gear_cmd = GEAR_HIGH
    send(sim.commands, "SteeringCmd", cmd_type=STEER_ANGLE, cmd=90.0, enable=True)
    sim.commands.system_enable = True
    sim.step(240)
    assert sim.state.position_m[0, 0] != 0.0
    sim.reset(x_m=3.0, y_m=-1.0, yaw_rad=0.5)
    p = sim.params
    for f in STATE_SPEC:
        if f.rest != FROM_PARAMS:
            assert np.array_equal(sim.state[f.name], np.repeat(STATE_TEMPLATE[f.name], 2, axis=0)), f.name
    np.testing.assert_array_equal(sim.state.engine_rpm, p.idle_rpm)
    np.testing.assert_array_equal(sim.state.cvt_ratio, p.cvt_initial_ratio)
    np.testing.assert_array_equal(sim.state.gear, p.default_gear)
    np.testing.assert_array_equal(sim.state.gear_target, p.default_gear)
    np.testing.assert_array_equal(sim.state.drive_mode, p.default_drive_mode)
    np.testing.assert_array_equal(sim.state.suspension_compression_m, np.repeat(p.droop_m[:, None], 4, axis=1))
    np.testing.assert_array_equal(sim.state.normal_load_n, p.static_load_n)
    np.testing.assert_array_equal(sim.state.e_stored_j, sim.state.e_stored0_j)
    fresh = RangerSim(2)
    fresh.reset(x_m=3.0, y_m=-1.0, yaw_rad=0.5)
    for name in STATE_DTYPE.names:  # a used vehicle resets bit for bit to a new one
        assert sim.state[name].tobytes() == fresh.state[name].tobytes(), name


def test_commands_follow_their_spec_and_messages():
    assert [f.name for f in COMMAND_SPEC] == list(COMMAND_DTYPE.names)
    assert ARRIVAL_FIELDS == tuple(f"{name}_fresh" for name in MESSAGE_SUBSYSTEMS)
    for f in COMMAND_SPEC:
        assert (f.message is None) == (f.owner in ("driver", "test")), f.name
    fields = [name for message in MESSAGE_FIELDS.values() for name in message]
    assert len(fields) == len(set(fields)) and "steer_fresh" not in fields
    assert MESSAGE_FIELDS["UlcCmd"]["ulc_coast_decel"] == "coast_decel"


def test_send_writes_a_message_by_its_field_names_and_clear_sent_consumes_it():
    cmd = make_commands(3)
    send(cmd, "UlcCmd", rows=[0, 2], cmd_type=ULC_VELOCITY, cmd=8.0, enable=True)
    assert cmd.ulc_fresh.tolist() == [True, False, True] and cmd.ulc_cmd.tolist() == [8.0, 0.0, 8.0]
    send(cmd, "GearCmd", cmd=GEAR_HIGH)
    mark_sent(cmd, ("brake",), rows=1)
    assert cmd.brake_fresh.tolist() == [False, True, False]
    clear_sent(cmd)
    assert not cmd.ulc_fresh.any() and not cmd.brake_fresh.any() and np.all(cmd.gear_cmd == GEAR_NONE)
    assert np.all(cmd.ulc_cmd[[0, 2]] == 8.0)  # the message's contents stay: a held command
    with pytest.raises(ValueError, match="limit_acel"):
        send(cmd, "UlcCmd", limit_acel=1.0)
    with pytest.raises(ValueError, match="SteerCmd"):
        send(cmd, "SteerCmd", cmd=1.0)


def test_clear_sent_takes_back_some_messages_or_only_the_events():
    cmd = make_commands(2)
    mark_sent(cmd, MESSAGE_SUBSYSTEMS)
    send(cmd, "GearCmd", cmd=GEAR_HIGH)
    clear_sent(cmd, rows=[1], subsystems=("throttle", "brake"), events=False)  # withdrawn before a step
    assert cmd.throttle_fresh.tolist() == [True, False] and cmd.brake_fresh.tolist() == [True, False]
    assert cmd.steer_fresh.all() and cmd.ulc_fresh.all() and np.all(cmd.gear_cmd == GEAR_HIGH)
    clear_sent(cmd, subsystems=())  # a sender that re-sends every step: the gear event counts once
    assert np.all(cmd.gear_cmd == GEAR_NONE) and cmd.steer_fresh.all() and cmd.ulc_fresh.all()
    with pytest.raises(ValueError, match=r"unknown subsystem\(s\) \['gear'\]; allowed: \['steer'"):
        clear_sent(cmd, subsystems=("gear",))
    with pytest.raises(ValueError, match=r"mark_sent\(\): unknown subsystem\(s\) \['steering'\]"):
        mark_sent(cmd, ("steering",))


def test_report_table_rows_follow_the_spec():
    assert REPORT_FIELDS == tuple((f.message, f.msg_field, {"float64": "f", "bool": "b", "int64": "i"}
                                   [np.dtype(f.dtype).name]) for f in REPORT_SPEC)
    assert list(REPORT_RECORD_DTYPE.names) == [f.name for f in REPORT_SPEC]
    assert REPORT_ROW["steering.steering_wheel_angle"] == 0 and len(REPORT_ROW) == len(REPORT_SPEC)
    assert REPORT_RESOLUTION[("steering", "cmd")] == 0.1
    sim = RangerSim(2)
    sim.commands.system_enable = True
    send(sim.commands, "SteeringCmd", cmd_type=STEER_ANGLE, cmd=123.4567, enable=True)
    sim.commands.driver_throttle_pct = 40.0
    sim.step(54)
    sim.commands.steer_fresh = True
    sim.step(6)  # a message per control step: the steering stays enabled
    exact = report_table(sim.params, sim.state, exact=True)
    rounded = report_table(sim.params, sim.state)
    assert exact.shape == (len(REPORT_SPEC), 2) and exact.flags.c_contiguous
    s = sim.state
    np.testing.assert_array_equal(exact[REPORT_ROW["steering.steering_wheel_angle"]], s.steering_wheel_deg)
    np.testing.assert_array_equal(exact[REPORT_ROW["steering.cmd"]], s.steer_ref_deg)
    np.testing.assert_array_equal(exact[REPORT_ROW["wheel_speeds.rear_right"]], s.wheel_omega_rad_s[:, 3])
    np.testing.assert_array_equal(exact[REPORT_ROW["vehicle_velocity.vehicle_velocity_brake"]], s.speed_brake_mps)
    for f in REPORT_SPEC:
        row = REPORT_ROW[f"{f.message}.{f.msg_field}"]
        if f.resolution > 0.0:
            np.testing.assert_array_equal(rounded[row], np.rint(exact[row] / f.resolution) * f.resolution)
        else:
            np.testing.assert_array_equal(rounded[row], exact[row])
    reports = dbw_reports(sim.params, sim.state)
    assert reports["steering"]["enabled"].dtype == np.bool_ and reports["gear"]["gear"].dtype == np.int64


def test_replay_columns_name_existing_report_and_state_fields():
    assert len(OUTPUT_COLUMNS) == len(set(OUTPUT_COLUMNS))
    for column, source, key in OUTPUT_SPEC:
        assert source in ("report", "state", "vehicle"), column
        if source == "report":
            assert key in REPORT_ROW, column
        elif source == "state":
            assert key in STATE_DTYPE.names, column


def test_message_validators_cover_every_number_field_of_their_message():
    """``dbw/enables.py`` checks each message's numbers by name; every float field the command spec gives
    SteeringCmd, ThrottleCmd, BrakeCmd and UlcCmd must be one of them (a NaN there makes the message
    invalid), so a field added to the spec without its check fails here."""
    from acres_gym.dbw.enables import (
        brake_message_valid,
        steer_message_valid,
        throttle_message_valid,
        ulc_message_valid,
    )

    validators = {"SteeringCmd": steer_message_valid, "ThrottleCmd": throttle_message_valid,
                  "BrakeCmd": brake_message_valid, "UlcCmd": ulc_message_valid}
    base = make_commands(1).view(np.ndarray)
    for message, valid in validators.items():
        assert valid(base[0]), message
        fields = [f.name for f in COMMAND_SPEC if f.message == message and np.dtype(f.dtype).kind == "f"]
        assert fields, message
        for name in fields:
            cmd = base.copy()
            cmd[name] = np.nan
            assert not valid(cmd[0]), f"{message}: a NaN {name} passes {valid.__name__}"
