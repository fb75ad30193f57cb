"""Scatter ops: ``scatter_nd`` and ``tensor_scatter_*`` (new tensors, with gradients), and the
variable updates ``scatter_update``/``add``/``sub``/``mul``/``div``/``max``/``min`` and
``scatter_nd_update``/``add``/``sub`` (stateful, not differentiable, as in TensorFlow).

A variable scatter takes the variable as a reference, like ``assign_add``
(:mod:`daskgraph.ops.state`): its kernel reads the stored value, writes the updates into a copy
and stores that, holding the variable's lock, and the op outputs the updated value. Indices
along the first axis (``scatter_*``) or coordinates in the last axis of ``indices``
(``*_nd``) are checked when the op runs. Where indices repeat, additions add up and, for the
plain updates, the last one wins on a CPU (a GPU picks any, as TensorFlow's).

>>> import daskgraph as dg
>>> with dg.Graph().as_default():
...     v = dg.Variable([1.0, 2.0, 3.0])
...     up = scatter_add(v, [0, 0, 2], [10.0, 20.0, 5.0])
...     with dg.Session() as sess:
...         _ = sess.run(v.initializer)
...         print(sess.run(up), sess.run(up))
[31.  2.  8.] [61.  2. 13.]
"""

from __future__ import annotations

from typing import Any

from daskgraph.framework import dtypes
from daskgraph.framework.gradient_registry import no_gradient, register_gradient
from daskgraph.framework.graph import Operation, Shape, Tensor, new_tensor
from daskgraph.framework.op_registry import CPU_ALL, GPU_NUMERIC, register
from daskgraph.kernels.scatter import (
    _scatter_nd_kernel,
    _tensor_scatter_kernel,
    _variable_scatter_kernel,
)
from daskgraph.ops.array import cast, convert_to_tensor, identity
from daskgraph.ops.fill_ops import shape_argument, zeros_like
from daskgraph.ops.indexing import INDEX_DTYPES, gather_nd
from daskgraph.ops.logic import equal
from daskgraph.ops.math import negative
from daskgraph.ops.shape_ops import shape as shape_of
from daskgraph.ops.state import Variable

__all__ = [
    "scatter_add",
    "scatter_div",
    "scatter_max",
    "scatter_min",
    "scatter_mul",
    "scatter_nd",
    "scatter_nd_add",
    "scatter_nd_sub",
    "scatter_nd_update",
    "scatter_sub",
    "scatter_update",
    "tensor_scatter_add",
    "tensor_scatter_max",
    "tensor_scatter_min",
    "tensor_scatter_sub",
    "tensor_scatter_update",
]

_NO_STRINGS = CPU_ALL - {dtypes.string}


_VARIABLE_OPS = {
    "ScatterUpdate": "update", "ScatterAdd": "add", "ScatterSub": "sub", "ScatterMul": "mul",
    "ScatterDiv": "div", "ScatterMax": "max", "ScatterMin": "min", "ScatterNdUpdate": "update",
    "ScatterNdAdd": "add", "ScatterNdSub": "sub",
}  # fmt: skip
_TENSOR_OPS = {
    "TensorScatterUpdate": "update", "TensorScatterAdd": "add", "TensorScatterSub": "sub",
    "TensorScatterMax": "max", "TensorScatterMin": "min",
}  # fmt: skip


for _type, _mode in _VARIABLE_OPS.items():
    _kinds = _NO_STRINGS if _mode == "update" else dtypes.NUMERIC
    register(_type, _variable_scatter_kernel, cpu=_kinds, gpu=_kinds & GPU_NUMERIC,
             stateful=True, ref_inputs=(0,))  # fmt: skip
    no_gradient(_type)
for _type, _mode in _TENSOR_OPS.items():
    _kinds = _NO_STRINGS if _mode == "update" else dtypes.NUMERIC
    register(_type, _tensor_scatter_kernel, cpu=_kinds, gpu=_kinds & GPU_NUMERIC)
register("ScatterNd", _scatter_nd_kernel, cpu=dtypes.NUMERIC, gpu=dtypes.NUMERIC)


# -- shapes ---------------------------------------------------------------------------------------
def _indices(indices: Any, where: str) -> Tensor:
    t = convert_to_tensor(indices)
    if t.dtype not in INDEX_DTYPES:
        raise TypeError(f"{where}: indices must be int32 or int64; {t.name!r} is {t.dtype.name}")
    return t


def _check_updates(
    target: Shape | None, indices: Tensor, updates: Tensor, nd: bool, where: str
) -> None:
    """Updates must have shape ``indices.shape[:-1] + target[depth:]`` (``*_nd``) or
    ``indices.shape + target[1:]``; a scalar is broadcast. Unknown sizes match anything."""
    if target is None or indices.shape is None or updates.shape in (None, ()):
        return
    if nd:
        depth = indices.shape[-1] if indices.shape else None
        if depth is None:
            return
        if depth > len(target):
            raise ValueError(f"{where}: index depth {depth} exceeds the rank {len(target)}")
        expected = (*indices.shape[:-1], *target[depth:])
    else:
        expected = (*indices.shape, *target[1:])
    if len(expected) != len(updates.shape) or any(
        None not in (a, b) and a != b for a, b in zip(expected, updates.shape, strict=True)
    ):
        raise ValueError(
            f"{where}: updates of shape {updates.shape} do not match the shape "
            f"{tuple(expected)} that indices of shape {indices.shape} ask for"
        )


# -- builders -------------------------------------------------------------------------------------
def _variable_scatter(
    op_type: str, ref: Any, indices: Any, updates: Any, name: str | None, where: str
) -> Tensor:
    if not isinstance(ref, Variable):
        raise TypeError(f"{where} expects a Variable as ref; got {ref!r}")
    nd = "Nd" in op_type
    idx = _indices(indices, where)
    upd = convert_to_tensor(updates, dtype=ref.dtype)
    _check_updates(ref.shape, idx, upd, nd, where)
    r = ref._ref()
    op = r.graph.create_op(
        op_type,
        [r, idx, upd],
        dtype=r.dtype,
        shape=r.shape,
        attrs={"mode": _VARIABLE_OPS[op_type], "nd": nd},
        name=name or op_type,
        colocate_with=r.op,
    )
    return op.outputs[0]


def scatter_update(
    ref: Any, indices: Any, updates: Any, use_locking: bool = True, name: str | None = None
) -> Tensor:
    """Store ``updates`` in the rows ``indices`` of the variable ``ref`` (``ref[indices] =
    updates``); the op outputs the updated value.

    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     v = dg.Variable([[1, 1], [2, 2], [3, 3]])
    ...     up = scatter_update(v, [2, 0], [[7, 7], [9, 9]])
    ...     with dg.Session() as sess:
    ...         _ = sess.run(v.initializer)
    ...         print(sess.run(up).tolist())
    [[9, 9], [2, 2], [7, 7]]
    """
    return _variable_scatter("ScatterUpdate", ref, indices, updates, name, "scatter_update")


def scatter_add(
    ref: Any, indices: Any, updates: Any, use_locking: bool = False, name: str | None = None
) -> Tensor:
    """Add ``updates`` to the rows ``indices`` of the variable ``ref`` (repeats add up)."""
    return _variable_scatter("ScatterAdd", ref, indices, updates, name, "scatter_add")


def scatter_sub(
    ref: Any, indices: Any, updates: Any, use_locking: bool = False, name: str | None = None
) -> Tensor:
    """Subtract ``updates`` from the rows ``indices`` of the variable ``ref``."""
    return _variable_scatter("ScatterSub", ref, indices, updates, name, "scatter_sub")


def scatter_mul(
    ref: Any, indices: Any, updates: Any, use_locking: bool = False, name: str | None = None
) -> Tensor:
    """Multiply the rows ``indices`` of the variable ``ref`` by ``updates``."""
    return _variable_scatter("ScatterMul", ref, indices, updates, name, "scatter_mul")


def scatter_div(
    ref: Any, indices: Any, updates: Any, use_locking: bool = False, name: str | None = None
) -> Tensor:
    """Divide the rows ``indices`` of the variable ``ref`` by ``updates`` (integers truncated
    toward zero, as TensorFlow's)."""
    return _variable_scatter("ScatterDiv", ref, indices, updates, name, "scatter_div")


def scatter_max(
    ref: Any, indices: Any, updates: Any, use_locking: bool = False, name: str | None = None
) -> Tensor:
    """The larger of the rows ``indices`` of the variable ``ref`` and ``updates``, stored."""
    return _variable_scatter("ScatterMax", ref, indices, updates, name, "scatter_max")


def scatter_min(
    ref: Any, indices: Any, updates: Any, use_locking: bool = False, name: str | None = None
) -> Tensor:
    """The smaller of the rows ``indices`` of the variable ``ref`` and ``updates``, stored."""
    return _variable_scatter("ScatterMin", ref, indices, updates, name, "scatter_min")


def scatter_nd_update(
    ref: Any, indices: Any, updates: Any, use_locking: bool = True, name: str | None = None
) -> Tensor:
    """Store ``updates`` at the coordinates in the last axis of ``indices`` of ``ref``.

    >>> import daskgraph as dg
    >>> import numpy as np
    >>> with dg.Graph().as_default():
    ...     v = dg.Variable(np.zeros((2, 2)))
    ...     up = scatter_nd_update(v, [[0, 1], [1, 0]], [5.0, 6.0])
    ...     with dg.Session() as sess:
    ...         _ = sess.run(v.initializer)
    ...         print(sess.run(up).tolist())
    [[0.0, 5.0], [6.0, 0.0]]
    """
    return _variable_scatter("ScatterNdUpdate", ref, indices, updates, name, "scatter_nd_update")


def scatter_nd_add(
    ref: Any, indices: Any, updates: Any, use_locking: bool = False, name: str | None = None
) -> Tensor:
    """Add ``updates`` at the coordinates in the last axis of ``indices`` of ``ref``."""
    return _variable_scatter("ScatterNdAdd", ref, indices, updates, name, "scatter_nd_add")


def scatter_nd_sub(
    ref: Any, indices: Any, updates: Any, use_locking: bool = False, name: str | None = None
) -> Tensor:
    """Subtract ``updates`` at the coordinates in the last axis of ``indices`` of ``ref``."""
    return _variable_scatter("ScatterNdSub", ref, indices, updates, name, "scatter_nd_sub")


def scatter_nd(
    indices: Any, updates: Any, shape: Any, bad_indices_policy: str = "", name: str | None = None
) -> Tensor:
    """A tensor of ``shape``, zeros but for ``updates`` at the coordinates in the last axis of
    ``indices`` (repeated coordinates add up).

    Examples
    --------
    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     y = scatter_nd([[1], [3], [1]], [9, 10, 2], [5])
    ...     with dg.Session() as sess:
    ...         print(sess.run(y))
    [ 0 11  0 10  0]
    """
    idx = _indices(indices, "scatter_nd")
    upd = convert_to_tensor(updates)
    static, inputs = shape_argument(shape, "scatter_nd")
    out: Shape | None = static
    if static is None:
        known = inputs[0].shape
        out = None if known is None or known[0] is None else (None,) * known[0]
    _check_updates(out, idx, upd, True, "scatter_nd")
    return new_tensor("ScatterNd", [idx, upd, *inputs], upd.dtype, out, name, target=static)


def _tensor_scatter(
    op_type: str, tensor: Any, indices: Any, updates: Any, name: str | None, where: str
) -> Tensor:
    x = convert_to_tensor(tensor)
    idx = _indices(indices, where)
    upd = convert_to_tensor(updates, dtype=x.dtype)
    _check_updates(x.shape, idx, upd, True, where)
    return new_tensor(op_type, [x, idx, upd], x.dtype, x.shape, name or op_type,
                      mode=_TENSOR_OPS[op_type])  # fmt: skip


def tensor_scatter_update(
    tensor: Any, indices: Any, updates: Any, name: str | None = None
) -> Tensor:
    """A copy of ``tensor`` with ``updates`` at the coordinates in the last axis of
    ``indices`` (TF1's ``tensor_scatter_update``/``tensor_scatter_nd_update``).

    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     y = tensor_scatter_update(dg.constant([1, 2, 3, 4]), [[0], [2]], [9, 8])
    ...     with dg.Session() as sess:
    ...         print(sess.run(y))
    [9 2 8 4]
    """
    return _tensor_scatter("TensorScatterUpdate", tensor, indices, updates, name,
                           "tensor_scatter_update")  # fmt: skip


def tensor_scatter_add(
    tensor: Any, indices: Any, updates: Any, bad_indices_policy: str = "", name: str | None = None
) -> Tensor:
    """A copy of ``tensor`` with ``updates`` added at the coordinates of ``indices``."""
    return _tensor_scatter("TensorScatterAdd", tensor, indices, updates, name,
                           "tensor_scatter_add")  # fmt: skip


def tensor_scatter_sub(
    tensor: Any, indices: Any, updates: Any, bad_indices_policy: str = "", name: str | None = None
) -> Tensor:
    """A copy of ``tensor`` with ``updates`` subtracted at the coordinates of ``indices``."""
    return _tensor_scatter("TensorScatterSub", tensor, indices, updates, name,
                           "tensor_scatter_sub")  # fmt: skip


def tensor_scatter_max(
    tensor: Any, indices: Any, updates: Any, bad_indices_policy: str = "", name: str | None = None
) -> Tensor:
    """A copy of ``tensor`` with the larger of it and ``updates`` at ``indices``'s places."""
    return _tensor_scatter("TensorScatterMax", tensor, indices, updates, name,
                           "tensor_scatter_max")  # fmt: skip


def tensor_scatter_min(
    tensor: Any, indices: Any, updates: Any, bad_indices_policy: str = "", name: str | None = None
) -> Tensor:
    """A copy of ``tensor`` with the smaller of it and ``updates`` at ``indices``'s places."""
    return _tensor_scatter("TensorScatterMin", tensor, indices, updates, name,
                           "tensor_scatter_min")  # fmt: skip


# -- gradients ------------------------------------------------------------------------------------
@register_gradient("ScatterNd")
def _scatter_nd_grad(op: Operation, grad: Tensor) -> list[Tensor | None]:
    return [None, gather_nd(grad, op.inputs[0]), *[None] * (len(op.inputs) - 2)]


@register_gradient("TensorScatterUpdate")
def _tensor_scatter_update_grad(op: Operation, grad: Tensor) -> list[Tensor | None]:
    _, indices, updates = op.inputs
    kept = tensor_scatter_update(identity(grad), indices, zeros_like(updates, dtype=grad.dtype))
    return [kept, None, gather_nd(grad, indices)]


@register_gradient("TensorScatterAdd")
def _tensor_scatter_add_grad(op: Operation, grad: Tensor) -> list[Tensor | None]:
    return [grad, None, gather_nd(grad, op.inputs[1])]


@register_gradient("TensorScatterSub")
def _tensor_scatter_sub_grad(op: Operation, grad: Tensor) -> list[Tensor | None]:
    return [grad, None, negative(gather_nd(grad, op.inputs[1]))]


def _extremum_grad(op: Operation, grad: Tensor) -> list[Tensor | None]:
    """TensorFlow's: the gradient goes to the entries equal to the result, shared by ties."""
    x, indices, updates = op.inputs
    out = op.outputs[0]
    x_hits = cast(equal(x, out), grad.dtype)
    y_hits = cast(equal(updates, gather_nd(out, indices)), grad.dtype)
    from_y = new_tensor("ScatterNd", [indices, y_hits, shape_of(x)], grad.dtype, x.shape,
                        "ScatterNd", target=None)  # fmt: skip
    hits = x_hits + from_y
    return [grad * x_hits / hits, None, gather_nd(grad / hits, indices) * y_hits]


register_gradient("TensorScatterMax")(_extremum_grad)
register_gradient("TensorScatterMin")(_extremum_grad)
