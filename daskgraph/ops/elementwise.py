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
"""

from __future__ import annotations

from typing import Any

from daskgraph import dtypes
from daskgraph.gradients import no_gradient, register_gradient, unbroadcast
from daskgraph.graph import Operation, Tensor, get_default_graph
from daskgraph.ops import backprop
from daskgraph.ops.array import convert_to_tensor
from daskgraph.ops.logic import greater, where
from daskgraph.ops.math import _binary, _unary, negative
from daskgraph.ops.registry import ArrayFunction, register

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


# -- kernels --------------------------------------------------------------------------------------
def _sigmoid(xp, x):
    """``1 / (1 + exp(-x))`` without overflow: ``exp`` only ever sees ``-|x|``."""
    e = xp.exp(-xp.abs(x))
    r = 1 / (1 + e)
    return xp.where(x >= 0, r, e * r)


def _sigmoid_grad(xp, y, dy):
    return dy * y * (1 - y)


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
