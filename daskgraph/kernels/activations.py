"""Activation kernels beyond ``relu``: ``softplus``, ``softsign``, ``elu``, ``selu``, ...

The kernels of :mod:`daskgraph.ops.activations`'s ops, each ``kernel(xp, *inputs, **attrs)``.
"""

from __future__ import annotations

#: SELU's constants (Klambauer et al., 2017), as TensorFlow's kernel has them
SELU_ALPHA = 1.6732632423543772848170429916717
SELU_SCALE = 1.0507009873554804934193349852946


# -- kernels --------------------------------------------------------------------------------------
def _softplus(xp, x):
    return xp.log1p(xp.exp(-xp.abs(x))) + xp.maximum(x, 0)


def _softsign(xp, x):
    return x / (1 + xp.abs(x))


def _elu(xp, x):
    return xp.where(x > 0, x, xp.expm1(xp.minimum(x, 0)))


def _selu(xp, x):
    negative_part = SELU_ALPHA * xp.expm1(xp.minimum(x, 0))
    return (SELU_SCALE * xp.where(x > 0, x, negative_part)).astype(x.dtype)


def _leaky_relu(xp, x, *, alpha):
    return xp.where(x > 0, x, (x * alpha).astype(x.dtype))
