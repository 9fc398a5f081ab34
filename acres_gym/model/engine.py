"""ProStar 999 cc engine (seed 002 ``UtvEngineCurves`` and the engine part of ``StepUtvPowertrain``).

Curves at a speed: full-load (WOT) torque from the torque curve through ``Torque`` (0 at and above
max_rpm: the rev limiter), friction torque from the FMEP correlation FMEP V_d / (4 pi) with
FMEP = a + b krpm + c krpm^2, and the closed-throttle pumping torque PumpingBar V_d / (4 pi).

Request: u = max(pedal^exponent x top-speed governor, idle governor), lagged by ``engine_tau_s``. The
top-speed governor passes the whole pedal request up to ``top_speed_mps`` and fades it to 0 over
``TOP_SPEED_GOVERNOR_BAND_MPS`` above, so ``top_speed_mps`` is the top speed the vehicle reaches (27.57 m/s
for 27.7 at full throttle in H on level dry asphalt).
Fuelled while u > 0, below the rev limiter and with fuel in the tank. Indicated torque u (WOT + friction)
while fuelled (times the share of fuel the rev limiter passes, ``rev_limiter_share``), 0 otherwise; brake
torque = indicated - friction - (1 - u) pumping, so u = 1 gives the full-load curve and u = 0 the motoring
curve with the fuel cut. The pumping loss follows the request u even while the fuel is cut (rev limiter,
empty tank): the cut stops combustion, not the throttle, which stays open. A request below 1e-6 (the
fuel decision's threshold) counts as a closed throttle.
"""

import math

from numba import njit

from acres_gym.constants import RAD_S_TO_RPM
from acres_gym.model.curves import torque_from_points

BAR_TO_PA = 1e5
TOP_SPEED_GOVERNOR_BAND_MPS = 1.0  # governor fades the request over this band above the top speed
# The rev limiter cuts whole combustion events; at the limit a twin fires about once per 1/120 s tick, so
# the cut is modelled as the share of a tick's fuel that is cut, rising over this band below max_rpm
# (an on/off cut evaluated once per tick would bounce the engine at the tick rate).
REV_LIMITER_BAND_RPM = 100.0


@njit(cache=True)
def engine_curves(p, rpm):
    """(WOT brake torque, friction torque, closed-throttle pumping torque), N m, at ``rpm``."""
    wot = torque_from_points(p.torque_curve_rpm, p.torque_curve_nm, p.torque_curve_count,
                             p.peak_torque_nm, p.max_rpm, rpm)
    krpm = max(rpm, 0.0) / 1000.0
    fmep_bar = p.fmep_a_bar + p.fmep_b_bar_per_krpm * krpm + p.fmep_c_bar_per_krpm2 * krpm * krpm
    volume_m3 = p.displacement_l * 1e-3
    per_bar = BAR_TO_PA * volume_m3 / (4.0 * math.pi)
    return wot, fmep_bar * per_bar, p.pumping_bar * per_bar


@njit(cache=True)
def rev_limiter_share(p, rpm):
    """Share of the fuel the rev limiter lets through: 1 below max_rpm - band, 0 at and above max_rpm."""
    return min(1.0, max(0.0, (p.max_rpm - rpm) / REV_LIMITER_BAND_RPM))


@njit(cache=True)
def top_speed_governor(p, speed_mps):
    """Multiplier on the pedal request: 1 up to ``top_speed_mps``, fading to 0 over the governor band
    above it, so ``top_speed_mps`` is the top speed reached (on level ground at full throttle the request
    the drag needs is most of the full one: the vehicle settles a small part of the band above it in
    wheel speed, within about 1 % of it in ground speed). ``speed_mps`` is the rear wheels' spin x
    rolling radius; 0 = no governor."""
    if p.top_speed_mps <= 0.0:
        return 1.0
    return min(1.0, max(0.0, (p.top_speed_mps + TOP_SPEED_GOVERNOR_BAND_MPS - abs(speed_mps))
                        / TOP_SPEED_GOVERNOR_BAND_MPS))


@njit(cache=True)
def idle_governor(p, rpm):
    """Idle request: idle_gain x relative speed error below idle, within 0..1."""
    return min(1.0, max(0.0, p.idle_gain * (p.idle_rpm - rpm) / p.idle_rpm))


@njit(cache=True)
def step_engine(dt, p, s, speed_mps):
    """Request, throttle lag, fuel state and the engine torques of this tick (seed StepUtvPowertrain)."""
    omega = s.engine_rpm / RAD_S_TO_RPM
    rpm = s.engine_rpm
    pedal = min(1.0, max(0.0, s.throttle_pedal_pct / 100.0))
    s.pedal_input = pedal
    target = max(pedal ** p.pedal_exponent * top_speed_governor(p, speed_mps), idle_governor(p, rpm))
    if p.engine_tau_s > 0.0:
        s.engine_request += (target - s.engine_request) * (1.0 - math.exp(-dt / p.engine_tau_s))
    else:
        s.engine_request = target
    u = s.engine_request
    has_fuel = p.fuel_tank_l <= 0.0 or s.fuel_remaining_l > 0.0
    fuelled = u > 1e-6 and rpm < p.max_rpm and has_fuel
    s.fuelled = fuelled
    u_eff = u if fuelled else 0.0
    # the throttle stays where the request put it when the fuel is cut (rev limiter, empty tank): the
    # pumping loss follows u (seed), with a request below the fuel decision's 1e-6 taken as closed
    u_throttle = u if u > 1e-6 else 0.0
    wot, friction, pumping = engine_curves(p, rpm)
    limiter = rev_limiter_share(p, rpm)
    indicated = u_eff * limiter * (wot + friction)
    pumping_loss = (1.0 - u_throttle) * pumping
    brake = indicated - friction - pumping_loss
    s.indicated_torque_nm = indicated
    s.friction_torque_nm = friction
    s.pumping_torque_nm = pumping_loss
    s.engine_torque_nm = brake
    s.drag_torque_nm = friction + pumping_loss + p.accessory_nm
    s.free_engine_rad_s = max(0.0, omega + dt * (brake - p.accessory_nm) / p.engine_inertia_kg_m2)
