"""acres-gym: a 120 Hz Polaris Ranger CREW XP 1000 model with its Dataspeed drive-by-wire layer.

The simulator library: parameters (``load_vehicle``), terrain and soils (``acres_gym.terrain``), the
batched jitted core (``RangerSim``), the DBW commands and reports (``acres_gym.dbw``), the seed's helpers
(``torque``, ``slip``, ``ackermann``), the validation table (``python -m acres_gym.validate``).
"""

from acres_gym import registration as _registration  # noqa: F401  (registers the gymnasium ids)
from acres_gym.constants import DT_S, PHYSICS_HZ
from acres_gym.model.curves import ackermann, slip, torque
from acres_gym.params import finalize_parameters, load_vehicle, set_parameter
from acres_gym.sim import RangerSim

__version__ = "0.1.0"

__all__ = [
    "DT_S",
    "PHYSICS_HZ",
    "RangerSim",
    "ackermann",
    "finalize_parameters",
    "load_vehicle",
    "set_parameter",
    "slip",
    "torque",
]
