"""The registered tasks: ``RangerSpeedTracking``, ``RangerPathFollowing``, ``RangerHillClimb`` and
``RangerOffroadNavigation`` (and their vector forms).

Each is a ``RangerEnv`` with a default task config under ``configs/tasks``; ``gymnasium.make`` builds
them from the ids ``acres_gym/RangerSpeedTracking-v3`` and ``acres_gym/RangerPathFollowing-v3`` (after
``import acres_gym``), and ``gymnasium.make_vec(id, num_envs=N, vectorization_mode="vector_entry_point")``
builds the native vector forms (``RangerVectorEnv``: N vehicles, one simulator call per step).

This module holds the environment classes (a default config and the Gymnasium docstring each); what a task
asks of the vehicle and when its episode ends (reference path and speed, errors, termination) is its module
beside this one: ``path_speed`` (``make_task``) and ``navigation`` (see ``acres_gym.envs.tasks``).
"""

from __future__ import annotations

from acres_gym.envs.ranger_env import RangerEnv
from acres_gym.envs.vector_env import RangerVectorEnv


class RangerSpeedTracking(RangerEnv):
    """
    ## Description

    A Polaris Ranger CREW XP 1000 (a 4-seat utility vehicle, 999 cc twin, CVT, on-demand AWD) with its
    Dataspeed drive-by-wire layer must follow a randomised target-speed profile, with stops, along a
    straight line across randomised ground: fractal rough grass with patches of gravel, packed dirt and a
    randomly drawn soil, random wetness, random payload and occupants, and small hardware biases of the
    speed sensor, throttle and brake. The agent drives through the DBW messages (``ThrottleCmd`` /
    ``BrakeCmd`` pedal percent, a ``SteeringCmd`` holding the wheel straight) at 20 Hz; the physics
    runs at 120 Hz. The vehicle's own ULC (``acres_gym.agents.baselines.UlcPurePursuit``) and a PID on the pedals
    (``acres_gym.agents.baselines.PedalPid``) are the classical baselines.

    ## Action Space

    ``Box(-1, 1, (1,), float32)`` in the default ``pedals`` mode: one signed pedal axis, throttle
    100 x a percent for a > 0, brake -100 x a percent for a < 0. Other modes (``action_mode`` in the config):
    ``steer_angle+pedals``, ``curvature+ulc_velocity``, ``yaw_rate+ulc_velocity``, ``steer_angle+ulc_accel``,
    ``dbw_command``
    (see ``acres_gym.envs.actions``).

    ## Observation Space

    A ``Dict`` of float32 ``Box`` entries (see ``acres_gym.envs.observations``): the ds_dbw report fields
    (steering wheel angle and command, throttle and brake outputs, gear one-hot, ULC vel_ref / vel_meas /
    accel_meas, vehicle velocity, wheel speeds, dbw_enabled, report validity flags), body yaw rate, roll
    and pitch, the target speed now and 1, 2, 3 s ahead, the lateral and heading error from the line, 7
    path points ahead in the body frame, and the previous action.

    ## Rewards

    Per step (weights from the config, ``acres_gym.envs.rewards``): ``speed_error`` exp(-|v - v_target| / 2 m/s)
    x 1.0 (a slope toward the target from any speed), ``action_rate`` -mean((a_t - a_t-1)^2) x 0.1,
    ``energy`` -fuel g x 0.5, ``rollover`` -1 x 20 when the vehicle rolls over or the simulation
    diverges, ``off_course`` -1 x 20 when it leaves the 8 m corridor or the terrain.
    ``info["reward_terms"]`` holds each weighted term.

    ## Starting State

    At rest in H (a ``GearCmd`` for H is sent with the first control step), engine idling, on level ground
    (a flat 6 m area) at (-130, 0) m heading +x; the speed profile starts at 0 m/s and ramps at 1 m/s^2.

    ## Episode End

    Terminated when the vehicle rolls over (``info["rolled_over"]``), the simulation diverges
    (``info["diverged"]``), the vehicle is more than 8 m from the line (``info["off_course"]``), leaves the
    terrain (``info["off_terrain"]``) or reaches the end of the line (``info["path_complete"]``).
    Truncated after 30 s (600 steps at 20 Hz).

    ## Arguments

    ``gymnasium.make("acres_gym/RangerSpeedTracking-v3", render_mode=None, config=None, **overrides)``:
    ``config`` a dict, task config name or YAML path merged over ``configs/tasks/speed_tracking.yaml``;
    ``**overrides`` top-level config keys (``control_hz=10``, ``action_mode="steer_angle+pedals"``,
    ``randomization={...}``, ``rewards={...}``). Unknown keys raise ``ValueError`` listing the allowed ones.
    ``render_mode``: None, ``"human"`` or ``"rgb_array"``.

    ## Version History

    * v3: the soil contact follows Wong: a tyre on soil pulls its shear thrust less its motion
      resistance, a force at the contact that acts like friction at rest (a vehicle no longer drives where
      the soil's drawbar pull is negative, as on snow); sinkage is bounded by the tyre radius and a vehicle
      sunk to its ground clearance rests on its underbody (``high_centred``); soils measured at two moisture
      contents follow the cell's wetness; clays grip as rubber on firm earth where the tyre does not sink.
      Episodes on hard ground are unchanged; every episode that crosses a soil patch changes.
    * v2: the vehicle model's edge regimes changed: the top-speed governor holds ``engine.top_speed_mps``
      (the H top speed was 3.8 % below it), the pumping loss while the fuel is cut follows the torque
      request, the rolling radius never falls below the rim's and a rim strike is recorded
      (``tyre_bottomed``), a body sunk through the ground is flagged ``diverged``, and tyres too soft
      for their load are refused. Episodes that stay away from these regimes are unchanged.
    * v1: the report fields arrive at the CAN resolution of their messages (0.1 deg, 0.025 %, 0.05 bar,
      0.02 m/s for the ULC, 0.01 km/h for VehicleVelocity); the path never leaves the terrain (it ends
      with ``path_complete`` where it would); the speed profile is drawn before the path.
    * v0: initial version.
    """

    default_config = "speed_tracking"


class RangerPathFollowing(RangerEnv):
    """
    ## Description

    The Ranger must follow a randomised winding path (three random sinusoids of curvature up to
    0.02..0.06 1/m, a 10 m straight start, random initial heading) at a target speed of 3..7 m/s that
    changes every 8..15 s and never asks for more than 2 m/s^2 of lateral acceleration, over rough ground
    with surface patches, random wetness, payload and hardware biases. The default interface is the one an
    autonomy stack uses: a path curvature command (``SteeringCmd`` CMD_CURVATURE) and a ULC velocity command,
    at 20 Hz. Pure pursuit with the vehicle's ULC (``acres_gym.agents.baselines.UlcPurePursuit``) is the baseline.

    ## Action Space

    ``Box(-1, 1, (2,), float32)`` in the default ``curvature+ulc_velocity`` mode: [curvature, speed]:
    curvature a0 x 0.2 1/m, ULC velocity (a1 + 1) / 2 x 12 m/s. Other modes as for
    ``RangerSpeedTracking`` (``acres_gym.envs.actions``).

    ## Observation Space

    The same ``Dict`` as ``RangerSpeedTracking`` (``acres_gym.envs.observations``): DBW report fields, body rates and
    attitude, target speed now and 1, 2, 3 s ahead, lateral and heading error, path points 2..20 m ahead in
    the body frame, previous action.

    ## Rewards

    ``lateral_error`` exp(-(e/0.5 m)^2) x 1.0, ``heading_error`` exp(-(psi/0.2 rad)^2) x 0.3,
    ``speed_error`` exp(-(v - v_target)^2 / 1 m^2/s^2) x 0.3, ``action_rate`` x 0.1, ``rollover`` x 20,
    ``off_course`` x 20 (the corridor is 4 m each side). ``info["reward_terms"]`` holds each weighted term.

    ## Starting State

    At rest in H on a flat 6 m area at the origin, heading along the path's start (uniform in [-pi, pi)).

    ## Episode End

    Terminated on rollover, divergence, more than 4 m from the path, leaving the terrain or reaching the
    path's end (``info`` flags as for ``RangerSpeedTracking``); truncated after 30 s (600 steps at 20 Hz).

    ## Arguments

    ``gymnasium.make("acres_gym/RangerPathFollowing-v3", render_mode=None, config=None, **overrides)``,
    merged over ``configs/tasks/path_following.yaml``; as for ``RangerSpeedTracking``.

    ## Version History

    * v3: the soil contact follows Wong: a tyre on soil pulls its shear thrust less its motion
      resistance, a force at the contact that acts like friction at rest (a vehicle no longer drives where
      the soil's drawbar pull is negative, as on snow); sinkage is bounded by the tyre radius and a vehicle
      sunk to its ground clearance rests on its underbody (``high_centred``); soils measured at two moisture
      contents follow the cell's wetness; clays grip as rubber on firm earth where the tyre does not sink.
      Episodes on hard ground are unchanged; every episode that crosses a soil patch changes.
    * v2: the vehicle model's edge regimes changed: the top-speed governor holds ``engine.top_speed_mps``
      (the H top speed was 3.8 % below it), the pumping loss while the fuel is cut follows the torque
      request, the rolling radius never falls below the rim's and a rim strike is recorded
      (``tyre_bottomed``), a body sunk through the ground is flagged ``diverged``, and tyres too soft
      for their load are refused. Episodes that stay away from these regimes are unchanged.
    * v1: the reachable part of every path lies inside the terrain (a path that leaves it is drawn again
      with a new heading and shape; in v0 about 1 episode in 8 ran off the map at its end); the report
      fields arrive at the CAN resolution of their messages; the speed profile is drawn before the path.
    * v0: initial version.
    """

    default_config = "path_following"


class RangerHillClimb(RangerEnv):
    """
    ## Description

    The Ranger, with up to 450 kg of cargo and 1-4 occupants, must follow a slow target-speed profile
    (1-6 m/s, with stops) straight up a grade of 5 to 19 % of deformable soil (one of five soils of Wong's
    table, patches of grass and mud), choosing the range: loaded, on the wettest upland or rubicon sandy
    loam, H stalls from about 11 % where L climbs (L has 2.25x the wheel torque of H). Every episode
    climbs in L: by the model's own trafficability (``acres_gym.envs.tasks.trafficability.grade_limit``, L
    and AWD) the grade is at most 0.76x the climbable grade of any soil, wetness and payload the episode can
    draw. The agent drives the pedals and asks for H or L; the DBW layer refuses a shift while the vehicle
    moves, as on the vehicle. This is the ``hill_climb`` task config (``configs/tasks/hill_climb.yaml``) as
    its own id.

    ## Action Space

    ``Box(-1, 1, (2,), float32)``: [pedal, range]: throttle 100 x a0 percent for a0 > 0, brake -100 x a0
    below; range H at a1 >= 1/3, L at a1 <= -1/3 (``acres_gym.envs.actions``).

    ## Observation Space

    The ``Dict`` of ``RangerSpeedTracking`` (``acres_gym.envs.observations``).

    ## Rewards

    ``speed_error`` exp(-|v - v_target| / 2 m/s) x 1.0, ``action_rate`` x 0.1, ``energy`` -fuel g x 0.5,
    ``rollover`` x 20, ``off_course`` x 20.

    ## Starting State

    At rest in H at (-100, 0) m heading +x (uphill), 50 m of ground behind.

    ## Episode End

    As ``RangerSpeedTracking``; truncated after 30 s (600 steps at 20 Hz).

    ## Arguments

    ``gymnasium.make("acres_gym/RangerHillClimb-v2", render_mode=None, config=None, **overrides)``.

    ## Version History

    * v2: every episode can be climbed: grades of 5 to 19 % (were 5 to 35 %) on soils L climbs from rest,
      ``lete_sand``, ``rubicon_sandy_loam``, ``north_gower_clayey_loam``, ``upland_sandy_loam`` and
      ``grenville_loam`` (``clayey_soil``, which L climbs only to 2-11 %, and ``sandy_loam`` left out), their
      parameters scaled by half the default spread. In v1 about 3 episodes in 10 drew a grade steeper than the
      vehicle climbs on its soil.
    * v1: the soil contact follows Wong: a tyre on soil pulls its shear thrust less its motion
      resistance, a force at the contact that acts like friction at rest (a vehicle no longer drives where
      the soil's drawbar pull is negative, as on snow); sinkage is bounded by the tyre radius and a vehicle
      sunk to its ground clearance rests on its underbody (``high_centred``); soils measured at two moisture
      contents follow the cell's wetness; clays grip as rubber on firm earth where the tyre does not sink.
      Episodes on hard ground are unchanged; every episode that crosses a soil patch changes.
    * v0: the ``hill_climb`` config of ``RangerSpeedTracking-v2`` under its own id (same episodes for the
      same seeds).
    """

    default_config = "hill_climb"


class RangerOffroadNavigation(RangerEnv):
    """
    ## Description

    The Ranger must reach a goal 80-250 m away across generated ground: hills whose slopes reach and
    exceed what it climbs on their soil, patches of soils from the soil library (some where 2WD stalls and
    AWD gets through, some that stop it on any slope whatever it does), wetness, and no-go areas (water,
    dense vegetation). It sees the ground only through ``local_map``, an egocentric map 24 m ahead and
    16 m to each side, with the height, the grade along its heading, a trafficability figure computed from
    each cell's soil with the vehicle's own tyre and driveline model, and the no-go mask. Every episode is
    solvable: a route the vehicle drives in L / AWD exists (``acres_gym.envs.tasks.offroad``). Baselines:
    ``straight_line`` (ULC and pure pursuit straight at the goal) and ``terrain_planner`` (a grid search on
    the true terrain; a reference that sees the whole map) in ``acres_gym.agents.baselines``.

    ## Action Space

    ``Box(-1, 1, (4,), float32)`` (``curvature+ulc_velocity`` with ``gear_axis`` and ``drive_axis``):
    [curvature, speed, range, drive mode]: curvature a0 x 0.2 1/m, ULC velocity (a1 + 1) / 2 x 8 m/s,
    range H at a2 >= 1/3 and L at a2 <= -1/3 (refused while moving, as on the vehicle), AWD switch AWD at
    a3 >= 1/3, Turf at a3 <= -1/3, 2WD between (``acres_gym.envs.actions``).

    ## Observation Space

    A ``Dict`` (``acres_gym.envs.observations``): the DBW report fields, body yaw rate, roll and pitch,
    ``goal`` (distance m, bearing rad in the body frame), ``local_map`` ``Box(-100, 100, (4, 16, 16),
    float32)`` and the previous action. ``local_map`` channels (``acres_gym.envs.tasks.navigation``):

    ============= ======= ==========================================================================
    channel       unit    meaning
    ============= ======= ==========================================================================
    ``height``    m       height of the cell minus the height under the rear-axle midpoint
    ``grade``     1       slope along the vehicle's heading (tan, + uphill)
    ``traction``  1       steepest grade a hill start climbs on the cell in L / AWD (tan; from its soil
                          and wetness through ``acres_gym.envs.tasks.trafficability``)
    ``no_go``     0 / 1   1 in a no-go area and beyond the terrain's edge (less the 2 m margin)
    ============= ======= ==========================================================================

    Row 0 is the farthest ahead (24 m), column 0 the farthest left; 2 m cells (config keys
    ``task_options.local_map``: ``cell_m``, ``rows``, ``cols``, ``behind_m``, ``channels``, and
    ``stall_traction``, a value in [-1, 0] the traction channel reads wherever even level ground stalls in
    place of the soil's negative figure; default null). ``channels`` may add ``route_time`` (s): the time to
    the goal along the quickest route a search over the whole terrain finds from the cell, less the least such
    time on the map, capped at ``route_time_cap_s`` (default 30), which cells with no route read (no-go areas kept
    ``route_clearance_m`` away, default 5, as the terrain planner keeps them): the view of a
    vehicle that carries a map of the whole ground (the module docstring of
    ``acres_gym.envs.tasks.navigation``).

    ## Rewards

    ``progress`` x 0.1 per metre gained toward the goal, ``time`` -0.02 per second, ``energy`` -0.05 per
    gram of fuel, ``goal`` +20, ``no_go`` -10, ``stuck`` -10, ``rollover`` -10. ``info["reward_terms"]``
    holds each weighted term.

    ## Starting State

    At rest in H (a ``GearCmd`` for H with the first step), on a level 6 m spot, heading within 0.5 rad of
    the direction of the goal.

    ## Episode End

    Terminated when the goal is within 3 m (``info["goal_reached"]``), the vehicle enters a no-go area
    (``info["no_go"]``), moves less than 1 m in 15 s (``info["stuck"]``), rolls over, diverges or leaves
    the terrain. Truncated after 150 s (1500 steps at 10 Hz), the registered ``max_episode_steps``.
    ``info["ground_cause"]`` says why an episode ended short of the goal outside no-go areas: 1 soil,
    2 grade, 3 other, 4 high-centred (``acres_gym.envs.tasks.navigation``).

    ## Arguments

    ``gymnasium.make("acres_gym/RangerOffroadNavigation-v2", render_mode=None, config=None, **overrides)``,
    merged over ``configs/tasks/offroad_navigation.yaml``; ``config={"task_options": {"split": "test"}}``
    draws the held-out ground.

    ## Version History

    * v2: ``local_map``'s ``no_go`` channel is 1 beyond the terrain's edge (less the 2 m margin at which an
      episode ends off the terrain): the map used to repeat the edge cells there, so a policy could not see
      the edge it was about to leave by (0.01-0.03 of the held-out episodes of policies trained on v1 ended
      off the terrain). Dynamics, terrain, goals and rewards are unchanged; the observation changes near
      the edge.
    * v1: the soil contact follows Wong: a tyre on soil pulls its shear thrust less its motion
      resistance, a force at the contact that acts like friction at rest (a vehicle no longer drives where
      the soil's drawbar pull is negative, as on snow); sinkage is bounded by the tyre radius and a vehicle
      sunk to its ground clearance rests on its underbody (``high_centred``); soils measured at two moisture
      contents follow the cell's wetness; clays grip as rubber on firm earth where the tyre does not sink.
      Episodes on hard ground are unchanged; every episode that crosses a soil patch changes.
      ``ground_cause`` 4: the episode ended high-centred. The generator follows the contact: ground that is
      not ``trafficability.drivable`` (a soil the vehicle high-centres in or cannot propel itself on) is kept
      clear of by the route search as a no-go area is, the start and the goal stand on pads of the base
      surface, and the training split's ground patches no longer include snow and clayey soil (impassable
      at every drawn wetness; they stay line obstacles). Every episode of this id changes.
    * v0: initial version.
    """

    default_config = "offroad_navigation"


class RangerSpeedTrackingVector(RangerVectorEnv):
    """``RangerSpeedTracking`` as a native vector env of ``num_envs`` vehicles (see ``RangerVectorEnv``)."""

    default_config = "speed_tracking"


class RangerPathFollowingVector(RangerVectorEnv):
    """``RangerPathFollowing`` as a native vector env of ``num_envs`` vehicles (see ``RangerVectorEnv``)."""

    default_config = "path_following"


class RangerHillClimbVector(RangerVectorEnv):
    """``RangerHillClimb`` as a native vector env of ``num_envs`` vehicles (see ``RangerVectorEnv``)."""

    default_config = "hill_climb"


class RangerOffroadNavigationVector(RangerVectorEnv):
    """``RangerOffroadNavigation`` as a native vector env of ``num_envs`` vehicles (see ``RangerVectorEnv``)."""

    default_config = "offroad_navigation"
