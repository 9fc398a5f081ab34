"""The old path of ``acres_gym.runtime.libm``: importing it gives that module itself (the same object, so its
state and its names are shared), for code written against the earlier layout."""

import sys

from acres_gym.runtime import libm as _module

sys.modules[__name__] = _module
