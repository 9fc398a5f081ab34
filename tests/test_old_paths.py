"""The module paths of the earlier layout still import, as the very modules that moved, and still run with
``python -m``; so user code, scripts and saved objects naming them keep working."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

from acres_gym.old_paths import MOVED as RESOLVED

MOVED = {
    "acres_gym.bags": "acres_gym.vehicle.bags",
    "acres_gym.calibrate": "acres_gym.vehicle.calibrate",
    "acres_gym.deploy": "acres_gym.vehicle.deploy",
    "acres_gym.tools.replay": "acres_gym.vehicle.replay",
    "acres_gym.libm": "acres_gym.runtime.libm",
    "acres_gym.compile_notice": "acres_gym.runtime.compile_notice",
    **RESOLVED,  # the old paths with no file, resolved by the finder of acres_gym.old_paths
}


@pytest.mark.parametrize("old", sorted(MOVED))
def test_the_old_path_is_the_moved_module(old):
    module = importlib.import_module(old)
    assert module is importlib.import_module(MOVED[old])
    assert module.__name__ == MOVED[old] and module.__spec__.name == MOVED[old]


def test_the_finder_resolves_nothing_else():
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("acres_gym.model.no_such_module")


def test_names_read_from_the_old_paths():
    from acres_gym.bags import read_bag_commands
    from acres_gym.deploy import PolicyRuntime
    from acres_gym.tools.replay import INPUT_COLUMNS, Message, ReplayInputError, main
    from acres_gym.vehicle import bags, command_log, deploy, replay

    assert read_bag_commands is bags.read_bag_commands and PolicyRuntime is deploy.PolicyRuntime
    assert Message is command_log.Message and ReplayInputError is command_log.ReplayInputError
    assert INPUT_COLUMNS is command_log.INPUT_COLUMNS and main is replay.main


@pytest.mark.parametrize(("old", "prog"), [("acres_gym.calibrate", "acres-calibrate"),
                                           ("acres_gym.tools.replay", "acres-replay"),
                                           ("acres_gym.bags", "acres-bag-to-csv")])
def test_python_m_on_an_old_path_runs_the_command(old, prog):
    done = subprocess.run([sys.executable, "-m", old, "--help"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"usage: {prog}"), done.stdout[:200]


# --------------------------------------------------------------------------- pickles of the earlier layout

# the classes that moved, with the module that defined them in the previous release
OLD_HOMES = {
    "acres_gym.envs.tasks.offroad": "acres_gym.terrain.offroad",
    "acres_gym.runtime.threading_layer": "acres_gym.model.threading_layer",
    "acres_gym.vehicle.command_log": "acres_gym.tools.replay",
    "acres_gym.vehicle.bags": "acres_gym.bags",
    "acres_gym.vehicle.deploy": "acres_gym.deploy",
    "acres_gym.terrain.rough_ground": "acres_gym.terrain.generate",
    "acres_gym.terrain.patches": "acres_gym.terrain.generate",
}


def as_previous_release(data: bytes) -> bytes:
    """A protocol-2 pickle with each moved class named by the module it had in the previous release (what a
    checkpoint written then holds); protocol 2 writes a class as ``c<module>\\n<name>\\n``."""
    for new, old in OLD_HOMES.items():
        data = data.replace(b"c" + new.encode() + b"\n", b"c" + old.encode() + b"\n")
    return data


def _moved_objects():
    import numpy as np

    from acres_gym.envs.tasks.offroad import offroad_episode, resolve_config
    from acres_gym.envs.tasks.trafficability import grade_limit_table
    from acres_gym.params import load_vehicle
    from acres_gym.runtime.threading_layer import KernelChoice
    from acres_gym.terrain import default_surfaces, grid_axes, patch_plan, rough_plan
    from acres_gym.vehicle.bags import BagError
    from acres_gym.vehicle.command_log import INPUT_COLUMNS, Message, ReplayInputError
    from acres_gym.vehicle.deploy import UnsafeCommandError

    table = default_surfaces()
    limits = grade_limit_table(np.array([load_vehicle("polaris_ranger_crew_xp1000")]), table.records)
    config = resolve_config({"size_m": 200.0, "goal_distance_m": [60, 100]}, table)
    episode = offroad_episode(7, config, table, limits)
    x_m, y_m = grid_axes(40.0, 1.0)
    plans = (rough_plan(40.0, 1.0), patch_plan(x_m, y_m, 1.0, table, {"grass": 1, "gravel": 1}))
    return {"episode": episode, "plans": plans, "choice": KernelChoice(),
            "message": Message(3, 0.25, {"steer_cmd": 1.5}), "column": INPUT_COLUMNS["steer_mode"],
            "errors": (ReplayInputError("line 3"), BagError("topic"), UnsafeCommandError("brake"))}


def test_a_pickle_naming_the_old_modules_loads_the_moved_classes():
    import pickle

    import numpy as np

    objects = _moved_objects()
    data = pickle.dumps(objects, protocol=2)
    old = as_previous_release(data)
    for new, previous in OLD_HOMES.items():  # the rewrite took place: only the old names are in it
        assert b"c" + new.encode() + b"\n" not in old
        assert b"c" + previous.encode() + b"\n" in old, previous
    loaded = pickle.loads(old)
    assert type(loaded["episode"]) is type(objects["episode"])
    was, now = objects["episode"], loaded["episode"]
    assert np.array_equal(now.no_go, was.no_go) and np.array_equal(now.terrain.height_m, was.terrain.height_m)
    assert (now.start_xy, now.start_yaw, now.goal_xy, now.redraws) == (was.start_xy, was.start_yaw, was.goal_xy,
                                                                      was.redraws)
    assert [type(p) for p in loaded["plans"]] == [type(p) for p in objects["plans"]]
    assert [repr(p) for p in loaded["plans"]] == [repr(p) for p in objects["plans"]]
    assert type(loaded["choice"]) is type(objects["choice"])
    assert loaded["message"] == objects["message"] and loaded["column"] == objects["column"]
    assert [type(e) for e in loaded["errors"]] == [type(e) for e in objects["errors"]]
    assert [str(e) for e in loaded["errors"]] == [str(e) for e in objects["errors"]]


def test_an_environment_pickled_with_the_old_module_names_continues_the_episode():
    import pickle

    import gymnasium
    import numpy as np

    from acres_gym.registration import id_for_config

    env = gymnasium.make(id_for_config("offroad_navigation"),
                         config={"randomization": {"terrain": {"size_m": 200.0}},
                                 "task_options": {"terrain": {"goal_distance_m": [60, 100]}}}).unwrapped
    env.reset(seed=3)
    action = np.full(env.action_space.shape, 0.3, dtype=np.float32)
    env.step(action)
    copy = pickle.loads(as_previous_release(pickle.dumps(env, protocol=2)))
    for _ in range(3):
        a, b = env.step(action), copy.step(action)
        for key in a[0]:
            assert np.array_equal(a[0][key], b[0][key]), key
        assert a[1:4] == b[1:4]
