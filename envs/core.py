"""``RangerBatch``: the engine behind ``RangerEnv`` (N = 1) and ``RangerVectorEnv`` (N vehicles).

One object holds a ``RangerSim`` of N vehicles and, vectorised over them, the action mode, the task, the
reward terms, the observation builder and the randomisation. A control step is one ``RangerSim.step``
call for all N vehicles (``120 / control_hz`` physics ticks); everything else runs once per control step
over the N axis in a few jitted passes (the body motion and the reports come written by the physics threads,
``RangerSim.body_kinematics`` and ``RangerSim.report_table``): the task's path search and measures, the end
conditions and step measures (``_status``), the built-in reward terms (``acres_gym.envs.rewards``), the
episode's sums (``_accumulate``) and the observation
(``acres_gym.envs.observations``); the actions are decoded in numpy and written by one pass
(``acres_gym.envs.actions``). Each pass takes whole arrays (a numba call has a cost per array argument, so few
arguments carry many values): the step's measures, end conditions, sums and flags are rows of one array each, with
name -> row views (``stats``, ``flags``) for Python. Vehicles are independent: vehicle ``i`` of a batch
computes exactly what a batch of one computes for the same seeds and actions.

The task is called through its contract alone (``acres_gym.envs.tasks.base.Task``: its draw, its
measurements and the hooks whose defaults do nothing), so the batch knows no task by name.

Seeds: ``reset_rows(rows, seeds)`` takes one integer episode seed per vehicle (the environments draw it
from their Gymnasium generator); the episode's draws come from independent streams spawned from it
(``numpy.random.SeedSequence``): task, terrain, patches, soil, vehicle.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numba import njit

from acres_gym.constants import GEAR_NONE, PHYSICS_HZ
from acres_gym.dbw.command import clear_sent, send
from acres_gym.envs.actions import make_action_mode
from acres_gym.envs.config import resolve_top_level
from acres_gym.envs.observations import Frame, Layout, ObservationBuilder
from acres_gym.envs.pregen import Pregenerator, drawing
from acres_gym.envs.randomization import Draw, Randomizer
from acres_gym.envs.rewards import RewardSet, StepContext
from acres_gym.envs.tasks.base import TERRAIN_MARGIN_M, make_task, on_terrain_bounds
from acres_gym.model.chassis import BODY_KINEMATICS, body_kinematics
from acres_gym.records import structured_view
from acres_gym.sim import RangerSim

STREAMS = ("task", "terrain", "patches", "soil", "vehicle")
PATH_CLEARANCE_M = 3.0  # paths keep this much farther from the edge: room for tracking error
STATUS_FLAGS = ("rolled_over", "diverged", "off_course", "off_terrain", "path_complete")
STATS = ("return", "speed_sq", "lateral_sq", "fuel0_kg", "distance_m")  # the episode's running figures


KINEMATICS = BODY_KINEMATICS
AXLE_X, AXLE_Y = KINEMATICS.index("axle_x"), KINEMATICS.index("axle_y")  # rows of the kinematics array


def episode_rngs(seed: int) -> dict[str, np.random.Generator]:
    """The independent generators of one episode, one per name of ``STREAMS``, spawned from its seed."""
    streams = np.random.SeedSequence(int(seed)).spawn(len(STREAMS))
    return {name: np.random.default_rng(s) for name, s in zip(STREAMS, streams, strict=True)}


@dataclass
class PreparedEpisode:
    """What a reset of one vehicle draws before writing it into the batch: the task's own draw
    (``task.prepare``), the spawn point the draw is for and the randomisation."""

    task: Any
    spawn_xy: tuple[float, float]
    draw: Draw


@njit(cache=True)
def _fill_kinematics(state, params, out):
    """Rows of ``out`` (7, N): each vehicle's ``acres_gym.model.chassis.body_kinematics`` (roll, pitch, yaw,
    forward speed of the CG, body yaw rate, the rear-axle midpoint's world x and y) from the state and parameter
    records (``params`` of length N or 1)."""
    for i in range(state.shape[0]):
        motion = body_kinematics(params[i] if params.shape[0] > 1 else params[0], state[i])
        for row in range(len(motion)):
            out[row, i] = motion[row]


def kinematics_array(state, params) -> np.ndarray:
    """Roll, pitch, yaw (ZYX), forward speed of the CG, body yaw rate and the rear-axle midpoint's world
    (x, y) of N vehicles (rad, m/s, rad/s, m) as the rows of one (7, N) array, in ``KINEMATICS`` order,
    computed in one jitted pass (``_fill_kinematics``)."""
    out = np.empty((len(KINEMATICS), state.shape[0]))
    _fill_kinematics(structured_view(state), structured_view(params), out)
    return out


MEASURES = ("speed", "lateral", "heading", "progress", "distance", "fuel_step")
"""Rows of the (6, N) step measures ``_status`` writes (finite; m/s, m, rad, m, m, kg): the reward terms'
inputs (``StepContext.measures``)."""
ENDS = ("off_course", "terminated", "truncated")  # rows of the (3, N) end conditions ``_status`` writes


@njit(cache=True)
def _status(rows, state, kin, kin_before, inside, task_off_course, task_complete, task_end, lateral_raw, heading_raw,
            s_m, s_prev, steps, max_steps, fuel_before, flags, measures, ends):
    """The end conditions and step measures of N vehicles after the physics (``RangerBatch.step``), each
    non-finite measure as 0. ``kin`` and ``kin_before`` are the (7, N) body kinematics (``KINEMATICS`` rows)
    after and before the step. The rear-axle midpoint outside ``inside`` (x_min, x_max, y_min, y_max: the
    terrain less ``TERRAIN_MARGIN_M``) is off the terrain; off course is the task's corridor or off the
    terrain; a divergence masks the other causes; the episode is terminated by a rollover, divergence, off
    course, the path's end or a task flag (``task_end``) and truncated after ``max_steps`` otherwise. The
    status flags (rows of ``flags`` in ``STATUS_FLAGS`` order) of the vehicles in ``rows`` are written;
    ``measures`` gets the ``MEASURES`` rows, ``ends`` the ``ENDS`` rows (False for vehicles not in ``rows``)."""
    for i in range(rows.shape[0]):
        div = state[i].diverged
        rolled = state[i].rolled_over
        ax, ay = kin[5, i], kin[6, i]
        outside = not (inside[0] < ax < inside[1] and inside[2] < ay < inside[3])
        off_terrain = outside and not div
        corridor = task_off_course[i] and not div
        off_course = (task_off_course[i] or off_terrain) and not div
        complete = task_complete[i] and not div
        terminated = rolled or div or off_course or complete or task_end[i]
        measures[0, i] = _finite(kin[3, i])
        measures[1, i] = _finite(lateral_raw[i])
        measures[2, i] = _finite(heading_raw[i])
        measures[3, i] = _finite(s_m[i] - s_prev[i])
        measures[4, i] = _finite(np.hypot(ax - kin_before[5, i], ay - kin_before[6, i]))
        measures[5, i] = _finite(state[i].fuel_used_kg - fuel_before[i])
        ends[0, i] = off_course
        ends[1, i] = terminated and rows[i]
        ends[2, i] = steps[i] >= max_steps and not terminated and rows[i]
        if rows[i]:
            flags[0, i] = rolled
            flags[1, i] = div
            flags[2, i] = corridor
            flags[3, i] = off_terrain
            flags[4, i] = complete


@njit(cache=True)
def _accumulate(rows, total, measures, target, s_m, reward, s_prev, stats, last_reward):
    """The episode's running sums of the vehicles in ``rows`` after a step: ``reward`` is the finite total
    (0 for the other vehicles), ``s_prev`` the finite path position, and ``stats`` (rows in ``STATS`` order)
    the sums of reward, squared speed and lateral errors and distance."""
    for i in range(rows.shape[0]):
        if not rows[i]:
            reward[i] = 0.0
            continue
        r = _finite(total[i])
        reward[i] = r
        s_prev[i] = _finite(s_m[i])
        stats[0, i] += r
        e = measures[0, i] - target[i]
        stats[1, i] += e * e
        stats[2, i] += measures[1, i] * measures[1, i]
        stats[4, i] += measures[4, i]
        last_reward[i] = r


INFO_ROWS = ("time_s", "speed_mps", "target_speed_mps", "lateral_error_m", "heading_error_rad", "distance_m",
             "fuel_used_g", "episode_return", "speed_rmse_mps", "lateral_rmse_m", "fuel_g_per_km")
"""The float entries of ``RangerBatch.infos``, rows of the array ``_fill_infos`` writes."""


@njit(cache=True)
def _fill_infos(steps, dt, speed, target_speed, lateral, heading, stats, fuel_kg, out):
    """The ``INFO_ROWS`` of N vehicles into ``out`` by the arithmetic of ``RangerBatch.info_row``: the time,
    the finite speed, target, lateral and heading errors (non-finite as 0), the episode's distance, fuel (g),
    return, speed and lateral RMSE over max(steps, 1) and fuel per km (0 below 1 m driven)."""
    for i in range(steps.shape[0]):
        divisor = max(steps[i], 1)
        fuel_g = 1e3 * (fuel_kg[i] - stats[3, i])
        km = stats[4, i] / 1e3
        out[0, i] = steps[i] * dt
        out[1, i] = _finite(speed[i])
        out[2, i] = target_speed[i, 0]
        out[3, i] = _finite(lateral[i])
        out[4, i] = _finite(heading[i])
        out[5, i] = stats[4, i]
        out[6, i] = _finite(fuel_g)
        out[7, i] = stats[0, i]
        out[8, i] = np.sqrt(stats[1, i] / divisor)
        out[9, i] = np.sqrt(stats[2, i] / divisor)
        out[10, i] = fuel_g / km if km > 1e-3 else 0.0


@njit(cache=True)
def _finite(x):
    return x if np.isfinite(x) else 0.0


class RangerBatch:
    """N vehicles running one task config (see the module docstring)."""

    def __init__(self, config: Mapping, n: int, max_steps: int | None = None) -> None:
        self.config = resolve_top_level(config)
        c = self.config
        self.n = int(n)
        self.control_hz = c["control_hz"]
        self.ticks_per_step = PHYSICS_HZ // self.control_hz
        self.dt_s = self.ticks_per_step / PHYSICS_HZ
        self.max_steps = max(1, int(round(c["max_episode_s"] * self.control_hz)))
        if max_steps is not None:
            if isinstance(max_steps, bool) or not isinstance(max_steps, (int, np.integer)) or max_steps < 1:
                raise ValueError(f"max_episode_steps = {max_steps!r}: expected a positive integer")
            self.max_steps = min(self.max_steps, int(max_steps))
        self.randomizer = Randomizer(c["randomization"], self.n, c["vehicle"], c["vehicle_overrides"],
                                     c["vehicle_overlay"])
        self.sim = RangerSim(self.n, params=self.randomizer.base_params, terrain=self.randomizer.initial_stack())
        x0, x1, y0, y1 = self.randomizer.extent
        keep = TERRAIN_MARGIN_M + PATH_CLEARANCE_M
        self.task = make_task(c["task"], self.n, self.dt_s, self.max_steps, c["task_options"],
                              bounds=(x0 + keep, x1 - keep, y0 + keep, y1 - keep))
        self.task.check_grid(self.randomizer.grid_points, self.config, self.dt_s)
        self.action_mode = make_action_mode(c["action_mode"], self.sim.params[0], c["action_options"])
        self.rewards = RewardSet(c["rewards"])
        self.rewards.check_task(self.task.name, self.task.value_names)
        self.task.read_values(self.rewards.reads)
        self.task.bind(self.randomizer, self.sim)
        layout = Layout(action_dim=self.action_mode.flat_dim, speed_points=self.task.speed_points,
                        path_points=self.task.path_points, steer_lock_deg=float(self.sim.params.steer_lock_deg[0]),
                        map_shape=tuple(self.task.map_shape))
        self.observer = ObservationBuilder(c["observations"], layout)
        self.observation_space = self.observer.space
        self.action_space = self.action_mode.space
        self.extent = self.randomizer.extent

        n, k = self.n, self.action_mode.flat_dim
        self.steps = np.zeros(n, dtype=np.int64)
        self.previous_action = np.zeros((n, k))
        self.gear_pending = np.zeros(n, dtype=bool)
        self.s_prev = np.zeros(n)
        self.episode_seed = np.zeros(n, dtype=np.int64)
        self.summaries: list[dict[str, Any]] = [{} for _ in range(n)]
        # the running figures and end flags: rows of one array each (the kernels take it whole), named by views
        flag_names = STATUS_FLAGS + tuple(self.task.flag_names)
        self._stack_rows({key: np.zeros(n) for key in STATS}, {key: np.zeros(n, dtype=bool) for key in flag_names})
        self.ground_cause = np.zeros(n, dtype=np.int64)
        self.crawl_counts = np.zeros((n, 4), dtype=np.int64)  # steps crawled per ground cause (navigation)
        self.last_reward = np.zeros(n)
        self._terms = np.zeros((len(self.rewards.names), n))  # the last step's weighted terms, rows as the reward
        self._name_terms()  # kernel's (``RewardSet.term_rows``), named by the views ``last_terms``
        self._gear_pending_any = False  # whether any of gear_pending is set
        self.frame: Frame | None = None
        self.spawn_xy: list[tuple[float, float] | None] = [None] * n  # of each vehicle's last episode
        self.pregen = Pregenerator(self.prepare, parts_inline=self.n > 1)  # (see pregen.beside)

    def _stack_rows(self, stats: Mapping[str, np.ndarray], flags: Mapping[str, np.ndarray]) -> None:
        """The running figures and end flags as rows of one array each (the jitted passes take them whole),
        named by ``stats`` and ``flags`` (views of the rows), and the constant arrays the passes take."""
        self._stats = np.stack([np.asarray(stats[key], dtype=np.float64) for key in STATS])
        self.stats = dict(zip(STATS, self._stats, strict=True))
        self._flags = np.stack([np.asarray(value, dtype=bool) for value in flags.values()])
        self.flags = dict(zip(flags, self._flags, strict=True))
        self._all_rows = np.ones(self.n, dtype=bool)  # read-only masks of every and no vehicle
        self._no_rows = np.zeros(self.n, dtype=bool)
        self._all_rows.flags.writeable = self._no_rows.flags.writeable = False
        self._inside = on_terrain_bounds(self.extent)  # where the rear-axle midpoint stays on the terrain

    def _name_terms(self) -> None:
        """``last_terms``: ``{name: row of _terms}`` (views)."""
        self.last_terms: dict[str, np.ndarray] = {
            name: self._terms[row] for name, row in zip(self.rewards.names, self.rewards.term_rows(), strict=True)}

    def __getstate__(self) -> dict:
        # the name -> row views are rebuilt on unpickling (pickled, they would part from their arrays)
        return {key: value for key, value in self.__dict__.items() if key not in ("stats", "flags", "last_terms")}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        if "_gear_pending_any" not in state:  # pickled by a version without the flag or the stacked terms
            self._gear_pending_any = bool(self.gear_pending.any())
        if "_terms" in state:
            self._name_terms()
        else:
            terms = state["last_terms"]
            self._terms = np.zeros((len(terms), self.n))
            self._name_terms()
            for key, value in terms.items():
                self.last_terms[key][:] = value
        if "_flags" in state:  # the views of the rows
            self.stats = dict(zip(STATS, self._stats, strict=True))
            self.flags = dict(zip(STATUS_FLAGS + tuple(self.task.flag_names), self._flags, strict=True))
        else:  # pickled by a version without the stacked rows (a training checkpoint): stack them, and take
            self._stack_rows(state["stats"], state["flags"])  # the frame again for its kinematics array
            self.refresh()

    # --- resolved config -----------------------------------------------------------------------------
    def resolved_config(self) -> dict:
        """The full config with every default filled in (what reproduces this environment)."""
        c = dict(self.config)
        c["task_options"] = dict(self.task.options)
        c["action_options"] = dict(self.action_mode.options)
        c["observations"] = list(self.observer.names)
        c["rewards"] = dict(self.rewards.resolved)
        c["randomization"] = self.randomizer.resolved()
        return c

    # --- reset ---------------------------------------------------------------------------------------
    def reset_rows(self, rows: np.ndarray, seeds: Sequence[int]) -> None:
        """Start new episodes for the vehicles in the boolean mask ``rows`` with one integer seed each
        (in row order). An episode prepared for the vehicle and seed (``pregen``) is taken, else drawn now:
        the same draw either way (``prepare``)."""
        idx = np.flatnonzero(rows)
        if len(seeds) != idx.size:
            raise ValueError(f"reset_rows: {idx.size} vehicles but {len(seeds)} seeds")
        xs, ys, yaws = np.zeros(idx.size), np.zeros(idx.size), np.zeros(idx.size)
        for k, (i, seed) in enumerate(zip(idx, seeds, strict=True)):
            i, seed = int(i), int(seed)
            prepared = self.pregen.take(i, seed)
            rngs = episode_rngs(seed) if prepared is None else None
            own = prepared.task if prepared is not None else self.task.prepare(rngs["task"])
            xs[k], ys[k], yaws[k] = self.task.draw(i, None, own)
            spawn = (float(xs[k]), float(ys[k]))
            if prepared is not None and prepared.spawn_xy == spawn:
                draw = prepared.draw
            else:  # (the generators drawn only when the episode is drawn here)
                draw = self.randomizer.draw(i, rngs if rngs is not None else episode_rngs(seed), spawn)
            own_terrain = self.task.episode_terrain(i)
            if own_terrain is not None:
                draw.terrain = own_terrain
            self.randomizer.apply(self.sim, i, draw)
            self.summaries[i] = {**draw.summary, **self.task.episode_summary[i], "episode_seed": seed}
            self.episode_seed[i] = seed
            self.spawn_xy[i] = spawn
        self.sim.reset(indices=idx, x_m=xs, y_m=ys, yaw_rad=yaws, terrain_index=idx)
        self.steps[rows] = 0
        self.previous_action[rows] = 0.0
        self.gear_pending[rows] = True
        self._gear_pending_any = True
        for arr in self.stats.values():
            arr[rows] = 0.0
        self.stats["fuel0_kg"][rows] = self.sim.state.fuel_used_kg[rows]
        for arr in self.flags.values():
            arr[rows] = False
        self.ground_cause[rows] = 0
        self.crawl_counts[rows] = 0
        self.last_reward[rows] = 0.0
        self._terms[:, rows] = 0.0
        kin_array = self.sim.body_kinematics()  # of the states ``sim.reset`` just wrote
        self.task.locate(kin_array[AXLE_X], kin_array[AXLE_Y], rows, restart=True)
        self.rewards.reset(rows)
        self.frame = self._frame(kin_array)
        self.s_prev[rows] = self.frame.task.s_m[rows]

    def prepare(self, slot: int, seed: int) -> PreparedEpisode:
        """The episode a reset of vehicle ``slot`` with ``seed`` draws, before it is written into the batch: a
        pure function of the slot, the seed and the spawn point the task's draw gives."""
        rngs = episode_rngs(seed)
        own = self.task.prepare(rngs["task"])
        spawn = self.task.spawn_xy(own)
        return PreparedEpisode(own, spawn, self.randomizer.draw(slot, rngs, spawn))

    def prepare_next(self, slot: int, seed: int) -> None:
        """Have vehicle ``slot``'s next episode, for ``seed``, prepared in the background (``pregen``)."""
        self.pregen.submit(slot, seed)

    # --- step ----------------------------------------------------------------------------------------
    def step(self, actions: Any, active: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """One control step of all vehicles. ``active`` (boolean mask, default all) selects the vehicles
        whose actions count; the others get no messages this step (the vector env restores them).
        Returns (reward, terminated, truncated), arrays over N.

        Around the one physics call, the per-vehicle arithmetic runs in two jitted passes over N (``_status``
        before the reward terms, ``_accumulate`` after them), so a step costs a fixed handful of Python calls
        whatever the task."""
        n = self.n
        every = active is None
        rows = self._all_rows if every else np.asarray(active, dtype=bool)
        mode = self.action_mode
        batch = mode.to_batch(actions, n)
        flat = mode.flat(batch)
        cmd = self.sim.commands_plain  # field access without recarray overhead
        state = self.sim.state_plain
        mode.write(cmd, batch, rows, state)
        gear_pending = self._gear_pending_any
        if gear_pending:  # the first step of an episode engages the start range unless the action chose a gear
            send(cmd, "GearCmd", rows & self.gear_pending & (cmd["gear_cmd"] == GEAR_NONE), cmd=mode.start_gear)
        fuel_before = state["fuel_used_kg"].copy()
        kin_before = self.frame.kinematics  # a new frame replaces this array

        # While an episode is drawn in the background, the physics runs on this thread without the GIL and the
        # draw on the other core; Numba's threads beside the draw's thread would share the cores with it
        # (docs/architecture.md, the draw).
        self.sim.step(self.ticks_per_step, serial=drawing())

        clear_sent(cmd, subsystems=())  # the gear event counts once; the messages are re-sent every step
        if gear_pending:
            self.gear_pending[rows] = False
            self._gear_pending_any = bool(self.gear_pending.any())
        if every:
            self.steps += 1
        else:
            self.steps[rows] += 1
        kin_array = self.sim.body_kinematics()  # written by the physics threads
        task_frame = self.task.locate_measure(kin_array, self.steps, rows)
        previous = self.previous_action  # replaced below by the step's action, never written in place before
        action_now = flat if every else np.where(rows[:, None], flat, previous)  # (flat: new every step)
        self.frame = frame = self._frame(kin_array, previous_action=action_now, task_frame=task_frame)
        t = frame.task
        diverged = state["diverged"]
        task_flags = {k: v & ~diverged for k, v in t.flags.items()} if t.flags else {}
        task_end = self._no_rows
        for value in task_flags.values():
            task_end = task_end | value
        measures = np.empty((len(MEASURES), n))
        ends = np.empty((len(ENDS), n), dtype=np.bool_)
        _status(rows, state, kin_array, kin_before, self._inside, t.off_course, t.path_complete, task_end,
                t.lateral_error_m, t.heading_error_rad, t.s_m, self.s_prev, self.steps, self.max_steps, fuel_before,
                self._flags, measures, ends)
        off_course, terminated, truncated = ends
        target = t.target_speed[:, 0]
        total, parts = self._rewards(measures, target, flat, previous, state, off_course, terminated, task_flags,
                                     t.values or {})
        reward = np.empty(n)
        _accumulate(rows, total, measures, target, t.s_m, reward, self.s_prev, self._stats, self.last_reward)
        for key, value in task_flags.items():
            self.flags[key][rows] = value[rows]
        self.previous_action = action_now
        self._store_terms(parts, slice(None) if every else rows)
        self.task.after_step(self, rows, frame, state, measures[0], terminated | truncated, task_flags)
        return reward, terminated, truncated

    def _rewards(self, measures, target, flat, previous, state, off_course, terminated, task_flags, task_values):
        """(total, weighted terms) of the step: the built-in terms' rows (``RewardSet.compute_rows``, in the
        order of ``_terms``) when the set has only those, else ``{name: weighted term}`` from the terms'
        ``StepContext``."""
        rolled, diverged = state["rolled_over"], state["diverged"]
        rewards = self.rewards
        if rewards.takes_rows(flat):
            total, parts = rewards.compute_rows(self.dt_s, measures, target, flat, previous, rolled, diverged,
                                                off_course, terminated, task_flags)
            if total is not None:  # else a term is not finite: ``compute`` names it
                return total, parts
        speed, lateral, heading, progress, distance, fuel_step = measures
        ctx = StepContext(
            dt_s=self.dt_s, speed_mps=speed, target_speed_mps=target, lateral_error_m=lateral,
            heading_error_rad=heading, progress_m=progress, distance_m=distance, fuel_step_kg=fuel_step,
            action=flat, previous_action=previous, rolled_over=rolled, diverged=diverged,
            off_course=off_course, terminated=terminated, flags=task_flags, values=task_values, measures=measures,
        )
        return rewards.compute(ctx)

    def _store_terms(self, parts, rows) -> None:
        """The step's weighted terms (rows in ``_terms`` order, or ``{name: term}``) into ``last_terms`` for
        the vehicles in ``rows`` (a mask, or a slice for all)."""
        if isinstance(parts, np.ndarray):
            self._terms[:, rows] = parts[:, rows]
            return
        for key, value in parts.items():
            self.last_terms[key][rows] = value[rows]

    # --- frames, observations, infos -----------------------------------------------------------------
    def _frame(self, kin_array: np.ndarray, previous_action: np.ndarray | None = None,
               task_frame=None) -> Frame:
        """The frame of the present state from the simulator's body kinematics ``kin_array`` and reports (written
        by the step or reset that left the state; ``task_frame``: the task's measures when already taken)."""
        roll, pitch, yaw, speed, yaw_rate, axle_x, axle_y = kin_array  # the KINEMATICS rows
        params = self.sim.params_plain
        task = self.task.measure(axle_x, axle_y, yaw, self.steps) if task_frame is None else task_frame
        return Frame(
            report_table=self.sim.report_table(), speed_mps=speed, kinematics=kin_array,
            roll_rad=roll, pitch_rad=pitch, yaw_rad=yaw, yaw_rate_rad_s=yaw_rate, axle_x_m=axle_x, axle_y_m=axle_y,
            task=task, previous_action=self.previous_action.copy() if previous_action is None else previous_action,
            brake_max_bar=params["brake_max_bar"].astype(np.float64),
        )

    def observe(self, row: int | None = None) -> dict[str, np.ndarray]:
        """Observations of all vehicles from the last frame: ``{name: (N, ...) float32}``; of vehicle
        ``row`` alone when given."""
        return self.observer.build(self.frame, row)

    def infos(self) -> dict[str, np.ndarray]:
        """Per-vehicle information after the last reset or step, arrays over N (see ``RangerEnv``)."""
        f = self.frame
        t = f.task
        rows = np.empty((len(INFO_ROWS), self.n))
        _fill_infos(self.steps, self.dt_s, f.speed_mps, t.target_speed, t.lateral_error_m, t.heading_error_rad,
                    self._stats, self.sim.state_plain["fuel_used_kg"], rows)
        split = INFO_ROWS.index("speed_rmse_mps")  # the episode's step count goes before the rates, as in info_row
        info: dict[str, Any] = dict(zip(INFO_ROWS[:split], rows[:split], strict=True))
        info["episode_steps"] = self.steps.copy()
        info.update(zip(INFO_ROWS[split:], rows[split:], strict=True))
        info["reward_terms"] = dict(zip(self.last_terms, self._terms[self.rewards.term_rows()], strict=True))
        info.update(zip(self.flags, self._flags.copy(), strict=True))
        info.update(self.task.infos(self))
        return info

    def info_row(self, i: int) -> dict[str, Any]:
        """``info_of(infos(), i)`` computed for vehicle ``i`` alone (the single env's info): the same values by
        the same arithmetic on the row's numbers."""
        f = self.frame
        t = f.task
        st = self.stats
        steps = self.steps.item(i)  # Python numbers throughout: the same IEEE arithmetic as on numpy scalars
        divisor = max(steps, 1)
        fuel_g = 1e3 * (self.sim.state_plain["fuel_used_kg"].item(i) - st["fuel0_kg"].item(i))
        distance = st["distance_m"].item(i)
        km = distance / 1e3
        info = {
            "time_s": steps * self.dt_s,
            "speed_mps": _finite_float(f.speed_mps.item(i)),
            "target_speed_mps": t.target_speed.item(i, 0),
            "lateral_error_m": _finite_float(t.lateral_error_m.item(i)),
            "heading_error_rad": _finite_float(t.heading_error_rad.item(i)),
            "distance_m": distance,
            "fuel_used_g": _finite_float(fuel_g),
            "episode_return": st["return"].item(i),
            "episode_steps": steps,
            "speed_rmse_mps": math.sqrt(st["speed_sq"].item(i) / divisor),
            "lateral_rmse_m": math.sqrt(st["lateral_sq"].item(i) / divisor),
            "fuel_g_per_km": fuel_g / max(km, 1e-3) if km > 1e-3 else 0.0,
            "reward_terms": dict(zip(self.last_terms, self._terms[self.rewards.term_rows(), i].tolist(), strict=True)),
        }
        info.update(zip(self.flags, self._flags[:, i].tolist(), strict=True))  # Python bools, as item() gives
        info.update(self.task.info_row(self, i))
        return info

    def info_of(self, infos: Mapping[str, Any], i: int) -> dict[str, Any]:
        """The info dict of vehicle ``i`` with Python scalars."""
        out: dict[str, Any] = {}
        for key, value in infos.items():
            if isinstance(value, Mapping):
                out[key] = {k: float(v[i]) for k, v in value.items()}
            elif value.dtype == bool:
                out[key] = bool(value[i])
            elif value.dtype.kind in "iu":
                out[key] = int(value[i])
            else:
                out[key] = float(value[i])
        return out

    # --- state snapshots (vector env autoreset) -------------------------------------------------------
    def snapshot(self, rows: np.ndarray) -> dict[str, Any]:
        """Copies of everything a control step changes, for the vehicles in ``rows``."""
        return {
            "rows": rows.copy(),
            "state": self.sim.state[rows].copy(),
            "commands": self.sim.commands[rows].copy(),
            "task": self.task.snapshot(rows),
        }

    def restore(self, snap: Mapping[str, Any]) -> None:
        """Put the vehicles of ``snap`` back as ``snapshot`` found them, at the start of an episode (the vector
        env's next-step autoreset); stateful reward terms forget the step the restore undoes."""
        rows = snap["rows"]
        self.sim.state[rows] = snap["state"]
        self.sim.commands[rows] = snap["commands"]
        self.task.restore(rows, snap["task"])
        self.rewards.reset(rows)

    def refresh(self) -> None:
        """Recompute the frame from the present state (after a restore, which writes the records directly)."""
        self.sim.observe()
        self.frame = self._frame(self.sim.body_kinematics())


def _finite_float(x) -> float:
    """``x`` as a float, 0 for NaN and inf."""
    x = float(x)
    return x if math.isfinite(x) else 0.0
