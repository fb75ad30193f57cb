"""Special-function kernels: ``erf``, ``erfc``, ``lgamma``, ``digamma`` and the rest.

The kernels of :mod:`daskgraph.ops.special`'s ops, each ``kernel(xp, *inputs, **attrs)``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from daskgraph.framework import dtypes

_FLOAT = dtypes.FLOATING


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
