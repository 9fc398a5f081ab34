"""The vehicle runtime never sends a bad command: fuzzed reports, host inputs, actions, manifests and graphs
give either finite messages within the DBW ranges or ``UnsafeCommandError`` naming the field, and
``safe_stop`` brings the vehicle to rest.

The ranges the messages are checked against here come from the vehicle file and the DBW model's own
constants, not from the runtime, so the runtime's table is checked too."""

from __future__ import annotations

import copy
import json
import math
import shutil

import gymnasium
import numpy as np
import pytest
from test_export import NAV, PATH, SPEED, export_run

import acres_gym  # noqa: F401
from acres_gym.agents.pretrained import host_inputs
from acres_gym.constants import (
    GEAR_HIGH,
    GEAR_LOW,
    PEDAL_BRAKE_PRESSURE,
    PEDAL_PERCENT,
    PEDAL_RAW,
    PHYSICS_HZ,
    STEER_ANGLE,
    STEER_CURVATURE,
    STEER_PERCENT,
    STEER_YAW_RATE,
    ULC_ACCEL,
    ULC_VELOCITY,
)
from acres_gym.dbw.command import COMMAND_MODES
from acres_gym.dbw.reports import dbw_reports
from acres_gym.dbw.steering import STEER_ACCEL_MAX_DEG_S2, STEER_RATE_MAX_DEG_S
from acres_gym.dbw.ulc import ULC_ACCEL_CMD_MAX_MPS2, ULC_ACCEL_CMD_MIN_MPS2, ULC_VEL_MAX_MPS, ULC_VEL_MIN_MPS
from acres_gym.envs.actions import ULC_ACCEL_RANGE_MPS2, ULC_VELOCITY_RANGE_MPS
from acres_gym.envs.config import ALLOWED_CONTROL_HZ, MIN_CONTROL_HZ
from acres_gym.params import load_vehicle
from acres_gym.vehicle import deploy
from acres_gym.vehicle.deploy import COMMAND_MESSAGES, ManifestError, PolicyRuntime, UnsafeCommandError

pytest.importorskip("onnxruntime")
onnx = pytest.importorskip("onnx")

VEHICLE = load_vehicle("polaris_ranger_crew_xp1000")
# run name -> (algorithm, (env id, env config))
POLICIES = {"pedals": ("ppo", SPEED), "ulc": ("sac", PATH), "nav": ("ppo", NAV)}
BAD_VALUES = [math.nan, math.inf, -math.inf, None, "1.0", [1.0, 2.0], 1e9, -1e9, True, {"value": math.nan},
              np.array([[1.0]]), 1 + 2j, np.float32(math.nan), {"x": 1}, object()]


@pytest.fixture(scope="module")
def policies(tmp_path_factory):
    cache = {}

    def get(which):
        if which not in cache:
            algo, (env_id, env_config) = POLICIES[which]
            _, _, out = export_run(tmp_path_factory.mktemp(which), algo, env_id, env_config)
            cache[which] = out
        return cache[which]

    return get


def states(which: str, n: int, seed: int = 0) -> list[tuple[dict, dict]]:
    """n (reports, host inputs) pairs of the environment under random actions, as the host reads them."""
    _, (env_id, env_config) = POLICIES[which]
    env = gymnasium.make(env_id, config=env_config)
    env.reset(seed=seed)
    env.action_space.seed(seed)
    batch = env.unwrapped._batch
    out = []
    for _ in range(n):
        reports = {m: {k: v[0].item() for k, v in fields.items()} for m, fields in
                   dbw_reports(batch.sim.params, batch.sim.state).items()}
        out.append((reports, {k: np.array(v, dtype=np.float64) for k, v in host_inputs(batch, 0).items()}))
        _, _, term, trunc, _ = env.step(env.action_space.sample())
        if term or trunc:
            env.reset()
    env.close()
    return out


def assert_valid_messages(messages: dict) -> None:
    """Every message a known command topic, every value finite and within the DBW range of its field, from
    the vehicle file and the DBW model's constants."""
    p = VEHICLE
    setpoint = {
        "steering/cmd": {STEER_ANGLE: p.steer_command_deg, STEER_CURVATURE: p.max_curvature_per_m,
                         STEER_YAW_RATE: p.max_yaw_rate_rad_s, STEER_PERCENT: 100.0},
        "throttle/cmd": {PEDAL_PERCENT: (0.0, 100.0), PEDAL_RAW: (0.0, 100.0)},
        "brake/cmd": {PEDAL_PERCENT: (0.0, 100.0), PEDAL_RAW: (0.0, 100.0),
                      PEDAL_BRAKE_PRESSURE: (0.0, float(p.brake_max_bar))},
        "ulc/cmd": {ULC_VELOCITY: (ULC_VEL_MIN_MPS, ULC_VEL_MAX_MPS),
                    ULC_ACCEL: (ULC_ACCEL_CMD_MIN_MPS2, ULC_ACCEL_CMD_MAX_MPS2)},
    }
    for topic, msg in messages.items():
        assert topic in COMMAND_MESSAGES, topic
        if topic == "gear/cmd":
            assert msg == {"cmd": {"value": GEAR_HIGH}} or msg == {"cmd": {"value": GEAR_LOW}}, msg
            continue
        for key, value in msg.items():
            assert type(value) in (bool, int, float), (topic, key, value)
            if type(value) is float:
                assert math.isfinite(value), (topic, key, value)
        mode = msg["cmd_type"]
        mode_field = {"steering/cmd": "steer_mode", "throttle/cmd": "throttle_mode", "brake/cmd": "brake_mode",
                      "ulc/cmd": "ulc_mode"}[topic]
        assert mode in COMMAND_MODES[mode_field], (topic, mode)
        bounds = setpoint[topic].get(mode)
        if bounds is not None:
            lo, hi = (-bounds, bounds) if np.isscalar(bounds) else bounds
            assert lo <= msg["cmd"] <= hi, (topic, mode, msg["cmd"])
        for key in ("cmd_rate", "cmd_accel", "rate_inc", "rate_dec", "limit_accel", "limit_decel",
                    "limit_jerk_throttle", "limit_jerk_brake"):
            if key in msg:
                assert 0.0 <= msg[key] <= {"cmd_rate": STEER_RATE_MAX_DEG_S,
                                           "cmd_accel": STEER_ACCEL_MAX_DEG_S2}.get(key, math.inf), (topic, key)


def assert_named(exc: Exception, *names: str) -> None:
    text = str(exc)
    assert "\n" not in text, text
    assert any(n in text for n in names), (names, text)
    assert "allowed" in text or "missing" in text or "expected" in text, text


def test_the_runtime_ranges_are_the_dbw_models():
    assert deploy.ULC_VELOCITY_RANGE_MPS == (ULC_VEL_MIN_MPS, ULC_VEL_MAX_MPS) == ULC_VELOCITY_RANGE_MPS
    assert deploy.ULC_ACCEL_RANGE_MPS2 == (ULC_ACCEL_CMD_MIN_MPS2, ULC_ACCEL_CMD_MAX_MPS2) == ULC_ACCEL_RANGE_MPS2
    assert deploy.RATE_MAX == {"steer_rate_deg_s": STEER_RATE_MAX_DEG_S, "steer_accel_deg_s2": STEER_ACCEL_MAX_DEG_S2}
    assert deploy.MIN_CONTROL_HZ == MIN_CONTROL_HZ
    assert deploy.CONTROL_HZ == tuple(ALLOWED_CONTROL_HZ)
    assert all(PHYSICS_HZ % hz == 0 for hz in deploy.CONTROL_HZ)
    assert issubclass(UnsafeCommandError, ValueError) and issubclass(ManifestError, UnsafeCommandError)


@pytest.mark.parametrize("which", list(POLICIES))
def test_fuzzed_reports_and_inputs_give_valid_messages_or_the_named_error(policies, which):
    runtime = PolicyRuntime(policies(which))
    rng = np.random.default_rng(7)
    base = states(which, 30)
    for reports, inputs in base[:5]:  # the unchanged inputs drive
        assert_valid_messages(runtime.step(reports, inputs))
    raised = 0
    for _ in range(600):
        reports, inputs = copy.deepcopy(base[rng.integers(len(base))])
        if rng.random() < 0.5:
            key = runtime.report_fields[rng.integers(len(runtime.report_fields))]
            message, field = key.split(".", 1)
            bad = BAD_VALUES[rng.integers(len(BAD_VALUES))]
            if rng.random() < 0.2:
                del reports[message][field]
            else:
                reports[message][field] = bad
            names = (key,)
        else:
            name = list(runtime.host_inputs)[rng.integers(len(runtime.host_inputs))]
            value = np.array(inputs[name], dtype=np.float64)
            kind = rng.integers(5)
            if kind == 0:
                inputs[name] = BAD_VALUES[rng.integers(len(BAD_VALUES))]
            elif kind == 1:  # one element non-finite or far out of range
                value.reshape(-1)[rng.integers(value.size)] = [math.nan, math.inf, -math.inf, 1e7][rng.integers(4)]
                inputs[name] = value
            elif kind == 2:
                inputs[name] = value.reshape(-1)[:-1] if value.size > 1 else np.zeros(2)
            elif kind == 3:
                inputs[name] = value.astype(str) if rng.random() < 0.5 else value.astype(complex)
            else:
                del inputs[name]
            names = (name,)
        state = runtime.previous_action.copy()
        try:
            messages = runtime.step(reports, inputs)
        except UnsafeCommandError as exc:
            assert_named(exc, *names)
            np.testing.assert_array_equal(runtime.previous_action, state)  # an error changes nothing
            raised += 1
            continue
        assert_valid_messages(messages)
    assert raised > 300  # most mutations are invalid: the loop is not of valid inputs


def test_nothing_is_replaced_silently(policies):
    """The cases the runtime used to fill in: an absent lateral error is not 0, infinities are not their bound,
    a NaN wheel speed is not 0 (only the report fields whose validity the observation flags may be NaN)."""
    runtime = PolicyRuntime(policies("pedals"))
    reports, inputs = states("pedals", 3)[2]
    for name, value, shown in [("lateral_error", None, "None"), ("yaw_rate", math.inf, "inf"),
                               ("heading_error", -math.inf, "-inf"), ("target_speed", [math.nan] * 4, "nan"),
                               ("path_points", np.full(14, 5000.0), "5000")]:
        with pytest.raises(UnsafeCommandError, match=rf"inputs: {name}\S* = .*{shown}.*; allowed") as err:
            runtime.step(reports, {**inputs, name: value})
        assert_named(err.value, name)
    for key, value in [("wheel_speeds.rear_left", math.nan), ("steering.steering_wheel_angle", math.inf),
                       ("vehicle_velocity.vehicle_velocity_brake", 1e4), ("gear.gear", 2.5),
                       ("dbw_enabled.data", "yes")]:
        message, field = key.split(".")
        bad = copy.deepcopy(reports)
        bad[message][field] = value
        with pytest.raises(UnsafeCommandError, match=rf"reports: {key} = ") as err:
            runtime.step(bad, inputs)
        assert_named(err.value, key)
    flagged = copy.deepcopy(reports)
    flagged["steering"]["cmd"] = math.nan  # the node's "no command echo": report_valid says so
    assert_valid_messages(runtime.step(flagged, inputs))


@pytest.mark.parametrize("which", list(POLICIES))
def test_actions_are_checked(policies, which):
    runtime = PolicyRuntime(policies(which))
    k = runtime.action_dim
    reports, _ = states(which, 1)[0]
    for action in [np.full(k, math.nan), np.full(k, math.inf), np.full(k, 1.5), np.zeros(k + 1), None,
                   np.zeros((1, k)), np.array(["0"] * k), [0.0] * (k - 1), np.full(k, -1.0000001)]:
        with pytest.raises(UnsafeCommandError, match="action") as err:
            runtime.commands(action, reports)
        assert "\n" not in str(err.value)
    rng = np.random.default_rng(3)
    for a in np.concatenate([rng.uniform(-1, 1, (300, k)), rng.choice([-1.0, 0.0, 1.0], (100, k))]):
        assert_valid_messages(runtime.commands(a, reports))


def _set(manifest: dict, path: tuple, value) -> None:
    node = manifest
    for key in path[:-1]:
        node = node[key]
    if value is _DELETE:
        del node[path[-1]]
    else:
        node[path[-1]] = value


_DELETE = object()


def _write(src, dst, manifest: dict, graph: bytes | None = None) -> None:
    dst.mkdir(parents=True, exist_ok=True)
    if graph is None:
        shutil.copy(src / "policy.onnx", dst / "policy.onnx")
    else:
        (dst / "policy.onnx").write_bytes(graph)
    (dst / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")  # NaN and Infinity as JSON allows


def _field_index(manifest: dict, field: str) -> int:
    return next(k for k, f in enumerate(manifest["action"]["commands"]) if f["field"] == field)


def test_tampered_manifests_are_refused_naming_the_key(policies, tmp_path):
    src = policies("pedals")
    good = json.loads((src / "manifest.json").read_text())
    brake = _field_index(good, "brake_cmd")
    throttle = _field_index(good, "throttle_cmd")
    cases = [
        (("control_hz",), 0, "control_hz"), (("control_hz",), 7, "control_hz"), (("control_hz",), 240, "control_hz"),
        (("control_hz",), "20", "control_hz"), (("control_hz",), 20.0, "control_hz"),
        (("command_timeout_s",), 0.04, "command_timeout_s"), (("command_timeout_s",), math.nan, "command_timeout_s"),
        (("vehicle", "brake_max_bar"), -5.0, "brake_max_bar"),
        (("vehicle", "brake_max_bar"), math.inf, "brake_max_bar"),
        (("vehicle", "steer_command_deg"), math.nan, "steer_command_deg"),
        (("vehicle", "ulc_stop_brake_pct"), 0.0, "ulc_stop_brake_pct"),
        (("vehicle",), _DELETE, "vehicle is missing"),
        (("action", "commands", brake, "gain_pos"), -55.0, "brake_cmd"),  # a -5500 % brake command
        (("action", "commands", brake, "offset"), -1.0, "brake_cmd"),
        (("action", "commands", throttle, "gain_pos"), math.inf, "gain_pos"),
        (("action", "commands", throttle, "gain_pos"), 1e6, "throttle_cmd"),
        (("action", "commands", throttle, "offset"), math.nan, "offset"),
        (("action", "commands", throttle, "component"), 9, "component"),
        (("action", "constants", "steer_mode"), 99, "steer_mode"),
        (("action", "constants", "steer_mode"), 2.0, "steer_mode"),
        (("action", "constants", "steer_rate_deg_s"), math.inf, "steer_rate_deg_s"),
        (("action", "constants", "steer_rate_deg_s"), -1.0, "steer_rate_deg_s"),
        (("action", "constants", "steer_enable"), 1, "steer_enable"),
        (("action", "constants", "brake_mode"), _DELETE, "brake_mode"),
        (("action", "first_step_gear"), 2, "first_step_gear"),
        (("action", "first_step_gear"), 15, "first_step_gear"),  # CALIBRATE
        (("action", "messages"), ["steering/cmd", "gear/cmd"], "messages"),
        (("action", "dim"), 0, "dim"),
        (("observation", "normalization", "epsilon"), 0.0, "epsilon"),
        (("observation", "normalization", "clip"), math.inf, "clip"),
        (("observation", "items", 0, "normalization", "var"), [-1.0], "var"),
        (("observation", "items", 0, "normalization", "mean"), [math.nan], "mean"),
        (("observation", "items", 1, "offset"), 3, "offset"),
        (("observation", "items", 1, "low"), 1e9, "high"),
        (("observation", "items", 1, "high"), math.inf, "high"),
        (("observation", "items", 1, "shape"), [0], "shape"),
        (("observation", "items", 1, "source"), "evil", "source"),
        (("observation", "items", 1, "report_fields"), ["nowhere.nothing"], "report_fields"),
        (("observation", "width"), good["observation"]["width"] + 1, "width"),
        (("observation", "report_kinds", "gear.gear"), "z", "report_kinds"),
        (("observation", "dtype"), "float64", "dtype"), (("observation", "dtype"), "int8", "dtype"),
        (("observation", "items", 2, "meaning"), _DELETE, "meaning"),
        (("onnx",), "../policy.onnx", "onnx"), (("onnx",), "absent.onnx", "onnx"),
        (("onnx_input",), "obs", "onnx_input"),
        (("format",), "acres_gym.policy/1", "format"),
    ]
    for k, (path, value, named) in enumerate(cases):
        manifest = copy.deepcopy(good)
        _set(manifest, path, value)
        _write(src, tmp_path / str(k), manifest)
        with pytest.raises(ManifestError) as err:
            PolicyRuntime(tmp_path / str(k))
        text = str(err.value)
        assert "\n" not in text and named in text, (path, value, text)
    (tmp_path / "json").mkdir()
    shutil.copy(src / "policy.onnx", tmp_path / "json" / "policy.onnx")
    (tmp_path / "json" / "manifest.json").write_text("{not json")
    with pytest.raises(ManifestError, match="not a JSON manifest"):
        PolicyRuntime(tmp_path / "json")


@pytest.mark.parametrize("which", ["pedals", "ulc"])
def test_randomly_tampered_manifests_give_valid_messages_or_the_named_error(policies, tmp_path, which):
    """Any number of the manifest's action, vehicle or normalisation set to a bad value: the runtime refuses
    to load, or every step gives valid messages or the named error."""
    src = policies(which)
    good = json.loads((src / "manifest.json").read_text())
    leaves = []

    def walk(node, path):
        if isinstance(node, dict):
            for key, value in node.items():
                walk(value, (*path, key))
        elif isinstance(node, list) and len(node) <= 64:
            for k, value in enumerate(node):
                walk(value, (*path, k))
        elif isinstance(node, (int, float)) and path[0] in ("action", "vehicle", "control_hz", "observation"):
            leaves.append(path)

    walk(good, ())
    rng = np.random.default_rng(11)
    base = states(which, 8)
    refused = ran = 0
    for k in range(150):
        manifest = copy.deepcopy(good)
        path = leaves[rng.integers(len(leaves))]
        value = [math.nan, math.inf, -math.inf, -1e6, 1e6, -1.0, 0.0, 0.5, 2, 7, True, None, "x"][rng.integers(13)]
        _set(manifest, path, value)
        _write(src, tmp_path / str(k), manifest)
        try:
            runtime = PolicyRuntime(tmp_path / str(k))
        except ManifestError as exc:
            assert "\n" not in str(exc) and any(str(p) in str(exc) for p in path), (path, value, str(exc))
            refused += 1
            continue
        ran += 1
        for reports, inputs in base:
            try:
                assert_valid_messages(runtime.step(reports, inputs))
            except UnsafeCommandError as exc:
                assert "\n" not in str(exc)
        for a in rng.choice([-1.0, 0.0, 1.0], (20, runtime.action_dim)):
            try:
                assert_valid_messages(runtime.commands(a, base[0][0]))
            except UnsafeCommandError as exc:
                assert "\n" not in str(exc)
    assert refused > 20 and ran > 20


def test_a_graph_with_a_non_finite_weight_never_commands(policies, tmp_path):
    """One NaN weight: the runtime refuses the graph on load. An infinite or huge weight anywhere: refused,
    or every step gives valid messages or the named error (the graph's output is checked)."""
    src = policies("pedals")
    manifest = json.loads((src / "manifest.json").read_text())
    model = onnx.load(str(src / "policy.onnx"))
    weights = [k for k, t in enumerate(model.graph.initializer)
               if t.data_type == onnx.TensorProto.FLOAT and np.prod(t.dims) > 1]
    assert len(weights) >= 4
    base = states("pedals", 10)
    rng = np.random.default_rng(5)
    refused = 0
    for case, k in enumerate(weights):
        for bad in (math.nan, math.inf, -math.inf, 1e30):
            tampered = copy.deepcopy(model)
            t = tampered.graph.initializer[k]
            w = onnx.numpy_helper.to_array(t).copy()
            w.reshape(-1)[rng.integers(w.size)] = bad
            t.CopyFrom(onnx.numpy_helper.from_array(w.astype(np.float32), t.name))
            d = tmp_path / f"{case}_{bad}"
            _write(src, d, manifest, tampered.SerializeToString())
            try:
                runtime = PolicyRuntime(d)
            except ManifestError as exc:
                assert "policy.onnx" in str(exc) and "\n" not in str(exc)
                refused += 1
                continue
            assert not math.isnan(bad), "a NaN weight was accepted"
            for reports, inputs in base:
                try:
                    assert_valid_messages(runtime.step(reports, inputs))
                except UnsafeCommandError as exc:
                    assert_named(exc, "policy output")
    assert refused >= len(weights)  # every NaN weight at least


def dbw_action(messages: dict) -> dict:
    """The raw dbw_command action that sends these messages (the simulator standing in for the vehicle)."""
    action = {}
    for topic, msg in messages.items():
        for field, msg_field in COMMAND_MESSAGES[topic].items():
            if msg_field is not None and msg_field != "enable":
                value = msg[msg_field]
                action[field] = value["value"] if isinstance(value, dict) else value
    return action


def test_safe_stop_holds_the_wheel_and_brakes_the_vehicle_to_rest(policies):
    runtime = PolicyRuntime(policies("pedals"))
    stop = runtime.safe_stop()
    assert_valid_messages(stop)
    assert stop["throttle/cmd"]["cmd"] == 0.0 and stop["throttle/cmd"]["enable"] is True
    assert stop["brake/cmd"] == {"cmd_type": PEDAL_PERCENT, "cmd": VEHICLE.ulc_stop_brake_pct, "rate_inc": 0.0,
                                 "rate_dec": 0.0, "enable": True}
    assert "steering/cmd" not in stop and "ulc/cmd" not in stop  # nothing sent yet: the wheel stays

    cfg = {"max_episode_s": 60.0, "action_mode": "dbw_command", "task_options": {"spawn_xy_m": [-150.0, 0.0]},
           "randomization": {"terrain": {"kind": "flat", "size_m": 400.0, "cell_m": 2.0, "surface": "grass"},
                             "patches": None, "wetness": None}}
    env = gymnasium.make(SPEED[0], config=cfg)
    env.reset(seed=1)
    batch = env.unwrapped._batch
    drive = {"steer_mode": STEER_ANGLE, "steer_cmd": 30.0, "throttle_mode": PEDAL_PERCENT, "throttle_cmd": 40.0,
             "gear_cmd": GEAR_HIGH}
    for _ in range(8 * runtime.control_hz):
        _, _, term, trunc, info = env.step(drive)
        drive = {**drive, "gear_cmd": 0}
    assert not (term or trunc)
    speed0 = info["speed_mps"]
    assert speed0 > 5.0
    reports = {m: {k: v[0].item() for k, v in fields.items()} for m, fields in
               dbw_reports(batch.sim.params, batch.sim.state).items()}
    angle = reports["steering"]["steering_wheel_angle"]
    assert abs(angle - 30.0) < 1.0
    speeds, angles = [], []
    for _ in range(6 * runtime.control_hz):
        reports = {m: {k: v[0].item() for k, v in fields.items()} for m, fields in
                   dbw_reports(batch.sim.params, batch.sim.state).items()}
        messages = runtime.safe_stop(reports)
        assert_valid_messages(messages)
        assert messages["steering/cmd"]["cmd_type"] == STEER_ANGLE
        _, _, term, trunc, info = env.step(dbw_action(messages))
        speeds.append(info["speed_mps"])
        angles.append(reports["steering"]["steering_wheel_angle"])
    env.close()
    assert abs(speeds[-1]) < 0.05  # at rest
    assert max(np.abs(speeds)) < speed0 + 0.2  # slowing from the first step
    stopped_s = (np.argmax(np.abs(speeds) < 0.05) + 1) / runtime.control_hz
    assert stopped_s < speed0 / 2.5 + 0.5  # at least 2.5 m/s^2 on average once the brake has built up
    assert np.ptp(angles) < 1.0  # the wheel held where it was


def test_safe_stop_without_a_valid_angle_holds_the_last_steering_command(policies):
    runtime = PolicyRuntime(policies("ulc"))
    reports, inputs = states("ulc", 3)[2]
    sent = runtime.step(reports, inputs)
    bad = copy.deepcopy(reports)
    bad["steering"]["steering_wheel_angle"] = math.nan
    with pytest.raises(UnsafeCommandError, match="steering.steering_wheel_angle"):
        runtime.step(bad, inputs)
    stop = runtime.safe_stop(bad)
    assert_valid_messages(stop)
    assert stop["steering/cmd"] == sent["steering/cmd"]  # the curvature command held
    assert stop["ulc/cmd"]["enable"] is False and stop["brake/cmd"]["cmd"] > 0.0
    assert PolicyRuntime(policies("ulc"), stop_brake_pct=60.0).safe_stop()["brake/cmd"]["cmd"] == 60.0
    with pytest.raises(ManifestError, match="stop_brake_pct"):
        PolicyRuntime(policies("ulc"), stop_brake_pct=math.inf)
