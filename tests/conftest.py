"""Settings for every test session."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True, scope="session")
def _sb3_log_dir(tmp_path_factory):
    """Models the tests build with SB3's classes directly (``PPO(...)``, no tensorboard log) configure their
    logger at ``learn`` in ``SB3_LOGDIR``: one folder of the session's temporary ones, not a new empty
    ``SB3-<date-time>`` in the system's temporary folder for each (``acres_gym.agents.algorithms.quiet_logger``
    keeps the package's own training from making them)."""
    patch = pytest.MonkeyPatch()
    patch.setenv("SB3_LOGDIR", str(tmp_path_factory.mktemp("sb3_logs")))
    yield
    patch.undo()
