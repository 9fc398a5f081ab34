"""``RangerVectorEnv``: N vehicles in one process, advanced by ONE ``RangerSim.step`` call per control step.

A native ``gymnasium.vector.VectorEnv``: the N vehicles share one simulator (one jitted call advances
them all by ``120 / control_hz`` ticks, vehicles in parallel threads), and the action mode, task,
rewards and observations run once per step over the N axis (``acres_gym.envs.core``). Vehicle ``i`` behaves exactly as a
single ``RangerEnv`` with the same config, reset with seed ``seed + i`` and given the same actions: its
per-vehicle Gymnasium generator is seeded the same way and every episode seed is drawn from it.

Seeding (as ``SyncVectorEnv``): ``reset(seed=s)`` seeds vehicle ``i`` with ``s + i``, ``seed=[s0, s1,
...]`` one each, ``seed=None`` keeps the generators (fresh entropy the first time). ``reset(options=
{"reset_mask": mask})`` resets only the vehicles in the boolean mask.

Autoreset (Gymnasium 1.x, ``metadata["autoreset_mode"]``):

- ``NEXT_STEP`` (default, as ``SyncVectorEnv``): the step in which vehicle ``i`` terminates or truncates
  returns its final observation; the next ``step`` ignores its action and returns its first observation of
  a new episode with reward 0, ``terminated`` and ``truncated`` False. (Internally the vehicle is reset at
  the end of its final step and held at its initial state through the next physics call.)
- ``SAME_STEP``: the step in which vehicle ``i`` ends returns the first observation of its next episode;
  the final observation and info are in ``infos["final_obs"]`` / ``infos["final_info"]`` (dicts of
  arrays, ``infos["_final_obs"]`` the mask of vehicles they belong to). The SB3 adapter uses this mode.
- ``DISABLED``: nothing resets by itself; reset ended vehicles with ``reset(options={"reset_mask": m})``.

``infos`` hold, for every vehicle, the keys of ``RangerEnv``'s info as arrays (``info["speed_mps"][i]``,
``info["reward_terms"]["speed_error"][i]``), each with its ``_key`` mask (all True after a step; the reset
vehicles after a reset, when ``episode_seed`` and ``randomization`` are added).

``render()`` returns a tuple of N frames in ``rgb_array`` mode; in ``human`` mode vehicle 0 is shown.
After ``close()``, ``step``, ``reset`` and ``render`` raise ``gymnasium.error.ClosedEnvironmentError``.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
from gymnasium.utils import seeding
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from acres_gym.envs.core import RangerBatch
from acres_gym.envs.ranger_env import SEED_HIGH, BatchViews, RenderHelper, build_config, next_seed
from acres_gym.runtime import compile_notice


def _count_keys(info: dict[str, Any]) -> int:
    """The number of keys of ``info`` and of the dicts nested in it."""
    count = len(info)
    for value in info.values():
        if isinstance(value, dict):
            count += _count_keys(value)
    return count


def _with_masks(info: dict[str, Any], mask: np.ndarray, masks: list[np.ndarray] | None = None) -> dict[str, Any]:
    """``info`` with a ``_key`` entry beside each key (nested dicts too): a copy of ``mask`` each, the rows of
    one array (``masks``: its rows, one per key, made here when not given)."""
    if masks is None:
        rows = np.empty((_count_keys(info), mask.shape[0]), dtype=bool)
        rows[:] = mask
        masks = list(rows)  # the row views in one call
    out: dict[str, Any] = {}
    k = 0
    for key, value in info.items():
        if isinstance(value, dict):
            inner = _count_keys(value)
            out[key] = _with_masks(value, mask, masks[k + 1:k + 1 + inner])
            out["_" + key] = masks[k]
            k += 1 + inner
        else:
            out[key] = value
            out["_" + key] = masks[k]
            k += 1
    return out


class RangerVectorEnv(BatchViews, VectorEnv):
    """N Rangers on one task config, stepped together (see the module docstring).

    Args:
        num_envs: number of vehicles N.
        config: a task config dict, a name under ``configs/tasks`` or a YAML path (over ``default_config``).
        render_mode: None, ``"human"`` or ``"rgb_array"``.
        autoreset_mode: ``AutoresetMode`` or its value (``"NextStep"``, ``"SameStep"``, ``"Disabled"``).
        max_episode_steps: a step limit on top of the config's ``max_episode_s`` (the smaller ends the
            episode, as a ``TimeLimit``); ``spec.max_episode_steps`` states the resulting length.
        **overrides: top-level config keys, merged last.
    """

    metadata: ClassVar[dict[str, Any]] = {"render_modes": ["human", "rgb_array"], "render_fps": 20,
                                          "autoreset_mode": AutoresetMode.NEXT_STEP}
    default_config: ClassVar[str | None] = None

    def __init__(self, num_envs: int = 1, config: Any = None, render_mode: str | None = None,
                 autoreset_mode: str | AutoresetMode = AutoresetMode.NEXT_STEP, max_episode_steps: int | None = None,
                 **overrides: Any) -> None:
        if isinstance(num_envs, bool) or not isinstance(num_envs, (int, np.integer)) or num_envs < 1:
            raise ValueError(f"num_envs = {num_envs!r}: expected a positive integer")
        self.autoreset_mode = autoreset_mode if isinstance(autoreset_mode, AutoresetMode) \
            else AutoresetMode(autoreset_mode)
        cfg = build_config(self.default_config, config, overrides, render_mode)
        RenderHelper.check(cfg.get("render_mode"))
        self._batch = RangerBatch(cfg, int(num_envs), max_steps=max_episode_steps)
        self.config = self._batch.resolved_config()
        self.num_envs = int(num_envs)
        self.render_mode = self.config["render_mode"]
        self.single_observation_space = self._batch.observation_space
        self.single_action_space = self._batch.action_space
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        self.metadata = {**type(self).metadata, "render_fps": self._batch.control_hz,
                         "autoreset_mode": self.autoreset_mode}
        self.control_hz = self._batch.control_hz
        self.max_episode_steps = self._batch.max_steps
        self._rngs: list[np.random.Generator | None] = [None] * self.num_envs
        self._autoreset = np.zeros(self.num_envs, dtype=bool)
        self._ended = np.zeros(self.num_envs, dtype=bool)
        self._has_reset = False
        self._render: RenderHelper | None = None

    # --- reset ---------------------------------------------------------------------------------------
    def _episode_seeds(self, rows: np.ndarray) -> list[int]:
        seeds = []
        for i in np.flatnonzero(rows):
            if self._rngs[i] is None:
                self._rngs[i], _ = seeding.np_random(None)
            seeds.append(int(self._rngs[i].integers(0, SEED_HIGH)))
        return seeds

    def _reset_rows(self, rows: np.ndarray) -> None:
        """New episodes for the vehicles in ``rows`` from their generators; their next episodes are then
        prepared in the background (``acres_gym.envs.pregen``)."""
        self._batch.reset_rows(rows, self._episode_seeds(rows))
        for i in np.flatnonzero(rows):
            self._batch.prepare_next(int(i), next_seed(self._rngs[i]))

    def reset(self, *, seed: int | list[int | None] | None = None, options: dict | None = None):
        self._refuse_if_closed("reset")
        n = self.num_envs
        options = dict(options or {})
        mask = options.pop("reset_mask", None)
        if options:
            raise ValueError(f"reset options {sorted(options)} are not supported (only 'reset_mask')")
        if mask is None:
            mask = np.ones(n, dtype=bool)
        else:
            mask = np.asarray(mask)
            if mask.shape != (n,) or mask.dtype != np.bool_ or not mask.any():
                raise ValueError(f"options['reset_mask'] must be a boolean array of shape ({n},) with at least "
                                 f"one True, got {mask!r}")
        if seed is None:
            seeds = [None] * n
        elif isinstance(seed, (int, np.integer)) and not isinstance(seed, bool):
            seeds = [int(seed) + i for i in range(n)]
        else:
            seeds = list(seed)
            if len(seeds) != n:
                raise ValueError(f"reset(seed=[...]) needs {n} seeds (one per vehicle), got {len(seeds)}")
        for i in np.flatnonzero(mask):
            if seeds[i] is not None:
                self._rngs[i], _ = seeding.np_random(int(seeds[i]))
        self._reset_rows(mask)
        self._autoreset[mask] = False
        self._ended[mask] = False
        self._has_reset = True
        infos = self._batch.infos()
        infos["episode_seed"] = self._batch.episode_seed.copy()
        summaries = self._batch.summaries
        infos["randomization"] = {key: np.array([s.get(key) for s in summaries])
                                  for key in summaries[int(np.flatnonzero(mask)[0])]}
        if self.render_mode == "human":
            self.render()
        compile_notice.report()
        return self._batch.observe(), _with_masks(infos, mask)

    # --- step ----------------------------------------------------------------------------------------
    def step(self, actions):
        out = self._step(actions)
        compile_notice.report()
        return out

    def _step(self, actions):
        self._refuse_if_closed("step")
        if not self._has_reset:
            raise RuntimeError("RangerVectorEnv.step() called before reset(); call reset(seed=...) first")
        b = self._batch
        mode = self.autoreset_mode
        if mode == AutoresetMode.DISABLED and self._ended.any():
            raise RuntimeError(f"vehicles {np.flatnonzero(self._ended).tolist()} ended their episodes; with "
                               "autoreset disabled reset them with reset(options={'reset_mask': mask}) first")
        pending = self._autoreset if mode == AutoresetMode.NEXT_STEP and self._autoreset.any() else None
        snap = b.snapshot(pending) if pending is not None else None
        reward, terminated, truncated = b.step(actions, active=None if pending is None else ~pending)
        if snap is not None:
            b.restore(snap)
            b.refresh()
        obs = b.observe()
        infos = b.infos()
        ended = terminated | truncated
        all_rows = b._all_rows
        if mode == AutoresetMode.NEXT_STEP:
            if ended.any():
                self._reset_rows(ended)
            self._autoreset = ended
        elif mode == AutoresetMode.SAME_STEP:
            if ended.any():
                final_obs = obs
                final_info = infos
                self._reset_rows(ended)
                obs = b.observe()
                infos = b.infos()
                infos = _with_masks(infos, all_rows)
                infos["final_obs"] = final_obs
                infos["_final_obs"] = ended.copy()
                infos["final_info"] = _with_masks(final_info, ended)
                infos["_final_info"] = ended.copy()
                if self.render_mode == "human":
                    self.render()
                return obs, reward, terminated, truncated, infos
        else:
            self._ended = ended
        if self.render_mode == "human":
            self.render()
        return obs, reward, terminated, truncated, _with_masks(infos, all_rows)

    # --- rendering and closing -----------------------------------------------------------------------
    def render(self):
        if self.render_mode is None:
            return None
        self._refuse_if_closed("render")
        if not self._has_reset:
            raise RuntimeError("render() called before reset()")
        if self._render is None:
            self._render = RenderHelper(self._batch, self.render_mode, self.config["render"])
        if self.render_mode == "human":
            self._render.frame(0)
            return None
        return tuple(self._render.frame(i) for i in range(self.num_envs))

    def close_extras(self, **kwargs: Any) -> None:
        if getattr(self, "_render", None) is not None:  # also after a constructor that raised
            self._render.close()
            self._render = None
        if getattr(self, "_batch", None) is not None:
            self._batch.pregen.close()

    def __getstate__(self):
        state = self.__dict__.copy()
        state["_render"] = None
        return state
