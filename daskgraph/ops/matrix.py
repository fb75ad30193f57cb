"""Matrix-structure ops: identity matrices, diagonals, bands, traces, matrix transposes, and
evenly spaced grids (``lin_space``, ``meshgrid``), with their gradients.

The ``matrix_*`` ops act on the last two axes of their input (a matrix, or a batch of them),
as TensorFlow's do; ``diag`` and ``diag_part`` are TF1's *tensor* diagonal (rank ``k`` to rank
``2k`` and back). A diagonal offset ``k`` is one int here (TensorFlow also takes a band of
diagonals, ``(low, high)``).

>>> import daskgraph as dg
>>> with dg.Graph().as_default():
...     x = dg.placeholder(dg.float32, [None, 3, 4])
...     d = matrix_diag_part(x, k=1)
...     b = matrix_band_part(x, 1, 0)
>>> d.shape, b.shape, d.op.type
((None, 3), (None, 3, 4), 'MatrixDiagPartV3')
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from daskgraph.framework import dtypes
from daskgraph.framework.gradient_registry import register_gradient
from daskgraph.framework.graph import Operation, Shape, Tensor, new_tensor
from daskgraph.framework.op_registry import CPU_ALL, GPU_NUMERIC, register
from daskgraph.kernels.matrix import (
    _band_part_kernel,
    _diag_kernel,
    _diag_part_kernel,
    _diag_sizes,
    _lin_space_kernel,
    _matrix_diag_kernel,
    _matrix_diag_part_kernel,
    _matrix_set_diag_kernel,
    _meshgrid_kernel,
)
from daskgraph.ops import backprop
from daskgraph.ops.array import cast, constant, convert_to_tensor, transpose
from daskgraph.ops.fill_ops import zeros_like
from daskgraph.ops.math import multiply, reduce_sum
from daskgraph.ops.slicing import _static_ints

__all__ = [
    "diag",
    "diag_part",
    "eye",
    "lin_space",
    "matrix_band_part",
    "matrix_diag",
    "matrix_diag_part",
    "matrix_set_diag",
    "matrix_transpose",
    "meshgrid",
    "trace",
]

_FLOAT = dtypes.FLOATING
_NO_STRINGS = CPU_ALL - {dtypes.string}


register("MatrixDiagV3", _matrix_diag_kernel, cpu=_NO_STRINGS, gpu=GPU_NUMERIC)
register("MatrixDiagPartV3", _matrix_diag_part_kernel, cpu=_NO_STRINGS, gpu=GPU_NUMERIC)
register("MatrixSetDiagV3", _matrix_set_diag_kernel, cpu=_NO_STRINGS, gpu=GPU_NUMERIC)
register("MatrixBandPart", _band_part_kernel, cpu=_NO_STRINGS, gpu=GPU_NUMERIC)
register("Diag", _diag_kernel, cpu=dtypes.NUMERIC, gpu=dtypes.NUMERIC)
register("DiagPart", _diag_part_kernel, cpu=dtypes.NUMERIC, gpu=dtypes.NUMERIC)
register("LinSpace", _lin_space_kernel, cpu=_FLOAT | {dtypes.int32, dtypes.int64},
         gpu=_FLOAT | {dtypes.int32, dtypes.int64})  # fmt: skip
register("Meshgrid", _meshgrid_kernel, cpu=_NO_STRINGS, gpu=GPU_NUMERIC)


# -- helpers --------------------------------------------------------------------------------------
def _matrix(x: Any, where: str) -> Tensor:
    """``x`` as a tensor of rank >= 2 (when its rank is known)."""
    x = convert_to_tensor(x)
    if x.shape is not None and len(x.shape) < 2:
        raise ValueError(f"{where}: {x.name!r} must have rank >= 2; its shape is {x.shape}")
    return x


def _offset(k: Any, where: str) -> int:
    ints = _static_ints(k, where, "k")
    if len(ints) == 2 and ints[0] == ints[1]:
        ints = ints[:1]
    if len(ints) != 1:
        raise ValueError(
            f"{where}: k must be one diagonal offset here (a band of diagonals, (low, high), "
            f"is not supported); got {k!r}"
        )
    return ints[0]


def _scalar_int(value: Any, where: str, what: str) -> int:
    ints = _static_ints(value, where, what)
    if len(ints) != 1:
        raise TypeError(f"{where}: {what} must be one int; got {value!r}")
    return ints[0]


def _diagonal_length(shape: Shape | None, k: int) -> int | None:
    if shape is None or shape[-2] is None or shape[-1] is None:
        return None
    return max(0, min(shape[-2] - max(0, -k), shape[-1] - max(0, k)))


# -- builders -------------------------------------------------------------------------------------
def eye(
    num_rows: int,
    num_columns: int | None = None,
    batch_shape: Sequence[int] | None = None,
    dtype: Any = dtypes.float32,
    name: str | None = None,
) -> Tensor:
    """An identity matrix (ones on the diagonal, as many rows as ``num_rows``), or a batch of
    them of shape ``batch_shape``; sizes known when the graph is built.

    Examples
    --------
    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     i = eye(2, 3, batch_shape=[4], dtype=dg.int32)
    >>> i.shape, i.dtype
    ((4, 2, 3), int32)
    """
    rows = _scalar_int(num_rows, "eye", "num_rows")
    cols = rows if num_columns is None else _scalar_int(num_columns, "eye", "num_columns")
    batch = () if batch_shape is None else _static_ints(batch_shape, "eye", "batch_shape")
    if rows < 0 or cols < 0 or any(b < 0 for b in batch):
        raise ValueError(f"eye: sizes must be >= 0; got {rows}, {cols} and {list(batch)}")
    dtype = dtypes.as_dtype(dtype)
    value = np.broadcast_to(np.eye(rows, cols, dtype=dtype.numpy), (*batch, rows, cols))
    return constant(value, dtype=dtype, name=name or "eye")


def matrix_transpose(a: Any, name: str = "matrix_transpose", conjugate: bool = False) -> Tensor:
    """``a`` with its last two axes swapped (``conjugate`` changes nothing for real tensors).

    Examples
    --------
    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     t = matrix_transpose(dg.placeholder(dg.float32, [5, 2, 3]))
    >>> t.shape
    (5, 3, 2)
    """
    x = _matrix(a, "matrix_transpose")
    if x.shape is None:
        raise ValueError(f"matrix_transpose: the rank of {x.name!r} must be known")
    rank = len(x.shape)
    return transpose(x, [*range(rank - 2), rank - 1, rank - 2], name=name)


def matrix_band_part(input: Any, num_lower: Any, num_upper: Any, name: str | None = None) -> Tensor:
    """``input`` with the entries outside a band around the diagonal set to zero: ``num_lower``
    subdiagonals and ``num_upper`` superdiagonals kept (-1: all of them).

    Examples
    --------
    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     lower = matrix_band_part(dg.constant(np.ones((3, 3))), -1, 0)
    ...     with dg.Session() as sess:
    ...         print(sess.run(lower))
    [[1. 0. 0.]
     [1. 1. 0.]
     [1. 1. 1.]]
    """
    x = _matrix(input, "matrix_band_part")
    lower = _scalar_int(num_lower, "matrix_band_part", "num_lower")
    upper = _scalar_int(num_upper, "matrix_band_part", "num_upper")
    return new_tensor("MatrixBandPart", [x], x.dtype, x.shape, name, num_lower=lower,
                      num_upper=upper)  # fmt: skip


def matrix_diag(
    diagonal: Any,
    name: str = "diag",
    k: Any = 0,
    num_rows: Any = -1,
    num_cols: Any = -1,
    padding_value: Any = 0,
    align: str = "RIGHT_LEFT",
) -> Tensor:
    """Matrices whose diagonal ``k`` is the last axis of ``diagonal`` (a batch of diagonals),
    ``padding_value`` elsewhere; square unless ``num_rows``/``num_cols`` say otherwise.

    Examples
    --------
    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     m = matrix_diag(dg.constant([1, 2]), k=-1, num_rows=4)
    ...     with dg.Session() as sess:
    ...         print(m.shape, sess.run(m).tolist())
    (4, 2) [[0, 0], [1, 0], [0, 2], [0, 0]]
    """
    d = convert_to_tensor(diagonal)
    if d.shape is not None and len(d.shape) < 1:
        raise ValueError(f"matrix_diag: the diagonal {d.name!r} must have rank >= 1")
    k = _offset(k, "matrix_diag")
    rows = _scalar_int(num_rows, "matrix_diag", "num_rows")
    cols = _scalar_int(num_cols, "matrix_diag", "num_cols")
    shape = None
    if d.shape is not None:
        sizes = (None, None) if d.shape[-1] is None else _diag_sizes(d.shape[-1], k, rows, cols)
        shape = (*d.shape[:-1], *sizes)
    padding = np.asarray(padding_value, dtype=d.dtype.numpy).item()
    return new_tensor("MatrixDiagV3", [d], d.dtype, shape, name, k=k, rows=rows, cols=cols,
                      padding=padding)  # fmt: skip


def matrix_diag_part(
    input: Any, name: str = "diag_part", k: Any = 0, padding_value: Any = 0,
    align: str = "RIGHT_LEFT",
) -> Tensor:  # fmt: skip
    """Diagonal ``k`` of the matrices in the last two axes of ``input``.

    Examples
    --------
    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     d = matrix_diag_part(dg.constant(np.arange(12).reshape(3, 4)), k=1)
    ...     with dg.Session() as sess:
    ...         print(sess.run(d))
    [ 1  6 11]
    """
    x = _matrix(input, "matrix_diag_part")
    k = _offset(k, "matrix_diag_part")
    shape = None if x.shape is None else (*x.shape[:-2], _diagonal_length(x.shape, k))
    return new_tensor("MatrixDiagPartV3", [x], x.dtype, shape, name, k=k)


def matrix_set_diag(
    input: Any, diagonal: Any, name: str = "set_diag", k: Any = 0, align: str = "RIGHT_LEFT"
) -> Tensor:
    """``input`` with its diagonal ``k`` replaced by ``diagonal``.

    Examples
    --------
    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     m = matrix_set_diag(dg.constant(np.zeros((2, 3))), [1.0, 2.0], k=1)
    ...     with dg.Session() as sess:
    ...         print(sess.run(m))
    [[0. 1. 0.]
     [0. 0. 2.]]
    """
    x = _matrix(input, "matrix_set_diag")
    d = convert_to_tensor(diagonal, dtype=x.dtype)
    k = _offset(k, "matrix_set_diag")
    length = _diagonal_length(x.shape, k)
    if d.shape is not None and d.shape and None not in (length, d.shape[-1]):
        if d.shape[-1] != length:
            raise ValueError(
                f"matrix_set_diag: diagonal {k} of {x.name!r} (shape {x.shape}) has {length} "
                f"entries; {d.name!r} has {d.shape[-1]}"
            )
    return new_tensor("MatrixSetDiagV3", [x, d], x.dtype, x.shape, name, k=k)


def diag(diagonal: Any, name: str | None = None) -> Tensor:
    """TF1's ``tf.diag``: a tensor of shape ``s + s`` with ``diagonal`` (of shape ``s``) on its
    diagonal, zeros elsewhere (``Diag``).

    Examples
    --------
    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     m = diag(dg.constant([1, 2]))
    ...     with dg.Session() as sess:
    ...         print(sess.run(m))
    [[1 0]
     [0 2]]
    """
    d = convert_to_tensor(diagonal)
    shape = None if d.shape is None else tuple(d.shape) * 2
    return new_tensor("Diag", [d], d.dtype, shape, name)


def diag_part(input: Any, name: str | None = None) -> Tensor:
    """TF1's ``tf.diag_part``: the diagonal of a tensor of shape ``s + s``, of shape ``s``
    (``DiagPart``; the inverse of :func:`diag`)."""
    x = convert_to_tensor(input)
    shape = None
    if x.shape is not None:
        rank = len(x.shape)
        if rank % 2 or rank == 0:
            raise ValueError(f"diag_part: {x.name!r} must have an even rank; got {x.shape}")
        half = rank // 2
        for a, b in zip(x.shape[:half], x.shape[half:], strict=True):
            if None not in (a, b) and a != b:
                raise ValueError(f"diag_part: the shape of {x.name!r} must be s + s; got "
                                 f"{x.shape}")  # fmt: skip
        shape = tuple(a if a is not None else b for a, b in zip(x.shape[:half], x.shape[half:],
                                                                 strict=True))  # fmt: skip
    return new_tensor("DiagPart", [x], x.dtype, shape, name)


def trace(x: Any, name: str | None = None) -> Tensor:
    """The sum of the diagonal of the matrices in the last two axes of ``x``.

    Examples
    --------
    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     t = trace(dg.constant(np.arange(18).reshape(2, 3, 3)))
    ...     with dg.Session() as sess:
    ...         print(sess.run(t))
    [12 39]
    """
    return reduce_sum(matrix_diag_part(x), axis=-1, name=name or "Trace")


def lin_space(start: Any, stop: Any, num: Any, name: str | None = None, axis: int = 0) -> Tensor:
    """``num`` evenly spaced values from ``start`` to ``stop``, both included (``LinSpace``);
    integer bounds give float64 values, as in TensorFlow.

    Examples
    --------
    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     v = lin_space(0.0, 1.0, 5)
    ...     with dg.Session() as sess:
    ...         print(v.shape, sess.run(v))
    (5,) [0.   0.25 0.5  0.75 1.  ]
    """
    if axis not in (0, -1):
        raise ValueError(f"lin_space: axis must be 0 (scalar bounds only); got {axis}")
    a, b = convert_to_tensor(start), convert_to_tensor(stop)
    for t in (a, b):
        if t.shape is not None and t.shape != ():
            raise ValueError(f"lin_space: start and stop must be scalars; {t.name!r} has shape "
                             f"{t.shape}")  # fmt: skip
    if a.dtype.is_integer:
        a = cast(a, dtypes.float64)
    if b.dtype != a.dtype:
        b = cast(b, a.dtype)
    if not a.dtype.is_floating:
        raise TypeError(f"lin_space: start and stop must be numbers; got {a.dtype.name}")
    n = convert_to_tensor(num, dtype=None if isinstance(num, Tensor) else dtypes.int32)
    if n.dtype not in (dtypes.int32, dtypes.int64):
        raise TypeError(f"lin_space: num must be an int32 or int64 scalar; got {n.dtype.name}")
    size = int(n.op.attrs["value"]) if n.op.type == "Const" else None
    return new_tensor("LinSpace", [a, b, n], a.dtype, (size,), name)


def meshgrid(*args: Any, indexing: str = "xy", name: str = "meshgrid") -> list[Tensor]:
    """Coordinate grids from 1-D coordinate vectors, as ``numpy.meshgrid``: with ``"xy"``
    (Cartesian) indexing the first two axes are swapped, with ``"ij"`` not.

    Examples
    --------
    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     x, y = meshgrid(dg.constant([1, 2, 3]), dg.constant([4, 5]))
    ...     with dg.Session() as sess:
    ...         print(x.shape, sess.run(y).tolist())
    (2, 3) [[4, 4, 4], [5, 5, 5]]
    """
    if indexing not in ("xy", "ij"):
        raise ValueError(f"meshgrid: indexing must be 'xy' or 'ij'; got {indexing!r}")
    if not args:
        return []
    tensors = [convert_to_tensor(a) for a in args]
    for t in tensors[1:]:
        if t.dtype != tensors[0].dtype:
            raise TypeError(f"meshgrid: all inputs must have one dtype; got "
                            f"{tensors[0].dtype.name} and {t.dtype.name}")  # fmt: skip
    sizes = [_flat_size(t) for t in tensors]
    if indexing == "xy" and len(sizes) > 1:
        sizes[0], sizes[1] = sizes[1], sizes[0]
    return [
        new_tensor("Meshgrid", tensors, t.dtype, tuple(sizes), name, index=i, indexing=indexing)
        for i, t in enumerate(tensors)
    ]


def _flat_size(t: Tensor) -> int | None:
    if t.shape is None or None in t.shape:
        return None
    return int(np.prod(t.shape, dtype=np.int64))


# -- gradients ------------------------------------------------------------------------------------
@register_gradient("MatrixDiagV3")
def _matrix_diag_grad(op: Operation, grad: Tensor) -> list[Tensor]:
    return [matrix_diag_part(grad, k=op.attrs["k"])]


@register_gradient("MatrixDiagPartV3")
def _matrix_diag_part_grad(op: Operation, grad: Tensor) -> list[Tensor]:
    return [matrix_set_diag(zeros_like(op.inputs[0]), grad, k=op.attrs["k"])]


@register_gradient("MatrixSetDiagV3")
def _matrix_set_diag_grad(op: Operation, grad: Tensor) -> list[Tensor]:
    k = op.attrs["k"]
    return [matrix_set_diag(grad, zeros_like(op.inputs[1]), k=k), matrix_diag_part(grad, k=k)]


@register_gradient("MatrixBandPart")
def _band_part_grad(op: Operation, grad: Tensor) -> list[Tensor]:
    return [matrix_band_part(grad, op.attrs["num_lower"], op.attrs["num_upper"])]


@register_gradient("Diag")
def _diag_grad(op: Operation, grad: Tensor) -> list[Tensor]:
    return [diag_part(grad)]


@register_gradient("DiagPart")
def _diag_part_grad(op: Operation, grad: Tensor) -> list[Tensor]:
    return [diag(grad)]


@register_gradient("LinSpace")
def _lin_space_grad(op: Operation, grad: Tensor) -> list[Tensor | None]:
    """``out = start + (stop - start) * t`` with ``t`` from 0 to 1: the weights are ``1 - t``
    and ``t``."""
    start, _, num = op.inputs
    t = new_tensor("LinSpace", [constant(0.0, start.dtype), constant(1.0, start.dtype), num],
                   start.dtype, op.outputs[0].shape, "weights")  # fmt: skip
    to_stop = reduce_sum(multiply(grad, t))
    return [reduce_sum(grad) - to_stop, to_stop, None]


@register_gradient("Meshgrid")
def _meshgrid_grad(op: Operation, grad: Tensor) -> list[Tensor | None]:
    """Input ``i`` spreads along one axis of the grid: sum the others, then take its shape."""
    i, n = op.attrs["index"], len(op.inputs)
    axis = {0: 1, 1: 0}.get(i, i) if op.attrs["indexing"] == "xy" and n > 1 else i
    summed = reduce_sum(grad, axis=[a for a in range(n) if a != axis])
    grads: list[Tensor | None] = [None] * n
    grads[i] = backprop.reshape_like(summed, op.inputs[i])
    return grads
