"""Special functions of TensorFlow 1's math: ``erf``, ``erfc``, ``lgamma``, ``digamma`` and
``lbeta``, with their gradients.

NumPy has none of them, so the kernels take them where they are: CuPy's
``cupyx.scipy.special`` on a GPU, SciPy's ``scipy.special`` on NumPy when SciPy is installed
(it is not a dependency of daskgraph), else Python's :mod:`math` element by element (exact,
slower). ``digamma`` and the trigamma function of its gradient are computed over the array API
itself (recurrence to large arguments, then the asymptotic series; about 1e-14 relative
error), with TensorFlow's values at the poles: NaN for ``digamma`` at 0, -1, -2, ...

>>> import daskgraph as dg
>>> with dg.Graph().as_default():
...     y = lgamma(dg.constant([1.0, 4.0], dg.float64))
...     with dg.Session() as sess:
...         [round(float(v), 6) for v in sess.run(y)]
[0.0, 1.791759]
"""

from __future__ import annotations

import math
from typing import Any

from daskgraph.framework.gradient_registry import no_gradient, register_gradient
from daskgraph.framework.graph import Operation, Tensor, get_default_graph, name_scope
from daskgraph.framework.op_registry import register
from daskgraph.kernels.special import _FLOAT, _digamma, _erf, _erfc, _lgamma, _trigamma
from daskgraph.ops.array import convert_to_tensor
from daskgraph.ops.elementwise import _float_unary
from daskgraph.ops.math import exp, negative, reduce_sum, square

__all__ = ["digamma", "erf", "erfc", "lbeta", "lgamma"]
_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)


for _type, _kernel in (
    ("Erf", _erf),
    ("Erfc", _erfc),
    ("Lgamma", _lgamma),
    ("Digamma", _digamma),
    ("Trigamma", _trigamma),
):
    register(_type, _kernel, cpu=_FLOAT, gpu=_FLOAT)


# -- builders -------------------------------------------------------------------------------------
def erf(x: Any, name: str | None = None) -> Tensor:
    """The error function ``2/sqrt(pi) * integral(exp(-t**2), 0, x)`` elementwise.

    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     y = erf(dg.constant([0.0, 1.0], dg.float64))
    ...     with dg.Session() as sess:
    ...         [round(float(v), 6) for v in sess.run(y)]
    [0.0, 0.842701]
    """
    return _float_unary("Erf", x, name, "erf")


def erfc(x: Any, name: str | None = None) -> Tensor:
    """The complementary error function ``1 - erf(x)`` elementwise, accurate for large
    ``x``."""
    return _float_unary("Erfc", x, name, "erfc")


def lgamma(x: Any, name: str | None = None) -> Tensor:
    """``log(|gamma(x)|)`` elementwise (infinite at 0, -1, -2, ...)."""
    return _float_unary("Lgamma", x, name, "lgamma")


def digamma(x: Any, name: str | None = None) -> Tensor:
    """The digamma function ``psi(x)``, the derivative of :func:`lgamma`, elementwise (NaN at
    0, -1, -2, ...).

    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     y = digamma(dg.constant([1.0, 0.0], dg.float64))
    ...     with dg.Session() as sess:
    ...         [round(float(v), 6) for v in sess.run(y)]
    [-0.577216, nan]
    """
    return _float_unary("Digamma", x, name, "digamma")


def lbeta(x: Any, name: str | None = None) -> Tensor:
    """The log of the multivariate beta function along the last axis:
    ``sum(lgamma(x), -1) - lgamma(sum(x, -1))`` (``tf.math.lbeta``).

    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     b = lbeta(dg.constant([[1.0, 1.0], [2.0, 3.0]], dg.float64))
    ...     with dg.Session() as sess:
    ...         [round(float(v), 6) for v in sess.run(b)]
    [0.0, -2.484907]
    """
    with name_scope(name or "lbeta"):
        x = convert_to_tensor(x, name="x")
        return reduce_sum(lgamma(x), axis=-1) - lgamma(reduce_sum(x, axis=-1))


def _trigamma_of(x: Tensor) -> Tensor:
    graph = get_default_graph()
    return graph.create_op("Trigamma", [x], dtype=x.dtype, shape=x.shape).outputs[0]


# -- gradients ------------------------------------------------------------------------------------
@register_gradient("Erf")
def _erf_grad(op: Operation, grad: Tensor) -> list[Tensor]:
    return [grad * _TWO_OVER_SQRT_PI * exp(negative(square(op.inputs[0])))]


@register_gradient("Erfc")
def _erfc_grad(op: Operation, grad: Tensor) -> list[Tensor]:
    return [grad * -_TWO_OVER_SQRT_PI * exp(negative(square(op.inputs[0])))]


@register_gradient("Lgamma")
def _lgamma_grad(op: Operation, grad: Tensor) -> list[Tensor]:
    return [grad * digamma(op.inputs[0])]


@register_gradient("Digamma")
def _digamma_grad(op: Operation, grad: Tensor) -> list[Tensor]:
    return [grad * _trigamma_of(op.inputs[0])]


no_gradient("Trigamma")  # the second derivative of digamma is not supported
