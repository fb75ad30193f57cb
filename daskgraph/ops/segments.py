"""Segment reductions and counts: ``segment_sum``/``mean``/``max``/``min``/``prod`` over sorted
segment ids, ``unsorted_segment_sum``/``max``/``min``/``prod``/``mean``/``sqrt_n``,
``bincount`` and ``confusion_matrix``, as TensorFlow 1 has them.

A segment reduction folds the rows of ``data`` that share a segment id into one output row.
The sorted ops (ids of rank 1, non-decreasing) give ``ids[-1] + 1`` rows, empty segments 0;
the unsorted ones ``num_segments`` rows, ids of any rank matching ``data``'s leading
dimensions, negative ids dropped, empty segments 0 (sum), 1 (product) or the dtype's lowest
(maximum) and highest (minimum) value, as TensorFlow's. Ids out of range fail the run with
TensorFlow's message. The kernels scatter with ``ufunc.at`` on NumPy and ``cupyx.scatter_*``
on CuPy (dtypes CuPy cannot scatter, and products, go through the host).

>>> import daskgraph as dg
>>> with dg.Graph().as_default():
...     data = dg.constant([1.0, 2.0, 3.0, 4.0])
...     s = segment_sum(data, dg.constant([0, 0, 2, 2]))
...     m = unsorted_segment_max(data, dg.constant([0, 3, -1, 3]), 4)
...     with dg.Session() as sess:
...         sess.run(s).tolist(), sess.run(m).tolist()[:2]
([3.0, 0.0, 7.0], [1.0, -3.4028234663852886e+38])
"""

from __future__ import annotations

from typing import Any

import numpy as np

from daskgraph.framework import dtypes
from daskgraph.framework.gradient_registry import no_gradient, register_gradient
from daskgraph.framework.graph import Operation, Tensor, get_default_graph, name_scope
from daskgraph.framework.op_registry import register
from daskgraph.kernels.segments import (
    _bincount,
    _confusion,
    _segment_grad,
    _sorted_segments,
    _unsorted_segments,
)
from daskgraph.ops.array import cast, convert_to_tensor, reshape
from daskgraph.ops.fill_ops import ones_like
from daskgraph.ops.math import maximum, sqrt

__all__ = [
    "bincount",
    "confusion_matrix",
    "segment_max",
    "segment_mean",
    "segment_min",
    "segment_prod",
    "segment_sum",
    "unsorted_segment_max",
    "unsorted_segment_mean",
    "unsorted_segment_min",
    "unsorted_segment_prod",
    "unsorted_segment_sqrt_n",
    "unsorted_segment_sum",
]

_NUM = dtypes.NUMERIC
_INDEX = frozenset({dtypes.int32, dtypes.int64})
_GPU = frozenset({dtypes.float32, dtypes.float64}) | _INDEX


register("SegmentSum", _sorted_segments, cpu=_NUM, gpu=_GPU)
register("SegmentMean", _sorted_segments, cpu=_NUM, gpu=_GPU)
register("SegmentMax", _sorted_segments, cpu=_NUM, gpu=_GPU)
register("SegmentMin", _sorted_segments, cpu=_NUM, gpu=_GPU)
register("SegmentProd", _sorted_segments, cpu=_NUM, gpu=None)
register("UnsortedSegmentSum", _unsorted_segments, cpu=_NUM, gpu=_GPU)
register("UnsortedSegmentMax", _unsorted_segments, cpu=_NUM, gpu=_GPU)
register("UnsortedSegmentMin", _unsorted_segments, cpu=_NUM, gpu=_GPU)
register("UnsortedSegmentProd", _unsorted_segments, cpu=_NUM, gpu=None)
register("SegmentReductionGrad", _segment_grad, cpu=dtypes.FLOATING | _INDEX, gpu=_GPU)
register("Bincount", _bincount, cpu=_NUM, gpu=_NUM)
register("ConfusionMatrix", _confusion, cpu=_NUM, gpu=_NUM)


# -- builders -------------------------------------------------------------------------------------
def _ids(segment_ids: Any, where: str) -> Tensor:
    ids = convert_to_tensor(segment_ids)
    if ids.dtype not in _INDEX:
        raise TypeError(f"{where}: segment_ids must be int32 or int64; {ids.name!r} is {ids.dtype}")
    return ids


def _const(t: Tensor) -> np.ndarray | None:
    return np.asarray(t.op.attrs["value"]) if t.op.type == "Const" else None


def _numeric(data: Any, where: str) -> Tensor:
    data = convert_to_tensor(data)
    if not data.dtype.is_numeric:
        raise TypeError(f"{where}: expects numeric data; {data.name!r} is {data.dtype.name}")
    return data


def _sorted(op_type: str, data: Any, segment_ids: Any, name: str | None) -> Tensor:
    where = "segment_" + op_type[len("Segment") :].lower()
    data, ids = _numeric(data, where), _ids(segment_ids, where)
    if ids.shape is not None and len(ids.shape) != 1:
        raise ValueError(f"{where}: segment_ids must be a vector; {ids.name!r} is {ids.shape}")
    known = _const(ids)
    rows = (int(known[-1]) + 1 if known.size else 0) if known is not None else None
    shape = None if data.shape is None else (rows, *data.shape[1:])
    kind = op_type[len("Segment") :].lower()
    op = get_default_graph().create_op(
        op_type, [data, ids], dtype=data.dtype, shape=shape, attrs={"kind": kind}, name=name
    )
    return op.outputs[0]


def segment_sum(data: Any, segment_ids: Any, name: str | None = None) -> Tensor:
    """The sum of the rows of ``data`` in each segment; ``segment_ids`` sorted, one per row
    (``tf.segment_sum``; empty segments give 0)."""
    return _sorted("SegmentSum", data, segment_ids, name)


def segment_mean(data: Any, segment_ids: Any, name: str | None = None) -> Tensor:
    """The mean of the rows of ``data`` in each segment (``tf.segment_mean``; empty: 0)."""
    return _sorted("SegmentMean", data, segment_ids, name)


def segment_max(data: Any, segment_ids: Any, name: str | None = None) -> Tensor:
    """The maximum of the rows of ``data`` in each segment (``tf.segment_max``; empty: 0;
    the gradient is shared among the rows equal to the maximum)."""
    return _sorted("SegmentMax", data, segment_ids, name)


def segment_min(data: Any, segment_ids: Any, name: str | None = None) -> Tensor:
    """The minimum of the rows of ``data`` in each segment (``tf.segment_min``; empty: 0)."""
    return _sorted("SegmentMin", data, segment_ids, name)


def segment_prod(data: Any, segment_ids: Any, name: str | None = None) -> Tensor:
    """The product of the rows of ``data`` in each segment (``tf.segment_prod``; empty: 1;
    no GPU kernel)."""
    return _sorted("SegmentProd", data, segment_ids, name)


def _num_segments(num_segments: Any, where: str) -> tuple[Tensor, int | None]:
    num = convert_to_tensor(num_segments)
    if num.dtype not in _INDEX or num.shape not in (None, ()):
        raise TypeError(f"{where}: num_segments must be a scalar int32 or int64; got {num!r}")
    known = _const(num)
    return num, None if known is None else int(known)


def _unsorted(op_type: str, data: Any, segment_ids: Any, num_segments: Any, name: Any) -> Tensor:
    kind = op_type[len("UnsortedSegment") :].lower()
    where = f"unsorted_segment_{kind}"
    data, ids = _numeric(data, where), _ids(segment_ids, where)
    num, rows = _num_segments(num_segments, where)
    shape = None
    if data.shape is not None and ids.shape is not None:
        lead = data.shape[: len(ids.shape)]
        if any(
            a is not None and b is not None and a != b for a, b in zip(lead, ids.shape, strict=True)
        ):
            raise ValueError(
                f"{where}: the shape of data, {data.shape}, does not start with the shape of "
                f"segment_ids, {ids.shape}"
            )
        shape = (rows, *data.shape[len(ids.shape) :])
    op = get_default_graph().create_op(
        op_type, [data, ids, num], dtype=data.dtype, shape=shape, attrs={"kind": kind}, name=name
    )
    return op.outputs[0]


def unsorted_segment_sum(
    data: Any, segment_ids: Any, num_segments: Any, name: str | None = None
) -> Tensor:
    """``num_segments`` rows, each the sum of the entries of ``data`` whose segment id is its
    index (``tf.unsorted_segment_sum``; ``segment_ids`` of any order and of the shape of
    ``data``'s leading dimensions; negative ids are dropped).

    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     s = unsorted_segment_sum(dg.constant([[1, 2], [3, 4], [5, 6]]), [1, 0, 1], 2)
    ...     with dg.Session() as sess:
    ...         sess.run(s).tolist()
    [[3, 4], [6, 8]]
    """
    return _unsorted("UnsortedSegmentSum", data, segment_ids, num_segments, name)


def unsorted_segment_max(
    data: Any, segment_ids: Any, num_segments: Any, name: str | None = None
) -> Tensor:
    """The maximum per segment (``tf.unsorted_segment_max``; empty: the dtype's lowest)."""
    return _unsorted("UnsortedSegmentMax", data, segment_ids, num_segments, name)


def unsorted_segment_min(
    data: Any, segment_ids: Any, num_segments: Any, name: str | None = None
) -> Tensor:
    """The minimum per segment (``tf.unsorted_segment_min``; empty: the dtype's highest)."""
    return _unsorted("UnsortedSegmentMin", data, segment_ids, num_segments, name)


def unsorted_segment_prod(
    data: Any, segment_ids: Any, num_segments: Any, name: str | None = None
) -> Tensor:
    """The product per segment (``tf.unsorted_segment_prod``; empty: 1; no GPU kernel)."""
    return _unsorted("UnsortedSegmentProd", data, segment_ids, num_segments, name)


def _counts(data: Tensor, segment_ids: Tensor, num_segments: Any) -> Tensor:
    """How many entries each segment has, shaped to broadcast against the segment rows."""
    ones = ones_like(segment_ids, dtype=data.dtype)
    counts = maximum(unsorted_segment_sum(ones, segment_ids, num_segments), 1)
    if data.shape is None or segment_ids.shape is None:
        raise ValueError("unsorted_segment_mean/sqrt_n need the ranks of data and segment_ids")
    return reshape(counts, [-1] + [1] * (len(data.shape) - len(segment_ids.shape)))


def unsorted_segment_mean(
    data: Any, segment_ids: Any, num_segments: Any, name: str | None = None
) -> Tensor:
    """The mean per segment (``tf.unsorted_segment_mean``; empty: 0), floating point."""
    with name_scope(name or "UnsortedSegmentMean"):
        data, ids = convert_to_tensor(data), convert_to_tensor(segment_ids)
        total = unsorted_segment_sum(data, ids, num_segments)
        return total / _counts(data, ids, num_segments)


def unsorted_segment_sqrt_n(
    data: Any, segment_ids: Any, num_segments: Any, name: str | None = None
) -> Tensor:
    """The sum per segment divided by the square root of the segment's size
    (``tf.unsorted_segment_sqrt_n``; empty: 0), floating point."""
    with name_scope(name or "UnsortedSegmentSqrtN"):
        data, ids = convert_to_tensor(data), convert_to_tensor(segment_ids)
        total = unsorted_segment_sum(data, ids, num_segments)
        return total / sqrt(_counts(data, ids, num_segments))


def bincount(
    arr: Any,
    weights: Any = None,
    minlength: int | None = None,
    maxlength: int | None = None,
    dtype: Any = dtypes.int32,
) -> Tensor:
    """How often each value ``0, 1, ...`` occurs in the non-negative int32 tensor ``arr``
    (the sum of ``weights`` where given), at least ``minlength`` and at most ``maxlength``
    counts, as ``tf.bincount``. Not differentiable.

    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     b = bincount(dg.constant([1, 1, 4]), minlength=2)
    ...     w = bincount(dg.constant([1, 1, 4]), weights=dg.constant([0.5, 1.0, 2.0]))
    ...     with dg.Session() as sess:
    ...         sess.run(b).tolist(), sess.run(w).tolist()
    ([0, 2, 0, 0, 1], [0.0, 1.5, 0.0, 0.0, 2.0])
    """
    with name_scope("bincount"):
        arr = convert_to_tensor(arr)
        if arr.dtype is not dtypes.int32:
            raise TypeError(f"bincount: arr must be int32; {arr.name!r} is {arr.dtype.name}")
        inputs = [arr]
        out = dtypes.as_dtype(dtype)
        if weights is not None:
            w = convert_to_tensor(weights)
            inputs.append(w)
            out = w.dtype
        attrs = {
            "minlength": None if minlength is None else int(minlength),
            "maxlength": None if maxlength is None else int(maxlength),
            "dtype": out.numpy,
        }
        op = get_default_graph().create_op(
            "Bincount", inputs, dtype=out, shape=(None,), attrs=attrs
        )
        return op.outputs[0]


def confusion_matrix(
    labels: Any,
    predictions: Any,
    num_classes: int | None = None,
    dtype: Any = dtypes.int32,
    name: str | None = None,
    weights: Any = None,
) -> Tensor:
    """The ``num_classes`` x ``num_classes`` matrix counting (or summing ``weights``) each
    pair (label, prediction), rows labels and columns predictions, as
    ``tf.confusion_matrix``; ``num_classes`` defaults to the largest value plus one.

    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     m = confusion_matrix([0, 1, 2, 1], [0, 2, 2, 1])
    ...     with dg.Session() as sess:
    ...         sess.run(m).tolist()
    [[1, 0, 0], [0, 1, 1], [0, 0, 1]]
    """
    with name_scope(name or "confusion_matrix"):
        labels = convert_to_tensor(labels)
        predictions = convert_to_tensor(predictions)
        for t in (labels, predictions):
            if not t.dtype.is_integer:
                raise TypeError(f"confusion_matrix: {t.name!r} must be integers; it is {t.dtype}")
        inputs = [labels, predictions]
        out = dtypes.as_dtype(dtype)
        if weights is not None:
            inputs.append(cast(convert_to_tensor(weights), out))
        n = None if num_classes is None else int(num_classes)
        attrs = {"num_classes": n, "dtype": out.numpy}
        op = get_default_graph().create_op(
            "ConfusionMatrix", inputs, dtype=out, shape=(n, n), attrs=attrs
        )
        return op.outputs[0]


# -- gradients ------------------------------------------------------------------------------------
def _reduction_grad(op: Operation, grad: Tensor) -> Tensor:
    data, ids = op.inputs[0], op.inputs[1]
    attrs = {"kind": op.attrs["kind"]}
    return get_default_graph().create_op(
        "SegmentReductionGrad", [data, ids, op.outputs[0], grad], dtype=data.dtype,
        shape=data.shape, attrs=attrs,
    ).outputs[0]  # fmt: skip


@register_gradient("SegmentSum")
@register_gradient("SegmentMean")
@register_gradient("SegmentMax")
@register_gradient("SegmentMin")
@register_gradient("SegmentProd")
def _segment_reduction_grad(op: Operation, grad: Tensor) -> list[Tensor | None]:
    return [_reduction_grad(op, grad), None]


@register_gradient("UnsortedSegmentSum")
@register_gradient("UnsortedSegmentMax")
@register_gradient("UnsortedSegmentMin")
@register_gradient("UnsortedSegmentProd")
def _unsorted_segment_reduction_grad(op: Operation, grad: Tensor) -> list[Tensor | None]:
    return [_reduction_grad(op, grad), None, None]


for _type in ("SegmentReductionGrad", "Bincount", "ConfusionMatrix"):
    no_gradient(_type)
