"""Indexing kernels: ``gather_nd``, ``batch_gather``, ``boolean_mask``, ``reverse`` and the rest.

The kernels of :mod:`daskgraph.ops.indexing`'s ops, each ``kernel(xp, *inputs, **attrs)``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from daskgraph.kernels.fill_ops import runtime_shape

_CUPY_ATOMICS = {"add": "scatter_add", "maximum": "scatter_max", "minimum": "scatter_min"}


# -- kernels --------------------------------------------------------------------------------------
def scatter_into(xp: Any, out: Any, index: tuple, updates: Any, ufunc: str = "add") -> Any:
    """``out[index] = ufunc(out[index], updates)`` with repeated places accumulating, as
    ``numpy.<ufunc>.at``; returns ``out``. CuPy's atomics (``cupyx.scatter_add/max/min`` for
    float32, float64 and int32) do it on a GPU; other dtypes and ufuncs go through the host.

    >>> scatter_into(np, np.zeros(3), (np.array([0, 0, 2]),), np.array([1.0, 2.0, 5.0]))
    array([3., 0., 5.])
    """
    if xp is np:
        getattr(np, ufunc).at(out, index, updates)
        return out
    if ufunc in _CUPY_ATOMICS and out.dtype.name in ("float32", "float64", "int32"):
        import cupyx  # only on CuPy workers

        values = xp.broadcast_to(xp.asarray(updates, dtype=out.dtype), out[index].shape)
        getattr(cupyx, _CUPY_ATOMICS[ufunc])(out, index, values)
        return out
    host = xp.asnumpy(out)
    scatter_into(np, host, tuple(xp.asnumpy(i) for i in index), xp.asnumpy(updates), ufunc)
    out[...] = xp.asarray(host)
    return out


def nd_index(xp: Any, shape: tuple[int, ...], indices: Any, where: str) -> tuple[Any, ...]:
    """The index of ``x[...]`` picking ``indices`` (last axis: coordinates) out of a tensor of
    ``shape``; an out-of-range coordinate raises TensorFlow's message."""
    indices = xp.asarray(indices)
    depth = indices.shape[-1]
    if depth > len(shape):
        raise ValueError(f"{where}: index depth {depth} exceeds the rank {len(shape)} of params")
    flat = indices.reshape(-1, depth)
    limits = xp.asarray(shape[:depth], dtype=flat.dtype)
    bad = xp.nonzero(((flat < 0) | (flat >= limits)).any(axis=1))[0]
    if bad.size:
        i = int(bad[0])
        coords = ", ".join(str(v) for v in flat[i].tolist())
        dims = ",".join(str(d) for d in shape)
        raise ValueError(f"indices[{i}] = [{coords}] does not index into param shape [{dims}]")
    return tuple(indices[..., k] for k in range(depth))


def _gather_nd_kernel(xp, params, indices):
    index = nd_index(xp, params.shape, indices, "gather_nd")
    if not index:  # empty coordinates: the whole of params, once per index
        return xp.ascontiguousarray(xp.broadcast_to(params, indices.shape[:-1] + params.shape))
    return params[index]


def _gather_nd_grad_kernel(xp, grad, params, indices):
    out = xp.zeros(params.shape, dtype=grad.dtype)
    index = nd_index(xp, params.shape, indices, "gather_nd")
    if not index:
        return out + xp.asarray(grad).reshape((-1, *params.shape)).sum(axis=0)
    return scatter_into(xp, out, index, grad)


def _batch_index(xp: Any, params: Any, indices: Any) -> tuple[Any, ...]:
    """The index of ``params[...]`` taking ``indices[b..., k]`` within batch ``b...``."""
    indices = xp.asarray(indices)
    batch = indices.ndim - 1
    size = params.shape[batch]
    if indices.size and (int(indices.min()) < 0 or int(indices.max()) >= size):
        bad = int(indices.min()) if int(indices.min()) < 0 else int(indices.max())
        raise ValueError(f"batch_gather: index {bad} is not in [0, {size})")
    grids = tuple(
        xp.arange(params.shape[a]).reshape([1] * a + [-1] + [1] * (indices.ndim - a - 1))
        for a in range(batch)
    )
    return (*grids, indices)


def _batch_gather_kernel(xp, params, indices):
    return params[_batch_index(xp, params, indices)]


def _batch_gather_grad_kernel(xp, grad, params, indices):
    index = _batch_index(xp, params, indices)
    index = tuple(xp.broadcast_to(i, indices.shape) for i in index)
    return scatter_into(xp, xp.zeros(params.shape, dtype=grad.dtype), index, grad)


def _mask_index(x: Any, mask: Any, axis: int) -> tuple[Any, ...]:
    if tuple(x.shape[axis : axis + mask.ndim]) != tuple(mask.shape):
        raise ValueError(
            f"boolean_mask: the mask's shape {tuple(mask.shape)} does not match dimensions "
            f"{axis} to {axis + mask.ndim - 1} of the tensor, {tuple(x.shape)}"
        )
    return (slice(None),) * axis + (mask,)


def _boolean_mask_kernel(xp, x, mask, *, axis):
    return x[_mask_index(x, xp.asarray(mask), axis)]


def _boolean_mask_grad_kernel(xp, grad, x, mask, *, axis):
    out = xp.zeros(x.shape, dtype=grad.dtype)
    out[_mask_index(x, xp.asarray(mask), axis)] = grad
    return out


def _sequence_mask_kernel(xp, lengths, *inputs, maxlen, out_type):
    lengths = xp.asarray(lengths)
    if inputs:
        maxlen = int(inputs[0])
    elif maxlen is None:
        maxlen = int(lengths.max()) if lengths.size else 0
    return (xp.arange(maxlen) < lengths[..., None]).astype(out_type)


def _reverse_kernel(xp, x, *, axis):
    return xp.ascontiguousarray(xp.flip(x, axis=axis)) if axis else x


def _reverse_sequence_kernel(xp, x, lengths, *, seq_axis, batch_axis):
    steps = x.shape[seq_axis]
    lengths = xp.asarray(lengths).astype(np.int64).reshape(-1, 1)
    if lengths.shape[0] != x.shape[batch_axis]:
        raise ValueError(f"reverse_sequence: {lengths.shape[0]} lengths for a batch of "
                         f"{x.shape[batch_axis]}")  # fmt: skip
    if lengths.size and (int(lengths.max()) > steps or int(lengths.min()) < 0):
        i = int(xp.argmax((lengths > steps) | (lengths < 0)))
        raise ValueError(f"seq_lens({i}) > input.dims({seq_axis})")
    t = xp.arange(steps).reshape(1, -1)
    index = xp.where(t < lengths, lengths - 1 - t, t)  # (batch, steps)
    if batch_axis > seq_axis:
        index = index.T
    shape = [1] * x.ndim
    shape[batch_axis], shape[seq_axis] = x.shape[batch_axis], steps
    index = xp.broadcast_to(index.reshape(shape), x.shape)
    return xp.take_along_axis(x, index, axis=seq_axis)


def _broadcast_to_kernel(xp, x, *inputs, target):
    if target is None:
        target = runtime_shape(xp, inputs[0], "broadcast_to")
    return xp.ascontiguousarray(xp.broadcast_to(x, target))


def _space_to_depth_kernel(xp, x, *, block):
    n, h, w, c = x.shape
    if h % block or w % block:
        raise ValueError(f"space_to_depth: height {h} and width {w} must be divisible by the "
                         f"block size {block}")  # fmt: skip
    x = x.reshape(n, h // block, block, w // block, block, c).transpose(0, 1, 3, 2, 4, 5)
    return x.reshape(n, h // block, w // block, block * block * c)


def _depth_to_space_kernel(xp, x, *, block):
    n, h, w, c = x.shape
    if c % (block * block):
        raise ValueError(f"depth_to_space: depth {c} must be divisible by block_size^2 = "
                         f"{block * block}")  # fmt: skip
    x = x.reshape(n, h, w, block, block, c // (block * block)).transpose(0, 1, 3, 2, 4, 5)
    return x.reshape(n, h * block, w * block, c // (block * block))
