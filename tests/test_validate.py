"""The validation table's CLI: rows, exit status, JSON output."""

import io
import json

from acres_gym import validate


def test_table_rows_and_exit_status(tmp_path):
    out = tmp_path / "rows.json"
    assert validate.main(["--only", "static", "--json", str(out)]) == 0
    rows = json.loads(out.read_text())
    assert len(rows) == sum("static" in c.name.lower() for c in validate.CHECKS) >= 3
    for row in rows:
        assert {"name", "measured", "low", "high", "unit", "source", "pass"} <= set(row)
        assert row["pass"] is True


def test_a_failing_row_fails_the_run():
    checks = [validate.Check("always one", "1", 2.0, 3.0, "test", lambda: 1.0),
              validate.Check("raises", "1", 0.0, 1.0, "test", lambda: 1 / 0)]
    stream = io.StringIO()
    rows = validate.run(checks, stream=stream)
    assert [r["pass"] for r in rows] == [False, False]
    text = stream.getvalue()
    assert "FAIL" in text and "ZeroDivisionError" in text and "0 of 2 checks pass" in text
