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
from daskgraph.kernels.sorting import (
    _argsort_kernel,
    _partition_grad_kernel,
    _partition_kernel,
    _permute_kernel,
    _searchsorted_kernel,
    _sort_kernel,
    _stitch_kernel,
    _unique_kernel,
)
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
