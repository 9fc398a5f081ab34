"""PPO's update for an MLP policy in numpy, with its gradients written out (``LeanPPO``'s update;
``profile_training --variant update=torch`` times torch's autograd update beside it).

For the policies the shipped PPO configs train (an actor and a critic MLP of ``Linear`` layers with ``tanh`` or
``ReLU`` over the flat observation, a diagonal Gaussian or gSDE, Adam), a minibatch of a few hundred rows costs
torch's autograd several times the arithmetic of its matrix products: the rest is autograd's bookkeeping, one
pass over memory per elementwise operation, and the optimiser's per-parameter dispatch (measured:
docs/performance.md, training backends). This module computes the same update with the backward pass written
out:

- **forward**: each layer ``h = act(h_prev @ W.T + b)`` into preallocated arrays (numpy's BLAS and its SIMD
  ``tanh``); the critic's value ``v``, the actor's mean ``mu``, and the scale ``s`` of the action distribution:
  ``exp(log_std)`` for SB3's ``DiagGaussianDistribution``, ``sqrt(latent^2 @ exp(log_std)^2 + eps)`` for gSDE
  (``StateDependentNoiseDistribution.proba_distribution``, the latent detached: SB3's policies do not learn
  gSDE's features);
- **the loss and its gradients with respect to mu, s and v, row by row in one compiled pass** (``_ppo_head``):
  SB3's PPO loss ``-mean(min(A r, A clip(r, 1 - eps, 1 + eps))) + ent_coef * H + vf_coef * mean((R - v')^2)``
  with ``r = exp(log p - log p_old)``, ``log p = sum_j(-(a - mu)^2 / (2 s^2) - log s - log sqrt(2 pi))``, the
  advantages ``A`` normalised per minibatch, ``v'`` the clipped value when ``clip_range_vf`` is set, and the
  entropy term ``H = -mean(sum_j(1/2 + log sqrt(2 pi) + log s))``; ``min``, ``clip`` and ``clamp`` pass their
  gradients as torch's do (ties in ``min`` split in halves, the clamp's bounds inclusive);
- **backward**: the products of the chain rule, ``dW = dz.T @ h_prev``, ``db = sum(dz)``,
  ``dh_prev = dz @ W``, ``dz = dh (1 - h^2)`` (``tanh``) or ``dh [h > 0]`` (``ReLU``), into one flat gradient
  array; ``torch.nn.utils.clip_grad_norm_``'s rule on its norm; and Adam's step (torch's ``Adam``, its
  formula as ``torch.optim.Adam`` documents it) in one compiled pass per parameter.

The parameters and Adam's state are torch's own tensors, read and written in place through numpy views, so the
model saves, resumes and evaluates as before, with either backend. The figures agree with torch's update within
float32 rounding (``tests/test_backends.py``); any other policy, optimiser or distribution keeps the torch
update (``supported``).
"""

from __future__ import annotations

import math

import numba
import numpy as np
import torch
from stable_baselines3.common.distributions import DiagGaussianDistribution, StateDependentNoiseDistribution

LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)
ACTIVATIONS = {torch.nn.Tanh: "tanh", torch.nn.ReLU: "relu"}
FIGURES = ("policy_loss", "value_loss", "entropy_loss", "approx_kl", "clip_fraction", "loss")


@numba.njit(cache=True)
def _ppo_head(mean, scale, actions, old_log_prob, values, old_values, advantages, returns, clip_range,
              clip_range_vf, ent_coef, vf_coef, normalize_advantage, g_mean, g_scale, g_values, figures):
    """SB3's PPO loss over one minibatch and its gradients with respect to the actor's mean ``g_mean``, the
    distribution's scale ``g_scale`` and the critic's values ``g_values``; ``figures`` gets the minibatch's
    (policy loss, value loss, entropy loss, approximate KL, clip fraction, loss). ``clip_range_vf`` < 0: no value
    clipping."""
    rows, dims = mean.shape
    inv_rows = 1.0 / rows
    adv_mean, adv_scale = 0.0, 1.0
    if normalize_advantage and rows > 1:  # (A - mean) / (std + 1e-8), std with Bessel's correction (torch.std)
        total = 0.0
        for i in range(rows):
            total += advantages[i]
        adv_mean = total * inv_rows
        squares = 0.0
        for i in range(rows):
            squares += (advantages[i] - adv_mean) ** 2
        adv_scale = 1.0 / (math.sqrt(squares / (rows - 1)) + 1e-8)
    policy_loss = value_loss = entropy = approx_kl = clipped = 0.0
    low, high = 1.0 - clip_range, 1.0 + clip_range
    for i in range(rows):
        log_prob = 0.0
        for j in range(dims):
            d = actions[i, j] - mean[i, j]
            s = scale[i, j]
            log_s = math.log(s)
            log_prob += -(d * d) / (2.0 * s * s) - log_s - LOG_SQRT_2PI
            entropy += 0.5 + LOG_SQRT_2PI + log_s
        log_ratio = log_prob - old_log_prob[i]
        ratio = math.exp(log_ratio)
        adv = (advantages[i] - adv_mean) * adv_scale
        bounded = min(max(ratio, low), high)
        unclipped_term, clipped_term = adv * ratio, adv * bounded
        policy_loss -= min(unclipped_term, clipped_term)
        # torch.min's gradient: to the smaller argument, halved on a tie; clamp's: 1 within its bounds (inclusive)
        if unclipped_term < clipped_term:
            weight = 1.0
        elif unclipped_term > clipped_term:
            weight = 1.0 if low <= ratio <= high else 0.0
        else:
            weight = 0.5 + (0.5 if low <= ratio <= high else 0.0)
        g_log_prob = -adv * weight * inv_rows * ratio
        approx_kl += (ratio - 1.0) - log_ratio
        if abs(ratio - 1.0) > clip_range:
            clipped += 1.0
        for j in range(dims):
            d = actions[i, j] - mean[i, j]
            s = scale[i, j]
            g_mean[i, j] = g_log_prob * d / (s * s)
            g_scale[i, j] = g_log_prob * (d * d / (s * s * s) - 1.0 / s) - ent_coef * inv_rows / s
        value, g_clip = values[i], 1.0
        if clip_range_vf >= 0.0:
            delta = values[i] - old_values[i]
            if delta < -clip_range_vf or delta > clip_range_vf:
                g_clip = 0.0
            value = old_values[i] + min(max(delta, -clip_range_vf), clip_range_vf)
        error = value - returns[i]
        value_loss += error * error
        g_values[i] = vf_coef * 2.0 * error * inv_rows * g_clip
    policy_loss *= inv_rows
    value_loss *= inv_rows
    entropy_loss = -entropy * inv_rows
    figures[0] = policy_loss
    figures[1] = value_loss
    figures[2] = entropy_loss
    figures[3] = approx_kl * inv_rows
    figures[4] = clipped * inv_rows
    figures[5] = policy_loss + ent_coef * entropy_loss + vf_coef * value_loss


@numba.njit(cache=True)
def _activation_backward(g_out, out, relu, g_in):
    """``g_in = g_out * act'(z)`` from the activation's output ``out``: ``1 - out^2`` (tanh) or ``[out > 0]``."""
    rows, cols = out.shape
    for i in range(rows):
        for j in range(cols):
            if relu:
                g_in[i, j] = g_out[i, j] if out[i, j] > 0.0 else 0.0
            else:
                g_in[i, j] = g_out[i, j] * (1.0 - out[i, j] * out[i, j])


@numba.njit(cache=True)
def _adam(param, grad, exp_avg, exp_avg_sq, step, lr, beta1, beta2, eps, weight_decay):
    """One step of ``torch.optim.Adam`` (no AMSGrad, not maximising) for one float32 parameter, flat, in float32 as
    torch computes it; ``step`` counts this one. ``m = b1 m + (1 - b1) g``, ``v = b2 v + (1 - b2) g^2``,
    ``p -= lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps)``."""
    step_size = np.float32(lr / (1.0 - beta1 ** step))
    correction2_sqrt = np.float32(math.sqrt(1.0 - beta2 ** step))
    one_minus_beta1, beta2_32, one_minus_beta2 = np.float32(1.0 - beta1), np.float32(beta2), np.float32(1.0 - beta2)
    eps32, decay = np.float32(eps), np.float32(weight_decay)
    if weight_decay != 0.0:
        for k in range(param.size):
            grad[k] += decay * param[k]
    for k in range(param.size):
        g = grad[k]
        m = exp_avg[k] + one_minus_beta1 * (g - exp_avg[k])  # torch's lerp
        v = exp_avg_sq[k] * beta2_32 + one_minus_beta2 * g * g
        exp_avg[k] = m
        exp_avg_sq[k] = v
        param[k] -= step_size * m / (np.sqrt(v) / correction2_sqrt + eps32)


class _Net:
    """One MLP (``Sequential`` of ``Linear`` and activation layers) followed by its ``Linear`` head: numpy views of
    the torch parameters and their gradients, and the forward pass's arrays for a minibatch size."""

    def __init__(self, body: torch.nn.Sequential, head: torch.nn.Linear) -> None:
        modules = list(body)
        self.layers: list[tuple[torch.nn.Linear, bool]] = []  # (linear, its activation is ReLU)
        for k in range(0, len(modules), 2):
            self.layers.append((modules[k], ACTIVATIONS[type(modules[k + 1])] == "relu"))
        self.head = head

    @staticmethod
    def structured(body, head) -> bool:
        """``body`` alternates ``Linear`` and a supported activation (SB3's ``create_mlp``); ``head`` is ``Linear``."""
        if not isinstance(body, torch.nn.Sequential) or type(head) is not torch.nn.Linear:
            return False
        modules = list(body)
        pairs = [(modules[k], modules[k + 1]) for k in range(0, len(modules) - 1, 2)]
        return len(modules) % 2 == 0 and head.bias is not None and all(
            type(linear) is torch.nn.Linear and linear.bias is not None and type(act) in ACTIVATIONS
            for linear, act in pairs)

    def modules(self) -> list[torch.nn.Linear]:
        return [linear for linear, _ in self.layers] + [self.head]

    def bind(self, params: dict[int, np.ndarray], grads: dict[int, np.ndarray]) -> None:
        """The numpy views of this update's parameters and gradients."""
        self.weights = [(params[id(m.weight)], params[id(m.bias)]) for m in self.modules()]
        self.grads = [(grads[id(m.weight)], grads[id(m.bias)]) for m in self.modules()]

    def allocate(self, rows: int) -> tuple:
        """The forward pass's arrays for a minibatch of ``rows``: layer outputs, their gradients, the head's output."""
        outputs = [np.empty((rows, linear.out_features), np.float32) for linear, _ in self.layers]
        return outputs, [np.empty_like(a) for a in outputs], np.empty((rows, self.head.out_features), np.float32)

    def use(self, arrays: tuple) -> None:
        self.outputs, self.g_outputs, self.out = arrays

    def forward(self, x: np.ndarray) -> np.ndarray:
        """The last hidden layer's output (the latent); the head's output in ``self.out``."""
        h = x
        for (weight, bias), out, (_, relu) in zip(self.weights, self.outputs, self.layers, strict=False):
            np.matmul(h, weight.T, out=out)
            out += bias
            if relu:
                np.maximum(out, 0.0, out=out)
            else:
                np.tanh(out, out=out)
            h = out
        weight, bias = self.weights[-1]
        np.matmul(h, weight.T, out=self.out)
        self.out += bias
        return h

    def backward(self, x: np.ndarray, g_out: np.ndarray) -> None:
        """The gradients of the head's and the layers' parameters from ``g_out``, the loss's gradient with respect to
        the head's output."""
        latent = self.outputs[-1] if self.outputs else x
        g_weight, g_bias = self.grads[-1]
        np.matmul(g_out.T, latent, out=g_weight)
        np.sum(g_out, axis=0, out=g_bias)
        if not self.layers:
            return
        g_h = self.g_outputs[-1]
        np.matmul(g_out, self.weights[-1][0], out=g_h)
        for k in range(len(self.layers) - 1, -1, -1):
            out, relu = self.outputs[k], self.layers[k][1]
            g_z = self.g_outputs[k]  # g_h is this array: the activation's backward in place
            _activation_backward(g_z, out, relu, g_z)
            h_prev = self.outputs[k - 1] if k > 0 else x
            g_weight, g_bias = self.grads[k]
            np.matmul(g_z.T, h_prev, out=g_weight)
            np.sum(g_z, axis=0, out=g_bias)
            if k > 0:
                np.matmul(g_z, self.weights[k][0], out=self.g_outputs[k - 1])


class NumpyUpdate:
    """The update of one ``LeanPPO`` policy in numpy (see the module docstring); ``supported(policy)`` first."""

    @staticmethod
    def supported(policy) -> bool:
        """An MLP actor and critic (with biases) over a features extractor without parameters, a diagonal Gaussian
        or gSDE (``exp`` std, full std matrix, the latent detached), and torch's Adam without AMSGrad,
        maximisation, decoupled weight decay or a capturable step. The features must be the flat observation
        itself (``LeanPPO`` checks that: ``_Rollout.flat_features``)."""
        mlp = getattr(policy, "mlp_extractor", None)
        if mlp is None or not (_Net.structured(mlp.policy_net, policy.action_net)
                               and _Net.structured(mlp.value_net, policy.value_net)):
            return False
        if any(p.numel() for p in policy.features_extractor.parameters()):
            return False
        dist = policy.action_dist
        if type(dist) is StateDependentNoiseDistribution:
            if dist.use_expln or not dist.full_std or dist.learn_features:
                return False
        elif type(dist) is not DiagGaussianDistribution:
            return False
        optimizer = policy.optimizer
        if type(optimizer) is not torch.optim.Adam or len(optimizer.param_groups) != 1:
            return False
        group = optimizer.param_groups[0]
        if any(group.get(key) for key in ("amsgrad", "maximize", "capturable", "differentiable",
                                          "decoupled_weight_decay")):
            return False
        handled = {id(policy.log_std)} | {
            id(p) for net in (_Net(mlp.policy_net, policy.action_net), _Net(mlp.value_net, policy.value_net))
            for m in net.modules() for p in (m.weight, m.bias)}
        params = [p for p in policy.parameters() if p.requires_grad]
        return {id(p) for p in params} == handled and all(p.dtype == torch.float32 for p in params)

    def __init__(self, policy) -> None:
        self.policy = policy
        mlp = policy.mlp_extractor
        self.actor = _Net(mlp.policy_net, policy.action_net)
        self.critic = _Net(mlp.value_net, policy.value_net)
        dist = policy.action_dist
        self.sde = type(dist) is StateDependentNoiseDistribution
        self.epsilon = float(dist.epsilon) if self.sde else 0.0
        self.params = [p for p in policy.parameters() if p.requires_grad]
        sizes = [p.numel() for p in self.params]
        self.grad_flat = np.zeros(sum(sizes), np.float32)
        ends = np.cumsum(sizes)
        self.grads = {id(p): self.grad_flat[end - n:end].reshape(tuple(p.shape))
                      for p, n, end in zip(self.params, sizes, ends, strict=True)}
        self._arrays: dict[int, tuple] = {}

    def _use_arrays(self, rows: int) -> None:
        """The arrays of a minibatch of ``rows``, made once per size (a rollout the batch size does not divide ends
        each epoch with a shorter minibatch)."""
        if rows not in self._arrays:
            actions, latent = self.actor.head.out_features, self.actor.head.in_features
            self._arrays[rows] = (self.actor.allocate(rows), self.critic.allocate(rows),
                                  *(np.empty((rows, actions), np.float32) for _ in range(3)),
                                  np.empty((rows, 1), np.float32), np.empty((rows, latent), np.float32))
        actor, critic, self.scale, self.g_mean, self.g_scale, self.g_values, self.latent_sq = self._arrays[rows]
        self.actor.use(actor)
        self.critic.use(critic)

    def begin(self) -> None:
        """Numpy views of the parameters and of Adam's state (created as torch creates it on a first step), taken at
        every update: a loaded model or optimiser state replaces the tensors."""
        optimizer = self.policy.optimizer
        views = {id(p): p.detach().numpy() for p in self.params}
        for net in (self.actor, self.critic):
            net.bind(views, self.grads)
        self.log_std = views[id(self.policy.log_std)]
        self.adam = []
        for p in self.params:
            state = optimizer.state[p]
            if len(state) == 0:
                state["step"] = torch.tensor(0.0, dtype=torch.float32)
                state["exp_avg"] = torch.zeros_like(p, memory_format=torch.preserve_format)
                state["exp_avg_sq"] = torch.zeros_like(p, memory_format=torch.preserve_format)
            self.adam.append((views[id(p)].reshape(-1), self.grads[id(p)].reshape(-1),
                              state["exp_avg"].numpy().reshape(-1), state["exp_avg_sq"].numpy().reshape(-1),
                              state["step"].numpy()))  # a 0-d float32 view of torch's step count

    def loss_and_gradients(self, obs, actions, old_log_prob, old_values, advantages, returns, clip_range: float,
                           clip_range_vf: float | None, ent_coef: float, vf_coef: float, normalize_advantage: bool,
                           figures: np.ndarray) -> None:
        """The minibatch's loss figures into ``figures`` and its gradient into the flat gradient array."""
        self._use_arrays(obs.shape[0])
        latent_pi = self.actor.forward(obs)
        self.critic.forward(obs)
        mean = self.actor.out
        if self.sde:  # s = sqrt(latent^2 @ exp(log_std)^2 + eps)
            std_sq = np.exp(self.log_std)
            std_sq *= std_sq
            np.multiply(latent_pi, latent_pi, out=self.latent_sq)
            np.matmul(self.latent_sq, std_sq, out=self.scale)
            self.scale += np.float32(self.epsilon)
            np.sqrt(self.scale, out=self.scale)
        else:
            self.scale[:] = np.exp(self.log_std)
        _ppo_head(mean, self.scale, actions, old_log_prob, self.critic.out[:, 0], old_values, advantages, returns,
                  clip_range, -1.0 if clip_range_vf is None else clip_range_vf, ent_coef, vf_coef,
                  normalize_advantage, self.g_mean, self.g_scale, self.g_values[:, 0], figures)
        g_log_std = self.grads[id(self.policy.log_std)]
        if self.sde:  # s = sqrt(var), d var / d log_std = 2 std^2 latent^2 (the latent detached): the 2s cancel
            np.divide(self.g_scale, self.scale, out=self.g_scale)
            np.matmul(self.latent_sq.T, self.g_scale, out=g_log_std)
            g_log_std *= std_sq
        else:  # s = exp(log_std): d s / d log_std = s
            np.sum(self.g_scale * self.scale, axis=0, out=g_log_std)
        self.actor.backward(obs, self.g_mean)
        self.critic.backward(obs, self.g_values)

    def step(self, max_grad_norm: float) -> None:
        """``clip_grad_norm_(max_grad_norm)`` over all the gradients, then Adam's step for each parameter."""
        norm = float(np.sqrt(np.dot(self.grad_flat, self.grad_flat)))
        coefficient = max_grad_norm / (norm + 1e-6)
        if coefficient < 1.0:
            self.grad_flat *= np.float32(coefficient)
        group = self.policy.optimizer.param_groups[0]
        lr, (beta1, beta2), eps = float(group["lr"]), group["betas"], float(group["eps"])
        weight_decay = float(group["weight_decay"])
        for param, grad, exp_avg, exp_avg_sq, step in self.adam:
            step += 1  # in place: torch's tensor
            _adam(param, grad, exp_avg, exp_avg_sq, float(step), lr, float(beta1), float(beta2), eps, weight_decay)
