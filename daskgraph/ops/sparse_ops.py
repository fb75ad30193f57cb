"""Sparse tensors in and out of dense ones, and their arithmetic: ``sparse_placeholder``,
``sparse_tensor_to_dense``, TF1's ``sparse_to_dense``, ``from_dense``, ``sparse_add``,
``sparse_tensor_dense_matmul`` and ``sparse_reduce_sum``/``max``, as TensorFlow 1 has them.

Each op has one output, so an op with a sparse result is several ops, one per component it
computes (``SparseAddIndices``, ``SparseAddValues``); the dense shape of a result is a tensor
that exists already. Gradients flow to the values (and dense operands), as TensorFlow's:
``sparse_tensor_dense_matmul``, ``sparse_reduce_sum``, ``sparse_tensor_to_dense`` and
``sparse_add`` have them; ``sparse_reduce_max`` has none. Indices are checked when the op runs
(in bounds; in row-major order without repeats where TensorFlow checks it), with TensorFlow's
messages. The kernels are written over the array API; merging two sparse tensors
(``SparseAdd*``) runs on the CPU only, as in TensorFlow.

>>> import daskgraph as dg
>>> from daskgraph.ops.sparse_tensor import SparseTensor
>>> with dg.Graph().as_default():
...     sp = SparseTensor([[0, 0], [1, 2]], [1.0, 2.0], [2, 3])
...     dense = sparse_tensor_to_dense(sp)
...     total = sparse_reduce_sum(sp, axis=1)
...     with dg.Session() as sess:
...         sess.run(dense).tolist(), sess.run(total).tolist()
([[1.0, 0.0, 0.0], [0.0, 0.0, 2.0]], [1.0, 2.0])
"""

from __future__ import annotations

from typing import Any

import numpy as np

from daskgraph.errors import quote
from daskgraph.framework import dtypes
from daskgraph.framework.gradient_registry import no_gradient, register_gradient
from daskgraph.framework.graph import Operation, Shape, Tensor, get_default_graph, name_scope
from daskgraph.framework.op_registry import CPU_ALL, GPU_NUMERIC, register
from daskgraph.framework.tensor_shape import dimension_value
from daskgraph.kernels.sparse_ops import (
    _reduced,
    _sparse_add_grad_kernel,
    _sparse_add_indices_kernel,
    _sparse_add_values_kernel,
    _sparse_dense_add_kernel,
    _sparse_matmul_kernel,
    _sparse_reduce_kernel,
    _sparse_reduce_sum_grad_kernel,
    _sparse_to_dense_grad_kernel,
    _sparse_to_dense_kernel,
)
from daskgraph.ops.array import cast, constant, convert_to_tensor, placeholder, transpose
from daskgraph.ops.array import placeholder_with_default as _with_default
from daskgraph.ops.indexing import gather_nd
from daskgraph.ops.logic import not_equal, where
from daskgraph.ops.math import reduce_sum
from daskgraph.ops.shape_ops import shape as shape_of
from daskgraph.ops.slicing import gather
from daskgraph.ops.sparse_tensor import SparseTensor, as_sparse, constant_shape, is_sparse

__all__ = [
    "from_dense",
    "sparse_add",
    "sparse_placeholder",
    "sparse_reduce_max",
    "sparse_reduce_sum",
    "sparse_tensor_dense_matmul",
    "sparse_tensor_to_dense",
    "sparse_to_dense",
]

_NUM = dtypes.NUMERIC
_INDEX = frozenset({dtypes.int32, dtypes.int64})


register("SparseToDense", _sparse_to_dense_kernel, cpu=CPU_ALL, gpu=GPU_NUMERIC)
register("SparseToDenseGrad", _sparse_to_dense_grad_kernel, cpu=_NUM, gpu=_NUM)
register("SparseTensorDenseAdd", _sparse_dense_add_kernel, cpu=_NUM, gpu=_NUM)
register("SparseAddIndices", _sparse_add_indices_kernel, cpu=_NUM, gpu=None)
register("SparseAddValues", _sparse_add_values_kernel, cpu=_NUM, gpu=None)
register("SparseAddGrad", _sparse_add_grad_kernel, cpu=_NUM, gpu=_NUM)
register("SparseTensorDenseMatMul", _sparse_matmul_kernel, cpu=_NUM, gpu=_NUM)
register("SparseReduceSum", _sparse_reduce_kernel, cpu=_NUM, gpu=_NUM)
register("SparseReduceMax", _sparse_reduce_kernel, cpu=_NUM, gpu=_NUM)
register("SparseReduceSumGrad", _sparse_reduce_sum_grad_kernel, cpu=_NUM, gpu=_NUM)


# -- builders -------------------------------------------------------------------------------------
def dense_static(sp: SparseTensor) -> Shape | None:
    """The static dense shape of ``sp`` as a plain tuple (None for an unknown rank)."""
    return sp.shape._raw()


def _op(op_type: str, inputs: list[Tensor], dtype: Any, shape: Any, name: Any, **attrs) -> Tensor:
    op = get_default_graph().create_op(
        op_type, inputs, dtype=dtype, shape=shape, attrs=attrs, name=name or op_type
    )
    return op.outputs[0]


def sparse_placeholder(dtype: Any, shape: Any = None, name: str | None = None) -> SparseTensor:
    """A SparseTensor whose three tensors are fed (``tf.sparse_placeholder``): ``indices``
    and ``values`` are placeholders, ``dense_shape`` one too, or, when ``shape`` is given (a
    list, or a 1-D integer tensor), a ``placeholder_with_default`` holding it (``-1`` for its
    unknown sizes).

    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     sp = sparse_placeholder(dg.float32, [None, 3], name="ids")
    ...     total = sparse_reduce_sum(sp)
    ...     with dg.Session() as sess:
    ...         got = sess.run(total, {sp: ([[0, 1], [4, 2]], [1.5, 2.0], [5, 3])})
    >>> float(got), sp.shape, sp.values.name, sp.dense_shape.op.type
    (3.5, (None, 3), 'ids/values:0', 'PlaceholderWithDefault')
    """
    part = (lambda what: f"{name}/{what}") if name is not None else (lambda what: None)
    if shape is None:
        rank, known = None, None
        dense_shape = placeholder(dtypes.int64, [None], name=part("shape"))
    elif isinstance(shape, Tensor):  # a shape computed by the graph: its default value
        default = shape if shape.dtype is dtypes.int64 else cast(shape, dtypes.int64)
        rank = None if shape.shape is None else shape.shape[0]
        known = constant_shape(shape)
        known = tuple(None if d < 0 else d for d in known) if known is not None else None
        known = known if known is not None or rank is None else (None,) * rank
        dense_shape = _with_default(default, [rank], name=part("shape"))
    else:
        sizes = (dimension_value(d) for d in shape)
        known = tuple(None if d is None or d == -1 else int(d) for d in sizes)
        rank = len(known)
        value = [-1 if d is None else d for d in known]
        default = constant(value, dtype=dtypes.int64, name=part("shape_default") or "Const")
        dense_shape = _with_default(default, [rank], name=part("shape"))
    values = placeholder(dtype, [None], name=part("values"))
    indices = placeholder(dtypes.int64, [None, rank], name=part("indices"))
    result = SparseTensor(indices, values, dense_shape)
    result._shape = known
    return result


def _default_of(dtype: dtypes.DType, value: Any) -> Tensor:
    if value is None:
        value = b"" if dtype is dtypes.string else 0
    return convert_to_tensor(value, dtype=dtype)


def sparse_tensor_to_dense(
    sp_input: Any, default_value: Any = None, validate_indices: bool = True, name: str | None = None
) -> Tensor:
    """The dense tensor of ``sp_input``: its values at its indices, ``default_value`` (zero)
    elsewhere (``tf.sparse.to_dense``). With ``validate_indices`` the indices must be in
    row-major order without repeats."""
    sp = as_sparse(sp_input, "sparse_tensor_to_dense")
    default = _default_of(sp.dtype, default_value)
    return _op("SparseToDense", [sp.indices, sp.dense_shape, sp.values, default], sp.dtype,
               dense_static(sp), name, validate_indices=bool(validate_indices))  # fmt: skip


def _shape_input(value: Any, where: str) -> Tensor:
    """A dense shape argument as a 1-D integer tensor."""
    if isinstance(value, Tensor):
        if value.dtype not in _INDEX:
            raise TypeError(f"{where}: output_shape must be int32 or int64; got {value!r}")
        return value
    return constant(np.asarray(value, dtype=np.int64).reshape(-1), dtype=dtypes.int64)


def sparse_to_dense(
    sparse_indices: Any,
    output_shape: Any,
    sparse_values: Any,
    default_value: Any = 0,
    validate_indices: bool = True,
    name: str | None = None,
) -> Tensor:
    """A dense tensor of ``output_shape`` holding ``sparse_values`` (one per index, or one
    for all) at ``sparse_indices`` (a scalar, a vector of positions in a vector, or a matrix
    of coordinates) and ``default_value`` elsewhere (TF1's ``tf.sparse_to_dense``).

    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     d = sparse_to_dense([[0, 1], [2, 3]], [3, 4], 7, default_value=-1)
    ...     with dg.Session() as sess:
    ...         sess.run(d).tolist()
    [[-1, 7, -1, -1], [-1, -1, -1, -1], [-1, -1, -1, 7]]
    """
    indices = convert_to_tensor(sparse_indices)
    if indices.dtype not in _INDEX:
        raise TypeError(f"sparse_to_dense: sparse_indices must be integers; got {indices!r}")
    shape = _shape_input(output_shape, "sparse_to_dense")
    values = convert_to_tensor(sparse_values)
    default = convert_to_tensor(default_value, dtype=values.dtype)
    static = constant_shape(shape)
    if static is None and shape.shape is not None and shape.shape[0] is not None:
        static = (None,) * shape.shape[0]
    return _op("SparseToDense", [indices, shape, values, default], values.dtype, static, name,
               validate_indices=bool(validate_indices))  # fmt: skip


def from_dense(tensor: Any, name: str | None = None) -> SparseTensor:
    """The SparseTensor of the non-zero (non-empty) entries of ``tensor``, in row-major
    order (``tf.sparse.from_dense``).

    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     sp = from_dense([[0, 1, 0], [2, 0, 3]])
    ...     with dg.Session() as sess:
    ...         value = sess.run(sp)
    >>> value.indices.tolist(), value.values.tolist(), sp.shape
    ([[0, 1], [1, 0], [1, 2]], [1, 2, 3], (2, 3))
    """
    with name_scope(name or "dense_to_sparse"):
        x = convert_to_tensor(tensor)
        indices = where(not_equal(x, _default_of(x.dtype, None)))
        values = gather_nd(x, indices)
        return SparseTensor(indices, values, shape_of(x, out_type=dtypes.int64))


def sparse_add(a: Any, b: Any, threshold: Any = 0, name: str | None = None) -> Any:
    """``a + b`` where one or both are sparse (``tf.sparse.add``): a dense tensor when one is
    dense; else a SparseTensor in row-major order, where a place in both holds the sum, kept
    when its magnitude is at least ``threshold``. The indices of each must be unique.

    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     a = SparseTensor([[0, 0], [1, 1]], [1.0, 3.0], [2, 2])
    ...     b = SparseTensor([[0, 1], [1, 1]], [5.0, -3.0], [2, 2])
    ...     s = sparse_add(a, b, threshold=0.5)
    ...     with dg.Session() as sess:
    ...         value = sess.run(s)
    >>> value.indices.tolist(), value.values.tolist()
    ([[0, 0], [0, 1]], [1.0, 5.0])
    """
    sparse = [is_sparse(a), is_sparse(b)]
    if not any(sparse):
        raise TypeError("sparse_add: at least one input should be a SparseTensor")
    if not all(sparse):
        sp, dense = (a, b) if sparse[0] else (b, a)
        return _sparse_dense_add(as_sparse(sp, "sparse_add"), dense, name)
    a, b = as_sparse(a, "sparse_add"), as_sparse(b, "sparse_add")
    if a.dtype is not b.dtype:
        raise TypeError(f"sparse_add: the values' dtypes differ: {a.dtype} and {b.dtype}")
    a.shape.assert_is_compatible_with(b.shape)
    thresh = convert_to_tensor(threshold, dtype=a.dtype)
    with name_scope(name or "SparseAdd"):
        inputs = [a.indices, a.values, a.dense_shape, b.indices, b.values, b.dense_shape, thresh]
        rank = a.shape.ndims if a.shape.ndims is not None else b.shape.ndims
        indices = _op("SparseAddIndices", inputs, dtypes.int64, (None, rank), None)
        values = _op("SparseAddValues", inputs, a.dtype, (None,), None)
    result = SparseTensor(indices, values, a.dense_shape)
    result._shape = a.shape.merge_with(b.shape)._raw()
    return result


def _sparse_dense_add(sp: SparseTensor, dense: Any, name: str | None) -> Tensor:
    x = convert_to_tensor(dense, dtype=sp.dtype)
    sp.shape.assert_is_compatible_with(x.get_shape())
    shape = x.shape if x.shape is not None else dense_static(sp)
    return _op("SparseTensorDenseAdd", [sp.indices, sp.values, sp.dense_shape, x], sp.dtype,
               shape, name)  # fmt: skip


def sparse_tensor_dense_matmul(
    sp_a: Any, b: Any, adjoint_a: bool = False, adjoint_b: bool = False, name: str | None = None
) -> Tensor:
    """The dense product of the sparse matrix ``sp_a`` (its transpose with ``adjoint_a``)
    and the dense matrix ``b`` (its transpose with ``adjoint_b``), as
    ``tf.sparse.sparse_dense_matmul``; differentiable in the values and in ``b``.

    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     a = SparseTensor([[0, 1], [1, 0]], [2.0, 3.0], [2, 2])
    ...     y = sparse_tensor_dense_matmul(a, [[1.0, 2.0], [3.0, 4.0]])
    ...     with dg.Session() as sess:
    ...         sess.run(y).tolist()
    [[6.0, 8.0], [3.0, 6.0]]
    """
    sp = as_sparse(sp_a, "sparse_tensor_dense_matmul")
    x = convert_to_tensor(b, dtype=sp.dtype)
    dims = dense_static(sp)
    if dims is not None and len(dims) != 2:
        raise ValueError(f"sparse_tensor_dense_matmul: sp_a must be a matrix; its shape is {dims}")
    if x.shape is not None and len(x.shape) != 2:
        raise ValueError(f"sparse_tensor_dense_matmul: b must be a matrix; {x.name!r} is {x.shape}")
    rows, inner = (dims[::-1] if adjoint_a else dims) if dims is not None else (None, None)
    b_inner, cols = (x.shape[::-1] if adjoint_b else x.shape) if x.shape else (None, None)
    if inner is not None and b_inner is not None and inner != b_inner:
        raise ValueError(
            f"sparse_tensor_dense_matmul: the inner dimensions differ: {inner} for sp_a and "
            f"{b_inner} for b"
        )
    inputs = [sp.indices, sp.values, sp.dense_shape, x]
    adjoints = {"adjoint_a": bool(adjoint_a), "adjoint_b": bool(adjoint_b)}
    return _op("SparseTensorDenseMatMul", inputs, sp.dtype, (rows, cols), name, **adjoints)


def _axes(axis: Any, where: str) -> tuple[int, ...] | None:
    if axis is None:
        return None
    values = np.asarray(axis).reshape(-1) if not isinstance(axis, Tensor) else None
    if values is None or values.dtype.kind not in "iu":
        raise TypeError(f"{where}: axis must be None or Python ints; got {quote(axis)}")
    return tuple(int(a) for a in values)


def _reduction(kind: str, sp_input: Any, axis: Any, keepdims: bool, name: Any) -> Tensor:
    where = f"sparse_reduce_{kind}"
    sp = as_sparse(sp_input, where)
    if not sp.dtype.is_numeric:
        raise TypeError(f"{where}: expects numbers; the values are {sp.dtype.name}")
    axes = _axes(axis, where)
    dims = dense_static(sp)
    shape: Shape | None = None
    if dims is not None:
        reduced = _reduced(dims, axes)
        shape = tuple(1 if i in reduced else d for i, d in enumerate(dims))
        if not keepdims:
            shape = tuple(d for i, d in enumerate(dims) if i not in reduced)
    op_type = "SparseReduceSum" if kind == "sum" else "SparseReduceMax"
    return _op(op_type, [sp.indices, sp.values, sp.dense_shape], sp.dtype, shape, name,
               axes=axes, keepdims=bool(keepdims), kind=kind)  # fmt: skip


def sparse_reduce_sum(
    sp_input: Any, axis: Any = None, keepdims: bool = False, name: str | None = None
) -> Tensor:
    """The dense sum of ``sp_input`` over ``axis`` (Python ints; all axes by default), as
    ``tf.sparse.reduce_sum``; differentiable in the values."""
    return _reduction("sum", sp_input, axis, keepdims, name)


def sparse_reduce_max(
    sp_input: Any, axis: Any = None, keepdims: bool = False, name: str | None = None
) -> Tensor:
    """The dense maximum of the values of ``sp_input`` over ``axis`` (``tf.sparse.reduce_max``):
    the missing entries do not take part, and a place without any value is 0. Not
    differentiable, as in TensorFlow."""
    return _reduction("max", sp_input, axis, keepdims, name)


# -- gradients ------------------------------------------------------------------------------------
@register_gradient("SparseToDense")
def _sparse_to_dense_grad(op: Operation, grad: Tensor) -> list[Tensor | None]:
    indices, _, values, _ = op.inputs
    g = _op("SparseToDenseGrad", [grad, indices, values], grad.dtype, values.shape, None)
    return [None, None, g, None]


@register_gradient("SparseTensorDenseAdd")
def _sparse_dense_add_grad(op: Operation, grad: Tensor) -> list[Tensor | None]:
    return [None, gather_nd(grad, op.inputs[0]), None, grad]


@register_gradient("SparseAddValues")
def _sparse_add_grad(op: Operation, grad: Tensor) -> list[Tensor | None]:
    a_idx, _, a_shape, b_idx = op.inputs[:4]
    total = _op("SparseAddIndices", list(op.inputs), dtypes.int64, (None, None), None)
    ga, gb = (_op("SparseAddGrad", [grad, idx, total, a_shape], grad.dtype, (None,), None)
              for idx in (a_idx, b_idx))  # fmt: skip
    return [None, ga, None, None, gb, None, None]


@register_gradient("SparseTensorDenseMatMul")
def _sparse_matmul_grad(op: Operation, grad: Tensor) -> list[Tensor | None]:
    indices, values, shape, b = op.inputs
    adjoint_a, adjoint_b = op.attrs["adjoint_a"], op.attrs["adjoint_b"]
    rows, cols = indices[:, 0], indices[:, 1]
    if adjoint_a:
        rows, cols = cols, rows
    b_used = transpose(b) if adjoint_b else b
    values_grad = reduce_sum(gather(grad, rows) * gather(b_used, cols), axis=1)
    b_shape = b_used.shape
    b_grad = _op("SparseTensorDenseMatMul", [indices, values, shape, grad], grad.dtype,
                 b_shape, None, adjoint_a=not adjoint_a, adjoint_b=False)  # fmt: skip
    return [None, values_grad, None, transpose(b_grad) if adjoint_b else b_grad]


@register_gradient("SparseReduceSum")
def _sparse_reduce_sum_grad(op: Operation, grad: Tensor) -> list[Tensor | None]:
    indices, values, shape = op.inputs
    g = _op("SparseReduceSumGrad", [grad, indices, shape], grad.dtype, values.shape, None,
            axes=op.attrs["axes"])  # fmt: skip
    return [None, g, None]


for _type in ("SparseReduceMax", "SparseAddIndices", "SparseAddGrad", "SparseToDenseGrad",
              "SparseReduceSumGrad"):  # fmt: skip
    no_gradient(_type)
