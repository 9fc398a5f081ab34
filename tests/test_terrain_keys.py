"""The navigation task's terrain keys (``acres_gym.envs.tasks.offroad.KEYS``): every key has a bound with its
reason, a value outside it is refused when the environment is made, before anything is drawn (the generator is
replaced by one that fails the test if called), naming the key where it is set, the value and the allowed range;
a config whose draws keep failing the solvability check raises ``UnsolvableConfigError`` naming the keys to
relax."""

from __future__ import annotations

import math
import re

import gymnasium
import numpy as np
import pytest

import acres_gym  # noqa: F401  (registers the ids)
from acres_gym.envs.tasks import navigation
from acres_gym.envs.tasks.navigation import OffroadNavigationTask
from acres_gym.envs.tasks.offroad import KEYS, UnsolvableConfigError, offroad_episode, resolve_config
from acres_gym.envs.tasks.trafficability import grade_limit_table
from acres_gym.params import load_vehicle
from acres_gym.terrain import default_surfaces, offroad

NAV = "acres_gym/RangerOffroadNavigation-v2"
WHERE = "task_options (task 'offroad_navigation')"

# one value outside its bound for every key (the defaults: size_m 300, cell_m 2, edge_margin_m 20)
BAD = {
    "size_m": 0.0,
    "cell_m": 400.0,
    "roughness_m": [0.1, 5.0],
    "hills": [200000, 200000],
    "hill_height_m": [1.0, 500.0],
    "hill_radius_m": 0.0,
    "surfaces": {"grass": math.nan},
    "patch_scale_m": 1.0,
    "wetness": [0.0, 1.5],
    "no_go": [-1, 3],
    "no_go_radius_m": [5.0, 1000.0],
    "goal_distance_m": [80.0, 1000.0],
    "edge_margin_m": math.nan,
    "line_obstacles": 11,
    "obstacle_surfaces": {"ice": math.inf},
    "obstacle_radius_m": [8.0, 1e9],
    "route_cell_m": math.inf,
    "grade_margin": 0.0,
    "max_side_grade": math.inf,
    "no_go_clearance_m": -1.0,
    "edge_clearance_m": 25.0,
    "max_redraws": 1000,
}
WRONG_FORM = [("hills", 3.5), ("hills", True), ("max_redraws", "30"), ("wetness", [0.1, 0.2, 0.3]),
              ("hill_height_m", [5.0, 1.0]), ("surfaces", {}), ("surfaces", ["grass"]), ("grade_margin", None),
              ("edge_margin_m", math.inf), ("no_go_clearance_m", math.nan)]
GRID_KEYS = ("size_m", "cell_m")


@pytest.fixture
def no_draws(monkeypatch):
    """The generator replaced by functions that fail the test when called: errors come before any draw."""
    def drew(*_args, **_kwargs):
        raise AssertionError("the terrain generator ran: the config should have been refused before any draw")
    monkeypatch.setattr(offroad, "_draw_once", drew)
    monkeypatch.setattr(offroad, "route_grid", drew)
    monkeypatch.setattr(navigation, "offroad_episode", drew)


@pytest.fixture(scope="module")
def limits():
    table = default_surfaces()
    return table, grade_limit_table(np.array([load_vehicle("polaris_ranger_crew_xp1000")]), table.records)


def _message(label: str, key: str, value) -> str:
    return re.escape(f"{label}{key} = {value!r}: expected ") + r".* in [\[(].*\]"


def test_every_key_has_a_bound_with_its_reason_and_a_case_here():
    assert set(BAD) == set(KEYS)
    for key, spec in KEYS.items():
        assert len(spec.why.split()) >= 8, key  # a reason, not a label
        assert spec.kind in ("number", "integer", "range", "count", "weights"), key
        resolve_config({key: spec.default})  # the default is inside its own bound


@pytest.mark.parametrize("key", sorted(set(BAD) - set(GRID_KEYS)))
@pytest.mark.parametrize("section", ["terrain", "splits.test"])
def test_a_key_out_of_bounds_is_refused_before_any_draw(no_draws, key, section):
    """The task's own check (what ``gymnasium.make`` runs) names the section the key is set in, the value,
    the allowed range and the reason for it."""
    options = {"terrain": {key: BAD[key]}} if section == "terrain" else {"splits": {"test": {key: BAD[key]}}}
    with pytest.raises(ValueError, match=_message(f"{WHERE}.{section}.", key, BAD[key])) as err:
        OffroadNavigationTask(1, 0.1, 10, options)
    assert KEYS[key].why in str(err.value)


@pytest.mark.parametrize("key", GRID_KEYS)
def test_the_grid_keys_are_randomization_terrains(no_draws, key):
    with pytest.raises(ValueError, match=re.escape(f"{WHERE}.terrain.{key} = 100.0: the task draws its ground on "
                                                   f"the terrain grid of randomization.terrain; set "
                                                   f"randomization.terrain.{key}")):
        OffroadNavigationTask(1, 0.1, 10, {"terrain": {key: 100.0}})
    with pytest.raises(ValueError, match=_message("offroad terrain: ", key, BAD[key])):
        resolve_config({key: BAD[key]})


@pytest.mark.parametrize(("key", "value"), WRONG_FORM)
def test_values_of_the_wrong_form_are_refused(no_draws, key, value):
    with pytest.raises(ValueError, match=re.escape(f"{WHERE}.terrain.{key} = {value!r}: expected")):
        OffroadNavigationTask(1, 0.1, 10, {"terrain": {key: value}})


@pytest.mark.parametrize("terrain", [{"hills": [200000, 200000]}, {"edge_margin_m": math.nan},
                                     {"max_redraws": 10**6}])
def test_make_refuses_before_any_draw(no_draws, terrain):
    """Through ``gymnasium.make``: the three cases that used to run for minutes, crash or pass unchecked."""
    (key, value), = terrain.items()
    with pytest.raises(ValueError, match=_message(f"{WHERE}.terrain.", key, value)):
        gymnasium.make(NAV, config={"task_options": {"terrain": terrain}})


@pytest.mark.parametrize("split", ["train", "test"])
@pytest.mark.parametrize("key", ["surfaces", "obstacle_surfaces"])
def test_make_refuses_a_surface_the_table_lacks_in_either_split(no_draws, split, key):
    """Surface names are checked when the task binds to the batch's surface table, for both splits whichever
    the environment draws from."""
    with pytest.raises(ValueError, match=re.escape(f"{WHERE}.splits.{split}.{key}: unknown surface 'lava'; known "
                                                   "surfaces: ")):
        gymnasium.make(NAV, config={"task_options": {"splits": {split: {key: {"lava": 1.0}}}}})


def test_the_grids_bounds_follow_randomization_terrain(no_draws):
    """Bounds that follow the grid are checked against the batch's grid when the environment is made."""
    small = {"randomization": {"terrain": {"size_m": 100.0}}}
    with pytest.raises(ValueError, match=re.escape(f"{WHERE}.terrain.goal_distance_m = [80.0, 250.0]: ")):
        gymnasium.make(NAV, config=small)  # 250 m is past the diagonal of the 60 m square inside the margin


@pytest.mark.parametrize("config", [
    {"hills": [0, 100], "line_obstacles": 10, "no_go": 100, "max_redraws": 100},
    {"max_redraws": 0, "grade_margin": 1.0, "max_side_grade": 2.0, "route_cell_m": 16.0},
    {"hill_radius_m": [2.0, 100.0], "hill_height_m": [0.0, 200.0], "roughness_m": 2.0, "wetness": [0.0, 1.0]},
    {"edge_clearance_m": 20.0, "no_go_clearance_m": 50.0, "no_go_radius_m": 100.0, "obstacle_radius_m": 200.0},
    {"goal_distance_m": [0.0, math.sqrt(2.0) * 260.0], "patch_scale_m": 4.0, "surfaces": {"grass": 1e6}},
    {"edge_margin_m": 150.0, "goal_distance_m": 0.0, "edge_clearance_m": 0.0},
])
def test_the_bounds_themselves_are_allowed(config):
    resolve_config(config)


def test_the_generator_checks_before_drawing(no_draws, limits):
    table, lim = limits
    with pytest.raises(ValueError, match=_message("offroad terrain: ", "hills", [200000, 200000])):
        offroad_episode(0, {"hills": [200000, 200000]}, table, lim)
    with pytest.raises(ValueError, match=re.escape("offroad terrain: obstacle_surfaces: unknown surface 'lava'")):
        offroad_episode(0, {"obstacle_surfaces": {"lava": 1}}, table, lim)


@pytest.mark.parametrize(("config", "cause", "keys"), [
    ({"max_side_grade": 0.001}, "side slopes", ["max_side_grade", "hill_height_m", "hill_radius_m", "roughness_m"]),
    ({"no_go": [100, 100], "no_go_radius_m": [30, 40], "no_go_clearance_m": 20.0}, "no-go areas",
     ["no_go", "no_go_radius_m", "no_go_clearance_m", "line_obstacles"]),
    ({"line_obstacles": [10, 10], "obstacle_radius_m": [100, 100], "obstacle_surfaces": {"ice": 1}}, "grades",
     ["hill_height_m", "hill_radius_m", "grade_margin", "surfaces", "obstacle_surfaces", "wetness"]),
])
def test_an_unsolvable_config_names_the_keys_to_relax(limits, config, cause, keys):
    table, lim = limits
    with pytest.raises(UnsolvableConfigError) as err:
        offroad_episode(0, {**config, "max_redraws": 0}, table, lim)
    text = str(err.value)
    assert "no solvable episode in 1 draw(s) (max_redraws = 0)" in text
    assert cause in text.split("has a route once ")[1].split(" stop blocking it")[0].split(" or ")
    assert all(key in text.split("relax ")[1] for key in keys)
    assert isinstance(err.value, ValueError)  # the config is at fault


def test_an_unsolvable_config_raises_at_reset_naming_the_split():
    env = gymnasium.make(NAV, config={"task_options": {"terrain": {"max_side_grade": 0.001, "max_redraws": 1}}})
    with pytest.raises(UnsolvableConfigError, match=re.escape(f"{WHERE}, split 'train': offroad terrain: no "
                                                              "solvable episode in 2 draw(s)") + ".*max_side_grade"):
        env.reset(seed=0)
    env.close()


def test_routes_keep_the_configs_edge_clearance(monkeypatch, limits):
    """The solvability search blocks the edge by the config's ``edge_clearance_m`` (the planner's too)."""
    table, lim = limits
    seen = []
    real = offroad.route_grid

    def recording(*args, **kwargs):
        seen.append(args[5] if len(args) > 5 else kwargs["edge_m"])
        return real(*args, **kwargs)

    monkeypatch.setattr(offroad, "route_grid", recording)
    offroad_episode(3, {"edge_clearance_m": 3.0}, table, lim)
    offroad_episode(3, {}, table, lim)
    assert seen[0] == 3.0 and seen[-1] == 6.0
