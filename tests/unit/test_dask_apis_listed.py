"""docs/dask-apis.md lists every non-public Dask name daskgraph uses, and only those.

The package is read with :mod:`ast` (nothing is imported). What counts as a non-public name:

- an import from a module below ``dask``, ``distributed`` or ``dask_cuda``'s top level (other
  than ``dask.config``), and any imported name that starts with ``_``: written
  ``module.name``;
- an attribute of a Dask worker, scheduler, client, nanny or cluster that Dask's API
  reference does not document (:data:`DOCUMENTED`), read, set or called on a receiver named
  as such (``worker``, ``dask_worker``, ``scheduler``, ``client``, ``cluster``, ``nanny``, with
  or without ``self.`` or a leading ``_``), also through ``getattr`` with a constant name, or
  any underscore attribute of one: written ``Class.attribute``;
- a method of a Dask class overridden by a subclass (other than the plugin hooks Dask
  documents for overriding): written ``Class.method``.

A name used but not listed in the doc's table fails the test, and so does a listed name
that is no longer used.
"""

from __future__ import annotations

import ast
import functools
import importlib
import inspect
import re
import textwrap
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "daskgraph"
DOC = ROOT / "docs" / "dask-apis.md"
DASK_PACKAGES = ("dask", "distributed", "dask_cuda")
PUBLIC_MODULES = {"dask", "distributed", "dask_cuda", "dask.config"}

RECEIVERS = {
    "worker": "Worker",
    "dask_worker": "Worker",
    "scheduler": "Scheduler",
    "dask_scheduler": "Scheduler",
    "client": "Client",
    "cluster": "SpecCluster",
    "nanny": "Nanny",
}
CLASSES = {
    "Worker": "distributed.Worker",
    "Scheduler": "distributed.Scheduler",
    "Client": "distributed.Client",
    "SpecCluster": "distributed.SpecCluster",
    "Nanny": "distributed.Nanny",
}

# What Dask's API reference documents of these classes and daskgraph uses: Client's methods
# (its page lists them all), the attributes the Worker's, Scheduler's and SpecCluster's
# docstrings describe, and the Cluster properties of the deploy page. Using one of them needs
# no entry in the doc; anything else of those classes does.
DOCUMENTED = {
    "Client": {
        "as_current", "cancel", "close", "cluster", "dashboard_link", "gather", "get",
        "get_metadata", "log_event", "register_plugin", "restart_workers", "run",
        "run_on_scheduler", "scheduler_info", "set_metadata", "status", "submit",
        "subscribe_topic", "unregister_worker_plugin", "unsubscribe_topic",
        "wait_for_workers", "who_has",
    },
    "Worker": {"address", "close", "data", "executors", "local_directory", "name", "nthreads"},
    "Scheduler": {"address", "close", "workers"},
    "SpecCluster": {"close", "dashboard_link", "scheduler_address", "workers"},
    "Nanny": {"address", "close", "name"},
}  # fmt: skip

# Methods Dask documents as hooks to override (plugins, extensions).
HOOKS = {
    "__init__", "setup", "teardown", "start", "close", "before_close", "restart",
    "add_worker", "remove_worker", "add_client", "remove_client", "update_graph",
    "transition", "log_event", "heartbeat", "transition_key",
}  # fmt: skip


def _dask_class(dotted: str) -> type | None:
    module, _, name = dotted.rpartition(".")
    try:
        return getattr(importlib.import_module(module), name, None)
    except ImportError:  # dask_cuda where it is not installed
        return None


@functools.cache
def defined_by_dask(owner: str) -> frozenset[str]:
    """The attributes Dask's class ``owner`` has: its class attributes and those its methods
    (in Dask's own classes of its MRO) set on ``self``. A receiver named ``worker`` that is
    not a Dask worker (a worker spec, a string) rarely has an attribute of that set."""
    cls = _dask_class(CLASSES[owner])
    names = set(dir(cls))
    for klass in cls.__mro__:
        if klass.__module__.split(".")[0] not in DASK_PACKAGES:
            continue
        tree = ast.parse(textwrap.dedent(inspect.getsource(klass)))
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.ctx, ast.Store)
                and isinstance(node.value, ast.Name)
                and node.value.id == "self"
            ):
                names.add(node.attr)
    return frozenset(names)


def _receiver(node: ast.expr) -> str | None:
    """The Dask class a receiver expression names (``worker``, ``self._client``, ...)."""
    if isinstance(node, ast.Name):
        name = node.id
    elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
        name = node.attr if node.value.id in ("self", "cls") else None
    else:
        name = None
    return None if name is None else RECEIVERS.get(name.lstrip("_"))


def _imports(node: ast.AST) -> list[str]:
    if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
        if node.module.split(".")[0] not in DASK_PACKAGES:
            return []
        return [
            f"{node.module}.{alias.name}"
            for alias in node.names
            if node.module not in PUBLIC_MODULES or alias.name.startswith("_")
        ]
    if isinstance(node, ast.Import):
        return [
            alias.name
            for alias in node.names
            if alias.name.split(".")[0] in DASK_PACKAGES and alias.name not in PUBLIC_MODULES
        ]
    return []


def _attribute(node: ast.AST) -> str | None:
    if isinstance(node, ast.Attribute):
        owner, name = _receiver(node.value), node.attr
    elif (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in ("getattr", "setattr", "hasattr")
        and len(node.args) >= 2
        and isinstance(node.args[1], ast.Constant)
        and isinstance(node.args[1].value, str)
    ):
        owner, name = _receiver(node.args[0]), node.args[1].value
    else:
        return None
    if owner is None or name not in defined_by_dask(owner):
        return None
    if name in DOCUMENTED[owner] and not name.startswith("_"):
        return None
    return f"{owner}.{name}"


def _overrides(tree: ast.Module, imported: dict[str, str]) -> list[str]:
    """Methods of classes deriving from an imported Dask class that are not Dask's hooks."""
    found = []
    for cls in (n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)):
        bases = [imported[b.id] for b in cls.bases if isinstance(b, ast.Name) and b.id in imported]
        for base in bases:
            dask_class = _dask_class(base)
            for item in cls.body:
                if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef):
                    if item.name not in HOOKS and hasattr(dask_class, item.name):
                        found.append(f"{base.rsplit('.', 1)[-1]}.{item.name}")
    return found


@functools.cache
def used_names() -> dict[str, set[str]]:
    """Every non-public Dask name the package uses, with the modules that use it."""
    used: dict[str, set[str]] = defaultdict(set)
    for path in sorted(PACKAGE.rglob("*.py")):
        where = path.relative_to(PACKAGE).as_posix()
        tree = ast.parse(path.read_text(), filename=str(path))
        imported: dict[str, str] = {}
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.ImportFrom)
                and (node.module or "").split(".")[0] in DASK_PACKAGES
            ):
                for alias in node.names:
                    imported[alias.asname or alias.name] = f"{node.module}.{alias.name}"
            for name in _imports(node):
                used[name].add(where)
            name = _attribute(node)
            if name is not None:
                used[name].add(where)
        for name in _overrides(tree, imported):
            used[name].add(where)
    return dict(used)


def listed_rows() -> list[tuple[list[str], set[str]]]:
    """The rows of docs/dask-apis.md's table "Non-public names": (names, modules)."""
    text = DOC.read_text()
    section = text.split("## Non-public names", 1)[1].split("\n## ", 1)[0]
    rows = []
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 3 and cells[0].startswith("`"):
            rows.append(
                (re.findall(r"`([^`]+)`", cells[0]), set(re.findall(r"`([^`]+\.py)`", cells[1])))
            )
    return rows


def test_every_non_public_dask_name_used_is_listed():
    used = used_names()
    listed = {name for names, _ in listed_rows() for name in names}
    unlisted = {name: sorted(where) for name, where in used.items() if name not in listed}
    assert not unlisted, f"used but not listed in docs/dask-apis.md: {unlisted}"


def test_every_listed_name_is_used():
    used = used_names()
    stale = sorted(name for names, _ in listed_rows() for name in names if name not in used)
    assert not stale, f"listed in docs/dask-apis.md but no longer used: {stale}"


def test_each_row_says_where_its_names_are_used():
    used = used_names()
    wrong = {}
    for names, where in listed_rows():
        uses = set().union(*(used.get(name, set()) for name in names))
        if uses != where:
            wrong[", ".join(names)] = {"used in": sorted(uses), "listed": sorted(where)}
    assert not wrong, f"docs/dask-apis.md names other modules: {wrong}"
