"""Every op's kernel lives in :mod:`daskgraph.kernels` (a module that imports no graph builder),
so that a worker unpickling it loads the kernels of its family and nothing of the ops."""

from __future__ import annotations

import subprocess
import sys

import daskgraph.compat.v1  # noqa: F401 - registers every op
from daskgraph.framework import op_registry

#: kernels that still live beside their builders: a dataset's iterator (it runs traced
#: functions) and checkpoint restores
NOT_YET_MOVED = {
    "daskgraph.data.dataset_ops",
    "daskgraph.ops.checkpoint_ops",
}


def _kernel_modules() -> dict[str, set[str]]:
    """Module -> op types whose kernel (CPU or GPU) is a function of it."""
    modules: dict[str, set[str]] = {}
    for op_type in op_registry.registered_types():
        opdef = op_registry.lookup(op_type)
        for kernel in (opdef.kernel, opdef.gpu_kernel):
            if kernel is not None and not isinstance(kernel, op_registry.ArrayFunction):
                modules.setdefault(kernel.__module__, set()).add(op_type)
    return modules


def test_every_kernel_is_a_function_of_a_kernels_module():
    outside = {m for m in _kernel_modules() if not m.startswith("daskgraph.kernels.")}
    assert outside <= NOT_YET_MOVED, sorted(outside - NOT_YET_MOVED)


def test_a_kernels_module_imports_no_graph_builder():
    """In a fresh interpreter (nothing imported before), each kernels module alone."""
    modules = sorted(m for m in _kernel_modules() if m.startswith("daskgraph.kernels."))
    assert {"daskgraph.kernels.math", "daskgraph.kernels.state"} <= set(modules)
    probe = (
        "import importlib, sys\n"
        f"for name in {modules!r}:\n"
        "    importlib.import_module(name)\n"
        "print(sorted(m for m in sys.modules if m.startswith(('daskgraph.ops', "
        "'daskgraph.framework.graph', 'daskgraph.framework.gradient_registry', "
        "'daskgraph.runtime', 'daskgraph.data', 'daskgraph.summary'))))\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
