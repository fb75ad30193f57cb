"""Kernels that rearrange sparse tensors: reorder, reshape, retain, concat, slice and the rest.

The kernels of :mod:`daskgraph.ops.sparse_structure`'s ops, each ``kernel(xp, *inputs, **attrs)``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from daskgraph.kernels.indexing import scatter_into
from daskgraph.kernels.sparse_ops import check_indices, dense_dims, linear_index


# -- kernels --------------------------------------------------------------------------------------
def _reorder_kernel(xp, indices):
    if not indices.shape[0]:
        return xp.zeros(0, dtype=np.int64)
    return xp.lexsort(indices.T[::-1]).astype(np.int64)  # row-major, stable


def _reshape_target(xp, shape, new_shape) -> tuple[tuple[int, ...], tuple[int, ...]]:
    dims = dense_dims(xp, shape, "sparse_reshape")
    wanted = [int(d) for d in xp.asarray(new_shape).reshape(-1).tolist()]
    unknown = [i for i, d in enumerate(wanted) if d == -1]
    if len(unknown) > 1:
        raise ValueError(
            f"only one output dimension may be -1, not both {unknown[0]} and {unknown[1]}"
        )
    size, known = int(np.prod(dims, dtype=np.int64)), int(np.prod([d for d in wanted if d != -1]))
    if unknown and (known == 0 or size % known):
        raise ValueError(
            f"Input to reshape is a SparseTensor with {size} dense values, but the requested "
            f"shape requires a multiple of {known}"
        )
    if unknown:
        wanted[unknown[0]] = size // known
    elif known != size:
        raise ValueError(
            f"Input to reshape is a tensor with {size} dense values, but the requested shape "
            f"has {known}"
        )
    return dims, tuple(wanted)


def _reshape_indices_kernel(xp, indices, shape, new_shape):
    dims, target = _reshape_target(xp, shape, new_shape)
    place = linear_index(xp, indices, dims)
    columns = []
    for d in reversed(target):
        columns.append(place % max(d, 1))
        place = place // max(d, 1)
    return xp.stack(columns[::-1], axis=1).reshape(-1, len(target)).astype(np.int64)


def _reshape_shape_kernel(xp, shape, new_shape):
    return xp.asarray(_reshape_target(xp, shape, new_shape)[1], dtype=np.int64)


def _concat_dims(xp, shapes, axis, expand) -> list[tuple[int, ...]]:
    dims = [dense_dims(xp, s, "sparse_concat") for s in shapes]
    for i, d in enumerate(dims[1:], start=1):
        if len(d) != len(dims[0]):
            raise ValueError(f"Ranks of all input tensors must match: expected {len(dims[0])} "
                             f"but got {len(d)} at position {i}")  # fmt: skip
        for k, (want, got) in enumerate(zip(dims[0], d, strict=True)):
            if k != axis % len(d) and want != got and not expand:
                raise ValueError(f"Input shapes must match: expected {want} for dimension {k} "
                                 f"but got {got} at position {i}")  # fmt: skip
    return dims


def _concat_shape(dims: list[tuple[int, ...]], axis: int) -> tuple[int, ...]:
    axis %= len(dims[0])
    out = [max(d[k] for d in dims) for k in range(len(dims[0]))]
    out[axis] = sum(d[axis] for d in dims)
    return tuple(out)


def _concat_indices_kernel(xp, *inputs, axis, expand):
    n = len(inputs) // 2
    dims = _concat_dims(xp, inputs[n:], axis, expand)
    parts, offset = [], 0
    for indices, d in zip(inputs[:n], dims, strict=True):
        shifted = xp.array(indices, copy=True).reshape(-1, len(d))
        shifted[:, axis % len(d)] += offset
        parts.append(shifted)
        offset += d[axis % len(d)]
    return xp.concatenate(parts)


def _concat_shape_kernel(xp, *shapes, axis, expand):
    return xp.asarray(_concat_shape(_concat_dims(xp, shapes, axis, expand), axis), dtype=np.int64)


def _slice_keep_kernel(xp, indices, start, size):
    start, size = xp.asarray(start).reshape(-1), xp.asarray(size).reshape(-1)
    inside = ((indices >= start) & (indices < start + size)).all(axis=1)
    return xp.nonzero(inside)[0].astype(np.int64)


def _split_range_kernel(xp, shape, *, axis, num_split, part):
    dims = dense_dims(xp, shape, "sparse_split")
    axis %= len(dims)
    base, extra = divmod(dims[axis], num_split)
    start, size = [0] * len(dims), list(dims)
    start[axis] = part * base + min(part, extra)
    size[axis] = base + (1 if part < extra else 0)
    return xp.asarray([start, size], dtype=np.int64)


def _fill_empty_rows(xp, indices, values, shape, default):
    """TensorFlow's ``SparseFillEmptyRows``: (indices, values, empty rows, where each input
    entry went)."""
    dims = dense_dims(xp, shape, "sparse_fill_empty_rows")
    rows = indices[:, 0]
    for bad, sign in ((rows >= dims[0], ">="), (rows < 0, "<")):
        if bool(bad.any()):
            i = int(xp.argmax(bad))
            bound = dims[0] if sign == ">=" else 0
            raise ValueError(f"indices({i}, 0) is invalid: {int(rows[i])} {sign} {bound}")
    empty = xp.bincount(rows, minlength=dims[0]) == 0
    new_rows = xp.nonzero(empty)[0]
    added = xp.zeros((new_rows.shape[0], len(dims)), dtype=indices.dtype)
    added[:, 0] = new_rows
    every = xp.concatenate([indices, added])
    order = xp.argsort(every[:, 0], kind="stable")  # the given entries first within a row
    filled = xp.full(new_rows.shape[0], xp.asarray(default), dtype=values.dtype)
    inverse = xp.empty(order.shape[0], dtype=np.int64)
    inverse[order] = xp.arange(order.shape[0])
    return every[order], xp.concatenate([values, filled])[order], empty, inverse[: rows.shape[0]]


def _reset_shape_kernel(xp, indices, shape, *new_shape):
    dims = dense_dims(xp, shape, "sparse_reset_shape")
    if not new_shape:  # the smallest shape holding the indices
        if not indices.shape[0]:
            return xp.zeros(len(dims), dtype=np.int64)
        return (indices.max(axis=0) + 1).astype(np.int64)
    wanted = dense_dims(xp, new_shape[0], "sparse_reset_shape")
    if len(wanted) != len(dims) or any(w < d for w, d in zip(wanted, dims, strict=True)):
        raise ValueError(_too_small(wanted, dims))
    return xp.asarray(wanted, dtype=np.int64)


def _too_small(wanted: Any, dims: Any) -> str:
    return (
        "Requested new_shape should have dimension sizes >= sp_input.shape.  Found new_shape "
        f"({list(wanted)}), sp_input.shape ({list(dims)})."
    )


_FILL_PARTS = {"indices": 0, "values": 1, "empty": 2, "reverse": 3}


def _fill_empty_rows_kernel(xp, indices, values, shape, default, *, part):
    return _fill_empty_rows(xp, indices, values, shape, default)[_FILL_PARTS[part]]


def _to_indicator_kernel(xp, indices, ids, shape, vocab_size):
    dims = (*dense_dims(xp, shape, "sparse_to_indicator")[:-1], int(vocab_size))
    place = xp.concatenate([indices[:, :-1], xp.asarray(ids).reshape(-1, 1)], axis=1)
    try:
        check_indices(xp, place.astype(np.int64), dims, ordered=False)
    except ValueError:
        raise ValueError(
            f"Indices are not valid (out of bounds).  Shape: [{','.join(map(str, dims))}]"
        ) from None
    out = xp.zeros(dims, dtype=bool)
    out[tuple(place[:, k] for k in range(len(dims)))] = True
    return out


def _softmax_groups(xp, indices, shape):
    dims = dense_dims(xp, shape, "sparse_softmax")
    if len(dims) < 2:
        raise ValueError(f"Input should have rank >= 2, but received shape: {list(dims)}")
    check_indices(xp, indices, dims, ordered=False)
    rows = linear_index(xp, indices[:, :-1], dims[:-1])
    _, group = xp.unique(rows, return_inverse=True)
    return group.reshape(-1), int(group.max()) + 1 if group.size else 0


def _group_sums(xp, group, count, values):
    return scatter_into(xp, xp.zeros(count, dtype=values.dtype), (group,), values)


def _softmax_kernel(xp, indices, values, shape):
    group, count = _softmax_groups(xp, indices, shape)
    top = xp.full(count, -np.inf, dtype=values.dtype)
    scatter_into(xp, top, (group,), values, "maximum")
    e = xp.exp(values - top[group])
    return e / _group_sums(xp, group, count, e)[group]


def _softmax_grad_kernel(xp, indices, shape, y, grad):
    group, count = _softmax_groups(xp, indices, shape)
    return (grad - _group_sums(xp, group, count, grad * y)[group]) * y
