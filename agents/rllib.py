"""acres_gym on RLlib: every registered id as an RLlib environment whose env runners step the native vector env.

``register_rllib_envs()`` registers each acres_gym id (``acres_gym.registration.ENVIRONMENTS``) with Ray's
environment registry (``ray.tune.register_env``) under the same name. RLlib's ``SingleAgentEnvRunner``
calls the registered creator with ``num_envs`` added to the env config when the runner's
``gym_env_vectorize_mode`` is ``"vector_entry_point"``; the creator then returns
``gymnasium.make_vec(id, num_envs=N, vectorization_mode="vector_entry_point")``, the ``RangerVectorEnv``
whose N vehicles advance in one simulator call per step. Its default ``NextStep`` autoreset is the
convention the runner expects (the step after an episode's last returns the first observation of the next).

``ppo_config(cfg)`` builds a ``PPOConfig`` on RLlib's current API stack (RLModule, Learner, EnvRunner) from a
training config (``configs/train/rllib_*.yaml``, keys in ``DEFAULTS``): env runners, vehicles per runner,
learners, PPO arguments (``algo_kwargs``, ``PPOConfig.training``) and the default model (``model``,
``DefaultModelConfig``, plus ``log_std_init`` and ``ortho_init``: see ``SB3LikePPOTorchRLModule``).
Observations pass through ``FlattenObservations`` and, with ``normalize_observations``, a ``MeanStdFilter`` in
each runner's env-to-module pipeline.

``RLlibPolicy(checkpoint)`` loads an algorithm checkpoint (its RLModule and the runner's connector
pipelines, normaliser statistics included, frozen) as the ``policy(obs) -> actions`` of
``acres_gym.agents.evaluate``; ``rllib_policy_factory(checkpoint)`` is its policy factory, and
``load_checkpoint_policy(checkpoint)`` gives ``(factory, action mode, env config)`` from the run's saved config.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import gymnasium
import numpy as np
import yaml

import acres_gym  # noqa: F401  (registers the gymnasium ids)
from acres_gym.configuration import MAX_SEED, check_counts, check_keys
from acres_gym.envs.config import load_config
from acres_gym.registration import ENVIRONMENTS

VECTOR_MODE = "vector_entry_point"

DEFAULTS: dict[str, Any] = {
    "algo": "ppo",
    "env_id": "acres_gym/RangerPathFollowing-v3",
    "env_config": {},
    "num_env_runners": 1,            # 0 = sample in the driver process
    "vehicles_per_runner": 16,       # vehicles of each runner's native vector env
    "num_learners": 0,               # 0 = one learner in the driver process
    "sample_timeout_s": 600.0,       # RLlib discards a runner's samples that take longer (its default, 60 s,
                                     # drops every sample on a loaded machine)
    "total_steps": 200_000,
    "seed": 0,
    "out": None,
    "torch_threads": 1,
    "normalize_observations": True,
    "algo_kwargs": {},               # PPOConfig.training(...) arguments
    "model": {},                     # DefaultModelConfig fields (fcnet_hiddens, fcnet_activation, ...)
    "checkpoint_every_iterations": 20,
    "eval_episodes": 8,
    "eval_seed": 100_000,
    "baseline": "ulc_pure_pursuit",
}


def make_rllib_env(env_id: str, env_config: Mapping) -> Any:
    """The environment an RLlib env runner asks for: the native vector env of ``env_id`` with
    ``env_config["num_envs"]`` vehicles (the runner adds it in ``vector_entry_point`` mode), else one
    ``gymnasium.make`` env. ``env_config["config"]`` is the task config (a dict or a task config name)."""
    given = dict(env_config)
    num_envs = given.pop("num_envs", None)
    config = load_config(given.pop("config", None))
    check_keys(f"{env_id} env_config", given, ("config",))
    if num_envs is None:
        return gymnasium.make(env_id, config=config)
    return gymnasium.make_vec(env_id, num_envs=int(num_envs), vectorization_mode=VECTOR_MODE, config=config)


class _Creator:
    """``make_rllib_env`` bound to one id (a picklable class, shipped to the Ray workers by reference)."""

    def __init__(self, env_id: str) -> None:
        self.env_id = env_id

    def __call__(self, env_config: Mapping) -> Any:
        return make_rllib_env(self.env_id, env_config)


def start_ray(address: str | None = None, **kwargs: Any) -> None:
    """``ray.init`` (a local instance, or the cluster at ``address``) with the runners at the driver's priority.

    Ray lowers its worker processes' priority by default (``RAY_worker_niceness``); here the env runners do the
    work, so on a shared machine they would wait behind every other process. Set ``RAY_worker_niceness``
    yourself to keep Ray's default."""
    import os

    import ray

    os.environ.setdefault("RAY_worker_niceness", "0")
    ray.init(address=address, include_dashboard=False, **kwargs)


def register_rllib_envs() -> list[str]:
    """Register every acres_gym id with Ray's environment registry under its own name; returns the ids.
    Needs a running Ray (``ray.init``): the registry lives in the cluster."""
    from ray.tune.registry import register_env

    for env_id in ENVIRONMENTS:
        register_env(env_id, _Creator(env_id))
    return list(ENVIRONMENTS)


class _EnvToModule:
    """The env-to-module connectors of every runner (picklable): flatten the Dict, then normalise."""

    def __init__(self, normalize: bool) -> None:
        self.normalize = normalize

    def __call__(self, env=None, spaces=None, device=None):
        from ray.rllib.connectors.env_to_module import FlattenObservations, MeanStdFilter

        return [FlattenObservations(), MeanStdFilter()] if self.normalize else [FlattenObservations()]


# ``model`` keys that are not DefaultModelConfig fields: read by SB3LikePPOTorchRLModule (names and meaning
# of stable-baselines3's ActorCriticPolicy arguments). None / False leave RLlib's default module as it is.
MODULE_EXTRAS: dict[str, Any] = {"log_std_init": None, "ortho_init": False}


def _sb3_like_module_class():
    """``SB3LikePPOTorchRLModule``, defined on first use (it subclasses a Ray class; Ray is an optional extra).
    The module's ``__getattr__`` builds it, so pickles (Ray workers, checkpoints) find it by name."""
    if "SB3LikePPOTorchRLModule" in globals():
        return globals()["SB3LikePPOTorchRLModule"]
    import torch
    from ray.rllib.algorithms.ppo.torch.default_ppo_torch_rl_module import DefaultPPOTorchRLModule

    class _Module(DefaultPPOTorchRLModule):
        """RLlib's default PPO module (``DefaultPPOTorchRLModule``) started the way stable-baselines3's
        ``ActorCriticPolicy`` starts, from two ``model`` keys with SB3's names:

        ``log_std_init`` (needs ``free_log_std: true``): the initial log standard deviation of the Gaussian
            policy. RLlib 2.60 builds the ``free_log_std`` head as ``FreeLogStdMLPHead`` whose parameter is
            ``torch.nn.Parameter(torch.as_tensor([0.0] * dim))`` (``ray/rllib/core/models/torch/heads.py``):
            std 1 with no option to change it. SB3 makes ``log_std = nn.Parameter(ones(dim) * log_std_init)``
            (``DiagGaussianDistribution.proba_distribution_net``); this sets the same parameter.
        ``ortho_init``: SB3's ``ortho_init=True`` (``ActorCriticPolicy._build``): orthogonal weights and zero
            biases, gain sqrt(2) in the hidden layers, 0.01 in the layer of the action means, 1 in the value
            output. RLlib's PPO catalog builds the heads with torch's default (uniform) initialisation
            (``PPOCatalog.build_pi_head`` passes no initializer), so the initial action means are of order 0.1
            to 1 instead of about 0.

        A checkpoint restores its own weights over these initial values.
        """

        def setup(self) -> None:
            super().setup()
            log_std_init = self.model_config.get("log_std_init")
            if self.model_config.get("ortho_init"):
                with torch.no_grad():
                    for part, gain in ((self.encoder, 2 ** 0.5), (self.pi, 0.01), (getattr(self, "vf", None), 1.0)):
                        if part is None:  # the inference-only module of an env runner has no value head
                            continue
                        linears = [m for m in part.modules() if isinstance(m, torch.nn.Linear)]
                        for i, layer in enumerate(linears):
                            last = i == len(linears) - 1 and part is not self.encoder
                            torch.nn.init.orthogonal_(layer.weight, gain=gain if last else 2 ** 0.5)
                            if layer.bias is not None:
                                layer.bias.zero_()
            if log_std_init is not None:
                if not hasattr(self.pi, "log_std"):
                    raise ValueError("model.log_std_init needs model.free_log_std: true (a state-independent "
                                     "log standard deviation, as stable-baselines3's)")
                with torch.no_grad():
                    self.pi.log_std.fill_(float(log_std_init))

    _Module.__name__ = _Module.__qualname__ = "SB3LikePPOTorchRLModule"
    globals()["SB3LikePPOTorchRLModule"] = _Module
    return _Module


def __getattr__(name: str) -> Any:
    if name == "SB3LikePPOTorchRLModule":
        return _sb3_like_module_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class _SyncObservationFilter:
    """``on_train_result`` callback (picklable): ``sync_observation_filter`` after every training iteration, so
    every checkpoint (``agents.rllib_train``'s, a Tune trial's) holds the runners' observation statistics."""

    def __call__(self, *, algorithm: Any, **_: Any) -> None:
        sync_observation_filter(algorithm)


# the integer keys: (least, most or None, what they count), checked before Ray starts
COUNTS = {
    "num_env_runners": (0, None, "0: sample in the driver process"),
    "vehicles_per_runner": (1, None, "vehicles of each runner's vector env"),
    "num_learners": (0, None, "0: one learner in the driver process"),
    "total_steps": (1, None, "steps to train"),
    "seed": (0, MAX_SEED, "the run's seed"),
    "torch_threads": (1, None, "torch threads of the driver"),
    "checkpoint_every_iterations": (0, None, "0: only the final checkpoint"),
    "eval_episodes": (1, None, "episodes of the final evaluation"),
    "eval_seed": (0, MAX_SEED, "evaluation episode k is seeded eval_seed + k"),
}


def ppo_config(cfg: Mapping) -> Any:
    """A ``PPOConfig`` from a training config (see ``DEFAULTS`` and the module docstring)."""
    from ray.rllib.algorithms.ppo import PPOConfig
    from ray.rllib.core.rl_module.default_model_config import DefaultModelConfig

    if cfg["algo"] != "ppo":
        raise ValueError(f"algo = {cfg['algo']!r}; allowed: ppo")
    if cfg["env_id"] not in ENVIRONMENTS:
        raise ValueError(f"env_id = {cfg['env_id']!r}; allowed: {', '.join(ENVIRONMENTS)}")
    cfg = {**cfg, **check_counts(cfg, COUNTS)}
    model_fields = set(DefaultModelConfig.__dataclass_fields__)
    check_keys("model", cfg["model"], sorted(model_fields | set(MODULE_EXTRAS)))
    model = dict(cfg["model"])
    extras = {k: model.pop(k, default) for k, default in MODULE_EXTRAS.items()}
    if extras["log_std_init"] is not None and not model.get("free_log_std", False):
        raise ValueError("model.log_std_init needs model.free_log_std: true")
    if any(v not in (None, False) for v in extras.values()):
        from ray.rllib.core.rl_module.rl_module import RLModuleSpec

        # model_config as a dict: DefaultModelConfig's fields and the two extra keys (PPOCatalog merges a dict
        # over DefaultModelConfig's defaults, ray/rllib/core/models/catalog.py)
        module = {"rl_module_spec": RLModuleSpec(module_class=_sb3_like_module_class()),
                  "model_config": {**dataclasses.asdict(DefaultModelConfig(**model)), **extras}}
    else:
        module = {"model_config": DefaultModelConfig(**model)}
    config = (
        PPOConfig()
        .environment(cfg["env_id"], env_config={"config": load_config(cfg["env_config"])})
        .env_runners(num_env_runners=cfg["num_env_runners"], num_envs_per_env_runner=cfg["vehicles_per_runner"],
                     gym_env_vectorize_mode=VECTOR_MODE, sample_timeout_s=float(cfg["sample_timeout_s"]),
                     env_to_module_connector=_EnvToModule(bool(cfg["normalize_observations"])))
        .learners(num_learners=cfg["num_learners"])
        .rl_module(**module)
        .callbacks(on_train_result=_SyncObservationFilter())
        .debugging(seed=int(cfg["seed"]))
        .framework("torch")
    )
    try:
        config.training(**cfg["algo_kwargs"])
    except TypeError as exc:
        raise ValueError(f"algo_kwargs: {exc} (PPOConfig.training arguments)") from None
    return config


def _merged_running_stats(states: list[dict]) -> dict:
    """One ``RunningStat`` state (``ray.rllib.utils.filter``) from those of disjoint samples: counts, means and
    sums of squared deviations combined (Chan et al.), deltas zero (as after one of RLlib's syncs)."""
    from ray.rllib.utils.filter import RunningStat

    stats = [RunningStat.from_state(s) for s in states]
    n = sum(st.num_pushes for st in stats)
    out = RunningStat.from_state(states[0])
    if n > 0:
        mean = sum(st.num_pushes * st.mean_array for st in stats) / n
        sq = sum(st.sum_sq_diff_array + st.num_pushes * (st.mean_array - mean) ** 2 for st in stats)
        out.num_pushes, out.mean_array, out.sum_sq_diff_array = n, mean, sq
    out.num_pushes_delta = 0
    out.mean_delta_array = out.mean_array * 0.0
    out.sum_sq_diff_delta_array = out.sum_sq_diff_array * 0.0
    return out.to_state()


def sync_observation_filter(algo: Any) -> int:
    """Give the driver's env runner the observation statistics of the remote runners; returns their count.

    RLlib 2.60 saves the env-to-module connectors of the driver's (local) env runner in a checkpoint
    (``Algorithm.get_checkpointable_components``), and with remote runners that one never samples: its
    ``MeanStdFilter`` should receive the runners' statistics from ``EnvRunnerGroup.sync_env_runner_states``
    after each iteration, but ``ConnectorPipelineV2.merge_states`` pairs the i-th *state* with the i-th
    *connector* (``conn = self.connectors[i]``, ray/rllib/connectors/connector_pipeline_v2.py), and the states
    hold only the stateful pieces: the filter's statistics go to ``FlattenObservations.merge_states``, which
    returns ``{}``. So every checkpoint of a run with remote runners held an empty normaliser (0 samples,
    std 0), and its evaluation saw every observation scaled to the clip bounds (+-10), under which the policy
    commanded 0 m/s. (Each remote runner keeps normalising with its own statistics, so training is unaffected.)
    ``ppo_config`` calls this after every training iteration (an ``on_train_result`` callback), and
    ``agents.rllib_train`` again before each save: the remote runners' filter statistics, merged as disjoint samples
    (each runner keeps its own, since the misrouted merge never broadcasts one), replace the driver's."""
    from ray.rllib.connectors.env_to_module import MeanStdFilter
    from ray.rllib.core import COMPONENT_ENV_TO_MODULE_CONNECTOR

    group = algo.env_runner_group
    if group is None or group.num_remote_env_runners() == 0 or algo.env_runner is None:
        return 0
    states = group.foreach_env_runner(
        lambda runner: runner.get_state(components=[COMPONENT_ENV_TO_MODULE_CONNECTOR]), local_env_runner=False)
    states = [s[COMPONENT_ENV_TO_MODULE_CONNECTOR] for s in states if COMPONENT_ENV_TO_MODULE_CONNECTOR in s]
    pipeline = algo.env_runner._env_to_module
    for name, piece in ((type(c).__name__, c) for c in pipeline.connectors):
        if not isinstance(piece, MeanStdFilter) or not states or name not in states[0]:
            continue
        merged = {}
        for agent_id, agent_state in states[0][name].items():
            per_runner = [s[name][agent_id]["running_stats"] for s in states]
            merged[agent_id] = {**agent_state, "running_stats": [
                _merged_running_stats([runner[k] for runner in per_runner]) for k in range(len(per_runner[0]))]}
        piece.set_state(merged)
    return len(states)


def restore_observation_filter(algo: Any) -> int:
    """After ``algo.restore_from_path``: give the remote runners the restored observation statistics of the
    driver's runner; returns their count. ``Algorithm.set_state`` means to broadcast them through
    ``sync_env_runner_states``, whose merge loses them (see ``sync_observation_filter``): without this the
    runners of a resumed run would normalise from no statistics again."""
    from ray.rllib.core import COMPONENT_ENV_TO_MODULE_CONNECTOR

    group = algo.env_runner_group
    if group is None or group.num_remote_env_runners() == 0 or algo.env_runner is None:
        return 0
    state = {COMPONENT_ENV_TO_MODULE_CONNECTOR: algo.env_runner._env_to_module.get_state()}
    group.foreach_env_runner(lambda runner: runner.set_state(state), local_env_runner=False)
    return group.num_remote_env_runners()


# --- a checkpoint as an evaluation policy -----------------------------------------------------------------


class RLlibPolicy:
    """An RLlib algorithm checkpoint as ``actions = policy(obs)`` for a batch of vehicles (deterministic).

    Each vehicle's observations go into its own ``SingleAgentEpisode`` and through the checkpoint's
    env-to-module pipeline (flattening, the normaliser with its statistics frozen), the RLModule's
    ``forward_inference`` and the module-to-env pipeline (greedy action, unsquashed and clipped to the action
    space), as in an env runner that does not explore.
    """

    def __init__(self, checkpoint: str | Path) -> None:
        from ray.rllib.connectors.env_to_module import EnvToModulePipeline, MeanStdFilter
        from ray.rllib.connectors.module_to_env import ModuleToEnvPipeline
        from ray.rllib.core import (
            COMPONENT_ENV_RUNNER,
            COMPONENT_ENV_TO_MODULE_CONNECTOR,
            COMPONENT_LEARNER,
            COMPONENT_LEARNER_GROUP,
            COMPONENT_MODULE_TO_ENV_CONNECTOR,
            COMPONENT_RL_MODULE,
            DEFAULT_MODULE_ID,
        )
        from ray.rllib.core.rl_module import RLModule

        ckpt = Path(checkpoint).resolve()
        module_dir = ckpt / COMPONENT_LEARNER_GROUP / COMPONENT_LEARNER / COMPONENT_RL_MODULE / DEFAULT_MODULE_ID
        if not module_dir.is_dir():
            raise FileNotFoundError(f"{checkpoint}: not an RLlib algorithm checkpoint (no {module_dir})")
        self.module = RLModule.from_checkpoint(module_dir)
        runner = ckpt / COMPONENT_ENV_RUNNER
        self.env_to_module = EnvToModulePipeline.from_checkpoint(runner / COMPONENT_ENV_TO_MODULE_CONNECTOR)
        self.module_to_env = ModuleToEnvPipeline.from_checkpoint(runner / COMPONENT_MODULE_TO_ENV_CONNECTOR)
        for piece in self.env_to_module.connectors:
            if isinstance(piece, MeanStdFilter):
                piece._update_stats = False  # evaluation reads the trained statistics, never moves them
        self._episodes: list[Any] = []
        self._new = np.zeros(0, dtype=bool)
        self._last_actions: np.ndarray | None = None

    def reset(self, rows: np.ndarray | None = None) -> None:
        """Start new episodes for the vehicles in ``rows`` (a boolean mask) at the next call."""
        if rows is None or len(rows) != len(self._new):
            self._new = np.ones(0 if rows is None else len(rows), dtype=bool)
        else:
            self._new |= np.asarray(rows, dtype=bool)

    def __call__(self, obs: Mapping[str, np.ndarray]) -> np.ndarray:
        import torch
        from ray.rllib.core.columns import Columns
        from ray.rllib.env.single_agent_episode import SingleAgentEpisode

        n = len(next(iter(obs.values())))
        if len(self._new) != n or len(self._episodes) != n:
            self._episodes = [None] * n
            self._new = np.ones(n, dtype=bool)
        for i in range(n):
            obs_i = {k: np.asarray(v[i]) for k, v in obs.items()}
            if self._new[i]:
                self._episodes[i] = SingleAgentEpisode()
                self._episodes[i].add_env_reset(observation=obs_i)
            else:
                # only the latest observation is read: keep each episode one step long
                episode = self._episodes[i].cut(len_lookback_buffer=0)
                episode.add_env_step(observation=obs_i, action=self._last_actions[i], reward=0.0)
                self._episodes[i] = episode
        self._new[:] = False
        shared: dict = {}
        with torch.no_grad():
            batch = self.env_to_module(episodes=self._episodes, rl_module=self.module, explore=False,
                                       shared_data=shared)
            out = self.module.forward_inference(batch)
            to_env = self.module_to_env(batch=out, episodes=self._episodes, rl_module=self.module, explore=False,
                                        shared_data=shared)
        self._last_actions = np.asarray(to_env[Columns.ACTIONS])
        return np.asarray(to_env.get(Columns.ACTIONS_FOR_ENV, to_env[Columns.ACTIONS]), dtype=np.float32)


def rllib_policy_factory(checkpoint: str | Path):
    """A policy factory for ``acres_gym.agents.evaluate``: a fresh ``RLlibPolicy`` per vector env."""
    checkpoint = str(checkpoint)
    RLlibPolicy(checkpoint)  # fail now, not inside the evaluation, on a path that is no checkpoint
    return lambda _venv: RLlibPolicy(checkpoint)


def is_rllib_checkpoint(path: str | Path) -> bool:
    """Whether ``path`` is a directory holding an RLlib algorithm checkpoint."""
    return (Path(path) / "learner_group").is_dir() and (Path(path) / "env_runner").is_dir()


def run_config_of(checkpoint: str | Path) -> dict:
    """The resolved training config of the run a checkpoint belongs to (``config.yaml`` of the run
    directory: the checkpoint's directory, or the parent of ``checkpoints/``)."""
    ckpt = Path(checkpoint).resolve()
    for folder in (ckpt.parent, ckpt.parent.parent):
        if (folder / "config.yaml").is_file():
            return yaml.safe_load((folder / "config.yaml").read_text(encoding="utf-8"))
    raise FileNotFoundError(f"{checkpoint}: no config.yaml in its run directory (saved by agents.rllib_train)")


def load_checkpoint_policy(checkpoint: str | Path):
    """``(policy factory, action mode, env config)`` of an RLlib checkpoint of an ``agents.rllib_train`` run."""
    env_config = load_config(run_config_of(checkpoint).get("env_config"))
    return rllib_policy_factory(checkpoint), env_config.get("action_mode"), env_config
