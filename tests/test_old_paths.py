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
