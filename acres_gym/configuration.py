"""Config mappings, for the environments and the training alike: reading a YAML file (``read_yaml``, with
``3e-4`` a number as in YAML 1.2), merging an override into a base (``merge_configs``), ``key.sub=value``
overrides of a command line (``dotted_overrides``) and ``--seed`` values (``seed_argument``), checking keys and
numbers with errors that name the key, the value and what is allowed (``check_keys``, ``check_counts``,
``number``, ``number_range``), drawing from a checked range (``draw_in_range``), and values made ready for a
YAML or JSON dump (``to_builtins``). Keys starting with ``_`` are comments (``strip_comments``)."""

from __future__ import annotations

import copy
import difflib
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import yaml


class Loader(yaml.SafeLoader):
    """PyYAML's safe loader that also reads ``3e-4`` and ``1E5`` as numbers, as YAML 1.2 does (YAML 1.1, which
    PyYAML follows, needs a dot: ``3.0e-4``; without this a learning rate written ``3e-4`` became a string)."""


Loader.add_implicit_resolver(
    "tag:yaml.org,2002:float", re.compile(r"^[-+]?[0-9][0-9_]*[eE][-+]?[0-9]+$"), list("-+0123456789"))


def load_yaml(text: str) -> Any:
    """``text`` as YAML with ``Loader`` (safe; exponents without a dot are numbers)."""
    return yaml.load(text, Loader=Loader)  # noqa: S506  (a safe loader)


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
    data = load_yaml(text)
    if data is None:
        return {}
    if not isinstance(data, Mapping):
        raise ValueError(f"{path}: expected a mapping at the top level, got {type(data).__name__}")
    return dict(data)


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
            value = load_yaml(raw) if raw.strip() else None
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


MAX_SEED = 2**32 - 1  # the largest seed every consumer takes (numpy's legacy seeding, which SB3 and Ray use)


def seed_argument(text: str) -> int:
    """An argparse ``type`` for ``--seed``: an integer from 0 to ``MAX_SEED``, else an error naming the range
    (Gymnasium refuses negative seeds, SB3 and Ray seeds above ``MAX_SEED``, each with a traceback)."""
    try:
        value = int(text)
    except ValueError:
        value = None
    if value is None or not 0 <= value <= MAX_SEED:
        import argparse

        raise argparse.ArgumentTypeError(f"{text!r}: expected an integer from 0 to {MAX_SEED}")
    return value


def check_counts(cfg: Mapping, counts: Mapping[str, tuple[int, int | None, str]]) -> dict[str, int]:
    """Integer keys of a config within their range, ``{key: (least, most or None, what the key counts)}``, as
    ints (a whole float such as YAML's ``2e5`` too); else a ``ValueError`` naming the key, its value, the range
    and the meaning."""
    checked = {}
    for key, (least, most, meaning) in counts.items():
        value = cfg[key]
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if (isinstance(value, bool) or not isinstance(value, int) or value < least
                or (most is not None and value > most)):
            allowed = f">= {least}" if most is None else f"from {least} to {most}"
            raise ValueError(f"{key} = {cfg[key]!r}: expected an integer {allowed} ({meaning})")
        checked[key] = value
    return checked


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


def to_builtins(value: Any) -> Any:
    """``value`` with tuples as lists and numpy scalars as Python numbers (for YAML dumps)."""
    import numpy as np

    if isinstance(value, Mapping):
        return {str(k): to_builtins(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_builtins(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    return value
