"""Ops with several results on a runtime whose ops have one output each: the op computes
all its results at once into one ``variant`` value (a tuple), and one ``BundleGet`` op per
result picks its item.

So a Python function called by ``py_func``, a ``while_loop`` or an iterator's ``get_next``
runs once per run however many of its results are fetched, and results fetched together come
from the same call. Each ``BundleGet`` is colocated with the bundling op: the tuple never
leaves its device (only the picked arrays do).

>>> import daskgraph as dg
>>> with dg.Graph().as_default() as g:
...     both = g.create_op("Sketch", [], dtype=dtypes.variant, shape=())
...     one, two = unbundle(both.outputs[0], [(dg.int32, ()), (dg.float32, (2,))])
>>> two, two.op.type, two.op.colocation
(<Tensor 'Sketch/output_1:0' shape=(2,) dtype=float32>, 'BundleGet', 'Sketch')
>>> _bundle_get_kernel(None, ("a", "b"), index=1)
'b'
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from daskgraph.errors import UnimplementedError
from daskgraph.framework import dtypes
from daskgraph.framework.gradient_registry import register_gradient
from daskgraph.framework.graph import Operation, Shape, Tensor
from daskgraph.framework.graph import _name_scope as graph_name_scope
from daskgraph.framework.op_registry import CPU_ALL, GPU_NUMERIC, register
from daskgraph.kernels.bundle import _bundle_get_kernel

__all__ = ["refuse_gradients", "unbundle"]

#: op types whose results cannot be differentiated here, with why (see :func:`refuse_gradients`)
_REFUSED: dict[str, str] = {}


register(
    "BundleGet",
    _bundle_get_kernel,
    cpu=CPU_ALL | {dtypes.variant},
    gpu=GPU_NUMERIC | {dtypes.variant},
)


def refuse_gradients(op_type: str, why: str) -> None:
    """Make a gradient through a result of a bundling op of ``op_type`` raise
    :class:`~daskgraph.errors.UnimplementedError` saying ``why`` (where TensorFlow has a
    gradient daskgraph lacks); results of other bundling ops get none, as ``PyFunc``'s."""
    _REFUSED[op_type] = why


@register_gradient("BundleGet")
def _bundle_get_grad(op: Operation, grad: Tensor) -> list[Tensor | None]:
    producer = op.inputs[0].op
    why = _REFUSED.get(producer.type)
    if why is not None:
        raise UnimplementedError(
            f"No gradient through {producer.name!r} ({producer.type}): {why}",
            op=producer.name,
        )
    return [None]


def unbundle(
    bundle: Tensor, specs: Sequence[tuple[dtypes.DType, Shape | None]], names: Any = None
) -> list[Tensor]:
    """One ``BundleGet`` tensor per item of ``bundle`` (a ``variant`` tensor whose value is a
    tuple), of the dtypes and static shapes in ``specs``; ``names`` are the ops' names under
    the bundling op's (default ``<bundle op>/output``, made unique)."""
    graph = bundle.graph
    out = []
    with graph_name_scope(graph, bundle.op.name + "/"):
        for index, (dtype, shape) in enumerate(specs):
            op = graph.create_op(
                "BundleGet",
                [bundle],
                dtype=dtype,
                shape=shape,
                attrs={"index": index},
                name=names[index] if names is not None else "output",
                colocate_with=bundle.op,
            )
            out.append(op.outputs[0])
    return out
