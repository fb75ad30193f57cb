"""Reductions TF1 programs reach for beyond sums and extrema: ``reduce_any`` and
``reduce_all`` over ``bool`` tensors (ops ``Any``/``All``) and ``reduce_logsumexp``.

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

from daskgraph import dtypes
from daskgraph.gradients import no_gradient
from daskgraph.graph import Tensor
from daskgraph.ops.array import convert_to_tensor
from daskgraph.ops.elementwise import log
from daskgraph.ops.fill_ops import zeros_like
from daskgraph.ops.logic import less, where
from daskgraph.ops.math import _reduce, abs, add, exp, reduce_max, reduce_sum
from daskgraph.ops.registry import register
from daskgraph.ops.shape_ops import stop_gradient

__all__ = ["reduce_all", "reduce_any", "reduce_logsumexp"]

_BOOL = frozenset({dtypes.bool_})


# -- kernels --------------------------------------------------------------------------------------
def _any(xp, x, *, axis, keepdims, dtype):
    return xp.asarray(xp.any(x, axis=axis, keepdims=keepdims))


def _all(xp, x, *, axis, keepdims, dtype):
    return xp.asarray(xp.all(x, axis=axis, keepdims=keepdims))


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
