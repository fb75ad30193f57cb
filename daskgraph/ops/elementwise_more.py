"""More of TensorFlow 1's elementwise math: rounding (``floor``, ``ceil``, ``round``),
``rsqrt``, ``log1p``, ``sin``, ``cos``, ``squared_difference``, ``clip_by_value`` and TF1's
division names (``truediv``, ``realdiv``, ``div``), with their gradients.

>>> import daskgraph as dg
>>> with dg.Graph().as_default():
...     x = dg.constant([[-1.5, 0.5], [2.5, 3.7]])
...     y = clip_by_value(round(x), 0.0, 3.0)
>>> y.op.type, y.shape
('Maximum', (2, 2))
"""

from __future__ import annotations

from typing import Any

from daskgraph import dtypes
from daskgraph.gradients import no_gradient, register_gradient, unbroadcast
from daskgraph.graph import Operation, Tensor
from daskgraph.ops.array import convert_to_tensor
from daskgraph.ops.elementwise import _float_unary, floordiv, minimum
from daskgraph.ops.math import _as_pair, _binary, _unary, broadcast_shape, divide, maximum
from daskgraph.ops.registry import ArrayFunction, register

__all__ = [
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


# -- kernels --------------------------------------------------------------------------------------
def _rsqrt(xp, x):
    return 1 / xp.sqrt(x)


def _squared_difference(xp, x, y):
    d = x - y
    return d * d


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
