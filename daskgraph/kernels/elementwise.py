"""Elementwise kernels beyond arithmetic: powers, logarithms, the sigmoid, minima, signs, rounding.

The kernels of :mod:`daskgraph.ops.elementwise`'s ops, each ``kernel(xp, *inputs, **attrs)``.
"""

from __future__ import annotations

from daskgraph.kernels.fusable import fusable_kernel

# -- kernels --------------------------------------------------------------------------------------
#: the sigmoid of one element in a fused loop: the kernel's own formula, so that ``exp`` never
#: overflows (``1 / (1 + exp(100))`` would be 0 where the sigmoid of -100 is 3.7e-44)
_SIGMOID = (
    "((1 / (1 + np.exp(-abs({0})))) if {0} >= 0"
    " else (np.exp(-abs({0})) * (1 / (1 + np.exp(-abs({0}))))))"
)


@fusable_kernel("sigmoid", _SIGMOID, relaxed=True)
def _sigmoid(xp, x):
    """``1 / (1 + exp(-x))`` without overflow: ``exp`` only ever sees ``-|x|``."""
    e = xp.exp(-xp.abs(x))
    r = 1 / (1 + e)
    return xp.where(x >= 0, r, e * r)


@fusable_kernel("sigmoid_grad", "({1} * {0} * (1 - {0}))", relaxed=True)
def _sigmoid_grad(xp, y, dy):
    return dy * y * (1 - y)


# -- kernels --------------------------------------------------------------------------------------
def _rsqrt(xp, x):
    return 1 / xp.sqrt(x)


def _squared_difference(xp, x, y):
    d = x - y
    return d * d
