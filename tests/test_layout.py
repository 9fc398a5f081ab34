"""The package layout: the kernel packages (``model``, ``dbw``, ``terrain``) import nothing above them, no module
cycle, ``terrain`` reads no ``model``, ``runtime`` no physics, and the deploy runtime no numba.

The import graph is read from the source (every ``import`` and ``from ... import`` node of every module, the
function-level ones included, relative ones resolved), so a lazy import that closes a cycle is found too.
"""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

import pytest

import acres_gym

ROOT = Path(acres_gym.__file__).resolve().parent
REPO = ROOT.parent
KERNEL_PACKAGES = ("model", "dbw", "terrain")
# what the kernels may read besides each other: constants, the record and parameter specs, the config resolver,
# and the runtime support (which reads no physics)
LEAVES = ("acres_gym.constants", "acres_gym.records", "acres_gym.schema", "acres_gym.paths", "acres_gym.runtime")
# the source folders of the package's parts (the repository maps envs/ and agents/ into the package)
SOURCES = ((ROOT, "acres_gym"), (REPO / "envs", "acres_gym.envs"), (REPO / "agents", "acres_gym.agents"))


@cache
def _modules() -> dict[str, Path]:
    """Every acres_gym module (absolute name) and its source file."""
    found = {}
    for base, prefix in SOURCES:
        for path in sorted(base.rglob("*.py")):
            parts = list(path.relative_to(base).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found[".".join([prefix, *parts])] = path
    return found


def _read_imports(source: str, module: str, is_package: bool, known) -> set[str]:
    """Every module the code ``source`` of ``module`` imports, at any depth (absolute names; for
    ``from X import Y`` the module ``X.Y`` when ``known`` holds it, else ``X``)."""
    package = module if is_package else module.rpartition(".")[0]
    names = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = package.split(".")
                base = parts[: len(parts) - (node.level - 1)]
                origin = ".".join(base + ([node.module] if node.module else []))
            else:
                origin = node.module
            for alias in node.names:
                names.add(f"{origin}.{alias.name}" if f"{origin}.{alias.name}" in known else origin)
    return names


@cache
def _all_imports(module: str) -> frozenset[str]:
    """Every module ``module`` imports, at any depth of its code."""
    path = _modules()[module]
    return frozenset(_read_imports(path.read_text(encoding="utf-8"), module, path.name == "__init__.py",
                                   _modules()))


def _imports(path: Path) -> list[str]:
    """The acres_gym modules the file at ``path`` imports (absolute names)."""
    module = next(m for m, p in _modules().items() if p == path)
    return sorted(n for n in _all_imports(module) if n == "acres_gym" or n.startswith("acres_gym."))


def _graph() -> dict[str, set[str]]:
    """module -> the acres_gym modules it imports."""
    modules = _modules()
    return {m: {n for n in _all_imports(m) if n in modules and n != m} for m in modules}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def _in(name: str, package: str) -> bool:
    return name == package or name.startswith(package + ".")


def _package_files(package: str) -> list[Path]:
    return sorted((ROOT / package).rglob("*.py"))


def test_the_cycle_finder_finds_a_cycle():
    # the rule below can fail: a two-module cycle and a three-module one are found, a chain is not
    graph = {"a": {"b"}, "b": {"a"}, "c": {"d"}, "d": {"e"}, "e": {"c"}, "f": {"a"}}
    assert sorted(_cycles(graph)) == [["a", "b"], ["c", "d", "e"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_the_import_reader_resolves_relative_and_lazy_imports():
    source = ("import numpy\nfrom . import b\nfrom ..c import d\n"
              "def f():\n    from .e import g\n    import h.i\n")
    known = {"p.q.b", "p.c", "p.c.d"}
    assert _read_imports(source, "p.q.a", False, known) == {"numpy", "p.q.b", "p.c.d", "p.q.e", "h.i"}
    assert _read_imports("from . import b\n", "p.q", True, {"p.q.b"}) == {"p.q.b"}


def test_no_module_cycle_lazy_imports_included():
    cycles = _cycles(_graph())
    assert not cycles, cycles


def test_kernel_packages_import_only_each_other_and_the_leaf_modules():
    allowed = tuple(f"acres_gym.{p}" for p in KERNEL_PACKAGES) + LEAVES
    upward = []
    for package in KERNEL_PACKAGES:
        for path in _package_files(package):
            for name in _imports(path):
                if not any(_in(name, a) for a in allowed):
                    upward.append(f"{path.relative_to(ROOT)} imports {name}")
    assert not upward, upward


def test_terrain_imports_nothing_from_model():
    found = [f"{path.relative_to(ROOT)} imports {name}" for path in _package_files("terrain")
             for name in _imports(path) if _in(name, "acres_gym.model")]
    assert not found, found


def test_runtime_imports_no_physics():
    assert (ROOT / "runtime").is_dir()
    physics = ("acres_gym.model", "acres_gym.dbw", "acres_gym.terrain")
    found = [f"{path.relative_to(ROOT)} imports {name}" for path in _package_files("runtime")
             for name in _imports(path) if any(_in(name, p) for p in physics)]
    assert not found, found


def _closure(module: str) -> set[str]:
    """``module`` and every acres_gym module importing it runs, at any depth (the packages holding each
    included, whose ``__init__`` runs first)."""
    modules, seen, todo = _modules(), set(), [module]
    while todo:
        name = todo.pop()
        if name in seen or name not in modules:
            continue
        seen.add(name)
        parts = name.split(".")
        todo += [".".join(parts[:i]) for i in range(1, len(parts))]
        todo += [n for n in _all_imports(name) if n.startswith("acres_gym")]
    return seen


@pytest.mark.parametrize("module", ["acres_gym.vehicle.deploy", "acres_gym.deploy"])
def test_deploy_imports_no_numba(module):
    assert module in _modules()
    numba_users = sorted(m for m in _closure(module)
                         if any(_in(n, "numba") or _in(n, "acres_gym.runtime") for n in _all_imports(m)))
    assert not numba_users, numba_users


def test_the_simulator_core_does_not_import_the_tools():
    for path in sorted(ROOT.glob("*.py")):
        if path.name in ("__init__.py",):
            continue
        tools = [n for n in _imports(path) if n.startswith("acres_gym.tools")]
        assert not tools, (path.name, tools)
