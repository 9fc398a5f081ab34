"""The stable-baselines3 algorithms a run may name (``algo``: ``ppo`` or ``sac``), read by the model builders
(``sb3_models``) and by the loader of a run's files (``run_files``), which import it and not each other."""

from __future__ import annotations

from stable_baselines3 import PPO, SAC
from stable_baselines3.common.base_class import BaseAlgorithm

ALGORITHMS: dict[str, type[BaseAlgorithm]] = {"ppo": PPO, "sac": SAC}


def algorithm_class(name: str) -> type[BaseAlgorithm]:
    """The algorithm class called ``name``; a ``ValueError`` listing the names otherwise."""
    if name not in ALGORITHMS:
        raise ValueError(f"algo = {name!r}; allowed: {', '.join(ALGORITHMS)}")
    return ALGORITHMS[name]
