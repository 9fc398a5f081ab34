"""Policy export (ONNX + manifest) and the vehicle runtime ``acres_gym.vehicle.deploy``: the runtime's actions and
commands against the stable-baselines3 model and the environment's own DBW commands."""

from __future__ import annotations

import copy
import json
import subprocess
import sys

import gymnasium
import numpy as np
import pytest
import torch
import yaml
from stable_baselines3.common.vec_env import VecNormalize

import acres_gym  # noqa: F401
from acres_gym.agents.export import (
    MAP_CHANNEL_INFO,
    DeterministicActor,
    _channel_meaning,
    command_map,
    observations_as_given,
    sample_observations,
)
from acres_gym.agents.export import main as export_main
from acres_gym.agents.pretrained import host_inputs, vehicle_reports
from acres_gym.agents.sb3_models import SB3Policy, build_model, load_run_normalizer
from acres_gym.configuration import to_builtins
from acres_gym.constants import GEAR_LOW, GEAR_NONE
from acres_gym.dbw.reports import dbw_reports
from acres_gym.envs.actions import ACTION_MODES
from acres_gym.envs.sb3 import RangerSB3VecEnv
from acres_gym.envs.tasks.navigation import MAP_CHANNELS
from acres_gym.params import load_vehicle
from acres_gym.registration import ENVIRONMENTS
from acres_gym.vehicle.deploy import COMMAND_MESSAGES, PolicyRuntime, command_value

pytest.importorskip("onnxruntime")
pytest.importorskip("onnx")

FLAT = {"max_episode_s": 10.0,
        "randomization": {"terrain": {"kind": "flat", "size_m": 200.0, "cell_m": 2.0, "surface": "dry_asphalt"},
                          "patches": None, "wetness": None}}
SPEED = ("acres_gym/RangerSpeedTracking-v3", {**FLAT, "task_options": {"spawn_xy_m": [-80.0, 0.0]}})
PATH = ("acres_gym/RangerPathFollowing-v3", FLAT)
GEAR = (SPEED[0], {**SPEED[1], "action_options": {"gear_axis": True}})
LOW = (PATH[0], {**FLAT, "action_options": {"start_range": "L"}})  # low range throughout
# the navigation task as shipped (curvature and ULC speed, range and AWD-switch axes), shorter episodes
NAV = ("acres_gym/RangerOffroadNavigation-v2", {"max_episode_s": 30.0})
# run name -> (algorithm, (env id, env config), command messages its episodes send)
RUNS = {"ppo": ("ppo", SPEED, ("steering/cmd", "throttle/cmd", "brake/cmd", "gear/cmd")),
        "sac": ("sac", PATH, ("steering/cmd", "ulc/cmd", "gear/cmd")),
        "ppo_gear": ("ppo", GEAR, ("steering/cmd", "throttle/cmd", "brake/cmd", "gear/cmd")),
        "sac_low": ("sac", LOW, ("steering/cmd", "ulc/cmd", "gear/cmd")),
        "ppo_nav": ("ppo", NAV, ("steering/cmd", "ulc/cmd", "gear/cmd"))}
# make_run's action_bias per run: the untrained navigation policy otherwise asks for speed 0 and stands still
BIAS = {"ppo_nav": {1: 6.0}}
# the graph's arithmetic per run (float32 unless listed). The navigation loop turns the float32 difference
# between onnxruntime's and torch's actions (about 1e-6) into different episodes (its range and AWD
# thresholds, its stuck clock), so its episode compares the runtime with the model's network in float64.
DTYPE = {"ppo_nav": "float64"}


def make_run(tmp_path, algo: str, env_id: str, env_config: dict, seed: int = 0, action_bias: dict | None = None,
             action_weight_std: float = 0.5):
    """A run directory as train.py leaves it (model.zip, config.yaml, vecnormalize.pkl), with an untrained
    model whose action layer is scaled up so that its actions move the vehicle (``action_bias``: component
    -> bias of the action layer, to push a component's mean), and normaliser statistics gathered from random
    driving."""
    venv = gymnasium.make_vec(env_id, num_envs=2, vectorization_mode="vector_entry_point", config=env_config,
                              autoreset_mode="SameStep")
    env = VecNormalize(RangerSB3VecEnv(venv), norm_obs=True, norm_reward=False)
    env.seed(seed)
    env.reset()
    rng = np.random.default_rng(seed)
    for _ in range(60):
        env.step(rng.uniform(-1, 1, (2, *env.action_space.shape)).astype(np.float32))
    kwargs = {"learning_starts": 0, "buffer_size": 1000} if algo == "sac" else {"n_steps": 64, "batch_size": 64}
    model = build_model(algo, env, seed, kwargs, {"net_arch": [32, 32]})
    torch.manual_seed(seed)
    layer = model.policy.action_net if algo == "ppo" else model.policy.actor.mu
    with torch.no_grad():
        layer.weight.normal_(0.0, action_weight_std)
        layer.bias.normal_(0.0, 0.3)
        for j, bias in (action_bias or {}).items():
            layer.bias[j] = bias
    run = tmp_path / f"{algo}_run"
    if run.exists():
        run = tmp_path / f"{algo}_run_{env_id.split('/')[-1]}"
    run.mkdir()
    model.save(str(run / "model.zip"))
    env.save(str(run / "vecnormalize.pkl"))
    config = {"algo": algo, "env_id": env_id, "env_config": env_config, "task_config": venv.config,
              "total_steps": 0, "seed": seed}
    (run / "config.yaml").write_text(yaml.safe_dump(to_builtins(config), sort_keys=False), encoding="utf-8")
    env.close()
    return run / "model.zip", model


def export_run(tmp_path, algo, env_id, env_config, action_bias=None, dtype="float32"):
    model_zip, model = make_run(tmp_path, algo, env_id, env_config, action_bias=action_bias)
    out = tmp_path / f"{algo}_policy"
    assert export_main([str(model_zip), "--out", str(out), "--dtype", dtype]) == 0
    return model_zip, model, out


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """(model.zip, model, policy directory) of a PPO and a SAC run, exported once for the module."""
    cache = {}

    def get(which):
        if which not in cache:
            algo, task, _ = RUNS[which]
            cache[which] = export_run(tmp_path_factory.mktemp(which), algo, *task, BIAS.get(which),
                                      DTYPE.get(which, "float32"))
        return cache[which]

    return get


def collect(env_id, env_config, n, seed):
    """n observations of the environment under random actions (new episodes as they end)."""
    env = gymnasium.make(env_id, config=env_config)
    obs = sample_observations(env, n, seed)
    env.close()
    return obs


def flat(runtime: PolicyRuntime, obs: dict) -> np.ndarray:
    """Dict observations (batched) as the runtime's flat vectors, in the manifest's order."""
    n = next(iter(obs.values())).shape[0]
    return np.concatenate([obs[i["name"]].reshape(n, -1) for i in runtime.items], axis=1)


@pytest.mark.parametrize(("algo", "task"), [("ppo", SPEED), ("sac", PATH)])
def test_runtime_actions_equal_the_sb3_deterministic_actions(exported, algo, task):
    env_id, env_config = task
    model_zip, model, out = exported(algo)
    runtime = PolicyRuntime(out)
    obs = collect(env_id, env_config, 1000, seed=3)
    expected = SB3Policy(model, load_run_normalizer(model_zip))(obs)
    got = runtime.act(flat(runtime, obs))
    assert got.shape == expected.shape == (1000, model.action_space.shape[0])
    assert np.abs(got - expected).max() <= 1e-5
    assert np.std(expected, axis=0).min() > 0.05  # the actions vary: the comparison is not of constants
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["observation"]["normalization"] is not None
    assert manifest["check"]["observations"] == 200 and manifest["check"]["max_abs_action_error"] <= 1e-5
    assert [i["name"] for i in manifest["observation"]["items"]] == list(obs)  # the environment's order


def network_in_float64(model, normalizer, batch):
    """The model's deterministic action computed by its own network (torch) in float64, for a single Dict
    observation: the run's normalisation, then the policy's layers with the float32 weights in double."""
    observer = batch.observer
    space = model.action_space
    actor = DeterministicActor(copy.deepcopy(model.policy), observer.slices, space.low, space.high).double().eval()

    def normalized(name, x):  # VecNormalize's formula, without its cast of the result to float32
        if name not in normalizer.norm_obs_keys:
            return x
        rms = normalizer.obs_rms[name]
        return np.clip((x - rms.mean) / np.sqrt(rms.var + normalizer.epsilon), -normalizer.clip_obs,
                       normalizer.clip_obs)

    def policy(obs):
        x = np.concatenate([normalized(name, np.asarray(obs[name])[None]).reshape(1, -1) for name in observer.slices],
                           axis=1)
        with torch.no_grad(), observations_as_given():
            return actor(torch.as_tensor(x)).numpy()[0]

    return policy


@pytest.mark.parametrize("which", ["ppo", "sac", "ppo_gear", "sac_low", "ppo_nav"])
def test_an_episode_through_the_runtime_returns_what_the_sb3_model_returns(exported, which):
    """Reports in, commands out: the runtime drives the environment for a whole episode; every message it
    returns is what the environment sends the DBW layer for that action (and the AWD switch it asks for is
    the one the environment sets), and the return is the SB3 model's (for navigation, in float64: ``DTYPE``)."""
    env_id, env_config = RUNS[which][1]
    model_zip, model, out = exported(which)
    # an episode whose untrained navigation policy uses both ranges and the AWD switch (checked below), so
    # the round trip covers the gear and drive-mode paths
    seed = 12

    env = gymnasium.make(env_id, config=env_config)
    if DTYPE.get(which, "float32") == "float32":
        policy = SB3Policy(model, load_run_normalizer(model_zip))
    else:
        policy = network_in_float64(model, load_run_normalizer(model_zip), env.unwrapped._batch)
        obs = collect(env_id, env_config, 50, seed=2)
        single = [{k: v[i] for k, v in obs.items()} for i in range(50)]
        sb3 = SB3Policy(model, load_run_normalizer(model_zip))(obs)
        assert np.abs(np.array([policy(o) for o in single]) - sb3).max() < 1e-5  # the same model
    obs, _ = env.reset(seed=seed)
    sb3_return, sb3_steps, done = 0.0, 0, False
    while not done:
        obs, reward, term, trunc, _ = env.step(policy(obs))
        sb3_return += reward
        sb3_steps += 1
        done = term or trunc

    runtime = PolicyRuntime(out)
    runtime.reset()
    batch = env.unwrapped._batch
    sent = []  # the command record as each sim.step call starts
    sim_step = batch.sim.step

    def recording_step(n, serial=False):
        sent.append(batch.sim.commands[0].copy())
        return sim_step(n, serial=serial)

    batch.sim.step = recording_step
    obs, _ = env.reset(seed=seed)
    runtime_return, done, steps, topics, gears, drive_modes = 0.0, False, 0, set(), [], set()
    speeds, sent_messages = [], []
    while not done:
        reports = vehicle_reports(batch, 0)
        built = runtime.observation(reports, host_inputs(batch, 0))
        np.testing.assert_array_equal(built, flat(runtime, {k: v[None] for k, v in obs.items()})[0])
        messages = runtime.step(reports, host_inputs(batch, 0))
        obs, reward, term, trunc, info = env.step(runtime.last_action)
        cmd = sent[-1]
        for topic, fields in COMMAND_MESSAGES.items():
            fresh = [f for f, m in fields.items() if m is None]
            if fresh:  # a message is sent exactly when the environment's is fresh
                assert (topic in messages) == bool(cmd[fresh[0]]), (steps, topic)
            for field, msg_field in fields.items():
                if topic in messages and msg_field is not None and topic != "gear/cmd":
                    assert messages[topic][msg_field] == cmd[field], (steps, topic, msg_field)
        assert messages.get("gear/cmd", {"cmd": {"value": GEAR_NONE}})["cmd"]["value"] == cmd["gear_cmd"], steps
        if runtime.drive_mode_request is not None:
            assert runtime.drive_mode_request == cmd["drive_mode"], steps
            drive_modes.add(runtime.drive_mode_request)
        gears.append(cmd["gear_cmd"])
        topics |= messages.keys()
        runtime_return += reward
        speeds.append(abs(info["speed_mps"]))
        sent_messages.append(messages)
        done = term or trunc
        steps += 1
    assert gears[0] != GEAR_NONE  # the first step shifts into a range
    if which == "sac_low":  # the start range L: the manifest's first gear, sent once, engaged throughout
        assert json.loads((out / "manifest.json").read_text())["action"]["first_step_gear"] == GEAR_LOW
        assert gears[0] == GEAR_LOW and set(gears[1:]) == {GEAR_NONE} and batch.sim.state.gear[0] == GEAR_LOW
    assert topics >= set(RUNS[which][2])
    assert steps == sb3_steps
    assert abs(runtime_return - sb3_return) <= 1e-6 * abs(sb3_return)
    assert abs(sb3_return) > 1.0
    if which == "ppo_nav":  # the policy drives: it steers both ways, shifts range and moves the AWD switch
        assert len(drive_modes) >= 2 and len({g for g in gears if g != GEAR_NONE}) == 2 and max(speeds) > 3.0
        assert np.ptp([m["steering/cmd"]["cmd"] for m in sent_messages]) > 0.1


@pytest.mark.parametrize("name", [n for n, cls in ACTION_MODES.items() if cls.components])
@pytest.mark.parametrize("gear_axis", [False, True])
def test_every_box_action_mode_has_a_command_map(name, gear_axis):
    params = load_vehicle("polaris_ranger_crew_xp1000")
    mode = ACTION_MODES[name](params, {"gear_axis": gear_axis})
    cmap = command_map(mode, np.random.default_rng(0))  # checked against mode.write on random actions
    a = np.random.default_rng(1).uniform(-1, 1, (32, mode.flat_dim))
    if gear_axis:
        a[:, -1] = 0.0
    decoded = mode.decode(a)
    for f in cmap["fields"]:
        if f["field"] in ("steer_cmd", "throttle_cmd", "brake_cmd", "ulc_cmd"):
            value = command_value(f, a[:, f["component"]])
            assert any(np.allclose(value, v, rtol=1e-12, atol=1e-12) for v in decoded.values()), f["field"]


def test_importing_the_runtime_loads_no_torch_sb3_or_numba():
    code = ("import sys, gymnasium, acres_gym.vehicle.deploy; "
            "bad = [m for m in ('torch', 'stable_baselines3', 'numba') if m in sys.modules]; "
            "assert not bad, bad; "
            "assert gymnasium.spec('acres_gym/RangerSpeedTracking-v3').id == 'acres_gym/RangerSpeedTracking-v3'")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_the_runtime_runs_with_torch_sb3_numba_gymnasium_and_yaml_absent(exported, tmp_path):
    """On the vehicle only numpy and onnxruntime are needed: the same step in a process where importing the
    others fails gives the same messages."""
    env_id, env_config = SPEED
    _, _, out = exported("ppo")
    env = gymnasium.make(env_id, config=env_config)
    env.reset(seed=5)
    batch = env.unwrapped._batch
    reports = {m: {k: v[0].item() for k, v in fields.items()} for m, fields in
               dbw_reports(batch.sim.params, batch.sim.state).items()}
    inputs = {k: np.asarray(v, dtype=float).tolist() for k, v in host_inputs(batch, 0).items()}
    (tmp_path / "step.json").write_text(json.dumps({"reports": reports, "inputs": inputs}))
    code = ("import sys, json\n"
            "for m in ('torch', 'stable_baselines3', 'numba', 'gymnasium', 'yaml'): sys.modules[m] = None\n"
            "from acres_gym.vehicle.deploy import PolicyRuntime\n"
            f"d = json.load(open({str(tmp_path / 'step.json')!r}))\n"
            f"print(json.dumps(PolicyRuntime({str(out)!r}).step(d['reports'], d['inputs'])))\n")
    done = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    expected = PolicyRuntime(out).step(reports, inputs)
    assert json.loads(done.stdout) == json.loads(json.dumps(expected))
    assert expected["throttle/cmd"]["cmd"] + expected["brake/cmd"]["cmd"] > 0.0


def test_export_bad_input_is_one_line_and_status_2(tmp_path, capsys):
    assert export_main([str(tmp_path / "nowhere" / "model.zip"), "--out", str(tmp_path / "p")]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "nowhere/model.zip" in err
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "model.zip").write_bytes(b"")
    assert export_main([str(tmp_path / "run" / "model.zip"), "--out", str(tmp_path / "p")]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "config.yaml is missing" in err
    (tmp_path / "run" / "config.yaml").write_text("algo: ppo\nenv_id: acres_gym/RangerSpeedTracking-v3\n")
    assert export_main([str(tmp_path / "run" / "model.zip"), "--out", str(tmp_path / "p")]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and err.startswith("acres_gym.agents.export: ")


def test_export_refuses_a_run_whose_commands_the_runtime_would_not_send(tmp_path, capsys):
    """A steering rate beyond SteeringCmd's 0..1016 deg/s (a training option the DBW model caps) is not a
    command the runtime sends: the export stops with one line naming the field and exit status 2."""
    env_id, env_config = SPEED
    config = {**env_config, "action_options": {"steer_rate_deg_s": 2000.0}}
    model_zip, _ = make_run(tmp_path, "ppo", env_id, config)
    assert export_main([str(model_zip), "--out", str(tmp_path / "p")]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "steer_rate_deg_s = 2000.0" in err and "allowed: a finite number in [0, 1016]" in err


def test_runtime_names_a_missing_report_field_or_input(exported):
    env_id, env_config = SPEED
    _, _, out = exported("ppo")
    runtime = PolicyRuntime(out)
    env = gymnasium.make(env_id, config=env_config)
    env.reset(seed=0)
    batch = env.unwrapped._batch
    reports = vehicle_reports(batch, 0)
    del reports["brake"]["percent_output"]
    with pytest.raises(ValueError, match="'brake.percent_output' is missing"):
        runtime.step(reports, host_inputs(batch, 0))
    reports = vehicle_reports(batch, 0)
    inputs = host_inputs(batch, 0)
    del inputs["target_speed"]
    with pytest.raises(ValueError, match="'target_speed' is missing"):
        runtime.step(reports, inputs)


@pytest.mark.parametrize("env_id", list(ENVIRONMENTS))
def test_export_and_runtime_round_trip_for_every_id(tmp_path, env_id):
    """Every registered id exports (an untrained PPO on the id's own config): the runtime's actions on the
    id's observations are the SB3 model's, its first step's messages pass the DBW ranges, and the manifest
    describes every host input (the navigation task's goal and local map with their frame and channels)."""
    model_zip, model = make_run(tmp_path, "ppo", env_id, {})
    out = tmp_path / "policy"
    assert export_main([str(model_zip), "--out", str(out)]) == 0
    runtime = PolicyRuntime(out)
    obs = collect(env_id, {}, 300, seed=4)
    expected = SB3Policy(model, load_run_normalizer(model_zip))(obs)
    assert np.abs(runtime.act(flat(runtime, obs)) - expected).max() <= 1e-5
    assert np.std(expected, axis=0).max() > 0.05
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["check"]["observations"] == 200 and manifest["check"]["max_abs_action_error"] <= 1e-5
    assert set(manifest["host_inputs"]) == set(runtime.host_inputs)
    env = gymnasium.make(env_id)
    env.reset(seed=2)
    batch = env.unwrapped._batch
    reports = vehicle_reports(batch, 0)
    messages = runtime.step(reports, host_inputs(batch, 0))
    assert set(messages) >= set(manifest["action"]["messages"]) | {"gear/cmd"}
    if "OffroadNavigation" in env_id:  # every version of the navigation id
        task = batch.task.options["local_map"]
        m = manifest["host_inputs"]["local_map"]
        assert m["shape"] == [len(task["channels"]), task["rows"], task["cols"]]
        assert [c["name"] for c in m["channels"]] == task["channels"]
        assert m["cell_m"] == task["cell_m"] and m["extent_m"]["behind"] == task["behind_m"]
        assert m["extent_m"]["ahead"] + m["extent_m"]["behind"] == task["rows"] * task["cell_m"]
        assert [c["name"] for c in manifest["host_inputs"]["goal"]["components"]] == ["distance", "bearing"]
        assert manifest["action"]["drive_axis"]["component"] == manifest["action"]["components"].index("drive_mode")
        assert manifest["action"]["gear_axis"]["component"] == manifest["action"]["components"].index("range")
        assert "speed_preview_s" not in manifest["task"]
    env.close()


def test_the_manifest_says_what_the_traction_channel_reads_where_level_ground_stalls():
    """With ``local_map.stall_traction`` the manifest's traction channel gives the value the host writes where
    even level ground stalls; without it, the negative grade limit; the other channels are unchanged."""
    plain = {"stall_traction": None}
    assert "< 0 where even level ground stalls" in _channel_meaning("traction", plain)
    stalled = _channel_meaning("traction", {"stall_traction": -1.0})
    assert "-1 wherever even level ground stalls" in stalled and "< 0" not in stalled
    for channel in ("height", "grade", "no_go"):
        assert _channel_meaning(channel, {"stall_traction": -1.0}) == _channel_meaning(channel, plain)


def test_the_manifest_gives_the_route_time_channel_its_cap_and_every_channel_a_meaning():
    """Every channel the task offers has a unit and a meaning in the manifest; route_time's names the search
    that fills it and the cap the task's ``route_time_cap_s`` sets (the default when the run's config has none)."""
    assert set(MAP_CHANNEL_INFO) == set(MAP_CHANNELS)
    capped = _channel_meaning("route_time", {"route_time_cap_s": 20.0, "route_clearance_m": 4.0})
    assert "time_to_goal" in capped and "at most 20;" in capped and "30" not in capped and "kept 4 m away" in capped
    assert "at most 30;" in _channel_meaning("route_time", {}) and "kept 5 m away" in _channel_meaning("route_time", {})
