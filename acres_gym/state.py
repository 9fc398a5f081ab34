"""The vehicle state record: everything the Ranger model integrates between ticks (seed ``FUtvState``).

One flat numpy record per vehicle, assembled from the field lists of the subsystems so each module
owns the fields it integrates. Per-wheel fields have shape (4,) in the seed's order FL, FR, RL, RR.
Units are in the names (SI inside the model; the DBW fields keep the message units).
"""

from __future__ import annotations

import numpy as np

from acres_gym.dbw.state import DBW_STATE_FIELDS

f8, i8, b1 = np.float64, np.int64, np.bool_

CHASSIS_FIELDS = [
    ("time_s", f8),
    ("tick", i8),
    ("position_m", f8, (3,)),  # CG position, world frame (x east/forward at spawn, y left, z up)
    ("orientation_wxyz", f8, (4,)),  # unit quaternion, body to world
    ("velocity_mps", f8, (3,)),  # CG velocity, world frame
    ("angular_velocity_rad_s", f8, (3,)),  # body frame (roll, pitch, yaw rates)
    ("acceleration_mps2", f8, (3,)),  # CG acceleration over the last tick, world frame
    ("terrain_index", i8),  # which terrain of the stack this vehicle drives on
    ("rolled_over", b1),  # body tilted beyond ROLLOVER_TILT_DEG
    ("diverged", b1),  # the model left its validity (diverged_reason says how); the vehicle is frozen
    ("diverged_reason", i8),  # constants.DIVERGED_*: non-finite, speed, below ground
    ("tyre_bottomed", b1),  # a tyre deflected beyond its section height since the reset (a rim strike; the
    #                         tyre force is extrapolated there): an event, the vehicle drives on
]

WHEEL_FIELDS = [
    ("wheel_omega_rad_s", f8, (4,)),  # spin rate
    ("road_wheel_angle_rad", f8, (4,)),  # steer angle of each wheel (rears 0)
    ("road_wheel_rad", f8, ()),  # bicycle-model steer angle (seed RoadWheelRad)
    ("suspension_compression_m", f8, (4,)),  # from full droop
    ("suspension_rate_mps", f8, (4,)),  # compression rate
    ("tyre_deflection_m", f8, (4,)),  # vertical tyre deflection
    ("normal_load_n", f8, (4,)),
    ("in_contact", np.uint8, (4,)),  # 0/1
    ("contact_point_m", f8, (4, 3)),  # world frame
    ("contact_normal", f8, (4, 3)),  # world frame
    ("tyre_fx_n", f8, (4,)),  # longitudinal force, wheel frame (+ forward)
    ("tyre_fy_n", f8, (4,)),  # lateral force, wheel frame (+ left)
    ("tyre_long_deflection_m", f8, (4,)),  # transient-slip (brush) deflection, longitudinal
    ("tyre_lat_deflection_m", f8, (4,)),  # transient-slip (brush) deflection, lateral
    ("wheel_long_speed_mps", f8, (4,)),  # contact-point velocity along the wheel heading
    ("wheel_lat_speed_mps", f8, (4,)),  # contact-point velocity across the wheel heading
    ("slip_ratio", f8, (4,)),  # seed Slip()
    ("slip_angle_rad", f8, (4,)),
    ("friction_limit_n", f8, (4,)),  # mu N on hard ground, max shear on soil
    ("surface_id", i8, (4,)),
    ("surface_wetness", f8, (4,)),
    ("brake_torque_nm", f8, (4,)),  # brake torque capacity this tick
    ("resist_torque_nm", f8, (4,)),  # all friction torque capacity (brake, rolling, soil, bearing)
    ("shaft_torque_nm", f8, (4,)),  # driveline torque delivered to the wheel
    ("sinkage_m", f8, (4,)),  # soil
    ("motion_resistance_n", f8, (4,)),  # compaction + hysteresis on soil, rolling resistance on hard ground
    ("gross_thrust_n", f8, (4,)),  # soil shear force of the patch (tyre_fx_n on soil)
    ("soil_compaction_n", f8, (4,)),  # compaction resistance of fresh soil (before the multi-pass credit)
    # linearised wheel-spin model of this tick, T_shaft(w) = a + b w + f sgn(w) (driveline solve input)
    ("wheel_lin_a_nm", f8, (4,)),
    ("wheel_lin_b_nm_s", f8, (4,)),
    ("wheel_lin_fx0_n", f8, (4,)),
    ("wheel_lin_dfx_n_s", f8, (4,)),
    ("wheel_free_omega_rad_s", f8, (4,)),
    ("wheel_end_omega_rad_s", f8, (4,)),  # driveline solution (settle phase input)
    ("wheel_end_shaft_nm", f8, (4,)),
    # tyre model coefficients of this tick (prepare phase -> settle phase)
    ("tyre_dir_x", f8, (4, 3)),  # wheel heading in the ground plane, world frame
    ("tyre_dir_y", f8, (4, 3)),  # ground normal x heading, world frame
    ("tyre_decay_x", f8, (4,)),
    ("tyre_gain_x_s", f8, (4,)),
    ("tyre_stiffness_x_n_m", f8, (4,)),
    ("tyre_damping_x_n_s_m", f8, (4,)),
    ("tyre_relax_x_per_s", f8, (4,)),
    ("tyre_demand_y_n", f8, (4,)),
    ("tyre_shape", i8, (4,)),
    ("rolling_radius_m", f8, (4,)),
    ("friction_brake_share", f8, (4,)),  # share of resist_torque_nm that is brake (ledger split)
    ("friction_soil_share", f8, (4,)),  # share that is soil compaction and carcass hysteresis
    ("elastic_energy_j", f8, (4,)),  # spring, bump stop and tyre, relative to the static spring
]

POWERTRAIN_FIELDS = [
    ("engine_rpm", f8),
    ("engine_request", f8),  # seed EngineRequest, 0..1 after the throttle lag
    ("fuelled", b1),
    ("pedal_input", f8),  # pedal the engine saw, 0..1
    ("engine_torque_nm", f8),  # brake torque (indicated - friction - pumping)
    ("indicated_torque_nm", f8),
    ("friction_torque_nm", f8),
    ("pumping_torque_nm", f8),
    ("drag_torque_nm", f8),  # friction + pumping + accessory
    ("free_engine_rad_s", f8),  # engine speed at the end of the tick with the clutch open
    ("engine_power_w", f8),
    ("cvt_ratio", f8),
    ("belt_torque_nm", f8),  # clutch torque as the secondary's helix feels it (filtered), N m
    ("drive_ratio", f8),  # signed belt x gearbox ratio R (engine = R x carrier when the clutch holds)
    ("clutch_forward_nm", f8),
    ("clutch_reverse_nm", f8),
    ("clutch_torque_nm", f8),  # transmitted this tick (+ engine drives)
    ("clutch_slip_rad_s", f8),
    ("carrier_omega_rad_s", f8),  # rear carrier (wheel-speed units)
    ("carrier_torque_nm", f8),  # delivered by the transmission to the rear carrier
    ("front_ring_ratio", f8),  # seed FrontRingRatio
    ("front_engaged", np.uint8, (2,)),  # 0/1 per front wheel
    ("front_ring_torque_nm", f8),
    ("adc_active", b1),
    ("parked", b1),
    ("park_torque_nm", f8),
    ("fuel_used_kg", f8),
    ("fuel_remaining_l", f8),
    ("fuel_rate_g_s", f8),
    ("secondary_omega_rad_s", f8),
]

LEDGER_FIELDS = [
    # cumulative energy since reset, J (seed FEnergyFlows); see acres_gym.model.ledger
    ("e_fuel_j", f8),
    ("e_thermal_j", f8),
    ("e_engine_friction_j", f8),
    ("e_pumping_j", f8),
    ("e_accessory_j", f8),
    ("e_clutch_slip_j", f8),
    ("e_belt_gear_j", f8),
    ("e_brake_j", f8),
    ("e_rolling_j", f8),
    ("e_soil_j", f8),
    ("e_tyre_slip_j", f8),
    ("e_damper_j", f8),
    ("e_aero_j", f8),
    ("e_park_j", f8),
    ("e_external_j", f8),  # work of the external carrier torque (an input, counted as energy in)
    ("e_stored0_j", f8),  # stored energy at reset
    ("e_stored_j", f8),  # stored energy now (kinetic, potential, spin, elastic)
]

SCRATCH_FIELDS = [
    # per-tick intermediates of the chassis step
    ("force_world_n", f8, (3,)),
    ("torque_body_nm", f8, (3,)),
    ("chassis_work_j", f8),  # work of the tyre forces on the chassis this tick (for the ledger)
]


def _merge(*lists):
    seen: dict[str, tuple] = {}
    for fields in lists:
        for field in fields:
            if field[0] in seen:
                if seen[field[0]] != field:
                    raise TypeError(f"state field {field[0]!r} defined twice with different types")
                continue
            seen[field[0]] = field
    return list(seen.values())


STATE_FIELDS = _merge(CHASSIS_FIELDS, WHEEL_FIELDS, POWERTRAIN_FIELDS, LEDGER_FIELDS, SCRATCH_FIELDS,
                      DBW_STATE_FIELDS)
STATE_DTYPE = np.dtype(STATE_FIELDS)
# One dtype object for every state array (numba looks array types up by their dtype object).
STATE_RECORD_DTYPE = np.dtype((np.record, STATE_DTYPE))


def make_state(n: int) -> np.recarray:
    """N zeroed state records (``RangerSim.reset`` puts them at rest before stepping)."""
    return np.zeros(n, STATE_RECORD_DTYPE).view(np.recarray)
