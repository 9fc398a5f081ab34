"""A scripted drive through the DBW layer: ``python -m acres_gym.tools.demo`` (``make run``).

One Ranger starts parked on generated rough grass (``rough``) with a dry sand patch painted across its
path (``with_polygons``) and is driven the way an autonomy stack drives it, with DBW messages at 20 Hz
(one control step = 6 ticks):

1. enable DBW with a ULC velocity command of 0 m/s (the ULC holds the brake), shift P -> H (one
   ``gear_cmd`` event);
2. ULC velocity 5 m/s, straight (curvature steering commands of 0);
3. ULC velocity 10 m/s along a gentle S (a sine of curvature, ``STEER_CURVATURE``);
4. ULC velocity 3 m/s, straight, over the sand patch;
5. ULC velocity 0: stop;
6. shift to P (one ``gear_cmd`` event) and hold.

The phase times are for the default 60 s and scale with ``--seconds``. At the end of each phase a row
shows what the simulation did (speed against the commanded target, engine, CVT, gear, steering wheel,
fuel, the surfaces under the wheels); then the energy ledger, the wall time and the real-time factor.
Nothing is adjusted to look right: a target the ULC did not reach shows as such.

Options: ``--seconds`` (simulated time, default 60), ``--seed`` (terrain seed, default 7).
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from dataclasses import dataclass

import numpy as np

from acres_gym.configuration import seed_argument
from acres_gym.constants import (
    DT_S,
    GEAR_HIGH,
    GEAR_NAMES,
    GEAR_NONE,
    GEAR_PARK,
    GEAR_REJECT_NONE,
    GEAR_REJECT_SHIFT_IN_PROGRESS,
    GEAR_REJECT_UNSUPPORTED,
    GEAR_REJECT_VEHICLE_SPEED,
    STEER_CURVATURE,
    ULC_VELOCITY,
)
from acres_gym.dbw.command import send
from acres_gym.sim import RangerSim
from acres_gym.terrain import rough, with_polygons

CONTROL_TICKS = 6  # 20 Hz
DEFAULT_SECONDS = 60.0
DEFAULT_SEED = 7
ROUGHNESS_M = 0.12  # RMS height of the generated ground
START_XY = (-150.0, 0.0)  # rear-axle footprint at reset, heading +x
S_CURVATURE_PER_M = 0.008  # amplitude of the S (a 125 m radius at its tightest)
# The sand patch: an irregular blob, world (x, y), m, where the S ends and the 3 m/s phase runs (default
# schedule; the S leaves the vehicle about 30 m to the left of its start line).
SAND_PATCH_XY = [(38.0, 8.0), (70.0, -4.0), (104.0, 6.0), (116.0, 30.0), (100.0, 58.0), (64.0, 66.0),
                 (40.0, 52.0), (32.0, 30.0)]


@dataclass(frozen=True)
class Phase:
    name: str
    end_s: float  # end time for the default 60 s drive
    speed_mps: float  # ULC velocity target
    s_curve: bool = False  # curvature follows one period of a sine over the phase
    gear_event: int = GEAR_NONE  # a gear command sent 0.5 s into the phase (sooner in a short phase)


REJECT_NAMES = {GEAR_REJECT_SHIFT_IN_PROGRESS: "shift in progress", GEAR_REJECT_UNSUPPORTED: "unsupported",
                GEAR_REJECT_VEHICLE_SPEED: "vehicle speed"}

PHASES = (
    Phase("enable DBW, shift P->H", 4.0, 0.0, gear_event=GEAR_HIGH),
    Phase("ULC 5 m/s, straight", 16.0, 5.0),
    Phase("ULC 10 m/s, gentle S", 36.0, 10.0, s_curve=True),
    Phase("ULC 3 m/s, sand patch", 50.0, 3.0),
    Phase("ULC 0 m/s: stop", 56.0, 0.0),
    Phase("shift to P, hold", 60.0, 0.0, gear_event=GEAR_PARK),
)


def make_terrain(seed: int):
    """Rough grass (``ROUGHNESS_M`` RMS, flat around the start) with a dry sand patch on the route."""
    ground = rough(seed=seed, roughness_m=ROUGHNESS_M, size_m=400.0, cell_m=1.0, surface="grass",
                   spawn_xy=START_XY)
    return with_polygons(ground, [(SAND_PATCH_XY, "dry_sand")])


def _send(cmd, target_mps: float, curvature_per_m: float, gear: int) -> None:
    """One control step's DBW messages: system enable, ULC velocity and curvature steering, each with
    its enable and fresh flag; ``gear`` is a gear command event (GEAR_NONE: none this step)."""
    send(cmd, "Enable", data=True)
    send(cmd, "UlcCmd", cmd_type=ULC_VELOCITY, cmd=target_mps, enable=True)
    send(cmd, "SteeringCmd", cmd_type=STEER_CURVATURE, cmd=curvature_per_m, enable=True)
    send(cmd, "GearCmd", cmd=gear)


def _num(x: float, digits: int) -> str:
    """``x`` with ``digits`` decimals, without a minus sign on a value that rounds to zero."""
    text = f"{x:.{digits}f}"
    return text[1:] if text.startswith("-") and float(text) == 0.0 else text


def _engaged(s) -> str:
    if not s.dbw_enabled:
        return "off"
    parts = [name for name, on in (("ulc", s.ulc_enabled), ("steer", s.steer_enabled),
                                   ("throttle", s.throttle_enabled), ("brake", s.brake_enabled)) if on]
    return "+".join(parts) if parts else "on, idle"


def _run_phase(sim, phase: Phase, k: int, ends: list[int], names) -> dict:
    """Drives one phase (control steps ``ends[k - 1]`` to ``ends[k]``) and returns its table row."""
    cmd = sim.commands
    s = sim.state[0]
    start = 0 if k == 0 else ends[k - 1]
    stop = max(ends[k], start)
    gear_step = start + min(int(round(0.5 / (CONTROL_TICKS * DT_S))), (stop - start) // 8)
    speed_max = -math.inf
    steer_abs_max = 0.0
    sinkage_max = 0.0
    seen = set()
    t0 = time.perf_counter()
    for step in range(start, stop):
        if phase.s_curve:
            frac = (step - start + 0.5) / max(stop - start, 1)
            curvature = S_CURVATURE_PER_M * math.sin(2.0 * math.pi * frac)
        else:
            curvature = 0.0
        gear = phase.gear_event if step == gear_step else GEAR_NONE
        _send(cmd, phase.speed_mps, curvature, gear)
        sim.step(CONTROL_TICKS)
        speed = float(sim.speed_mps[0])
        speed_max = max(speed_max, speed)
        steer_abs_max = max(steer_abs_max, abs(float(s.steering_wheel_deg)))
        sinkage_max = max(sinkage_max, float(np.max(s.sinkage_m)))
        seen.update(int(i) for i in s.surface_id)
    wall_s = time.perf_counter() - t0
    gear_name = GEAR_NAMES.get(int(s.gear), str(int(s.gear)))
    if phase.gear_event != GEAR_NONE and int(s.gear_reject) != GEAR_REJECT_NONE:
        gear_name += f" (refused: {REJECT_NAMES.get(int(s.gear_reject), int(s.gear_reject))})"
    under = "/".join(dict.fromkeys(names[int(i)] for i in s.surface_id))
    passed = sorted(names[i] for i in seen)
    return {
        "phase": phase.name,
        "t_s": float(s.time_s),
        "target_mps": phase.speed_mps,
        "ulc_ref_mps": float(s.ulc_vel_ref_mps),
        "speed_mps": float(sim.speed_mps[0]),
        "speed_max_mps": speed_max if math.isfinite(speed_max) else float("nan"),
        "engine_rpm": float(s.engine_rpm),
        "cvt_ratio": float(s.cvt_ratio),
        "gear": gear_name,
        "steering_wheel_deg": float(s.steering_wheel_deg),
        "steering_wheel_max_deg": steer_abs_max,
        "fuel_g": 1e3 * float(s.fuel_used_kg),
        "sinkage_max_mm": 1e3 * sinkage_max,
        "surface_end": under,
        "surfaces_passed": passed,
        "dbw": _engaged(s),
        "x_m": float(s.position_m[0]),
        "y_m": float(s.position_m[1]),
        "wall_s": wall_s,
    }


def drive(seconds: float = DEFAULT_SECONDS, seed: int = DEFAULT_SEED, out=None) -> dict:
    """Runs the scripted drive, prints the tables to ``out`` (default stdout) and returns a summary."""
    out = sys.stdout if out is None else out
    if not (math.isfinite(seconds) and seconds > 0.0):
        raise ValueError(f"seconds = {seconds!r}: expected a positive number of simulated seconds")
    w = out.write
    wall0 = time.perf_counter()
    terrain = make_terrain(seed)
    sim = RangerSim(1, overrides={"driveline.default_gear": GEAR_PARK}, terrain=terrain)
    sim.reset(x_m=START_XY[0], y_m=START_XY[1], yaw_rad=0.0)
    names = terrain.surfaces.names
    setup_s = time.perf_counter() - wall0

    scale = seconds / PHASES[-1].end_s
    steps_total = max(1, int(round(seconds / (CONTROL_TICKS * DT_S))))
    ends = [max(1, int(round(p.end_s * scale / (CONTROL_TICKS * DT_S)))) for p in PHASES]
    ends[-1] = steps_total
    s = sim.state[0]
    rows = []
    drive_s = 0.0
    for k, phase in enumerate(PHASES):
        rows.append(_run_phase(sim, phase, k, ends, names))
        drive_s += rows[-1].pop("wall_s")

    sim_s = float(s.time_s)
    sim_s = float(s.time_s)
    summary = {"rows": rows, "sim_s": sim_s, "drive_wall_s": drive_s, "setup_wall_s": setup_s,
               "real_time_factor": sim_s / drive_s if drive_s > 0 else math.inf,
               "ledger": sim.ledger(0), "diverged": bool(s.diverged), "rolled_over": bool(s.rolled_over)}

    w("acres_gym demo: a scripted drive through the DBW layer\n")
    w(f"  terrain: rough grass (seed {seed}, {ROUGHNESS_M:g} m RMS) with a dry sand patch\n")
    for line in terrain.describe().splitlines():
        w(f"    {line.strip()}\n")
    w(f"  vehicle: Polaris Ranger CREW XP 1000, parked at ({START_XY[0]:g}, {START_XY[1]:g}) m heading +x; "
      f"DBW messages at {1.0 / (CONTROL_TICKS * DT_S):g} Hz ({CONTROL_TICKS} ticks per control step), on the "
      "calling thread\n\n")
    w("Phases (values at the end of each phase; 'max' over the phase)\n")
    headers = ("phase", "t s", "target", "ULC ref", "speed", "max", "rpm", "CVT", "gear", "wheel deg",
               "|max|", "fuel g", "sink mm", "x, y m", "DBW", "surfaces (end; passed)")
    left = {"phase", "gear", "DBW", "surfaces (end; passed)"}
    table = []
    for r in rows:
        passed = ",".join(r["surfaces_passed"])
        table.append((r["phase"], f"{r['t_s']:.1f}", f"{r['target_mps']:.1f}", f"{r['ulc_ref_mps']:.2f}",
                      _num(r["speed_mps"], 2), _num(r["speed_max_mps"], 2), f"{r['engine_rpm']:.0f}",
                      f"{r['cvt_ratio']:.2f}", r["gear"], _num(r["steering_wheel_deg"], 1),
                      f"{r['steering_wheel_max_deg']:.1f}", f"{r['fuel_g']:.1f}", f"{r['sinkage_max_mm']:.1f}",
                      f"{r['x_m']:.0f}, {r['y_m']:.0f}", r["dbw"], f"{r['surface_end']}; {passed}"))
    widths = [max(len(h), *(len(t[i]) for t in table)) for i, h in enumerate(headers)]

    def line(cells):
        return "  ".join(c.ljust(wd) if h in left else c.rjust(wd)
                         for h, c, wd in zip(headers, cells, widths, strict=True)).rstrip() + "\n"

    w(line(headers))
    w(line(["-" * wd for wd in widths]))
    for cells in table:
        w(line(cells))
    w("  target: ULC velocity command; ULC ref: the ULC's speed reference (vel_ref); speed / max: the CG's "
      "forward speed, m/s;\n  rpm: engine; CVT: belt ratio; wheel deg: steering wheel angle; fuel g: used "
      "since the start;\n  sink mm: largest wheel sinkage; DBW: engaged subsystems; surfaces: under the "
      "wheels at the end; every surface a wheel touched in the phase.\n")
    for r in rows:
        target, speed = r["target_mps"], r["speed_mps"]
        if abs(speed - target) > max(0.1 * target, 0.2):
            side = "below" if speed < target else "above"
            w(f"  note: '{r['phase']}' ended at {speed:.2f} m/s, {abs(speed - target):.2f} m/s {side} its "
              f"{target:g} m/s target (ULC speed reference {r['ulc_ref_mps']:.2f} m/s)\n")
    if summary["diverged"] or summary["rolled_over"]:
        w(f"  WARNING: the vehicle {'diverged' if summary['diverged'] else 'rolled over'}\n")
    w("\nEnergy ledger (since the start)\n")
    w(sim.ledger_table(0) + "\n\n")
    w(f"Simulated {sim_s:.1f} s ({int(s.tick)} ticks) in {drive_s:.3f} s of wall time: real-time factor "
      f"{summary['real_time_factor']:,.0f}x (setup: terrain and vehicle {setup_s:.2f} s)\n")
    return summary


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="acres-demo", description=(
        "A scripted drive through the DBW layer on rough grass with a sand patch: enable, shift to H, "
        "ULC velocity 5, 10 (along an S) and 3 m/s, stop and park; prints a table per phase and the "
        "energy ledger."))
    parser.add_argument("--seconds", type=float, default=DEFAULT_SECONDS,
                        help=f"simulated seconds (default {DEFAULT_SECONDS:g}); the phases scale with it")
    parser.add_argument("--seed", type=seed_argument, default=DEFAULT_SEED,
                        help=f"terrain seed (default {DEFAULT_SEED})")
    args = parser.parse_args(argv)
    if not (math.isfinite(args.seconds) and args.seconds > 0.0):
        parser.error(f"--seconds must be a positive number, got {args.seconds}")
    drive(args.seconds, args.seed)
    return 0


if __name__ == "__main__":
    sys.exit(main())
