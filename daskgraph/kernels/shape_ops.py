"""Shape kernels: ``concat``, ``stack``, ``expand_dims``, ``squeeze``, ``tile`` and the rest.

The kernels of :mod:`daskgraph.ops.shape_ops`'s ops, each ``kernel(xp, *inputs, **attrs)``.
"""

from __future__ import annotations

import builtins

from daskgraph.kernels.slicing import axis_index


# -- kernels --------------------------------------------------------------------------------------
def _concat_kernel(xp, *values, axis):
    return xp.concatenate(values, axis=axis)


def _concat_slice_kernel(xp, grad, *values, axis, position):
    """The part of a concatenation's gradient ``grad`` that belongs to ``values[position]``."""
    start = sum(v.shape[axis] for v in values[:position])
    return grad[axis_index(axis, builtins.slice(start, start + values[position].shape[axis]))]


def _stack_kernel(xp, *values, axis):
    return xp.stack(values, axis=axis)


def _expand_dims_kernel(xp, x, *, axis):
    return xp.expand_dims(x, axis)


def _squeeze_kernel(xp, x, *, axis):
    return xp.squeeze(x, axis=axis)


def _tile_kernel(xp, x, *, multiples):
    return xp.tile(x, multiples)


def _tile_grad_kernel(xp, grad, x, *, multiples):
    """Sum the tiles of ``grad`` back onto ``x``: axis ``i`` of size ``m_i * d_i`` is viewed as
    ``(m_i, d_i)`` and the ``m_i`` axes are summed."""
    split = [n for pair in zip(multiples, x.shape, strict=True) for n in pair]
    return xp.asarray(grad).reshape(split).sum(axis=tuple(range(0, len(split), 2)))


def _shape_kernel(xp, x, *, out_type):
    return xp.asarray(x.shape, dtype=out_type)


def _size_kernel(xp, x, *, out_type):
    return xp.asarray(x.size, dtype=out_type)


def _identity_kernel(xp, x):
    return x
