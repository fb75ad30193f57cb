"""Kernels of TensorFlow 1's further elementwise math: inverse and hyperbolic trigonometry, ...

The kernels of :mod:`daskgraph.ops.math_functions`'s ops, each ``kernel(xp, *inputs, **attrs)``.
"""

from __future__ import annotations

from daskgraph.errors import InvalidArgumentError
from daskgraph.framework import dtypes

_FLOAT = dtypes.FLOATING

#: op type -> the array module's function, for the float unary ops that are one function
_UNARY = {
    "Acos": "arccos",
    "Asin": "arcsin",
    "Atan": "arctan",
    "Tan": "tan",
    "Sinh": "sinh",
    "Cosh": "cosh",
    "Asinh": "arcsinh",
    "Acosh": "arccosh",
    "Atanh": "arctanh",
    "Expm1": "expm1",
}


# -- kernels --------------------------------------------------------------------------------------
def _log_sigmoid(xp, x):
    """``-softplus(-x)`` without overflow: ``-(max(-x, 0) + log1p(exp(-|x|)))``."""
    return -(xp.maximum(-x, 0) + xp.log1p(xp.exp(-xp.abs(x))))


def _where_zero(xp, mask, value):
    """``value`` with zeros where ``mask`` holds (broadcast together)."""
    return xp.where(mask, xp.zeros((), dtype=value.dtype), value)


def _div_no_nan(xp, x, y):
    zero = y == 0
    return _where_zero(xp, zero, x / xp.where(zero, xp.ones((), dtype=y.dtype), y))


def _mul_no_nan(xp, x, y):
    """0 where ``y`` is 0, even where ``x`` is NaN or infinite."""
    return _where_zero(xp, y == 0, x) * y


def _xdivy(xp, x, y):
    zero = x == 0
    return _where_zero(xp, zero, x / xp.where(zero, xp.ones((), dtype=y.dtype), y))


def _xlogy(xp, x, y):
    zero = x == 0
    return _where_zero(xp, zero, x * xp.log(xp.where(zero, xp.ones((), dtype=y.dtype), y)))


def _xlog1py(xp, x, y):
    zero = x == 0
    return _where_zero(xp, zero, x * xp.log1p(xp.where(zero, xp.zeros((), dtype=y.dtype), y)))


def _check_divisor(xp, y, where: str) -> None:
    if y.dtype.kind in "iu" and bool(xp.any(y == 0)):
        raise InvalidArgumentError(f"{where}: Integer division by zero", op=where)


def _truncate_div(xp, x, y):
    """``x / y`` rounded towards zero (C's integer division)."""
    if x.dtype.kind == "f":
        return xp.trunc(x / y)
    _check_divisor(xp, y, "TruncateDiv")
    return (xp.abs(x) // xp.abs(y)) * (xp.sign(x) * xp.sign(y))


def _truncate_mod(xp, x, y):
    """The remainder of :func:`_truncate_div`, with the sign of ``x`` (C's ``fmod``)."""
    if x.dtype.kind in "iu":
        _check_divisor(xp, y, "TruncateMod")
    return xp.fmod(x, y)


def _invert_permutation(xp, x):
    """``y[x[i]] = i``, after checking that ``x`` is a permutation of ``0 .. n-1``."""
    n = x.shape[0]
    if n and (int(x.min()) < 0 or int(x.max()) >= n):
        bad = int(x.min()) if int(x.min()) < 0 else int(x.max())
        raise InvalidArgumentError(f"{bad} is not between 0 and {n}", op="InvertPermutation")
    out = xp.full(n, -1, dtype=x.dtype)
    out[x] = xp.arange(n, dtype=x.dtype)
    if n and bool(xp.any(out < 0)):
        counts = xp.bincount(x, minlength=n)
        duplicated = int(xp.argmax(counts > 1))
        raise InvalidArgumentError(
            f"{duplicated} is duplicated in the input.", op="InvertPermutation"
        )
    return out
