"""The package's layout follows the data flow: no module imports a later stage, no cycles.

Data flows one way, ``device -> graph -> placement -> program -> lowering -> execution``, with
the session tying the stages together. Every module of ``daskgraph`` is read with :mod:`ast`
(nothing is imported) and every ``import`` in it is checked, wherever it is: at the top,
inside a function (a "lazy" import is still an edge), or under ``if TYPE_CHECKING:``.

What counts, and for which check:

* **stage order**: every import, TYPE_CHECKING ones included: an annotation that names a
  later stage reads against the flow as much as a call does;
* **cycles** and what the worker side imports: only imports that run (top-level and lazy
  ones). A TYPE_CHECKING import never executes, so it cannot make a runtime cycle; it is how
  a module names, in annotations, a type of its own stage that imports it
  (``daskgraph.nodes`` names ``Graph``).

An import of ``daskgraph.a.b`` also runs the packages ``daskgraph`` and ``daskgraph.a``; those
implicit parent-package imports are not edges here (``daskgraph/__init__.py`` imports the
whole public API, so every module would otherwise depend on every other).

A new module must be given a stage in :data:`STAGES`; the tests say so when one is not.
"""

from __future__ import annotations

import ast
import pathlib
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass

import pytest

PACKAGE = pathlib.Path(__file__).resolve().parents[2] / "daskgraph"

#: The stages in data-flow order; a module may import its own stage and earlier ones only.
STAGES: tuple[tuple[str, frozenset[str]], ...] = tuple(
    (name, frozenset("daskgraph" if m == "__init__" else f"daskgraph.{m}" for m in modules.split()))
    for name, modules in (
        (
            "foundation",
            "errors dtypes config tls footprint deadline greeting tensor_shape nest shutdown",
        ),
        ("device", "device gpus cuda_specs topology"),
        (
            "graph",
            "default_session nodes scopes graph ops ops.registry ops.array ops.math ops.state "
            "ops.backprop gradients ops.logic ops.elementwise ops.reduction ops.nn ops.conv nn "
            "ops.slicing ops.shape_ops ops.fill_ops ops.random "
            "ops.random_more ops.stateless_random "
            "ops.training variable_scope initializers global_step optimizers replicate "
            "ops.padding ops.ranges ops.elementwise_more ops.reduction_more ops.variable_status "
            "ops.control_flow ops.printing device_setter ops.pooling ops.activations ops.nn_more "
            "ops.normalization ops.top_k ops.embedding "
            "ops.math_extra ops.special ops.asserts ops.numerics ops.norms ops.cumulative "
            "ops.segments "
            "ops.matrix ops.linalg ops.einsum "
            "learning_rate ops.training_more optimizers_more moving_averages ops.summary_ops "
            "summary_writer "
            "layers layers.base layers.core layers.convolutional layers.normalization losses "
            "ops.bundle ops.subgraph ops.script_ops ops.loops ops.dataset_ops data"
            " ops.indexing ops.sorting ops.scatter"
            " sparse_tensor indexed_slices ops.sparse_ops ops.sparse_structure ops.sparse_lookup"
            " ops.sparse_elementwise"
            " template ops.state_more ops.custom_gradient hessians ops.manip initializers_more"
            " ops.branching static_value tensor_conversion ops.strings"
            " metrics_base metrics_thresholds metrics_at_k metrics"
            " ops.checkpoint_ops ops.training_proximal optimizers_proximal"
            " ops.queue_ops queues",
        ),
        ("placement", "placement"),
        ("program", "program"),
        ("lowering", "lowering"),
        ("execution", "worker_state codegen execution"),
        (
            "cluster",
            "liveness cluster_spec cluster gpu_worker nanny_setup worker_preload embedded master "
            "server",
        ),
        # the scheduler's record of placements and runs, and its dashboard page
        ("dashboard", "board dashboard"),
        ("session", "connection dispatch inprocess inspection reporting drawing fetches session"),
        (
            "api",
            "__init__ saver train compat compat._signatures compat.initializers compat.train "
            "compat.random compat.sessions compat.device_spec compat.v1 compat.table cli testing "
            "compat.data "
            "compat.behaviour compat.tf_compat "
            "gradient_check coordinator summary session_hooks session_manager monitored_session "
            "checkpoint_utils supervisor summary_reader queue_runner sync_replicas profiler_hook "
            "compat.logging compat.flags compat.app compat.gfile compat.io_gfile compat.io "
            "compat.local_devices compat.assertions compat.testcase compat.gradient_checker "
            "compat.test "
            "compat.math "
            "compat.config "
            "compat.linalg compat.framework compat.gradients compat.variables compat.strings "
            "compat.dtypes "
            "compat.sparse compat.protos compat.server_lib",
        ),
    )
)

_STAGE_NAMES = [name for name, _ in STAGES]


def _stage_modules(*names: str) -> frozenset[str]:
    return frozenset().union(*(mods for stage, mods in STAGES if stage in names))


#: Modules that must not import (directly or through other modules) certain others.
ISOLATED: dict[str, tuple[frozenset[str], frozenset[str]]] = {
    # the worker runs programs; it never plans them nor talks to the cluster as a client
    "worker side": (
        frozenset({"daskgraph.execution", "daskgraph.worker_state", "daskgraph.program"}),
        _stage_modules("placement", "lowering", "session", "api"),
    ),
    # processes, workers and their liveness know nothing of graphs
    "cluster machinery": (
        _stage_modules("cluster"),
        _stage_modules("graph", "placement", "program", "lowering", "execution"),
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
    for index, (_, modules) in enumerate(STAGES):
        if module in modules:
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
    for rule, (modules, forbidden) in ISOLATED.items():
        for module in sorted(modules):
            for target, path in reachable(edges, module).items():
                if target in forbidden:
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
    assert sorted(m for m in modules if m not in staged) == [], "give these a stage in STAGES"
    assert sorted(set(staged) - modules) == [], "STAGES names modules that do not exist"
    assert len(staged) == len(set(staged)), "a module is in two stages"


def test_the_imports_are_read(edges: list[Import]) -> None:
    """The reader sees top-level, lazy and TYPE_CHECKING imports (else the checks are void)."""
    assert any(e.lazy for e in edges)
    assert any(e.type_checking for e in edges)
    pairs = {(e.source, e.target) for e in edges}
    assert ("daskgraph.lowering", "daskgraph.placement") in pairs  # from m import name
    assert ("daskgraph.graph", "daskgraph.scopes") in pairs  # from package import module


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
        "daskgraph.graph": "def run():\n    from daskgraph.session import Session\n",
        "daskgraph.session": "from daskgraph.graph import Graph\n",
    }
    edges = imports_of(sources)
    assert back_edges(edges) == [
        "daskgraph.graph:2 (graph) imports daskgraph.session (session) (lazy)"
    ]
    assert cycles(edges) == [frozenset({"daskgraph.graph", "daskgraph.session"})]


def test_a_type_checking_import_orders_but_makes_no_cycle() -> None:
    sources = {
        "daskgraph.nodes": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
        "    from daskgraph.placement import Placement\n",
        "daskgraph.placement": "from daskgraph import nodes\n",
    }
    edges = imports_of(sources)
    assert back_edges(edges) == [
        "daskgraph.nodes:3 (graph) imports daskgraph.placement (placement) (TYPE_CHECKING)"
    ]
    assert cycles(edges) == []


def test_the_worker_side_is_checked_through_chains() -> None:
    sources = {
        "daskgraph.execution": "import daskgraph.ops.state\n",
        "daskgraph.ops.state": "from daskgraph import graph\n",
        "daskgraph.graph": "def run():\n    import daskgraph.session\n",
        "daskgraph.session": "",
    }
    assert isolation_breaches(imports_of(sources)) == [
        "worker side: daskgraph.execution -> daskgraph.ops.state -> daskgraph.graph -> "
        "daskgraph.session"
    ]


def test_relative_imports_are_resolved() -> None:
    sources = {
        "daskgraph.ops": "from . import math\n",
        "daskgraph.ops.math": "from ..graph import x\n",
    }
    sources["daskgraph.graph"] = ""
    edges = imports_of(sources, packages={"daskgraph.ops"})
    assert {(e.source, e.target) for e in edges} == {
        ("daskgraph.ops", "daskgraph.ops.math"),
        ("daskgraph.ops.math", "daskgraph.graph"),
    }
