"""Fill kernels: tensors of one value (``fill``, ``zeros_like``, ``ones_like``, ...).

The kernels of :mod:`daskgraph.ops.fill_ops`'s ops, each ``kernel(xp, *inputs, **attrs)``.
"""

from __future__ import annotations

from typing import Any


# -- kernels --------------------------------------------------------------------------------------
def runtime_shape(xp: Any, dims: Any, where: str) -> tuple[int, ...]:
    """A 1-D integer array of sizes (a shape computed by the graph) as a tuple of ints.

    >>> import numpy as np
    >>> runtime_shape(np, np.array([2, 3]), "fill")
    (2, 3)
    """
    shape = tuple(int(d) for d in xp.asarray(dims).reshape(-1).tolist())
    if any(d < 0 for d in shape) or xp.asarray(dims).ndim != 1:
        raise ValueError(f"{where}: the shape must be a 1-D list of sizes >= 0; got {shape}")
    return shape


def _fill_kernel(xp, *inputs, shape):
    if shape is None:
        dims, value = inputs
        shape = runtime_shape(xp, dims, "fill")
    else:
        (value,) = inputs
    value = xp.asarray(value)
    out = xp.empty(shape, dtype=value.dtype)
    out[...] = value
    return out


def _zeros_like_kernel(xp, x, *, dtype):
    return xp.zeros(x.shape, dtype=dtype)


def _ones_like_kernel(xp, x, *, dtype):
    return xp.ones(x.shape, dtype=dtype)


def _one_hot_kernel(xp, indices, *, depth, on, off, axis, dtype):
    indices = xp.asarray(indices)
    axis = indices.ndim if axis == -1 else axis
    classes = xp.arange(depth).reshape((depth,) + (1,) * (indices.ndim - axis))
    hot = xp.expand_dims(indices, axis) == classes
    return xp.where(hot, xp.asarray(on, dtype=dtype), xp.asarray(off, dtype=dtype))
