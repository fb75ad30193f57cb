"""Elementwise math beyond arithmetic: powers, logarithms, the sigmoid, minima, signs and floor
division, with NumPy broadcasting, and the operators ``**``, ``//`` and ``%`` on tensors.

Each op is TensorFlow 1's (``Pow``, ``Minimum``, ``Log``, ``Sigmoid``, ...) with one kernel
over the array API; their gradients are in :mod:`daskgraph.ops.math_grad`.

>>> import daskgraph as dg
>>> with dg.Graph().as_default():
...     x = dg.constant([[1.0, 2.0], [3.0, 4.0]])
...     y = x**2.0 // 3.0
...     m = minimum(x, [2.0, 2.0])
>>> y.op.type, m.op.type, m.shape
('FloorDiv', 'Minimum', (2, 2))

More of TensorFlow 1's elementwise math: rounding (``floor``, ``ceil``, ``round``), ``rsqrt``,
``log1p``, ``sin``, ``cos``, ``squared_difference``, ``clip_by_value`` and TF1's division names
(``truediv``, ``realdiv``, ``div``), with their gradients.

>>> import daskgraph as dg
>>> with dg.Graph().as_default():
...     x = dg.constant([[-1.5, 0.5], [2.5, 3.7]])
...     y = clip_by_value(round(x), 0.0, 3.0)
>>> y.op.type, y.shape
('Maximum', (2, 2))
"""

from __future__ import annotations

from typing import Any

from daskgraph.framework import dtypes
from daskgraph.framework.gradient_registry import no_gradient, register_gradient
from daskgraph.framework.graph import Operation, Tensor, get_default_graph
from daskgraph.framework.op_registry import ArrayFunction, register
from daskgraph.kernels.elementwise import _rsqrt, _sigmoid, _sigmoid_grad, _squared_difference
from daskgraph.ops import backprop
from daskgraph.ops.array import convert_to_tensor
from daskgraph.ops.gradients import unbroadcast
from daskgraph.ops.logic import greater, where
from daskgraph.ops.math import _as_pair, _binary, _unary, broadcast_shape, divide, maximum, negative

__all__ = [
    "floordiv",
    "floormod",
    "log",
    "minimum",
    "mod",
    "pow",
    "reciprocal",
    "sigmoid",
    "sign",
]

_FLOAT = dtypes.FLOATING
_NUM = dtypes.NUMERIC


register("Pow", ArrayFunction("power"), cpu=_NUM, gpu=_NUM)
register("Minimum", ArrayFunction("minimum"), cpu=_NUM, gpu=_NUM)
register("Log", ArrayFunction("log"), cpu=_FLOAT, gpu=_FLOAT)
register("Reciprocal", ArrayFunction("reciprocal"), cpu=_FLOAT, gpu=_FLOAT)
register("Sigmoid", _sigmoid, cpu=_FLOAT, gpu=_FLOAT)
register("SigmoidGrad", _sigmoid_grad, cpu=_FLOAT, gpu=_FLOAT)
register("Sign", ArrayFunction("sign"), cpu=_NUM, gpu=_NUM)
register("FloorDiv", ArrayFunction("floor_divide"), cpu=_NUM, gpu=_NUM)
register("FloorMod", ArrayFunction("mod"), cpu=_NUM, gpu=_NUM)


# -- builders -------------------------------------------------------------------------------------
def pow(x: Any, y: Any, name: str | None = None) -> Tensor:
    """``x ** y`` elementwise, with broadcasting (``tf.pow``; also the ``**`` operator).

    Examples
    --------
    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     z = pow(dg.constant([2.0, 3.0]), 2.0)
    ...     with dg.Session() as sess:
    ...         sess.run(z).tolist()
    [4.0, 9.0]
    """
    return _binary("Pow", x, y, name, "pow")


def minimum(x: Any, y: Any, name: str | None = None) -> Tensor:
    """The smaller of ``x`` and ``y`` elementwise, with broadcasting."""
    return _binary("Minimum", x, y, name, "minimum")


def floordiv(x: Any, y: Any, name: str | None = None) -> Tensor:
    """``floor(x / y)`` elementwise, in the inputs' dtype (``tf.floordiv``; the ``//``
    operator). Not differentiable."""
    return _binary("FloorDiv", x, y, name, "floordiv")


def floormod(x: Any, y: Any, name: str | None = None) -> Tensor:
    """The remainder of :func:`floordiv`, with the sign of ``y`` as Python's ``%``
    (``tf.mod``, ``tf.floormod``; the ``%`` operator). Not differentiable."""
    return _binary("FloorMod", x, y, name, "floormod")


mod = floormod  # TensorFlow 1's tf.mod


def log(x: Any, name: str | None = None) -> Tensor:
    """The natural logarithm of ``x`` elementwise (``-inf`` at 0, NaN below)."""
    return _float_unary("Log", x, name, "log")


def reciprocal(x: Any, name: str | None = None) -> Tensor:
    """``1 / x`` elementwise."""
    return _float_unary("Reciprocal", x, name, "reciprocal")


def sigmoid(x: Any, name: str | None = None) -> Tensor:
    """The logistic function ``1 / (1 + exp(-x))`` elementwise, without overflow for large
    ``|x|``.

    Examples
    --------
    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     s = sigmoid(dg.constant([-1000.0, 0.0, 1000.0]))
    ...     with dg.Session() as sess:
    ...         sess.run(s).tolist()
    [0.0, 0.5, 1.0]
    """
    return _float_unary("Sigmoid", x, name, "sigmoid")


def sigmoid_grad(y: Tensor, dy: Tensor, name: str | None = None) -> Tensor:
    """``dy * y * (1 - y)``: the gradient of ``y = sigmoid(x)`` from the gradient ``dy`` of
    ``y`` (TensorFlow's ``SigmoidGrad``)."""
    graph = get_default_graph()
    return graph.create_op("SigmoidGrad", [y, dy], dtype=y.dtype, shape=y.shape, name=name).outputs[
        0
    ]


def sign(x: Any, name: str | None = None) -> Tensor:
    """-1, 0 or 1 elementwise, as the sign of ``x``; its gradient is zero."""
    return _unary("Sign", x, name)


def _float_unary(op_type: str, x: Any, name: str | None, where: str) -> Tensor:
    x = convert_to_tensor(x)
    if not x.dtype.is_floating:
        raise TypeError(
            f"{where}: expects a floating-point tensor; {x.name!r} is {x.dtype.name}. "
            "Use cast() to convert it."
        )
    return _unary(op_type, x, name)


# -- Tensor operators -----------------------------------------------------------------------------
def _install_operators() -> None:
    """``**``, ``//`` and ``%`` name their ops as TensorFlow 1 does (``pow``, ``floordiv``,
    ``mod``)."""

    def forward(f, name):
        return lambda self, other: f(self, other, name=name)

    def reflected(f, name):
        return lambda self, other: f(other, self, name=name)

    for dunder, function, name in (
        ("pow", pow, "pow"),
        ("floordiv", floordiv, "floordiv"),
        ("mod", floormod, "mod"),
    ):
        setattr(Tensor, f"__{dunder}__", forward(function, name))
        setattr(Tensor, f"__r{dunder}__", reflected(function, name))


_install_operators()


# -- gradients ------------------------------------------------------------------------------------
@register_gradient("Pow")
def _pow_grad(op: Operation, grad: Tensor) -> list[Tensor]:
    """d(x**y) = y * x**(y-1) dx + x**y * log(x) dy, with log(x) taken as 0 where x <= 0."""
    x, y = op.inputs
    gx = grad * y * pow(x, y - 1)
    positive = greater(x, 0)
    log_x = where(positive, log(where(positive, x, 1)), 0)
    gy = grad * op.outputs[0] * log_x
    return [unbroadcast(gx, x), unbroadcast(gy, y)]


@register_gradient("Minimum")
def _minimum_grad(op: Operation, grad: Tensor) -> list[Tensor]:
    x, y = op.inputs
    gx = backprop.extremum_grad(x, y, grad, take_x=True, kind="min")
    gy = backprop.extremum_grad(x, y, grad, take_x=False, kind="min")
    return [unbroadcast(gx, x), unbroadcast(gy, y)]


@register_gradient("Log")
def _log_grad(op: Operation, grad: Tensor) -> list[Tensor]:
    return [grad / op.inputs[0]]


@register_gradient("Reciprocal")
def _reciprocal_grad(op: Operation, grad: Tensor) -> list[Tensor]:
    y = op.outputs[0]
    return [negative(grad) * (y * y)]


@register_gradient("Sigmoid")
def _sigmoid_grad_fn(op: Operation, grad: Tensor) -> list[Tensor]:
    return [sigmoid_grad(op.outputs[0], grad)]


for _op_type in ("Sign", "FloorDiv", "FloorMod"):
    no_gradient(_op_type)  # piecewise constant: their gradient is zero (None)


# -- from elementwise_more ----------------------------------------------------------------
__all__ += [
    "ceil",
    "clip_by_value",
    "cos",
    "div",
    "floor",
    "log1p",
    "realdiv",
    "round",
    "rsqrt",
    "sin",
    "squared_difference",
    "truediv",
]

_FLOAT = dtypes.FLOATING
_NUM = dtypes.NUMERIC


register("Floor", ArrayFunction("floor"), cpu=_FLOAT, gpu=_FLOAT)
register("Ceil", ArrayFunction("ceil"), cpu=_FLOAT, gpu=_FLOAT)
register("Round", ArrayFunction("rint"), cpu=_NUM, gpu=_NUM)  # half to even, as TensorFlow
register("Rsqrt", _rsqrt, cpu=_FLOAT, gpu=_FLOAT)
register("Log1p", ArrayFunction("log1p"), cpu=_FLOAT, gpu=_FLOAT)
register("Sin", ArrayFunction("sin"), cpu=_FLOAT, gpu=_FLOAT)
register("Cos", ArrayFunction("cos"), cpu=_FLOAT, gpu=_FLOAT)
register("SquaredDifference", _squared_difference, cpu=_NUM, gpu=_NUM)


# -- builders -------------------------------------------------------------------------------------
def floor(x: Any, name: str | None = None) -> Tensor:
    """The largest integer not greater than ``x``, elementwise (floating point)."""
    return _float_unary("Floor", x, name, "floor")


def ceil(x: Any, name: str | None = None) -> Tensor:
    """The smallest integer not less than ``x``, elementwise (floating point)."""
    return _float_unary("Ceil", x, name, "ceil")


def round(x: Any, name: str | None = None) -> Tensor:
    """``x`` rounded to the nearest integer, halves to even as ``tf.round`` (banker's
    rounding); integer tensors come back unchanged.

    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     r = round(dg.constant([0.5, 1.5, 2.5, -0.5, -1.7]))
    ...     with dg.Session() as sess:
    ...         sess.run(r).tolist()
    [0.0, 2.0, 2.0, -0.0, -2.0]
    """
    return _unary("Round", x, name)


def rsqrt(x: Any, name: str | None = None) -> Tensor:
    """``1 / sqrt(x)`` elementwise."""
    return _float_unary("Rsqrt", x, name, "rsqrt")


def log1p(x: Any, name: str | None = None) -> Tensor:
    """``log(1 + x)`` elementwise, accurate for small ``x``."""
    return _float_unary("Log1p", x, name, "log1p")


def sin(x: Any, name: str | None = None) -> Tensor:
    """The sine of ``x`` elementwise (radians)."""
    return _float_unary("Sin", x, name, "sin")


def cos(x: Any, name: str | None = None) -> Tensor:
    """The cosine of ``x`` elementwise (radians)."""
    return _float_unary("Cos", x, name, "cos")


def squared_difference(x: Any, y: Any, name: str | None = None) -> Tensor:
    """``(x - y) ** 2`` elementwise, with broadcasting."""
    return _binary("SquaredDifference", x, y, name, "squared_difference")


def truediv(x: Any, y: Any, name: str | None = None) -> Tensor:
    """``x / y`` as Python 3 divides: integers are divided as floats (``tf.truediv``)."""
    return divide(x, y, name=name)


def realdiv(x: Any, y: Any, name: str | None = None) -> Tensor:
    """``x / y`` of two floating-point tensors (``tf.realdiv``)."""
    x, y = _as_pair(x, y, "RealDiv")
    if not x.dtype.is_floating:
        raise TypeError(f"realdiv: expects floating-point tensors; {x.name!r} is {x.dtype.name}")
    return divide(x, y, name=name)


def div(x: Any, y: Any, name: str | None = None) -> Tensor:
    """``x / y`` as Python 2 divided (``tf.div``, deprecated in TensorFlow 1): floor division
    for integers, true division for floats.

    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     a, b = div(7, 2), div(7.0, 2.0)
    ...     with dg.Session() as sess:
    ...         sess.run([a, b])
    [np.int32(3), np.float32(3.5)]
    """
    x, y = _as_pair(x, y, "Div")
    if x.dtype.is_floating:
        return divide(x, y, name=name)
    return floordiv(x, y, name=name)


def clip_by_value(
    t: Any, clip_value_min: Any, clip_value_max: Any, name: str | None = None
) -> Tensor:
    """``t`` with values below ``clip_value_min`` raised to it and values above
    ``clip_value_max`` lowered to it (``tf.clip_by_value``; TensorFlow's ``minimum`` then
    ``maximum``, so the gradient reaches ``t`` where it was not clipped, and the bounds where
    they were). The bounds broadcast to ``t`` but may not make it larger.

    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     c = clip_by_value(dg.constant([-2.0, 0.5, 4.0]), -1.0, 1.0)
    ...     with dg.Session() as sess:
    ...         sess.run(c).tolist()
    [-1.0, 0.5, 1.0]
    """
    t = convert_to_tensor(t)
    low = convert_to_tensor(clip_value_min, dtype=t.dtype)
    high = convert_to_tensor(clip_value_max, dtype=t.dtype)
    for bound in (low, high):
        shape = broadcast_shape(t.shape, bound.shape, "clip_by_value")
        if _grows(t.shape, shape):
            raise ValueError(
                f"clip_by_value: the bound {bound.name!r} of shape {bound.shape} would "
                f"broadcast {t.name!r} of shape {t.shape} to {shape}"
            )
    return maximum(minimum(t, high), low, name=name)


def _grows(shape: tuple | None, broadcast: tuple | None) -> bool:
    """Whether broadcasting made ``shape`` larger (as far as the static shapes tell)."""
    if shape is None or broadcast is None:
        return False
    if len(broadcast) != len(shape):
        return True
    return any(
        a is not None and b is not None and a != b for a, b in zip(shape, broadcast, strict=True)
    )


# -- gradients ------------------------------------------------------------------------------------
@register_gradient("Rsqrt")
def _rsqrt_grad(op: Operation, grad: Tensor) -> list[Tensor]:
    y = op.outputs[0]
    return [grad * (y * y * y) * -0.5]


@register_gradient("Log1p")
def _log1p_grad(op: Operation, grad: Tensor) -> list[Tensor]:
    return [grad / (op.inputs[0] + 1.0)]


@register_gradient("Sin")
def _sin_grad(op: Operation, grad: Tensor) -> list[Tensor]:
    return [grad * cos(op.inputs[0])]


@register_gradient("Cos")
def _cos_grad(op: Operation, grad: Tensor) -> list[Tensor]:
    return [-(grad * sin(op.inputs[0]))]


@register_gradient("SquaredDifference")
def _squared_difference_grad(op: Operation, grad: Tensor) -> list[Tensor]:
    x, y = op.inputs
    g = grad * ((x - y) * 2.0)
    return [unbroadcast(g, x), unbroadcast(-g, y)]


for _op_type in ("Floor", "Ceil", "Round"):
    no_gradient(_op_type)  # piecewise constant: their gradient is zero (None)
