"""acres-gym: a 120 Hz Polaris Ranger CREW XP 1000 model with its Dataspeed drive-by-wire layer.

The simulator library: parameters (``load_vehicle``), terrain and soils (``acres_gym.terrain``), the
batched jitted core (``RangerSim``), the DBW commands and reports (``acres_gym.dbw``), the seed's helpers
(``torque``, ``slip``, ``ackermann``), the validation table (``python -m acres_gym.tools.validate``), and the
policy runtime for the vehicle (``acres_gym.vehicle.deploy``: numpy and onnxruntime only).

``import acres_gym`` registers the Gymnasium ids and loads nothing else: the names below are imported on
first use (PEP 562), so ``acres_gym.vehicle.deploy`` runs without numba, torch or stable-baselines3 loaded.
"""

from importlib import import_module
from typing import Any

from acres_gym import old_paths as _old_paths
from acres_gym import registration as _registration  # noqa: F401  (registers the gymnasium ids)
from acres_gym.constants import DT_S, PHYSICS_HZ

_old_paths.install()  # the module paths of the earlier layout, resolved on first use

__version__ = "0.1.0"

# name -> module it lives in, imported on first access
_LAZY = {
    "RangerSim": "acres_gym.sim",
    "ackermann": "acres_gym.model.curves",
    "slip": "acres_gym.model.curves",
    "torque": "acres_gym.model.curves",
    "finalize_parameters": "acres_gym.params",
    "load_vehicle": "acres_gym.params",
    "set_parameter": "acres_gym.params",
}

__all__ = ["DT_S", "PHYSICS_HZ", *sorted(_LAZY)]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        value = getattr(import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'acres_gym' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
