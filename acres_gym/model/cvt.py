"""Polaris PVT (seed 002, the CVT paragraph and ``StepUtvPowertrain``) and the gearbox ratios.

Belt ratio (primary / secondary speed) relaxes with ``cvt_shift_tau_s`` toward the ratio that puts the
engine at the shift speed sqrt(n_light^2 + (n_full^2 - n_light^2) clamp(T_belt / T_peak, 0, 1)) at the
present secondary speed, within [cvt_high_ratio, cvt_low_ratio]. The centrifugal primary clutch carries
ClutchCapacityNm clamp((w^2 - w_engage^2) / (w_full^2 - w_engage^2), 0, 1) at the free engine speed; in
reverse (engine braking) the larger of that and the EBS capacity, which fades to 0 as the engine falls
to idle (linearly between idle_rpm and engage_rpm).
"""

import math

from numba import njit

from acres_gym.constants import GEAR_HIGH, GEAR_LOW, GEAR_REVERSE, RPM_TO_RAD_S


@njit(cache=True)
def gear_ratios(p, gear):
    """(signed overall reduction secondary -> rear wheels, front ring ratio) for ``gear``; (0, 0) in P/N."""
    if gear == GEAR_HIGH:
        return p.rear_high_ratio, p.rear_high_ratio / (p.front_high_ratio * p.front_drive_ratio)
    if gear == GEAR_LOW:
        return p.rear_low_ratio, p.rear_low_ratio / (p.front_low_ratio * p.front_drive_ratio)
    if gear == GEAR_REVERSE:
        return -p.rear_reverse_ratio, p.rear_reverse_ratio / (p.front_reverse_ratio * p.front_drive_ratio)
    return 0.0, 0.0


@njit(cache=True)
def shift_speed_rpm(p, belt_torque_nm):
    """Engine speed the PVT holds at a transmitted torque, rev/min."""
    share = min(1.0, max(0.0, belt_torque_nm / max(p.peak_torque_nm, 1e-9)))
    light = p.shift_light_rpm
    full = p.shift_full_rpm
    return math.sqrt(light * light + (full * full - light * light) * share)


@njit(cache=True)
def target_ratio(p, secondary_rad_s, belt_torque_nm):
    """Belt ratio that puts the engine at the shift speed, within the ratio range."""
    omega = abs(secondary_rad_s)
    shift = shift_speed_rpm(p, belt_torque_nm) * RPM_TO_RAD_S
    if omega * p.cvt_low_ratio <= shift:
        return p.cvt_low_ratio
    return min(p.cvt_low_ratio, max(p.cvt_high_ratio, shift / omega))


@njit(cache=True)
def clutch_forward_capacity(p, engine_rad_s):
    """Centrifugal clutch capacity at an engine speed, N m."""
    w2 = engine_rad_s * engine_rad_s
    e = p.engage_rpm * RPM_TO_RAD_S
    f = p.full_engage_rpm * RPM_TO_RAD_S
    return p.clutch_capacity_nm * min(1.0, max(0.0, (w2 - e * e) / (f * f - e * e)))


@njit(cache=True)
def ebs_capacity(p, engine_rpm):
    """Engine Braking System reverse capacity, N m, fading to 0 as the engine falls to idle."""
    if p.ebs == 0:
        return 0.0
    span = max(p.engage_rpm - p.idle_rpm, 1.0)
    return p.ebs_capacity_nm * min(1.0, max(0.0, (engine_rpm - p.idle_rpm) / span))


@njit(cache=True)
def step_cvt(dt, p, s, gear):
    """Belt ratio, drive ratio R and clutch capacities of this tick (after ``step_engine``).

    The torque the shift speed responds to is the belt torque as the secondary's helix feels it: the
    clutch torque filtered with the shift time constant (the helix and belt do not follow the tick-to-tick
    inertia torque of the engine; without the filter the ratio and the engine inertia form a loop that
    oscillates at the tick rate when the shift is fast).
    """
    reduction, ring = gear_ratios(p, gear)
    secondary = reduction * s.carrier_omega_rad_s
    lag = 1.0 - math.exp(-dt / p.cvt_shift_tau_s)
    s.belt_torque_nm += (s.clutch_torque_nm - s.belt_torque_nm) * lag
    goal = target_ratio(p, secondary, s.belt_torque_nm)
    s.cvt_ratio += (goal - s.cvt_ratio) * lag
    s.drive_ratio = s.cvt_ratio * reduction
    s.front_ring_ratio = ring
    forward = clutch_forward_capacity(p, s.free_engine_rad_s)
    s.clutch_forward_nm = forward
    s.clutch_reverse_nm = max(forward, ebs_capacity(p, s.engine_rpm))
