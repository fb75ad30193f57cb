"""TensorFlow 1's elementwise math that the core modules lack: inverse and hyperbolic
trigonometry, ``expm1``, ``log_sigmoid``, the ``is_nan``/``is_inf``/``is_finite`` tests, the
no-NaN and ``x * log(y)`` divisions and products, truncating division, and the small
composites ``scalar_mul``, ``accumulate_n`` and ``polyval``, each with its gradient.

Each op is TensorFlow's (``Acos``, ``Atan2``, ``IsNan``, ``DivNoNan``, ``Xlogy``,
``TruncateDiv``, ...) with one kernel over the array API. ``conj``, ``real``, ``imag`` and
``angle`` are TensorFlow's for real tensors (daskgraph has no complex dtypes).

>>> import daskgraph as dg
>>> with dg.Graph().as_default():
...     x = dg.constant([[0.5, -0.25]])
...     a = acos(x)
...     n = is_nan(x)
>>> a.op.type, a.shape, n.dtype
('Acos', (1, 2), bool)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from daskgraph.framework import dtypes
from daskgraph.framework.gradient_registry import no_gradient, register_gradient
from daskgraph.framework.graph import Operation, Tensor, get_default_graph, name_scope
from daskgraph.framework.op_registry import ArrayFunction, register
from daskgraph.kernels.math_functions import (
    _FLOAT,
    _UNARY,
    _div_no_nan,
    _invert_permutation,
    _log_sigmoid,
    _mul_no_nan,
    _truncate_div,
    _truncate_mod,
    _xdivy,
    _xlog1py,
    _xlogy,
)
from daskgraph.ops.array import cast, convert_to_tensor
from daskgraph.ops.elementwise import _float_unary, floordiv, reciprocal, rsqrt, sigmoid
from daskgraph.ops.fill_ops import zeros_like
from daskgraph.ops.gradients import unbroadcast
from daskgraph.ops.logic import not_equal, where
from daskgraph.ops.math import _as_pair, add_n, broadcast_shape, multiply, negative, square

__all__ = [
    "accumulate_n",
    "acos",
    "acosh",
    "angle",
    "asin",
    "asinh",
    "atan",
    "atan2",
    "atanh",
    "conj",
    "cosh",
    "div_no_nan",
    "expm1",
    "floor_div",
    "imag",
    "invert_permutation",
    "is_finite",
    "is_inf",
    "is_nan",
    "log_sigmoid",
    "multiply_no_nan",
    "nextafter",
    "polyval",
    "real",
    "reciprocal_no_nan",
    "scalar_mul",
    "sinh",
    "tan",
    "truncatediv",
    "truncatemod",
    "xdivy",
    "xlog1py",
    "xlogy",
]
_NUM = dtypes.NUMERIC
_FLOAT_TO_BOOL = _FLOAT | {dtypes.bool_}


for _type, _function in _UNARY.items():
    register(_type, ArrayFunction(_function), cpu=_FLOAT, gpu=_FLOAT)
register("Atan2", ArrayFunction("arctan2"), cpu=_FLOAT, gpu=_FLOAT)
register("LogSigmoid", _log_sigmoid, cpu=_FLOAT, gpu=_FLOAT)
register("IsNan", ArrayFunction("isnan"), cpu=_FLOAT_TO_BOOL, gpu=_FLOAT_TO_BOOL)
register("IsInf", ArrayFunction("isinf"), cpu=_FLOAT_TO_BOOL, gpu=_FLOAT_TO_BOOL)
register("IsFinite", ArrayFunction("isfinite"), cpu=_FLOAT_TO_BOOL, gpu=_FLOAT_TO_BOOL)
register("DivNoNan", _div_no_nan, cpu=_FLOAT, gpu=_FLOAT)
register("MulNoNan", _mul_no_nan, cpu=_FLOAT, gpu=_FLOAT)
register("Xdivy", _xdivy, cpu=_FLOAT, gpu=_FLOAT)
register("Xlogy", _xlogy, cpu=_FLOAT, gpu=_FLOAT)
register("Xlog1py", _xlog1py, cpu=_FLOAT, gpu=_FLOAT)
register("TruncateDiv", _truncate_div, cpu=_NUM, gpu=_NUM)
register("TruncateMod", _truncate_mod, cpu=_NUM, gpu=_NUM)
_F32_F64 = frozenset({dtypes.float32, dtypes.float64})
_INDEX = frozenset({dtypes.int32, dtypes.int64})


register("InvertPermutation", _invert_permutation, cpu=_INDEX, gpu=_INDEX)
register("NextAfter", ArrayFunction("nextafter"), cpu=_F32_F64, gpu=_F32_F64)


# -- builders -------------------------------------------------------------------------------------
def acos(x: Any, name: str | None = None) -> Tensor:
    """The inverse cosine of ``x`` elementwise, in ``[0, pi]`` (NaN outside ``[-1, 1]``).

    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     y = acos(dg.constant([1.0, 0.0, -1.0], dg.float64))
    ...     with dg.Session() as sess:
    ...         [round(float(v), 4) for v in sess.run(y)]
    [0.0, 1.5708, 3.1416]
    """
    return _float_unary("Acos", x, name, "acos")


def asin(x: Any, name: str | None = None) -> Tensor:
    """The inverse sine of ``x`` elementwise, in ``[-pi/2, pi/2]``."""
    return _float_unary("Asin", x, name, "asin")


def atan(x: Any, name: str | None = None) -> Tensor:
    """The inverse tangent of ``x`` elementwise, in ``(-pi/2, pi/2)``."""
    return _float_unary("Atan", x, name, "atan")


def tan(x: Any, name: str | None = None) -> Tensor:
    """The tangent of ``x`` elementwise (radians)."""
    return _float_unary("Tan", x, name, "tan")


def sinh(x: Any, name: str | None = None) -> Tensor:
    """The hyperbolic sine of ``x`` elementwise."""
    return _float_unary("Sinh", x, name, "sinh")


def cosh(x: Any, name: str | None = None) -> Tensor:
    """The hyperbolic cosine of ``x`` elementwise."""
    return _float_unary("Cosh", x, name, "cosh")


def asinh(x: Any, name: str | None = None) -> Tensor:
    """The inverse hyperbolic sine of ``x`` elementwise."""
    return _float_unary("Asinh", x, name, "asinh")


def acosh(x: Any, name: str | None = None) -> Tensor:
    """The inverse hyperbolic cosine of ``x`` elementwise (NaN below 1)."""
    return _float_unary("Acosh", x, name, "acosh")


def atanh(x: Any, name: str | None = None) -> Tensor:
    """The inverse hyperbolic tangent of ``x`` elementwise (infinite at -1 and 1)."""
    return _float_unary("Atanh", x, name, "atanh")


def expm1(x: Any, name: str | None = None) -> Tensor:
    """``exp(x) - 1`` elementwise, accurate for small ``x``."""
    return _float_unary("Expm1", x, name, "expm1")


def log_sigmoid(x: Any, name: str | None = None) -> Tensor:
    """``log(sigmoid(x))`` elementwise, without overflow (``-softplus(-x)``).

    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     y = log_sigmoid(dg.constant([-1000.0, 1000.0]))
    ...     with dg.Session() as sess:
    ...         sess.run(y).tolist()
    [-1000.0, -0.0]
    """
    return _float_unary("LogSigmoid", x, name, "log_sigmoid")


def _float_binary(op_type: str, x: Any, y: Any, name: str | None, where: str) -> Tensor:
    x, y = _as_pair(x, y, op_type)
    if not x.dtype.is_floating:
        raise TypeError(
            f"{where}: expects floating-point tensors; {x.name!r} is {x.dtype.name}. "
            "Use cast() to convert it."
        )
    return _make(op_type, [x, y], x.dtype, broadcast_shape(x.shape, y.shape, where), name)


def _make(op_type: str, inputs: list[Tensor], dtype: Any, shape: Any, name: str | None) -> Tensor:
    op = get_default_graph().create_op(op_type, inputs, dtype=dtype, shape=shape, name=name)
    return op.outputs[0]


def atan2(y: Any, x: Any, name: str | None = None) -> Tensor:
    """The angle of the point ``(x, y)`` elementwise, in ``[-pi, pi]`` (``arctan(y / x)``
    with the quadrant from the signs), with broadcasting.

    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     a = atan2(dg.constant([1.0, -1.0]), dg.constant([0.0, -1.0]))
    ...     with dg.Session() as sess:
    ...         [round(float(v), 4) for v in sess.run(a)]
    [1.5708, -2.3562]
    """
    return _float_binary("Atan2", y, x, name, "atan2")


def _float_test(op_type: str, x: Any, name: str | None, where: str) -> Tensor:
    x = convert_to_tensor(x)
    if not x.dtype.is_floating:
        raise TypeError(f"{where}: expects a floating-point tensor; {x.name!r} is {x.dtype.name}")
    return _make(op_type, [x], dtypes.bool_, x.shape, name)


def is_nan(x: Any, name: str | None = None) -> Tensor:
    """Whether each element of ``x`` is NaN: a ``bool`` tensor.

    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     x = dg.constant([1.0, float("nan"), float("inf")])
    ...     with dg.Session() as sess:
    ...         sess.run([is_nan(x), is_inf(x), is_finite(x)])
    [array([False,  True, False]), array([False, False,  True]), array([ True, False, False])]
    """
    return _float_test("IsNan", x, name, "is_nan")


def is_inf(x: Any, name: str | None = None) -> Tensor:
    """Whether each element of ``x`` is infinite (either sign): a ``bool`` tensor."""
    return _float_test("IsInf", x, name, "is_inf")


def is_finite(x: Any, name: str | None = None) -> Tensor:
    """Whether each element of ``x`` is neither infinite nor NaN: a ``bool`` tensor."""
    return _float_test("IsFinite", x, name, "is_finite")


def div_no_nan(x: Any, y: Any, name: str | None = None) -> Tensor:
    """``x / y`` elementwise, 0 where ``y`` is 0 (``tf.div_no_nan``, ``tf.math.divide_no_nan``).

    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     q = div_no_nan(dg.constant([0.0, 1.0, 2.0]), dg.constant([0.0, 2.0, 0.0]))
    ...     with dg.Session() as sess:
    ...         sess.run(q).tolist()
    [0.0, 0.5, 0.0]
    """
    return _float_binary("DivNoNan", x, y, name, "div_no_nan")


def multiply_no_nan(x: Any, y: Any, name: str | None = None) -> Tensor:
    """``x * y`` elementwise, 0 where ``y`` is 0 even where ``x`` is NaN or infinite."""
    return _float_binary("MulNoNan", x, y, name, "multiply_no_nan")


def reciprocal_no_nan(x: Any, name: str | None = None) -> Tensor:
    """``1 / x`` elementwise, 0 where ``x`` is 0."""
    x = convert_to_tensor(x)
    with name_scope(name or "reciprocal_no_nan"):
        return div_no_nan(convert_to_tensor(1, dtype=x.dtype), x)


def xdivy(x: Any, y: Any, name: str | None = None) -> Tensor:
    """``x / y`` elementwise, 0 where ``x`` is 0 (whatever ``y``)."""
    return _float_binary("Xdivy", x, y, name, "xdivy")


def xlogy(x: Any, y: Any, name: str | None = None) -> Tensor:
    """``x * log(y)`` elementwise, 0 where ``x`` is 0 (whatever ``y``).

    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     z = xlogy(dg.constant([0.0, 2.0]), dg.constant([0.0, 1.0]))
    ...     with dg.Session() as sess:
    ...         sess.run(z).tolist()
    [0.0, 0.0]
    """
    return _float_binary("Xlogy", x, y, name, "xlogy")


def xlog1py(x: Any, y: Any, name: str | None = None) -> Tensor:
    """``x * log1p(y)`` elementwise, 0 where ``x`` is 0 (whatever ``y``)."""
    return _float_binary("Xlog1py", x, y, name, "xlog1py")


def _numeric_binary(op_type: str, x: Any, y: Any, name: str | None, where: str) -> Tensor:
    x, y = _as_pair(x, y, op_type)
    if not x.dtype.is_numeric:
        raise TypeError(f"{where}: expects numeric tensors; {x.name!r} is {x.dtype.name}")
    return _make(op_type, [x, y], x.dtype, broadcast_shape(x.shape, y.shape, where), name)


def truncatediv(x: Any, y: Any, name: str | None = None) -> Tensor:
    """``x / y`` rounded towards zero, in the inputs' dtype (C's integer division; integer
    division by zero fails the run). Not differentiable.

    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     q = truncatediv(dg.constant([7, -7]), dg.constant([2, 2]))
    ...     r = truncatemod(dg.constant([7, -7]), dg.constant([2, 2]))
    ...     with dg.Session() as sess:
    ...         sess.run(q).tolist(), sess.run(r).tolist()
    ([3, -3], [1, -1])
    """
    return _numeric_binary("TruncateDiv", x, y, name, "truncatediv")


def truncatemod(x: Any, y: Any, name: str | None = None) -> Tensor:
    """The remainder of :func:`truncatediv`, with the sign of ``x`` (C's ``fmod``)."""
    return _numeric_binary("TruncateMod", x, y, name, "truncatemod")


def nextafter(x1: Any, x2: Any, name: str | None = None) -> Tensor:
    """The next representable value after ``x1`` in the direction of ``x2``, elementwise
    (float32 or float64). Not differentiable.

    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     n = nextafter(dg.constant([1.0], dg.float64), 2.0)
    ...     with dg.Session() as sess:
    ...         float(sess.run(n)[0] - 1.0)
    2.220446049250313e-16
    """
    return _float_binary("NextAfter", x1, x2, name, "nextafter")


def invert_permutation(x: Any, name: str | None = None) -> Tensor:
    """The inverse of the permutation ``x`` of ``0 .. n-1`` (an int32 or int64 vector):
    ``y[x[i]] = i``. A value out of range or repeated fails the run, as in TensorFlow.

    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     y = invert_permutation([3, 4, 0, 2, 1])
    ...     with dg.Session() as sess:
    ...         sess.run(y).tolist()
    [2, 4, 3, 0, 1]
    """
    x = convert_to_tensor(x)
    if x.dtype not in _INDEX or (x.shape is not None and len(x.shape) != 1):
        raise TypeError(f"invert_permutation: expects an int32 or int64 vector; got {x!r}")
    return _make("InvertPermutation", [x], x.dtype, x.shape, name)


def conj(x: Any, name: str | None = None) -> Tensor:
    """The complex conjugate of ``x``: ``x`` itself for a real tensor, as TensorFlow returns
    it (daskgraph has no complex dtypes)."""
    return convert_to_tensor(x)


def real(input: Any, name: str | None = None) -> Tensor:
    """The real part of ``input``: the real tensor itself, as TensorFlow returns it."""
    return convert_to_tensor(input)


def imag(input: Any, name: str | None = None) -> Tensor:
    """The imaginary part of ``input``: zeros of its shape for a real tensor."""
    x = convert_to_tensor(input)
    return zeros_like(x, name=name or "Imag")


def angle(input: Any, name: str | None = None) -> Tensor:
    """The argument of ``input``: pi where a real tensor is negative, else 0 (TensorFlow's
    ``tf.math.angle`` of a real tensor).

    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     a = angle(dg.constant([-1.0, 0.0, 2.0], dg.float64))
    ...     with dg.Session() as sess:
    ...         sess.run(a).tolist()
    [3.141592653589793, 0.0, 0.0]
    """
    x = convert_to_tensor(input)
    with name_scope(name or "Angle"):
        return where(x < 0, convert_to_tensor(np.pi, dtype=x.dtype), zeros_like(x))


def floor_div(x: Any, y: Any, name: str | None = None) -> Tensor:
    """``floor(x / y)`` elementwise (``tf.floor_div``: the same op as :func:`floordiv`)."""
    return floordiv(x, y, name=name)


def scalar_mul(scalar: Any, x: Any, name: str | None = None) -> Tensor:
    """``scalar * x``, ``scalar`` a 0-d value of ``x``'s dtype (``tf.scalar_mul``).

    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     scalar_mul(dg.constant([1.0, 2.0]), dg.constant([1.0, 2.0]))
    Traceback (most recent call last):
    ...
    ValueError: The input scalar must be a 0-D value. Received shape (2,).
    """
    x = convert_to_tensor(x)
    scalar = convert_to_tensor(scalar, dtype=x.dtype)
    if scalar.shape != ():
        raise ValueError(f"The input scalar must be a 0-D value. Received shape {scalar.shape}.")
    with name_scope(name or "scalar_mul"):
        return multiply(scalar, x)


def accumulate_n(
    inputs: Sequence[Any],
    shape: Any = None,
    tensor_dtype: Any = None,
    name: str | None = None,
) -> Tensor:
    """The elementwise sum of ``inputs``, tensors of one shape and dtype (``tf.accumulate_n``:
    :func:`add_n` after checking ``shape`` and ``tensor_dtype`` when given)."""
    if not isinstance(inputs, (list, tuple)) or not inputs:
        raise ValueError(
            "inputs must be a list of at least one Tensor with the same dtype and shape"
        )
    tensors = [convert_to_tensor(t) for t in inputs]
    if tensor_dtype is not None and dtypes.as_dtype(tensor_dtype) != tensors[0].dtype:
        raise TypeError(
            f"tensor_dtype is {dtypes.as_dtype(tensor_dtype).name}, but the inputs are "
            f"{tensors[0].dtype.name}"
        )
    if shape is not None:
        expected = tuple(None if d is None else int(d) for d in shape)
        for t in tensors:
            if t.shape is not None and not _compatible(t.shape, expected):
                raise ValueError(f"Input tensor {t.name!r} must have shape {expected}: {t.shape}")
    return add_n(tensors, name=name)


def _compatible(shape: tuple, expected: tuple) -> bool:
    return len(shape) == len(expected) and all(
        a is None or b is None or a == b for a, b in zip(shape, expected, strict=True)
    )


def polyval(coeffs: Sequence[Any], x: Any, name: str | None = None) -> Tensor:
    """The polynomial ``coeffs[0] * x**(n-1) + ... + coeffs[n-1]`` at ``x``, by Horner's rule
    (``tf.math.polyval``; zeros for no coefficients).

    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     p = polyval([1.0, 2.0, 3.0], dg.constant([0.0, 2.0]))
    ...     with dg.Session() as sess:
    ...         sess.run(p).tolist()
    [3.0, 11.0]
    """
    if not isinstance(coeffs, (list, tuple)):
        raise ValueError(f"Argument coeffs must be list type received type {type(coeffs)}.")
    x = convert_to_tensor(x)
    with name_scope(name or "polyval"):
        if not coeffs:
            return zeros_like(x)
        total = convert_to_tensor(coeffs[0], dtype=x.dtype)
        for c in coeffs[1:]:
            total = convert_to_tensor(c, dtype=x.dtype) + total * x
        return total


# -- gradients ------------------------------------------------------------------------------------
def _one_minus_square(x: Tensor) -> Tensor:
    return 1.0 - square(x)


@register_gradient("Acos")
def _acos_grad(op: Operation, grad: Tensor) -> list[Tensor]:
    return [negative(grad) * rsqrt(_one_minus_square(op.inputs[0]))]


@register_gradient("Asin")
def _asin_grad(op: Operation, grad: Tensor) -> list[Tensor]:
    return [grad * rsqrt(_one_minus_square(op.inputs[0]))]


@register_gradient("Atan")
def _atan_grad(op: Operation, grad: Tensor) -> list[Tensor]:
    return [grad / (1.0 + square(op.inputs[0]))]


@register_gradient("Tan")
def _tan_grad(op: Operation, grad: Tensor) -> list[Tensor]:
    return [grad * (1.0 + square(op.outputs[0]))]


@register_gradient("Sinh")
def _sinh_grad(op: Operation, grad: Tensor) -> list[Tensor]:
    return [grad * cosh(op.inputs[0])]


@register_gradient("Cosh")
def _cosh_grad(op: Operation, grad: Tensor) -> list[Tensor]:
    return [grad * sinh(op.inputs[0])]


@register_gradient("Asinh")
def _asinh_grad(op: Operation, grad: Tensor) -> list[Tensor]:
    return [grad / cosh(op.outputs[0])]


@register_gradient("Acosh")
def _acosh_grad(op: Operation, grad: Tensor) -> list[Tensor]:
    return [grad / sinh(op.outputs[0])]


@register_gradient("Atanh")
def _atanh_grad(op: Operation, grad: Tensor) -> list[Tensor]:
    return [grad * reciprocal(_one_minus_square(op.inputs[0]))]


@register_gradient("Expm1")
def _expm1_grad(op: Operation, grad: Tensor) -> list[Tensor]:
    return [grad * (op.outputs[0] + 1.0)]


@register_gradient("LogSigmoid")
def _log_sigmoid_grad(op: Operation, grad: Tensor) -> list[Tensor]:
    return [grad * sigmoid(negative(op.inputs[0]))]


@register_gradient("Atan2")
def _atan2_grad(op: Operation, grad: Tensor) -> list[Tensor]:
    y, x = op.inputs
    scale = grad / (square(x) + square(y))
    return [unbroadcast(x * scale, y), unbroadcast(negative(y) * scale, x)]


@register_gradient("DivNoNan")
def _div_no_nan_grad(op: Operation, grad: Tensor) -> list[Tensor]:
    x, y = op.inputs
    gy = grad * div_no_nan(div_no_nan(negative(x), y), y)
    return [unbroadcast(div_no_nan(grad, y), x), unbroadcast(gy, y)]


@register_gradient("MulNoNan")
def _mul_no_nan_grad(op: Operation, grad: Tensor) -> list[Tensor]:
    x, y = op.inputs
    return [unbroadcast(multiply_no_nan(grad, y), x), unbroadcast(multiply_no_nan(x, grad), y)]


def _not_zero(x: Tensor) -> Tensor:
    return cast(not_equal(x, 0), x.dtype)


@register_gradient("Xdivy")
def _xdivy_grad(op: Operation, grad: Tensor) -> list[Tensor]:
    x, y = op.inputs
    gx = xdivy(_not_zero(x), y) * grad
    gy = xdivy(negative(x), square(y)) * grad
    return [unbroadcast(gx, x), unbroadcast(gy, y)]


@register_gradient("Xlogy")
def _xlogy_grad(op: Operation, grad: Tensor) -> list[Tensor]:
    x, y = op.inputs
    gx = xlogy(_not_zero(x), y) * grad
    gy = xdivy(x, y) * grad
    return [unbroadcast(gx, x), unbroadcast(gy, y)]


@register_gradient("Xlog1py")
def _xlog1py_grad(op: Operation, grad: Tensor) -> list[Tensor]:
    x, y = op.inputs
    gx = xlog1py(_not_zero(x), y) * grad
    gy = xdivy(x, y + 1.0) * grad
    return [unbroadcast(gx, x), unbroadcast(gy, y)]


for _op_type in (
    "IsNan",
    "IsInf",
    "IsFinite",
    "TruncateDiv",
    "TruncateMod",
    "NextAfter",
    "InvertPermutation",
):
    no_gradient(_op_type)
