"""Reward plug-ins: one small class per term, registered by name, vectorised over the N vehicles.

A task config lists the terms with their weight and parameters::

    rewards:
      speed_error: {weight: 1.0, shape: gaussian, scale: 1.0}
      action_rate: {weight: 0.05}
      rollover:    {weight: 10.0}

Each term returns one value per vehicle and control step; the reward is the sum of weight x value over
the terms, and ``info["reward_terms"]`` holds every weighted term (they sum to the reward). Terms that
reward return values >= 0, penalties values <= 0, so every weight is >= 0. A weighted term that is not
finite (``squared`` with a scale of 1e-300 overflows) raises naming the term and its
parameters (``ValueError``), never a silent 0.

Built-in terms (``REWARD_TERMS``):

================== ==================================================================================
``speed_error``    tracking of the target speed (the true forward speed of the body); ``shape``:
                   ``gaussian`` exp(-(e/scale)^2) in [0, 1] (default), ``exponential`` exp(-|e|/scale) in
                   [0, 1] (a slope far from the target too), ``squared`` -(e/scale)^2 or ``abs``
                   -|e|/scale; ``scale`` in m/s (default 1.0)
``lateral_error``  distance of the rear-axle midpoint from the reference path, same shapes, ``scale`` m
                   (default 0.5)
``heading_error``  heading relative to the path tangent, same shapes, ``scale`` rad (default 0.2)
``control_effort`` -mean(a^2) over the action components
``action_rate``    smoothness: -mean((a_t - a_{t-1})^2) (``previous_action`` is zero after a reset)
``energy``         -fuel burnt in the step, g (``per_km: true``: g per km driven in the step, limited)
``progress``       metres advanced along the reference path in the step
``alive``          ``value`` (default 1) per step while the episode goes on
``rollover``       -1 on the step the vehicle rolls over or the simulation diverges
``off_course``     -1 on the step the vehicle leaves the path corridor or the terrain
``time``           -dt (s) per step: a cost of the time taken
``goal``           +1 on the step the vehicle reaches the goal (navigation task, ``goal_reached``)
``no_go``          -1 on the step the vehicle enters a no-go area (navigation task)
``stuck``          -1 on the step the vehicle is declared stuck (navigation task)
``clearance``      -dt x max(0, 1 - d / ``distance_m``) per step (default 5 m), d the navigation task's
                   ``hazard_distance_m``: the distance from the nearer axle midpoint to the nearest no-go
                   area or impassable ground, m (capped at 20 m); 0 beyond ``distance_m``
``route_progress`` seconds of route time gained in the step: the navigation task's ``route_time_s`` (the
                   quickest route's time to the goal, round no-go areas and impassable ground) before the
                   step less after it, 0 on an episode's first step (a difference of potentials)
================== ==================================================================================

Other packages add terms through the entry-point group ``acres_gym.rewards`` (name = the term name,
object = a ``RewardTerm`` subclass); in-process code uses the ``@register_reward("name")`` decorator.
An unknown term name is an error listing the known ones.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from typing import Any, ClassVar

import numpy as np
from numba import njit

from acres_gym.configuration import check_keys, number, strip_comments
from acres_gym.runtime import libm

ENTRY_POINT_GROUP = "acres_gym.rewards"
SHAPES = ("gaussian", "exponential", "squared", "abs")


@dataclass
class StepContext:
    """What the reward terms see after a control step, one entry per vehicle (arrays of length N)."""

    dt_s: float
    speed_mps: np.ndarray
    target_speed_mps: np.ndarray
    lateral_error_m: np.ndarray
    heading_error_rad: np.ndarray
    progress_m: np.ndarray
    distance_m: np.ndarray  # driven in the step (rear-axle midpoint), m
    fuel_step_kg: np.ndarray
    action: np.ndarray  # (N, k) flat action, in [-1, 1]
    previous_action: np.ndarray  # (N, k)
    rolled_over: np.ndarray
    diverged: np.ndarray
    off_course: np.ndarray
    terminated: np.ndarray
    flags: dict[str, np.ndarray] = field(default_factory=dict)  # the task's own end flags (goal_reached, ...)
    values: dict[str, np.ndarray] = field(default_factory=dict)  # the task's own measures (hazard_distance_m, ...)
    # the same speed, lateral, heading, progress, distance and fuel arrays as rows of one (6, N) array, when the
    # caller has them so (the environment's step does; ``measures_of`` builds it otherwise)
    measures: np.ndarray | None = None

    def measures_of(self) -> np.ndarray:
        """The (6, N) rows speed, lateral error, heading error, progress, distance, fuel of the step."""
        if self.measures is not None:
            return self.measures
        return np.stack([self.speed_mps, self.lateral_error_m, self.heading_error_rad, self.progress_m,
                         self.distance_m, self.fuel_step_kg]).astype(np.float64)

    def flag(self, name: str) -> np.ndarray:
        """The task flag ``name`` as a bool array (all False when the task has none of that name)."""
        value = self.flags.get(name)
        return np.zeros(self.speed_mps.shape[0], dtype=bool) if value is None else value


class RewardTerm:
    """Base class of a reward term. Subclasses set ``name`` (by the decorator), take their parameters as
    keyword arguments of ``__init__`` (with defaults) and implement ``__call__(ctx) -> (N,) values``."""

    name: ClassVar[str] = ""
    reads: ClassVar[tuple[str, ...]] = ()  # the task measures (StepContext.values) the term needs

    def __init__(self) -> None:
        pass

    def reset(self, rows: np.ndarray) -> None:
        """Called when the vehicles in the boolean mask ``rows`` start a new episode (for stateful terms)."""

    def __call__(self, ctx: StepContext) -> np.ndarray:
        raise NotImplementedError


REWARD_TERMS: dict[str, type[RewardTerm]] = {}
_entry_points_loaded = False


def register_reward(name: str) -> Callable[[type[RewardTerm]], type[RewardTerm]]:
    """Class decorator: register a ``RewardTerm`` subclass under ``name``."""

    def decorate(cls: type[RewardTerm]) -> type[RewardTerm]:
        if not (isinstance(cls, type) and issubclass(cls, RewardTerm)):
            raise TypeError(f"@register_reward({name!r}) expects a RewardTerm subclass, got {cls!r}")
        cls.name = name
        REWARD_TERMS[name] = cls
        return cls

    return decorate


def load_entry_points() -> None:
    """Register the terms other packages declare in the ``acres_gym.rewards`` entry-point group (once)."""
    global _entry_points_loaded
    if _entry_points_loaded:
        return
    _entry_points_loaded = True
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        if ep.name in REWARD_TERMS:
            continue
        cls = ep.load()
        register_reward(ep.name)(cls)


def term_parameters(cls: type[RewardTerm]) -> dict[str, Any]:
    """The parameters of a term class and their defaults (from its ``__init__`` signature)."""
    sig = inspect.signature(cls.__init__)
    return {k: p.default for k, p in list(sig.parameters.items())[1:]
            if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}


def _shaped(error: np.ndarray, shape: str, scale: float) -> np.ndarray:
    x = error / scale
    if shape == "gaussian":
        return libm.exp(-x * x)
    if shape == "exponential":
        return libm.exp(-np.abs(x))
    if shape == "squared":
        return -x * x
    return -np.abs(x)


def _check_shape(term: str, shape: str, scale: float) -> tuple[str, float]:
    if shape not in SHAPES:
        raise ValueError(f"rewards.{term}.shape = {shape!r}; allowed: {', '.join(SHAPES)}")
    return shape, number(f"rewards.{term}.scale", scale, 0.0, lo_open=True)


@register_reward("speed_error")
class SpeedError(RewardTerm):
    def __init__(self, shape: str = "gaussian", scale: float = 1.0) -> None:
        self.shape, self.scale = _check_shape("speed_error", shape, scale)

    def __call__(self, ctx):
        return _shaped(ctx.speed_mps - ctx.target_speed_mps, self.shape, self.scale)


@register_reward("lateral_error")
class LateralError(RewardTerm):
    def __init__(self, shape: str = "gaussian", scale: float = 0.5) -> None:
        self.shape, self.scale = _check_shape("lateral_error", shape, scale)

    def __call__(self, ctx):
        return _shaped(ctx.lateral_error_m, self.shape, self.scale)


@register_reward("heading_error")
class HeadingError(RewardTerm):
    def __init__(self, shape: str = "gaussian", scale: float = 0.2) -> None:
        self.shape, self.scale = _check_shape("heading_error", shape, scale)

    def __call__(self, ctx):
        return _shaped(ctx.heading_error_rad, self.shape, self.scale)


@register_reward("control_effort")
class ControlEffort(RewardTerm):
    def __call__(self, ctx):
        a = ctx.action  # the mean over components (np.mean's sum and division, without its call overhead)
        return -(np.add.reduce(a * a, axis=1) / a.shape[1]) if a.shape[1] else np.zeros(a.shape[0])


@register_reward("action_rate")
class ActionRate(RewardTerm):
    def __call__(self, ctx):
        d = ctx.action - ctx.previous_action
        return -(np.add.reduce(d * d, axis=1) / d.shape[1]) if d.shape[1] else np.zeros(d.shape[0])


@register_reward("energy")
class Energy(RewardTerm):
    def __init__(self, per_km: bool = False, min_distance_m: float = 0.05) -> None:
        if not isinstance(per_km, bool):
            raise ValueError(f"rewards.energy.per_km = {per_km!r}: expected true/false")
        self.per_km = per_km
        self.min_distance_m = number("rewards.energy.min_distance_m", min_distance_m, 0.0, lo_open=True)

    def __call__(self, ctx):
        grams = 1e3 * ctx.fuel_step_kg
        if self.per_km:
            return -grams / (np.maximum(ctx.distance_m, self.min_distance_m) / 1e3)
        return -grams


@register_reward("progress")
class Progress(RewardTerm):
    def __call__(self, ctx):
        return ctx.progress_m.copy()


@register_reward("alive")
class Alive(RewardTerm):
    def __init__(self, value: float = 1.0) -> None:
        self.value = number("rewards.alive.value", value)

    def __call__(self, ctx):
        return np.where(ctx.terminated, 0.0, self.value)


@register_reward("rollover")
class Rollover(RewardTerm):
    def __call__(self, ctx):
        return -(ctx.rolled_over | ctx.diverged).astype(np.float64)


@register_reward("off_course")
class OffCourse(RewardTerm):
    def __call__(self, ctx):
        return -ctx.off_course.astype(np.float64)


@register_reward("time")
class Time(RewardTerm):
    def __call__(self, ctx):
        return np.full(ctx.speed_mps.shape[0], -ctx.dt_s)


@register_reward("clearance")
class Clearance(RewardTerm):
    """-dt x max(0, 1 - d / ``distance_m``) per step, d the task's ``hazard_distance_m`` (the navigation task:
    from the nearer axle midpoint to the nearest no-go area or impassable ground): seconds spent within
    ``distance_m`` of a hazard, weighted from 0 at that distance to 1 on it."""

    reads: ClassVar[tuple[str, ...]] = ("hazard_distance_m",)

    def __init__(self, distance_m: float = 5.0) -> None:
        self.distance_m = number("rewards.clearance.distance_m", distance_m, 0.0, 100.0, lo_open=True)

    def __call__(self, ctx):
        d = ctx.values["hazard_distance_m"]  # the task gives it: RewardSet.check_task when the env was made
        return -ctx.dt_s * np.maximum(0.0, 1.0 - d / self.distance_m)


@register_reward("route_progress")
class RouteProgress(RewardTerm):
    """The seconds of route time gained in the step: the task's ``route_time_s`` (the navigation task: the
    quickest route's time to the goal from the rear-axle midpoint, over the whole terrain and round its no-go
    areas and impassable ground) before the step less after it; 0 on an episode's first step. A difference
    of potentials (Ng, Harada and Russell 1999): over an episode it sums to the route time from the first
    step's end to the last's, so it rewards the way round a hazard where ``progress`` (the straight-line
    distance gained) charges it."""

    reads: ClassVar[tuple[str, ...]] = ("route_time_s",)

    def __init__(self) -> None:
        self.previous_s: np.ndarray | None = None  # per vehicle, NaN until an episode's first step

    def reset(self, rows: np.ndarray) -> None:
        if self.previous_s is not None:
            self.previous_s[np.asarray(rows, dtype=bool)] = np.nan

    def __call__(self, ctx):
        now = ctx.values["route_time_s"]  # the task gives it: RewardSet.check_task when the env was made
        if self.previous_s is None or self.previous_s.shape != now.shape:
            self.previous_s = np.full(now.shape, np.nan)
        gained = np.where(np.isnan(self.previous_s), 0.0, self.previous_s - now)
        self.previous_s[:] = now
        return gained


@register_reward("goal")
class Goal(RewardTerm):
    def __call__(self, ctx):
        return ctx.flag("goal_reached").astype(np.float64)


@register_reward("no_go")
class NoGo(RewardTerm):
    def __call__(self, ctx):
        return -ctx.flag("no_go").astype(np.float64)


@register_reward("stuck")
class Stuck(RewardTerm):
    def __call__(self, ctx):
        return -ctx.flag("stuck").astype(np.float64)


# --- the built-in terms in one jitted pass ---------------------------------------------------------------
# ``RewardSet`` computes a set made only of built-in terms with ``_builtin_terms``: each term's value by the
# same arithmetic as its ``__call__`` (bit for bit), without a numpy call per term. The exponential of the
# gaussian and exponential shapes is taken afterwards over those rows at once (``libm.exp_in_place``, the same
# function as ``_shaped``'s): the kernel leaves the argument, and ``_weighted_sum`` adds the weighted terms.
# Other terms (plug-ins, subclasses) take the ``__call__`` path.
_SHAPE_CODE = {name: k for k, name in enumerate(SHAPES)}
_KERNEL_CODES: dict[type, Callable[[RewardTerm], tuple[int, float, float]]] = {
    SpeedError: lambda t: (0, _SHAPE_CODE[t.shape], t.scale),
    LateralError: lambda t: (1, _SHAPE_CODE[t.shape], t.scale),
    HeadingError: lambda t: (2, _SHAPE_CODE[t.shape], t.scale),
    ControlEffort: lambda t: (3, 0.0, 0.0),
    ActionRate: lambda t: (4, 0.0, 0.0),
    Energy: lambda t: (5, float(t.per_km), t.min_distance_m),
    Progress: lambda t: (6, 0.0, 0.0),
    Alive: lambda t: (7, t.value, 0.0),
    Rollover: lambda t: (8, 0.0, 0.0),
    OffCourse: lambda t: (9, 0.0, 0.0),
    Time: lambda t: (10, 0.0, 0.0),
    Goal: lambda t: (11, 0.0, 0.0),
    NoGo: lambda t: (12, 0.0, 0.0),
    Stuck: lambda t: (13, 0.0, 0.0),
}
_KERNEL_MAX_ACTION_DIM = 7  # numpy sums up to 7 values in order (pairwise from 8): the kernel's order too


@njit(cache=True)
def _shaped_value(error, shape, scale):
    """``_shaped`` of one value, without the exponential of the gaussian and exponential shapes (the caller's)."""
    x = error / scale
    if shape == 0:
        return -x * x
    if shape == 1:
        return -np.abs(x)
    if shape == 2:
        return -x * x
    return -np.abs(x)


@njit(cache=True)
def _mean_square_rows(a, b, subtract, out):
    """-mean over the components of a[i]^2 (or (a[i] - b[i])^2) into ``out[i]`` for every row ``i``, summed in
    order as numpy does for k < 8."""
    k = a.shape[1]
    for i in range(out.shape[0]):
        if k == 0:
            out[i] = 0.0
            continue
        acc = 0.0
        for j in range(k):
            d = a[i, j] - b[i, j] if subtract else a[i, j]
            acc = d * d if j == 0 else acc + d * d
        out[i] = -(acc / k)


@njit(cache=True)
def _flag_rows(flag, sign, out):
    """``sign`` (1 or -1) times each flag as 1.0 or 0.0 into ``out``."""
    for i in range(out.shape[0]):
        out[i] = sign * (1.0 if flag[i] else 0.0)


@njit(cache=True)
def _builtin_terms(spec, dt, m, target, action, previous, rolled, diverged, off_course, terminated, goal, no_go, stuck,
                   parts):
    """Every term's value (the exponential's argument for the exp shapes) into its row ``spec[3, k]`` of
    ``parts`` (rows, N); ``spec`` (4, terms) holds each term's code (``_KERNEL_CODES``), two parameters ``p0``,
    ``p1`` and that row. One loop over the vehicles per term: the helpers take whole rows, never one vehicle's
    arrays (a call per vehicle with array arguments would count references on every call)."""
    n = parts.shape[1]
    for k in range(spec.shape[1]):
        code, p0, p1 = int(spec[0, k]), spec[1, k], spec[2, k]
        out = parts[int(spec[3, k])]
        if code <= 2:  # speed, lateral, heading error
            for i in range(n):
                error = m[0, i] - target[i] if code == 0 else m[code, i]
                out[i] = _shaped_value(error, p0, p1)
        elif code == 3 or code == 4:  # control effort, action rate
            _mean_square_rows(action, previous, code == 4, out)
        elif code == 5:  # energy
            for i in range(n):
                grams = 1e3 * m[5, i]
                if p0 != 0.0:
                    d = m[4, i] if m[4, i] >= p1 else p1
                    out[i] = -grams / (d / 1e3)
                else:
                    out[i] = -grams
        elif code == 6:  # progress
            for i in range(n):
                out[i] = m[3, i]
        elif code == 7:  # alive
            for i in range(n):
                out[i] = 0.0 if terminated[i] else p0
        elif code == 8:  # rollover
            for i in range(n):
                out[i] = -(1.0 if rolled[i] or diverged[i] else 0.0)
        elif code == 9:
            _flag_rows(off_course, -1.0, out)
        elif code == 10:  # time
            for i in range(n):
                out[i] = -dt
        elif code == 11:
            _flag_rows(goal, 1.0, out)
        elif code == 12:
            _flag_rows(no_go, -1.0, out)
        else:
            _flag_rows(stuck, -1.0, out)


@njit(cache=True)
def _weighted_sum(weights, rows, parts, total):
    """Term ``k``'s row ``rows[k]`` of ``parts`` weighted in place and the terms' sum, from 0 in term order,
    into ``total``; whether every total is finite."""
    finite = True
    for i in range(parts.shape[1]):
        acc = 0.0
        for k in range(rows.shape[0]):
            w = weights[k] * parts[rows[k], i]
            parts[rows[k], i] = w
            acc = acc + w
        total[i] = acc
        finite = finite and np.isfinite(acc)
    return finite


class RewardSet:
    """The configured terms with their weights: ``compute(ctx) -> (reward, {name: weighted term})``."""

    def __init__(self, config: Mapping | None) -> None:
        config = strip_comments(config or {})
        self.terms: list[tuple[str, float, RewardTerm]] = []
        self.resolved: dict[str, dict[str, Any]] = {}
        for name, params in config.items():
            cls = reward_class(name)
            if params is None:
                continue
            if isinstance(params, (int, float)) and not isinstance(params, bool):
                params = {"weight": params}
            if not isinstance(params, Mapping):
                raise ValueError(f"rewards.{name}: expected {{weight: w, ...parameters}} or a number, "
                                 f"got {params!r}")
            params = strip_comments(params)
            allowed = {"weight": 1.0, **term_parameters(cls)}
            check_keys(f"rewards.{name}", params, allowed)
            weight = number(f"rewards.{name}.weight", params.get("weight", 1.0), 0.0)
            kwargs = {k: v for k, v in params.items() if k != "weight"}
            term = cls(**kwargs)
            self.terms.append((name, weight, term))
            self.resolved[name] = {**allowed, **params, "weight": weight}
        self._prepare_kernel()

    def _prepare_kernel(self) -> None:
        """The arrays ``_compute_builtin`` takes, when every term is built in (``_kernel`` None otherwise)."""
        kernel = all(type(term) in _KERNEL_CODES for _, _, term in self.terms)
        codes = [_KERNEL_CODES[type(term)](term) for _, _, term in self.terms] if kernel else []
        # the kernel's rows: the terms with an exponential first (one numpy exp over them), then the others
        exp = [k for k, (code, shape, _) in enumerate(codes) if code <= 2 and shape <= 1]
        order = exp + [k for k in range(len(codes)) if k not in exp]
        self._rows = np.array([order.index(k) for k in range(len(codes))], np.int64)
        self._n_exp = len(exp)
        self._row_list = self._rows.tolist()
        self._kernel = (np.column_stack([np.array(codes, dtype=np.float64).reshape(-1, 3), self._rows]).T.copy(),
                        np.array([w for _, w, _ in self.terms])) if kernel else None
        self._no_flag: np.ndarray = np.zeros(0, dtype=bool)
        self._names = tuple(self.names)

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        if "_kernel" not in state:  # pickled by a version without the kernel (a training checkpoint)
            self._prepare_kernel()

    def _not_finite(self, name: str, value: np.ndarray, weighted: np.ndarray) -> None:
        v = int(np.flatnonzero(~np.isfinite(weighted))[0])
        raise ValueError(
            f"reward term {name!r} ({_format(self.resolved[name])}) is {weighted[v]} for vehicle {v} (term value "
            f"{value[v]}); every term must stay finite: a larger scale or a smaller weight keeps it so")

    @property
    def names(self) -> list[str]:
        return [name for name, _, _ in self.terms]

    @property
    def reads(self) -> frozenset[str]:
        """The task measures (``StepContext.values``) the terms read."""
        return frozenset(v for _, _, term in self.terms for v in term.reads)

    def check_task(self, task_name: str, value_names: tuple[str, ...]) -> None:
        """Raise ``ValueError`` naming the term when a term reads a measure the task ``task_name`` does not give
        (its ``value_names``), when the environment is made rather than at its first step."""
        for name, _, term in self.terms:
            missing = [v for v in term.reads if v not in value_names]
            if missing:
                given = ", ".join(value_names) or "none"
                raise ValueError(f"rewards.{name} reads the task measure {missing[0]!r}, which task {task_name!r} "
                                 f"does not give (its measures: {given})")

    def reset(self, rows: np.ndarray) -> None:
        for _, _, term in self.terms:
            term.reset(rows)

    def compute(self, ctx: StepContext) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        """(reward, {name: weighted term}) of the vehicles of ``ctx``; raises ``ValueError`` naming the term when
        a weighted term is not finite."""
        n = ctx.speed_mps.shape[0]
        if self._kernel is not None and ctx.action.shape[1] <= _KERNEL_MAX_ACTION_DIM:
            return self._compute_builtin(ctx, n)
        return self._compute_terms(ctx, n)

    def _compute_terms(self, ctx: StepContext, n: int) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        """``compute`` term by term (each term's ``__call__``)."""
        total = np.zeros(n)
        parts: dict[str, np.ndarray] = {}
        values: dict[str, np.ndarray] = {}
        for name, weight, term in self.terms:
            value = values[name] = term(ctx)
            if type(value) is not np.ndarray or value.dtype != np.float64:
                value = values[name] = np.asarray(value, dtype=np.float64)
            if value.shape != (n,):
                raise ValueError(f"reward term {name!r} returned shape {value.shape}, expected ({n},)")
            weighted = weight * value
            parts[name] = weighted
            total = total + weighted
        if not np.isfinite(total).all():  # a non-finite term makes the total non-finite: find it
            for name, weighted in parts.items():
                if not np.isfinite(weighted).all():
                    self._not_finite(name, values[name], weighted)
        return total, parts


    def _compute_builtin(self, ctx: StepContext, n: int) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        """``compute`` of a set of built-in terms, in one jitted pass (``_builtin_terms``)."""
        total, parts = self.compute_rows(ctx.dt_s, ctx.measures_of(), ctx.target_speed_mps, ctx.action,
                                         ctx.previous_action, ctx.rolled_over, ctx.diverged, ctx.off_course,
                                         ctx.terminated, ctx.flags)
        if total is None:  # the term-by-term path names the culprit
            return self._compute_terms(ctx, n)
        return total, {name: parts[row] for name, row in zip(self._names, self._row_list, strict=True)}

    def term_rows(self) -> list[int]:
        """The row of each term (in ``names`` order) in the array ``compute_rows`` returns."""
        return self._row_list if self._kernel is not None else list(range(len(self.terms)))

    def takes_rows(self, action: np.ndarray) -> bool:
        """Whether ``compute_rows`` computes this set for actions like ``action`` (every term built in, at most
        ``_KERNEL_MAX_ACTION_DIM`` components)."""
        return self._kernel is not None and action.shape[1] <= _KERNEL_MAX_ACTION_DIM

    def compute_rows(self, dt_s, measures, target, action, previous, rolled, diverged, off_course, terminated,
                     flags) -> tuple[np.ndarray | None, np.ndarray]:
        """``compute`` of a set that ``takes_rows``, from the ``StepContext`` fields without the context (the
        ``measures`` rows): (reward, (terms, N) weighted terms in ``term_rows`` order), the reward None when a
        weighted term is not finite (``compute`` then names it)."""
        n = measures.shape[1]
        if self._no_flag.shape[0] != n:
            self._no_flag = np.zeros(n, dtype=bool)
        none = self._no_flag
        spec, weights = self._kernel
        parts = np.empty((spec.shape[1], n))
        _builtin_terms(spec, dt_s, measures, target, action, previous, rolled, diverged, off_course, terminated,
                       flags.get("goal_reached", none), flags.get("no_go", none), flags.get("stuck", none), parts)
        if self._n_exp:
            libm.exp_in_place(parts[:self._n_exp])
        total = np.empty(n)
        return (total if _weighted_sum(weights, self._rows, parts, total) else None), parts


def _format(params: Mapping[str, Any]) -> str:
    return ", ".join(f"{key}={value!r}" for key, value in params.items())


def reward_class(name: str) -> type[RewardTerm]:
    """The class of the term called ``name`` (built-in, decorated or from the entry-point group)."""
    if name not in REWARD_TERMS:
        load_entry_points()
    if name not in REWARD_TERMS:
        raise ValueError(f"unknown reward term {name!r}; known terms: {', '.join(sorted(REWARD_TERMS))}")
    return REWARD_TERMS[name]
