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

import numpy as np

from daskgraph.framework import dtypes
from daskgraph.framework.gradient_registry import no_gradient, register_gradient
from daskgraph.framework.graph import Operation, Tensor, get_default_graph, name_scope
from daskgraph.framework.op_registry import register
from daskgraph.ops.array import convert_to_tensor
from daskgraph.ops.elementwise import _float_unary
from daskgraph.ops.math import exp, negative, reduce_sum, square

__all__ = ["digamma", "erf", "erfc", "lbeta", "lgamma"]

_FLOAT = dtypes.FLOATING
_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)


# -- kernels --------------------------------------------------------------------------------------
def _lgamma_scalar(value: float) -> float:
    """``math.lgamma``, infinite at the poles (0, -1, -2, ...) as TensorFlow's."""
    try:
        return math.lgamma(value)
    except ValueError:
        return math.inf


_PURE = {"erf": math.erf, "erfc": math.erfc, "gammaln": _lgamma_scalar}


def _special(xp: Any, name: str) -> Any:
    """The elementwise function ``name`` of ``scipy.special`` for the array module ``xp``."""
    if xp is not np:
        from cupyx.scipy import special  # only on CuPy workers

        return getattr(special, name)
    try:
        from scipy import special  # optional: not a dependency
    except ImportError:
        return np.frompyfunc(_PURE[name], 1, 1)
    return getattr(special, name)


def _apply(xp, name: str, x):
    return xp.asarray(_special(xp, name)(x)).astype(x.dtype, copy=False)


def _erf(xp, x):
    return _apply(xp, "erf", x)


def _erfc(xp, x):
    return _apply(xp, "erfc", x)


def _lgamma(xp, x):
    return _apply(xp, "gammaln", x)


#: the asymptotic series of digamma and trigamma, for arguments of at least _LARGE
_LARGE = 10.0
_DIGAMMA_SERIES = (1 / 12, -1 / 120, 1 / 252, -1 / 240, 1 / 132, -691 / 32760)
_TRIGAMMA_SERIES = (1 / 6, -1 / 30, 1 / 42, -1 / 30, 5 / 66, -691 / 2730)


def _shifted(xp, x, power: int):
    """``(z, correction)``: ``z = x + k`` with ``k`` the steps that bring ``x >= 0.5`` to at
    least ``_LARGE``, and ``correction = sum(1 / (x + i) ** power for i < k)``."""
    z = x
    correction = xp.zeros_like(x)
    for _ in range(int(_LARGE)):
        small = z < _LARGE
        correction = correction + xp.where(small, 1 / z**power, 0)
        z = xp.where(small, z + 1, z)
    return z, correction


def _digamma(xp, x):
    """psi(x): reflection below 1/2, recurrence up to 10, then the asymptotic series."""
    v = x.astype(np.float64)
    reflect = v < 0.5
    z, correction = _shifted(xp, xp.where(reflect, 1 - v, v), 1)
    inv2 = 1 / (z * z)
    series = xp.zeros_like(z)
    for coefficient in reversed(_DIGAMMA_SERIES):
        series = (series + coefficient) * inv2
    value = xp.log(z) - 0.5 / z - series - correction
    pole = reflect & (v == xp.floor(v))
    reflected = value - np.pi / xp.tan(np.pi * xp.where(pole, 0.5, v))
    value = xp.where(reflect, reflected, value)
    return xp.where(pole, np.nan, value).astype(x.dtype)


def _trigamma(xp, x):
    """psi'(x): reflection below 1/2, recurrence up to 10, then the asymptotic series."""
    v = x.astype(np.float64)
    reflect = v < 0.5
    z, correction = _shifted(xp, xp.where(reflect, 1 - v, v), 2)
    inv2 = 1 / (z * z)
    series = xp.zeros_like(z)
    for coefficient in reversed(_TRIGAMMA_SERIES):
        series = (series + coefficient) * inv2
    value = 1 / z + 0.5 * inv2 + series / z + correction
    pole = reflect & (v == xp.floor(v))
    sine = xp.sin(np.pi * xp.where(pole, 0.5, v))
    value = xp.where(reflect, np.pi**2 / (sine * sine) - value, value)
    return xp.where(pole, np.inf, value).astype(x.dtype)


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
