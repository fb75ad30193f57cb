"""Ops that only gradients build: the shape bookkeeping of reverse-mode differentiation.

Forward ops broadcast, reduce and reshape with shapes known only when the graph runs (a batch
dimension of ``None``, say), so their gradients need ops that take a tensor's *runtime* shape
from another tensor: :func:`sum_to_shape_of` (undo broadcasting), :func:`reduce_grad` (spread a
reduction's gradient back over the reduced axes), :func:`reshape_like`, and the masks of
maxima and minima (:func:`extremum_grad`, :func:`extremum_reduce_grad`). Each is one kernel
over the array API, as every op is.
"""

from __future__ import annotations

from typing import Any

from daskgraph.framework import dtypes
from daskgraph.framework.graph import Tensor, get_default_graph
from daskgraph.framework.op_registry import register
from daskgraph.kernels.backprop import (
    _extremum_grad,
    _extremum_reduce_grad,
    _ones_like,
    _ones_seed,
    _reduce_grad,
    _reshape_like,
    _sum_to_shape_of,
)
from daskgraph.ops.array import convert_to_tensor

__all__ = [
    "extremum_grad",
    "extremum_reduce_grad",
    "ones_like_seed",
    "reduce_grad",
    "reshape_like",
    "sum_to_shape_of",
]

_FLOAT = dtypes.FLOATING


register("SumToShapeOf", _sum_to_shape_of)
register("ReduceGrad", _reduce_grad)
register("ReshapeLike", _reshape_like)
register("ExtremumGrad", _extremum_grad, cpu=dtypes.NUMERIC, gpu=dtypes.NUMERIC)
register("ExtremumReduceGrad", _extremum_reduce_grad, cpu=_FLOAT, gpu=_FLOAT)
register("OnesLikeSeed", _ones_like)
register("OnesSeed", _ones_seed)


def _op(op_type: str, inputs: list[Tensor], like: Tensor, name: str, **attrs: Any) -> Tensor:
    graph = get_default_graph()
    return graph.create_op(
        op_type, inputs, dtype=like.dtype, shape=like.shape, attrs=attrs, name=name
    ).outputs[0]


def sum_to_shape_of(grad: Any, x: Tensor, name: str | None = None) -> Tensor:
    """``grad`` summed down to the runtime shape of ``x`` (the gradient of broadcasting).

    >>> import numpy as np
    >>> _sum_to_shape_of(np, np.ones((2, 3)), np.zeros((1, 3)))
    array([[2., 2., 2.]])
    """
    grad = convert_to_tensor(grad)
    if grad.shape is not None and grad.shape == x.shape and None not in grad.shape:
        return grad
    out = _op("SumToShapeOf", [grad, x], grad, name or "SumToShapeOf")
    out.shape = x.shape
    return out


def reduce_grad(grad: Tensor, x: Tensor, axis: Any, keepdims: bool, mean: bool) -> Tensor:
    """The gradient of ``reduce_sum`` (``mean=False``) or ``reduce_mean`` of ``x``.

    >>> import numpy as np
    >>> _reduce_grad(np, np.array([1.0, 2.0]), np.zeros((2, 2)), axis=(1,), keepdims=False,
    ...              mean=True)
    array([[0.5, 0.5],
           [1. , 1. ]])
    """
    out = _op("ReduceGrad", [grad, x], x, "ReduceGrad", axis=axis, keepdims=keepdims, mean=mean)
    return out


def reshape_like(grad: Tensor, x: Tensor) -> Tensor:
    """``grad`` reshaped to the runtime shape of ``x``."""
    return _op("ReshapeLike", [grad, x], x, "ReshapeLike")


def extremum_grad(x: Tensor, y: Tensor, grad: Tensor, take_x: bool, kind: str) -> Tensor:
    """The share of ``grad`` (of ``maximum``/``minimum``, ``kind`` "max"/"min") going to
    ``x`` (``take_x``) or to ``y``, before un-broadcasting.

    >>> import numpy as np
    >>> _extremum_grad(np, np.array([1.0, 3.0]), np.array([2.0, 2.0]), np.ones(2),
    ...                take_x=True, kind="max")
    array([0., 1.])
    """
    return _op("ExtremumGrad", [x, y, grad], grad, "ExtremumGrad", take_x=take_x, kind=kind)


def extremum_reduce_grad(x: Tensor, y: Tensor, grad: Tensor, axis: Any, keepdims: bool) -> Tensor:
    """The gradient of ``y = reduce_max(x)`` (or ``reduce_min``), shared among ties.

    >>> import numpy as np
    >>> _extremum_reduce_grad(np, np.array([[1.0, 3.0, 3.0]]), np.array([3.0]), np.array([1.0]),
    ...                       axis=(1,), keepdims=False)
    array([[0. , 0.5, 0.5]])
    """
    return _op(
        "ExtremumReduceGrad", [x, y, grad], x, "ExtremumReduceGrad", axis=axis, keepdims=keepdims
    )


def ones_like_seed(y: Tensor) -> Tensor:
    """Ones of ``y``'s shape: the gradient of ``y`` with respect to itself. Where the static
    shape is known, the ones do not read ``y`` (an op without inputs): a run that fetches
    only gradients does not compute ``y`` (a loss) for its shape, as TensorFlow's constant
    folding of ``shape(y)`` spares it; else they take ``y``'s runtime shape."""
    if y.shape is not None and None not in y.shape:
        return _op("OnesSeed", [], y, "grad_ys", shape=tuple(y.shape), dtype=y.dtype.numpy.str)
    return _op("OnesLikeSeed", [y], y, "grad_ys")
