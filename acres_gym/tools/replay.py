"""The old path of ``acres_gym.vehicle.replay``, kept so that code and commands written against the earlier layout keep
working: importing it gives that module itself (the same object, its names and state shared), and ``python -m`` on
it runs ``acres_gym.vehicle.replay.main``."""

import sys

from acres_gym.vehicle import replay as _module

if __name__ == "__main__":
    sys.exit(_module.main())
sys.modules[__name__] = _module
