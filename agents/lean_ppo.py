"""``LeanPPO``: stable-baselines3's PPO with its rollouts and its update written out (``backend: lean``).

SB3's PPO (``backend: sb3``) steps the vector env through its ``VecEnv`` interface and pays, at every step,
for what a general library must handle: a list of one info dict per vehicle, the observation normalised into
a ``Dict`` of about twenty arrays and copied entry by entry into a dict rollout buffer, ``torch.distributions``
objects for each forward pass, a forward pass per truncated episode; and in the update, the observation
entries indexed one by one for every minibatch and every loss read back with ``.item()`` for logging. The
learner here is the same PPO written as CleanRL's single-file PPO is:

- **Rollouts** step the native ``RangerVectorEnv`` directly (batched numpy arrays; the SB3 adapter is kept
  for ``reset``, the checkpoints and the evaluations), normalise the observation as one float32 row per
  vehicle (the native env's observation buffer gathered into the observation space's column order, then
  ``ObsNormalizer.normalize_flat`` on the columns it covers, the entries ``unnormalized_observations`` names left
  as they are: the same figures as the ``Dict`` path), run the actor with the
  diagonal Gaussian written out (an MLP's layers copied into numpy at the start of each rollout, ``_NumpyActor``:
  for a few vehicles torch's per-operation dispatch costs more than the arithmetic; ``local_map_cnn``'s CNN
  copied too, each convolution one gather and one matrix product, ``_NumpyLocalMap``; other extractors by torch
  under ``torch.inference_mode()``), and keep the rollout in
  preallocated numpy arrays. The policy does not change during a rollout, so the critic's values come from
  one pass over the whole rollout at its end and the log-probabilities from the stored noise (with a features
  extractor that has parameters, ``local_map_cnn``, the values stay per step: the features once for both
  heads). Truncated episodes are bootstrapped with the value of their final observation (as SB3 does) in one
  batched pass; info dicts are made only for the episodes that ended (the callbacks' ``infos``).
- **The update** is SB3's loss (clipped surrogate, value loss with optional clipping, entropy, advantage
  normalisation, gradient clipping, the ``target_kl`` stop, Adam) over minibatches gathered from one array of
  the rollout's samples. For an MLP actor and critic over the flat observation (every shipped config but
  navigation's CNN) it runs in numpy with the gradients written out (``lean_update.NumpyUpdate``: torch's
  autograd, per-operation dispatch and per-parameter optimiser cost about as much as the arithmetic at these
  sizes); otherwise by torch's autograd, with Adam's fused kernel and ``tanh`` as ``2 sigmoid(2x) - 1`` on the
  minibatches. The logged figures are reduced once per update.

The random streams are SB3's (the actions' noise drawn per step in the same shape, the minibatches by the
same permutation of the rollout ordered vehicle by vehicle) and the arithmetic is SB3's up to rounding, so a
lean run follows the SB3 run of the same seed until rounding differences grow: with ``ppo_speed_tracking``'s
settings the parameters are equal after the first update to float32 rounding (the numpy update agrees with
torch's within 2e-7 on the same rollout), and without gSDE within 5e-7 after four; with gSDE
(the noise a function of the state) rounding differences of 1e-6 in the actions tip episodes apart within a
few updates (1e-4 after two, 1e-2 after four), from where the two runs agree in distribution, not step for step.

``LeanPPO`` is a subclass of SB3's ``PPO`` with the same policy (``MultiInputPolicy``), optimiser,
hyper-parameters and schedules, so a run saves the same ``model.zip`` (loaded as a ``PPO`` by evaluation,
export and ``watch``), runs under ``train.py``'s callbacks and takes the same exact checkpoints; a run
resumes with either backend. gSDE (``use_sde``, ``sde_sample_freq``) runs as SB3's: the exploration matrices
drawn by the policy's ``reset_noise`` at the start of each rollout (and every ``sde_sample_freq`` steps), the
noise ``latent @ matrix``, the log-probabilities per step (the scale depends on the state). What it does not
support is refused by ``check_config`` with the key named: other rollout buffers, squashed actions, separate
feature extractors, and any action space but a ``Box``.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from typing import Any

import numpy as np
import stable_baselines3
import torch
from gymnasium import spaces
from stable_baselines3.common.distributions import DiagGaussianDistribution, StateDependentNoiseDistribution
from stable_baselines3.common.preprocessing import is_image_space
from stable_baselines3.common.torch_layers import CombinedExtractor
from stable_baselines3.common.utils import explained_variance
from stable_baselines3.common.vec_env import VecEnv, VecEnvWrapper, VecNormalize

from acres_gym.agents.lean_update import FIGURES, LOG_SQRT_2PI, NumpyUpdate
from acres_gym.agents.sb3_models import ObsNormalizer, update_statistics
from acres_gym.envs.sb3 import RangerSB3VecEnv

FAST_TANH_MIN = 4096  # elements: below, torch.tanh's one call is faster than three


def tanh(x: torch.Tensor) -> torch.Tensor:
    """``tanh(x)``, for a large tensor (the update's minibatches) as ``2 sigmoid(2x) - 1``: the same function within
    float32 rounding (2e-7), about three times faster than torch's CPU ``tanh`` (not vectorised as its sigmoid is)."""
    if x.numel() < FAST_TANH_MIN:
        return torch.tanh(x)
    return torch.sigmoid(2.0 * x) * 2.0 - 1.0


def run_layers(layers: torch.nn.Module, x: torch.Tensor) -> torch.Tensor:
    """``layers(x)`` for a ``Sequential`` (SB3's MLP), its ``Tanh`` layers computed by ``tanh`` above."""
    if not isinstance(layers, torch.nn.Sequential):
        return layers(x)
    for layer in layers:
        x = tanh(x) if type(layer) is torch.nn.Tanh else layer(x)
    return x


def log_prob(diff: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    """``Normal(mean, scale).log_prob(mean + diff)`` summed over the action's components (torch's formula)."""
    return (-(diff ** 2) / (2 * scale ** 2) - scale.log() - LOG_SQRT_2PI).sum(dim=-1)


# the PPO arguments (algo_kwargs) and policy arguments (policy_kwargs) LeanPPO runs as SB3's PPO does
ALGO_KWARGS = ("learning_rate", "n_steps", "batch_size", "n_epochs", "gamma", "gae_lambda", "clip_range",
               "clip_range_vf", "normalize_advantage", "ent_coef", "vf_coef", "max_grad_norm", "target_kl",
               "stats_window_size", "use_sde", "sde_sample_freq")
POLICY_KWARGS = ("net_arch", "activation_fn", "log_std_init", "ortho_init", "features_extractor_class",
                 "features_extractor_kwargs", "optimizer_class", "optimizer_kwargs", "share_features_extractor",
                 "normalize_images", "use_expln", "full_std")
OFF_ONLY = {"share_features_extractor": True}  # accepted only at this value


def check_config(algo: str, algo_kwargs: Mapping, policy_kwargs: Mapping) -> None:
    """A ``ValueError`` naming the first setting of a training config that ``LeanPPO`` does not run."""
    if algo != "ppo":
        raise ValueError(f"backend = 'lean' trains PPO only; algo = {algo!r}: use backend sb3")
    for section, given, supported in (("algo_kwargs", algo_kwargs, ALGO_KWARGS),
                                      ("policy_kwargs", policy_kwargs, POLICY_KWARGS)):
        for key, value in (given or {}).items():
            if key not in supported:
                raise ValueError(f"{section}.{key}: not supported by backend 'lean' (supported: "
                                 f"{', '.join(supported)}); use backend sb3")
            if key in OFF_ONLY and value != OFF_ONLY[key]:
                raise ValueError(f"{section}.{key} = {value!r}: backend 'lean' runs only {key} = {OFF_ONLY[key]!r};"
                                 f" use backend sb3")


class _Rollout:
    """The vector env, its normaliser, the observation layout and the rollout arrays of one training env."""

    def __init__(self, model: LeanPPO, env: VecEnv) -> None:
        layer, self.norm = env, None
        while isinstance(layer, VecEnvWrapper):
            if isinstance(layer, VecNormalize) and self.norm is None:
                self.norm = layer
            layer = layer.venv
        if not isinstance(layer, RangerSB3VecEnv):
            raise TypeError(f"backend 'lean' trains on a RangerSB3VecEnv (the native vector env train.py builds); "
                            f"got {type(layer).__name__}")
        self.adapter, self.venv = layer, layer.venv
        space = model.observation_space
        self.keys = list(space.spaces)
        self.shapes = [space[k].shape for k in self.keys]
        widths = [int(np.prod(s)) for s in self.shapes]
        ends = np.cumsum(widths).tolist()
        self.slices = [slice(end - w, end) for w, end in zip(widths, ends, strict=True)]
        self.width = int(sum(widths))
        extractor = model.policy.features_extractor
        # features = the flat observation itself: SB3's CombinedExtractor of Flatten layers over Box entries
        self.flat_features = (type(extractor) is CombinedExtractor and list(extractor.extractors) == self.keys
                              and all(isinstance(m, torch.nn.Flatten) for m in extractor.extractors.values())
                              and all(isinstance(space[k], spaces.Box) for k in self.keys))
        self.fast_norm = (isinstance(self.norm, ObsNormalizer) and self.norm.norm_obs
                          and isinstance(self.norm.obs_rms, dict) and set(self.norm.flat_keys()) <= set(self.keys))
        # the flat row's columns the normaliser covers, in its order (None: all of them, in the row's order); the
        # other entries (unnormalized_observations) pass as the env gives them
        self.norm_columns: np.ndarray | None = None
        if self.fast_norm and self.norm.flat_keys() != self.keys:
            self.norm_columns = np.concatenate([np.arange(self.width)[self.slices[self.keys.index(k)]]
                                                for k in self.norm.flat_keys()])
        # the native env's observation entries are views of one (N, width) float32 buffer, laid out by its
        # observation builder: the flat row in this order is one gather of its columns
        observer = getattr(getattr(self.venv, "_batch", None), "observer", None)
        self.columns: np.ndarray | None = None
        if observer is not None and set(observer.slices) == set(self.keys):
            self.columns = np.concatenate([np.arange(observer.slices[k][0].start, observer.slices[k][0].stop)
                                           for k in self.keys])
            self.buffer_width = int(observer.width)
        self.sde = isinstance(model.policy.action_dist, StateDependentNoiseDistribution)
        self.sde_std: torch.Tensor | None = None  # gSDE's std of the exploration matrices, for this rollout
        # the actor in numpy for the rollout's steps, where the features are the flat observation
        self.numpy_actor = (model.numpy_actor and _NumpyActor.supported(model.policy)
                            and (self.flat_features or _NumpyLocalMap.supported(extractor, space)))
        self.actor: _NumpyActor | None = None
        n, steps = env.num_envs, model.n_steps
        act_dim = int(np.prod(model.action_space.shape))
        self.low, self.high = model.action_space.low, model.action_space.high
        self.obs = np.zeros((steps, n, self.width), dtype=np.float32)
        self.actions = np.zeros((steps, n, act_dim), dtype=np.float32)
        self.noise = np.zeros((steps, n, act_dim), dtype=np.float32)
        self.rewards, self.starts, self.values, self.log_probs, self.advantages, self.returns = (
            np.zeros((steps, n), dtype=np.float32) for _ in range(6))
        self.env_id = id(env)

    def raw_flat(self, obs: Mapping[str, np.ndarray]) -> np.ndarray:
        """Every entry of ``obs`` concatenated in the observation space's order, as they are (``norm.flatten(obs)``
        where the normaliser covers every entry): for an observation of the native env, whose entries are all
        views of the builder's buffer, one gather of its columns; otherwise entry by entry."""
        first = obs[self.keys[0]]
        base = first.base if self.columns is not None else None
        if (base is not None and base.dtype == np.float32 and base.ndim == 2
                and base.shape == (first.shape[0], self.buffer_width) and all(obs[k].base is base for k in self.keys)):
            return np.take(base, self.columns, axis=1)
        n = np.asarray(first).shape[0]
        return np.concatenate([np.reshape(obs[k], (n, -1)) for k in self.keys], axis=1)

    def flat(self, obs: Mapping[str, np.ndarray]) -> np.ndarray:
        """The entries of ``obs`` concatenated in the observation space's order, float32, one row per vehicle."""
        n = np.asarray(obs[self.keys[0]]).shape[0]
        return np.concatenate([np.reshape(obs[k], (n, -1)) for k in self.keys], axis=1).astype(np.float32)

    def entries(self, flat):
        """``flat`` (numpy or torch) as the ``Dict`` observation (views)."""
        return {k: flat[:, sl].reshape(-1, *shape) for k, sl, shape in zip(self.keys, self.slices, self.shapes,
                                                                          strict=True)}


def _im2col_index(channels: int, size: int, kernel: int, stride: int, padding: int, column, pad: int) -> np.ndarray:
    """The gather that turns a square convolution into one matrix product: ``(out * out, channels * kernel *
    kernel)`` column indices into a row holding the input, ordered as ``Conv2d.weight.reshape(out_channels, -1)``'s
    columns (channel, kernel row, kernel column) for each output position (row-major); ``column(c, y, x)`` is the
    input pixel's column, and a position in the zero padding reads column ``pad`` (a zero)."""
    out = (size + 2 * padding - kernel) // stride + 1
    oy, ox = (a.reshape(-1, 1) for a in np.meshgrid(np.arange(out), np.arange(out), indexing="ij"))
    c, ky, kx = (a.reshape(1, -1) for a in np.meshgrid(np.arange(channels), np.arange(kernel), np.arange(kernel),
                                                         indexing="ij"))
    y, x = oy * stride - padding + ky, ox * stride - padding + kx
    inside = (y >= 0) & (y < size) & (x >= 0) & (x < size)
    return np.where(inside, column(c, np.clip(y, 0, size - 1), np.clip(x, 0, size - 1)), pad).astype(np.intp)


class _NumpyLocalMap:
    """``local_map_cnn``'s features (``sb3_models.local_map_extractor_class``) in numpy for one rollout: each
    convolution one gather of its input's patches (``_im2col_index``, the padding read from a zero column) and one
    matrix product, activations kept position by position (channels last), the map head's columns reordered to
    match torch's ``Flatten`` of (channels, rows, columns); the other entries' head a product with the flat
    observation itself (zero rows at the map's columns). The same function as the torch extractor within float32
    rounding."""

    @staticmethod
    def supported(extractor, space: spaces.Dict) -> bool:
        """The extractor's layers are the ones copied here: square ``Conv2d`` (zero padding, no dilation or
        groups) each followed by ``ReLU`` and a last ``Flatten``; a ``Linear`` and ``ReLU`` head on each branch;
        every entry a ``Box`` that SB3 does not rescale as an image, the map square."""
        cnn = getattr(extractor, "cnn", None)
        if type(extractor).__name__ != "LocalMapExtractor" or not isinstance(cnn, torch.nn.Sequential):
            return False
        layers = list(cnn)
        convs, acts = layers[0:-1:2], layers[1:-1:2]
        square = all(type(m) is torch.nn.Conv2d and len(set(m.kernel_size)) == 1 and len(set(m.stride)) == 1
                     and not isinstance(m.padding, str) and len(set(m.padding)) == 1 and set(m.dilation) == {1}
                     and m.groups == 1 and m.padding_mode == "zeros" for m in convs)
        heads = all(isinstance(h, torch.nn.Sequential) and [type(m) for m in h] == [torch.nn.Linear, torch.nn.ReLU]
                    for h in (extractor.map_head, extractor.other_head))
        keys = list(space.spaces)
        boxes = all(isinstance(space[k], spaces.Box) and not is_image_space(space[k]) for k in keys)
        shape = space[extractor.map_key].shape if extractor.map_key in space.spaces else ()
        return (square and heads and boxes and len(layers) % 2 == 1 and type(layers[-1]) is torch.nn.Flatten
                and all(type(m) is torch.nn.ReLU for m in acts) and len(shape) == 3 and shape[1] == shape[2]
                and extractor.other_keys == [k for k in keys if k != extractor.map_key])

    def __init__(self, extractor, keys: list[str], slices: list[slice], shapes: list[tuple], width: int) -> None:
        at = keys.index(extractor.map_key)
        start, size = slices[at].start, shapes[at][1]
        self.width = width
        self.rows: int | None = None  # the batch size the gathers were made for (_batch)
        self.convs = []
        # the first convolution reads the observation row: the map's entry, (channels, rows, columns) row-major,
        # its padding the column after the row's last; each later one the previous output, (positions, channels)
        column, pad = (lambda c, y, x, s=size: start + (c * s + y) * s + x), width
        for conv in list(extractor.cnn)[0:-1:2]:
            k, stride, padding = conv.kernel_size[0], conv.stride[0], conv.padding[0]
            index = _im2col_index(conv.in_channels, size, k, stride, padding, column, pad)
            weight = np.ascontiguousarray(conv.weight.detach().numpy().reshape(conv.out_channels, -1).T)
            self.convs.append((index, weight, conv.bias.detach().numpy().copy()))
            size = (size + 2 * padding - k) // stride + 1
            channels = conv.out_channels
            column, pad = (lambda c, y, x, s=size, n=channels: (y * s + x) * n + c), size * size * channels
        linear = extractor.map_head[0]
        w = linear.weight.detach().numpy()  # columns: torch's Flatten of (channels, positions)
        self.map_head = (np.ascontiguousarray(w.reshape(len(w), channels, size * size).transpose(2, 1, 0)
                                              .reshape(-1, len(w))), linear.bias.detach().numpy().copy())
        linear = extractor.other_head[0]
        other = np.zeros((width, linear.out_features), dtype=np.float32)
        columns = np.concatenate([np.arange(sl.start, sl.stop) for k, sl in zip(keys, slices, strict=True)
                                  if k != extractor.map_key])
        other[columns] = linear.weight.detach().numpy().T
        self.other_head = (other, linear.bias.detach().numpy().copy())

    def _batch(self, n: int) -> None:
        """The gathers for a batch of ``n`` rows, each layer's input one flat array with a zero at its end (the
        padding's column of every row): made once per batch size."""
        self.rows = n
        self.inputs, self.gathers = [], []
        length = self.width
        for index, weight, _ in self.convs:
            starts = np.arange(n).reshape(-1, 1, 1) * length
            self.gathers.append(np.where(index == length, n * length, starts + index).reshape(n * len(index), -1))
            self.inputs.append(np.zeros(n * length + 1, dtype=np.float32))
            length = len(index) * weight.shape[1]
        self.inputs.append(np.zeros(n * length + 1, dtype=np.float32))

    def __call__(self, flat: np.ndarray) -> np.ndarray:
        n = len(flat)
        if n != self.rows:
            self._batch(n)
        self.inputs[0][:-1] = flat.reshape(-1)
        for i, (_, weight, bias) in enumerate(self.convs):
            out = self.inputs[i + 1][:-1].reshape(len(self.gathers[i]), -1)  # (rows x positions, channels)
            np.matmul(np.take(self.inputs[i], self.gathers[i]), weight, out=out)
            out += bias
            np.maximum(out, 0.0, out=out)
        x = self.inputs[-1][:-1].reshape(n, -1)
        split = self.map_head[0].shape[1]
        features = np.empty((n, split + self.other_head[0].shape[1]), dtype=np.float32)
        np.maximum(x @ self.map_head[0] + self.map_head[1], 0.0, out=features[:, :split])
        np.maximum(flat @ self.other_head[0] + self.other_head[1], 0.0, out=features[:, split:])
        return features


class _NumpyActor:
    """The actor's layers (``mlp_extractor.policy_net`` and ``action_net``) copied into numpy arrays for one
    rollout, in which the policy does not change: the same function as the torch layers within float32 rounding
    (about 1e-6), for a batch of a few vehicles at a fraction of the cost of torch's per-operation dispatch.
    gSDE's exploration matrices and their std (``sde_std``, the rollout's) are copied with them, whenever the
    policy draws new ones. With ``local_map_cnn``'s features (``_NumpyLocalMap``) the critic's layers are copied
    too: the features once per step for both heads, as the torch path computes them."""

    ACTIVATIONS = {torch.nn.Tanh: np.tanh, torch.nn.ReLU: lambda x: np.maximum(x, 0.0, out=x)}

    @classmethod
    def supported(cls, policy) -> bool:
        """MLPs of ``Linear`` layers and the activations above (anything else keeps the torch path)."""
        return all(isinstance(net, torch.nn.Sequential) and all(
            type(m) is torch.nn.Linear or type(m) in cls.ACTIVATIONS for m in net)
            for net in (policy.mlp_extractor.policy_net, policy.mlp_extractor.value_net))

    @classmethod
    def _copy(cls, net: torch.nn.Sequential) -> list:
        """An MLP's layers as ``_apply`` runs them: ``Linear`` layers copied (``_linear``), activations in numpy."""
        return [_linear(m) if type(m) is torch.nn.Linear else cls.ACTIVATIONS[type(m)] for m in net]

    def __init__(self, policy, sde_std: torch.Tensor | None, features: _NumpyLocalMap | None = None) -> None:
        self.layers = self._copy(policy.mlp_extractor.policy_net)
        self.head = _linear(policy.action_net)
        self.features = features
        self.critic = None
        if features is not None:
            self.critic = [*self._copy(policy.mlp_extractor.value_net), _linear(policy.value_net)]
        self.log_std = None if sde_std is not None else policy.log_std.detach().numpy().copy()
        self.matrix = self.matrices = self.std_sq = None
        if sde_std is not None:
            self.matrix = policy.action_dist.exploration_mat.detach().numpy().copy()
            self.matrices = policy.action_dist.exploration_matrices.detach().numpy().copy()
            self.std_sq = sde_std.square().numpy()
            self.epsilon = policy.action_dist.epsilon

    def act(self, flat: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, np.ndarray | None]:
        """Actions, their noise, (with gSDE) their log-probabilities and (with the CNN's features) the values, as
        ``LeanPPO._act`` computes them."""
        x = features = flat if self.features is None else self.features(flat)
        for layer in self.layers:
            x = _apply(layer, x)
        mean = x @ self.head[0] + self.head[1]
        values = None
        if self.critic is not None:
            v = features
            for layer in self.critic:
                v = _apply(layer, v)
            values = v[:, 0]
        if self.matrices is None:  # torch's generator, as the torch path draws it
            noise = torch.randn(mean.shape).numpy()
            return mean + noise * np.exp(self.log_std), noise, None, values
        if len(x) == 1 or len(x) != len(self.matrices):  # SB3's get_noise: the one matrix, or one per vehicle
            diff = x @ self.matrix
        else:
            diff = np.matmul(x[:, None, :], self.matrices)[:, 0]
        scale = np.sqrt((x * x) @ self.std_sq + self.epsilon)
        log_probs = (-(diff * diff) / (2 * scale * scale) - np.log(scale) - LOG_SQRT_2PI).sum(axis=-1)
        return mean + diff, diff, log_probs, values


def _linear(m: torch.nn.Linear) -> tuple[np.ndarray, np.ndarray]:
    """A ``Linear`` layer's weight (transposed) and bias, copied into numpy."""
    return np.ascontiguousarray(m.weight.detach().numpy().T), m.bias.detach().numpy().copy()


def _apply(layer, x: np.ndarray) -> np.ndarray:
    """One copied layer: a ``(weight, bias)`` pair (``_linear``) or an activation."""
    return x @ layer[0] + layer[1] if isinstance(layer, tuple) else layer(x)


class LeanPPO(stable_baselines3.PPO):
    """SB3's PPO with lean rollouts on the native vector env and a lean update (see the module docstring)."""

    numpy_actor = True  # the rollouts' actor copied into numpy (_NumpyActor) where it can be; False: torch's layers
    numpy_update = True  # the update in numpy (lean_update.NumpyUpdate) where it can be; False: torch's autograd

    def _setup_model(self) -> None:
        super()._setup_model()
        if not isinstance(self.action_space, spaces.Box) or not isinstance(
                self.policy.action_dist, (DiagGaussianDistribution, StateDependentNoiseDistribution)):
            raise ValueError(f"backend 'lean' needs a Box action space (a Gaussian policy); got "
                             f"{self.action_space}: use backend sb3")
        if not self.policy.share_features_extractor or self.policy.squash_output:
            raise ValueError("backend 'lean' needs one shared features extractor and unsquashed actions; "
                             "use backend sb3")
        self._lean: _Rollout | None = None
        self._numpy: NumpyUpdate | None = None

    def _excluded_save_params(self) -> list[str]:
        return [*super()._excluded_save_params(), "_lean", "_numpy", "numpy_actor", "numpy_update"]

    def set_env(self, env: VecEnv, force_reset: bool = True) -> None:
        """SB3's ``set_env``; the next rollout lays out its arrays for the env anew (the last rollout's stay for
        the update: a curriculum stage sets the env between a rollout and its update)."""
        super().set_env(env, force_reset)
        if self._lean is not None:
            self._lean.env_id = None

    # --- the parts a rollout step is made of (the profiler times each) ------------------------------------
    def _features(self, x: torch.Tensor) -> torch.Tensor:
        return x if self._lean.flat_features else self.policy.extract_features(self._lean.entries(x))

    def _latent(self, features: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The policy's ``mlp_extractor(features)``: the actor's and the critic's latent features."""
        mlp = self.policy.mlp_extractor
        return run_layers(mlp.policy_net, features), run_layers(mlp.value_net, features)

    def _act(self, flat: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, np.ndarray | None]:
        """Sampled actions, their standard normal noise, and (or None) their log-probabilities and values, for
        normalised observations ``flat``. Without gSDE the log-probabilities follow from the noise, and with flat
        features the values from one pass over the whole rollout (``_rollout_end``): the policy does not change
        during a rollout."""
        policy, r = self.policy, self._lean
        if r.actor is not None:
            return r.actor.act(flat)
        with torch.inference_mode():
            features = self._features(torch.from_numpy(flat))
            latent_pi = run_layers(policy.mlp_extractor.policy_net, features)
            mean = policy.action_net(latent_pi)
            log_probs = None
            if r.sde:  # SB3's gSDE: the noise from the exploration matrices, a scale that depends on the state
                diff = policy.action_dist.get_noise(latent_pi)
                actions = mean + diff
                scale = torch.sqrt(torch.mm(latent_pi.square(), r.sde_std.square()) + policy.action_dist.epsilon)
                log_probs = log_prob(diff, scale).numpy()
                noise = diff
            else:
                noise = torch.randn_like(mean)
                actions = mean + noise * policy.log_std.exp()
            values = None
            if not r.flat_features:  # the features once for both heads
                values = policy.value_net(run_layers(policy.mlp_extractor.value_net, features)).flatten().numpy()
        return actions.numpy(), noise.numpy(), log_probs, values

    def _rollout_start(self) -> None:
        """gSDE's exploration matrices drawn anew, as SB3's rollouts draw them (``reset_noise``); the actor copied
        into numpy for the steps that follow."""
        r, policy = self._lean, self.policy
        if r.sde:
            policy.reset_noise(r.obs.shape[1])
            with torch.inference_mode():
                r.sde_std = policy.action_dist.get_std(policy.log_std)
        r.actor = None
        if r.numpy_actor:
            features = (None if r.flat_features
                        else _NumpyLocalMap(policy.features_extractor, r.keys, r.slices, r.shapes, r.width))
            r.actor = _NumpyActor(policy, r.sde_std if r.sde else None, features)

    def _rollout_end(self) -> None:
        """The log-probabilities of the rollout's actions from their noise, and with flat features its values."""
        r, policy = self._lean, self.policy
        if not r.sde:
            with torch.inference_mode():
                log_std = policy.log_std
                noise = torch.from_numpy(r.noise)
                r.log_probs[:] = (-0.5 * noise.square() - log_std - LOG_SQRT_2PI).sum(dim=2).numpy()
        if r.flat_features:
            r.values[:] = self._values(r.obs.reshape(-1, r.width)).reshape(r.values.shape)

    def _values(self, flat: np.ndarray) -> np.ndarray:
        with torch.inference_mode():
            latent_vf = run_layers(self.policy.mlp_extractor.value_net, self._features(torch.from_numpy(flat)))
            return self.policy.value_net(latent_vf).flatten().numpy()

    def _normalise(self, obs: Mapping[str, np.ndarray], rewards: np.ndarray | None = None,
                   dones: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray | None]:
        """The normalised flat observation and rewards, the normaliser's statistics updated as its ``step_wait``
        updates them; without ``rewards`` (final observations) nothing is updated."""
        r, norm = self._lean, self._lean.norm
        if norm is None:
            return r.flat(obs), rewards
        update = rewards is not None and norm.training
        if r.fast_norm:
            flat = r.raw_flat(obs)  # a new array: the normalised columns are written into it
            covered = flat if r.norm_columns is None else flat[:, r.norm_columns]
            if update:
                norm.update_flat(obs, covered)
            z = norm.normalize_flat(covered)
            if r.norm_columns is not None:
                flat[:, r.norm_columns] = z
                z = flat
        else:
            if update and norm.norm_obs:
                update_statistics(norm, obs)
            z = r.flat(norm.normalize_obs(obs))
        if rewards is None:
            return z, None
        norm.old_obs, norm.old_reward = obs, rewards
        if update:
            norm._update_reward(rewards)
        rewards = np.asarray(norm.normalize_reward(rewards), dtype=np.float32)
        norm.returns[dones] = 0
        return z, rewards

    def _finished(self, infos: Mapping[str, Any], terminated: np.ndarray, truncated: np.ndarray) -> list[dict]:
        """The info dicts of the episodes that ended in this step, as the SB3 adapter makes them."""
        final = infos["final_info"]
        elapsed = round(time.perf_counter() - self._lean.adapter._t0, 6)
        metrics = {k: v for k, v in final.items() if isinstance(v, np.ndarray) and not k.startswith("_")}
        out = []
        for i in np.flatnonzero(terminated | truncated):
            out.append({"TimeLimit.truncated": bool(truncated[i] and not terminated[i]),
                        "episode": {"r": float(final["episode_return"][i]), "l": int(final["episode_steps"][i]),
                                    "t": elapsed},
                        "metrics": {k: v[i].item() for k, v in metrics.items()}})
        return out

    # --- SB3's two phases --------------------------------------------------------------------------------
    def collect_rollouts(self, env: VecEnv, callback, rollout_buffer, n_rollout_steps: int) -> bool:
        if self._lean is None or self._lean.env_id != id(env) or self._lean.obs.shape[0] != n_rollout_steps:
            self._lean = _Rollout(self, env)
        r = self._lean
        self.policy.set_training_mode(False)
        self._rollout_start()
        callback.on_rollout_start()
        flat = r.flat(self._last_obs)  # the normalised observation (SB3's reset or the last rollout's)
        starts = np.asarray(self._last_episode_starts, dtype=np.float32)
        dones = starts.astype(bool)
        for step in range(n_rollout_steps):
            if r.sde and self.sde_sample_freq > 0 and step % self.sde_sample_freq == 0:
                self._rollout_start()  # at step 0 too, as SB3 draws them
            r.obs[step], r.starts[step] = flat, starts
            actions, r.noise[step], log_probs, values = self._act(flat)
            if log_probs is not None:
                r.log_probs[step] = log_probs
            if values is not None:
                r.values[step] = values
            r.actions[step] = actions
            obs, rewards, terminated, truncated, infos = r.venv.step(np.clip(actions, r.low, r.high))
            self.num_timesteps += env.num_envs
            dones = terminated | truncated
            flat, rewards = self._normalise(obs, np.asarray(rewards, dtype=np.float32), dones)
            finished: list[dict] = []
            if dones.any():
                finished = self._finished(infos, terminated, truncated)
                self.ep_info_buffer.extend(info["episode"] for info in finished)
                bootstrap = truncated & ~terminated
                if bootstrap.any():  # a time limit is not an end: the final observation's value carries on
                    final = {k: v[bootstrap] for k, v in infos["final_obs"].items()}
                    rewards[bootstrap] += self.gamma * self._values(self._normalise(final)[0])
            callback.update_locals({"infos": finished, "dones": dones, "rewards": rewards, "new_obs": obs})
            if not callback.on_step():
                return False
            r.rewards[step] = rewards
            starts = dones.astype(np.float32)
        self._rollout_end()
        last_values = self._values(flat)
        self._last_obs = r.entries(flat)
        self._last_episode_starts = dones
        self._advantages(last_values, dones)
        callback.update_locals({"infos": [], "dones": dones})
        callback.on_rollout_end()
        return True

    def _advantages(self, last_values: np.ndarray, dones: np.ndarray) -> None:
        """GAE(lambda) advantages and returns, as SB3's ``RolloutBuffer.compute_returns_and_advantage``."""
        r = self._lean
        last_gae = np.zeros_like(last_values)
        for step in reversed(range(r.rewards.shape[0])):
            if step == r.rewards.shape[0] - 1:
                next_non_terminal, next_values = 1.0 - dones.astype(np.float32), last_values
            else:
                next_non_terminal, next_values = 1.0 - r.starts[step + 1], r.values[step + 1]
            delta = r.rewards[step] + self.gamma * next_values * next_non_terminal - r.values[step]
            last_gae = delta + self.gamma * self.gae_lambda * next_non_terminal * last_gae
            r.advantages[step] = last_gae
        np.add(r.advantages, r.values, out=r.returns)

    def train(self) -> None:
        """SB3's PPO update (``PPO.train``) over the rollout arrays (see the module docstring): in numpy with the
        gradients written out (``lean_update.NumpyUpdate``) for the MLP policies it covers, else by torch's
        autograd with Adam's fused implementation (one kernel for all parameters) when the optimiser is Adam."""
        if self.numpy_update and self._lean.flat_features and NumpyUpdate.supported(self.policy):
            if self._numpy is None or self._numpy.policy is not self.policy:
                self._numpy = NumpyUpdate(self.policy)
            self._update(self._numpy_epochs)
            return
        groups = self.policy.optimizer.param_groups
        flags = [(g.get("foreach"), g.get("fused")) for g in groups]
        if type(self.policy.optimizer) is torch.optim.Adam:
            for g in groups:
                g["foreach"], g["fused"] = False, True
        try:
            self._update(self._torch_epochs)
        finally:  # the optimiser is saved as SB3 made it
            for g, (foreach, fused) in zip(groups, flags, strict=True):
                g["foreach"], g["fused"] = foreach, fused

    def _update(self, epochs) -> None:
        """One update: ``epochs`` (``_numpy_epochs`` or ``_torch_epochs``) over the rollout's samples, then SB3's
        log records."""
        r, policy = self._lean, self.policy
        policy.set_training_mode(True)
        self._update_learning_rate(policy.optimizer)
        clip_range = self.clip_range(self._current_progress_remaining)
        clip_range_vf = None if self.clip_range_vf is None else self.clip_range_vf(self._current_progress_remaining)
        total = r.rewards.size

        def samples(a: np.ndarray) -> np.ndarray:  # vehicle by vehicle, as SB3's buffer: the same minibatches
            return np.ascontiguousarray(a.swapaxes(0, 1)).reshape(total, -1)

        # one array of the samples' columns, so that a minibatch is one gather: observation, action, old
        # log-probability, old value, advantage, return
        packed = np.concatenate([samples(a) for a in (r.obs, r.actions, r.log_probs, r.values, r.advantages,
                                                      r.returns)], axis=1)
        (pg, value, entropy, clip_fraction), kl, loss = epochs(packed, clip_range, clip_range_vf)
        self.logger.record("train/entropy_loss", entropy)
        self.logger.record("train/policy_gradient_loss", pg)
        self.logger.record("train/value_loss", value)
        self.logger.record("train/approx_kl", kl)
        self.logger.record("train/clip_fraction", clip_fraction)
        self.logger.record("train/loss", loss)
        self.logger.record("train/explained_variance", explained_variance(r.values.flatten(), r.returns.flatten()))
        self.logger.record("train/std", torch.exp(policy.log_std).mean().item())
        self.logger.record("train/n_updates", self._n_updates, exclude="tensorboard")
        self.logger.record("train/clip_range", clip_range)
        if clip_range_vf is not None:
            self.logger.record("train/clip_range_vf", clip_range_vf)

    def _numpy_epochs(self, packed: np.ndarray, clip_range: float, clip_range_vf: float | None
                      ) -> tuple[list[float], float, float]:
        """The update's epochs by ``NumpyUpdate``: (policy, value, entropy loss, clip fraction means), the last
        epoch's mean approximate KL, the last minibatch's loss."""
        r, update = self._lean, self._numpy
        update.begin()
        total, a0 = packed.shape[0], r.width + r.actions.shape[2]
        figures = np.zeros((self.n_epochs * math.ceil(total / self.batch_size), len(FIGURES)))
        done, kls, continue_training = 0, [], True
        batch = np.empty((min(self.batch_size, total), packed.shape[1]), np.float32)
        for _ in range(self.n_epochs):
            kls = []
            order = np.random.permutation(total)
            for start in range(0, total, self.batch_size):
                rows = order[start:start + self.batch_size]
                mb = batch[:len(rows)]
                np.take(packed, rows, axis=0, out=mb)
                row = figures[done]
                update.loss_and_gradients(mb[:, :r.width], mb[:, r.width:a0], mb[:, a0], mb[:, a0 + 1], mb[:, a0 + 2],
                                          mb[:, a0 + 3], clip_range, clip_range_vf, float(self.ent_coef),
                                          float(self.vf_coef), bool(self.normalize_advantage), row)
                done += 1
                kls.append(row[FIGURES.index("approx_kl")])
                if self.target_kl is not None and kls[-1] > 1.5 * self.target_kl:
                    continue_training = False
                    break
                update.step(self.max_grad_norm)
            self._n_updates += 1
            if not continue_training:
                break
        means = figures[:done].mean(axis=0)
        return ([means[FIGURES.index(k)] for k in ("policy_loss", "value_loss", "entropy_loss", "clip_fraction")],
                float(np.mean(kls)), float(figures[done - 1, FIGURES.index("loss")]))

    def _torch_epochs(self, packed_array: np.ndarray, clip_range: float, clip_range_vf: float | None
                      ) -> tuple[list[float], float, float]:
        """The update's epochs by torch's autograd (the policies ``NumpyUpdate`` does not cover), the same figures
        as ``_numpy_epochs``."""
        r, policy = self._lean, self.policy
        packed = torch.from_numpy(packed_array)
        total, a0 = packed.shape[0], r.width + r.actions.shape[2]
        params = list(policy.parameters())
        figures: list[torch.Tensor] = []  # per minibatch; SB3 logs the last epoch's approximate KL, the rest over all
        kls: list[torch.Tensor] = []
        continue_training = True
        for _ in range(self.n_epochs):
            kls = []
            order = torch.from_numpy(np.random.permutation(total))
            for start in range(0, total, self.batch_size):
                batch = packed[order[start:start + self.batch_size]]
                obs, actions = batch[:, :r.width], batch[:, r.width:a0]
                old_log_prob, old_values, adv, returns = batch[:, a0:].unbind(dim=1)
                latent_pi, latent_vf = self._latent(self._features(obs))
                mean = policy.action_net(latent_pi)
                values = policy.value_net(latent_vf).flatten()
                if r.sde:  # SB3's StateDependentNoiseDistribution.proba_distribution
                    dist = policy.action_dist
                    latent_sde = latent_pi if dist.learn_features else latent_pi.detach()
                    scale = torch.sqrt(torch.mm(latent_sde.square(), dist.get_std(policy.log_std).square())
                                       + dist.epsilon)
                    new_log_prob = log_prob(actions - mean, scale)
                    entropy_loss = -(0.5 + LOG_SQRT_2PI + scale.log()).sum(dim=1).mean()
                else:
                    log_std = policy.log_std
                    new_log_prob = (-0.5 * ((actions - mean) * torch.exp(-log_std)).square() - log_std
                                    - LOG_SQRT_2PI).sum(dim=1)
                    entropy_loss = -(0.5 + LOG_SQRT_2PI + log_std).sum()
                if self.normalize_advantage and len(adv) > 1:
                    adv = (adv - adv.mean()) / (adv.std() + 1e-8)
                log_ratio = new_log_prob - old_log_prob
                ratio = torch.exp(log_ratio)
                policy_loss = -torch.min(adv * ratio, adv * torch.clamp(ratio, 1 - clip_range, 1 + clip_range)).mean()
                if clip_range_vf is not None:
                    values = old_values + torch.clamp(values - old_values, -clip_range_vf, clip_range_vf)
                value_loss = torch.nn.functional.mse_loss(returns, values)
                loss = policy_loss + self.ent_coef * entropy_loss + self.vf_coef * value_loss
                with torch.no_grad():
                    approx_kl = torch.mean((ratio - 1) - log_ratio)
                    clip_fraction = torch.mean((torch.abs(ratio - 1) > clip_range).float())
                    figures.append(torch.stack([policy_loss, value_loss, entropy_loss, clip_fraction]))
                    kls.append(approx_kl)
                if self.target_kl is not None and approx_kl.item() > 1.5 * self.target_kl:
                    continue_training = False
                    break
                policy.optimizer.zero_grad()
                loss.backward()
                torch.nn.utils.clip_grad_norm_(params, self.max_grad_norm, foreach=True)
                policy.optimizer.step()
            self._n_updates += 1
            if not continue_training:
                break
        return torch.stack(figures).mean(dim=0).tolist(), torch.stack(kls).mean().item(), loss.item()
