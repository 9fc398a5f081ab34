"""Contact phase and settle phase of one corner (seed 002 ``PrepareUtvWheel``; the seed's shared
``PrepareWheel`` / ``SettleWheels`` are this project's design).

``prepare_wheel``: ground probe, suspension and tyre load (a tyre deflected beyond its section height has
bottomed out, a rim strike: the state's ``tyre_bottomed`` records it and the vehicle drives on, the tyre's
linear force extrapolated; the rolling radius never falls below the rim's),
the surface under the wheel, friction and tyre coefficients, brake and rolling-resistance torques, and the
wheel's linearised spin model T_shaft(omega) = a + b omega + f sgn(omega) that the driveline solve needs
(``acres_gym.model.driveline``).

``settle_wheel``: with the end-of-tick spin known, the tyre deflections and forces of the tick.

Sinkage on soil is bounded by the wheel: at most the tyre radius, where the hub reaches the soil's surface
(Bekker's rigid-wheel forms are extrapolations well before that, ``acres_gym.model.soil``). A bound at the
section height (the rim at the surface) would stop the wheel short of the 0.33 m ground clearance, so a
vehicle could never rest its underbody on deep snow, where the wheels, rims and all, sink in; with the
wheel's radius as the bound the underbody meets the soil first on every soil that sinks that far
(``acres_gym.model.underbody``: high-centring).
"""

import math

from numba import njit

from acres_gym.constants import STANDARD_GRAVITY_MPS2
from acres_gym.model.brakes import brake_torque_nm
from acres_gym.model.curves import slip
from acres_gym.model.soil import effective_shear_modulus, soil_at_wetness, tyre_on_soil, tyre_shear_limit
from acres_gym.model.suspension import MIN_AXIS_COS, elastic_energy, probe_ground, spring_equilibrium
from acres_gym.model.tyre import (
    DEFLECTION_LIMIT,
    SHAPE_JANOSI,
    SHAPE_TANH,
    circle,
    contact_damping,
    relaxation,
    wet_friction,
)
from acres_gym.model.vec import cross, dot, normalize, rotate
from acres_gym.terrain.sampling import sample_surface

SINKAGE_TAU_S = 0.1  # time constant of the static sinkage (estimate: a standing tyre settles within ~0.3 s)


@njit(cache=True)
def free_spin(a, b, f):
    """End-of-tick spin with no shaft torque: the root of a + b w + f sgn(w) = 0 (0 when friction holds)."""
    if a < -f:
        return (-a - f) / b
    if a > f:
        return (-a + f) / b
    return 0.0


@njit(cache=True)
def spin_for_torque(a, b, f, shaft_torque_nm):
    """End-of-tick spin for a given shaft torque: the inverse of T(w) = a + b w + f sgn(w)."""
    if shaft_torque_nm > a + f:
        return (shaft_torque_nm - a - f) / b
    if shaft_torque_nm < a - f:
        return (shaft_torque_nm - a + f) / b
    return 0.0


@njit(cache=True)
def shaft_torque(a, b, f, omega, side):
    """Shaft torque that makes the wheel end the tick at ``omega``; at omega = 0 the friction takes the
    sign ``side`` (-1, +1) (it is set-valued there)."""
    if omega > 0.0:
        return a + b * omega + f
    if omega < 0.0:
        return a + b * omega - f
    return a + side * f


@njit(cache=True)
def _relax_sinkage(dt, sinkage_m, target_m, speed_mps, radius_m):
    """Sinkage moves toward its equilibrium as the tyre rolls into fresh ground (over about a contact
    length, taken as half the radius) or, at rest, with SINKAGE_TAU_S."""
    rate = max(1.0 / SINKAGE_TAU_S, abs(speed_mps) / (0.5 * radius_m))
    return target_m + (sinkage_m - target_m) * math.exp(-rate * dt)


@njit(cache=True)
def soil_contact(dt, i, p, s, row, wetness, load, v_long):
    """Wong's tyre on soil for wheel i (``acres_gym.model.soil``): sinkage, friction-circle radius,
    equivalent slip stiffness and the motion resistance (compaction and carcass hysteresis).

    Wong's drawbar pull is the gross thrust at the slip less the motion resistance, DP = F(i) - R_c - R_h
    (Theory of Ground Vehicles, ch. 2): the resistance is a horizontal force of the soil on the wheel at
    the contact, not a torque the engine could pay. The wheel returns its capacity; ``step_chassis``
    applies it at the contact against the contact's travel, set-valued at rest (``model/chassis.py``:
    ``contact_impulses``), so it never pushes a parked vehicle. The carcass hysteresis goes there
    too, so that a wheel's net pull is the soil module's ``drawbar_pull``.

    Multi-pass: a rear wheel running forward in the rut of the front wheel on its side compacts the soil
    only from the front's sinkage to its own, so its compaction resistance is R_c(rear) - R_c(front)
    (the compaction work per metre is b integral p dz), never below zero.
    The soil is the row's at the cell's ``wetness`` (``soil.soil_at_wetness``).
    Returns (F_max, slip stiffness per load, contact resistance N).
    """
    width = p.tyre_width_m[i]
    n, kc, kphi, cohesion, friction_deg, shear_modulus = soil_at_wetness(row, wetness)
    sinkage, length, compaction, hysteresis, _elastic = tyre_on_soil(
        load, width, p.tyre_radius_m, p.tyre_inflation_kpa * 1e3, p.tyre_carcass_pressure_kpa * 1e3,
        p.tyre_vertical_stiffness_n_m, p.tyre_hysteresis, p.tyre_section_m, n, kc, kphi)
    s.soil_compaction_n[i] = compaction
    if i >= 2 and v_long > 0.0:
        front = i - 2
        if s.in_contact[front] and s.surface_id[front] == s.surface_id[i]:
            compaction = max(0.0, compaction - s.soil_compaction_n[front])
    sinkage = min(sinkage, p.tyre_radius_m)  # the wheel's own size bounds its rut (module docstring)
    s.sinkage_m[i] = _relax_sinkage(dt, s.sinkage_m[i], sinkage, v_long, p.tyre_radius_m)
    friction_rad = friction_deg * math.pi / 180.0
    f_max = tyre_shear_limit(load, width * length, length, cohesion, friction_rad, p.tyre_lug_area_share,
                             p.tyre_lug_height_m, sinkage)
    k_eff = effective_shear_modulus(shear_modulus, p.tyre_shear_compliance_m)
    # initial slope of the Janosi curve, F_max l / (2 K), is the slip stiffness C_kappa N
    slip_stiffness = f_max * length / (2.0 * k_eff) / max(load, 1e-9)
    s.gross_thrust_n[i] = 0.0
    return f_max, slip_stiffness, compaction + hysteresis


@njit(cache=True)
def _no_contact(i, p, s, w, dt):
    s.in_contact[i] = False
    s.normal_load_n[i] = 0.0
    s.suspension_compression_m[i] = 0.0
    s.suspension_rate_mps[i] = 0.0
    s.tyre_deflection_m[i] = 0.0
    s.friction_limit_n[i] = 0.0
    w.tyre_demand_y_n[i] = 0.0
    w.tyre_stiffness_x_n_m[i] = 0.0
    w.tyre_damping_x_n_s_m[i] = 0.0
    w.tyre_decay_x[i] = 1.0
    w.tyre_gain_x_s[i] = 0.0
    w.tyre_relax_x_per_s[i] = 0.0
    s.tyre_long_deflection_m[i] = 0.0
    s.tyre_lat_deflection_m[i] = 0.0
    s.wheel_long_speed_mps[i] = 0.0
    s.wheel_lat_speed_mps[i] = 0.0
    s.rolling_radius_m[i] = p.tyre_radius_m
    s.motion_resistance_n[i] = 0.0
    s.gross_thrust_n[i] = 0.0
    s.sinkage_m[i] = 0.0
    s.soil_compaction_n[i] = 0.0
    w.soil_resistance_n[i] = 0.0


@njit(cache=True)
def prepare_wheel(dt, i, p, s, w, ground, surfaces):
    """Contact phase of wheel ``i`` (seed ``PrepareUtvWheel``) on ``ground`` (the vehicle's terrain: heights,
    surface ids, wetness, origin x, origin y, cell) with the surface table ``surfaces``; writes the wheel's
    fields of ``s``."""
    height, surface_grid, wetness_grid, origin_x, origin_y, cell = ground
    q = s.orientation_wxyz
    ux, uy, uz = rotate(q, 0.0, 0.0, 1.0)
    rx, ry, rz = rotate(q, p.hardpoint_x_m[i], p.hardpoint_y_m[i], p.hardpoint_z_m[i])
    px = s.position_m[0] + rx
    py = s.position_m[1] + ry
    pz = s.position_m[2] + rz
    wbx, wby, wbz = s.angular_velocity_rad_s[0], s.angular_velocity_rad_s[1], s.angular_velocity_rad_s[2]
    wx, wy, wz = rotate(q, wbx, wby, wbz)
    vx0, vy0, vz0 = s.velocity_mps[0], s.velocity_mps[1], s.velocity_mps[2]

    brake = brake_torque_nm(p, i, s.brake_output_bar)
    s.brake_torque_nm[i] = brake
    inertia = p.wheel_inertia_kg_m2
    omega0 = s.wheel_omega_rad_s[i]

    contact = uz > MIN_AXIS_COS
    t = 0.0
    cos_theta = 1.0
    compression = 0.0
    share = 0.0
    deflection = 0.0
    qx = qy = qz = 0.0
    nx = ny = 0.0
    nz = 1.0
    if contact:
        t, qx, qy, qz, nx, ny, nz = probe_ground(height, origin_x, origin_y, cell, px, py, pz, ux, uy, uz)
        cos_theta = dot(nx, ny, nz, ux, uy, uz)
        contact = cos_theta > MIN_AXIS_COS and t < p.travel_m + 2.0 * p.tyre_radius_m
        if contact:
            t += s.sinkage_m[i] / cos_theta  # the tyre stands at the bottom of its rut
    if contact:
        compression, share, _clamped = spring_equilibrium(p, i, t, cos_theta)
        deflection = p.tyre_radius_m - (t - p.travel_m + compression) * cos_theta
        contact = deflection > 0.0
        if deflection > p.tyre_section_m:  # the rim reached the ground: outside the tyre model
            s.tyre_bottomed = True
    if not contact:
        _no_contact(i, p, s, w, dt)
        s.elastic_energy_j[i] = elastic_energy(p, i, 0.0, 0.0)
        s.resist_torque_nm[i] = brake + p.bearing_drag_nm
        w.friction_brake_share[i] = brake / max(brake + p.bearing_drag_nm, 1e-12)
        a = -inertia * omega0 / dt
        w.wheel_lin_a_nm[i] = a
        w.wheel_lin_b_nm_s[i] = inertia / dt
        w.wheel_lin_fx0_n[i] = 0.0
        w.wheel_lin_dfx_n_s[i] = 0.0
        w.wheel_free_omega_rad_s[i] = free_spin(a, inertia / dt, s.resist_torque_nm[i])
        return

    # suspension: spring force, implicit damper, tyre vertical damping
    hvx, hvy, hvz = cross(wx, wy, wz, rx, ry, rz)
    approach = dot(vx0 + hvx, vy0 + hvy, vz0 + hvz, nx, ny, nz) / cos_theta  # dL/dt
    k_t = p.tyre_vertical_stiffness_n_m
    corner_mass = p.static_load_n[i] / STANDARD_GRAVITY_MPS2
    damper = p.damper_n_s_m[i]
    rate = -share * approach  # dc/dt
    damper_force = damper * rate / (1.0 + dt * damper * share / corner_mass)
    tyre_rate = -(approach + rate) * cos_theta  # d(delta)/dt
    tyre_damping = p.tyre_vertical_damping_n_s_m * tyre_rate
    load = k_t * deflection + tyre_damping + damper_force * cos_theta
    if load < 0.0:
        load = 0.0
    s.in_contact[i] = True
    s.elastic_energy_j[i] = elastic_energy(p, i, compression, deflection)
    s.suspension_compression_m[i] = compression
    s.suspension_rate_mps[i] = rate
    s.tyre_deflection_m[i] = deflection
    s.normal_load_n[i] = load
    s.contact_point_m[i, 0] = qx
    s.contact_point_m[i, 1] = qy
    s.contact_point_m[i, 2] = qz
    s.contact_normal[i, 0] = nx
    s.contact_normal[i, 1] = ny
    s.contact_normal[i, 2] = nz

    # wheel frame on the ground plane
    steer = s.road_wheel_angle_rad[i]
    hx, hy, hz = rotate(q, math.cos(steer), math.sin(steer), 0.0)
    hn = dot(hx, hy, hz, nx, ny, nz)
    tx, ty, tz = normalize(hx - hn * nx, hy - hn * ny, hz - hn * nz)
    lx, ly, lz = cross(nx, ny, nz, tx, ty, tz)
    w.tyre_dir_x[i, 0] = tx
    w.tyre_dir_x[i, 1] = ty
    w.tyre_dir_x[i, 2] = tz
    w.tyre_dir_y[i, 0] = lx
    w.tyre_dir_y[i, 1] = ly
    w.tyre_dir_y[i, 2] = lz
    cx_, cy_, cz_ = qx - s.position_m[0], qy - s.position_m[1], qz - s.position_m[2]
    cvx, cvy, cvz = cross(wx, wy, wz, cx_, cy_, cz_)
    vcx, vcy, vcz = vx0 + cvx, vy0 + cvy, vz0 + cvz
    v_long = dot(vcx, vcy, vcz, tx, ty, tz)
    v_lat = dot(vcx, vcy, vcz, lx, ly, lz)
    s.wheel_long_speed_mps[i] = v_long
    s.wheel_lat_speed_mps[i] = v_lat
    radius = max(p.tyre_radius_m - deflection, p.tyre_radius_m - p.tyre_section_m)  # never inside the rim
    s.rolling_radius_m[i] = radius

    # surface and friction
    sid, wet = sample_surface(surface_grid, wetness_grid, origin_x, origin_y, cell, qx, qy)
    row = surfaces[sid]
    s.surface_id[i] = sid
    s.surface_wetness[i] = wet
    sliding = math.sqrt((omega0 * radius - v_long) ** 2 + v_lat * v_lat)
    if row.is_soil != 0:
        f_max, slip_stiffness, soil_resistance = soil_contact(dt, i, p, s, row, wet, load, v_long)
        shape = SHAPE_JANOSI
        resistance = soil_resistance
        torque_resistance = 0.0  # at the contact instead (soil_contact)
    else:
        mu = wet_friction(row.mu_dry, row.mu_wet, wet, row.film_loss, row.film_speed_mps, sliding)
        f_max = mu * load
        shape = SHAPE_TANH
        slip_stiffness = p.slip_stiffness * row.slip_stiffness_scale
        resistance = p.rolling_resistance * row.rolling_resistance_scale * load
        torque_resistance = resistance
        soil_resistance = 0.0
        s.sinkage_m[i] = _relax_sinkage(dt, s.sinkage_m[i], 0.0, v_long, p.tyre_radius_m)
        s.gross_thrust_n[i] = 0.0
        s.soil_compaction_n[i] = 0.0
    s.motion_resistance_n[i] = resistance
    w.soil_resistance_n[i] = soil_resistance
    s.friction_limit_n[i] = f_max
    w.tyre_shape[i] = shape

    # transient slip: exact relaxation over the tick, demands linear in the end-of-tick spin
    rolling_speed = max(abs(v_long), abs(omega0 * radius))
    relax_x = rolling_speed / p.longitudinal_relaxation_m
    relax_y = rolling_speed / p.lateral_relaxation_m
    decay_x, gain_x = relaxation(relax_x, dt)
    decay_y, gain_y = relaxation(relax_y, dt)
    k_x = slip_stiffness * load / p.longitudinal_relaxation_m
    k_y = p.cornering_stiffness_per_rad * load / p.lateral_relaxation_m
    c_x = contact_damping(k_x, load, p.tyre_contact_damping_ratio)
    c_y = contact_damping(k_y, load, p.tyre_contact_damping_ratio)
    w1 = decay_y * s.tyre_lat_deflection_m[i] + gain_y * (-v_lat)
    f_y = k_y * w1 + c_y * (-v_lat - relax_y * w1)
    s.tyre_lat_deflection_m[i] = w1
    w.tyre_demand_y_n[i] = f_y
    w.tyre_decay_x[i] = decay_x
    w.tyre_gain_x_s[i] = gain_x
    w.tyre_stiffness_x_n_m[i] = k_x
    w.tyre_damping_x_n_s_m[i] = c_x
    w.tyre_relax_x_per_s[i] = relax_x
    u0 = decay_x * s.tyre_long_deflection_m[i] + gain_x * (omega0 * radius - v_long)
    f_x0 = k_x * u0 + c_x * (omega0 * radius - v_long - relax_x * u0)
    fx0, _fy0, dfx_dfx = circle(f_x0, f_y, f_max, shape)
    dfx_domega = dfx_dfx * radius * (k_x * gain_x + c_x * decay_x)

    # linearised spin model and the friction torques (brake, rolling resistance, bearing)
    b = inertia / dt + radius * dfx_domega
    a = radius * fx0 - b * omega0
    friction = brake + torque_resistance * radius + p.bearing_drag_nm
    s.resist_torque_nm[i] = friction
    w.friction_brake_share[i] = brake / max(friction, 1e-12)
    w.wheel_lin_a_nm[i] = a
    w.wheel_lin_b_nm_s[i] = b
    w.wheel_lin_fx0_n[i] = fx0
    w.wheel_lin_dfx_n_s[i] = dfx_domega
    w.wheel_free_omega_rad_s[i] = free_spin(a, b, friction)


@njit(cache=True)
def settle_wheel(i, p, s, w, omega1, shaft_torque_nm):
    """Settle phase of wheel ``i``: end-of-tick spin, deflections and the tyre forces of the tick.

    The longitudinal force is the linearised one the spin solve used (action equals reaction between
    wheel and ground); the lateral force comes from the friction circle at the settled demand.
    """
    omega0 = s.wheel_omega_rad_s[i]
    s.wheel_omega_rad_s[i] = omega1
    s.shaft_torque_nm[i] = shaft_torque_nm
    if not s.in_contact[i]:
        s.tyre_fx_n[i] = 0.0
        s.tyre_fy_n[i] = 0.0
        s.slip_ratio[i] = 0.0
        s.slip_angle_rad[i] = 0.0
        return
    radius = s.rolling_radius_m[i]
    v_long = s.wheel_long_speed_mps[i]
    slip_velocity = omega1 * radius - v_long
    u1 = w.tyre_decay_x[i] * s.tyre_long_deflection_m[i] + w.tyre_gain_x_s[i] * slip_velocity
    k_x = w.tyre_stiffness_x_n_m[i]
    f_x = k_x * u1 + w.tyre_damping_x_n_s_m[i] * (slip_velocity - w.tyre_relax_x_per_s[i] * u1)
    f_max = s.friction_limit_n[i]
    _fx, fy, _d = circle(f_x, w.tyre_demand_y_n[i], f_max, w.tyre_shape[i])
    fx = w.wheel_lin_fx0_n[i] + w.wheel_lin_dfx_n_s[i] * (omega1 - omega0)
    # a sliding tyre does not wind its spring up without bound
    load = s.normal_load_n[i]
    k_y = p.cornering_stiffness_per_rad * load / p.lateral_relaxation_m
    w1 = s.tyre_lat_deflection_m[i]
    spring = math.sqrt((k_x * u1) ** 2 + (k_y * w1) ** 2)
    limit = DEFLECTION_LIMIT * f_max
    if w.tyre_shape[i] == SHAPE_JANOSI:
        # the soil's curve rises up to full slip: the cap is the demand at |i| = 1, k_x sigma_x
        limit = max(limit, k_x * p.longitudinal_relaxation_m)
    if spring > limit and spring > 0.0:
        scale = limit / spring
        u1 *= scale
        s.tyre_lat_deflection_m[i] = w1 * scale
    s.tyre_long_deflection_m[i] = u1
    s.tyre_fx_n[i] = fx
    s.tyre_fy_n[i] = fy
    if w.tyre_shape[i] == SHAPE_JANOSI:
        s.gross_thrust_n[i] = fx
    s.slip_ratio[i] = slip(omega1, radius, v_long)
    s.slip_angle_rad[i] = math.atan2(s.wheel_lat_speed_mps[i], max(abs(v_long), 0.2))
