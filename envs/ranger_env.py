"""``RangerEnv``: one Polaris Ranger CREW XP 1000 driven through its DBW layer, as a ``gymnasium.Env``.

Configured by a task config (``acres_gym.envs.config``): a dict, a name under ``configs/tasks`` or a YAML path,
merged over the class's ``default_config`` (the registered tasks set one), then keyword overrides::

    env = RangerEnv("speed_tracking", control_hz=10, rewards={"energy": {"weight": 0.5}})
    env = gymnasium.make("acres_gym/RangerPathFollowing-v3", render_mode="rgb_array",
                         config={"action_mode": "steer_angle+ulc_accel"})

Spaces are fixed at construction (from the config, never from an episode). ``reset(seed=...)`` seeds the
Gymnasium generator; every episode's randomness (terrain, soil, payload, biases, path, speed profile)
comes from one integer drawn from it, so equal seeds and actions give bit-identical observations.

``step`` sends the action's DBW messages, advances the physics ``120 / control_hz`` ticks in one call and
returns ``(obs, reward, terminated, truncated, info)``:

- ``terminated``: the vehicle rolled over (``info["rolled_over"]``), the simulation diverged
  (``info["diverged"]``, a numerical failure, never silent NaNs: the observation stays finite), the vehicle
  left the path corridor (``info["off_course"]``) or the terrain (``info["off_terrain"]``), or reached the
  end of its path (``info["path_complete"]``);
- ``truncated``: ``max_episode_s`` elapsed without termination (the environment truncates by its config,
  however it was made; ``spec.max_episode_steps`` states the length in steps).

``info`` always holds: ``reward_terms`` (each weighted term; they sum to the reward), the five flags
above, ``time_s``, ``speed_mps`` (true forward speed), ``target_speed_mps``, ``lateral_error_m``,
``heading_error_rad``, and the episode's running figures ``episode_return``, ``episode_steps``,
``distance_m``, ``fuel_used_g``, ``speed_rmse_mps``, ``lateral_rmse_m``, ``fuel_g_per_km``. After a reset
it also holds ``episode_seed`` and ``randomization`` (what was drawn: roughness, wetness, soil, payload,
biases, mass, the path's largest curvature).

NaN or inf in an action raises ``ValueError`` naming the component; values outside [-1, 1] are clipped.
After ``close()``, ``step``, ``reset`` and ``render`` raise ``gymnasium.error.ClosedEnvironmentError``.
``render_mode`` ``"human"`` opens a pygame window, ``"rgb_array"`` returns frames (``acres_gym.render``,
imported on first use); ``"human"`` without a display raises ``acres_gym.render.NoDisplayError`` (a
``RuntimeError``) at construction, naming ``"rgb_array"``, a virtual display and ``SDL_VIDEODRIVER=dummy``.
"""

from __future__ import annotations

import copy
from typing import Any, ClassVar

import gymnasium
import numpy as np
from gymnasium.error import ClosedEnvironmentError

from acres_gym.configuration import merge_configs
from acres_gym.constants import DRIVE_MODE_NAMES
from acres_gym.envs.config import load_config
from acres_gym.envs.core import RangerBatch
from acres_gym.runtime import compile_notice

SEED_HIGH = 2**63 - 1


def next_seed(generator: np.random.Generator) -> int:
    """The episode seed the next ``reset`` without a seed draws from ``generator`` (drawn from a copy: a bit
    generator of the same kind given the same state, half the cost of ``copy.deepcopy``)."""
    bit_generator = type(generator.bit_generator)(0)
    bit_generator.state = generator.bit_generator.state
    return int(np.random.Generator(bit_generator).integers(0, SEED_HIGH))


SPACE_KEYS = ("action_mode", "action_options", "observations")  # config keys that shape the spaces


def check_id_config(default: str | None, config: Any, cfg: dict) -> None:
    """An id fixes its task, spaces and config (``acres_gym.registration``): raise ``ValueError`` naming
    the key when ``cfg`` changes the task kind of the id whose own config is ``default``, or when
    ``config`` names another id's own task config and changes the spaces."""
    if not default:
        return
    from acres_gym.registration import ENVIRONMENTS, id_for_config

    base = load_config(default)
    if cfg.get("task") != base.get("task"):
        ids = [i for i, (name, _e, _v) in ENVIRONMENTS.items() if load_config(name).get("task") == cfg.get("task")]
        if ids:  # an unknown task name is left to make_task, which lists the known ones
            raise ValueError(f"config key 'task' = {cfg.get('task')!r}: the environment of the {default!r} config "
                             f"runs task {base.get('task')!r} and an id fixes its task; use {' or '.join(ids)}")
    if isinstance(config, str) and config != default:
        other = id_for_config(config)
        if other is None:
            return
        for key in SPACE_KEYS:
            if cfg.get(key) != base.get(key):
                raise ValueError(f"config={config!r} changes the spaces of the {default!r} environment (key {key!r}: "
                                 f"{base.get(key)!r} -> {cfg.get(key)!r}); use {other}")


def _action_options_for_mode(base: dict, user: dict, cfg: dict) -> Any:
    """The action options of ``cfg``. When the user's config or keywords choose an action mode other than the
    id's own, the id's own options that the chosen mode does not take (``ulc_speed_max_mps`` of a ULC mode
    when the user drives pedals) are left out; every option the user gives is still checked by the mode."""
    options = cfg.get("action_options")
    mode = user.get("action_mode")
    if not isinstance(options, dict) or mode is None or mode == base.get("action_mode"):
        return options
    from acres_gym.envs.actions import ACTION_MODES

    if mode not in ACTION_MODES:
        return options  # make_action_mode names the unknown mode
    own = base.get("action_options") or {}
    given = user.get("action_options") or {}
    accepted = ACTION_MODES[mode].option_defaults
    return {key: value for key, value in options.items() if key in given or key not in own or key in accepted}


def build_config(default: str | None, config: Any, overrides: dict, render_mode: str | None) -> dict:
    """The task config of an environment: default, then ``config``, then keyword overrides (checked by
    ``check_id_config``)."""
    base = load_config(default) if default else {}
    user = merge_configs(load_config(config), overrides)
    cfg = merge_configs(base, user)
    if "action_options" in cfg:
        cfg["action_options"] = _action_options_for_mode(base, user, cfg)
    check_id_config(default, config, cfg)
    if render_mode is not None:
        cfg["render_mode"] = render_mode
    return cfg


class RenderHelper:
    """Draws vehicle ``i`` of a ``RangerBatch`` with ``acres_gym.render`` (imported lazily)."""

    @staticmethod
    def check(mode: str | None) -> None:
        """At construction: ``render_mode="human"`` without a display raises ``NoDisplayError`` naming the
        remedies (``rgb_array``, a virtual display, ``SDL_VIDEODRIVER=dummy``)."""
        if mode == "human":
            from acres_gym.render import check_display

            check_display(mode)

    def __init__(self, batch: RangerBatch, mode: str, options: dict) -> None:
        self.batch = batch
        self.mode = mode
        self.options = dict(options)
        self.views: dict[int, Any] = {}  # vehicle -> its TopDownRenderer (own static layer and trail)
        self._terrain_keys: dict[int, int] = {}

    @property
    def renderer(self):
        """The renderer of vehicle 0 (the window in ``human`` mode)."""
        return self._view(0)

    def _view(self, i: int):
        view = self.views.get(i)
        if view is None:
            from acres_gym.render import MAX_BACKGROUND_PIXELS, TopDownRenderer

            # one window (vehicle 0); the static layers of N vehicles share one pixel budget
            view = self.views[i] = TopDownRenderer(
                mode=self.mode if i == 0 else "rgb_array", fps=self.batch.control_hz,
                max_background_pixels=MAX_BACKGROUND_PIXELS // self.batch.n, **self.options)
        return view

    def frame(self, i: int = 0) -> np.ndarray | None:
        b = self.batch
        view = self._view(i)
        f = b.frame
        shown = b.task.view(i, f.task)
        if self._terrain_keys.get(i) != int(b.episode_seed[i]):
            names = b.sim.terrain.surfaces.names
            soil = b.summaries[i].get("soil")
            labels = {n: soil for n in names if soil and n.startswith("episode_soil_")}
            view.set_terrain(b.sim.terrain.terrain(i), labels=labels, no_go=shown.no_go)
            self._terrain_keys[i] = int(b.episode_seed[i])
        s = b.sim.state[i]
        p = b.sim.params[i]
        gear_names = {1: "P", 2: "R", 3: "N", 4: "H", 5: "L"}
        hud = [
            f"t {b.steps[i] * b.dt_s:5.1f} s",
            f"speed  {f.speed_mps[i]:5.2f} m/s",
            *shown.hud,
            f"rpm {float(s.engine_rpm):5.0f}  range {gear_names.get(int(s.gear), '?')}  "
            f"{DRIVE_MODE_NAMES.get(int(s.drive_mode), '?').upper()}",
            f"wheel {float(s.steering_wheel_deg):6.1f} deg",
            self._ground_line(i, s),
            f"reward {b.last_reward[i]:+6.3f}  return {b.stats['return'][i]:+8.2f}",
        ]
        return view.draw(
            axle_xy=(float(f.axle_x_m[i]), float(f.axle_y_m[i])), yaw_rad=float(f.yaw_rad[i]),
            wheelbase_m=float(p.wheelbase_m), track_front_m=float(p.track_front_m),
            track_rear_m=float(p.track_rear_m), road_wheel_rad=np.asarray(s.road_wheel_angle_rad, dtype=float),
            path_xy=shown.path_xy, target_xy=shown.target_xy, goal_xy=shown.goal_xy,
            goal_radius_m=shown.goal_radius_m, local_map=shown.local_map, map_channels=shown.map_channels,
            map_vehicle_rc=shown.map_vehicle_rc,
            hud=hud, time_s=float(s.time_s), wheel_slip=np.asarray(s.slip_ratio, dtype=float),
            wheel_sinkage_m=np.asarray(s.sinkage_m, dtype=float), wheel_in_contact=np.asarray(s.in_contact, bool),
            throttle_pct=float(s.throttle_pedal_pct), brake_frac=float(s.brake_output_bar) / float(p.brake_max_bar),
            steer_frac=float(s.steering_wheel_deg) / float(p.steer_lock_deg),
        )

    def _ground_line(self, i: int, s) -> str:
        """The surfaces under the four wheels (FL FR / RL RR, "-" airborne; the episode's soil by its name)
        and the deepest soil sinkage."""
        names = self.batch.sim.terrain.surfaces.names
        soil = self.batch.summaries[i].get("soil", "soil")
        under = [("-" if not contact else soil if names[int(sid)].startswith("episode_soil_") else names[int(sid)])
                 for sid, contact in zip(s.surface_id, s.in_contact, strict=True)]
        text = f"{under[0]} {under[1]} / {under[2]} {under[3]}" if len(set(under)) > 1 else under[0]
        sinkage_cm = 100.0 * float(np.max(s.sinkage_m))
        return f"{text}, sinkage {sinkage_cm:.1f} cm" if sinkage_cm >= 0.05 else text

    def close(self) -> None:
        for view in self.views.values():
            view.close()
        self.views.clear()


class BatchViews:
    """What ``RangerEnv`` and ``RangerVectorEnv`` expose of their ``RangerBatch`` (``_batch``) and renderer
    (``_render``)."""

    _batch: RangerBatch
    _render: RenderHelper | None

    @property
    def sim(self):
        """The underlying ``RangerSim`` (N vehicles; one for ``RangerEnv``)."""
        return self._batch.sim

    @property
    def action_mode(self):
        """The action mode (``acres_gym.envs.actions``): ``decode`` / ``encode`` between actions and DBW units."""
        return self._batch.action_mode

    @property
    def pregen(self):
        """The ``Pregenerator`` preparing the next episodes in a background thread
        (``acres_gym.envs.pregen``; ``pregen.max_pending = 0`` turns it off)."""
        return self._batch.pregen

    @property
    def task(self):
        """The task (an ``acres_gym.envs.tasks.Task``): the path and speed profile, or the goal, of the episode."""
        return self._batch.task

    @property
    def spec(self):
        """The ``EnvSpec`` that ``gymnasium.make`` / ``make_vec`` set, with ``max_episode_steps`` the episode
        length of this environment's config (``max_episode_s`` x ``control_hz``; the ids register none, so
        no ``TimeLimit`` overrides the config: ``acres_gym.registration``)."""
        return self.__dict__.get("_spec")

    @spec.setter
    def spec(self, value) -> None:
        if value is not None and value.max_episode_steps != self._batch.max_steps:
            value = copy.copy(value)
            value.max_episode_steps = self._batch.max_steps
        self.__dict__["_spec"] = value

    def _refuse_if_closed(self, method: str) -> None:
        """``ClosedEnvironmentError`` (gymnasium's) naming ``method`` once ``close()`` has run: a closed
        environment has released its renderer and its episode pre-generation, and steps nothing."""
        if getattr(self, "closed", False):
            raise ClosedEnvironmentError(f"{type(self).__name__}.{method}() called after close(); the environment "
                                         "is closed: make a new one")

    @property
    def window_closed(self) -> bool:
        """True once the user closed the ``human`` render window (a viewing loop's cue to stop)."""
        return self._render is not None and self._render.renderer.closed


class RangerEnv(BatchViews, gymnasium.Env):
    """The Ranger under DBW control on a task (see the module docstring; tasks: ``acres_gym.envs.tasks``).

    Args:
        config: a task config dict, a name under ``configs/tasks`` or a YAML path, merged over
            ``default_config``.
        render_mode: None, ``"human"`` or ``"rgb_array"``.
        **overrides: top-level config keys (``control_hz=10``, ``rewards={...}``), merged last.
    """

    metadata: ClassVar[dict[str, Any]] = {"render_modes": ["human", "rgb_array"], "render_fps": 20}
    default_config: ClassVar[str | None] = None

    def __init__(self, config: Any = None, render_mode: str | None = None, **overrides: Any) -> None:
        cfg = build_config(self.default_config, config, overrides, render_mode)
        RenderHelper.check(cfg.get("render_mode"))
        self._batch = RangerBatch(cfg, 1)
        self.config = self._batch.resolved_config()
        self.render_mode = self.config["render_mode"]
        self.observation_space = self._batch.observation_space
        self.action_space = self._batch.action_space
        self.metadata = {**type(self).metadata, "render_fps": self._batch.control_hz}
        self.control_hz = self._batch.control_hz
        self.max_episode_steps = self._batch.max_steps
        self._render: RenderHelper | None = None
        self._has_reset = False
        self.closed = False

    # --- Gymnasium API -------------------------------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict | None = None):
        self._refuse_if_closed("reset")
        super().reset(seed=seed)
        if options:
            raise ValueError(f"reset options {sorted(options)} are not supported; configure the episode "
                             "through the task config")
        episode_seed = int(self.np_random.integers(0, SEED_HIGH))
        self._batch.reset_rows(np.ones(1, dtype=bool), [episode_seed])
        self._has_reset = True
        info = self._info()
        info["episode_seed"] = episode_seed
        info["randomization"] = dict(self._batch.summaries[0])
        if self.render_mode == "human":
            self.render()
        obs = self._obs()
        self._batch.prepare_next(0, next_seed(self.np_random))  # the next episode, drawn while this one runs
        compile_notice.report()
        return obs, info

    def step(self, action):
        self._refuse_if_closed("step")
        if not self._has_reset:
            raise RuntimeError("RangerEnv.step() called before reset(); call env.reset(seed=...) first")
        reward, terminated, truncated = self._batch.step(action)
        obs = self._obs()
        info = self._info()
        if self.render_mode == "human":
            self.render()
        compile_notice.report()
        return obs, float(reward[0]), bool(terminated[0]), bool(truncated[0]), info

    def render(self):
        if self.render_mode is None:
            gymnasium.logger.warn("render() called without a render_mode; pass render_mode='rgb_array' or "
                                  "'human' to the constructor (or gymnasium.make)")
            return None
        self._refuse_if_closed("render")
        if not self._has_reset:
            raise RuntimeError("render() called before reset()")
        if self._render is None:
            self._render = RenderHelper(self._batch, self.render_mode, self.config["render"])
        return self._render.frame(0)

    def close(self):
        """Release the renderer and the episode pre-generation; ``step``, ``reset`` and ``render`` then raise
        ``gymnasium.error.ClosedEnvironmentError``. Closing again does nothing."""
        if self._render is not None:
            self._render.close()
            self._render = None
        self._batch.pregen.close()
        self.closed = True

    # --- helpers -------------------------------------------------------------------------------------
    def _obs(self) -> dict[str, np.ndarray]:
        return self._batch.observe(0)

    def _info(self) -> dict[str, Any]:
        return self._batch.info_row(0)

    def __getstate__(self):
        state = self.__dict__.copy()
        state["_render"] = None
        return state
