"""stable-baselines3 models from a training config, and trained models as ``policy(obs)`` callables.

``build_model(cfg, venv)`` makes a PPO or SAC (SB3's, their rollouts without ``torch.distributions``'
argument checks: ``distribution_checks``) with ``MultiInputPolicy`` (the observations are a ``Dict``)
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

``ObsNormalizer`` is SB3's ``VecNormalize`` with the statistics of all the entries of a ``Dict`` observation
updated, and the entries normalised, in one pass over their concatenation instead of one pass per entry:
the same figures to the bit, without the per-entry overhead (the observations have about twenty entries).
``train.py`` trains behind it; it saves and loads as ``VecNormalize`` does. ``set_per_channel`` makes entries
such as ``local_map`` share their statistics over all axes but the first (one mean and variance per channel).
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

from acres_gym.agents.algorithms import (  # noqa: F401  (ALGORITHMS, PPO, SAC named here as before)
    ALGORITHMS,
    PPO,
    SAC,
    algorithm_class,
    distribution_checks,
    quiet_logger,
)
from acres_gym.agents.running_stats import normalize, update_moments
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

    CNN: Conv 5x5 stride 2, Conv 3x3 stride 2, Conv 3x3 stride 2 with ``channels`` output channels (default 16,
    32, 32), ReLU after each, then a linear layer to ``map_features``; MLP: one linear layer to
    ``other_features`` with ReLU.
    """
    import torch
    import torch.nn as nn
    from gymnasium import spaces
    from stable_baselines3.common.torch_layers import BaseFeaturesExtractor

    class LocalMapExtractor(BaseFeaturesExtractor):
        def __init__(self, observation_space: spaces.Dict, map_features: int = 128, other_features: int = 64,
                     map_key: str = "local_map", channels: tuple[int, int, int] = (16, 32, 32)) -> None:
            if map_key not in observation_space.spaces:
                raise ValueError(f"policy_kwargs.features_extractor_class: the observation has no {map_key!r} entry")
            if len(channels) != 3 or not all(isinstance(n, int) and n >= 1 for n in channels):
                raise ValueError(f"policy_kwargs.features_extractor_kwargs.channels = {list(channels)!r}: three "
                                 "positive integers, the output channels of the three convolutions")
            super().__init__(observation_space, features_dim=map_features + other_features)
            c, h, w = observation_space[map_key].shape
            self.map_key = map_key
            self.other_keys = [k for k in observation_space.spaces if k != map_key]
            c1, c2, c3 = channels
            self.cnn = nn.Sequential(
                nn.Conv2d(c, c1, 5, stride=2, padding=2), nn.ReLU(),
                nn.Conv2d(c1, c2, 3, stride=2, padding=1), nn.ReLU(),
                nn.Conv2d(c2, c3, 3, stride=2, padding=1), nn.ReLU(), nn.Flatten())
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


SCHEDULED = ("learning_rate", "clip_range", "clip_range_vf")  # the arguments SB3 takes as a schedule too


def schedule(key: str, value: Any) -> Any:
    """``algo_kwargs.<key>`` as SB3 takes it: a number as it is; ``"lin_<initial>"`` (RL Zoo's notation) a
    schedule falling linearly from ``initial`` at the start of the run to 0 at its end, where SB3 evaluates it
    (``LinearSchedule``, a function of the progress remaining). Anything else is a ``ValueError`` naming the key."""
    if not isinstance(value, str):
        return value
    from stable_baselines3.common.utils import LinearSchedule

    initial = None
    if value.startswith("lin_"):
        try:
            initial = float(value[4:])
        except ValueError:
            pass
    if initial is None or not np.isfinite(initial) or initial <= 0.0:
        raise ValueError(f"algo_kwargs.{key} = {value!r}: a number, or 'lin_<initial>' with initial > 0 "
                         "(linear from initial to 0 over the run, e.g. 'lin_1e-3')")
    return LinearSchedule(initial, 0.0, 1.0)


def build_model(algo: str, venv: Any, seed: int, algo_kwargs: Mapping | None = None,
                policy_kwargs: Mapping | None = None, tensorboard_log: str | None = None,
                device: str = "cpu", verbose: int = 0, algorithm: type[BaseAlgorithm] | None = None) -> BaseAlgorithm:
    """A new PPO or SAC on ``venv`` (an SB3 ``VecEnv``) with ``MultiInputPolicy``; ``algorithm`` is the class to
    build (a backend's, ``acres_gym.agents.backends.model_class``; default SB3's ``algo``)."""
    cls = algorithm_class(algo) if algorithm is None else algorithm
    kwargs = dict(algo_kwargs or {})
    allowed = set(inspect.signature(cls.__init__).parameters) - {"self", "policy", "env", "seed", "policy_kwargs",
                                                                 "tensorboard_log", "device", "verbose"}
    unknown = sorted(set(kwargs) - allowed)
    if unknown:
        raise ValueError(f"algo_kwargs: unknown {algo.upper()} argument(s) {unknown}; allowed: "
                         f"{', '.join(sorted(allowed))}")
    for key in SCHEDULED:
        if key in kwargs:
            kwargs[key] = schedule(key, kwargs[key])
    pk = dict(policy_kwargs or {})
    if isinstance(pk.get("activation_fn"), str):
        pk["activation_fn"] = _activation(pk["activation_fn"])
    if isinstance(pk.get("features_extractor_class"), str):
        name = pk["features_extractor_class"]
        if name not in FEATURE_EXTRACTORS:
            raise ValueError(f"policy_kwargs.features_extractor_class = {name!r}; "
                             f"allowed: {', '.join(FEATURE_EXTRACTORS)}")
        pk["features_extractor_class"] = FEATURE_EXTRACTORS[name]()
    return quiet_logger(cls(POLICY, venv, seed=seed, policy_kwargs=pk or None, tensorboard_log=tensorboard_log,
                            device=device, verbose=verbose, **kwargs), tensorboard_log, verbose)


def update_each_entry(norm: VecNormalize, obs: Any) -> None:
    """SB3's own update of a ``VecNormalize``'s observation statistics with a batch, as its ``reset`` and
    ``step_wait`` make it: entry by entry for a ``Dict`` observation."""
    if isinstance(obs, Mapping) and isinstance(norm.obs_rms, dict):
        for key in norm.obs_rms:
            norm.obs_rms[key].update(obs[key])
    else:
        norm.obs_rms.update(obs)


def update_statistics(norm: VecNormalize, obs: Any) -> None:
    """``norm``'s observation statistics updated with a batch: an ``ObsNormalizer``'s ``update_entries``
    (one pass, per-channel pooling), else SB3's own update."""
    if isinstance(norm, ObsNormalizer):
        norm.update_entries(obs)
    else:
        update_each_entry(norm, obs)


class ObsNormalizer(VecNormalize):
    """``VecNormalize`` over the concatenated entries of a ``Dict`` observation (see the module docstring).

    Bit for bit SB3's figures: one compiled pass (``acres_gym.agents.running_stats``) follows
    ``RunningMeanStd.update_from_moments`` element by element, with the batch moments reduced in numpy's order
    for each entry, and updates the entries' statistics in place (they are views of the concatenated arrays).
    Observations that are not float32, and entries whose counts differ, are updated by SB3's own code; anything
    but a normalised ``Dict`` observation is left to ``VecNormalize``.

    Entries named by ``set_per_channel`` keep one mean and variance per channel (index of their first axis):
    after every update each channel's elements get the pooled statistics of all of them, which is exactly the
    statistics of all their samples together (every element has the same count, and pooling commutes with
    the running update), so normalisation, saving, export and the runtime read them as per-element figures.
    """

    per_channel: tuple[str, ...] = ()  # entries with per-channel statistics (a class default: older pickles)

    def set_per_channel(self, keys) -> None:
        """Share the statistics of each entry of ``keys`` (normalised, at least two axes) over all its axes but
        the first; ``ValueError`` names an entry that is not such."""
        shapes = {k: np.shape(r.mean) for k, r in self.obs_rms.items()} if isinstance(self.obs_rms, dict) else {}
        eligible = [k for k, shape in shapes.items() if len(shape) >= 2]
        bad = [k for k in keys if k not in eligible]
        if bad:
            raise ValueError(f"normalize_per_channel: {', '.join(map(str, bad))} not a normalised observation entry "
                             f"with channels (two axes or more); allowed: {', '.join(eligible) or 'none'}")
        self.per_channel = tuple(keys)
        self._pool()

    def _pool(self) -> None:
        """Each ``per_channel`` entry's statistics replaced, in place, by its channels' pooled mean and variance
        (the mean of the elements' variances plus the variance of their means)."""
        if not self.per_channel:
            return
        for k in self.per_channel:
            r = self.obs_rms[k]
            axes = tuple(range(1, np.ndim(r.mean)))
            mean = r.mean.mean(axis=axes, keepdims=True)
            var = (r.var + (r.mean - mean) ** 2).mean(axis=axes, keepdims=True)
            r.mean[...] = mean  # in place: the entries' arrays may be views of the concatenated statistics
            r.var[...] = var
        cached = self.__dict__.get("_stats_cache")
        if cached is not None:
            _, var, denominator = cached[2]
            np.sqrt(var + self.epsilon, out=denominator)

    def update_entries(self, obs: Any) -> None:
        """The statistics updated with a batch of observations, as ``step_wait`` and ``reset`` update them."""
        if self._fast(obs):
            self._update_obs_rms(obs)
            return
        update_each_entry(self, obs)
        self._pool()

    def __getstate__(self) -> dict[str, Any]:
        state = super().__getstate__()
        state.pop("_layout", None)
        state.pop("_stats_cache", None)
        return state

    def _flat_layout(self) -> tuple[list[str], list[int], np.ndarray, list[slice]]:
        """The normalised entries, their widths, the columns of one-element entries and each entry's columns
        (kept while the entries stay the same)."""
        keys = tuple(self.norm_obs_keys)
        cached = self.__dict__.get("_layout")
        if cached is None or cached[0] != keys:
            widths = [int(self.obs_rms[k].mean.size) for k in keys]
            ends = np.cumsum(widths).tolist()
            slices = [slice(end - w, end) for w, end in zip(widths, ends, strict=True)]
            cached = (keys, list(keys), widths, np.repeat(np.array(widths) == 1, widths), slices)
            self._layout = cached
        return cached[1:]

    def _flat_stats(self, stats: list) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The concatenated means, variances and ``sqrt(var + epsilon)`` of ``stats`` (float64). Each entry's
        ``mean`` and ``var`` are views of the first two, so ``update_moments`` updates them in place; kept
        while the entries hold those very arrays (SB3's own update or a load replaces them)."""
        cached = self.__dict__.get("_stats_cache")
        if (cached is not None and cached[1] == self.epsilon and len(cached[0]) == len(stats)
                and all(m is r.mean and v is r.var for (m, v), r in zip(cached[0], stats, strict=True))):
            return cached[2]
        _, _, _, slices = self._flat_layout()
        mean = np.concatenate([np.asarray(r.mean, dtype=np.float64).reshape(-1) for r in stats])
        var = np.concatenate([np.asarray(r.var, dtype=np.float64).reshape(-1) for r in stats])
        for r, sl in zip(stats, slices, strict=True):
            r.mean = mean[sl].reshape(np.shape(r.mean))
            r.var = var[sl].reshape(np.shape(r.var))
        flat = (mean, var, np.sqrt(var + self.epsilon))
        self._stats_cache = ([(r.mean, r.var) for r in stats], self.epsilon, flat)
        return flat

    def _flatten(self, obs: Mapping[str, np.ndarray], keys: list[str], widths: list[int]) -> np.ndarray:
        n = np.asarray(obs[keys[0]]).size // max(1, widths[0])
        return np.concatenate([np.reshape(obs[k], (n, w)) for k, w in zip(keys, widths, strict=True)], axis=1)

    def _fast(self, obs: Any) -> bool:
        return bool(self.norm_obs and isinstance(obs, Mapping) and isinstance(self.obs_rms, dict)
                    and self.norm_obs_keys)

    def _update_obs_rms(self, obs: Mapping[str, np.ndarray], flat: np.ndarray | None = None) -> None:
        keys, widths, single, _ = self._flat_layout()
        stats = [self.obs_rms[k] for k in keys]
        if flat is None:
            flat = self._flatten(obs, keys, widths)
        if len({float(r.count) for r in stats}) != 1 or flat.dtype != np.float32:
            update_each_entry(self, obs)  # entries updated apart, or not float32: SB3's own, entry by entry
        else:
            mean, var, denominator = self._flat_stats(stats)
            count = update_moments(np.ascontiguousarray(flat), single, mean, var, denominator, float(stats[0].count),
                                   float(self.epsilon))
            for r in stats:
                r.count = count
        self._pool()

    def flat_keys(self) -> list[str]:
        """The normalised entries in the order of ``flatten`` and ``normalize_flat``."""
        return self._flat_layout()[0]

    def flatten(self, obs: Mapping[str, np.ndarray]) -> np.ndarray:
        """The normalised entries of ``obs`` concatenated, one row per vehicle (``flat_keys`` order)."""
        keys, widths, _, _ = self._flat_layout()
        return self._flatten(obs, keys, widths)

    def update_flat(self, obs: Mapping[str, np.ndarray], flat: np.ndarray) -> None:
        """The statistics updated with ``obs`` (whose ``flatten`` is ``flat``), as ``step_wait`` updates them."""
        self._update_obs_rms(obs, flat)

    def normalize_flat(self, flat: np.ndarray) -> np.ndarray:
        """``flatten(normalize_obs(obs))`` from ``flat = flatten(obs)``: the same float32 figures, never split into
        entries (the lean backend's rollouts, ``acres_gym.agents.lean_ppo``)."""
        keys, _, _, _ = self._flat_layout()
        mean, _, denominator = self._flat_stats([self.obs_rms[k] for k in keys])
        return normalize(flat, mean, denominator, float(self.clip_obs), np.empty(flat.shape, dtype=np.float32))

    def normalize_obs(self, obs):
        if not self._fast(obs):
            return super().normalize_obs(obs)
        keys, widths, _, slices = self._flat_layout()
        z = self.normalize_flat(self._flatten(obs, keys, widths))
        out = copy.copy(obs)
        for k in obs:
            if k not in self.obs_rms or k not in keys:
                out[k] = copy.deepcopy(obs[k])
        for k, sl in zip(keys, slices, strict=True):
            out[k] = np.ascontiguousarray(z[:, sl]).reshape(np.shape(obs[k]))
        return out

    def step_wait(self):
        """``VecNormalize.step_wait`` with the statistics updated in one pass."""
        obs, rewards, dones, infos = self.venv.step_wait()
        self.old_obs = obs
        self.old_reward = rewards
        if self.training and self.norm_obs:
            self.update_entries(obs)
        obs = self.normalize_obs(obs)
        if self.training:
            self._update_reward(rewards)
        rewards = self.normalize_reward(rewards)
        for idx, done in enumerate(dones):
            if done and "terminal_observation" in infos[idx]:
                infos[idx]["terminal_observation"] = self.normalize_obs(infos[idx]["terminal_observation"])
        self.returns[dones] = 0
        return obs, rewards, dones, infos

    def reset(self):
        """``VecNormalize.reset`` with the statistics updated by ``update_entries``."""
        obs = self.venv.reset()
        self.old_obs = obs
        self.returns = np.zeros(self.num_envs)
        if self.training and self.norm_obs:
            self.update_entries(obs)
        return self.normalize_obs(obs)

    @staticmethod
    def load(load_path: str, venv: Any) -> ObsNormalizer:
        """A saved ``VecNormalize`` or ``ObsNormalizer``, as an ``ObsNormalizer`` around ``venv``."""
        normalizer = VecNormalize.load(load_path, venv)
        if type(normalizer) is VecNormalize:
            normalizer.__class__ = ObsNormalizer
        return normalizer


def frozen_normalizer(normalizer: VecNormalize | None) -> VecNormalize | None:
    """A copy of a normaliser that normalises with today's statistics and never updates them (an
    ``ObsNormalizer`` for a ``VecNormalize``: the same figures, faster)."""
    if normalizer is None:
        return None
    cls = ObsNormalizer if type(normalizer) is VecNormalize else type(normalizer)
    frozen = object.__new__(cls)  # not copy.copy: VecNormalize's pickling wants a venv
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
        with distribution_checks(False):
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
