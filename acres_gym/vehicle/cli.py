"""What the vehicle tools' command lines share (``acres-replay``, ``acres-bag-to-csv``, ``acres-calibrate``):
the example logs shipped with the package (``--example``, ``--list-examples``), one-line errors with exit
status 2 (``fail``) and an output file or stdout that reports a full disk or a closed pipe (``write_output``).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from acres_gym.vehicle.command_log import ReplayInputError

EXAMPLES_SUBDIR = "replay"
# what each shipped example log holds (``--list-examples``); a file without an entry is listed without one
EXAMPLE_ABOUT: dict[str, str] = {
    "example_commands.csv": "ULC speed steps to 5 m/s with curvature steering through a curve, then 20 bar of "
                            "brake to a stop (24 s)",
    "pedals_angle_percent.csv": "throttle (percent, raw pedal) and brake (percent, pressure) commands, steering "
                                "by wheel angle then percent, a drive-mode switch (20 s)",
    "ulc_accel_yaw_rate.csv": "ULC acceleration commands with jerk limits and coasting, steering by yaw rate, in "
                              "low gear (16 s)",
    "driver_timeouts_curvature.csv": "the driver's pedals and wheel, then DBW curvature, throttle and ULC "
                                     "commands taking over (24 s)",
    "example_drive.mcap": "a bag of commands and noisy reports of the model with eight parameters moved "
                          "(steering, throttle and brake steps, 14 s): a log acres-calibrate can fit",
}
EXAMPLE_SUFFIXES = (".csv", ".db3", ".mcap")


# --------------------------------------------------------------------------- example logs


def example_logs() -> dict[str, Path]:
    """The example logs shipped with the package (``<config dir>/replay``): file name -> path, sorted."""
    from acres_gym.paths import config_path

    folder = config_path(EXAMPLES_SUBDIR)
    if not folder.is_dir():
        return {}
    return {p.name: p for p in sorted(folder.iterdir()) if p.suffix.lower() in EXAMPLE_SUFFIXES and p.is_file()}


def example_path(name: str, kinds: Sequence[str] = ("csv", "bag")) -> Path:
    """The example log called ``name`` (its file name, with or without the suffix) of one of ``kinds``
    ("csv": a CSV command log, "bag": a ROS 2 bag), else a ``ReplayInputError`` listing the examples."""
    examples = {n: p for n, p in example_logs().items()
                if ("bag" if p.suffix.lower() in (".db3", ".mcap") else "csv") in kinds}
    stems = {p.stem: n for n, p in examples.items()}
    key = name if name in examples else stems.get(name)
    if key is None:
        what = " or ".join("bag" if k == "bag" else "CSV" for k in kinds)
        known = ", ".join(Path(n).stem for n in examples) or "none"
        raise ReplayInputError(f"--example {name!r}: no such example {what} log; examples: {known} "
                               "(--list-examples describes them)")
    return examples[key]


def example_listing(kinds: Sequence[str] = ("csv", "bag")) -> str:
    """One line per example log of ``kinds``: its name, kind and what it holds."""
    lines = []
    for name, path in example_logs().items():
        kind = "bag" if path.suffix.lower() in (".db3", ".mcap") else "csv"
        if kind in kinds:
            lines.append(f"{path.stem:30} {kind:4} {EXAMPLE_ABOUT.get(name, '')}".rstrip())
    return "\n".join(lines)


def add_example_options(parser: argparse.ArgumentParser, what: str = "log") -> None:
    """``--example NAME`` and ``--list-examples`` (``example_log`` reads them)."""
    parser.add_argument("--example", default=None, metavar="NAME",
                        help=f"use an example {what} shipped with the package instead of a path "
                             "(--list-examples lists them)")
    parser.add_argument("--list-examples", action="store_true",
                        help="list the example logs shipped with the package and stop")


def example_log(parser: argparse.ArgumentParser, args, positional: str, kinds: Sequence[str] = ("csv", "bag")):
    """The log path of a command line with ``add_example_options``: the positional argument
    ``positional`` or the path of ``--example``; None after printing ``--list-examples``."""
    given = getattr(args, positional)
    if args.list_examples:
        print(example_listing(kinds))
        return None
    if args.example is not None:
        if given is not None:
            raise ReplayInputError(f"give a {positional} path or --example {args.example}, not both")
        return str(example_path(args.example, kinds))
    if given is None:
        raise ReplayInputError(f"give a {positional} path, or --example NAME for a log shipped with the package "
                               "(--list-examples lists them)")
    return given


def fail(parser: argparse.ArgumentParser, exc: Exception):
    """Exit with status 2 and the error as one line on stderr (after the usage for an error in the command
    line; an error in a log's data, such as a ``BagError``, comes alone)."""
    message = " ".join(str(exc).split())
    if getattr(exc, "with_usage", True):
        parser.error(message)
    parser.exit(2, f"{parser.prog}: error: {message}\n")


def write_output(parser: argparse.ArgumentParser, path: str, write) -> None:
    """Run ``write(file)`` on the text file ``path`` ("-" = stdout); an output that cannot be opened or
    written, or a reader that closes the pipe early, ends the program with exit status 2 and one line
    on stderr (no traceback)."""
    if path == "-":
        try:
            write(sys.stdout)
            sys.stdout.flush()
        except BrokenPipeError:
            # the reader went away (``| head``): silence the interpreter's final flush of stdout too
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            parser.exit(2, f"{parser.prog}: error: output closed early (broken pipe); the run stopped\n")
        except OSError as exc:
            parser.exit(2, f"{parser.prog}: error: cannot write the output to stdout: {exc.strerror or exc}\n")
        return
    try:
        out = open(path, "w", newline="", encoding="utf-8")
    except OSError as exc:
        parser.error(f"--out {path}: {exc.strerror or exc}")
    try:
        with out:
            write(out)
    except OSError as exc:
        parser.exit(2, f"{parser.prog}: error: --out {path}: cannot write: {exc.strerror or exc}\n")
