"""TensorFlow 1's ``IndexedSlices``: some rows of a tensor, as the tensors of those rows and of
their indices (the form TensorFlow's gradients of ``gather`` take).

An :class:`IndexedSlices` holds ``values`` (``[N, ...]``), the int ``indices`` (``[N]``) of
the rows they are in a tensor of shape ``dense_shape`` (a 1-D int tensor, or None when
unknown). It is a :class:`~daskgraph.ops.sparse_tensor.CompositeTensor`: a session fetches it as
an :class:`IndexedSlicesValue` and feeds its tensors from one ``(values, indices[,
dense_shape])`` value. Used where a tensor is wanted (arithmetic, ``convert_to_tensor``), it
is made dense: the rows summed into zeros of ``dense_shape``, as TensorFlow converts it.
daskgraph's own gradients are dense tensors, never IndexedSlices.

>>> import daskgraph as dg
>>> with dg.Graph().as_default():
...     rows = IndexedSlices(dg.constant([[1.0, 2.0], [3.0, 4.0]]), dg.constant([2, 0]),
...                          dg.constant([3, 2]))
...     with dg.Session() as sess:
...         value, dense = sess.run([rows, dg.convert_to_tensor(rows)])
>>> value.indices.tolist(), dense.tolist()
([2, 0], [[3.0, 4.0], [0.0, 0.0], [1.0, 2.0]])
"""

from __future__ import annotations

from collections import namedtuple
from typing import Any

from daskgraph.errors import quote
from daskgraph.framework import dtypes
from daskgraph.framework.graph import Graph, Operation, Tensor, name_scope
from daskgraph.ops.array import convert_to_tensor
from daskgraph.ops.segments import unsorted_segment_sum
from daskgraph.ops.sparse_tensor import CompositeTensor

__all__ = ["IndexedSlices", "IndexedSlicesValue"]

#: A fetched :class:`IndexedSlices`: its ``values``, ``indices`` and ``dense_shape`` (or None).
IndexedSlicesValue = namedtuple("IndexedSlicesValue", ["values", "indices", "dense_shape"])

_INDEX = (dtypes.int32, dtypes.int64)


class IndexedSlices(CompositeTensor):
    """Rows ``indices`` of a tensor of shape ``dense_shape``, holding ``values``
    (``tf.IndexedSlices``).

    Parameters
    ----------
    values
        ``[N, ...]``: the rows.
    indices
        ``[N]`` int32 or int64: where each row is.
    dense_shape
        ``[rank]`` int32 or int64 sizes of the whole tensor, or None.
    """

    __slots__ = ("_dense_shape", "_indices", "_values")

    def __init__(self, values: Any, indices: Any, dense_shape: Any = None) -> None:
        self._values = convert_to_tensor(values)
        self._indices = _index_tensor(indices, "indices")
        self._dense_shape = None if dense_shape is None else _index_tensor(dense_shape, "dense")

    # -- TensorFlow's attributes ----------------------------------------------------------------
    @property
    def values(self) -> Tensor:
        """The rows."""
        return self._values

    @property
    def indices(self) -> Tensor:
        """The row of each of :attr:`values`."""
        return self._indices

    @property
    def dense_shape(self) -> Tensor | None:
        """The whole tensor's shape, or None."""
        return self._dense_shape

    @property
    def dtype(self) -> dtypes.DType:
        """The dtype of :attr:`values`."""
        return self._values.dtype

    @property
    def name(self) -> str:
        """The name of :attr:`values`."""
        return self._values.name

    @property
    def op(self) -> Operation:
        """The operation that makes :attr:`values`."""
        return self._values.op

    @property
    def graph(self) -> Graph:
        """The graph of :attr:`values`."""
        return self._values.graph

    @property
    def device(self) -> str:
        """The device requested for :attr:`values`."""
        return self._values.device

    # -- what a session asks of it --------------------------------------------------------------
    def _components(self) -> tuple[Tensor, ...]:
        parts = (self._values, self._indices)
        return parts if self._dense_shape is None else (*parts, self._dense_shape)

    def _fetched(self, values: list[Any]) -> IndexedSlicesValue:
        return IndexedSlicesValue(*values, *([None] * (3 - len(values))))

    def _feed_pairs(self, value: Any) -> list[tuple[Tensor, Any]]:
        """``value``'s parts paired with the tensors: an IndexedSlicesValue, or a tuple
        ``(values, indices[, dense_shape])``."""
        if not isinstance(value, (tuple, list)) or len(value) not in (2, 3):
            raise TypeError(
                "The value fed for an IndexedSlices must be an IndexedSlicesValue or a tuple "
                f"(values, indices[, dense_shape]); got {quote(value)}"
            )
        pairs = list(zip(self._components(), value, strict=False))
        return [(tensor, part) for tensor, part in pairs if part is not None]

    def _as_tensor(self) -> Tensor:
        """The dense tensor: the rows summed into zeros of :attr:`dense_shape`."""
        if self._dense_shape is None:
            raise ValueError(
                f"Cannot convert {self!r} to a dense tensor: its dense_shape is unknown (None)"
            )
        with name_scope(None, "IndexedSlicesToDense", [self._values]):
            return unsorted_segment_sum(self._values, self._indices, self._dense_shape[0])

    def __repr__(self) -> str:
        return (
            f"IndexedSlices(indices={self._indices!r}, values={self._values!r}"
            + ("" if self._dense_shape is None else f", dense_shape={self._dense_shape!r}")
            + ")"
        )


def _index_tensor(value: Any, name: str) -> Tensor:
    tensor = convert_to_tensor(value)
    if tensor.dtype not in _INDEX:
        raise TypeError(
            f"IndexedSlices: {name} must be int32 or int64; {tensor.name!r} is {tensor.dtype.name}"
        )
    return tensor
