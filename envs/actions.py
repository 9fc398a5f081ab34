"""Action modes: how an agent's action becomes the DBW messages of one control step.

Every mode writes a batch of ``DbwCommand`` records (``acres_gym.dbw.command``) for N vehicles once per
control step. The messages a mode uses are **re-sent every step** (written with ``acres_gym.dbw.command.send``,
which sets their ``*_fresh`` flag, with ``system_enable`` and the subsystem's ``enable``), as a real autonomy
stack does: the DBW layer drops a subsystem whose last message is older than 0.1 s. Subsystems a mode does not
use get no messages (``clear_sent``) and stay with the driver (pedals released). The gear is not part of the
Box modes: on the first control step of every episode the environment sends one ``GearCmd`` for H (high
range; ``start_range: L`` for low), so the vehicle drives in that range whatever its default gear (unless the
mode has the gear axis, below).

Box modes take a ``Box(-1, 1, (k,), float32)``; values outside [-1, 1] are clipped, NaN or inf raise a
``ValueError`` naming the component:

======================== =======================================================================================
``steer_angle+pedals``   [steering wheel angle, throttle, brake]: angle = a0 x ``steer_max_deg`` (STEER_ANGLE, deg;
                         default the DBW angle command range ``dbw.steering.command_deg``); throttle % = 100 x
                         max(a1, 0); brake % = 100 x max(a2, 0) (PEDAL_PERCENT): the negative half of a pedal
                         axis is the pedal released, so a zero action coasts.
``pedals``               [pedal]: one signed pedal axis, throttle % = 100 x max(a0, 0), brake % = 100 x max(-a0, 0)
                         (never both), the steering wheel commanded to ``steer_hold_deg`` (0): the longitudinal
                         problem alone.
``curvature+ulc_velocity`` [curvature, speed]: curvature = a0 x ``curvature_max_per_m`` (STEER_CURVATURE, 1/m;
                         default ``dbw.steering.max_curvature_per_m``, 0.2); the ULC velocity command
                         ``ulc_speed_min_mps`` + (a1 + 1) / 2 x (``ulc_speed_max_mps`` - ``ulc_speed_min_mps``).
``yaw_rate+ulc_velocity`` [yaw rate, speed]: yaw rate = a0 x ``yaw_rate_max_rad_s`` (STEER_YAW_RATE, rad/s;
                         default 1.0, the 0.2 1/m curvature limit at 5 m/s, within
                         ``dbw.steering.max_yaw_rate_rad_s``; the DBW layer steers the curvature yaw rate /
                         measured speed); the ULC velocity command as above.
``steer_angle+ulc_accel`` [steering wheel angle, acceleration]: angle as above; the ULC acceleration command
                         a1 x ``accel_max_mps2`` for a1 >= 0, a1 x ``decel_max_mps2`` below (m/s^2).
======================== =======================================================================================

On the first control step of every episode the environment sends one ``GearCmd`` for
``action_options.start_range`` (``H``, the default, or ``L``: low range throughout, for crawling and climbing;
every Box mode takes it). With ``action_options: {gear_axis: true}`` the agent chooses the range: the action
has one more component, ``range``, that asks for H at or above 1/3 and for L at or below -1/3 (in between: no
request, and on an episode's first step the start range goes out). A ``GearCmd`` goes out when the request
differs from the gear engaged or being shifted to; the DBW layer refuses a shift while the vehicle moves
faster than ``dbw.gear.shift_max_speed_mps`` (GearReport.reject VEHICLE_SPEED, repeated while the request
stands) and otherwise shifts through N in ``dbw.gear.shift_s``.

``action_options: {drive_axis: true}`` adds the AWD switch as one more component, ``drive_mode`` (after
``range`` when both are on): AWD at or above 1/3, Turf at or below -1/3, 2WD between, sent with every
message. The DBW layer passes the switch through at any speed: the vehicle reference (reference §1.1,
"AWD on demand") names no speed limit for it, so nothing refuses it (unlike the range shift).

``dbw_command`` is the raw path for classical controllers and recorded logs: a ``Dict`` of command fields
in ds_dbw units (``steer_mode``, ``steer_cmd``, ``throttle_mode``, ``throttle_cmd``, ``brake_mode``,
``brake_cmd``, ``gear_cmd``, ``ulc_mode``, ``ulc_cmd``, the rate and limit fields, ...; see
``DbwCommandMode.FIELDS``). A subsystem whose mode is not NONE gets a message with its enable set; keys left
out keep their neutral value (mode NONE, rates 0 = firmware default, the AWD switch at the vehicle's
``driveline.default_drive_mode``). Mode values are the ds_dbw constants; their spaces (``DiscreteSet``)
sample only the modes the DBW layer accepts, so every ``action_space.sample()`` is a valid action. Fields
are not coerced: a mode or gear of 2.5, a flag of 99, a string, a mapping or an unknown mode raises a
``ValueError`` naming the field and its allowed values.

``ACTION_MODES`` maps names to classes; ``make_action_mode(name, params, options)`` builds one. A mode
also offers ``decode(actions)`` (the physical commands of normalised actions: one action of shape (k,)
gives scalars, an (N, k) batch arrays) and ``encode(**values)`` (the inverse, for controllers written in
physical units: scalars give one action of shape (k,), arrays a batch).
"""

from __future__ import annotations

import copy
import numbers
from collections.abc import Callable, Mapping
from typing import Any, ClassVar

import numpy as np
from gymnasium import spaces
from gymnasium.vector.utils import batch_space
from numba import njit

from acres_gym.configuration import check_keys, number, strip_comments
from acres_gym.constants import (
    DRIVE_ALL_WHEEL,
    DRIVE_TURF,
    DRIVE_TWO_WHEEL,
    GEAR_HIGH,
    GEAR_LOW,
    GEAR_NONE,
    PEDAL_NONE,
    PEDAL_PERCENT,
    STEER_ANGLE,
    STEER_CURVATURE,
    STEER_NONE,
    STEER_YAW_RATE,
    ULC_ACCEL,
    ULC_NONE,
    ULC_VELOCITY,
)
from acres_gym.dbw.command import (
    COMMAND_MODES,
    GEAR_CMD_MAX,
    MESSAGE_SUBSYSTEMS,
    check_commands,
    mark_sent,
    send,
)

ULC_VELOCITY_RANGE_MPS = (-7.0, 45.0)  # what the firmware-side decoder accepts
ULC_ACCEL_RANGE_MPS2 = (-6.0, 3.0)
RANGE_THRESHOLD = 1.0 / 3.0  # the gear axis requests H at or above it, L at or below its negative


def _where(n: int, v: int, component: str) -> str:
    return f"action component {component!r}" if n == 1 else f"action of vehicle {v}, component {component!r}"


def _field(n: int, v: int, key: str) -> str:
    return f"dbw_command action field {key!r}" + ("" if n == 1 else f" of vehicle {v}")


def _show(value: Any) -> str:
    text = repr(value)
    return f"{type(value).__name__} {text if len(text) <= 60 else text[:57] + '...'}"


def _as_numbers(value: Any, expected: Callable[[], str], bools: bool = False) -> np.ndarray:
    """``value`` as an integer or float array, without coercion: strings, mappings, ragged lists, and
    booleans (unless ``bools``) raise ``ValueError`` with ``expected()`` and the value; Python integers
    beyond int64 become floats (they then fail any range check by value, not with an ``OverflowError``)."""
    try:
        a = np.asarray(value)
        if a.dtype.kind == "O" and a.size and all(isinstance(x, numbers.Real) and not isinstance(x, bool)
                                                  for x in a.flat):
            a = a.astype(np.float64)
    except (ValueError, TypeError, OverflowError):
        a = None
    if a is None or a.dtype.kind not in ("iufb" if bools else "iuf"):
        raise ValueError(f"{expected()}, got {_show(value)}")
    return a


_FLOAT_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


@njit(cache=True)
def _clipped(actions, out):
    """``actions`` (float32 or float64, (N, k)) as float64 clipped to [-1, 1] into ``out``, as numpy's ``clip``
    (``x > -1 ? x : -1``, then ``< 1 ? . : 1``); whether every value is finite (``out`` is then complete)."""
    for i in range(actions.shape[0]):
        for j in range(actions.shape[1]):
            x = np.float64(actions[i, j])
            if not np.isfinite(x):
                return False
            x = x if x > -1.0 else -1.0
            out[i, j] = x if x < 1.0 else 1.0
    return True


# --- spaces whose every sample is a valid DBW value ---------------------------------------------------
class DiscreteSet(spaces.Discrete):
    """A ``Discrete`` space over the integers ``min(values) .. max(values)`` of which only ``values`` are
    valid: ``sample`` draws uniformly from ``values`` (a ``mask`` or ``probability`` is combined with them)
    and ``contains`` accepts only them. The ds_dbw mode fields keep their message constants (steering
    ``CMD_PERCENT`` = 14) while every sample is a mode the DBW layer accepts; ``flatten`` sees a
    ``Discrete`` of ``max - min + 1`` values."""

    def __init__(self, values: Any, seed: Any = None) -> None:
        vals = np.unique(np.asarray(list(values), dtype=np.int64))
        if vals.size == 0:
            raise ValueError("DiscreteSet: give at least one value")
        super().__init__(int(vals[-1] - vals[0]) + 1, seed=seed, start=int(vals[0]))
        self.values = vals
        self.valid = np.isin(np.arange(self.n) + self.start, vals).astype(np.int8)

    def sample(self, mask: Any = None, probability: Any = None) -> np.int64:
        if probability is not None:
            p = np.asarray(probability, dtype=np.float64) * self.valid
            if mask is not None or not p.sum() > 0.0:
                raise ValueError(f"{self}: give a mask or a probability with weight on a valid value")
            return super().sample(probability=p / p.sum())
        return super().sample(mask=self.valid if mask is None else (np.asarray(mask) == 1).astype(np.int8) & self.valid)

    def contains(self, x: Any) -> bool:
        return super().contains(x) and bool(np.isin(np.asarray(x), self.values).all())

    def __repr__(self) -> str:
        return f"DiscreteSet({self.values.tolist()})"

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, DiscreteSet) and np.array_equal(self.values, other.values)


class MultiDiscreteSet(spaces.MultiDiscrete):
    """``DiscreteSet`` batched (``batch_space``): an array of ``shape`` whose every element is one of
    ``values``."""

    def __init__(self, values: Any, shape: tuple[int, ...], seed: Any = None) -> None:
        vals = np.unique(np.asarray(list(values), dtype=np.int64))
        super().__init__(np.full(shape, int(vals[-1] - vals[0]) + 1, dtype=np.int64), dtype=np.int64, seed=seed,
                         start=np.full(shape, int(vals[0]), dtype=np.int64))
        self.values = vals

    def sample(self, mask: Any = None, probability: Any = None) -> np.ndarray:
        if mask is None and probability is None:
            return self.values[self.np_random.integers(self.values.size, size=self.shape)]
        raise ValueError(f"{self}: masked sampling is not supported; sample the single space per vehicle")

    def contains(self, x: Any) -> bool:
        return super().contains(x) and bool(np.isin(np.asarray(x), self.values).all())

    def __repr__(self) -> str:
        return f"MultiDiscreteSet({self.values.tolist()}, {self.shape})"

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, MultiDiscreteSet) and np.array_equal(self.values, other.values) \
            and self.shape == other.shape


@batch_space.register(DiscreteSet)
def _batch_discrete_set(space: DiscreteSet, n: int = 1) -> MultiDiscreteSet:
    return MultiDiscreteSet(space.values, (n,), seed=copy.deepcopy(space.np_random))


class ActionMode:
    """Base class: a named mapping from actions to DBW commands for a batch of N vehicles."""

    name: ClassVar[str] = ""
    components: ClassVar[tuple[str, ...]] = ()
    option_defaults: ClassVar[dict[str, Any]] = {}
    start_gear: int = GEAR_HIGH  # the GearCmd of an episode's first step when the action sends none

    def __init__(self, params: np.record, options: Mapping | None = None) -> None:
        options = strip_comments(options or {})
        check_keys(f"action_options (action mode {self.name!r})", options, self.option_defaults)
        self.params = params
        self.options = self._resolve({**self.option_defaults, **options})
        gear_axis = self.options.get("gear_axis", False)
        if not isinstance(gear_axis, bool):
            raise ValueError(f"action_options.gear_axis = {gear_axis!r} (mode {self.name!r}): expected true/false")
        self.gear_axis = gear_axis
        drive_axis = self.options.get("drive_axis", False)
        if not isinstance(drive_axis, bool):
            raise ValueError(f"action_options.drive_axis = {drive_axis!r} (mode {self.name!r}): expected true/false")
        self.drive_axis = drive_axis
        if "start_range" in self.options:
            start = self.options["start_range"]
            if start not in START_RANGES:
                raise ValueError(f"action_options.start_range = {start!r} (mode {self.name!r}); allowed: "
                                 f"{', '.join(START_RANGES)}")
            self.start_gear = START_RANGES[start]
        self.components = type(self).components + (("range",) if gear_axis else ()) \
            + (("drive_mode",) if drive_axis else ())
        self._rates: np.ndarray | None = None  # the rate and limit options as _write_messages takes them

    def _resolve(self, options: dict) -> dict:
        return options

    # --- spaces and arrays ---------------------------------------------------------------------------
    @property
    def space(self) -> spaces.Space:
        return spaces.Box(-1.0, 1.0, (len(self.components),), dtype=np.float32)

    @property
    def flat_dim(self) -> int:
        """Length of the flat action vector the smoothness terms and ``previous_action`` use."""
        return len(self.components)

    def to_batch(self, actions: Any, n: int) -> np.ndarray:
        """Actions of N vehicles as an (N, k) float64 array, checked and clipped to [-1, 1]."""
        k = len(self.components)
        shape = getattr(actions, "shape", None)
        one = shape == (k,) == (n * k,)  # a single action of a batch of one
        if type(actions) is np.ndarray and actions.dtype in _FLOAT_DTYPES and (shape == (n, k) or one):
            out = np.empty((n, k))  # the common case in one jitted pass; a non-finite value takes the checks below
            if _clipped(actions.reshape(n, k), out):
                return out
        if isinstance(actions, np.ndarray) and actions.dtype.kind == "f":  # without the checks of _as_numbers
            a = actions.astype(np.float64)  # of _as_numbers that a float array passes anyway
        else:
            a = _as_numbers(actions, self._expected).astype(np.float64)
        if a.shape != (n, k):
            if n == 1 and a.shape == (k,):
                a = a.reshape(1, k)
            else:
                expected = f"({k},)" if n == 1 else f"({n}, {k})"
                raise ValueError(f"action mode {self.name!r}: expected an action of shape {expected} "
                                 f"({', '.join(self.components)}), got shape {a.shape}")
        if not np.isfinite(a).all():
            v, c = (int(i) for i in np.argwhere(~np.isfinite(a))[0])
            raise ValueError(f"{_where(n, v, self.components[c])} is {a[v, c]}; actions must be finite numbers "
                             f"in [-1, 1] (mode {self.name!r})")
        return a.clip(-1.0, 1.0)

    def _expected(self) -> str:
        return f"action mode {self.name!r}: expected numbers in [-1, 1] ({', '.join(self.components)})"

    def flat(self, batch: Any) -> np.ndarray:
        """The (N, k) flat form of a checked batch (the batch itself for Box modes)."""
        return batch

    # --- commands -----------------------------------------------------------------------------------
    # Box modes declare what they command: (steering mode, decoded key) and either the pedals
    # (``ulc_command = None``) or (ULC mode, decoded key).
    steer_command: ClassVar[tuple[int, str] | None] = None
    ulc_command: ClassVar[tuple[int, str] | None] = None

    def write(self, cmd: np.recarray, batch: Any, rows: np.ndarray, state: np.ndarray | None = None) -> None:
        """Write the commands of the vehicles selected by the boolean mask ``rows`` for ``batch``, an (N, k)
        batch as ``to_batch`` returns it (checked and clipped): the header, the
        steering message and the pedal or ULC messages the mode declares; with the gear axis, a GearCmd
        when the requested range differs from the gear engaged or being shifted to (``state.gear_target``;
        without ``state``, whenever a range is requested)."""
        if self.steer_command is None:
            raise NotImplementedError(f"action mode {self.name!r} declares no commands")
        steer_mode, steer_key = self.steer_command
        ulc_mode = ULC_NONE if self.ulc_command is None else self.ulc_command[0]
        rates = getattr(self, "_rates", None)  # (modes pickled before it existed lack it)
        if rates is None:
            rates = self._rates = np.array([float(self.options.get(key, 0.0)) for key in _RATE_OPTIONS])
        decoding = self._kernel_decoding()
        if decoding is not None:  # a built-in mode without the gear and AWD axes: decoded and written in one pass
            _decode_write(cmd, rows, batch, decoding, steer_mode, ulc_mode, rates)
            return
        d = self._decode_checked(batch)
        if self.ulc_command is None:
            first, second = d["throttle_pct"], d["brake_pct"]
        else:
            first = second = d[self.ulc_command[1]]
        _write_messages(cmd, rows, steer_mode, np.asarray(d[steer_key], dtype=np.float64),
                        ulc_mode, np.asarray(first, dtype=np.float64), np.asarray(second, dtype=np.float64), rates)
        if rows.all():  # every vehicle: plain slices write the same values with less indexing work
            rows = slice(None)
        if self.gear_axis:
            gear = d["range_gear"]
            shift = gear != GEAR_NONE if isinstance(rows, slice) else rows & (gear != GEAR_NONE)
            if state is not None:
                shift &= state["gear_target"] != gear
            send(cmd, "GearCmd", shift, cmd=gear[shift])
        if self.drive_axis:
            cmd["drive_mode"][rows] = d["drive_mode"][rows]

    def _kernel_decoding(self) -> np.ndarray | None:
        """What ``_decode_write`` takes to decode this mode's actions (``_DECODE_KINDS``: its ``_decode`` in
        arithmetic, then three constants), or None when its ``_decode`` is not a built-in one or the gear or
        AWD axis is on (those take the numpy path)."""
        decoding = getattr(self, "_decoding", False)  # (modes pickled before it existed lack it)
        if decoding is False:
            kind = _DECODE_KINDS.get(type(self)._decode)
            decoding = None if kind is None or self.gear_axis or self.drive_axis else \
                np.array([kind, *_DECODE_CONSTANTS[kind](self)], dtype=np.float64)
            self._decoding = decoding
        return decoding

    def decode(self, batch: Any) -> dict[str, Any]:
        """The physical commands of normalised actions: a single action of shape (k,) gives a dict of
        scalars, an (N, k) batch a dict of (N,) arrays. Checked and clipped as the environment does (NaN
        raises, values outside [-1, 1] count as -1 or 1). With the gear axis also ``range_gear``:
        GEAR_HIGH for a >= 1/3, GEAR_LOW for a <= -1/3, GEAR_NONE (no request) between."""
        batch, single = self._batch_of(batch)
        d = self._decode_checked(batch)
        return {key: value[0] for key, value in d.items()} if single else d

    def _decode_checked(self, batch: np.ndarray) -> dict[str, np.ndarray]:
        """``decode`` of an (N, k) batch that ``to_batch`` already checked: a dict of (N,) arrays."""
        d = self._decode(batch)
        if self.gear_axis:
            a = batch[:, self.components.index("range")]
            d["range_gear"] = np.where(a >= RANGE_THRESHOLD, GEAR_HIGH,
                                       np.where(a <= -RANGE_THRESHOLD, GEAR_LOW, GEAR_NONE))
        if self.drive_axis:
            a = batch[:, self.components.index("drive_mode")]
            d["drive_mode"] = np.where(a >= RANGE_THRESHOLD, DRIVE_ALL_WHEEL,
                                       np.where(a <= -RANGE_THRESHOLD, DRIVE_TURF, DRIVE_TWO_WHEEL))
        return d

    def _batch_of(self, actions: Any) -> tuple[np.ndarray, bool]:
        """(checked (N, k) batch, whether ``actions`` was a single action of shape (k,))."""
        if isinstance(actions, np.ndarray) and actions.ndim == 2:
            return self.to_batch(actions, actions.shape[0]), False
        a = _as_numbers(actions, self._expected)
        if a.ndim not in (1, 2):
            k = len(self.components)
            raise ValueError(f"action mode {self.name!r}: expected one action of shape ({k},) or a batch of shape "
                             f"(N, {k}) ({', '.join(self.components)}), got shape {a.shape}")
        return self.to_batch(a, 1 if a.ndim == 1 else a.shape[0]), a.ndim == 1

    def encode(self, range_gear: Any = None, drive_mode: Any = None, **values: Any) -> np.ndarray:
        """The normalised actions for physical commands (the inverse of ``decode``), clipped: scalars give
        one action of shape (k,), arrays of N values an (N, k) batch. ``range_gear`` (GEAR_HIGH, GEAR_LOW
        or GEAR_NONE) sets the gear axis when the mode has one, ``drive_mode`` (DRIVE_TURF, DRIVE_TWO_WHEEL,
        DRIVE_ALL_WHEEL; default AWD) the drive-mode axis."""
        single = all(np.ndim(v) == 0 for v in (range_gear, drive_mode, *values.values()))
        a = self._encode(**values)
        if range_gear is not None and not self.gear_axis:
            raise TypeError(f"encode() of mode {self.name!r}: range_gear needs action_options.gear_axis: true")
        if drive_mode is not None and not self.drive_axis:
            raise TypeError(f"encode() of mode {self.name!r}: drive_mode needs action_options.drive_axis: true")
        cols = [a]
        if self.gear_axis:
            gear = np.asarray(GEAR_NONE if range_gear is None else range_gear)
            cols.append(np.where(gear == GEAR_HIGH, 1.0, np.where(gear == GEAR_LOW, -1.0, 0.0)).reshape(-1, 1))
        if self.drive_axis:
            mode = np.asarray(DRIVE_ALL_WHEEL if drive_mode is None else drive_mode)
            cols.append(np.where(mode == DRIVE_ALL_WHEEL, 1.0, np.where(mode == DRIVE_TURF, -1.0, 0.0)).reshape(-1, 1))
        if len(cols) > 1:
            rows = max(c.shape[0] for c in cols)
            a = np.concatenate([np.broadcast_to(c, (rows, c.shape[1])) for c in cols], axis=1)
        return a[0] if single else a

    def _decode(self, batch: np.ndarray) -> dict[str, np.ndarray]:
        raise NotImplementedError

    def _encode(self, **values: Any) -> np.ndarray:
        raise NotImplementedError


# --- command writer ----------------------------------------------------------------------------------
# The messages a Box mode sends each control step (ds_dbw names; ``acres_gym.dbw.command.MESSAGE_FIELDS``
# maps them to the command record): Enable (data true); SteeringCmd (the mode's steering command type and
# value, cmd_rate, cmd_accel, enable); then either ThrottleCmd and BrakeCmd (PERCENT, cmd, rate_inc,
# rate_dec, enable) with the ULC held at NONE, disabled and not sent, or UlcCmd (the mode's command type
# and value, the four limits, coast_decel, enable) with both pedals held at NONE, disabled and not sent.
# Each sent message raises its "a message arrived" flag. One jitted pass writes them for all vehicles.
_RATE_OPTIONS = ("steer_rate_deg_s", "steer_accel_deg_s2", "throttle_rate_inc_pct_s", "throttle_rate_dec_pct_s",
                 "brake_rate_inc_pct_s", "brake_rate_dec_pct_s", "ulc_limit_accel_mps2", "ulc_limit_decel_mps2",
                 "ulc_limit_jerk_throttle_mps3", "ulc_limit_jerk_brake_mps3", "ulc_coast_decel")


@njit(cache=True)
def _write_messages(cmd, rows, steer_mode, steer_value, ulc_mode, first, second, rates):
    """The messages above into ``cmd`` for the vehicles in ``rows``: steering ``steer_mode`` with
    ``steer_value``; with ``ulc_mode`` NONE the throttle ``first`` and brake ``second`` percentages, else
    ULC ``ulc_mode`` with ``first``; ``rates`` holds the options of ``_RATE_OPTIONS`` in that order."""
    for i in range(cmd.shape[0]):
        if not rows[i]:
            continue
        c = cmd[i]
        c.system_enable = True
        c.steer_mode = steer_mode
        c.steer_cmd = steer_value[i]
        c.steer_rate_deg_s = rates[0]
        c.steer_accel_deg_s2 = rates[1]
        c.steer_enable = True
        c.steer_fresh = True
        pedals = ulc_mode == ULC_NONE
        c.throttle_mode = PEDAL_PERCENT if pedals else PEDAL_NONE
        c.throttle_enable = pedals
        c.throttle_fresh = pedals
        c.brake_mode = PEDAL_PERCENT if pedals else PEDAL_NONE
        c.brake_enable = pedals
        c.brake_fresh = pedals
        c.ulc_mode = ulc_mode
        c.ulc_enable = not pedals
        c.ulc_fresh = not pedals
        if pedals:
            c.throttle_cmd = first[i]
            c.throttle_rate_inc_pct_s = rates[2]
            c.throttle_rate_dec_pct_s = rates[3]
            c.brake_cmd = second[i]
            c.brake_rate_inc = rates[4]
            c.brake_rate_dec = rates[5]
        else:
            c.ulc_cmd = first[i]
            c.ulc_limit_accel_mps2 = rates[6]
            c.ulc_limit_decel_mps2 = rates[7]
            c.ulc_limit_jerk_throttle_mps3 = rates[8]
            c.ulc_limit_jerk_brake_mps3 = rates[9]
            c.ulc_coast_decel = rates[10] != 0.0


@njit(cache=True)
def _decode_write(cmd, rows, batch, decoding, steer_mode, ulc_mode, rates):
    """``_write_messages`` of the commands a built-in Box mode decodes from ``batch`` (checked and clipped), by
    the arithmetic of its numpy ``_decode`` (``_DECODE_KINDS``; ``np.maximum(x, 0.0)`` is ``x`` only above 0:
    -0.0 gives +0.0), with ``decoding`` = (kind, c0, c1, c2): 0 steering angle (a0 x c0) and pedals, 1 one
    signed pedal axis with the steering held at c0, 2 steering (a0 x c0) and a ULC speed c1 + (a1 + 1) / 2 x c2,
    3 steering (a0 x c0) and a ULC acceleration (a1 x c1 for a1 >= 0, a1 x c2 below)."""
    kind, c0, c1, c2 = int(decoding[0]), decoding[1], decoding[2], decoding[3]
    n = batch.shape[0]
    steer, first, second = np.empty(n), np.empty(n), np.empty(n)
    for i in range(n):
        a0 = batch[i, 0]
        if kind == 1:
            steer[i] = c0
            first[i] = 100.0 * (a0 if a0 > 0.0 else 0.0)
            second[i] = 100.0 * (-a0 if -a0 > 0.0 else 0.0)
            continue
        steer[i] = a0 * c0
        a1 = batch[i, 1]
        if kind == 0:
            a2 = batch[i, 2]
            first[i] = 100.0 * (a1 if a1 > 0.0 else 0.0)
            second[i] = 100.0 * (a2 if a2 > 0.0 else 0.0)
        elif kind == 2:
            first[i] = second[i] = c1 + 0.5 * (a1 + 1.0) * c2
        else:
            first[i] = second[i] = a1 * c1 if a1 >= 0.0 else a1 * c2
    _write_messages(cmd, rows, steer_mode, steer, ulc_mode, first, second, rates)


def _rate(where: str, value: Any) -> float:
    """A rate or limit field: 0 = firmware default, inf = unlimited (``"inf"``, YAML's ``.inf`` or the float, so a
    resolved config, which holds the float, makes the same mode again), else > 0."""
    if isinstance(value, str) and value.lower() in ("inf", "infinity"):
        return float("inf")
    if isinstance(value, float) and value == float("inf"):
        return value
    return number(where, value, 0.0)


_STEER_OPTIONS = {"steer_rate_deg_s": 0.0, "steer_accel_deg_s2": 0.0}
# every Box mode may add the range and AWD-switch components, and choose the range the episode starts in
_GEAR_OPTIONS = {"gear_axis": False, "drive_axis": False, "start_range": "H"}
START_RANGES = {"H": GEAR_HIGH, "L": GEAR_LOW}
_PEDAL_OPTIONS = {"throttle_rate_inc_pct_s": 0.0, "throttle_rate_dec_pct_s": 0.0,
                  "brake_rate_inc_pct_s": 0.0, "brake_rate_dec_pct_s": 0.0}
_ULC_OPTIONS = {"ulc_limit_accel_mps2": 0.0, "ulc_limit_decel_mps2": 0.0, "ulc_limit_jerk_throttle_mps3": 0.0,
                "ulc_limit_jerk_brake_mps3": 0.0, "ulc_coast_decel": False}


def _resolve_rates(mode: str, options: dict) -> None:
    for key in list(_STEER_OPTIONS) + list(_PEDAL_OPTIONS) + list(_ULC_OPTIONS):
        if key in options and key != "ulc_coast_decel":
            options[key] = _rate(f"action_options.{key} (mode {mode!r})", options[key])
    if "ulc_coast_decel" in options and not isinstance(options["ulc_coast_decel"], bool):
        raise ValueError(f"action_options.ulc_coast_decel = {options['ulc_coast_decel']!r}: expected true/false")


def _steer_max(mode: str, options: dict, params) -> float:
    if options["steer_max_deg"] is None:
        return float(params.steer_command_deg)
    return number(f"action_options.steer_max_deg (mode {mode!r})", options["steer_max_deg"], 0.0,
                  float(params.steer_lock_deg), lo_open=True)


def _pedal_pct(a: np.ndarray) -> np.ndarray:
    return 100.0 * np.maximum(a, 0.0)


def _pedal_axis(pct: Any) -> np.ndarray:
    return np.clip(np.asarray(pct, dtype=np.float64) / 100.0, 0.0, 1.0)


ACTION_MODES: dict[str, type[ActionMode]] = {}


def register_action_mode(cls: type[ActionMode]) -> type[ActionMode]:
    """Class decorator: add an action mode to ``ACTION_MODES`` under its ``name``."""
    ACTION_MODES[cls.name] = cls
    return cls


@register_action_mode
class SteerAnglePedals(ActionMode):
    """Steering wheel angle (STEER_ANGLE), throttle and brake pedals (PEDAL_PERCENT)."""

    name = "steer_angle+pedals"
    components = ("steering_wheel_angle", "throttle", "brake")
    steer_command = (STEER_ANGLE, "steering_wheel_deg")
    option_defaults = {"steer_max_deg": None, **_STEER_OPTIONS, **_GEAR_OPTIONS, **_PEDAL_OPTIONS}

    def _resolve(self, options: dict) -> dict:
        options["steer_max_deg"] = _steer_max(self.name, options, self.params)
        _resolve_rates(self.name, options)
        return options

    def _decode(self, batch):
        return {"steering_wheel_deg": batch[:, 0] * self.options["steer_max_deg"],
                "throttle_pct": _pedal_pct(batch[:, 1]), "brake_pct": _pedal_pct(batch[:, 2])}

    def _encode(self, steering_wheel_deg=0.0, throttle_pct=0.0, brake_pct=0.0):
        steer = np.asarray(steering_wheel_deg, dtype=np.float64) / self.options["steer_max_deg"]
        cols = np.broadcast_arrays(np.clip(steer, -1, 1), _pedal_axis(throttle_pct), _pedal_axis(brake_pct))
        return np.atleast_2d(np.stack(cols, axis=-1))


@register_action_mode
class Pedals(ActionMode):
    """One signed pedal axis: throttle above 0, brake below (PEDAL_PERCENT); the steering wheel held at
    ``steer_hold_deg``."""

    name = "pedals"
    components = ("pedal",)
    steer_command = (STEER_ANGLE, "steering_wheel_deg")
    option_defaults = {"steer_hold_deg": 0.0, **_STEER_OPTIONS, **_GEAR_OPTIONS, **_PEDAL_OPTIONS}

    def _resolve(self, options: dict) -> dict:
        lim = float(self.params.steer_command_deg)
        options["steer_hold_deg"] = number("action_options.steer_hold_deg", options["steer_hold_deg"], -lim, lim)
        _resolve_rates(self.name, options)
        return options

    def _decode(self, batch):
        return {"steering_wheel_deg": np.full(batch.shape[0], self.options["steer_hold_deg"]),
                "throttle_pct": _pedal_pct(batch[:, 0]), "brake_pct": _pedal_pct(-batch[:, 0])}

    def _encode(self, throttle_pct=0.0, brake_pct=0.0, **_ignored):
        """The pedal axis of throttle and brake percentages (throttle minus brake)."""
        pedal = _pedal_axis(throttle_pct) - _pedal_axis(brake_pct)
        return np.atleast_2d(np.asarray(pedal, dtype=np.float64)[..., None])


@register_action_mode
class CurvatureUlcVelocity(ActionMode):
    """Path curvature (STEER_CURVATURE) and a ULC velocity command (ULC_VELOCITY)."""

    name = "curvature+ulc_velocity"
    components = ("curvature", "ulc_speed")
    steer_command = (STEER_CURVATURE, "curvature_per_m")
    ulc_command = (ULC_VELOCITY, "ulc_speed_mps")
    option_defaults = {"curvature_max_per_m": None, "ulc_speed_min_mps": 0.0, "ulc_speed_max_mps": 12.0,
                       **_STEER_OPTIONS, **_GEAR_OPTIONS, **_ULC_OPTIONS}

    # the steering axis: (decoded key, option of its full scale, the parameter bounding that scale)
    steer_axis = ("curvature_per_m", "curvature_max_per_m", "max_curvature_per_m")

    def _resolve(self, options: dict) -> dict:
        key, scale, limit_field = self.steer_axis
        limit = float(self.params[limit_field])
        if options[scale] is None:
            options[scale] = limit
        options[scale] = number(f"action_options.{scale}", options[scale], 0.0, limit, lo_open=True)
        lo, hi = ULC_VELOCITY_RANGE_MPS
        options["ulc_speed_min_mps"] = number("action_options.ulc_speed_min_mps", options["ulc_speed_min_mps"],
                                              lo, hi)
        options["ulc_speed_max_mps"] = number("action_options.ulc_speed_max_mps", options["ulc_speed_max_mps"],
                                              options["ulc_speed_min_mps"], hi, lo_open=True)
        _resolve_rates(self.name, options)
        return options

    def _decode(self, batch):
        o = self.options
        key, scale, _ = self.steer_axis
        span = o["ulc_speed_max_mps"] - o["ulc_speed_min_mps"]
        return {key: batch[:, 0] * o[scale], "ulc_speed_mps": o["ulc_speed_min_mps"] + 0.5 * (batch[:, 1] + 1.0) * span}

    def _encode(self, ulc_speed_mps=0.0, **steer):
        """The normalised actions of a steering command (by its decoded key) and a ULC speed."""
        o = self.options
        key, scale, _ = self.steer_axis
        unknown = set(steer) - {key}
        if unknown:
            raise TypeError(f"encode() of mode {self.name!r}: unexpected {sorted(unknown)}; give {key} and "
                            "ulc_speed_mps")
        span = o["ulc_speed_max_mps"] - o["ulc_speed_min_mps"]
        a0 = np.asarray(steer.get(key, 0.0), dtype=np.float64) / o[scale]
        a1 = 2.0 * (np.asarray(ulc_speed_mps, dtype=np.float64) - o["ulc_speed_min_mps"]) / span - 1.0
        cols = np.broadcast_arrays(np.clip(a0, -1, 1), np.clip(a1, -1, 1))
        return np.atleast_2d(np.stack(cols, axis=-1))


@register_action_mode
class YawRateUlcVelocity(CurvatureUlcVelocity):
    """Yaw rate (STEER_YAW_RATE: the DBW turns it into a curvature at the measured speed) and a ULC
    velocity command (ULC_VELOCITY)."""

    name = "yaw_rate+ulc_velocity"
    components = ("yaw_rate", "ulc_speed")
    steer_command = (STEER_YAW_RATE, "yaw_rate_rad_s")
    steer_axis = ("yaw_rate_rad_s", "yaw_rate_max_rad_s", "max_yaw_rate_rad_s")
    option_defaults = {"yaw_rate_max_rad_s": 1.0, "ulc_speed_min_mps": 0.0, "ulc_speed_max_mps": 12.0,
                       **_STEER_OPTIONS, **_GEAR_OPTIONS, **_ULC_OPTIONS}


@register_action_mode
class SteerAngleUlcAccel(ActionMode):
    """Steering wheel angle (STEER_ANGLE) and a ULC acceleration command (ULC_ACCEL)."""

    name = "steer_angle+ulc_accel"
    components = ("steering_wheel_angle", "ulc_accel")
    steer_command = (STEER_ANGLE, "steering_wheel_deg")
    ulc_command = (ULC_ACCEL, "ulc_accel_mps2")
    option_defaults = {"steer_max_deg": None, "accel_max_mps2": 2.0, "decel_max_mps2": 4.0,
                       **_STEER_OPTIONS, **_GEAR_OPTIONS, **_ULC_OPTIONS}

    def _resolve(self, options: dict) -> dict:
        options["steer_max_deg"] = _steer_max(self.name, options, self.params)
        lo, hi = ULC_ACCEL_RANGE_MPS2
        options["accel_max_mps2"] = number("action_options.accel_max_mps2", options["accel_max_mps2"], 0.0, hi,
                                           lo_open=True)
        options["decel_max_mps2"] = number("action_options.decel_max_mps2", options["decel_max_mps2"], 0.0, -lo,
                                           lo_open=True)
        _resolve_rates(self.name, options)
        return options

    def _decode(self, batch):
        o = self.options
        a = batch[:, 1]
        return {"steering_wheel_deg": batch[:, 0] * o["steer_max_deg"],
                "ulc_accel_mps2": np.where(a >= 0.0, a * o["accel_max_mps2"], a * o["decel_max_mps2"])}

    def _encode(self, steering_wheel_deg=0.0, ulc_accel_mps2=0.0):
        o = self.options
        acc = np.asarray(ulc_accel_mps2, dtype=np.float64)
        a1 = np.where(acc >= 0.0, acc / o["accel_max_mps2"], acc / o["decel_max_mps2"])
        a0 = np.asarray(steering_wheel_deg, dtype=np.float64) / o["steer_max_deg"]
        cols = np.broadcast_arrays(np.clip(a0, -1, 1), np.clip(a1, -1, 1))
        return np.atleast_2d(np.stack(cols, axis=-1))


@register_action_mode
class DbwCommandMode(ActionMode):
    """Raw DBW command fields (ds_dbw units) in a ``Dict`` space, for classical controllers and logs."""

    name = "dbw_command"
    components = ()
    option_defaults = {}
    # field -> space; modes are the ds_dbw constants (DiscreteSet: every sample is a valid mode)
    FIELDS: ClassVar[dict[str, spaces.Space]] = {
        "system_enable": spaces.Discrete(2),
        "steer_mode": DiscreteSet(COMMAND_MODES["steer_mode"]),
        "steer_cmd": spaces.Box(-1000.0, 1000.0, (), np.float64),
        "steer_rate_deg_s": spaces.Box(0.0, np.inf, (), np.float64),
        "steer_accel_deg_s2": spaces.Box(0.0, np.inf, (), np.float64),
        "throttle_mode": DiscreteSet(COMMAND_MODES["throttle_mode"]),
        "throttle_cmd": spaces.Box(0.0, 100.0, (), np.float64),
        "throttle_rate_inc_pct_s": spaces.Box(0.0, np.inf, (), np.float64),
        "throttle_rate_dec_pct_s": spaces.Box(0.0, np.inf, (), np.float64),
        "brake_mode": DiscreteSet(COMMAND_MODES["brake_mode"]),
        "brake_cmd": spaces.Box(0.0, 1000.0, (), np.float64),
        "brake_rate_inc": spaces.Box(0.0, np.inf, (), np.float64),
        "brake_rate_dec": spaces.Box(0.0, np.inf, (), np.float64),
        "gear_cmd": spaces.Discrete(GEAR_CMD_MAX + 1),
        "ulc_mode": DiscreteSet(COMMAND_MODES["ulc_mode"]),
        "ulc_cmd": spaces.Box(ULC_VELOCITY_RANGE_MPS[0], ULC_VELOCITY_RANGE_MPS[1], (), np.float64),
        "ulc_limit_accel_mps2": spaces.Box(0.0, np.inf, (), np.float64),
        "ulc_limit_decel_mps2": spaces.Box(0.0, np.inf, (), np.float64),
        "ulc_limit_jerk_throttle_mps3": spaces.Box(0.0, np.inf, (), np.float64),
        "ulc_limit_jerk_brake_mps3": spaces.Box(0.0, np.inf, (), np.float64),
        "ulc_coast_decel": spaces.Discrete(2),
        "drive_mode": spaces.Discrete(DRIVE_ALL_WHEEL - DRIVE_TURF + 1, start=DRIVE_TURF),
    }
    NEUTRAL: ClassVar[dict[str, Any]] = {"system_enable": 1}

    def _resolve(self, options: dict) -> dict:
        # what a left-out key sends: NEUTRAL, and the AWD switch where the vehicle's default puts it
        self.neutral = {**self.NEUTRAL, "drive_mode": int(self.params.default_drive_mode)}
        return options

    @property
    def space(self) -> spaces.Space:
        return spaces.Dict(dict(self.FIELDS))

    @property
    def flat_dim(self) -> int:
        return 0

    def to_batch(self, actions: Any, n: int) -> dict[str, np.ndarray]:
        """The fields of N vehicles' commands as (N,) arrays, checked without coercion: a discrete field
        (mode, gear, drive mode, flag) takes an integer of its space (``system_enable`` and
        ``ulc_coast_decel`` also a bool), a Box field a number (NaN refused, setpoints finite); strings,
        mappings, 2.5 for a mode or 99 for a flag raise ``ValueError`` naming the field."""
        if not isinstance(actions, Mapping):
            raise ValueError(f"action mode 'dbw_command': expected a dict of command fields "
                             f"({', '.join(self.FIELDS)}), got {type(actions).__name__}")
        check_keys("dbw_command action", actions, self.FIELDS)
        out: dict[str, np.ndarray] = {}
        for key, space in self.FIELDS.items():
            box = isinstance(space, spaces.Box)
            flag = key in self.FLAGS
            value = _as_numbers(actions.get(key, self.neutral.get(key, 0)),
                                lambda key=key, box=box: f"dbw_command action field {key!r}: expected "
                                f"{'a number' if box else 'one of ' + self.allowed(key)}", bools=flag)
            if value.ndim == 0 or (n == 1 and value.shape == (1,)):
                value = np.broadcast_to(value.reshape(()), (n,))
            if value.shape != (n,):
                raise ValueError(f"dbw_command action field {key!r}: expected shape {'()' if n == 1 else (n,)}, "
                                 f"got {value.shape}")
            if box:
                value = value.astype(np.float64)
                if np.isnan(value).any():
                    v = int(np.flatnonzero(np.isnan(value))[0])
                    raise ValueError(f"{_field(n, v, key)} is nan; DBW command fields must be numbers "
                                     "(rates and limits: 0 = firmware default, inf = unlimited)")
                if key in ("steer_cmd", "throttle_cmd", "brake_cmd", "ulc_cmd") and np.isinf(value).any():
                    v = int(np.flatnonzero(np.isinf(value))[0])
                    raise ValueError(f"{_field(n, v, key)} is {value[v]}; setpoints must be finite")
            else:
                if isinstance(space, DiscreteSet):
                    bad = ~(value.reshape(-1, 1) == space.values).any(axis=1)
                else:
                    bad = ~((value >= space.start) & (value < space.start + space.n) & (value == np.floor(value)))
                if bad.any():
                    v = int(np.flatnonzero(bad)[0])
                    raise ValueError(f"{_field(n, v, key)} is {value[v].item()!r}; allowed: {self.allowed(key)}")
                value = value.astype(np.int64)
            out[key] = value
        return out

    FLAGS: ClassVar[tuple[str, ...]] = ("system_enable", "ulc_coast_decel")

    def allowed(self, key: str) -> str:
        """The values a discrete field takes, in words (for error messages)."""
        if key in self.FLAGS:
            return "0, 1, false or true"
        if key in COMMAND_MODES:
            return ", ".join(f"{k} ({v})" for k, v in COMMAND_MODES[key].items())
        space = self.FIELDS[key]
        return f"the integers {space.start}..{space.start + space.n - 1}"

    def flat(self, batch):
        return np.zeros((len(batch["steer_mode"]), 0))

    def decode(self, batch):
        """The checked command fields (``to_batch``) of one action (a dict of scalars: scalars back) or of
        N vehicles (a dict of (N,) arrays)."""
        sizes = {np.shape(v)[0] for v in batch.values() if np.ndim(v) >= 1} if isinstance(batch, Mapping) else set()
        single = isinstance(batch, Mapping) and not sizes
        out = self.to_batch(batch, 1 if single else max(sizes, default=1))
        return {key: value[0] for key, value in out.items()} if single else out

    def encode(self, **values):
        """The action of command fields given in ds_dbw units (the fields themselves)."""
        return dict(values)

    def write(self, cmd, batch, rows, state=None):
        for key, value in batch.items():
            if key in ("system_enable", "ulc_coast_decel"):
                cmd[key][rows] = value[rows].astype(bool)
            else:
                cmd[key][rows] = value[rows]
        cmd["steer_enable"][rows] = batch["steer_mode"][rows] != STEER_NONE
        cmd["throttle_enable"][rows] = batch["throttle_mode"][rows] != PEDAL_NONE
        cmd["brake_enable"][rows] = batch["brake_mode"][rows] != PEDAL_NONE
        cmd["ulc_enable"][rows] = batch["ulc_mode"][rows] != ULC_NONE
        mark_sent(cmd, MESSAGE_SUBSYSTEMS, rows)  # every message, each control step
        check_commands(cmd[rows])


# The built-in ``_decode`` methods ``_decode_write`` computes (by the function, so a subclass that overrides it takes
# the numpy path), and the constants each takes from the mode's options.
_DECODE_KINDS = {SteerAnglePedals._decode: 0, Pedals._decode: 1, CurvatureUlcVelocity._decode: 2,
                 SteerAngleUlcAccel._decode: 3}
_DECODE_CONSTANTS = {
    0: lambda m: (m.options["steer_max_deg"], 0.0, 0.0),
    1: lambda m: (m.options["steer_hold_deg"], 0.0, 0.0),
    2: lambda m: (m.options[m.steer_axis[1]], m.options["ulc_speed_min_mps"],
                  m.options["ulc_speed_max_mps"] - m.options["ulc_speed_min_mps"]),
    3: lambda m: (m.options["steer_max_deg"], m.options["accel_max_mps2"], m.options["decel_max_mps2"]),
}


def make_action_mode(name: str, params: np.record, options: Mapping | None = None) -> ActionMode:
    """The action mode called ``name`` for a vehicle with parameters ``params``."""
    if name not in ACTION_MODES:
        raise ValueError(f"action_mode = {name!r}; known action modes: {', '.join(ACTION_MODES)}")
    return ACTION_MODES[name](params, options)
