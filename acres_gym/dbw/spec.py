"""The drive-by-wire part of the vehicle state record (seed ``FDbwState``): its record spec.

The vehicle state (``acres_gym.state``) is one flat record per vehicle whose spec is assembled from the
subsystems' specs; ``DBW_STATE_SPEC`` is this layer's share (``acres_gym.records.Field`` rows: name, dtype,
shape, unit, rest value, owning module of ``acres_gym.dbw``). Units are the ds_dbw_msgs ones (deg, %, bar,
m/s) as the field names say.

What the vehicle reads after ``step_dbw`` (written every tick):

- ``steering_wheel_deg``: actual steering wheel angle, deg (road-wheel angle =
  (steering_wheel_deg - steering_center_deg) / steering_ratio),
- ``throttle_pedal_pct``: the emulated pedal the engine sees, 0..100 % (throttle bias included),
- ``brake_output_bar``: the line pressure the wheels brake with (seed ``UtvBrakeOutputBar``),
- ``gear``: the engaged gear (``GEAR_*``; ``GEAR_NEUTRAL`` while a shift is in progress),
- ``drive_mode``: the AWD switch (``DRIVE_*``).

What this layer reads from the vehicle's fields: ``wheel_omega_rad_s`` (FL, FR, RL, RR) for the
measured speeds. ``time_s`` is not needed: message ages count ticks of ``dt``.

The delay histories (``*_ring``) are ring buffers of ``RING_TICKS`` samples sharing one write index,
``ring_head`` (``acres_gym.dbw.delay``).
"""

from __future__ import annotations

import math

import numpy as np

from acres_gym.constants import GEAR_NONE, PEDAL_NONE
from acres_gym.dbw.command import COMMAND_DTYPE, MESSAGE_SUBSYSTEMS
from acres_gym.dbw.delay import RING_TICKS
from acres_gym.dbw.throttle import CMD_SRC_USER
from acres_gym.dbw.ulc import ULC_PEDAL_NONE
from acres_gym.records import FROM_PARAMS, Field

f8, i8, b1 = np.float64, np.int64, np.bool_
P = FROM_PARAMS
INF = math.inf

DBW_STATE_SPEC: tuple[Field, ...] = tuple(
    Field(name, dtype, shape, unit, rest, owner, doc) for name, dtype, shape, unit, rest, owner, doc in [
        # --- outputs the vehicle reads
        ("steering_wheel_deg", f8, (), "deg", 0, "steering", "actual steering wheel angle, deg"),
        ("throttle_pedal_pct", f8, (), "%", P, "throttle", "emulated pedal (percent_output, bias included), %"),
        ("brake_output_bar", f8, (), "bar", P, "brake", "line pressure incl. bias, 0..brake_max_bar (pressure_output)"),
        ("gear", i8, (), "enum", P, "gear", "engaged gear, GEAR_* (neutral during a shift)"),
        ("drive_mode", i8, (), "enum", P, "step", "AWD switch, DRIVE_*"),
        # --- system
        ("dbw_enabled", b1, (), "bool", 0, "enables", "the system enable this tick (dbw_enabled)"),
        ("ring_head", i8, (), "index", 0, "enables", "write index of every delay line, 0..RING_TICKS-1"),
        # --- last valid message per subsystem: the command record as it arrived (latched once per control step)
        ("msg", COMMAND_DTYPE, (len(MESSAGE_SUBSYSTEMS),), "message units", 0, "enables",
         "slot MSG_STEER, MSG_THROTTLE, MSG_BRAKE, MSG_ULC; the subsystem reads its own fields"),
        ("steer_msg_invalid", b1, (), "bool", 0, "enables", "the last message was ignored (NaN value or unknown mode)"),
        ("throttle_msg_invalid", b1, (), "bool", 0, "enables", ""),
        ("brake_msg_invalid", b1, (), "bool", 0, "enables", ""),
        ("ulc_msg_invalid", b1, (), "bool", 0, "enables", ""),
        # --- enables and timeouts (the reports' "enabled" / "timeout")
        ("steer_enabled", b1, (), "bool", 0, "enables", ""),
        ("throttle_enabled", b1, (), "bool", 0, "enables", ""),
        ("brake_enabled", b1, (), "bool", 0, "enables", ""),
        ("ulc_enabled", b1, (), "bool", 0, "enables", ""),
        ("steer_age_s", f8, (), "s", INF, "enables", "time since the last valid message, s (inf: none since reset)"),
        ("throttle_age_s", f8, (), "s", INF, "enables", ""),
        ("brake_age_s", f8, (), "s", INF, "enables", ""),
        ("ulc_age_s", f8, (), "s", INF, "enables", ""),
        ("steer_timeout", b1, (), "bool", 0, "enables", "dropped out as messages stopped; the next message clears it"),
        ("throttle_timeout", b1, (), "bool", 0, "enables", ""),
        ("brake_timeout", b1, (), "bool", 0, "enables", ""),
        ("ulc_timeout", b1, (), "bool", 0, "enables", ""),
        ("ulc_preempted", b1, (), "bool", 0, "enables", "ULC commanded, user throttle or brake commands in control"),
        # --- steering actuator
        ("steer_target_deg", f8, (), "deg", 0, "steering", "command after mode conversion and clamps, deg"),
        ("steer_ref_deg", f8, (), "deg", 0, "steering", "reference generator output (the report's cmd), deg"),
        ("steer_ref_rate_deg_s", f8, (), "deg/s", 0, "steering", ""),
        ("steering_wheel_rate_deg_s", f8, (), "deg/s", 0, "steering", ""),
        ("steer_limiting_value", b1, (), "bool", 0, "steering", "command clipped to the command range or the lock"),
        ("steer_limiting_rate", b1, (), "bool", 0, "steering", "reference moving toward the target at its limits"),
        ("steer_ring", f8, (RING_TICKS,), "deg", 0, "steering", "reference history (transport delay)"),
        # --- throttle pedal emulation
        ("throttle_input_pct", f8, (), "%", 0, "throttle", "the driver's pedal (percent_input), %"),
        ("throttle_cmd_pct", f8, (), "%", 0, "throttle", "pedal command after the rate limits (percent_cmd), %"),
        ("throttle_report_type", i8, (), "enum", PEDAL_NONE, "throttle", "cmd_type the report shows (PEDAL_*)"),
        ("throttle_cmd_src", i8, (), "enum", CMD_SRC_USER, "throttle", "0 user / driver, 1 ULC (ds_dbw CmdSrc)"),
        ("throttle_ring", f8, (RING_TICKS,), "%", 0, "throttle", "pedal command history (delay)"),
        # --- brake
        ("brake_input_bar", f8, (), "bar", 0, "brake", "the driver's line pressure (pressure_input), bar"),
        ("brake_cmd_bar", f8, (), "bar", 0, "brake", "pressure command after the rate limits (pressure_cmd), bar"),
        ("brake_pressure_bar", f8, (), "bar", 0, "brake", "modelled line pressure before the bias, bar"),
        ("brake_rate_bar_s", f8, (), "bar/s", 0, "brake", "its rate of change, bar/s"),
        ("brake_report_type", i8, (), "enum", PEDAL_NONE, "brake", "cmd_type the report shows (PEDAL_*)"),
        ("brake_cmd_src", i8, (), "enum", CMD_SRC_USER, "brake", "0 user / driver, 1 ULC"),
        ("brake_ring", f8, (RING_TICKS,), "bar", 0, "brake", "pressure command history (delay)"),
        # --- gear actuator
        ("gear_target", i8, (), "enum", P, "gear", "gear being shifted to (= gear when idle)"),
        ("gear_shift_left_s", f8, (), "s", 0, "gear", "remaining shift time, s (0: no shift in progress)"),
        ("gear_cmd_report", i8, (), "enum", GEAR_NONE, "gear", "GearReport.cmd: the last accepted command"),
        ("gear_reject", i8, (), "enum", 0, "gear", "GearReport.reject of the last command (GEAR_REJECT_*)"),
        ("gear_driver", i8, (), "enum", GEAR_NONE, "gear", "GearReport.driver: the driver's lever"),
        # --- measured speeds (VehicleVelocity) and the ULC's measurement
        ("speed_brake_mps", f8, (), "m/s", 0, "speed", "vehicle_velocity_brake: all four wheels, signed by the gear"),
        ("speed_propulsion_mps", f8, (), "m/s", 0, "speed", "vehicle_velocity_propulsion: rear wheels, gear sign"),
        ("speed_primed", b1, (), "bool", 0, "speed", "a previous measurement exists (for the acceleration derivative)"),
        ("ulc_vel_meas_mps", f8, (), "m/s", 0, "speed", "vel_meas: speed_brake_mps + bias in the travel direction"),
        ("ulc_accel_meas_mps2", f8, (), "m/s^2", 0, "speed", "accel_meas: filtered derivative of vel_meas"),
        # --- ULC
        ("ulc_vel_ref_mps", f8, (), "m/s", 0, "ulc", "vel_ref (signed like the speeds), m/s"),
        ("ulc_accel_ref_mps2", f8, (), "m/s^2", 0, "ulc", "accel_ref, m/s^2"),
        ("ulc_integral_m", f8, (), "m", 0, "ulc", "integral of the speed error (travel direction), m"),
        ("ulc_demand_mps2", f8, (), "m/s^2", 0, "ulc", "a_ref + Kp e (travel direction), m/s^2"),
        ("ulc_pedal", i8, (), "enum", ULC_PEDAL_NONE, "ulc", "0 none, 1 throttle, 2 brake (ULC_PEDAL_*)"),
        ("ulc_stop_hold", b1, (), "bool", 0, "ulc", "stop brake applied"),
        ("ulc_throttle_pct", f8, (), "%", 0, "ulc", "throttle the ULC asks for now, %"),
        ("ulc_brake_bar", f8, (), "bar", 0, "ulc", "brake the ULC asks for now, bar"),
        ("ulc_throttle_out_pct", f8, (), "%", 0, "ulc", "its request after ulc_delay_s (what the throttle gets), %"),
        ("ulc_brake_out_bar", f8, (), "bar", 0, "ulc", "likewise for the brake, bar"),
        ("ulc_hold_s", f8, (), "s", 0, "ulc", "time the actuators still follow the ULC's last output, s"),
        ("ulc_throttle_ring", f8, (RING_TICKS,), "%", 0, "ulc", "request histories (ULC output latency)"),
        ("ulc_brake_ring", f8, (RING_TICKS,), "bar", 0, "ulc", ""),
    ])
