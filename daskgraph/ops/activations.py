"""The activations of ``tf.nn`` beyond ``relu``: ``softplus``, ``softsign``, ``elu``, ``selu``,
``leaky_relu``, ``crelu`` and ``swish``/``silu``.

The first five are TensorFlow 1's ops (``Softplus``, ``Softsign``, ``Elu``, ``Selu``,
``LeakyRelu``), each one kernel over the array API; ``softplus`` never overflows
(``log1p(exp(-|x|)) + max(x, 0)``). Their gradients are built from ordinary ops (so they have
second derivatives too), with TensorFlow's conventions at the kinks: ``elu``'s and ``selu``'s
gradient at 0 is the right-hand one, ``leaky_relu``'s the left-hand one (``alpha``).
``crelu`` and ``swish`` are compositions, as in TensorFlow.

>>> import daskgraph as dg
>>> with dg.Graph().as_default():
...     x = dg.constant([-1000.0, 0.0, 1000.0], dg.float64)
...     with dg.Session() as sess:
...         sess.run(softplus(x)).round(4).tolist()
[0.0, 0.6931, 1000.0]
"""

from __future__ import annotations

from typing import Any

from daskgraph.framework import dtypes
from daskgraph.framework.gradient_registry import register_gradient
from daskgraph.framework.graph import Operation, Tensor, name_scope, new_tensor
from daskgraph.framework.op_registry import register
from daskgraph.kernels.activations import (
    SELU_ALPHA,
    SELU_SCALE,
    _elu,
    _leaky_relu,
    _selu,
    _softplus,
    _softsign,
)
from daskgraph.ops.array import cast, convert_to_tensor
from daskgraph.ops.elementwise import sigmoid
from daskgraph.ops.logic import greater, less, where
from daskgraph.ops.math import abs, multiply, negative, square
from daskgraph.ops.nn import relu
from daskgraph.ops.shape_ops import concat

__all__ = ["crelu", "elu", "leaky_relu", "selu", "silu", "softplus", "softsign", "swish"]

_FLOAT = dtypes.FLOATING


register("Softplus", _softplus, cpu=_FLOAT, gpu=_FLOAT)
register("Softsign", _softsign, cpu=_FLOAT, gpu=_FLOAT)
register("Elu", _elu, cpu=_FLOAT, gpu=_FLOAT)
register("Selu", _selu, cpu=_FLOAT, gpu=_FLOAT)
register("LeakyRelu", _leaky_relu, cpu=_FLOAT, gpu=_FLOAT)


# -- builders -------------------------------------------------------------------------------------
def _features(features: Any, caller: str) -> Tensor:
    x = convert_to_tensor(features)
    if not x.dtype.is_floating:
        raise TypeError(
            f"{caller}: features must be a floating-point tensor; {x.name!r} is {x.dtype.name}"
        )
    return x


def _activation(op_type: str, features: Any, name: str | None, caller: str, **attrs) -> Tensor:
    x = _features(features, caller)
    return new_tensor(op_type, [x], x.dtype, x.shape, name, **attrs)


def softplus(features: Any, name: str | None = None) -> Tensor:
    """``log(exp(features) + 1)`` elementwise, computed without overflow; its gradient is
    ``sigmoid(features)``."""
    return _activation("Softplus", features, name, "softplus")


def softsign(features: Any, name: str | None = None) -> Tensor:
    """``features / (abs(features) + 1)`` elementwise.

    Examples
    --------
    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     with dg.Session() as sess:
    ...         sess.run(softsign(dg.constant([-3.0, 0.0, 1.0]))).tolist()
    [-0.75, 0.0, 0.5]
    """
    return _activation("Softsign", features, name, "softsign")


def elu(features: Any, name: str | None = None) -> Tensor:
    """The exponential linear unit: ``features`` where positive, else ``exp(features) - 1``.

    Examples
    --------
    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     with dg.Session() as sess:
    ...         sess.run(elu(dg.constant([-1000.0, 0.0, 2.0]))).tolist()
    [-1.0, 0.0, 2.0]
    """
    return _activation("Elu", features, name, "elu")


def selu(features: Any, name: str | None = None) -> Tensor:
    """The scaled exponential linear unit: ``scale * features`` where positive, else
    ``scale * alpha * (exp(features) - 1)``, with TensorFlow's (SELU's) constants."""
    return _activation("Selu", features, name, "selu")


def leaky_relu(features: Any, alpha: float = 0.2, name: str | None = None) -> Tensor:
    """``features`` where positive, else ``alpha * features``; integer ``features`` are cast
    to float32 first, as in TensorFlow.

    Examples
    --------
    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     y = leaky_relu(dg.constant([-2, 0, 3]), alpha=0.5)
    ...     with dg.Session() as sess:
    ...         y.dtype.name, sess.run(y).tolist()
    ('float32', [-1.0, 0.0, 3.0])
    """
    x = convert_to_tensor(features)
    if x.dtype.is_integer:
        x = cast(x, dtypes.float32)
    try:
        alpha = float(alpha)
    except (TypeError, ValueError):
        raise TypeError(f"leaky_relu: alpha must be a number; got {alpha!r}") from None
    return _activation("LeakyRelu", x, name, "leaky_relu", alpha=alpha)


def crelu(features: Any, name: str | None = None, axis: int = -1) -> Tensor:
    """The concatenated ReLU: ``relu(concat([features, -features], axis))``, twice as deep
    along ``axis``.

    Examples
    --------
    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     y = crelu(dg.constant([[1.0, -2.0]]))
    ...     with dg.Session() as sess:
    ...         y.shape, sess.run(y).tolist()
    ((1, 4), [[1.0, 0.0, 0.0, 2.0]])
    """
    with name_scope(name or "CRelu"):
        x = _features(features, "crelu")
        return relu(concat([x, negative(x)], axis))


def swish(features: Any, beta: float = 1.0) -> Tensor:
    """``features * sigmoid(beta * features)`` (also ``silu``)."""
    with name_scope("swish"):
        x = _features(features, "swish")
        return multiply(x, sigmoid(x if beta == 1.0 else x * beta))


silu = swish  # TensorFlow's other name for it


# -- gradients ------------------------------------------------------------------------------------
@register_gradient("Softplus")
def _softplus_grad(op: Operation, grad: Tensor) -> list[Tensor]:
    return [grad * sigmoid(op.inputs[0])]


@register_gradient("Softsign")
def _softsign_grad(op: Operation, grad: Tensor) -> list[Tensor]:
    return [grad / square(1.0 + abs(op.inputs[0]))]


@register_gradient("Elu")
def _elu_grad(op: Operation, grad: Tensor) -> list[Tensor]:
    """``grad * (y + 1)`` where ``y < 0``, else ``grad`` (TensorFlow's ``EluGrad``)."""
    y = op.outputs[0]
    return [where(less(y, 0.0), grad * (y + 1.0), grad)]


@register_gradient("Selu")
def _selu_grad(op: Operation, grad: Tensor) -> list[Tensor]:
    """``grad * (y + scale * alpha)`` where ``y < 0``, else ``grad * scale``."""
    y = op.outputs[0]
    return [where(less(y, 0.0), grad * (y + SELU_SCALE * SELU_ALPHA), grad * SELU_SCALE)]


@register_gradient("LeakyRelu")
def _leaky_relu_grad(op: Operation, grad: Tensor) -> list[Tensor]:
    return [where(greater(op.inputs[0], 0.0), grad, grad * op.attrs["alpha"])]
