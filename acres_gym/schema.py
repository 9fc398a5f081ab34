"""The parameter schema: every vehicle parameter, its JSON key, record field, unit and allowed range.

One row per value of the seed's ``FUtvParameters`` and ``FDbwParameters`` (``seeds/002_*.txt``) plus the
tyre, suspension and wheel values the seed's shared wheel code (``FVehicleParameters``) needs. The
vehicle JSON (``configs/vehicles/*.json``) is nested by the dotted ``key``; every leaf there is
``{"value": ..., "unit": ..., "source": ...}``. The record field (``field``) is the name kernels use.

Rows are ``Param(key, field, unit, lo, hi, kind)``: ``kind`` is ``"f"`` (float), ``"i"`` (integer) or
``"b"`` (boolean, stored 0/1); ``lo``/``hi`` are inclusive bounds checked on load and on
``set_parameter``. ``DERIVED`` lists the fields ``finalize_parameters`` computes; they are not in JSON.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

INF = float("inf")
MAX_TORQUE_POINTS = 16  # fixed length of the torque-curve arrays in the record


@dataclass(frozen=True)
class Param:
    key: str  # dotted JSON path without ".value"
    field: str  # record field name
    unit: str
    lo: float
    hi: float
    kind: str = "f"


def _p(key, field, unit, lo, hi, kind="f"):
    return Param(key, field, unit, lo, hi, kind)


POS = 1e-12  # "strictly positive" lower bound

SCHEMA: tuple[Param, ...] = (
    # --- dimensions
    _p("dimensions.wheelbase_m", "wheelbase_m", "m", 0.5, 6.0),
    _p("dimensions.track_front_m", "track_front_m", "m", 0.5, 3.0),
    _p("dimensions.track_rear_m", "track_rear_m", "m", 0.5, 3.0),
    _p("dimensions.ground_clearance_m", "ground_clearance_m", "m", 0.05, 1.0),
    _p("dimensions.underbody_half_width_m", "underbody_half_width_m", "m", 0.05, 1.5),
    _p("dimensions.underbody_friction", "underbody_friction", "1", 0.0, 2.0),
    # --- mass build-up (seed FUtvParameters)
    _p("mass.dry_kg", "dry_mass_kg", "kg", POS, 10000.0),
    _p("mass.fluids_kg", "fluids_kg", "kg", 0.0, 1000.0),
    _p("mass.roof_equipment_kg", "roof_equipment_kg", "kg", 0.0, 1000.0),
    _p("mass.bay_equipment_kg", "bay_equipment_kg", "kg", 0.0, 1000.0),
    _p("mass.occupant_kg", "occupant_kg", "kg", 0.0, 300.0),
    _p("mass.occupants", "occupants", "1", 0, 6, "i"),
    _p("mass.cargo_kg", "cargo_kg", "kg", 0.0, 2000.0),
    _p("mass.dry_cg_forward_m", "dry_cg_forward_m", "m", -3.0, 6.0),
    _p("mass.dry_cg_left_m", "dry_cg_left_m", "m", -1.5, 1.5),
    _p("mass.dry_cg_height_m", "dry_cg_height_m", "m", POS, 3.0),
    _p("mass.dry_gyration_roll_m", "dry_gyration_roll_m", "m", POS, 5.0),
    _p("mass.dry_gyration_pitch_m", "dry_gyration_pitch_m", "m", POS, 5.0),
    _p("mass.dry_gyration_yaw_m", "dry_gyration_yaw_m", "m", POS, 5.0),
    _p("mass.fluids_x_m", "fluids_x_m", "m", -3.0, 6.0),
    _p("mass.fluids_y_m", "fluids_y_m", "m", -1.5, 1.5),
    _p("mass.fluids_z_m", "fluids_z_m", "m", 0.0, 3.0),
    _p("mass.roof_x_m", "roof_x_m", "m", -3.0, 6.0),
    _p("mass.roof_y_m", "roof_y_m", "m", -1.5, 1.5),
    _p("mass.roof_z_m", "roof_z_m", "m", 0.0, 3.5),
    _p("mass.bay_x_m", "bay_x_m", "m", -3.0, 6.0),
    _p("mass.bay_y_m", "bay_y_m", "m", -1.5, 1.5),
    _p("mass.bay_z_m", "bay_z_m", "m", 0.0, 3.0),
    _p("mass.seat_front_x_m", "seat_front_x_m", "m", -3.0, 6.0),
    _p("mass.seat_rear_x_m", "seat_rear_x_m", "m", -3.0, 6.0),
    _p("mass.seat_lateral_m", "seat_lateral_m", "m", 0.0, 1.5),
    _p("mass.occupant_z_m", "occupant_z_m", "m", 0.0, 3.0),
    _p("mass.cargo_x_m", "cargo_x_m", "m", -3.0, 6.0),
    _p("mass.cargo_y_m", "cargo_y_m", "m", -1.5, 1.5),
    _p("mass.cargo_z_m", "cargo_z_m", "m", 0.0, 3.0),
    # --- suspension, per corner
    _p("suspension.travel_m", "travel_m", "m", POS, 1.0),
    _p("suspension.droop_m", "droop_m", "m", 0.0, 1.0),
    _p("suspension.front_wheel_rate_n_m", "front_wheel_rate_n_m", "N/m", POS, 1e6),
    _p("suspension.rear_wheel_rate_n_m", "rear_wheel_rate_n_m", "N/m", POS, 1e6),
    _p("suspension.damping_ratio", "damping_ratio", "1", 0.0, 2.0),
    _p("suspension.bump_stop_length_m", "bump_stop_length_m", "m", 0.0, 0.5),
    _p("suspension.bump_stop_rate_n_m2", "bump_stop_rate_n_m2", "N/m^2", 0.0, 1e9),
    # --- tyres
    _p("tyre.radius_m", "tyre_radius_m", "m", 0.1, 1.5),
    _p("tyre.front_width_m", "front_tyre_width_m", "m", 0.05, 1.0),
    _p("tyre.rear_width_m", "rear_tyre_width_m", "m", 0.05, 1.0),
    _p("tyre.section_m", "tyre_section_m", "m", 0.02, 1.0),
    _p("tyre.inflation_kpa", "tyre_inflation_kpa", "kPa", 5.0, 1000.0),
    _p("tyre.carcass_pressure_kpa", "tyre_carcass_pressure_kpa", "kPa", 0.0, 500.0),
    _p("tyre.hysteresis", "tyre_hysteresis", "1", 0.0, 5.0),
    _p("tyre.lug_height_m", "tyre_lug_height_m", "m", 0.0, 0.1),
    _p("tyre.lug_area_share", "tyre_lug_area_share", "1", 0.0, 1.0),
    _p("tyre.shear_compliance_m", "tyre_shear_compliance_m", "m", 0.0, 0.5),
    _p("tyre.cornering_stiffness_per_rad", "cornering_stiffness_per_rad", "1/rad", POS, 50.0),
    _p("tyre.lateral_relaxation_m", "lateral_relaxation_m", "m", 0.01, 2.0),
    _p("tyre.longitudinal_relaxation_m", "longitudinal_relaxation_m", "m", 0.01, 2.0),
    _p("tyre.slip_stiffness", "slip_stiffness", "1", POS, 100.0),
    _p("tyre.spin_inertia_kg_m2", "wheel_inertia_kg_m2", "kg m^2", POS, 50.0),
    # lower bound: a very soft flotation tyre; finalize_parameters also keeps the static deflection at the
    # heaviest corner within half the section height (STATIC_DEFLECTION_SHARE)
    _p("tyre.vertical_stiffness_n_m", "tyre_vertical_stiffness_n_m", "N/m", 2e4, 1e7),
    _p("tyre.vertical_damping_n_s_m", "tyre_vertical_damping_n_s_m", "N s/m", 0.0, 1e5),
    _p("tyre.contact_damping_ratio", "tyre_contact_damping_ratio", "1", 0.0, 2.0),
    _p("tyre.rolling_resistance", "rolling_resistance", "1", 0.0, 0.5),
    # --- steering
    _p("steering.ratio", "steering_ratio", "1", POS, 100.0),
    _p("steering.center_deg", "steering_center_deg", "deg", -90.0, 90.0),
    # --- engine
    _p("engine.idle_rpm", "idle_rpm", "rpm", 100.0, 5000.0),
    _p("engine.max_rpm", "max_rpm", "rpm", 500.0, 20000.0),
    _p("engine.inertia_kg_m2", "engine_inertia_kg_m2", "kg m^2", POS, 10.0),
    _p("engine.accessory_nm", "accessory_nm", "N m", 0.0, 100.0),
    _p("engine.displacement_l", "displacement_l", "L", POS, 20.0),
    _p("engine.indicated_efficiency", "indicated_efficiency", "1", 0.05, 0.6),
    _p("engine.fmep_a_bar", "fmep_a_bar", "bar", 0.0, 5.0),
    _p("engine.fmep_b_bar_per_krpm", "fmep_b_bar_per_krpm", "bar/krpm", 0.0, 2.0),
    _p("engine.fmep_c_bar_per_krpm2", "fmep_c_bar_per_krpm2", "bar/krpm^2", 0.0, 1.0),
    _p("engine.pumping_bar", "pumping_bar", "bar", 0.0, 3.0),
    _p("engine.tau_s", "engine_tau_s", "s", 0.0, 2.0),
    _p("engine.idle_gain", "idle_gain", "1", 0.0, 100.0),
    _p("engine.pedal_exponent", "pedal_exponent", "1", 0.1, 5.0),
    _p("engine.top_speed_mps", "top_speed_mps", "m/s", 0.0, 100.0),
    # --- fuel
    _p("fuel.lhv_mj_kg", "fuel_lhv_mj_kg", "MJ/kg", 1.0, 150.0),
    _p("fuel.density_kg_l", "fuel_density_kg_l", "kg/L", 0.1, 2.0),
    _p("fuel.tank_l", "fuel_tank_l", "L", 0.0, 1000.0),
    _p("fuel.initial_l", "fuel_initial_l", "L", 0.0, 1000.0),
    # --- CVT
    _p("cvt.low_ratio", "cvt_low_ratio", "1", POS, 10.0),
    _p("cvt.high_ratio", "cvt_high_ratio", "1", POS, 10.0),
    _p("cvt.initial_ratio", "cvt_initial_ratio", "1", POS, 10.0),
    _p("cvt.engage_rpm", "engage_rpm", "rpm", 0.0, 10000.0),
    _p("cvt.full_engage_rpm", "full_engage_rpm", "rpm", 0.0, 15000.0),
    _p("cvt.clutch_capacity_nm", "clutch_capacity_nm", "N m", POS, 5000.0),
    _p("cvt.ebs_capacity_nm", "ebs_capacity_nm", "N m", 0.0, 5000.0),
    _p("cvt.shift_light_rpm", "shift_light_rpm", "rpm", 100.0, 20000.0),
    _p("cvt.shift_full_rpm", "shift_full_rpm", "rpm", 100.0, 20000.0),
    _p("cvt.shift_tau_s", "cvt_shift_tau_s", "s", 0.001, 10.0),
    _p("cvt.belt_efficiency", "belt_efficiency", "1", 0.3, 1.0),
    _p("cvt.gear_efficiency", "gear_efficiency", "1", 0.3, 1.0),
    _p("cvt.secondary_inertia_kg_m2", "secondary_inertia_kg_m2", "kg m^2", 0.0, 10.0),
    # --- gearbox and driveline
    _p("driveline.ebs", "ebs", "bool", 0, 1, "b"),
    _p("driveline.adc", "adc", "bool", 0, 1, "b"),
    _p("driveline.rear_low_ratio", "rear_low_ratio", "1", POS, 200.0),
    _p("driveline.rear_high_ratio", "rear_high_ratio", "1", POS, 200.0),
    _p("driveline.rear_reverse_ratio", "rear_reverse_ratio", "1", POS, 200.0),
    _p("driveline.front_low_ratio", "front_low_ratio", "1", POS, 200.0),
    _p("driveline.front_high_ratio", "front_high_ratio", "1", POS, 200.0),
    _p("driveline.front_reverse_ratio", "front_reverse_ratio", "1", POS, 200.0),
    _p("driveline.front_drive_ratio", "front_drive_ratio", "1", POS, 50.0),
    _p("driveline.front_ring_ratio", "front_ring_ratio", "1", 0.5, 1.5),
    _p("driveline.park_hold_nm", "park_hold_nm", "N m", 0.0, 1e6),
    _p("driveline.default_gear", "default_gear", "enum", 1, 5, "i"),
    _p("driveline.default_drive_mode", "default_drive_mode", "enum", 0, 2, "i"),
    _p("driveline.bearing_drag_nm", "bearing_drag_nm", "N m", 0.0, 50.0),
    # --- brakes
    _p("brakes.front_nm_per_bar", "front_brake_nm_per_bar", "N m/bar", 0.0, 1000.0),
    _p("brakes.rear_nm_per_bar", "rear_brake_nm_per_bar", "N m/bar", 0.0, 1000.0),
    # --- aerodynamics
    _p("aero.drag_area_m2", "drag_area_m2", "m^2", 0.0, 20.0),
    _p("aero.air_density_kg_m3", "air_density_kg_m3", "kg/m^3", 0.0, 2.0),
    # --- drive-by-wire (seed FDbwParameters)
    _p("dbw.steering.default_rate_deg_s", "steer_default_rate_deg_s", "deg/s", POS, 5000.0),
    _p("dbw.steering.default_accel_deg_s2", "steer_default_accel_deg_s2", "deg/s^2", POS, 1e5),
    _p("dbw.steering.delay_s", "steer_delay_s", "s", 0.0, 0.5),
    _p("dbw.steering.tau_s", "steer_tau_s", "s", 0.0, 2.0),
    _p("dbw.steering.slew_deg_s", "steer_slew_deg_s", "deg/s", POS, 5000.0),
    _p("dbw.steering.lock_deg", "steer_lock_deg", "deg", POS, 2000.0),
    _p("dbw.steering.command_deg", "steer_command_deg", "deg", POS, 2000.0),
    _p("dbw.steering.max_curvature_per_m", "max_curvature_per_m", "1/m", POS, 10.0),
    _p("dbw.steering.max_yaw_rate_rad_s", "max_yaw_rate_rad_s", "rad/s", POS, 50.0),
    _p("dbw.steering.kinematic_ratio", "kinematic_ratio", "1", 0.0, 100.0),
    _p("dbw.steering.kinematic_wheelbase_m", "kinematic_wheelbase_m", "m", 0.0, 10.0),
    _p("dbw.command_timeout_s", "command_timeout_s", "s", POS, 10.0),
    _p("dbw.ulc_actuator_timeout_s", "ulc_actuator_timeout_s", "s", 0.0, 10.0),
    _p("dbw.throttle.delay_s", "throttle_delay_s", "s", 0.0, 0.5),
    _p("dbw.throttle.default_rate_pct_s", "throttle_default_rate_pct_s", "%/s", 0.0, 1e5),
    _p("dbw.brake.max_bar", "brake_max_bar", "bar", POS, 300.0),
    _p("dbw.brake.delay_s", "brake_delay_s", "s", 0.0, 0.5),
    _p("dbw.brake.slew_bar_s", "brake_slew_bar_s", "bar/s", POS, 1e5),
    _p("dbw.brake.apply_accel_bar_s2", "brake_apply_accel_bar_s2", "bar/s^2", POS, 1e7),
    _p("dbw.brake.release_tau_s", "brake_release_tau_s", "s", POS, 10.0),
    _p("dbw.brake.release_exponent", "brake_release_exponent", "1", 0.0, 5.0),
    _p("dbw.gear.shift_s", "gear_shift_s", "s", 0.0, 10.0),
    _p("dbw.gear.shift_max_speed_mps", "gear_shift_max_speed_mps", "m/s", 0.0, 50.0),
    _p("dbw.ulc.default_accel_mps2", "ulc_default_accel_mps2", "m/s^2", 0.3, 3.0),
    _p("dbw.ulc.default_decel_mps2", "ulc_default_decel_mps2", "m/s^2", 0.3, 6.0),
    _p("dbw.ulc.default_jerk_throttle_mps3", "ulc_default_jerk_throttle_mps3", "m/s^3", 1.0, 25.0),
    _p("dbw.ulc.default_jerk_brake_mps3", "ulc_default_jerk_brake_mps3", "m/s^3", 1.0, 25.0),
    _p("dbw.ulc.kp_per_s", "ulc_kp_per_s", "1/s", 0.0, 50.0),
    _p("dbw.ulc.delay_s", "ulc_delay_s", "s", 0.0, 0.5),
    _p("dbw.ulc.throttle_offset_pct", "ulc_throttle_offset_pct", "%", -100.0, 100.0),
    _p("dbw.ulc.throttle_accel_pct", "ulc_throttle_accel_pct", "%/(m/s^2)", 0.0, 200.0),
    _p("dbw.ulc.throttle_speed_pct", "ulc_throttle_speed_pct", "%/(m/s)", 0.0, 200.0),
    _p("dbw.ulc.throttle_integral_pct", "ulc_throttle_integral_pct", "%/m", 0.0, 200.0),
    _p("dbw.ulc.integral_limit_m", "ulc_integral_limit_m", "m", 0.0, 100.0),
    _p("dbw.ulc.launch_speed_mps", "ulc_launch_speed_mps", "m/s", POS, 20.0),
    _p("dbw.ulc.throttle_on_mps2", "ulc_throttle_on_mps2", "m/s^2", -5.0, 5.0),
    _p("dbw.ulc.brake_on_mps2", "ulc_brake_on_mps2", "m/s^2", -5.0, 5.0),
    _p("dbw.ulc.mass_kg", "ulc_mass_kg", "kg", POS, 10000.0),
    _p("dbw.ulc.stop_brake_pct", "ulc_stop_brake_pct", "%", 0.0, 100.0),
    _p("dbw.ulc.stop_speed_mps", "ulc_stop_speed_mps", "m/s", 0.0, 5.0),
    _p("dbw.speed_scale", "speed_scale", "1", 0.1, 2.0),
    _p("dbw.bias.ulc_speed_mps", "ulc_speed_bias_mps", "m/s", -10.0, 10.0),
    _p("dbw.bias.throttle_pct", "throttle_bias_pct", "%", -100.0, 100.0),
    _p("dbw.bias.brake_bar", "brake_bias_bar", "bar", -300.0, 300.0),
)

# Torque curve (seed: "engine.torque_curve_rpm[i]" / "engine.torque_curve_nm[i]").
TORQUE_CURVE_RPM_KEY = "engine.torque_curve_rpm"
TORQUE_CURVE_NM_KEY = "engine.torque_curve_nm"

# Fields finalize_parameters derives (seed FinalizeUtvParameters); not in JSON.
DERIVED: tuple[tuple[str, str, tuple[int, ...]], ...] = (
    ("mass_kg", "kg", ()),
    ("cg_forward_m", "m", ()),
    ("cg_left_m", "m", ()),
    ("cg_height_m", "m", ()),
    ("ixx_kg_m2", "kg m^2", ()),
    ("iyy_kg_m2", "kg m^2", ()),
    ("izz_kg_m2", "kg m^2", ()),
    ("static_load_n", "N", (4,)),  # FL, FR, RL, RR
    ("peak_torque_nm", "N m", ()),
    # Shared wheel parameter set (seed: P.Wheel), per corner, body frame with the origin at the CG.
    ("hardpoint_x_m", "m", (4,)),
    ("hardpoint_y_m", "m", (4,)),
    ("hardpoint_z_m", "m", (4,)),
    ("wheel_rate_n_m", "N/m", (4,)),
    ("damper_n_s_m", "N s/m", (4,)),
    ("tyre_width_m", "m", (4,)),
    ("brake_nm_per_bar", "N m/bar", (4,)),
)

SCHEMA_BY_KEY = {p.key: p for p in SCHEMA}
SCHEMA_BY_FIELD = {p.field: p for p in SCHEMA}


def params_dtype() -> np.dtype:
    """Record dtype of one vehicle's parameters (all float64 but integers and booleans)."""
    fields: list[tuple] = []
    for p in SCHEMA:
        fields.append((p.field, np.int64 if p.kind in ("i", "b") else np.float64))
    fields.append(("torque_curve_rpm", np.float64, (MAX_TORQUE_POINTS,)))
    fields.append(("torque_curve_nm", np.float64, (MAX_TORQUE_POINTS,)))
    fields.append(("torque_curve_count", np.int64))
    for name, _unit, shape in DERIVED:
        fields.append((name, np.float64, shape) if shape else (name, np.float64))
    return np.dtype(fields)


PARAMS_DTYPE = params_dtype()
# One dtype object for every parameter array: numba looks array types up by their dtype, and equal but
# distinct dtype objects cost a slow comparison on every jitted call.
PARAMS_RECORD_DTYPE = np.dtype((np.record, PARAMS_DTYPE))
