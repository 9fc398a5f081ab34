"""Observation values computed from several DBW report fields, in numpy only.

One definition for both places that need them: the environments' observations
(``acres_gym.envs.observations``) and the policy runtime on the vehicle (``acres_gym.vehicle.deploy``, which
must not load numba). Each function takes ``report(key)``, the values of the report field
``"message.field"`` (ds_dbw names, e.g. ``"brake.pressure_output"``) as a float array over vehicles (NaN
where the report has no value), and the vehicle's ``brake_max_bar``.

``DERIVED`` maps an observation name to ``(function, report fields it reads)``.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from acres_gym.constants import GEAR_HIGH, GEAR_LOW, GEAR_NEUTRAL, GEAR_PARK, GEAR_REVERSE

GEAR_ORDER = (GEAR_PARK, GEAR_REVERSE, GEAR_NEUTRAL, GEAR_HIGH, GEAR_LOW)  # the gear one-hot's order

Report = Callable[[str], np.ndarray]


def brake_bar(report: Report, brake_max_bar) -> np.ndarray:
    """BrakeReport.pressure_output, bar, or percent_output x ``brake_max_bar`` / 100 for percent commands
    (NaN without a brake command), shape (N, 1)."""
    pressure = report("brake.pressure_output")
    pct = report("brake.percent_output") * np.asarray(brake_max_bar, dtype=np.float64) / 100.0
    return np.where(np.isnan(pressure), pct, pressure)[:, None]


def gear_one_hot(report: Report, brake_max_bar=None) -> np.ndarray:
    """GearReport.gear as a one-hot over P, R, N, H, L (all 0 for any other value), shape (N, 5)."""
    gear = report("gear.gear")
    return (gear[:, None] == np.asarray(GEAR_ORDER)[None, :]).astype(np.float64)


def valid_flags(report: Report, brake_max_bar) -> np.ndarray:
    """1 where steering.cmd, throttle.percent_output, the brake pressure (``brake_bar``) and ulc.vel_ref
    carry a value (not NaN), shape (N, 4)."""
    cols = [report("steering.cmd"), report("throttle.percent_output"), brake_bar(report, brake_max_bar)[:, 0],
            report("ulc.vel_ref")]
    return np.stack([~np.isnan(c) for c in cols], axis=1).astype(np.float64)


DERIVED: dict[str, tuple[Callable[[Report, object], np.ndarray], tuple[str, ...]]] = {
    "brake_pressure_output": (brake_bar, ("brake.pressure_output", "brake.percent_output")),
    "gear": (gear_one_hot, ("gear.gear",)),
    "report_valid": (valid_flags, ("steering.cmd", "throttle.percent_output", "brake.pressure_output",
                                   "brake.percent_output", "ulc.vel_ref")),
}
