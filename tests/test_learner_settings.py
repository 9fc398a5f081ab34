"""``ObsNormalizer`` (SB3's ``VecNormalize`` figures to the bit, over the concatenated entries); schedules."""

from __future__ import annotations

import gymnasium
import numpy as np
import pytest
from stable_baselines3.common.vec_env import VecNormalize

import acres_gym  # noqa: F401
from acres_gym.agents.sb3_models import ObsNormalizer, frozen_normalizer
from acres_gym.envs.sb3 import RangerSB3VecEnv


def wrapped(cls, env_id: str, n: int, **config):
    venv = gymnasium.make_vec(env_id, num_envs=n, vectorization_mode="vector_entry_point",
                              autoreset_mode="SameStep", config=config)
    env = RangerSB3VecEnv(venv)
    env.seed(7)
    return cls(env, norm_obs=True, norm_reward=False)


def same_dict(a: dict, b: dict) -> bool:
    return set(a) == set(b) and all(np.array_equal(a[k], b[k]) and a[k].dtype == b[k].dtype for k in a)


def test_statistics_observations_and_terminal_observations_equal_vecnormalize_to_the_bit():
    # 9 vehicles: numpy sums a one-element entry's 9 rows pairwise, a wider entry's row by row
    sb3, fast = (wrapped(cls, "acres_gym/RangerSpeedTracking-v3", 9, max_episode_s=1.0)
                 for cls in (VecNormalize, ObsNormalizer))
    assert same_dict(sb3.reset(), fast.reset())
    rng = np.random.default_rng(1)
    terminals = 0
    for _ in range(60):
        actions = rng.uniform(-1.0, 1.0, size=(9, *sb3.action_space.shape)).astype(np.float32)
        (o1, r1, d1, i1), (o2, r2, d2, i2) = sb3.step(actions), fast.step(actions)
        assert same_dict(o1, o2) and np.array_equal(r1, r2) and np.array_equal(d1, d2)
        for a, b in zip(i1, i2, strict=True):
            if "terminal_observation" in a:
                terminals += 1
                assert same_dict(a["terminal_observation"], b["terminal_observation"])
    assert terminals >= 9  # 1 s episodes: every vehicle ended at least once in 3 s
    for key in sb3.obs_rms:
        assert np.array_equal(sb3.obs_rms[key].mean, fast.obs_rms[key].mean), key
        assert np.array_equal(sb3.obs_rms[key].var, fast.obs_rms[key].var), key
        assert sb3.obs_rms[key].count == fast.obs_rms[key].count == 1e-4 + 9 * 61
    # the statistics moved: the comparison is not of two untouched normalisers
    assert np.abs(fast.obs_rms["wheel_speeds"].var - 1.0).max() > 1e-3


@pytest.mark.parametrize("rows", [1, 5, 9, 16, 64, 137, 300])
def test_the_compiled_update_is_runningmeanstd_to_the_bit_for_every_batch_size(rows):
    """``update_moments`` against SB3's ``RunningMeanStd.update``, entry by entry, for batches under 8 rows
    (numpy sums a one-element entry in one running sum), up to 128 (eight partial sums) and above (halves)."""
    from stable_baselines3.common.running_mean_std import RunningMeanStd

    from acres_gym.agents.running_stats import normalize, update_moments
    from acres_gym.runtime.libm import pairwise_sum

    rng = np.random.default_rng(rows)
    widths = [1, 3, 1, 2, 1]
    reference = [RunningMeanStd(shape=(w,)) for w in widths]
    single = np.repeat(np.array(widths) == 1, widths)
    mean, var = np.zeros(sum(widths)), np.ones(sum(widths))
    denominator, count = np.empty_like(var), 1e-4
    for step in range(4):
        scale = rng.uniform(0.01, 1e3, size=sum(widths))
        flat = (rng.standard_normal((rows, sum(widths))) * scale + scale).astype(np.float32)
        ends = np.cumsum(widths)
        for stats, end, w in zip(reference, ends, widths, strict=True):
            stats.update(flat[:, end - w:end])
        count = update_moments(flat, single, mean, var, denominator, count, 1e-8)
        assert count == reference[0].count
        assert np.array_equal(mean, np.concatenate([r.mean for r in reference])), step
        assert np.array_equal(var, np.concatenate([r.var for r in reference])), step
        assert np.array_equal(denominator, np.sqrt(var + 1e-8))
    z = normalize(flat, mean, denominator, 10.0, np.empty(flat.shape, dtype=np.float32))
    assert np.array_equal(z, np.clip((flat - mean) / denominator, -10.0, 10.0).astype(np.float32))
    column = np.ascontiguousarray(flat[:, 0])
    assert pairwise_sum(column, 0, rows, False) == np.add.reduce(column)  # numpy's own order of additions


def test_image_entries_and_a_saved_vecnormalize_load_as_obsnormalizer(tmp_path):
    sb3, fast = (wrapped(cls, "acres_gym/RangerOffroadNavigation-v2", 3, max_episode_s=1.0)
                 for cls in (VecNormalize, ObsNormalizer))
    assert sb3.obs_rms["local_map"].mean.ndim == 3
    sb3.reset(), fast.reset()
    actions = np.zeros((3, *sb3.action_space.shape), dtype=np.float32)
    for _ in range(5):
        assert same_dict(sb3.step(actions)[0], fast.step(actions)[0])
    sb3.save(str(tmp_path / "vecnormalize.pkl"))
    loaded = ObsNormalizer.load(str(tmp_path / "vecnormalize.pkl"), fast.venv)
    assert type(loaded) is ObsNormalizer
    obs = sb3.get_original_obs()
    assert same_dict(loaded.normalize_obs(obs), sb3.normalize_obs(obs))
    fast.save(str(tmp_path / "obsnormalizer.pkl"))  # its own kept layout and statistics are not saved
    again = ObsNormalizer.load(str(tmp_path / "obsnormalizer.pkl"), fast.venv)
    assert "_stats_cache" not in again.__dict__ and same_dict(again.normalize_obs(obs), sb3.normalize_obs(obs))
    frozen = frozen_normalizer(sb3)
    assert type(frozen) is ObsNormalizer and not frozen.training
    single = {k: v[0] for k, v in obs.items()}  # one observation, no batch axis
    out = frozen.normalize_obs(single)
    assert same_dict(out, sb3.normalize_obs(single)) and out["local_map"].shape == single["local_map"].shape


def test_per_channel_statistics_are_those_of_all_the_channels_samples():
    """``set_per_channel``: the map's statistics are, per channel, those of all its cells' samples together
    (with the normaliser's initial mean 0 and variance 1 at a weight of 1e-4 samples), the same as pooling the
    per-element statistics at the end, on the compiled and on SB3's path; the other entries are untouched, and
    observations are normalised with the pooled figures."""
    plain, pooled, slow = (wrapped(ObsNormalizer, "acres_gym/RangerOffroadNavigation-v2", 3, max_episode_s=1.0)
                           for _ in range(3))
    pooled.set_per_channel(["local_map"])
    slow.set_per_channel(["local_map"])
    pooled.reset()
    plain.reset()
    seen = [pooled.get_original_obs()["local_map"]]
    slow.training = False  # updated by hand below, from float64 copies (SB3's entry-by-entry path)
    slow.update_entries({k: v.astype(np.float64) for k, v in pooled.get_original_obs().items()})
    actions = np.zeros((3, *plain.action_space.shape), dtype=np.float32)
    actions[:, 1] = 0.5  # moving, so the map changes
    for _ in range(8):
        z = pooled.step(actions)[0]
        plain.step(actions)
        raw = pooled.get_original_obs()
        seen.append(raw["local_map"])
        slow.update_entries({k: v.astype(np.float64) for k, v in raw.items()})
    r, p = pooled.obs_rms["local_map"], plain.obs_rms["local_map"]
    samples = np.stack(seen).astype(np.float64)  # (steps, vehicles, channels, rows, cols)
    by_channel = np.moveaxis(samples, 2, 0).reshape(samples.shape[2], -1)
    count, cells = 1e-4 + samples.shape[0] * samples.shape[1], samples[0, 0, 0].size
    mean = by_channel.sum(axis=1) / cells / count
    var = (1e-4 + (by_channel ** 2).sum(axis=1) / cells) / count - mean ** 2
    # SB3's batch moments of float32 observations are float32 sums: agreement to their rounding
    np.testing.assert_allclose(r.mean[:, 0, 0], mean, rtol=1e-6, atol=1e-12)
    np.testing.assert_allclose(r.var[:, 0, 0], var, rtol=1e-6, atol=1e-12)
    assert np.all(r.mean == r.mean[:, :1, :1]) and np.all(r.var == r.var[:, :1, :1])
    assert np.abs(p.mean - p.mean[:, :1, :1]).max() > 1e-3  # the cells' own statistics differ
    pooled_mean = p.mean.mean(axis=(1, 2))
    np.testing.assert_allclose(r.mean[:, 0, 0], pooled_mean, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(r.var[:, 0, 0], (p.var + (p.mean - pooled_mean[:, None, None]) ** 2).mean(axis=(1, 2)),
                               rtol=1e-12)
    # SB3's path, from float64 observations: the same pooled figures to float32 rounding of the batch moments
    np.testing.assert_allclose(slow.obs_rms["local_map"].mean, r.mean, rtol=1e-6, atol=1e-12)
    np.testing.assert_allclose(slow.obs_rms["local_map"].var, r.var, rtol=1e-6, atol=1e-12)
    for key in plain.obs_rms:
        if key != "local_map":
            assert np.array_equal(plain.obs_rms[key].mean, pooled.obs_rms[key].mean), key
    expected = np.clip((raw["local_map"] - r.mean) / np.sqrt(r.var + pooled.epsilon), -10.0, 10.0)
    np.testing.assert_allclose(z["local_map"], expected, rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match="goal not a normalised observation entry with channels.*allowed: local_map"):
        plain.set_per_channel(["goal"])


def test_training_without_distribution_checks_gives_sb3s_model_to_the_bit():
    import stable_baselines3
    import torch

    from acres_gym.agents.sb3_models import PPO, distribution_checks

    torch.set_num_threads(1)
    params = []
    for cls in (stable_baselines3.PPO, PPO):
        env = wrapped(ObsNormalizer, "acres_gym/RangerSpeedTracking-v3", 4, max_episode_s=2.0)
        model = cls("MultiInputPolicy", env, seed=3, n_steps=32, batch_size=64, n_epochs=2,
                    policy_kwargs={"net_arch": [16, 16]}, device="cpu")
        initial = [p.detach().clone() for p in model.policy.parameters()]
        model.learn(256)
        params.append([p.detach().clone() for p in model.policy.parameters()])
        env.close()
    assert all(torch.equal(a, b) for a, b in zip(*params, strict=True))
    assert not all(torch.equal(a, b) for a, b in zip(initial, params[1], strict=True))  # the updates moved them
    from torch.distributions import Distribution

    before = Distribution._validate_args
    with distribution_checks(False):
        assert Distribution._validate_args is False
    assert Distribution._validate_args is before  # the setting comes back


@pytest.mark.parametrize("backend", ["sb3", "lean"])
def test_a_linear_learning_rate_falls_to_zero_over_the_run_and_saves_with_the_model(backend, tmp_path,
                                                                                      monkeypatch):
    """``learning_rate: lin_1e-3`` (RL Zoo's notation) is 1e-3 at the start and falls linearly to 0 at the end:
    each update's Adam step size is 1e-3 times the progress remaining (torch's optimiser, or the lean backend's
    numpy update, which reads Adam's own learning rate), and the saved model loads with it."""
    import torch

    from acres_gym.agents import backends
    from acres_gym.agents.lean_update import NumpyUpdate
    from acres_gym.agents.sb3_models import build_model

    torch.set_num_threads(1)
    env = wrapped(ObsNormalizer, "acres_gym/RangerSpeedTracking-v3", 2, max_episode_s=2.0)
    model = build_model("ppo", env, seed=0, algo_kwargs={"learning_rate": "lin_1e-3", "n_steps": 16,
                                                         "batch_size": 32, "n_epochs": 1},
                        policy_kwargs={"net_arch": [8]}, algorithm=backends.model_class("ppo", backend))
    rates = []
    step = model.policy.optimizer.step

    def recording_step(*args, **kwargs):
        rates.append(model.policy.optimizer.param_groups[0]["lr"])
        return step(*args, **kwargs)

    model.policy.optimizer.step = recording_step
    numpy_step = NumpyUpdate.step

    def recording_numpy_step(update, max_grad_norm):
        rates.append(update.policy.optimizer.param_groups[0]["lr"])
        return numpy_step(update, max_grad_norm)

    monkeypatch.setattr(NumpyUpdate, "step", recording_numpy_step)
    model.learn(128)  # 4 rollouts of 32 steps, one minibatch each
    assert rates == pytest.approx([1e-3 * (1 - k / 4) for k in range(1, 5)], abs=1e-12)
    del model.policy.optimizer.step
    model.save(tmp_path / "model.zip")
    loaded = type(model).load(tmp_path / "model.zip", device="cpu")
    assert loaded.lr_schedule(0.25) == pytest.approx(2.5e-4)
    env.close()


@pytest.mark.parametrize("value", ["lin_", "lin_x", "lin_0", "lin_-1e-3", "exp_1e-3", "lin_nan"])
def test_a_malformed_schedule_is_one_error_naming_the_key(value):
    from acres_gym.agents.sb3_models import schedule

    with pytest.raises(ValueError, match=r"algo_kwargs\.learning_rate = .*'lin_<initial>'"):
        schedule("learning_rate", value)


@pytest.mark.parametrize("verbose", [0, 1])
def test_training_without_tensorboard_leaves_no_folder_in_the_temporary_directory(verbose, tmp_path, monkeypatch,
                                                                                  capsys):
    """A model of ``build_model`` without a tensorboard log (tensorboard not installed) trains without SB3's own
    logger, which would make an empty ``SB3-<date-time>`` folder in the system's temporary folder at every
    ``learn``; at ``verbose: 1`` its table still goes to stdout."""
    import tempfile

    from acres_gym.agents.sb3_models import build_model

    monkeypatch.delenv("SB3_LOGDIR", raising=False)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    env = wrapped(ObsNormalizer, "acres_gym/RangerSpeedTracking-v3", 2, max_episode_s=2.0)
    model = build_model("ppo", env, seed=0, algo_kwargs={"n_steps": 16, "batch_size": 32, "n_epochs": 1},
                        policy_kwargs={"net_arch": [8]}, verbose=verbose)
    model.learn(32)
    env.close()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith("SB3-")] == []
    assert ("total_timesteps" in capsys.readouterr().out) == (verbose == 1)
