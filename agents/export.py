"""Export a trained policy for the vehicle: ONNX graph and manifest (``python -m acres_gym.agents.export``).

    python -m acres_gym.agents.export runs/<run>/model.zip --out policy/

reads what ``train.py`` saved in a run directory (``model.zip``, ``config.yaml`` and ``vecnormalize.pkl``
when the run normalised its observations) and writes two files to ``--out``:

``policy.onnx``
    The deterministic action of the policy (PPO: the Gaussian's mean clipped to the action space, as
    ``model.predict(..., deterministic=True)``; SAC: tanh of the mean). Input ``observation``:
    float32 (batch, width), the *normalised* observation in the manifest's order; output ``action``:
    float32 (batch, k) in [-1, 1]. ``--dtype float64`` writes the same weights computing in double
    precision (input and output float64): a check of the runtime against the model's network without
    float32 rounding, which a closed loop with thresholds (the range and AWD axes) can turn into a
    different episode.
``manifest.json``
    Everything the runtime (``acres_gym.vehicle.deploy``) needs besides the graph, derived from the environment
    the run trained on (its observation items and action mode, ``acres_gym.envs``), not written by hand:

    - ``observation.items``: in order, each with its offset and shape in the flat vector, unit, meaning,
      ``source`` (``report``: DBW report fields copied; ``report_derived``: computed from report fields by
      ``acres_gym.dbw.report_values``; ``body``: IMU / localisation; ``task``: the planner's reference or
      the navigation task's goal and map; ``action``: the runtime's own previous action), the report fields
      it reads, its bounds and its normalisation (``mean`` and ``var`` per element: ``clip((x - mean) /
      sqrt(var + epsilon), -clip, clip)``; none when the run did not normalise); ``report_kinds``, the kind
      of every report field read (``f`` number, ``i`` enum, ``b`` flag);
    - ``host_inputs``: the items the host supplies (``body`` and ``task``), with shape, unit, bounds and
      meaning; the navigation task's ``goal`` with its two components (distance, m, and bearing in the
      vehicle frame, rad, left +) and ``local_map`` with its channels (name, unit, meaning), cell size,
      rows and columns, extent ahead, behind and to each side, and frame (heading-up from the rear-axle
      midpoint, row 0 farthest ahead, column 0 farthest left): the host builds it from its own map;
    - ``action``: the mode, its components and options, and for every DBW command field it writes
      (``acres_gym.dbw.command`` names, with the ds_dbw message and field) either a constant or the
      component it follows, ``value = offset + gain_pos x a`` for a >= 0 and ``offset + gain_neg x a``
      below, found by probing the action mode's own ``write`` and checked on random actions; the gear
      axis and the AWD-switch axis (if any: the component, threshold and what each side asks for) and the
      range sent on the first step of a drive;
    - ``control_hz``, the task (its name and, for path and speed tasks, ``speed_preview_s`` and
      ``path_preview_m``) and the vehicle's command limits the runtime checks messages against
      (``acres_gym.vehicle.deploy.VEHICLE_LIMITS``: the angle, curvature and yaw-rate command ranges, the
      full-scale brake pressure that also turns percent brake reports to bar, and the stop-hold brake
      ``safe_stop`` sends).

After writing, the export runs the files through the runtime on 200 observations of the environment
(seeded random actions) and compares the actions with the model's (``check`` in the manifest); a
difference above 1e-5 is an error, and so is a manifest the runtime refuses (a command outside its DBW
range for some action, such as a steering rate beyond SteeringCmd's range). A missing model, a run without
its ``config.yaml``, a run whose config normalised observations without its ``vecnormalize.pkl``, a damaged
run file (``acres_gym.agents.run_files``) or a model whose spaces differ from its environment's stop with a
one-line message and exit status 2. Run files are code (pickles): export only runs you trust; one outside
your runs directory gets a warning.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import json
import sys
import warnings
import zipfile
from pathlib import Path
from unittest import mock

import gymnasium
import numpy as np
import torch

import acres_gym  # noqa: F401  (registers the gymnasium ids)
from acres_gym.agents import run_files
from acres_gym.agents.sb3_models import SB3Policy
from acres_gym.constants import DRIVE_ALL_WHEEL, DRIVE_TURF, DRIVE_TWO_WHEEL, GEAR_HIGH, GEAR_LOW, GEAR_NONE
from acres_gym.dbw.command import COMMAND_MODES, make_commands
from acres_gym.dbw.reports import REPORT_FIELDS
from acres_gym.envs.actions import RANGE_THRESHOLD
from acres_gym.envs.observations import ITEMS, SOURCES
from acres_gym.envs.tasks.navigation import MAP_DEFAULTS
from acres_gym.vehicle.deploy import (
    COMMAND_MESSAGES,
    MANIFEST_FORMAT,
    VEHICLE_LIMITS,
    PolicyRuntime,
    command_unit,
    command_value,
)

# The navigation task's local_map channels (acres_gym.envs.tasks.navigation.MAP_CHANNELS): unit and meaning
# ({stalls}, {cap}, {clearance}: filled in by _channel_meaning from the task's stall_traction, route_time_cap_s and
# route_clearance_m).
MAP_CHANNEL_INFO = {
    "height": ("m", "terrain height at the cell centre minus the height under the rear-axle midpoint"),
    "grade": ("1", "slope of the terrain along the vehicle's heading at the cell centre (tan, + uphill)"),
    "traction": ("1", "steepest grade a hill start climbs there in L / AWD (tan; {stalls} even level ground "
                      "stalls), from the soil and wetness of the nearest map cell"),
    "no_go": ("0 / 1", "1 in a no-go area (water, dense vegetation) at the nearest map cell, and beyond the edge "
                       "of the mapped ground"),
    "route_time": ("s", "time to the goal along the quickest route a search over the map of the whole ground finds "
                        "from the route-grid cell nearest the cell (acres_gym.envs.tasks.offroad.time_to_goal: steps "
                        "that H / AWD climbs at 6 m/s, steps only L / AWD climbs at 3 m/s, no-go areas and impassable "
                        "ground kept {clearance:g} m away, or as little as the episode generator's solvability "
                        "search keeps them where that cuts the vehicle's start off the goal), "
                        "less the least such time over the map's cells on the mapped ground, at most {cap:g}; {cap:g} "
                        "where no route leaves the cell and beyond the edge of the mapped ground"),
    "grade_margin": ("1", "the traction channel less the grade channel at the cell (tan): how much steeper the "
                          "ground could rise along the vehicle's heading before a hill start there stalls; < 0 where "
                          "it stalls"),
}


def _channel_meaning(channel: str, local_map: dict) -> str:
    """A ``local_map`` channel's meaning as the task's options fill it: the traction channel reads < 0 where even
    level ground stalls, or the one value ``stall_traction`` writes there; route_time's cap and clearance are
    ``route_time_cap_s`` and ``route_clearance_m``."""
    stall = local_map.get("stall_traction")
    given = {**MAP_DEFAULTS, **local_map}
    return MAP_CHANNEL_INFO[channel][1].format(stalls="< 0 where" if stall is None else f"{stall:g} wherever",
                                               cap=given["route_time_cap_s"], clearance=given["route_clearance_m"])


ONNX_NAME = "policy.onnx"
MANIFEST_NAME = "manifest.json"
OPSET = 17
PROBE_ACTIONS = 256  # random actions the command map is checked on
CHECK_OBSERVATIONS = 200  # environment observations the written files are checked on against the model
CHECK_TOLERANCE = 1e-5  # largest difference of an action component allowed in that check


class DeterministicActor(torch.nn.Module):
    """The policy's deterministic action from a flat normalised observation (what ``predict`` returns)."""

    def __init__(self, policy, slices: dict[str, tuple[slice, tuple[int, ...]]], low: np.ndarray,
                 high: np.ndarray) -> None:
        super().__init__()
        self.policy = policy
        self.slices = slices
        self.register_buffer("low", torch.as_tensor(low, dtype=torch.float32))
        self.register_buffer("high", torch.as_tensor(high, dtype=torch.float32))

    def forward(self, observation: torch.Tensor) -> torch.Tensor:
        n = observation.shape[0]
        obs = {name: observation[:, sl].reshape((n, *shape)) for name, (sl, shape) in self.slices.items()}
        action = self.policy._predict(obs, deterministic=True)
        if self.policy.squash_output:  # SAC: tanh-squashed in [-1, 1], scaled to the space
            return self.low + 0.5 * (action + 1.0) * (self.high - self.low)
        return torch.maximum(torch.minimum(action, self.high), self.low)


@contextlib.contextmanager
def observations_as_given():
    """Within it, SB3 policies take their observations in the dtype given: its ``preprocess_obs`` casts a Box
    observation to float32 (``.float()``), which would undo a float64 network. Box observations need no other
    preprocessing (no images, no discrete entries: every acres_gym observation is a float32 Box)."""
    from stable_baselines3.common import policies

    with mock.patch.object(policies, "preprocess_obs", lambda obs, space, normalize_images=True: obs):
        yield


def _env_of_run(config: dict):
    """The environment a run trained on (one vehicle) and its ``RangerBatch``."""
    env = gymnasium.make(config["env_id"], config=config.get("task_config") or config.get("env_config"))
    return env, env.unwrapped._batch


def observation_manifest(batch, normalizer, dtype: str = "float32") -> dict:
    """The observation part of the manifest: items in order, with offsets, units, sources, bounds and
    normalisation."""
    observer = batch.observer
    items = []
    for name in observer.names:
        sl, shape = observer.slices[name]
        item = ITEMS[name]
        space = observer.space[name]
        entry = {
            "name": name, "offset": sl.start, "shape": list(shape), "unit": item.unit, "source": item.source,
            "meaning": item.meaning, "report_fields": list(item.report_fields),
            "low": float(np.min(space.low)), "high": float(np.max(space.high)),
        }
        if normalizer is not None and normalizer.norm_obs and name in (normalizer.norm_obs_keys or ()):
            rms = normalizer.obs_rms[name]
            entry["normalization"] = {"mean": np.ravel(rms.mean).tolist(), "var": np.ravel(rms.var).tolist()}
        items.append(entry)
    norm = None
    if normalizer is not None and normalizer.norm_obs:
        norm = {"epsilon": float(normalizer.epsilon), "clip": float(normalizer.clip_obs),
                "formula": "clip((x - mean) / sqrt(var + epsilon), -clip, clip), per element, in float64"}
    kinds = {f"{m}.{f}": kind for m, f, kind in REPORT_FIELDS}
    read = sorted({f for i in items for f in i["report_fields"]})
    return {"width": observer.width, "dtype": dtype, "items": items, "normalization": norm,
            "report_kinds": {f: kinds[f] for f in read},
            "sources": {key: SOURCES[key] for key in sorted({i["source"] for i in items})},
            "absent_values": "a NaN value of a report field whose validity report_valid carries becomes 0; any other "
                             "NaN, an infinite value or a value outside [low, high] is an error (the runtime raises "
                             "UnsafeCommandError)"}


def _message_of(field: str) -> tuple[str, str] | None:
    for topic, fields in COMMAND_MESSAGES.items():
        if field in fields:
            return topic, fields[field]
    return None


def command_map(mode, rng: np.random.Generator) -> dict:
    """How the action mode turns an action into DBW command fields, found by probing ``mode.write`` at 0
    and +-1 on each component and checked on random actions (see the module docstring)."""
    k = mode.flat_dim
    axes = [mode.components.index(c) for c in ("range", "drive_mode") if c in mode.components]
    linear = [j for j in range(k) if j not in axes]  # the gear and AWD axes are thresholds
    probes = [np.zeros(k)]
    for j in linear:
        for sign in (1.0, -1.0):
            a = np.zeros(k)
            a[j] = sign
            probes.append(a)
    batch = np.array(probes)
    cmd = make_commands(len(probes)).view(np.ndarray)
    mode.write(cmd, batch, np.ones(len(probes), dtype=bool))
    fields, constants = [], {}
    for name in cmd.dtype.names:
        target = _message_of(name)
        if target is None:
            continue
        v = cmd[name].astype(np.float64)
        moved = [j for n, j in enumerate(linear) if v[1 + 2 * n] != v[0] or v[2 + 2 * n] != v[0]]
        if not moved:
            constants[name] = cmd[name][0].item()
            continue
        if len(moved) > 1:
            raise ValueError(f"action mode {mode.name!r}: command field {name!r} depends on several components "
                             f"{[mode.components[j] for j in moved]}; the export handles one component per field")
        j = moved[0]
        n = linear.index(j)
        fields.append({"field": name, "component": j, "offset": float(v[0]), "gain_pos": float(v[1 + 2 * n] - v[0]),
                       "gain_neg": float(v[0] - v[2 + 2 * n])})
    # check on random actions (gear axis in its dead band: no gear message)
    a = rng.uniform(-1.0, 1.0, (PROBE_ACTIONS, k))
    if mode.gear_axis:
        a[:, mode.components.index("range")] = rng.uniform(-RANGE_THRESHOLD, RANGE_THRESHOLD, PROBE_ACTIONS) * 0.99
    cmd = make_commands(PROBE_ACTIONS).view(np.ndarray)
    mode.write(cmd, a, np.ones(PROBE_ACTIONS, dtype=bool))
    for f in fields:
        if not np.allclose(command_value(f, a[:, f["component"]]), cmd[f["field"]], rtol=1e-12, atol=1e-12):
            raise ValueError(f"action mode {mode.name!r}: command field {f['field']!r} is not piecewise linear in "
                             f"component {mode.components[f['component']]!r}; cannot describe it in a manifest")
    for name, value in constants.items():
        if not np.all(cmd[name] == value):
            raise ValueError(f"action mode {mode.name!r}: command field {name!r} is not constant")
    return {"fields": fields, "constants": constants}


def action_manifest(batch, rng: np.random.Generator) -> dict:
    """The action part of the manifest: mode, components, options, the command map, messages and units."""
    mode = batch.action_mode
    cmap = command_map(mode, rng)
    consts = cmap["constants"]
    for f in cmap["fields"]:
        topic, msg_field = _message_of(f["field"])
        f.update(message=topic, message_field=msg_field, action_component=mode.components[f["component"]],
                 unit=command_unit(f["field"], consts))
    sent = sorted(topic for topic, fields in COMMAND_MESSAGES.items()
                  if any(consts.get(name) is True and name.endswith("_fresh") for name in fields))
    gear = drive = None
    if mode.gear_axis:
        gear = {"component": mode.components.index("range"), "threshold": RANGE_THRESHOLD, "at_or_above": GEAR_HIGH,
                "at_or_below_negative": GEAR_LOW, "between": GEAR_NONE,
                "rule": "a GearCmd with the requested range when it differs from the gear engaged or being shifted "
                        "to (GearReport.cmd, or GearReport.gear before any accepted command)"}
    if mode.drive_axis:
        drive = {"component": mode.components.index("drive_mode"), "threshold": RANGE_THRESHOLD,
                 "at_or_above": DRIVE_ALL_WHEEL, "at_or_below_negative": DRIVE_TURF, "between": DRIVE_TWO_WHEEL,
                 "rule": "the AWD switch position asked for (DRIVE_*: 0 turf, 1 2wd, 2 awd); not a DBW command: "
                         "the runtime's drive_mode_request, which the host sets"}
    return {
        "mode": mode.name, "components": list(mode.components), "dim": mode.flat_dim, "low": -1.0, "high": 1.0,
        "options": dict(mode.options),
        "commands": cmap["fields"], "constants": consts, "messages": sent, "gear_axis": gear,
        "drive_axis": drive,
        "first_step_gear": mode.start_gear,
        "first_step_gear_rule": "on the first step of a drive a GearCmd for first_step_gear (the action mode's "
                                "start_range) is sent unless the gear axis sends one",
        "mode_names": {field: COMMAND_MODES[field][value] for field, value in consts.items() if field in COMMAND_MODES},
    }


def host_inputs_manifest(batch) -> dict:
    """The observation items the host supplies (IMU, planner, map), each with its shape, unit, bounds and
    meaning; the navigation task's ``goal`` and ``local_map`` with their components, channels and frame."""
    observer, task = batch.observer, batch.task
    out = {}
    for name in observer.names:
        item = ITEMS[name]
        if item.source not in ("body", "task"):
            continue
        space = observer.space[name]
        entry = {"shape": list(observer.slices[name][1]), "unit": item.unit, "source": item.source,
                 "meaning": item.meaning, "low": float(np.min(space.low)), "high": float(np.max(space.high))}
        if name == "goal":
            entry["components"] = [
                {"name": "distance", "unit": "m", "meaning": "distance from the rear-axle midpoint to the goal"},
                {"name": "bearing", "unit": "rad", "meaning": "direction of the goal in the vehicle frame (x forward, "
                 "y left, from the rear-axle midpoint): atan2(left, forward), positive left, in [-pi, pi]"}]
        if name == "local_map":
            m = task.options["local_map"]
            cell, rows, cols, behind = float(m["cell_m"]), int(m["rows"]), int(m["cols"]), float(m["behind_m"])
            entry.update({
                "channels": [{"name": c, "unit": MAP_CHANNEL_INFO[c][0], "meaning": _channel_meaning(c, m)}
                             for c in m["channels"]],
                "layout": "(channels, rows, cols)", "cell_m": cell, "rows": rows, "cols": cols,
                "extent_m": {"ahead": rows * cell - behind, "behind": behind, "left": cols * cell / 2.0,
                             "right": cols * cell / 2.0},
                "frame": "heading-up, horizontal, from the rear-axle midpoint: row 0 is the farthest ahead, column 0 "
                         "the farthest left; the centre of cell (r, q) lies (ahead - (r + 0.5) cell_m) forward and "
                         "(cols / 2 - q - 0.5) cell_m to the left",
            })
        out[name] = entry
    return out


def task_manifest(batch) -> dict:
    """The task the policy was trained on: its name and the previews of a path or speed task."""
    o = batch.task.options
    out = {"name": batch.task.name}
    for key in ("speed_preview_s", "path_preview_m"):
        if key in o:
            out[key] = [float(x) for x in o[key]]
    return out


def build_manifest(config: dict, batch, normalizer, model_path: Path, rng: np.random.Generator,
                   dtype: str = "float32") -> dict:
    params = batch.sim.params
    return {
        "format": MANIFEST_FORMAT,
        "onnx": ONNX_NAME, "onnx_input": "observation", "onnx_output": "action",
        "trained": {"model": str(model_path), "algo": config["algo"], "env_id": config["env_id"],
                    "total_steps": config.get("total_steps"), "seed": config.get("seed")},
        "control_hz": int(batch.control_hz),
        "command_timeout_s": float(params.command_timeout_s[0]),
        "vehicle": {name: float(params[name][0]) for name in VEHICLE_LIMITS},
        "task": task_manifest(batch),
        "host_inputs": host_inputs_manifest(batch),
        "observation": observation_manifest(batch, normalizer, dtype),
        "action": action_manifest(batch, rng),
    }


DTYPES = {"float32": torch.float32, "float64": torch.float64}


def export(model_path: str | Path, out: str | Path, dtype: str = "float32") -> dict:
    """Write ``policy.onnx`` and ``manifest.json`` of a ``train.py`` run to ``out``; returns the manifest.
    ``dtype`` is the graph's arithmetic: float32 as the model computes, or float64 (the same weights computed
    in double precision: to compare the runtime with the model's network without float32 rounding)."""
    if dtype not in DTYPES:
        raise ValueError(f"dtype = {dtype!r}; allowed: {', '.join(DTYPES)}")
    model_path = Path(model_path)
    files, config = run_files.load_run(model_path)  # missing, damaged or half-saved run files: RunFileError
    normalizer = run_files.load_normalizer(files, config)  # required when the config normalised observations
    env, batch = _env_of_run(config)
    model = run_files.load_model(files, config["algo"], device="cpu")
    if model.observation_space != batch.observation_space or model.action_space != batch.action_space:
        raise ValueError(f"{model_path}: the model's observation or action space differs from its environment's "
                         f"({config['env_id']} with the run's config)")
    manifest = build_manifest(config, batch, normalizer, model_path, np.random.default_rng(0), dtype)
    observations = sample_observations(env, CHECK_OBSERVATIONS)
    env.close()

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    observer = batch.observer
    space = model.action_space
    policy = model.policy if dtype == "float32" else copy.deepcopy(model.policy)
    actor = DeterministicActor(policy, observer.slices, space.low, space.high).to(DTYPES[dtype]).eval()
    example = torch.zeros((1, observer.width), dtype=DTYPES[dtype])
    # The TorchScript exporter (dynamo=False): the torch.export one needs onnxscript. Its deprecation notice and
    # the tracer's note on the distribution's argument check (a constant for a traced graph) are expected.
    as_given = observations_as_given() if dtype == "float64" else contextlib.nullcontext()
    with warnings.catch_warnings(), as_given:
        warnings.simplefilter("ignore", DeprecationWarning)
        warnings.simplefilter("ignore", torch.jit.TracerWarning)
        torch.onnx.export(actor, (example,), str(out / ONNX_NAME), input_names=["observation"],
                          output_names=["action"], dynamic_axes={"observation": {0: "batch"}, "action": {0: "batch"}},
                          opset_version=OPSET, dynamo=False)
    (out / MANIFEST_NAME).write_text(json.dumps(manifest, indent=1), encoding="utf-8")

    # the exported files against the model itself, through the runtime
    expected = SB3Policy(model, normalizer)(observations)
    flat = np.concatenate([observations[name].reshape(CHECK_OBSERVATIONS, -1) for name in observer.slices], axis=1)
    error = float(np.abs(PolicyRuntime(out).act(flat) - expected).max())
    manifest["check"] = {"observations": CHECK_OBSERVATIONS, "max_abs_action_error": error}
    (out / MANIFEST_NAME).write_text(json.dumps(manifest, indent=1), encoding="utf-8")
    if not error <= CHECK_TOLERANCE:
        raise ValueError(f"{out / ONNX_NAME}: the runtime's actions differ from the model's by {error:.3g} "
                         f"(> {CHECK_TOLERANCE}) on {CHECK_OBSERVATIONS} observations")
    return manifest


def sample_observations(env, n: int, seed: int = 0) -> dict[str, np.ndarray]:
    """n observations of the environment under seeded random actions (new episodes as they end), batched."""
    obs, _ = env.reset(seed=seed)
    env.action_space.seed(seed)
    out = []
    for _ in range(n):
        out.append(obs)
        obs, _, terminated, truncated, _ = env.step(env.action_space.sample())
        if terminated or truncated:
            obs, _ = env.reset()
    return {key: np.stack([o[key] for o in out]) for key in out[0]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Export a trained policy as ONNX with its manifest.")
    parser.add_argument("model", help="a train.py run's model.zip (config.yaml beside it)")
    parser.add_argument("--out", required=True, help="directory for policy.onnx and manifest.json")
    parser.add_argument("--dtype", choices=list(DTYPES), default="float32",
                        help="the graph's arithmetic (default float32, as the model computes)")
    args = parser.parse_args(argv)
    try:
        manifest = export(args.model, args.out, args.dtype)
    except (OSError, ValueError, KeyError, zipfile.BadZipFile) as exc:
        msg = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc
        print(f"acres_gym.agents.export: {msg}", file=sys.stderr)
        return 2
    obs = manifest["observation"]
    print(f"wrote {Path(args.out) / ONNX_NAME} and {Path(args.out) / MANIFEST_NAME}: {len(obs['items'])} observation "
          f"items ({obs['width']} values), action mode {manifest['action']['mode']!r} "
          f"({', '.join(manifest['action']['components'])}); the runtime's actions differ from the model's by at "
          f"most {manifest['check']['max_abs_action_error']:.2g} on {manifest['check']['observations']} observations")
    return 0


if __name__ == "__main__":
    sys.exit(main())
