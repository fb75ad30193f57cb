"""Sparse ids in models: ``sparse_segment_sum``/``mean``/``sqrt_n``,
``nn.embedding_lookup_sparse`` and ``string_split``, as TensorFlow 1 has them.

The segment reductions over rows picked by ``indices`` are a ``gather`` followed by the
segment reductions of :mod:`daskgraph.ops.segments`, so their gradients are those ops'.
``embedding_lookup_sparse`` looks up each distinct id once (:func:`~daskgraph.ops.embedding.
embedding_lookup`) and combines the rows of each example (``"sum"``, ``"mean"`` or
``"sqrtn"``, weighted or not), as TensorFlow 1's. ``string_split`` tokenizes strings into a
SparseTensor of ``bytes`` on the CPU (strings have no GPU kernels): one op splits, and one
``BundleGet`` per component reads its result (:mod:`daskgraph.ops.bundle`).

>>> import daskgraph as dg
>>> with dg.Graph().as_default():
...     tokens = string_split(["hello world", "a b"])
...     with dg.Session() as sess:
...         value = sess.run(tokens)
>>> value.values.tolist(), value.dense_shape.tolist()
([b'hello', b'world', b'a', b'b'], [2, 2])
"""

from __future__ import annotations

from typing import Any

from daskgraph.framework import dtypes
from daskgraph.framework.gradient_registry import no_gradient
from daskgraph.framework.graph import Tensor, get_default_graph, name_scope
from daskgraph.framework.op_registry import register
from daskgraph.kernels.sparse_lookup import _string_split_kernel
from daskgraph.ops.array import cast, convert_to_tensor, reshape
from daskgraph.ops.bundle import unbundle
from daskgraph.ops.embedding import embedding_lookup
from daskgraph.ops.fill_ops import ones_like
from daskgraph.ops.math import maximum, sqrt
from daskgraph.ops.math_functions import div_no_nan
from daskgraph.ops.segments import (
    segment_mean,
    segment_sum,
    unsorted_segment_mean,
    unsorted_segment_sqrt_n,
    unsorted_segment_sum,
)
from daskgraph.ops.slicing import gather
from daskgraph.ops.sorting import unique
from daskgraph.ops.sparse_tensor import SparseTensor, as_sparse

__all__ = [
    "embedding_lookup_sparse",
    "sparse_segment_mean",
    "sparse_segment_sqrt_n",
    "sparse_segment_sum",
    "string_split",
]

_COMBINERS = ("mean", "sqrtn", "sum")


register("StringSplit", _string_split_kernel, cpu={dtypes.string, dtypes.variant}, gpu=None)
no_gradient("StringSplit")


# -- segment reductions over picked rows ----------------------------------------------------------
def _broadcastable(counts: Tensor, rank: int | None, where: str) -> Tensor:
    """Per-segment numbers reshaped to divide rows of rank ``rank``."""
    if rank is None:
        raise ValueError(f"{where}: the rank of data must be known")
    return reshape(counts, [-1] + [1] * (rank - 1))


def _sparse_segment(
    kind: str, data: Any, indices: Any, segment_ids: Any, name: Any, num_segments: Any
) -> Tensor:
    where = f"sparse_segment_{kind}"
    with name_scope(name or f"SparseSegment{kind.title().replace('_', '')}"):
        data = convert_to_tensor(data)
        rows = gather(data, convert_to_tensor(indices))
        ids = convert_to_tensor(segment_ids)
        rank = None if data.shape is None else len(data.shape)
        if num_segments is not None:
            reduce = {"sum": unsorted_segment_sum, "mean": unsorted_segment_mean,
                      "sqrt_n": unsorted_segment_sqrt_n}[kind]  # fmt: skip
            return reduce(rows, ids, num_segments)
        if kind == "sum":
            return segment_sum(rows, ids)
        if kind == "mean":
            return segment_mean(rows, ids)
        counts = segment_sum(ones_like(ids, dtype=data.dtype), ids)
        return segment_sum(rows, ids) / _broadcastable(sqrt(maximum(counts, 1)), rank, where)


def sparse_segment_sum(
    data: Any, indices: Any, segment_ids: Any, name: str | None = None, num_segments: Any = None
) -> Tensor:
    """The sum of the rows ``data[indices]`` in each segment of ``segment_ids`` (sorted; or
    any order with ``num_segments`` rows), as ``tf.sparse.segment_sum``; empty segments 0.

    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     s = sparse_segment_sum([[1, 2], [3, 4], [5, 6]], [0, 2, 1], [0, 0, 2])
    ...     with dg.Session() as sess:
    ...         sess.run(s).tolist()
    [[6, 8], [0, 0], [3, 4]]
    """
    return _sparse_segment("sum", data, indices, segment_ids, name, num_segments)


def sparse_segment_mean(
    data: Any, indices: Any, segment_ids: Any, name: str | None = None, num_segments: Any = None
) -> Tensor:
    """The mean of the rows ``data[indices]`` in each segment (``tf.sparse.segment_mean``)."""
    return _sparse_segment("mean", data, indices, segment_ids, name, num_segments)


def sparse_segment_sqrt_n(
    data: Any, indices: Any, segment_ids: Any, name: str | None = None, num_segments: Any = None
) -> Tensor:
    """The sum of the rows ``data[indices]`` in each segment divided by the square root of
    the segment's size (``tf.sparse.segment_sqrt_n``)."""
    return _sparse_segment("sqrt_n", data, indices, segment_ids, name, num_segments)


# -- embeddings -----------------------------------------------------------------------------------
def _weighted(kind: str, rows: Tensor, weights: Tensor, segments: Tensor) -> Tensor:
    """TensorFlow 1's weighted combiners: the weighted sum per example, divided by the sum
    of the weights (``"mean"``) or the root of the sum of their squares (``"sqrtn"``)."""
    rank = None if rows.shape is None else len(rows.shape)
    weights = _broadcastable(cast(weights, rows.dtype), rank, "embedding_lookup_sparse")
    total = segment_sum(rows * weights, segments)
    if kind == "sum":
        return total
    if kind == "mean":
        return div_no_nan(total, segment_sum(weights, segments))
    return div_no_nan(total, sqrt(segment_sum(weights * weights, segments)))


def embedding_lookup_sparse(
    params: Any,
    sp_ids: Any,
    sp_weights: Any,
    partition_strategy: str = "mod",
    name: str | None = None,
    combiner: str | None = None,
    max_norm: Any = None,
    allow_fast_lookup: bool = False,
) -> Tensor:
    """One embedding per example (row of ``sp_ids``): the rows of ``params`` at its ids,
    combined by ``combiner`` (``"mean"``, the default, ``"sqrtn"`` or ``"sum"``) and weighted
    by the values of ``sp_weights`` (same indices) when given, as
    ``tf.nn.embedding_lookup_sparse``. ``params`` may be a list of partitions
    (``partition_strategy`` as :func:`~daskgraph.ops.embedding.embedding_lookup`'s).

    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     ids = SparseTensor([[0, 0], [0, 1], [1, 0]], dg.constant([0, 2, 1], dg.int64), [2, 2])
    ...     table = dg.constant([[1.0], [2.0], [3.0]])
    ...     rows = embedding_lookup_sparse(table, ids, None, combiner="sum")
    ...     with dg.Session() as sess:
    ...         sess.run(rows).tolist()
    [[4.0], [2.0]]
    """
    kind = combiner or "mean"
    if kind not in _COMBINERS:
        raise ValueError(f"combiner must be one of 'mean', 'sqrtn' or 'sum'; got {combiner!r}")
    ids = as_sparse(sp_ids, "embedding_lookup_sparse")
    weights = None if sp_weights is None else as_sparse(sp_weights, "embedding_lookup_sparse")
    with name_scope(name or "embedding_lookup_sparse"):
        segments = ids.indices[:, 0]
        distinct = unique(ids.values)
        rows = embedding_lookup(params, distinct.y, partition_strategy, max_norm=max_norm)
        if weights is None:
            op_kind = {"sqrtn": "sqrt_n"}.get(kind, kind)
            return _sparse_segment(op_kind, rows, distinct.idx, segments, None, None)
        return _weighted(kind, gather(rows, distinct.idx), weights.values, segments)


# -- string_split ---------------------------------------------------------------------------------
def string_split(
    source: Any, delimiter: Any = " ", skip_empty: bool = True, name: str | None = None
) -> SparseTensor:
    """The tokens of each string of the vector ``source``, split at any byte of
    ``delimiter`` (into bytes when it is empty), as a SparseTensor of ``bytes`` of dense shape
    ``[len(source), most tokens]`` (TF1's ``tf.string_split``); ``skip_empty`` drops empty
    tokens. Runs on the CPU."""
    text = convert_to_tensor(source, dtype=dtypes.string)
    if text.shape is not None and len(text.shape) != 1:
        raise ValueError(f"string_split: source must be a vector (rank 1); it is {text.shape}")
    sep = convert_to_tensor(delimiter, dtype=dtypes.string)
    op = get_default_graph().create_op(
        "StringSplit", [text, sep], dtype=dtypes.variant, shape=(),
        attrs={"skip_empty": bool(skip_empty)}, name=name or "StringSplit",
    )  # fmt: skip
    specs = [(dtypes.int64, (None, 2)), (dtypes.string, (None,)), (dtypes.int64, (2,))]
    indices, values, dense_shape = unbundle(op.outputs[0], specs, ["indices", "values", "shape"])
    result = SparseTensor(indices, values, dense_shape)
    result._shape = (None if text.shape is None else text.shape[0], None)
    return result
