"""Cumulative kernels: ``Cumsum`` and ``Cumprod`` along an axis.

The kernels of :mod:`daskgraph.ops.cumulative`'s ops, each ``kernel(xp, *inputs, **attrs)``.
"""

from __future__ import annotations


# -- kernels --------------------------------------------------------------------------------------
def _cumulate(xp, x, axis: int, exclusive: bool, reverse: bool, product: bool):
    if x.ndim == 0 or x.shape[axis] == 0:
        return x.copy()
    if reverse:
        x = xp.flip(x, axis)
    scan = xp.cumprod if product else xp.cumsum
    out = scan(x, axis=axis, dtype=x.dtype)
    if exclusive:
        first_shape = tuple(1 if i == axis else n for i, n in enumerate(x.shape))
        first = (xp.ones if product else xp.zeros)(first_shape, dtype=x.dtype)
        head = tuple(slice(None, -1) if i == axis else slice(None) for i in range(x.ndim))
        out = xp.concatenate([first, out[head]], axis=axis)
    return xp.flip(out, axis) if reverse else out


def _cumsum(xp, x, *, axis, exclusive, reverse):
    return _cumulate(xp, x, axis, exclusive, reverse, product=False)


def _cumprod(xp, x, *, axis, exclusive, reverse):
    return _cumulate(xp, x, axis, exclusive, reverse, product=True)
