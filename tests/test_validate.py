"""The validation table's CLI: rows, exit status, JSON output."""

import io
import json
from pathlib import Path

import pytest

from acres_gym.tools import validate


def test_table_rows_and_exit_status(tmp_path):
    out = tmp_path / "rows.json"
    assert validate.main(["--only", "static", "--json", str(out)]) == 0
    rows = json.loads(out.read_text())
    assert len(rows) == sum("static" in c.name.lower() for c in validate.CHECKS) >= 3
    for row in rows:
        assert {"name", "measured", "low", "high", "unit", "source", "kind", "pass"} <= set(row)
        assert row["pass"] is True


def test_a_failing_row_fails_the_run():
    checks = [validate.Check("always one", "1", 2.0, 3.0, "test", lambda: 1.0, validate.INDEPENDENT),
              validate.Check("raises", "1", 0.0, 1.0, "test", lambda: 1 / 0, validate.CONSISTENCY)]
    stream = io.StringIO()
    rows = validate.run(checks, stream=stream)
    assert [r["pass"] for r in rows] == [False, False]
    text = stream.getvalue()
    assert "FAIL" in text and "ZeroDivisionError" in text and "0 of 2 checks pass" in text


def test_every_row_says_what_kind_of_check_it_is():
    """Each row is an independent reference, a consistency check of the model against its own parameters
    or formulas, or a project acceptance band; the rows the audit named are consistency checks, and no
    row whose source is a band this project set is called independent."""
    kinds = {c.name: c.kind for c in validate.CHECKS}
    assert set(kinds.values()) == {validate.INDEPENDENT, validate.CONSISTENCY, validate.ACCEPTANCE}
    for c in validate.CHECKS:
        if "acceptance band" in c.source:
            assert c.kind != validate.INDEPENDENT, c.name
    assert kinds["dry sand: motion resistance at 5 m/s"] == validate.INDEPENDENT
    sand = next(c for c in validate.CHECKS if c.name == "dry sand: motion resistance at 5 m/s")
    assert (sand.low, sand.high) == (0.1, 0.2)  # the source's range, f_r 0.1-0.2
    named = ("static: largest corner load error", "top speed, L (rev limited)",
             "DBW curvature 0.05 1/m: angle - kinematic map", "DBW brake 0->40 bar: peak build-up rate / slew",
             "DBW ULC 0->5 m/s at 1 m/s2: overshoot", "DBW ULC 0->5 m/s: error after 8 s")
    for name in named:
        assert kinds[name] == validate.CONSISTENCY, name
    assert kinds["static: sum of wheel loads / m g"] == validate.INDEPENDENT
    assert kinds["60 s cycle: ledger residual / fuel"] == validate.INDEPENDENT


def test_kind_column_in_table_and_rows():
    checks = [validate.Check("a law", "1", 0.0, 2.0, "test", lambda: 1.0, validate.INDEPENDENT),
              validate.Check("own parameter", "1", 0.0, 2.0, "test", lambda: 1.0, validate.CONSISTENCY)]
    stream = io.StringIO()
    rows = validate.run(checks, stream=stream)
    assert [r["kind"] for r in rows] == [validate.INDEPENDENT, validate.CONSISTENCY]
    lines = stream.getvalue().splitlines()
    assert "kind" in lines[0].split()
    assert "1 independent" in lines[-1] and "1 consistency" in lines[-1]
    try:
        validate.Check("no kind", "1", 0.0, 1.0, "test", lambda: 1.0, "plausible")
    except ValueError as exc:
        assert "plausible" in str(exc) and validate.INDEPENDENT in str(exc)
    else:
        raise AssertionError("a row of an unknown kind was accepted")


@pytest.mark.parametrize("document", ["docs/validation.md", "README.md"])
def test_validation_page_and_readme_state_the_count_of_each_kind(document):
    page = " ".join((Path(__file__).resolve().parents[1] / document).read_text(encoding="utf-8").split())
    independent = sum(c.kind == validate.INDEPENDENT for c in validate.CHECKS)
    consistency = sum(c.kind == validate.CONSISTENCY for c in validate.CHECKS)
    assert f"{independent} rows are independent references" in page
    assert f"{consistency} are consistency checks" in page
    acceptance = sum(c.kind == validate.ACCEPTANCE for c in validate.CHECKS)
    assert f"{acceptance} are project acceptance bands" in page
    if document == "README.md":
        assert f"of its {len(validate.CHECKS)} rows" in page


def test_top_speed_row_checks_the_reached_speed_against_the_parameter():
    row = next(c for c in validate.CHECKS if c.name.startswith("top speed H"))
    assert "engine.top_speed_mps" in row.name and row.unit == "1"
    assert 0.98 <= row.low < 1.0 < row.high <= 1.02
