"""Performance table of the simulator: ``python -m acres_gym.tools.bench`` (``make bench``, ``acres-bench``).

Every figure is measured in this process, on this machine:

- the CPU cores (``os.cpu_count()``, the cores this process may use, numba's thread count) and the
  load average, since other processes on the machine slow every figure down;
- the time of the first ``RangerSim.step`` call (numba compiling ``run_ticks``, or loading it from the
  cache), shown apart and excluded from the throughput;
- physics ticks per second of wall time (vehicle-ticks per second for N > 1), each case timed two ways:
  *per control step*, ``sim.step(6)`` called in a Python loop as an environment does at 20 Hz (the
  Python call overhead included), and *long call*, ``sim.step(12000)`` (100 s of simulated time per
  call). Each way is timed in several runs from a fresh reset; the table shows the fastest run (the one
  least disturbed by other processes), the JSON file also the mean of all runs;
- the CPU time this process got over the wall time while timing (about 1 per busy core: well below 1
  means other processes took the core, about 2 means two threads worked);
- for N = 64, the speed-up over the N = 1 figure of the same column.

Cases: N = 1 on flat dry asphalt with the driver's throttle at 60 % (on all numba threads, as a user
gets it, and on one thread); the same on dry sand; N = 1 under DBW control (system enable, steering
angle commands and a ULC velocity command, every subsystem's enable and fresh flag set each control
step); N = 64 on flat dry asphalt on all numba threads (the kernel ``RangerSim.step`` measures to be faster:
the parallel one, unless other processes keep the cores busy; the table notes it), and on one thread
(``numba.set_num_threads(1)``).

The project's targets are printed beside the figures (``PASS`` / ``BELOW``): at least 100,000 ticks/s
for N = 1 on one core, and N = 64 on 2 cores at least 1.8 times the N = 1 figure. It is a benchmark,
not a test: the exit status is 0 whatever the figures.

Options: ``--quick`` (short runs, rough figures), ``--json FILE`` (also write the figures as JSON).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numba

from acres_gym.constants import STEER_ANGLE, ULC_VELOCITY
from acres_gym.dbw.command import send
from acres_gym.model.tick import run_ticks_serial
from acres_gym.sim import RangerSim
from acres_gym.terrain import flat

CONTROL_TICKS = 6  # one control step at 20 Hz
LONG_TICKS = 12_000  # one long call: 100 s of simulated time
QUICK_LONG_TICKS = 1_200
MIN_SECONDS = 0.5  # wall time timed per figure, at least
QUICK_MIN_SECONDS = 0.05
MIN_RUNS = 3  # timed runs per figure, at least
QUICK_MIN_RUNS = 1
N_BATCH = 64
THROTTLE_PCT = 60.0

TARGET_TICKS_PER_S = 100_000.0  # N = 1 on one core
TARGET_SPEEDUP = 1.8  # N = 64 on 2 cores over N = 1


@dataclass
class Timing:
    """The timed runs of one figure: vehicle-ticks, wall and CPU seconds of each run."""

    ticks: list[int] = field(default_factory=list)
    wall_s: list[float] = field(default_factory=list)
    cpu_s: list[float] = field(default_factory=list)

    @property
    def best(self) -> float:
        """The fastest run's vehicle-ticks per second."""
        return max(t / w for t, w in zip(self.ticks, self.wall_s, strict=True))

    @property
    def mean(self) -> float:
        """All runs together: vehicle-ticks per second."""
        return sum(self.ticks) / sum(self.wall_s)

    @property
    def cpu_share(self) -> float:
        """CPU time of this process over wall time while timing."""
        return sum(self.cpu_s) / sum(self.wall_s)

    def as_dict(self) -> dict:
        return {"best_ticks_per_s": self.best, "mean_ticks_per_s": self.mean, "cpu_share": self.cpu_share,
                "runs": len(self.ticks), "ticks": self.ticks, "wall_s": self.wall_s, "cpu_s": self.cpu_s}


@dataclass
class Row:
    """One line of the table: a case timed per control step and in long calls."""

    case: str
    n: int
    threads: int
    per_control_step: Timing
    long_call: Timing | None = None
    call_overhead_us: float = math.nan  # one sim.step(0) call: argument checks, dispatch, thread launch
    speedup: tuple[float, float | None] | None = None  # over the N = 1 row, per column
    target: str = "-"
    status: tuple[str, str] = ("-", "-")
    note: str = ""

    def as_dict(self) -> dict:
        return {
            "case": self.case, "n": self.n, "threads": self.threads,
            "call_overhead_us": self.call_overhead_us,
            "per_control_step": self.per_control_step.as_dict(),
            "long_call": None if self.long_call is None else self.long_call.as_dict(),
            "speedup_per_control_step": None if self.speedup is None else self.speedup[0],
            "speedup_long_call": None if self.speedup is None else self.speedup[1],
            "target": self.target,
            "status_per_control_step": self.status[0], "status_long_call": self.status[1],
            "note": self.note,
        }


def _usable_cores() -> int | None:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return None


def _load_average() -> tuple[float, float, float] | None:
    try:
        return os.getloadavg()
    except (AttributeError, OSError):
        return None


def _time_runs(sim, ticks_per_call: int, chunk_ticks: int, min_seconds: float, min_runs: int,
               setup: Callable, control: Callable | None = None) -> Timing:
    """Times runs of ``chunk_ticks`` ticks, each from a fresh reset, until at least ``min_runs`` runs and
    ``min_seconds`` of stepping were timed (resets and set-up are not timed).

    ``control(sim, k)`` is called before the k-th ``step`` call; its cost is part of the timing, as in an
    environment that writes its commands every control step."""
    calls = max(1, chunk_ticks // ticks_per_call)
    timing = Timing()
    while len(timing.ticks) < min_runs or sum(timing.wall_s) < min_seconds:
        sim.reset()
        setup(sim)
        step = sim.step
        if control is None:
            c0, t0 = time.process_time(), time.perf_counter()
            for _ in range(calls):
                step(ticks_per_call)
            t1, c1 = time.perf_counter(), time.process_time()
        else:
            c0, t0 = time.process_time(), time.perf_counter()
            for k in range(calls):
                control(sim, k)
                step(ticks_per_call)
            t1, c1 = time.perf_counter(), time.process_time()
        timing.ticks.append(calls * ticks_per_call * sim.n)
        timing.wall_s.append(t1 - t0)
        timing.cpu_s.append(c1 - c0)
    return timing


def _call_overhead_us(sim, calls: int) -> float:
    """Wall time of one ``sim.step(0)`` call (no tick: the cost of a call itself), microseconds; the
    fastest of five batches of ``calls`` calls."""
    step = sim.step
    best = math.inf
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(calls):
            step(0)
        best = min(best, (time.perf_counter() - t0) / calls)
    return best * 1e6


def _throttle_setup(sim) -> None:
    sim.commands.driver_throttle_pct = THROTTLE_PCT


def _dbw_setup(sim) -> None:
    _dbw_control(sim, 0)


def _dbw_control(sim, k: int) -> None:
    """One control step of DBW commands: system enable, a steering angle (a slow weave of the steering
    wheel) and a ULC velocity command, each with its enable and fresh flag."""
    c = sim.commands
    send(c, "Enable", data=True)
    # steering wheel, deg: a 6.3 s period at 20 Hz
    send(c, "SteeringCmd", cmd_type=STEER_ANGLE, cmd=90.0 * math.sin(0.05 * k), enable=True)
    send(c, "UlcCmd", cmd_type=ULC_VELOCITY, cmd=8.0, enable=True)


def _status(value: float | None, threshold: float) -> str:
    if value is None:
        return "-"
    return "PASS" if value >= threshold else "BELOW"


def _cache_source(dispatcher) -> str:
    stats = getattr(dispatcher, "stats", None)
    if stats is None:
        return "JIT disabled"
    if sum(stats.cache_hits.values()) > 0:
        return "loaded from the numba cache"
    if sum(stats.cache_misses.values()) > 0:
        return "compiled by numba: the cache was cold"
    return "compiled by numba"


def run(quick: bool = False, out=None) -> dict:
    """Measures every figure, prints the table to ``out`` (default stdout) and returns the figures."""
    out = sys.stdout if out is None else out
    load_before = _load_average()

    min_s = QUICK_MIN_SECONDS if quick else MIN_SECONDS
    min_runs = QUICK_MIN_RUNS if quick else MIN_RUNS
    long_ticks = QUICK_LONG_TICKS if quick else LONG_TICKS
    threads = numba.get_num_threads()

    # --- the first step call alone: numba compiles the one-vehicle kernel or loads it from the cache
    asphalt = flat("dry_asphalt")
    t0 = time.perf_counter()
    sim1 = RangerSim(1, terrain=asphalt)
    construct_s = time.perf_counter() - t0
    _throttle_setup(sim1)
    t0 = time.perf_counter()
    sim1.step(CONTROL_TICKS)
    first_step_s = time.perf_counter() - t0
    first_source = _cache_source(run_ticks_serial)
    try:
        layer = numba.threading_layer()
    except ValueError:
        layer = "unknown"

    def measure(case, sim, setup, control=None, long=True, n_threads=threads, note=""):
        numba.set_num_threads(n_threads)
        try:
            sim.reset()
            setup(sim)
            sim.step(CONTROL_TICKS)  # warm-up, not timed
            overhead_us = _call_overhead_us(sim, 200 if quick else 2000)
            per_step = _time_runs(sim, CONTROL_TICKS, long_ticks, min_s, min_runs, setup, control)
            long_call = _time_runs(sim, long_ticks, long_ticks, min_s, min_runs, setup) if long else None
        finally:
            numba.set_num_threads(threads)
        return Row(case, sim.n, n_threads, per_step, long_call, overhead_us, note=note)

    def single_target(row: Row) -> Row:
        row.target = f">= {TARGET_TICKS_PER_S:,.0f}/s"
        row.status = (_status(row.per_control_step.best, TARGET_TICKS_PER_S),
                      _status(None if row.long_call is None else row.long_call.best, TARGET_TICKS_PER_S))
        return row

    rows: list[Row] = []
    base = single_target(measure("N=1 flat dry asphalt, throttle 60 %", sim1, _throttle_setup))
    rows.append(base)
    if threads > 1:
        rows.append(single_target(measure("N=1 flat dry asphalt, throttle 60 %, one thread", sim1,
                                          _throttle_setup, n_threads=1)))
    rows.append(single_target(measure("N=1 flat dry sand, throttle 60 %",
                                      RangerSim(1, terrain=flat("dry_sand")), _throttle_setup)))
    rows.append(single_target(measure(
        "N=1 DBW: steering angle + ULC 8 m/s", RangerSim(1, terrain=asphalt), _dbw_setup, _dbw_control,
        long=False, note="no long call: it would hold one message, and DBW commands time out after 0.1 s")))

    sim64 = RangerSim(N_BATCH, terrain=asphalt)
    batch = [measure(f"N={N_BATCH} flat dry asphalt, throttle 60 %", sim64, _throttle_setup),
             measure(f"N={N_BATCH} flat dry asphalt, throttle 60 %, one thread", sim64, _throttle_setup,
                     n_threads=1)]
    for row in batch:
        row.speedup = (row.per_control_step.best / base.per_control_step.best,
                       row.long_call.best / base.long_call.best)
    parallel = batch[0]
    parallel.target = f">= {TARGET_SPEEDUP:g}x N=1 (2 cores)"
    if threads >= 2:
        parallel.status = (_status(parallel.speedup[0], TARGET_SPEEDUP),
                           _status(parallel.speedup[1], TARGET_SPEEDUP))
    else:
        parallel.status = ("n/a", "n/a")
        parallel.note = "one numba thread: the 2-core target does not apply"
    if threads >= 2 and not sim64.kernel_choice.parallel:  # (RangerSim.step runs the faster kernel it measures)
        parallel.note = ("the simulator measured one thread as the faster kernel on this machine now (other "
                         "processes on the cores) and ran most calls on it")
    rows.extend(batch)

    result = {
        "quick": quick,
        "python": platform.python_version(),
        "numba": numba.__version__,
        "machine": platform.machine(),
        "cpu_count": os.cpu_count(),
        "usable_cores": _usable_cores(),
        "numba_threads": threads,
        "threading_layer": layer,
        "load_average_before": load_before,
        "load_average_after": _load_average(),
        "construct_s": construct_s,
        "first_step_s": first_step_s,
        "first_step_source": first_source,
        "control_ticks": CONTROL_TICKS,
        "long_call_ticks": long_ticks,
        "min_seconds_per_figure": min_s,
        "min_runs_per_figure": min_runs,
        "targets": {"ticks_per_s_n1_one_core": TARGET_TICKS_PER_S, "speedup_n64_2_cores": TARGET_SPEEDUP},
        "rows": [r.as_dict() for r in rows],
    }
    _print_table(result, rows, out)
    return result


def _load_text(load) -> str:
    return "unknown" if load is None else " / ".join(f"{x:.2f}" for x in load)


def _print_table(result: dict, rows: list[Row], out) -> None:
    w = out.write
    w("acres_gym benchmark: figures measured in this process\n")
    w(f"  Python {result['python']} ({result['machine']}), numba {result['numba']}"
      f"{'; --quick: short runs, rough figures' if result['quick'] else ''}\n")
    w(f"  CPU cores: os.cpu_count() = {result['cpu_count']}, usable by this process = "
      f"{result['usable_cores']}; numba threads = {result['numba_threads']} "
      f"(threading layer {result['threading_layer']})\n")
    w(f"  load average (1 / 5 / 15 min): {_load_text(result['load_average_before'])} before, "
      f"{_load_text(result['load_average_after'])} after\n")
    w(f"  RangerSim(1) construction with reset: {result['construct_s']:.3f} s\n")
    w(f"  first RangerSim.step call: {result['first_step_s']:.3f} s ({result['first_step_source']}), "
      "not part of the figures below\n\n")
    w("Physics ticks per second of wall time (vehicle-ticks per second for N > 1; 120 ticks/s is real "
      "time),\n"
      f"fastest of at least {result['min_runs_per_figure']} runs and {result['min_seconds_per_figure']:g} s "
      "timed per figure. CPU use = CPU seconds of this process per wall second while timing.\n"
      "call = wall time of one sim.step(0) call (no tick: argument checks, numba dispatch, thread "
      "launch).\n\n")
    headers = (("case", ""),
               ("per control step", f"({result['control_ticks']} ticks per call)"),
               ("long call", f"({result['long_call_ticks']} ticks)"),
               ("CPU use", "step / long"),
               ("call", "step(0), us"),
               ("speed-up over N=1", "step / long"),
               ("target", ""),
               ("status", "step / long"))
    table = []
    for r in rows:
        long_best = "-" if r.long_call is None else f"{r.long_call.best:,.0f}"
        long_cpu = "-" if r.long_call is None else f"{r.long_call.cpu_share:.2f}"
        speedup = "-" if r.speedup is None else f"{r.speedup[0]:.2f}x / {r.speedup[1]:.2f}x"
        table.append((r.case, f"{r.per_control_step.best:,.0f}", long_best,
                      f"{r.per_control_step.cpu_share:.2f} / {long_cpu}", f"{r.call_overhead_us:.1f}",
                      speedup, r.target, f"{r.status[0]} / {r.status[1]}"))
    widths = [max(len(h[0]), len(h[1]), *(len(t[k]) for t in table)) for k, h in enumerate(headers)]

    def line(cells):
        return "  ".join(c.ljust(wd) for c, wd in zip(cells, widths, strict=True)).rstrip() + "\n"

    w(line([h[0] for h in headers]))
    w(line([h[1] for h in headers]))
    w(line(["-" * wd for wd in widths]))
    for cells in table:
        w(line(cells))
    notes = [(r.case, r.note) for r in rows if r.note]
    if notes:
        w("\n")
        for case, note in notes:
            w(f"  {case}: {note}\n")
    w(f"\nTargets: N=1 >= {TARGET_TICKS_PER_S:,.0f} ticks/s on one core; N={N_BATCH} on 2 cores >= "
      f"{TARGET_SPEEDUP:g}x the N=1 figure of the same column.\n"
      "PASS / BELOW compare each column with its target. A benchmark, not a test: the exit status is 0 "
      "either way.\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="acres-bench", description=(
        "Print a table of the simulator's performance measured in this process: the first step call, "
        "physics ticks per second for N = 1 (asphalt, sand, DBW control) and N = 64 (all threads, one "
        "thread), beside the project's targets."))
    parser.add_argument("--quick", action="store_true", help="short runs (rough figures in a few seconds)")
    parser.add_argument("--json", metavar="FILE", help="also write the figures to FILE as JSON")
    args = parser.parse_args(argv)
    result = run(quick=args.quick)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(result, f, indent=2)
            f.write("\n")
        print(f"\nfigures written to {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
