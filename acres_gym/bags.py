"""The old path of ``acres_gym.vehicle.bags``, kept so that code and commands written against the earlier layout keep
working: importing it gives that module itself (the same object, its names and state shared), and ``python -m`` on
it runs ``acres_gym.vehicle.bags.to_csv_main``."""

import sys

from acres_gym.vehicle import bags as _module

if __name__ == "__main__":
    sys.exit(_module.to_csv_main())
sys.modules[__name__] = _module
