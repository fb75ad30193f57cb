"""Reductions beyond sums, means and maxima: ``reduce_min``, ``reduce_prod``, ``argmax`` and
``argmin``.

``reduce_min`` and ``reduce_prod`` take ``axis``/``keepdims`` as the reductions of
:mod:`daskgraph.ops.math` do; ``argmax``/``argmin`` return the ``int64`` (or ``output_type``)
index of the extremum along one axis, with TensorFlow 1's signature.

>>> import daskgraph as dg
>>> with dg.Graph().as_default():
...     x = dg.constant([[3.0, 1.0, 2.0], [0.0, 5.0, 4.0]])
...     i = argmax(x, axis=1)
...     m = reduce_min(x, axis=0, keepdims=True)
>>> i.dtype, i.shape, m.shape
(int64, (2,), (1, 3))

Reductions TF1 programs reach for beyond sums and extrema: ``reduce_any`` and ``reduce_all``
over ``bool`` tensors (ops ``Any``/``All``) and ``reduce_logsumexp``.

They take ``axis``/``keepdims`` as the reductions of :mod:`daskgraph.ops.math` do (TF1's
``keep_dims``/``reduction_indices`` spellings are in :mod:`daskgraph.compat.v1`).
``reduce_logsumexp`` is built from differentiable ops, shifted by the maximum so that large
inputs do not overflow.

>>> import daskgraph as dg
>>> with dg.Graph().as_default():
...     b = dg.constant([[True, False], [True, True]])
...     a = reduce_all(b, axis=1)
...     e = reduce_logsumexp(dg.constant([[0.0, 0.0]]), axis=1, keepdims=True)
>>> a.op.type, a.dtype, a.shape, e.shape
('All', bool, (2,), (1, 1))
"""

from __future__ import annotations

from typing import Any

import numpy as np

from daskgraph.framework import dtypes
from daskgraph.framework.gradient_registry import no_gradient, register_gradient
from daskgraph.framework.graph import Operation, Tensor, get_default_graph
from daskgraph.framework.op_registry import register
from daskgraph.kernels.reduction import _all, _any, _argmax, _argmin, _min, _prod, _prod_grad
from daskgraph.ops import backprop
from daskgraph.ops.array import convert_to_tensor
from daskgraph.ops.elementwise import log
from daskgraph.ops.fill_ops import zeros_like
from daskgraph.ops.logic import less, where
from daskgraph.ops.math import _reduce, abs, add, exp, reduce_max, reduce_sum
from daskgraph.ops.shape_ops import stop_gradient

__all__ = ["argmax", "argmin", "reduce_min", "reduce_prod"]

_NUM = dtypes.NUMERIC


register("Min", _min, cpu=_NUM, gpu=_NUM)
register("Prod", _prod, cpu=_NUM, gpu=_NUM)
register("ProdGrad", _prod_grad, cpu=dtypes.FLOATING, gpu=dtypes.FLOATING)
register("ArgMax", _argmax, cpu=_NUM, gpu=_NUM)
register("ArgMin", _argmin, cpu=_NUM, gpu=_NUM)


# -- builders -------------------------------------------------------------------------------------
def reduce_min(x: Any, axis: Any = None, keepdims: bool = False, name: str | None = None) -> Tensor:
    """Minimum of the elements along ``axis`` (all by default)."""
    return _reduce("Min", x, axis, keepdims, name)


def reduce_prod(
    x: Any, axis: Any = None, keepdims: bool = False, name: str | None = None
) -> Tensor:
    """Product of the elements along ``axis`` (all by default), in the input's dtype.

    Examples
    --------
    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     p = reduce_prod(dg.constant([[1.0, 2.0], [3.0, 4.0]]), axis=1)
    ...     with dg.Session() as sess:
    ...         sess.run(p).tolist()
    [2.0, 12.0]
    """
    return _reduce("Prod", x, axis, keepdims, name)


def argmax(
    input: Any,
    axis: Any = None,
    name: str | None = None,
    dimension: Any = None,
    output_type: Any = dtypes.int64,
) -> Tensor:
    """The index of the largest element along ``axis`` (0 by default), as ``tf.argmax``;
    ties give the first. Not differentiable.

    Examples
    --------
    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     i = argmax(dg.constant([[1, 9, 9], [7, 2, 3]]), axis=1, output_type=dg.int32)
    ...     with dg.Session() as sess:
    ...         sess.run(i).tolist(), i.dtype
    ([1, 0], int32)
    """
    return _arg("ArgMax", input, axis, dimension, output_type, name, "argmax")


def argmin(
    input: Any,
    axis: Any = None,
    name: str | None = None,
    dimension: Any = None,
    output_type: Any = dtypes.int64,
) -> Tensor:
    """The index of the smallest element along ``axis`` (0 by default), as ``tf.argmin``;
    ties give the first. Not differentiable."""
    return _arg("ArgMin", input, axis, dimension, output_type, name, "argmin")


def _arg(
    op_type: str,
    x: Any,
    axis: Any,
    dimension: Any,
    output_type: Any,
    name: str | None,
    where: str,
) -> Tensor:
    if axis is not None and dimension is not None:
        raise ValueError(f"{where}: cannot specify both 'axis' and 'dimension'")
    axis = dimension if axis is None else axis
    axis = 0 if axis is None else axis
    if not isinstance(axis, (int, np.integer)) or isinstance(axis, bool):
        raise TypeError(f"{where}: axis must be one int; got {axis!r}")
    out = dtypes.as_dtype(output_type)
    if out not in (dtypes.int32, dtypes.int64):
        raise TypeError(f"{where}: output_type must be int32 or int64; got {out.name}")
    x = convert_to_tensor(x)
    if not x.dtype.is_numeric:
        raise TypeError(f"{where}: expects a numeric tensor; {x.name!r} is {x.dtype.name}")
    shape = None
    axis = int(axis)
    if x.shape is not None:
        rank = len(x.shape)
        if not -rank <= axis < rank:
            raise ValueError(f"{where}: axis {axis} is out of range for {x.name!r} of rank {rank}")
        axis %= rank
        shape = tuple(d for i, d in enumerate(x.shape) if i != axis)
    attrs = {"axis": axis, "output_type": out.numpy}
    op = get_default_graph().create_op(op_type, [x], dtype=out, shape=shape, attrs=attrs, name=name)
    return op.outputs[0]


# -- gradients ------------------------------------------------------------------------------------
@register_gradient("Min")
def _min_grad(op: Operation, grad: Tensor) -> list[Tensor]:
    """As ``reduce_max``'s: shared equally among the elements equal to the minimum."""
    x, y = op.inputs[0], op.outputs[0]
    return [backprop.extremum_reduce_grad(x, y, grad, op.attrs["axis"], op.attrs["keepdims"])]


@register_gradient("Prod")
def _prod_grad_fn(op: Operation, grad: Tensor) -> list[Tensor]:
    x = op.inputs[0]
    attrs = {"axis": op.attrs["axis"], "keepdims": op.attrs["keepdims"]}
    graph = get_default_graph()
    return [
        graph.create_op(
            "ProdGrad", [x, grad], dtype=x.dtype, shape=x.shape, attrs=attrs, name="ProdGrad"
        ).outputs[0]
    ]


no_gradient("ArgMax")
no_gradient("ArgMin")


# -- from reduction_more ------------------------------------------------------------------
__all__ += ["reduce_all", "reduce_any", "reduce_logsumexp"]

_BOOL = frozenset({dtypes.bool_})


register("Any", _any, cpu=_BOOL, gpu=_BOOL)
register("All", _all, cpu=_BOOL, gpu=_BOOL)


# -- builders -------------------------------------------------------------------------------------
def _bool_reduce(op_type: str, x: Any, axis: Any, keepdims: bool, name: str | None) -> Tensor:
    x = convert_to_tensor(x)
    if x.dtype is not dtypes.bool_:
        where_ = "reduce_any" if op_type == "Any" else "reduce_all"
        raise TypeError(f"{where_}: expects a bool tensor; {x.name!r} is {x.dtype.name}")
    return _reduce(op_type, x, axis, keepdims, name)


def reduce_any(
    input_tensor: Any, axis: Any = None, keepdims: bool = False, name: str | None = None
) -> Tensor:
    """Whether any element along ``axis`` (all axes by default) is true (logical OR).

    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     x = dg.constant([[True, False], [False, False]])
    ...     with dg.Session() as sess:
    ...         sess.run([reduce_any(x), reduce_any(x, axis=1)])
    [np.True_, array([ True, False])]
    """
    return _bool_reduce("Any", input_tensor, axis, keepdims, name)


def reduce_all(
    input_tensor: Any, axis: Any = None, keepdims: bool = False, name: str | None = None
) -> Tensor:
    """Whether every element along ``axis`` (all axes by default) is true (logical AND)."""
    return _bool_reduce("All", input_tensor, axis, keepdims, name)


def reduce_logsumexp(
    input_tensor: Any, axis: Any = None, keepdims: bool = False, name: str | None = None
) -> Tensor:
    """``log(sum(exp(x)))`` along ``axis`` (all by default), computed as
    ``max + log(sum(exp(x - max)))`` so that large values do not overflow (the maximum is
    taken as 0 where it is infinite, as TensorFlow does).

    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     y = reduce_logsumexp(dg.constant([[1000.0, 1000.0], [0.0, 0.0]]), axis=1)
    ...     with dg.Session() as sess:
    ...         [round(float(v), 3) for v in sess.run(y)]
    [1000.693, 0.693]
    """
    x = convert_to_tensor(input_tensor)
    if not x.dtype.is_floating:
        raise TypeError(f"reduce_logsumexp: expects a float tensor; {x.name!r} is {x.dtype.name}")
    raw = reduce_max(x, axis=axis, keepdims=True)
    shift = stop_gradient(where(less(abs(raw), float("inf")), raw, zeros_like(raw)))
    total = log(reduce_sum(exp(x - shift), axis=axis, keepdims=keepdims))
    if not keepdims:
        shift = reduce_max(shift, axis=axis)  # the same values, with the axes removed
    return add(total, shift, name=name)


no_gradient("Any")
no_gradient("All")
