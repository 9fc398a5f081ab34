"""What ``train.py`` needs around ``model.learn``: callbacks, exact checkpoints, the report and its plots.

- ``TrainingMonitor``: a progress bar (tqdm) with the mean score of the last finished episodes, the task's
  figures of every finished training episode logged to TensorBoard under ``task/`` (each figure the task
  declares, the success rate, the failure rate and the rate of each failure cause), and the learning curve
  (per episode: steps, training wall time, return, task metric).
- ``PeriodicEvaluation``: every ``every_steps`` (at the start of a rollout), the deterministic policy on
  the evaluation seeds; the first evaluation that beats the baseline (``beats``) is remembered with its
  steps and wall time. It runs between rollouts on a frozen copy of the observation normaliser and
  restores every random generator afterwards, so it never changes what is learned.
- ``RunCheckpoint``, ``save_checkpoint`` and ``save_run``: a checkpoint taken between two PPO updates holds
  everything an uninterrupted run would carry on with: the model (parameters, optimiser, last observation,
  counters), the observation normaliser with its running returns, the training environment itself (every
  vehicle mid-episode and its episode generator, pickled), the torch, numpy, Python and action-space
  generators, and the history of the curves. ``train.py --resume`` from it continues bit for bit
  (``tests/test_train_resume.py``). For SAC the replay buffer is saved too (``state.replay_buffer.pkl``,
  large). Each checkpoint is a directory ``checkpoints/step_<steps>/`` written whole and renamed when
  complete, the newest ``keep_checkpoints`` kept; the run's own ``model.zip`` ... are the final checkpoint's
  (``acres_gym.agents.run_files``).
- ``TrainClock``: training wall time, with the evaluations left out.
- ``write_report``: ``report.json``, ``learning_curve.png``, ``evaluation.png`` and ``report.md``.

Each task declares its metric, its figures, its failure flags and how it succeeds
(``acres_gym.envs.tasks.base.Scoring``; speed tracking: speed RMSE, path following: lateral RMSE, lower is
better; off-road navigation: the success rate); this module names no task. A policy *beats* the baseline
when its mean metric over the evaluation episodes is higher (a metric where higher is better), or, for a
metric where lower is better, when its mean is lower, it fails in no larger share of the episodes, and it
covers at least ``MIN_DISTANCE_SHARE`` of the baseline's mean distance (a parked vehicle tracks a path well
and a zero speed target perfectly).
"""

from __future__ import annotations

import copy
import json
import math
import pickle
import random
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import torch
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.off_policy_algorithm import OffPolicyAlgorithm
from stable_baselines3.common.vec_env import VecEnv

from acres_gym.agents import run_files
from acres_gym.configuration import to_builtins
from acres_gym.envs.tasks import Task, task_class

MIN_DISTANCE_SHARE = 0.9
STATE_VERSION = 1


class RunError(Exception):
    """A user error in a training command (printed as one line, exit status 2)."""


def task_metric(task_config: Mapping) -> str:
    """The metric that says how well the config's task is done (its ``Scoring.metric``)."""
    return task_class(task_config["task"]).scoring.metric


def task_of_env(vec_env) -> type[Task]:
    """The task a stable-baselines3 ``VecEnv`` over a ``RangerVectorEnv`` runs (through any wrappers)."""
    return task_class(vec_env.get_attr("config", [0])[0]["task"])


def metric_label(task: type[Task], key: str) -> str:
    """The label of one of the task's figures (the key itself for others)."""
    labels = {f.key: f.label for f in task.scoring.figures}
    return labels.get(key, "episode return" if key == "episode_return" else key)


def beats(learned: Mapping[str, float], baseline: Mapping[str, float], metric: str,
          higher_is_better: bool = False) -> bool:
    """Whether evaluation means ``learned`` beat ``baseline`` on ``metric`` (see the module docstring)."""
    if higher_is_better:
        return learned[metric] > baseline[metric]
    return (learned[metric] < baseline[metric] and learned["failed"] <= baseline["failed"]
            and learned["distance_m"] >= MIN_DISTANCE_SHARE * baseline["distance_m"])


class TrainClock:
    """Wall time spent training: ``elapsed()`` counts from ``start()`` with the paused spans left out,
    plus ``offset`` (the training time of the run a resumed one continues)."""

    def __init__(self, offset: float = 0.0) -> None:
        self.offset = offset
        self._t0 = time.perf_counter()
        self._paused = 0.0

    def start(self) -> None:
        self._t0 = time.perf_counter()
        self._paused = 0.0

    def elapsed(self) -> float:
        return self.offset + time.perf_counter() - self._t0 - self._paused

    def paused(self, seconds: float) -> None:
        self._paused += seconds


def new_history() -> dict[str, Any]:
    """The record of a run's progress, carried through checkpoints: training episodes, evaluations."""
    return {"episodes": [], "evaluations": [], "first_beat": None, "train_s": 0.0}


# --- random generators --------------------------------------------------------------------------------

def rng_state(model: BaseAlgorithm) -> dict[str, Any]:
    """Every generator training draws from: torch (actions), numpy (minibatches, replay samples),
    Python's, and the action space's (SAC's warm-up actions)."""
    return {"torch": torch.get_rng_state(), "numpy": np.random.get_state(), "python": random.getstate(),
            "action_space": copy.deepcopy(model.action_space.np_random.bit_generator.state)}


def set_rng_state(model: BaseAlgorithm, state: Mapping[str, Any]) -> None:
    torch.set_rng_state(state["torch"])
    np.random.set_state(state["numpy"])
    random.setstate(state["python"])
    model.action_space.np_random.bit_generator.state = state["action_space"]


# --- callbacks -------------------------------------------------------------------------------------------

def _finished_episodes(infos: list[dict], task: type[Task]) -> list[dict[str, float]]:
    """The task's episode rows (``Task.episode_row``) of the episodes that ended in this step, with the
    return and length SB3 counted."""
    rows = []
    for info in infos:
        if "episode" not in info:
            continue
        row = {"return": float(info["episode"]["r"]), "length": int(info["episode"]["l"])}
        row.update(task.episode_row(info.get("metrics", {}), bool(info.get("TimeLimit.truncated"))))
        rows.append(row)
    return rows


class TrainingMonitor(BaseCallback):
    """Progress bar, task metrics to TensorBoard and the learning curve (see the module docstring)."""

    def __init__(self, metric: str, clock: TrainClock, history: dict, progress_bar: bool = True,
                 window: int = 50) -> None:
        super().__init__()
        self.metric, self.clock, self.history = metric, clock, history
        self.show_bar, self.window = progress_bar, window
        self._bar = None
        self._recent: list[dict[str, float]] = []
        self._shown = 0.0
        self.task: type[Task] | None = None

    def _on_training_start(self) -> None:
        self.task = task_of_env(self.training_env)
        if self.show_bar:
            import sys

            from tqdm.auto import tqdm

            total = int(self.model._total_timesteps)
            self._bar = tqdm(total=total, initial=int(self.num_timesteps), unit="step", dynamic_ncols=True,
                             mininterval=0.5 if sys.stderr.isatty() else 30.0, smoothing=0.05)

    def _on_step(self) -> bool:
        scoring = self.task.scoring
        for row in _finished_episodes(self.locals["infos"], self.task):
            self._recent = (self._recent + [row])[-self.window:]
            self.history["episodes"].append({"steps": int(self.num_timesteps), "wall_s": self.clock.elapsed(),
                                             "return": row["return"], self.metric: row.get(self.metric, math.nan)})
            for figure in scoring.figures:
                key = figure.key
                if key != "success" and key in row and math.isfinite(row[key]):
                    self.logger.record_mean(f"task/{key}", row[key])
            self.logger.record_mean("task/success_rate", row["success"])
            self.logger.record_mean("task/failure_rate", row["failed"])
            for key in scoring.failures:
                self.logger.record_mean(f"task/failure/{key}", row[key])
        if self._bar is not None:
            self._bar.update(int(self.num_timesteps) - self._bar.n)
            now = time.perf_counter()
            if self._recent and now - self._shown > 0.5:
                self._shown = now
                score = np.mean([r["return"] for r in self._recent])
                value = np.mean([r.get(self.metric, math.nan) for r in self._recent])
                self._bar.set_postfix_str(f"return {score:.1f}  {self.metric} {value:.3f}  "
                                          f"(last {len(self._recent)} episodes)", refresh=False)
        return True

    def _on_training_end(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None


class CurriculumStages(BaseCallback):
    """A training curriculum: at the first rollout end at or past each stage's ``from_steps`` (or at the start
    of a resumed run), ``switch(model, steps)`` puts the stage's training env in place of the current one.
    ``starts`` are the stages' ``from_steps`` (increasing); ``current`` is the number of stages the env already
    holds (0: the config's own env_config)."""

    def __init__(self, starts: list[int], switch: Callable[[BaseAlgorithm, int], None], current: int) -> None:
        super().__init__()
        self.starts, self.switch, self.current = [int(s) for s in starts], switch, int(current)

    @staticmethod
    def reached(starts: list[int], steps: int) -> int:
        """How many stages begin at or before ``steps``."""
        return sum(1 for start in starts if start <= steps)

    def _apply_due(self) -> None:
        due = self.reached(self.starts, self.num_timesteps)
        if due != self.current:
            self.switch(self.model, int(self.num_timesteps))
            self.current = due

    def _on_training_start(self) -> None:
        self._apply_due()

    def _on_rollout_end(self) -> None:
        self._apply_due()

    def _on_step(self) -> bool:
        return True


class PeriodicEvaluation(BaseCallback):
    """The policy on the evaluation seeds every ``every_steps``; see the module docstring.

    ``evaluate(policy_factory) -> result`` runs ``acres_gym.agents.evaluate.evaluate`` on the
    evaluation seeds; ``baseline`` is the baseline's result on the same seeds."""

    def __init__(self, every_steps: int, evaluate: Callable[[Callable], dict], baseline: Mapping | None,
                 metric: str, clock: TrainClock, history: dict) -> None:
        super().__init__()
        self.every_steps, self.evaluate, self.baseline = int(every_steps), evaluate, baseline
        self.metric, self.clock, self.history = metric, clock, history
        self.last_result: dict | None = None

    def _due(self) -> bool:
        done = [e["steps"] for e in self.history["evaluations"]]
        last = max(done) if done else 0
        return self.num_timesteps >= (last // self.every_steps + 1) * self.every_steps

    def _on_rollout_start(self) -> None:
        if self.every_steps > 0 and self.num_timesteps > 0 and self._due():
            self.run()

    def _on_step(self) -> bool:
        return True

    def run(self) -> dict:
        """Evaluate now (training state untouched) and record the result."""
        from acres_gym.agents.sb3_models import SB3Policy

        t0 = time.perf_counter()
        wall = self.clock.elapsed()
        state = rng_state(self.model)
        training_mode = self.model.policy.training
        try:
            result = self.evaluate(SB3Policy.factory(self.model, self.model.get_vec_normalize_env()))
        finally:
            set_rng_state(self.model, state)
            self.model.policy.set_training_mode(training_mode)
        self.last_result = result
        mean = result["mean"]
        higher = task_class(result["task"]).scoring.higher_is_better
        entry = {"steps": int(self.num_timesteps), "wall_s": wall,
                 **{k: mean[k] for k in ("episode_return", self.metric, "failed", "distance_m")}}
        entry["beats_baseline"] = bool(self.baseline is not None
                                       and beats(mean, self.baseline["mean"], self.metric, higher))
        self.history["evaluations"].append(entry)
        if entry["beats_baseline"] and self.history["first_beat"] is None:
            self.history["first_beat"] = {"steps": entry["steps"], "train_wall_s": wall}
        self.logger.record("eval/episode_return", mean["episode_return"])
        self.logger.record(f"eval/{self.metric}", mean[self.metric])
        self.logger.record("eval/failed", mean["failed"])
        self.clock.paused(time.perf_counter() - t0)
        return entry


class RunCheckpoint(BaseCallback):
    """An exact checkpoint (``save_checkpoint``) every ``every_steps``, taken between two updates, as
    ``<run_dir>/checkpoints/step_<steps>/``; the newest ``keep`` stay."""

    def __init__(self, every_steps: int, run_dir: Path, clock: TrainClock, history: dict, keep: int) -> None:
        super().__init__()
        self.every_steps, self.run_dir, self.clock, self.history = int(every_steps), Path(run_dir), clock, history
        self.keep = int(keep)
        self._next: int | None = None

    def _on_training_start(self) -> None:
        self._next = (int(self.num_timesteps) // self.every_steps + 1) * self.every_steps

    def _on_rollout_start(self) -> None:
        if self.num_timesteps >= self._next:
            self._next = (int(self.num_timesteps) // self.every_steps + 1) * self.every_steps
            t0 = time.perf_counter()
            save_checkpoint(self.model, self.run_dir, self.clock, self.history, self.keep)
            self.clock.paused(time.perf_counter() - t0)

    def _on_step(self) -> bool:
        return True


# --- exact checkpoints -------------------------------------------------------------------------------------

def run_state_writers(model: BaseAlgorithm, run_dir: Path, clock: TrainClock,
                      history: dict) -> dict[str, Callable[[Path], None]]:
    """The files of a save, each as ``writer(path)``: the model, its normaliser, the rest of the training
    state (see the module docstring), SAC's replay buffer and a copy of the run's ``config.yaml``."""
    normalizer = model.get_vec_normalize_env()
    inner: VecEnv = model.get_env() if normalizer is None else normalizer.venv
    state = {"version": STATE_VERSION, "num_timesteps": int(model.num_timesteps), "rng": rng_state(model),
             "env": inner, "normalizer_returns": None if normalizer is None else normalizer.returns.copy(),
             "history": {**copy.deepcopy(history), "train_s": clock.elapsed()}}

    def write_state(path: Path) -> None:
        with open(path, "wb") as f:
            pickle.dump(state, f, protocol=pickle.HIGHEST_PROTOCOL)

    writers: dict[str, Callable[[Path], None]] = {run_files.MODEL: lambda path: model.save(str(path))}
    if normalizer is not None:
        writers[run_files.NORMALIZER] = lambda path: normalizer.save(str(path))
    writers[run_files.STATE] = write_state
    if isinstance(model, OffPolicyAlgorithm):
        writers[run_files.REPLAY_BUFFER] = lambda path: model.save_replay_buffer(str(path))
    config = Path(run_dir) / run_files.CONFIG
    if config.is_file():
        writers[run_files.CONFIG] = lambda path: path.write_bytes(config.read_bytes())
    return writers


def save_checkpoint(model: BaseAlgorithm, run_dir: Path, clock: TrainClock, history: dict, keep: int) -> Path:
    """A complete checkpoint ``<run_dir>/checkpoints/step_<steps>/``, written atomically; the newest ``keep``
    checkpoints stay."""
    return run_files.write_checkpoint(run_dir, int(model.num_timesteps),
                                      run_state_writers(model, run_dir, clock, history), keep)


def save_run(model: BaseAlgorithm, run_dir: Path, clock: TrainClock, history: dict, keep: int) -> Path:
    """The end of a run: a last checkpoint, whose files become the run's own ``model.zip``,
    ``vecnormalize.pkl`` and ``state.pkl``."""
    checkpoint = save_checkpoint(model, run_dir, clock, history, keep)
    run_files.publish(run_dir, checkpoint)
    return checkpoint


def restore_run_state(model: BaseAlgorithm, state: Mapping, replay_buffer: Path) -> None:
    """After ``load`` (which re-seeds every generator with the run's seed): the generators, the
    normaliser's running returns and SAC's replay buffer as they were at the checkpoint."""
    set_rng_state(model, state["rng"])
    normalizer = model.get_vec_normalize_env()
    if normalizer is not None and state["normalizer_returns"] is not None:
        normalizer.returns = state["normalizer_returns"].copy()
    if isinstance(model, OffPolicyAlgorithm) and replay_buffer.is_file():
        try:
            model.load_replay_buffer(str(replay_buffer))
        except Exception as exc:  # a damaged pickle raises almost anything
            raise run_files.RunFileError(f"{replay_buffer}: not a readable replay buffer "
                                         f"({type(exc).__name__})") from None


# --- report ----------------------------------------------------------------------------------------------

def _binned(x: list[float], y: list[float], bins: int = 60) -> tuple[np.ndarray, np.ndarray]:
    """Means of ``x`` and ``y`` over up to ``bins`` consecutive groups of points (in the order of ``x``);
    NaNs left out of ``y``'s means."""
    order = np.argsort(np.asarray(x, dtype=float), kind="stable")
    if order.size == 0:
        return np.empty(0), np.empty(0)
    groups = np.array_split(order, min(bins, order.size))
    xs, ys = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    with np.errstate(all="ignore"):
        return (np.array([xs[g].mean() for g in groups]),
                np.array([np.nanmean(ys[g]) if np.isfinite(ys[g]).any() else np.nan for g in groups]))


def plot_learning_curve(path: Path, history: Mapping, metric: str, baseline: Mapping | None,
                        baseline_name: str | None, title: str, task: type[Task]) -> None:
    """Return and task metric against steps and training wall time: training episodes (means over about
    60 groups of consecutive episodes), evaluations on the evaluation seeds, the baseline's evaluation as a line."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    eps, evals = history["episodes"], history["evaluations"]
    fig, axes = plt.subplots(2, 2, figsize=(10, 6.4), sharex="col")
    per_group = max(1, round(len(eps) / 60))
    for col, xkey, xlabel in ((0, "steps", "environment steps"), (1, "wall_s", "training wall time (s)")):
        for row, key, ekey in ((0, "return", "episode_return"), (1, metric, metric)):
            ax = axes[row, col]
            if eps:
                ax.plot(*_binned([e[xkey] for e in eps], [e[key] for e in eps]), color="tab:blue", lw=1.2,
                        label=f"training episodes (means of about {per_group})")
            if evals:
                ax.plot([e[xkey] for e in evals], [e[ekey] for e in evals], "o-", color="tab:orange", ms=4,
                        label="evaluation seeds")
            if baseline is not None:
                ax.axhline(baseline["mean"][ekey], color="tab:green", ls="--", label=f"{baseline_name} (evaluation)")
            if history.get("first_beat") and col == 1 and row == 1:
                ax.axvline(history["first_beat"]["train_wall_s"], color="grey", ls=":", label="first beats baseline")
            elif history.get("first_beat") and col == 0 and row == 1:
                ax.axvline(history["first_beat"]["steps"], color="grey", ls=":", label="first beats baseline")
            ax.set_ylabel(metric_label(task, ekey))
            ax.grid(alpha=0.3)
            if row == 1:
                ax.set_xlabel(xlabel)
    axes[1, 0].legend(fontsize=7, loc="best")
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    plt.close(fig)


def compared(task: type[Task]) -> list[tuple[str, str]]:
    """``(key, label)`` of the figures the report compares: the return, the task's figures, the failure
    share and each failure cause."""
    s = task.scoring
    return ([("episode_return", "return")] + [(f.key, f.label) for f in s.figures] + [("failed", "failed share")]
            + [(flag, flag.replace("_", " ") + " share") for flag in s.failures])


def plot_evaluation(path: Path, results: Mapping[str, Mapping], title: str, task: type[Task]) -> None:
    """Per figure the report compares (``compared``; up to six a row), each policy's episodes (dots) and mean
    (bar) on the evaluation seeds."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(results)
    shown = compared(task)
    cols = min(6, len(shown))
    rows = math.ceil(len(shown) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(2.3 * cols, 3.2 * rows), squeeze=False)
    for ax in axes.flat[len(shown):]:
        ax.set_visible(False)
    for ax, (key, label) in zip(axes.flat, shown, strict=False):
        for i, name in enumerate(names):
            per = [e[key] for e in results[name]["per_episode"] if math.isfinite(e[key])]
            ax.bar(i, results[name]["mean"][key], color=f"C{i}", alpha=0.5)
            ax.plot(np.full(len(per), i) + np.linspace(-0.2, 0.2, len(per)), per, "k.", ms=3)
        ax.set_xticks(range(len(names)), names, rotation=20, fontsize=7)
        ax.set_title(label, fontsize=9)
        ax.grid(axis="y", alpha=0.3)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    plt.close(fig)


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.3f}" if math.isfinite(value) else "nan"
    return str(value)


def write_report(out: Path, report: dict, history: Mapping, results: Mapping[str, Mapping], metric: str,
                 baseline_name: str | None, plots: bool = True) -> None:
    """``report.json``, and unless ``plots`` is off the two PNG plots and ``report.md`` that shows them."""
    (out / "report.json").write_text(json.dumps(to_builtins(report), indent=2), encoding="utf-8")
    if not plots:
        return
    title = f"{report['algo'].upper()} on {report['env_id']}, seed {report['seed']}"
    task = task_class(next(iter(results.values()))["task"])
    baseline = results.get(baseline_name) if baseline_name else None
    plot_learning_curve(out / "learning_curve.png", history, metric, baseline, baseline_name, title, task)
    plot_evaluation(out / "evaluation.png", results, title + f", {report['eval_episodes']} evaluation episodes",
                    task)
    beat = report["first_beats_baseline"]
    columns = compared(task)
    lines = [f"# {title}", "",
             f"- trained {report['total_steps']} steps ({report['trained_steps']} in this run) in "
             f"{report['train_wall_s']:.1f} s of training ({report['train_steps_per_s']:.0f} steps/s), "
             f"{report['num_envs']} vehicles",
             f"- task metric: {metric_label(task, metric)}; evaluation every "
             f"{report['eval_every_steps']} steps on {report['eval_episodes']} episodes from seed "
             f"{report['eval_seed']}",
             "- first beats the baseline: " + (f"after {beat['steps']} steps, {beat['train_wall_s']:.1f} s of training"
                                               if beat else "not within this run"),
             "", "![learning curve](learning_curve.png)", "", "## Evaluation", "",
             "| policy | " + " | ".join(label for _, label in columns) + " |",
             "| --- " * (len(columns) + 1) + "|"]
    for name, r in results.items():
        lines.append(f"| {name} | " + " | ".join(_fmt(r["mean"][k]) for k, _ in columns) + " |")
    lines += ["", "![evaluation](evaluation.png)", ""]
    (out / "report.md").write_text("\n".join(lines), encoding="utf-8")
