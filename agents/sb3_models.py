"""stable-baselines3 models from a training config, and trained models as ``policy(obs)`` callables.

``build_model(cfg, venv)`` makes a PPO or SAC with ``MultiInputPolicy`` (the observations are a ``Dict``)
from the ``algo``, ``algo_kwargs`` and ``policy_kwargs`` of a training config (``configs/train``).
``policy_kwargs.activation_fn`` may be a name (``tanh``, ``relu``, ``elu``, ``gelu``); ``net_arch`` a list
or a dict as SB3 takes it; ``features_extractor_class`` a name of ``FEATURE_EXTRACTORS`` (``local_map_cnn``:
a small CNN over the navigation task's ``local_map`` with an MLP over the rest; the class itself is
``LocalMapExtractor``). Unknown algorithms or SB3 arguments raise ``ValueError`` naming them.

``SB3Policy(model, normalizer)`` turns a trained model into ``action = policy(obs)`` (deterministic by
default) for single or batched observations; ``normalizer`` is the ``VecNormalize`` the model was trained
behind, or None: the policy normalises with a frozen copy of its statistics (``frozen_normalizer``), so
the training normaliser stays as it was (evaluations during training). ``load_run_policy(model_path)`` loads what
``train.py`` saved in a run directory (model, normaliser, resolved config) through ``acres_gym.agents.run_files``.
"""

from __future__ import annotations

import copy
import inspect
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.vec_env import VecNormalize

from acres_gym.agents.algorithms import ALGORITHMS, algorithm_class  # noqa: F401  (named here as before)
from acres_gym.envs.config import load_config

ACTIVATIONS = ("tanh", "relu", "elu", "gelu", "leaky_relu")
POLICY = "MultiInputPolicy"


def _activation(name: str):
    import torch.nn as nn

    table = {"tanh": nn.Tanh, "relu": nn.ReLU, "elu": nn.ELU, "gelu": nn.GELU, "leaky_relu": nn.LeakyReLU}
    if name not in table:
        raise ValueError(f"policy_kwargs.activation_fn = {name!r}; allowed: {', '.join(ACTIVATIONS)}")
    return table[name]


def local_map_extractor_class():
    """``LocalMapExtractor``: a small CNN over the ``local_map`` observation (C, H, W) and an MLP over the
    other entries of the ``Dict`` (flattened and concatenated), their features concatenated. Built on
    first use (torch is imported lazily).

    CNN: Conv 5x5 stride 2 (16), Conv 3x3 stride 2 (32), Conv 3x3 stride 2 (32), ReLU after each, then a
    linear layer to ``map_features``; MLP: one linear layer to ``other_features`` with ReLU.
    """
    import torch
    import torch.nn as nn
    from gymnasium import spaces
    from stable_baselines3.common.torch_layers import BaseFeaturesExtractor

    class LocalMapExtractor(BaseFeaturesExtractor):
        def __init__(self, observation_space: spaces.Dict, map_features: int = 128, other_features: int = 64,
                     map_key: str = "local_map") -> None:
            if map_key not in observation_space.spaces:
                raise ValueError(f"policy_kwargs.features_extractor_class: the observation has no {map_key!r} entry")
            super().__init__(observation_space, features_dim=map_features + other_features)
            c, h, w = observation_space[map_key].shape
            self.map_key = map_key
            self.other_keys = [k for k in observation_space.spaces if k != map_key]
            self.cnn = nn.Sequential(
                nn.Conv2d(c, 16, 5, stride=2, padding=2), nn.ReLU(),
                nn.Conv2d(16, 32, 3, stride=2, padding=1), nn.ReLU(),
                nn.Conv2d(32, 32, 3, stride=2, padding=1), nn.ReLU(), nn.Flatten())
            with torch.no_grad():
                n_flat = self.cnn(torch.zeros(1, c, h, w)).shape[1]
            self.map_head = nn.Sequential(nn.Linear(n_flat, map_features), nn.ReLU())
            n_other = sum(int(np.prod(observation_space[k].shape)) for k in self.other_keys)
            self.other_head = nn.Sequential(nn.Linear(n_other, other_features), nn.ReLU())

        def forward(self, observations):
            m = self.map_head(self.cnn(observations[self.map_key]))
            rest = torch.cat([observations[k].reshape(observations[k].shape[0], -1) for k in self.other_keys], dim=1)
            return torch.cat([m, self.other_head(rest)], dim=1)

    return LocalMapExtractor


FEATURE_EXTRACTORS = {"local_map_cnn": local_map_extractor_class}


def __getattr__(name: str):
    """``LocalMapExtractor``: the class ``local_map_extractor_class`` builds, as a module attribute for configs
    that name a class by its module (RL Zoo's ``policy_kwargs`` in ``configs/zoo``). Built on first access."""
    if name == "LocalMapExtractor":
        cls = globals()["LocalMapExtractor"] = local_map_extractor_class()
        return cls
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


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
    if isinstance(pk.get("features_extractor_class"), str):
        name = pk["features_extractor_class"]
        if name not in FEATURE_EXTRACTORS:
            raise ValueError(f"policy_kwargs.features_extractor_class = {name!r}; "
                             f"allowed: {', '.join(FEATURE_EXTRACTORS)}")
        pk["features_extractor_class"] = FEATURE_EXTRACTORS[name]()
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
    """The resolved training config saved beside a ``model.zip`` by ``train.py`` (its ``config.yaml``; for a
    checkpoint, its copy). Missing or damaged run files raise ``RunFileError`` (``acres_gym.agents.run_files``)."""
    from acres_gym.agents import run_files

    return run_files.load_run(model_path)[1]


def load_run_normalizer(model_path: str | Path) -> VecNormalize | None:
    """The observation normaliser saved beside a run's ``model.zip`` (``vecnormalize.pkl``) or in a checkpoint,
    or None when the run has none; an error when the run's config asks for one that is missing."""
    from acres_gym.agents import run_files

    files, config = run_files.load_run(model_path)
    return run_files.load_normalizer(files, config)


def load_run_policy(model_path: str | Path):
    """``(policy factory, action mode, env config)`` of a model saved by ``train.py``: a run's ``model.zip``
    or a checkpoint (``checkpoints/step_<steps>``), read by ``acres_gym.agents.run_files``."""
    from acres_gym.agents import run_files

    files, config = run_files.load_run(model_path)
    model = run_files.load_model(files, config["algo"], device="cpu")
    normalizer = run_files.load_normalizer(files, config)
    env_config = load_config(config.get("env_config"))
    return SB3Policy.factory(model, normalizer), env_config.get("action_mode"), env_config
