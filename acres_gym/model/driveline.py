"""Spin phase: engine, clutch, CVT, gearbox, rear axle and front demand drive solved together with
backward Euler (seed 002 ``SolveUtvDriveline``).

Every wheel arrives with its linearised spin model from ``prepare_wheel``: the shaft torque that makes it
end the tick at omega is T(omega) = a + b omega + f sgn(omega), f the friction capacity (brake, rolling
resistance, soil, bearing), set-valued at omega = 0: friction stops a wheel, it never drives it back.

For a trial rear carrier speed c (wheel-speed units) the wheels need (the seed's wording):
- the rear axle: locked (2WD, AWD), both rear wheels at c; open (Turf), equal torques whose wheel
  speeds average c (solved exactly: the mean spin is piecewise linear in the torque, ``_open_diff_exact``);
- in AWD, each front wheel that the front ring (turning at ``front_ring_ratio`` x c) catches up with:
  its shaft torque at the ring speed, costing front_ring_ratio times that at the carrier (a free wheel
  otherwise); Active Descent Control locks the front to the ring on overrun.
This rises with c. The engine side: a holding clutch makes the engine end at R c (R the signed belt x
gearbox ratio), which takes J_e (w_free - R c) / dt through the clutch, delivered to the carrier as
R eta T for drive and R T / eta for engine braking; beyond the forward or reverse capacity the clutch
slips at the capacity. The secondary and gearbox inertia, J_s G^2 (c - c_0) / dt, is paid from it.
Park holds c at 0 up to ``park_hold_nm``; neutral and park leave the engine free. An external torque
at the carrier (a dynamometer input of the command) adds to the engine side.

One bisection on c balances wheel side and engine side (fixed iteration count: deterministic and
allocation-free); a balance at c = 0 inside the friction band holds the carrier still.
"""

import math

from numba import njit

from acres_gym.constants import (
    DRIVE_ALL_WHEEL,
    DRIVE_TURF,
    GEAR_HIGH,
    GEAR_LOW,
    GEAR_PARK,
    GEAR_REVERSE,
    RAD_S_TO_RPM,
    WHEEL_FL,
    WHEEL_FR,
    WHEEL_RL,
    WHEEL_RR,
)
from acres_gym.model.cvt import gear_ratios
from acres_gym.model.ledger import account_powertrain
from acres_gym.model.wheel import shaft_torque, spin_for_torque

FL, FR, RL, RR = WHEEL_FL, WHEEL_FR, WHEEL_RL, WHEEL_RR  # wheel indices, front left to rear right

BISECTION_ITERATIONS = 56
CARRIER_BRACKET_RAD_S = 600.0  # |c| bound of the search, wheel rad/s (about 200 m/s)
OPEN_DIFF_TORQUE_BRACKET_NM = 1e6


@njit(cache=True)
def _open_diff_mean(s, w, torque_nm):
    """Mean end-of-tick speed of the two rear wheels when each receives ``torque_nm``."""
    wl = spin_for_torque(w.wheel_lin_a_nm[RL], w.wheel_lin_b_nm_s[RL], s.resist_torque_nm[RL], torque_nm)
    wr = spin_for_torque(w.wheel_lin_a_nm[RR], w.wheel_lin_b_nm_s[RR], s.resist_torque_nm[RR], torque_nm)
    return 0.5 * (wl + wr)


@njit(cache=True)
def _branch(a, b, f, torque_nm):
    """A wheel's branch of ``spin_for_torque`` at ``torque_nm`` as (1 / b, its offset / b): spin = (T - offset)
    / b with offset a + f above the friction band and a - f below it; (0, 0) inside the band (the wheel
    stands)."""
    if torque_nm > a + f:
        return 1.0 / b, (a + f) / b
    if torque_nm < a - f:
        return 1.0 / b, (a - f) / b
    return 0.0, 0.0


@njit(cache=True)
def _open_diff_exact(a_l, b_l, f_l, a_r, b_r, f_r, c):
    """The torque T on each wheel whose two end-of-tick speeds average ``c``, exactly: the mean of the two
    ``spin_for_torque`` is continuous, non-decreasing and linear between the four ends of the friction bands
    (a -/+ f of each wheel), so on the segment between them that holds the solution 0.5 (sum over the turning
    wheels of (T - offset) / b) = c gives T = (2 c + sum offset / b) / sum 1 / b. Returns NaN if no segment
    holds it (rounding at a segment's end; the caller then bisects)."""
    e0, e1, e2, e3 = a_l - f_l, a_l + f_l, a_r - f_r, a_r + f_r  # each pair ordered (f >= 0); sort all four:
    if e0 > e2:  # the last three comparators of the 4-input sorting network
        e0, e2 = e2, e0
    if e1 > e3:
        e1, e3 = e3, e1
    if e1 > e2:
        e1, e2 = e2, e1
    ends = (e0, e1, e2, e3)
    for k in range(5):
        lo = -math.inf if k == 0 else ends[k - 1]
        hi = math.inf if k == 4 else ends[k]
        probe = hi - 1.0 if k == 0 else (lo + 1.0 if k == 4 else 0.5 * (lo + hi))
        inv_l, off_l = _branch(a_l, b_l, f_l, probe)
        inv_r, off_r = _branch(a_r, b_r, f_r, probe)
        inv = inv_l + inv_r
        if inv == 0.0:  # both wheels stand on this segment: their mean is 0 there
            continue
        torque_nm = (2.0 * c + off_l + off_r) / inv
        tol = 1e-12 * (1.0 + abs(torque_nm))
        if lo - tol <= torque_nm <= hi + tol:
            return torque_nm
    return math.nan


@njit(cache=True)
def open_diff_wheel_torque(s, w, c, side):
    """Torque on each rear wheel of the open differential for carrier speed c (side: c = 0-/0+): equal
    torques whose wheel speeds average c (``_open_diff_exact``); at c = 0 with both wheels able to stand, the
    end of the torque band that holds them both on the ``side`` given."""
    if c == 0.0:
        lo = max(w.wheel_lin_a_nm[RL] - s.resist_torque_nm[RL], w.wheel_lin_a_nm[RR] - s.resist_torque_nm[RR])
        hi = min(w.wheel_lin_a_nm[RL] + s.resist_torque_nm[RL], w.wheel_lin_a_nm[RR] + s.resist_torque_nm[RR])
        if lo <= hi:
            return lo if side < 0 else hi
    torque_nm = _open_diff_exact(w.wheel_lin_a_nm[RL], w.wheel_lin_b_nm_s[RL], s.resist_torque_nm[RL],
                                 w.wheel_lin_a_nm[RR], w.wheel_lin_b_nm_s[RR], s.resist_torque_nm[RR], c)
    if not math.isnan(torque_nm):
        return torque_nm
    return open_diff_bisection(s, w, c)


@njit(cache=True)
def open_diff_bisection(s, w, c):
    """``open_diff_wheel_torque`` by bisection on the torque (the reference ``_open_diff_exact`` is tested
    against, and its fallback)."""
    lo = -OPEN_DIFF_TORQUE_BRACKET_NM
    hi = OPEN_DIFF_TORQUE_BRACKET_NM
    for _ in range(BISECTION_ITERATIONS + 8):
        mid = 0.5 * (lo + hi)
        if _open_diff_mean(s, w, mid) < c:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


@njit(cache=True)
def rear_torque(s, w, c, side, open_diff):
    """Carrier torque the rear wheels need to end the tick at carrier speed c."""
    if open_diff:
        return 2.0 * open_diff_wheel_torque(s, w, c, side)
    t = shaft_torque(w.wheel_lin_a_nm[RL], w.wheel_lin_b_nm_s[RL], s.resist_torque_nm[RL], c, side)
    return t + shaft_torque(w.wheel_lin_a_nm[RR], w.wheel_lin_b_nm_s[RR], s.resist_torque_nm[RR], c, side)


@njit(cache=True)
def front_engaged(s, w, j, c, side, adc):
    """Whether the front ring catches front wheel j (the demand drive's overrunning clutch) at c."""
    if adc:
        return True
    ring = s.front_ring_ratio * c
    free = w.wheel_free_omega_rad_s[j]
    if c > 0.0 or (c == 0.0 and side > 0):
        return ring >= free if c == 0.0 else ring > free
    return ring <= free if c == 0.0 else ring < free


@njit(cache=True)
def front_torque(s, w, c, side, awd, adc):
    """Carrier torque the front demand drive needs at carrier speed c (0 unless AWD)."""
    if not awd:
        return 0.0
    total = 0.0
    ring = s.front_ring_ratio
    for j in range(2):
        if front_engaged(s, w, j, c, side, adc):
            total += ring * shaft_torque(w.wheel_lin_a_nm[j], w.wheel_lin_b_nm_s[j], s.resist_torque_nm[j],
                                         ring * c, side)
    return total


@njit(cache=True)
def clutch_torque(p, s, c, inv_dt):
    """Clutch torque (+ engine drives) for carrier speed c, and whether the clutch holds."""
    need = p.engine_inertia_kg_m2 * (s.free_engine_rad_s - s.drive_ratio * c) * inv_dt
    if need > s.clutch_forward_nm:
        return s.clutch_forward_nm, False
    if need < -s.clutch_reverse_nm:
        return -s.clutch_reverse_nm, False
    return need, True


@njit(cache=True)
def transmission_torque(p, s, c, in_gear, reduction, inv_dt, external_nm):
    """Engine side: carrier torque the transmission delivers at carrier speed c (without park)."""
    if not in_gear:
        return external_nm
    t, _hold = clutch_torque(p, s, c, inv_dt)
    eta = p.belt_efficiency * p.gear_efficiency
    delivered = s.drive_ratio * (eta * t if t >= 0.0 else t / eta)
    inertia = p.secondary_inertia_kg_m2 * reduction * reduction * (c - s.carrier_omega_rad_s) * inv_dt
    return delivered - inertia + external_nm


@njit(cache=True)
def _imbalance(p, s, w, c, side, open_diff, awd, adc, in_gear, reduction, inv_dt, external_nm, park_nm):
    """Wheel side minus engine side at c (rising in c); the park pawl resists motion up to park_nm."""
    wheels = rear_torque(s, w, c, side, open_diff) + front_torque(s, w, c, side, awd, adc)
    engine = transmission_torque(p, s, c, in_gear, reduction, inv_dt, external_nm)
    direction = side if c == 0.0 else (1.0 if c > 0.0 else -1.0)
    return wheels - engine + direction * park_nm


@njit(cache=True)
def solve_carrier_speed(p, s, w, open_diff, awd, adc, in_gear, reduction, inv_dt, external_nm, park_nm):
    """The end-of-tick rear carrier speed c balancing wheel side and engine side (0 when held)."""
    args = (open_diff, awd, adc, in_gear, reduction, inv_dt, external_nm, park_nm)
    below = _imbalance(p, s, w, 0.0, -1.0, *args)
    above = _imbalance(p, s, w, 0.0, 1.0, *args)
    if below <= 0.0 <= above:
        return 0.0
    if above < 0.0:
        lo, hi = 0.0, CARRIER_BRACKET_RAD_S
    else:
        lo, hi = -CARRIER_BRACKET_RAD_S, 0.0
    for _ in range(BISECTION_ITERATIONS):
        mid = 0.5 * (lo + hi)
        if _imbalance(p, s, w, mid, 1.0, *args) < 0.0:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


@njit(cache=True)
def _held_lambda(s, w, include_front, ring, target_nm):
    """Common friction use lambda of the wheels held at zero carrying ``target_nm`` at the carrier:
    rear T_i = a_i + lambda f_i, engaged fronts likewise (costing ring x that)."""
    sum_a = w.wheel_lin_a_nm[RL] + w.wheel_lin_a_nm[RR]
    sum_f = s.resist_torque_nm[RL] + s.resist_torque_nm[RR]
    if include_front:
        sum_a += ring * (w.wheel_lin_a_nm[FL] + w.wheel_lin_a_nm[FR])
        sum_f += ring * (s.resist_torque_nm[FL] + s.resist_torque_nm[FR])
    if sum_f <= 0.0:
        return 0.0
    return min(1.0, max(-1.0, (target_nm - sum_a) / sum_f))


@njit(cache=True)
def _free_front(s, w, j):
    """Front wheel j not caught by the ring: it ends at its free spin with no shaft torque."""
    w.wheel_end_omega_rad_s[j] = w.wheel_free_omega_rad_s[j]
    w.wheel_end_shaft_nm[j] = 0.0
    s.front_engaged[j] = False


@njit(cache=True)
def _engage_front(s, w, j, omega, torque_nm):
    """Front wheel j driven by the ring: it ends at ``omega`` with ``torque_nm``; returns the torque."""
    w.wheel_end_omega_rad_s[j] = omega
    w.wheel_end_shaft_nm[j] = torque_nm
    s.front_engaged[j] = True
    return torque_nm


@njit(cache=True)
def _place_wheels_moving(s, w, c, open_diff, awd, adc):
    """End speeds and shaft torques of the wheels for a turning carrier; returns the front ring torque."""
    side = 1.0 if c > 0.0 else -1.0
    if open_diff:
        t = open_diff_wheel_torque(s, w, c, side)
        for i in range(2, 4):
            w.wheel_end_omega_rad_s[i] = spin_for_torque(w.wheel_lin_a_nm[i], w.wheel_lin_b_nm_s[i],
                                                         s.resist_torque_nm[i], t)
            w.wheel_end_shaft_nm[i] = t
    else:
        for i in range(2, 4):
            w.wheel_end_omega_rad_s[i] = c
            w.wheel_end_shaft_nm[i] = shaft_torque(w.wheel_lin_a_nm[i], w.wheel_lin_b_nm_s[i],
                                                   s.resist_torque_nm[i], c, side)
    ring_torque = 0.0
    for j in range(2):
        if awd and front_engaged(s, w, j, c, side, adc):
            omega = s.front_ring_ratio * c
            t = shaft_torque(w.wheel_lin_a_nm[j], w.wheel_lin_b_nm_s[j], s.resist_torque_nm[j], omega, side)
            ring_torque += _engage_front(s, w, j, omega, t)
        else:
            _free_front(s, w, j)
    return ring_torque


@njit(cache=True)
def _place_wheels_held(s, w, carrier_nm, open_diff, awd, adc, rear_low, rear_high):
    """End speeds and shaft torques with the carrier held at zero carrying ``carrier_nm``.

    With ADC the locked fronts share the load with the rears at a common friction use. Without it the
    demand drive's overrunning clutch takes load only when the rears alone cannot hold the carrier
    (``carrier_nm`` outside their band [rear_low, rear_high]): the fronts the ring catches on that side
    (``front_engaged``, as in the hold test of ``solve_carrier_speed``) carry the excess, the rears the
    rest; otherwise the fronts are free."""
    ring = s.front_ring_ratio
    lock_front = awd and adc
    ring_torque = 0.0
    if open_diff:
        t = 0.5 * carrier_nm
        for i in range(2, 4):
            w.wheel_end_omega_rad_s[i] = spin_for_torque(w.wheel_lin_a_nm[i], w.wheel_lin_b_nm_s[i],
                                                         s.resist_torque_nm[i], t)
            w.wheel_end_shaft_nm[i] = t
    elif lock_front:
        lam = _held_lambda(s, w, True, ring, carrier_nm)
        for i in range(2, 4):
            w.wheel_end_omega_rad_s[i] = 0.0
            w.wheel_end_shaft_nm[i] = w.wheel_lin_a_nm[i] + lam * s.resist_torque_nm[i]
        for j in range(2):
            ring_torque += _engage_front(s, w, j, 0.0, w.wheel_lin_a_nm[j] + lam * s.resist_torque_nm[j])
        return ring_torque
    else:
        rear_nm = carrier_nm
        if awd and (carrier_nm > rear_high or carrier_nm < rear_low):
            side = 1.0 if carrier_nm > rear_high else -1.0
            edge = rear_high if side > 0.0 else rear_low
            engaged0 = front_engaged(s, w, 0, 0.0, side, False)
            engaged1 = front_engaged(s, w, 1, 0.0, side, False)
            sum_a = 0.0
            sum_f = 0.0
            if engaged0:
                sum_a += w.wheel_lin_a_nm[FL]
                sum_f += s.resist_torque_nm[FL]
            if engaged1:
                sum_a += w.wheel_lin_a_nm[FR]
                sum_f += s.resist_torque_nm[FR]
            # the fronts' share at the carrier, within what they can carry held at zero
            front_nm = min(max(carrier_nm - edge, ring * (sum_a - sum_f)), ring * (sum_a + sum_f))
            rear_nm = carrier_nm - front_nm
            mu = 0.0
            if sum_f > 0.0:
                mu = min(1.0, max(-1.0, (front_nm / ring - sum_a) / sum_f))
            for j in range(2):
                if (engaged0 if j == 0 else engaged1):
                    ring_torque += _engage_front(s, w, j, 0.0, w.wheel_lin_a_nm[j] + mu * s.resist_torque_nm[j])
                else:
                    _free_front(s, w, j)
        else:
            for j in range(2):
                _free_front(s, w, j)
        lam = _held_lambda(s, w, False, ring, rear_nm)
        for i in range(2, 4):
            w.wheel_end_omega_rad_s[i] = 0.0
            w.wheel_end_shaft_nm[i] = w.wheel_lin_a_nm[i] + lam * s.resist_torque_nm[i]
        return ring_torque
    for j in range(2):
        _free_front(s, w, j)
    return ring_torque


@njit(cache=True)
def solve_driveline(dt, p, s, w, external_nm):
    """Spin phase of the tick: writes the wheels' end speeds and shaft torques (``wheel_end_*``), the
    engine speed, clutch, carrier and park state, and the engine-to-axle energy flows."""
    inv_dt = 1.0 / dt
    gear = s.gear
    reduction, _ring = gear_ratios(p, gear)
    in_gear = gear == GEAR_HIGH or gear == GEAR_LOW or gear == GEAR_REVERSE
    park_nm = p.park_hold_nm if gear == GEAR_PARK else 0.0
    open_diff = s.drive_mode == DRIVE_TURF
    awd = s.drive_mode == DRIVE_ALL_WHEEL and in_gear
    adc = awd and p.adc != 0 and s.pedal_input <= 0.0 and s.clutch_torque_nm < 0.0
    s.adc_active = adc
    c = solve_carrier_speed(p, s, w, open_diff, awd, adc, in_gear, reduction, inv_dt, external_nm, park_nm)

    transmission = transmission_torque(p, s, c, in_gear, reduction, inv_dt, external_nm)
    if c == 0.0:
        # the hold band of solve_carrier_speed: the rears plus, in AWD, the fronts the ring catches
        rear_low = rear_torque(s, w, 0.0, -1.0, open_diff)
        rear_high = rear_torque(s, w, 0.0, 1.0, open_diff)
        low = rear_low + front_torque(s, w, 0.0, -1.0, awd, adc)
        high = rear_high + front_torque(s, w, 0.0, 1.0, awd, adc)
        carrier_nm = min(max(transmission, low), high)
        s.park_torque_nm = carrier_nm - transmission
        ring_torque = _place_wheels_held(s, w, carrier_nm, open_diff, awd, adc, rear_low, rear_high)
    else:
        s.park_torque_nm = -park_nm if c > 0.0 else park_nm
        ring_torque = _place_wheels_moving(s, w, c, open_diff, awd, adc)
    s.front_ring_torque_nm = ring_torque
    s.parked = gear == GEAR_PARK and c == 0.0

    if in_gear:
        t_clutch, holding = clutch_torque(p, s, c, inv_dt)
    else:
        t_clutch, holding = 0.0, False
    if holding:
        engine_end = s.drive_ratio * c
    else:
        engine_end = s.free_engine_rad_s - dt * t_clutch / p.engine_inertia_kg_m2
    engine_end = max(engine_end, 0.0)
    belt_in = s.drive_ratio * c if in_gear else engine_end
    account_powertrain(dt, p, s, engine_end, t_clutch, belt_in, c, transmission - external_nm, external_nm)
    s.clutch_torque_nm = t_clutch
    s.clutch_slip_rad_s = engine_end - belt_in
    s.carrier_torque_nm = transmission
    s.carrier_omega_rad_s = c
    s.engine_rpm = engine_end * RAD_S_TO_RPM
    s.secondary_omega_rad_s = reduction * c if in_gear else 0.0
