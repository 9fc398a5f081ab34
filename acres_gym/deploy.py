"""The policy runtime for the vehicle: DBW reports in, DBW command messages out (numpy and onnxruntime only).

``python -m acres_gym.agents.export runs/<run>/model.zip --out policy/`` writes ``policy.onnx`` and
``manifest.json``; on the vehicle computer::

    from acres_gym.deploy import PolicyRuntime

    runtime = PolicyRuntime("policy/")          # once
    runtime.reset()                             # at the start of every autonomous drive
    messages = runtime.step(reports, inputs)    # every 1 / control_hz s
    # -> {"steering/cmd": {"cmd_type": 2, "cmd": -12.3, "cmd_rate": 0.0, ...}, "throttle/cmd": {...}, ...}

``reports`` holds the latest report messages with their ds_dbw_msgs field names, keyed by message:
``steering`` (SteeringReport), ``throttle``, ``brake``, ``gear``, ``ulc`` (UlcReport), ``vehicle_velocity``,
``wheel_speeds`` and ``dbw_enabled`` (``{"data": bool}``); a value the vehicle marks invalid is NaN, as
the node publishes it. Only the fields the policy reads are needed (``report_fields`` of the manifest's
report items, ``runtime.report_fields``); a flat ``{"steering.cmd": ...}`` dict works too. ``inputs``
holds the observation items that are not reports, by name, in the units of the manifest
(``runtime.host_inputs``: the IMU's yaw rate and roll / pitch, the planner's target speeds and path
points ahead, ...). The previous action is the runtime's own. The result is the command messages to
publish this step, by topic relative to the DBW namespace (``steering/cmd``, ``throttle/cmd``,
``brake/cmd``, ``ulc/cmd``; ``gear/cmd`` only on the steps that shift), with the ds_dbw field names and
structure (``{"cmd": {"value": 4}}`` for a GearCmd, whose ``cmd`` is a ``Gear``; report fields of such
types may likewise be ``{"value": ...}``), so ``rosidl_runtime_py``'s ``message_to_ordereddict`` and
``set_message_fields`` convert both ways; fields left out (``clear``, ``ignore``, ...) keep their message
defaults.

Engaging the DBW system (the ``enable`` topic or the vehicle's button) is the operator's act, not the
runtime's: the policy observes ``dbw_enabled`` and drives the same whether or not it is engaged.

Importing this module loads neither numba nor torch nor stable-baselines3.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from acres_gym.constants import (
    GEAR_NONE,
    PEDAL_BRAKE_PRESSURE,
    PEDAL_PERCENT,
    PEDAL_RAW,
    STEER_ANGLE,
    STEER_CURVATURE,
    STEER_PERCENT,
    STEER_YAW_RATE,
    ULC_ACCEL,
    ULC_VELOCITY,
)
from acres_gym.dbw.command import ARRIVAL_OF, MESSAGE_FIELDS
from acres_gym.dbw.report_values import DERIVED

MANIFEST_FORMAT = "acres_gym.policy/1"

# ds_dbw command message (topic under the DBW namespace) -> {DbwCommand field: message field}, from the command
# spec; the ``*_fresh`` field (message field None) says whether the message is sent at all.
_COMMAND_TOPICS = {"SteeringCmd": "steering/cmd", "ThrottleCmd": "throttle/cmd", "BrakeCmd": "brake/cmd",
                   "UlcCmd": "ulc/cmd", "GearCmd": "gear/cmd"}
COMMAND_MESSAGES: dict[str, dict[str, str | None]] = {
    topic: {**({ARRIVAL_OF[message]: None} if message in ARRIVAL_OF else {}), **MESSAGE_FIELDS[message]}
    for message, topic in _COMMAND_TOPICS.items()}

# unit of a setpoint field by its message's cmd_type (ds_dbw_msgs)
_SETPOINT_UNITS = {
    "steer_cmd": ("steer_mode", {STEER_ANGLE: "deg", STEER_CURVATURE: "1/m", STEER_YAW_RATE: "rad/s",
                                 STEER_PERCENT: "%"}),
    "throttle_cmd": ("throttle_mode", {PEDAL_PERCENT: "%", PEDAL_RAW: "%"}),
    "brake_cmd": ("brake_mode", {PEDAL_PERCENT: "%", PEDAL_RAW: "%", PEDAL_BRAKE_PRESSURE: "bar"}),
    "ulc_cmd": ("ulc_mode", {ULC_VELOCITY: "m/s", ULC_ACCEL: "m/s^2"}),
}


def command_unit(field: str, constants: Mapping[str, Any]) -> str:
    """The unit of a varying command field, given the message's constant fields (its ``cmd_type``)."""
    if field in _SETPOINT_UNITS:
        mode_field, units = _SETPOINT_UNITS[field]
        return units.get(constants.get(mode_field), "?")
    return {"steer_rate_deg_s": "deg/s", "steer_accel_deg_s2": "deg/s^2"}.get(field, "?")


def command_value(entry: Mapping[str, Any], a):
    """A command field following one action component ``a`` (scalar or array), as the manifest describes it:
    ``offset + gain_pos x a`` for a >= 0, ``offset + gain_neg x a`` below."""
    return entry["offset"] + np.where(a >= 0.0, entry["gain_pos"], entry["gain_neg"]) * a


class PolicyRuntime:
    """An exported policy (``policy.onnx`` + ``manifest.json``) driving through DBW messages (module
    docstring). ``step`` is ``observation`` -> ``act`` -> ``commands``; each is usable alone."""

    def __init__(self, policy_dir: str | Path, providers: tuple[str, ...] = ("CPUExecutionProvider",)) -> None:
        import onnxruntime

        policy_dir = Path(policy_dir)
        path = policy_dir / "manifest.json"
        if not path.is_file():
            raise FileNotFoundError(f"{path}: no manifest (python -m acres_gym.agents.export writes it)")
        m = json.loads(path.read_text(encoding="utf-8"))
        if m.get("format") != MANIFEST_FORMAT:
            raise ValueError(f"{path}: format {m.get('format')!r}; this runtime reads {MANIFEST_FORMAT!r}")
        self.manifest = m
        self.control_hz = int(m["control_hz"])
        self.brake_max_bar = np.array([m["vehicle"]["brake_max_bar"]], dtype=np.float64)
        self.session = onnxruntime.InferenceSession(str(policy_dir / m["onnx"]), providers=list(providers))
        self._input, self._output = m["onnx_input"], m["onnx_output"]

        obs = m["observation"]
        self.width = int(obs["width"])
        self.items = obs["items"]
        self._low = np.empty(self.width)
        self._high = np.empty(self.width)
        self._mean = np.zeros(self.width)
        self._var = np.ones(self.width)
        self._normalized = np.zeros(self.width, dtype=bool)
        for item in self.items:
            sl = self._slice(item)
            self._low[sl], self._high[sl] = item["low"], item["high"]
            if "normalization" in item:
                self._mean[sl] = item["normalization"]["mean"]
                self._var[sl] = item["normalization"]["var"]
                self._normalized[sl] = True
        norm = obs["normalization"]
        self._eps, self._clip = (norm["epsilon"], norm["clip"]) if norm else (None, None)
        self.report_fields = sorted({f for i in self.items if i["source"].startswith("report") for f in
                                     i["report_fields"]})
        self.host_inputs = {i["name"]: tuple(i["shape"]) for i in self.items if i["source"] in ("body", "task")}

        act = m["action"]
        self.action_dim = int(act["dim"])
        self._fields = act["commands"]
        self._constants = act["constants"]
        self._messages = act["messages"]
        self._gear_axis = act["gear_axis"]
        self._first_gear = int(act["first_step_gear"])
        self.reset()

    @staticmethod
    def _slice(item: Mapping[str, Any]) -> slice:
        return slice(item["offset"], item["offset"] + int(np.prod(item["shape"], dtype=int)))

    def reset(self) -> None:
        """Start a drive: the previous action is zero and the first step sends the range (H)."""
        self.previous_action = np.zeros(self.action_dim)
        self._first = True

    # --- observation ----------------------------------------------------------------------------------
    @staticmethod
    def _reader(reports: Mapping[str, Any]):
        def report(key: str) -> np.ndarray:
            message, field = key.split(".", 1)
            try:
                value = reports[key] if key in reports else reports[message][field]
            except (KeyError, TypeError):
                raise ValueError(f"reports: {key!r} is missing (the policy reads it; NaN when the vehicle marks it "
                                 "invalid)") from None
            if isinstance(value, Mapping):  # a ds_dbw field type (Gear, ...): a message holding ``value``
                value = value["value"]
            return np.array([float(value)])

        return report

    def observation(self, reports: Mapping[str, Any], inputs: Mapping[str, Any]) -> np.ndarray:
        """The policy's observation (width,) float32 in the manifest's order, exactly as the environment
        builds it: report fields, values derived from them, host inputs and the previous action, clipped to
        their bounds, NaN as 0."""
        report = self._reader(reports)
        buf = np.empty(self.width)
        for item in self.items:
            sl, name, source = self._slice(item), item["name"], item["source"]
            if source == "report":
                buf[sl] = [report(f)[0] for f in item["report_fields"]]
            elif source == "report_derived":
                buf[sl] = DERIVED[name][0](report, self.brake_max_bar).ravel()
            elif source == "action":
                buf[sl] = self.previous_action
            else:
                if name not in inputs:
                    raise ValueError(f"inputs: {name!r} is missing ({item['meaning']}, {item['unit']}, shape "
                                     f"{tuple(item['shape'])}); needed: {', '.join(self.host_inputs)}")
                value = np.asarray(inputs[name], dtype=np.float64)
                if value.size != sl.stop - sl.start:
                    raise ValueError(f"inputs: {name!r} has {value.size} values; expected shape {tuple(item['shape'])}"
                                     f" ({item['meaning']})")
                buf[sl] = value.ravel()
        np.clip(buf, self._low, self._high, out=buf)
        buf[np.isnan(buf)] = 0.0
        return buf.astype(np.float32)

    def normalize(self, observation: np.ndarray) -> np.ndarray:
        """The observation as the graph takes it: the run's normalisation in float64, then float32."""
        x = np.asarray(observation, dtype=np.float32)
        if self._eps is None:
            return x
        z = np.clip((x - self._mean) / np.sqrt(self._var + self._eps), -self._clip, self._clip)
        return np.where(self._normalized, z, x).astype(np.float32)

    # --- action -----------------------------------------------------------------------------------------
    def act(self, observation: np.ndarray) -> np.ndarray:
        """The deterministic action(s) for raw observation(s) (width,) or (batch, width): float32 in [-1, 1]."""
        x = self.normalize(observation)
        single = x.ndim == 1
        out = self.session.run([self._output], {self._input: x[None] if single else x})[0]
        return out[0] if single else out

    def commands(self, action: np.ndarray, reports: Mapping[str, Any] | None = None) -> dict[str, dict[str, Any]]:
        """The DBW command messages for one action (the manifest's command map). ``reports`` (the gear
        report) is needed only with the gear axis."""
        a = np.clip(np.asarray(action, dtype=np.float64).reshape(self.action_dim), -1.0, 1.0)
        values: dict[str, Any] = dict(self._constants)
        for f in self._fields:
            values[f["field"]] = float(command_value(f, a[f["component"]]))
        gear = GEAR_NONE
        if self._gear_axis is not None:
            g = self._gear_axis
            x = a[g["component"]]
            request = g["at_or_above"] if x >= g["threshold"] else g["at_or_below_negative"] if x <= -g["threshold"] \
                else GEAR_NONE
            if request != GEAR_NONE:
                if reports is None:
                    raise ValueError("commands: the gear axis needs the gear report (reports['gear'])")
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
        return messages

    def step(self, reports: Mapping[str, Any], inputs: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
        """One control step: the command messages to publish for the latest reports and host inputs."""
        action = self.act(self.observation(reports, inputs))
        messages = self.commands(action, reports)
        self.last_action = action
        self.previous_action = np.clip(action.astype(np.float64), -1.0, 1.0)
        self._first = False
        return messages
