"""The simulator core: chassis, suspension, tyres on hard ground, batching, determinism, robustness."""

import math
import os
import subprocess
import sys

import numpy as np
import pytest

from acres_gym.constants import DRIVE_TURF, DRIVE_TWO_WHEEL, GEAR_NEUTRAL, STANDARD_GRAVITY_MPS2
from acres_gym.dbw.command import make_commands
from acres_gym.sim import RangerSim
from acres_gym.state import STATE_DTYPE
from acres_gym.terrain import rough
from acres_gym.tools import scenarios


def test_static_loads_and_no_drift():
    r = scenarios.static_rest(seconds=3.0)
    assert abs(r["load_sum_ratio"] - 1.0) < 0.005
    assert r["corner_error_max"] < 0.03
    assert r["drift_mps"] < 1e-3


def test_static_loads_are_the_finalised_moment_balance():
    sim = RangerSim(1)
    p = sim.params[0]
    weight = p.mass_kg * STANDARD_GRAVITY_MPS2
    front = weight * p.cg_forward_m / p.wheelbase_m
    assert math.isclose(p.static_load_n[0] + p.static_load_n[1], front, rel_tol=1e-12)
    assert math.isclose(p.static_load_n.sum(), weight, rel_tol=1e-12)


def test_braked_on_20_percent_grade_holds():
    r = scenarios.hold_on_grade(percent=20.0, brake_bar=40.0, gear=GEAR_NEUTRAL, seconds=10.0)
    assert r["moved_m"] < 0.01


def test_unbraked_in_neutral_rolls_down_the_grade():
    r = scenarios.hold_on_grade(percent=20.0, brake_bar=0.0, gear=GEAR_NEUTRAL, seconds=3.0)
    assert r["moved_m"] > 1.0
    assert r["speed_mps"] < -1.0


def test_turning_radius_matches_kinematics():
    """Turf (open rear differential): the rear-axle path radius is L / tan(bicycle angle) within 5 %."""
    r = scenarios.steady_circle(steering_wheel_deg=200.0, speed_mps=2.0, drive_mode=DRIVE_TURF)
    assert abs(r["speed_mps"] - 2.0) < 0.3
    assert abs(r["radius_m"] / r["kinematic_radius_m"] - 1.0) < 0.05


def test_locked_rear_axle_understeers_on_a_tight_circle():
    """With the rear differential locked (2WD) the rear tyres fight each other: the circle is wider."""
    turf = scenarios.steady_circle(200.0, 2.0, DRIVE_TURF)
    locked = scenarios.steady_circle(200.0, 2.0, DRIVE_TWO_WHEEL)
    assert locked["radius_m"] > turf["radius_m"] * 1.05


def test_full_brake_deceleration_dry_and_wet():
    dry = scenarios.brake_stop("dry_asphalt", 10.0)
    wet = scenarios.brake_stop("wet_asphalt", 10.0)
    assert 0.6 <= dry["mean_decel_g"] <= 0.95
    assert dry["stop_distance_m"] < wet["stop_distance_m"]


def test_two_runs_are_bit_identical():
    def run():
        sim = RangerSim(1, terrain=rough(seed=4, roughness_m=0.2, size_m=100.0))
        sim.commands.driver_throttle_pct = 60.0
        sim.commands.driver_steers = True
        sim.commands.driver_steering_deg = 90.0
        sim.step(600)
        return sim.state.copy()

    a, b = run(), run()
    assert a.tobytes() == b.tobytes()


def test_batch_of_64_equals_single_vehicle():
    single = RangerSim(1)
    batch = RangerSim(64)
    for sim in (single, batch):
        sim.commands.driver_throttle_pct = 70.0
        sim.commands.driver_steers = True
        sim.commands.driver_steering_deg = -120.0
        sim.step(480)
    for v in (0, 17, 63):
        assert batch.state[v].tobytes() == single.state[0].tobytes()


def test_step_checks_its_arguments():
    sim = RangerSim(2)
    with pytest.raises(ValueError, match="n_ticks"):
        sim.step(-1)
    with pytest.raises(TypeError, match="COMMAND_DTYPE"):
        sim.step(1, make_commands(3))
    with pytest.raises(ValueError, match="n = 0"):
        RangerSim(0)


def test_ten_minutes_on_rough_terrain_with_random_inputs():
    """Random steering and carrier drive torque for 10 simulated minutes: finite state, bounded energy,
    the wheels stay on the ground unless a rollover is reported."""
    terrain = rough(seed=11, roughness_m=0.35, size_m=200.0, cell_m=0.5)
    sim = RangerSim(1, terrain=terrain)
    sim.state.gear = GEAR_NEUTRAL
    sim.state.gear_target = GEAR_NEUTRAL
    rng = np.random.default_rng(5)
    sim.commands.driver_steers = True
    airborne = 0
    for _ in range(600 * 2):  # 10 min in 0.5 s pieces
        sim.commands.driver_steering_deg = float(rng.uniform(-400, 400))
        sim.commands.carrier_drive_nm = float(rng.uniform(-600, 1500))
        x, y = sim.state.position_m[0, :2]
        if abs(x) > 80 or abs(y) > 80:  # stay on the map: turn back toward the centre
            sim.reset()
            sim.state.gear = GEAR_NEUTRAL
            sim.state.gear_target = GEAR_NEUTRAL
        sim.step(60)
        s = sim.state[0]
        assert not s.diverged
        assert np.all(np.isfinite(s.position_m)) and np.all(np.isfinite(s.velocity_mps))
        assert np.linalg.norm(s.velocity_mps) < 40.0
        if not s.in_contact.any():
            airborne += 1
        if s.rolled_over:
            sim.reset()
            sim.state.gear = GEAR_NEUTRAL
            sim.state.gear_target = GEAR_NEUTRAL
    assert airborne < 20  # half-second samples with no wheel on the ground
    book = sim.ledger(0)
    total_in = book["fuel_j"] + book["external_j"]
    assert abs(book["residual_j"]) < 0.01 * max(total_in, 1.0)


def test_state_fields_are_readable_with_units():
    names = STATE_DTYPE.names
    for field in ("position_m", "orientation_wxyz", "velocity_mps", "angular_velocity_rad_s",
                  "wheel_omega_rad_s", "normal_load_n", "suspension_compression_m", "tyre_fx_n", "tyre_fy_n"):
        assert field in names
    sim = RangerSim(3)
    assert sim.state.wheel_omega_rad_s.shape == (3, 4)
    assert sim.euler_rad.shape == (3, 3)


def test_runs_without_jit():
    """The same kernels run as plain Python with NUMBA_DISABLE_JIT=1 (one short drive)."""
    code = (
        "from acres_gym.sim import RangerSim\n"
        "sim = RangerSim(1)\n"
        "sim.commands.driver_throttle_pct = 80.0\n"
        "sim.step(60)\n"
        "print(round(float(sim.speed_mps[0]), 6))\n"
    )
    env = dict(os.environ, NUMBA_DISABLE_JIT="1")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    nojit_speed = float(out.stdout.strip().splitlines()[-1])
    sim = RangerSim(1)
    sim.commands.driver_throttle_pct = 80.0
    sim.step(60)
    assert nojit_speed > 0.1
    assert math.isclose(nojit_speed, float(sim.speed_mps[0]), rel_tol=1e-6, abs_tol=1e-9)


def test_reports_and_body_motion_follow_every_step_and_reset():
    """``report_table()`` and ``body_kinematics()`` (written by the kernels) equal the functions that compute them
    from the records, after steps, a partial reset and unpickling a simulator pickled without them."""
    import pickle

    from acres_gym.dbw.reports import report_table
    from acres_gym.envs.core import kinematics_array

    sim = RangerSim(3, terrain=rough(7, 0.05, size_m=60.0, cell_m=0.5))

    def same() -> bool:
        return (sim.report_table().tobytes() == report_table(sim.params, sim.state).tobytes()
                and sim.body_kinematics().tobytes() == kinematics_array(sim.state, sim.params).tobytes())

    assert same()
    sim.commands.driver_throttle_pct = [40.0, 50.0, 60.0]
    sim.commands.driver_steering_deg = [-90.0, 0.0, 90.0]
    sim.step(240)
    assert same() and sim.body_kinematics()[3].min() > 0.5  # moving: the values are not the rest ones
    sim.reset(indices=[1], x_m=3.0, y_m=-2.0, yaw_rad=0.4)
    assert same()
    old = sim.__getstate__()
    del old["_reports"], old["_kinematics"]
    revived = RangerSim.__new__(RangerSim)
    revived.__setstate__(pickle.loads(pickle.dumps(old)))
    assert revived.report_table().tobytes() == sim.report_table().tobytes()
    assert revived.body_kinematics().tobytes() == sim.body_kinematics().tobytes()


def _spawn_pose_numpy(p, terrain, x, y, yaw):
    """The spawn pose as numpy arrays: ``acres_gym.sim._spawn_pose``'s definition, kept to check it."""
    normal = np.asarray(terrain.normal_at(x, y), dtype=float).reshape(3)
    heading = np.array([math.cos(yaw), math.sin(yaw), 0.0])
    fwd = heading - float(heading[0] * normal[0] + heading[1] * normal[1] + heading[2] * normal[2]) * normal
    fwd /= math.sqrt(float(fwd[0] * fwd[0] + fwd[1] * fwd[1] + fwd[2] * fwd[2]))
    rot = np.column_stack([fwd, np.cross(normal, fwd), normal])  # body axes in the world frame
    cg = (p.cg_forward_m, p.cg_left_m, p.cg_height_m)
    pos = np.array([x, y, float(terrain.height_at(x, y))]) + np.array(
        [float(rot[i, 0] * cg[0] + rot[i, 1] * cg[1] + rot[i, 2] * cg[2]) for i in range(3)])
    m = rot
    tr = m[0, 0] + m[1, 1] + m[2, 2]
    if tr > 0:
        sq = math.sqrt(tr + 1.0) * 2
        q = [0.25 * sq, (m[2, 1] - m[1, 2]) / sq, (m[0, 2] - m[2, 0]) / sq, (m[1, 0] - m[0, 1]) / sq]
    elif m[0, 0] > m[1, 1] and m[0, 0] > m[2, 2]:
        sq = math.sqrt(1.0 + m[0, 0] - m[1, 1] - m[2, 2]) * 2
        q = [(m[2, 1] - m[1, 2]) / sq, 0.25 * sq, (m[0, 1] + m[1, 0]) / sq, (m[0, 2] + m[2, 0]) / sq]
    elif m[1, 1] > m[2, 2]:
        sq = math.sqrt(1.0 + m[1, 1] - m[0, 0] - m[2, 2]) * 2
        q = [(m[0, 2] - m[2, 0]) / sq, (m[0, 1] + m[1, 0]) / sq, 0.25 * sq, (m[1, 2] + m[2, 1]) / sq]
    else:
        sq = math.sqrt(1.0 + m[2, 2] - m[0, 0] - m[1, 1]) * 2
        q = [(m[1, 0] - m[0, 1]) / sq, (m[0, 2] + m[2, 0]) / sq, (m[1, 2] + m[2, 1]) / sq, 0.25 * sq]
    q = np.asarray(q)
    return np.concatenate([pos, q / math.sqrt(sum(c * c for c in q))])


def test_spawn_pose_kernel_equals_its_numpy_definition():
    """The jitted spawn pose, bit for bit, on rough ground, on and off the grid, at any heading."""
    from acres_gym.sim import _spawn_pose
    from acres_gym.terrain import TerrainStack

    p = RangerSim(1).params[0]
    rng = np.random.default_rng(5)
    for seed in range(8):
        stack = TerrainStack.from_terrains([rough(seed, 0.1 + 0.1 * seed, size_m=80.0, cell_m=0.5 + 0.5 * (seed % 2),
                                                  hill_wavelength_m=20.0)])
        ground = stack.ground(0)
        for x, y, yaw in rng.uniform((-45.0, -45.0, -4.0), (45.0, 45.0, 4.0), (60, 3)):
            out = np.empty(7)
            _spawn_pose(stack.height_m[0], float(stack.origin_xy_m[0, 0]), float(stack.origin_xy_m[0, 1]),
                        float(stack.cell_m[0]), float(p.cg_forward_m), float(p.cg_left_m), float(p.cg_height_m),
                        float(x), float(y), float(yaw), out)
            assert out.tobytes() == _spawn_pose_numpy(p, ground, x, y, yaw).tobytes(), (seed, x, y, yaw)
