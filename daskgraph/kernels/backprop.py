"""Kernels of the ops only gradients build: the shape bookkeeping of reverse-mode differentiation.

The kernels of :mod:`daskgraph.ops.backprop`'s ops, each ``kernel(xp, *inputs, **attrs)``.
"""

from __future__ import annotations

from typing import Any


def _shape(xp: Any, x: Any) -> tuple[int, ...]:
    return tuple(getattr(x, "shape", ()))


def _sum_to_shape_of(xp, g, x):
    """``g`` summed over the axes broadcasting added or stretched, to ``x``'s shape."""
    shape = _shape(xp, x)
    g = xp.asarray(g)
    extra = g.ndim - len(shape)
    if extra > 0:
        g = g.sum(axis=tuple(range(extra)))
    stretched = tuple(i for i, n in enumerate(shape) if n == 1 and g.shape[i] != 1)
    if stretched:
        g = g.sum(axis=stretched, keepdims=True)
    return g.reshape(shape)


def _reduce_grad(xp, g, x, *, axis, keepdims, mean):
    """A reduction's gradient ``g`` broadcast back over ``x`` (divided by the count for a
    mean)."""
    shape = _shape(xp, x)
    axes = tuple(range(len(shape))) if axis is None else tuple(a % len(shape) for a in axis)
    g = xp.asarray(g)
    if not keepdims:
        g = g.reshape(tuple(1 if i in axes else n for i, n in enumerate(shape)))
    out = xp.broadcast_to(g, shape)
    if mean:
        count = 1
        for a in axes:
            count *= shape[a]
        out = out / max(count, 1)
    return xp.array(out, dtype=getattr(x, "dtype", out.dtype))


def _reshape_like(xp, g, x):
    return xp.reshape(g, _shape(xp, x))


def _extremum_grad(xp, x, y, g, *, take_x, kind):
    """The part of ``g`` (of ``maximum(x, y)`` or ``minimum``) that goes to ``x`` (or
    ``y``): where ``x`` won, ties going to ``x``, as TensorFlow does."""
    x_wins = (x >= y) if kind == "max" else (x <= y)
    mask = x_wins if take_x else ~x_wins
    return xp.where(mask, g, xp.zeros_like(g))


def _extremum_reduce_grad(xp, x, y, g, *, axis, keepdims):
    """The gradient of ``reduce_max`` (or ``reduce_min``) ``y`` of ``x``: ``g`` shared
    equally among the elements equal to the extremum."""
    shape = _shape(xp, x)
    axes = tuple(range(len(shape))) if axis is None else tuple(a % len(shape) for a in axis)
    kept = tuple(1 if i in axes else n for i, n in enumerate(shape))
    y = xp.asarray(y).reshape(kept)
    g = xp.asarray(g).reshape(kept)
    hits = (xp.asarray(x) == y).astype(g.dtype)
    return hits * (g / hits.sum(axis=axes, keepdims=True))


def _ones_like(xp, y):
    return xp.ones_like(xp.asarray(y))


def _ones_seed(xp, *, shape, dtype):
    return xp.ones(shape, dtype=dtype)
