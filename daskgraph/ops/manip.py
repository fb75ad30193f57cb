"""Array manipulation that TF1 programs reach for: ``roll``, ``repeat``, ``setdiff1d``,
``identity_n``, ``shape_n``, ``ensure_shape``, ``saturate_cast`` and the broadcast-shape
helpers (``broadcast_static_shape``, ``broadcast_dynamic_shape``), with TensorFlow's
gradients and errors.

>>> import daskgraph as dg
>>> with dg.Graph().as_default():
...     x = dg.constant([[1, 2, 3], [4, 5, 6]])
...     r, p = roll(x, [1, -1], [0, 1]), repeat(x, [0, 1, 3], axis=1)
...     with dg.Session() as sess:
...         sess.run(r).tolist(), sess.run(p).tolist()
([[5, 6, 4], [2, 3, 1]], [[2, 3, 3, 3], [5, 6, 6, 6]])
"""

from __future__ import annotations

from collections import namedtuple
from typing import Any

import numpy as np

from daskgraph.framework import dtypes
from daskgraph.framework.gradient_registry import no_gradient, register_gradient
from daskgraph.framework.graph import Operation, Tensor, get_default_graph, name_scope
from daskgraph.framework.op_registry import CPU_ALL, GPU_NUMERIC, register
from daskgraph.framework.tensor_shape import TensorShape
from daskgraph.kernels.manip import (
    _broadcast_args_kernel,
    _ensure_shape_kernel,
    _list_diff_kernel,
    _repeat_grad_kernel,
    _repeat_kernel,
    _roll_kernel,
)
from daskgraph.ops.array import as_shape, constant, convert_to_tensor, identity, reshape
from daskgraph.ops.elementwise import clip_by_value
from daskgraph.ops.indexing import INDEX_DTYPES
from daskgraph.ops.linalg import split_outputs
from daskgraph.ops.math import broadcast_shape, negative
from daskgraph.ops.shape_ops import shape as shape_of

__all__ = [
    "broadcast_dynamic_shape",
    "broadcast_static_shape",
    "ensure_shape",
    "identity_n",
    "repeat",
    "roll",
    "saturate_cast",
    "setdiff1d",
    "shape_n",
]

#: ``setdiff1d``'s result, as TensorFlow's ``ListDiff``
ListDiff = namedtuple("ListDiff", ["out", "idx"])
_INDEX = frozenset(INDEX_DTYPES)


register("Roll", _roll_kernel, cpu=CPU_ALL, gpu=GPU_NUMERIC)
register("Repeat", _repeat_kernel, cpu=CPU_ALL, gpu=GPU_NUMERIC)
register(
    "RepeatGrad", _repeat_grad_kernel, cpu=dtypes.FLOATING | _INDEX, gpu=dtypes.FLOATING | _INDEX
)
register("ListDiff", _list_diff_kernel, cpu=CPU_ALL, gpu=None)  # CPU only, as in TensorFlow
register("EnsureShape", _ensure_shape_kernel, cpu=CPU_ALL, gpu=GPU_NUMERIC)
register("BroadcastArgs", _broadcast_args_kernel, cpu=_INDEX, gpu=_INDEX)


# -- builders -------------------------------------------------------------------------------------
def _int_tensor(value: Any, where: str, what: str) -> Tensor:
    t = convert_to_tensor(value, dtype=None if isinstance(value, Tensor) else dtypes.int32)
    if t.dtype not in _INDEX:
        raise TypeError(f"{where}: {what} must be int32 or int64; got {t.dtype.name}")
    if t.shape is not None and len(t.shape) > 1:
        raise ValueError(f"{where}: {what} must be a scalar or a vector; got shape {t.shape}")
    return t


def _const_ints(t: Tensor) -> list[int] | None:
    if t.op.type != "Const":
        return None
    return [int(v) for v in np.asarray(t.op.attrs["value"]).reshape(-1)]


def roll(input: Any, shift: Any, axis: Any, name: str | None = None) -> Tensor:
    """``input`` with its elements shifted by ``shift`` along ``axis`` (wrapping around);
    several axes at once when both are vectors, shifts of a repeated axis adding up
    (``tf.roll``).

    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     with dg.Session() as sess:
    ...         sess.run(roll(dg.constant([1, 2, 3, 4]), 1, 0)).tolist()
    [4, 1, 2, 3]
    """
    x = convert_to_tensor(input)
    shift, axis = _int_tensor(shift, "roll", "shift"), _int_tensor(axis, "roll", "axis")
    shifts, axes = _const_ints(shift), _const_ints(axis)
    if shifts is not None and axes is not None and len(shifts) != len(axes):
        raise ValueError(f"roll: shift and axis must have the same size; got {shifts}, {axes}")
    if axes is not None and x.shape is not None:
        rank = len(x.shape)
        for a in axes:
            if not -rank <= a < rank:
                raise ValueError(f"roll: axis {a} is out of range for {x.name!r} of rank {rank}")
    op = get_default_graph().create_op(
        "Roll", [x, shift, axis], dtype=x.dtype, shape=x.shape, name=name or "Roll"
    )
    return op.outputs[0]


def repeat(input: Any, repeats: Any, axis: int | None = None, name: str | None = None) -> Tensor:
    """Each element of ``input`` repeated ``repeats`` times along ``axis`` (``repeats`` one
    count, or one per element of that axis; without ``axis`` the flattened ``input``), as
    ``tf.repeat``.

    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     with dg.Session() as sess:
    ...         sess.run(repeat(dg.constant([[1, 2], [3, 4]]), 2)).tolist()
    [1, 1, 2, 2, 3, 3, 4, 4]
    """
    x = convert_to_tensor(input)
    with name_scope(name or "Repeat"):
        if axis is None:
            x, axis = reshape(x, [-1]), 0
        repeats = _int_tensor(repeats, "repeat", "repeats")
        if x.shape is None:
            raise ValueError(f"repeat: the rank of {x.name!r} must be known")
        axis = int(axis)
        if not -len(x.shape) <= axis < len(x.shape):
            raise ValueError(
                f"repeat: axis {axis} is out of range for {x.name!r} of shape {x.shape}"
            )
        axis %= len(x.shape)
        shape = list(x.shape)
        shape[axis] = _repeated_size(_const_ints(repeats), shape[axis])
        op = get_default_graph().create_op(
            "Repeat", [x, repeats], dtype=x.dtype, shape=tuple(shape), attrs={"axis": axis}
        )
    return op.outputs[0]


def _repeated_size(reps: list[int] | None, size: int | None) -> int | None:
    if reps is None:
        return None
    if len(reps) == 1:
        return None if size is None else size * reps[0]
    if size is not None and len(reps) != size:
        raise ValueError(f"repeat: repeats has {len(reps)} entries; the axis has {size}")
    return sum(reps)


def setdiff1d(x: Any, y: Any, index_dtype: Any = dtypes.int32, name: str | None = None):
    """The values of the vector ``x`` that are not in ``y``, in order, and their positions in
    ``x``: ``ListDiff(out, idx)`` (``tf.setdiff1d``).

    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     d = setdiff1d([1, 2, 3, 4, 5, 2], [2, 5])
    ...     with dg.Session() as sess:
    ...         sess.run(d.out).tolist(), sess.run(d.idx).tolist()
    ([1, 3, 4], [0, 2, 3])
    """
    x, y = convert_to_tensor(x), convert_to_tensor(y)
    y = y if y.dtype == x.dtype else convert_to_tensor(y, dtype=x.dtype)
    for t, what in ((x, "x"), (y, "y")):
        if t.shape is not None and len(t.shape) != 1:
            raise ValueError(f"setdiff1d: {what} should be a 1D vector; {t.name!r} is {t.shape}")
    out = dtypes.as_dtype(index_dtype)
    if out not in _INDEX:
        raise TypeError(f"setdiff1d: index_dtype must be int32 or int64; got {out.name}")
    parts = [("out", x.dtype, (None,)), ("idx", out, (None,))]
    return ListDiff(*split_outputs("ListDiff", [x, y], parts, name, out_type=out.numpy))


def identity_n(input: Any, name: str | None = None) -> list[Tensor]:
    """An identity of each tensor of the list ``input`` (``tf.identity_n``; one ``Identity``
    op each, daskgraph's ops having one output)."""
    return [identity(t, name=name or "IdentityN") for t in input]


def shape_n(input: Any, out_type: Any = dtypes.int32, name: str | None = None) -> list[Tensor]:
    """The runtime shape of each tensor of ``input``, which share one dtype (``tf.shape_n``)."""
    tensors = [convert_to_tensor(t) for t in input]
    kinds = {t.dtype for t in tensors}
    if len(kinds) > 1:
        names = ", ".join(t.dtype.name for t in tensors)
        raise TypeError(
            f"Tensors in list passed to 'input' of 'ShapeN' Op have types [{names}] that don't "
            "all match."
        )
    return [shape_of(t, name=name or "ShapeN", out_type=out_type) for t in tensors]


def ensure_shape(x: Any, shape: Any, name: str | None = None) -> Tensor:
    """``x``, checked when it runs to have a shape compatible with ``shape`` (None for a size
    that may be anything); its static shape is the two merged (``tf.ensure_shape``).

    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     e = ensure_shape(dg.placeholder(dg.float32, [None, 3]), [2, None])
    >>> e.shape
    (2, 3)
    """
    x = convert_to_tensor(x)
    wanted = as_shape(shape, "ensure_shape")
    if wanted is None:
        return identity(x, name=name or "EnsureShape")
    merged = wanted
    if x.shape is not None:
        merged = _merge_shapes(tuple(x.shape), wanted)
    op = get_default_graph().create_op(
        "EnsureShape",
        [x],
        dtype=x.dtype,
        shape=merged,
        attrs={"shape": wanted, "input_name": x.op.name},
        name=name or "EnsureShape",
    )
    return op.outputs[0]


def _merge_shapes(have: tuple, wanted: tuple) -> tuple:
    show = ",".join
    text = (f"[{show('?' if d is None else str(d) for d in wanted)}] and "
            f"[{show('?' if d is None else str(d) for d in have)}]")  # fmt: skip
    if len(have) != len(wanted):
        raise ValueError(f"Shape must be rank {len(wanted)} but is rank {len(have)}: {text}")
    merged = []
    for i, (a, b) in enumerate(zip(wanted, have, strict=True)):
        if a is not None and b is not None and a != b:
            raise ValueError(
                f"Dimension {i} in both shapes must be equal, but are {a} and {b}. Shapes are "
                f"{text}."
            )
        merged.append(b if a is None else a)
    return tuple(merged)


def saturate_cast(value: Any, dtype: Any, name: str | None = None) -> Tensor:
    """``value`` cast to ``dtype``, clipped first to the largest range both dtypes represent,
    so that nothing overflows (``tf.saturate_cast``, with TensorFlow's limits).

    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     c = saturate_cast(dg.constant([-300.0, 1.7, 300.0]), dg.uint8)
    ...     with dg.Session() as sess:
    ...         sess.run(c).tolist()
    [0, 1, 255]
    """
    graph = get_default_graph()
    with name_scope(name or "saturate_cast") as scope:
        x = convert_to_tensor(value, name="value")
        out = dtypes.as_dtype(dtype)
        if x.dtype is dtypes.string or out is dtypes.string:
            raise TypeError(f"saturate_cast: cannot cast {x.dtype.name} to {out.name}")
        low, high = _saturation_limits(x.dtype, out)
        x = clip_by_value(x, constant(low, dtype=x.dtype), constant(high, dtype=x.dtype),
                          name="clamp")  # fmt: skip
    op = graph.create_op(
        "Cast", [x], dtype=out, shape=x.shape, attrs={"dtype": out.numpy},
        exact_name=scope.rstrip("/"),
    )  # fmt: skip
    return op.outputs[0]


def _saturation_limits(source: dtypes.DType, target: dtypes.DType) -> tuple[Any, Any]:
    """TensorFlow's clip bounds: the narrower range, nudged inside what ``source`` can hold
    without passing ``target``'s limits."""
    kind = source.numpy.type
    promoted = np.promote_types(source.numpy, target.numpy)
    with np.errstate(over="ignore"):
        low = kind(np.maximum(source.min, target.min))
        if np.array([low, target.min], dtype=promoted)[0] < target.min:
            low = np.nextafter(low, kind(0), dtype=kind)
        high = kind(np.minimum(float(source.max), float(target.max)))
        if np.array([high, target.max], dtype=promoted)[0] > target.max:
            high = np.nextafter(high, kind(0), dtype=kind)
    return low, high


def broadcast_static_shape(shape_x: Any, shape_y: Any) -> TensorShape:
    """The shape two tensors of static shapes ``shape_x`` and ``shape_y`` broadcast to
    (``tf.broadcast_static_shape``).

    >>> broadcast_static_shape(TensorShape([2, 1, 3]), TensorShape([4, 1]))
    TensorShape([2, 4, 3])
    """
    x, y = TensorShape(shape_x), TensorShape(shape_y)
    try:
        return TensorShape(broadcast_shape(x._raw(), y._raw(), "broadcast_static_shape"))
    except ValueError:
        raise ValueError(
            "Incompatible shapes for broadcasting. Two shapes are compatible if for each "
            "dimension pair they are either equal or one of them is 1. Received: "
            f"{tuple(x._raw())} and {tuple(y._raw())}."
        ) from None


def broadcast_dynamic_shape(shape_x: Any, shape_y: Any) -> Tensor:
    """The shape two tensors of shapes ``shape_x`` and ``shape_y`` (1-D int32 or int64
    tensors) broadcast to, computed when the graph runs (``tf.broadcast_dynamic_shape``).

    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     s = broadcast_dynamic_shape([2, 1, 3], [4, 1])
    ...     with dg.Session() as sess:
    ...         sess.run(s).tolist()
    [2, 4, 3]
    """
    a = _int_tensor(shape_x, "broadcast_dynamic_shape", "shape_x")
    b = _int_tensor(shape_y, "broadcast_dynamic_shape", "shape_y")
    if a.dtype is not b.dtype:
        b = convert_to_tensor(shape_y, dtype=a.dtype)
    sizes = [None if t.shape is None or not t.shape else t.shape[0] for t in (a, b)]
    length = None if None in sizes else max(sizes)
    op = get_default_graph().create_op(
        "BroadcastArgs", [a, b], dtype=a.dtype, shape=(length,), name="BroadcastArgs"
    )
    return op.outputs[0]


# -- gradients ------------------------------------------------------------------------------------
@register_gradient("Roll")
def _roll_grad(op: Operation, grad: Tensor) -> list[Tensor | None]:
    _, shift, axis = op.inputs
    return [roll(grad, negative(shift), axis), None, None]


@register_gradient("Repeat")
def _repeat_grad(op: Operation, grad: Tensor) -> list[Tensor | None]:
    x, repeats = op.inputs
    out = get_default_graph().create_op(
        "RepeatGrad", [grad, repeats, x], dtype=grad.dtype, shape=x.shape,
        attrs={"axis": op.attrs["axis"]},
    )  # fmt: skip
    return [out.outputs[0], None]


@register_gradient("EnsureShape")
def _ensure_shape_grad(op: Operation, grad: Tensor) -> list[Tensor]:
    return [grad]


for _type in ("ListDiff", "BroadcastArgs", "RepeatGrad"):
    no_gradient(_type)
