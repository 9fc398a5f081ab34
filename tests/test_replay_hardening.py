"""``acres-replay`` at the edges: over-long cells, unwritable outputs, broken pipes and run-length caps end
with exit status 2 and one line on stderr, never a traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from acres_gym.vehicle.replay import MAX_DURATION_S, main


def bad_input(capsys, argv) -> str:
    with pytest.raises(SystemExit) as info:
        main(argv)
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return err


def test_over_long_cell_is_a_bad_line(tmp_path, capsys):
    log = tmp_path / "long.csv"
    log.write_text("time_s,steer_cmd\n0,1\n0.05," + "1" * 131_073 + "\n")
    err = bad_input(capsys, [str(log), "--out", str(tmp_path / "out.csv")])
    assert f"{log}: line 3" in err and "131,072 characters" in err


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_write_error_is_exit_status_2(tmp_path, capsys):
    log = tmp_path / "log.csv"
    log.write_text("time_s,enable\n0,1\n")
    err = bad_input(capsys, [str(log), "--out", "/dev/full"])
    assert "--out /dev/full: cannot write" in err and "No space left" in err


def test_message_at_a_million_seconds_is_refused_before_running(tmp_path, capsys):
    log = tmp_path / "far.csv"
    log.write_text("time_s,enable\n0,1\n1e6,1\n")
    err = bad_input(capsys, [str(log), "--out", str(tmp_path / "out.csv")])
    assert "1e+06 s" in err and f"cap of {MAX_DURATION_S:g} s" in err and "--max-duration" in err
    assert not (tmp_path / "out.csv").exists()
    err = bad_input(capsys, [str(log), "--duration", "7200", "--out", str(tmp_path / "out.csv")])
    assert "--duration 7200 s" in err


def test_cap_is_overridable(tmp_path):
    log = tmp_path / "log.csv"
    log.write_text("time_s,enable\n0,1\n4,1\n")
    out = tmp_path / "out.csv"
    with pytest.raises(SystemExit):
        main([str(log), "--max-duration", "2", "--out", str(out), "--out-hz", "10"])
    assert main([str(log), "--max-duration", "6", "--out", str(out), "--out-hz", "10"]) == 0
    assert len(out.read_text().splitlines()) == 1 + 51  # header, 0 to 5 s at 10 Hz


def test_broken_pipe_is_exit_status_2_without_traceback(tmp_path):
    log = tmp_path / "log.csv"
    log.write_text("time_s,enable\n0,1\n")
    # 20 s at 120 Hz: about 1.5 MB of rows, far more than a pipe buffer
    proc = subprocess.Popen([sys.executable, "-m", "acres_gym.vehicle.replay", str(log), "--duration", "20"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=Path(__file__).parent)
    assert proc.stdout.readline().startswith(b"time_s,")
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=300) == 2
    assert "Traceback" not in err
    assert "broken pipe" in err and len(err.strip().splitlines()) == 1
