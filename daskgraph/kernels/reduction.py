"""Reduction kernels beyond sums, means and maxima: minima, products, ``argmax``, ...

The kernels of :mod:`daskgraph.ops.reduction`'s ops, each ``kernel(xp, *inputs, **attrs)``.
"""

from __future__ import annotations


# -- kernels --------------------------------------------------------------------------------------
def _min(xp, x, *, axis, keepdims, dtype):
    return xp.asarray(xp.min(x, axis=axis, keepdims=keepdims))


def _prod(xp, x, *, axis, keepdims, dtype):
    return xp.asarray(xp.prod(x, axis=axis, keepdims=keepdims, dtype=dtype))


def _argmax(xp, x, *, axis, output_type):
    return xp.asarray(xp.argmax(x, axis=axis)).astype(output_type)


def _argmin(xp, x, *, axis, output_type):
    return xp.asarray(xp.argmin(x, axis=axis)).astype(output_type)


def _prod_grad(xp, x, grad, *, axis, keepdims):
    """``grad`` times the product of the *other* elements of each reduced slice (exclusive
    products from both ends, so zeros in ``x`` are no problem)."""
    rank = x.ndim
    axes = tuple(range(rank)) if axis is None else tuple(a % rank for a in axis)
    kept = tuple(i for i in range(rank) if i not in axes)
    kept_shape = tuple(1 if i in axes else n for i, n in enumerate(x.shape))
    grad = xp.asarray(grad).reshape(kept_shape)
    if x.size == 0:
        return xp.zeros_like(x)
    t = xp.transpose(x, kept + axes)
    lead = t.shape[: len(kept)]
    t = t.reshape((*lead, -1))
    ones = xp.ones((*lead, 1), dtype=x.dtype)
    left = xp.cumprod(xp.concatenate([ones, t[..., :-1]], axis=-1), axis=-1)
    flipped = xp.flip(t, axis=-1)[..., :-1]
    right = xp.flip(xp.cumprod(xp.concatenate([ones, flipped], axis=-1), axis=-1), axis=-1)
    others = (left * right).reshape(tuple(x.shape[i] for i in kept + axes))
    return xp.transpose(others, tuple(_inverse(kept + axes))) * grad


def _inverse(perm: tuple[int, ...]) -> list[int]:
    """The inverse of the permutation ``perm``: ``_inverse((2, 0, 1)) == [1, 2, 0]``."""
    inverse = [0] * len(perm)
    for i, p in enumerate(perm):
        inverse[p] = i
    return inverse


# -- kernels --------------------------------------------------------------------------------------
def _any(xp, x, *, axis, keepdims, dtype):
    return xp.asarray(xp.any(x, axis=axis, keepdims=keepdims))


def _all(xp, x, *, axis, keepdims, dtype):
    return xp.asarray(xp.all(x, axis=axis, keepdims=keepdims))
