"""The drive-by-wire part of the vehicle state record (seed ``FDbwState``) and its delay lines.

The vehicle state is one flat record per vehicle whose dtype is assembled from the field lists of
several modules; ``DBW_STATE_FIELDS`` is this layer's share. Units are the ds_dbw_msgs ones (deg, %, bar,
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

The seed keeps its delay histories in deques of (time, value); here they are fixed-size ring buffers
of one sample per tick (``RING_TICKS`` long, enough for delays up to 0.5 s at 120 Hz) that all share
one write index, ``ring_head``, advanced once per tick. A delay that is not a whole number of ticks is
read by linear interpolation between the two neighbouring samples (``delay_line``).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

RING_TICKS = 64  # samples per delay line: 0.5 s at 120 Hz needs 61 (60 ticks plus one to interpolate)

DBW_STATE_FIELDS: list[tuple] = [
    # --- outputs the vehicle reads
    ("steering_wheel_deg", np.float64),  # actual steering wheel angle, deg
    ("throttle_pedal_pct", np.float64),  # emulated pedal (percent_output, bias included), %
    ("brake_output_bar", np.float64),  # line pressure incl. bias, 0..brake_max_bar (pressure_output)
    ("gear", np.int64),  # engaged gear, GEAR_* (neutral during a shift)
    ("drive_mode", np.int64),  # AWD switch, DRIVE_*
    # --- system
    ("dbw_enabled", np.bool_),  # the system enable this tick (dbw_enabled)
    ("ring_head", np.int64),  # write index of every delay line, 0..RING_TICKS-1
    # --- last valid message per subsystem (a message is latched on the first tick of its control step)
    ("steer_msg_mode", np.int64),  # STEER_*
    ("steer_msg_cmd", np.float64),  # deg | % | 1/m | rad/s
    ("steer_msg_rate_deg_s", np.float64),  # as sent: 0 = default, inf or < 0 = unlimited
    ("steer_msg_accel_deg_s2", np.float64),
    ("steer_msg_enable", np.bool_),
    ("steer_msg_invalid", np.bool_),  # the last message was ignored (NaN value or unknown mode)
    ("throttle_msg_mode", np.int64),  # PEDAL_*
    ("throttle_msg_cmd", np.float64),  # %
    ("throttle_msg_rate_inc_pct_s", np.float64),
    ("throttle_msg_rate_dec_pct_s", np.float64),
    ("throttle_msg_enable", np.bool_),
    ("throttle_msg_invalid", np.bool_),
    ("brake_msg_mode", np.int64),  # PEDAL_*
    ("brake_msg_cmd", np.float64),  # % | bar
    ("brake_msg_rate_inc", np.float64),  # command unit per s
    ("brake_msg_rate_dec", np.float64),
    ("brake_msg_enable", np.bool_),
    ("brake_msg_invalid", np.bool_),
    ("ulc_msg_mode", np.int64),  # ULC_*
    ("ulc_msg_cmd", np.float64),  # m/s | m/s^2
    ("ulc_msg_limit_accel_mps2", np.float64),
    ("ulc_msg_limit_decel_mps2", np.float64),
    ("ulc_msg_limit_jerk_throttle_mps3", np.float64),
    ("ulc_msg_limit_jerk_brake_mps3", np.float64),
    ("ulc_msg_enable", np.bool_),
    ("ulc_msg_coast_decel", np.bool_),
    ("ulc_msg_invalid", np.bool_),
    # --- enables and timeouts (the reports' "enabled" / "timeout")
    ("steer_enabled", np.bool_),
    ("throttle_enabled", np.bool_),
    ("brake_enabled", np.bool_),
    ("ulc_enabled", np.bool_),
    ("steer_age_s", np.float64),  # time since the last valid message, s (inf: none since reset)
    ("throttle_age_s", np.float64),
    ("brake_age_s", np.float64),
    ("ulc_age_s", np.float64),
    ("steer_timeout", np.bool_),  # disengaged because messages stopped; cleared by the next message
    ("throttle_timeout", np.bool_),
    ("brake_timeout", np.bool_),
    ("ulc_timeout", np.bool_),
    ("ulc_preempted", np.bool_),  # ULC commanded but user throttle or brake commands are in control
    # --- steering actuator
    ("steer_target_deg", np.float64),  # command after mode conversion and clamps, deg
    ("steer_ref_deg", np.float64),  # reference generator output (the report's cmd), deg
    ("steer_ref_rate_deg_s", np.float64),
    ("steering_wheel_rate_deg_s", np.float64),
    ("steer_limiting_value", np.bool_),  # command clipped to the command range or the lock
    ("steer_limiting_rate", np.bool_),  # reference still moving toward the target at its limits
    ("steer_ring", np.float64, (RING_TICKS,)),  # reference history (transport delay)
    # --- throttle pedal emulation
    ("throttle_input_pct", np.float64),  # the driver's pedal (percent_input), %
    ("throttle_cmd_pct", np.float64),  # pedal command after the rate limits (percent_cmd), %
    ("throttle_report_type", np.int64),  # cmd_type the report shows (PEDAL_*)
    ("throttle_cmd_src", np.int64),  # 0 user / driver, 1 ULC (ds_dbw CmdSrc)
    ("throttle_ring", np.float64, (RING_TICKS,)),  # pedal command history (delay)
    # --- brake
    ("brake_input_bar", np.float64),  # the driver's line pressure (pressure_input), bar
    ("brake_cmd_bar", np.float64),  # pressure command after the rate limits (pressure_cmd), bar
    ("brake_pressure_bar", np.float64),  # modelled line pressure before the bias, bar
    ("brake_rate_bar_s", np.float64),  # its rate of change, bar/s
    ("brake_report_type", np.int64),  # cmd_type the report shows (PEDAL_*)
    ("brake_cmd_src", np.int64),  # 0 user / driver, 1 ULC
    ("brake_ring", np.float64, (RING_TICKS,)),  # pressure command history (delay)
    # --- gear actuator
    ("gear_target", np.int64),  # gear being shifted to (= gear when idle)
    ("gear_shift_left_s", np.float64),  # remaining shift time, s (0: no shift in progress)
    ("gear_cmd_report", np.int64),  # GearReport.cmd: the last accepted command
    ("gear_reject", np.int64),  # GearReport.reject of the last command (GEAR_REJECT_*)
    ("gear_driver", np.int64),  # GearReport.driver: the driver's lever
    # --- measured speeds (VehicleVelocity) and the ULC's measurement
    ("speed_brake_mps", np.float64),  # vehicle_velocity_brake: all four wheels, signed by the gear
    ("speed_propulsion_mps", np.float64),  # vehicle_velocity_propulsion: rear wheels, signed by the gear
    ("speed_primed", np.bool_),  # a previous measurement exists (for the acceleration derivative)
    ("ulc_vel_meas_mps", np.float64),  # vel_meas: speed_brake_mps + speed bias in the travel direction
    ("ulc_accel_meas_mps2", np.float64),  # accel_meas: filtered derivative of vel_meas
    # --- ULC
    ("ulc_vel_ref_mps", np.float64),  # vel_ref (signed like the speeds), m/s
    ("ulc_accel_ref_mps2", np.float64),  # accel_ref, m/s^2
    ("ulc_integral_m", np.float64),  # integral of the speed error (travel direction), m
    ("ulc_demand_mps2", np.float64),  # a_ref + Kp e (travel direction), m/s^2
    ("ulc_pedal", np.int64),  # 0 none, 1 throttle, 2 brake (ULC_PEDAL_*)
    ("ulc_stop_hold", np.bool_),  # stop brake applied
    ("ulc_throttle_pct", np.float64),  # throttle the ULC asks for now, %
    ("ulc_brake_bar", np.float64),  # brake the ULC asks for now, bar
    ("ulc_throttle_out_pct", np.float64),  # its request after ulc_delay_s (what the throttle gets), %
    ("ulc_brake_out_bar", np.float64),  # likewise for the brake, bar
    ("ulc_hold_s", np.float64),  # time the actuators still follow the ULC's last output, s
    ("ulc_throttle_ring", np.float64, (RING_TICKS,)),  # request histories (ULC output latency)
    ("ulc_brake_ring", np.float64, (RING_TICKS,)),
]

DBW_STATE_NAMES = tuple(f[0] for f in DBW_STATE_FIELDS)


def dbw_state_dtype(extra_fields: list[tuple] | None = None) -> np.dtype:
    """Record dtype of ``DBW_STATE_FIELDS`` plus the vehicle fields this layer reads.

    ``extra_fields`` defaults to ``time_s`` and ``wheel_omega_rad_s`` (what a stand-alone DBW state
    needs); the vehicle builds its own dtype from all modules' field lists instead.
    """
    if extra_fields is None:
        extra_fields = [("time_s", np.float64), ("wheel_omega_rad_s", np.float64, (4,))]
    return np.dtype(DBW_STATE_FIELDS + list(extra_fields))


@njit(cache=True)
def delay_line(ring, head, value, delay_s, dt):
    """Write this tick's ``value`` at ``head`` and return the value ``delay_s`` ago.

    Sample k ticks back is ``ring[head - k]``; a delay of d = delay_s / dt ticks reads
    ring[head - floor(d)] + frac(d) (ring[head - floor(d) - 1] - ring[head - floor(d)]), so a whole
    number of ticks is an exact shift and 0 passes ``value`` through. d is clamped to
    [0, RING_TICKS - 1].
    """
    ring[head] = value
    lag = delay_s / dt if dt > 0.0 else 0.0
    if not lag > 0.0:  # also catches NaN
        return value
    if lag > RING_TICKS - 1:
        lag = RING_TICKS - 1.0
    k = int(math.floor(lag))
    frac = lag - k
    newer = ring[(head - k + RING_TICKS) % RING_TICKS]
    if frac == 0.0:
        return newer
    older = ring[(head - k - 1 + 2 * RING_TICKS) % RING_TICKS]
    return newer + frac * (older - newer)


@njit(cache=True)
def fill_ring(ring, value):
    """Set every sample of a delay line to ``value`` (a history that has always been ``value``)."""
    for i in range(RING_TICKS):
        ring[i] = value
