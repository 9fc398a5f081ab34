"""Trafficability from the model: what a vehicle can do on a surface (and wetness) at a grade.

For a surface row of the surface table, its wetness and a grade (uphill along the direction of travel),
``drawbar_margin_n`` returns, for a range (H or L) and a drive mode (Turf, 2WD, AWD), the drawbar-pull
margin of a hill start at full throttle, N:

    hard ground: margin = min(traction of the driven wheels, engine-side force - their rolling resistance)
                          - rolling resistance of the free-rolling wheels - m g sin(theta)
    soil:        margin = min(traction of the driven wheels, engine-side force)
                          - motion resistance of all four wheels - m g sin(theta)

computed with the same functions the wheels run every tick (``acres_gym.model``), never a second copy
of a formula:

- wheel loads: the finalised static loads ``static_load_n`` times cos(theta), plus the grade's load
  transfer m g sin(theta) h / L from the front to the rear axle;
- on soil (``row.is_soil``): the soil at the wetness (``soil.soil_at_wetness``), Wong's tyre
  (``soil.tyre_on_soil``) for sinkage, contact length, compaction
  and hysteresis resistance; the shear plateau ``soil.tyre_shear_limit`` as in ``wheel.soil_contact``; the rear
  wheels' compaction less the front's (the multi-pass rule
  of ``wheel.soil_contact``: a rear wheel in the front wheel's rut);
- on hard ground: ``tyre.wet_friction`` x load, for a driven wheel at the sliding speed it spins at in a
  stall (``stall_sliding_speed_mps``: the engine's power balance, the water film's loss included), for a
  free-rolling one at zero, rolling resistance
  ``rolling_resistance`` x the surface's scale x load (as ``wheel.prepare_wheel``);
- the motion resistance: on hard ground a friction torque on each wheel (``wheel.prepare_wheel``:
  ``resist_torque_nm``): a driven wheel pays it out of the engine's torque, a free-rolling wheel (the front
  ones in Turf and 2WD) out of a braking tyre force, at most its F_max (beyond it the wheel locks and
  skids); on soil a force at the contact (``wheel.soil_contact``, ``chassis.contact_impulses``,
  Wong's drawbar pull = thrust - R_c - R_h): every wheel's resistance is subtracted from the thrust
  whatever drives it, and the engine pays only the thrust;
- traction of the driven wheels, what a wheel spinning in a stall delivers: on hard ground the friction
  circle ``tyre.saturation`` at the spring demand cap ``tyre.DEFLECTION_LIMIT`` x F_max (0.99 F_max; its
  damper adds a little more at high slip speed, which this figure leaves out); on soil Janosi-Hanamoto's
  thrust at full slip (``soil.janosi_thrust`` at i = 1, the curve the tyre follows up to there).
  Driven wheels: the rear two in Turf and 2WD
  (on uniform ground the open rear differential of Turf pulls as the locked one), all four in AWD (the
  front demand drive engages as soon as the rear wheels slip, as they do in a stall);
- engine side: a hill start is limited by the centrifugal clutch, which carries what the engine makes at
  the speed where its capacity (``cvt.clutch_forward_capacity``) equals the net wide-open-throttle
  torque (``engine.engine_curves``, a brake torque, less the accessories); the belt sits at its low ratio, so the
  carrier force is that torque x ``cvt_low_ratio`` x the range's rear ratio (``cvt.gear_ratios``) x belt
  and gear efficiencies / tyre radius.

On soil where the wheels sink to the ground clearance (``high_centred``) the underbody rests on the soil
and no start succeeds: the margin is minus the weight.

A positive margin climbs from rest, a negative one stalls (or slides back); ``verdict`` names the
outcome, with margins within ``MARGINAL_SHARE`` of the weight called "marginal" (the damper share of a
spinning tyre's force and the engine's torque rise once moving, which the figure leaves out, decide
those). ``trafficability`` gives
every range and mode at once; ``grade_limit`` the steepest grade with a non-negative margin (a fraction,
tan theta; negative when even level ground stalls), and ``grade_limit_table`` that figure for every
surface of a table over wetness bins, the lookup table the terrain generator, the ``local_map`` channel
and the planner use; ``drivable`` says from that figure whether ground is passable at all (the route search
keeps clear of ground that is not, as of a no-go area).
"""

from __future__ import annotations

import functools
import math

import numpy as np
from numba import njit

from acres_gym.constants import (
    DRIVE_ALL_WHEEL,
    DRIVE_MODE_NAMES,
    DRIVE_TURF,
    DRIVE_TWO_WHEEL,
    GEAR_HIGH,
    GEAR_LOW,
    RPM_TO_RAD_S,
    STANDARD_GRAVITY_MPS2,
)
from acres_gym.model.cvt import clutch_forward_capacity, gear_ratios
from acres_gym.model.engine import engine_curves
from acres_gym.model.soil import (
    effective_shear_modulus,
    janosi_thrust,
    soil_at_wetness,
    tyre_on_soil,
    tyre_shear_limit,
)
from acres_gym.model.tyre import DEFLECTION_LIMIT, SHAPE_TANH, saturation, wet_friction

RANGES = {"H": GEAR_HIGH, "L": GEAR_LOW}
DRIVE_MODES = {DRIVE_MODE_NAMES[m]: m for m in (DRIVE_TURF, DRIVE_TWO_WHEEL, DRIVE_ALL_WHEEL)}
MARGINAL_SHARE = 0.02  # |margin| below this share of the weight: "marginal"
GRADE_SEARCH = (-1.0, 2.0)  # grade_limit searches tan(theta) in this interval (-45 deg .. 63 deg)
GRADE_ITERATIONS = 40
CLUTCH_ITERATIONS = 60
POWER_SPEEDS = 64  # engine speeds engine_power_w samples


@njit(cache=True)
def hill_start_engine_torque_nm(p):
    """Net engine torque at wide-open throttle where the centrifugal clutch's capacity equals it, N m
    (the torque a stalled carrier receives through the slipping clutch); bisection on the engine speed
    between the engagement speed and the rev limit."""
    lo = p.engage_rpm
    hi = p.max_rpm
    for _ in range(CLUTCH_ITERATIONS):
        mid = 0.5 * (lo + hi)
        wot, _friction, _pumping = engine_curves(p, mid)
        net = wot - p.accessory_nm  # the WOT curve is the brake torque (engine.step_engine)
        if clutch_forward_capacity(p, mid * RPM_TO_RAD_S) < net:
            lo = mid
        else:
            hi = mid
    wot, _friction, _pumping = engine_curves(p, hi)
    return max(wot - p.accessory_nm, 0.0)


@njit(cache=True)
def engine_force_n(p, gear):
    """Carrier force of a hill start in ``gear`` at the tyre radius, N (module docstring)."""
    reduction, _ring = gear_ratios(p, gear)
    torque = hill_start_engine_torque_nm(p) * p.cvt_low_ratio * abs(reduction) * p.belt_efficiency \
        * p.gear_efficiency
    return torque / p.tyre_radius_m


@njit(cache=True)
def engine_power_w(p):
    """The engine's largest net wide-open-throttle power, W: ``engine.engine_curves`` less the accessories
    times the engine speed, the best of ``POWER_SPEEDS`` speeds from idle to the rev limit."""
    best = 0.0
    for k in range(POWER_SPEEDS):
        rpm = p.idle_rpm + (p.max_rpm - p.idle_rpm) * k / (POWER_SPEEDS - 1)
        wot, _friction, _pumping = engine_curves(p, rpm)
        best = max(best, (wot - p.accessory_nm) * rpm * RPM_TO_RAD_S)
    return best


@njit(cache=True)
def range_top_speed_mps(p, gear):
    """The fastest the wheels turn in ``gear`` (surface speed, m/s): the rev limit through the belt's overdrive
    and the range's reduction, or the governed top speed if lower."""
    reduction, _ring = gear_ratios(p, gear)
    rev_limited = p.max_rpm * RPM_TO_RAD_S / (p.cvt_high_ratio * abs(reduction)) * p.tyre_radius_m
    return min(rev_limited, p.top_speed_mps)


@njit(cache=True)
def stall_sliding_speed_mps(p, row, wetness, gear, driven_load_n):
    """Sliding speed of the driven wheels in a stall on hard ground, m/s: they spin up until their friction
    force times their surface speed takes the engine's power through the belt and gears
    (``engine_power_w`` x ``belt_efficiency`` x ``gear_efficiency``), or to ``range_top_speed_mps``. The
    friction falls with the sliding speed on wet ground (``tyre.wet_friction``, the water film), so a wet
    stall spins faster and grips less than the friction at rest says. v mu(v) N is increasing in v (the
    film loss is below 1), so the balance is found by bisection."""
    power = engine_power_w(p) * p.belt_efficiency * p.gear_efficiency
    top = range_top_speed_mps(p, gear)
    lo, hi = 0.0, top
    mu_top = wet_friction(row.mu_dry, row.mu_wet, wetness, row.film_loss, row.film_speed_mps, top)
    if top * mu_top * driven_load_n <= power:
        return top
    for _ in range(CLUTCH_ITERATIONS):
        mid = 0.5 * (lo + hi)
        mu = wet_friction(row.mu_dry, row.mu_wet, wetness, row.film_loss, row.film_speed_mps, mid)
        if mid * mu * driven_load_n < power:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


@njit(cache=True)
def _soil_wheel(p, i, row, wetness, load):
    """Wheel ``i`` under ``load`` on soil ``row`` at ``wetness`` (``soil.soil_at_wetness``), as
    ``wheel.soil_contact`` has it: (F_max, contact length, K_eff, compaction, hysteresis)."""
    width = p.tyre_width_m[i]
    n, kc, kphi, cohesion, friction_deg, shear_modulus = soil_at_wetness(row, wetness)
    sinkage, length, compaction, hysteresis, _e = tyre_on_soil(
        load, width, p.tyre_radius_m, p.tyre_inflation_kpa * 1e3, p.tyre_carcass_pressure_kpa * 1e3,
        p.tyre_vertical_stiffness_n_m, p.tyre_hysteresis, p.tyre_section_m, n, kc, kphi)
    f_max = tyre_shear_limit(load, width * length, length, cohesion, friction_deg * math.pi / 180.0,
                             p.tyre_lug_area_share, p.tyre_lug_height_m, min(sinkage, p.tyre_radius_m))
    return f_max, length, effective_shear_modulus(shear_modulus, p.tyre_shear_compliance_m), compaction, hysteresis


@njit(cache=True)
def _wheel(p, i, row, wetness, load, sliding_mps):
    """(F_max, traction of the wheel spinning in a stall, motion resistance, compaction) of wheel ``i`` under
    ``load`` on surface ``row``; on hard ground the friction at the sliding speed ``sliding_mps`` (0 for a
    free-rolling wheel, ``stall_sliding_speed_mps`` for a driven one)."""
    if row.is_soil != 0:
        f_max, length, k_eff, compaction, hysteresis = _soil_wheel(p, i, row, wetness, load)
        spinning, _d = janosi_thrust(1.0, f_max, length, k_eff)
        return f_max, spinning, compaction + hysteresis, compaction
    mu = wet_friction(row.mu_dry, row.mu_wet, wetness, row.film_loss, row.film_speed_mps, sliding_mps)
    f_max = mu * load
    spinning, _dg = saturation(DEFLECTION_LIMIT * f_max, f_max, SHAPE_TANH)
    return f_max, spinning, p.rolling_resistance * row.rolling_resistance_scale * load, 0.0


@njit(cache=True)
def high_centred(p, row, wetness):
    """Whether the vehicle standing on level soil ``row`` at ``wetness`` sinks onto its underbody: the
    wheels' mean static sinkage (``soil.tyre_on_soil`` at the static loads, bounded by the tyre radius as
    in ``wheel.soil_contact``) reaches the ground clearance (``model/underbody.py``)."""
    total = 0.0
    for i in range(4):
        n, kc, kphi, _c, _phi, _k = soil_at_wetness(row, wetness)
        z, _l, _rc, _rh, _e = tyre_on_soil(
            p.static_load_n[i], p.tyre_width_m[i], p.tyre_radius_m, p.tyre_inflation_kpa * 1e3,
            p.tyre_carcass_pressure_kpa * 1e3, p.tyre_vertical_stiffness_n_m, p.tyre_hysteresis,
            p.tyre_section_m, n, kc, kphi)
        total += min(z, p.tyre_radius_m)
    return 0.25 * total >= p.ground_clearance_m


@njit(cache=True)
def drawbar_margin_n(p, row, wetness, grade, gear, drive_mode, in_rut=True):
    """Drawbar-pull margin of a hill start, N (module docstring): vehicle parameters ``p`` (a record of
    ``PARAMS_DTYPE``), surface ``row`` (a surface-table record), ``wetness`` 0..1, ``grade`` tan(theta)
    uphill along the travel (negative downhill), ``gear`` GEAR_HIGH or GEAR_LOW, ``drive_mode`` DRIVE_*.
    ``in_rut``: the rear wheels run in the front wheels' ruts of the same soil (uniform ground); False
    where the front wheels stand on another surface (a patch edge), which the rear ones compact alone."""
    theta = math.atan(grade)
    c, s = math.cos(theta), math.sin(theta)
    weight = p.mass_kg * STANDARD_GRAVITY_MPS2
    transfer = 0.5 * weight * s * p.cg_height_m / p.wheelbase_m  # per wheel, front to rear
    traction = 0.0
    driven_resistance = 0.0
    free_resistance = 0.0
    front_left = 0.0
    front_right = 0.0
    sliding = 0.0
    if row.is_soil == 0:
        driven_load = 0.0
        for i in range(4):
            if i >= 2 or drive_mode == DRIVE_ALL_WHEEL:
                driven_load += max(p.static_load_n[i] * c + (transfer if i >= 2 else -transfer), 0.0)
        sliding = stall_sliding_speed_mps(p, row, wetness, gear, driven_load)
    for i in range(4):
        load = max(p.static_load_n[i] * c + (transfer if i >= 2 else -transfer), 0.0)
        driven = i >= 2 or drive_mode == DRIVE_ALL_WHEEL
        f_max, spinning, r, compaction = _wheel(p, i, row, wetness, load, sliding if driven else 0.0)
        if i == 0:
            front_left = compaction
        elif i == 1:
            front_right = compaction
        elif in_rut:  # the rear wheel runs in the front wheel's rut: it compacts only from there (wheel.soil_contact)
            r -= min(compaction, front_left if i == 2 else front_right)
        if driven:
            traction += spinning
            driven_resistance += r
        elif row.is_soil != 0:
            free_resistance += r
        else:  # a wheel whose rolling resistance the tyre cannot overcome locks and skids at F_max
            free_resistance += min(r, f_max)
    if row.is_soil != 0:  # the resistance acts at the contacts, not through the wheels' torque
        if high_centred(p, row, wetness):  # the underbody rests on the soil: no start at any grade
            return -weight
        return min(traction, engine_force_n(p, gear)) - driven_resistance - free_resistance - weight * s
    return min(traction, engine_force_n(p, gear) - driven_resistance) - free_resistance - weight * s


@njit(cache=True)
def level_pull_n(p, row, slip, wetness=0.0, in_rut=True):
    """Drawbar pull of the whole vehicle on level soil with all four wheels at slip ``slip``, N: the sum over
    the wheels at their static loads of Wong's DP = F(i) - R_c - R_h (``soil.janosi_thrust`` of
    ``soil.tyre_shear_limit``, ``soil.tyre_on_soil``) on the soil at ``wetness``, the rear wheels'
    compaction less the front's when ``in_rut`` (``wheel.soil_contact``'s multi-pass rule). Soil rows only
    (0 on hard ground)."""
    if row.is_soil == 0:
        return 0.0
    total = 0.0
    front_left = 0.0
    front_right = 0.0
    for i in range(4):
        f_max, length, k_eff, compaction, hysteresis = _soil_wheel(p, i, row, wetness, p.static_load_n[i])
        thrust, _d = janosi_thrust(slip, f_max, length, k_eff)
        if i == 0:
            front_left = compaction
        elif i == 1:
            front_right = compaction
        elif in_rut:
            compaction = max(0.0, compaction - (front_left if i == 2 else front_right))
        total += thrust - compaction - hysteresis
    return total


@njit(cache=True)
def grade_limit(p, row, wetness, gear, drive_mode, in_rut=True):
    """Steepest grade (tan theta) with a non-negative hill-start margin, by bisection over
    ``GRADE_SEARCH``; the interval's ends when the margin does not change sign inside it."""
    lo, hi = GRADE_SEARCH
    if drawbar_margin_n(p, row, wetness, lo, gear, drive_mode, in_rut) < 0.0:
        return lo
    if drawbar_margin_n(p, row, wetness, hi, gear, drive_mode, in_rut) >= 0.0:
        return hi
    for _ in range(GRADE_ITERATIONS):
        mid = 0.5 * (lo + hi)
        if drawbar_margin_n(p, row, wetness, mid, gear, drive_mode, in_rut) >= 0.0:
            lo = mid
        else:
            hi = mid
    return lo


def _row(table, surface):
    return table.row(surface) if isinstance(surface, (str, int, np.integer)) else surface


def trafficability(params, surface, wetness: float = 0.0, grade_pct: float = 0.0, table=None) -> dict:
    """Drawbar-pull margins of a hill start (N) for every range and drive mode:
    ``{("L", "awd"): margin_n, ...}``. ``params`` a vehicle record (``RangerSim.params[0]`` or
    ``load_vehicle(...)``), ``surface`` a name or id of ``table`` (default the standard surface table) or a
    surface record, ``grade_pct`` uphill along the travel."""
    from acres_gym.terrain.surfaces import default_surfaces

    if not 0.0 <= float(wetness) <= 1.0:
        raise ValueError(f"wetness = {wetness!r}: expected a number in [0, 1]")
    if not math.isfinite(float(grade_pct)):
        raise ValueError(f"grade_pct = {grade_pct!r}: expected a finite number")
    row = _row(table if table is not None else default_surfaces(), surface)
    return {(rn, mn): float(drawbar_margin_n(params, row, float(wetness), float(grade_pct) / 100.0, gear, mode))
            for rn, gear in RANGES.items() for mn, mode in DRIVE_MODES.items()}


WETNESS_BINS = 11  # grade_limit_table samples wetness at 0, 0.1, ..., 1
# The least drivable grade (a route's margin x the climbable grade) of passable ground: below it the hill-start
# margin is used up by the undulation of real ground (the generator's fractal roughness alone has local grades
# of several percent), so a vehicle on such ground stalls where it stops, however flat the route looks.
MIN_DRIVABLE_GRADE = 0.05


@njit(cache=True)
def drivable(limit, margin):
    """Whether ground whose climbable grade is ``limit`` (tan, ``grade_limit_table``) carries the vehicle when a
    route asks for at most ``margin`` x it: ``margin x limit >= MIN_DRIVABLE_GRADE``. False on a soil that
    high-centres (limit -1) or that the vehicle cannot propel itself on (limit near or below 0). The route
    search (``acres_gym.envs.tasks.offroad``), the terrain planner and the navigation task's ``ground_cause``
    all decide passable ground by it."""
    return margin * limit >= MIN_DRIVABLE_GRADE


@njit(cache=True)
def _fill_grade_limits(p, rows, gears, modes, out):
    nb = out.shape[1]
    for k in range(rows.shape[0]):
        for b in range(nb):
            w = b / (nb - 1)
            for g in range(gears.shape[0]):
                for m in range(modes.shape[0]):
                    out[k, b, g, m] = grade_limit(p, rows[k], w, gears[g], modes[m], False)


@functools.lru_cache(maxsize=16)
def _grade_limit_table_cached(params_bytes: bytes, table_bytes: bytes, dtype_p, dtype_t) -> np.ndarray:
    p = np.frombuffer(params_bytes, dtype=dtype_p)[0]
    rows = np.frombuffer(table_bytes, dtype=dtype_t).copy()
    gears = np.array([GEAR_HIGH, GEAR_LOW], dtype=np.int64)
    modes = np.array([DRIVE_TURF, DRIVE_TWO_WHEEL, DRIVE_ALL_WHEEL], dtype=np.int64)
    out = np.empty((rows.shape[0], WETNESS_BINS, 2, 3))
    _fill_grade_limits(p, rows, gears, modes, out)
    out.flags.writeable = False
    return out


def grade_limit_table(params, records) -> np.ndarray:
    """Steepest climbable grade (tan theta) of a hill start, ``(n_surfaces, WETNESS_BINS, 2, 3)``: surface id
    (rows of ``records``, a surface table's record array), wetness bin (0, 0.1, ..., 1), range (0 = H,
    1 = L), drive mode (0 = Turf, 1 = 2WD, 2 = AWD). Cached by the bytes of its inputs. Without the rut
    credit (``in_rut=False``): a cell's figure holds at a patch edge too, where the front wheels stand on
    other ground."""
    p = np.asarray(params).reshape(-1)[:1]
    r = np.asarray(records).view(np.ndarray)
    return _grade_limit_table_cached(p.tobytes(), r.tobytes(), p.dtype, r.dtype)


def wetness_bin(wetness: np.ndarray) -> np.ndarray:
    """Index of the nearest wetness bin of ``grade_limit_table``."""
    return np.clip(np.rint(np.asarray(wetness) * (WETNESS_BINS - 1)), 0, WETNESS_BINS - 1).astype(np.int64)


def verdict(params, margin_n: float) -> str:
    """"climbs", "stalls" or "marginal" (|margin| < ``MARGINAL_SHARE`` x weight) for a margin in N."""
    band = MARGINAL_SHARE * float(params["mass_kg"]) * STANDARD_GRAVITY_MPS2
    return "climbs" if margin_n > band else "stalls" if margin_n < -band else "marginal"
