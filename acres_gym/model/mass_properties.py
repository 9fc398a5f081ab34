"""The vehicle parameters that follow from the others (seed ``FinalizeUtvParameters``'s derivations), in one jitted
pass over the parameter record: ``acres_gym.params.finalize_parameters`` validates the record, then calls
``derive_parameters``, which writes

* ``mass_kg`` = dry + fluids + roof + bay + cargo + occupants x occupant_kg;
* ``cg_forward_m``, ``cg_left_m``, ``cg_height_m``: the mass-weighted position of the dry vehicle, fluids, roof and
  bay equipment, cargo and each occupant by seat (driver, front passenger, rear left, rear right, rear centre,
  front centre);
* ``ixx_kg_m2``, ``iyy_kg_m2``, ``izz_kg_m2`` about the total centre of mass: the dry vehicle's radii of gyration
  moved by the parallel-axis theorem, plus every lumped mass as a point mass;
* ``static_load_n`` (FL, FR, RL, RR): front axle m g cg_forward / wheelbase, rear the rest, each axle split left /
  right by the lateral offset over its track;
* ``peak_torque_nm``, and per corner ``hardpoint_x_m``, ``hardpoint_y_m``, ``hardpoint_z_m``, ``wheel_rate_n_m``,
  ``damper_n_s_m`` = 2 zeta sqrt(k_ride m_corner), ``tyre_width_m`` and ``brake_nm_per_bar``.

The arithmetic is that of the definitions in ``finalize_parameters``'s docstring, operation for operation (sums
from the first term, left to right), so the values are those its numpy form gave, bit for bit.
"""

import math

import numpy as np
from numba import njit

WRITTEN = 0
MASS_NOT_POSITIVE = 1
LOAD_NOT_POSITIVE = 2
TYRE_OVERLOADED = 3
"""``derive_parameters``'s outcomes: written, or nothing written because the total mass is not positive, a static
corner load is not positive (the centre of mass outside the wheelbase or a track), or the heaviest corner deflects
its tyre more than the allowed share of its section height."""

MAX_BODIES = 11  # the dry vehicle, four lumped masses and at most six occupants


@njit(cache=True)
def _bodies(p, out):
    """(mass, x, y, z) of the dry vehicle, the lumped masses (fluids, roof, bay, cargo) and each occupant by seat
    into the rows of ``out``; returns the number of rows."""
    out[0, 0], out[0, 1], out[0, 2], out[0, 3] = p.dry_mass_kg, p.dry_cg_forward_m, p.dry_cg_left_m, p.dry_cg_height_m
    out[1, 0], out[1, 1], out[1, 2], out[1, 3] = p.fluids_kg, p.fluids_x_m, p.fluids_y_m, p.fluids_z_m
    out[2, 0], out[2, 1], out[2, 2], out[2, 3] = p.roof_equipment_kg, p.roof_x_m, p.roof_y_m, p.roof_z_m
    out[3, 0], out[3, 1], out[3, 2], out[3, 3] = p.bay_equipment_kg, p.bay_x_m, p.bay_y_m, p.bay_z_m
    out[4, 0], out[4, 1], out[4, 2], out[4, 3] = p.cargo_kg, p.cargo_x_m, p.cargo_y_m, p.cargo_z_m
    xf, xr, lat = p.seat_front_x_m, p.seat_rear_x_m, p.seat_lateral_m
    seat_x = (xf, xf, xr, xr, xr, xf)
    seat_y = (lat, -lat, lat, -lat, 0.0, 0.0)
    n = 5
    for k in range(min(int(p.occupants), 6)):
        out[n, 0], out[n, 1], out[n, 2], out[n, 3] = p.occupant_kg, seat_x[k], seat_y[k], p.occupant_z_m
        n += 1
    return n


@njit(cache=True)
def derive_parameters(records, index, g, deflection_share, report):
    """Writes the derived fields of the parameter record ``records[index]`` (module docstring; ``g`` m/s^2,
    ``deflection_share`` the largest static tyre deflection as a share of the section height) and returns
    ``WRITTEN``; or writes nothing and returns why (``MASS_NOT_POSITIVE``, ``LOAD_NOT_POSITIVE``,
    ``TYRE_OVERLOADED``). ``report`` (8,) gets the total mass, the centre of mass (forward, left, height) and,
    past the mass check, the four corner loads, for the caller's message. (The record travels as its array and
    index: numba types a plain structured array in a fraction of the time a record scalar of this size takes.)"""
    p = records[index]
    bodies = np.empty((MAX_BODIES, 4))
    n = _bodies(p, bodies)
    mass = 0.0
    for k in range(n):
        mass += bodies[k, 0]
    report[0] = mass
    if not mass > 0.0:
        return MASS_NOT_POSITIVE
    sx, sy, sz = 0.0, 0.0, 0.0
    for k in range(n):
        sx += bodies[k, 0] * bodies[k, 1]
        sy += bodies[k, 0] * bodies[k, 2]
        sz += bodies[k, 0] * bodies[k, 3]
    cx, cy, cz = sx / mass, sy / mass, sz / mass
    report[1], report[2], report[3] = cx, cy, cz
    m_dry = p.dry_mass_kg
    kr, kp, ky = p.dry_gyration_roll_m, p.dry_gyration_pitch_m, p.dry_gyration_yaw_m
    ixx, iyy, izz = m_dry * kr * kr, m_dry * kp * kp, m_dry * ky * ky
    for k in range(n):
        m = bodies[k, 0]
        dx, dy, dz = bodies[k, 1] - cx, bodies[k, 2] - cy, bodies[k, 3] - cz
        ixx += m * (dy * dy + dz * dz)
        iyy += m * (dx * dx + dz * dz)
        izz += m * (dx * dx + dy * dy)
    wb, tf, tr = p.wheelbase_m, p.track_front_m, p.track_rear_m
    front_axle = mass * g * cx / wb
    rear_axle = mass * g - front_axle
    fl = front_axle * (0.5 + cy / tf)
    rl = rear_axle * (0.5 + cy / tr)
    loads = (fl, front_axle - fl, rl, rear_axle - rl)
    heaviest = loads[0]
    for i in range(4):
        report[4 + i] = loads[i]
        heaviest = max(heaviest, loads[i])
    if not (loads[0] > 0.0 and loads[1] > 0.0 and loads[2] > 0.0 and loads[3] > 0.0):
        return LOAD_NOT_POSITIVE
    kt = p.tyre_vertical_stiffness_n_m
    if not heaviest / kt <= deflection_share * p.tyre_section_m:
        return TYRE_OVERLOADED
    p.mass_kg = mass
    p.cg_forward_m = cx
    p.cg_left_m = cy
    p.cg_height_m = cz
    p.ixx_kg_m2 = ixx
    p.iyy_kg_m2 = iyy
    p.izz_kg_m2 = izz
    peak = p.torque_curve_nm[0]
    for i in range(1, int(p.torque_curve_count)):
        peak = max(peak, p.torque_curve_nm[i])
    p.peak_torque_nm = peak
    two_zeta = 2.0 * p.damping_ratio
    for i in range(4):
        front, left = i < 2, i % 2 == 0
        track = tf if front else tr
        p.static_load_n[i] = loads[i]
        p.hardpoint_x_m[i] = (wb if front else 0.0) - cx
        p.hardpoint_y_m[i] = (0.5 * track if left else -0.5 * track) - cy
        p.hardpoint_z_m[i] = p.tyre_radius_m - loads[i] / kt - cz + p.travel_m - p.droop_m
        kw = p.front_wheel_rate_n_m if front else p.rear_wheel_rate_n_m
        p.wheel_rate_n_m[i] = kw
        k_ride = kw * kt / (kw + kt)
        p.damper_n_s_m[i] = two_zeta * math.sqrt(k_ride * loads[i] / g)
        p.tyre_width_m[i] = p.front_tyre_width_m if front else p.rear_tyre_width_m
        p.brake_nm_per_bar[i] = p.front_brake_nm_per_bar if front else p.rear_brake_nm_per_bar
    return WRITTEN
