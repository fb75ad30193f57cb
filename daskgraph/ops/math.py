"""Math ops: elementwise arithmetic, ``matmul``, ``add_n`` and reductions, with Tensor operators.

Importing this module gives :class:`~daskgraph.framework.graph.Tensor` its arithmetic operators, as
TensorFlow's ``math_ops`` does, so that ``a + b`` builds an ``Add`` op.

>>> import daskgraph as dg
>>> with dg.Graph().as_default():
...     a = dg.constant([[1.0, 2.0], [3.0, 4.0]])
...     b = a @ a + 1.0
...     s = reduce_sum(b, axis=0)
>>> b.op.type, b.shape, s.shape
('Add', (2, 2), (2,))
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from daskgraph.framework import dtypes
from daskgraph.framework.graph import Shape, Tensor, get_default_graph
from daskgraph.framework.op_registry import register
from daskgraph.framework.tensor_shape import TensorShape
from daskgraph.kernels.math import (
    _abs,
    _add,
    _add_n,
    _div,
    _exp,
    _matmul,
    _max,
    _maximum,
    _mean,
    _mul,
    _neg,
    _sqrt,
    _square,
    _sub,
    _sum,
    _tanh,
)
from daskgraph.ops.array import cast, convert_to_tensor

__all__ = [
    "abs",
    "add",
    "add_n",
    "divide",
    "exp",
    "matmul",
    "maximum",
    "multiply",
    "negative",
    "reduce_max",
    "reduce_mean",
    "reduce_sum",
    "sqrt",
    "square",
    "subtract",
    "tanh",
]

_FLOAT = dtypes.FLOATING
_NUM = dtypes.NUMERIC


register("Add", _add, cpu=_NUM, gpu=_NUM)
register("Sub", _sub, cpu=_NUM, gpu=_NUM)
register("Mul", _mul, cpu=_NUM, gpu=_NUM)
register("RealDiv", _div, cpu=_FLOAT, gpu=_FLOAT)
register("Maximum", _maximum, cpu=_NUM, gpu=_NUM)
register("Neg", _neg, cpu=_NUM, gpu=_NUM)
register("Abs", _abs, cpu=_NUM, gpu=_NUM)
register("Square", _square, cpu=_NUM, gpu=_NUM)
register("Sqrt", _sqrt, cpu=_FLOAT, gpu=_FLOAT)
register("Exp", _exp, cpu=_FLOAT, gpu=_FLOAT)
register("Tanh", _tanh, cpu=_FLOAT, gpu=_FLOAT)
register("MatMul", _matmul, cpu=_NUM, gpu=_FLOAT)  # TensorFlow has no integer GPU MatMul
register("BatchMatMulV2", _matmul, cpu=_NUM, gpu=_FLOAT)  # its gradient: ops/linalg.py
register("AddN", _add_n, cpu=_NUM, gpu=_NUM)
register("Sum", _sum, cpu=_NUM, gpu=_NUM)
register("Mean", _mean, cpu=_NUM, gpu=_NUM)
register("Max", _max, cpu=_NUM, gpu=_NUM)


# -- shape inference ------------------------------------------------------------------------------
def broadcast_shape(x: Shape | None, y: Shape | None, where: str) -> Shape | None:
    """NumPy broadcasting over static shapes with unknown (None) dimensions.

    >>> broadcast_shape((2, 1), (3,), "add"), broadcast_shape((None, 3), (3,), "add")
    ((2, 3), (None, 3))
    """
    if x is None or y is None:
        return None
    if x is y or x == y or not y:  # the common cases: equal shapes, or a scalar operand
        return x if type(x) is TensorShape else tuple(x)  # (a TensorShape is immutable)
    if not x:
        return tuple(y)
    result = []
    for i in range(1, max(len(x), len(y)) + 1):
        a = x[-i] if i <= len(x) else 1
        b = y[-i] if i <= len(y) else 1
        if a == 1:
            result.append(b)
        elif b == 1 or b == a:
            result.append(a)
        elif a is None or b is None:
            result.append(a if b is None else b)
        else:
            raise ValueError(f"{where}: shapes {x} and {y} cannot be broadcast together")
    return tuple(reversed(result))


def _binary(op_type: str, x: Any, y: Any, name: str | None, shape_name: str) -> Tensor:
    if type(x) is not Tensor or type(y) is not Tensor or x.dtype is not y.dtype:
        x, y = _as_pair(x, y, op_type)  # conversions, and the dtype check's error
    shape = broadcast_shape(x.shape, y.shape, shape_name)
    op = get_default_graph().create_op(op_type, (x, y), dtype=x.dtype, shape=shape, name=name)
    return op.outputs[0]


def _as_pair(x: Any, y: Any, op_type: str) -> tuple[Tensor, Tensor]:
    """Convert two operands, giving a Python constant the dtype of the tensor operand."""
    if isinstance(x, Tensor) or hasattr(x, "_as_tensor"):
        x = convert_to_tensor(x)
        y = y if _is_tensor_like(y) else convert_to_tensor(y, dtype=x.dtype)
    elif _is_tensor_like(y):
        y = convert_to_tensor(y)
        x = convert_to_tensor(x, dtype=y.dtype)
    x, y = convert_to_tensor(x), convert_to_tensor(y)
    if x.dtype != y.dtype:
        raise TypeError(
            f"{op_type}: both inputs must have the same dtype; got {x.name!r} of "
            f"{x.dtype.name} and {y.name!r} of {y.dtype.name}. Use cast() to convert one."
        )
    return x, y


def _is_tensor_like(value: Any) -> bool:
    return isinstance(value, Tensor) or hasattr(value, "_as_tensor")


def _unary(op_type: str, x: Any, name: str | None) -> Tensor:
    x = convert_to_tensor(x)
    op = get_default_graph().create_op(op_type, (x,), dtype=x.dtype, shape=x.shape, name=name)
    return op.outputs[0]


# -- builders -------------------------------------------------------------------------------------
def add(x: Any, y: Any, name: str | None = None) -> Tensor:
    """``x + y`` elementwise, with broadcasting."""
    return _binary("Add", x, y, name, "add")


def subtract(x: Any, y: Any, name: str | None = None) -> Tensor:
    """``x - y`` elementwise, with broadcasting."""
    return _binary("Sub", x, y, name, "subtract")


def multiply(x: Any, y: Any, name: str | None = None) -> Tensor:
    """``x * y`` elementwise, with broadcasting."""
    return _binary("Mul", x, y, name, "multiply")


def divide(x: Any, y: Any, name: str | None = None) -> Tensor:
    """``x / y`` elementwise; integer inputs are divided as float64, as ``tf.math.truediv``."""
    x, y = _as_pair(x, y, "RealDiv")
    if x.dtype.is_integer:
        target = dtypes.float32 if x.dtype.numpy.itemsize <= 2 else dtypes.float64
        x, y = cast(x, target), cast(y, target)
    return _binary("RealDiv", x, y, name, "divide")


def maximum(x: Any, y: Any, name: str | None = None) -> Tensor:
    """The larger of ``x`` and ``y`` elementwise, with broadcasting."""
    return _binary("Maximum", x, y, name, "maximum")


def negative(x: Any, name: str | None = None) -> Tensor:
    """``-x`` elementwise."""
    return _unary("Neg", x, name)


def abs(x: Any, name: str | None = None) -> Tensor:
    """The absolute value of ``x`` elementwise."""
    return _unary("Abs", x, name)


def square(x: Any, name: str | None = None) -> Tensor:
    """``x * x`` elementwise."""
    return _unary("Square", x, name)


def sqrt(x: Any, name: str | None = None) -> Tensor:
    """The square root of ``x`` elementwise."""
    return _unary("Sqrt", x, name)


def exp(x: Any, name: str | None = None) -> Tensor:
    """``e ** x`` elementwise."""
    return _unary("Exp", x, name)


def tanh(x: Any, name: str | None = None) -> Tensor:
    """The hyperbolic tangent of ``x`` elementwise."""
    return _unary("Tanh", x, name)


def matmul(
    a: Any,
    b: Any,
    transpose_a: bool = False,
    transpose_b: bool = False,
    name: str | None = None,
) -> Tensor:
    """Matrix product of two tensors of rank >= 2: of two matrices (``MatMul``), or of the
    matrices in the last two axes of each, batch axes broadcasting (``BatchMatMulV2``).

    Examples
    --------
    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     y = matmul(dg.placeholder(dg.float32, [None, 2, 3]), dg.constant(1.0, shape=[3, 4]))
    >>> y.op.type, y.shape
    ('BatchMatMulV2', (None, 2, 4))
    >>> with dg.Graph().as_default():
    ...     m = matmul(dg.constant(1.0, shape=[2, 3]), dg.constant(1.0, shape=[4, 3]))
    Traceback (most recent call last):
    ...
    ValueError: matmul: inner dimensions differ: 'Const:0' is (2, 3) and 'Const_1:0' is (4, 3)
    """
    a, b = _as_pair(a, b, "MatMul")
    for t in (a, b):
        if t.shape is not None and len(t.shape) < 2:
            raise ValueError(
                f"matmul: {t.name!r} must have rank >= 2 (a matrix, or a batch of them); its "
                f"shape is {t.shape}"
            )
    batched = any(t.shape is not None and len(t.shape) > 2 for t in (a, b))
    sa = a.shape if a.shape is not None else (None, None)
    sb = b.shape if b.shape is not None else (None, None)
    rows, inner_a = (sa[-1], sa[-2]) if transpose_a else sa[-2:]
    inner_b, cols = (sb[-1], sb[-2]) if transpose_b else sb[-2:]
    if inner_a is not None and inner_b is not None and inner_a != inner_b:
        raise ValueError(
            f"matmul: inner dimensions differ: {a.name!r} is {a.shape} and {b.name!r} is {b.shape}"
        )
    shape: Shape | None = (rows, cols)
    if batched:
        batch = None
        if a.shape is not None and b.shape is not None:
            batch = broadcast_shape(a.shape[:-2], b.shape[:-2], "matmul")
        shape = None if batch is None else (*batch, rows, cols)
    attrs = {"transpose_a": bool(transpose_a), "transpose_b": bool(transpose_b)}
    op = get_default_graph().create_op(
        "BatchMatMulV2" if batched else "MatMul",
        [a, b],
        dtype=a.dtype,
        shape=shape,
        attrs=attrs,
        name=name or "MatMul",  # TensorFlow's name for both
    )
    return op.outputs[0]


def add_n(inputs: Sequence[Any], name: str | None = None) -> Tensor:
    """The elementwise sum of a list of tensors of one dtype and shape."""
    if not isinstance(inputs, (list, tuple)) or not inputs:
        raise ValueError(f"add_n expects a non-empty list of tensors; got {inputs!r}")
    tensors = [convert_to_tensor(t) for t in inputs]
    first = tensors[0]
    shape = first.shape
    for t in tensors[1:]:
        if t.dtype != first.dtype:
            raise TypeError(
                f"add_n: all inputs must have one dtype; {first.name!r} is {first.dtype.name} "
                f"and {t.name!r} is {t.dtype.name}"
            )
        shape = broadcast_shape(shape, t.shape, "add_n")
    op = get_default_graph().create_op("AddN", tensors, dtype=first.dtype, shape=shape, name=name)
    return op.outputs[0]


def _reduce(op_type: str, x: Any, axis: Any, keepdims: bool, name: str | None) -> Tensor:
    x = convert_to_tensor(x)
    axes = _normalise_axis(axis, x, op_type)
    if x.shape is None:
        shape = None
    elif axes is None:
        shape = (1,) * len(x.shape) if keepdims else ()
    elif keepdims:
        shape = tuple(1 if i in axes else d for i, d in enumerate(x.shape))
    else:
        shape = tuple(d for i, d in enumerate(x.shape) if i not in axes)
    out = x.dtype
    attrs = {"axis": axes, "keepdims": bool(keepdims), "dtype": out.numpy}
    op = get_default_graph().create_op(op_type, [x], dtype=out, shape=shape, attrs=attrs, name=name)
    return op.outputs[0]


def _normalise_axis(axis: Any, x: Tensor, op_type: str) -> tuple[int, ...] | None:
    if axis is None:
        return None
    axes = (int(axis),) if isinstance(axis, (int, np.integer)) else tuple(int(a) for a in axis)
    if x.shape is None:
        return axes
    rank = len(x.shape)
    for a in axes:
        if not -rank <= a < max(rank, 1):
            raise ValueError(f"{op_type}: axis {a} is out of range for {x.name!r} of rank {rank}")
    return tuple(sorted(a % rank if rank else 0 for a in axes))


def reduce_sum(x: Any, axis: Any = None, keepdims: bool = False, name: str | None = None) -> Tensor:
    """Sum of the elements along ``axis`` (all of them by default)."""
    return _reduce("Sum", x, axis, keepdims, name)


def reduce_mean(
    x: Any, axis: Any = None, keepdims: bool = False, name: str | None = None
) -> Tensor:
    """Mean of the elements along ``axis`` (all by default), in the input's dtype."""
    return _reduce("Mean", x, axis, keepdims, name)


def reduce_max(x: Any, axis: Any = None, keepdims: bool = False, name: str | None = None) -> Tensor:
    """Maximum of the elements along ``axis`` (all by default)."""
    return _reduce("Max", x, axis, keepdims, name)


# -- Tensor operators -----------------------------------------------------------------------------
def _install_operators() -> None:
    """Operators name their ops as TensorFlow 1 does: ``a + b`` is ``add`` of type ``Add``."""

    def forward(f, name):
        return lambda self, other: f(self, other, name=name)

    def reflected(f, name):
        return lambda self, other: f(other, self, name=name)

    for dunder, function, name in (
        ("add", add, "add"),
        ("sub", subtract, "sub"),
        ("mul", multiply, "mul"),
        ("truediv", divide, "truediv"),
        ("matmul", matmul, "matmul"),
    ):
        setattr(Tensor, f"__{dunder}__", forward(function, name))
        setattr(Tensor, f"__r{dunder}__", reflected(function, name))
    Tensor.__neg__ = lambda self: negative(self)
    Tensor.__abs__ = lambda self: abs(self)


_install_operators()
