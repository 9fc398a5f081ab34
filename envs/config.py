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

Keys starting with ``_`` are comments and ignored. Any other unknown key, at any level, is an error that
names the key and lists the allowed ones: a typo never passes silently.

``load_config(config)`` accepts a dict, the name of a file under ``configs/tasks`` (``"speed_tracking"``),
or a path to a YAML file; ``merge_configs(base, override)`` merges an override into a base config (dicts
merge key by key, except surface weights and soil ranges; anything else is replaced).
"""

from __future__ import annotations

import copy
import difflib
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import yaml

from acres_gym import paths
from acres_gym.constants import PHYSICS_HZ

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


def _suggest(key: str, allowed: Iterable[str]) -> str:
    close = difflib.get_close_matches(str(key), [str(a) for a in allowed], n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def check_keys(where: str, given: Mapping, allowed: Iterable[str]) -> None:
    """Raise ``ValueError`` naming the first unknown key of ``given`` (keys starting with ``_`` are comments)
    and listing the allowed keys."""
    allowed = list(allowed)
    for key in given:
        if isinstance(key, str) and key.startswith("_"):
            continue
        if key not in allowed:
            raise ValueError(f"{where}: unknown key {key!r}{_suggest(key, allowed)}; allowed keys: "
                             f"{', '.join(map(str, allowed))}")


def strip_comments(mapping: Mapping) -> dict:
    """A copy of ``mapping`` without the keys starting with ``_``."""
    return {k: v for k, v in mapping.items() if not (isinstance(k, str) and k.startswith("_"))}


def read_yaml(path: str | Path) -> dict:
    """A YAML file holding a mapping, as a dict."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise FileNotFoundError(f"config file {path} does not exist") from None
    data = yaml.safe_load(text)
    if data is None:
        return {}
    if not isinstance(data, Mapping):
        raise ValueError(f"{path}: expected a mapping at the top level, got {type(data).__name__}")
    return dict(data)


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
    """A task config as a dict (deep copy): from a dict, a task config name or a YAML path."""
    if config is None:
        return {}
    if isinstance(config, Mapping):
        return copy.deepcopy(dict(config))
    if isinstance(config, (str, Path)):
        return read_yaml(task_config_path(config))
    raise TypeError(f"config: expected a dict, a task config name or a YAML path, got {type(config).__name__}")


REPLACED_MAPPINGS = ("surfaces", "scale")
"""Keys whose mappings are data (surface weights, soil ranges), replaced whole by an override."""


def merge_configs(base: Mapping, override: Mapping) -> dict:
    """``override`` merged into ``base`` (copies): nested dicts merge key by key, except the data mappings
    of ``REPLACED_MAPPINGS`` (``patches.surfaces``, ``soil.scale``), which an override replaces whole; other
    values, lists included, replace; a key set to ``None`` inside ``rewards`` removes that term."""
    out = copy.deepcopy(dict(base))
    for key, value in override.items():
        if key in REPLACED_MAPPINGS:
            out[key] = copy.deepcopy(value)
            continue
        if key == "rewards" and isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            merged = dict(out[key])
            for term, params in value.items():
                if params is None:
                    merged.pop(term, None)
                elif isinstance(params, Mapping) and isinstance(merged.get(term), Mapping):
                    merged[term] = merge_configs(merged[term], params)
                else:
                    merged[term] = copy.deepcopy(params)
            out[key] = merged
        elif isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = merge_configs(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def dotted_overrides(assignments: Iterable[str], where: str = "--set") -> dict:
    """Nested overrides from ``key.sub.key=value`` assignments (command lines): the value is read as YAML
    (``20``, ``[0, 15]``, ``null``, ``{grass: 1}``, ``curvature+ulc_velocity``), the dotted key becomes
    nested dicts. ``["randomization.terrain.grade_pct=[0, 15]", "control_hz=10"]`` gives
    ``{"randomization": {"terrain": {"grade_pct": [0, 15]}}, "control_hz": 10}``; merge it with
    ``merge_configs``. A malformed assignment raises ``ValueError`` quoting it."""
    out: dict = {}
    for text in assignments:
        key, sep, raw = str(text).partition("=")
        parts = key.strip().split(".")
        if not sep or not all(p.strip() for p in parts):
            raise ValueError(f"{where} {text!r}: expected key.sub.key=value, e.g. "
                             "randomization.terrain.grade_pct=[0,15]")
        try:
            value = yaml.safe_load(raw) if raw.strip() else None
        except yaml.YAMLError as exc:
            raise ValueError(f"{where} {text!r}: the value is not valid YAML ({exc.problem})") from None
        node = out
        for part in parts[:-1]:
            child = node.setdefault(part.strip(), {})
            if not isinstance(child, dict):
                raise ValueError(f"{where} {text!r}: {part.strip()!r} is already set to a value, not a section")
            node = child
        node[parts[-1].strip()] = value
    return out


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


def number(where: str, value: Any, lo: float = float("-inf"), hi: float = float("inf"), *,
           integer: bool = False, lo_open: bool = False) -> float:
    """A finite number within [lo, hi] (or (lo, hi] with ``lo_open``); ``ValueError`` naming ``where``."""
    import math

    kind = "an integer" if integer else "a number"
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{where} = {value!r}: expected {kind} in {'(' if lo_open else '['}{lo}, {hi}]")
    value = float(value)
    ok = math.isfinite(value) and (value > lo if lo_open else value >= lo) and value <= hi
    if integer and ok:
        ok = value == int(value)
    if not ok:
        raise ValueError(f"{where} = {value!r}: expected {kind} in {'(' if lo_open else '['}{lo}, {hi}]")
    return int(value) if integer else value


def number_range(where: str, value: Any, lo: float = float("-inf"), hi: float = float("inf"), *,
                 integer: bool = False) -> tuple[float, float]:
    """A number (a fixed value) or ``[low, high]`` (a uniform range) within [lo, hi], as a pair."""
    if isinstance(value, (list, tuple)):
        if len(value) != 2:
            raise ValueError(f"{where} = {value!r}: expected a number or a range [low, high]")
        a = number(f"{where}[0]", value[0], lo, hi, integer=integer)
        b = number(f"{where}[1]", value[1], lo, hi, integer=integer)
        if b < a:
            raise ValueError(f"{where} = {value!r}: the range [low, high] needs low <= high")
        return a, b
    v = number(where, value, lo, hi, integer=integer)
    return v, v


def draw_in_range(rng, pair) -> float:
    """A uniform draw from a ``number_range`` pair ``[low, high]``, or ``low`` without a draw when the range
    is a single value (so a fixed value consumes nothing from the generator)."""
    lo, hi = pair
    return float(rng.uniform(lo, hi)) if hi > lo else float(lo)


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


def plain(value: Any) -> Any:
    """``value`` with tuples as lists and numpy scalars as Python numbers (for YAML dumps)."""
    import numpy as np

    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    return value
