"""The energy ledger (the seed's ``FEnergyFlows``): where the fuel's energy goes, cumulative per vehicle.

Energy in: fuel (Willans map: fuel power = indicated power / indicated efficiency, so the intercept at
zero brake power is the friction and pumping power over the efficiency) and the work of an external
carrier torque. Losses: thermal (fuel - indicated work), engine friction, pumping, accessory drag, clutch
slip heat, belt and gear loss, brakes, rolling resistance and bearing drag, soil (compaction and carcass
hysteresis), tyre slip (contact power from the wheels minus the power the chassis receives), suspension
dampers, aerodynamic drag, park pawl slip. Stored: chassis kinetic and potential energy, wheel, engine and
secondary spin, and the elastic energy of springs, bump stops and tyres.

Powers are booked at the end-of-tick speeds of the implicit spin solve and at the mid-tick velocity of
the chassis step, which makes the books close to the integrator's own error (``residual_j``).
"""

from numba import njit

from acres_gym.constants import STANDARD_GRAVITY_MPS2

LEDGER_LOSS_FIELDS = (
    "e_thermal_j", "e_engine_friction_j", "e_pumping_j", "e_accessory_j", "e_clutch_slip_j",
    "e_belt_gear_j", "e_brake_j", "e_rolling_j", "e_soil_j", "e_tyre_slip_j", "e_damper_j", "e_aero_j",
    "e_park_j",
)


@njit(cache=True)
def account_powertrain(dt, p, s, engine_end_rad_s, clutch_nm, belt_in_rad_s, carrier_rad_s,
                       transmission_nm, external_nm):
    """Engine-to-axle flows of the tick: fuel, thermal, friction, pumping, accessory, clutch slip, belt
    and gear, park, external work, and the fuel used."""
    w = engine_end_rad_s
    indicated_w = s.indicated_torque_nm * w
    fuel_w = indicated_w / p.indicated_efficiency if s.fuelled else 0.0
    s.e_fuel_j += fuel_w * dt
    s.e_thermal_j += (fuel_w - indicated_w) * dt
    s.e_engine_friction_j += s.friction_torque_nm * w * dt
    s.e_pumping_j += s.pumping_torque_nm * w * dt
    s.e_accessory_j += p.accessory_nm * w * dt
    s.e_clutch_slip_j += clutch_nm * (w - belt_in_rad_s) * dt
    # belt input power minus what reaches the carrier (the secondary's inertia is stored energy)
    eta = p.belt_efficiency * p.gear_efficiency
    delivered = s.drive_ratio * (eta * clutch_nm if clutch_nm >= 0.0 else clutch_nm / eta)
    s.e_belt_gear_j += (clutch_nm * belt_in_rad_s - delivered * carrier_rad_s) * dt
    s.e_park_j += -s.park_torque_nm * carrier_rad_s * dt
    s.e_external_j += external_nm * carrier_rad_s * dt
    s.engine_power_w = s.engine_torque_nm * w
    mass_rate = fuel_w / (p.fuel_lhv_mj_kg * 1e6)
    s.fuel_rate_g_s = mass_rate * 1000.0
    s.fuel_used_kg += mass_rate * dt
    if p.fuel_tank_l > 0.0:
        s.fuel_remaining_l = max(0.0, s.fuel_remaining_l - mass_rate * dt / p.fuel_density_kg_l)


@njit(cache=True)
def account_wheel(dt, s, w, i, omega_end, shaft_nm):
    """Wheel flows of the tick: friction torque heat split into brake / rolling and bearing, and
    the contact power the wheel gives the ground (returned, W). The soil's resistance acts at the contact
    and is booked by the chassis step."""
    friction_nm = shaft_nm - w.wheel_lin_a_nm[i] - w.wheel_lin_b_nm_s[i] * omega_end
    heat = friction_nm * omega_end * dt
    brake = heat * w.friction_brake_share[i]
    s.e_brake_j += brake
    s.e_rolling_j += heat - brake
    return s.rolling_radius_m[i] * s.tyre_fx_n[i] * omega_end


@njit(cache=True)
def stored_energy(p, s):
    """Stored energy now, J: chassis kinetic (translation and rotation) and potential, wheel, engine and
    secondary spin, and the corners' elastic energy."""
    v = s.velocity_mps
    w = s.angular_velocity_rad_s
    e = 0.5 * p.mass_kg * (v[0] * v[0] + v[1] * v[1] + v[2] * v[2])
    e += 0.5 * (p.ixx_kg_m2 * w[0] * w[0] + p.iyy_kg_m2 * w[1] * w[1] + p.izz_kg_m2 * w[2] * w[2])
    e += p.mass_kg * STANDARD_GRAVITY_MPS2 * s.position_m[2]
    omega_e = s.engine_rpm * 3.141592653589793 / 30.0
    e += 0.5 * p.engine_inertia_kg_m2 * omega_e * omega_e
    e += 0.5 * p.secondary_inertia_kg_m2 * s.secondary_omega_rad_s * s.secondary_omega_rad_s
    for i in range(4):
        e += 0.5 * p.wheel_inertia_kg_m2 * s.wheel_omega_rad_s[i] * s.wheel_omega_rad_s[i]
        e += s.elastic_energy_j[i]
    return e
