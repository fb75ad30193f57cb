"""Every op's kernel lives in :mod:`daskgraph.kernels` (a module that imports no graph builder),
so that a worker unpickling it loads the kernels of its family and nothing of the ops."""

from __future__ import annotations

import pickle
import pickletools
import subprocess
import sys

import numpy as np

import daskgraph.compat.v1  # noqa: F401 - registers every op
from daskgraph.framework import op_registry


def _kernel_modules() -> dict[str, set[str]]:
    """Module -> op types whose kernel (CPU or GPU) is a function of it."""
    modules: dict[str, set[str]] = {}
    for op_type in op_registry.registered_types():
        opdef = op_registry.lookup(op_type)
        for kernel in (opdef.kernel, opdef.gpu_kernel):
            if kernel is None or isinstance(kernel, op_registry.ArrayFunction):
                continue
            if getattr(kernel, "__module__", "").startswith("daskgraph."):  # (not tests' ops)
                modules.setdefault(kernel.__module__, set()).add(op_type)
    return modules


def test_every_kernel_is_a_function_of_a_kernels_module():
    outside = {m for m in _kernel_modules() if not m.startswith("daskgraph.kernels.")}
    assert not outside, sorted(outside)


def test_a_kernels_module_imports_no_graph_builder():
    """In a fresh interpreter (nothing imported before), each kernels module alone."""
    modules = sorted(m for m in _kernel_modules() if m.startswith("daskgraph.kernels."))
    assert {"daskgraph.kernels.math", "daskgraph.kernels.state"} <= set(modules)
    probe = (
        "import importlib, sys\n"
        f"for name in {modules!r}:\n"
        "    importlib.import_module(name)\n"
        "print(sorted(m for m in sys.modules if m.startswith(('daskgraph.ops', "
        "'daskgraph.framework.graph', 'daskgraph.framework.nodes', "
        "'daskgraph.framework.gradient_registry', "
        "'daskgraph.runtime', 'daskgraph.data', 'daskgraph.summary'))))\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


#: modules a worker must not import: graph builders, gradients, the data builders
_BUILDERS = (
    "daskgraph.ops",
    "daskgraph.framework.graph",
    "daskgraph.framework.nodes",
    "daskgraph.framework.gradient_registry",
    "daskgraph.data",
    "daskgraph.training",
    "daskgraph.compat",
)


def _pickled_modules(value: object) -> set[str]:
    """The modules of the classes and functions ``value`` pickles by reference."""
    found = pickletools.genops(pickle.dumps(value, protocol=2))  # (GLOBAL: "module name")
    return {arg.split(" ")[0] for op, arg, _ in found if op.name == "GLOBAL"}


def test_the_attributes_of_loops_and_iterators_refer_to_no_graph_builder():
    """A loop's plan and a dataset's stages carry traced functions to the worker that runs
    them: what they pickle by reference lives in :mod:`daskgraph.kernels` (or the framework's
    dtypes and registry), never beside the builders."""
    import daskgraph as dg

    with dg.Graph().as_default() as graph:
        x = dg.constant([1.0, 2.0])
        dg.while_loop(lambda i: i < 3, lambda i: i + 1, [0])
        dg.map_fn(lambda v: v * x[0], x)
        dg.scan(lambda a, v: a + v, x)
        dataset = dg.data.Dataset.from_tensor_slices(np.arange(4, dtype=np.float32)).map(
            lambda v: v + x[1]
        )
        dataset.filter(lambda v: v > 1.0).batch(2).make_one_shot_iterator().get_next()
    carried = set().union(*(_pickled_modules(op.attrs) for op in graph.get_operations()))
    for module in ("loops", "subgraph", "dataset_ops", "array"):
        assert f"daskgraph.kernels.{module}" in carried
    assert sorted(m for m in carried if m.startswith(_BUILDERS)) == []
