"""The tasks' paths stay on the ground: reachable path inside the bounds, truncated paths end the episode
with ``path_complete``, and the pure-pursuit baseline never drives off the terrain on the seed that used to
run straight to the edge."""

import numpy as np
import pytest

from acres_gym.envs.config import load_config
from acres_gym.envs.core import PATH_CLEARANCE_M, TERRAIN_MARGIN_M, RangerBatch
from acres_gym.envs.tasks.path_speed import PATH_REACH_MARGIN_M, make_task

DT_S = 0.05
MAX_STEPS = 600
BOUNDS = (-145.0, 145.0, -145.0, 145.0)


def _path_following(bounds=BOUNDS, **options):
    cfg = load_config("path_following")
    return make_task("path_following", 1, DT_S, MAX_STEPS, {**cfg["task_options"], **options}, bounds)


def _reach_points(task) -> int:
    """Path points the episode's profile can reach, plus the preview and the margin."""
    reach_m = (np.sum(task.profile[0, :MAX_STEPS + 1]) * DT_S + max(task.options["path_preview_m"])
               + PATH_REACH_MARGIN_M)
    return int(np.ceil(reach_m / task.options["path_spacing_m"]))


def test_the_reachable_path_lies_inside_the_bounds():
    task = _path_following()
    x_min, x_max, y_min, y_max = BOUNDS
    redrawn = fitted = 0
    for seed in range(300):
        task.draw(0, np.random.default_rng(seed))
        end = int(task.end_index[0])
        x, y = task.path_x[0, :end + 1], task.path_y[0, :end + 1]
        assert np.all((x >= x_min) & (x <= x_max) & (y >= y_min) & (y <= y_max)), seed
        redrawn += task.episode_summary[0]["path_draws"] > 1
        fitted += end >= min(_reach_points(task), task.n_path - 1)
    # the 300 m square is too small for a third of the first draws, and nearly all fit after redrawing
    assert redrawn > 30
    assert fitted >= 0.97 * 300


def test_redrawing_keeps_the_episode_curvature_and_speeds():
    bounded, free = _path_following(), _path_following(bounds=None)
    for seed in range(40):
        bounded.draw(0, np.random.default_rng(seed))
        free.draw(0, np.random.default_rng(seed))
        assert bounded.episode_summary[0]["curvature_max_per_m"] == free.episode_summary[0]["curvature_max_per_m"]
        np.testing.assert_array_equal(bounded.profile, free.profile)
        assert free.episode_summary[0]["path_draws"] == 1


def test_a_path_that_cannot_fit_ends_where_it_leaves_and_completes_there():
    # a straight line from x = 0 towards +x in a box 60 m ahead: it must stop at x = 60 m
    task = make_task("speed_tracking", 1, DT_S, MAX_STEPS, {"spawn_xy_m": [0.0, 0.0]}, (-20.0, 60.0, -20.0, 20.0))
    task.draw(0, np.random.default_rng(0))
    assert task.episode_summary[0]["path_draws"] == 16
    end = int(task.end_index[0])
    assert task.path_x[0, end] <= 60.0 < task.path_x[0, end + 1]
    assert task.path_world(0).shape == (end + 1, 2)
    # reaching the last point whose whole preview lies on the path completes it
    last = end - int(task.preview_offsets.max())

    def measure_at(j):
        task.index[:] = j
        x = np.array([task.path_x[0, j]])
        return task.measure(x, np.zeros(1), np.zeros(1), np.zeros(1, dtype=np.int64))

    assert not measure_at(last - 1).path_complete[0]
    assert measure_at(last).path_complete[0]
    # the preview never looks past the end
    f = measure_at(end - 5)
    assert f.path_points[0, -1, 0] == pytest.approx(task.path_x[0, end] - task.path_x[0, end - 5])


def test_a_spawn_point_outside_the_bounds_is_refused():
    with pytest.raises(ValueError, match=r"spawn_xy_m .*outside the ground"):
        make_task("speed_tracking", 1, DT_S, MAX_STEPS, {"spawn_xy_m": [-150.0, 0.0]}, BOUNDS)


def test_the_batch_keeps_paths_clear_of_the_terrain_edge():
    batch = RangerBatch(load_config("path_following"), 1)
    x0, x1, y0, y1 = batch.extent
    keep = TERRAIN_MARGIN_M + PATH_CLEARANCE_M
    assert batch.task.bounds == (x0 + keep, x1 - keep, y0 + keep, y1 - keep)


def test_pure_pursuit_stays_on_the_terrain_where_the_old_path_ran_off_it():
    from acres_gym.agents.evaluate import baseline_entry, evaluate

    factory, mode = baseline_entry("ulc_pure_pursuit")
    result = evaluate(factory, "acres_gym/RangerPathFollowing-v2", episodes=1, seed=100_002, action_mode=mode)
    row = result["per_episode"][0]
    assert row["off_terrain"] == 0.0 and row["failed"] == 0.0
    assert row["distance_m"] > 100.0


def test_task_objects_pickled_under_the_old_module_paths_load():
    """Training checkpoints written before the tasks moved into ``acres_gym.envs.tasks`` name their classes
    by the old modules (``acres_gym.envs.task_logic``, ``acres_gym.envs.offroad``, and the environment classes
    in ``acres_gym.envs.tasks``); those names still load as the same classes."""
    import pickle

    from acres_gym.envs.tasks.environments import RangerSpeedTracking
    from acres_gym.envs.tasks.navigation import OffroadNavigationTask
    from acres_gym.envs.tasks.path_speed import SpeedTrackingTask

    task = make_task("speed_tracking", 2, 0.05, 100, {})
    old = pickle.dumps(task, protocol=2).replace(b"acres_gym.envs.tasks.path_speed", b"acres_gym.envs.task_logic")
    assert b"acres_gym.envs.task_logic" in old
    assert type(pickle.loads(old)) is SpeedTrackingTask
    moved = (("acres_gym.envs.offroad", OffroadNavigationTask), ("acres_gym.envs.tasks", RangerSpeedTracking))
    for module, cls in moved:  # protocol 2 names a class by newline-ended text, so the bytes can be replaced
        stub = pickle.dumps(cls, protocol=2).replace(cls.__module__.encode(), module.encode())
        assert pickle.loads(stub) is cls
