"""The package layout: the kernel packages (``model``, ``dbw``, ``terrain``) import nothing above them."""

from __future__ import annotations

import ast
from pathlib import Path

import acres_gym

ROOT = Path(acres_gym.__file__).resolve().parent
KERNEL_PACKAGES = ("model", "dbw", "terrain")
# top-level modules the kernels may read: constants, the record and parameter specs, the config resolver
LEAVES = ("acres_gym.constants", "acres_gym.records", "acres_gym.schema", "acres_gym.paths")


def _imports(path: Path) -> list[str]:
    """The acres_gym modules ``path`` imports (absolute names)."""
    names = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module == "acres_gym":  # "from acres_gym import paths": the modules named
                names += [f"acres_gym.{a.name}" for a in node.names]
            else:
                names.append(node.module)
    return [n for n in names if n == "acres_gym" or n.startswith("acres_gym.")]


def test_kernel_packages_import_only_each_other_and_the_leaf_modules():
    allowed = tuple(f"acres_gym.{p}" for p in KERNEL_PACKAGES) + LEAVES
    upward = []
    for package in KERNEL_PACKAGES:
        for path in sorted((ROOT / package).glob("*.py")):
            for name in _imports(path):
                if not any(name == a or name.startswith(a + ".") for a in allowed):
                    upward.append(f"{path.relative_to(ROOT)} imports {name}")
    assert not upward, upward


def test_the_simulator_core_does_not_import_the_tools():
    for path in sorted(ROOT.glob("*.py")):
        if path.name in ("__init__.py",):
            continue
        tools = [n for n in _imports(path) if n.startswith("acres_gym.tools")]
        assert not tools or path.name in ("bags.py", "calibrate.py"), (path.name, tools)
