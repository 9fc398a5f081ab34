"""The task contract: what ``RangerBatch`` asks of a task, how a task says it is scored, and the registry.

A task is a subclass of ``Task`` registered under its ``name`` with ``@register_task``. ``RangerBatch``
(``acres_gym.envs.core``) calls only what ``Task`` declares: the abstract methods every task writes
(its episode draw and its measurements after a step) and the hooks below, whose defaults do nothing, so
a task writes only those it needs:

============================ ==================================================================================
hook                         default
============================ ==================================================================================
``bind(randomizer, sim)``    nothing (the navigation task takes the surface table, vehicle and grid)
``check_grid(...)``          nothing (the path tasks refuse a path longer than the terrain grid)
``episode_terrain(i)``       None: the randomisation's terrain (a task that draws its own returns it)
``locate_measure(...)``      ``locate`` then ``measure`` (the path tasks do both in one jitted call)
``after_step(...)``          nothing (the navigation task records why an episode fell short)
``infos(batch)``             no entries of its own in ``info`` (``info_row(batch, i)`` for one vehicle)
``snapshot`` / ``restore``   nothing to keep across a vector env's autoreset
``view(i, frame)``           what the debug view draws: no path, no target, no goal, no HUD lines
============================ ==================================================================================

Scoring (``Scoring``): the task's metric and whether higher is better, the figures shown for it (the
columns of ``train.py``'s and ``evaluate``'s tables, ``report.md``, the TensorBoard scalars ``task/...``
and the summary line of ``watch``), its failure flags (each an end flag of ``info``; the failure share
counts an episode with any of them) and how an episode succeeds (a flag such as ``goal_reached``, or,
without one, ending by the time limit or the path's end with no failure). ``Task.episode_row`` turns
the ``info`` of an episode's last step into those figures; the trainer, ``evaluate`` and ``watch`` call it
and name no task.

``TaskFrame``: what a task measures after a step, one row per vehicle; the built-in reward terms and the
observation items read it. A task's own measures go in ``TaskFrame.values``, named by its ``value_names``
(the navigation task's ``hazard_distance_m``); a reward term that declares it ``reads`` one is refused, when
the environment is made, on a task that does not name it, and the task is told (``read_values``) which of
them are read, so that a measure with a cost of its own is made only when a term reads it.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

TERRAIN_MARGIN_M = 2.0  # the rear-axle midpoint this close to the terrain's edge ends the episode (off_terrain)


def on_terrain_bounds(extent: tuple[float, float, float, float]) -> np.ndarray:
    """(x_min, x_max, y_min, y_max) where the rear-axle midpoint stays on the terrain: the grid's ``extent`` less
    ``TERRAIN_MARGIN_M`` on each side (the batch's off-terrain end, the navigation map's edge)."""
    x0, x1, y0, y1 = extent
    return np.array([x0 + TERRAIN_MARGIN_M, x1 - TERRAIN_MARGIN_M, y0 + TERRAIN_MARGIN_M, y1 - TERRAIN_MARGIN_M])

COMMON_FAILURES = ("rolled_over", "diverged", "off_terrain")  # end flags every task counts as failures
ROW_FIGURES = ("episode_return", "episode_steps", "distance_m", "fuel_used_g", "fuel_g_per_km")
"""Figures of every task's episode row (``Task.episode_row``), from the ``info`` entries of the same name."""
FUEL_DENSITY_KG_L = 0.745  # petrol (estimate: EN 228 range 0.720-0.775 kg/L), for L/100 km


@dataclass
class TaskFrame:
    """What the task measures after a step, one row per vehicle. Every task fills the first seven (the
    built-in reward terms and ``RangerBatch``'s end conditions read them; a task without a path gives zeros
    and its own meaning: the navigation task's ``s_m`` is minus the distance to the goal)."""

    lateral_error_m: np.ndarray
    heading_error_rad: np.ndarray
    s_m: np.ndarray
    target_speed: np.ndarray  # (N, 1 + P): now, then the preview
    path_points: np.ndarray  # (N, K, 2) body frame
    off_course: np.ndarray
    path_complete: np.ndarray
    flags: dict[str, np.ndarray] | None = None  # task-specific end flags (each terminates; in info)
    values: dict[str, np.ndarray] | None = None  # task-specific measures reward terms read (StepContext.values)
    goal: np.ndarray | None = None  # (N, 2) goal distance m and bearing rad (navigation tasks)
    local_map: np.ndarray | None = None  # (N, C, H, W) egocentric map (navigation tasks)


@dataclass(frozen=True)
class Figure:
    """One figure of a task's episodes: the key of the episode row, the column label (with its unit) and
    its format. ``where_finite``: the mean is over the episodes where it is finite (a time to the goal is
    NaN where the goal was not reached)."""

    key: str
    label: str
    fmt: str = "{:.3f}"
    where_finite: bool = False


@dataclass(frozen=True)
class Scoring:
    """How a task is scored (module docstring). ``metric`` is the key of one of the episode row's figures;
    ``baselines`` names the classical policies (``acres_gym.agents.baselines``) compared against by
    default."""

    metric: str
    higher_is_better: bool
    figures: tuple[Figure, ...]
    failures: tuple[str, ...]
    success_flag: str | None = None
    baselines: tuple[str, ...] = ()

    @property
    def end_flags(self) -> tuple[str, ...]:
        """The flags that say how an episode ended: the failures, then the success flag (or the path's end)."""
        return self.failures + (self.success_flag or "path_complete",)

    def figure(self, key: str) -> Figure:
        for f in self.figures:
            if f.key == key:
                return f
        raise KeyError(f"{key!r} is not a figure of this task; its figures: {', '.join(f.key for f in self.figures)}")


@dataclass
class TaskView:
    """What the debug view draws of a task for one vehicle: the reference path (M, 2 world points) and the
    point tracked on it, the goal (world x, y; its radius, m), the task's HUD lines, the policy's
    ``local_map`` (C, H, W) with its channel names and the vehicle's (row, column) in it, and the no-go
    areas (a mask on the terrain grid)."""

    path_xy: np.ndarray | None = None
    target_xy: tuple[float, float] | None = None
    goal_xy: tuple[float, float] | None = None
    goal_radius_m: float = 0.0
    hud: list[str] = field(default_factory=list)
    local_map: np.ndarray | None = None
    map_channels: tuple[str, ...] = ()
    map_vehicle_rc: tuple[float, float] | None = None
    no_go: np.ndarray | None = None


class Task(ABC):
    """The contract of a task (module docstring). A task's ``__init__(n, dt_s, max_steps, options,
    bounds)`` sets ``options`` (its resolved ``task_options``) and ``episode_summary`` (one dict per vehicle,
    merged into the episode's summary at each reset)."""

    name: ClassVar[str] = ""
    option_defaults: ClassVar[dict[str, Any]] = {}
    flag_names: ClassVar[tuple[str, ...]] = ()  # the task's own end flags (each terminates; in info)
    value_names: ClassVar[tuple[str, ...]] = ()  # the task's own measures in TaskFrame.values (reward terms read them)
    scoring: ClassVar[Scoring]
    speed_points: int = 1  # the observation sizes: target speeds (now and previews), path points, local map
    path_points: int = 0
    map_shape: tuple[int, int, int] = (0, 0, 0)

    options: dict[str, Any]
    episode_summary: list[dict[str, Any]]

    # --- the episode draw ----------------------------------------------------------------------------------
    @abstractmethod
    def prepare(self, rng: np.random.Generator) -> Any:
        """The episode's own draw from the task stream ``rng``: a pure function of it (it may run in the
        background, ``acres_gym.envs.pregen``)."""

    @staticmethod
    @abstractmethod
    def spawn_xy(episode: Any) -> tuple[float, float]:
        """The start point of a prepared episode, m."""

    @abstractmethod
    def draw(self, i: int, rng: np.random.Generator | None, episode: Any = None) -> tuple[float, float, float]:
        """Write vehicle ``i``'s episode (``episode`` from ``prepare``); returns the spawn pose (x, y, yaw)."""

    # --- measurement ---------------------------------------------------------------------------------------
    @abstractmethod
    def locate(self, x: np.ndarray, y: np.ndarray, rows: np.ndarray, restart: bool = False) -> None:
        """Update the task's per-vehicle tracking for the vehicles in ``rows`` at (x, y) (``restart``: a new
        episode)."""

    @abstractmethod
    def measure(self, x: np.ndarray, y: np.ndarray, yaw: np.ndarray, steps: np.ndarray) -> TaskFrame:
        """The measurements of all vehicles at the rear-axle midpoint (x, y), yaw, after ``steps`` steps."""

    def locate_measure(self, kin: np.ndarray, steps: np.ndarray, rows: np.ndarray) -> TaskFrame:
        """``locate`` the vehicles in ``rows`` and ``measure`` all, from the (7, N) body kinematics
        (``acres_gym.envs.core.KINEMATICS`` rows: yaw 2, axle x 5, axle y 6): what a control step does."""
        self.locate(kin[5], kin[6], rows)
        return self.measure(kin[5], kin[6], kin[2], steps)

    # --- optional hooks ------------------------------------------------------------------------------------
    def bind(self, randomizer, sim) -> None:  # noqa: B027  (a hook: most tasks need nothing of the batch)
        """Take what the task needs of the batch's randomiser and simulator (called once)."""

    def read_values(self, names: frozenset[str]) -> None:  # noqa: B027  (a hook: most measures cost nothing)
        """The names of ``value_names`` the reward terms read (called once, before any episode is drawn): a
        measure none of them reads may be left out of ``TaskFrame.values``."""

    def check_grid(self, grid_points: int, config: Mapping[str, Any], dt_s: float) -> None:  # noqa: B027
        """Raise ``ValueError`` naming the config key when an episode of this config cannot fit a terrain
        grid of ``grid_points`` points a side."""

    def episode_terrain(self, i: int):
        """The terrain the task drew for vehicle ``i``'s episode (handed over once), or None to keep the
        randomisation's."""
        return None

    def after_step(self, batch, rows, frame, state, speed, ended, task_flags) -> None:  # noqa: B027
        """The task's own bookkeeping after a control step of the vehicles in ``rows``."""

    def infos(self, batch) -> dict[str, np.ndarray]:
        """The task's own ``info`` entries, arrays over N (appended after the shared ones)."""
        return {}

    def info_row(self, batch, i: int) -> dict[str, Any]:
        """``infos`` for vehicle ``i`` alone, as Python scalars."""
        return {}

    def snapshot(self, rows: np.ndarray) -> Any:
        """What a control step changes in the task, for the vehicles in ``rows`` (a vector env's autoreset
        restores it)."""
        return None

    def restore(self, rows: np.ndarray, saved: Any) -> None:  # noqa: B027
        """Put back what ``snapshot`` took."""

    def view(self, i: int, frame: TaskFrame) -> TaskView:
        """What the debug view draws of vehicle ``i``'s task (``frame``: the last measurements)."""
        return TaskView()

    # --- scoring -------------------------------------------------------------------------------------------
    @classmethod
    def episode_row(cls, info: Mapping[str, Any], truncated: bool) -> dict[str, float]:
        """The figures of one finished episode from the ``info`` of its last step (scalars): those of every
        task (``ROW_FIGURES``; fuel also in L/100 km), the task's own figures found in ``info``, each failure
        flag, ``failed`` (any of them) and ``success`` (``Scoring``; ``truncated``: it ended by the time
        limit)."""
        s = cls.scoring
        row = {key: float(info[key]) for key in ROW_FIGURES if key in info}
        if "fuel_g_per_km" in row:
            row["l_per_100km"] = row["fuel_g_per_km"] / 1e3 / FUEL_DENSITY_KG_L * 100.0
        for f in s.figures:
            if f.key in info and f.key not in row:
                row[f.key] = float(info[f.key])
        for flag in s.failures:
            row[flag] = float(bool(info.get(flag, False)))
        failed = any(row[flag] for flag in s.failures)
        row["failed"] = float(failed)
        if s.success_flag is not None:
            row["success"] = float(bool(info[s.success_flag]))
        else:
            row["success"] = float(not failed and (truncated or bool(info.get("path_complete", False))))
        return row

    @classmethod
    def mean_figures(cls, rows: list[Mapping[str, float]]) -> dict[str, float]:
        """Means of episode rows: every key over all episodes, a ``where_finite`` figure over those where
        it is finite (NaN when none)."""
        keys = [k for k in rows[0] if k != "seed"]
        mean = {k: float(np.mean([r[k] for r in rows])) for k in keys}
        for f in cls.scoring.figures:
            if f.where_finite and f.key in mean:
                values = [r[f.key] for r in rows if math.isfinite(r[f.key])]
                mean[f.key] = float(np.mean(values)) if values else math.nan
        return mean


# --- the registry ----------------------------------------------------------------------------------------------

TASKS: dict[str, type[Task]] = {}


def register_task(cls: type[Task]) -> type[Task]:
    """Class decorator: make the task ``cls`` known by its ``name`` (``make_task``, the ``task`` key of a
    config)."""
    if not isinstance(cls, type) or not issubclass(cls, Task):
        raise TypeError(f"register_task: {cls!r} is not a subclass of Task")
    if not cls.name:
        raise ValueError(f"register_task: {cls.__name__} has no name")
    if not isinstance(getattr(cls, "scoring", None), Scoring):
        raise ValueError(f"register_task: {cls.__name__} declares no scoring (a Scoring)")
    known = TASKS.get(cls.name)
    if known is not None and known is not cls:
        raise ValueError(f"register_task: task name {cls.name!r} is taken by {known.__module__}.{known.__qualname__}")
    TASKS[cls.name] = cls
    return cls


def task_class(name: str) -> type[Task]:
    """The registered task called ``name``."""
    if name not in TASKS:
        raise ValueError(f"task = {name!r}; known tasks: {', '.join(TASKS)}")
    return TASKS[name]


def make_task(name: str, n: int, dt_s: float, max_steps: int, options: Mapping | None,
              bounds: tuple[float, float, float, float] | None = None) -> Task:
    """The task called ``name`` for N vehicles (paths inside ``bounds`` when given)."""
    return task_class(name)(n, dt_s, max_steps, options, bounds)
