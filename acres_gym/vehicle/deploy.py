"""The policy runtime for the vehicle: DBW reports in, DBW command messages out (numpy and onnxruntime only).

``python -m acres_gym.agents.export runs/<run>/model.zip --out policy/`` writes ``policy.onnx`` and
``manifest.json``; on the vehicle computer::

    from acres_gym.vehicle.deploy import PolicyRuntime, UnsafeCommandError

    runtime = PolicyRuntime("policy/")          # once (the manifest and the graph are checked here)
    runtime.reset()                             # at the start of every autonomous drive
    try:
        messages = runtime.step(reports, inputs)    # every 1 / control_hz s
    except UnsafeCommandError as exc:               # bad input, bad policy output: the policy stops driving
        messages = runtime.safe_stop(reports)       # and the vehicle brakes to a stop (sent every step)
    # -> {"steering/cmd": {"cmd_type": 2, "cmd": -12.3, "cmd_rate": 0.0, ...}, "throttle/cmd": {...}, ...}

``reports`` holds the latest report messages with their ds_dbw_msgs field names, keyed by message:
``steering`` (SteeringReport), ``throttle``, ``brake``, ``gear``, ``ulc`` (UlcReport), ``vehicle_velocity``,
``wheel_speeds`` and ``dbw_enabled`` (``{"data": bool}``); a value the vehicle marks invalid is NaN, as
the node publishes it. Only the fields the policy reads are needed (``report_fields`` of the manifest's
report items, ``runtime.report_fields``); a flat ``{"steering.cmd": ...}`` dict works too. ``inputs``
holds the observation items that are not reports, by name, in the units of the manifest
(``runtime.host_inputs``: the IMU's yaw rate and roll / pitch, the planner's target speeds and path
points ahead, the goal's distance and bearing and the ``local_map`` array from the host's own map of the
ground, ...; the manifest's ``host_inputs`` section describes each, the map's channels, cell size, extent
and frame included). The previous action is the runtime's own. The result is the command messages to
publish this step, by topic relative to the DBW namespace (``steering/cmd``, ``throttle/cmd``,
``brake/cmd``, ``ulc/cmd``; ``gear/cmd`` only on the steps that shift), with the ds_dbw field names and
structure (``{"cmd": {"value": 4}}`` for a GearCmd, whose ``cmd`` is a ``Gear``; report fields of such
types may likewise be ``{"value": ...}``), so ``rosidl_runtime_py``'s ``message_to_ordereddict`` and
``set_message_fields`` convert both ways; fields left out (``clear``, ``ignore``, ...) keep their message
defaults. A policy trained with the AWD-switch axis also asks for a switch position
(``runtime.drive_mode_request``, DRIVE_* values, after every step): the switch is not a DBW command, so
the host sets it (or leaves it where it is).

Nothing unchecked reaches the vehicle. Every report value the policy reads must be a number of its kind
(NaN only where the observation carries the field's validity flag, as the node publishes those), every
host input an array of the manifest's shape, finite and within its bounds, every action and every output
of the graph finite and within [-1, 1], and every command message field within its DBW range (below):
anything else raises ``UnsafeCommandError`` (a ``ValueError``) whose one-line message names the field, the
value and the allowed range. Nothing is replaced silently: an absent lateral error is not "on the path",
an infinite value is not its bound. ``safe_stop(reports)`` is the command set to send instead, every control
step, until the vehicle stands: throttle 0, the brake at the vehicle's stop-hold brake (the manifest's
``vehicle.ulc_stop_brake_pct`` percent of full scale, a firm stop inside the DBW limits, or
``PolicyRuntime(..., stop_brake_pct=)``), the steering wheel held where it is.

The DBW ranges come from the command spec (``acres_gym.dbw.command.COMMAND_SPEC``: which fields each
message has, their kinds and units, the modes each mode field accepts) and the vehicle's limits in the
manifest (``vehicle``: the angle, curvature and yaw-rate command ranges and the full-scale brake pressure,
each checked against the parameter schema's bounds, ``acres_gym.schema``): the setpoint of a message is
within the range of its mode (``setpoint_range``: those limits, 0..100 % for pedals and +-100 % for the
steering percent mode, the ULC decoder's velocity and acceleration ranges, the same figures the DBW model
clamps to); rate and limit fields are finite and at least 0
(0 = the firmware default; the steering rate and acceleration within their message ranges); a gear command
is H or L (the ranges an action mode shifts to); flags are booleans.

The manifest is checked as it loads (``ManifestError``, an ``UnsafeCommandError``, naming the key): its
format, ``control_hz`` (a whole number of physics ticks, at least ``MIN_CONTROL_HZ``), every observation
item (offsets, shapes, bounds, normalisation), the command map and constants (every command an action in
[-1, 1] can give is within the DBW ranges: the map is piecewise linear, so its extremes are at -1, 0 and
1), the gear and AWD axes, and the graph (its input name and dtype, its output size, and an action in
[-1, 1] for the zero observation: a NaN weight shows there; the graph's output is checked at every step
as well).

Engaging the DBW system (the ``enable`` topic or the vehicle's button) is the operator's act, not the
runtime's: the policy observes ``dbw_enabled`` and drives the same whether or not it is engaged.

Importing this module loads neither numba nor torch nor stable-baselines3.
"""

from __future__ import annotations

import json
import math
import numbers
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from acres_gym.constants import (
    DRIVE_ALL_WHEEL,
    DRIVE_MODE_NAMES,
    DRIVE_TURF,
    DRIVE_TWO_WHEEL,
    GEAR_HIGH,
    GEAR_LOW,
    GEAR_NAMES,
    GEAR_NONE,
    PEDAL_BRAKE_PRESSURE,
    PEDAL_NONE,
    PEDAL_PERCENT,
    PEDAL_RAW,
    PHYSICS_HZ,
    STEER_ANGLE,
    STEER_CURVATURE,
    STEER_PERCENT,
    STEER_YAW_RATE,
    ULC_ACCEL,
    ULC_NONE,
    ULC_VELOCITY,
)
from acres_gym.dbw.command import ARRIVAL_OF, COMMAND_MODES, COMMAND_SPEC, GEAR_CMD_MAX, MESSAGE_FIELDS
from acres_gym.dbw.report_values import DERIVED
from acres_gym.schema import SCHEMA

MANIFEST_FORMAT = "acres_gym.policy/2"


class UnsafeCommandError(ValueError):
    """The runtime will not command the vehicle from this: a report, host input, action or policy output that
    is not a valid number of its kind, shape and range, or a command message outside its DBW range. The
    message is one line naming the field, the value and the allowed range; the host sends ``safe_stop()``."""


class ManifestError(UnsafeCommandError):
    """A manifest (or its graph) that does not describe a policy the runtime can drive with, naming the key."""


# ds_dbw command message (topic under the DBW namespace) -> {DbwCommand field: message field}, from the command
# spec; the ``*_fresh`` field (message field None) says whether the message is sent at all.
_COMMAND_TOPICS = {"SteeringCmd": "steering/cmd", "ThrottleCmd": "throttle/cmd", "BrakeCmd": "brake/cmd",
                   "UlcCmd": "ulc/cmd", "GearCmd": "gear/cmd"}
COMMAND_MESSAGES: dict[str, dict[str, str | None]] = {
    topic: {**({ARRIVAL_OF[message]: None} if message in ARRIVAL_OF else {}), **MESSAGE_FIELDS[message]}
    for message, topic in _COMMAND_TOPICS.items()}
_SPEC = {f.name: f for f in COMMAND_SPEC}

# unit of a setpoint field by its message's cmd_type (ds_dbw_msgs)
_SETPOINT_UNITS = {
    "steer_cmd": ("steer_mode", {STEER_ANGLE: "deg", STEER_CURVATURE: "1/m", STEER_YAW_RATE: "rad/s",
                                 STEER_PERCENT: "%"}),
    "throttle_cmd": ("throttle_mode", {PEDAL_PERCENT: "%", PEDAL_RAW: "%"}),
    "brake_cmd": ("brake_mode", {PEDAL_PERCENT: "%", PEDAL_RAW: "%", PEDAL_BRAKE_PRESSURE: "bar"}),
    "ulc_cmd": ("ulc_mode", {ULC_VELOCITY: "m/s", ULC_ACCEL: "m/s^2"}),
}

# The vehicle's command limits the manifest carries (``vehicle``), by parameter record field: the schema's
# bounds check them on load.
VEHICLE_LIMITS = ("steer_command_deg", "max_curvature_per_m", "max_yaw_rate_rad_s", "brake_max_bar",
                  "ulc_stop_brake_pct")
_SCHEMA = {p.field: p for p in SCHEMA}
# Ranges the ds_dbw messages define (reference: ds_dbw_msgs 2.3.11, the driver's decoders) that are not the
# vehicle's: percent setpoints, the ULC's velocity and acceleration decoder ranges, the steering rate and
# acceleration fields. The DBW model clamps to the same figures (acres_gym.dbw.ulc, acres_gym.dbw.steering).
PERCENT_RANGE = (0.0, 100.0)
STEER_PERCENT_RANGE = (-100.0, 100.0)
ULC_VELOCITY_RANGE_MPS = (-7.0, 45.0)
ULC_ACCEL_RANGE_MPS2 = (-6.0, 3.0)
RATE_MAX = {"steer_rate_deg_s": 1016.0, "steer_accel_deg_s2": 25400.0}
# The DBW node drops a subsystem whose command is older than 0.1 s: commands are re-sent at least at 10 Hz.
MIN_CONTROL_HZ = 10
CONTROL_HZ = tuple(hz for hz in range(MIN_CONTROL_HZ, PHYSICS_HZ + 1) if PHYSICS_HZ % hz == 0)
SHIFT_GEARS = (GEAR_HIGH, GEAR_LOW)  # the ranges an action mode's gear axis asks for
DRIVE_MODES = (DRIVE_TURF, DRIVE_TWO_WHEEL, DRIVE_ALL_WHEEL)
# Report fields the node publishes as NaN in normal driving (a command echo while a subsystem is not
# enabled): the observation carries their validity (``report_valid``), so NaN there is a value, not an error.
NAN_REPORT_FIELDS = frozenset(DERIVED["report_valid"][1])
OBSERVATION_SOURCES = ("report", "report_derived", "body", "task", "action")  # what the runtime builds
_MAX_ELEMENTS = 1 << 20  # an observation this wide is not a policy's


def _show(value: Any) -> str:
    """A value for an error message: short, on one line."""
    text = repr(value).replace("\n", " ")
    return text if len(text) <= 60 else text[:57] + "..."


def _fmt(x: float) -> str:
    return f"{x:g}"


def _range_text(lo: float, hi: float, unit: str = "") -> str:
    return f"a finite number in [{_fmt(lo)}, {_fmt(hi)}]" + (f" {unit}" if unit and unit != "1" else "")


def _is_real(value: Any) -> bool:
    """A real number that is not a bool (numpy scalars included)."""
    return isinstance(value, numbers.Real) and not isinstance(value, (bool, np.bool_))


def command_unit(field: str, constants: Mapping[str, Any]) -> str:
    """The unit of a varying command field, given the message's constant fields (its ``cmd_type``)."""
    if field in _SETPOINT_UNITS:
        mode_field, units = _SETPOINT_UNITS[field]
        return units.get(constants.get(mode_field), "?")
    return _SPEC[field].unit if field in _SPEC else "?"


def setpoint_range(field: str, mode: int, vehicle: Mapping[str, float]) -> tuple[float, float] | None:
    """The range of a setpoint (``steer_cmd``, ``throttle_cmd``, ``brake_cmd``, ``ulc_cmd``) under its
    message's mode, from the vehicle's limits (``VEHICLE_LIMITS``) and the message ranges; None for mode
    NONE (the DBW layer ignores the value: any finite number)."""
    v = vehicle
    table = {
        "steer_cmd": {STEER_ANGLE: (-v["steer_command_deg"], v["steer_command_deg"]),
                      STEER_CURVATURE: (-v["max_curvature_per_m"], v["max_curvature_per_m"]),
                      STEER_YAW_RATE: (-v["max_yaw_rate_rad_s"], v["max_yaw_rate_rad_s"]),
                      STEER_PERCENT: STEER_PERCENT_RANGE},
        "throttle_cmd": {PEDAL_PERCENT: PERCENT_RANGE, PEDAL_RAW: PERCENT_RANGE},
        "brake_cmd": {PEDAL_PERCENT: PERCENT_RANGE, PEDAL_RAW: PERCENT_RANGE,
                      PEDAL_BRAKE_PRESSURE: (0.0, v["brake_max_bar"])},
        "ulc_cmd": {ULC_VELOCITY: ULC_VELOCITY_RANGE_MPS, ULC_ACCEL: ULC_ACCEL_RANGE_MPS2},
    }[field]
    return table.get(mode)


def command_value(entry: Mapping[str, Any], a):
    """A command field following one action component ``a`` (scalar or array), as the manifest describes it:
    ``offset + gain_pos x a`` for a >= 0, ``offset + gain_neg x a`` below."""
    return entry["offset"] + np.where(a >= 0.0, entry["gain_pos"], entry["gain_neg"]) * a


def check_messages(messages: Mapping[str, Mapping[str, Any]], vehicle: Mapping[str, float],
                   where: str = "command") -> None:
    """Raise ``UnsafeCommandError`` unless every message is a known DBW command topic whose every field
    is within its DBW range (module docstring)."""
    for topic, message in messages.items():
        fields = COMMAND_MESSAGES.get(topic)
        if fields is None:
            raise UnsafeCommandError(f"{where}: topic {topic!r} is not a DBW command; allowed: "
                                     f"{', '.join(COMMAND_MESSAGES)}")
        names = {msg: name for name, msg in fields.items() if msg is not None}
        unknown = sorted(set(message) - set(names)) if isinstance(message, Mapping) else None
        if unknown is None or unknown:
            raise UnsafeCommandError(f"{where}: {topic} has field(s) {unknown if unknown else _show(message)}; "
                                     f"allowed: {sorted(names)}")
        values = {}
        for msg_field, name in names.items():
            if msg_field not in message:
                raise UnsafeCommandError(f"{where}: {topic}.{msg_field} is missing")
            value = message[msg_field]
            if isinstance(value, Mapping) and set(value) == {"value"}:  # a ds_dbw field type (Gear)
                value = value["value"]
            values[name] = value
        for msg_field, name in names.items():
            _check_field(f"{where}: {topic}.{msg_field}", name, values[name], values, vehicle)


def _check_field(where: str, name: str, value: Any, values: Mapping[str, Any], vehicle: Mapping[str, float]) -> None:
    """One command field against its range (``check_messages``)."""
    spec = _SPEC[name]
    kind = np.dtype(spec.dtype).kind
    if kind == "b":
        if not isinstance(value, (bool, np.bool_)):
            raise UnsafeCommandError(f"{where} = {_show(value)}; allowed: true or false")
        return
    if kind == "i":
        if name in COMMAND_MODES:
            allowed = COMMAND_MODES[name]
        elif name == "gear_cmd":
            allowed = {g: GEAR_NAMES[g] for g in SHIFT_GEARS}
        else:
            raise UnsafeCommandError(f"{where}: the runtime sends no {name!r} field")
        if not isinstance(value, numbers.Integral) or isinstance(value, (bool, np.bool_)) or value not in allowed:
            text = ", ".join(f"{k} ({v})" for k, v in allowed.items())
            raise UnsafeCommandError(f"{where} = {_show(value)}; allowed: {text}")
        return
    if not _is_real(value) or not math.isfinite(value):
        raise UnsafeCommandError(f"{where} = {_show(value)}; allowed: a finite number")
    if name in _SETPOINT_UNITS:
        mode_field, units = _SETPOINT_UNITS[name]
        mode = values.get(mode_field, PEDAL_NONE)
        bounds = setpoint_range(name, mode, vehicle)
        if bounds is None:
            return
        unit = units.get(mode, "")
    else:  # a rate or limit: 0 = the firmware default
        bounds, unit = (0.0, RATE_MAX.get(name, math.inf)), spec.unit
    lo, hi = bounds
    if not lo <= value <= hi:
        mode_text = f" ({COMMAND_MODES[_SETPOINT_UNITS[name][0]][values[_SETPOINT_UNITS[name][0]]]} mode)" \
            if name in _SETPOINT_UNITS else ""
        raise UnsafeCommandError(f"{where} = {_show(value)}{mode_text}; allowed: "
                                 + (_range_text(lo, hi, unit) if math.isfinite(hi) else
                                    f"a finite number >= {_fmt(lo)} {unit} (0 = firmware default)"))


# --- manifest checks ---------------------------------------------------------------------------------------
def _key(m: Mapping, key: str, where: str) -> Any:
    if not isinstance(m, Mapping):
        raise ManifestError(f"{where} = {_show(m)}; expected a mapping")
    if key not in m:
        raise ManifestError(f"{where}.{key} is missing")
    return m[key]


def _number(m: Mapping, key: str, where: str, lo: float = -math.inf, hi: float = math.inf,
            lo_open: bool = False) -> float:
    value = _key(m, key, where)
    if not _is_real(value) or not math.isfinite(value) or not (lo < value if lo_open else lo <= value) \
            or not value <= hi:
        bounds = [f"> {_fmt(lo)}" if lo_open else f">= {_fmt(lo)}"] if math.isfinite(lo) else []
        bounds += [f"<= {_fmt(hi)}"] if math.isfinite(hi) else []
        raise ManifestError(f"{where}.{key} = {_show(value)}; allowed: a finite number {' and '.join(bounds)}".rstrip())
    return float(value)


def _integer(m: Mapping, key: str, where: str, lo: int, hi: int) -> int:
    value = _key(m, key, where)
    if not isinstance(value, int) or isinstance(value, bool) or not lo <= value <= hi:
        raise ManifestError(f"{where}.{key} = {_show(value)}; allowed: an integer in [{lo}, {hi}]")
    return value


def _string(m: Mapping, key: str, where: str) -> str:
    value = _key(m, key, where)
    if not isinstance(value, str) or not value:
        raise ManifestError(f"{where}.{key} = {_show(value)}; allowed: a non-empty string")
    return value


def _finite_list(m: Mapping, key: str, where: str, size: int, lo: float = -math.inf) -> np.ndarray:
    value = _key(m, key, where)
    arr = np.asarray(value, dtype=object).ravel() if isinstance(value, list) else None
    if arr is None or arr.size != size or not all(_is_real(x) and math.isfinite(x) and x >= lo for x in arr):
        raise ManifestError(f"{where}.{key}: expected a list of {size} finite numbers"
                            + (f" >= {_fmt(lo)}" if math.isfinite(lo) else "") + f"; got {_show(value)}")
    return np.array(arr, dtype=np.float64)


class PolicyRuntime:
    """An exported policy (``policy.onnx`` + ``manifest.json``) driving through DBW messages (module
    docstring). ``step`` is ``observation`` -> ``act`` -> ``commands``; each is usable alone and checks
    what it is given and what it returns."""

    def __init__(self, policy_dir: str | Path, providers: tuple[str, ...] = ("CPUExecutionProvider",),
                 stop_brake_pct: float | None = None) -> None:
        import onnxruntime

        policy_dir = Path(policy_dir)
        path = policy_dir / "manifest.json"
        if not path.is_file():
            raise FileNotFoundError(f"{path}: no manifest (python -m acres_gym.agents.export writes it)")
        try:
            m = json.loads(path.read_text(encoding="utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise ManifestError(f"{path}: not a JSON manifest ({str(exc).splitlines()[0]})") from None
        self.path = path
        self.manifest = m
        where = "manifest"
        try:
            if not isinstance(m, Mapping) or m.get("format") != MANIFEST_FORMAT:
                raise ManifestError(f"{where}.format = {_show(m.get('format') if isinstance(m, Mapping) else m)}; "
                                    f"this runtime reads {MANIFEST_FORMAT!r} (export the policy again)")
            self._load_vehicle(m, stop_brake_pct)
            self._load_observation(_key(m, "observation", where))
            self._load_action(_key(m, "action", where))
            self._load_graph(policy_dir, m, onnxruntime, providers)
        except ManifestError as exc:
            raise ManifestError(f"{path}: {exc}") from None
        self.reset()

    # --- loading ------------------------------------------------------------------------------------------
    def _load_vehicle(self, m: Mapping, stop_brake_pct: float | None) -> None:
        hz = _key(m, "control_hz", "manifest")
        if not isinstance(hz, int) or isinstance(hz, bool) or hz not in CONTROL_HZ:
            raise ManifestError(f"manifest.control_hz = {_show(hz)}; allowed: {', '.join(map(str, CONTROL_HZ))} "
                                f"(a whole number of 1/{PHYSICS_HZ} s physics ticks, at least {MIN_CONTROL_HZ} Hz: "
                                "the DBW layer drops a subsystem whose command is older than 0.1 s)")
        self.control_hz = hz
        p = _SCHEMA["command_timeout_s"]
        self.command_timeout_s = _number(m, "command_timeout_s", "manifest", p.lo, p.hi)
        if 1.0 / hz > self.command_timeout_s + 1e-9:  # each command must arrive before the last one times out
            raise ManifestError(f"manifest.command_timeout_s = {self.command_timeout_s:g}: shorter than the control "
                                f"period 1 / control_hz = {1.0 / hz:g} s; allowed: at least {1.0 / hz:g} s")
        vehicle = _key(m, "vehicle", "manifest")
        self.vehicle = {}
        for name in VEHICLE_LIMITS:
            p = _SCHEMA[name]
            self.vehicle[name] = _number(vehicle, name, "manifest.vehicle", p.lo, p.hi)
        if stop_brake_pct is not None:
            self.vehicle["ulc_stop_brake_pct"] = _number({"stop_brake_pct": stop_brake_pct}, "stop_brake_pct",
                                                         "PolicyRuntime", 0.0, 100.0, lo_open=True)
        elif self.vehicle["ulc_stop_brake_pct"] <= 0.0:
            raise ManifestError(f"manifest.vehicle.ulc_stop_brake_pct = {self.vehicle['ulc_stop_brake_pct']:g}: "
                                "a stop needs a brake; allowed: a number in (0, 100] (or give stop_brake_pct)")
        self.brake_max_bar = np.array([self.vehicle["brake_max_bar"]], dtype=np.float64)

    def _load_observation(self, obs: Mapping) -> None:
        where = "manifest.observation"
        self.width = _integer(obs, "width", where, 1, _MAX_ELEMENTS)
        dtype = _key(obs, "dtype", where)
        if dtype not in ("float32", "float64"):
            raise ManifestError(f"{where}.dtype = {_show(dtype)}; allowed: float32, float64")
        self._dtype = np.float32 if dtype == "float32" else np.float64
        items = _key(obs, "items", where)
        if not isinstance(items, list) or not items:
            raise ManifestError(f"{where}.items = {_show(items)}; expected a non-empty list of items")
        self.items = items
        self._low = np.empty(self.width)
        self._high = np.empty(self.width)
        self._mean = np.zeros(self.width)
        self._scale = np.ones(self.width)
        self._normalized = np.zeros(self.width, dtype=bool)
        norm = _key(obs, "normalization", where)
        if norm is not None:
            self._eps = _number(norm, "epsilon", f"{where}.normalization", 0.0, 1.0, lo_open=True)
            self._clip = _number(norm, "clip", f"{where}.normalization", 0.0, 1e6, lo_open=True)
        else:
            self._eps = self._clip = None
        kinds = _key(obs, "report_kinds", where)
        if not isinstance(kinds, Mapping) or any(k not in ("f", "i", "b") for k in kinds.values()):
            raise ManifestError(f"{where}.report_kinds = {_show(kinds)}; expected {{'message.field': 'f'|'i'|'b'}}")
        self._report_kinds = dict(kinds)
        offset, names = 0, set()
        for k, item in enumerate(items):
            w = f"{where}.items[{k}]"
            name = _string(item, "name", w)
            w = f"{where}.items[{k}] ({name})"
            if name in names:
                raise ManifestError(f"{w}.name = {name!r} appears twice")
            names.add(name)
            _string(item, "unit", w)
            _string(item, "meaning", w)
            source = _key(item, "source", w)
            if source not in OBSERVATION_SOURCES:
                raise ManifestError(f"{w}.source = {_show(source)}; allowed: {', '.join(OBSERVATION_SOURCES)}")
            shape = _key(item, "shape", w)
            if not isinstance(shape, list) or not shape or not all(isinstance(s, int) and not isinstance(s, bool)
                                                                 and 1 <= s <= _MAX_ELEMENTS for s in shape):
                raise ManifestError(f"{w}.shape = {_show(shape)}; expected a list of positive integers")
            size = int(np.prod(shape))
            if _key(item, "offset", w) != offset:
                raise ManifestError(f"{w}.offset = {_show(item['offset'])}; allowed: {offset} (the items follow "
                                    "each other)")
            offset += size
            if offset > self.width:
                raise ManifestError(f"{w}: the items hold more than observation.width = {self.width} values")
            sl = slice(offset - size, offset)
            lo = _number(item, "low", w)
            hi = _number(item, "high", w, lo)
            self._low[sl], self._high[sl] = lo, hi
            fields = _key(item, "report_fields", w)
            if not isinstance(fields, list) or not all(isinstance(f, str) and f.count(".") >= 1 and f in kinds
                                                       for f in fields):
                raise ManifestError(f"{w}.report_fields = {_show(fields)}; expected 'message.field' names listed "
                                    "in observation.report_kinds")
            if source == "report" and len(fields) != size:
                raise ManifestError(f"{w}.report_fields: {len(fields)} fields for {size} values")
            if source == "report_derived" and (name not in DERIVED or tuple(fields) != DERIVED[name][1]):
                raise ManifestError(f"{w}: no derived report value {name!r} reading {fields}; known: "
                                    f"{', '.join(DERIVED)}")
            if "normalization" in item:
                if norm is None:
                    raise ManifestError(f"{w}.normalization: observation.normalization is null")
                n = item["normalization"]
                mean = _finite_list(n, "mean", f"{w}.normalization", size)
                var = _finite_list(n, "var", f"{w}.normalization", size, 0.0)
                self._mean[sl] = mean
                self._scale[sl] = np.sqrt(var + self._eps)
                self._normalized[sl] = True
        if offset != self.width:
            raise ManifestError(f"{where}.width = {self.width}; the items hold {offset} values")
        self._slices = [slice(i["offset"], i["offset"] + int(np.prod(i["shape"]))) for i in items]
        self._field_range = {f: _range_text(i["low"], i["high"], i["unit"]) for i in items if i["source"] == "report"
                             for f in i["report_fields"]}
        self.report_fields = sorted({f for i in items if i["source"].startswith("report") for f in i["report_fields"]})
        self.host_inputs = {i["name"]: tuple(i["shape"]) for i in items if i["source"] in ("body", "task")}

    def _load_action(self, act: Mapping) -> None:
        where = "manifest.action"
        self.action_dim = _integer(act, "dim", where, 1, 64)
        components = _key(act, "components", where)
        if not isinstance(components, list) or len(components) != self.action_dim \
                or not all(isinstance(c, str) for c in components):
            raise ManifestError(f"{where}.components = {_show(components)}; expected {self.action_dim} names")
        self.components = components
        messages = _key(act, "messages", where)
        if not isinstance(messages, list) or not set(messages) <= set(COMMAND_MESSAGES) - {"gear/cmd"}:
            raise ManifestError(f"{where}.messages = {_show(messages)}; allowed: a list of "
                                f"{', '.join(t for t in COMMAND_MESSAGES if t != 'gear/cmd')}")
        self._messages = messages
        constants = _key(act, "constants", where)
        if not isinstance(constants, Mapping) or not set(constants) <= set(_SPEC):
            raise ManifestError(f"{where}.constants = {_show(constants)}; expected command fields "
                                "(acres_gym.dbw.command.COMMAND_SPEC)")
        self._constants = dict(constants)
        fields = _key(act, "commands", where)
        if not isinstance(fields, list):
            raise ManifestError(f"{where}.commands = {_show(fields)}; expected a list")
        sent = {name for topic in messages for name, msg in COMMAND_MESSAGES[topic].items() if msg is not None}
        for k, f in enumerate(fields):
            w = f"{where}.commands[{k}]"
            name = _key(f, "field", w)
            if name not in sent or name in constants:
                raise ManifestError(f"{w}.field = {_show(name)}; allowed: a field of the messages sent, not a constant")
            _integer(f, "component", w, 0, self.action_dim - 1)
            for key in ("offset", "gain_pos", "gain_neg"):
                _number(f, key, w)
        self._fields = fields
        missing = sorted(sent - set(constants) - {f["field"] for f in fields})
        if missing:
            raise ManifestError(f"{where}: the messages sent need the field(s) {missing}")
        self._gear_axis = self._load_axis(act, "gear_axis", SHIFT_GEARS, GEAR_NAMES)
        self._drive_axis = self._load_axis(act, "drive_axis", DRIVE_MODES, DRIVE_MODE_NAMES)
        self._first_gear = _key(act, "first_step_gear", where)
        if self._first_gear not in SHIFT_GEARS:
            raise ManifestError(f"{where}.first_step_gear = {_show(self._first_gear)}; allowed: "
                                f"{', '.join(f'{g} ({GEAR_NAMES[g]})' for g in SHIFT_GEARS)}")
        # every command an action in [-1, 1] gives is within the DBW ranges: the map is piecewise linear in
        # each component, so the extremes are at -1, 0 and 1 (any combination: each field follows one)
        for k, f in enumerate(fields):
            for a in (-1.0, 0.0, 1.0):
                value = float(command_value(f, np.float64(a)))
                values = {**self._constants, f["field"]: value}
                try:
                    _check_field(f"{where}.commands[{k}] at action {a:+g}: {f['field']}", f["field"], value, values,
                                 self.vehicle)
                except UnsafeCommandError as exc:
                    raise ManifestError(str(exc)) from None
        probe = {name: (self._constants.get(name, 0.0)) for name in sent}
        for topic in messages:
            for name, msg in COMMAND_MESSAGES[topic].items():
                if msg is not None and name in self._constants:
                    try:
                        _check_field(f"{where}.constants.{name}", name, self._constants[name], probe, self.vehicle)
                    except UnsafeCommandError as exc:
                        raise ManifestError(str(exc)) from None

    def _load_axis(self, act: Mapping, key: str, allowed: tuple[int, ...], names: Mapping[int, str]):
        axis = _key(act, key, "manifest.action")
        if axis is None:
            return None
        w = f"manifest.action.{key}"
        _integer(axis, "component", w, 0, self.action_dim - 1)
        _number(axis, "threshold", w, 0.0, 1.0, lo_open=True)
        outcomes = ("at_or_above", "at_or_below_negative") + (("between",) if key == "drive_axis" else ())
        for out in outcomes:
            if _key(axis, out, w) not in allowed:
                raise ManifestError(f"{w}.{out} = {_show(axis[out])}; allowed: "
                                    f"{', '.join(f'{v} ({names[v]})' for v in allowed)}")
        return axis

    def _load_graph(self, policy_dir: Path, m: Mapping, onnxruntime, providers) -> None:
        name = _string(m, "onnx", "manifest")
        graph = policy_dir / name
        if Path(name).name != name or not graph.is_file():
            raise ManifestError(f"manifest.onnx = {name!r}: no such file beside the manifest")
        self._input = _string(m, "onnx_input", "manifest")
        self._output = _string(m, "onnx_output", "manifest")
        try:
            self.session = onnxruntime.InferenceSession(str(graph), providers=list(providers))
        except Exception as exc:  # onnxruntime raises its own exception types for a bad graph
            raise ManifestError(f"manifest.onnx = {name!r}: not a graph onnxruntime loads "
                                f"({str(exc).splitlines()[0][:120] if str(exc) else type(exc).__name__})") from None
        inputs = {i.name: i.shape for i in self.session.get_inputs()}
        outputs = {o.name: o.shape for o in self.session.get_outputs()}
        if list(inputs) != [self._input] or inputs[self._input][-1] not in (self.width, None) \
                and not isinstance(inputs[self._input][-1], str):
            raise ManifestError(f"manifest.onnx_input = {self._input!r}: the graph takes {inputs}; expected one "
                                f"input of width {self.width}")
        graph_dtype = {"tensor(float)": "float32", "tensor(double)": "float64"}.get(self.session.get_inputs()[0].type)
        if graph_dtype != self._dtype.__name__:
            raise ManifestError(f"manifest.observation.dtype = {self._dtype.__name__!r}: the graph's input "
                                f"{self._input!r} is {self.session.get_inputs()[0].type}")
        if self._output not in outputs:
            raise ManifestError(f"manifest.onnx_output = {self._output!r}: the graph gives {list(outputs)}")
        probe = np.clip(np.zeros(self.width), self._low, self._high)
        try:
            action = self.session.run([self._output], {self._input: self.normalize(probe)[None]})[0]
        except Exception as exc:  # onnxruntime's own exception types
            raise ManifestError(f"manifest.onnx = {name!r}: the graph does not run on an observation of width "
                                f"{self.width} ({str(exc).splitlines()[0][:120] if str(exc) else type(exc).__name__})"
                                ) from None
        if action.shape != (1, self.action_dim):
            raise ManifestError(f"manifest.onnx_output = {self._output!r}: the graph gives actions of shape "
                                f"{action.shape[1:]}; expected ({self.action_dim},)")
        if not np.all((action >= -1.0) & (action <= 1.0)):
            raise ManifestError(f"manifest.onnx = {name!r}: the graph's action for the zero observation is "
                                f"{_show(action[0].tolist())}; allowed: finite numbers in [-1, 1] (a non-finite or "
                                "broken weight)")

    def reset(self) -> None:
        """Start a drive: the previous action is zero and the first step sends the range (H)."""
        self.previous_action = np.zeros(self.action_dim)
        self.drive_mode_request: int | None = None
        self._last_steering: dict[str, Any] | None = None
        self._first = True

    # --- observation ----------------------------------------------------------------------------------
    def _reader(self, reports: Mapping[str, Any], where: str = "reports"):
        if not isinstance(reports, Mapping):
            raise UnsafeCommandError(f"{where} = {_show(reports)}; expected a mapping of report messages")
        kinds = self._report_kinds

        def report(key: str) -> np.ndarray:
            message, field = key.split(".", 1)
            try:
                value = reports[key] if key in reports else reports[message][field]
            except (KeyError, TypeError, IndexError):
                raise UnsafeCommandError(f"{where}: {key!r} is missing (the policy reads it; NaN when the vehicle "
                                         "marks it invalid)") from None
            if isinstance(value, Mapping) and set(value) == {"value"}:  # a ds_dbw field type (Gear, ...)
                value = value["value"]
            kind = kinds.get(key, "f")
            if kind == "b":
                if not isinstance(value, (bool, np.bool_)) and not (_is_real(value) and value in (0, 1)):
                    raise UnsafeCommandError(f"{where}: {key} = {_show(value)}; allowed: true or false")
                return np.array([float(value)])
            if not _is_real(value):
                raise UnsafeCommandError(f"{where}: {key} = {_show(value)}; allowed: "
                                         + self._field_range.get(key, "a number")
                                         + (" (NaN when the vehicle marks it invalid)" if key in NAN_REPORT_FIELDS
                                            else ""))
            x = float(value)
            if kind == "i" and not (math.isfinite(x) and x == int(x) and 0 <= x <= GEAR_CMD_MAX):
                raise UnsafeCommandError(f"{where}: {key} = {_show(value)}; allowed: an integer ds_dbw enum value "
                                         f"in [0, {GEAR_CMD_MAX}]")
            if math.isinf(x) or (math.isnan(x) and key not in NAN_REPORT_FIELDS):
                raise UnsafeCommandError(f"{where}: {key} = {_show(value)}; allowed: "
                                         + self._field_range.get(key, "a finite number")
                                         + (" or NaN (invalid)" if key in NAN_REPORT_FIELDS else ""))
            return np.array([x])

        return report

    def _host_input(self, inputs: Mapping[str, Any], item: Mapping[str, Any], size: int) -> np.ndarray:
        name = item["name"]
        if not isinstance(inputs, Mapping):
            raise UnsafeCommandError(f"inputs = {_show(inputs)}; expected a mapping of host inputs by name")
        if name not in inputs:
            raise UnsafeCommandError(f"inputs: {name!r} is missing ({item['meaning']}, {item['unit']}, shape "
                                     f"{tuple(item['shape'])}); needed: {', '.join(self.host_inputs)}")
        raw = inputs[name]
        shape = tuple(item["shape"])
        if raw is None:
            raise UnsafeCommandError(f"inputs: {name} = None; allowed: an array of shape {shape}, "
                                     f"{_range_text(item['low'], item['high'], item['unit'])}")
        try:
            value = np.asarray(raw)
        except (ValueError, TypeError):
            raise UnsafeCommandError(f"inputs: {name} = {_show(raw)}; allowed: an array of shape {shape}") from None
        if value.dtype.kind not in "iuf":
            raise UnsafeCommandError(f"inputs: {name} has dtype {value.dtype} ({_show(raw)}); allowed: real numbers "
                                     f"(integer or float) of shape {shape}")
        if value.shape != shape and not (size == 1 and value.shape == ()):
            raise UnsafeCommandError(f"inputs: {name} has shape {value.shape}; allowed: {shape} ({item['meaning']})")
        value = value.astype(np.float64).ravel()
        bad = np.flatnonzero(~((value >= item["low"]) & (value <= item["high"])))  # NaN fails both
        if bad.size:
            k = int(bad[0])
            at = f"[{', '.join(map(str, np.unravel_index(k, shape)))}]" if size > 1 else ""
            raise UnsafeCommandError(f"inputs: {name}{at} = {_show(float(value[k]))}; allowed: "
                                     f"{_range_text(item['low'], item['high'], item['unit'])}")
        return value

    def observation(self, reports: Mapping[str, Any], inputs: Mapping[str, Any]) -> np.ndarray:
        """The policy's observation (width,) float32 in the manifest's order, as the environment builds it:
        report fields (NaN as 0 where the observation flags validity), values derived from them, host inputs
        and the previous action. Every value is checked (module docstring), not clipped or replaced."""
        report = self._reader(reports)
        buf = np.empty(self.width)
        for item, sl in zip(self.items, self._slices, strict=True):
            name, source = item["name"], item["source"]
            if source == "report":
                buf[sl] = [report(f)[0] for f in item["report_fields"]]
            elif source == "report_derived":
                buf[sl] = DERIVED[name][0](report, self.brake_max_bar).ravel()
            elif source == "action":
                buf[sl] = self.previous_action
            else:
                buf[sl] = self._host_input(inputs, item, sl.stop - sl.start)
                continue
            values = buf[sl]
            bad = np.flatnonzero(~np.isnan(values) & ~((values >= self._low[sl]) & (values <= self._high[sl])))
            if bad.size:
                k = int(bad[0])
                field = item["report_fields"][k] if source == "report" else \
                    f"{name}[{k}] (from {', '.join(item['report_fields'])})"
                raise UnsafeCommandError(f"reports: {field} = {_show(float(values[k]))}; allowed: "
                                         f"{_range_text(item['low'], item['high'], item['unit'])}")
            values[np.isnan(values)] = 0.0  # a flagged invalid report value (``NAN_REPORT_FIELDS``)
        return buf.astype(np.float32)

    def _check_observation(self, observation: Any) -> np.ndarray:
        x = np.asarray(observation)
        if x.dtype.kind not in "iuf" or x.ndim not in (1, 2) or x.shape[-1] != self.width:
            raise UnsafeCommandError(f"observation has shape {x.shape} and dtype {x.dtype}; allowed: (width,) or "
                                     f"(batch, width) real numbers, width {self.width}")
        x32 = x.astype(np.float32)
        bad = np.argwhere(~((x32 >= self._low.astype(np.float32)) & (x32 <= self._high.astype(np.float32))))
        if bad.size:
            j = int(bad[0][-1])
            item = next(i for i, sl in zip(self.items, self._slices, strict=True) if sl.start <= j < sl.stop)
            raise UnsafeCommandError(f"observation[{j}] ({item['name']}) = {_show(float(x32[tuple(bad[0])]))}; "
                                     f"allowed: {_range_text(item['low'], item['high'], item['unit'])}")
        return x32

    def normalize(self, observation: np.ndarray) -> np.ndarray:
        """The observation as the graph takes it: the run's normalisation in float64, then the graph's
        dtype (``observation.dtype`` of the manifest, float32 unless exported with ``--dtype float64``)."""
        x = np.asarray(observation, dtype=np.float32)
        if self._eps is None:
            return x.astype(self._dtype)
        z = np.clip((x - self._mean) / self._scale, -self._clip, self._clip)
        return np.where(self._normalized, z, x).astype(self._dtype)

    # --- action -----------------------------------------------------------------------------------------
    def act(self, observation: np.ndarray) -> np.ndarray:
        """The deterministic action(s) for raw observation(s) (width,) or (batch, width): float32 in [-1, 1].
        The observation must be finite and within its bounds, and so must the graph's output."""
        x = self.normalize(self._check_observation(observation))
        single = x.ndim == 1
        out = self.session.run([self._output], {self._input: x[None] if single else x})[0]
        if out.shape != (x.shape[0] if not single else 1, self.action_dim):
            raise UnsafeCommandError(f"policy output has shape {out.shape}; allowed: (batch, {self.action_dim})")
        bad = np.argwhere(~((out >= -1.0) & (out <= 1.0)))
        if bad.size:
            j = int(bad[0][-1])
            raise UnsafeCommandError(f"policy output: action component {self.components[j]!r} = "
                                     f"{_show(float(out[tuple(bad[0])]))}; allowed: a finite number in [-1, 1]")
        return out[0] if single else out

    def _check_action(self, action: Any) -> np.ndarray:
        if action is None:
            raise UnsafeCommandError(f"action = None; allowed: {self.action_dim} finite numbers in [-1, 1]")
        a = np.asarray(action)
        if a.dtype.kind not in "iuf" or a.shape != (self.action_dim,):
            raise UnsafeCommandError(f"action has shape {a.shape} and dtype {a.dtype}; allowed: shape "
                                     f"({self.action_dim},), finite numbers in [-1, 1]")
        a = a.astype(np.float64)
        bad = np.flatnonzero(~((a >= -1.0) & (a <= 1.0)))
        if bad.size:
            j = int(bad[0])
            raise UnsafeCommandError(f"action component {self.components[j]!r} = {_show(float(a[j]))}; allowed: "
                                     "a finite number in [-1, 1]")
        return a

    def _axis(self, axis: Mapping[str, Any] | None, a: np.ndarray, between: int) -> int:
        x = a[axis["component"]]
        return axis["at_or_above"] if x >= axis["threshold"] else axis["at_or_below_negative"] \
            if x <= -axis["threshold"] else axis.get("between", between)

    def commands(self, action: np.ndarray, reports: Mapping[str, Any] | None = None) -> dict[str, dict[str, Any]]:
        """The DBW command messages for one action (the manifest's command map), checked against the DBW
        ranges. ``reports`` (the gear report) is needed only with the gear axis."""
        a = self._check_action(action)
        values: dict[str, Any] = dict(self._constants)
        for f in self._fields:
            values[f["field"]] = float(command_value(f, a[f["component"]]))
        gear = GEAR_NONE
        if self._gear_axis is not None:
            request = self._axis(self._gear_axis, a, GEAR_NONE)
            if request != GEAR_NONE:
                if reports is None:
                    raise UnsafeCommandError("commands: the gear axis needs the gear report (reports['gear'])")
                report = self._reader(reports)
                target = int(report("gear.cmd")[0])
                target = int(report("gear.gear")[0]) if target == GEAR_NONE else target
                gear = request if request != target else GEAR_NONE
        if gear == GEAR_NONE and self._first:
            gear = self._first_gear
        messages = {}
        for topic in self._messages:
            messages[topic] = {msg: values[field] for field, msg in COMMAND_MESSAGES[topic].items() if msg is not None}
        if gear != GEAR_NONE:
            messages["gear/cmd"] = {"cmd": {"value": int(gear)}}  # GearCmd.cmd is a ds_dbw_msgs/Gear
        check_messages(messages, self.vehicle)
        return messages

    def step(self, reports: Mapping[str, Any], inputs: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
        """One control step: the command messages to publish for the latest reports and host inputs (and,
        with the AWD axis, ``drive_mode_request``). Raises ``UnsafeCommandError`` instead of commanding from
        anything invalid; the state (previous action, first step) then stays as it was."""
        action = self.act(self.observation(reports, inputs))
        messages = self.commands(action, reports)
        if self._drive_axis is not None:
            self.drive_mode_request = int(self._axis(self._drive_axis, action.astype(np.float64), DRIVE_TWO_WHEEL))
        self.last_action = action
        self.previous_action = action.astype(np.float64)
        self._first = False
        if "steering/cmd" in messages:
            self._last_steering = dict(messages["steering/cmd"])
        return messages

    # --- the stop -----------------------------------------------------------------------------------------
    def safe_stop(self, reports: Mapping[str, Any] | None = None) -> dict[str, dict[str, Any]]:
        """The messages a host sends, every control step, after an ``UnsafeCommandError`` until the vehicle
        stands (and then until the operator takes over): throttle 0 %; the brake at ``stop_brake_pct``
        percent of full scale (the vehicle's stop-hold brake unless the runtime was given another), so the
        vehicle stops on its brakes within the DBW ranges (the brake message preempts the ULC, which is
        told to let go); the steering wheel held at its measured angle (the reports' valid
        ``steering.steering_wheel_angle``), else at the last angle, percent or curvature command the
        runtime sent, else not commanded (the DBW layer leaves the wheel where it is). No gear message: a
        range shift is refused while moving. The messages are checked like every other."""
        v = self.vehicle
        messages: dict[str, dict[str, Any]] = {
            "throttle/cmd": {"cmd_type": PEDAL_PERCENT, "cmd": 0.0, "rate_inc": 0.0, "rate_dec": 0.0,
                             "enable": True},
            "brake/cmd": {"cmd_type": PEDAL_PERCENT, "cmd": float(v["ulc_stop_brake_pct"]), "rate_inc": 0.0,
                          "rate_dec": 0.0, "enable": True},
        }
        if "ulc/cmd" in self._messages:
            messages["ulc/cmd"] = {"cmd_type": ULC_NONE, "cmd": 0.0, "limit_accel": 0.0, "limit_decel": 0.0,
                                   "limit_jerk_throttle": 0.0, "limit_jerk_brake": 0.0, "enable": False,
                                   "coast_decel": False}
        steering = None
        angle = None
        if reports is not None:
            try:
                angle = float(self._reader(reports)("steering.steering_wheel_angle")[0])
            except UnsafeCommandError:
                angle = None
        if angle is not None and math.isfinite(angle) and abs(angle) <= v["steer_command_deg"]:
            steering = {"cmd_type": STEER_ANGLE, "cmd": angle, "cmd_rate": 0.0, "cmd_accel": 0.0, "enable": True}
        elif self._last_steering is not None and self._last_steering["cmd_type"] in (STEER_ANGLE, STEER_PERCENT,
                                                                                     STEER_CURVATURE):
            steering = dict(self._last_steering)
        if steering is not None:
            messages["steering/cmd"] = steering
        check_messages(messages, v, "safe_stop")
        return messages
