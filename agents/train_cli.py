"""Train PPO or SAC on an acres_gym task, then compare the trained policy with a classical baseline.

    acres-train --config ppo_speed_tracking [--total-steps N] [--seed S] [--out DIR]
                [--set env_config.randomization.terrain.grade_pct=[0,15] --set algo_kwargs.gamma=0.99 ...]
                [--resume runs/<run>/model.zip | runs/<run>/checkpoints/step_<steps>]
                [--backend sb3|lean] [--overwrite] [--verbose]

The same command is ``python train.py`` in the repository and ``python -m acres_gym.train``; all three call
``main`` here. ``--config`` takes a path or the name of a config shipped in the package (``configs/train``).

Reads top to bottom: the training config, the run directory, the environment (the native vector env, N
vehicles stepped by one simulator call, behind the stable-baselines3 adapter), the model, training with a
progress bar, evaluations and checkpoints, the saved run, the final evaluation and the report. The
callbacks, checkpoints and report live in ``acres_gym.agents.training``, the run's files in
``acres_gym.agents.run_files``. A run directory (by default under ``runs/``, or ``$ACRES_GYM_RUNS``) holds:

    config.yaml          the resolved training config and the resolved task config (reproduces the run)
    model.zip            the trained model (stable-baselines3 format), state.pkl (the rest of the training
                         state, for --resume), vecnormalize.pkl (the observation normaliser, when on),
                         run_files.json (their SHA-256, and the checkpoint they are)
    checkpoints/         step_<steps>/ every ``checkpoint_every_steps`` and at the end: the same files, each
                         checkpoint written whole and renamed when complete; the newest ``keep_checkpoints`` kept
    report.json          training time and speed, when the policy first beat the baseline, the evaluations
    report.md            the same with learning_curve.png and evaluation.png
    tensorboard/         SB3's curves and the task metrics (task/...), when tensorboard is installed

``--total-steps`` (or ``--total-timesteps``) is the run's total: ``--resume`` continues a run up to it, and
from a checkpoint gives bit for bit the model of the uninterrupted run with the same config and seed. An
existing run directory is only replaced with ``--overwrite`` (resuming continues in its own directory).
User errors, and missing or damaged run files, stop with a one-line message and exit status 2. An interrupt
(Ctrl-C, SIGINT) at any moment leaves the previous complete checkpoint and stops with one line naming it
(exit status 130).

Training config keys (``configs/train/*.yaml``; unknown keys are an error):

    algo: ppo | sac                  env_id: a registered id (acres_gym/RangerSpeedTracking-v3)
    backend: sb3 | lean              the learner (acres_gym.agents.backends; lean: PPO only, faster, same files)
    env_config: task config overrides (as gymnasium.make(env_id, config=...)): a dict, or the name of a
                task config under configs/tasks (hill_climb)
    num_envs, total_steps, seed, out, device, torch_threads
    normalize_observations, normalize_rewards: VecNormalize (ObsNormalizer) on the observations / rewards
    unnormalized_observations: observation entries normalize_observations leaves as the env gives them (a list
                 of entry names, e.g. [local_map]: a map keeps one scale in every cell)
    normalize_per_channel: normalised entries with one mean and variance per channel (their first axis) shared
                 by all their elements, e.g. [local_map] (a list of entry names)
    curriculum: stages of the training env, each {from_steps: N, env_config: {...}} merged over env_config from
                the first rollout end at or past N steps on (increasing N; the evaluations keep env_config)
    algo_kwargs: arguments of PPO / SAC (learning_rate, clip_range: a number, or lin_<initial> falling
                 linearly to 0 over the run);  policy_kwargs: net_arch, activation_fn (a name), log_std_init, ...
    checkpoint_every_steps: 0 = no periodic checkpoints (the final one is still written)
    keep_checkpoints: the newest complete checkpoints kept (an integer >= 1; older ones are removed once a newer
                      one is complete)
    eval_every_steps: evaluate on the evaluation seeds every so many steps (0 = only at the end)
    eval_episodes, eval_seed, baseline (ulc_pure_pursuit | pedal_pid | null)
"""

from __future__ import annotations

import argparse
import importlib.util
import shutil
import sys
from pathlib import Path

import gymnasium
import numpy as np
import torch
import yaml

import acres_gym  # noqa: F401  (registers the gymnasium ids)
from acres_gym.agents import backends, run_files, training
from acres_gym.agents.algorithms import quiet_logger
from acres_gym.agents.evaluate import baseline_entry, evaluate, format_table
from acres_gym.agents.sb3_models import SCHEDULED, ObsNormalizer, build_model, schedule
from acres_gym.configuration import (
    MAX_SEED,
    check_counts,
    check_keys,
    dotted_overrides,
    merge_configs,
    read_yaml,
    seed_argument,
    strip_comments,
    to_builtins,
)
from acres_gym.envs.config import load_config
from acres_gym.envs.sb3 import RangerSB3VecEnv
from acres_gym.paths import config_path

DEFAULTS = {
    "algo": "ppo",
    "backend": backends.DEFAULT,
    "env_id": "acres_gym/RangerSpeedTracking-v3",
    "env_config": {},
    "curriculum": [],
    "num_envs": 16,
    "total_steps": 200_000,
    "seed": 0,
    "out": None,
    "device": "cpu",
    "torch_threads": 1,
    "normalize_observations": True,
    "normalize_rewards": False,
    "unnormalized_observations": [],
    "normalize_per_channel": [],
    "algo_kwargs": {},
    "policy_kwargs": {},
    "checkpoint_every_steps": 50_000,
    "keep_checkpoints": 3,
    "eval_every_steps": 50_000,
    "eval_episodes": 8,
    "eval_seed": 100_000,
    "baseline": "ulc_pure_pursuit",
}
RunError = training.RunError
# the integer keys: (least, most or None, what they count), checked before anything runs
COUNTS = {
    "total_steps": (1, None, "steps to train"),
    "seed": (0, MAX_SEED, "the run's seed"),
    "eval_seed": (0, MAX_SEED, "evaluation episode k is seeded eval_seed + k"),
    "eval_episodes": (1, None, "episodes per evaluation"),
    "eval_every_steps": (0, None, "0: evaluate only at the end"),
    "checkpoint_every_steps": (0, None, "0: only the final checkpoint"),
    "keep_checkpoints": (1, None, "the newest complete checkpoints kept"),
}


def load_train_config(path: str, args: argparse.Namespace) -> dict:
    """The training config: defaults, then the YAML file (a path, or a name under configs/train), then
    the command line."""
    if not Path(path).is_file() and "/" not in path and not path.endswith((".yaml", ".yml")):
        path = str(config_path("train", f"{path}.yaml"))
    given = read_yaml(path)
    check_keys(str(path), given, DEFAULTS)
    cfg = {**DEFAULTS, **strip_comments(given)}
    if cfg["env_config"] is not None and not isinstance(cfg["env_config"], dict):
        cfg["env_config"] = load_config(cfg["env_config"])  # a task config name or YAML path, as a dict
    overrides = dotted_overrides(getattr(args, "overrides", None) or [])
    check_keys("--set", overrides, DEFAULTS)
    cfg = merge_configs(cfg, overrides)
    for key in ("total_steps", "seed", "out", "backend"):
        if getattr(args, key, None) is not None:
            cfg[key] = getattr(args, key)
    try:
        backends.check_backend(cfg["backend"], cfg["algo"], cfg["algo_kwargs"], cfg["policy_kwargs"])
        for key in SCHEDULED:
            schedule(key, (cfg["algo_kwargs"] or {}).get(key))  # a malformed lin_<initial> stops before any run
    except ValueError as exc:
        raise RunError(str(exc)) from None
    for key in ("unnormalized_observations", "normalize_per_channel"):
        names = cfg[key]
        if not isinstance(names, list) or not all(isinstance(k, str) for k in names) or len(set(names)) != len(names):
            raise RunError(f"{key} = {names!r}: expected a list of distinct observation entry names (e.g. "
                           f"[local_map]), or []")
    check_curriculum(cfg)
    try:
        cfg.update(check_counts(cfg, COUNTS))
    except ValueError as exc:
        raise RunError(str(exc)) from None
    if cfg["out"] is None:
        cfg["out"] = str(run_files.runs_dir() / f"{Path(path).stem}_seed{cfg['seed']}")
    return cfg


def check_curriculum(cfg: dict) -> None:
    """``curriculum``: a list of ``{from_steps, env_config}`` stages, ``from_steps`` increasing positive integers
    (a stage a shorter run does not reach never applies), ``env_config`` a mapping; anything else is a
    ``RunError`` naming the stage."""
    stages = cfg["curriculum"]
    if not isinstance(stages, list):
        raise RunError(f"curriculum = {stages!r}: expected a list of {{from_steps: N, env_config: {{...}}}} stages, "
                       f"or []")
    last = 0
    for i, stage in enumerate(stages):
        where = f"curriculum[{i}]"
        if not isinstance(stage, dict) or set(stage) != {"from_steps", "env_config"}:
            raise RunError(f"{where} = {stage!r}: expected {{from_steps: N, env_config: {{...}}}}")
        start = stage["from_steps"]
        if isinstance(start, bool) or not isinstance(start, int) or start <= last:
            raise RunError(f"{where}.from_steps = {start!r}: expected an integer above {last}"
                           + (" (the stage before)" if i else ""))
        if not isinstance(stage["env_config"], dict):
            raise RunError(f"{where}.env_config = {stage['env_config']!r}: expected a mapping of task config keys")
        last = start


def stage_env_config(cfg: dict, steps: int) -> dict:
    """The training env's config after ``steps`` steps: ``env_config`` with every curriculum stage whose
    ``from_steps`` it has reached merged over it, in order."""
    env_config = cfg["env_config"] or {}
    for stage in cfg["curriculum"]:
        if stage["from_steps"] <= steps:
            env_config = merge_configs(env_config, stage["env_config"])
    return env_config


def make_env(cfg: dict, steps: int = 0):
    """The training environment of a training config: ``num_envs`` vehicles of ``env_id`` with its
    ``env_config`` (and the curriculum's stages reached at ``steps``) in one simulator (``SameStep`` autoreset,
    as ``RangerSB3VecEnv`` needs); the episode length is the config's ``max_episode_s``."""
    return gymnasium.make_vec(cfg["env_id"], num_envs=cfg["num_envs"], vectorization_mode="vector_entry_point",
                              config=stage_env_config(cfg, steps), autoreset_mode="SameStep")


def switch_env(model, cfg: dict, steps: int) -> None:
    """The curriculum stage's training env (``make_env(cfg, steps)``, seeded as a resumed run's new env is) in
    place of the model's, between two rollouts: the normaliser keeps its statistics and every vehicle starts a
    new episode (the episodes under way were bootstrapped as the rollout ended, as at a time limit)."""
    env = RangerSB3VecEnv(make_env(cfg, steps))
    env.seed(cfg["seed"] + steps)
    normalizer = model.get_vec_normalize_env()
    if normalizer is None:
        old = model.get_env()
        model.set_env(env, force_reset=True)
    else:
        old = normalizer.venv
        normalizer.venv = None  # VecNormalize.set_venv takes a wrapper without one (as after loading)
        normalizer.set_venv(env)
        model.set_env(normalizer, force_reset=True)
    model._last_obs = model.get_env().reset()
    model._last_episode_starts = np.ones((env.num_envs,), dtype=bool)
    if normalizer is not None and hasattr(model, "_last_original_obs"):
        model._last_original_obs = normalizer.get_original_obs()
    old.close()


def make_normalizer(env, cfg: dict, cls=ObsNormalizer):
    """``cls`` (a ``VecNormalize``) around ``env`` as the config asks: observations normalised when
    ``normalize_observations``, all but the entries ``unnormalized_observations`` names, those of
    ``normalize_per_channel`` with per-channel statistics (``ObsNormalizer.set_per_channel``); rewards when
    ``normalize_rewards``. A name that is not such an entry of the observation space is a ``RunError``."""
    skip = cfg["unnormalized_observations"]
    space = env.observation_space
    names = list(space.spaces) if isinstance(space, gymnasium.spaces.Dict) else []
    unknown = [k for k in skip if k not in names]
    if unknown:
        raise RunError(f"unnormalized_observations: {', '.join(map(str, unknown))} not an entry of {cfg['env_id']}'s "
                       f"observations; allowed: {', '.join(names) or 'none (the observation is not a Dict)'}")
    keys = [k for k in names if k not in skip] if skip else None
    if keys == []:
        raise RunError("unnormalized_observations names every observation entry: set normalize_observations: "
                       "false instead")
    normalizer = cls(env, norm_obs=cfg["normalize_observations"], norm_reward=cfg["normalize_rewards"],
                     norm_obs_keys=keys, gamma=cfg["algo_kwargs"].get("gamma", 0.99))
    per_channel = cfg["normalize_per_channel"]
    if per_channel and cfg["normalize_observations"]:
        if not isinstance(normalizer, ObsNormalizer):
            raise RunError(f"normalize_per_channel needs the ObsNormalizer; {cls.__name__} keeps per-element "
                           f"statistics only")
        try:
            normalizer.set_per_channel(per_channel)
        except ValueError as exc:
            raise RunError(str(exc)) from None
    return normalizer


def resume_files(model_zip: str) -> tuple[run_files.RunFiles, dict]:
    """The files of the model to resume from (a run's ``model.zip``, a checkpoint ``checkpoints/step_<steps>``
    or its ``model.zip``) and the config of the run that saved it; a missing or damaged file is a
    ``RunFileError``."""
    try:
        return run_files.load_run(model_zip)
    except run_files.RunFileError as exc:
        raise RunError(f"--resume {model_zip}: {exc}") from None


def prepare_run_dir(out: Path, overwrite: bool, resume_dir: Path | None) -> None:
    """Refuse to overwrite an earlier run unless asked; a resumed run continues in its own directory."""
    if not out.exists() or not any(out.iterdir()):
        out.mkdir(parents=True, exist_ok=True)
    elif resume_dir is not None and out.resolve() == resume_dir.resolve():
        pass
    elif not overwrite:
        raise RunError(f"{out} holds an earlier run; pass --overwrite to replace it or --out for another directory")
    elif resume_dir is not None and resume_dir.resolve().is_relative_to(out.resolve()):
        raise RunError(f"--overwrite {out} would delete the model resumed from")
    else:
        shutil.rmtree(out)
        out.mkdir(parents=True)


def interrupted(prog: str, where: dict) -> str:
    """The line an interrupt ends training with: the newest complete checkpoint to resume from."""
    model, out = where.get("model"), where.get("out")
    found = run_files.checkpoints(out) if out is not None else []
    newest = found[-1] if found else where.get("resume")
    at = f"at {model.num_timesteps} steps" if model is not None else "before training started"
    if newest is None:
        return f"{prog}: interrupted {at}, before a first complete checkpoint: nothing to resume from"
    return f"{prog}: interrupted {at}; resume from the newest complete checkpoint with --resume {newest}"


def main(argv: list[str] | None = None, prog: str | None = None) -> dict:
    """Train as the command line asks (``train.py``, ``acres-train``, ``python -m acres_gym.train``); returns
    the run's report. User errors exit with status 2, an interrupt with status 130 (both one line)."""
    parser = argparse.ArgumentParser(prog=prog, description="Train PPO or SAC on an acres_gym task.")
    parser.add_argument("--config", required=True, help="a training config: a YAML path, or the name of a config "
                                                        "shipped in the package (smoke, ppo_speed_tracking, ...)")
    parser.add_argument("--total-steps", "--total-timesteps", dest="total_steps", type=int, default=None,
                        help="the run's total environment steps (a resumed run continues up to it)")
    parser.add_argument("--seed", type=seed_argument, default=None)
    parser.add_argument("--out", default=None, help="run directory (default runs/<config>_seed<seed>, runs being "
                                                     "$ACRES_GYM_RUNS when set)")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                        help="a config value by dotted key, e.g. env_config.max_episode_s=20 or "
                             "algo_kwargs.learning_rate=1e-4 (repeatable)")
    parser.add_argument("--resume", default=None, metavar="MODEL",
                        help="continue a run from its model.zip or a checkpoint (checkpoints/step_<steps>), up to "
                             "the total steps")
    parser.add_argument("--backend", default=None, metavar="|".join(backends.BACKENDS),
                        help="the learner: sb3 (stable-baselines3's PPO and SAC) or lean (PPO with rollouts on the "
                             "native vector env; the same run files); default the config's backend, else sb3")
    parser.add_argument("--overwrite", action="store_true", help="replace an existing run directory")
    parser.add_argument("--verbose", action="store_true", help="print stable-baselines3's tables")
    args = parser.parse_args(argv)
    where: dict = {}
    try:
        return train(args, parser, where)
    except KeyboardInterrupt:
        if "monitor" in where:
            where["monitor"].on_training_end()  # the progress bar's last line before the message
        if where.get("out") is not None:
            run_files.clear_leftovers(where["out"])  # e.g. a checkpoint half removed when the interrupt came
        parser.exit(130, interrupted(parser.prog, where) + "\n")


def train(args: argparse.Namespace, parser: argparse.ArgumentParser, where: dict) -> dict:
    """The run of ``main``; ``where`` is kept up to date with the run directory and the model (for the line an
    interrupt ends with)."""
    try:
        # --- 1. the config and the run directory --------------------------------------------------------------
        cfg = load_train_config(args.config, args)
        resume, previous = resume_files(args.resume) if args.resume else (None, {})
        for key in ("env_id", "algo"):
            if resume and previous.get(key) != cfg[key]:
                raise RunError(f"--resume {args.resume}: trained with {key} {previous.get(key)}, "
                               f"the config asks for {cfg[key]}")
        if resume:  # what an interrupt before the first checkpoint names: a checkpoint directory or the model
            where["resume"] = resume.model.parent if resume.manifest is not None else resume.model
        # every file resumed from is read before the run directory is touched (the model needs the env: step 3)
        try:
            state = run_files.load_state(resume, training.STATE_VERSION) if resume else None
            normalizer = run_files.load_normalizer(resume, previous, for_training=True) if resume else None
        except run_files.RunFileError as exc:
            raise RunError(f"--resume {args.resume}: {exc}") from None
        for stage in cfg["curriculum"]:  # every stage's env config checked before anything is written
            gymnasium.make(cfg["env_id"], config=stage_env_config(cfg, stage["from_steps"])).close()
        out = Path(cfg["out"])
        prepare_run_dir(out, args.overwrite, resume.run_dir if resume else None)
        where["out"] = out
        torch.set_num_threads(int(cfg["torch_threads"]))

        # --- 2. the environment: N vehicles in one simulator, as an SB3 VecEnv; on resume the saved one ----
        exact = state is not None and to_builtins(cfg["env_config"]) == previous.get("env_config") \
            and to_builtins(cfg["curriculum"]) == previous.get("curriculum", []) \
            and cfg["num_envs"] == previous.get("num_envs")
        if exact:
            env = state["env"]  # every vehicle mid-episode, as the run left it
            venv_config = env.venv.config
        else:
            venv = make_env(cfg)
            env, venv_config = RangerSB3VecEnv(venv), venv.config
            env.seed(cfg["seed"])
        if normalizer is not None:
            normalizer.set_venv(env)  # the normaliser's statistics continue too
            env = normalizer
            env.training = True
        elif resume is None and (cfg["normalize_observations"] or cfg["normalize_rewards"]):
            env = make_normalizer(env, cfg)

        # --- 3. the model ------------------------------------------------------------------------------------------
        tensorboard = str(out / "tensorboard") if importlib.util.find_spec("tensorboard") else None
        verbose = 1 if args.verbose else 0
        if resume is None:
            model = build_model(cfg["algo"], env, cfg["seed"], cfg["algo_kwargs"], cfg["policy_kwargs"],
                                tensorboard_log=tensorboard, device=cfg["device"], verbose=verbose,
                                algorithm=backends.model_class(cfg["algo"], cfg["backend"]))
        else:
            try:
                model = quiet_logger(run_files.load_model(
                    resume, cfg["algo"], env=env, device=cfg["device"], tensorboard_log=tensorboard, verbose=verbose,
                    force_reset=not exact, algorithm=backends.model_class(cfg["algo"], cfg["backend"])),
                    tensorboard, verbose)
                if exact:
                    training.restore_run_state(model, state, resume.replay_buffer)  # load() re-seeded every generator
            except run_files.RunFileError as exc:
                raise RunError(f"--resume {args.resume}: {exc}") from None
            else:
                env.seed(cfg["seed"] + model.num_timesteps)
            if model.num_timesteps >= cfg["total_steps"]:
                raise RunError(f"--resume {args.resume}: the model has {model.num_timesteps} steps, not fewer than "
                               f"total_steps = {cfg['total_steps']}; give a larger --total-steps")
            print(f"resuming from {resume.model} at {model.num_timesteps} steps" + (
                "" if exact else " (not an exact continuation: a new environment"
                + (", the training state file is missing)" if state is None else ", the env config changed)")))
    except (RunError, FileNotFoundError, ValueError, KeyError, TypeError, AssertionError, yaml.YAMLError) as exc:
        message = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        parser.exit(2, f"{parser.prog}: error: {message}\n")
    where["model"] = model

    # --- 4. save the resolved config beside the model -------------------------------------------------------
    resolved = {**cfg, "task_config": venv_config, "resumed_from": str(resume.model) if resume else None}
    (out / "config.yaml").write_text(yaml.safe_dump(to_builtins(resolved), sort_keys=False), encoding="utf-8")

    # --- 5. training: progress bar, periodic evaluations, exact checkpoints -----------------------------------
    metric = training.task_metric(venv_config)
    def evaluate_policy(factory, mode=None):
        return evaluate(factory, cfg["env_id"], int(cfg["eval_episodes"]), int(cfg["eval_seed"]), cfg["env_config"],
                        mode)
    baseline = evaluate_policy(*baseline_entry(cfg["baseline"])) if cfg["baseline"] else None
    history = state["history"] if exact else training.new_history()
    clock = training.TrainClock(offset=history["train_s"] if exact else 0.0)
    evaluation = training.PeriodicEvaluation(cfg["eval_every_steps"], evaluate_policy, baseline, metric, clock, history)
    where["monitor"] = training.TrainingMonitor(metric, clock, history)
    callbacks = [where["monitor"], evaluation]
    if cfg["curriculum"]:
        starts = [stage["from_steps"] for stage in cfg["curriculum"]]
        held = training.CurriculumStages.reached(starts, model.num_timesteps) if exact else 0  # the env's stages
        callbacks.append(training.CurriculumStages(starts, lambda m, steps: switch_env(m, cfg, steps), held))
    if cfg["checkpoint_every_steps"]:
        callbacks.append(training.RunCheckpoint(cfg["checkpoint_every_steps"], out, clock, history,
                                                cfg["keep_checkpoints"]))
    start_steps = model.num_timesteps
    print(f"training {cfg['algo'].upper()} ({cfg['backend']}) on {cfg['env_id']} with {cfg['num_envs']} vehicles up to "
          f"{cfg['total_steps']} steps; run directory {out}" + (f", tensorboard --logdir {tensorboard}" if tensorboard
                                                                 else ""))
    clock.start()
    model.learn(total_timesteps=int(cfg["total_steps"]) - start_steps, callback=callbacks, progress_bar=False,
                reset_num_timesteps=resume is None)
    train_s = clock.elapsed() - clock.offset
    training.save_run(model, out, clock, history, cfg["keep_checkpoints"])

    # --- 6. evaluation: the trained policy against the baseline, on the same seeds; the report -------------
    final = evaluation.run()
    results = {"learned": evaluation.last_result, **({cfg["baseline"]: baseline} if baseline else {})}
    trained = model.num_timesteps - start_steps
    report = {
        "env_id": cfg["env_id"], "algo": cfg["algo"], "backend": cfg["backend"], "seed": cfg["seed"],
        "num_envs": cfg["num_envs"],
        "total_steps": int(model.num_timesteps), "trained_steps": int(trained), "train_wall_s": train_s,
        "total_train_wall_s": final["wall_s"], "train_steps_per_s": trained / train_s if train_s > 0 else None,
        "task_metric": metric, "baseline": cfg["baseline"], "first_beats_baseline": history["first_beat"],
        "eval_every_steps": cfg["eval_every_steps"], "eval_episodes": cfg["eval_episodes"],
        "eval_seed": cfg["eval_seed"], "resumed_from": str(resume.model) if resume else None, "exact_resume": exact,
        "evaluations": history["evaluations"],
        "evaluation": {name: {"mean": r["mean"], "per_episode": r["per_episode"]} for name, r in results.items()},
    }
    training.write_report(out, report, history, results, metric, cfg["baseline"],
                          plots=importlib.util.find_spec("matplotlib") is not None)
    env.close()
    beat = history["first_beat"]
    print(f"trained {cfg['algo'].upper()} on {cfg['env_id']} for {trained} steps in {train_s:.1f} s "
          f"({report['train_steps_per_s']:.0f} steps/s); run saved in {out}")
    print("first beat the baseline " + (f"at {beat['steps']} steps, {beat['train_wall_s']:.1f} s of training"
                                        if beat else "not yet") + f" (total {final['wall_s']:.1f} s)")
    print(f"evaluation over {cfg['eval_episodes']} episodes (seeds from {cfg['eval_seed']}):")
    print(format_table(results))
    return report


def cli(argv: list[str] | None = None) -> int:
    """The ``acres-train`` console script."""
    main(argv, prog="acres-train")
    return 0


if __name__ == "__main__":
    sys.exit(cli())
