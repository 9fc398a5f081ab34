"""Where the project's configuration files live.

``CONFIG_DIR`` is the ``configs/`` directory beside the package (the project root of a source or
editable install). Setting the environment variable ``ACRES_GYM_CONFIG_DIR`` points every lookup at
another directory with the same layout (``vehicles/<name>.json``, ...); it is read at each lookup, so
it can be changed at run time.
"""

from __future__ import annotations

import os
from pathlib import Path

CONFIG_DIR_ENV = "ACRES_GYM_CONFIG_DIR"
DEFAULT_CONFIG_DIR = Path(__file__).resolve().parents[1] / "configs"
CONFIG_DIR = Path(os.environ[CONFIG_DIR_ENV]) if os.environ.get(CONFIG_DIR_ENV) else DEFAULT_CONFIG_DIR

VEHICLES_SUBDIR = "vehicles"


def config_dir() -> Path:
    """The configuration directory: ``$ACRES_GYM_CONFIG_DIR`` when set, else ``DEFAULT_CONFIG_DIR``."""
    override = os.environ.get(CONFIG_DIR_ENV)
    return Path(override).expanduser() if override else DEFAULT_CONFIG_DIR


def vehicles_dir() -> Path:
    """Directory of the vehicle parameter files (``<config dir>/vehicles``)."""
    return config_dir() / VEHICLES_SUBDIR


def available_vehicles() -> list[str]:
    """Names of the vehicle parameter files (``vehicles/<name>.json``), sorted."""
    folder = vehicles_dir()
    if not folder.is_dir():
        return []
    return sorted(p.stem for p in folder.glob("*.json"))


def vehicle_config_path(name: str) -> Path:
    """Path of the vehicle parameter file called ``name`` (``<config dir>/vehicles/<name>.json``).

    The file is not required to exist; ``acres_gym.params.load_vehicle`` reports a missing one with the
    list of available vehicles.
    """
    return vehicles_dir() / f"{name}.json"
