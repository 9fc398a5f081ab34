"""Reference manoeuvres of the Ranger model: fresh simulations that return measured figures.

The validation table (``python -m acres_gym.tools.validate``) and the test suite both run these, so a figure in
the table is the figure the tests check. Every function builds its own ``RangerSim`` (default vehicle
unless ``overrides`` are given), drives it through the driver inputs of the command record (the DBW layer
passes them through when it is not under control) and returns plain floats in SI units.
"""

from __future__ import annotations

import math

import numpy as np

from acres_gym.constants import (
    DRIVE_ALL_WHEEL,
    DRIVE_TURF,
    GEAR_HIGH,
    GEAR_LOW,
    GEAR_NEUTRAL,
    PHYSICS_HZ,
    STANDARD_GRAVITY_MPS2,
)
from acres_gym.model.vec import rotate
from acres_gym.sim import RangerSim
from acres_gym.terrain import flat, slope, split

MPH_30_MPS = 13.4112


def _sim(terrain=None, overrides=None, gear=None, drive_mode=None) -> RangerSim:
    sim = RangerSim(1, terrain=terrain, overrides=overrides)
    if gear is not None:
        sim.state.gear = gear
        sim.state.gear_target = gear
    if drive_mode is not None:
        sim.commands.drive_mode = drive_mode
    return sim


def rear_axle_xy(sim: RangerSim, v: int = 0) -> np.ndarray:
    """World (x, y) of the rear-axle midpoint's footprint of vehicle v."""
    p = sim.params[v]
    rx, ry, _ = rotate(sim.state.orientation_wxyz[v], -p.cg_forward_m, -p.cg_left_m, -p.cg_height_m)
    return sim.state.position_m[v, :2] + np.array([rx, ry])


# --- chassis, suspension, tyres (foundation) -------------------------------------------------------

def circle_radius(points_xy: np.ndarray) -> float:
    """Radius of the circle through ``points_xy`` ((n, 2), m) by the algebraic least-squares fit (Kasa): with
    ``u, v`` the points less their mean, the centre ``(uc, vc)`` solves ``[Suu Suv; Suv Svv] (uc, vc) =
    0.5 (Suuu + Suvv, Svvv + Svuu)`` and ``r^2 = uc^2 + vc^2 + (Suu + Svv) / n``. The sums are exact
    (``math.fsum``), not BLAS's, so the figure is the same on every CPU."""
    u = points_xy[:, 0] - math.fsum(points_xy[:, 0]) / len(points_xy)
    v = points_xy[:, 1] - math.fsum(points_xy[:, 1]) / len(points_xy)
    suu, svv, suv = math.fsum(u * u), math.fsum(v * v), math.fsum(u * v)
    bu = 0.5 * (math.fsum(u * u * u) + math.fsum(u * v * v))
    bv = 0.5 * (math.fsum(v * v * v) + math.fsum(v * u * u))
    det = suu * svv - suv * suv
    uc, vc = (bu * svv - bv * suv) / det, (bv * suu - bu * suv) / det
    return math.sqrt(uc * uc + vc * vc + (suu + svv) / len(points_xy))


def static_rest(seconds: float = 3.0, surface: str = "dry_asphalt") -> dict:
    """At rest on flat ground, neutral: load sum against m g, corner loads against the finalised static
    loads, and the chassis drift speed over the last second."""
    sim = _sim(flat(surface), gear=GEAR_NEUTRAL)
    sim.run_seconds(seconds - 1.0)
    x0 = sim.state.position_m[0].copy()
    sim.run_seconds(1.0)
    loads = sim.state.normal_load_n[0]
    static = sim.params.static_load_n[0]
    weight = sim.params.mass_kg[0] * STANDARD_GRAVITY_MPS2
    return {
        "load_sum_ratio": float(loads.sum() / weight),
        "corner_error_max": float(np.max(np.abs(loads / static - 1.0))),
        "drift_mps": math.hypot(*(sim.state.position_m[0] - x0)),
        "loads_n": loads.copy(),
        "static_loads_n": static.copy(),
    }


def hold_on_grade(percent: float = 20.0, brake_bar: float = 40.0, gear: int = GEAR_NEUTRAL,
                  seconds: float = 10.0, surface: str = "dry_asphalt", overrides=None) -> dict:
    """Standing on a grade (nose uphill) held by the brakes (line pressure) and/or the gear: the
    displacement over ``seconds`` after a 1 s settle."""
    sim = _sim(slope(percent, surface=surface), overrides=overrides, gear=gear)
    sim.commands.driver_brake_bar = brake_bar
    sim.run_seconds(1.0)
    x1 = sim.state.position_m[0].copy()
    sim.run_seconds(seconds)
    return {"moved_m": math.hypot(*(sim.state.position_m[0] - x1)),
            "speed_mps": float(sim.speed_mps[0]), "park_torque_nm": float(sim.state.park_torque_nm[0])}


def steady_circle(steering_wheel_deg: float = 200.0, speed_mps: float = 2.0, drive_mode: int = DRIVE_TURF,
                  seconds: float = 25.0) -> dict:
    """Drives a circle at a fixed steering-wheel angle and a regulated speed; fits a circle to the
    rear-axle midpoint's path over the last half. Returns the radius, the kinematic radius
    L / tan(bicycle angle) and the rear wheel speeds (Turf vs 2WD comparison)."""
    sim = _sim(gear=GEAR_HIGH, drive_mode=drive_mode)
    sim.commands.driver_steers = True
    sim.commands.driver_steering_deg = steering_wheel_deg
    p = sim.params[0]
    delta = math.radians((steering_wheel_deg - p.steering_center_deg) / p.steering_ratio)
    ticks = int(seconds * PHYSICS_HZ)
    path = []
    for k in range(ticks):
        error = speed_mps - sim.speed_mps[0]
        sim.commands.driver_throttle_pct = float(np.clip(20.0 + 30.0 * error, 0.0, 100.0))
        sim.step(1)
        if k >= ticks // 2:
            path.append(rear_axle_xy(sim))
    radius = circle_radius(np.array(path))
    track = p.track_rear_m
    return {
        "radius_m": radius,
        "kinematic_radius_m": p.wheelbase_m / math.tan(delta),
        "speed_mps": float(sim.speed_mps[0]),
        "rear_left_rad_s": float(sim.state.wheel_omega_rad_s[0, 2]),
        "rear_right_rad_s": float(sim.state.wheel_omega_rad_s[0, 3]),
        "geometric_rear_ratio": (radius - 0.5 * track) / (radius + 0.5 * track),
    }


def brake_stop(surface: str = "dry_asphalt", speed_mps: float = 10.0, brake_bar=None) -> dict:
    """Full brake pressure from ``speed_mps`` in neutral on flat ground: mean deceleration and distance."""
    sim = _sim(flat(surface), gear=GEAR_NEUTRAL)
    sim.state.velocity_mps[0, 0] = speed_mps
    sim.state.wheel_omega_rad_s[0, :] = speed_mps / sim.state.rolling_radius_m[0]
    sim.step(12)
    v0 = float(sim.speed_mps[0])
    x0 = float(sim.state.position_m[0, 0])
    t0 = float(sim.state.time_s[0])
    sim.commands.driver_brake_bar = sim.params.brake_max_bar[0] if brake_bar is None else brake_bar
    while sim.speed_mps[0] > 0.01 and sim.state.time_s[0] - t0 < 20.0:
        sim.step(1)
    duration = float(sim.state.time_s[0] - t0)
    return {"initial_speed_mps": v0, "stop_time_s": duration,
            "stop_distance_m": float(sim.state.position_m[0, 0] - x0),
            "mean_decel_g": v0 / duration / STANDARD_GRAVITY_MPS2}


# --- powertrain and driveline -----------------------------------------------------------------------

def idle_in_neutral(seconds: float = 3.0, start_rpm: float = 3000.0) -> dict:
    """Neutral, pedal 0, engine started at ``start_rpm``: the engine speed after ``seconds`` and its
    spread over the last second."""
    sim = _sim(gear=GEAR_NEUTRAL)
    sim.state.engine_rpm = start_rpm
    rpm = []
    for _ in range(int(seconds * PHYSICS_HZ)):
        sim.step(1)
        rpm.append(float(sim.state.engine_rpm[0]))
    last = np.array(rpm[-PHYSICS_HZ:])
    return {"rpm": rpm[-1], "idle_rpm": float(sim.params.idle_rpm[0]),
            "spread_rpm": float(last.max() - last.min())}


def creep_in_gear(gear: int = GEAR_HIGH, seconds: float = 5.0) -> dict:
    """At rest in gear with the engine idling (no brakes): how far the vehicle creeps."""
    sim = _sim(gear=gear)
    x0 = sim.state.position_m[0].copy()
    sim.run_seconds(seconds)
    return {"moved_m": math.hypot(*(sim.state.position_m[0, :2] - x0[:2])),
            "rpm": float(sim.state.engine_rpm[0]), "clutch_nm": float(sim.state.clutch_torque_nm[0])}


def full_throttle(gear: int = GEAR_HIGH, drive_mode: int = DRIVE_ALL_WHEEL, seconds: float = 40.0,
                  terrain=None, overrides=None) -> dict:
    """Full throttle from rest: top speed (mean of the last 2 s), time to 5 m/s and to 30 mph, and the
    engine speed held while the CVT upshifts (between leaving the low ratio and reaching overdrive,
    from 1 s after the belt leaves the low ratio: the launch transient is excluded)."""
    sim = _sim(terrain, overrides=overrides, gear=gear, drive_mode=drive_mode)
    sim.commands.driver_throttle_pct = 100.0
    p = sim.params[0]
    t5 = t30 = upshift_start = None
    speeds, shift_rpm = [], []
    for _ in range(int(seconds * PHYSICS_HZ)):
        sim.step(1)
        v = float(sim.speed_mps[0])
        speeds.append(v)
        t = float(sim.state.time_s[0])
        if t5 is None and v >= 5.0:
            t5 = t
        if t30 is None and v >= MPH_30_MPS:
            t30 = t
        ratio = sim.state.cvt_ratio[0]
        upshifting = p.cvt_high_ratio * 1.02 < ratio < p.cvt_low_ratio * 0.98
        if upshifting and upshift_start is None:
            upshift_start = t
        if upshifting and t > upshift_start + 1.0 and sim.state.engine_request[0] > 0.99:
            shift_rpm.append(float(sim.state.engine_rpm[0]))
    top = float(np.mean(speeds[-2 * PHYSICS_HZ:]))
    rear_spin = float(np.mean(sim.state.wheel_omega_rad_s[0, 2:]))
    return {
        "top_speed_mps": top, "time_to_5_s": t5, "time_to_30mph_s": t30,
        "shift_rpm_min": min(shift_rpm) if shift_rpm else math.nan,
        "shift_rpm_max": max(shift_rpm) if shift_rpm else math.nan,
        "shift_full_rpm": float(p.shift_full_rpm), "top_speed_param_mps": float(p.top_speed_mps),
        "engine_rpm": float(sim.state.engine_rpm[0]), "cvt_ratio": float(sim.state.cvt_ratio[0]),
        "rear_spin_rad_s": rear_spin,
    }


def coast_down(ebs: bool = True, adc: bool = False, from_mps: float = 15.0, to_mps: float = 1.0) -> dict:
    """Full throttle to ``from_mps`` in H (AWD), then lift off: mean deceleration down to ``to_mps`` and
    over the first 2 s, and the mean front shaft torque over the first 2 s (ADC check)."""
    sim = _sim(overrides={"driveline.ebs": ebs, "driveline.adc": adc}, gear=GEAR_HIGH)
    sim.commands.driver_throttle_pct = 100.0
    while sim.speed_mps[0] < from_mps:
        sim.step(1)
    sim.commands.driver_throttle_pct = 0.0
    v0 = float(sim.speed_mps[0])
    t0 = float(sim.state.time_s[0])
    front = []
    t_end = None
    v2 = None
    while sim.state.time_s[0] - t0 < 60.0:
        sim.step(1)
        t = sim.state.time_s[0] - t0
        if t <= 2.0:
            front.append(float(sim.state.shaft_torque_nm[0, :2].sum()))
            v2 = float(sim.speed_mps[0])
        if sim.speed_mps[0] <= to_mps:
            t_end = float(t)
            break
    return {"mean_decel_mps2": (v0 - to_mps) / t_end if t_end else 0.0,
            "first_2s_decel_mps2": (v0 - v2) / 2.0,
            "front_shaft_nm_first_2s": float(np.mean(front))}


def split_launch(drive_mode: int, rear_surface: str = "ice", front_surface: str = "dry_asphalt",
                 target_mps: float = 5.0) -> dict:
    """Full throttle from rest with the rear wheels on ``rear_surface`` and the fronts on
    ``front_surface``: time to ``target_mps`` and whether the front demand drive engaged."""
    p_wheelbase = RangerSim(1).params.wheelbase_m[0]
    sim = _sim(split(0.5 * p_wheelbase, rear_surface, front_surface), gear=GEAR_HIGH, drive_mode=drive_mode)
    sim.commands.driver_throttle_pct = 100.0
    engaged = False
    t_reach = None
    for _ in range(30 * PHYSICS_HZ):
        sim.step(1)
        engaged = engaged or bool(sim.state.front_engaged[0].any())
        if sim.speed_mps[0] >= target_mps:
            t_reach = float(sim.state.time_s[0])
            break
    return {"time_to_target_s": t_reach, "front_engaged": engaged}


def drive_cycle_ledger(seconds: float = 60.0, terrain=None) -> dict:
    """A 60 s cycle (full throttle, cruise at 12 m/s, lift-off, braking to a stop, standing): the ledger
    of the cycle with its residual relative to the fuel energy."""
    sim = _sim(terrain, gear=GEAR_HIGH)
    total = int(seconds * PHYSICS_HZ)
    for k in range(total):
        t = k / PHYSICS_HZ
        phase = t / seconds
        cmd = sim.commands
        if phase < 0.2:
            cmd.driver_throttle_pct, cmd.driver_brake_bar = 100.0, 0.0
        elif phase < 0.5:
            error = 12.0 - sim.speed_mps[0]
            cmd.driver_throttle_pct, cmd.driver_brake_bar = float(np.clip(25 + 30 * error, 0, 100)), 0.0
        elif phase < 0.65:
            cmd.driver_throttle_pct, cmd.driver_brake_bar = 0.0, 0.0
        else:
            cmd.driver_throttle_pct, cmd.driver_brake_bar = 0.0, 30.0
        sim.step(1)
    book = sim.ledger(0)
    book["residual_share"] = book["residual_j"] / max(book["fuel_j"], 1e-9)
    book["final_speed_mps"] = float(sim.speed_mps[0])
    return book


def cruise_fuel(speed_mps: float = 15.0, settle_s: float = 40.0, measure_s: float = 30.0) -> dict:
    """Fuel use at a steady speed on flat dry asphalt (PI on the driver throttle), L/100 km."""
    sim = _sim(gear=GEAR_HIGH)

    def drive(seconds):
        integral = 0.0
        for _ in range(int(seconds * PHYSICS_HZ)):
            error = speed_mps - sim.speed_mps[0]
            integral = float(np.clip(integral + error / PHYSICS_HZ, -20, 20))
            sim.commands.driver_throttle_pct = float(np.clip(25 + 20 * error + 5 * integral, 0, 100))
            sim.step(1)

    drive(settle_s)
    f0 = float(sim.state.fuel_used_kg[0])
    x0 = sim.state.position_m[0, :2].copy()
    drive(measure_s)
    distance = math.hypot(*(sim.state.position_m[0, :2] - x0))
    litres = (float(sim.state.fuel_used_kg[0]) - f0) / sim.params.fuel_density_kg_l[0]
    return {"l_per_100km": litres / distance * 1e5, "speed_mps": float(sim.speed_mps[0])}


def tick_rate_amplitude(signal: np.ndarray, window: int = 24) -> float:
    """Largest amplitude of a tick-rate (period-two) oscillation in any ``window``-tick stretch: the
    alternating sum of the second differences over the window, / (4 window). A linear trend gives 0, a
    single kink about its slope change / (4 window), an oscillation +-A about A."""
    d2 = np.diff(np.asarray(signal, dtype=float), n=2)
    if d2.size < window:
        return 0.0
    sign = np.where(np.arange(d2.size) % 2 == 0, 1.0, -1.0)
    sums = np.convolve(d2 * sign, np.ones(window), mode="valid")
    return float(np.max(np.abs(sums)) / (4.0 * window))


def ripple(signal: np.ndarray) -> float:
    """Peak-to-peak of a signal about its straight-line fit (a settled signal has none)."""
    x = np.asarray(signal, dtype=float)
    t = np.arange(x.size)
    fit = np.polyval(np.polyfit(t, x, 1), t) if x.size > 1 else x
    return float(np.ptp(x - fit)) if x.size else 0.0


def hold_chatter(gear: int, drive_mode: int, throttle_pct: float, brake_bar: float, seconds: float = 8.0,
                 terrain=None, overrides=None) -> dict:
    """Holds constant pedals; over the last 2 s records the engine speed, clutch slip and wheel speeds
    and returns their tick-rate oscillation amplitude (``tick_rate_amplitude``) and, over the last
    second, their ripple about a straight line (``ripple``: a slower limit cycle)."""
    sim = _sim(terrain, overrides=overrides, gear=gear, drive_mode=drive_mode)
    sim.commands.driver_throttle_pct = throttle_pct
    sim.commands.driver_brake_bar = brake_bar
    rpm, slip, wheels = [], [], []
    ticks = int(seconds * PHYSICS_HZ)
    for k in range(ticks):
        sim.step(1)
        if k >= ticks - 2 * PHYSICS_HZ:
            rpm.append(float(sim.state.engine_rpm[0]))
            slip.append(float(sim.state.clutch_slip_rad_s[0]))
            wheels.append(sim.state.wheel_omega_rad_s[0].copy())
    wheels = np.array(wheels)
    last = slice(-PHYSICS_HZ, None)
    return {
        "engine_rpm": tick_rate_amplitude(rpm),
        "clutch_slip_rad_s": tick_rate_amplitude(slip),
        "wheel_rad_s": max(tick_rate_amplitude(wheels[:, i]) for i in range(4)),
        "engine_ripple_rpm": ripple(np.array(rpm)[last]),
        "wheel_ripple_rad_s": max(ripple(wheels[last, i]) for i in range(4)),
        "speed_mps": float(sim.speed_mps[0]), "mean_rpm": float(np.mean(rpm)),
    }


# --- soil --------------------------------------------------------------------------------------------

def soil_static_sinkage(surface: str, seconds: float = 2.0) -> dict:
    """The vehicle at rest on flat soil: each wheel's sinkage against Wong's closed form at the wheel's
    load (same mode, load and width)."""
    from acres_gym.model.soil import tyre_on_soil
    sim = _sim(flat(surface), gear=GEAR_NEUTRAL)
    sim.run_seconds(seconds)
    p = sim.params[0]
    row = sim.terrain.surfaces.row(surface)
    expected = []
    for i in range(4):
        z, *_ = tyre_on_soil(float(sim.state.normal_load_n[0, i]), float(p.tyre_width_m[i]), p.tyre_radius_m,
                             p.tyre_inflation_kpa * 1e3, p.tyre_carcass_pressure_kpa * 1e3,
                             p.tyre_vertical_stiffness_n_m, p.tyre_hysteresis, p.tyre_section_m,
                             row.soil_n, row.soil_kc, row.soil_kphi)
        expected.append(z)
    measured = sim.state.sinkage_m[0].copy()
    expected = np.array(expected)
    return {"sinkage_m": measured, "closed_form_m": expected,
            "max_relative_error": float(np.max(np.abs(measured / expected - 1.0)))}


def _wong_pull(p, row, wetness: float, slip_ratio: float, wheel: int, load: float) -> float:
    """``model.soil.drawbar_pull`` of wheel ``wheel`` under ``load`` on surface ``row`` at ``wetness``."""
    from acres_gym.model.soil import drawbar_pull, soil_at_wetness
    n, kc, kphi, cohesion, friction_deg, shear_modulus = soil_at_wetness(row, float(wetness))
    return float(drawbar_pull(slip_ratio, load, p.tyre_width_m[wheel], p.tyre_radius_m, p.tyre_inflation_kpa * 1e3,
                              p.tyre_carcass_pressure_kpa * 1e3, p.tyre_vertical_stiffness_n_m, p.tyre_hysteresis,
                              p.tyre_section_m, n, kc, kphi, cohesion, math.radians(friction_deg), shear_modulus,
                              p.tyre_shear_compliance_m, p.tyre_lug_area_share, p.tyre_lug_height_m))


def soil_drawbar_pull(surface: str, slip_ratio: float, wheel: int = 2, wetness: float = 0.0) -> dict:
    """Drawbar pull over load of one of the vehicle's tyres (default: rear left at its static load) on
    ``surface`` at ``wetness`` at a slip ratio (Wong: gross thrust minus compaction and hysteresis resistance)."""
    from acres_gym.params import load_vehicle
    from acres_gym.terrain import surface_row
    p = load_vehicle("polaris_ranger_crew_xp1000")
    load = float(p.static_load_n[wheel])
    pull = _wong_pull(p, surface_row(surface), wetness, slip_ratio, wheel, load)
    return {"pull_over_load": pull / load, "load_n": load}


RIG_WHEEL_INERTIA_KG_M2 = 50.0  # the rig's wheels: the schema's largest spin inertia, a flywheel the tyre
#                                 force barely slows within a tick (the rig's motor holding the speed)


def soil_wheel_rig(surface: str, slip_ratio: float, speed_mps: float = 2.0, seconds: float = 3.0,
                   wheel: int = 0, wetness: float = 0.0) -> dict:
    """Wheels held at a fixed slip on flat soil, as on a single-wheel tester: the vehicle's forward speed is
    held at ``speed_mps`` and every wheel's spin (a flywheel, ``RIG_WHEEL_INERTIA_KG_M2``) is set each tick to
    speed / ((1 - i) r) with its rolling radius r (slip i = (omega r - v) / (omega r)); after
    ``seconds`` the measured wheel's net longitudinal force at the contact (shear force plus the contact
    resistance) over its load, against Wong's drawbar pull (``model.soil.drawbar_pull``) at that wheel's
    load and slip, on the soil at ``wetness`` (the whole ground at that wetness). The default wheel is a front
    one: it runs on fresh soil, where ``drawbar_pull`` holds
    (a rear wheel runs in its rut)."""
    if not 0.0 <= slip_ratio < 1.0:
        raise ValueError(f"slip_ratio = {slip_ratio!r}: expected a number in [0, 1)")
    sim = _sim(flat(surface, wetness=wetness), overrides={"tyre.spin_inertia_kg_m2": RIG_WHEEL_INERTIA_KG_M2},
               gear=GEAR_NEUTRAL)
    s = sim.state
    for _ in range(int(seconds * PHYSICS_HZ)):
        s.velocity_mps[0, 0] = speed_mps
        s.velocity_mps[0, 1] = 0.0
        s.angular_velocity_rad_s[0, 2] = 0.0
        s.wheel_omega_rad_s[0, :] = speed_mps / ((1.0 - slip_ratio) * s.rolling_radius_m[0])
        sim.step(1)
    p = sim.params[0]
    row = sim.terrain.surfaces.row(surface)
    load = float(s.normal_load_n[0, wheel])
    net = float(s.tyre_fx_n[0, wheel] + s.contact_resistance_n[0, wheel])
    model = _wong_pull(p, row, wetness, slip_ratio, wheel, load)
    return {"pull_over_load": net / load, "model_over_load": float(model) / load, "load_n": load,
            "slip": float(s.slip_ratio[0, wheel]), "sinkage_m": float(s.sinkage_m[0, wheel])}


def soil_motion_resistance(surface: str = "dry_sand", speed_mps: float = 5.0) -> dict:
    """Motion-resistance coefficient (sum of the wheels' compaction, hysteresis and rolling resistance
    over the sum of their loads) while driving steadily at ``speed_mps`` on flat soil."""
    sim = _sim(flat(surface), gear=GEAR_HIGH)
    integral = 0.0
    for _ in range(20 * PHYSICS_HZ):
        error = speed_mps - sim.speed_mps[0]
        integral = float(np.clip(integral + error / PHYSICS_HZ, -20, 20))
        sim.commands.driver_throttle_pct = float(np.clip(30 + 25 * error + 8 * integral, 0, 100))
        sim.step(1)
    s = sim.state[0]
    return {"coefficient": float(s.motion_resistance_n.sum() / s.normal_load_n.sum()),
            "speed_mps": float(sim.speed_mps[0]), "sinkage_m": s.sinkage_m.copy()}


def grade_climb(surface: str, drive_mode: int, percent: float = 15.0, cargo_kg: float = 450.0,
                seconds: float = 15.0, gear: int = GEAR_LOW) -> dict:
    """Full throttle in ``gear`` (L by default) from rest up a ``percent`` grade of ``surface`` with cargo:
    final speed, rear slip and the distance climbed."""
    sim = _sim(slope(percent, surface=surface), overrides={"mass.cargo_kg": cargo_kg}, gear=gear,
               drive_mode=drive_mode)
    sim.commands.driver_throttle_pct = 100.0
    sim.run_seconds(seconds)
    return {"speed_mps": float(sim.speed_mps[0]),
            "rear_slip": float(np.mean(sim.state.slip_ratio[0, 2:])),
            "climbed_m": float(sim.state.position_m[0, 0])}


def surface_transition(from_surface: str = "dry_asphalt", to_surface: str = "dry_sand",
                       speed_mps: float = 10.0) -> dict:
    """Drives at ``speed_mps`` from one surface onto another (boundary 15 m ahead): the largest normal
    load of any wheel while crossing, over its static load."""
    sim = _sim(split(15.0, from_surface, to_surface), gear=GEAR_NEUTRAL)
    sim.state.velocity_mps[0, 0] = speed_mps
    sim.state.wheel_omega_rad_s[0, :] = speed_mps / sim.state.rolling_radius_m[0]
    sim.step(60)
    peak = 0.0
    static = sim.params.static_load_n[0]
    while sim.state.position_m[0, 0] < 30.0 and sim.speed_mps[0] > 1.0:
        sim.step(1)
        peak = max(peak, float(np.max(sim.state.normal_load_n[0] / static)))
    return {"peak_load_ratio": peak, "speed_mps": float(sim.speed_mps[0])}
