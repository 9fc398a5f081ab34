"""The stable-baselines3 algorithms a run may name (``algo``: ``ppo`` or ``sac``), read by the model builders
(``sb3_models``) and by the loader of a run's files (``run_files``), which import it and not each other."""

from __future__ import annotations

import sys
from contextlib import contextmanager

import stable_baselines3
from stable_baselines3.common.base_class import BaseAlgorithm


@contextmanager
def distribution_checks(enabled: bool):
    """``torch.distributions``' argument checks on or off within the block (the previous setting after it).

    The checks (finite means, positive scales, samples in the support) add several tensor reductions to each
    forward pass of a small policy and change no number. Rollouts and evaluations run without them: a
    non-finite action still stops the environment with an error naming it, and the update that follows
    every rollout evaluates the same observations with the checks on."""
    from torch.distributions import Distribution

    previous = Distribution._validate_args
    Distribution.set_default_validate_args(enabled)
    try:
        yield
    finally:
        Distribution.set_default_validate_args(previous)


class PPO(stable_baselines3.PPO):
    """SB3's PPO, its rollouts without ``torch.distributions``' argument checks (``distribution_checks``)."""

    def collect_rollouts(self, *args, **kwargs):
        with distribution_checks(False):
            return super().collect_rollouts(*args, **kwargs)


class SAC(stable_baselines3.SAC):
    """SB3's SAC, its rollouts without ``torch.distributions``' argument checks (``distribution_checks``)."""

    def collect_rollouts(self, *args, **kwargs):
        with distribution_checks(False):
            return super().collect_rollouts(*args, **kwargs)


ALGORITHMS: dict[str, type[BaseAlgorithm]] = {"ppo": PPO, "sac": SAC}


def algorithm_class(name: str) -> type[BaseAlgorithm]:
    """The algorithm class called ``name``; a ``ValueError`` listing the names otherwise."""
    if name not in ALGORITHMS:
        raise ValueError(f"algo = {name!r}; allowed: {', '.join(ALGORITHMS)}")
    return ALGORITHMS[name]


def quiet_logger(model: BaseAlgorithm, tensorboard_log: str | None, verbose: int = 0) -> BaseAlgorithm:
    """``model`` with, when it has no tensorboard log, a logger that writes to stdout at ``verbose`` >= 1 and
    nowhere else. Without it SB3's ``learn`` configures its own (``configure_logger``), which makes an empty
    ``SB3-<date-time>`` directory in the system's temporary folder on every call."""
    if tensorboard_log is None:
        from stable_baselines3.common.logger import HumanOutputFormat, Logger

        model.set_logger(Logger(folder=None, output_formats=[HumanOutputFormat(sys.stdout)] if verbose >= 1 else []))
    return model
