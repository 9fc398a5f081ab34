"""Where the project's configuration files live: the one resolver every module uses.

The configs ship inside the package as ``acres_gym.configs`` (in the repository they are the top-level
``configs/`` folder, mapped into the package by ``pyproject.toml``) and are found through
``importlib.resources``, so a wheel installed anywhere finds them. Setting the environment variable
``ACRES_GYM_CONFIG_DIR`` points every lookup at another directory with the same layout
(``vehicles/<name>.json``, ``tasks/<name>.yaml``, ``surfaces.json``, ``soils.json``, ...); it is read at each
lookup, so it can be changed at run time.
"""

from __future__ import annotations

import os
from importlib import resources
from pathlib import Path

CONFIG_DIR_ENV = "ACRES_GYM_CONFIG_DIR"
CONFIG_PACKAGE = "acres_gym.configs"
VEHICLES_SUBDIR = "vehicles"


def packaged_config_dir() -> Path:
    """The configs shipped with the package (``acres_gym.configs``), as a directory on disk."""
    folder = resources.files(CONFIG_PACKAGE)
    if not isinstance(folder, Path):  # a zipped install: the configs must be on disk to be read as files
        raise RuntimeError(f"acres_gym's configs are not on the file system ({folder!r}); install the package "
                           f"unzipped or set {CONFIG_DIR_ENV} to a directory of configs")
    return folder


def config_dir() -> Path:
    """The configuration directory: ``$ACRES_GYM_CONFIG_DIR`` when set, else the packaged configs."""
    override = os.environ.get(CONFIG_DIR_ENV)
    return Path(override).expanduser() if override else packaged_config_dir()


def config_path(*parts: str) -> Path:
    """A file or folder under the configuration directory, e.g. ``config_path("tasks", "hill_climb.yaml")``."""
    return config_dir().joinpath(*parts)


def vehicles_dir() -> Path:
    """Directory of the vehicle parameter files (``<config dir>/vehicles``)."""
    return config_path(VEHICLES_SUBDIR)


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
