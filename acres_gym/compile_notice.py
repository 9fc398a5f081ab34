"""The old path of ``acres_gym.runtime.compile_notice``: importing it gives that module itself (the same object, so its
state and its names are shared), for code written against the earlier layout."""

import sys

from acres_gym.runtime import compile_notice as _module

sys.modules[__name__] = _module
