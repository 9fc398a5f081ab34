"""The old path of ``acres_gym.vehicle.deploy``, kept so that code and commands written against the earlier layout keep
working: importing it gives that module itself (the same object, its names and state shared)."""

import sys

from acres_gym.vehicle import deploy as _module

sys.modules[__name__] = _module
