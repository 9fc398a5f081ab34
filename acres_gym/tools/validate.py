"""The validation table: each row checks the model against a reference on a fresh simulation.

    python -m acres_gym.tools.validate            # all rows; exit status 1 when a row fails
    python -m acres_gym.tools.validate --only brake --json out.json

A row is a name, the measured value, the reference range, the unit, pass/fail, the kind of check and the
source of the reference. The manoeuvres are those of ``acres_gym.tools.scenarios`` (the test suite runs the same
ones). Three kinds of row:

- ``independent``: the reference does not come from the model's own parameters or formulas: a physical
  law the result must obey whatever the parameters (force balance at rest, energy conservation, a held
  vehicle standing still, the low-speed kinematic path), or a published figure the parameters were not
  set or tuned to reproduce.
- ``consistency``: the reference is the model's own parameter or formula (a second copy of it), or a
  figure its parameters were set or tuned to reproduce: the row shows that the code does what its
  parameters say, not that the vehicle does.
- ``acceptance``: the reference is a plausibility band this project set (a class figure, "no force
  spike"), neither a published measurement nor the model's own formula: the row shows the model stays
  plausible, not that it matches a measurement.

A row's band is never wider than the published range its source gives.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass

from acres_gym.constants import DRIVE_ALL_WHEEL, DRIVE_TURF, DRIVE_TWO_WHEEL, GEAR_HIGH, GEAR_LOW, GEAR_PARK
from acres_gym.terrain import flat
from acres_gym.tools import scenarios
from acres_gym.tools.dbw_validation import DBW_CHECKS

INDEPENDENT = "independent"
CONSISTENCY = "consistency"
ACCEPTANCE = "acceptance"
KINDS = (INDEPENDENT, CONSISTENCY, ACCEPTANCE)
I, C, A = INDEPENDENT, CONSISTENCY, ACCEPTANCE  # short forms for the table below


@dataclass(frozen=True)
class Check:
    name: str
    unit: str
    low: float
    high: float
    source: str
    measure: Callable[[], float]
    kind: str  # INDEPENDENT, CONSISTENCY or ACCEPTANCE (module docstring)

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"validation row {self.name!r}: kind = {self.kind!r}, expected one of {', '.join(KINDS)}")


def _static_sum():
    return scenarios.static_rest()["load_sum_ratio"]


def _static_corner():
    return 100.0 * scenarios.static_rest()["corner_error_max"]


def _turn_error():
    r = scenarios.steady_circle(200.0, 2.0, DRIVE_TURF)
    return 100.0 * (r["radius_m"] / r["kinematic_radius_m"] - 1.0)


def _wet_dry_ratio():
    wet = scenarios.brake_stop("wet_asphalt")["stop_distance_m"]
    return wet / scenarios.brake_stop("dry_asphalt")["stop_distance_m"]


def _shift_hold():
    r = scenarios.full_throttle(GEAR_HIGH, seconds=15.0)
    return max(abs(r["shift_rpm_max"] - r["shift_full_rpm"]), abs(r["shift_rpm_min"] - r["shift_full_rpm"]))


def _ebs_gain():
    with_ebs = scenarios.coast_down(True)["mean_decel_mps2"]
    return 100.0 * (with_ebs / scenarios.coast_down(False)["mean_decel_mps2"] - 1.0)


def _awd_gain():
    two = scenarios.split_launch(DRIVE_TWO_WHEEL)["time_to_target_s"]
    return two - scenarios.split_launch(DRIVE_ALL_WHEEL)["time_to_target_s"]


def _top_speed_ratio():
    r = scenarios.full_throttle(GEAR_HIGH)
    return r["top_speed_mps"] / r["top_speed_param_mps"]


def _sinkage(soil):
    return lambda: 100.0 * scenarios.soil_static_sinkage(soil)["max_relative_error"]


def _sand_top_speed_loss():
    return (scenarios.full_throttle(GEAR_HIGH, seconds=30.0)["top_speed_mps"]
            - scenarios.full_throttle(GEAR_HIGH, seconds=30.0, terrain=flat("dry_sand"))["top_speed_mps"])


CHECKS: list[Check] = [
    # foundation: chassis, suspension, tyres
    Check("static: sum of wheel loads / m g", "1", 0.995, 1.005, "Newton: a body at rest", _static_sum, I),
    Check("static: largest corner load error", "%", 0.0, 3.0,
          "finalize_parameters moment balance (seed FinalizeUtvParameters)", _static_corner, C),
    Check("static: CG drift over 1 s", "m", 0.0, 1e-3, "at rest means at rest",
          lambda: scenarios.static_rest()["drift_mps"], I),
    Check("20 % grade, 40 bar: motion in 10 s", "m", 0.0, 0.01, "a braked vehicle holds (docs/architecture.md)",
          lambda: scenarios.hold_on_grade(20.0, 40.0)["moved_m"], I),
    Check("2 m/s circle (Turf): radius error vs L/tan(delta)", "%", -5.0, 5.0,
          "kinematic steering (seed 000 Ackermann)", _turn_error, I),
    Check("full brake from 10 m/s, dry asphalt", "g", 0.6, 0.95,
          "dry asphalt mu 0.65-0.8 (reference §3.1, Noon 1994)",
          lambda: scenarios.brake_stop("dry_asphalt")["mean_decel_g"], C),
    Check("stop distance wet / dry", "1", 1.05, 3.0, "wet asphalt mu 0.45-0.6 (reference §3.1)", _wet_dry_ratio, C),
    # powertrain and driveline
    Check("idle in neutral: rpm - idle_rpm", "rpm", -30.0, 30.0, "idle governor (seed StepUtvPowertrain)",
          lambda: (lambda r: r["rpm"] - r["idle_rpm"])(scenarios.idle_in_neutral()), C),
    Check("H at idle, no brake: creep in 5 s", "m", 0.0, 1e-3,
          "centrifugal clutch open below engagement (seed CVT paragraph)",
          lambda: scenarios.creep_in_gear(GEAR_HIGH)["moved_m"], C),
    Check("top speed H, flat asphalt / engine.top_speed_mps", "1", 0.99, 1.01,
          "governor holds engine.top_speed_mps, set to the OEM 'about 62 mph' (reference §1.1)", _top_speed_ratio,
          C),
    Check("0-30 mph, H, full throttle", "s", 4.0, 9.0, "UTV class figure (project acceptance band)",
          lambda: scenarios.full_throttle(GEAR_HIGH, seconds=12.0)["time_to_30mph_s"], A),
    Check("engine vs full-load shift speed while upshifting", "rpm", 0.0, 300.0,
          "PVT holds the engine near peak power (reference §1.1)", _shift_hold, C),
    Check("top speed, L (rev limited)", "m/s", 12.0, 16.0,
          "max_rpm / (overdrive x Low reduction) x rolling radius",
          lambda: scenarios.full_throttle(GEAR_LOW, seconds=25.0)["top_speed_mps"], C),
    Check("EBS: coast-down deceleration gain, 15 -> 1 m/s", "%", 3.0, 100.0,
          "EBS keeps the belt coupled below engagement (reference §1.1)", _ebs_gain, C),
    Check("ADC: front shaft torque on overrun", "N m", -5000.0, -50.0,
          "ADC locks the front on engine braking (reference §1.1, SM 9929399)",
          lambda: scenarios.coast_down(True, True)["front_shaft_nm_first_2s"], C),
    Check("park on 30 % grade: motion in 10 s", "m", 0.0, 0.01, "park pawl (seed ParkHoldNm)",
          lambda: scenarios.hold_on_grade(30.0, 0.0, GEAR_PARK)["moved_m"], C),
    Check("ice/asphalt split: AWD gain to 5 m/s", "s", 0.2, 30.0, "demand drive (seed driveline modes)", _awd_gain, C),
    Check("60 s cycle: ledger residual / fuel", "%", -1.0, 1.0, "energy conservation (seed FEnergyFlows)",
          lambda: 100.0 * scenarios.drive_cycle_ledger()["residual_share"], I),
    Check("fuel at 15 m/s", "L/100km", 8.0, 25.0, "UTV class figure (project acceptance band)",
          lambda: scenarios.cruise_fuel(15.0)["l_per_100km"], A),
    # soil
    Check("static sinkage vs Wong, dry sand", "%", 0.0, 10.0, "Bekker/Wong closed form (reference §2.1)",
          _sinkage("dry_sand"), C),
    Check("static sinkage vs Wong, sandy loam", "%", 0.0, 10.0, "Bekker/Wong closed form (reference §2.1)",
          _sinkage("sandy_loam"), C),
    Check("static sinkage vs Wong, clayey soil", "%", 0.0, 10.0, "Bekker/Wong closed form (reference §2.1)",
          _sinkage("clayey_soil"), C),
    Check("LETE sand: drawbar pull / load at 20 % slip", "1", 0.2, 0.5,
          "tractive effort of dense sand (project acceptance band; Wong LETE sand)",
          lambda: scenarios.soil_drawbar_pull("lete_sand", 0.2)["pull_over_load"], A),
    Check("dry sand: motion resistance at 5 m/s", "1", 0.1, 0.2,
          "loose sand f_r 0.1-0.2 (reference §3.3, Carvill)",
          lambda: scenarios.soil_motion_resistance("dry_sand")["coefficient"], I),
    Check("dry sand: top speed loss vs asphalt", "m/s", 2.0, 25.0, "compaction resistance (Wong)",
          _sand_top_speed_loss, C),
    Check("20 % dry sand + 450 kg, L: 2WD speed", "m/s", -0.3, 0.3,
          "two tyres' thrust < resistance + grade (trafficability: 2WD limit 15 %)",
          lambda: scenarios.grade_climb("dry_sand", DRIVE_TWO_WHEEL, percent=20.0)["speed_mps"], C),
    Check("20 % dry sand + 450 kg, L: AWD speed", "m/s", 1.0, 20.0,
          "four-wheel traction (trafficability: AWD limit 27 %)",
          lambda: scenarios.grade_climb("dry_sand", DRIVE_ALL_WHEEL, percent=20.0)["speed_mps"], C),
    Check("35 % sandy loam + 450 kg, AWD: H speed", "m/s", -0.5, 0.5,
          "L: 2.25x the torque (rear ratios 26.19 / 11.64)",
          lambda: scenarios.grade_climb("sandy_loam", DRIVE_ALL_WHEEL, percent=35.0, gear=GEAR_HIGH)["speed_mps"], C),
    Check("35 % sandy loam + 450 kg, AWD: L speed", "m/s", 1.5, 20.0,
          "L for towing, rough ground (reference §1.1, Polaris)",
          lambda: scenarios.grade_climb("sandy_loam", DRIVE_ALL_WHEEL, percent=35.0)["speed_mps"], C),
    Check("asphalt -> sand at 10 m/s: peak load / static", "1", 0.0, 2.0, "no force spike (project acceptance band)",
          lambda: scenarios.surface_transition()["peak_load_ratio"], A),
    Check("60 s cycle on sandy loam: ledger residual / fuel", "%", -1.0, 1.0, "energy conservation",
          lambda: 100.0 * scenarios.drive_cycle_ledger(terrain=flat("sandy_loam"))["residual_share"], I),
]

CHECKS.extend(Check(*row) for row in DBW_CHECKS)  # the drive-by-wire layer on the vehicle


def run(checks=None, only: str | None = None, stream=sys.stdout) -> list[dict]:
    """Runs the checks (those whose name contains ``only``), prints the table, returns the rows."""
    rows = []
    selected = [c for c in (checks or CHECKS) if only is None or only.lower() in c.name.lower()]
    header = f"{'check':<52}{'measured':>12}  {'reference':<22}{'unit':<9}{'result':<7}{'kind':<13}source"
    print(header, file=stream)
    print("-" * len(header), file=stream)
    for check in selected:
        start = time.perf_counter()
        try:
            value = float(check.measure())
            ok = math.isfinite(value) and check.low <= value <= check.high
        except Exception as exc:  # a row that cannot run is a failed row, reported
            value, ok = math.nan, False
            print(f"  ({check.name}: {type(exc).__name__}: {exc})", file=stream)
        rows.append({"name": check.name, "measured": value, "low": check.low, "high": check.high,
                     "unit": check.unit, "source": check.source, "kind": check.kind, "pass": ok,
                     "seconds": time.perf_counter() - start})
        reference = f"[{check.low:g}, {check.high:g}]"
        print(f"{check.name:<52}{value:>12.4g}  {reference:<22}{check.unit:<9}{'pass' if ok else 'FAIL':<7}"
              f"{check.kind:<13}{check.source}", file=stream, flush=True)
    failed = sum(not r["pass"] for r in rows)
    counts = ", ".join(f"{sum(r['kind'] == kind for r in rows)} {kind}" for kind in KINDS)
    print(f"\n{len(rows) - failed} of {len(rows)} checks pass ({counts})", file=stream)
    return rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m acres_gym.tools.validate", description=__doc__.splitlines()[0])
    parser.add_argument("--only", help="run the checks whose name contains this text")
    parser.add_argument("--json", help="also write the rows to this JSON file")
    args = parser.parse_args(argv)
    rows = run(only=args.only)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(rows, fh, indent=2)
    return 0 if all(r["pass"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
