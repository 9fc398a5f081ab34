"""Vehicle parameters: load, set, validate and finalise the Ranger's parameter record.

This is the seed's parameter path (``seeds/002_*.txt``): ``FUtvParameters`` / ``FDbwParameters`` are
loaded from a JSON file key by key (``SetUtvParameter``), then completed by ``FinalizeUtvParameters``,
which derives the mass properties and the per-corner wheel parameter set. The schema of every value
(JSON key, record field, unit, allowed range) is ``acres_gym.schema``; this module is its behaviour.

The record is one element of a numpy structured array of ``PARAMS_DTYPE`` (an ``np.record``: attribute
access, writes go through to its array), so the same object feeds the jitted kernels; a batch of
vehicles is a contiguous ``np.recarray`` of shape ``(n,)`` (``make_params_array``).

Typical use::

    from acres_gym.params import load_vehicle, set_parameter, finalize_parameters

    p = load_vehicle("polaris_ranger_crew_xp1000", overrides={"mass.occupants": 2})
    set_parameter(p, "dbw.steering.delay_s", 0.08)
    finalize_parameters(p)          # after changing primary values, derive again

The vehicle file is nested JSON following the dotted keys; every leaf is
``{"value": ..., "unit": ..., "source": ...}`` and keys starting with ``_`` are comments. The torque
curve is two list leaves, ``engine.torque_curve_rpm`` and ``engine.torque_curve_nm``.
"""

from __future__ import annotations

import difflib
import functools
import json
import math
import re
import warnings
from collections.abc import Mapping, Sequence
from numbers import Integral, Real
from os import PathLike
from pathlib import Path
from typing import Any

import numpy as np
from numba import njit

from acres_gym import paths
from acres_gym.constants import STANDARD_GRAVITY_MPS2
from acres_gym.model.mass_properties import LOAD_NOT_POSITIVE, MASS_NOT_POSITIVE, WRITTEN, derive_parameters
from acres_gym.records import structured_view
from acres_gym.schema import (
    DERIVED,
    MAX_TORQUE_POINTS,
    PARAMS_DTYPE,
    PARAMS_RECORD_DTYPE,
    POS,
    SCHEMA,
    SCHEMA_BY_KEY,
    TORQUE_CURVE_NM_KEY,
    TORQUE_CURVE_RPM_KEY,
    Param,
)

__all__ = [
    "UnknownVehicleError",
    "new_params",
    "load_vehicle",
    "read_vehicle_file",
    "read_overlay",
    "set_parameter",
    "set_parameters",
    "is_known_key",
    "finalize_parameters",
    "parameter_table",
    "params_to_dict",
    "make_params_array",
    "TORQUE_CURVE_UNITS",
    "TORQUE_CURVE_RANGES",
    "DERIVED_PREFIX",
]

# Units and value ranges of the torque-curve points (the rest is in SCHEMA).
TORQUE_CURVE_UNITS = {TORQUE_CURVE_RPM_KEY: "rpm", TORQUE_CURVE_NM_KEY: "N m"}
TORQUE_CURVE_RANGES = {TORQUE_CURVE_RPM_KEY: (0.0, 20000.0), TORQUE_CURVE_NM_KEY: (0.0, 5000.0)}
_CURVE_FIELDS = {TORQUE_CURVE_RPM_KEY: "torque_curve_rpm", TORQUE_CURVE_NM_KEY: "torque_curve_nm"}
_CURVE_INDEX_RE = re.compile(r"^(engine\.torque_curve_(?:rpm|nm))\[(-?\d+)\]$")

# Dotted-key prefix of the derived fields in parameter_table / params_to_dict.
DERIVED_PREFIX = "derived."

_LEAF_KEYS = ("value", "unit", "source")
_ALL_KEYS = tuple(p.key for p in SCHEMA) + (TORQUE_CURVE_RPM_KEY, TORQUE_CURVE_NM_KEY)


class UnknownVehicleError(FileNotFoundError, ValueError):
    """A vehicle name with no ``vehicles/<name>.json`` file (the message lists the available ones)."""


# ----------------------------------------------------------------------------------------------------
# Messages


def _num(x: float) -> str:
    """A number for messages: integers without a decimal point, others in ``%g``."""
    if isinstance(x, (bool, np.bool_)):
        return str(int(x))
    if isinstance(x, (Integral, np.integer)):
        return str(int(x))
    try:
        xf = float(x)
    except (TypeError, ValueError):
        return repr(x)
    if math.isfinite(xf) and xf == int(xf) and abs(xf) < 1e6:
        return str(int(xf))
    return f"{xf:g}"


def _value_repr(value: Any) -> str:
    if isinstance(value, (Real, np.number, np.bool_)):
        return _num(value)
    return repr(value)


def _unit_suffix(unit: str) -> str:
    return "" if unit in ("1", "") else f" {unit}"


@functools.lru_cache(maxsize=1024)
def _range_text(lo: float, hi: float, unit: str, kind: str = "f") -> str:
    """The allowed range as a phrase, e.g. ``a finite number in [100, 5000] rpm``."""
    if kind == "b":
        return "0 or 1 (boolean)"
    what = "an integer" if kind == "i" else "a finite number"
    left = "(0" if lo == POS else f"[{_num(lo)}"
    right = f"{_num(hi)})" if math.isinf(hi) else f"{_num(hi)}]"
    tail = " (enum)" if unit == "enum" else _unit_suffix(unit)
    return f"{what} in {left}, {right}{tail}"


def _suggest(key: str) -> str:
    close = difflib.get_close_matches(key, _ALL_KEYS, n=3, cutoff=0.6)
    return f" (did you mean {', '.join(close)}?)" if close else ""


# ----------------------------------------------------------------------------------------------------
# Value checks


def _as_number(key: str, value: Any, range_text: str) -> float:
    """``value`` as a finite float, else ``ValueError`` naming the key, the value and ``range_text``."""
    if isinstance(value, (str, bytes)) or not isinstance(value, (Real, np.number, np.bool_)):
        raise ValueError(f"{key} = {_value_repr(value)}: expected {range_text}")
    x = float(value)
    if not math.isfinite(x):
        raise ValueError(f"{key} = {_num(x)}: expected {range_text}")
    return x


def _check_value(param: Param, value: Any) -> float | int:
    """Validated value of one schema parameter: within ``[lo, hi]``, integral for int/bool kinds (the message,
    naming the allowed range, is built only for a value that fails)."""
    if type(value) in (float, int):  # what a record's item() and JSON numbers give: no type dispatch
        x = float(value)
    else:
        x = _as_number(param.key, value, _range_text(param.lo, param.hi, param.unit, param.kind))
    integral = param.kind in ("i", "b")
    if not (math.isfinite(x) and param.lo <= x <= param.hi) or (integral and x != int(x)):
        raise ValueError(f"{param.key} = {_num(x)}: expected "
                         f"{_range_text(param.lo, param.hi, param.unit, param.kind)}")
    return int(x) if integral else x


def _check_curve_value(key: str, index: int, value: Any) -> float:
    lo, hi = TORQUE_CURVE_RANGES[key]
    name = f"{key}[{index}]"
    text = _range_text(lo, hi, TORQUE_CURVE_UNITS[key])
    x = _as_number(name, value, text)
    if not (lo <= x <= hi):
        raise ValueError(f"{name} = {_num(x)}: expected {text}")
    return x


# ----------------------------------------------------------------------------------------------------
# Setting values (seed SetUtvParameter)


def new_params() -> np.record:
    """A zeroed parameter record (``np.record`` of ``PARAMS_DTYPE``, attribute access, writes through)."""
    return np.zeros(1, PARAMS_DTYPE).view(np.recarray)[0]


def is_known_key(key: str) -> bool:
    """Whether ``set_parameter`` knows ``key`` (a schema key, a torque-curve list or ``...[i]`` key)."""
    if key in SCHEMA_BY_KEY or key in _CURVE_FIELDS:
        return True
    return _CURVE_INDEX_RE.match(key) is not None


def _set_curve_point(params: np.record, key: str, index: int, value: Any) -> None:
    name = f"{key}[{index}]"
    if not (0 <= index < MAX_TORQUE_POINTS):
        raise ValueError(
            f"{name}: expected an index in [0, {MAX_TORQUE_POINTS - 1}] (MAX_TORQUE_POINTS = "
            f"{MAX_TORQUE_POINTS})"
        )
    count = int(params.torque_curve_count)
    if index > count:
        raise ValueError(
            f"{name}: expected an index in [0, {count}]: the curve has {count} points, so the next "
            f"point to add is [{count}]"
        )
    x = _check_curve_value(key, index, value)
    getattr(params, _CURVE_FIELDS[key])[index] = x
    if index == count:
        params.torque_curve_count = count + 1


def _set_curve_list(params: np.record, key: str, values: Sequence[Any]) -> None:
    n = len(values)
    if not (2 <= n <= MAX_TORQUE_POINTS):
        raise ValueError(f"{key}: expected a list of 2 to {MAX_TORQUE_POINTS} points, got {n}")
    checked = [_check_curve_value(key, i, v) for i, v in enumerate(values)]
    for field in _CURVE_FIELDS.values():  # points beyond the new length are cleared in both arrays
        getattr(params, field)[n:] = 0.0
    arr = getattr(params, _CURVE_FIELDS[key])
    arr[:n] = checked
    params.torque_curve_count = n


def set_parameter(params: np.record, key: str, value: Any) -> bool:
    """Set one parameter by its dotted JSON key (seed ``SetUtvParameter``).

    Keys are the JSON path of a value without the trailing ``.value``: ``"engine.idle_rpm"``,
    ``"dbw.steering.delay_s"``; a torque-curve point is ``"engine.torque_curve_rpm[i]"`` /
    ``"engine.torque_curve_nm[i]"`` (``i < MAX_TORQUE_POINTS``; setting ``i == torque_curve_count``
    appends a point), and the whole curve can be given as a list to ``"engine.torque_curve_rpm"`` /
    ``"engine.torque_curve_nm"`` (set both, with the same length). Booleans are stored as 0 / 1.

    Args:
        params: the parameter record, changed in place. Derived fields are not updated: call
            ``finalize_parameters`` after changing primary values.
        key: dotted key.
        value: a number (``True`` / ``False`` for booleans), or a list for a whole torque curve.

    Returns:
        True when the key is known. An unknown key changes nothing, issues one ``UserWarning`` naming
        it and returns False (the seed: "Unknown keys are reported, not fatal").

    Raises:
        ValueError: the value is not a finite number within the key's range (the message names the
            key, the value and the range with its unit), or an integer / boolean key got a
            non-integral value.
    """
    known = _set_one(params, key, value)
    if not known:
        warnings.warn(f"unknown vehicle parameter key {key!r}{_suggest(key)}", UserWarning, stacklevel=2)
    return known


def _set_one(params: np.record, key: str, value: Any) -> bool:
    param = SCHEMA_BY_KEY.get(key)
    if param is not None:
        setattr(params, param.field, _check_value(param, value))
        return True
    if key in _CURVE_FIELDS:
        if isinstance(value, (str, bytes)) or not isinstance(value, (Sequence, np.ndarray)):
            raise ValueError(f"{key} = {_value_repr(value)}: expected a list of 2 to {MAX_TORQUE_POINTS} "
                             f"points in {TORQUE_CURVE_UNITS[key]}")
        _set_curve_list(params, key, list(value))
        return True
    m = _CURVE_INDEX_RE.match(key)
    if m is not None:
        _set_curve_point(params, m.group(1), int(m.group(2)), value)
        return True
    return False


def _fields_of(keys) -> list[str]:
    """The record fields that setting the known ``keys`` writes (``_set_one``): a schema key's field; a
    torque-curve key's arrays and point count."""
    fields: dict[str, None] = {}
    for key in keys:
        param = SCHEMA_BY_KEY.get(key)
        if param is not None:
            fields[param.field] = None
        else:
            fields.update(dict.fromkeys([*_CURVE_FIELDS.values(), "torque_curve_count"]))
    return list(fields)


def set_parameters(params: np.record, mapping: Mapping[str, Any], *, all_or_nothing: bool = True) -> list[str]:
    """Set many parameters (``set_parameter`` per item, in the mapping's order).

    Unknown keys are skipped and reported together in ONE ``UserWarning``; this is what the JSON walk
    of ``load_vehicle`` uses. When both torque-curve lists are given they must have the same length.
    ``all_or_nothing=False`` writes each value straight into ``params`` instead of into a copy first, for a
    caller that discards the record when this raises.

    Returns:
        The unknown keys (empty when all were known).

    Raises:
        ValueError: as ``set_parameter`` for the first bad value; ``params`` is then left unchanged (unless
        ``all_or_nothing`` is False).
    """
    rpm, nm = mapping.get(TORQUE_CURVE_RPM_KEY), mapping.get(TORQUE_CURVE_NM_KEY)
    if rpm is not None and nm is not None:
        try:
            n_rpm, n_nm = len(rpm), len(nm)
        except TypeError:
            n_rpm = n_nm = -1  # reported by set_parameter
        if n_rpm != n_nm and min(n_rpm, n_nm) >= 0:
            raise ValueError(
                f"{TORQUE_CURVE_RPM_KEY} has {n_rpm} points but {TORQUE_CURVE_NM_KEY} has {n_nm}: "
                "expected lists of the same length"
            )
    staged = params.copy() if all_or_nothing else params  # all or nothing: a bad value leaves params unchanged
    unknown = [key for key, value in mapping.items() if not _set_one(staged, key, value)]
    if all_or_nothing:
        for name in _fields_of(key for key in mapping if key not in unknown):
            params[name] = staged[name]
    if unknown:
        listed = "; ".join(f"{k!r}{_suggest(k)}" for k in unknown)
        warnings.warn(f"unknown vehicle parameter keys, ignored: {listed}", UserWarning, stacklevel=2)
    return unknown


# ----------------------------------------------------------------------------------------------------
# Loading


def _flatten(node: Mapping[str, Any], prefix: str, out: dict[str, dict], where: str) -> None:
    """Collect the ``{value, unit, source}`` leaves of a nested vehicle file by dotted key."""
    for name, child in node.items():
        if not isinstance(name, str) or name.startswith("_"):
            continue  # comments such as "_about"
        key = f"{prefix}{name}"
        if isinstance(child, Mapping) and any(k in child for k in _LEAF_KEYS):
            missing = [k for k in _LEAF_KEYS if k not in child]
            if missing:
                raise ValueError(f"{where}: leaf {key} lacks {', '.join(missing)}: every leaf is "
                                 '{"value": ..., "unit": "...", "source": "..."}')
            source = child["source"]
            if not isinstance(source, str) or not source.strip():
                raise ValueError(f"{where}: leaf {key} has an empty source: say where the value comes from")
            if not isinstance(child["unit"], str):
                raise ValueError(f"{where}: leaf {key} has a unit that is not a string: {child['unit']!r}")
            out[key] = dict(child)
        elif isinstance(child, Mapping):
            _flatten(child, f"{key}.", out, where)
        else:
            raise ValueError(f"{where}: {key} = {child!r} is not a leaf: every leaf is "
                             '{"value": ..., "unit": "...", "source": "..."}')


def _expected_unit(key: str) -> str | None:
    if key in SCHEMA_BY_KEY:
        return SCHEMA_BY_KEY[key].unit
    return TORQUE_CURVE_UNITS.get(key)


def _read_json_object(path: Path) -> Mapping[str, Any]:
    """The JSON object in ``path``; ``ValueError`` naming the file if it is not valid JSON or not an object."""
    with path.open(encoding="utf-8") as f:
        try:
            doc = json.load(f)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{path}: not valid JSON: {exc}") from exc
    if not isinstance(doc, Mapping):
        raise ValueError(f"{path}: expected a JSON object at the top level")
    return doc


def read_vehicle_file(path: str | PathLike) -> dict[str, dict]:
    """Read a vehicle file into ``{dotted key: {"value", "unit", "source", ...}}`` (no validation of
    values; leaf shape, missing schema keys and units are checked).

    Raises:
        ValueError: a leaf lacks value / unit / source, a schema key is missing, or a unit differs
            from the schema's.
    """
    path = Path(path)
    doc = _read_json_object(path)
    leaves: dict[str, dict] = {}
    _flatten(doc, "", leaves, str(path))
    missing = [k for k in _ALL_KEYS if k not in leaves]
    if missing:
        raise ValueError(f"{path}: missing parameter keys: {', '.join(missing)}")
    bad_units = [
        f"{k} has unit {leaf['unit']!r}, expected {_expected_unit(k)!r}"
        for k, leaf in leaves.items()
        if _expected_unit(k) is not None and leaf["unit"] != _expected_unit(k)
    ]
    if bad_units:
        raise ValueError(f"{path}: " + "; ".join(bad_units))
    return leaves


def _resolve_vehicle_path(name_or_path: str | PathLike) -> Path:
    if isinstance(name_or_path, PathLike):
        return Path(name_or_path)
    text = str(name_or_path)
    if text.endswith(".json") or "/" in text or "\\" in text:
        return Path(text).expanduser()
    path = paths.vehicle_config_path(text)
    if not path.is_file():
        available = paths.available_vehicles()
        listed = ", ".join(available) if available else "none"
        raise UnknownVehicleError(
            f"unknown vehicle {text!r}: no {path}; available vehicles in {paths.vehicles_dir()}: {listed}"
        )
    return path


def read_overlay(overlay: str | PathLike | Mapping[str, Any]) -> dict[str, dict]:
    """Read a vehicle overlay into ``{dotted key: {"value", "unit", "source", ...}}``.

    An overlay is a part of a vehicle file: the same nesting and ``{"value", "unit", "source"}`` leaves,
    with any subset of the keys (``acres-calibrate`` writes one). ``overlay`` is a JSON file path or the
    parsed dict.

    Raises:
        ValueError: not valid JSON, a leaf lacks value / unit / source, an unknown key (named, with
            close matches) or a unit that differs from the schema's.
        FileNotFoundError: no such file.
    """
    if isinstance(overlay, Mapping):
        doc, where = overlay, "overlay"
    else:
        path = Path(overlay).expanduser()
        where = str(path)
        doc = _read_json_object(path)
    leaves: dict[str, dict] = {}
    _flatten(doc, "", leaves, where)
    unknown = [k for k in leaves if not is_known_key(k)]
    if unknown:
        raise ValueError(f"{where}: unknown keys: " + "; ".join(f"{k!r}{_suggest(k)}" for k in unknown))
    bad_units = [f"{k} has unit {leaf['unit']!r}, expected {_expected_unit(k)!r}" for k, leaf in leaves.items()
                 if _expected_unit(k) is not None and leaf["unit"] != _expected_unit(k)]
    if bad_units:
        raise ValueError(f"{where}: " + "; ".join(bad_units))
    return leaves


def load_vehicle(name_or_path: str | PathLike, overrides: Mapping[str, Any] | None = None,
                 overlay: str | PathLike | Mapping[str, Any] | None = None) -> np.record:
    """Load a vehicle parameter file and return its finalised parameter record.

    The seed's load path: every JSON value is set with ``set_parameter`` (unknown keys are reported in
    one warning, not fatal), then the ``overlay``'s values replace the file's, then ``overrides`` are
    applied, then ``finalize_parameters`` validates and derives (seed ``FinalizeUtvParameters``).

    Args:
        name_or_path: a vehicle name, looked up as ``vehicles/<name>.json`` in the config directory
            (``acres_gym.paths``; ``$ACRES_GYM_CONFIG_DIR`` overrides it), or a path to a JSON file
            (a ``Path``, or a string ending in ``.json`` or containing a separator).
        overrides: dotted key -> value, applied after the file and before finalising (same keys as
            ``set_parameter``, including whole torque-curve lists). An unknown override key is an
            error (a typo in code should not pass unnoticed).

    Returns:
        An ``np.record`` of ``PARAMS_DTYPE`` (attribute access; writes go through).

    Raises:
        UnknownVehicleError: no file for that name (a ``FileNotFoundError`` and ``ValueError``; the
            message lists the available vehicles).
        FileNotFoundError: a given path does not exist.
        ValueError: a schema key is missing from the file, a leaf lacks value / unit / source, a unit
            differs from the schema's, a value is out of range, an override key is unknown, or a
            cross-check of ``finalize_parameters`` fails.

    ``overlay``: a part of a vehicle file (``read_overlay``: a JSON path or a dict), for example the
    fitted values ``acres-calibrate`` writes.
    """
    path = _resolve_vehicle_path(name_or_path)
    leaves = read_vehicle_file(path)
    params = new_params()
    values = {key: leaf["value"] for key, leaf in leaves.items()}
    try:
        set_parameters(params, values)
    except ValueError as exc:
        raise ValueError(f"{path}: {exc}") from None
    if overlay is not None:
        leaves = read_overlay(overlay)
        try:
            set_parameters(params, {key: leaf["value"] for key, leaf in leaves.items()})
        except ValueError as exc:
            where = "overlay" if isinstance(overlay, Mapping) else str(overlay)
            raise ValueError(f"{where}: {exc}") from None
    if overrides:
        unknown = [k for k in overrides if not is_known_key(k)]
        if unknown:
            listed = "; ".join(f"{k!r}{_suggest(k)}" for k in unknown)
            raise ValueError(f"unknown override keys: {listed}")
        set_parameters(params, overrides)
    return finalize_parameters(params)


# ----------------------------------------------------------------------------------------------------
# Finalising (seed FinalizeUtvParameters)


# The static deflection of the most loaded tyre may use at most this share of its section height (the
# rim reaches the ground at the section height: the state's ``tyre_bottomed`` records a tyre deflected that far).
STATIC_DEFLECTION_SHARE = 0.5
FRONT_RING_TOLERANCE = 0.005
"""How far (relative) the front ring ratio the gearing gives may be from ``driveline.front_ring_ratio``."""


class _FieldValues:
    """A parameter record's fields read once (``item()``), as Python values by attribute or by name: what
    the checks and derivations of ``finalize_parameters`` read (each field access of a record is a call
    into numpy; the whole record is one, ``docs/performance.md``)."""

    __slots__ = ("_values",)

    def __init__(self, params: np.record) -> None:
        self._values = dict(zip(PARAMS_DTYPE.names, params.item(), strict=True))

    def __getattr__(self, name: str) -> Any:
        try:
            return self._values[name]
        except KeyError:
            raise AttributeError(name) from None

    def __getitem__(self, name: str) -> Any:
        return self._values[name]


def _validate_primary(p: _FieldValues) -> list[str]:
    errors: list[str] = []
    for param in SCHEMA:
        try:
            _check_value(param, p[param.field])
        except ValueError as exc:
            errors.append(str(exc))
    return errors


def _validate_curve(params: np.record | _FieldValues) -> list[str]:
    n = int(params.torque_curve_count)
    if not (2 <= n <= MAX_TORQUE_POINTS):
        return [f"{TORQUE_CURVE_RPM_KEY}: expected 2 to {MAX_TORQUE_POINTS} torque-curve points, the curve "
                f"has {n} (torque_curve_count)"]
    errors: list[str] = []
    rpm = np.asarray(params.torque_curve_rpm[:n], dtype=float)
    nm = np.asarray(params.torque_curve_nm[:n], dtype=float)
    rpm_lo, rpm_hi = TORQUE_CURVE_RANGES[TORQUE_CURVE_RPM_KEY]
    nm_lo, nm_hi = TORQUE_CURVE_RANGES[TORQUE_CURVE_NM_KEY]
    for i in range(n):
        lo = rpm_lo if i == 0 else float(rpm[i - 1])
        if not (math.isfinite(rpm[i]) and rpm_lo <= rpm[i] <= rpm_hi) or (i > 0 and not rpm[i] > lo):
            left = f"[{_num(lo)}" if i == 0 else f"({_num(lo)}"
            errors.append(
                f"{TORQUE_CURVE_RPM_KEY}[{i}] = {_num(rpm[i])}: expected a finite number in {left}, "
                f"{_num(rpm_hi)}] rpm (the curve's rpm must rise strictly)"
            )
        if not (math.isfinite(nm[i]) and nm_lo <= nm[i] <= nm_hi):
            errors.append(
                f"{TORQUE_CURVE_NM_KEY}[{i}] = {_num(nm[i])}: expected a finite number in "
                f"[{_num(nm_lo)}, {_num(nm_hi)}] N m (torque must not be negative)"
            )
    if not errors and not nm.max() > 0.0:
        errors.append(f"{TORQUE_CURVE_NM_KEY}: expected a positive peak torque, the curve is all 0 N m")
    return errors


@njit(cache=True)
def _cross_checks_pass(records, index):
    """Whether the record ``records[index]`` passes every check of ``_validate_cross``: the same comparisons on
    the same values, without building its messages (``finalize_parameters`` asks ``_validate_cross`` for them
    when this is False)."""
    p = records[index]
    if not p.idle_rpm < p.max_rpm:
        return False
    if not (p.cvt_high_ratio < p.cvt_low_ratio and p.cvt_high_ratio <= p.cvt_initial_ratio <= p.cvt_low_ratio):
        return False
    if not (p.engage_rpm < p.full_engage_rpm and p.droop_m <= p.travel_m and p.bump_stop_length_m <= p.travel_m):
        return False
    if p.fuel_tank_l > 0.0 and not p.fuel_initial_l <= p.fuel_tank_l:
        return False
    if not (p.tyre_section_m < p.tyre_radius_m and p.shift_light_rpm <= p.shift_full_rpm):
        return False
    rears = (p.rear_low_ratio, p.rear_high_ratio, p.rear_reverse_ratio)
    fronts = (p.front_low_ratio, p.front_high_ratio, p.front_reverse_ratio)
    for k in range(3):
        ring = rears[k] / (fronts[k] * p.front_drive_ratio)
        if abs(ring / p.front_ring_ratio - 1.0) > FRONT_RING_TOLERANCE:
            return False
    return True


def _validate_cross(p: np.record | _FieldValues) -> list[str]:
    e: list[str] = []
    if not p.idle_rpm < p.max_rpm:
        e.append(f"engine.idle_rpm = {_num(p.idle_rpm)}: expected a value below engine.max_rpm = "
                 f"{_num(p.max_rpm)} rpm")
    if not p.cvt_high_ratio < p.cvt_low_ratio:
        e.append(f"cvt.high_ratio = {_num(p.cvt_high_ratio)}: expected a value below cvt.low_ratio = "
                 f"{_num(p.cvt_low_ratio)} (the overdrive ratio is the smaller one)")
    elif not p.cvt_high_ratio <= p.cvt_initial_ratio <= p.cvt_low_ratio:
        e.append(f"cvt.initial_ratio = {_num(p.cvt_initial_ratio)}: expected a value in "
                 f"[{_num(p.cvt_high_ratio)}, {_num(p.cvt_low_ratio)}] (cvt.high_ratio to cvt.low_ratio)")
    if not p.engage_rpm < p.full_engage_rpm:
        e.append(f"cvt.engage_rpm = {_num(p.engage_rpm)}: expected a value below cvt.full_engage_rpm = "
                 f"{_num(p.full_engage_rpm)} rpm")
    if not p.droop_m <= p.travel_m:
        e.append(f"suspension.droop_m = {_num(p.droop_m)}: expected a value in [0, {_num(p.travel_m)}] m "
                 "(at most suspension.travel_m)")
    if not p.bump_stop_length_m <= p.travel_m:
        e.append(f"suspension.bump_stop_length_m = {_num(p.bump_stop_length_m)}: expected a value in "
                 f"[0, {_num(p.travel_m)}] m (at most suspension.travel_m)")
    if p.fuel_tank_l > 0.0 and not p.fuel_initial_l <= p.fuel_tank_l:
        e.append(f"fuel.initial_l = {_num(p.fuel_initial_l)}: expected a value in [0, {_num(p.fuel_tank_l)}] "
                 "L (at most fuel.tank_l; set fuel.tank_l = 0 to leave the tank unmodelled)")
    if not p.tyre_section_m < p.tyre_radius_m:
        e.append(f"tyre.section_m = {_num(p.tyre_section_m)}: expected a value below tyre.radius_m = "
                 f"{_num(p.tyre_radius_m)} m (the rim lies inside the tyre)")
    if not p.shift_light_rpm <= p.shift_full_rpm:
        e.append(f"cvt.shift_light_rpm = {_num(p.shift_light_rpm)}: expected a value in [100, "
                 f"{_num(p.shift_full_rpm)}] rpm (at most cvt.shift_full_rpm)")
    # the model turns the front ring at rear / (front x front drive) of the carrier in each gear; the
    # OEM figure (seed FrontRingRatio 0.926) must be what the gearing gives
    for gear in ("low", "high", "reverse"):
        rear = float(p[f"rear_{gear}_ratio"])
        front = float(p[f"front_{gear}_ratio"]) * float(p.front_drive_ratio)
        ring = rear / front
        if abs(ring / float(p.front_ring_ratio) - 1.0) > FRONT_RING_TOLERANCE:
            e.append(f"driveline.front_{gear}_ratio = {_num(p[f'front_{gear}_ratio'])}: gives a front ring "
                     f"ratio of {ring:.4f} (rear_{gear}_ratio / (front_{gear}_ratio x front_drive_ratio)); "
                     f"expected driveline.front_ring_ratio = {_num(p.front_ring_ratio)} within 0.5 %")
    return e


def finalize_parameters(params: np.record, *, primary_checked: bool = False) -> np.record:
    """Validate the primary values and derive the rest, in place (seed ``FinalizeUtvParameters``).

    Validation: every schema value is finite and within its range (integral for integer and boolean
    kinds); the torque curve has at least 2 points, rising strictly in rpm, with non-negative torque
    and a positive peak; idle below the fuel cut; overdrive ratio below the low ratio with the initial
    ratio between them; clutch engagement below full engagement; droop and bump-stop length within the
    travel; initial fuel within the tank (when the tank is modelled, ``fuel.tank_l > 0``); light-load
    shift speed at most the full-load one; the tyre section height below the tyre radius; positive total
    mass; the centre of mass inside the wheelbase and both tracks, so every static corner load is
    positive; the static deflection of the most loaded tyre at most ``STATIC_DEFLECTION_SHARE`` (half) of
    its section height. All failures are reported together in one
    ``ValueError`` (each naming its key, value and allowed range); the record is unchanged then.

    Derived fields, computed in one jitted pass over the record (``acres_gym.model.mass_properties``;
    positions from the rear-axle midpoint on the ground, x forward, y left, z up):

    * ``mass_kg`` = dry + fluids + roof + bay + occupants x occupant_kg + cargo.
    * ``cg_forward_m``, ``cg_left_m``, ``cg_height_m``: the mass-weighted position of the dry vehicle
      (at ``dry_cg_*``), fluids, roof and bay equipment, cargo (at their ``*_x/y/z``) and each occupant
      by seat (driver, front passenger, rear left, rear right, rear centre, front centre).
    * ``ixx_kg_m2``, ``iyy_kg_m2``, ``izz_kg_m2`` about the total centre of mass: the dry vehicle's
      radii of gyration (m_dry k^2 per axis), moved by the parallel-axis theorem, plus every lumped mass
      as a point mass: Ixx += m (dy^2 + dz^2), Iyy += m (dx^2 + dz^2), Izz += m (dx^2 + dy^2).
      Products of inertia are not modelled (the principal axes are taken as the body axes).
    * ``static_load_n`` (FL, FR, RL, RR): front axle m g cg_forward / wheelbase, rear the rest
      (g = 9.80665 m/s^2); each axle split left / right by the lateral offset over its track:
      left = axle (0.5 + cg_left / track), right = axle - left.
    * ``peak_torque_nm``: the highest point of the full-load curve.
    * The shared wheel parameter set, per corner, body frame with its origin at the centre of mass:
      ``hardpoint_x_m`` = (wheelbase front, 0 rear) - cg_forward; ``hardpoint_y_m`` = (+track/2 left,
      -track/2 right) - cg_left; ``hardpoint_z_m`` = tyre radius - static load / tyre vertical stiffness
      - cg_height + travel - droop (the wheel centre at full bump, the top of the suspension);
      ``wheel_rate_n_m``; ``damper_n_s_m`` = 2 zeta sqrt(k_ride m_corner) with the ride rate
      k_ride = k_w k_t / (k_w + k_t) and m_corner = static load / g; ``tyre_width_m``;
      ``brake_nm_per_bar``.

    Returns:
        ``params`` (the same record), for chaining.

    ``primary_checked=True`` skips the per-value range checks and the curve's (not the cross checks): for a
    caller whose record is a finalised one with values set through ``set_parameters``, which checked each.
    """
    records, copied = _viewed_row(params)
    if not primary_checked:
        p = _FieldValues(params)
        errors = _validate_primary(p) + _validate_curve(p)
        if errors:
            raise ValueError("invalid vehicle parameters:\n  " + "\n  ".join(errors))
    if not _cross_checks_pass(records, 0):  # the messages, read from the record only when one fails
        errors = _validate_cross(_FieldValues(params))
        if errors:
            raise ValueError("invalid vehicle parameters:\n  " + "\n  ".join(errors))

    report = np.empty(8)
    outcome = derive_parameters(records, 0, STANDARD_GRAVITY_MPS2, STATIC_DEFLECTION_SHARE, report)
    if outcome != WRITTEN:
        _derivation_error(_FieldValues(params), outcome, report)
    if copied:  # the derived fields back into the record
        for name, _unit, _shape in DERIVED:
            params[name] = records[0][name]
    return params


def _viewed_row(params: np.record) -> tuple[np.ndarray, bool]:
    """The one-row array whose row ``params`` is (as records, plain: what the kernel takes), and False; for a
    record of a longer array (or of none), a one-row copy and True. (Finding a row's index needs the record's
    address, which numpy gives only with a description of every field: longer than the copy.)"""
    base = params.base
    if isinstance(base, np.ndarray) and base.shape == (1,) and base.dtype is params.dtype:
        return structured_view(np.ndarray.view(base, np.recarray)), False
    copy = np.zeros(1, PARAMS_DTYPE).view(np.recarray)
    copy[0] = params
    return structured_view(copy), True


def _derivation_error(p: _FieldValues, outcome: int, report: np.ndarray) -> None:
    """Raise the ``ValueError`` for a record ``derive_parameters`` refused (``report``: its mass, centre of mass
    and corner loads)."""
    mass, cx, cy = report[0], report[1], report[2]
    if outcome == MASS_NOT_POSITIVE:
        raise ValueError(f"invalid vehicle parameters: total mass = {_num(mass)} kg: expected > 0 kg")
    loads = report[4:8]
    if outcome == LOAD_NOT_POSITIVE:
        wb, tf, tr = float(p.wheelbase_m), float(p.track_front_m), float(p.track_rear_m)
        where = []
        if not 0.0 < cx < wb:
            where.append(f"cg_forward_m = {cx:.3f} m is outside the wheelbase (0, {_num(wb)}) m")
        for name, track in (("front", tf), ("rear", tr)):
            if not abs(cy) < 0.5 * track:
                where.append(f"cg_left_m = {cy:.3f} m is outside the {name} track "
                             f"(-{_num(0.5 * track)}, {_num(0.5 * track)}) m")
        raise ValueError(
            "invalid vehicle parameters: the centre of mass must lie inside the wheelbase and the tracks "
            f"so every static corner load is positive ({'; '.join(where)}; corner loads "
            f"{', '.join(f'{x:.0f}' for x in loads)} N); check mass.dry_cg_* and the positions of the "
            "lumped masses"
        )
    kt, section = float(p.tyre_vertical_stiffness_n_m), float(p.tyre_section_m)
    need = loads.max() / (STATIC_DEFLECTION_SHARE * section)
    raise ValueError(
        f"invalid vehicle parameters: tyre.vertical_stiffness_n_m = {_num(kt)}: the heaviest static corner "
        f"load {loads.max():.0f} N deflects the tyre {loads.max() / kt:.3f} m, more than half of "
        f"tyre.section_m = {_num(section)} m; expected at least {need:.0f} N/m for these masses"
    )


# ----------------------------------------------------------------------------------------------------
# Display and export


def _field_value(params: np.record, field: str) -> Any:
    v = params[field]
    if isinstance(v, np.ndarray):
        return [float(x) for x in v]
    if isinstance(v, np.integer):
        return int(v)
    return float(v)


def parameter_table(params: np.record, derived: bool = True) -> list[tuple[str, Any, str]]:
    """``(dotted key, value, unit)`` rows for display: the schema values in schema order, the torque
    curve as two lists, then (when ``derived``) the derived fields as ``derived.<field>`` (per-corner
    fields as lists FL, FR, RL, RR)."""
    rows: list[tuple[str, Any, str]] = [(p.key, _field_value(params, p.field), p.unit) for p in SCHEMA]
    n = int(params.torque_curve_count)
    for key, field in _CURVE_FIELDS.items():
        rows.append((key, [float(x) for x in params[field][:n]], TORQUE_CURVE_UNITS[key]))
    if derived:
        for name, unit, _shape in DERIVED:
            rows.append((DERIVED_PREFIX + name, _field_value(params, name), unit))
    return rows


def params_to_dict(params: np.record, derived: bool = True) -> dict[str, Any]:
    """Dotted key -> value (plain Python numbers and lists), for display and for saving a resolved
    config. With ``derived=False`` the result holds the primary values only and is a valid
    ``overrides`` mapping for ``load_vehicle`` (and input of ``set_parameters``)."""
    return {key: value for key, value, _unit in parameter_table(params, derived=derived)}


# ----------------------------------------------------------------------------------------------------
# Batches


def make_params_array(params_or_list: Any, n: int) -> np.recarray:
    """A contiguous ``np.recarray`` of shape ``(n,)`` of ``PARAMS_DTYPE``: what the batched simulator
    holds.

    Args:
        params_or_list: one finalised record (broadcast to all ``n`` vehicles) or a sequence / array
            of ``n`` finalised records (copied).
        n: number of vehicles, >= 1.

    Raises:
        ValueError: ``n`` < 1, a list of the wrong length, or records that are not finalised
            (``mass_kg`` = 0: call ``finalize_parameters`` first).
        TypeError: records of another dtype.
    """
    if isinstance(n, bool) or not isinstance(n, (Integral, np.integer)) or n < 1:
        raise ValueError(f"n = {n!r}: expected an integer >= 1 (number of vehicles)")
    n = int(n)
    out = np.zeros(n, PARAMS_RECORD_DTYPE)
    if isinstance(params_or_list, (np.void, np.record)) or (
        isinstance(params_or_list, np.ndarray) and params_or_list.ndim == 0
    ):
        if params_or_list.dtype != PARAMS_DTYPE:
            raise TypeError(f"expected a record of PARAMS_DTYPE, got dtype {params_or_list.dtype}")
        out[:] = params_or_list
    else:
        items = list(params_or_list)
        if len(items) != n:
            raise ValueError(f"expected {n} parameter records, got {len(items)}")
        for i, item in enumerate(items):
            if getattr(item, "dtype", None) != PARAMS_DTYPE:
                got = getattr(item, "dtype", type(item))
                raise TypeError(f"record {i}: expected a record of PARAMS_DTYPE, got {got}")
            out[i] = item
    if not np.all(out["mass_kg"] > 0.0):
        bad = np.flatnonzero(~(out["mass_kg"] > 0.0)).tolist()
        raise ValueError(f"parameter records {bad} are not finalised (mass_kg = 0): call finalize_parameters")
    return out.view(np.recarray)
