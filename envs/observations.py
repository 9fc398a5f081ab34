"""Observations: the DBW report fields the vehicle sends back, body motion, and what the task adds.

The observation is a ``Dict`` of float32 ``Box`` entries (``FlattenObservation`` and stable-baselines3's
``MultiInputPolicy`` both take it). Values are in report units; every value is finite: a report field that
is NaN (ds_dbw: "invalid or unavailable", e.g. a command echo while a subsystem is not enabled) becomes 0
and its flag in ``report_valid`` says so; values are clipped to the bounds of their space (physical limits
with margin, ``SPEED_MAX_MPS`` etc.).

=========================== ======= =========================================================================
name                        shape   meaning (source)
=========================== ======= =========================================================================
``steering_wheel_angle``    (1,)    SteeringReport.steering_wheel_angle, deg (positive left)
``steering_cmd``            (1,)    SteeringReport.cmd, the actuator's reference, deg (0 when not enabled)
``throttle_percent_output`` (1,)    ThrottleReport.percent_output, % (0 without a throttle command)
``brake_pressure_output``   (1,)    BrakeReport.pressure_output, bar (percent_output x max pressure for
                                    percent commands; 0 without a brake command)
``gear``                    (5,)    GearReport.gear one-hot: P, R, N, H, L (all 0 during a shift: N)
``ulc_vel_ref``             (1,)    UlcReport.vel_ref, m/s (0 when the ULC is not enabled)
``ulc_vel_meas``            (1,)    UlcReport.vel_meas, m/s
``ulc_accel_meas``          (1,)    UlcReport.accel_meas, m/s^2
``vehicle_velocity``        (2,)    VehicleVelocity: vehicle_velocity_brake, vehicle_velocity_propulsion, m/s
``wheel_speeds``            (4,)    WheelSpeeds: front_left, front_right, rear_left, rear_right, rad/s
``dbw_enabled``             (1,)    dbw_enabled (1 or 0)
``report_valid``            (4,)    1 where steering_cmd, throttle_percent_output, brake_pressure_output,
                                    ulc_vel_ref were reported (not NaN)
``yaw_rate``                (1,)    body-frame yaw rate, rad/s
``roll_pitch``              (2,)    roll and pitch of the body, rad
``target_speed``            (1+P,)  task: target speed now and ``speed_preview_s`` ahead, m/s
``lateral_error``           (1,)    task: distance of the rear-axle midpoint from the path (left +), m
``heading_error``           (1,)    task: yaw minus path heading, rad
``path_points``             (2K,)   task: path points ``path_preview_m`` ahead, body frame (x fwd, y left), m,
                                    as [x1, y1, x2, y2, ...] (``reshape(K, 2)`` gives the points)
``previous_action``         (k,)    the last action (zeros after a reset; Box action modes only)
``goal``                    (2,)    navigation task: distance to the goal, m, and its bearing in the body frame,
                                    rad (positive left)
``local_map``               (C,H,W) navigation task: the egocentric map around the vehicle (channels, units
                                    and layout: ``acres_gym.envs.tasks.navigation``)
=========================== ======= =========================================================================

Report fields arrive at the CAN resolution of their messages (``acres_gym.dbw.reports.REPORT_RESOLUTION``:
0.1 deg, 0.025 %, 0.05 bar, 0.02 m/s for the ULC's speeds, 0.01 km/h for VehicleVelocity).

``DEFAULT_OBSERVATIONS`` is the set used when a config does not list its own (``NAVIGATION_OBSERVATIONS``
for the off-road navigation task).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from gymnasium import spaces
from numba import njit

from acres_gym.constants import WHEEL_NAMES
from acres_gym.dbw.report_values import DERIVED, GEAR_ORDER, brake_bar, gear_one_hot, valid_flags
from acres_gym.dbw.reports import REPORT_ROW

# Where an item's values come from (``ObservationItem.source``; the exported policy's manifest repeats it):
SOURCES = {
    "report": "DBW report fields copied as they are (``report_fields``)",
    "report_derived": "computed from DBW report fields by acres_gym.dbw.report_values (``report_fields`` read)",
    "body": "body motion: the vehicle's IMU / localisation",
    "task": "the task's reference (path and speed profile) relative to the vehicle: the planner",
    "action": "the policy's own previous action",
}
FLOAT32_MAX = float(np.finfo(np.float32).max)
# Bounds of the spaces: physical limits with margin (values beyond them are clipped; the vehicle's top
# speed is 27.7 m/s, the simulation declares divergence at 200 m/s or 100 rad/s).
SPEED_MAX_MPS = 100.0
ACCEL_MAX_MPS2 = 200.0
WHEEL_SPEED_MAX_RAD_S = 500.0
RATE_MAX_RAD_S = 100.0
PRESSURE_MAX_BAR = 500.0
DISTANCE_MAX_M = 1000.0
MAP_VALUE_MAX = 100.0  # local_map cells: heights within +-100 m, grades and traction figures far inside


@dataclass
class Frame:
    """Everything observations and rewards read after a step (arrays over the N vehicles)."""

    report_table: np.ndarray  # (len(REPORT_FIELDS), N): acres_gym.dbw.reports.report_table
    speed_mps: np.ndarray
    roll_rad: np.ndarray
    pitch_rad: np.ndarray
    yaw_rad: np.ndarray
    yaw_rate_rad_s: np.ndarray
    axle_x_m: np.ndarray
    axle_y_m: np.ndarray
    task: Any  # acres_gym.envs.tasks.path_speed.TaskFrame
    previous_action: np.ndarray
    brake_max_bar: np.ndarray
    kinematics: np.ndarray | None = None  # (7, N): the rows above, ``acres_gym.envs.core.KINEMATICS`` order

    def report(self, key: str) -> np.ndarray:
        """The report field ``"message.field"`` of all vehicles (float64; booleans 0 / 1, NaN if absent)."""
        return self.report_table[REPORT_ROW[key]]


@dataclass(frozen=True)
class Layout:
    """Sizes the shapes depend on."""

    action_dim: int
    speed_points: int  # 1 + number of speed previews
    path_points: int
    steer_lock_deg: float
    map_shape: tuple[int, int, int] = (0, 0, 0)  # (channels, rows, cols) of ``local_map``


@dataclass(frozen=True)
class ObservationItem:
    """One entry of the observation ``Dict``: its shape and bounds for a layout, and either ``value`` (the
    (N, *shape) values from a frame) or ``report_fields`` (report rows copied as they are, one per element;
    the builder gathers all such items in one indexing operation); ``unit``, ``source`` (a key of
    ``SOURCES``) and ``meaning`` describe it (the manifest of an exported policy lists them)."""

    name: str
    shape: Callable[[Layout], tuple[int, ...]]
    low: Callable[[Layout], float]
    high: Callable[[Layout], float]
    value: Callable[[Frame], np.ndarray] | None = None
    report_fields: tuple[str, ...] = ()
    unit: str = ""
    source: str = "report"  # a key of SOURCES
    meaning: str = ""


def _col(x: np.ndarray) -> np.ndarray:
    return np.asarray(x, dtype=np.float64)[:, None]


def _derived(name: str) -> Callable[[Frame], np.ndarray]:
    fn = DERIVED[name][0]
    return lambda f: fn(f.report, f.brake_max_bar)


def _const(v: float) -> Callable[[Layout], float]:
    return lambda _layout: v


def _one(_layout: Layout) -> tuple[int, ...]:
    return (1,)


_lock = lambda layout: -layout.steer_lock_deg  # noqa: E731
_lock_hi = lambda layout: layout.steer_lock_deg  # noqa: E731

ITEMS: dict[str, ObservationItem] = {}


def _item(name, shape, low, high, value, unit, source, meaning) -> None:
    ITEMS[name] = ObservationItem(name, shape, low, high, value, unit=unit, source=source, meaning=meaning)


def _report_item(name, low, high, unit, meaning, *fields: str) -> None:
    """An item made of report fields (NaN, an absent value, becomes 0 in the builder)."""
    shape = (len(fields),)
    ITEMS[name] = ObservationItem(name, lambda _layout: shape, low, high, report_fields=fields, unit=unit,
                                  source="report", meaning=meaning)


def _derived_item(name, shape, low, high, unit, meaning) -> None:
    ITEMS[name] = ObservationItem(name, shape, low, high, _derived(name), report_fields=DERIVED[name][1], unit=unit,
                                  source="report_derived", meaning=meaning)


_report_item("steering_wheel_angle", _lock, _lock_hi, "deg", "SteeringReport.steering_wheel_angle (positive left)",
             "steering.steering_wheel_angle")
_report_item("steering_cmd", _lock, _lock_hi, "deg", "SteeringReport.cmd, the actuator's reference (0 when not "
             "enabled)", "steering.cmd")
_report_item("throttle_percent_output", _const(0.0), _const(100.0), "%", "ThrottleReport.percent_output (0 without "
             "a throttle command)", "throttle.percent_output")
_derived_item("brake_pressure_output", _one, _const(0.0), _const(PRESSURE_MAX_BAR), "bar",
              "BrakeReport.pressure_output, or percent_output x brake_max_bar / 100 for percent commands (0 without "
              "a brake command)")
_derived_item("gear", lambda _l: (len(GEAR_ORDER),), _const(0.0), _const(1.0), "1",
              "GearReport.gear one-hot: P, R, N, H, L (all 0 during a shift: N)")
_report_item("ulc_vel_ref", _const(-SPEED_MAX_MPS), _const(SPEED_MAX_MPS), "m/s", "UlcReport.vel_ref (0 when the "
             "ULC is not enabled)", "ulc.vel_ref")
_report_item("ulc_vel_meas", _const(-SPEED_MAX_MPS), _const(SPEED_MAX_MPS), "m/s", "UlcReport.vel_meas",
             "ulc.vel_meas")
_report_item("ulc_accel_meas", _const(-ACCEL_MAX_MPS2), _const(ACCEL_MAX_MPS2), "m/s^2", "UlcReport.accel_meas",
             "ulc.accel_meas")
_report_item("vehicle_velocity", _const(-SPEED_MAX_MPS), _const(SPEED_MAX_MPS), "m/s",
             "VehicleVelocity: vehicle_velocity_brake, vehicle_velocity_propulsion",
             "vehicle_velocity.vehicle_velocity_brake", "vehicle_velocity.vehicle_velocity_propulsion")
_report_item("wheel_speeds", _const(-WHEEL_SPEED_MAX_RAD_S), _const(WHEEL_SPEED_MAX_RAD_S), "rad/s",
             "WheelSpeeds: front_left, front_right, rear_left, rear_right",
             *(f"wheel_speeds.{w}" for w in WHEEL_NAMES))
_report_item("dbw_enabled", _const(0.0), _const(1.0), "1", "dbw_enabled (1 or 0)", "dbw_enabled.data")
_derived_item("report_valid", lambda _l: (4,), _const(0.0), _const(1.0), "1",
              "1 where steering_cmd, throttle_percent_output, brake_pressure_output, ulc_vel_ref were reported "
              "(not NaN)")
_item("yaw_rate", _one, _const(-RATE_MAX_RAD_S), _const(RATE_MAX_RAD_S), lambda f: _col(f.yaw_rate_rad_s), "rad/s",
      "body", "body-frame yaw rate (positive left)")
_item("roll_pitch", lambda _l: (2,), _const(-np.pi), _const(np.pi),
      lambda f: np.stack([f.roll_rad, f.pitch_rad], axis=1), "rad", "body",
      "roll and pitch of the body (ZYX Euler angles; roll positive right side down, pitch positive nose down)")
_item("target_speed", lambda layout: (layout.speed_points,), _const(0.0), _const(SPEED_MAX_MPS),
      lambda f: f.task.target_speed, "m/s", "task", "target speed now and speed_preview_s ahead")
_item("lateral_error", _one, _const(-DISTANCE_MAX_M), _const(DISTANCE_MAX_M), lambda f: _col(f.task.lateral_error_m),
      "m", "task", "distance of the rear-axle midpoint from the path (left +)")
_item("heading_error", _one, _const(-np.pi), _const(np.pi), lambda f: _col(f.task.heading_error_rad), "rad", "task",
      "yaw minus path heading")
_item("path_points", lambda layout: (2 * layout.path_points,), _const(-DISTANCE_MAX_M), _const(DISTANCE_MAX_M),
      lambda f: f.task.path_points.reshape(f.task.path_points.shape[0], -1), "m", "task",
      "path points path_preview_m ahead along the path, body frame from the rear-axle midpoint (x fwd, y left), "
      "as [x1, y1, x2, y2, ...]")
_item("previous_action", lambda layout: (layout.action_dim,), _const(-1.0), _const(1.0), lambda f: f.previous_action,
      "1", "action", "the last action, clipped to [-1, 1] (zeros after a reset)")
_item("goal", lambda _l: (2,), _const(-DISTANCE_MAX_M), _const(DISTANCE_MAX_M), lambda f: f.task.goal, "m, rad",
      "task", "distance to the goal and its bearing in the body frame (left +)")
_item("local_map", lambda layout: tuple(layout.map_shape), _const(-MAP_VALUE_MAX), _const(MAP_VALUE_MAX),
      lambda f: f.task.local_map, "per channel (see the task's docstring)", "task",
      "heading-up egocentric grid (C, H, W) around the vehicle: height, grade along the heading, "
      "trafficability, no-go mask")

REPORT_OBSERVATIONS = ("steering_wheel_angle", "steering_cmd", "throttle_percent_output", "brake_pressure_output",
                       "gear", "ulc_vel_ref", "ulc_vel_meas", "ulc_accel_meas", "vehicle_velocity", "wheel_speeds",
                       "dbw_enabled", "report_valid")
BODY_OBSERVATIONS = ("yaw_rate", "roll_pitch")
TASK_OBSERVATIONS = ("target_speed", "lateral_error", "heading_error", "path_points")
DEFAULT_OBSERVATIONS = REPORT_OBSERVATIONS + BODY_OBSERVATIONS + TASK_OBSERVATIONS + ("previous_action",)
NAVIGATION_OBSERVATIONS = REPORT_OBSERVATIONS + BODY_OBSERVATIONS + ("goal", "local_map", "previous_action")


@njit(cache=True)
def _copy_frame(columns, yaw_rate, roll, pitch, lateral, heading, target_speed, path_points, previous_action, buf):
    """Every vehicle's frame values into its row of ``buf`` (see ``_assemble``)."""
    for i in range(buf.shape[0]):
        if columns[0] >= 0:
            buf[i, columns[0]] = yaw_rate[i]
        if columns[1] >= 0:
            buf[i, columns[1]] = roll[i]
        if columns[2] >= 0:
            buf[i, columns[2]] = pitch[i]
        if columns[3] >= 0:
            buf[i, columns[3]] = lateral[i]
        if columns[4] >= 0:
            buf[i, columns[4]] = heading[i]
        if columns[5] >= 0:
            for j in range(target_speed.shape[1]):
                buf[i, columns[5] + j] = target_speed[i, j]
        if columns[6] >= 0:
            for j in range(path_points.shape[1]):
                buf[i, columns[6] + 2 * j] = path_points[i, j, 0]
                buf[i, columns[6] + 2 * j + 1] = path_points[i, j, 1]
        if columns[7] >= 0:
            for j in range(previous_action.shape[1]):
                buf[i, columns[7] + j] = previous_action[i, j]


# The derived report items the assembly kernel computes itself (``_assemble``), by the arithmetic of their numpy
# definitions in ``acres_gym.dbw.report_values`` (which the policy runtime uses without numba).
_KERNEL_DERIVED = {brake_bar: 0, gear_one_hot: 1, valid_flags: 2}
_DERIVED_ROWS = np.array([REPORT_ROW[f] for f in ("brake.pressure_output", "brake.percent_output", "gear.gear",
                                                  "steering.cmd", "throttle.percent_output", "ulc.vel_ref")], np.int64)
_GEAR_ORDER = np.array(GEAR_ORDER, dtype=np.float64)


@njit(cache=True)
def _brake_bar(pressure, percent, brake_max_bar):
    """``report_values.brake_bar`` of one vehicle from its report's pressure and percent (scalars: a helper
    called per vehicle takes no arrays, whose references it would count on every call)."""
    if np.isnan(pressure):
        return percent * brake_max_bar / 100.0
    return pressure


# The body and task items the assembly kernel copies from the frame, and the frame arrays it reads for each
# (``_assemble``'s ``columns``: the first column of each source in the observation row, -1 when not observed).
_FRAME_ITEMS = {"yaw_rate": ("yaw_rate",), "roll_pitch": ("roll", "pitch"), "lateral_error": ("lateral",),
                "heading_error": ("heading",), "target_speed": ("target_speed",), "path_points": ("path_points",),
                "previous_action": ("previous_action",)}
_FRAME_SOURCES = ("yaw_rate", "roll", "pitch", "lateral", "heading", "target_speed", "path_points", "previous_action")


@njit(cache=True)
def _assemble(table, gather_rows, gather_columns, derived_kinds, derived_columns, rows, brake_max_bar, gear_order,
              columns, yaw_rate, roll, pitch, lateral, heading, target_speed, path_points, previous_action,
              buf, low, high, out):
    """The observation rows of N vehicles in one pass: the report items gathered from ``table``
    (``gather_rows`` -> ``gather_columns``), the derived items (``derived_kinds``: 0 brake pressure, 1 gear
    one-hot, 2 report valid, from the report rows ``rows``, each starting at its ``derived_columns``), the
    frame's body and task arrays (``_FRAME_SOURCES`` order, each from its ``columns`` entry on; (N,) arrays one
    column, (N, m) arrays m, the (N, K, 2) path points 2K as x1, y1, x2, ...), then every value of ``buf``
    (where the other items were written) clipped to [``low``, ``high``], NaN as 0, and cast to float32 into
    ``out``."""
    n, width = buf.shape
    _copy_frame(columns, yaw_rate, roll, pitch, lateral, heading, target_speed, path_points, previous_action, buf)
    for i in range(n):
        for k in range(gather_rows.shape[0]):
            buf[i, gather_columns[k]] = table[gather_rows[k], i]
        for k in range(derived_kinds.shape[0]):
            c = derived_columns[k]
            kind = derived_kinds[k]
            if kind == 0:
                buf[i, c] = _brake_bar(table[rows[0], i], table[rows[1], i], brake_max_bar[i])
            elif kind == 1:
                gear = table[rows[2], i]
                for j in range(gear_order.shape[0]):
                    buf[i, c + j] = 1.0 if gear == gear_order[j] else 0.0
            else:
                buf[i, c] = 0.0 if np.isnan(table[rows[3], i]) else 1.0
                buf[i, c + 1] = 0.0 if np.isnan(table[rows[4], i]) else 1.0
                bar = _brake_bar(table[rows[0], i], table[rows[1], i], brake_max_bar[i])
                buf[i, c + 2] = 0.0 if np.isnan(bar) else 1.0
                buf[i, c + 3] = 0.0 if np.isnan(table[rows[5], i]) else 1.0
        for j in range(width):
            x = buf[i, j]
            if np.isnan(x):
                out[i, j] = 0.0
            else:  # numpy's clip of a float: (x > low ? x : low), then (< high ? . : high)
                x = x if x > low[j] else low[j]
                out[i, j] = x if x < high[j] else high[j]


class ObservationBuilder:
    """Builds the ``Dict`` space and the batched observations of a chosen list of items."""

    def __init__(self, names: Sequence[str] | None, layout: Layout) -> None:
        if names is None:
            default = NAVIGATION_OBSERVATIONS if layout.map_shape[0] > 0 else DEFAULT_OBSERVATIONS
            names = [n for n in default if not (n == "previous_action" and layout.action_dim == 0)]
        names = list(names)
        if not names:
            raise ValueError(f"observations: the list is empty; choose from: {', '.join(ITEMS)}")
        for name in names:
            if name not in ITEMS:
                raise ValueError(f"observations: unknown observation {name!r}; known: {', '.join(ITEMS)}")
        if len(set(names)) != len(names):
            raise ValueError(f"observations: {names} names an observation twice")
        if ("goal" in names or "local_map" in names) and layout.map_shape[0] == 0:
            raise ValueError("observations: 'goal' and 'local_map' need a navigation task (offroad_navigation)")
        if "previous_action" in names and layout.action_dim == 0:
            raise ValueError("observations: 'previous_action' needs a Box action mode (dbw_command has none)")
        self.names = names
        self.layout = layout
        entries = {}
        self._slices: dict[str, tuple[slice, tuple[int, ...]]] = {}
        lows, highs = [], []
        width = 0
        for name in names:
            item = ITEMS[name]
            shape = item.shape(layout)
            low = np.full(shape, max(item.low(layout), -FLOAT32_MAX), dtype=np.float32)
            high = np.full(shape, min(item.high(layout), FLOAT32_MAX), dtype=np.float32)
            if not np.isfinite(item.low(layout)):
                low[...] = -np.inf
            if not np.isfinite(item.high(layout)):
                high[...] = np.inf
            entries[name] = spaces.Box(low, high, shape, dtype=np.float32)
            size = int(np.prod(shape))
            self._slices[name] = (slice(width, width + size), shape)
            width += size
            lows.append(np.maximum(low, -FLOAT32_MAX).astype(np.float64).ravel())
            highs.append(np.minimum(high, FLOAT32_MAX).astype(np.float64).ravel())
        self.width = width
        gathered = [(self._slices[n][0], ITEMS[n].report_fields) for n in names if ITEMS[n].source == "report"]
        self._gather_columns = np.array([c for sl, fields in gathered for c in range(sl.start, sl.stop)], np.int64)
        self._gather_rows = np.array([REPORT_ROW[f] for _, fields in gathered for f in fields], np.int64)
        self._prepare_assembly()
        self._low = np.concatenate(lows)
        self._high = np.concatenate(highs)
        self.space = spaces.Dict(entries)

    def _prepare_assembly(self) -> None:
        """What ``_assemble`` takes besides the frame: the derived items' kinds and columns, the frame items'
        columns, the other computed items, and the row entries of the single env's dict."""
        names = self.names
        derived = [n for n in names if ITEMS[n].source == "report_derived" and DERIVED[n][0] in _KERNEL_DERIVED]
        self._derived_kinds = np.array([_KERNEL_DERIVED[DERIVED[n][0]] for n in derived], np.int64)
        self._derived_columns = np.array([self._slices[n][0].start for n in derived], np.int64)
        self._columns = np.full(len(_FRAME_SOURCES), -1, np.int64)
        for name in names:
            for j, source in enumerate(_FRAME_ITEMS.get(name, ())):
                self._columns[_FRAME_SOURCES.index(source)] = self._slices[name][0].start + j
        self._computed = [(self._slices[n][0], n) for n in names
                          if ITEMS[n].source != "report" and n not in derived and n not in _FRAME_ITEMS]
        # the entries of one vehicle's row: views by slice, reshaped only where the item is not a vector
        self._row_entries = [(name, sl, shape if len(shape) != 1 else None)
                             for name, (sl, shape) in self._slices.items()]
        self._scratch: np.ndarray | None = None

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        if "_columns" not in state:  # pickled by a version without the assembly kernel (a training checkpoint)
            self._prepare_assembly()

    @property
    def slices(self) -> dict[str, tuple[slice, tuple[int, ...]]]:
        """``{name: (slice, shape)}``: where each item lies in the flat (width,) vector, in order."""
        return dict(self._slices)

    def build(self, frame: Frame, row: int | None = None) -> dict[str, np.ndarray]:
        """The observations of all vehicles: ``{name: (N, *shape) float32}`` (of vehicle ``row`` alone,
        ``{name: shape float32}``, when given).

        All items go into one (N, width) buffer (the report items by one gather from the report table) that
        is clipped to the space bounds and cleared of NaN (an absent report value becomes 0) in one pass;
        the entries are views of its float32 copy.
        """
        n = frame.speed_mps.shape[0]
        buf = self._scratch
        if buf is None or buf.shape[0] != n:
            buf = self._scratch = np.empty((n, self.width))  # float64 scratch, reused (the output is new)
        for sl, name in self._computed:
            buf[:, sl] = np.reshape(ITEMS[name].value(frame), (n, -1))
        out32 = np.empty((n, self.width), dtype=np.float32)
        # the rest in one jitted pass: report items, derived items, clip to the bounds, NaN -> 0, float32
        f, t = frame, frame.task
        _assemble(f.report_table, self._gather_rows, self._gather_columns, self._derived_kinds,
                  self._derived_columns, _DERIVED_ROWS, f.brake_max_bar, _GEAR_ORDER, self._columns, f.yaw_rate_rad_s,
                  f.roll_rad, f.pitch_rad, t.lateral_error_m, t.heading_error_rad, t.target_speed, t.path_points,
                  f.previous_action, buf, self._low, self._high, out32)
        if row is not None:
            one = out32[row]
            return {name: one[sl] if shape is None else one[sl].reshape(shape) for name, sl, shape in self._row_entries}
        return {name: out32[:, sl].reshape((n, *shape)) for name, (sl, shape) in self._slices.items()}
