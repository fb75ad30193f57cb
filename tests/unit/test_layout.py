"""The package's layout follows the data flow: no module imports a later stage, no cycles.

The stages are the README's "How it works" table, one package each: foundation, ``framework``,
``cluster``, ``ops``, the libraries (``layers``, ``metrics``, ``data``, ``summary``),
``runtime.program``, ``runtime.planner``, ``runtime.worker``, ``diagnostics``,
``runtime.client``, ``training``, ``compat`` and the API. Every module of ``daskgraph`` is read
with :mod:`ast` (nothing is imported) and every ``import`` in it is checked, wherever it is: at
the top, inside a function (a "lazy" import is still an edge), or under ``if TYPE_CHECKING:``.
import-linter's contracts in ``pyproject.toml`` (``test_import_contracts.py``) state the same
order at package level.

What counts, and for which check:

* **stage order**: every import, TYPE_CHECKING ones included: an annotation that names a
  later stage reads against the flow as much as a call does;
* **cycles** and what the worker side imports: only imports that run (top-level and lazy
  ones). A TYPE_CHECKING import never executes, so it cannot make a runtime cycle; it is how
  a module names, in annotations, a type of its own stage that imports it
  (``daskgraph.framework.nodes`` names ``Graph``).

An import of ``daskgraph.a.b`` also runs the packages ``daskgraph`` and ``daskgraph.a``; those
implicit parent-package imports are not edges here (``daskgraph/__init__.py`` imports the
whole public API, so every module would otherwise depend on every other).

A new package or top-level module must be given a stage in :data:`STAGES`; the tests say so
when one is not.
"""

from __future__ import annotations

import ast
import pathlib
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass

import pytest

PACKAGE = pathlib.Path(__file__).resolve().parents[2] / "daskgraph"

#: The stages in data-flow order (the README's "How it works" table); a module may import its own
#: stage and earlier ones only. An entry names a module and, when it is a package, every module
#: under it; a module belongs to its longest matching entry.
STAGES: tuple[tuple[str, frozenset[str]], ...] = tuple(
    (name, frozenset("daskgraph" if m == "__init__" else f"daskgraph.{m}" for m in modules.split()))
    for name, modules in (
        ("foundation", "errors config deadline"),
        ("framework", "framework"),
        ("cluster", "cluster"),
        ("kernels", "kernels"),
        ("ops", "ops"),
        ("libraries", "layers metrics data summary"),
        ("program", "runtime runtime.program"),
        ("planner", "runtime.planner"),
        ("worker", "runtime.worker"),
        ("diagnostics", "diagnostics"),
        ("client", "runtime.client"),
        ("training", "training"),
        ("compat", "compat"),
        ("api", "__init__ cli testing"),
    )
)

_STAGE_NAMES = [name for name, _ in STAGES]


def _entry_of(module: str) -> str | None:
    """The longest :data:`STAGES` entry that names ``module`` or a package above it."""
    entries = [m for _, ms in STAGES for m in ms]
    found = [e for e in entries if module == e or module.startswith(e + ".")]
    return max(found, key=len) if found else None


def _under(*prefixes: str) -> Callable[[str], bool]:
    """A test: is a module one of ``prefixes`` or under one of them."""
    full = tuple(f"daskgraph.{p}" for p in prefixes)
    return lambda m: any(m == p or m.startswith(p + ".") for p in full)


#: Modules that must not import (directly or through other modules) certain others:
#: rule -> (does it apply to a module, is a module forbidden to it).
ISOLATED: dict[str, tuple[Callable[[str], bool], Callable[[str], bool]]] = {
    # the worker runs programs; it never plans them, talks to the cluster as a client, or trains
    "worker side": (
        _under("runtime.worker", "runtime.program"),
        _under("runtime.planner", "runtime.client", "diagnostics", "training", "compat"),
    ),
    # building graphs knows nothing of how they are planned and run
    "framework": (
        _under("framework"),
        _under("runtime", "training", "compat", "cluster", "diagnostics"),
    ),
    # processes, workers and their liveness know nothing of graphs (device names aside)
    "cluster machinery": (
        _under("cluster"),
        lambda m: (
            m.startswith("daskgraph.")
            and not _under("cluster", "errors", "config", "deadline", "framework.device")(m)
        ),
    ),
}

#: Runtime import cycles that exist for now, each with why it is still there. Remove an entry
#: once the cycle is gone; any other cycle fails the test.
KNOWN_CYCLES: dict[frozenset[str], str] = {}


@dataclass(frozen=True)
class Import:
    """One import statement's edge: ``source`` imports ``target`` at ``line``."""

    source: str
    target: str
    line: int
    lazy: bool  # inside a function
    type_checking: bool  # under ``if TYPE_CHECKING:``

    @property
    def runs(self) -> bool:
        """Whether the import executes (at import time or when its function is called)."""
        return not self.type_checking


# -- reading the package ------------------------------------------------------------------------
def package_sources(root: pathlib.Path = PACKAGE) -> dict[str, str]:
    """Module name -> source of every module under ``root``."""
    sources = {}
    for path in sorted(root.rglob("*.py")):
        parts = path.relative_to(root.parent).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        sources[".".join(parts)] = path.read_text()
    return sources


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _walk(node: ast.AST, lazy: bool, checking: bool) -> Iterator[tuple[ast.AST, bool, bool]]:
    """Every node under ``node``, with whether it is in a function / a TYPE_CHECKING block."""
    for child in ast.iter_child_nodes(node):
        yield child, lazy, checking
        inner_lazy = lazy or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
        if isinstance(child, ast.If) and _is_type_checking(child.test):
            for stmt in child.body:
                yield stmt, inner_lazy, True
                yield from _walk(stmt, inner_lazy, True)
            for stmt in child.orelse:
                yield stmt, inner_lazy, checking
                yield from _walk(stmt, inner_lazy, checking)
        else:
            yield from _walk(child, inner_lazy, checking)


def _targets(node: ast.AST, module: str, is_package: bool, known: Iterable[str]) -> list[str]:
    """The daskgraph modules an import statement names (``from m import sub`` names
    ``m.sub`` when that is a module, else ``m``)."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    assert isinstance(node, ast.ImportFrom)
    base = node.module or ""
    if node.level:
        anchor = module.split(".")
        anchor = anchor[: len(anchor) - node.level + (1 if is_package else 0)]
        base = ".".join([*anchor, base] if base else anchor)
    known = set(known)
    return [f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names]


def imports_of(sources: Mapping[str, str], packages: Iterable[str] = ()) -> list[Import]:
    """Every import edge between the modules of ``sources`` (``packages``: the modules that
    are packages, for relative imports)."""
    packages = set(packages)
    edges: dict[Import, None] = {}  # one edge per line and target, in order
    for module, source in sources.items():
        for node, lazy, checking in _walk(ast.parse(source), False, False):
            if not isinstance(node, (ast.Import, ast.ImportFrom)):
                continue
            for target in _targets(node, module, module in packages, sources):
                if target in sources and target != module:
                    edges[Import(module, target, node.lineno, lazy, checking)] = None
    return list(edges)


# -- the checks ---------------------------------------------------------------------------------
def stage_of(module: str) -> int:
    """Index in :data:`STAGES` of ``module``'s stage (KeyError when it has none)."""
    entry = _entry_of(module)
    for index, (_, modules) in enumerate(STAGES):
        if entry in modules:
            return index
    raise KeyError(module)


def back_edges(edges: Iterable[Import]) -> list[str]:
    """The imports of a later stage, described."""
    found = []
    for edge in edges:
        source, target = stage_of(edge.source), stage_of(edge.target)
        if target > source:
            kind = " (TYPE_CHECKING)" if edge.type_checking else " (lazy)" if edge.lazy else ""
            found.append(
                f"{edge.source}:{edge.line} ({_STAGE_NAMES[source]}) imports {edge.target} "
                f"({_STAGE_NAMES[target]}){kind}"
            )
    return found


def _runtime_graph(edges: Iterable[Import]) -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for edge in edges:
        if edge.runs:
            graph.setdefault(edge.source, set()).add(edge.target)
    return graph


def cycles(edges: Iterable[Import]) -> list[frozenset[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    graph = _runtime_graph(edges)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[frozenset[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in sorted(graph.get(node, ())):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = set()
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.add(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(frozenset(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def reachable(edges: Iterable[Import], start: str) -> dict[str, list[str]]:
    """Module -> the runtime import path from ``start`` to it, for every module it reaches."""
    graph = _runtime_graph(edges)
    paths = {start: [start]}
    queue = [start]
    while queue:
        node = queue.pop(0)
        for other in sorted(graph.get(node, ())):
            if other not in paths:
                paths[other] = [*paths[node], other]
                queue.append(other)
    return paths


def isolation_breaches(edges: list[Import]) -> list[str]:
    """The imports (through any chain) that :data:`ISOLATED` forbids, described."""
    found = []
    sources = sorted({e.source for e in edges} | {e.target for e in edges})
    for rule, (applies, forbidden) in ISOLATED.items():
        for module in filter(applies, sources):
            for target, path in reachable(edges, module).items():
                if forbidden(target):
                    found.append(f"{rule}: {' -> '.join(path)}")
    return found


# -- the tests ----------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def edges() -> list[Import]:
    sources = package_sources()
    packages = {
        m for m in sources if (PACKAGE.parent / m.replace(".", "/") / "__init__.py").exists()
    }
    return imports_of(sources, packages)


def test_every_module_has_one_stage() -> None:
    modules = set(package_sources())
    staged = [m for _, ms in STAGES for m in ms]
    assert sorted(m for m in modules if _entry_of(m) is None) == [], "give these a stage"
    assert sorted(set(staged) - modules) == [], "STAGES names modules that do not exist"
    assert len(staged) == len(set(staged)), "a module is in two stages"


def test_the_imports_are_read(edges: list[Import]) -> None:
    """The reader sees top-level, lazy and TYPE_CHECKING imports (else the checks are void)."""
    assert any(e.lazy for e in edges)
    assert any(e.type_checking for e in edges)
    pairs = {(e.source, e.target) for e in edges}
    assert (
        "daskgraph.runtime.planner.lowering",
        "daskgraph.runtime.planner.placement",
    ) in pairs  # from m import name
    assert (
        "daskgraph.framework.graph",
        "daskgraph.framework.scopes",
    ) in pairs  # from package import module


def test_no_module_imports_a_later_stage(edges: list[Import]) -> None:
    assert back_edges(edges) == []


def test_no_import_cycles(edges: list[Import]) -> None:
    unknown = [sorted(c) for c in cycles(edges) if c not in KNOWN_CYCLES]
    assert unknown == [], "import cycles among daskgraph modules"


def test_the_worker_side_never_imports_the_planner(edges: list[Import]) -> None:
    assert isolation_breaches(edges) == []


# -- the checks can fail ------------------------------------------------------------------------
def test_a_back_edge_is_caught_even_inside_a_function() -> None:
    sources = {
        "daskgraph.framework.graph": "def run():\n"
        "    from daskgraph.runtime.client.session import Session\n",
        "daskgraph.runtime.client.session": "from daskgraph.framework.graph import Graph\n",
    }
    edges = imports_of(sources)
    assert back_edges(edges) == [
        "daskgraph.framework.graph:2 (framework) imports daskgraph.runtime.client.session "
        "(client) (lazy)"
    ]
    assert cycles(edges) == [
        frozenset({"daskgraph.framework.graph", "daskgraph.runtime.client.session"})
    ]


def test_a_type_checking_import_orders_but_makes_no_cycle() -> None:
    sources = {
        "daskgraph.framework.nodes": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
        "    from daskgraph.runtime.planner.placement import Placement\n",
        "daskgraph.runtime.planner.placement": "from daskgraph.framework import nodes\n",
    }
    edges = imports_of(sources)
    assert back_edges(edges) == [
        "daskgraph.framework.nodes:3 (framework) imports daskgraph.runtime.planner.placement "
        "(planner) (TYPE_CHECKING)"
    ]
    assert cycles(edges) == []


def test_the_worker_side_is_checked_through_chains() -> None:
    sources = {
        "daskgraph.runtime.worker.execution": "import daskgraph.ops.state\n",
        "daskgraph.ops.state": "from daskgraph.framework import graph\n",
        "daskgraph.framework.graph": "",
        "daskgraph.ops.math": "def run():\n    import daskgraph.runtime.client.session\n",
        "daskgraph.runtime.client.session": "",
    }
    sources["daskgraph.ops.state"] += "from daskgraph.ops import math\n"
    assert isolation_breaches(imports_of(sources)) == [
        "worker side: daskgraph.runtime.worker.execution -> daskgraph.ops.state -> "
        "daskgraph.ops.math -> daskgraph.runtime.client.session"
    ]


def test_relative_imports_are_resolved() -> None:
    sources = {
        "daskgraph.ops": "from . import math\n",
        "daskgraph.ops.math": "from ..framework.graph import x\n",
    }
    sources["daskgraph.framework.graph"] = ""
    edges = imports_of(sources, packages={"daskgraph.ops"})
    assert {(e.source, e.target) for e in edges} == {
        ("daskgraph.ops", "daskgraph.ops.math"),
        ("daskgraph.ops.math", "daskgraph.framework.graph"),
    }
