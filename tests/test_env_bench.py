"""The environment benchmark runs to the end and prints every row of its table (no timing checks: figures
depend on the machine)."""

from __future__ import annotations

import re

from acres_gym.envs import bench

ROWS = ["physics ceiling N = 1", "physics ceiling N = 16", "physics ceiling N = 64", "physics N = 64 on one thread",
        "single env, with resets", "single env, steps only", "vector env N = 16, with resets",
        "vector env N = 16, steps only", "vector env N = 64, with resets", "vector env N = 64, steps only"]


def test_bench_prints_every_figure_against_its_ceiling(capsys):
    bench.main(["--seconds", "0.3", "--rounds", "1", "--threads", "1", "--skip", "resets", "navigation"])
    out = capsys.readouterr().out
    for name in ROWS:
        line = next((row for row in out.splitlines() if row.startswith(name)), None)
        assert line is not None, name
        rate, ratio = (float(x) for x in line[len(name):].split())
        assert rate > 0.0 and ratio > 0.0
        if name.startswith("physics ceiling"):
            assert ratio == 1.0
    assert re.search(r"reset back to back, median / p95 +[0-9.]+ / [0-9.]+ ms \(30 resets\)", out)
    assert "Numba threads 1" in out
