"""The module paths of the earlier layout that have no file of their own any more, resolved on import to the
modules that moved: ``import acres_gym.model.soil_random`` gives ``acres_gym.terrain.soil_random`` itself.

A finder on ``sys.meta_path`` does it on first use, so the packages the modules left keep only what belongs
there (``model/`` its kernels, ``terrain/`` nothing from above it), nothing is imported before it is asked
for, and a pickle that names an old path (a training checkpoint of an earlier release) still loads.
The old top-level modules that ``python -m`` runs (``acres_gym.calibrate``, ``acres_gym.bags``,
``acres_gym.tools.replay``) and ``acres_gym.deploy`` are small files instead, since ``python -m`` needs one.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys

MOVED: dict[str, str] = {
    "acres_gym.model.threading_layer": "acres_gym.runtime.threading_layer",
    "acres_gym.model.allocator": "acres_gym.runtime.allocator",
    "acres_gym.model.soil_random": "acres_gym.terrain.soil_random",
    "acres_gym.terrain.offroad": "acres_gym.envs.tasks.offroad",
    "acres_gym.terrain.trafficability": "acres_gym.envs.tasks.trafficability",
}
"""old module name -> the module it is now."""


class _Alias(importlib.abc.Loader):
    """Loads an old name as the module it moved to (the same object, not a copy)."""

    def __init__(self, target: str) -> None:
        self.target = target

    def create_module(self, spec):
        module = importlib.import_module(self.target)
        self.spec = module.__spec__  # the import system overwrites it with the alias's; put back in exec_module
        return module

    def exec_module(self, module) -> None:
        """Nothing to run (the moved module ran when it was imported under its own name); its own spec back."""
        module.__spec__ = self.spec


class _OldPaths(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path=None, target=None):
        if fullname not in MOVED:
            return None
        return importlib.machinery.ModuleSpec(fullname, _Alias(MOVED[fullname]))


def install() -> None:
    """Put the finder first on ``sys.meta_path`` (once)."""
    if not any(isinstance(f, _OldPaths) for f in sys.meta_path):
        sys.meta_path.insert(0, _OldPaths())
