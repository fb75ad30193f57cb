"""docs/architecture.md matches the code: its module table names every module of the runtime
and of the cluster package, and every module path the page mentions exists.

The page is where a newcomer learns how a run travels; a module added without a line there,
or a line left behind for a module that went, makes it wrong without anyone noticing. The
table is read as the page's rows of the form ``| `runtime/client/session.py` | ... |``.
"""

from __future__ import annotations

import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "architecture.md"
PACKAGE = ROOT / "daskgraph"
#: the packages whose every module the page's table must list
LISTED = ("runtime",)

_ROW = re.compile(r"^\|\s*`([a-z_/]+\.py)`\s*\|", re.MULTILINE)
_MENTION = re.compile(r"`((?:[a-z_]+/)+[a-z_]+\.py)`")


def _modules(package: str) -> set[str]:
    base = PACKAGE / package
    return {
        str(path.relative_to(PACKAGE))
        for path in base.rglob("*.py")
        if path.name != "__init__.py" and "__pycache__" not in path.parts
    }


def _path(named: str) -> pathlib.Path:
    """A path the page names: from the repository's root where it starts with a top-level
    folder of it (``daskgraph/``, ``tests/``), else within the package."""
    first = named.split("/", 1)[0]
    return (ROOT if first in ("daskgraph", "tests", "benchmarks") else PACKAGE) / named


def test_the_table_lists_every_runtime_module() -> None:
    rows = set(_ROW.findall(PAGE.read_text()))
    for package in LISTED:
        missing = _modules(package) - rows
        assert not missing, f"docs/architecture.md has no row for {sorted(missing)}"


def test_every_module_the_page_names_exists() -> None:
    named = set(_MENTION.findall(PAGE.read_text()))
    gone = sorted(p for p in named if not _path(p).is_file())
    assert not gone, f"docs/architecture.md names modules that do not exist: {gone}"


def test_the_page_names_the_two_executors() -> None:
    text = PAGE.read_text()
    source = (PACKAGE / "runtime" / "client" / "executors.py").read_text()
    executors = re.findall(r"^class (\w+Executor)\b", source, re.MULTILINE)
    assert len(executors) == 2, executors
    for name in executors:
        assert name in text, f"docs/architecture.md does not name {name}"
