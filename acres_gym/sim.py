"""``RangerSim``: the batched simulator core.

N vehicles share one call per advance: ``step(n_ticks)`` runs all of them for n ticks of 1/120 s inside
one jitted kernel (``acres_gym.model.tick.run_ticks``), with no Python per tick and no allocation per
tick. State, parameters and commands are numpy record arrays with a leading vehicle axis; field names
carry their units (``sim.state.engine_rpm``, ``sim.state.wheel_omega_rad_s[:, 2]``).

Example::

    sim = RangerSim(n=1)                       # flat dry asphalt, the CREW XP 1000
    sim.reset()
    sim.commands.gear_cmd = GEAR_HIGH ...      # or driver inputs: driver_throttle_pct, driver_brake_bar
    sim.step(120)                              # one second
    print(sim.speed_mps, sim.ledger(0))
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence

import numpy as np
from numba import njit

from acres_gym.constants import DT_S, PHYSICS_HZ
from acres_gym.dbw.command import COMMAND_DTYPE, make_commands
from acres_gym.dbw.reports import CAN_RESOLUTION, REPORT_RECORD_DTYPE
from acres_gym.dbw.step import reset_dbw_from_params
from acres_gym.model.chassis import BODY_KINEMATICS
from acres_gym.model.ledger import LEDGER_LOSS_FIELDS, stored_energy
from acres_gym.model.suspension import elastic_energy
from acres_gym.model.tick import observe_all, run_ticks, run_ticks_serial
from acres_gym.model.vec import euler_from_quaternion
from acres_gym.params import load_vehicle, make_params_array
from acres_gym.records import structured_view
from acres_gym.runtime import compile_notice
from acres_gym.runtime.threading_layer import KernelChoice, use_parallel
from acres_gym.schema import PARAMS_DTYPE
from acres_gym.state import STATE_DTYPE, STATE_TEMPLATE, make_scratch, make_state
from acres_gym.terrain import Terrain, TerrainStack, flat
from acres_gym.terrain.sampling import sample_height
from acres_gym.terrain.surfaces_dtype import SURFACE_RECORD_DTYPE

DEFAULT_VEHICLE = "polaris_ranger_crew_xp1000"
_KERNELS_READY = False


def _compile_kernels(sim: RangerSim) -> None:
    """Once per process, before the first reset: loads the physics kernels, compiling them if numba's cache
    does not hold them yet (the first use after installing or changing the model), which
    ``acres_gym.runtime.compile_notice`` announces on stderr with the time it took (``ACRES_GYM_QUIET=1`` silences it).
    The kernels run zero ticks on copies, so nothing of ``sim`` changes."""
    global _KERNELS_READY
    if _KERNELS_READY:
        return
    args = (structured_view(sim.params.copy()), structured_view(sim.state.copy()), structured_view(sim.work.copy()),
            structured_view(sim.commands.copy()), 0, sim.terrain_args, CAN_RESOLUTION, sim._reports.copy(),
            sim._kinematics.copy())
    run_ticks_serial(*args)
    run_ticks(*args)
    observe_all(args[0], args[1], *args[6:])
    _spawn_pose(sim.terrain.height_m[0], 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, np.empty(7))
    reset_vehicles(args[0], args[1], structured_view(STATE_TEMPLATE), np.zeros(sim.n, dtype=np.bool_), sim._pose.copy(),
                   sim._terrain_index.copy())
    compile_notice.report()
    _KERNELS_READY = True


@njit(cache=True)
def _reset_from_params(p, s, pose, terrain_index):
    """The reset's parameter pass (seed ``ResetUtv``) over a state just copied from ``STATE_TEMPLATE``: the
    fields whose rest value is ``FROM_PARAMS``. The body at ``pose`` (x, y, z, qw, qx, qy, qz), suspension
    at full droop plus the static tyre deflection static_load / k_tyre, the engine at idle, the CVT at its
    initial ratio, the fuel tank at its initial level, the DBW layer's gear, switch and pedals, and the
    ledger's stored energy at reset."""
    for k in range(3):
        s.position_m[k] = pose[k]
    for k in range(4):
        s.orientation_wxyz[k] = pose[3 + k]
    s.terrain_index = terrain_index
    for i in range(4):
        s.suspension_compression_m[i] = p.droop_m
        deflection = p.static_load_n[i] / p.tyre_vertical_stiffness_n_m
        s.tyre_deflection_m[i] = deflection
        s.normal_load_n[i] = p.static_load_n[i]
        s.rolling_radius_m[i] = p.tyre_radius_m - deflection
        s.elastic_energy_j[i] = elastic_energy(p, i, p.droop_m, deflection)
    s.engine_rpm = p.idle_rpm
    s.cvt_ratio = p.cvt_initial_ratio
    s.fuel_remaining_l = p.fuel_initial_l
    reset_dbw_from_params(p, s)
    s.e_stored0_j = stored_energy(p, s)
    s.e_stored_j = s.e_stored0_j


@njit(cache=True)
def reset_vehicles(params, state, template, mask, pose, terrain_index):
    """Resets the vehicles selected by ``mask``: a copy of ``template`` (``STATE_TEMPLATE``, every field at
    its rest value) and the parameter pass (``_reset_from_params``)."""
    for v in range(state.shape[0]):
        if mask[v]:
            state[v] = template[0]
            _reset_from_params(params[v], state[v], pose[v], terrain_index[v])


@njit(cache=True)
def _update_stored(params, state):
    for v in range(state.shape[0]):
        state[v].e_stored_j = stored_energy(params[v], state[v])


def _dot3(a, b) -> float:
    """``a . b`` of two 3-vectors, summed left to right."""
    return float(a[0] * b[0] + a[1] * b[1] + a[2] * b[2])


@njit(cache=True)
def _spawn_pose(height, origin_x, origin_y, cell, cg_forward, cg_left, cg_height, x, y, yaw, out):
    """CG position and orientation (w, x, y, z) into ``out`` (7,) that put the vehicle at its static ride height
    on the ground ``height`` at (x, y) (the rear-axle midpoint's footprint), heading ``yaw``, aligned with the
    local ground plane: body z the ground normal of the bilinear surface (``sample_height``), body x the heading
    projected onto the ground plane, body y their cross product; the CG at its body offset from the footprint.
    Every sum is written out left to right (no BLAS, whose kernels round differently on different CPUs)."""
    h, gx, gy = sample_height(height, origin_x, origin_y, cell, x, y)
    inv = 1.0 / np.sqrt(1.0 + gx * gx + gy * gy)
    n0, n1, n2 = -gx * inv, -gy * inv, inv  # the unit ground normal (Terrain.normal_at)
    h0, h1, h2 = math.cos(yaw), math.sin(yaw), 0.0
    d = h0 * n0 + h1 * n1 + h2 * n2
    f0, f1, f2 = h0 - d * n0, h1 - d * n1, h2 - d * n2
    length = math.sqrt(f0 * f0 + f1 * f1 + f2 * f2)
    f0, f1, f2 = f0 / length, f1 / length, f2 / length
    l0, l1, l2 = n1 * f2 - n2 * f1, n2 * f0 - n0 * f2, n0 * f1 - n1 * f0  # left = normal x forward
    out[0] = x + (f0 * cg_forward + l0 * cg_left + n0 * cg_height)
    out[1] = y + (f1 * cg_forward + l1 * cg_left + n1 * cg_height)
    out[2] = h + (f2 * cg_forward + l2 * cg_left + n2 * cg_height)
    # rotation matrix (columns forward, left, normal) -> quaternion (w, x, y, z)
    tr = f0 + l1 + n2
    if tr > 0:
        sq = math.sqrt(tr + 1.0) * 2
        q0, q1, q2, q3 = 0.25 * sq, (l2 - n1) / sq, (n0 - f2) / sq, (f1 - l0) / sq
    elif f0 > l1 and f0 > n2:
        sq = math.sqrt(1.0 + f0 - l1 - n2) * 2
        q0, q1, q2, q3 = (l2 - n1) / sq, 0.25 * sq, (l0 + f1) / sq, (n0 + f2) / sq
    elif l1 > n2:
        sq = math.sqrt(1.0 + l1 - f0 - n2) * 2
        q0, q1, q2, q3 = (n0 - f2) / sq, (l0 + f1) / sq, 0.25 * sq, (n1 + l2) / sq
    else:
        sq = math.sqrt(1.0 + n2 - f0 - l1) * 2
        q0, q1, q2, q3 = (f1 - l0) / sq, (n0 + f2) / sq, (n1 + l2) / sq, 0.25 * sq
    norm = math.sqrt(q0 * q0 + q1 * q1 + q2 * q2 + q3 * q3)
    out[3], out[4], out[5], out[6] = q0 / norm, q1 / norm, q2 / norm, q3 / norm


class _RecordAttribute:
    """A record-array attribute of ``RangerSim`` (``params``, ``state``, ``work``, ``commands``) that keeps its
    plain structured view beside it as ``<name>_plain`` (``acres_gym.records.structured_view``: the same memory,
    the form the kernels take). Reading the attribute is an ordinary instance-dict lookup; assigning it refreshes
    the view."""

    def __set_name__(self, owner, name: str) -> None:
        self.name = name

    def __set__(self, sim, value) -> None:
        sim.__dict__[self.name] = value
        sim.__dict__[f"{self.name}_plain"] = structured_view(value)


class RangerSim:
    """N Polaris Ranger CREW XP 1000 vehicles advanced together at 120 Hz.

    Args:
        n: number of vehicles.
        vehicle: a vehicle name under ``configs/vehicles`` or a JSON path (ignored if ``params`` given).
        params: one finalised parameter record for all vehicles, or a sequence of N, or a (N,) array.
        overrides: dotted parameter keys applied to ``vehicle`` before finalising.
        terrain: a ``Terrain`` shared by all, a sequence of terrains (one per vehicle or fewer, mapped
            with ``terrain_index``), or a ``TerrainStack``; default flat dry asphalt.
    """

    params = _RecordAttribute()
    state = _RecordAttribute()
    work = _RecordAttribute()
    commands = _RecordAttribute()
    _surfaces = _RecordAttribute()

    def __getstate__(self) -> dict:
        # the plain views are rebuilt on unpickling: pickling (or deep-copying) them would part them from
        # the arrays they view
        return {key: value for key, value in self.__dict__.items()
                if not key.endswith("_plain") and key != "kernel_choice"}

    def __setstate__(self, state: dict) -> None:
        for key, value in state.items():
            setattr(self, key, value)
        if "_reports" not in state:  # pickled by a version whose kernels did not fill them
            self._observed_arrays()
            self.observe()
        self.kernel_choice = KernelChoice()  # measured again where the copy runs

    def __init__(self, n: int = 1, vehicle: str = DEFAULT_VEHICLE, params=None, overrides=None,
                 terrain=None):
        if not isinstance(n, (int, np.integer)) or n < 1:
            raise ValueError(f"n = {n!r}: expected a positive integer number of vehicles")
        self.n = int(n)
        if params is None:
            params = load_vehicle(vehicle, overrides=overrides)
        elif overrides:
            raise ValueError("give either params or overrides, not both (apply overrides with load_vehicle)")
        self.params = make_params_array(params, self.n)
        if terrain is None:
            terrain = flat()
        if isinstance(terrain, TerrainStack):
            self.terrain = terrain
        elif isinstance(terrain, Terrain):
            self.terrain = TerrainStack.from_terrains([terrain])
        elif isinstance(terrain, Sequence):
            self.terrain = TerrainStack.from_terrains(list(terrain))
        else:
            raise TypeError(f"terrain: expected a Terrain, a sequence of Terrain or a TerrainStack, "
                            f"got {type(terrain).__name__}")
        table = self.terrain.surfaces.records
        self._surfaces = np.zeros(len(table), SURFACE_RECORD_DTYPE).view(np.recarray)
        self._surfaces[:] = table
        self.state = make_state(self.n)
        self.work = make_scratch(self.n)  # per-tick intermediates (state.SCRATCH_SPEC), not state
        self.commands = make_commands(self.n)
        self._pose = np.zeros((self.n, 7))
        self._terrain_index = np.zeros(self.n, dtype=np.int64)
        self._observed_arrays()
        self.kernel_choice = KernelChoice()
        _compile_kernels(self)
        self.reset()

    # --- lifecycle -------------------------------------------------------------------------------
    def reset(self, indices=None, x_m=0.0, y_m=0.0, yaw_rad=0.0, terrain_index=None) -> None:
        """Resets vehicles (all, or ``indices``) at rest at their static ride height, with the rear-axle
        footprint at (x_m, y_m) heading ``yaw_rad``; scalars or arrays over the selected vehicles."""
        idx = np.arange(self.n) if indices is None else np.atleast_1d(np.asarray(indices, dtype=np.int64))
        if idx.size and (idx.min() < 0 or idx.max() >= self.n):
            raise IndexError(f"indices must lie in [0, {self.n - 1}], got {idx.tolist()}")
        xs = np.broadcast_to(np.asarray(x_m, dtype=float), idx.shape)
        ys = np.broadcast_to(np.asarray(y_m, dtype=float), idx.shape)
        yaws = np.broadcast_to(np.asarray(yaw_rad, dtype=float), idx.shape)
        if terrain_index is None:
            tis = np.minimum(idx, len(self.terrain) - 1) if len(self.terrain) > 1 else np.zeros_like(idx)
        else:
            tis = np.broadcast_to(np.asarray(terrain_index, dtype=np.int64), idx.shape)
        if np.any(tis < 0) or np.any(tis >= len(self.terrain)):
            raise IndexError(f"terrain_index must lie in [0, {len(self.terrain) - 1}]")
        for k, v in enumerate(idx):
            if not (math.isfinite(xs[k]) and math.isfinite(ys[k]) and math.isfinite(yaws[k])):
                raise ValueError(f"reset pose of vehicle {v} is not finite: ({xs[k]}, {ys[k]}, {yaws[k]})")
            t, p = int(tis[k]), self.params_plain[v]
            _spawn_pose(self.terrain.height_m[t], float(self.terrain.origin_xy_m[t, 0]),
                        float(self.terrain.origin_xy_m[t, 1]), float(self.terrain.cell_m[t]), float(p["cg_forward_m"]),
                        float(p["cg_left_m"]), float(p["cg_height_m"]), float(xs[k]), float(ys[k]), float(yaws[k]),
                        self._pose[v])
            self._terrain_index[v] = tis[k]
        mask = np.zeros(self.n, dtype=np.bool_)
        mask[idx] = True
        reset_vehicles(self.params_plain, self.state_plain, structured_view(STATE_TEMPLATE), mask, self._pose,
                       self._terrain_index)
        cmd = make_commands(1)[0]
        self.commands[idx] = cmd
        # the AWD switch stays where the vehicle's default puts it until a command moves it
        self.commands.drive_mode[idx] = self.params.default_drive_mode[idx]
        self.observe()

    def step(self, n_ticks: int = 1, commands=None, serial: bool = False) -> None:
        """Advances all vehicles by ``n_ticks`` physics ticks of 1/120 s holding ``commands`` (default
        ``self.commands``); the commands' messages (``*_fresh``, ``gear_cmd``) count on the first tick.

        A batch of ``PARALLEL_MIN_VEHICLES`` or more runs on Numba's threads or on the calling thread, whichever
        advances it faster on the machine as it is now (``kernel_choice``, a ``KernelChoice``: measured per call,
        the other kernel tried every half second), unless ``serial``: then it runs on the calling thread without
        the GIL, leaving the other cores and the interpreter to other work of the process. The values are the
        same whichever kernel runs."""
        if not isinstance(n_ticks, (int, np.integer)) or n_ticks < 0:
            raise ValueError(f"n_ticks = {n_ticks!r}: expected a non-negative integer")
        if commands is None:
            commands = self.commands_plain
        elif not (isinstance(commands, np.ndarray) and commands.dtype == COMMAND_DTYPE
                  and commands.shape == (self.n,)):
            raise TypeError(f"commands: expected a ({self.n},) array of COMMAND_DTYPE (see make_commands)")
        else:
            commands = structured_view(commands)
        args = (self.params_plain, self.state_plain, self.work_plain, commands, int(n_ticks), self.terrain_args,
                CAN_RESOLUTION, self._reports, self._kinematics)
        if serial or not use_parallel(self.n):
            run_ticks_serial(*args)
            return
        choice = self.kernel_choice
        parallel = choice.pick()
        start = time.perf_counter()
        (run_ticks if parallel else run_ticks_serial)(*args)
        choice.record(parallel, time.perf_counter() - start, self.n * int(n_ticks))

    # --- what the kernels observe after a step -------------------------------------------------------
    def _observed_arrays(self) -> None:
        """The arrays the kernels fill after advancing the vehicles (``model.tick.observe_vehicle``)."""
        self._reports = np.zeros(self.n, REPORT_RECORD_DTYPE)
        self._kinematics = np.zeros((len(BODY_KINEMATICS), self.n))

    def observe(self) -> None:
        """Take ``report_table()`` and ``body_kinematics()`` from the present records again, on the calling thread:
        after writing the state or parameter records directly (a step and a reset do it themselves)."""
        observe_all(self.params_plain, self.state_plain, CAN_RESOLUTION, self._reports, self._kinematics)

    def report_table(self) -> np.ndarray:
        """The DBW reports of the state the last step or reset left, as ``acres_gym.dbw.reports.report_table``
        gives them (a new (len(REPORT_SPEC), N) float64 array, rounded to the CAN resolution), filled by the
        thread that advanced each vehicle (``observe`` after writing the records directly)."""
        return np.ascontiguousarray(self._reports.view(np.float64).reshape(self.n, -1).T)

    def body_kinematics(self) -> np.ndarray:
        """Roll, pitch, yaw, forward CG speed, yaw rate and the rear-axle midpoint's world (x, y) of every vehicle
        after the last step or reset: a new (7, N) array, rows ``acres_gym.model.chassis.BODY_KINEMATICS``."""
        return self._kinematics.copy()

    def run_seconds(self, seconds: float, commands=None) -> None:
        """Advances by ``seconds`` (rounded to whole ticks)."""
        self.step(int(round(seconds * PHYSICS_HZ)), commands)

    # --- readable views --------------------------------------------------------------------------
    @property
    def terrain_args(self) -> tuple:
        """The terrain as the kernels take it, one tuple: the stack's heights, surface ids, wetness, origins
        and cells (leading axis: terrain index) and the live surface table."""
        t = self.terrain
        return (t.height_m, t.surface_id, t.wetness, t.origin_xy_m, t.cell_m, self._surfaces_plain)

    @property
    def surface_records(self) -> np.recarray:
        """The live surface table the kernels read (rows of ``SURFACE_DTYPE``, row = surface id, in the
        order of ``self.terrain.surfaces``). Writing a row changes that surface from the next tick on,
        e.g. a soil drawn for the episode: ``sim.surface_records["soil_kphi"][sid] = ...``."""
        return self._surfaces

    @property
    def time_s(self) -> np.ndarray:
        return self.state.time_s

    @property
    def euler_rad(self) -> np.ndarray:
        """(N, 3) roll, pitch, yaw, rad."""
        return np.array([euler_from_quaternion(q) for q in self.state.orientation_wxyz])

    @property
    def body_velocity_mps(self) -> np.ndarray:
        """(N, 3) CG velocity in the body frame (forward, left, up), m/s."""
        out = np.empty((self.n, 3))
        for v in range(self.n):
            w, x, y, z = self.state.orientation_wxyz[v]
            r = np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                          [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                          [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]])
            vel = self.state.velocity_mps[v]
            out[v] = [_dot3(r[:, i], vel) for i in range(3)]  # r.T @ vel, without BLAS
        return out

    @property
    def speed_mps(self) -> np.ndarray:
        """Forward speed of the CG (body x), m/s."""
        return self.body_velocity_mps[:, 0]

    def ledger(self, v: int = 0) -> dict[str, float]:
        """The energy ledger of vehicle ``v``: energy in, each loss, the change of stored energy and the
        residual (in - losses - stored change), J."""
        _update_stored(self.params, self.state)
        s = self.state[v]
        out = {"fuel_j": float(s.e_fuel_j), "external_j": float(s.e_external_j)}
        for name in LEDGER_LOSS_FIELDS:
            out[name[2:]] = float(s[name])
        out["stored_change_j"] = float(s.e_stored_j - s.e_stored0_j)
        losses = sum(float(s[name]) for name in LEDGER_LOSS_FIELDS)
        out["residual_j"] = out["fuel_j"] + out["external_j"] - losses - out["stored_change_j"]
        return out

    def ledger_table(self, v: int = 0) -> str:
        """The ledger as a printable table (kJ and share of the energy in)."""
        book = self.ledger(v)
        total_in = max(book["fuel_j"] + book["external_j"], 1e-9)
        lines = [f"{'flow':<22}{'kJ':>12}{'share':>9}"]
        for key, value in book.items():
            lines.append(f"{key:<22}{value / 1e3:>12.3f}{100 * value / total_in:>8.2f}%")
        return "\n".join(lines)


__all__ = ["RangerSim", "DEFAULT_VEHICLE", "PARAMS_DTYPE", "STATE_DTYPE", "COMMAND_DTYPE", "DT_S"]
