"""RL Zoo hyperparameters (``configs/zoo/ppo.yml``, ``configs/zoo/sac.yml``): an entry for every registered id,
keyed as rl_zoo3 looks it up (the id with its namespace and slash), the policy class the Dict observations need,
the values of the shipped training configs (``configs/train``), and a model each entry builds; with the ``zoo``
extra installed, ``python -m rl_zoo3.train`` trains on one of them."""

from __future__ import annotations

import importlib
import math
import subprocess
import sys
from pathlib import Path

import gymnasium
import pytest
import torch.nn as nn
import yaml
from stable_baselines3 import PPO, SAC
from stable_baselines3.common.vec_env import DummyVecEnv

import acres_gym  # noqa: F401  (registers the ids)
from acres_gym.agents import sb3_models
from acres_gym.paths import config_path
from acres_gym.registration import ENVIRONMENTS

ALGOS = {"ppo": PPO, "sac": SAC}
ZOO_KEYS = {"policy", "n_envs", "n_timesteps", "normalize", "policy_kwargs", "env_kwargs"}  # rl_zoo3's, not SB3's
ACTIVATIONS = {"tanh": nn.Tanh, "relu": nn.ReLU}
SAC_SOURCE = "acres_gym/RangerPathFollowing-v3"  # the id of the shipped SAC config the other ids follow


def zoo(algo: str) -> dict:
    return yaml.safe_load(config_path("zoo", f"{algo}.yml").read_text(encoding="utf-8"))


def train_configs() -> dict[tuple[str, str], dict]:
    """The shipped stable-baselines3 training configs by (algo, env id)."""
    out = {}
    for path in sorted(config_path("train").glob("*.yaml")):
        cfg = yaml.safe_load(path.read_text(encoding="utf-8"))
        if path.stem != "smoke" and cfg["algo"] in ALGOS and "num_envs" in cfg:
            out[(cfg["algo"], cfg["env_id"])] = cfg
    return out


def policy_kwargs(text: str) -> dict:
    """``policy_kwargs`` as rl_zoo3 evaluates it (``ExperimentManager``: its module has ``nn`` and ``importlib``)."""
    return eval(text, {"nn": nn, "importlib": importlib})  # noqa: S307  (the repository's own file)


def expected(algo: str, env_id: str) -> dict:
    """What the zoo entry of ``env_id`` must hold: the shipped config of (algo, id), or for SAC on an id without
    one, the shipped SAC config with the id's own discount (from its PPO config)."""
    shipped = train_configs()
    cfg = shipped.get((algo, env_id)) or shipped[(algo, SAC_SOURCE)]
    want = {"n_envs": cfg["num_envs"], "n_timesteps": cfg["total_steps"],
            "normalize": {"norm_obs": cfg["normalize_observations"], "norm_reward": cfg["normalize_rewards"]},
            **cfg["algo_kwargs"], "policy_kwargs": dict(cfg["policy_kwargs"])}
    if (algo, env_id) in shipped and isinstance(cfg["env_config"], dict) and cfg["env_config"]:
        want["env_kwargs"] = {"config": cfg["env_config"]}  # gymnasium.make(env_id, config=...): what it trained on
    elif (algo, env_id) in shipped and isinstance(cfg["env_config"], str):  # a task config by name: the id's own
        named, own = gymnasium.make(env_id, config=cfg["env_config"]), gymnasium.make(env_id)
        assert named.unwrapped.config == own.unwrapped.config, (env_id, cfg["env_config"])
        named.close()
        own.close()
    if (algo, env_id) not in shipped:
        want["gamma"] = shipped[("ppo", env_id)]["algo_kwargs"]["gamma"]
        want["policy_kwargs"].update({k: v for k, v in shipped[("ppo", env_id)]["policy_kwargs"].items()
                                      if k == "features_extractor_class"})
    return want


@pytest.fixture(scope="module")
def spaces():
    out = {}
    for env_id in ENVIRONMENTS:
        env = gymnasium.make(env_id)
        out[env_id] = (env.observation_space, env.action_space)
        env.close()
    return out


@pytest.mark.parametrize("algo", list(ALGOS))
def test_every_registered_id_has_an_entry_keyed_as_rl_zoo3_reads_it(algo):
    entries = zoo(algo)
    assert set(entries) == set(ENVIRONMENTS)
    assert all("/" in key for key in entries)  # rl_zoo3 reads the --env argument as given


@pytest.mark.parametrize("algo", list(ALGOS))
@pytest.mark.parametrize("env_id", list(ENVIRONMENTS))
def test_the_entry_takes_the_shipped_training_config(algo, env_id):
    entry = dict(zoo(algo)[env_id])
    want = expected(algo, env_id)
    assert entry["n_envs"] == want["n_envs"]
    assert entry["n_timesteps"] == want["n_timesteps"]
    assert entry["normalize"] == want["normalize"]
    assert entry.get("env_kwargs") == want.get("env_kwargs")
    unknown = set(entry) - ZOO_KEYS
    for key in unknown:
        value = want.get(key)
        if key == "buffer_size" and "LocalMapExtractor" in entry["policy_kwargs"]:
            assert entry[key] <= value  # local_map makes a transition 8 KB: a smaller buffer (sac.yml says why)
        else:
            assert entry[key] == value, key
    assert not set(want) - ZOO_KEYS - set(entry) - {"n_envs", "n_timesteps", "normalize"}
    got = policy_kwargs(entry["policy_kwargs"])
    pk = want["policy_kwargs"]
    assert got["net_arch"] == pk["net_arch"]
    assert got.get("activation_fn") is (ACTIVATIONS[pk["activation_fn"]] if "activation_fn" in pk else None)
    assert got.get("log_std_init") == pk.get("log_std_init")
    assert got.get("features_extractor_kwargs") == pk.get("features_extractor_kwargs")
    if pk.get("features_extractor_class") == "local_map_cnn":
        assert got["features_extractor_class"] is sb3_models.LocalMapExtractor
    else:
        assert "features_extractor_class" not in got


@pytest.mark.parametrize("algo", list(ALGOS))
@pytest.mark.parametrize("env_id", list(ENVIRONMENTS))
def test_the_policy_class_fits_the_observations_and_builds(algo, env_id, spaces):
    """Dict observations need MultiInputPolicy (rl_zoo3 stops at once otherwise); the entry's algorithm
    arguments and policy_kwargs build a model on the id's spaces."""
    obs_space, act_space = spaces[env_id]
    entry = dict(zoo(algo)[env_id])
    assert isinstance(obs_space, gymnasium.spaces.Dict)
    assert entry["policy"] == "MultiInputPolicy"
    assert isinstance(act_space, gymnasium.spaces.Box)  # SAC and PPO's Gaussian policy
    # rl_zoo3 turns 'lin_<initial>' into a linear schedule, as build_model does
    kwargs = {k: sb3_models.schedule(k, v) if k in sb3_models.SCHEDULED else v
              for k, v in entry.items() if k not in ZOO_KEYS}
    if algo == "sac":
        kwargs["buffer_size"] = 100  # the construction, not the memory, is under test
    else:
        kwargs["n_steps"] = kwargs["batch_size"] = 8
    venv = DummyVecEnv([lambda: gymnasium.make(env_id, **entry.get("env_kwargs", {}))])
    try:
        model = ALGOS[algo](entry["policy"], venv, policy_kwargs=policy_kwargs(entry["policy_kwargs"]), **kwargs)
        obs = venv.reset()
        action, _ = model.predict(obs, deterministic=True)
        assert action.shape == (1, *venv.action_space.shape)  # the id's, or the one its env_kwargs make
        if "env_kwargs" not in entry:
            assert venv.action_space == act_space
        if "LocalMapExtractor" in entry["policy_kwargs"]:
            assert "LocalMapExtractor" in {type(m).__name__ for m in model.policy.modules()}
    finally:
        venv.close()


@pytest.mark.slow
def test_rl_zoo3_trains_with_the_ppo_file(tmp_path):
    """``python -m rl_zoo3.train`` on path following with ``configs/zoo/ppo.yml``: one PPO update of 2048
    transitions (16 environments x 128 steps), saved with its normaliser; the policy's log std moved from the
    file's ``log_std_init`` (so the file's policy_kwargs were used and the gradient steps ran)."""
    pytest.importorskip("rl_zoo3")
    env_id = "acres_gym/RangerPathFollowing-v3"
    cmd = [sys.executable, "-m", "rl_zoo3.train", "--algo", "ppo", "--env", env_id, "--gym-packages", "acres_gym",
           "--conf-file", str(config_path("zoo", "ppo.yml")), "-n", "2000", "-f", str(tmp_path / "logs"),
           "--seed", "0", "--eval-freq", "-1"]
    done = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:]
    run = Path(tmp_path / "logs" / "ppo" / "acres_gym-RangerPathFollowing-v3_1")
    model_file = run / "acres_gym-RangerPathFollowing-v3.zip"
    assert model_file.is_file(), done.stdout[-2000:]
    assert (run / "acres_gym-RangerPathFollowing-v3" / "vecnormalize.pkl").is_file()
    model = PPO.load(model_file, device="cpu")
    assert model.num_timesteps == 2048 and model.n_envs == 16
    n_epochs = zoo("ppo")[env_id]["n_epochs"]
    assert model._n_updates == n_epochs  # one rollout, the file's n_epochs
    assert type(model.policy).__name__ == "MultiInputActorCriticPolicy"
    log_std = model.policy.log_std.detach().numpy()
    assert log_std.shape == (2,) and all(math.isfinite(v) and v != -0.5 for v in log_std)
