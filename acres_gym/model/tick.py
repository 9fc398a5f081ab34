"""One physics tick of the Ranger in the seed's order (seed 002, "A physics step"), and the batched
kernel that advances N vehicles by n ticks in one call.

    step_dbw            actuators, ULC, gear
    step_steering       road-wheel angles
    step_engine, step_cvt   engine, CVT, clutch hand-over (seed StepUtvPowertrain)
    prepare_wheel x 4   contact, suspension, tyre, brakes (seed PrepareUtvWheel)
    solve_driveline     wheel spins, engine speed, fuel, ledger (seed SolveUtvDriveline)
    settle_wheel x 4    tyre forces of the tick
    step_chassis        6-DOF body, chassis ledger (seed AccountChassis)
"""

import math

from numba import njit, prange

from acres_gym.constants import DIVERGED_BELOW_GROUND, DIVERGED_NON_FINITE, DT_S, WHEEL_FL, WHEEL_FR, WHEEL_RL, WHEEL_RR
from acres_gym.dbw.reports import vehicle_report
from acres_gym.dbw.step import step_dbw
from acres_gym.model.chassis import body_kinematics, flag_diverged, step_chassis
from acres_gym.model.cvt import step_cvt
from acres_gym.model.driveline import solve_driveline
from acres_gym.model.engine import step_engine
from acres_gym.model.ledger import account_wheel
from acres_gym.model.steering import step_steering
from acres_gym.model.underbody import prepare_underbody
from acres_gym.model.wheel import prepare_wheel, settle_wheel
from acres_gym.runtime import threading_layer  # noqa: F401  (the fork-safe layer, before any parallel call)
from acres_gym.terrain.sampling import sample_height

FL, FR, RL, RR = WHEEL_FL, WHEEL_FR, WHEEL_RL, WHEEL_RR  # wheel indices, front left to rear right


@njit(cache=True)
def step_vehicle(dt, p, cmd, s, w, message_tick, terrain):
    """Advances one vehicle by one tick on ``terrain`` (``RangerSim.terrain_args``: heights, surface ids,
    wetness, origins, cells of the K terrains and the surface table). A diverged vehicle stays frozen
    (``diverged_reason``: a non-finite speed, a body speed or rotation beyond the bounds, or the centre of mass
    below the ground)."""
    if s.diverged:
        return
    height_m, surface_id, wetness, origin_xy_m, cell_m, surfaces = terrain
    step_dbw(dt, p, cmd, s, message_tick)
    step_steering(dt, p, s)
    omega, radius = s.wheel_omega_rad_s, s.rolling_radius_m
    speed_mps = 0.5 * (omega[RL] * radius[RL] + omega[RR] * radius[RR])  # rear wheels' ground speed
    step_engine(dt, p, s, speed_mps)
    step_cvt(dt, p, s, s.gear)
    k = s.terrain_index
    elastic_before = 0.0
    for i in range(4):
        elastic_before += s.elastic_energy_j[i]
    ground = (height_m[k], surface_id[k], wetness[k], origin_xy_m[k, 0], origin_xy_m[k, 1], cell_m[k])
    for i in range(4):
        prepare_wheel(dt, i, p, s, w, ground, surfaces)
    solve_driveline(dt, p, s, w, cmd.carrier_drive_nm)
    contact_power = 0.0
    for i in range(4):
        settle_wheel(i, p, s, w, w.wheel_end_omega_rad_s[i], w.wheel_end_shaft_nm[i])
        contact_power += account_wheel(dt, s, w, i, s.wheel_omega_rad_s[i], w.wheel_end_shaft_nm[i])
    prepare_underbody(p, s, w, ground)
    step_chassis(dt, p, s, w, contact_power, elastic_before)
    s.tick += 1
    if not (math.isfinite(s.engine_rpm) and math.isfinite(s.wheel_omega_rad_s[FL] + s.wheel_omega_rad_s[FR]
                                                         + s.wheel_omega_rad_s[RL] + s.wheel_omega_rad_s[RR])):
        flag_diverged(s, DIVERGED_NON_FINITE)
    ground, _gx, _gy = sample_height(height_m[k], origin_xy_m[k, 0], origin_xy_m[k, 1], cell_m[k], s.position_m[0],
                                     s.position_m[1])
    if not s.position_m[2] > ground:  # the body has no contact of its own: sunk through (after a rollover)
        flag_diverged(s, DIVERGED_BELOW_GROUND)


@njit(cache=True)
def advance(p, c, s, w, n_ticks, terrain):
    """Advances one vehicle by ``n_ticks`` holding its command (its messages count on the first tick)."""
    for t in range(n_ticks):
        step_vehicle(DT_S, p, c, s, w, t == 0, terrain)


@njit(cache=True)
def observe_vehicle(p, s, v, resolution, reports, kinematics):
    """Vehicle ``v``'s DBW reports (``dbw.reports.vehicle_report``, rounded to ``resolution``) into
    ``reports[v]`` and its body kinematics (``chassis.body_kinematics``) into column ``v`` of ``kinematics``
    (rows ``BODY_KINEMATICS``): what the environment reads after a step, written by the thread that advanced
    the vehicle while its records are in that core's cache."""
    vehicle_report(p, s, resolution[0], reports[v])
    motion = body_kinematics(p, s)
    for row in range(len(motion)):
        kinematics[row, v] = motion[row]


@njit(cache=True)
def observe_all(params, state, resolution, reports, kinematics):
    """``observe_vehicle`` of every vehicle, on the calling thread (after a reset)."""
    for v in range(state.shape[0]):
        observe_vehicle(params[v], state[v], v, resolution, reports, kinematics)


@njit(cache=True, parallel=True)
def run_ticks(params, state, work, commands, n_ticks, terrain, resolution, reports, kinematics):
    """Advances every vehicle by ``n_ticks`` ticks of 1/120 s in one call, vehicles in parallel threads;
    no Python per tick. ``terrain`` is ``RangerSim.terrain_args``; then each vehicle's reports and body
    kinematics of the state reached (``observe_vehicle``)."""
    for v in prange(state.shape[0]):
        advance(params[v], commands[v], state[v], work[v], n_ticks, terrain)
        observe_vehicle(params[v], state[v], v, resolution, reports, kinematics)


@njit(cache=True, nogil=True)
def run_ticks_serial(params, state, work, commands, n_ticks, terrain, resolution, reports, kinematics):
    """``run_ticks`` on the calling thread (one vehicle: no idle worker threads), without the GIL: another Python
    thread (an episode drawn in the background) runs beside it."""
    for v in range(state.shape[0]):
        advance(params[v], commands[v], state[v], work[v], n_ticks, terrain)
        observe_vehicle(params[v], state[v], v, resolution, reports, kinematics)
