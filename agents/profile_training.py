"""Where the wall time of a training run goes: a short run of a shipped training config, timed by part.

    python -m acres_gym.agents.profile_training --config ppo_speed_tracking [--steps N] [--seed S]
        [--set KEY=VALUE ...] [--backend sb3,lean] [--variant KEY=VALUE[,KEY=VALUE...] ...] [--rounds R]
        [--json FILE]

The config is read by ``train.py``'s own loader (a name under ``configs/train`` or a path, ``--set`` as in
``train.py``), the environment, normaliser and model are built as ``train.py`` builds them, and the
model learns ``--steps`` steps (default: four PPO updates, at least 4,096 steps) with ``train.py``'s training
monitor (episode records, TensorBoard logs into a temporary directory when tensorboard is installed) and
one evaluation on the config's evaluation seeds midway (no checkpoints: a full run takes one every
``checkpoint_every_steps``). Nothing in stable-baselines3 is edited: the parts
are timed by wrappers around the instance's methods and the vector env, and a forward hook on the policy:

    env step        the native vector env's step (``RangerSB3VecEnv``, adapter included)
    normaliser      the observation normaliser around it (``ObsNormalizer``, as ``train.py``; with the variant
                    key ``normaliser=sb3``, SB3's ``VecNormalize``): statistics and scaling
    inference       the policy's forward passes and value predictions during rollouts (under no_grad)
    rollout other   the rest of ``collect_rollouts``: tensors, action clipping, the rollout buffer
    update          ``train()``: the gradient steps over the rollout
    evaluation      the evaluation on the evaluation seeds (``PeriodicEvaluation``)
    logging         the training monitor's callback and SB3's ``dump_logs``
    other           the measured wall time less the rows above

With ``backend: lean`` (``LeanPPO``, ``acres_gym.agents.lean_ppo``) the rows are its own parts: env step is the
native vector env's step alone (no adapter), normaliser its flat normalisation, inference the actor's forward
passes and the critic's values (per step, or one pass at the end of each rollout), rollout other the rest of
its rollout, update its ``train()``.

Each row is exclusive (time inside a nested part counts only for the inner one) and ``other`` is the
remainder, so the shares add up to the measured wall time. Training steps/s leaves the evaluation out, as
``train.py``'s ``train_steps_per_s`` does. The raw vector env (a second native vector env of the same
config and number of vehicles, stepped with random actions drawn beforehand, no normaliser, no policy) is
timed in slices of one rollout's length alternated with the rollouts of the same run (its time is left out
of the training wall time), so both see the same load; the table gives its steps/s and the ratio.

``--variant`` adds a configuration (dotted keys as ``--set``, comma separated, e.g. ``torch_threads=2`` or
``algo_kwargs.n_epochs=3,algo_kwargs.batch_size=1024``; the profiler's own keys: ``normaliser=sb3`` for
SB3's ``VecNormalize`` in place of ``ObsNormalizer``, ``distribution_checks=on`` for rollouts with
``torch.distributions``' argument checks, as SB3's own PPO runs them; ``actor=torch`` for the lean rollouts'
actor run by torch's layers in place of their numpy copy; ``update=torch`` for the lean update by torch's autograd
in place of its gradients written out in numpy, ``lean_update``); the base config and each variant are
run in turn, ``--rounds`` times, and a last table gives each one's training steps/s as a ratio to the base's in the same
round (medians over the rounds): compare settings on a shared machine by ratios, not by absolute figures.
``--backend sb3,lean`` times the learners side by side: the first is the base, each other a variant
``backend=NAME`` (the training config key ``backend``).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import re
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from acres_gym.configuration import seed_argument

# keys of the profiler's own, beside the training config's: the first value is what train.py runs
PROFILER_KEYS = {"normaliser": ("fast", "sb3"), "distribution_checks": ("off", "on"), "actor": ("numpy", "torch"),
                 "update": ("numpy", "torch")}
ROWS = ("env step", "normaliser", "inference", "rollout other", "update", "evaluation", "logging", "other")


def train_script():
    """``train.py`` (the repository's training script) as a module: its config loader and env builder."""
    if "acres_train_script" in sys.modules:
        return sys.modules["acres_train_script"]
    path = Path(__file__).resolve().parents[1] / "train.py"
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing: the profiler reads configs with train.py's loader, "
                                "so it runs from a source checkout")
    spec = importlib.util.spec_from_file_location("acres_train_script", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["acres_train_script"] = module
    spec.loader.exec_module(module)
    return module


class SectionTimer:
    """Exclusive wall time per named section: time spent in a nested section counts only for it.

    ``enter(name)`` / ``leave()`` (or ``section(name)``) around a part; ``pause()`` / ``resume()`` around
    work that is not part of the measured run (its time leaves the wall time and every section)."""

    def __init__(self) -> None:
        self.totals: dict[str, float] = dict.fromkeys(ROWS, 0.0)
        self._stack: list[list] = []  # [name, start of the current exclusive span]
        self._t0: float | None = None
        self._paused_s = 0.0
        self._pause_t0: float | None = None
        self.wall_s = 0.0

    def start(self) -> None:
        self._t0 = time.perf_counter()

    def stop(self) -> None:
        self.wall_s = time.perf_counter() - self._t0 - self._paused_s

    def enter(self, name: str) -> None:
        now = time.perf_counter()
        if self._stack:
            top = self._stack[-1]
            self.totals[top[0]] += now - top[1]
        self._stack.append([name, now])

    def leave(self) -> None:
        now = time.perf_counter()
        name, t = self._stack.pop()
        self.totals[name] += now - t
        if self._stack:
            self._stack[-1][1] = now

    def pause(self) -> None:
        self._pause_t0 = time.perf_counter()

    def resume(self) -> None:
        span = time.perf_counter() - self._pause_t0
        self._paused_s += span
        if self._stack:
            self._stack[-1][1] += span

    def timed(self, name: str, fn: Callable) -> Callable:
        """``fn`` wrapped so that its calls count for section ``name``."""
        def wrapper(*args, **kwargs):
            self.enter(name)
            try:
                return fn(*args, **kwargs)
            finally:
                self.leave()
        return wrapper

    def shares(self) -> dict[str, float]:
        """Each row's share of the wall time; ``other`` is the remainder."""
        timed = {k: v for k, v in self.totals.items() if k != "other"}
        other = max(0.0, self.wall_s - sum(timed.values()))
        seconds = {**timed, "other": other}
        total = sum(seconds.values())
        return {k: (v / total if total > 0 else 0.0) for k, v in seconds.items()}

    def seconds(self) -> dict[str, float]:
        timed = {k: v for k, v in self.totals.items() if k != "other"}
        return {**timed, "other": max(0.0, self.wall_s - sum(timed.values()))}


def _timed_vec_env(venv, timer: SectionTimer, name: str):
    """A ``VecEnvWrapper`` whose ``step_async`` + ``step_wait`` and ``reset`` count for ``name``."""
    from stable_baselines3.common.vec_env import VecEnvWrapper

    class TimedVecEnv(VecEnvWrapper):
        def reset(self):
            return timer.timed(name, self.venv.reset)()

        def step_async(self, actions):
            timer.timed(name, self.venv.step_async)(actions)

        def step_wait(self):
            return timer.timed(name, self.venv.step_wait)()

    return TimedVecEnv(venv)


def _timed_callback(inner, timer: SectionTimer, name: str):
    """An SB3 callback that runs ``inner`` (a ``BaseCallback``) with its hooks counted for ``name``."""
    from stable_baselines3.common.callbacks import BaseCallback

    class TimedCallback(BaseCallback):
        def __init__(self) -> None:
            super().__init__()
            self.inner = inner

        def _init_callback(self) -> None:
            self.inner.init_callback(self.model)

        def _on_training_start(self) -> None:
            timer.timed(name, self.inner.on_training_start)(self.locals, self.globals)

        def _on_rollout_start(self) -> None:
            timer.timed(name, self.inner.on_rollout_start)()

        def _on_step(self) -> bool:
            return timer.timed(name, self.inner.on_step)()

        def update_child_locals(self, locals_: dict[str, Any]) -> None:
            self.inner.update_locals(locals_)

        def _on_rollout_end(self) -> None:
            timer.timed(name, self.inner.on_rollout_end)()

        def _on_training_end(self) -> None:
            timer.timed(name, self.inner.on_training_end)()

    return TimedCallback()


def _with_distribution_checks(fn: Callable) -> Callable:
    from acres_gym.agents.sb3_models import distribution_checks

    def wrapper(*args, **kwargs):
        with distribution_checks(True):
            return fn(*args, **kwargs)
    return wrapper


def _raw_env_slicer(cfg: dict, steps_per_slice: int, seed: int):
    """``(run_slice, close)``: ``run_slice()`` steps a second native vector env of ``cfg`` (same vehicles,
    ``SameStep`` resets) ``steps_per_slice`` times with random actions drawn beforehand and returns
    (vehicle steps, seconds)."""
    venv = train_script().make_env(cfg)
    venv.reset(seed=seed)
    space = venv.action_space
    space.seed(seed)
    bank = [space.sample() for _ in range(64)]

    def run_slice() -> tuple[int, float]:
        t0 = time.perf_counter()
        for i in range(steps_per_slice):
            venv.step(bank[i % len(bank)])
        return steps_per_slice * venv.num_envs, time.perf_counter() - t0

    return run_slice, venv.close


def default_steps(cfg: dict) -> int:
    """Four PPO updates (``n_steps`` x vehicles each), and at least 4,096 steps."""
    n_steps = int(cfg["algo_kwargs"].get("n_steps", 2048))
    per_update = n_steps * int(cfg["num_envs"])
    return per_update * max(4, math.ceil(4096 / per_update))


def profile_run(cfg: dict, steps: int, evaluate: bool = True) -> dict[str, Any]:
    """One short training run of ``cfg`` timed by part (see the module docstring)."""
    import torch
    from stable_baselines3.common.callbacks import BaseCallback
    from stable_baselines3.common.vec_env import VecNormalize

    from acres_gym.agents import backends, training
    from acres_gym.agents.evaluate import evaluate as run_evaluation
    from acres_gym.agents.sb3_models import ObsNormalizer, build_model
    from acres_gym.envs.sb3 import RangerSB3VecEnv

    train = train_script()
    if cfg["algo"] != "ppo":
        raise ValueError(f"algo = {cfg['algo']!r}: the profiler times PPO's rollouts and updates; allowed: ppo")
    torch.set_num_threads(int(cfg["torch_threads"]))
    timer = SectionTimer()
    venv = train.make_env(cfg)
    env = _timed_vec_env(RangerSB3VecEnv(venv), timer, "env step")
    env.seed(cfg["seed"])
    if cfg["normalize_observations"] or cfg["normalize_rewards"]:
        normalizer = {"fast": ObsNormalizer, "sb3": VecNormalize}[cfg.get("normaliser", "fast")]
        env = train.make_normalizer(env, cfg, normalizer)
    env = _timed_vec_env(env, timer, "normaliser")
    tmp = tempfile.TemporaryDirectory(prefix="acres_profile_")
    tensorboard = tmp.name if importlib.util.find_spec("tensorboard") else None
    backend = cfg.get("backend", backends.DEFAULT)
    model = build_model(cfg["algo"], env, cfg["seed"], cfg["algo_kwargs"], cfg["policy_kwargs"],
                        tensorboard_log=tensorboard, device=cfg["device"],
                        algorithm=backends.model_class(cfg["algo"], backend))
    rollout_steps = model.n_steps * env.num_envs
    updates = max(1, math.ceil(steps / rollout_steps))

    # the parts: rollouts, the update, SB3's logging; the policy's forward passes by hooks
    if backend == "lean":  # the lean rollouts step the native vector env and normalise by themselves
        model.numpy_actor = cfg.get("actor", "numpy") == "numpy"
        model.numpy_update = cfg.get("update", "numpy") == "numpy"
        venv.step = timer.timed("env step", venv.step)
        model._normalise = timer.timed("normaliser", model._normalise)
        model._act = timer.timed("inference", model._act)
        model._values = timer.timed("inference", model._values)
    elif cfg.get("distribution_checks", "off") == "on":  # SB3's own PPO rollouts, with the checks
        from stable_baselines3 import PPO as SB3PPO

        model.collect_rollouts = _with_distribution_checks(SB3PPO.collect_rollouts.__get__(model))
    model.collect_rollouts = timer.timed("rollout other", model.collect_rollouts)
    model.train = timer.timed("update", model.train)
    model.dump_logs = timer.timed("logging", model.dump_logs)
    model.policy.predict_values = timer.timed("inference", model.policy.predict_values)
    hooks = [model.policy.register_forward_pre_hook(lambda *_: timer.enter("inference")),
             model.policy.register_forward_hook(lambda *_: timer.leave())]

    run_slice, close_raw = _raw_env_slicer(cfg, model.n_steps, cfg["seed"] + 10_000)
    raw = {"steps": 0, "seconds": 0.0}

    class RawEnvSlices(BaseCallback):
        """A slice of the raw vector env after every rollout, left out of the measured time."""

        def _on_rollout_end(self) -> None:
            timer.pause()
            n, s = run_slice()
            raw["steps"] += n
            raw["seconds"] += s
            timer.resume()

        def _on_step(self) -> bool:
            return True

    metric = training.task_metric(venv.config)
    history = training.new_history()
    clock = training.TrainClock()

    def evaluate_policy(factory, mode=None):
        return run_evaluation(factory, cfg["env_id"], int(cfg["eval_episodes"]), int(cfg["eval_seed"]),
                              cfg["env_config"], mode)

    callbacks = [_timed_callback(training.TrainingMonitor(metric, clock, history), timer, "logging")]
    if evaluate and updates >= 2:
        every = math.ceil(updates / 2) * rollout_steps  # one evaluation, midway
        evaluation = training.PeriodicEvaluation(every, evaluate_policy, None, metric, clock, history)
        callbacks.append(_timed_callback(evaluation, timer, "evaluation"))
    callbacks.append(RawEnvSlices())
    try:
        run_slice()  # warm-up: the raw env's first steps, outside the measurement
        timer.start()
        clock.start()
        model.learn(total_timesteps=updates * rollout_steps, callback=callbacks, progress_bar=False)
        timer.stop()
    finally:
        for h in hooks:
            h.remove()
        close_raw()
        env.close()
        tmp.cleanup()
    evaluations = len(history["evaluations"])
    trained = int(model.num_timesteps)
    seconds = timer.seconds()
    train_s = timer.wall_s - seconds["evaluation"]
    return {
        "config": cfg.get("name"), "backend": backend, "env_id": cfg["env_id"], "num_envs": int(cfg["num_envs"]),
        "torch_threads": int(cfg["torch_threads"]), "steps": trained, "updates": updates,
        "evaluations": evaluations, "wall_s": timer.wall_s, "seconds": seconds, "shares": timer.shares(),
        "train_steps_per_s": trained / train_s if train_s > 0 else math.nan,
        "env_steps_per_s_in_training": trained / seconds["env step"] if seconds["env step"] > 0 else math.nan,
        "raw_env_steps_per_s": raw["steps"] / raw["seconds"] if raw["seconds"] > 0 else math.nan,
        "raw_env_steps": raw["steps"],
        # the lean rollouts' actor as it ran: numpy (its layers copied) or torch; None for SB3's own rollouts
        "actor": (None if backend != "lean" else "numpy" if model._lean is not None and model._lean.numpy_actor
                  else "torch"),
        # the lean update as it ran: numpy (lean_update.NumpyUpdate) or torch's autograd; None for SB3's own
        "update": (None if backend != "lean" else "numpy" if model._numpy is not None else "torch"),
    }


def format_profile(r: dict[str, Any], full_run: dict | None = None) -> str:
    """The table of one profiled run."""
    lines = [f"{r['env_id']} (backend {r['backend']}), {r['num_envs']} vehicles, torch threads {r['torch_threads']}: "
             f"{r['steps']} steps "
             f"({r['updates']} updates, {r['evaluations']} evaluation(s)) in {r['wall_s']:.2f} s",
             "part            seconds   share"]
    for name in ROWS:
        lines.append(f"{name:14s} {r['seconds'][name]:8.3f}  {100 * r['shares'][name]:5.1f} %")
    lines.append(f"{'total':14s} {sum(r['seconds'].values()):8.3f}  {100 * sum(r['shares'].values()):5.1f} %")
    ratio = r["train_steps_per_s"] / r["raw_env_steps_per_s"]
    lines += [f"training steps/s (evaluation left out)   {r['train_steps_per_s']:10.0f}",
              f"raw vector env steps/s (random actions)  {r['raw_env_steps_per_s']:10.0f}",
              f"training / raw env                       {ratio:10.3f}",
              f"env steps/s inside training (env step row only) {r['env_steps_per_s_in_training']:10.0f}"]
    if full_run and r["evaluations"]:
        per_eval = r["seconds"]["evaluation"] / r["evaluations"]
        n = full_run["total_steps"] // full_run["eval_every_steps"] if full_run["eval_every_steps"] else 0
        train_s = full_run["total_steps"] / r["train_steps_per_s"]
        lines.append(f"one evaluation {per_eval:.2f} s; a full run ({full_run['total_steps']} steps, "
                     f"{n} evaluations) would spend about {100 * n * per_eval / (train_s + n * per_eval):.1f} % "
                     "of its wall time evaluating")
    return "\n".join(lines)


def _variant_overrides(text: str) -> list[str]:
    """``KEY=VALUE[,KEY=VALUE]`` as overrides: a comma starts another override only where a ``KEY=`` follows it,
    so a value may hold commas (``policy_kwargs.net_arch=[64,64]``)."""
    return [part.strip() for part in re.split(r",(?=\s*[A-Za-z_][\w.]*=)", text) if part.strip()]


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", required=True, help="a training config: a name under configs/train or a path")
    parser.add_argument("--steps", type=int, default=None,
                        help="steps to train (rounded up to whole PPO updates; default four updates, >= 4096)")
    parser.add_argument("--seed", type=seed_argument, default=None)
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                        help="a config value by dotted key, as in train.py (repeatable)")
    parser.add_argument("--variant", action="append", default=[], metavar="KEY=VALUE[,KEY=VALUE]",
                        help="another configuration to time against the base one (repeatable)")
    parser.add_argument("--backend", default=None, metavar="NAME[,NAME...]",
                        help="learners to time side by side (sb3,lean): the first is the base, each other a variant "
                             "backend=NAME; default the config's")
    parser.add_argument("--rounds", type=int, default=1, help="rounds of the base and each variant, alternated")
    parser.add_argument("--no-eval", action="store_true", help="leave out the evaluation midway")
    parser.add_argument("--json", default=None, help="write every run's figures to this file")
    args = parser.parse_args(argv)
    if args.steps is not None and args.steps < 1:
        parser.exit(2, f"profile_training: error: --steps = {args.steps}: expected at least 1\n")
    if args.rounds < 1:
        parser.exit(2, f"profile_training: error: --rounds = {args.rounds}: expected at least 1\n")
    train = train_script()
    if args.backend:
        from acres_gym.agents.backends import BACKENDS

        chosen = [b.strip() for b in args.backend.split(",") if b.strip()]
        for b in chosen:
            if b not in BACKENDS:
                parser.exit(2, f"profile_training: error: --backend {b!r}; allowed: {', '.join(BACKENDS)}\n")
        args.overrides = [*args.overrides, f"backend={chosen[0]}"]
        args.variant = [f"backend={b}" for b in chosen[1:]] + args.variant
    names = ["base", *args.variant]
    configs = {}
    try:
        for name in names:
            extra = [*args.overrides, *([] if name == "base" else _variant_overrides(name))]
            own = {k: v for k, _, v in (e.partition("=") for e in extra) if k in PROFILER_KEYS}
            for key, value in own.items():
                if value not in PROFILER_KEYS[key]:
                    raise ValueError(f"{key} = {value!r}; allowed: {', '.join(PROFILER_KEYS[key])}")
            ns = argparse.Namespace(total_steps=None, seed=args.seed, out=None,
                                    overrides=[e for e in extra if e.partition("=")[0] not in PROFILER_KEYS])
            cfg = train.load_train_config(args.config, ns)
            cfg.update(own, name=Path(args.config).stem)
            if cfg["algo"] != "ppo":
                raise ValueError(f"algo = {cfg['algo']!r}: the profiler times PPO's rollouts and updates; "
                                 "allowed: ppo")
            configs[name] = cfg
    except (FileNotFoundError, ValueError, KeyError, TypeError, train.RunError) as exc:
        message = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        parser.exit(2, f"profile_training: error: {message}\n")
    runs: dict[str, list[dict]] = {name: [] for name in names}
    for _ in range(args.rounds):
        for name in names:
            cfg = configs[name]
            steps = args.steps if args.steps is not None else default_steps(cfg)
            runs[name].append(profile_run(cfg, steps, evaluate=not args.no_eval))
    for name in names:
        print(f"\n== {args.config}" + ("" if name == "base" else f" with {name}")
              + (f" (last of {args.rounds} rounds)" if args.rounds > 1 else ""))
        print(format_profile(runs[name][-1], configs[name]))
    result: dict[str, Any] = {"runs": runs}
    if len(names) > 1:
        print(f"\ntraining steps/s as a ratio to the base config's in the same round (median of {args.rounds})")
        print("variant                                        ratio  training/raw env  update share")
        ratios = {}
        for name in names:
            r = [v["train_steps_per_s"] / b["train_steps_per_s"] for v, b in zip(runs[name], runs["base"], strict=True)]
            raw = [v["train_steps_per_s"] / v["raw_env_steps_per_s"] for v in runs[name]]
            upd = [v["shares"]["update"] for v in runs[name]]
            ratios[name] = statistics.median(r)
            print(f"{name[:45]:45s} {statistics.median(r):6.3f}  {statistics.median(raw):16.3f}  "
                  f"{100 * statistics.median(upd):10.1f} %")
        result["ratios"] = ratios
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(result, f, indent=2, default=lambda o: o.item() if isinstance(o, np.generic) else str(o))
    return result


if __name__ == "__main__":
    main()
