"""The validation table: each row checks the model against a reference on a fresh simulation.

    python -m acres_gym.validate            # all rows; exit status 1 when a row fails
    python -m acres_gym.validate --only brake --json out.json

A row is a name, the measured value, the reference range, the unit, the source of the reference and
pass/fail. The manoeuvres are those of ``acres_gym.scenarios`` (the test suite runs the same ones).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass

from acres_gym import scenarios
from acres_gym.constants import DRIVE_ALL_WHEEL, DRIVE_TURF, DRIVE_TWO_WHEEL, GEAR_HIGH, GEAR_LOW, GEAR_PARK
from acres_gym.dbw.validation import DBW_CHECKS
from acres_gym.terrain import flat


@dataclass(frozen=True)
class Check:
    name: str
    unit: str
    low: float
    high: float
    source: str
    measure: Callable[[], float]


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


def _sinkage(soil):
    return lambda: 100.0 * scenarios.soil_static_sinkage(soil)["max_relative_error"]


def _sand_top_speed_loss():
    return (scenarios.full_throttle(GEAR_HIGH, seconds=30.0)["top_speed_mps"]
            - scenarios.full_throttle(GEAR_HIGH, seconds=30.0, terrain=flat("dry_sand"))["top_speed_mps"])


CHECKS: list[Check] = [
    # foundation: chassis, suspension, tyres
    Check("static: sum of wheel loads / m g", "1", 0.995, 1.005, "Newton: a body at rest", _static_sum),
    Check("static: largest corner load error", "%", 0.0, 3.0,
          "finalize_parameters moment balance (seed FinalizeUtvParameters)", _static_corner),
    Check("static: CG drift over 1 s", "m", 0.0, 1e-3, "at rest means at rest",
          lambda: scenarios.static_rest()["drift_mps"]),
    Check("20 % grade, 40 bar: motion in 10 s", "m", 0.0, 0.01, "a braked vehicle holds (DESIGN.md)",
          lambda: scenarios.hold_on_grade(20.0, 40.0)["moved_m"]),
    Check("2 m/s circle (Turf): radius error vs L/tan(delta)", "%", -5.0, 5.0,
          "kinematic steering (seed 000 Ackermann)", _turn_error),
    Check("full brake from 10 m/s, dry asphalt", "g", 0.6, 0.95,
          "dry asphalt mu 0.65-0.8 (reference §3.1, Noon 1994)",
          lambda: scenarios.brake_stop("dry_asphalt")["mean_decel_g"]),
    Check("stop distance wet / dry", "1", 1.05, 3.0, "wet asphalt mu 0.45-0.6 (reference §3.1)", _wet_dry_ratio),
    # powertrain and driveline
    Check("idle in neutral: rpm - idle_rpm", "rpm", -30.0, 30.0, "idle governor (seed StepUtvPowertrain)",
          lambda: (lambda r: r["rpm"] - r["idle_rpm"])(scenarios.idle_in_neutral())),
    Check("H at idle, no brake: creep in 5 s", "m", 0.0, 1e-3,
          "centrifugal clutch open below engagement (seed CVT paragraph)",
          lambda: scenarios.creep_in_gear(GEAR_HIGH)["moved_m"]),
    Check("top speed, H, flat dry asphalt", "m/s", 24.0, 29.0, "OEM 'about 62 mph' (reference §1.1)",
          lambda: scenarios.full_throttle(GEAR_HIGH)["top_speed_mps"]),
    Check("0-30 mph, H, full throttle", "s", 4.0, 9.0, "UTV class figure (project acceptance band)",
          lambda: scenarios.full_throttle(GEAR_HIGH, seconds=12.0)["time_to_30mph_s"]),
    Check("engine vs full-load shift speed while upshifting", "rpm", 0.0, 300.0,
          "PVT holds the engine near peak power (reference §1.1)", _shift_hold),
    Check("top speed, L (rev limited)", "m/s", 12.0, 16.0,
          "max_rpm / (overdrive x Low reduction) x rolling radius",
          lambda: scenarios.full_throttle(GEAR_LOW, seconds=25.0)["top_speed_mps"]),
    Check("EBS: coast-down deceleration gain, 15 -> 1 m/s", "%", 3.0, 100.0,
          "EBS keeps the belt coupled below engagement (reference §1.1)", _ebs_gain),
    Check("ADC: front shaft torque on overrun", "N m", -5000.0, -50.0,
          "ADC locks the front on engine braking (reference §1.1, SM 9929399)",
          lambda: scenarios.coast_down(True, True)["front_shaft_nm_first_2s"]),
    Check("park on 30 % grade: motion in 10 s", "m", 0.0, 0.01, "park pawl (seed ParkHoldNm)",
          lambda: scenarios.hold_on_grade(30.0, 0.0, GEAR_PARK)["moved_m"]),
    Check("ice/asphalt split: AWD gain to 5 m/s", "s", 0.2, 30.0, "demand drive (seed driveline modes)", _awd_gain),
    Check("60 s cycle: ledger residual / fuel", "%", -1.0, 1.0, "energy conservation (seed FEnergyFlows)",
          lambda: 100.0 * scenarios.drive_cycle_ledger()["residual_share"]),
    Check("fuel at 15 m/s", "L/100km", 8.0, 25.0, "UTV class figure (project acceptance band)",
          lambda: scenarios.cruise_fuel(15.0)["l_per_100km"]),
    # soil
    Check("static sinkage vs Wong, dry sand", "%", 0.0, 10.0, "Bekker/Wong closed form (reference §2.1)",
          _sinkage("dry_sand")),
    Check("static sinkage vs Wong, sandy loam", "%", 0.0, 10.0, "Bekker/Wong closed form (reference §2.1)",
          _sinkage("sandy_loam")),
    Check("static sinkage vs Wong, clayey soil", "%", 0.0, 10.0, "Bekker/Wong closed form (reference §2.1)",
          _sinkage("clayey_soil")),
    Check("LETE sand: drawbar pull / load at 20 % slip", "1", 0.2, 0.5,
          "tractive effort of dense sand (project acceptance band; Wong LETE sand)",
          lambda: scenarios.soil_drawbar_pull("lete_sand", 0.2)["pull_over_load"]),
    Check("dry sand: motion resistance at 5 m/s", "1", 0.04, 0.25,
          "loose sand f_r 0.1-0.2 (reference §3.3, Carvill)",
          lambda: scenarios.soil_motion_resistance("dry_sand")["coefficient"]),
    Check("dry sand: top speed loss vs asphalt", "m/s", 2.0, 25.0, "compaction resistance (Wong)",
          _sand_top_speed_loss),
    Check("15 % weak soil + 450 kg: 2WD speed", "m/s", 0.0, 0.3, "rear traction < grade resistance",
          lambda: scenarios.grade_climb("sandy_loam_wet", DRIVE_TWO_WHEEL)["speed_mps"]),
    Check("15 % weak soil + 450 kg: AWD speed", "m/s", 1.0, 20.0, "four-wheel traction",
          lambda: scenarios.grade_climb("sandy_loam_wet", DRIVE_ALL_WHEEL)["speed_mps"]),
    Check("35 % sandy loam + 450 kg, AWD: H speed", "m/s", 0.0, 0.5,
          "L: 2.25x the torque (rear ratios 26.19 / 11.64)",
          lambda: scenarios.grade_climb("sandy_loam", DRIVE_ALL_WHEEL, percent=35.0, gear=GEAR_HIGH)["speed_mps"]),
    Check("35 % sandy loam + 450 kg, AWD: L speed", "m/s", 2.0, 20.0,
          "L for towing, rough ground (reference §1.1, Polaris)",
          lambda: scenarios.grade_climb("sandy_loam", DRIVE_ALL_WHEEL, percent=35.0)["speed_mps"]),
    Check("asphalt -> sand at 10 m/s: peak load / static", "1", 0.0, 2.0, "no force spike (project acceptance band)",
          lambda: scenarios.surface_transition()["peak_load_ratio"]),
    Check("60 s cycle on sandy loam: ledger residual / fuel", "%", -1.0, 1.0, "energy conservation",
          lambda: 100.0 * scenarios.drive_cycle_ledger(terrain=flat("sandy_loam"))["residual_share"]),
]

CHECKS.extend(Check(*row) for row in DBW_CHECKS)  # the drive-by-wire layer on the vehicle


def run(checks=None, only: str | None = None, stream=sys.stdout) -> list[dict]:
    """Runs the checks (those whose name contains ``only``), prints the table, returns the rows."""
    rows = []
    selected = [c for c in (checks or CHECKS) if only is None or only.lower() in c.name.lower()]
    header = f"{'check':<52}{'measured':>12}  {'reference':<22}{'unit':<9}{'result':<7}source"
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
                     "unit": check.unit, "source": check.source, "pass": ok,
                     "seconds": time.perf_counter() - start})
        reference = f"[{check.low:g}, {check.high:g}]"
        print(f"{check.name:<52}{value:>12.4g}  {reference:<22}{check.unit:<9}{'pass' if ok else 'FAIL':<7}"
              f"{check.source}", file=stream, flush=True)
    failed = sum(not r["pass"] for r in rows)
    print(f"\n{len(rows) - failed} of {len(rows)} checks pass", file=stream)
    return rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m acres_gym.validate", description=__doc__.splitlines()[0])
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
