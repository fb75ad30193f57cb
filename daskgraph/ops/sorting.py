"""Sorting and partitioning ops: ``sort``, ``argsort``, ``searchsorted``, ``unique`` (and
``unique_with_counts``), ``dynamic_partition`` and ``dynamic_stitch``, with gradients where
TensorFlow has them.

Sorts are stable, as TensorFlow's (whose ``argsort`` keeps equal values in their order in both
directions). TensorFlow's multi-output ``Unique`` and ``DynamicPartition`` are one op per
result here, named ``<name>/output_<i>``, each recomputing what it needs.

>>> import daskgraph as dg
>>> with dg.Graph().as_default():
...     y, idx = unique(dg.constant([4, 1, 4, 2, 1]))
...     with dg.Session() as sess:
...         print(sess.run(y), sess.run(idx))
[4 1 2] [0 1 0 2 1]
"""

from __future__ import annotations

from collections import namedtuple
from collections.abc import Sequence
from typing import Any

import numpy as np

from daskgraph.framework import dtypes
from daskgraph.framework.gradient_registry import no_gradient, register_gradient
from daskgraph.framework.graph import Operation, Tensor, new_tensor
from daskgraph.framework.op_registry import CPU_ALL, GPU_NUMERIC, register
from daskgraph.ops.array import convert_to_tensor
from daskgraph.ops.indexing import INDEX_DTYPES
from daskgraph.ops.linalg import split_outputs
from daskgraph.ops.slicing import gather

__all__ = [
    "argsort",
    "dynamic_partition",
    "dynamic_stitch",
    "searchsorted",
    "sort",
    "unique",
    "unique_with_counts",
]

Unique = namedtuple("Unique", ["y", "idx"])
UniqueWithCounts = namedtuple("UniqueWithCounts", ["y", "idx", "count"])
_NO_STRINGS = CPU_ALL - {dtypes.string}


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


register("Sort", _sort_kernel, cpu=_NO_STRINGS, gpu=GPU_NUMERIC)
register("ArgSort", _argsort_kernel, cpu=_NO_STRINGS, gpu=GPU_NUMERIC)
register("PermuteLikeSort", _permute_kernel, cpu=_NO_STRINGS, gpu=GPU_NUMERIC)
register("Unique", _unique_kernel, cpu=_NO_STRINGS, gpu=GPU_NUMERIC)
register("UniqueWithCounts", _unique_kernel, cpu=_NO_STRINGS, gpu=GPU_NUMERIC)
register("DynamicPartition", _partition_kernel, cpu=CPU_ALL, gpu=GPU_NUMERIC)
register("DynamicPartitionGrad", _partition_grad_kernel, cpu=_NO_STRINGS, gpu=GPU_NUMERIC)
register("DynamicStitch", _stitch_kernel, cpu=CPU_ALL, gpu=GPU_NUMERIC)
register("SearchSorted", _searchsorted_kernel, cpu=_NO_STRINGS, gpu=GPU_NUMERIC)


# -- helpers --------------------------------------------------------------------------------------
def _direction(direction: str) -> bool:
    """Whether ``direction`` is descending."""
    if direction not in ("ASCENDING", "DESCENDING"):
        raise ValueError(f"Unknown direction: {direction!r}; use 'ASCENDING' or 'DESCENDING'")
    return direction == "DESCENDING"


def _sort_axis(x: Tensor, axis: int, where: str) -> int:
    if x.shape is None:
        if axis < 0:
            raise ValueError(f"{where}: a negative axis needs the input's rank known")
        return int(axis)
    rank = len(x.shape)
    if not -rank <= axis < rank:
        raise ValueError(f"{where}: axis {axis} is out of range for rank {rank}")
    return int(axis) % rank


def _index_dtype(out_idx: Any, where: str) -> dtypes.DType:
    out = dtypes.as_dtype(out_idx)
    if out not in INDEX_DTYPES:
        raise TypeError(f"{where}: out_idx must be int32 or int64; got {out.name}")
    return out


def _vector(x: Any, where: str) -> Tensor:
    t = convert_to_tensor(x)
    if t.shape is not None and len(t.shape) != 1:
        raise ValueError(f"{where}: x must be a vector (rank 1); {t.name!r} has shape {t.shape}")
    return t


# -- builders -------------------------------------------------------------------------------------
def sort(
    values: Any, axis: int = -1, direction: str = "ASCENDING", name: str | None = None
) -> Tensor:
    """``values`` sorted along ``axis``, ascending or ``"DESCENDING"``.

    Examples
    --------
    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     y = sort(dg.constant([[3, 1, 2], [0, 5, 4]]), direction="DESCENDING")
    ...     with dg.Session() as sess:
    ...         print(sess.run(y).tolist())
    [[3, 2, 1], [5, 4, 0]]
    """
    x = convert_to_tensor(values)
    axis = _sort_axis(x, axis, "sort")
    return new_tensor("Sort", [x], x.dtype, x.shape, name or "sort", axis=axis,
                      descending=_direction(direction))  # fmt: skip


def argsort(
    values: Any, axis: int = -1, direction: str = "ASCENDING", stable: bool = False,
    name: str | None = None,
) -> Tensor:  # fmt: skip
    """The int32 indices that sort ``values`` along ``axis`` (always stable, as TensorFlow's:
    equal values keep their order in either direction).

    Examples
    --------
    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     i = argsort(dg.constant([3, 1, 2, 1]), direction="DESCENDING")
    ...     with dg.Session() as sess:
    ...         print(sess.run(i))
    [0 2 1 3]
    """
    x = convert_to_tensor(values)
    axis = _sort_axis(x, axis, "argsort")
    return new_tensor("ArgSort", [x], dtypes.int32, x.shape, name or "argsort", axis=axis,
                      descending=_direction(direction), out_type=np.int32)  # fmt: skip


def unique(x: Any, out_idx: Any = dtypes.int32, name: str | None = None) -> Unique:
    """The distinct values of the vector ``x`` in order of first appearance, and for each entry
    of ``x`` the position of its value among them: ``Unique(y, idx)``."""
    t = _vector(x, "unique")
    out = _index_dtype(out_idx, "unique")
    parts = [("y", t.dtype, (None,)), ("idx", out, t.shape)]
    return Unique(*split_outputs("Unique", [t], parts, name, out_type=out.numpy))


def unique_with_counts(
    x: Any, out_idx: Any = dtypes.int32, name: str | None = None
) -> UniqueWithCounts:
    """:func:`unique`, with how many times each value appears: ``UniqueWithCounts(y, idx,
    count)``.

    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     found = unique_with_counts(dg.constant([4, 1, 4, 2, 1]))
    ...     with dg.Session() as sess:
    ...         print(sess.run(found.count))
    [2 2 1]
    """
    t = _vector(x, "unique_with_counts")
    out = _index_dtype(out_idx, "unique_with_counts")
    parts = [("y", t.dtype, (None,)), ("idx", out, t.shape), ("count", out, (None,))]
    found = split_outputs("UniqueWithCounts", [t], parts, name, out_type=out.numpy)
    return UniqueWithCounts(*found)


def dynamic_partition(
    data: Any, partitions: Any, num_partitions: int, name: str | None = None
) -> list[Tensor]:
    """``data`` split into ``num_partitions`` tensors: output ``i`` holds the entries whose
    ``partitions`` value (int32, of a leading part of ``data``'s shape) is ``i``, in order.

    Examples
    --------
    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     parts = dynamic_partition(dg.constant([10, 20, 30, 40]), [1, 0, 1, 1], 2)
    ...     with dg.Session() as sess:
    ...         print([p.tolist() for p in sess.run(parts)])
    [[20], [10, 30, 40]]
    """
    x = convert_to_tensor(data)
    p = convert_to_tensor(partitions, dtype=None if isinstance(partitions, Tensor) else
                          dtypes.int32)  # fmt: skip
    if p.dtype is not dtypes.int32:
        raise TypeError(f"dynamic_partition: partitions must be int32; got {p.dtype.name}")
    count = int(num_partitions)
    if count < 1:
        raise ValueError(f"dynamic_partition: num_partitions must be >= 1; got {count}")
    shape = None
    if x.shape is not None and p.shape is not None:
        if len(p.shape) > len(x.shape):
            raise ValueError(f"dynamic_partition: partitions of shape {p.shape} do not fit data "
                             f"of shape {x.shape}")  # fmt: skip
        shape = (None, *x.shape[len(p.shape) :])
    parts = [(i, x.dtype, shape) for i in range(count)]
    return split_outputs("DynamicPartition", [x, p], parts, name, count=count)


def dynamic_stitch(indices: Sequence[Any], data: Sequence[Any], name: str | None = None) -> Tensor:
    """Interleave the ``data`` tensors into one: ``merged[indices[m][i]] = data[m][i]``, later
    entries winning where indices repeat.

    Examples
    --------
    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     y = dynamic_stitch([[0, 2], [1, 2]], [[1.0, 2.0], [3.0, 4.0]])
    ...     with dg.Session() as sess:
    ...         print(y.shape, sess.run(y))
    (3,) [1. 3. 4.]
    """
    if not isinstance(indices, (list, tuple)) or len(indices) != len(data) or not indices:
        raise ValueError("dynamic_stitch: give as many index tensors as data tensors (>= 1)")
    index_tensors = [convert_to_tensor(i, dtype=None if isinstance(i, Tensor) else dtypes.int32)
                     for i in indices]  # fmt: skip
    for t in index_tensors:
        if t.dtype is not dtypes.int32:
            raise TypeError(f"dynamic_stitch: indices must be int32; {t.name!r} is "
                            f"{t.dtype.name}")  # fmt: skip
    first = convert_to_tensor(data[0]) if _is_tensor(data[0]) else None
    values = [convert_to_tensor(d, dtype=None if _is_tensor(d) or first is None else first.dtype)
              for d in data]  # fmt: skip
    for v in values[1:]:
        if v.dtype != values[0].dtype:
            raise TypeError(f"dynamic_stitch: all data must have one dtype; got "
                            f"{values[0].dtype.name} and {v.dtype.name}")  # fmt: skip
    shape = None
    i0, v0 = index_tensors[0], values[0]
    if i0.shape is not None and v0.shape is not None:
        rows = None
        if all(t.op.type == "Const" for t in index_tensors):
            rows = 1 + max((int(np.max(t.op.attrs["value"])) for t in index_tensors
                            if np.size(t.op.attrs["value"])), default=-1)  # fmt: skip
        shape = (rows, *v0.shape[len(i0.shape) :])
    return new_tensor("DynamicStitch", [*index_tensors, *values], values[0].dtype, shape, name)


def searchsorted(
    sorted_sequence: Any, values: Any, side: str = "left", out_type: Any = dtypes.int32,
    name: str | None = None,
) -> Tensor:  # fmt: skip
    """Where each of ``values`` would go in ``sorted_sequence`` to keep it sorted, searching
    the innermost axis row by row (leading axes match), as ``numpy.searchsorted``.

    Examples
    --------
    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     i = searchsorted(dg.constant([[1, 3, 5], [2, 4, 6]]), dg.constant([[3, 6], [1, 7]]))
    ...     with dg.Session() as sess:
    ...         print(sess.run(i).tolist())
    [[1, 3], [0, 3]]
    """
    if side not in ("left", "right"):
        raise ValueError(f"searchsorted: side must be 'left' or 'right'; got {side!r}")
    seq = convert_to_tensor(sorted_sequence)
    vals = convert_to_tensor(values, dtype=None if _is_tensor(values) else seq.dtype)
    if vals.dtype != seq.dtype:
        raise TypeError(f"searchsorted: values must be {seq.dtype.name}; got {vals.dtype.name}")
    for t in (seq, vals):
        if t.shape is not None and not t.shape:
            raise ValueError(f"searchsorted: {t.name!r} must have rank >= 1")
    out = _index_dtype(out_type, "searchsorted")
    return new_tensor("SearchSorted", [seq, vals], out, vals.shape, name or "SearchSorted",
                      side=side, out_type=out.numpy)  # fmt: skip


def _is_tensor(value: Any) -> bool:
    return isinstance(value, Tensor) or hasattr(value, "_as_tensor")


# -- gradients ------------------------------------------------------------------------------------
@register_gradient("Sort")
def _sort_grad(op: Operation, grad: Tensor) -> list[Tensor]:
    x = op.inputs[0]
    return [new_tensor("PermuteLikeSort", [grad, x], grad.dtype, x.shape, "SortGrad",
                       inverse=True, **op.attrs)]  # fmt: skip


@register_gradient("PermuteLikeSort")
def _permute_grad(op: Operation, grad: Tensor) -> list[Tensor | None]:
    attrs = {**op.attrs, "inverse": not op.attrs["inverse"]}
    x = op.inputs[1]
    return [new_tensor("PermuteLikeSort", [grad, x], grad.dtype, x.shape, "PermuteGrad",
                       **attrs), None]  # fmt: skip


@register_gradient("DynamicPartition")
def _partition_grad(op: Operation, grad: Tensor) -> list[Tensor | None]:
    x = op.inputs[0]
    out = new_tensor("DynamicPartitionGrad", [grad, *op.inputs], grad.dtype, x.shape,
                     "DynamicPartitionGrad", **op.attrs)  # fmt: skip
    return [out, None]


@register_gradient("DynamicPartitionGrad")
def _partition_grad_grad(op: Operation, grad: Tensor) -> list[Tensor | None]:
    parts = dynamic_partition(grad, op.inputs[2], op.attrs["count"])
    return [parts[op.attrs["part"]], None, None]


@register_gradient("DynamicStitch")
def _stitch_grad(op: Operation, grad: Tensor) -> list[Tensor | None]:
    """Each data tensor gets the gradient at its indices, as in TensorFlow (also where a later
    one overwrote it)."""
    half = len(op.inputs) // 2
    return [None] * half + [gather(grad, i) for i in op.inputs[:half]]


for _type in ("ArgSort", "Unique", "UniqueWithCounts", "SearchSorted"):
    no_gradient(_type)
