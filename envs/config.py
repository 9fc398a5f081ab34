"""Task configs: reading, merging and checking the dicts (or YAML files) that configure a ``RangerEnv``.

A task config is a dict with these top-level keys (every one optional except ``task``):

==================== ====================================================================================
``task``             the task name: ``speed_tracking``, ``path_following`` or ``offroad_navigation``
                     (``acres_gym.envs.tasks.path_speed.TASKS``)
``task_options``     the task's own options (reference speed profile, path, termination limits)
``vehicle``          a vehicle name under ``configs/vehicles`` (default ``polaris_ranger_crew_xp1000``)
``vehicle_overrides`` dotted parameter keys applied to the vehicle (``{"mass.occupants": 2}``)
``vehicle_overlay``  null, or a JSON file (or dict) of fitted values in the vehicle file's form, applied
                     before the overrides (what ``acres-calibrate`` writes; ``params.read_overlay``)
``control_hz``       control rate; must divide the 120 Hz physics rate and be >= 10 Hz (the DBW command
                     timeout is 0.1 s): 10, 12, 15, 20, 24, 30, 40, 60 or 120 (default 20)
``max_episode_s``    episode length in simulated seconds: the episode is truncated after it (default 30; at
                     most ``MAX_EPISODE_S``, an hour, and the episode's path must fit the terrain grid)
``action_mode``      an action mode of ``acres_gym.envs.actions.ACTION_MODES`` (default ``curvature+ulc_velocity``)
``action_options``   the action mode's own options (ranges, rate limits)
``observations``     a list of observation names (``acres_gym.envs.observations``); null = the task's default set
``rewards``          ``{term: {weight: w, <term parameters>}}`` (``acres_gym.envs.rewards``); a term set to null is
                     removed from a merged config
``randomization``    per-episode randomisation (``acres_gym.envs.randomization``): terrain, patches, wetness, soil,
                     payload, biases
``render_mode``      null, ``human`` or ``rgb_array`` (the constructor's ``render_mode`` wins when given)
``render``           renderer options: ``width``, ``height``, ``pixels_per_m``
==================== ====================================================================================

A file under ``configs/tasks`` may also declare the Gymnasium id it registers, ``id: RangerHillClimb-v2``
(``acres_gym.registration``); ``load_config`` leaves that declaration out of the config it returns, so it
never reaches an environment. Keys starting with ``_`` are comments and ignored. Any other unknown key, at any
level, is an error that names the key and lists the allowed ones: a typo never passes silently.

``load_config(config)`` accepts a dict, the name of a file under ``configs/tasks`` (``"speed_tracking"``),
or a path to a YAML file; ``merge_configs(base, override)`` merges an override into a base config (dicts
merge key by key, except surface weights and soil ranges; anything else is replaced). The helpers for any
config mapping (reading YAML, merging, ``--set`` overrides, checking keys and numbers) are
``acres_gym.configuration``'s, which the training reads too; they are also named here.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from acres_gym import paths
from acres_gym.configuration import (  # noqa: F401  (the shared helpers, also named here)
    REPLACED_MAPPINGS,
    check_keys,
    dotted_overrides,
    draw_in_range,
    merge_configs,
    number,
    number_range,
    read_yaml,
    strip_comments,
)
from acres_gym.constants import PHYSICS_HZ
from acres_gym.registration import ID_KEY

TASKS_SUBDIR = "tasks"

TOP_LEVEL_DEFAULTS: dict[str, Any] = {
    "task": None,
    "task_options": {},
    "vehicle": "polaris_ranger_crew_xp1000",
    "vehicle_overrides": {},
    "vehicle_overlay": None,
    "control_hz": 20,
    "max_episode_s": 30.0,
    "action_mode": "curvature+ulc_velocity",
    "action_options": {},
    "observations": None,
    "rewards": {},
    "randomization": {},
    "render_mode": None,
    "render": {},
}

RENDER_MODES = (None, "human", "rgb_array")
RENDER_DEFAULTS = {"width": 640, "height": 480, "pixels_per_m": 8.0}
MIN_CONTROL_HZ = 10
MAX_EPISODE_S = 3600.0
"""The longest episode, s: its target profile (one value per control step) and path are drawn at reset."""
ALLOWED_CONTROL_HZ = tuple(hz for hz in range(MIN_CONTROL_HZ, PHYSICS_HZ + 1) if PHYSICS_HZ % hz == 0)


def tasks_dir() -> Path:
    """Directory of the task configs (``<config dir>/tasks``)."""
    return paths.config_dir() / TASKS_SUBDIR


def available_task_configs() -> list[str]:
    """Names of the task config files (``configs/tasks/<name>.yaml``), sorted."""
    folder = tasks_dir()
    return sorted(p.stem for p in folder.glob("*.yaml")) if folder.is_dir() else []


def task_config_path(name_or_path: str | Path) -> Path:
    """The file of a task config given by name (``configs/tasks/<name>.yaml``) or by path."""
    text = str(name_or_path)
    if isinstance(name_or_path, Path) or text.endswith((".yaml", ".yml")) or "/" in text or "\\" in text:
        return Path(name_or_path)
    path = tasks_dir() / f"{text}.yaml"
    if not path.exists():
        listed = ", ".join(available_task_configs()) or "none"
        raise ValueError(f"unknown task config {text!r}: no {path}; available task configs: {listed}")
    return path


def load_config(config: str | Path | Mapping | None) -> dict:
    """A task config as a dict (deep copy): from a dict, a task config name or a YAML path (a file's ``id``
    declaration left out)."""
    if config is None:
        return {}
    if isinstance(config, Mapping):
        return copy.deepcopy(dict(config))
    if isinstance(config, (str, Path)):
        data = read_yaml(task_config_path(config))
        data.pop(ID_KEY, None)  # the file's registration (acres_gym.registration), not an environment setting
        return data
    raise TypeError(f"config: expected a dict, a task config name or a YAML path, got {type(config).__name__}")


def check_control_hz(value: Any) -> int:
    """The control rate as an int; ``ValueError`` naming ``control_hz`` and the allowed values otherwise."""
    allowed = ", ".join(map(str, ALLOWED_CONTROL_HZ))
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != int(value):
        raise ValueError(f"control_hz = {value!r}: expected an integer rate in Hz; allowed: {allowed}")
    hz = int(value)
    if hz < MIN_CONTROL_HZ:
        raise ValueError(
            f"control_hz = {hz} is below {MIN_CONTROL_HZ} Hz: the DBW layer drops a subsystem whose command "
            f"is older than 0.1 s, so commands must be re-sent at least every 0.1 s; allowed: {allowed}")
    if hz not in ALLOWED_CONTROL_HZ:
        raise ValueError(f"control_hz = {hz}: a control step must be a whole number of 1/{PHYSICS_HZ} s "
                         f"physics ticks ({PHYSICS_HZ} / control_hz an integer); allowed: {allowed}")
    return hz


def resolve_top_level(config: Mapping) -> dict:
    """Check the top-level keys and fill the defaults of a task config (sections are checked by their
    owners: the task, the action mode, the reward terms, the randomisation)."""
    if not isinstance(config, Mapping):
        raise TypeError(f"task config: expected a dict, got {type(config).__name__}")
    check_keys("task config", config, TOP_LEVEL_DEFAULTS)
    out = merge_configs(TOP_LEVEL_DEFAULTS, strip_comments(config))
    if out["task"] is None:
        raise ValueError("task config: missing key 'task' (the task name, e.g. 'speed_tracking')")
    out["control_hz"] = check_control_hz(out["control_hz"])
    out["max_episode_s"] = number("max_episode_s", out["max_episode_s"], 0.0, MAX_EPISODE_S, lo_open=True)
    if out["render_mode"] not in RENDER_MODES:
        raise ValueError(f"render_mode = {out['render_mode']!r}; allowed: None, 'human', 'rgb_array'")
    for key in ("task_options", "vehicle_overrides", "action_options", "rewards", "randomization", "render"):
        if out[key] is None:
            out[key] = {}
        if not isinstance(out[key], Mapping):
            raise ValueError(f"task config: {key!r} must be a mapping, got {type(out[key]).__name__}")
    check_keys("render", out["render"], RENDER_DEFAULTS)
    out["render"] = {**RENDER_DEFAULTS, **strip_comments(out["render"])}
    out["render"]["width"] = number("render.width", out["render"]["width"], 16, 8192, integer=True)
    out["render"]["height"] = number("render.height", out["render"]["height"], 16, 8192, integer=True)
    out["render"]["pixels_per_m"] = number("render.pixels_per_m", out["render"]["pixels_per_m"], 0.05, 500.0)
    if not isinstance(out["vehicle"], str):
        raise ValueError(f"vehicle = {out['vehicle']!r}: expected a vehicle name")
    overlay = out["vehicle_overlay"]
    if overlay is not None and not isinstance(overlay, (str, Path, Mapping)):
        raise ValueError(f"vehicle_overlay = {overlay!r}: expected null, a JSON file path or a mapping")
    if out["observations"] is not None:
        obs = out["observations"]
        if isinstance(obs, str) or not isinstance(obs, (list, tuple)):
            raise ValueError(f"observations = {obs!r}: expected a list of observation names or null")
        out["observations"] = list(obs)
    return out


