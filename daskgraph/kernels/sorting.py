"""Sorting kernels: ``sort``, ``argsort``, ``searchsorted``, ``unique``, partitions, stitches.

The kernels of :mod:`daskgraph.ops.sorting`'s ops, each ``kernel(xp, *inputs, **attrs)``.
"""

from __future__ import annotations

from typing import Any

import numpy as np


# -- kernels --------------------------------------------------------------------------------------
def _stable_argsort(xp: Any, x: Any, axis: int, descending: bool) -> Any:
    """The stable sorting permutation along ``axis``; descending keeps ties in order too."""

    def ascending(v):  # CuPy's sort is always stable
        return np.argsort(v, axis=axis, kind="stable") if xp is np else xp.argsort(v, axis=axis)

    if not descending:
        return ascending(x)
    n = x.shape[axis]
    return (n - 1) - xp.flip(ascending(xp.flip(x, axis=axis)), axis=axis)


def _sort_kernel(xp, x, *, axis, descending):
    out = xp.sort(x, axis=axis)
    return xp.ascontiguousarray(xp.flip(out, axis=axis)) if descending else out


def _argsort_kernel(xp, x, *, axis, descending, out_type):
    return _stable_argsort(xp, x, axis, descending).astype(out_type)


def _permute_kernel(xp, values, x, *, axis, descending, inverse):
    """``values`` moved as sorting ``x`` moves its entries (or back, with ``inverse``)."""
    perm = _stable_argsort(xp, x, axis, descending)
    if inverse:
        perm = _stable_argsort(xp, perm, axis, False)
    return xp.take_along_axis(values, perm, axis=axis)


def _unique_kernel(xp, x, *, part, out_type):
    values, first, inverse, counts = xp.unique(
        x, return_index=True, return_inverse=True, return_counts=True
    )
    order = xp.argsort(first)  # TensorFlow lists them in order of first appearance
    if part == "y":
        return values[order]
    if part == "count":
        return counts[order].astype(out_type)
    rank = xp.empty_like(order)
    rank[order] = xp.arange(order.size)
    return rank[inverse.reshape(-1)].astype(out_type)


def _check_partitions(xp: Any, partitions: Any, count: int) -> None:
    bad = xp.nonzero(((partitions < 0) | (partitions >= count)).reshape(-1))[0]
    if bad.size:
        i = int(bad[0])
        value = int(partitions.reshape(-1)[i])
        raise ValueError(f"partitions[{i}] = {value} is not in [0, {count})")


def _partition_kernel(xp, data, partitions, *, part, count):
    partitions = xp.asarray(partitions)
    _check_partitions(xp, partitions, count)
    return data[partitions == part]


def _partition_grad_kernel(xp, grad, data, partitions, *, part, count):
    out = xp.zeros(data.shape, dtype=grad.dtype)
    out[xp.asarray(partitions) == part] = grad
    return out


def _stitch_kernel(xp, *inputs):
    half = len(inputs) // 2
    indices, data = inputs[:half], inputs[half:]
    rows = 1 + max((int(i.max()) for i in indices if i.size), default=-1)
    tail = tuple(data[0].shape[indices[0].ndim :])
    out = xp.zeros((rows, *tail), dtype=data[0].dtype)
    for index, values in zip(indices, data, strict=True):
        if tuple(values.shape) != tuple(index.shape) + tail:
            raise ValueError(
                f"dynamic_stitch: data of shape {tuple(values.shape)} does not match indices of "
                f"shape {tuple(index.shape)} (each entry of shape {tail})"
            )
        out[xp.asarray(index).reshape(-1)] = values.reshape((-1, *tail))
    return out


def _searchsorted_kernel(xp, sequence, values, *, side, out_type):
    if sequence.shape[:-1] != values.shape[:-1]:
        raise ValueError(
            f"searchsorted: the leading dimensions of sorted_sequence {tuple(sequence.shape)} and "
            f"values {tuple(values.shape)} must match"
        )
    rows = sequence.reshape(-1, sequence.shape[-1])
    wanted = values.reshape(-1, values.shape[-1])
    found = xp.zeros(wanted.shape, dtype=np.int64)
    for i in range(rows.shape[0]):  # one search per row (the innermost axis), as TensorFlow
        found[i] = xp.searchsorted(rows[i], wanted[i], side=side)
    return found.reshape(values.shape).astype(out_type)
