"""``tf.nn.embedding_lookup``: rows of an embedding table, or of a table split in partitions.

One table is a ``gather``. A list of partitions is looked up as TensorFlow 1 assigns ids to
them: ``"mod"`` puts id ``i`` in partition ``i % n`` at row ``i // n``; ``"div"`` gives each
partition a contiguous range (the first ``total % n`` partitions one id more). Here each id's
(partition, row) becomes a row of the partitions concatenated, and one ``gather`` reads it,
so the gradient (dense, one per partition) comes from ``gather``'s and ``concat``'s. An id
whose row is not in its partition fails the run, as in TensorFlow.

>>> import daskgraph as dg
>>> with dg.Graph().as_default():
...     parts = [dg.constant([[0.0], [2.0], [4.0]]), dg.constant([[1.0], [3.0]])]
...     rows = embedding_lookup(parts, [3, 0, 4])
...     with dg.Session() as sess:
...         sess.run(rows).ravel().tolist()
[3.0, 0.0, 4.0]
"""

from __future__ import annotations

from typing import Any

from daskgraph.framework import dtypes
from daskgraph.framework.graph import Tensor, name_scope
from daskgraph.ops.array import cast, convert_to_tensor
from daskgraph.ops.elementwise import floordiv, floormod
from daskgraph.ops.fill_ops import ones_like
from daskgraph.ops.logic import greater, less, where
from daskgraph.ops.math import add_n, maximum, multiply, reduce_sum, sqrt, square
from daskgraph.ops.shape_ops import concat, shape, stack
from daskgraph.ops.slicing import gather

__all__ = ["embedding_lookup"]

_INDEX = frozenset({dtypes.int32, dtypes.int64})


def _rows(params: list[Tensor], dtype: dtypes.DType) -> list[Any]:
    """Each partition's number of rows: ints when all are known while building, else
    tensors of ``dtype``."""
    known = [None if p.shape is None or not p.shape else p.shape[0] for p in params]
    if None not in known:
        return [int(k) for k in known]
    return [cast(shape(p)[0], dtype) for p in params]


def _assign(ids: Tensor, rows: list[Any], strategy: str) -> tuple[Tensor, Tensor]:
    """``(partition, row in partition)`` of each id, as TensorFlow 1 assigns them."""
    n = len(rows)
    if strategy == "mod":
        return floormod(ids, n), floordiv(ids, n)
    if all(isinstance(r, int) for r in rows):
        per, extras = divmod(sum(rows), n)
    else:
        total = add_n(rows)
        per, extras = floordiv(total, n), floormod(total, n)
    partition = maximum(floordiv(ids, per + 1), floordiv(ids - extras, per))
    first = cast(less(partition, extras), ids.dtype)
    row = first * floormod(ids, per + 1) + (1 - first) * floormod(ids - extras, per)
    return partition, row


def _positions(ids: Tensor, rows: list[Any], strategy: str) -> Tensor:
    """Each id's row in the partitions concatenated; -1 (refused by ``gather``) for a row
    past its partition's end."""
    partition, row = _assign(ids, rows, strategy)
    starts, sizes = [0], []
    for r in rows:
        sizes.append(r)
        starts.append(starts[-1] + r)
    starts_t = stack([convert_to_tensor(s, dtype=ids.dtype) for s in starts[:-1]])
    sizes_t = stack([convert_to_tensor(s, dtype=ids.dtype) for s in sizes])
    inside = less(row, gather(sizes_t, partition))
    return where(inside, gather(starts_t, partition) + row, -ones_like(ids))


def _clip_rows(rows: Tensor, max_norm: Any, id_rank: int | None) -> Tensor:
    """Each embedding (the axes after the ids') scaled down to L2 norm ``max_norm`` where it
    is longer, as TensorFlow's ``clip_by_norm``."""
    rank = None if rows.shape is None else len(rows.shape)
    if rank is None or id_rank is None:
        raise ValueError("embedding_lookup: max_norm needs the ranks of params and ids")
    axes = list(range(id_rank, rank))
    max_norm = convert_to_tensor(max_norm, dtype=rows.dtype)
    l2sum = reduce_sum(square(rows), axes, keepdims=True)
    positive = greater(l2sum, 0.0)
    norm = where(positive, sqrt(where(positive, l2sum, ones_like(l2sum))), l2sum)
    return multiply(rows, max_norm) / maximum(norm, max_norm)


def embedding_lookup(
    params: Any,
    ids: Any,
    partition_strategy: str = "mod",
    name: str | None = None,
    validate_indices: bool = True,
    max_norm: Any = None,
) -> Tensor:
    """The rows of ``params`` (one tensor, or a list of partitions of one table) at ``ids``:
    shape ``ids.shape + params.shape[1:]``. With partitions, ``partition_strategy`` says which
    holds an id (``"mod"`` or ``"div"``, as TensorFlow). ``max_norm`` scales each embedding
    down to that L2 norm where it is longer. ``validate_indices`` is ignored (ids are always
    checked).

    Examples
    --------
    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     parts = [dg.constant([[0.0], [1.0], [2.0]]), dg.constant([[3.0], [4.0]])]
    ...     rows = embedding_lookup(parts, [[3, 0], [4, 2]], partition_strategy="div")
    ...     with dg.Session() as sess:
    ...         rows.shape, sess.run(rows).ravel().tolist()
    ((2, 2, 1), [3.0, 0.0, 4.0, 2.0])
    """
    caller = "embedding_lookup"
    if partition_strategy not in ("mod", "div"):
        raise ValueError(
            f"{caller}: partition_strategy must be 'mod' or 'div'; got {partition_strategy!r}"
        )
    parts = list(params) if isinstance(params, (list, tuple)) else [params]
    if not parts:
        raise ValueError(f"{caller}: params must not be empty")
    with name_scope(name or "embedding_lookup"):
        parts = [convert_to_tensor(p) for p in parts]
        ids = convert_to_tensor(ids)
        if ids.dtype not in _INDEX:
            raise TypeError(f"{caller}: ids must be int32 or int64; {ids.name!r} is "
                            f"{ids.dtype.name}")  # fmt: skip
        if any(p.dtype is not parts[0].dtype for p in parts):
            raise TypeError(f"{caller}: all partitions of params must have one dtype; got "
                            f"{sorted({p.dtype.name for p in parts})}")  # fmt: skip
        if len(parts) == 1:
            rows = gather(parts[0], ids)
        else:
            table = concat(parts, 0)
            rows = gather(table, _positions(ids, _rows(parts, ids.dtype), partition_strategy))
        if max_norm is not None:
            rows = _clip_rows(rows, max_norm, None if ids.shape is None else len(ids.shape))
        return rows
