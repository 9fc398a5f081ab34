"""MkDocs hook: the environments page's list of registered ids, generated from the environments' docstrings.

``docs/environments.md`` holds the marker ``MARKER``; when the site is built, this hook replaces it with one
section per id of the ``acres_gym`` namespace in Gymnasium's registry (the ids ``import acres_gym`` registers):
the id, its entry points, its task config with control rate and episode length, and the docstring of its
environment class (the Gymnasium template: ``## Description``, ``## Action Space``, ...), its headings moved
under the id's and its reStructuredText simple tables turned into Markdown tables. A new environment therefore
appears on the page once it is registered, without editing the page.

``environments_markdown()`` is the generator; ``tests/test_docs.py`` calls it directly.
"""

from __future__ import annotations

import inspect
import logging
import re

MARKER = "<!-- acres-gym: registered environments -->"
PAGE = "environments.md"
NAMESPACE = "acres_gym"

log = logging.getLogger("mkdocs.plugins.acres_gym.environments_page")

_BORDER = re.compile(r"^\s*=+( +=+)+\s*$")
_HEADING = re.compile(r"^(#{1,4}) (.*)$")


def registered_ids(namespace: str = NAMESPACE) -> list[str]:
    """The ids of ``namespace`` in Gymnasium's registry, in registration order."""
    import gymnasium  # noqa: F401
    from gymnasium.envs.registration import registry

    import acres_gym  # noqa: F401  (registers the ids)

    return [env_id for env_id, spec in registry.items() if spec.namespace == namespace]


def _columns(border: str) -> list[tuple[int, int]]:
    """The (start, end) character ranges of a simple table's columns, from its ``====  ===`` border."""
    return [(m.start(), m.end()) for m in re.finditer(r"=+", border)]


def _cells(line: str, cols: list[tuple[int, int]]) -> list[str]:
    """The cells of one table line; the last column takes the rest of the line."""
    out = []
    for k, (start, _end) in enumerate(cols):
        stop = len(line) if k == len(cols) - 1 else cols[k + 1][0]
        out.append(line[start:stop].strip())
    return out


def _table(lines: list[str]) -> list[str]:
    """A reStructuredText simple table (border, header, border, rows, border) as a Markdown table. A row whose
    first cell is empty continues the row above it."""
    cols = _columns(lines[0])
    borders = [i for i, line in enumerate(lines) if _BORDER.match(line)]
    header_end = borders[1] if len(borders) >= 3 else None
    header: list[str] = []
    rows: list[list[str]] = []
    for i, line in enumerate(lines):
        if i in borders or not line.strip():
            continue
        cells = _cells(line, cols)
        if header_end is not None and i < header_end:
            header = cells if not header else [f"{a} {b}".strip() for a, b in zip(header, cells, strict=True)]
        elif rows and not cells[0]:
            rows[-1] = [f"{a} {b}".strip() for a, b in zip(rows[-1], cells, strict=True)]
        else:
            rows.append(cells)
    if not header:
        header, rows = rows[0], rows[1:]

    def md(cells: list[str]) -> str:
        return "| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |"

    return [md(header), "| " + " | ".join("---" for _ in cols) + " |", *(md(r) for r in rows)]


def docstring_markdown(doc: str, shift: int = 2) -> str:
    """A Gymnasium-template docstring as Markdown: headings ``shift`` levels deeper, simple tables converted,
    ``::`` literal blocks fenced."""
    lines = inspect.cleandoc(doc).splitlines()
    out: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if _BORDER.match(line):  # a simple table: up to its third border (or the blank line after its last one)
            start, borders = i, 0
            while i < len(lines) and (lines[i].strip() or borders < 3):
                borders += bool(_BORDER.match(lines[i]))
                i += 1
                if borders == 3:
                    break
            indent = len(line) - len(line.lstrip())
            block = [entry[indent:] for entry in lines[start:i]]
            out += ["", *_table(block), ""]
            continue
        heading = _HEADING.match(line)
        if heading:
            out.append("#" * min(6, len(heading.group(1)) + shift) + " " + heading.group(2))
        elif line.rstrip().endswith("::") and i + 1 < len(lines):  # a literal block follows
            out.append(line.rstrip()[:-1])
            i += 1
            block = []
            while i < len(lines) and (not lines[i].strip() or lines[i].startswith(" ")):
                block.append(lines[i])
                i += 1
            while block and not block[-1].strip():
                block.pop()
            out += ["", "```", *inspect.cleandoc("\n".join(block)).splitlines(), "```", ""]
            continue
        else:
            out.append(line)
        i += 1
    return "\n".join(out).strip() + "\n"


def _task_facts(env_class: type) -> str:
    """The task config's name, control rate and episode length, read from the config the class defaults to."""
    name = getattr(env_class, "default_config", None)
    if not name:
        return ""
    import yaml

    from acres_gym.paths import config_path

    config = yaml.safe_load(config_path("tasks", f"{name}.yaml").read_text(encoding="utf-8"))
    hz, seconds = config.get("control_hz"), config.get("max_episode_s")
    facts = f"task config `configs/tasks/{name}.yaml`"
    if hz and seconds:
        facts += f"; {hz:g} Hz control, episodes of {seconds:g} s ({round(seconds * hz)} steps)"
    return facts


def environment_markdown(env_id: str) -> str:
    """One id's section: heading, entry points, task facts, and its class's docstring."""
    from gymnasium.envs.registration import load_env_creator, registry

    spec = registry[env_id]
    entry = spec.entry_point if isinstance(spec.entry_point, str) else None
    env_class = load_env_creator(spec.entry_point) if entry else spec.entry_point
    facts = [f"entry point `{entry or env_class.__qualname__}`"]
    if spec.vector_entry_point:
        vector = spec.vector_entry_point
        facts.append(f"vector entry point `{vector if isinstance(vector, str) else vector.__qualname__}`")
    task = _task_facts(env_class) if isinstance(env_class, type) else ""
    if task:
        facts.append(task)
    doc = inspect.getdoc(env_class) if isinstance(env_class, type) else None
    if not doc or doc == inspect.getdoc(getattr(env_class, "__mro__", [object, object])[1]):
        log.warning("environment %s: its class %s has no docstring of its own", env_id, env_class)
        doc = ""
    return f"### `{env_id}`\n\n" + "; ".join(facts) + ".\n\n" + (docstring_markdown(doc) if doc else "")


def environments_markdown(namespace: str = NAMESPACE) -> str:
    """Every registered id's section, in registration order."""
    ids = registered_ids(namespace)
    if not ids:
        log.warning("no environment registered in the %s namespace", namespace)
    return "\n".join(environment_markdown(env_id) for env_id in ids)


def on_page_markdown(markdown: str, page, config, files) -> str:  # MkDocs hook signature
    if page.file.src_uri != PAGE:
        return markdown
    if MARKER not in markdown:
        log.warning("%s: the marker %r is missing; the registered environments are not listed", PAGE, MARKER)
        return markdown
    return markdown.replace(MARKER, environments_markdown())
