"""Sparse tensors rearranged: ``sparse_reorder``, ``sparse_reshape``, ``sparse_retain``,
``sparse_transpose``, ``sparse_concat``, ``sparse_slice``, ``sparse_split``,
``sparse_fill_empty_rows``, ``sparse_to_indicator``, ``sparse_softmax``,
``sparse_expand_dims``, ``sparse_reset_shape`` and ``sparse_eye``, as TensorFlow 1 has them.

Most of them pick entries: one op computes which entries go where (a permutation, the
positions kept; an int64 vector), and ``gather`` takes those rows of the indices and values,
so the values' gradient is ``gather``'s (TensorFlow's ``SparseReorder``/``SparseSlice``
gradients do the same). New indices and dense shapes are computed by their own ops.
``sparse_fill_empty_rows`` and ``sparse_softmax`` differentiate as TensorFlow's. Kernels are
over the array API; ``sparse_fill_empty_rows`` and ``sparse_softmax`` run on the CPU only, as
in TensorFlow.

>>> import daskgraph as dg
>>> from daskgraph.ops.sparse_tensor import SparseTensor
>>> with dg.Graph().as_default():
...     sp = SparseTensor([[2, 1], [0, 3], [1, 0]], [1.0, 2.0, 3.0], [3, 4])
...     ordered = sparse_reorder(sp)
...     with dg.Session() as sess:
...         value = sess.run(ordered)
>>> value.indices.tolist(), value.values.tolist()
([[0, 3], [1, 0], [2, 1]], [2.0, 3.0, 1.0])
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from daskgraph.framework import dtypes
from daskgraph.framework.gradient_registry import no_gradient, register_gradient
from daskgraph.framework.graph import Operation, Shape, Tensor, get_default_graph, name_scope
from daskgraph.framework.op_registry import register
from daskgraph.kernels.sparse_structure import (
    _concat_indices_kernel,
    _concat_shape_kernel,
    _fill_empty_rows_kernel,
    _reorder_kernel,
    _reset_shape_kernel,
    _reshape_indices_kernel,
    _reshape_shape_kernel,
    _slice_keep_kernel,
    _softmax_grad_kernel,
    _softmax_kernel,
    _split_range_kernel,
    _to_indicator_kernel,
    _too_small,
)
from daskgraph.ops.array import cast, convert_to_tensor, reshape
from daskgraph.ops.elementwise import minimum
from daskgraph.ops.fill_ops import fill
from daskgraph.ops.logic import where
from daskgraph.ops.math import maximum, reduce_sum
from daskgraph.ops.ranges import range as range_
from daskgraph.ops.shape_ops import concat, stack
from daskgraph.ops.shape_ops import shape as shape_of
from daskgraph.ops.slicing import gather
from daskgraph.ops.sparse_ops import dense_static
from daskgraph.ops.sparse_tensor import SparseTensor, as_sparse, constant_shape

__all__ = [
    "sparse_concat",
    "sparse_expand_dims",
    "sparse_eye",
    "sparse_fill_empty_rows",
    "sparse_reorder",
    "sparse_reset_shape",
    "sparse_reshape",
    "sparse_retain",
    "sparse_slice",
    "sparse_softmax",
    "sparse_split",
    "sparse_to_indicator",
    "sparse_transpose",
]

_I64 = frozenset({dtypes.int64})
_INDEX = frozenset({dtypes.int32, dtypes.int64})


register("SparseReorderPerm", _reorder_kernel, cpu=_I64, gpu=_I64)
register("SparseReshapeIndices", _reshape_indices_kernel, cpu=_I64, gpu=_I64)
register("SparseReshapeShape", _reshape_shape_kernel, cpu=_I64, gpu=_I64)
register("SparseConcatIndices", _concat_indices_kernel, cpu=_I64, gpu=_I64)
register("SparseConcatShape", _concat_shape_kernel, cpu=_I64, gpu=_I64)
register("SparseSliceKeep", _slice_keep_kernel, cpu=_I64, gpu=_I64)
register("SparseSplitRange", _split_range_kernel, cpu=_I64, gpu=_I64)
register("SparseResetShape", _reset_shape_kernel, cpu=_I64, gpu=_I64)
register("SparseFillEmptyRows", _fill_empty_rows_kernel, cpu=dtypes.ALL, gpu=None)
register("SparseToIndicator", _to_indicator_kernel, cpu=_INDEX | {dtypes.bool_},
         gpu=_INDEX | {dtypes.bool_})  # fmt: skip
register("SparseSoftmax", _softmax_kernel, cpu=dtypes.FLOATING | _I64, gpu=None)
register("SparseSoftmaxGrad", _softmax_grad_kernel, cpu=dtypes.FLOATING | _I64, gpu=None)


# -- builders -------------------------------------------------------------------------------------
def _op(
    op_type: str, inputs: list[Tensor], dtype: Any, shape: Any, name: Any = None, **attrs: Any
) -> Tensor:
    op = get_default_graph().create_op(
        op_type, inputs, dtype=dtype, shape=shape, attrs=attrs, name=name
    )
    return op.outputs[0]


def _picked(sp: SparseTensor, rows: Tensor, dense_shape: Tensor | None = None) -> SparseTensor:
    """The entries ``rows`` of ``sp`` (int64 positions), as a new SparseTensor."""
    result = SparseTensor(gather(sp.indices, rows), gather(sp.values, rows),
                          sp.dense_shape if dense_shape is None else dense_shape)  # fmt: skip
    if dense_shape is None:
        result._shape = dense_static(sp)
    return result


def _entries(sp: SparseTensor) -> Shape:
    return (sp.indices.shape[0] if sp.indices.shape is not None else None,)


def sparse_reorder(sp_input: Any, name: str | None = None) -> SparseTensor:
    """``sp_input`` with its entries in row-major order of their indices
    (``tf.sparse.reorder``); the values' gradient follows them back."""
    sp = as_sparse(sp_input, "sparse_reorder")
    with name_scope(name or "SparseReorder"):
        return _picked(sp, _op("SparseReorderPerm", [sp.indices], dtypes.int64, _entries(sp)))


def _int64_vector(value: Any, where: str, what: str) -> Tensor:
    if isinstance(value, Tensor):
        if value.dtype not in _INDEX:
            raise TypeError(f"{where}: {what} must be an integer tensor; got {value!r}")
        return value if value.dtype is dtypes.int64 else cast(value, dtypes.int64)
    return convert_to_tensor(np.asarray(value, dtype=np.int64).reshape(-1), dtype=dtypes.int64)


def _reshaped_static(dims: Shape | None, wanted: Shape | None) -> Shape | None:
    """The static shape ``sparse_reshape`` gives: ``wanted`` with its -1 inferred when the
    input's size is known; ValueError where the sizes cannot match."""
    if wanted is None or -1 not in wanted:
        return wanted
    if dims is None or None in dims:
        return tuple(None if d == -1 else d for d in wanted)
    size, known = int(np.prod(dims)), int(np.prod([d for d in wanted if d != -1]))
    if known == 0 or size % known:
        raise ValueError(f"sparse_reshape: cannot reshape a SparseTensor of shape {dims} "
                         f"({size} dense values) to {list(wanted)}")  # fmt: skip
    return tuple(size // known if d == -1 else d for d in wanted)


def sparse_reshape(sp_input: Any, shape: Any, name: str | None = None) -> SparseTensor:
    """``sp_input`` with the same dense values in row-major order in a dense tensor of
    ``shape`` (one size may be -1), as ``tf.sparse.reshape``.

    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     sp = SparseTensor([[0, 1], [2, 3]], [1, 2], [3, 4])
    ...     flat = sparse_reshape(sp, [2, -1])
    ...     with dg.Session() as sess:
    ...         value = sess.run(flat)
    >>> value.indices.tolist(), flat.shape
    ([[0, 1], [1, 5]], (2, 6))
    """
    sp = as_sparse(sp_input, "sparse_reshape")
    target = _int64_vector(shape, "sparse_reshape", "shape")
    wanted = constant_shape(target)
    if wanted is not None and sum(d == -1 for d in wanted) > 1:
        raise ValueError(f"sparse_reshape: at most one dimension may be -1; got {list(wanted)}")
    static = _reshaped_static(dense_static(sp), wanted)
    if static is None and target.shape is not None and target.shape[0] is not None:
        static = (None,) * target.shape[0]
    rank = None if static is None else len(static)
    with name_scope(name or "SparseReshape"):
        inputs = [sp.indices, sp.dense_shape, target]
        indices = _op("SparseReshapeIndices", inputs, dtypes.int64, (_entries(sp)[0], rank))
        dense_shape = _op("SparseReshapeShape", inputs[1:], dtypes.int64, (rank,))
    result = SparseTensor(indices, sp.values, dense_shape)
    result._shape = static
    return result


def sparse_retain(sp_input: Any, to_retain: Any) -> SparseTensor:
    """The entries of ``sp_input`` where the bool vector ``to_retain`` (one per entry) is
    true, in their order (``tf.sparse.retain``)."""
    sp = as_sparse(sp_input, "sparse_retain")
    keep = convert_to_tensor(to_retain)
    if keep.dtype is not dtypes.bool_:
        raise TypeError(f"sparse_retain: to_retain must be a bool vector; got {keep!r}")
    n, length = _entries(sp)[0], None if keep.shape is None else keep.shape[0]
    if keep.shape is not None and len(keep.shape) != 1:
        raise ValueError(f"sparse_retain: to_retain must be a vector; it is {keep.shape}")
    if n is not None and length is not None and n != length:
        raise ValueError(f"Dimensions {n} and {length} are not compatible")
    with name_scope("SparseRetain"):
        return _picked(sp, reshape(where(keep), [-1]))


def sparse_transpose(
    sp_input: Any, perm: Sequence[int] | None = None, name: str | None = None
) -> SparseTensor:
    """``sp_input`` with its dimensions permuted by ``perm`` (reversed by default), in
    row-major order (``tf.sparse.transpose``)."""
    sp = as_sparse(sp_input, "sparse_transpose")
    dims = dense_static(sp)
    if dims is None:
        raise ValueError("sparse_transpose: the rank of sp_input must be known")
    perm = tuple(range(len(dims) - 1, -1, -1)) if perm is None else tuple(int(p) for p in perm)
    if sorted(perm) != list(range(len(dims))):
        raise ValueError(f"sparse_transpose: perm {list(perm)} is not a permutation of "
                         f"{len(dims)} dimensions")  # fmt: skip
    with name_scope(name or "SparseTranspose"):
        order = convert_to_tensor(np.array(perm, dtype=np.int64), dtype=dtypes.int64)
        moved = SparseTensor(gather(sp.indices, order, axis=1), sp.values,
                             gather(sp.dense_shape, order))  # fmt: skip
        moved._shape = tuple(dims[p] for p in perm)
        return sparse_reorder(moved)


def _concat_static(sps: list[SparseTensor], axis: int, expand: bool) -> Shape | None:
    shapes = [dense_static(sp) for sp in sps]
    if any(s is None for s in shapes):
        return None
    rank = len(shapes[0])
    if any(len(s) != rank for s in shapes) or not -rank <= axis < rank:
        raise ValueError(f"sparse_concat: the inputs' ranks {[len(s) for s in shapes]} differ "
                         f"or axis {axis} is out of range")  # fmt: skip
    axis %= rank
    out: list[int | None] = []
    for k in range(rank):
        sizes = [s[k] for s in shapes]
        if k == axis:
            out.append(None if None in sizes else sum(sizes))
        elif expand:
            out.append(None if None in sizes else max(sizes))
        else:
            known = {d for d in sizes if d is not None}
            if len(known) > 1:
                raise ValueError(f"sparse_concat: sizes {sizes} differ in dimension {k}")
            out.append(known.pop() if known else None)
    return tuple(out)


def sparse_concat(
    axis: int,
    sp_inputs: Sequence[Any],
    name: str | None = None,
    expand_nonconcat_dim: bool = False,
) -> SparseTensor:
    """The SparseTensors ``sp_inputs`` joined along ``axis``, in row-major order
    (``tf.sparse.concat``); with ``expand_nonconcat_dim`` the other dimensions may differ and
    take the largest size.

    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     a = SparseTensor([[0, 1]], [1], [2, 2])
    ...     b = SparseTensor([[0, 0], [1, 2]], [2, 3], [2, 3])
    ...     ab = sparse_concat(1, [a, b])
    ...     with dg.Session() as sess:
    ...         value = sess.run(ab)
    >>> value.indices.tolist(), value.values.tolist(), ab.shape
    ([[0, 1], [0, 2], [1, 4]], [1, 2, 3], (2, 5))
    """
    sps = [as_sparse(sp, "sparse_concat") for sp in sp_inputs]
    if not sps:
        raise ValueError("sparse_concat: sp_inputs must hold at least one SparseTensor")
    axis, expand = int(axis), bool(expand_nonconcat_dim)
    static = _concat_static(sps, axis, expand)
    with name_scope(name or "SparseConcat"):
        shapes = [sp.dense_shape for sp in sps]
        rank = None if static is None else len(static)
        indices = _op("SparseConcatIndices", [sp.indices for sp in sps] + shapes, dtypes.int64,
                      (None, rank), axis=axis, expand=expand)  # fmt: skip
        dense_shape = _op("SparseConcatShape", shapes, dtypes.int64, (rank,), axis=axis,
                          expand=expand)  # fmt: skip
        joined = SparseTensor(indices, concat([sp.values for sp in sps], 0), dense_shape)
        joined._shape = static
        return sparse_reorder(joined)


def sparse_slice(sp_input: Any, start: Any, size: Any, name: str | None = None) -> SparseTensor:
    """The entries of ``sp_input`` within the box at ``start`` of ``size`` (clipped to the
    dense shape), their indices relative to ``start`` (``tf.sparse.slice``).

    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     sp = SparseTensor([[0, 0], [0, 2], [1, 1], [2, 3]], [1, 2, 3, 4], [3, 4])
    ...     part = sparse_slice(sp, [1, 2], [5, 5])
    ...     with dg.Session() as sess:
    ...         value = sess.run(part)
    >>> value.indices.tolist(), value.values.tolist(), value.dense_shape.tolist()
    ([[1, 1]], [4], [2, 2])
    """
    sp = as_sparse(sp_input, "sparse_slice")
    begin = _int64_vector(start, "sparse_slice", "start")
    extent = _int64_vector(size, "sparse_slice", "size")
    rank = sp.shape.ndims
    with name_scope(name or "SparseSlice"):
        rows = _op("SparseSliceKeep", [sp.indices, begin, extent], dtypes.int64, (None,))
        dense_shape = maximum(minimum(begin + extent, sp.dense_shape) - begin, 0)
        result = SparseTensor(gather(sp.indices, rows) - begin, gather(sp.values, rows),
                              dense_shape)  # fmt: skip
    result._shape = None if rank is None else (None,) * rank
    return result


def sparse_split(
    sp_input: Any, num_split: int, axis: int, name: str | None = None
) -> list[SparseTensor]:
    """``sp_input`` cut into ``num_split`` SparseTensors along ``axis`` (``tf.sparse.split``):
    the first ``size % num_split`` pieces get one more slice than the others."""
    sp = as_sparse(sp_input, "sparse_split")
    num, axis = int(num_split), int(axis)
    if num < 1:
        raise ValueError(f"sparse_split: num_split must be >= 1; got {num_split}")
    pieces = []
    with name_scope(name or "SparseSplit"):
        for part in range(num):
            bounds = _op("SparseSplitRange", [sp.dense_shape], dtypes.int64, (2, sp.shape.ndims),
                         axis=axis, num_split=num, part=part)  # fmt: skip
            pieces.append(sparse_slice(sp, bounds[0], bounds[1]))
    return pieces


def sparse_fill_empty_rows(
    sp_input: Any, default_value: Any, name: str | None = None
) -> tuple[SparseTensor, Tensor]:
    """``sp_input`` with an entry ``default_value`` at ``[row, 0, ...]`` of every row that has
    none, and the bool vector of those rows (``tf.sparse.fill_empty_rows``); the gradient
    reaches the values and ``default_value``."""
    sp = as_sparse(sp_input, "sparse_fill_empty_rows")
    default = convert_to_tensor(default_value, dtype=sp.dtype)
    if default.shape not in (None, ()):
        raise ValueError(f"sparse_fill_empty_rows: default_value must be a scalar; got {default!r}")
    dims, rank = dense_static(sp), sp.shape.ndims
    inputs = [sp.indices, sp.values, sp.dense_shape, default]
    with name_scope(name or "SparseFillEmptyRows"):
        indices = _op("SparseFillEmptyRows", inputs, dtypes.int64, (None, rank), part="indices")
        values = _op("SparseFillEmptyRows", inputs, sp.dtype, (None,), part="values")
        empty = _op("SparseFillEmptyRows", inputs, dtypes.bool_, (dims[0],) if dims else (None,),
                    part="empty")  # fmt: skip
    result = SparseTensor(indices, values, sp.dense_shape)
    result._shape = dims
    return result, empty


def sparse_to_indicator(sp_input: Any, vocab_size: Any, name: str | None = None) -> Tensor:
    """The dense bool tensor of shape ``dense_shape[:-1] + [vocab_size]`` that is true at
    ``[i..., id]`` for each id in the last dimension of the integer ``sp_input``
    (``tf.sparse.to_indicator``)."""
    sp = as_sparse(sp_input, "sparse_to_indicator")
    if sp.dtype not in _INDEX:
        raise TypeError(f"sparse_to_indicator: the values must be int32 or int64; {sp.dtype}")
    vocab = convert_to_tensor(vocab_size)
    dims = dense_static(sp)
    known = int(vocab.op.attrs["value"]) if vocab.op.type == "Const" else None
    shape = None if dims is None else (*dims[:-1], known)
    inputs = [sp.indices, sp.values, sp.dense_shape, vocab]
    return _op("SparseToIndicator", inputs, dtypes.bool_, shape, name)


def sparse_softmax(sp_input: Any, name: str | None = None) -> SparseTensor:
    """The softmax of the values of ``sp_input`` over its last dimension, the missing
    entries left out (``tf.sparse.softmax``); the result has the same indices.

    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     sp = SparseTensor([[0, 0], [0, 2], [1, 1]], np.array([1.0, 2.0, 3.0]), [2, 3])
    ...     with dg.Session() as sess:
    ...         sess.run(sparse_softmax(sp)).values.round(4).tolist()
    [0.2689, 0.7311, 1.0]
    """
    sp = as_sparse(sp_input, "sparse_softmax")
    if not sp.dtype.is_floating:
        raise TypeError(f"sparse_softmax: the values must be floating point; {sp.dtype}")
    inputs = [sp.indices, sp.values, sp.dense_shape]
    return sp.with_values(_op("SparseSoftmax", inputs, sp.dtype, sp.values.shape, name))


def sparse_eye(
    num_rows: Any, num_columns: Any = None, dtype: Any = dtypes.float32, name: str | None = None
) -> SparseTensor:
    """The ``num_rows`` x ``num_columns`` (default: square) identity matrix as a
    SparseTensor of ``dtype`` (``tf.sparse.eye``); the sizes may be scalar tensors."""
    dtype = dtypes.as_dtype(dtype)
    with name_scope(name or "eye"):
        rows = cast(convert_to_tensor(num_rows), dtypes.int64)
        cols = rows if num_columns is None else cast(convert_to_tensor(num_columns), dtypes.int64)
        diagonal = range_(minimum(rows, cols), dtype=dtypes.int64)
        ones = cast(fill(shape_of(diagonal), 1), dtype)
        result = SparseTensor(stack([diagonal, diagonal], axis=1), ones, stack([rows, cols]))
    static = [_known_int(v) for v in (num_rows, num_rows if num_columns is None else num_columns)]
    result._shape = tuple(static)
    return result


def _known_int(value: Any) -> int | None:
    if isinstance(value, Tensor):
        return int(value.op.attrs["value"]) if value.op.type == "Const" else None
    return int(value)


def sparse_expand_dims(
    sp_input: Any, axis: int | None = None, name: str | None = None
) -> SparseTensor:
    """``sp_input`` with a new dimension of size 1 at ``axis`` (default: last), as
    ``tf.sparse.expand_dims``; ``axis`` is a Python int in ``[-rank - 1, rank]``."""
    sp = as_sparse(sp_input, "sparse_expand_dims")
    dims = dense_static(sp)
    if dims is None:
        raise ValueError("sparse_expand_dims: the rank of sp_input must be known")
    axis = -1 if axis is None else int(axis)
    if not -len(dims) - 1 <= axis <= len(dims):
        raise ValueError(f"sparse_expand_dims: axis {axis} is not in [{-len(dims) - 1}, "
                         f"{len(dims)}]")  # fmt: skip
    at = axis % (len(dims) + 1)
    with name_scope(name or "expand_dims"):
        indices = sp.indices
        zero = cast(fill(stack([shape_of(indices)[0], 1]), 0), dtypes.int64)
        new = concat([indices[:, :at], zero, indices[:, at:]], 1)
        one = convert_to_tensor(np.array([1], dtype=np.int64), dtype=dtypes.int64)
        shape = concat([sp.dense_shape[:at], one, sp.dense_shape[at:]], 0)
        result = SparseTensor(new, sp.values, shape)
    result._shape = (*dims[:at], 1, *dims[at:])
    return result


def sparse_reset_shape(sp_input: Any, new_shape: Any = None) -> SparseTensor:
    """``sp_input`` with the dense shape ``new_shape`` (each size at least the old one), or
    by default the smallest one holding its indices (``tf.sparse.reset_shape``)."""
    sp = as_sparse(sp_input, "sparse_reset_shape")
    inputs = [sp.indices, sp.dense_shape]
    static = None if sp.shape.ndims is None else (None,) * sp.shape.ndims
    if new_shape is not None:
        wanted = _int64_vector(new_shape, "sparse_reset_shape", "new_shape")
        known, dims = constant_shape(wanted), dense_static(sp)
        if known is not None and dims is not None and None not in dims:
            if len(known) != len(dims) or any(w < d for w, d in zip(known, dims, strict=True)):
                raise ValueError(_too_small(known, dims))
        inputs.append(wanted)
        static = known if known is not None else static
    with name_scope("SparseResetShape"):
        shape = _op("SparseResetShape", inputs, dtypes.int64, (sp.shape.ndims,))
    result = SparseTensor(sp.indices, sp.values, shape)
    result._shape = static
    return result


# -- gradients ------------------------------------------------------------------------------------
@register_gradient("SparseFillEmptyRows")
def _fill_empty_rows_grad(op: Operation, grad: Tensor) -> list[Tensor | None]:
    if op.attrs["part"] != "values":
        return [None] * 4
    reverse = _op("SparseFillEmptyRows", list(op.inputs), dtypes.int64, op.inputs[1].shape,
                  part="reverse")  # fmt: skip
    values_grad = gather(grad, reverse)
    return [None, values_grad, None, reduce_sum(grad) - reduce_sum(values_grad)]


@register_gradient("SparseSoftmax")
def _softmax_grad(op: Operation, grad: Tensor) -> list[Tensor | None]:
    indices, values, shape = op.inputs
    g = _op("SparseSoftmaxGrad", [indices, shape, op.outputs[0], grad], grad.dtype, values.shape)
    return [None, g, None]


for _type in ("SparseReorderPerm", "SparseReshapeIndices", "SparseReshapeShape",
              "SparseConcatIndices", "SparseConcatShape", "SparseSliceKeep", "SparseSplitRange",
              "SparseToIndicator", "SparseSoftmaxGrad", "SparseResetShape"):  # fmt: skip
    no_gradient(_type)
