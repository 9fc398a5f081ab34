"""The documentation: the MkDocs site builds with ``--strict`` (broken links fail it), its environments page is
generated from the registered environments' docstrings, and the README's links and id table are true."""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import gymnasium
import pytest
import yaml
from gymnasium.envs.registration import registry

import acres_gym  # noqa: F401  (registers the ids)
from acres_gym.paths import config_path

ROOT = Path(__file__).resolve().parents[1]


def _hook():
    """The site's hook module (``docs/hooks/environments_page.py``), loaded by its path as MkDocs loads it."""
    spec = importlib.util.spec_from_file_location("environments_page", ROOT / "docs" / "hooks" / "environments_page.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _ids() -> list[str]:
    return [env_id for env_id, spec in registry.items() if spec.namespace == "acres_gym"]


def _build(config: Path, site: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(config), "-d", str(site)],
                          cwd=ROOT, capture_output=True, text=True, timeout=600,
                          env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})


def test_site_builds_strict_with_every_id(tmp_path):
    pytest.importorskip("mkdocs")
    result = _build(ROOT / "mkdocs.yml", tmp_path / "site")
    assert result.returncode == 0, result.stdout + result.stderr
    page = (tmp_path / "site" / "environments" / "index.html").read_text(encoding="utf-8")
    for env_id in _ids():
        assert env_id in page
    assert (tmp_path / "site" / "debug_view.png").is_file()
    assert (tmp_path / "site" / "learning_curve_ppo_speed_tracking.png").is_file()
    changelog = (tmp_path / "site" / "changelog" / "index.html").read_text(encoding="utf-8")
    assert "Earlier releases" in changelog  # CHANGELOG.md is included whole


def test_strict_build_fails_on_a_broken_link(tmp_path):
    pytest.importorskip("mkdocs")
    docs = tmp_path / "docs"
    shutil.copytree(ROOT / "docs", docs, ignore=shutil.ignore_patterns("__pycache__"))
    page = docs / "training.md"
    page.write_text(page.read_text(encoding="utf-8") + "\nSee [the missing page](no_such_page.md).\n",
                    encoding="utf-8")
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    config["docs_dir"] = str(docs)
    config["hooks"] = [str(docs / "hooks" / "environments_page.py")]
    for ext in config["markdown_extensions"]:
        if isinstance(ext, dict) and "pymdownx.snippets" in ext:
            ext["pymdownx.snippets"]["base_path"] = [str(ROOT)]
    (tmp_path / "mkdocs.yml").write_text(yaml.safe_dump(config), encoding="utf-8")
    result = _build(tmp_path / "mkdocs.yml", tmp_path / "site")
    assert result.returncode != 0
    assert "no_such_page.md" in result.stdout + result.stderr


def test_environments_page_holds_each_registered_docstring():
    hook = _hook()
    text = hook.environments_markdown()
    for env_id in _ids():
        assert f"### `{env_id}`" in text
        env_class = gymnasium.envs.registration.load_env_creator(registry[env_id].entry_point)
        first = env_class.__doc__.split("## Description", 1)[1].strip().splitlines()[0].strip()
        assert first in text
        name = env_class.default_config
        config = yaml.safe_load(config_path("tasks", f"{name}.yaml").read_text(encoding="utf-8"))
        steps = round(config["max_episode_s"] * config["control_hz"])
        assert f"episodes of {config['max_episode_s']:g} s ({steps} steps)" in text
    # the template's headings sit under the id's, and the navigation task's channel table is Markdown
    assert "#### Action Space" in text and "\n## Description" not in text
    assert "| ``traction`` | 1 |" in text


class _ProbeEnv(gymnasium.Env):
    """
    ## Description

    A probe environment that only this test registers.

    ## Observation Space

    ========== ===== ==================
    item       unit  meaning
    ========== ===== ==================
    ``probe``  m     a distance, over
                     two lines
    ========== ===== ==================
    """

    default_config = "speed_tracking"


def test_a_new_environment_appears_without_editing_the_docs():
    hook = _hook()
    env_id = "acres_gym/DocsProbe-v0"
    gymnasium.register(id=env_id, entry_point=_ProbeEnv)
    try:
        text = hook.environments_markdown()
    finally:
        del registry[env_id]
    section = text[text.index(f"### `{env_id}`"):]
    assert "A probe environment that only this test registers." in section
    assert "| item | unit | meaning |" in section
    assert "| ``probe`` | m | a distance, over two lines |" in section
    assert "episodes of 30 s (600 steps)" in section


def test_readme_links_and_ids():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 260
    for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", readme):
        if "://" not in target:
            assert (ROOT / target).exists(), target
    rows = {m.group(1): m.group(0) for m in re.finditer(r"^\| `(acres_gym/[^`]+)` \|.*$", readme, re.M)}
    assert set(rows) == set(_ids())
    for env_id, row in rows.items():
        name = gymnasium.envs.registration.load_env_creator(registry[env_id].entry_point).default_config
        config = yaml.safe_load(config_path("tasks", f"{name}.yaml").read_text(encoding="utf-8"))
        seconds, hz = config["max_episode_s"], config["control_hz"]
        assert f"{seconds:g} s ({round(seconds * hz)} steps at {hz:g} Hz)" in row, row
