"""Example logs shipped with the package, named on the command line: ``--list-examples`` lists each with a
line, ``--example NAME`` runs one as its path would; unknown names and kinds are one-line errors."""

from __future__ import annotations

import pytest

from acres_gym.paths import config_path
from acres_gym.vehicle.replay import EXAMPLE_ABOUT, example_logs, main


def test_every_shipped_example_is_listed_with_a_line(capsys):
    shipped = sorted(p.name for p in config_path("replay").iterdir() if p.suffix in (".csv", ".mcap", ".db3"))
    assert sorted(example_logs()) == shipped and "example_drive.mcap" in shipped
    assert main(["--list-examples"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == len(shipped)
    for name, line in zip(shipped, lines, strict=True):
        stem, kind, about = line.split(maxsplit=2)
        assert stem == name.rsplit(".", 1)[0] and kind == ("bag" if name.endswith(".mcap") else "csv")
        assert about == EXAMPLE_ABOUT[name]


@pytest.mark.parametrize("name", ["example_commands", "example_commands.csv"])
def test_example_runs_as_its_path(tmp_path, name):
    by_name, by_path = tmp_path / "by_name.csv", tmp_path / "by_path.csv"
    assert main(["--example", name, "--out", str(by_name), "--out-hz", "10"]) == 0
    assert main([str(config_path("replay", "example_commands.csv")), "--out", str(by_path), "--out-hz", "10"]) == 0
    assert by_name.read_text() == by_path.read_text() and len(by_name.read_text().splitlines()) == 1 + 251


def test_example_bag_replays_and_converts(tmp_path, capsys):
    pytest.importorskip("rosbags")
    from acres_gym.vehicle.bags import to_csv_main

    out = tmp_path / "drive.csv"
    assert main(["--example", "example_drive", "--out", str(out), "--out-hz", "20"]) == 0
    assert "842 command messages on 5 topics" in capsys.readouterr().err
    assert len(out.read_text().splitlines()) == 1 + 300  # 0 to 14.95 s (the last command at 13.95 s, + 1 s)
    commands = tmp_path / "commands.csv"
    assert to_csv_main(["--example", "example_drive", "--out", str(commands)]) == 0
    assert commands.read_text().startswith("time_s,enable,steer_mode,steer_cmd")
    assert to_csv_main(["--list-examples"]) == 0
    assert capsys.readouterr().out.split()[0] == "example_drive"


@pytest.mark.parametrize(("argv", "expected"), [
    (["--example", "nope"], "--example 'nope': no such example CSV or bag log; examples: "),
    ([], "give a commands path, or --example NAME"),
    (["x.csv", "--example", "example_commands"], "give a commands path or --example example_commands, not both"),
])
def test_example_errors(capsys, argv, expected):
    with pytest.raises(SystemExit) as info:
        main(argv)
    assert info.value.code == 2
    assert expected in capsys.readouterr().err


def test_bag_tools_take_only_bag_examples(capsys):
    pytest.importorskip("rosbags")
    from acres_gym.vehicle.bags import to_csv_main

    with pytest.raises(SystemExit) as info:
        to_csv_main(["--example", "example_commands"])
    assert info.value.code == 2
    assert "no such example bag log; examples: example_drive" in capsys.readouterr().err
