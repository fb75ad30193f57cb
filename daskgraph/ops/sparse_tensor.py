"""TensorFlow 1's ``SparseTensor``: three tensors standing for one sparse value.

A :class:`SparseTensor` is not an operation's output: it holds the int64 ``indices``
(``[N, rank]``, one row of coordinates per stored value), the ``values`` (``[N]``) and the
int64 ``dense_shape`` (``[rank]``) tensors, which the sparse ops
(:mod:`daskgraph.ops.sparse_ops` and its siblings) read and build. It is a
:class:`CompositeTensor`: a session fetches it as a :class:`SparseTensorValue` (a named tuple
of the three arrays) and feeds its three tensors from one ``(indices, values, dense_shape)``
value (:mod:`daskgraph.runtime.client.fetches` expands composites into their component tensors and
rebuilds
them).

>>> import daskgraph as dg
>>> with dg.Graph().as_default():
...     sp = SparseTensor([[0, 1], [2, 0]], [1.5, 2.5], [3, 2])
...     with dg.Session() as sess:
...         value = sess.run(sp)
>>> sp.shape, sp.dtype, sp.indices.dtype
((3, 2), float32, int64)
>>> value.indices.tolist(), value.values.tolist(), value.dense_shape.tolist()
([[0, 1], [2, 0]], [1.5, 2.5], [3, 2])
"""

from __future__ import annotations

from collections import namedtuple
from collections.abc import Mapping
from typing import Any

import numpy as np

from daskgraph.errors import quote
from daskgraph.framework import dtypes
from daskgraph.framework.default_session import run_in_default
from daskgraph.framework.graph import Graph, Operation, Shape, Tensor, name_scope
from daskgraph.framework.tensor_shape import TensorShape
from daskgraph.ops.array import convert_to_tensor

__all__ = [
    "CompositeTensor",
    "SparseTensor",
    "SparseTensorValue",
    "as_sparse",
    "constant_shape",
    "convert_to_tensor_or_sparse_tensor",
    "is_sparse",
]

#: A fetched :class:`SparseTensor`: its ``indices``, ``values`` and ``dense_shape`` arrays.
SparseTensorValue = namedtuple("SparseTensorValue", ["indices", "values", "dense_shape"])


class CompositeTensor:
    """A value made of several tensors, run as they are: what a session asks of it.

    :meth:`_components` are the tensors fetched and fed in its place; :meth:`_fetched`
    rebuilds its value from theirs; :meth:`_feed_pairs` pairs a fed value with them.
    """

    __slots__ = ()

    def _components(self) -> tuple[Tensor, ...]:
        raise NotImplementedError

    def _fetched(self, values: list[Any]) -> Any:
        raise NotImplementedError

    def _feed_pairs(self, value: Any) -> list[tuple[Tensor, Any]]:
        raise NotImplementedError


class SparseTensor(CompositeTensor):
    """A sparse tensor: ``values[i]`` at the coordinates ``indices[i]`` of a tensor of shape
    ``dense_shape``, zeros (or a default) elsewhere, as ``tf.SparseTensor``.

    Parameters
    ----------
    indices
        ``[N, rank]`` int64 coordinates (a tensor, or anything ``constant`` takes).
    values
        ``[N]`` values, any dtype.
    dense_shape
        ``[rank]`` int64 sizes of the dense tensor.

    Most sparse ops want the indices in row-major order (``sparse_reorder`` sorts them).
    ``sp * x`` and ``sp / x`` with a dense ``x`` are :mod:`daskgraph.ops.sparse_elementwise`'s.
    """

    __slots__ = ("_dense_shape", "_indices", "_shape", "_values")
    __array_priority__ = 100  # NumPy defers ``ndarray * SparseTensor`` to its ``__rmul__``

    def __init__(self, indices: Any, values: Any, dense_shape: Any) -> None:
        with name_scope(None, "SparseTensor", [indices, values, dense_shape]):
            self._indices = _int64_tensor(indices, "indices")
            self._values = convert_to_tensor(values, name="values")
            self._dense_shape = _int64_tensor(dense_shape, "dense_shape")
        self._shape = _static_shape(self._indices, self._values, self._dense_shape)

    # -- TensorFlow's properties ----------------------------------------------------------------
    @property
    def indices(self) -> Tensor:
        """The ``[N, rank]`` int64 coordinates of the values."""
        return self._indices

    @property
    def values(self) -> Tensor:
        """The ``[N]`` stored values."""
        return self._values

    @property
    def dense_shape(self) -> Tensor:
        """The ``[rank]`` int64 shape of the dense tensor."""
        return self._dense_shape

    @property
    def dtype(self) -> dtypes.DType:
        """The dtype of the values."""
        return self._values.dtype

    @property
    def shape(self) -> TensorShape:
        """The static dense shape (what is known of ``dense_shape`` while building)."""
        return TensorShape(self._shape, v1=False)

    def get_shape(self) -> TensorShape:
        """The static dense shape as TensorFlow 1's ``TensorShape``."""
        return TensorShape(self._shape, v1=True)

    def set_shape(self, shape: Any) -> None:
        """Refine the static dense shape with ``shape``; ValueError if not compatible.

        >>> import daskgraph as dg
        >>> with dg.Graph().as_default():
        ...     sp = SparseTensor(dg.placeholder(dg.int64, [None, 2]), [1.0],
        ...                       dg.placeholder(dg.int64, [2]))
        ...     sp.set_shape([None, 5])
        >>> sp.shape
        (None, 5)
        """
        try:
            self._shape = TensorShape(self._shape).merge_with(TensorShape(shape))._raw()
        except ValueError:
            raise ValueError(
                f"SparseTensor's shape {TensorShape(self._shape)} is not compatible with the "
                f"shape {TensorShape(shape)} asked for by set_shape"
            ) from None

    @property
    def graph(self) -> Graph:
        """The graph of the component tensors."""
        return self._indices.graph

    @property
    def op(self) -> Operation:
        """The operation that produces the values."""
        return self._values.op

    def consumers(self) -> list[Operation]:
        """The operations that read any of the three tensors, in creation order."""
        parts = self._components()
        return [op for op in self.graph.get_operations() if any(t in parts for t in op.inputs)]

    def eval(self, feed_dict: Mapping[Any, Any] | None = None, session: Any = None) -> Any:
        """The value (a :class:`SparseTensorValue`), run in ``session`` or the default one."""
        return run_in_default(self, feed_dict, session)

    def with_values(self, new_values: Any) -> SparseTensor:
        """A sparse tensor of the same indices and dense shape holding ``new_values``."""
        result = SparseTensor(self._indices, new_values, self._dense_shape)
        result._shape = self._shape
        return result

    @classmethod
    def from_value(cls, sparse_tensor_value: Any) -> SparseTensor:
        """A SparseTensor of a :class:`SparseTensorValue` (its arrays become constants), or
        the SparseTensor itself."""
        if isinstance(sparse_tensor_value, SparseTensor):
            return sparse_tensor_value
        if not is_sparse(sparse_tensor_value):
            raise TypeError(
                f"SparseTensor.from_value expects a SparseTensorValue or a SparseTensor; got "
                f"{quote(sparse_tensor_value)}"
            )
        return cls(
            sparse_tensor_value.indices,
            sparse_tensor_value.values,
            sparse_tensor_value.dense_shape,
        )

    # -- what a session asks of a composite -----------------------------------------------------
    def _components(self) -> tuple[Tensor, ...]:
        return (self._indices, self._values, self._dense_shape)

    def _fetched(self, values: list[Any]) -> SparseTensorValue:
        return SparseTensorValue(*values)

    def _feed_pairs(self, value: Any) -> list[tuple[Tensor, Any]]:
        """``value``'s parts paired with the three tensors: a SparseTensorValue, or a tuple
        ``(indices, values, dense_shape)`` or ``(indices, values)`` (the dense shape keeps its
        own value), as TensorFlow pairs them."""
        if not isinstance(value, (tuple, list)) or len(value) not in (2, 3):
            raise TypeError(
                "The value fed for a SparseTensor must be a SparseTensorValue or a tuple "
                f"(indices, values, dense_shape); got {quote(value)}"
            )
        return list(zip(self._components(), value, strict=False))

    # -- conversions ----------------------------------------------------------------------------
    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        raise TypeError(
            f"Failed to convert elements of {self!r} to Tensor: a SparseTensor has no dense "
            "value while the graph is built; use tf.sparse.to_dense (sparse_tensor_to_dense)"
        )

    def __repr__(self) -> str:
        return (
            f"SparseTensor(indices={self._indices!r}, values={self._values!r}, "
            f"dense_shape={self._dense_shape!r})"
        )


def _int64_tensor(value: Any, name: str) -> Tensor:
    """``value`` as an int64 tensor; TypeError naming the argument for other dtypes."""
    if isinstance(value, TensorShape):
        value = value.as_list()
    tensor = convert_to_tensor(value, dtype=None if _is_tensor(value) else dtypes.int64, name=name)
    if tensor.dtype is not dtypes.int64:
        raise TypeError(
            f"SparseTensor: {name} must be int64; {tensor.name!r} is {tensor.dtype.name} "
            f"(cast it with tf.cast(..., tf.int64))"
        )
    return tensor


def _is_tensor(value: Any) -> bool:
    return isinstance(value, Tensor) or hasattr(value, "_as_tensor")


def _static_shape(indices: Tensor, values: Tensor, dense_shape: Tensor) -> Shape | None:
    """The dense shape known while building (checking the three tensors' ranks and sizes)."""
    checks = ((indices, 2, "indices"), (values, 1, "values"), (dense_shape, 1, "dense_shape"))
    for tensor, rank, what in checks:
        if tensor.shape is not None and len(tensor.shape) != rank:
            raise ValueError(
                f"SparseTensor: {what} must have rank {rank}; {tensor.name!r} has shape "
                f"{tensor.shape}"
            )
    rows, rank = indices.shape if indices.shape is not None else (None, None)
    size = values.shape[0] if values.shape is not None else None
    length = dense_shape.shape[0] if dense_shape.shape is not None else None
    for a, b in ((rows, size), (rank, length)):
        if a is not None and b is not None and a != b:
            raise ValueError(f"Dimensions {a} and {b} are not compatible")
    known = constant_shape(dense_shape)
    if known is not None:
        return known
    rank = rank if rank is not None else length
    return None if rank is None else (None,) * rank


def constant_shape(dense_shape: Tensor) -> Shape | None:
    """The sizes a 1-D shape tensor is known to hold while building (None where unknown): a
    constant's, or the static shape of the tensor a ``Shape`` op reads.

    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     constant_shape(dg.shape(dg.placeholder(dg.float32, [None, 3]), out_type=dg.int64))
    (None, 3)
    """
    op = dense_shape.op
    if op.type == "Const":
        return tuple(int(d) for d in np.asarray(op.attrs["value"]).reshape(-1))
    if op.type == "Shape" and op.inputs and op.inputs[0].shape is not None:
        return tuple(op.inputs[0].shape)
    return None


def is_sparse(value: Any) -> bool:
    """Whether ``value`` is a :class:`SparseTensor` or a :class:`SparseTensorValue`."""
    return isinstance(value, (SparseTensor, SparseTensorValue))


def as_sparse(value: Any, where: str) -> SparseTensor:
    """``value`` as a SparseTensor (a SparseTensorValue becomes constants); TypeError naming
    the function ``where`` for anything else."""
    if isinstance(value, SparseTensorValue):
        return SparseTensor.from_value(value)
    if not isinstance(value, SparseTensor):
        raise TypeError(f"{where}: expected a SparseTensor; got {quote(value)}")
    return value


def convert_to_tensor_or_sparse_tensor(
    value: Any, dtype: Any = None, name: str | None = None
) -> Tensor | SparseTensor:
    """``value`` as a SparseTensor when it is one (or a SparseTensorValue), else as a tensor
    (``tf.convert_to_tensor_or_sparse_tensor``).

    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     sp = convert_to_tensor_or_sparse_tensor(SparseTensorValue([[0]], [1], [2]))
    ...     t = convert_to_tensor_or_sparse_tensor([1, 2])
    >>> type(sp).__name__, t.dtype
    ('SparseTensor', int32)
    """
    if isinstance(value, SparseTensorValue):
        value = SparseTensor.from_value(value)
    if isinstance(value, SparseTensor):
        if dtype is not None and dtypes.as_dtype(dtype) is not value.dtype:
            raise RuntimeError(
                f"Sparse dtype mismatch. Requested: {dtypes.as_dtype(dtype).name},  Actual: "
                f"{value.dtype.name}"
            )
        return value
    return convert_to_tensor(value, dtype=dtype, name=name)
