"""The distribution's package list covers every folder that ships files, so building prints no setuptools
warning ("Package ... is absent from the `packages` configuration"), one per folder otherwise."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def _setuptools_config() -> dict:
    from setuptools.config.pyprojecttoml import load_file  # (a TOML reader on Python 3.10 too)

    return load_file(REPO / "pyproject.toml")["tool"]["setuptools"]


def _package_of(folder: Path, package_dirs: dict[str, str]) -> str | None:
    """The dotted package name a repository folder is installed as (through ``package-dir``)."""
    relative = folder.relative_to(REPO).as_posix()
    for package, directory in sorted(package_dirs.items(), key=lambda item: -len(item[1])):
        if relative == directory or relative.startswith(directory + "/"):
            rest = relative[len(directory):].strip("/")
            return package + ("." + rest.replace("/", ".") if rest else "")
    return None


def test_every_folder_with_package_files_is_a_listed_package():
    config = _setuptools_config()
    listed = set(config["packages"])
    package_dirs = config["package-dir"]
    missing = []
    for root in ("acres_gym", "configs", "envs", "agents"):
        for folder in [REPO / root, *sorted(p for p in (REPO / root).rglob("*") if p.is_dir())]:
            if folder.name == "__pycache__" or any(part.startswith(".") for part in folder.parts):
                continue
            shipped = [f for f in folder.iterdir() if f.is_file() and f.suffix not in (".pyc", ".nbi", ".nbc")]
            name = _package_of(folder, package_dirs)
            if shipped and name is not None and name not in listed:
                missing.append(name)
    assert not missing, f"add to [tool.setuptools] packages in pyproject.toml: {missing}"


@pytest.mark.slow
def test_the_wheel_builds_without_setuptools_warnings(tmp_path):
    pytest.importorskip("build")
    # (without PYTHONDONTWRITEBYTECODE, which makes setuptools warn that it skips byte-compiling)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    result = subprocess.run([sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(tmp_path),
                             str(REPO)], capture_output=True, text=True, cwd=REPO, timeout=600, env=env)
    assert result.returncode == 0, result.stderr[-3000:]
    output = result.stdout + result.stderr
    warnings = [line for line in output.splitlines() if "warning" in line.lower()]
    assert not warnings, "\n".join(warnings[:20])
    assert "example_drive.mcap" in output  # the example bag is package data
