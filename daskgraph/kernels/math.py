"""Math kernels: the basic arithmetic, matrix products, ``AddN`` and the sum, mean and max.

The kernels of :mod:`daskgraph.ops.math`'s ops; an elementwise op is one function of the
array module (:class:`~daskgraph.framework.op_registry.ArrayFunction`).
"""

from __future__ import annotations

from daskgraph.framework.op_registry import ArrayFunction
from daskgraph.kernels import blas_threads

# -- kernels: one per op, over the array API (xp is numpy or cupy) ---------------------------------
# elementwise ops are one function of the array module each (the executor calls it directly)
_add = ArrayFunction("add")
_sub = ArrayFunction("subtract")
_mul = ArrayFunction("multiply")
_div = ArrayFunction("divide")
_maximum = ArrayFunction("maximum")
_neg = ArrayFunction("negative")
_abs = ArrayFunction("abs")
_square = ArrayFunction("square")
_sqrt = ArrayFunction("sqrt")
_exp = ArrayFunction("exp")
_tanh = ArrayFunction("tanh")


def _matmul(xp, a, b, *, transpose_a=False, transpose_b=False):
    a = xp.swapaxes(a, -1, -2) if transpose_a else a  # the last two axes, as for batches
    return blas_threads.matmul(xp, a, xp.swapaxes(b, -1, -2) if transpose_b else b)


def _add_n(xp, *inputs):
    total = inputs[0]
    for x in inputs[1:]:
        total = xp.add(total, x)
    return total


def _sum(xp, x, *, axis, keepdims, dtype):
    return xp.asarray(xp.sum(x, axis=axis, keepdims=keepdims, dtype=dtype))


def _mean(xp, x, *, axis, keepdims, dtype):
    return xp.asarray(xp.mean(x, axis=axis, keepdims=keepdims, dtype=dtype))


def _max(xp, x, *, axis, keepdims, dtype):
    return xp.asarray(xp.max(x, axis=axis, keepdims=keepdims))
