"""stable-baselines3 models from a training config, and trained models as ``policy(obs)`` callables.

``build_model(cfg, venv)`` makes a PPO or SAC with ``MultiInputPolicy`` (the observations are a ``Dict``)
from the ``algo``, ``algo_kwargs`` and ``policy_kwargs`` of a training config (``configs/train``).
``policy_kwargs.activation_fn`` may be a name (``tanh``, ``relu``, ``elu``, ``gelu``); ``net_arch`` a list
or a dict as SB3 takes it. Unknown algorithms or SB3 arguments raise ``ValueError`` naming them.

``SB3Policy(model, normalizer)`` turns a trained model into ``action = policy(obs)`` (deterministic by
default) for single or batched observations; ``normalizer`` is the ``VecNormalize`` the model was trained
behind, or None: the policy normalises with a frozen copy of its statistics (``frozen_normalizer``), so
the training normaliser stays as it was (evaluations during training). ``load_run_policy(model_path)`` loads what
``train.py`` saved in a run directory (model, normaliser, resolved config).
"""

from __future__ import annotations

import copy
import inspect
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import yaml
from stable_baselines3 import PPO, SAC
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.vec_env import VecNormalize

from acres_gym.envs.config import load_config

ALGORITHMS: dict[str, type[BaseAlgorithm]] = {"ppo": PPO, "sac": SAC}
ACTIVATIONS = ("tanh", "relu", "elu", "gelu", "leaky_relu")
POLICY = "MultiInputPolicy"


def _activation(name: str):
    import torch.nn as nn

    table = {"tanh": nn.Tanh, "relu": nn.ReLU, "elu": nn.ELU, "gelu": nn.GELU, "leaky_relu": nn.LeakyReLU}
    if name not in table:
        raise ValueError(f"policy_kwargs.activation_fn = {name!r}; allowed: {', '.join(ACTIVATIONS)}")
    return table[name]


def algorithm_class(name: str) -> type[BaseAlgorithm]:
    if name not in ALGORITHMS:
        raise ValueError(f"algo = {name!r}; allowed: {', '.join(ALGORITHMS)}")
    return ALGORITHMS[name]


def build_model(algo: str, venv: Any, seed: int, algo_kwargs: Mapping | None = None,
                policy_kwargs: Mapping | None = None, tensorboard_log: str | None = None,
                device: str = "cpu", verbose: int = 0) -> BaseAlgorithm:
    """A new PPO or SAC on ``venv`` (an SB3 ``VecEnv``) with ``MultiInputPolicy``."""
    cls = algorithm_class(algo)
    kwargs = dict(algo_kwargs or {})
    allowed = set(inspect.signature(cls.__init__).parameters) - {"self", "policy", "env", "seed", "policy_kwargs",
                                                                 "tensorboard_log", "device", "verbose"}
    unknown = sorted(set(kwargs) - allowed)
    if unknown:
        raise ValueError(f"algo_kwargs: unknown {algo.upper()} argument(s) {unknown}; allowed: "
                         f"{', '.join(sorted(allowed))}")
    pk = dict(policy_kwargs or {})
    if isinstance(pk.get("activation_fn"), str):
        pk["activation_fn"] = _activation(pk["activation_fn"])
    return cls(POLICY, venv, seed=seed, policy_kwargs=pk or None, tensorboard_log=tensorboard_log, device=device,
               verbose=verbose, **kwargs)


def frozen_normalizer(normalizer: VecNormalize | None) -> VecNormalize | None:
    """A copy of a normaliser that normalises with today's statistics and never updates them."""
    if normalizer is None:
        return None
    frozen = object.__new__(type(normalizer))  # not copy.copy: VecNormalize's pickling wants a venv
    frozen.__dict__.update(normalizer.__dict__)
    frozen.obs_rms = copy.deepcopy(normalizer.obs_rms)
    frozen.ret_rms = copy.deepcopy(normalizer.ret_rms)
    frozen.training = False
    return frozen


class SB3Policy:
    """A trained model as ``action = policy(obs)`` (single or batched ``Dict`` observations)."""

    def __init__(self, model: BaseAlgorithm, normalizer: VecNormalize | None = None,
                 deterministic: bool = True) -> None:
        self.model = model
        self.normalizer = frozen_normalizer(normalizer)
        self.deterministic = deterministic

    def reset(self, rows: np.ndarray | None = None) -> None:
        """The policy is feed-forward: nothing to clear."""

    def __call__(self, obs: Mapping[str, np.ndarray]):
        obs = {k: np.asarray(v) for k, v in obs.items()}
        if self.normalizer is not None:
            obs = self.normalizer.normalize_obs(obs)
        action, _ = self.model.predict(obs, deterministic=self.deterministic)
        return action

    @classmethod
    def factory(cls, model: BaseAlgorithm, normalizer: VecNormalize | None = None, deterministic: bool = True):
        """A policy factory for ``acres_gym.agents.evaluate`` (the same policy for any environment)."""
        policy = cls(model, normalizer, deterministic)
        return lambda _venv: policy


def load_run_config(model_path: str | Path) -> dict:
    """The resolved training config saved beside a ``model.zip`` by ``train.py`` (its ``config.yaml``)."""
    model_path = Path(model_path)
    if not model_path.is_file():
        raise FileNotFoundError(f"no model at {model_path} (expected the model.zip of a train.py run)")
    config_path = model_path.parent / "config.yaml"
    if not config_path.is_file():
        raise FileNotFoundError(f"{config_path} is missing: a train.py run saves it beside model.zip")
    return yaml.safe_load(config_path.read_text(encoding="utf-8"))


def load_run_normalizer(model_path: str | Path) -> VecNormalize | None:
    """The observation normaliser saved beside a run's ``model.zip`` (``vecnormalize.pkl``), or None."""
    path = Path(model_path).parent / "vecnormalize.pkl"
    if not path.exists():
        return None
    import pickle

    with open(path, "rb") as f:
        return pickle.load(f)


def load_run_policy(model_path: str | Path):
    """``(policy factory, action mode, env config)`` of a model saved by ``train.py``: ``model.zip`` with
    ``vecnormalize.pkl`` (if any) and ``config.yaml`` in the same directory."""
    config = load_run_config(model_path)
    model = algorithm_class(config["algo"]).load(str(model_path), device="cpu")
    normalizer = load_run_normalizer(model_path)
    env_config = load_config(config.get("env_config"))
    return SB3Policy.factory(model, normalizer), env_config.get("action_mode"), env_config
