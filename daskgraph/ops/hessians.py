"""Second derivatives: ``hessians(ys, xs)``, the gradient of each element of the gradient
(``tf.hessians``), built with :func:`~daskgraph.ops.gradients.gradients` twice.

TensorFlow loops over the gradient's elements with a ``while_loop``; daskgraph's loops have no
gradients, so the loop is unrolled: one gradient per element of ``x``, whose size must be
known when the graph is built. Where the first gradient goes through an op whose own gradient
daskgraph lacks (the gradient of ``reduce_max`` or of a segment reduction, ``digamma``'s
derivative), the second derivative would silently miss a term: that is refused.

>>> import daskgraph as dg
>>> with dg.Graph().as_default():
...     x = dg.constant([1.0, 2.0], dg.float64)
...     (h,) = hessians(dg.reduce_sum(x * x * x), x)
...     with dg.Session() as sess:
...         sess.run(h).tolist()
[[6.0, 0.0], [0.0, 12.0]]
"""

from __future__ import annotations

from typing import Any

from daskgraph.errors import UnimplementedError
from daskgraph.framework.graph import Operation, Tensor, name_scope
from daskgraph.ops.array import convert_to_tensor, reshape
from daskgraph.ops.fill_ops import zeros_like
from daskgraph.ops.gradients import gradients
from daskgraph.ops.shape_ops import stack

__all__ = ["hessians"]

#: gradient ops without a gradient of their own: a second derivative through them is wrong
_NO_SECOND_DERIVATIVE = frozenset({"ExtremumReduceGrad", "SegmentReductionGrad", "Trigamma"})


def hessians(
    ys: Any,
    xs: Any,
    name: str = "hessians",
    colocate_gradients_with_ops: bool = True,
) -> list[Tensor]:
    """The Hessian of ``sum(ys)`` with respect to each of ``xs``: for ``x`` of shape ``s``, a
    tensor of shape ``s + s`` whose ``[i..., j...]`` element is d²y/dx[i]dx[j].

    Parameters
    ----------
    ys
        A tensor or a list of them.
    xs
        A tensor (or variable) or a list of them, each of a size known when the graph is
        built.
    colocate_gradients_with_ops
        Place each gradient op with its op (as :func:`~daskgraph.ops.gradients.gradients`).

    Raises
    ------
    ValueError
        ``ys`` do not depend on an ``x``, or an ``x``'s size is not known.
    UnimplementedError
        The gradient goes through an op whose second derivative daskgraph lacks.
    """
    xs = list(xs) if isinstance(xs, (list, tuple)) else [xs]
    first = gradients(ys, xs, name=name, colocate_gradients_with_ops=colocate_gradients_with_ops)
    result = []
    for grad, x in zip(first, xs, strict=True):
        value = convert_to_tensor(x)
        if grad is None:
            raise ValueError(f"hessians: ys do not depend on {value.name!r}; it has no Hessian")
        _check_second_order(grad, value)
        with name_scope(name):
            result.append(_hessian(grad, x, value, colocate_gradients_with_ops))
    return result


def _hessian(grad: Tensor, x: Any, value: Tensor, colocate: bool) -> Tensor:
    shape = value.shape
    if shape is None or None in shape:
        raise ValueError(
            f"hessians: the shape of {value.name!r} must be known when the graph is built (the "
            f"loop over its elements is unrolled); it is {shape}"
        )
    size = 1
    for d in shape:
        size *= d
    flat = reshape(grad, [-1])
    rows = []
    for j in range(size):
        (row,) = gradients(flat[j], [x], colocate_gradients_with_ops=colocate)
        rows.append(zeros_like(value) if row is None else row)
    return reshape(stack(rows), [*shape, *shape])


def _check_second_order(grad: Tensor, x: Tensor) -> None:
    """Refuse a gradient that depends on ``x`` through an op without a gradient of its own."""
    lacking = sorted({op.type for op in _ops_from(x, grad) if op.type in _NO_SECOND_DERIVATIVE})
    if lacking:
        raise UnimplementedError(
            f"hessians: the gradient with respect to {x.name!r} goes through "
            f"{', '.join(lacking)} ops, which have no gradient in daskgraph: their second "
            "derivatives are not supported",
            op=None,
        )


def _ops_from(x: Tensor, y: Tensor) -> list[Operation]:
    """The ops on a data path from ``x`` to ``y``."""
    ancestors: dict[int, Operation] = {}
    frontier = [y.op]
    while frontier:
        op = frontier.pop()
        if op.id not in ancestors:
            ancestors[op.id] = op
            frontier.extend(t.op for t in op.inputs)
    consumers: dict[int, list[Operation]] = {}
    for op in ancestors.values():
        for t in op.inputs:
            consumers.setdefault(t.op.id, []).append(op)
    found: dict[int, Operation] = {}
    frontier = [op for op in ancestors.values() if any(t is x for t in op.inputs)]
    while frontier:
        op = frontier.pop()
        if op.id not in found:
            found[op.id] = op
            frontier.extend(consumers.get(op.id, ()))
    return list(found.values())
