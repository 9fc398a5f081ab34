"""``RangerSB3VecEnv``: the native ``RangerVectorEnv`` as a stable-baselines3 ``VecEnv``.

stable-baselines3 steps a ``VecEnv`` (reset at the end of an episode within the same step, the final
observation in ``info["terminal_observation"]``, a list of info dicts). The adapter runs the vector env in
``SAME_STEP`` autoreset mode and translates, so ``PPO("MultiInputPolicy", RangerSB3VecEnv(...))`` trains
on all N vehicles stepped by one simulator call::

    from acres_gym.envs.sb3 import RangerSB3VecEnv
    from stable_baselines3 import PPO

    venv = RangerSB3VecEnv.from_config("speed_tracking", num_envs=16)
    model = PPO("MultiInputPolicy", venv).learn(10_000)

Per step and vehicle the info dict holds ``TimeLimit.truncated`` (truncated and not terminated, what SB3's
bootstrapping reads); at the end of an episode also ``terminal_observation``, ``episode`` (``r`` return,
``l`` length, ``t`` wall time since the adapter was built: what SB3's logger averages) and ``metrics``
(every number and flag of the episode's last ``info``: the figures and end flags the task's
``episode_row`` reads). ``seed(s)`` before ``reset()`` seeds vehicle ``i`` with ``s + i``. After ``close()``
(which closes the vector env), ``reset``, ``step`` and ``step_async`` raise
``gymnasium.error.ClosedEnvironmentError``.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import gymnasium
import numpy as np
from gymnasium.error import ClosedEnvironmentError
from gymnasium.vector import AutoresetMode
from stable_baselines3.common.vec_env import VecEnv

from acres_gym.envs.vector_env import RangerVectorEnv


class RangerSB3VecEnv(VecEnv):
    """A stable-baselines3 ``VecEnv`` over a ``RangerVectorEnv`` in ``SAME_STEP`` autoreset mode."""

    def __init__(self, venv: RangerVectorEnv) -> None:
        if not isinstance(venv, RangerVectorEnv):
            raise TypeError(f"RangerSB3VecEnv wraps a RangerVectorEnv, got {type(venv).__name__}")
        if venv.autoreset_mode != AutoresetMode.SAME_STEP:
            raise ValueError(f"RangerSB3VecEnv needs a RangerVectorEnv with autoreset_mode='SameStep' "
                             f"(stable-baselines3 resets within the step); got {venv.autoreset_mode.value!r}")
        self.venv = venv
        super().__init__(venv.num_envs, venv.single_observation_space, venv.single_action_space)
        self._actions: np.ndarray | dict | None = None
        self._t0 = time.perf_counter()

    @classmethod
    def from_config(cls, config: Any = None, num_envs: int = 1, env_class: type[RangerVectorEnv] = RangerVectorEnv,
                    **kwargs: Any) -> RangerSB3VecEnv:
        """A new vector env of ``num_envs`` vehicles (``env_class``, config and keyword overrides), wrapped."""
        return cls(env_class(num_envs=num_envs, config=config, autoreset_mode=AutoresetMode.SAME_STEP, **kwargs))

    # --- VecEnv API ----------------------------------------------------------------------------------
    def _refuse_if_closed(self, method: str) -> None:
        if self.venv.closed:
            raise ClosedEnvironmentError(f"RangerSB3VecEnv.{method}() called after close(); the environment is "
                                         "closed: make a new one")

    def reset(self):
        self._refuse_if_closed("reset")
        seeds = None if all(s is None for s in self._seeds) else list(self._seeds)
        options = self._options[0] if any(self._options) else None
        obs, infos = self.venv.reset(seed=seeds, options=options)
        self.reset_infos = [self._reset_info(infos, i) for i in range(self.num_envs)]
        self._reset_seeds()
        self._reset_options()
        return obs

    def step_async(self, actions: np.ndarray) -> None:
        self._refuse_if_closed("step_async")
        self._actions = actions

    def step_wait(self):
        self._refuse_if_closed("step_wait")
        obs, rewards, terminated, truncated, infos = self.venv.step(self._actions)
        dones = terminated | truncated
        info_list: list[dict[str, Any]] = [{"TimeLimit.truncated": bool(truncated[i] and not terminated[i])}
                                           for i in range(self.num_envs)]
        if dones.any():
            final_obs = infos["final_obs"]
            final_info = infos["final_info"]
            elapsed = round(time.perf_counter() - self._t0, 6)
            for i in np.flatnonzero(dones):
                d = info_list[i]
                d["terminal_observation"] = {k: v[i] for k, v in final_obs.items()}
                d["episode"] = {"r": float(final_info["episode_return"][i]),
                                "l": int(final_info["episode_steps"][i]), "t": elapsed}
                d["metrics"] = {k: v[i].item() for k, v in final_info.items()
                                if isinstance(v, np.ndarray) and not k.startswith("_")}
        return obs, rewards.astype(np.float32), dones, info_list

    def close(self) -> None:
        self.venv.close()

    def get_attr(self, attr_name: str, indices=None) -> list[Any]:
        value = getattr(self.venv, attr_name)
        return [value for _ in self._get_indices(indices)]

    def set_attr(self, attr_name: str, value: Any, indices=None) -> None:
        setattr(self.venv, attr_name, value)

    def env_method(self, method_name: str, *method_args, indices=None, **method_kwargs) -> list[Any]:
        result = getattr(self.venv, method_name)(*method_args, **method_kwargs)
        return [result for _ in self._get_indices(indices)]

    def env_is_wrapped(self, wrapper_class: type[gymnasium.Wrapper], indices=None) -> list[bool]:
        return [False for _ in self._get_indices(indices)]

    def get_images(self) -> Sequence[np.ndarray | None]:
        if self.venv.render_mode != "rgb_array":
            return [None for _ in range(self.num_envs)]
        return list(self.venv.render())

    # --- helpers -------------------------------------------------------------------------------------
    @staticmethod
    def _reset_info(infos: dict[str, Any], i: int) -> dict[str, Any]:
        out = {}
        for key, value in infos.items():
            if key.startswith("_") or isinstance(value, dict):
                continue
            out[key] = value[i].item() if isinstance(value, np.ndarray) else value
        return out
