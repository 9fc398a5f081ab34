"""The learners ``train.py`` trains with (``backend`` in a training config, ``train.py --backend``).

- ``sb3`` (the default): stable-baselines3's own PPO and SAC (``acres_gym.agents.algorithms``).
- ``lean``: PPO only, ``LeanPPO`` (``acres_gym.agents.lean_ppo``): the same policy, loss and hyper-parameters
  with the rollouts on the native vector env and a lean update; faster per step, the same run files.

``model_class(algo, backend)`` is the model class a run builds or resumes; ``check_backend`` refuses a
backend name outside ``BACKENDS`` and the settings a backend does not run, naming the key.
"""

from __future__ import annotations

from collections.abc import Mapping

from stable_baselines3.common.base_class import BaseAlgorithm

from acres_gym.agents import lean_ppo
from acres_gym.agents.algorithms import algorithm_class

BACKENDS = ("sb3", "lean")
DEFAULT = "sb3"


def check_backend(backend: str, algo: str, algo_kwargs: Mapping | None = None,
                  policy_kwargs: Mapping | None = None) -> None:
    """A ``ValueError`` when ``backend`` is unknown or cannot train this config (the key named)."""
    if backend not in BACKENDS:
        raise ValueError(f"backend = {backend!r}; allowed: {', '.join(BACKENDS)}")
    algorithm_class(algo)
    if backend == "lean":
        lean_ppo.check_config(algo, algo_kwargs or {}, policy_kwargs or {})


def model_class(algo: str, backend: str = DEFAULT) -> type[BaseAlgorithm]:
    """The class of ``algo``'s model under ``backend``."""
    if backend == "lean":
        lean_ppo.check_config(algo, {}, {})
        return lean_ppo.LeanPPO
    check_backend(backend, algo)
    return algorithm_class(algo)
