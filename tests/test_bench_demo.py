"""The benchmark script and the demo drive run to the end and print their tables (no timing checks:
the figures depend on the machine)."""

import json
import subprocess
import sys

import pytest


def run_module(*args: str, timeout: float = 600.0) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", *args], capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def bench(tmp_path_factory):
    path = tmp_path_factory.mktemp("bench") / "bench.json"
    return run_module("acres_gym.tools.bench", "--quick", "--json", str(path)), path


@pytest.fixture(scope="module")
def demo():
    return run_module("acres_gym.tools.demo", "--seconds", "10")


def test_bench_quick_prints_the_table(bench):
    result, _ = bench
    assert result.returncode == 0, result.stderr
    out = result.stdout
    for heading in ("acres_gym benchmark", "CPU cores", "os.cpu_count()", "numba threads",
                    "first RangerSim.step call", "per control step", "(6 ticks per call)", "long call",
                    "speed-up over N=1", "target", "status"):
        assert heading in out, heading
    for case in ("N=1 flat dry asphalt, throttle 60 %", "N=1 flat dry sand, throttle 60 %",
                 "N=1 DBW: steering angle + ULC 8 m/s", "N=64 flat dry asphalt, throttle 60 %",
                 "N=64 flat dry asphalt, throttle 60 %, one thread"):
        assert case in out, case
    assert "PASS" in out or "BELOW" in out


def test_bench_json_holds_the_figures(bench):
    result, path = bench
    assert result.returncode == 0, result.stderr
    data = json.loads(path.read_text())
    assert data["quick"] is True
    assert data["cpu_count"] >= 1 and data["numba_threads"] >= 1
    assert data["first_step_s"] > 0.0
    cases = {row["case"]: row for row in data["rows"]}
    flat = cases["N=1 flat dry asphalt, throttle 60 %"]
    assert flat["per_control_step"]["best_ticks_per_s"] > 0.0
    assert flat["long_call"]["best_ticks_per_s"] > 0.0
    assert flat["status_per_control_step"] in ("PASS", "BELOW")
    batch = cases["N=64 flat dry asphalt, throttle 60 %"]
    assert batch["n"] == 64 and batch["speedup_long_call"] > 0.0
    assert cases["N=1 DBW: steering angle + ULC 8 m/s"]["long_call"] is None


def test_bench_help():
    result = run_module("acres_gym.tools.bench", "--help", timeout=120.0)
    assert result.returncode == 0
    assert "--quick" in result.stdout and "--json" in result.stdout


def test_demo_runs_and_prints_its_tables(demo):
    assert demo.returncode == 0, demo.stderr
    out = demo.stdout
    for heading in ("acres_gym demo", "rough grass", "dry sand patch", "Phases", "target", "speed", "rpm",
                    "CVT", "gear", "wheel deg", "fuel g", "surfaces", "Energy ledger", "fuel_j",
                    "residual_j", "wall time", "real-time factor"):
        assert heading in out, heading
    for phase in ("enable DBW, shift P->H", "ULC 5 m/s, straight", "ULC 10 m/s, gentle S",
                  "ULC 3 m/s, sand patch", "ULC 0 m/s: stop", "shift to P, hold"):
        assert phase in out, phase
    assert "Simulated 10.0 s (1200 ticks)" in out


def test_demo_refuses_a_bad_duration():
    result = run_module("acres_gym.tools.demo", "--seconds", "-1", timeout=120.0)
    assert result.returncode == 2
    assert "--seconds" in result.stderr
