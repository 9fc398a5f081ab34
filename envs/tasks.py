"""The registered tasks: ``RangerSpeedTracking`` and ``RangerPathFollowing`` (and their vector forms).

Each is a ``RangerEnv`` with a default task config under ``configs/tasks``; ``gymnasium.make`` builds
them from the ids ``acres_gym/RangerSpeedTracking-v1`` and ``acres_gym/RangerPathFollowing-v1`` (after
``import acres_gym``), and ``gymnasium.make_vec(id, num_envs=N, vectorization_mode="vector_entry_point")``
builds the native vector forms (``RangerVectorEnv``: N vehicles, one simulator call per step).
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

    ``gymnasium.make("acres_gym/RangerSpeedTracking-v1", render_mode=None, config=None, **overrides)``:
    ``config`` a dict, task config name or YAML path merged over ``configs/tasks/speed_tracking.yaml``;
    ``**overrides`` top-level config keys (``control_hz=10``, ``action_mode="steer_angle+pedals"``,
    ``randomization={...}``, ``rewards={...}``). Unknown keys raise ``ValueError`` listing the allowed ones.
    ``render_mode``: None, ``"human"`` or ``"rgb_array"``.

    ## Version History

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

    ``gymnasium.make("acres_gym/RangerPathFollowing-v1", render_mode=None, config=None, **overrides)``,
    merged over ``configs/tasks/path_following.yaml``; as for ``RangerSpeedTracking``.

    ## Version History

    * v1: the reachable part of every path lies inside the terrain (a path that leaves it is drawn again
      with a new heading and shape; in v0 about 1 episode in 8 ran off the map at its end); the report
      fields arrive at the CAN resolution of their messages; the speed profile is drawn before the path.
    * v0: initial version.
    """

    default_config = "path_following"


class RangerSpeedTrackingVector(RangerVectorEnv):
    """``RangerSpeedTracking`` as a native vector env of ``num_envs`` vehicles (see ``RangerVectorEnv``)."""

    default_config = "speed_tracking"


class RangerPathFollowingVector(RangerVectorEnv):
    """``RangerPathFollowing`` as a native vector env of ``num_envs`` vehicles (see ``RangerVectorEnv``)."""

    default_config = "path_following"


TASK_ENVS = {"speed_tracking": (RangerSpeedTracking, RangerSpeedTrackingVector),
             "path_following": (RangerPathFollowing, RangerPathFollowingVector)}
