"""Ops that make tensors of one value: ``fill``, ``zeros``, ``ones``, ``zeros_like``,
``ones_like`` and ``one_hot``.

A shape is a list of Python ints known when the graph is built, or, for ``fill``, ``zeros``
and ``ones``, a 1-D integer tensor computed at run time (``zeros(shape(x))``). ``zeros`` and
``ones`` are a ``Fill`` op named after the call, as in TensorFlow.

>>> import daskgraph as dg
>>> with dg.Graph().as_default():
...     z = zeros([2, 3])
...     h = one_hot([0, 2], 3)
...     with dg.Session() as sess:
...         print(sess.run(h))
[[1. 0. 0.]
 [0. 0. 1.]]
>>> z.op.name, z.op.type, z.shape
('zeros', 'Fill', (2, 3))
"""

from __future__ import annotations

from typing import Any

import numpy as np

from daskgraph.framework import dtypes
from daskgraph.framework.gradient_registry import no_gradient, register_gradient
from daskgraph.framework.graph import Shape, Tensor, get_default_graph
from daskgraph.framework.graph import _name_scope as graph_name_scope
from daskgraph.framework.op_registry import CPU_ALL, GPU_NUMERIC, register
from daskgraph.kernels.fill_ops import (
    _fill_kernel,
    _one_hot_kernel,
    _ones_like_kernel,
    _zeros_like_kernel,
)
from daskgraph.ops.array import constant, convert_to_tensor, shape_tensor
from daskgraph.ops.math import reduce_sum
from daskgraph.ops.slicing import _static_ints

__all__ = ["fill", "one_hot", "ones", "ones_like", "zeros", "zeros_like"]

_INDEX = frozenset({dtypes.int32, dtypes.int64})
_ONE_HOT_INDEX = _INDEX | {dtypes.uint8}


_NO_STRINGS = CPU_ALL - {dtypes.string}
register("Fill", _fill_kernel, cpu=CPU_ALL, gpu=GPU_NUMERIC)
register("ZerosLike", _zeros_like_kernel, cpu=_NO_STRINGS, gpu=GPU_NUMERIC)
register("OnesLike", _ones_like_kernel, cpu=_NO_STRINGS, gpu=GPU_NUMERIC)
register("OneHot", _one_hot_kernel, cpu=_NO_STRINGS, gpu=GPU_NUMERIC)


# -- builders -------------------------------------------------------------------------------------
def shape_argument(dims: Any, where: str) -> tuple[Shape | None, list[Tensor]]:
    """A shape given as Python ints (or a constant) -> ``(shape, [])``; as a 1-D integer tensor
    computed by the graph -> ``(None, [tensor])``.

    >>> shape_argument([2, 3], "fill")
    ((2, 3), [])
    """
    computed = shape_tensor(dims, where)  # a shape tensor, or [shape(x)[0], 10]
    if computed is not None:
        return None, [computed]
    if isinstance(dims, (int, np.integer)):
        dims = [dims]
    shape = _static_ints(dims, where, "shape")
    if any(d < 0 for d in shape):
        raise ValueError(f"{where}: shape dimensions must be >= 0; got {list(shape)}")
    return shape, []


def _static_of(shape: Shape | None, inputs: list[Tensor]) -> Shape | None:
    """The static shape of a tensor made of the shape argument ``(shape, inputs)``."""
    if shape is not None:
        return shape
    known = inputs[0].shape
    return None if known is None or known[0] is None else (None,) * known[0]


def _fill(dims: Any, value: Tensor, name: str | None, exact_name: str | None = None) -> Tensor:
    if value.shape is not None and value.shape != ():
        raise ValueError(f"fill: value must be a scalar; {value.name!r} has shape {value.shape}")
    static, inputs = shape_argument(dims, "fill")
    op = get_default_graph().create_op(
        "Fill",
        [*inputs, value],
        dtype=value.dtype,
        shape=_static_of(static, inputs),
        attrs={"shape": static},
        name=name or "Fill",
        exact_name=exact_name,
    )
    return op.outputs[0]


def fill(dims: Any, value: Any, name: str | None = None) -> Tensor:
    """A tensor of shape ``dims`` (ints, or a 1-D integer tensor) filled with scalar ``value``.

    Examples
    --------
    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     t = fill([2, 2], 7)
    >>> t.shape, t.dtype
    ((2, 2), int32)
    """
    return _fill(dims, convert_to_tensor(value), name)


def _constant_fill(shape: Any, value: Any, dtype: Any, name: str) -> Tensor:
    """``fill(shape, value)`` named ``name``, its value a ``name/Const``."""
    dtype = dtypes.as_dtype(dtype)
    graph = get_default_graph()
    base = graph.unique_name(name)
    with graph_name_scope(graph, base + "/"):
        scalar = constant(np.asarray(value).astype(dtype.numpy), dtype=dtype)
    return _fill(shape, scalar, None, exact_name=base)


def zeros(shape: Any, dtype: Any = dtypes.float32, name: str | None = None) -> Tensor:
    """A tensor of ``shape`` (ints, or a 1-D integer tensor) with all elements zero.

    Examples
    --------
    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     z = zeros(3, dg.int32)
    ...     with dg.Session() as sess:
    ...         print(sess.run(z))
    [0 0 0]
    """
    return _constant_fill(shape, 0, dtype, name or "zeros")


def ones(shape: Any, dtype: Any = dtypes.float32, name: str | None = None) -> Tensor:
    """A tensor of ``shape`` (ints, or a 1-D integer tensor) with all elements one."""
    return _constant_fill(shape, 1, dtype, name or "ones")


def _like(op_type: str, tensor: Any, dtype: Any, name: str | None) -> Tensor:
    x = convert_to_tensor(tensor)
    out = x.dtype if dtype is None else dtypes.as_dtype(dtype)
    op = get_default_graph().create_op(
        op_type, [x], dtype=out, shape=x.shape, attrs={"dtype": out.numpy}, name=name
    )
    return op.outputs[0]


def zeros_like(
    tensor: Any, dtype: Any = None, name: str | None = None, optimize: bool = True
) -> Tensor:
    """Zeros of the runtime shape of ``tensor``, of its dtype or ``dtype``.

    Examples
    --------
    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     z = zeros_like(dg.placeholder(dg.float32, [None, 2]), dtype=dg.int64)
    >>> z.shape, z.dtype
    ((None, 2), int64)
    """
    return _like("ZerosLike", tensor, dtype, name or "zeros_like")


def ones_like(
    tensor: Any, dtype: Any = None, name: str | None = None, optimize: bool = True
) -> Tensor:
    """Ones of the runtime shape of ``tensor``, of its dtype or ``dtype``."""
    return _like("OnesLike", tensor, dtype, name or "ones_like")


def _scalar_value(value: Any, where: str) -> Any:
    if isinstance(value, Tensor):
        if value.op.type != "Const" or value.shape != ():
            raise TypeError(f"{where} must be a Python number or a scalar constant; got "
                            f"{value.name!r}")  # fmt: skip
        return value.op.attrs["value"].item()
    return value


def one_hot(
    indices: Any,
    depth: Any,
    on_value: Any = None,
    off_value: Any = None,
    axis: int | None = None,
    dtype: Any = None,
    name: str | None = None,
) -> Tensor:
    """One-hot vectors of length ``depth`` for ``indices``, along a new axis ``axis`` (last by
    default): ``on_value`` (1) where the index is, ``off_value`` (0) elsewhere; an index out of
    ``[0, depth)`` gives a vector of ``off_value``. The dtype is ``dtype``, else that of
    ``on_value``/``off_value``, else float32. No gradient flows into ``indices``.

    Examples
    --------
    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     h = one_hot([1, -1], 3, on_value=5, axis=0)
    ...     with dg.Session() as sess:
    ...         print(sess.run(h))
    [[0 0]
     [5 0]
     [0 0]]
    """
    indices = convert_to_tensor(indices)
    if indices.dtype not in _ONE_HOT_INDEX:
        raise TypeError(f"one_hot: indices must be uint8, int32 or int64; {indices.name!r} is "
                        f"{indices.dtype.name}")  # fmt: skip
    depths = _static_ints(depth, "one_hot", "depth")
    if len(depths) != 1 or depths[0] < 0:
        raise ValueError(f"one_hot: depth must be one int >= 0; got {depth!r}")
    depth = depths[0]
    on = _scalar_value(on_value, "one_hot: on_value")
    off = _scalar_value(off_value, "one_hot: off_value")
    if dtype is None:
        given = on if on is not None else off
        dtype = dtypes.float32 if given is None else dtypes.infer_dtype(given)
    dtype = dtypes.as_dtype(dtype)
    rank = None if indices.shape is None else len(indices.shape)
    axis = -1 if axis is None else int(axis)
    if axis < -1 or (rank is not None and axis > rank):
        raise ValueError(f"one_hot: axis must be -1 or in [0, {rank}]; got {axis}")
    if rank is not None and axis == -1:
        axis = rank
    shape = None
    if indices.shape is not None:
        shape = (*indices.shape[:axis], depth, *indices.shape[axis:])
    attrs = {
        "depth": depth,
        "on": dtype.numpy.type(1 if on is None else on),
        "off": dtype.numpy.type(0 if off is None else off),
        "axis": axis,
        "dtype": dtype.numpy,
    }
    op = get_default_graph().create_op(
        "OneHot", [indices], dtype=dtype, shape=shape, attrs=attrs, name=name or "one_hot"
    )
    return op.outputs[0]


# -- gradients ------------------------------------------------------------------------------------
@register_gradient("Fill")
def _fill_grad(op: Any, grad: Tensor) -> list[Tensor | None]:
    total = reduce_sum(grad)
    return [None, total] if len(op.inputs) == 2 else [total]


for _type in ("ZerosLike", "OnesLike", "OneHot"):
    no_gradient(_type)
