"""``acres-calibrate``: fit vehicle and DBW parameters to a vehicle's log of commands and reports.

A log is a ROS 2 bag (sqlite3 or MCAP) holding both the ds_dbw_msgs commands the autonomy stack sent and
the reports the vehicle published (``acres_gym.vehicle.bags``: command and report topics under one namespace; a
``rosbag2 record`` of ``/vehicle`` is one). The commands are replayed (``acres_gym.vehicle.replay``) on many
candidate parameter sets at once: one ``RangerSim`` with N vehicles per generation, vehicle k holding
candidate k. CMA-ES (the ``cma`` package, the ``[calibrate]`` extra) minimises the error below; the
result is an overlay of the vehicle file (``load_vehicle(name, overlay=...)``, the environments'
``vehicle_overlay``) whose sources say ``fitted: <log>, residual <r>; 1-sigma <u>``.

Usage (``acres-calibrate --help`` lists these commands)::

    acres-calibrate drive.mcap --params dbw.steering.delay_s dbw.steering.tau_s dbw.brake.delay_s \\
        --out fitted.json
    acres-calibrate drive.mcap --validate fitted.json          # replay error per field, before / after
    acres-calibrate --example example_drive --params dbw.steering.delay_s --out fitted.json
    acres-calibrate --list-examples                            # the example logs shipped with the package
    acres-calibrate identifiability                            # the recovery study (below)

The error. The simulated reports are sampled every 1 / ``--out-hz`` s (default 20 Hz) from the start of
the bag; the recorded value of a field at a sample time is its latest message at or before it (a
subscriber's view), if that message is at most ``STALE_S`` = 0.1 s old and not NaN. For each fitted
field f (``FIT_FIELDS``: steering wheel angle, throttle and brake outputs, ULC references, the
VehicleVelocity speed; only those the log holds)::

    mse_f = mean over valid samples of ((simulated - recorded) / scale_f)^2
    E     = sum_f w_f mse_f / sum_f w_f          (weights w_f: 1, or --weight FIELD=W)
    residual = sqrt(E)                             (a root-mean-square error in units of scale_f)

A simulated NaN where a value was recorded (the subsystem not engaged in the model while it was on the
vehicle) counts as an error of ``MISSING_SCALES`` = 3 scales. The simulated reports are the model's
exact values; the recorded ones carry the vehicle's noise and CAN resolution.

The search. Parameter i is searched as x_i = (theta_i - start_i) / s_i with s_i = |start_i| (or 10 % of
its range when the start is 0), from x = 0 with ``--sigma`` (default 0.3: 30 % of the start value),
within the schema's range (``acres_gym.schema``: every float key with a range is calibratable; integer and
boolean keys are not); ``--popsize`` candidates per generation (default 16, 2 to ``MAX_POPSIZE`` = 512), at
most ``--generations`` generations (default 80, 1 to ``MAX_GENERATIONS``) or until CMA-ES's own stopping
tests fire; ``--sigma`` in (0, ``MAX_SIGMA`` = 10]. CMA-ES ends near the minimum, its last samples spread
over its step size; Gauss-Newton steps (``refine``) then take the fit to the least-squares minimum itself,
which the uncertainty below describes.

Uncertainty. A profile of the error (``uncertainty``), calibrated by a covariance that allows for
residuals correlated in time:

1. the sandwich covariance C = H^-1 S H^-1 of the least-squares minimum from the Jacobian J_f of each
   field's residuals (central differences, 2 P + 1 vehicles in one batched replay): H = sum_f c_f J_f^T J_f
   and S the covariance of the score with each field's residual autocovariance over its correlation window
   (Sokal's automatic window; Bartlett weights as in Newey and West 1987), ``linearised_covariance``;
2. E scanned along each parameter, alone and with the others following it as H says (one batched replay
   of every scan point), since E is not quadratic everywhere: a delay's effect moves in whole ticks, and E
   has flat stretches and steps there;
3. the 1-sigma of parameter i is the mean distance, on either side, to where E has risen by
   C[i, i] / H^-1[i, i] (the rise at which a quadratic E gives exactly C[i, i]).

Residuals taken as independent samples make the 1-sigma values too small (they were about 1.5 times too
small with lag-1 correlation alone); the test suite checks that over synthetic logs with known truth and
noise the fitted value lies within 1 sigma of the truth at about the nominal 68 %. The uncertainty still
assumes the model's structure is right (only parameters are off): a model that cannot reproduce the log
leaves systematic residuals that no parameter uncertainty describes.

Identifiability study (``python -m acres_gym.vehicle.calibrate identifiability``): a designed 42 s drive
(``excitation_commands``: steering steps of 20-300 deg, throttle steps, brake steps, a coast-down) is
replayed on the model with hidden parameters (``STUDY_PERTURBATION``: eight keys moved 20-40 %), the
reports get sensor noise (``STUDY_NOISE``) and are rounded to their CAN resolution, and the calibration
starts from the shipped values. It prints the hidden, fitted and 1-sigma values and the wall time.

Bad input stops with exit status 2 and one line naming it, before any fitting: a log without report
topics or that cannot be read (``acres_gym.vehicle.bags``: a corrupt or inconsistent bag, more than
``--max-messages`` messages), a key that is not calibratable, an unknown ``--weight`` field, an option out
of its range (``--popsize``, ``--generations``, ``--sigma``, ``--seed``, ``--out-hz``), a ``--validate``
overlay that is not a readable JSON file of vehicle keys (a directory, nesting deeper than
``MAX_OVERLAY_DEPTH``), an ``--out`` that cannot be written (tried before the fit, written atomically after).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import sys
import time
from collections.abc import Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from acres_gym.constants import PHYSICS_HZ
from acres_gym.dbw.reports import REPORT_FIELDS, REPORT_RESOLUTION, REPORT_ROW, report_table
from acres_gym.params import finalize_parameters, load_vehicle, make_params_array, read_overlay, set_parameter
from acres_gym.schema import SCHEMA_BY_KEY
from acres_gym.vehicle.bags import (
    DEFAULT_MAX_MESSAGES,
    DEFAULT_NAMESPACE,
    REPORT_TOPICS,
    read_bag_commands,
    read_bag_reports,
    topic_name,
)
from acres_gym.vehicle.replay import (
    MAX_DURATION_S,
    Message,
    ReplayInputError,
    check_duration,
    replay,
    ticks_per_row,
)

# Fitted report fields and their error scales (in the field's unit): the size of an error that counts 1.
FIT_FIELDS: dict[str, tuple[float, str]] = {
    "steering.steering_wheel_angle": (1.0, "deg"),
    "throttle.percent_output": (1.0, "%"),
    "brake.pressure_output": (1.0, "bar"),
    "brake.percent_output": (1.0, "%"),
    "ulc.vel_ref": (0.1, "m/s"),
    "ulc.accel_ref": (0.1, "m/s^2"),
    "vehicle_velocity.vehicle_velocity_brake": (0.05, "m/s"),
}
STALE_S = 0.1
MISSING_SCALES = 3.0
DEFAULT_OUT_HZ = 20.0


MAX_POPSIZE = 512
"""Largest ``--popsize``: each candidate is a vehicle of one batched replay per generation (CMA-ES's own
choice for 50 parameters is 15)."""
MAX_GENERATIONS = 10_000
"""Largest ``--generations``."""
MAX_SIGMA = 10.0
"""Largest ``--sigma`` (relative to the start values; the schema's ranges bound the search anyway)."""
MAX_OVERLAY_DEPTH = 8
"""Deepest nesting of an overlay file (``--validate``): the schema's keys are three levels deep, their
leaves one more."""


class CalibrationError(ReplayInputError):
    """A log, key or option calibration cannot use; the message (one line) names it."""

    with_usage = False


# --------------------------------------------------------------------------- parameters


def calibratable_keys() -> list[str]:
    """Every schema key calibration can fit: float values with a finite range."""
    return [key for key, p in SCHEMA_BY_KEY.items() if p.kind == "f" and math.isfinite(p.lo) and math.isfinite(p.hi)]


def check_keys(keys: Sequence[str], option: str = "--params") -> list[str]:
    """``keys`` if every one is calibratable, else ``CalibrationError`` naming the first that is not."""
    if not keys:
        raise CalibrationError(f"{option}: give at least one parameter key, e.g. dbw.steering.delay_s")
    allowed = set(calibratable_keys())
    for key in keys:
        if key not in allowed:
            if key in SCHEMA_BY_KEY:
                kind = {"i": "an integer", "b": "a boolean"}.get(SCHEMA_BY_KEY[key].kind, "without a finite range")
                why = f"{kind} parameter"
            else:
                import difflib

                close = difflib.get_close_matches(key, allowed, n=3, cutoff=0.6)
                why = "not a vehicle parameter key" + (f" (did you mean {', '.join(close)}?)" if close else "")
            raise CalibrationError(f"{option} {key}: not calibratable: {why}; calibratable keys are the float "
                                   "keys of acres_gym.schema, e.g. dbw.steering.delay_s, tyre.rolling_resistance")
    if len(set(keys)) != len(keys):
        raise CalibrationError(f"{option}: a key repeats: {', '.join(keys)}")
    return list(keys)


def candidates(base: np.record, keys: Sequence[str], values: np.ndarray) -> np.recarray:
    """N finalised parameter records: ``base`` with ``keys`` set to ``values[k]`` (shape (N, P))."""
    values = np.atleast_2d(values)
    batch = make_params_array(base, values.shape[0])
    for k in range(values.shape[0]):
        record = batch[k]
        for key, value in zip(keys, values[k], strict=True):
            set_parameter(record, key, float(value))
        finalize_parameters(record)
    return batch


def values_of(params: np.record, keys: Sequence[str]) -> np.ndarray:
    """The values of ``keys`` in one parameter record."""
    return np.array([float(params[SCHEMA_BY_KEY[k].field]) for k in keys])


# --------------------------------------------------------------------------- the log


@dataclass
class CalibrationLog:
    """A log's commands and its recorded reports on the sample grid."""

    path: str
    messages: list[Message]
    duration_s: float
    out_hz: float
    fields: list[str]  # fitted fields the log holds
    measured: np.ndarray  # (F, T) recorded values at the sample times
    valid: np.ndarray  # (F, T) bool

    @property
    def times(self) -> np.ndarray:
        return np.arange(self.measured.shape[1]) / self.out_hz


def load_log(path: str | Path, namespace: str = DEFAULT_NAMESPACE, out_hz: float = DEFAULT_OUT_HZ,
             max_duration_s: float = MAX_DURATION_S, max_messages: int = DEFAULT_MAX_MESSAGES) -> CalibrationLog:
    """Read a calibration log (a bag with command and report topics) and sample its reports.

    Raises:
        CalibrationError / ReplayInputError: no command topics, no report topics, or none of the fitted
            fields; the message names the log.
    """
    every = ticks_per_row(out_hz)
    commands = read_bag_commands(path, namespace, max_messages)
    reports = read_bag_reports(path, namespace, max_messages)
    present = [f for f in FIT_FIELDS if f in reports]
    if not present:
        expected = ", ".join(topic_name(namespace, rel) for rel, _ in REPORT_TOPICS.values())
        raise CalibrationError(f"{path}: no report topics under namespace {namespace!r} (expected any of "
                               f"{expected}): nothing to fit the commands' effects to")
    end_s = max([commands.messages[-1].time_s if commands.messages else 0.0]
                + [float(reports[f][0][-1]) for f in present])
    duration_s = check_duration(math.floor(end_s * out_hz) / out_hz or 1.0 / out_hz, max_duration_s,
                                "log duration")
    n = int(round(duration_s * PHYSICS_HZ)) // every + 1
    grid = np.arange(n) / out_hz
    fields, measured, valid = [], [], []
    for name in present:
        t, v = reports[name]
        idx = np.searchsorted(t, grid + 1e-6, side="right") - 1
        ok = idx >= 0
        safe = np.clip(idx, 0, len(t) - 1)
        values = v[safe]
        ok &= (grid - t[safe] <= STALE_S + 1e-9) & np.isfinite(values)
        if ok.any():
            fields.append(name)
            measured.append(np.where(ok, values, np.nan))
            valid.append(ok)
    if not fields:
        raise CalibrationError(f"{path}: the report topics hold no valid value of any fitted field "
                               f"({', '.join(FIT_FIELDS)})")
    return CalibrationLog(str(path), commands.messages, duration_s, float(out_hz), fields, np.array(measured),
                          np.array(valid))


# --------------------------------------------------------------------------- simulating and scoring


def simulate(log: CalibrationLog, params: np.recarray, terrain=None) -> np.ndarray:
    """The fitted fields of every vehicle at the sample times: shape (F, T, N), model-exact values."""
    from acres_gym.sim import RangerSim

    sim = RangerSim(len(params), params=params, terrain=terrain)
    rows = [REPORT_ROW[f] for f in log.fields]
    out: list[np.ndarray] = []
    with _one_thread():
        replay(log.messages, sim, log.duration_s, log.out_hz,
               observe=lambda s: report_table(s.params, s.state, exact=True)[rows], write=out.append,
               max_duration_s=max(log.duration_s, MAX_DURATION_S))
    return np.stack(out, axis=1)


@contextmanager
def _one_thread():
    """numba on one thread for the enclosed calls: a replay advances its vehicles a few ticks per call (from
    one message to the next), where starting the thread pool costs more than it gains, by far on a busy
    machine."""
    import numba

    threads = numba.get_num_threads()
    numba.set_num_threads(1)
    try:
        yield
    finally:
        numba.set_num_threads(threads)


def scaled_errors(log: CalibrationLog, simulated: np.ndarray) -> np.ndarray:
    """(simulated - recorded) / scale per field, sample and vehicle (F, T, N); 0 where nothing was
    recorded, ``MISSING_SCALES`` where the model has no value but the vehicle had one."""
    scales = np.array([FIT_FIELDS[f][0] for f in log.fields])[:, None, None]
    err = (simulated - log.measured[:, :, None]) / scales
    err = np.where(np.isnan(simulated), MISSING_SCALES, err)
    return np.where(log.valid[:, :, None], err, 0.0)


def field_mse(log: CalibrationLog, simulated: np.ndarray) -> np.ndarray:
    """Mean squared scaled error per field and vehicle (F, N)."""
    err = scaled_errors(log, simulated)
    return (err ** 2).sum(axis=1) / log.valid.sum(axis=1)[:, None]


def weighted_error(log: CalibrationLog, simulated: np.ndarray, weights: Mapping[str, float]) -> np.ndarray:
    """E per vehicle (N,): the weighted mean of the fields' mean squared scaled errors."""
    w = np.array([weights.get(f, 1.0) for f in log.fields])
    return (w[:, None] * field_mse(log, simulated)).sum(axis=0) / w.sum()


def field_rms(log: CalibrationLog, simulated: np.ndarray) -> np.ndarray:
    """Root-mean-square error per field and vehicle in the field's own unit (F, N); simulated NaNs at
    recorded samples are left out here (``missing_share`` counts them)."""
    diff = simulated - log.measured[:, :, None]
    ok = log.valid[:, :, None] & np.isfinite(simulated)
    sq = np.where(ok, diff, 0.0) ** 2
    return np.sqrt(sq.sum(axis=1) / np.maximum(ok.sum(axis=1), 1))


# --------------------------------------------------------------------------- fitting


@dataclass
class Fit:
    """The result of ``calibrate``."""

    keys: list[str]
    start: np.ndarray
    fitted: np.ndarray
    sigma: np.ndarray  # 1-sigma uncertainty, parameter units (nan if the curvature is singular)
    error_before: float  # E at the start
    error_after: float  # E at the fit
    generations: int
    evaluations: int
    wall_s: float

    @property
    def residual_before(self) -> float:
        return math.sqrt(self.error_before)

    @property
    def residual_after(self) -> float:
        return math.sqrt(self.error_after)


def _scales(start: np.ndarray, keys: Sequence[str]) -> np.ndarray:
    out = []
    for value, key in zip(start, keys, strict=True):
        p = SCHEMA_BY_KEY[key]
        out.append(abs(value) if value != 0.0 else 0.1 * (p.hi - p.lo))
    return np.array(out)


def calibrate(log: CalibrationLog, base: np.record, keys: Sequence[str], *, terrain=None,
              weights: Mapping[str, float] | None = None, popsize: int = 16, generations: int = 80,
              sigma0: float = 0.3, seed: int = 0, progress=None) -> Fit:
    """Fit ``keys`` of ``base`` to ``log`` with CMA-ES (see the module docstring); ``progress(gen, best)``
    is called after every generation when given."""
    import cma

    keys = check_keys(keys)
    popsize, generations, sigma0, seed = check_search(popsize, generations, sigma0, seed)
    weights = dict(weights or {})
    t0 = time.perf_counter()
    start = values_of(base, keys)
    scale = _scales(start, keys)
    lo = np.array([SCHEMA_BY_KEY[k].lo for k in keys])
    hi = np.array([SCHEMA_BY_KEY[k].hi for k in keys])

    def cost(theta: np.ndarray) -> np.ndarray:
        return weighted_error(log, simulate(log, candidates(base, keys, theta), terrain), weights)

    error_before = float(cost(start[None, :])[0])
    es = cma.CMAEvolutionStrategy(np.zeros(len(keys)), sigma0, {
        "bounds": [list((lo - start) / scale), list((hi - start) / scale)], "popsize": int(popsize),
        "seed": int(seed) + 1, "verbose": -9, "maxiter": int(generations), "tolfun": 1e-9, "tolx": 1e-5})
    evaluations = 0
    best_x, best_f = np.zeros(len(keys)), error_before
    while not es.stop():
        xs = es.ask()
        theta = np.clip(start + scale * np.array(xs), lo, hi)
        f = cost(theta)
        evaluations += len(xs)
        es.tell(xs, f.tolist())
        k = int(np.argmin(f))
        if f[k] < best_f:
            best_f, best_x = float(f[k]), (theta[k] - start) / scale
        if progress is not None:
            progress(es.countiter, best_f)
    fitted, best_f, replays = refine(log, base, keys, np.clip(start + scale * best_x, lo, hi), terrain=terrain,
                                     weights=weights)
    evaluations += replays
    sigma = uncertainty(log, base, keys, fitted, terrain=terrain, weights=weights)
    return Fit(list(keys), start, fitted, sigma, error_before, best_f, es.countiter, evaluations,
               time.perf_counter() - t0)


def _field_weights(log: CalibrationLog, weights: Mapping[str, float] | None) -> np.ndarray:
    """c_f = w_f / (sum_g w_g * n_f): E = sum_f c_f sum_t e_ft^2 (n_f: the field's valid samples)."""
    w = np.array([(weights or {}).get(f, 1.0) for f in log.fields])
    return w / (w.sum() * log.valid.sum(axis=1))


def _jacobian(log: CalibrationLog, base: np.record, keys: Sequence[str], theta: np.ndarray, terrain,
              rel_step: float) -> tuple[np.ndarray, np.ndarray]:
    """Scaled errors at ``theta`` (F, T) and their central-difference Jacobian (F, T, P) from one batched
    replay of 2 P + 1 vehicles (a step of ``rel_step`` parameter scales each way, kept within the range)."""
    p = len(keys)
    lo = np.array([SCHEMA_BY_KEY[k].lo for k in keys])
    hi = np.array([SCHEMA_BY_KEY[k].hi for k in keys])
    h = rel_step * _scales(theta, keys)
    points = [theta]
    for i in range(p):
        for sign in (1.0, -1.0):
            q = theta.copy()
            q[i] = np.clip(q[i] + sign * h[i], lo[i], hi[i])
            points.append(q)
    pts = np.array(points)
    err = scaled_errors(log, simulate(log, candidates(base, keys, pts), terrain))  # (F, T, 2P + 1)
    jac = np.zeros(err.shape[:2] + (p,))
    for i in range(p):
        step = pts[1 + 2 * i, i] - pts[2 + 2 * i, i]
        if step > 0:
            jac[:, :, i] = (err[:, :, 1 + 2 * i] - err[:, :, 2 + 2 * i]) / step
    return err[:, :, 0], jac


def refine(log: CalibrationLog, base: np.record, keys: Sequence[str], theta: np.ndarray, *, terrain=None,
           weights: Mapping[str, float] | None = None, iterations: int = 8,
           rel_step: float = 0.02) -> tuple[np.ndarray, float, int]:
    """Gauss-Newton steps from ``theta`` (the CMA-ES result) to the least-squares minimum of E:
    delta = -(sum_f c_f J_f^T J_f)^-1 sum_f c_f J_f^T e_f, tried at full, half and quarter length in one
    batched replay and kept when E falls. CMA-ES stops near the minimum but not at it (its last samples
    scatter over a width set by its step size); the covariance of ``uncertainty`` describes the spread of
    the minimum itself, so the fit must reach it. Returns (theta, E, replays run)."""
    lo = np.array([SCHEMA_BY_KEY[k].lo for k in keys])
    hi = np.array([SCHEMA_BY_KEY[k].hi for k in keys])
    c = _field_weights(log, weights)
    replays = 0
    best = float(weighted_error(log, simulate(log, candidates(base, keys, theta[None, :]), terrain),
                                dict(weights or {}))[0])
    replays += 1
    for _ in range(iterations):
        e0, jac = _jacobian(log, base, keys, theta, terrain, rel_step)
        replays += 1
        hess = np.einsum("f,ftp,ftq->pq", c, jac, jac)
        grad = np.einsum("f,ftp,ft->p", c, jac, e0)
        try:
            delta = -np.linalg.lstsq(hess, grad, rcond=1e-12)[0]
        except np.linalg.LinAlgError:
            break
        tries = np.clip(theta + np.outer([1.0, 0.5, 0.25], delta), lo, hi)
        f = weighted_error(log, simulate(log, candidates(base, keys, tries), terrain), dict(weights or {}))
        replays += 1
        k = int(np.argmin(f))
        if not f[k] < best * (1.0 - 1e-9):
            break
        theta, best = tries[k], float(f[k])
    return theta, best, replays


def correlation_window(residuals: np.ndarray, c: float = 5.0) -> int:
    """Sokal's automatic window for the integrated autocorrelation time of a series: the smallest lag M
    with M >= c * tau(M), tau(M) = 1 + 2 sum_{k=1..M} rho_k (A. D. Sokal, "Monte Carlo methods in
    statistical mechanics: foundations and new algorithms", 1997, section 3). At least 1, at most a
    quarter of the series."""
    x = residuals - residuals.mean()
    n = len(x)
    if n < 8 or not np.any(x):
        return 1
    spectrum = np.fft.rfft(x, 2 * n)
    acov = np.fft.irfft(spectrum * np.conj(spectrum))[:n]
    rho = acov / acov[0]
    tau = 1.0 + 2.0 * np.cumsum(rho[1:])
    for m in range(1, n // 4):
        if m >= c * tau[m - 1]:
            return m
    return max(1, n // 4)


PROFILE_STEPS = (0.5, 1.0, 1.5, 2.0, 3.0, 5.0, 8.0, 15.0, 30.0, 60.0)
"""Offsets of the profile scan (``uncertainty``): multiples of the linearised 1-sigma, merged with
``PROFILE_FRACTIONS`` of the parameter's scale (the linearised value can be far off where E is not smooth)."""
PROFILE_FRACTIONS = (0.005, 0.01, 0.02, 0.04, 0.08, 0.16, 0.32)


def linearised_covariance(e0: np.ndarray, jac: np.ndarray, log: CalibrationLog,
                          weights: Mapping[str, float] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(C, H^-1): the sandwich covariance C = H^-1 S H^-1 of the minimum of E = sum_f c_f sum_t e_ft^2
    (a weighted least-squares M-estimate) with H = sum_f c_f J_f^T J_f and S the covariance of its score
    sum_f c_f J_f^T e_f for residuals correlated in time:

        S = sum_f c_f^2 sum_{|k| <= L_f} (1 - |k| / (L_f + 1)) gamma_f(k) sum_t J_f[t]^T J_f[t + k]

    gamma_f(k) is the autocovariance of field f's residuals at lag k (over all its samples), L_f its
    correlation window (``correlation_window``), the Bartlett weights keep S positive semi-definite (W. K.
    Newey and K. D. West, "A simple, positive semi-definite, heteroskedasticity and autocorrelation
    consistent covariance matrix", Econometrica 55, 1987); fields are taken as independent of each other,
    and S is scaled by n / (n - P). With white residuals of variance s_f^2 and c_f = 1 / s_f^2 it is the
    Gauss-Newton covariance; a correlation length tau_f scales a slowly varying J_f's share by about
    tau_f (an effective sample size n_f / tau_f). The residual variance is pooled over a field's samples,
    not taken sample by sample (White's form): the Jacobian of a delay or a rate lives on a few samples
    at the steps, whose own residuals are too few to estimate a variance from."""
    p = jac.shape[2]
    c = _field_weights(log, weights)
    hess = np.einsum("f,ftp,ftq->pq", c, jac, jac)
    score = np.zeros((p, p))
    for f in range(len(log.fields)):
        ok = log.valid[f]
        e = np.where(ok, e0[f] - e0[f, ok].mean(), 0.0)
        lags = correlation_window(e0[f, ok])
        jf = jac[f] * ok[:, None]
        score += c[f] ** 2 * float(e @ e) / ok.sum() * (jf.T @ jf)
        for k in range(1, lags + 1):
            gamma = float(e[:-k] @ e[k:]) / ok.sum()
            cross = jf[:-k].T @ jf[k:]
            score += c[f] ** 2 * (1.0 - k / (lags + 1.0)) * gamma * (cross + cross.T)
    n = int(log.valid.sum())
    score *= n / max(n - p, 1)
    h_inv = np.linalg.pinv(hess)
    return h_inv @ score @ h_inv, h_inv


def uncertainty(log: CalibrationLog, base: np.record, keys: Sequence[str], theta: np.ndarray, *, terrain=None,
                weights: Mapping[str, float] | None = None, rel_step: float = 0.02) -> np.ndarray:
    """1-sigma uncertainty of the fitted ``theta``: a profile of the error E (module docstring).

    1. The linearised sandwich covariance C = H^-1 S H^-1 (``linearised_covariance``) from one batched
       replay of the Jacobian. It alone is too small where E is not quadratic in a parameter (a delay
       whose effect moves in whole ticks gives E flat stretches and steps).
    2. For each parameter i, E along the line theta + t H^-1[:, i] / H^-1[i, i] (parameter i moved by t,
       the others following as they would at the minimum under the quadratic model), scanned outwards on
       both sides in one batched replay of all parameters' lines.
    3. The 1-sigma of parameter i is the mean of the two offsets where E has risen by
       dE_i = C[i, i] / H^-1[i, i] (the rise that gives C[i, i] exactly when E is quadratic). On a side
       where E never rises that far within the parameter's range, that side's offset is its bound; a
       side within a quarter of the linearised 1-sigma of the first scan point is that point.
    """
    p = len(keys)
    lo = np.array([SCHEMA_BY_KEY[k].lo for k in keys])
    hi = np.array([SCHEMA_BY_KEY[k].hi for k in keys])
    e0, jac = _jacobian(log, base, keys, theta, terrain, rel_step)
    cov, h_inv = linearised_covariance(e0, jac, log, weights)
    linear = np.sqrt(np.clip(np.diag(cov), 0.0, None))
    scale = _scales(theta, keys)
    weights = dict(weights or {})
    points, where = [], []
    for i in range(p):
        axis = np.eye(p)[i]
        directions = [axis]
        if h_inv[i, i] > 0 and p > 1:
            directions.append(h_inv[:, i] / h_inv[i, i])
        offsets = sorted({*(linear[i] * np.array(PROFILE_STEPS)), *(scale[i] * np.array(PROFILE_FRACTIONS))} - {0.0})
        for direction in directions:
            for sign in (1.0, -1.0):
                for t in offsets:
                    q = theta + sign * t * direction
                    if not (lo[i] <= q[i] <= hi[i]):
                        break
                    points.append(np.clip(q, lo, hi))
                    where.append((i, sign, t))
    e_theta = float(((e0 ** 2).sum(axis=1) * _field_weights(log, weights)).sum())
    rises = weighted_error(log, simulate(log, candidates(base, keys, np.array(points)), terrain), weights) - e_theta
    sigma = np.full(p, np.nan)
    for i in range(p):
        threshold = cov[i, i] / h_inv[i, i] if h_inv[i, i] > 0 else np.nan
        if not (np.isfinite(threshold) and threshold > 0):
            continue
        sides = []
        for sign in (1.0, -1.0):
            lowest: dict[float, float] = {}  # offset -> the lower rise of the two lines
            for (j, sg, t), r in zip(where, rises, strict=True):
                if j == i and sg == sign:
                    lowest[t] = min(r, lowest.get(t, math.inf))
            scan = sorted(lowest.items())
            bound = (hi[i] - theta[i]) if sign > 0 else (theta[i] - lo[i])
            # the farthest point still within the threshold (E can dip again past a first rise) and the
            # crossing after it, interpolated; the bound if no scan point beyond it rises that far
            below = [k for k, (_t, r) in enumerate(scan) if r < threshold]
            last = below[-1] if below else -1
            inside_t, inside_r = scan[last] if last >= 0 else (0.0, 0.0)
            if last + 1 < len(scan):
                t, r = scan[last + 1]
                inside_r = max(inside_r, 0.0)
                offset = inside_t + (t - inside_t) * (threshold - inside_r) / max(r - inside_r, 1e-300)
            else:
                offset = bound
            sides.append(offset)
        sigma[i] = 0.5 * (sides[0] + sides[1])
    return sigma


# --------------------------------------------------------------------------- overlay and tables


def overlay_dict(fit: Fit, log_name: str) -> dict:
    """The fit as a vehicle-file overlay: nested keys, ``{value, unit, source}`` leaves."""
    doc: dict = {"_about": f"acres-calibrate: {len(fit.keys)} parameters fitted to {log_name}; weighted RMS "
                           f"error {fit.residual_before:.4g} -> {fit.residual_after:.4g} (units of the field "
                           "scales, acres_gym.vehicle.calibrate.FIT_FIELDS)"}
    for key, value, sigma in zip(fit.keys, fit.fitted, fit.sigma, strict=True):
        unit = SCHEMA_BY_KEY[key].unit
        node = doc
        *parents, leaf = key.split(".")
        for part in parents:
            node = node.setdefault(part, {})
        node[leaf] = {"value": float(f"{value:.6g}"), "unit": unit,
                      "source": f"fitted: {log_name}, residual {fit.residual_after:.4g}; 1-sigma "
                                f"{sigma:.3g} {unit}; start {fit.start[fit.keys.index(key)]:.6g}"}
    return doc


def parameter_rows(fit: Fit) -> str:
    """The per-parameter table: start, fitted, 1-sigma, change."""
    lines = [f"{'parameter':34} {'unit':8} {'start':>11} {'fitted':>11} {'1-sigma':>10} {'change':>8}"]
    for key, a, b, s in zip(fit.keys, fit.start, fit.fitted, fit.sigma, strict=True):
        change = f"{100 * (b - a) / a:+.1f} %" if a != 0 else "-"
        lines.append(f"{key:34} {SCHEMA_BY_KEY[key].unit:8} {a:11.5g} {b:11.5g} {s:10.3g} {change:>8}")
    lines.append(f"weighted RMS error (field scales): before {fit.residual_before:.4g}, after {fit.residual_after:.4g}"
                 f" ({fit.generations} generations, {fit.evaluations} replays, {fit.wall_s:.1f} s)")
    return "\n".join(lines)


def validation_rows(log: CalibrationLog, before: np.ndarray, after: np.ndarray) -> str:
    """Replay error per report field (RMS in the field's unit), before and after calibration;
    ``before`` / ``after`` are ``simulate`` results of one vehicle each."""
    rms_b, rms_a = field_rms(log, before)[:, 0], field_rms(log, after)[:, 0]
    lines = [f"{'report field':42} {'unit':6} {'samples':>7} {'RMS before':>11} {'RMS after':>10}"]
    for k, name in enumerate(log.fields):
        lines.append(f"{name:42} {FIT_FIELDS[name][1]:6} {int(log.valid[k].sum()):7d} {rms_b[k]:11.4g} "
                     f"{rms_a[k]:10.4g}")
    return "\n".join(lines)


# --------------------------------------------------------------------------- identifiability study

STUDY_PERTURBATION: dict[str, float] = {  # hidden relative changes of the study's log
    "dbw.steering.delay_s": +0.30,
    "dbw.steering.tau_s": -0.25,
    "dbw.steering.slew_deg_s": -0.40,
    "dbw.throttle.delay_s": +0.35,
    "dbw.brake.delay_s": -0.30,
    "dbw.brake.slew_bar_s": +0.25,
    "tyre.rolling_resistance": +0.20,
    "aero.drag_area_m2": -0.35,
}
# sensor noise (standard deviation, report units) added before the CAN rounding
STUDY_NOISE: dict[str, float] = {
    "steering.steering_wheel_angle": 0.1,
    "throttle.percent_output": 0.05,
    "brake.pressure_output": 0.2,
    "vehicle_velocity.vehicle_velocity_brake": 0.02,
    "vehicle_velocity.vehicle_velocity_propulsion": 0.02,
    "ulc.vel_meas": 0.02,
    **{f"wheel_speeds.{w}": 0.05 for w in ("front_left", "front_right", "rear_left", "rear_right")},
}


def excitation_commands(duration_s: float = 42.0, hz: float = 20.0) -> list[Message]:
    """A drive that excites the DBW actuators and the longitudinal resistances, as timed messages: enable
    and shift to H; steering-angle steps of 20-300 deg (unlimited rate, so the actuator's own delay, lag
    and slew show) over the first 13 s; throttle and brake pressure steps; 60 % throttle to about 12 m/s
    and a 10 s coast-down; brake steps to 40 bar; throttle and brake alternating to the end."""
    steer_targets = [0.0, 60.0, -60.0, 300.0, -300.0, 20.0, -20.0, 150.0, 0.0]
    # (start s, throttle %, brake bar)
    pedals = [(0.0, 0, 0), (2.0, 30, 0), (4.0, 0, 0), (5.0, 0, 15), (6.5, 0, 0), (7.0, 25, 0), (9.0, 0, 30),
              (10.0, 0, 0), (13.0, 60, 0), (23.0, 0, 0), (33.0, 0, 40), (34.5, 0, 0), (35.5, 45, 0),
              (38.0, 0, 20), (39.0, 0, 0), (40.0, 35, 0)]
    messages = []
    n = int(round(duration_s * hz))
    for k in range(n):
        t = k / hz
        cells: dict[str, float] = {}
        if k == 0:
            cells.update({"enable": 1.0, "gear_cmd": 4.0})
        target = steer_targets[min(int(t // 1.5), len(steer_targets) - 1)] if t < 13.5 else 0.0
        cells.update({"steer_mode": 2.0, "steer_cmd": target, "steer_rate": math.inf, "steer_accel": math.inf,
                      "steer_enable": 1.0})
        throttle, brake = next((p[1], p[2]) for p in reversed(pedals) if p[0] <= t + 1e-9)
        cells.update({"throttle_mode": 14.0, "throttle_cmd": float(throttle), "throttle_enable": 1.0,
                      "brake_mode": 1.0, "brake_cmd": float(brake), "brake_enable": 1.0})
        messages.append(Message(k + 1, t, cells))
    return messages


def write_synthetic_log(path: str | Path, messages: Sequence[Message], params: np.record, *, terrain=None,
                        noise: Mapping[str, float] | None = None, seed: int = 0, out_hz: float = 40.0,
                        storage: str = "sqlite3", duration_s: float | None = None) -> None:
    """A calibration log made by the model: ``messages`` replayed with ``params``, every report at
    ``out_hz`` with Gaussian ``noise`` (standard deviation per ``"message.field"``) added and then rounded
    to the field's CAN resolution, written with the commands into a bag at ``path``."""
    from acres_gym.sim import RangerSim
    from acres_gym.vehicle.bags import ReportBagWriter, write_command_bag

    rng = np.random.default_rng(seed)
    sigma = np.zeros(len(REPORT_FIELDS))
    resolution = np.zeros(len(REPORT_FIELDS))
    for name, s in (noise or {}).items():
        sigma[REPORT_ROW[name]] = s
    for (message, fld), q in REPORT_RESOLUTION.items():
        resolution[REPORT_ROW[f"{message}.{fld}"]] = q
    writer = ReportBagWriter(path, storage)
    write_command_bag(path, messages, writer=writer)
    sim = RangerSim(1, params=params, terrain=terrain)

    def observe(s):
        column = report_table(s.params, s.state, exact=True)[:, 0] + sigma * rng.standard_normal(len(sigma))
        rounded = np.where(resolution > 0, np.rint(column / np.where(resolution > 0, resolution, 1)) * resolution,
                           column)
        return float(s.state.time_s[0]), rounded

    replay(messages, sim, duration_s, out_hz, observe=observe, write=lambda row: writer.write_reports(*row))
    writer.close()


EXAMPLE_DRIVE_S = 14.0


def write_example_drive(path: str | Path) -> None:
    """The example log shipped as ``<config dir>/replay/example_drive.mcap``: the first ``EXAMPLE_DRIVE_S``
    of ``excitation_commands`` replayed with the shipped vehicle moved by ``STUDY_PERTURBATION`` (hidden
    values for ``acres-calibrate --example example_drive`` to find), reports at 20 Hz with ``STUDY_NOISE``
    (seed 0), written as an MCAP bag directory at ``path`` (its ``.mcap`` file is the shipped one)."""
    from acres_gym.sim import DEFAULT_VEHICLE

    base = load_vehicle(DEFAULT_VEHICLE)
    keys = list(STUDY_PERTURBATION)
    hidden = values_of(base, keys) * np.array([1.0 + STUDY_PERTURBATION[k] for k in keys])
    write_synthetic_log(path, excitation_commands(EXAMPLE_DRIVE_S), candidates(base, keys, hidden[None, :])[0],
                        noise=STUDY_NOISE, seed=0, out_hz=20.0, storage="mcap")


def identifiability(workdir: str | Path, keys: Sequence[str] | None = None, *, duration_s: float = 42.0,
                    popsize: int = 16, generations: int = 80, seed: int = 0, vehicle: str | None = None,
                    progress=None) -> tuple[Fit, np.ndarray]:
    """The recovery study of the module docstring on ``keys`` (default: all of ``STUDY_PERTURBATION``);
    returns the fit and the hidden values."""
    from acres_gym.sim import DEFAULT_VEHICLE

    keys = list(keys or STUDY_PERTURBATION)
    base = load_vehicle(vehicle or DEFAULT_VEHICLE)
    hidden_values = values_of(base, keys) * np.array([1.0 + STUDY_PERTURBATION[k] for k in keys])
    hidden = candidates(base, keys, hidden_values[None, :])[0]
    log_path = Path(workdir) / "identifiability_log"
    write_synthetic_log(log_path, excitation_commands(duration_s), hidden, noise=STUDY_NOISE, seed=seed)
    log = load_log(log_path)
    fit = calibrate(log, base, keys, popsize=popsize, generations=generations, seed=seed, progress=progress)
    return fit, hidden_values


# --------------------------------------------------------------------------- command line


def _weights(items: Sequence[str]) -> dict[str, float]:
    out: dict[str, float] = {}
    for item in items:
        name, sep, text = item.partition("=")
        if name not in FIT_FIELDS:
            raise CalibrationError(f"--weight {item!r}: unknown field {name!r}; fitted fields: {', '.join(FIT_FIELDS)}")
        try:
            value = float(text) if sep else math.nan
        except ValueError:
            value = math.nan
        if not (math.isfinite(value) and value >= 0.0):
            raise CalibrationError(f"--weight {item!r}: expected FIELD=W with W a number >= 0")
        out[name] = value
    return out


def check_search(popsize, generations, sigma0, seed) -> tuple[int, int, float, int]:
    """The search options if each is in its range (module docstring), else a ``CalibrationError`` naming
    the option, the value and the range."""
    def integer(name: str, value, lo: int, hi: int) -> int:
        ok = isinstance(value, (int, np.integer)) and not isinstance(value, bool) and lo <= value <= hi
        if not ok:
            raise CalibrationError(f"{name} {value!r}: expected an integer from {lo:,} to {hi:,}")
        return int(value)

    popsize = integer("--popsize", popsize, 2, MAX_POPSIZE)
    generations = integer("--generations", generations, 1, MAX_GENERATIONS)
    seed = integer("--seed", seed, 0, 2**31 - 2)
    try:
        sigma = float(sigma0)
    except (TypeError, ValueError):
        sigma = math.nan
    if not (math.isfinite(sigma) and 0.0 < sigma <= MAX_SIGMA):
        raise CalibrationError(f"--sigma {sigma0!r}: expected a finite number in (0, {MAX_SIGMA:g}] (the first step "
                               "relative to the start values)")
    return popsize, generations, sigma, seed


def read_overlay_file(path: str | Path, option: str = "--validate") -> dict:
    """An overlay JSON file as a dict, checked for what ``load_vehicle`` cannot report in one line: a
    missing file, a directory, a file that is not UTF-8 JSON, nesting deeper than ``MAX_OVERLAY_DEPTH``."""
    path = Path(path)
    if path.is_dir():
        raise CalibrationError(f"{option} {path}: a directory; expected an overlay JSON file")
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise CalibrationError(f"{option} {path}: cannot read: {getattr(exc, 'strerror', None) or exc}") from None
    try:
        doc = json.loads(text)
    except RecursionError:
        raise CalibrationError(f"{option} {path}: nests deeper than {MAX_OVERLAY_DEPTH} levels") from None
    except json.JSONDecodeError as exc:
        raise CalibrationError(f"{option} {path}: not valid JSON: {exc}") from None
    if not isinstance(doc, dict):
        raise CalibrationError(f"{option} {path}: expected a JSON object of vehicle keys at the top level")
    level, depth = [doc], 0
    while level:  # breadth-first, so a deep file costs no recursion
        depth += 1
        if depth > MAX_OVERLAY_DEPTH:
            raise CalibrationError(f"{option} {path}: nests deeper than {MAX_OVERLAY_DEPTH} levels (a vehicle "
                                   "overlay has the vehicle file's nesting, e.g. dbw.steering.delay_s)")
        level = [v for node in level for v in node.values() if isinstance(v, dict)]
    return doc


def check_out(path: str | Path) -> None:
    """``--out`` can be written: a regular file (new or not) in a writable directory, tried by creating and
    removing a temporary file next to it, so a fit is not run for nothing."""
    import tempfile

    path = Path(path)
    if path.is_dir():
        raise CalibrationError(f"--out {path}: a directory; expected the overlay JSON file to write")
    if path.exists() and not path.is_file():
        if not os.access(path, os.W_OK):
            raise CalibrationError(f"--out {path}: not writable")
        return
    folder = path.parent
    if not folder.is_dir():
        raise CalibrationError(f"--out {path}: the directory {folder} does not exist")
    try:
        with tempfile.NamedTemporaryFile(dir=folder, prefix=f".{path.name}.", suffix=".tmp"):
            pass
    except OSError as exc:
        raise CalibrationError(f"--out {path}: cannot write in {folder}: {exc.strerror or exc}") from None


def write_out(path: str | Path, text: str) -> None:
    """Write ``text`` to ``path`` whole or not at all: a temporary file in the same directory renamed over
    it (a special file such as /dev/stdout is written directly)."""
    import tempfile

    path = Path(path)
    if path.exists() and not path.is_file():
        path.write_text(text, encoding="utf-8")
        return
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


COMMANDS_HELP = """commands (one line each):
  acres-calibrate LOG --params KEY [KEY ...] --out FIT.json   fit parameters to a log, write an overlay
  acres-calibrate LOG --validate FIT.json                    replay error per report field, before / after
  acres-calibrate --example NAME ...                         a packaged example log in place of LOG
  acres-calibrate --list-examples                            list the packaged example logs
  acres-calibrate identifiability [--keys KEY ...]           recover hidden parameters from a noisy log the
                                                             model made (acres-calibrate identifiability -h)

Example: acres-calibrate --example example_drive --params dbw.steering.delay_s dbw.steering.tau_s --out fit.json"""


def build_parser() -> argparse.ArgumentParser:
    from acres_gym.vehicle.replay import add_example_options

    parser = argparse.ArgumentParser(
        prog="acres-calibrate",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Fit vehicle and DBW parameters to a ROS 2 bag holding ds_dbw_msgs commands and reports, "
                    "with CMA-ES over batched replays; write a vehicle overlay. With --validate, print the "
                    "replay error per report field before and after an overlay.",
        epilog=COMMANDS_HELP)
    parser.add_argument("log", nargs="?",
                        help="ROS 2 bag (directory, .db3 or .mcap) with command and report topics")
    add_example_options(parser, "bag")
    parser.add_argument("--params", nargs="+", default=None, metavar="KEY", help="schema keys to fit")
    parser.add_argument("--out", default=None, metavar="FILE", help="overlay JSON to write")
    parser.add_argument("--validate", default=None, metavar="OVERLAY",
                        help="only print the replay error per field with the shipped vehicle and with OVERLAY")
    parser.add_argument("--vehicle", default=None, metavar="NAME|PATH", help="vehicle file (default: the Ranger)")
    parser.add_argument("--surface", default=None, metavar="NAME",
                        help="flat ground of this surface (default dry_asphalt), as acres-replay")
    parser.add_argument("--slope-percent", type=float, default=None, metavar="P",
                        help="a plane rising P %% along +x (of --surface)")
    parser.add_argument("--terrain", default=None, metavar="FILE",
                        help="terrain: an .npz from acres_gym.terrain.to_file, or a JSON / YAML terrain config")
    parser.add_argument("--namespace", default=DEFAULT_NAMESPACE, help=f"topic namespace (default {DEFAULT_NAMESPACE})")
    parser.add_argument("--out-hz", type=float, default=DEFAULT_OUT_HZ,
                        help="sample rate of the error, Hz; divides 120 (default 20)")
    parser.add_argument("--popsize", type=int, default=16,
                        help=f"candidates (vehicles) per generation, 2 to {MAX_POPSIZE} (default 16)")
    parser.add_argument("--generations", type=int, default=80,
                        help=f"at most this many generations, 1 to {MAX_GENERATIONS:,} (default 80)")
    parser.add_argument("--sigma", type=float, default=0.3,
                        help=f"initial step relative to the start values, in (0, {MAX_SIGMA:g}] (default 0.3)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the search, >= 0 (default 0)")
    parser.add_argument("--max-messages", type=int, default=DEFAULT_MAX_MESSAGES, metavar="N",
                        help=f"refuse logs with more than N command or report messages (each held in memory, "
                             f"about 0.7 KB; default {DEFAULT_MAX_MESSAGES:,})")
    parser.add_argument("--weight", action="append", default=[], metavar="FIELD=W", help="weight of a field")
    return parser


def _fail(parser: argparse.ArgumentParser, exc: Exception):
    parser.exit(2, f"{parser.prog}: error: {' '.join(str(exc).split())}\n")


def _identifiability_main(argv: list[str]) -> int:
    import tempfile

    parser = argparse.ArgumentParser(prog="acres-calibrate identifiability",
                                     description="Recover hidden parameters from a noisy log made by the model "
                                                 "(module docstring of acres_gym.vehicle.calibrate).")
    parser.add_argument("--keys", nargs="+", default=None,
                        help=f"parameters to hide and recover (default: {', '.join(STUDY_PERTURBATION)})")
    parser.add_argument("--duration", type=float, default=42.0, help="length of the drive, s (1 to 600)")
    parser.add_argument("--popsize", type=int, default=16, help=f"2 to {MAX_POPSIZE} (default 16)")
    parser.add_argument("--generations", type=int, default=80, help=f"1 to {MAX_GENERATIONS:,} (default 80)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    try:
        check_search(args.popsize, args.generations, 0.3, args.seed)
        keys = check_keys(args.keys, "--keys") if args.keys is not None else None
        for key in keys or ():
            if key not in STUDY_PERTURBATION:
                raise CalibrationError(f"--keys {key}: the study hides only {', '.join(STUDY_PERTURBATION)}")
        if not (math.isfinite(args.duration) and 1.0 <= args.duration <= 600.0):
            raise CalibrationError(f"--duration {args.duration:g}: expected 1 to 600 s")
    except ReplayInputError as exc:
        _fail(parser, exc)
    with tempfile.TemporaryDirectory() as tmp:
        fit, hidden = identifiability(tmp, keys, duration_s=args.duration, popsize=args.popsize,
                                      generations=args.generations, seed=args.seed,
                                      progress=lambda g, f: print(f"generation {g}: E = {f:.4g}", flush=True)
                                      if g % 10 == 0 else None)
    print(parameter_rows(fit))
    print(f"{'parameter':34} {'hidden':>11} {'fitted':>11} {'error':>8} {'1-sigma':>8} {'|error|/sigma':>13}")
    for key, h, b, s in zip(fit.keys, hidden, fit.fitted, fit.sigma, strict=True):
        print(f"{key:34} {h:11.5g} {b:11.5g} {100 * (b - h) / h:+7.2f}% {100 * s / h:7.2f}% {abs(b - h) / s:13.2f}")
    return 0


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point (``acres-calibrate``); exits with status 2 and one line on bad input."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["identifiability"]:
        return _identifiability_main(argv[1:])
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        from acres_gym.sim import DEFAULT_VEHICLE
        from acres_gym.vehicle.bags import check_max_messages
        from acres_gym.vehicle.replay import example_log, terrain_from_args

        log_path = example_log(parser, args, "log", kinds=("bag",))
        if log_path is None:
            return 0
        if args.validate is None:
            if args.params is None or args.out is None:
                raise CalibrationError("give --params KEY [KEY ...] and --out overlay.json (or --validate OVERLAY)")
            keys = check_keys(args.params)
            check_search(args.popsize, args.generations, args.sigma, args.seed)
            check_out(args.out)
        weights = _weights(args.weight)
        check_max_messages(args.max_messages)
        ticks_per_row(args.out_hz)
        overlay = read_overlay_file(args.validate) if args.validate is not None else None
        vehicle = args.vehicle or DEFAULT_VEHICLE
        try:
            base = load_vehicle(vehicle)
            after_params = load_vehicle(vehicle, overlay=overlay) if overlay is not None else None
        except (ValueError, FileNotFoundError) as exc:
            where = f"--validate {args.validate}" if overlay is not None else f"--vehicle {vehicle}"
            raise CalibrationError(f"{where}: {exc}") from None
        terrain = terrain_from_args(args)
        log = load_log(log_path, args.namespace, args.out_hz, max_messages=args.max_messages)
    except ReplayInputError as exc:
        _fail(parser, exc)
    log_name = Path(log_path).name
    if args.validate is not None:
        both = simulate(log, make_params_array([base, after_params], 2), terrain)
        print(f"validate {log_name} with {args.validate} ({len(log.times)} samples at {log.out_hz:g} Hz)")
        print(validation_rows(log, both[:, :, :1], both[:, :, 1:]))
        return 0
    fit = calibrate(log, base, keys, terrain=terrain, weights=weights, popsize=args.popsize,
                    generations=args.generations, sigma0=args.sigma, seed=args.seed)
    overlay = overlay_dict(fit, log_name)
    read_overlay(overlay)  # the overlay is valid by construction; checked before it is written
    try:
        write_out(args.out, json.dumps(overlay, indent=2) + "\n")
    except OSError as exc:
        parser.exit(2, f"{parser.prog}: error: --out {args.out}: cannot write: {exc.strerror or exc}\n")
    print(parameter_rows(fit))
    fitted = candidates(base, keys, fit.fitted[None, :])[0]
    both = simulate(log, make_params_array([base, fitted], 2), terrain)
    print(f"validate {log_name} ({len(log.times)} samples at {log.out_hz:g} Hz)")
    print(validation_rows(log, both[:, :, :1], both[:, :, 1:]))
    print(f"wrote {args.out}")
    return 0


__all__ = ["FIT_FIELDS", "MAX_GENERATIONS", "MAX_OVERLAY_DEPTH", "MAX_POPSIZE", "MAX_SIGMA", "CalibrationError",
           "CalibrationLog", "Fit", "calibratable_keys", "calibrate", "candidates", "check_keys", "check_out",
           "check_search", "correlation_window", "excitation_commands", "field_rms", "identifiability",
           "linearised_covariance", "load_log", "overlay_dict", "read_overlay_file", "refine", "simulate",
           "uncertainty", "weighted_error", "write_example_drive", "write_synthetic_log", "main"]


if __name__ == "__main__":
    sys.exit(main())
