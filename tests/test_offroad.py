"""The off-road navigation task (RangerOffroadNavigation-v2), its terrain generator and baselines, and the
hill-climb id. Gymnasium's and stable-baselines3's check_env run over every registered id in test_envs.py
(both new ids included)."""

from __future__ import annotations

import math
from collections import Counter

import gymnasium
import numpy as np
import pytest

import acres_gym  # noqa: F401
from acres_gym.envs.tasks.navigation import MAP_CHANNELS
from acres_gym.envs.tasks.offroad import (
    GOAL_PAD_M,
    PAD_M,
    _add_hill,
    _blocked_cells,
    _draw_once,
    _fill_disc,
    _grade_lookup,
    _search,
    _search_heap,
    offroad_episode,
    resolve_config,
    route,
    route_grid,
    time_to_goal,
)
from acres_gym.envs.tasks.trafficability import MIN_DRIVABLE_GRADE, grade_limit_table, wetness_bin
from acres_gym.params import load_vehicle
from acres_gym.runtime import libm
from acres_gym.terrain import Terrain, default_surfaces

NAV = "acres_gym/RangerOffroadNavigation-v2"
SMALL = {"randomization": {"terrain": {"size_m": 200.0}}, "task_options": {"terrain": {"goal_distance_m": [60, 100]}}}


def make(**kwargs):
    return gymnasium.make(NAV, **kwargs).unwrapped


@pytest.fixture(scope="module")
def limits():
    table = default_surfaces()
    return table, grade_limit_table(np.array([load_vehicle("polaris_ranger_crew_xp1000")]), table.records)


def test_registered_steps_follow_the_config():
    assert gymnasium.spec(NAV).max_episode_steps is None  # registered without a TimeLimit: the config decides
    env = make()
    assert env.spec.max_episode_steps == env.max_episode_steps == round(env.config["max_episode_s"] * env.control_hz)
    assert env.observation_space["local_map"].shape == (4, 16, 16)
    assert env.observation_space["local_map"].dtype == np.float32
    assert env.action_space.shape == (4,)


def test_vector_vehicle_k_equals_single_env_seeded_seed_plus_k():
    venv = gymnasium.make_vec(NAV, num_envs=3, vectorization_mode="vector_entry_point", config=SMALL)
    obs_v, _ = venv.reset(seed=40)
    rng = np.random.default_rng(0)
    actions = rng.uniform(-1, 1, (15, 3, 4)).astype(np.float32)
    vec = [obs_v]
    for a in actions:
        vec.append(venv.step(a)[0])
    for k in range(3):
        env = make(config=SMALL)
        obs, _ = env.reset(seed=40 + k)
        single = [obs]
        for a in actions:
            single.append(env.step(a[k])[0])
        for o_v, o_s in zip(vec, single, strict=True):
            for key in o_s:
                assert np.array_equal(o_v[key][k], o_s[key]), key


def test_same_seed_same_episode_other_seed_other_terrain():
    a, b, c = make(config=SMALL), make(config=SMALL), make(config=SMALL)
    oa, ia = a.reset(seed=3)
    ob, ib = b.reset(seed=3)
    oc, ic = c.reset(seed=4)
    assert np.array_equal(a.sim.terrain.height_m, b.sim.terrain.height_m)
    assert np.array_equal(oa["local_map"], ob["local_map"]) and ia["episode_seed"] == ib["episode_seed"]
    assert not np.array_equal(a.sim.terrain.height_m, c.sim.terrain.height_m)
    assert not np.array_equal(a.task.goal, c.task.goal)
    for _ in range(20):
        ra = a.step(np.array([0.1, 0.3, 1.0, 1.0], np.float32))
        rb = b.step(np.array([0.1, 0.3, 1.0, 1.0], np.float32))
        assert np.array_equal(ra[0]["local_map"], rb[0]["local_map"]) and ra[1] == rb[1]


def test_test_split_draws_other_ground():
    train, test = make(config=SMALL), make(config={**SMALL, "task_options": {**SMALL["task_options"], "split": "test"}})
    train.reset(seed=7)
    test.reset(seed=7)
    assert not np.array_equal(train.sim.terrain.height_m, test.sim.terrain.height_m)
    names = set(default_surfaces().names[i] for i in np.unique(test.sim.terrain.surface_id))
    assert names <= set(test.task.terrain_config_resolved["surfaces"]) | set(
        test.task.terrain_config_resolved["obstacle_surfaces"])


def test_local_map_on_a_hand_built_terrain_at_two_headings(limits):
    """A slope of 10 % rising along +x beyond x = 10 m, a snow patch over 4 < y < 10, a no-go rectangle
    over -16 < x < -2, 12 < y < 22; the vehicle at the origin heading +x, then heading +y."""
    table, lim = limits
    env = make(config=SMALL)
    env.reset(seed=0)
    terrain0 = env.sim.terrain.terrain(0)
    x, y = terrain0.x_m, terrain0.y_m
    X, Y = np.meshgrid(x, y)
    height = np.where(X > 10.0, 0.1 * (X - 10.0), 0.0)
    sid = np.full(X.shape, table.surface_id("grass"), dtype=np.int32)
    snow = (Y > 4.0) & (Y < 10.0)
    sid[snow] = table.surface_id("snow")
    no_go = (X > -16.0) & (X < -2.0) & (Y > 12.0) & (Y < 22.0)
    terrain = Terrain(height, sid, np.zeros(X.shape), terrain0.origin_x_m, terrain0.origin_y_m, terrain0.cell_m,
                      table=terrain0.table)
    env.sim.terrain.replace(0, terrain)
    t = env.task
    t.traction[0] = lim[sid, 0, 1, 2]
    t.no_go[0] = no_go
    m = t.options["local_map"]
    grass_l, snow_l = lim[table.surface_id("grass"), 0, 1, 2], lim[table.surface_id("snow"), 0, 1, 2]

    def world(r, q, yaw):  # the world point of map cell (r, q) for a vehicle at the origin
        fwd = m["rows"] * m["cell_m"] - m["behind_m"] - (r + 0.5) * m["cell_m"]
        left = (0.5 * m["cols"] - q - 0.5) * m["cell_m"]
        return fwd * math.cos(yaw) - left * math.sin(yaw), fwd * math.sin(yaw) + left * math.cos(yaw)

    for yaw in (0.0, math.pi / 2):
        frame = t.measure(np.zeros(1), np.zeros(1), np.array([yaw]), np.zeros(1, dtype=np.int64))
        local = frame.local_map[0]
        checked = {"slope": 0, "snow": 0, "no_go": 0}
        for r in range(m["rows"]):
            for q in range(m["cols"]):
                wx, wy = world(r, q, yaw)
                near_edge = min(abs(wx - 10.0), abs(wy - 4.0), abs(wy - 10.0), abs(wx + 16.0), abs(wx + 2.0),
                                abs(wy - 12.0), abs(wy - 22.0)) < 2.5  # within a terrain cell (2 m) of a boundary
                if near_edge:
                    continue
                expected_h = 0.1 * (wx - 10.0) if wx > 10.0 else 0.0
                assert local[0, r, q] == pytest.approx(expected_h, abs=1e-9)
                # grade along the heading: 0.1 x cos(angle between heading and +x)
                expected_g = 0.1 * math.cos(yaw) if wx > 10.0 else 0.0
                assert local[1, r, q] == pytest.approx(expected_g, abs=1e-9)
                in_snow = 4.0 < wy < 10.0
                assert local[2, r, q] == pytest.approx(snow_l if in_snow else grass_l)
                inside = -16.0 < wx < -2.0 and 12.0 < wy < 22.0
                assert local[3, r, q] == (1.0 if inside else 0.0)
                checked["slope"] += wx > 10.0
                checked["snow"] += in_snow
                checked["no_go"] += inside
        assert min(checked.values()) > 0, checked  # every feature lies in the map at both headings
    # heading +x: the slope is ahead (top rows), the snow to the left (left columns)
    frame = t.measure(np.zeros(1), np.zeros(1), np.zeros(1), np.zeros(1, dtype=np.int64))
    assert frame.local_map[0, 0, 0, m["cols"] // 2] > 1.0
    assert frame.local_map[0, 2, m["rows"] // 2, 4] == snow_l  # column 4: 7 m left


def test_stall_traction_replaces_the_negative_grade_limits_of_the_traction_channel():
    """``local_map.stall_traction``: where even level ground stalls (a grade limit below 0: the held-out split's
    wet sandy loam at -0.19, snow's -1) the traction channel reads the option's value; every other cell, and the
    terrain itself, are those of the same episode without it. Out-of-range values are refused by name."""
    config = {"task_options": {"split": "test"}}
    plain = gymnasium.make_vec(NAV, num_envs=4, vectorization_mode="vector_entry_point", config=config)
    stall = gymnasium.make_vec(NAV, num_envs=4, vectorization_mode="vector_entry_point",
                               config={"task_options": {"split": "test", "local_map": {"stall_traction": -1.0}}})
    obs_plain, _ = plain.reset(seed=400000)
    obs_stall, _ = stall.reset(seed=400000)
    before, after = plain.unwrapped._batch.task.traction, stall.unwrapped._batch.task.traction
    negative = before < 0.0
    assert negative.any() and (before > 0.0).any()
    assert np.all(after[negative] == -1.0) and np.array_equal(after[~negative], before[~negative])
    channel = list(MAP_CHANNELS).index("traction")
    map_plain, map_stall = obs_plain["local_map"][:, channel], obs_stall["local_map"][:, channel]
    assert np.array_equal(map_stall, np.where(map_plain < 0.0, np.float32(-1.0), map_plain))
    for name in ("height", "grade", "no_go"):
        k = list(MAP_CHANNELS).index(name)
        assert np.array_equal(obs_plain["local_map"][:, k], obs_stall["local_map"][:, k])
    for bad in (0.5, -2.0, "low"):
        with pytest.raises(ValueError, match=r"local_map\.stall_traction"):
            make(config={"task_options": {"local_map": {"stall_traction": bad}}})


def test_time_to_goal_is_the_route_time_from_every_cell(limits):
    """``time_to_goal``, one search backwards from the goal, gives at every cell that is not blocked the time of
    ``route`` from that cell (a search forwards each), 0 at the goal and inf where no route leaves the cell: on
    drawn grids, at other speeds, and with the goal walled in."""
    table, lim = limits
    c = resolve_config({})
    rng = np.random.default_rng(5)
    checked = {"finite": 0, "cut off": 0}
    for seed, speeds in ((0, (6.0, 3.0)), (1, (6.0, 3.0)), (2, (5.0, 1.0)), (3, "walled")):
        ep = _draw_once(np.random.default_rng(seed), c, table)
        grid = route_grid(ep.terrain, ep.no_go, lim, c["route_cell_m"], c["no_go_clearance_m"])
        tj, ti = grid.index(*ep.goal_xy)
        if speeds == "walled":
            blocked = grid.blocked.copy()
            blocked[tj - 1:tj + 2, ti - 1:ti + 2] = True
            grid = type(grid)(grid.origin_xy_m, grid.cell_m, grid.height_m, grid.limit_h, grid.limit_l, blocked)
            speeds = (6.0, 3.0)
        times = time_to_goal(grid, ep.goal_xy, c["grade_margin"], c["max_side_grade"], *speeds)
        assert times[tj, ti] == 0.0
        blocked = grid.blocked.copy()
        blocked[tj, ti] = False  # the goal cell is never blocked
        assert np.all(np.isinf(times[blocked]))
        free = np.argwhere(~grid.blocked)
        for j, i in free[rng.choice(len(free), 25, replace=False)]:
            found = route(grid, grid.xy(j, i), ep.goal_xy, c["grade_margin"], c["max_side_grade"], *speeds)
            if found is None:
                assert times[j, i] == math.inf
                checked["cut off"] += 1
            else:
                assert times[j, i] == pytest.approx(found.time_s, rel=1e-12)
                checked["finite"] += 1
    assert checked["finite"] > 50 and checked["cut off"] >= 20, checked  # the walled goal cuts every cell off


ROUTE_CHANNELS = {"task_options": {"split": "test", "local_map": {
    "channels": ["height", "grade", "traction", "no_go", "route_time"], "route_time_cap_s": 20.0}}}


def test_route_time_channel_reads_the_time_to_the_goal_less_the_least_on_the_map():
    """``route_time``: each map cell reads the time to the goal at its nearest route-grid cell (the episode's
    ``time_to_goal``) less the least such time over the map's cells on the terrain, capped at
    ``route_time_cap_s``, which cells with no route and cells beyond the terrain read; the other four channels
    are those of the same episodes without it. Episodes drive a few seconds first so maps move off the grid's
    points."""
    plain = gymnasium.make_vec(NAV, num_envs=3, vectorization_mode="vector_entry_point",
                               config={"task_options": {"split": "test"}})
    routed = gymnasium.make_vec(NAV, num_envs=3, vectorization_mode="vector_entry_point", config=ROUTE_CHANNELS)
    assert routed.single_observation_space["local_map"].shape == (5, 16, 16)
    obs_plain, _ = plain.reset(seed=400000)
    obs, _ = routed.reset(seed=400000)
    action = np.tile(np.array([0.3, 0.5, 0.0, 1.0], dtype=np.float32), (3, 1))[:, :plain.single_action_space.shape[0]]
    for _ in range(30):
        obs_plain = plain.step(action)[0]
        obs = routed.step(action)[0]
    assert np.array_equal(obs["local_map"][:, :4], obs_plain["local_map"])
    env = routed.unwrapped
    task, f = env._batch.task, env._batch.frame
    m = task.options["local_map"]
    x_min, x_max, y_min, y_max = task._inside
    counts = Counter()
    for v in range(3):
        grid = task.route_time[v]
        ox, oy, cell = task.route_origin[v, 0], task.route_origin[v, 1], task.route_cell[v]
        x, y, yaw = f.axle_x_m[v], f.axle_y_m[v], f.yaw_rad[v]
        t, on = np.full((16, 16), np.inf), np.zeros((16, 16), dtype=bool)
        for r in range(16):
            for q in range(16):
                fwd = m["rows"] * m["cell_m"] - m["behind_m"] - (r + 0.5) * m["cell_m"]
                left = (0.5 * m["cols"] - q - 0.5) * m["cell_m"]
                px = x + math.cos(yaw) * fwd - math.sin(yaw) * left
                py = y + math.sin(yaw) * fwd + math.cos(yaw) * left
                on[r, q] = x_min < px < x_max and y_min < py < y_max
                i, j = math.floor((px - ox) / cell + 0.5), math.floor((py - oy) / cell + 0.5)
                if on[r, q] and 0 <= i < grid.shape[1] and 0 <= j < grid.shape[0]:
                    t[r, q] = grid[j, i]
        expected = np.where(np.isfinite(t), np.minimum(t - t[np.isfinite(t)].min(), 20.0), 20.0)
        np.testing.assert_allclose(obs["local_map"][v, 4], expected, rtol=1e-6, atol=1e-5)
        counts["zero"] += int((obs["local_map"][v, 4] == 0.0).any())
        counts["capped"] += int((obs["local_map"][v, 4] == 20.0).sum())
        counts["between"] += int(((obs["local_map"][v, 4] > 0.0) & (obs["local_map"][v, 4] < 20.0)).sum())
    assert counts["zero"] == 3 and counts["between"] > 300 and counts["capped"] > 0, counts
    for key, bad in (("route_time_cap_s", 0.0), ("route_time_cap_s", 101.0), ("route_time_cap_s", "long"),
                     ("route_clearance_m", -1.0), ("route_clearance_m", 60.0)):
        with pytest.raises(ValueError, match=rf"local_map\.{key}"):
            make(config={"task_options": {"local_map": {key: bad}}})


def test_route_time_keeps_the_planners_clearance_and_falls_back_to_the_generators():
    """The route_time grid keeps no-go areas ``route_clearance_m`` away (default 5 m, the terrain planner's):
    every cell within it reads no route; at the generator's own clearance the grid is the solvability search's;
    a clearance that cuts the start off the goal falls back to that grid, as the planner does."""
    env = make(config=ROUTE_CHANNELS)
    env.reset(seed=1)
    task = env.task
    c = task.terrain_config_resolved
    checked = 0
    for seed in range(4):
        ep = offroad_episode(seed, c, task.table, task.grade_limits)
        own = time_to_goal(ep.route_grid, ep.goal_xy, c["grade_margin"], c["max_side_grade"])
        times, origin, cell = task.route_times(ep)
        wide = route_grid(ep.terrain, ep.no_go, task.grade_limits, c["route_cell_m"], 5.0, c["edge_clearance_m"])
        assert np.array_equal(times, time_to_goal(wide, ep.goal_xy, c["grade_margin"], c["max_side_grade"]))
        assert origin == wide.origin_xy_m and cell == wide.cell_m
        near = wide.blocked & ~ep.route_grid.blocked  # within 5 m of no-go or impassable ground, beyond 2 m
        assert np.all(np.isinf(times[near])) and np.isfinite(own[near]).any()
        for clearance in (c["no_go_clearance_m"], 50.0):  # the generator's; one that walls the start in
            task.options["local_map"]["route_clearance_m"] = clearance
            assert np.array_equal(task.route_times(ep)[0], own)
            checked += 1
        task.options["local_map"]["route_clearance_m"] = 5.0
    assert checked == 8


@pytest.mark.parametrize("edge", ["+x", "-x", "+y"])
def test_local_map_marks_the_ground_beyond_the_terrain_edge_no_go(edge):
    """v2: a map cell whose centre lies beyond the terrain less its 2 m margin (where an episode ends off the
    terrain) reads no-go; the cells on the terrain read the no-go mask (all 0 here) and the other channels are
    what they were."""
    env = make(config=SMALL)
    env.reset(seed=0)
    t = env.task
    t.no_go[0] = 0
    x_min, x_max, y_min, y_max = t._inside
    assert x_max - x_min == pytest.approx(env.sim.terrain.terrain(0).x_m[-1] - env.sim.terrain.terrain(0).x_m[0] - 4.0)
    m = t.options["local_map"]
    # the vehicle 6 m inside the edge, facing it
    x, y, yaw = {"+x": (x_max - 6.0, 0.0, 0.0), "-x": (x_min + 6.0, 0.0, math.pi),
                 "+y": (0.0, y_max - 6.0, math.pi / 2)}[edge]
    frame = t.measure(np.array([x]), np.array([y]), np.array([yaw]), np.zeros(1, dtype=np.int64))
    no_go = frame.local_map[0, 3]
    counts = {"beyond": 0, "on": 0}
    for r in range(m["rows"]):
        fwd = m["rows"] * m["cell_m"] - m["behind_m"] - (r + 0.5) * m["cell_m"]
        for q in range(m["cols"]):
            left = (0.5 * m["cols"] - q - 0.5) * m["cell_m"]
            wx = x + fwd * math.cos(yaw) - left * math.sin(yaw)
            wy = y + fwd * math.sin(yaw) + left * math.cos(yaw)
            beyond = not (x_min < wx < x_max and y_min < wy < y_max)
            assert no_go[r, q] == (1.0 if beyond else 0.0), (r, q, wx, wy)
            counts["beyond" if beyond else "on"] += 1
    assert counts["beyond"] >= m["cols"] * 8 and counts["on"] >= m["cols"] * 4  # 24 m ahead: 18 m of it beyond
    # far from every edge nothing is marked
    frame = t.measure(np.zeros(1), np.zeros(1), np.array([yaw]), np.zeros(1, dtype=np.int64))
    assert not frame.local_map[0, 3].any()


def test_navigation_v1_is_deprecated_for_v2():
    # Gymnasium warns of the out-of-date version, then raises naming the current one
    with pytest.warns(DeprecationWarning), pytest.raises(gymnasium.error.DeprecatedEnv,
                                                         match="RangerOffroadNavigation-v2"):
        gymnasium.make("acres_gym/RangerOffroadNavigation-v1")


def test_no_go_and_goal_end_the_episode():
    env = make(config=SMALL)
    env.reset(seed=1)
    t = env.task
    t.no_go[0][:] = 1  # every cell: the next step ends in a no-go area
    _, reward, terminated, _, info = env.step(np.zeros(4, np.float32))
    assert terminated and info["no_go"] and info["reward_terms"]["no_go"] == -10.0
    env.reset(seed=1)
    f = env._batch.frame
    t.goal[0] = (f.axle_x_m[0] + 1.0, f.axle_y_m[0])
    _, reward, terminated, _, info = env.step(np.zeros(4, np.float32))
    assert terminated and info["goal_reached"] and info["reward_terms"]["goal"] == 20.0


def test_stuck_after_15_s_without_a_metre():
    env = make(config=SMALL)
    env.reset(seed=2)
    hold = np.array([0.0, -1.0, 1.0, 1.0], np.float32)  # ULC speed 0: the vehicle stands
    for k in range(1, 151):  # noqa: B007  (k is read after the loop)
        _, _, terminated, _, info = env.step(hold)
        if terminated:
            break
    assert info["stuck"] and k == 150 and info["ground_cause"] in (1, 2, 3)


def test_hill_climb_id_and_config_checks():
    env = gymnasium.make("acres_gym/RangerHillClimb-v2").unwrapped
    assert env.config["action_options"]["gear_axis"] is True and env.action_space.shape == (2,)
    with pytest.raises(ValueError, match="action_options.*RangerHillClimb-v2"):
        gymnasium.make("acres_gym/RangerSpeedTracking-v3", config="hill_climb")
    with pytest.raises(ValueError, match="'task'"):
        gymnasium.make("acres_gym/RangerSpeedTracking-v3", config={"task": "path_following"})
    # a config under another id that keeps the spaces works
    gymnasium.make("acres_gym/RangerSpeedTracking-v3", config={"max_episode_s": 10.0})


def test_drive_axis_sets_the_awd_switch():
    env = make(config=SMALL)
    env.reset(seed=0)
    for a, mode in ((-1.0, 0), (0.0, 1), (1.0, 2)):
        env.step(np.array([0.0, 0.0, 1.0, a], np.float32))
        assert int(env.sim.state.drive_mode[0]) == mode


def test_straight_line_without_the_axes_drives_the_defaults_h_and_awd():
    """Without the drive axis the vehicle keeps its default AWD, without the gear axis the environment's H:
    ``straight_line`` drives the very episode it drives with both axes (where it asks for H and AWD)."""
    from acres_gym.agents.baselines import make_baseline

    tracks = []
    for axes in ({}, {"drive_axis": False}, {"gear_axis": False, "drive_axis": False}):
        env = make(config={**SMALL, "action_options": axes})
        policy = make_baseline("straight_line", env)
        obs, _ = env.reset(seed=3)
        options = env.config["action_options"]
        assert env.action_space.shape == (2 + options["gear_axis"] + options["drive_axis"],)
        track = []
        for _ in range(200):
            obs, *_ = env.step(policy(obs))
            track.append((*env.sim.state.position_m[0, :2], int(env.sim.state.drive_mode[0]),
                          int(env.sim.state.gear[0])))
        tracks.append(np.array(track))
    assert np.hypot(*(tracks[0][-1, :2] - tracks[0][0, :2])) > 20.0  # it drove
    assert (tracks[0][:, 2] == 2).all()  # AWD
    assert np.array_equal(tracks[0], tracks[1]) and np.array_equal(tracks[0], tracks[2])


def test_terrain_planner_without_the_drive_axis_drives_awd_and_needs_the_gear_axis():
    from acres_gym.agents.baselines import make_baseline

    env = make(config={**SMALL, "action_options": {"drive_axis": False}})
    planner = make_baseline("terrain_planner", env)
    obs, _ = env.reset(seed=3)
    planner.reset()
    modes = set()
    for _ in range(1500):
        obs, _, terminated, truncated, info = env.step(planner(obs))
        modes.add(int(env.sim.state.drive_mode[0]))
        if terminated or truncated:
            break
    assert info["goal_reached"] and modes == {2}  # AWD, the stock vehicle's default, throughout
    with pytest.raises(ValueError, match="gear_axis: true.*gear_axis: False"):
        make_baseline("terrain_planner", make(config={**SMALL, "action_options": {"gear_axis": False}}))


def test_generator_is_a_pure_function_of_its_seed_and_solvable(limits):
    table, lim = limits
    a = offroad_episode(11, {}, table, lim)
    b = offroad_episode(11, {}, table, lim)
    assert np.array_equal(a.terrain.height_m, b.terrain.height_m) and a.goal_xy == b.goal_xy
    assert 80.0 <= math.dist(a.start_xy, a.goal_xy) <= 250.0
    c = resolve_config({})
    grid = route_grid(a.terrain, a.no_go, lim, c["route_cell_m"], c["no_go_clearance_m"])
    found = route(grid, a.start_xy, a.goal_xy, c["grade_margin"], c["max_side_grade"])
    assert found is not None
    cells = tuple(zip(*[grid.index(*p) for p in found.points[1:-1]], strict=True))
    assert not grid.blocked[cells].any()
    with pytest.raises(ValueError, match="hill_height_m"):
        offroad_episode(0, {"hill_height_m": [5, 1]}, table, lim)


def test_start_and_goal_stand_on_pads_of_the_base_surface(limits):
    """Within ``PAD_M`` of the start and ``GOAL_PAD_M`` of the goal the ground is the base surface (the first of
    ``surfaces``), outside any no-go area within ``PAD_M``, while the rest of the ground carries other
    surfaces; every cell of the route is drivable in L / AWD and no impassable cell lies within the no-go
    clearance of it."""
    table, lim = limits
    c = resolve_config({})
    base = table.surface_id(next(iter(c["surfaces"])))
    met = 0  # episodes with impassable ground (the soil line obstacles)
    for seed in range(8):
        ep = offroad_episode(seed, {}, table, lim)
        t = ep.terrain
        X, Y = np.meshgrid(t.x_m, t.y_m)
        for (px, py), radius in ((ep.start_xy, PAD_M), (ep.goal_xy, GOAL_PAD_M)):
            pad = np.hypot(X - px, Y - py) <= radius - t.cell_m
            assert (t.surface_id[pad] == base).all()
            assert not ep.no_go[np.hypot(X - px, Y - py) <= PAD_M - t.cell_m].any()
        assert (t.surface_id != base).mean() > 0.2
        grid = route_grid(t, ep.no_go, lim, c["route_cell_m"], c["no_go_clearance_m"], margin=c["grade_margin"])
        found = route(grid, ep.start_xy, ep.goal_xy, c["grade_margin"], c["max_side_grade"])
        cells = tuple(zip(*[grid.index(*p) for p in found.points], strict=True))
        assert (c["grade_margin"] * grid.limit_l[cells] >= MIN_DRIVABLE_GRADE).all()
        impassable = c["grade_margin"] * grid.limit_l < MIN_DRIVABLE_GRADE
        met += impassable.any()
        grow = math.ceil(c["no_go_clearance_m"] / grid.cell_m)
        assert not _rolled_blocked(impassable, grow, 0)[cells].any()
    assert met >= 2


def _search_both(grid_arrays, **changes):
    """``(found, dist, pred, need_l)`` of the bucket search and of the heap search on the same inputs (the output
    arrays start with junk, so their initialisation counts too)."""
    args = {**grid_arrays, **changes}
    out = []
    for search in (_search, _search_heap):
        shape = args["height"].shape
        dist, pred, need_l = np.full(shape, 7.0), np.full(shape, 7, np.int64), np.ones(shape, dtype=bool)
        found = search(args["height"], args["lim_h"], args["lim_l"], args["blocked"], args["cell"], args["sj"],
                       args["si"], args["tj"], args["ti"], args["margin"], args["max_side"], args["speed_h"],
                       args["speed_l"], dist, pred, need_l)
        out.append((found, dist, pred, need_l))
    return out


def test_route_search_pops_what_the_heap_search_pops(limits):
    """The bucket queue of ``_search`` gives the heap search's times, predecessors and gears bit for bit: on
    drawn route grids, with the goal walled in, on flat ground (ties everywhere), from the goal itself, with
    other speeds and with speeds that take the heap fallback."""
    table, lim = limits
    c = resolve_config({})
    rng = np.random.default_rng(3)
    reached = 0
    for seed in range(12):
        ep = _draw_once(np.random.default_rng(seed), c, table)
        grid = route_grid(ep.terrain, ep.no_go, lim, c["route_cell_m"], c["no_go_clearance_m"])
        (sj, si), (tj, ti) = grid.index(*ep.start_xy), grid.index(*ep.goal_xy)
        blocked = grid.blocked.copy()
        blocked[sj, si] = blocked[tj, ti] = False
        base = {"height": grid.height_m, "lim_h": grid.limit_h, "lim_l": grid.limit_l, "blocked": blocked,
                "cell": float(grid.cell_m), "sj": sj, "si": si, "tj": tj, "ti": ti, "margin": c["grade_margin"],
                "max_side": c["max_side_grade"], "speed_h": 6.0, "speed_l": 3.0}
        walled = blocked.copy()
        walled[tj - 1:tj + 2, ti - 1:ti + 2] = True
        walled[tj, ti] = False
        corner = dict(base, sj=0, si=0, tj=grid.height_m.shape[0] - 1, ti=grid.height_m.shape[1] - 1,
                      blocked=np.zeros_like(blocked))
        variants = [{}, {"blocked": walled}, {"height": np.round(grid.height_m)},
                    {"height": np.zeros_like(grid.height_m)}, {"tj": sj, "ti": si}, {"speed_h": 5.0, "speed_l": 2.5},
                    {"speed_l": 0.05}, {"speed_h": math.inf}, {"cell": float(rng.uniform(1.0, 3.0))}, corner]
        for change in variants:
            new, old = _search_both(base, **change)
            assert new[0] == old[0]
            reached += bool(new[0])
            for a, b in zip(new[1:], old[1:], strict=True):
                assert np.array_equal(a, b), change.keys()
    assert 60 <= reached < 120  # both outcomes met: the walled goal is not reached


def _numpy_window(x, y, cx, cy, r):
    """The generator's window by its numpy definition: index slices and squared distances of the points within r."""
    i0, i1 = np.searchsorted(x, cx - r), np.searchsorted(x, cx + r, side="right")
    j0, j1 = np.searchsorted(y, cy - r), np.searchsorted(y, cy + r, side="right")
    return (slice(j0, j1), slice(i0, i1)), (x[None, i0:i1] - cx) ** 2 + (y[j0:j1, None] - cy) ** 2


def test_hill_and_disc_kernels_give_the_numpy_formulas():
    """A hill adds ``h * exp(-d2 / (2 s s))`` (the C library's exp) over the points within 4 s, a disc marks
    ``d2 <= r * r``, both over the window ``np.searchsorted`` bounds: bit for bit, on windows inside, across and
    beyond the edges."""
    rng = np.random.default_rng(8)
    for cell in (2.0, 1.7):
        x, y = -150.3 + cell * np.arange(151), -149.1 + cell * np.arange(143)
        base = rng.normal(0.0, 0.3, (143, 151))
        for _ in range(100):
            cx, cy = (float(v) for v in rng.uniform(-260.0, 260.0, 2))
            s, h, r = float(rng.uniform(0.3, 40.0)), float(rng.uniform(-5.0, 15.0)), float(rng.uniform(0.0, 30.0))
            expected = base.copy()
            sl, d2 = _numpy_window(x, y, cx, cy, 4.0 * s)
            expected[sl] += h * libm.exp(-d2 / (2.0 * s * s))
            height = base.copy()
            _add_hill(height, x, y, cx, cy, h, s)
            assert height.tobytes() == expected.tobytes()
            sl, d2 = _numpy_window(x, y, cx, cy, r)
            mask = np.zeros(base.shape, dtype=bool)
            mask[sl] = d2 <= r * r
            no_go, sid = np.zeros(base.shape, dtype=bool), np.full(base.shape, 3, dtype=np.int32)
            _fill_disc(no_go, x, y, cx, cy, r, True)
            _fill_disc(sid, x, y, cx, cy, r, 7)
            assert np.array_equal(no_go, mask) and np.array_equal(sid, np.where(mask, 7, 3))


def _rolled_blocked(no_go, grow, edge):
    """The blocked cells by their numpy definition: the no-go cells grown with np.roll, then the edges."""
    blocked = no_go.copy()
    for dj in range(-grow, grow + 1):
        for di in range(-grow, grow + 1):
            if grow > 0 and dj * dj + di * di <= grow * grow:
                blocked |= np.roll(np.roll(no_go, dj, axis=0), di, axis=1)
    if edge > 0:
        blocked[:edge, :] = blocked[-edge:, :] = True
        blocked[:, :edge] = blocked[:, -edge:] = True
    return blocked


def test_route_grid_kernels_give_the_numpy_definitions(limits):
    """The route grid's grades are the fancy index of ``wetness_bin``'s bins (half-way wetness included; a NaN
    raises), its blocked cells the np.roll growth (wrapping around the grid) of no-go and impassable cells and
    the edges, its heights numpy's block means (-0.0 becomes 0.0 at one point a cell)."""
    table, lim = limits
    rng = np.random.default_rng(9)
    for shape in ((7, 9), (23, 31)):
        for share in (0.02, 0.2):
            no_go = rng.random(shape) < share
            no_go[0, -1] = no_go[-1, 0] = True  # growth from the corners wraps around
            for grow in (-1, 0, 1, 2, 3, 5, 12):
                for edge in (-2, 0, 1, 2, 40):
                    assert np.array_equal(_blocked_cells(no_go, grow, edge), _rolled_blocked(no_go, max(grow, 0), edge))
    ny, nx = 41, 38
    height = rng.normal(0.0, 2.0, (ny, nx))
    height[::5, ::3] = -0.0
    sid = rng.integers(0, len(table.records), (ny, nx)).astype(np.int32)
    wetness = np.concatenate([(np.arange(10) + 0.5) / 10.0, np.nextafter((np.arange(10) + 0.5) / 10.0, 1.0),
                              np.nextafter((np.arange(10) + 0.5) / 10.0, 0.0), [0.0, 1.0]])
    wetness = rng.choice(np.concatenate([wetness, rng.random(200)]), (ny, nx))
    terrain = Terrain(height, sid, wetness, -37.0, -40.0, 2.0, table=table)
    no_go = rng.random((ny, nx)) < 0.05
    for cell_m, k in ((2.0, 1), (4.0, 2), (6.0, 3)):
        grid = route_grid(terrain, no_go, lim, cell_m, 5.0, 6.0)
        gy, gx = ny // k, nx // k
        wet = wetness_bin(wetness[:gy * k, :gx * k])
        for got, ax in ((grid.limit_h, 0), (grid.limit_l, 1)):
            expected = lim[:, :, ax, 2][sid[:gy * k, :gx * k], wet].reshape(gy, k, gx, k).min(axis=(1, 3))
            assert got.tobytes() == expected.tobytes()
        expected = height[:gy * k, :gx * k].reshape(gy, k, gx, k).mean(axis=(1, 3))
        assert grid.height_m.tobytes() == expected.tobytes()
        cells = no_go[:gy * k, :gx * k].reshape(gy, k, gx, k).any(axis=(1, 3))
        # impassable ground (margin x L / AWD grade below MIN_DRIVABLE_GRADE) is kept clear as no-go is
        impassable = 0.6 * grid.limit_l < MIN_DRIVABLE_GRADE
        assert impassable.any() and not impassable.all()
        assert np.array_equal(grid.blocked, _rolled_blocked(cells | impassable, math.ceil(5.0 / cell_m),
                                                            math.ceil(6.0 / cell_m)))
        wide = route_grid(terrain, no_go, lim, cell_m, 5.0, 6.0, margin=0.3)  # a smaller margin: more impassable
        assert np.array_equal(wide.blocked, _rolled_blocked(cells | (0.3 * grid.limit_l < MIN_DRIVABLE_GRADE),
                                                            math.ceil(5.0 / cell_m), math.ceil(6.0 / cell_m)))
    assert np.signbit(route_grid(terrain, no_go, lim, 2.0, 5.0).height_m).sum() < np.signbit(height).sum()
    wetness[3, 4] = np.nan
    with pytest.raises(IndexError):
        _grade_lookup(lim[:, :, 0, 2], lim[:, :, 1, 2], sid, wetness)


def test_route_points_follow_the_search(limits):
    """``route``'s cells walk the search's predecessors back from the goal, each at its cell centre, with the
    search's gear; the first and last points are the start and goal themselves."""
    table, lim = limits
    c = resolve_config({})
    for seed in range(4):
        ep = _draw_once(np.random.default_rng(seed), c, table)
        grid = route_grid(ep.terrain, ep.no_go, lim, c["route_cell_m"], c["no_go_clearance_m"])
        found = route(grid, ep.start_xy, ep.goal_xy, c["grade_margin"], c["max_side_grade"])
        if found is None:
            continue
        (sj, si), (tj, ti) = grid.index(*ep.start_xy), grid.index(*ep.goal_xy)
        blocked = grid.blocked.copy()
        blocked[sj, si] = blocked[tj, ti] = False
        shape = grid.height_m.shape
        dist, pred, need_l = np.empty(shape), np.empty(shape, np.int64), np.empty(shape, dtype=bool)
        assert _search(grid.height_m, grid.limit_h, grid.limit_l, blocked, grid.cell_m, sj, si, tj, ti,
                       c["grade_margin"], c["max_side_grade"], 6.0, 3.0, dist, pred, need_l)
        cells = [(tj, ti)]
        while cells[-1] != (sj, si):
            cells.append(divmod(int(pred[cells[-1]]), shape[1]))
        cells.reverse()
        points = np.array([grid.xy(j, i) for j, i in cells])
        points[0], points[-1] = ep.start_xy, ep.goal_xy
        assert np.array_equal(found.points, points) and found.time_s == dist[tj, ti]
        assert np.array_equal(found.need_l, [need_l[cell] for cell in cells])


def test_redraw_share(limits):
    """The share of drawn episodes the solvability check sends back (reported; the default config keeps
    it small)."""
    table, lim = limits
    redraws = [offroad_episode(s, {}, table, lim).redraws for s in range(200)]
    share = sum(redraws) / (sum(redraws) + 200)
    print(f"redraw share over 200 episodes: {share:.3f} ({sum(redraws)} redraws)")
    assert share < 0.5


@pytest.mark.slow
def test_planner_solves_and_straight_line_fails_for_ground_reasons():
    """Over 200 training episodes the terrain planner (the route search on the true ground) reaches the goal in
    at least 95 %, driving straight at the goal in at most 40 %, and every straight-line failure has a cause:
    a no-go area, or the ground (soil, grade or high-centred)."""
    from acres_gym.agents.evaluate import baseline_entry, compare

    entries = {name: baseline_entry(name) for name in ("terrain_planner", "straight_line")}
    results = compare(entries, NAV, episodes=200, seed=0, batch=50)
    planner, straight = results["terrain_planner"]["mean"], results["straight_line"]["mean"]
    print({k: round(planner[k], 3) for k in ("success", "no_go", "stuck")},
          {k: round(straight[k], 3) for k in ("success", "no_go", "stuck")})
    for name, r in results.items():  # end causes: no-go, else ground_cause (1 soil, 2 grade, 3 other, 4 high-centred)
        print(name, sorted(Counter("no_go" if row["no_go"] else int(row["ground_cause"])
                                   for row in r["per_episode"] if not row["success"]).items(), key=str))
    assert planner["success"] >= 0.95
    assert straight["success"] <= 0.40
    for row in results["straight_line"]["per_episode"]:
        if not row["success"]:
            assert row["no_go"] or row["ground_cause"] in (1, 2, 4), {k: row[k] for k in (
                "seed", "stuck", "off_terrain", "rolled_over", "ground_cause", "goal_distance_m", "episode_steps")}


def test_hazard_distance_is_the_chamfer_distance_to_no_go_and_impassable_ground():
    from acres_gym.envs.tasks.navigation import _hazard_distance
    rng = np.random.default_rng(4)
    hazard = rng.random((30, 40)) < 0.01
    hazard[3, 5] = True
    out = np.empty(hazard.shape)
    _hazard_distance(hazard, 2.0, 20.0, out)
    j, i = np.indices(hazard.shape)
    hj, hi = np.nonzero(hazard)
    true = 2.0 * np.sqrt((j[..., None] - hj) ** 2 + (i[..., None] - hi) ** 2).min(axis=-1)
    assert np.all(out[hazard] == 0.0) and np.all(out[~hazard] > 0.0)
    # the 8-neighbour chamfer distance: never below the straight-line one, at most 8.24 % above it, capped
    assert np.all(out >= np.minimum(true, 20.0) - 1e-12)
    assert np.all(out <= np.minimum(true * (1.0 + 0.0824), 20.0) + 1e-12)
    assert out.max() == 20.0 and np.any(true > 20.0)
    lone = np.zeros((5, 5), dtype=bool)
    lone[2, 2] = True
    _hazard_distance(lone, 2.0, 20.0, out[:5, :5])
    assert out[2, 4] == 4.0 and out[0, 0] == pytest.approx(4.0 * math.sqrt(2.0))


def test_hazard_field_is_zero_on_no_go_and_impassable_ground_of_the_drawn_episode():
    env = make(config={**SMALL, "task_options": {**SMALL["task_options"], "split": "test"}})
    env.reset(seed=7)
    t = env.task
    st = env._batch.sim.terrain
    lim = t.grade_limits[st.surface_id[0], wetness_bin(st.wetness[0]), 1, 2]
    hazard = (t.no_go[0] != 0) | (t.terrain_config_resolved["grade_margin"] * lim < MIN_DRIVABLE_GRADE)
    assert hazard.any() and (~hazard).any()
    assert np.array_equal(t.hazard_distance[0] == 0.0, hazard)


def test_clearance_term_charges_the_time_within_its_distance_of_a_hazard():
    env = make(config={**SMALL, "rewards": {"progress": 0.1, "clearance": {"weight": 2.0, "distance_m": 5.0}}})
    env.reset(seed=1)
    hold = np.array([0.0, -1.0, 1.0, 1.0], np.float32)  # ULC speed 0: the vehicle stands
    terms = []
    for field_m in (20.0, 5.0, 2.5, 0.0):  # a uniform field: the measure reads it wherever the vehicle is
        env.task.hazard_distance[0][:] = field_m
        _, _, _, _, info = env.step(hold)
        terms.append(info["reward_terms"]["clearance"])
    dt = env._batch.dt_s
    assert terms == pytest.approx([0.0, 0.0, -2.0 * dt * 0.5, -2.0 * dt])
    with pytest.raises(ValueError, match=r"rewards.clearance reads the task measure 'hazard_distance_m', which task "
                                         r"'speed_tracking' does not give"):
        gymnasium.make("acres_gym/RangerSpeedTracking-v3", config={"rewards": {"clearance": 1.0}})
    with pytest.raises(ValueError, match=r"rewards.clearance.distance_m"):
        make(config={"rewards": {"clearance": {"weight": 1.0, "distance_m": 0.0}}})


def test_route_potential_fills_cells_off_the_routes_with_the_way_to_the_nearest_route():
    from acres_gym.envs.tasks.navigation import _route_potential, _sample_rows
    rng = np.random.default_rng(5)
    j, i = np.indices((30, 40))
    times = 2.0 * np.hypot(j - 12, i - 31) / 6.0  # a goal at (31, 12), routes at 6 m/s on 2 m cells
    times[rng.random(times.shape) < 0.3] = np.inf  # blocked or cut off
    times[5:15, 2:20] = np.inf  # a wide blocked patch
    out = np.empty(times.shape)
    _route_potential(times, 2.0, 3.0, out)
    finite = np.isfinite(times)
    assert np.array_equal(out[finite], times[finite]) and np.isfinite(out).all()
    # off the routes: the nearest route cell's time plus the straight way to it at 3 m/s (chamfer: at most
    # 8.24 % longer)
    fj, fi = np.nonzero(finite)
    dist_m = 2.0 * np.sqrt((j[..., None] - fj) ** 2 + (i[..., None] - fi) ** 2)
    lower = (times[finite] + dist_m / 3.0).min(axis=-1)
    upper = (times[finite] + dist_m * (1.0 + 0.0824) / 3.0).min(axis=-1)
    assert np.all(out[~finite] >= lower[~finite] - 1e-12) and np.all(out[~finite] <= upper[~finite] + 1e-12)
    assert out[10, 10] > times[finite].max() - 5.0  # deep in the patch: its way out is long
    none = np.full((4, 4), np.inf)
    _route_potential(none, 2.0, 3.0, out[:4, :4])
    assert np.isinf(out[:4, :4]).all()
    # bilinear between the grid points, the grid point's value on it
    sampled = np.empty(2)
    _sample_rows(out[None].repeat(2, 0), np.array([[10.0, -4.0], [10.0, -4.0]]), np.array([2.0, 2.0]),
                 np.array([10.0 + 2.0 * 7, 10.0 + 2.0 * 7.5]), np.array([-4.0 + 2.0 * 3, -4.0 + 2.0 * 3]), sampled)
    assert sampled == pytest.approx([out[3, 7], 0.5 * (out[3, 7] + out[3, 8])])


def test_route_time_is_measured_only_when_a_term_reads_it_and_holds_the_route_search():
    plain = make(config=SMALL)
    plain.reset(seed=2)
    assert plain.task.route_potential.shape[1:] == (1, 1)  # no route search without a reader
    env = make(config={**SMALL, "rewards": {"progress": None, "route_progress": 1.0}})
    env.reset(seed=2)
    t = env.task
    times = t.route_time[0]
    finite = np.isfinite(times)
    assert finite.any() and (~finite).any()
    assert np.array_equal(t.route_potential[0][finite], times[finite]) and np.isfinite(t.route_potential[0]).all()
    # the same episode, its goal on the field's zero (the route search starts there)
    assert np.array_equal(plain.task.goal, t.goal)
    gj, gi = (int(round((t.goal[0, k] - t.route_origin[0, k]) / t.route_cell[0])) for k in (1, 0))
    assert t.route_potential[0][gj, gi] == 0.0


def test_route_progress_term_is_the_route_time_gained_and_sums_over_an_episode():
    env = make(config={**SMALL, "rewards": {"progress": None, "route_progress": {"weight": 2.0}}})
    env.reset(seed=1)
    hold = np.array([0.0, -1.0, 1.0, 1.0], np.float32)  # ULC speed 0: the vehicle stands
    terms = []
    for field_s in (40.0, 40.0, 37.5, 30.0, 31.0):  # a uniform field: the measure reads it wherever the vehicle is
        env.task.route_potential[0][:] = field_s
        _, _, _, _, info = env.step(hold)
        terms.append(info["reward_terms"]["route_progress"])
    assert terms == pytest.approx([0.0, 0.0, 2.0 * 2.5, 2.0 * 7.5, -2.0 * 1.0])  # 0 on the first step
    assert sum(terms) == pytest.approx(2.0 * (40.0 - 31.0))  # the potentials' difference
    env.reset(seed=1)
    env.task.route_potential[0][:] = 10.0
    assert env.step(hold)[4]["reward_terms"]["route_progress"] == 0.0  # a new episode starts from its own
    with pytest.raises(ValueError, match=r"rewards.route_progress reads the task measure 'route_time_s', which task "
                                         r"'speed_tracking' does not give"):
        gymnasium.make("acres_gym/RangerSpeedTracking-v3", config={"rewards": {"route_progress": 1.0}})


def test_grade_margin_channel_is_traction_less_grade():
    """The ``grade_margin`` channel is the traction channel less the grade channel in every cell (< 0 where a
    hill start stalls heading the vehicle's way), on held-out ground with stalling soils."""
    channels = ["height", "grade", "traction", "no_go", "grade_margin"]
    env = make(config={"task_options": {"split": "test", "local_map": {"channels": channels,
                                                                      "stall_traction": -1.0}}})
    obs, _ = env.reset(seed=400001)
    hold = np.array([0.2, 0.3, 1.0, 1.0], np.float32)
    for _ in range(20):
        obs, *_ = env.step(hold)
    m = obs["local_map"]
    grade, traction, margin = (m[channels.index(c)] for c in ("grade", "traction", "grade_margin"))
    assert np.abs(grade).max() > 0.01 and (traction != traction.flat[0]).any()
    assert margin == pytest.approx(traction - grade, abs=1e-6)


def test_route_progress_starts_from_zero_after_a_next_step_autoreset():
    """With the native vector env's next-step autoreset, the step that restores a reset vehicle does not count
    for its route_progress: the first step of its new episode is 0, as after a same-step reset."""
    env = gymnasium.make_vec(NAV, num_envs=2, vectorization_mode="vector_entry_point",
                             config={**SMALL, "rewards": {"progress": None, "route_progress": 1.0}})
    b = env.unwrapped._batch
    env.reset(seed=3)
    go = np.tile(np.array([0.0, 1.0, 1.0, 1.0], np.float32), (2, 1))  # straight on at the top speed
    for _ in range(3):
        env.step(go)
    b.task.no_go[0][:] = 1  # vehicle 0 ends in a no-go area at its next step and is reset
    _, _, terminated, _, _ = env.step(go)
    assert terminated[0] and not terminated[1]
    env.step(go)  # the autoreset step: vehicle 0's new episode starts
    terms = []
    for _ in range(3):
        gx = b.task.route_potential.shape[2]
        b.task.route_potential[0][:] = 50.0 * np.arange(gx)[None, :]  # 25 s a metre along x: any motion counts
        _, _, _, _, info = env.step(go)
        terms.append(info["reward_terms"]["route_progress"][0])
    assert terms[0] == 0.0 and terms[1] != 0.0 and terms[2] != 0.0
