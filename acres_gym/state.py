"""The vehicle state record: everything the Ranger model integrates between ticks (seed ``FUtvState``).

One flat numpy record per vehicle, declared once as a spec (``acres_gym.records.Field``: name, dtype,
shape, unit, rest value, owning subsystem) per subsystem; the dtype, the reset template and the
documentation derive from ``STATE_SPEC``. Per-wheel fields have shape (4,) in the seed's order FL, FR,
RL, RR. Units are in the names (SI inside the model; the DBW fields keep the message units).

Reset (``acres_gym.sim.reset_vehicles``) copies ``STATE_TEMPLATE`` (every field at its rest value) and then
runs a jitted pass for the fields whose rest value is ``FROM_PARAMS`` (they depend on the parameters or
on the spawn pose: seed ``ResetUtv``).
"""

from __future__ import annotations

import numpy as np

from acres_gym.dbw.spec import DBW_STATE_SPEC
from acres_gym.records import FROM_PARAMS, Field, make_template, spec_dtype

f8, i8, b1, u1 = np.float64, np.int64, np.bool_, np.uint8
P = FROM_PARAMS


def _spec(owner: str, rows) -> tuple[Field, ...]:
    """Fields of one subsystem from rows (name, dtype, shape, unit, rest, doc)."""
    return tuple(Field(name, dtype, shape, unit, rest, owner, doc) for name, dtype, shape, unit, rest, doc in rows)


CHASSIS_SPEC = _spec("chassis", [
    ("time_s", f8, (), "s", 0, ""),
    ("tick", i8, (), "tick", 0, ""),
    ("position_m", f8, (3,), "m", P, "CG position, world frame (x east/forward at spawn, y left, z up)"),
    ("orientation_wxyz", f8, (4,), "1", P, "unit quaternion, body to world"),
    ("velocity_mps", f8, (3,), "m/s", 0, "CG velocity, world frame"),
    ("angular_velocity_rad_s", f8, (3,), "rad/s", 0, "body frame (roll, pitch, yaw rates)"),
    ("acceleration_mps2", f8, (3,), "m/s^2", 0, "CG acceleration over the last tick, world frame"),
    ("terrain_index", i8, (), "index", P, "which terrain of the stack this vehicle drives on"),
    ("rolled_over", b1, (), "bool", 0, "body tilted beyond ROLLOVER_TILT_DEG"),
    ("diverged", b1, (), "bool", 0, "the model left its validity (diverged_reason says how); the vehicle is frozen"),
    ("diverged_reason", i8, (), "enum", 0, "constants.DIVERGED_*: non-finite, speed, below ground"),
    ("tyre_bottomed", b1, (), "bool", 0, "a tyre deflected beyond its section height since the reset (a rim "
     "strike; the tyre force is extrapolated there): an event, the vehicle drives on"),
    ("high_centred", b1, (), "bool", 0, "the underbody rests on the ground this tick (model/underbody.py)"),
    ("underbody_load_n", f8, (), "N", 0, "normal force of the ground on the underbody"),
])

WHEEL_SPEC = _spec("wheel", [
    ("wheel_omega_rad_s", f8, (4,), "rad/s", 0, "spin rate"),
    ("road_wheel_angle_rad", f8, (4,), "rad", 0, "steer angle of each wheel (rears 0)"),
    ("road_wheel_rad", f8, (), "rad", 0, "bicycle-model steer angle (seed RoadWheelRad)"),
    ("suspension_compression_m", f8, (4,), "m", P, "from full droop"),
    ("suspension_rate_mps", f8, (4,), "m/s", 0, "compression rate"),
    ("tyre_deflection_m", f8, (4,), "m", P, "vertical tyre deflection"),
    ("normal_load_n", f8, (4,), "N", P, ""),
    ("in_contact", u1, (4,), "bool", 1, "0/1"),
    ("contact_point_m", f8, (4, 3), "m", 0, "world frame"),
    ("contact_normal", f8, (4, 3), "1", 0, "world frame"),
    ("tyre_fx_n", f8, (4,), "N", 0, "longitudinal force, wheel frame (+ forward)"),
    ("tyre_fy_n", f8, (4,), "N", 0, "lateral force, wheel frame (+ left)"),
    ("tyre_long_deflection_m", f8, (4,), "m", 0, "transient-slip (brush) deflection, longitudinal"),
    ("tyre_lat_deflection_m", f8, (4,), "m", 0, "transient-slip (brush) deflection, lateral"),
    ("wheel_long_speed_mps", f8, (4,), "m/s", 0, "contact-point velocity along the wheel heading"),
    ("wheel_lat_speed_mps", f8, (4,), "m/s", 0, "contact-point velocity across the wheel heading"),
    ("slip_ratio", f8, (4,), "1", 0, "seed Slip()"),
    ("slip_angle_rad", f8, (4,), "rad", 0, ""),
    ("friction_limit_n", f8, (4,), "N", 0, "mu N on hard ground, max shear on soil"),
    ("surface_id", i8, (4,), "id", 0, ""),
    ("surface_wetness", f8, (4,), "1", 0, ""),
    ("brake_torque_nm", f8, (4,), "N m", 0, "brake torque capacity this tick"),
    ("resist_torque_nm", f8, (4,), "N m", 0,
     "all friction torque capacity (brake, rolling resistance on hard ground, bearing)"),
    ("shaft_torque_nm", f8, (4,), "N m", 0, "driveline torque delivered to the wheel"),
    ("sinkage_m", f8, (4,), "m", 0, "soil"),
    ("motion_resistance_n", f8, (4,), "N", 0, "compaction + hysteresis on soil, rolling resistance on hard ground"),
    ("gross_thrust_n", f8, (4,), "N", 0, "soil shear force of the patch (tyre_fx_n on soil)"),
    ("contact_resistance_n", f8, (4,), "N", 0, "soil motion resistance applied at the contact this tick, along "
     "the wheel heading (- opposes forward travel); set-valued at rest, so 0 on a parked vehicle"),
    ("soil_compaction_n", f8, (4,), "N", 0, "compaction resistance of fresh soil (before the multi-pass credit)"),
    ("rolling_radius_m", f8, (4,), "m", P, ""),
    ("elastic_energy_j", f8, (4,), "J", P, "spring, bump stop and tyre, relative to the static spring"),
])

POWERTRAIN_SPEC = _spec("powertrain", [
    ("engine_rpm", f8, (), "rpm", P, ""),
    ("engine_request", f8, (), "1", 0, "seed EngineRequest, 0..1 after the throttle lag"),
    ("fuelled", b1, (), "bool", 0, ""),
    ("pedal_input", f8, (), "1", 0, "pedal the engine saw, 0..1"),
    ("engine_torque_nm", f8, (), "N m", 0, "brake torque (indicated - friction - pumping)"),
    ("indicated_torque_nm", f8, (), "N m", 0, ""),
    ("friction_torque_nm", f8, (), "N m", 0, ""),
    ("pumping_torque_nm", f8, (), "N m", 0, ""),
    ("drag_torque_nm", f8, (), "N m", 0, "friction + pumping + accessory"),
    ("free_engine_rad_s", f8, (), "rad/s", 0, "engine speed at the end of the tick with the clutch open"),
    ("engine_power_w", f8, (), "W", 0, ""),
    ("cvt_ratio", f8, (), "1", P, ""),
    ("belt_torque_nm", f8, (), "N m", 0, "clutch torque as the secondary's helix feels it (filtered), N m"),
    ("drive_ratio", f8, (), "1", 0, "signed belt x gearbox ratio R (engine = R x carrier when the clutch holds)"),
    ("clutch_forward_nm", f8, (), "N m", 0, ""),
    ("clutch_reverse_nm", f8, (), "N m", 0, ""),
    ("clutch_torque_nm", f8, (), "N m", 0, "transmitted this tick (+ engine drives)"),
    ("clutch_slip_rad_s", f8, (), "rad/s", 0, ""),
    ("carrier_omega_rad_s", f8, (), "rad/s", 0, "rear carrier (wheel-speed units)"),
    ("carrier_torque_nm", f8, (), "N m", 0, "delivered by the transmission to the rear carrier"),
    ("front_ring_ratio", f8, (), "1", 0, "seed FrontRingRatio"),
    ("front_engaged", u1, (2,), "bool", 0, "0/1 per front wheel"),
    ("front_ring_torque_nm", f8, (), "N m", 0, ""),
    ("adc_active", b1, (), "bool", 0, ""),
    ("parked", b1, (), "bool", 0, ""),
    ("park_torque_nm", f8, (), "N m", 0, ""),
    ("fuel_used_kg", f8, (), "kg", 0, ""),
    ("fuel_remaining_l", f8, (), "L", P, ""),
    ("fuel_rate_g_s", f8, (), "g/s", 0, ""),
    ("secondary_omega_rad_s", f8, (), "rad/s", 0, ""),
])

LEDGER_SPEC = _spec("ledger", [
    # cumulative energy since reset, J (seed FEnergyFlows); see acres_gym.model.ledger
    ("e_fuel_j", f8, (), "J", 0, ""),
    ("e_thermal_j", f8, (), "J", 0, ""),
    ("e_engine_friction_j", f8, (), "J", 0, ""),
    ("e_pumping_j", f8, (), "J", 0, ""),
    ("e_accessory_j", f8, (), "J", 0, ""),
    ("e_clutch_slip_j", f8, (), "J", 0, ""),
    ("e_belt_gear_j", f8, (), "J", 0, ""),
    ("e_brake_j", f8, (), "J", 0, ""),
    ("e_rolling_j", f8, (), "J", 0, ""),
    ("e_soil_j", f8, (), "J", 0, ""),
    ("e_tyre_slip_j", f8, (), "J", 0, ""),
    ("e_damper_j", f8, (), "J", 0, ""),
    ("e_aero_j", f8, (), "J", 0, ""),
    ("e_park_j", f8, (), "J", 0, ""),
    ("e_external_j", f8, (), "J", 0, "work of the external carrier torque (an input, counted as energy in)"),
    ("e_stored0_j", f8, (), "J", P, "stored energy at reset"),
    ("e_stored_j", f8, (), "J", P, "stored energy now (kinetic, potential, spin, elastic)"),
])


STATE_SPEC: tuple[Field, ...] = CHASSIS_SPEC + WHEEL_SPEC + POWERTRAIN_SPEC + LEDGER_SPEC + DBW_STATE_SPEC
STATE_DTYPE = spec_dtype(STATE_SPEC)
# One dtype object for every state array (numba looks array types up by their dtype object).
STATE_RECORD_DTYPE = np.dtype((np.record, STATE_DTYPE))
STATE_TEMPLATE = make_template(STATE_SPEC, STATE_RECORD_DTYPE)
"""One state record at rest (``FROM_PARAMS`` fields 0): what a reset copies before its parameter pass."""


def make_state(n: int) -> np.recarray:
    """N state records at their rest values (``RangerSim.reset`` then runs the parameter pass)."""
    return np.repeat(STATE_TEMPLATE, n).view(np.recarray)


# Per-tick intermediates: written and read within one tick (one phase of the tick hands them to the next), so
# they are not part of the vehicle's state. ``RangerSim.work`` holds one record per vehicle, allocated once.
SCRATCH_SPEC = _spec("wheel", [
    # linearised wheel-spin model of this tick, T_shaft(w) = a + b w + f sgn(w) (driveline solve input), the
    # driveline's solution (settle phase input) and the tyre model coefficients (prepare -> settle phase)
    ("wheel_lin_a_nm", f8, (4,), "N m", 0, ""),
    ("wheel_lin_b_nm_s", f8, (4,), "N m s", 0, ""),
    ("wheel_lin_fx0_n", f8, (4,), "N", 0, ""),
    ("wheel_lin_dfx_n_s", f8, (4,), "N s", 0, ""),
    ("wheel_free_omega_rad_s", f8, (4,), "rad/s", 0, ""),
    ("wheel_end_omega_rad_s", f8, (4,), "rad/s", 0, "driveline solution (settle phase input)"),
    ("wheel_end_shaft_nm", f8, (4,), "N m", 0, ""),
    ("tyre_dir_x", f8, (4, 3), "1", 0, "wheel heading in the ground plane, world frame"),
    ("tyre_dir_y", f8, (4, 3), "1", 0, "ground normal x heading, world frame"),
    ("tyre_decay_x", f8, (4,), "1", 0, ""),
    ("tyre_gain_x_s", f8, (4,), "s", 0, ""),
    ("tyre_stiffness_x_n_m", f8, (4,), "N/m", 0, ""),
    ("tyre_damping_x_n_s_m", f8, (4,), "N s/m", 0, ""),
    ("tyre_relax_x_per_s", f8, (4,), "1/s", 0, ""),
    ("tyre_demand_y_n", f8, (4,), "N", 0, ""),
    ("tyre_shape", i8, (4,), "enum", 0, ""),
    ("friction_brake_share", f8, (4,), "1", 0, "share of resist_torque_nm that is brake (ledger split)"),
    ("soil_resistance_n", f8, (4,), "N", 0, "capacity of the soil's contact resistance (compaction and "
     "hysteresis; the chassis step applies it, set-valued at rest)"),
]) + _spec("chassis", [
    ("force_world_n", f8, (3,), "N", 0, ""),
    ("underbody_point_load_n", f8, (4,), "N", 0, "normal force at each underbody point (model/underbody.py)"),
    ("underbody_arm_m", f8, (4, 3), "m", 0, "underbody point less the CG, world frame"),
    ("underbody_normal", f8, (4, 3), "1", 0, "ground normal under each underbody point, world frame"),
    ("underbody_impulse_n_s", f8, (4, 2), "N s", 0, "friction impulse of each underbody point this tick"),
    ("contact_row", f8, (12, 7), "mixed", 0, "rows of the contact friction solve (model/chassis.py: _set_row): "
     "direction (world), r x direction (body), inverse effective mass"),
    ("torque_body_nm", f8, (3,), "N m", 0, ""),
    ("chassis_work_j", f8, (), "J", 0, "work of the tyre forces on the chassis this tick (for the ledger)"),
])
SCRATCH_DTYPE = spec_dtype(SCRATCH_SPEC)
SCRATCH_RECORD_DTYPE = np.dtype((np.record, SCRATCH_DTYPE))


def make_scratch(n: int) -> np.recarray:
    """N zeroed per-tick work records (``SCRATCH_SPEC``), one per vehicle."""
    return np.zeros(n, SCRATCH_RECORD_DTYPE).view(np.recarray)
