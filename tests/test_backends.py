"""The learners ``train.py --backend`` selects (``acres_gym.agents.backends``): each trains the smoke config and
every shipped PPO config to a finite model and report, a lean run's files load as an SB3 run's do, a lean run
resumes exactly, and a bad backend or a setting the lean learner does not run is a one-line error. The
training config's settings both learners follow alike: the normalised entries and per-channel statistics, and
``curriculum`` (each stage's env config replaces the training env from the first rollout end at or past its
``from_steps``, across an exact resume and on a resume into a curriculum; a malformed stage is a one-line
error before anything is written)."""

from __future__ import annotations

import json
import math
import pickle

import numpy as np
import pytest
import torch

from acres_gym.agents import backends, run_files
from acres_gym.agents.train_cli import main as train_main
from acres_gym.paths import config_path

PPO_CONFIGS = sorted(p.stem for p in config_path("train").glob("ppo_*.yaml"))
# parameters: the lean rollouts run the actor in numpy, whose actions differ from torch's by float32 rounding
# (about 1e-6); Adam's first steps, m / sqrt(v), can magnify that tenfold for a parameter whose gradient is near 0.
# Another random stream or another loss would part the runs by the scale of the learning rate's steps (3e-4 each).
ROUNDING = 1e-5
# a few hundred steps: one short rollout per update, no baseline, one evaluation episode of a few seconds
QUICK = ["--set", "eval_episodes=1", "--set", "eval_every_steps=0", "--set", "checkpoint_every_steps=0",
         "--set", "baseline=null", "--set", "env_config.max_episode_s=3"]


def train(tmp_path, config: str, backend: str, steps: int, *extra: str) -> dict:
    out = tmp_path / f"{config}_{backend}"
    report = train_main(["--config", config, "--backend", backend, "--total-steps", str(steps), "--out", str(out),
                         "--overwrite", *QUICK, *extra], prog="train.py")
    report["out"] = out
    return report


def parameters(model_zip) -> dict[str, np.ndarray]:
    files, config = run_files.load_run(model_zip)
    model = run_files.load_model(files, config["algo"], device="cpu")  # SB3's own PPO reads either backend's zip
    return {k: v.detach().numpy().copy() for k, v in model.policy.state_dict().items()}


def finite_run(report: dict) -> None:
    assert math.isfinite(report["train_steps_per_s"]) and report["train_steps_per_s"] > 0
    saved = json.loads((report["out"] / "report.json").read_text())
    assert saved["backend"] == report["backend"]
    assert math.isfinite(saved["evaluation"]["learned"]["mean"]["episode_return"])
    params = parameters(report["out"] / "model.zip")
    assert params and all(np.isfinite(v).all() for v in params.values())


def lean_smoke_model(*overrides: str, config: str = "smoke"):
    """The smoke config's (or ``config``'s) normalised native vector env (SB3's adapter) and an untrained
    ``LeanPPO`` on it."""
    import argparse

    from acres_gym.agents import profile_training as pt
    from acres_gym.agents.sb3_models import ObsNormalizer, build_model
    from acres_gym.envs.sb3 import RangerSB3VecEnv

    train_script = pt.train_script()
    cfg = train_script.load_train_config(config, argparse.Namespace(total_steps=None, seed=None, out=None,
                                                                     overrides=list(overrides)))
    env = ObsNormalizer(RangerSB3VecEnv(train_script.make_env(cfg)), norm_obs=True, norm_reward=False)
    return env, build_model("ppo", env, 0, cfg["algo_kwargs"], cfg["policy_kwargs"],
                            algorithm=backends.model_class("ppo", "lean"))


@pytest.fixture(scope="module")
def smoke_runs(tmp_path_factory) -> dict[str, dict]:
    """A short run of the smoke config with each backend (made once for the module)."""
    root = tmp_path_factory.mktemp("smoke")
    return {backend: train(root, "smoke", backend, 512) for backend in backends.BACKENDS}


@pytest.mark.parametrize("backend", backends.BACKENDS)
def test_every_backend_trains_the_smoke_config(smoke_runs, backend):
    report = smoke_runs[backend]
    assert report["total_steps"] == 512 and report["backend"] == backend
    finite_run(report)


@pytest.mark.parametrize("config", PPO_CONFIGS)
@pytest.mark.parametrize("backend", backends.BACKENDS)
def test_every_backend_trains_each_shipped_ppo_config(tmp_path, config, backend):
    # 16 vehicles x 16 steps: one rollout and one update of two minibatches
    report = train(tmp_path, config, backend, 256, "--set", "algo_kwargs.n_steps=16",
                   "--set", "algo_kwargs.batch_size=128", "--set", "algo_kwargs.n_epochs=1")
    assert report["trained_steps"] == 256
    finite_run(report)


def test_the_lean_backend_runs_sb3s_other_ppo_settings(tmp_path):
    # reward normalisation, a clipped value loss, the KL stop, no advantage normalisation
    report = train(tmp_path, "smoke", "lean", 512, "--set", "normalize_rewards=true",
                   "--set", "algo_kwargs.clip_range_vf=0.2", "--set", "algo_kwargs.target_kl=0.001",
                   "--set", "algo_kwargs.normalize_advantage=false", "--set", "algo_kwargs.vf_coef=0.7")
    assert report["total_steps"] == 512
    finite_run(report)


def test_a_lean_run_loads_in_evaluation_and_export_as_an_sb3_run(smoke_runs):
    from acres_gym.agents.evaluate import evaluate
    from acres_gym.agents.export import main as export_main
    from acres_gym.agents.sb3_models import load_run_policy

    lean, sb3 = smoke_runs["lean"], smoke_runs["sb3"]
    for run in (lean, sb3):
        assert sorted(p.name for p in run["out"].iterdir() if p.is_file()) == sorted(
            p.name for p in sb3["out"].iterdir() if p.is_file())
        factory, mode, env_config = load_run_policy(run["out"] / "model.zip")
        result = evaluate(factory, "acres_gym/RangerSpeedTracking-v3", 1, 7, env_config, mode)
        assert math.isfinite(result["mean"]["episode_return"])
        assert export_main([str(run["out"] / "model.zip"), "--out", str(run["out"] / "policy")]) == 0
        assert (run["out"] / "policy" / "policy.onnx").is_file()
    # the same policy network: the same parameter names and shapes
    a, b = parameters(lean["out"] / "model.zip"), parameters(sb3["out"] / "model.zip")
    assert {k: v.shape for k, v in a.items()} == {k: v.shape for k, v in b.items()}


def test_with_the_same_seed_the_lean_run_follows_the_sb3_run(smoke_runs):
    """The same random streams (actions, minibatches) and the same arithmetic up to rounding: after two updates
    the two backends' parameters agree to rounding (they part only as rounding grows over a long run)."""
    a, b = parameters(smoke_runs["lean"]["out"] / "model.zip"), parameters(smoke_runs["sb3"]["out"] / "model.zip")
    for key in a:
        np.testing.assert_allclose(a[key], b[key], rtol=0, atol=ROUNDING, err_msg=key)


def test_with_gsde_the_lean_run_follows_the_sb3_run(tmp_path):
    """gSDE (use_sde, the exploration matrices drawn anew every 8 steps) as SB3 runs it: the same parameters
    after an update, to float32 rounding."""
    extra = ("--set", "algo_kwargs.use_sde=true", "--set", "algo_kwargs.sde_sample_freq=8",
             "--set", "policy_kwargs.log_std_init=-1.0")
    runs = {backend: train(tmp_path, "smoke", backend, 256, *extra) for backend in backends.BACKENDS}
    a, b = (parameters(runs[backend]["out"] / "model.zip") for backend in ("lean", "sb3"))
    assert a["log_std"].shape == (32, 1)  # a state-dependent exploration matrix's std
    for key in a:
        np.testing.assert_allclose(a[key], b[key], rtol=0, atol=ROUNDING, err_msg=key)
    finite_run(runs["lean"])


def test_unnormalized_observations_pass_as_the_env_gives_them_in_both_backends(tmp_path, smoke_runs):
    """``unnormalized_observations``: the normaliser leaves the named entries out (SB3's ``norm_obs_keys``), the
    lean rollouts write the normalised columns around them and follow the SB3 run to rounding, and the run's
    policy evaluates and exports (the export checks the ONNX file against the model on the env's observations,
    so a manifest that normalised the entries would fail it)."""
    from acres_gym.agents.evaluate import evaluate
    from acres_gym.agents.export import main as export_main
    from acres_gym.agents.sb3_models import load_run_policy

    raw = ["path_points", "target_speed"]  # two entries of other widths, between normalised ones
    runs = {backend: train(tmp_path, "smoke", backend, 512, "--set", f"unnormalized_observations=[{', '.join(raw)}]")
            for backend in backends.BACKENDS}
    a, b = (parameters(runs[backend]["out"] / "model.zip") for backend in ("lean", "sb3"))
    for key in a:
        np.testing.assert_allclose(a[key], b[key], rtol=0, atol=ROUNDING, err_msg=key)
    normal = parameters(smoke_runs["lean"]["out"] / "model.zip")  # the same run normalising every entry
    assert any(np.abs(a[k] - normal[k]).max() > 100 * ROUNDING for k in a)
    with open(runs["lean"]["out"] / "vecnormalize.pkl", "rb") as f:
        normalizer = pickle.load(f)
    assert normalizer.norm_obs_keys and not set(raw) & set(normalizer.norm_obs_keys)
    assert not set(raw) & set(normalizer.obs_rms)
    factory, mode, env_config = load_run_policy(runs["lean"]["out"] / "model.zip")
    assert math.isfinite(evaluate(factory, "acres_gym/RangerSpeedTracking-v3", 1, 7, env_config,
                                  mode)["mean"]["episode_return"])
    assert export_main([str(runs["lean"]["out"] / "model.zip"), "--out", str(tmp_path / "policy")]) == 0
    manifest = json.loads((tmp_path / "policy" / "manifest.json").read_text())
    normalised = {i["name"] for i in manifest["observation"]["items"] if "normalization" in i}
    assert normalised == set(normalizer.norm_obs_keys)


@pytest.mark.parametrize("value, message", [
    ("[local_map]", "local_map not an entry of acres_gym/RangerSpeedTracking-v3's observations; allowed: "
                    "brake_pressure_output, "),
    ("path_points", "unnormalized_observations = 'path_points': expected a list of distinct observation entry"),
    ("[gear, gear]", "expected a list of distinct observation entry names"),
])
def test_a_bad_unnormalized_observations_is_a_one_line_error(tmp_path, capsys, value, message):
    with pytest.raises(SystemExit) as exc:
        train_main(["--config", "smoke", "--out", str(tmp_path / "a"), "--set", f"unnormalized_observations={value}",
                    *QUICK], prog="train.py")
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1


def test_a_navigation_run_with_per_channel_map_statistics_saves_and_exports_them(tmp_path):
    out = tmp_path / "nav"
    train_main(["--config", "ppo_offroad_navigation", "--total-steps", "256", "--out", str(out), *QUICK,
                "--set", "algo_kwargs.n_steps=16", "--set", "algo_kwargs.batch_size=128",
                "--set", "algo_kwargs.n_epochs=1", "--set", "normalize_per_channel=[local_map]"], prog="train.py")
    from acres_gym.agents.export import main as export_main

    assert export_main([str(out / "model.zip"), "--out", str(tmp_path / "policy")]) == 0
    manifest = json.loads((tmp_path / "policy" / "manifest.json").read_text())
    item = next(i for i in manifest["observation"]["items"] if i["name"] == "local_map")
    channels = item["shape"][0]
    for figure in ("mean", "var"):
        values = np.reshape(item["normalization"][figure], (channels, -1))
        assert np.all(values == values[:, :1]), figure  # one figure per channel
    assert np.unique(np.reshape(item["normalization"]["mean"], (channels, -1))[:, 0]).size == channels


@pytest.mark.parametrize("overrides, message", [
    (["normalize_per_channel=[path_points]"], "path_points not a normalised observation entry with channels (two "
                                              "axes or more); allowed: none"),
    (["normalize_per_channel=gear"], "normalize_per_channel = 'gear': expected a list of distinct"),
])
def test_a_bad_normalize_per_channel_is_a_one_line_error(tmp_path, capsys, overrides, message):
    with pytest.raises(SystemExit) as exc:
        train_main(["--config", "smoke", "--out", str(tmp_path / "a"), *[a for o in overrides for a in ("--set", o)],
                    *QUICK], prog="train.py")
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1


def test_unnormalized_observations_of_every_entry_asks_for_no_normalisation(tmp_path, capsys):
    import gymnasium

    names = ", ".join(gymnasium.make("acres_gym/RangerSpeedTracking-v3").observation_space.spaces)
    with pytest.raises(SystemExit) as exc:
        train_main(["--config", "smoke", "--out", str(tmp_path / "a"), "--set", f"unnormalized_observations=[{names}]",
                    *QUICK], prog="train.py")
    assert exc.value.code == 2 and "set normalize_observations: false instead" in capsys.readouterr().err


def test_a_lean_run_resumes_bit_for_bit_and_with_the_other_backend(tmp_path):
    whole = train(tmp_path / "whole", "smoke", "lean", 512)
    half = train(tmp_path / "half", "smoke", "lean", 256)
    out = tmp_path / "resumed"
    resumed = train_main(["--config", "smoke", "--backend", "lean", "--total-steps", "512", "--out", str(out),
                          "--resume", str(half["out"] / "model.zip"), *QUICK], prog="train.py")
    assert resumed["exact_resume"] is True and resumed["total_steps"] == 512
    a, b = parameters(whole["out"] / "model.zip"), parameters(out / "model.zip")
    assert all(np.array_equal(a[k], b[k]) for k in a)
    other = tmp_path / "other"
    again = train_main(["--config", "smoke", "--backend", "sb3", "--total-steps", "512", "--out", str(other),
                        "--resume", str(half["out"] / "model.zip"), *QUICK], prog="train.py")
    assert again["total_steps"] == 512 and again["backend"] == "sb3"


def test_a_bad_backend_or_an_unsupported_setting_is_a_one_line_error(tmp_path, capsys):
    with pytest.raises(SystemExit) as exc:
        train_main(["--config", "smoke", "--backend", "fast", "--out", str(tmp_path / "a")], prog="train.py")
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "backend = 'fast'" in err and "allowed: sb3, lean" in err
    with pytest.raises(SystemExit) as exc:
        train_main(["--config", "sac_path_following", "--backend", "lean", "--out", str(tmp_path / "b")],
                   prog="train.py")
    assert exc.value.code == 2 and "algo = 'sac'" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exc:
        train_main(["--config", "smoke", "--backend", "lean", "--set", "algo_kwargs.rollout_buffer_class=x",
                    "--out", str(tmp_path / "c")], prog="train.py")
    assert exc.value.code == 2 and "algo_kwargs.rollout_buffer_class" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exc:
        train_main(["--config", "smoke", "--backend", "lean", "--set", "policy_kwargs.squash_output=true",
                    "--out", str(tmp_path / "d")], prog="train.py")
    assert exc.value.code == 2 and "policy_kwargs.squash_output" in capsys.readouterr().err
    with pytest.raises(ValueError, match="backend = 'x'; allowed: sb3, lean"):
        backends.model_class("ppo", "x")
    assert not list(tmp_path.iterdir())  # nothing written


def test_the_lean_rollout_matches_sb3s_distribution():
    """The values and log-probabilities a lean rollout keeps are SB3's policy's for the same observations and
    actions, and the normaliser's flat path gives its Dict path's figures."""
    env, model = lean_smoke_model()
    model.learn(256)  # one update: the policy changes
    model.train = lambda: None  # the next rollout stays the policy's as it is now
    model.learn(256, reset_num_timesteps=False)
    r = model._lean
    obs = {k: torch.from_numpy(v) for k, v in r.entries(r.obs.reshape(-1, r.width)).items()}
    with torch.no_grad():
        values, log_probs, _ = model.policy.evaluate_actions(obs, torch.from_numpy(r.actions.reshape(256, -1)))
    np.testing.assert_allclose(r.values.reshape(-1), values.flatten().numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(r.log_probs.reshape(-1), log_probs.numpy(), rtol=1e-5, atol=1e-5)
    raw = {k: v.copy() for k, v in env.get_original_obs().items()}
    np.testing.assert_array_equal(env.normalize_flat(env.flatten(raw)), r.flat(env.normalize_obs(raw)))
    # the native env's entries are views of one buffer: one gather of its columns gives flatten's row, bit for
    # bit; a copied or sliced observation takes the entry-by-entry path
    obs, *_ = r.venv.step(np.zeros((r.venv.num_envs, *model.action_space.shape), dtype=np.float32))
    assert r.columns is not None and all(v.base is obs[r.keys[0]].base for v in obs.values())
    gathered = r.raw_flat(obs)
    assert gathered.dtype == np.float32 and gathered.flags["C_CONTIGUOUS"]
    np.testing.assert_array_equal(gathered, env.flatten(obs))
    copied = {k: v.copy() for k, v in obs.items()}
    sliced = {k: v[1:] for k, v in obs.items()}
    np.testing.assert_array_equal(r.raw_flat(copied), gathered)
    np.testing.assert_array_equal(r.raw_flat(sliced), gathered[1:])
    env.close()


@pytest.mark.parametrize("activation", ["tanh", "relu", "elu"])
@pytest.mark.parametrize("use_sde", [False, True])
def test_the_rollouts_numpy_actor_acts_as_the_torch_actor(activation, use_sde):
    """``_NumpyActor`` (the actor's layers copied into numpy for a rollout) gives torch's actions, noise and
    log-probabilities to float32 rounding from the same generator state; an activation it does not copy (ELU)
    keeps the torch path."""
    env, model = lean_smoke_model(f"policy_kwargs.activation_fn={activation}",
                                  f"algo_kwargs.use_sde={str(use_sde).lower()}")
    model.learn(256)  # a rollout and an update: the layers are no longer their initial values
    r = model._lean
    model._rollout_start()
    assert (r.actor is not None) == (activation != "elu")
    if r.actor is None:
        env.close()
        return
    flat = r.obs.reshape(-1, r.width)[:env.num_envs]
    torch.manual_seed(7)
    got = model._act(flat)
    r.actor = None
    torch.manual_seed(7)
    want = model._act(flat)
    np.testing.assert_allclose(got[0], want[0], rtol=0, atol=1e-5)  # actions
    np.testing.assert_allclose(got[1], want[1], rtol=0, atol=1e-5)  # their noise
    if use_sde:
        np.testing.assert_allclose(got[2], want[2], rtol=0, atol=1e-4)  # log-probabilities
    else:
        assert got[2] is None and want[2] is None  # from the noise at the rollout's end
    env.close()


@pytest.mark.parametrize("channels", [None, [3, 5, 2]])
def test_the_rollouts_numpy_actor_runs_the_local_map_cnn_as_torch_does(channels):
    """With ``local_map_cnn``'s features (navigation) the rollouts' numpy actor computes the CNN as one gather and
    one product per convolution (``_NumpyLocalMap``): torch's features, actions, noise and values to float32
    rounding, for the shipped channels and for others; an extractor it does not copy keeps the torch path."""
    from acres_gym.agents.lean_ppo import _NumpyLocalMap

    overrides = ["algo_kwargs.n_steps=16", "algo_kwargs.batch_size=128", "algo_kwargs.n_epochs=1"]
    if channels is not None:
        overrides.append(f"policy_kwargs.features_extractor_kwargs.channels={channels}")
    env, model = lean_smoke_model(*overrides, config="ppo_offroad_navigation")
    model.learn(512)  # two rollouts and updates: the layers are no longer their initial values
    r = model._lean
    assert r.numpy_actor and not r.flat_features
    model._rollout_start()
    flat = r.obs.reshape(-1, r.width)
    extractor = model.policy.features_extractor
    with torch.inference_mode():
        want_features = extractor(r.entries(torch.from_numpy(flat))).numpy()
    for rows in (len(flat), env.num_envs, 1):  # the gathers are made per batch size
        np.testing.assert_allclose(r.actor.features(flat[:rows]), want_features[:rows], rtol=0, atol=1e-5)
    flat = flat[:env.num_envs]
    torch.manual_seed(7)
    got = model._act(flat)
    actor, r.actor = r.actor, None
    torch.manual_seed(7)
    want = model._act(flat)
    for name, a, b in zip(("actions", "noise", "log-probabilities", "values"), got, want, strict=True):
        if b is None:
            assert a is None, name
        else:
            np.testing.assert_allclose(a, b, rtol=0, atol=1e-5, err_msg=name)
    assert want[3] is not None  # the CNN's values come per step, with the actions
    # a layer the copy does not know (a dilated convolution) keeps the torch path
    conv = extractor.cnn[0]
    conv.dilation = (2, 2)
    assert not _NumpyLocalMap.supported(extractor, model.observation_space)
    conv.dilation = (1, 1)
    assert _NumpyLocalMap.supported(extractor, model.observation_space) and actor is not None
    env.close()


def test_the_local_map_cnn_refuses_bad_channels():
    import gymnasium

    import acres_gym  # noqa: F401  (the ids registered)
    from acres_gym.agents.sb3_models import local_map_extractor_class

    space = gymnasium.make("acres_gym/RangerOffroadNavigation-v2").observation_space
    cls = local_map_extractor_class()
    assert cls(space, channels=[4, 8, 8]).cnn[4].out_channels == 8
    for bad in ([8, 16], [8, 0, 16], [8, 16.5, 16]):
        with pytest.raises(ValueError, match=r"features_extractor_kwargs\.channels"):
            cls(space, channels=bad)


UPDATE_VARIANTS = {
    "diagonal gaussian": [],
    "gsde": ["algo_kwargs.use_sde=true"],
    "relu, value clipping, entropy, raw advantages": [
        "policy_kwargs.activation_fn=relu", "algo_kwargs.use_sde=true", "algo_kwargs.clip_range_vf=0.1",
        "algo_kwargs.ent_coef=0.01", "algo_kwargs.normalize_advantage=false"],
    "one hidden layer, weight decay": ["policy_kwargs.net_arch=[16]",
                                       "policy_kwargs.optimizer_kwargs={weight_decay: 0.01}"],
    "target_kl stop": ["algo_kwargs.target_kl=0.001"],
    "a shorter last minibatch": ["algo_kwargs.batch_size=96"],  # 256 samples: 96, 96, 64
}


def _update_from(model, start, numpy_update: bool) -> tuple[dict, dict, dict, int]:
    """``model.train()`` from ``start`` (policy, optimiser, numpy generator, update count) by one implementation:
    the parameters, the logged figures, Adam's state and the epochs run."""
    import copy

    policy_state, optimizer_state, generator, updates = start
    model.policy.load_state_dict(copy.deepcopy(policy_state))
    model.policy.optimizer.load_state_dict(copy.deepcopy(optimizer_state))  # loading keeps the given tensors
    np.random.set_state(generator)
    model._n_updates, model.numpy_update = updates, numpy_update
    model.train()
    params = {k: v.detach().numpy().copy() for k, v in model.policy.state_dict().items()}
    return (params, dict(model.logger.name_to_value), copy.deepcopy(model.policy.optimizer.state_dict()["state"]),
            model._n_updates - updates)


@pytest.mark.filterwarnings("ignore:You have specified a mini-batch size")  # the shorter last minibatch, on purpose
@pytest.mark.parametrize("variant", list(UPDATE_VARIANTS))
def test_the_numpy_update_is_torchs_update_to_float32_rounding(variant):
    """``NumpyUpdate`` (the update with its gradients written out) moves every parameter, Adam's moments and the
    logged figures as torch's autograd update does from the same state, to float32 rounding, in each setting it
    covers; every parameter moves by more than 1e-4, fifty times the tolerance, so a wrong gradient or
    optimiser step fails."""
    import copy

    from acres_gym.agents.lean_update import NumpyUpdate

    env, model = lean_smoke_model("algo_kwargs.learning_rate=0.003", "algo_kwargs.n_epochs=4",
                                  *UPDATE_VARIANTS[variant])
    model.learn(512)  # two rollouts and updates: Adam's moments are not zero
    model.collect_rollouts(model.env, model._init_callback(None), model.rollout_buffer, model.n_steps)  # a new one
    assert NumpyUpdate.supported(model.policy)
    start = (copy.deepcopy(model.policy.state_dict()), copy.deepcopy(model.policy.optimizer.state_dict()),
             np.random.get_state(), model._n_updates)
    (want, want_log, want_adam, want_epochs), (got, got_log, got_adam, got_epochs) = (
        _update_from(model, start, numpy_update) for numpy_update in (False, True))
    assert got_epochs == want_epochs and (want_epochs < 4) == (variant == "target_kl stop")
    for key, value in want.items():
        assert np.abs(value - start[0][key].numpy()).max() > 1e-4, key
        np.testing.assert_allclose(got[key], value, rtol=0, atol=2e-6, err_msg=key)
    for key in ("train/policy_gradient_loss", "train/value_loss", "train/entropy_loss", "train/approx_kl",
                "train/clip_fraction", "train/loss"):
        assert got_log[key] == pytest.approx(want_log[key], rel=1e-4, abs=1e-6), key
    assert want_log["train/clip_fraction"] > 0  # the clipped branch of the surrogate was taken
    for index, state in want_adam.items():
        assert float(got_adam[index]["step"]) == float(state["step"])
        np.testing.assert_allclose(got_adam[index]["exp_avg"], state["exp_avg"], rtol=1e-4, atol=1e-7)
        np.testing.assert_allclose(got_adam[index]["exp_avg_sq"], state["exp_avg_sq"], rtol=1e-3, atol=1e-10)
    env.close()


@pytest.mark.parametrize("overrides", [["policy_kwargs.activation_fn=elu"],
                                       ["algo_kwargs.use_sde=true", "policy_kwargs.full_std=false"]])
def test_a_policy_the_numpy_update_does_not_cover_trains_by_torch(overrides):
    """An activation or a gSDE form ``NumpyUpdate`` does not write out keeps torch's update, which still trains."""
    from acres_gym.agents.lean_update import NumpyUpdate

    env, model = lean_smoke_model(*overrides)
    assert not NumpyUpdate.supported(model.policy)
    before = {k: v.detach().clone() for k, v in model.policy.state_dict().items()}
    model.learn(256)
    assert model._numpy is None
    assert any(not torch.equal(before[k], v) for k, v in model.policy.state_dict().items())
    env.close()


# --- curriculum ----------------------------------------------------------------------------------------

# the smoke config's 4 vehicles x 64 steps: a rollout is 256 steps, so the stage begins with the second rollout
STAGE = "curriculum=[{from_steps: 256, env_config: {max_episode_s: 2.0}}]"


def run(out, steps: int, *extra: str, backend: str = "lean") -> dict:
    return train_main(["--config", "smoke", "--backend", backend, "--total-steps", str(steps), "--out", str(out),
                       "--overwrite", *QUICK, *extra], prog="train.py")


def training_env_episode_s(out) -> float:
    with open(out / "state.pkl", "rb") as f:
        return pickle.load(f)["env"].venv.config["max_episode_s"]


@pytest.fixture(scope="module")
def staged(tmp_path_factory) -> dict:
    root = tmp_path_factory.mktemp("curriculum")
    runs = {backend: root / backend for backend in backends.BACKENDS}
    for backend, out in runs.items():
        run(out, 512, "--set", STAGE, backend=backend)
    run(root / "plain", 512)
    return {**runs, "plain": root / "plain"}


def test_the_stage_replaces_the_training_env_and_both_backends_follow_it_alike(staged):
    # QUICK sets the episodes to 3 s; the stage to 2 s
    assert training_env_episode_s(staged["plain"]) == 3.0
    for backend in backends.BACKENDS:
        assert training_env_episode_s(staged[backend]) == 2.0
    lean, sb3, plain = (parameters(staged[k] / "model.zip") for k in ("lean", "sb3", "plain"))
    for key in lean:
        np.testing.assert_allclose(lean[key], sb3[key], rtol=0, atol=ROUNDING, err_msg=key)
    assert any(np.abs(lean[k] - plain[k]).max() > 100 * ROUNDING for k in lean)  # the second rollout differs


def test_a_run_resumes_bit_for_bit_across_its_stage_and_into_a_curriculum(staged, tmp_path):
    half = tmp_path / "half"
    run(half, 256, "--set", STAGE)
    assert training_env_episode_s(half) == 2.0  # switched at the end of the first rollout, as the whole run did
    out = tmp_path / "resumed"
    report = run(out, 512, "--set", STAGE, "--resume", str(half / "model.zip"))
    assert report["exact_resume"] is True
    whole, resumed = parameters(staged["lean"] / "model.zip"), parameters(out / "model.zip")
    assert all(np.array_equal(whole[k], resumed[k]) for k in whole)
    # a run without the curriculum resumed with it: a new env, the stage it has reached in place at the start
    plain_half = tmp_path / "plain_half"
    run(plain_half, 256)
    into = tmp_path / "into"
    report = run(into, 512, "--set", STAGE, "--resume", str(plain_half / "model.zip"))
    assert report["exact_resume"] is False and training_env_episode_s(into) == 2.0


@pytest.mark.parametrize("value, message", [
    ("{from_steps: 256}", "curriculum = {'from_steps': 256}: expected a list"),
    ("[{from_steps: 256}]", "curriculum[0] = {'from_steps': 256}: expected {from_steps: N, env_config: {...}}"),
    ("[{from_steps: 0, env_config: {}}]", "curriculum[0].from_steps = 0: expected an integer above 0"),
    ("[{from_steps: 300, env_config: {}}, {from_steps: 200, env_config: {}}]",
     "curriculum[1].from_steps = 200: expected an integer above 300 (the stage before)"),
    ("[{from_steps: 256.0, env_config: {}}]", "curriculum[0].from_steps = 256.0: expected an integer above 0"),
    ("[{from_steps: 256, env_config: hill_climb}]", "curriculum[0].env_config = 'hill_climb': expected a mapping"),
    ("[{from_steps: 256, env_config: {max_episode_sec: 2}}]", "max_episode_sec"),
])
def test_a_malformed_curriculum_is_a_one_line_error_before_anything_is_written(tmp_path, capsys, value, message):
    with pytest.raises(SystemExit) as exc:
        run(tmp_path / "out", 512, "--set", f"curriculum={value}")
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "out").exists()
