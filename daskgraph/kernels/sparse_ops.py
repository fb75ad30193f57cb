"""Sparse-tensor kernels: conversions to and from dense tensors, sums, products and reductions.

The kernels of :mod:`daskgraph.ops.sparse_ops`'s ops, each ``kernel(xp, *inputs, **attrs)``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from daskgraph.kernels.fill_ops import runtime_shape
from daskgraph.kernels.indexing import nd_index, scatter_into


# -- kernel helpers (shared by the other sparse op modules) -----------------------------------
def dense_dims(xp: Any, dense_shape: Any, where: str) -> tuple[int, ...]:
    """The run-time dense shape as a tuple of ints."""
    return runtime_shape(xp, dense_shape, where)


def linear_index(xp: Any, indices: Any, dims: tuple[int, ...]) -> Any:
    """Each row of coordinates as its position in the row-major dense tensor (int64).

    >>> linear_index(np, np.array([[0, 1], [2, 0]]), (3, 2)).tolist()
    [1, 4]
    """
    strides = np.cumprod((1, *dims[:0:-1]), dtype=np.int64)[::-1].copy()
    return (xp.asarray(indices, dtype=np.int64) * xp.asarray(strides)).sum(axis=1)


def check_indices(xp: Any, indices: Any, dims: tuple[int, ...], ordered: bool) -> None:
    """Raise TensorFlow's errors for coordinates out of ``dims`` and, with ``ordered``, for
    rows out of row-major order or repeated."""
    if indices.ndim != 2 or indices.shape[1] != len(dims):
        raise ValueError(
            f"indices must be a matrix of {len(dims)} columns (the rank of the dense shape "
            f"{list(dims)}); got shape {list(indices.shape)}"
        )
    if not indices.shape[0]:
        return
    bad = ((indices < 0) | (indices >= xp.asarray(dims, dtype=indices.dtype))).any(axis=1)
    if bool(bad.any()):
        i = int(xp.argmax(bad))
        raise ValueError(
            f"indices[{i}] = [{_coords(indices[i])}] is out of bounds: need 0 <= index < "
            f"[{','.join(str(d) for d in dims)}]"
        )
    if ordered:
        steps = xp.diff(linear_index(xp, indices, dims))
        wrong = steps <= 0
        if bool(wrong.any()):
            i = int(xp.argmax(wrong)) + 1
            what = (
                "is repeated"
                if int(steps[i - 1]) == 0
                else "is out of order. Many sparse ops require sorted indices.\n    Use "
                "`tf.sparse.reorder` to create a correctly ordered copy."
            )
            raise ValueError(f"indices[{i}] = [{_coords(indices[i])}] {what}")


def _coords(row: Any) -> str:
    return ",".join(str(int(v)) for v in row.tolist())


# -- kernels --------------------------------------------------------------------------------------
def _sparse_to_dense_kernel(xp, indices, shape, values, default, *, validate_indices):
    dims = dense_dims(xp, shape, "sparse_to_dense")
    indices = xp.asarray(indices)
    indices = indices.reshape(1, 1) if indices.ndim == 0 else indices
    indices = indices.reshape(-1, 1) if indices.ndim == 1 else indices
    values = xp.asarray(values)
    n = indices.shape[0]
    if values.ndim > 1 or (values.ndim == 1 and values.shape[0] != n):
        raise ValueError(
            f"sparse_values has incorrect shape {list(values.shape)}, should be [] or [{n}]"
        )
    check_indices(xp, indices, dims, ordered=validate_indices)
    out = xp.full(dims, xp.asarray(default, dtype=values.dtype), dtype=values.dtype)
    if n:
        out[tuple(indices[:, k] for k in range(len(dims)))] = values
    return out


def _sparse_to_dense_grad_kernel(xp, grad, indices, values):
    indices = xp.asarray(indices).reshape(-1, grad.ndim) if grad.ndim else indices
    picked = grad[tuple(indices[:, k] for k in range(grad.ndim))]
    return picked.sum() if values.ndim == 0 else picked


def _sparse_dense_add_kernel(xp, indices, values, shape, dense):
    dims = dense_dims(xp, shape, "sparse_add")
    if len(dims) != dense.ndim:
        raise ValueError(
            f"Input ranks differ: the sparse side has dense shape {list(dims)}, the dense side "
            f"shape {list(dense.shape)}"
        )
    for d, (a, b) in enumerate(zip(dims, dense.shape, strict=True)):
        if a != b:
            raise ValueError(
                f"Dimension {d} does not equal (no broadcasting is supported): sparse side {a} "
                f"vs dense side {b}"
            )
    out = xp.array(dense, copy=True)
    index = nd_index(xp, dims, indices, "sparse_add")
    return scatter_into(xp, out, index, xp.asarray(values, dtype=out.dtype))


def _same_dims(xp: Any, a_shape: Any, b_shape: Any) -> tuple[int, ...]:
    a, b = dense_dims(xp, a_shape, "sparse_add"), dense_dims(xp, b_shape, "sparse_add")
    if len(a) != len(b):
        raise ValueError(
            f"Operands do not have the same ranks; got shapes: [{_coords(np.array(a))}] and "
            f"[{_coords(np.array(b))}]"
        )
    for d, (x, y) in enumerate(zip(a, b, strict=True)):
        if x != y:
            raise ValueError(f"Operands' shapes do not match: got {x} and {y} for dimension {d}")
    return a


def _merged(xp, a_idx, a_val, a_shape, b_idx, b_val, b_shape, thresh):
    """The sum of two sparse tensors in row-major order: places in both are added, and kept
    when the sum's magnitude is at least ``thresh`` (TensorFlow's ``SparseAdd``)."""
    dims = _same_dims(xp, a_shape, b_shape)
    for idx in (a_idx, b_idx):
        check_indices(xp, idx, dims, ordered=False)
    idx = xp.concatenate([a_idx, b_idx]).reshape(-1, len(dims))
    val = xp.concatenate([a_val, b_val])
    place = linear_index(xp, idx, dims)
    order = xp.argsort(place, kind="stable")  # a's entry before b's at the same place
    place, idx, val = place[order], idx[order], val[order]
    pair = place[1:] == place[:-1]
    first = xp.concatenate([pair, xp.zeros(1, dtype=bool)])
    second = xp.concatenate([xp.zeros(1, dtype=bool), pair])
    total = xp.array(val, copy=True)
    total[first] = val[first] + val[second]
    keep = ~second & (~first | (xp.abs(total) >= thresh))
    return idx[keep], total[keep]


def _sparse_add_indices_kernel(xp, *inputs):
    return _merged(xp, *inputs)[0]


def _sparse_add_values_kernel(xp, *inputs):
    return _merged(xp, *inputs)[1]


def _sparse_add_grad_kernel(xp, grad, indices, sum_indices, shape):
    """The gradient of one operand's values: the sum's gradient where its entry went."""
    dims = dense_dims(xp, shape, "sparse_add")
    place = linear_index(xp, indices.reshape(-1, len(dims)), dims)
    sum_place = linear_index(xp, sum_indices.reshape(-1, len(dims)), dims)
    out = xp.zeros(place.shape, dtype=grad.dtype)
    if sum_place.size:
        at = xp.minimum(xp.searchsorted(sum_place, place), sum_place.size - 1)
        out = xp.where(sum_place[at] == place, grad[at], out)
    return out


def _sparse_matmul_kernel(xp, indices, values, shape, b, *, adjoint_a, adjoint_b):
    dims = dense_dims(xp, shape, "sparse_tensor_dense_matmul")
    if len(dims) != 2:
        raise ValueError(f"Tensor 'a_shape' must have 2 elements; it is {list(dims)}")
    check_indices(xp, indices, dims, ordered=False)
    rows, cols = indices[:, 0], indices[:, 1]
    if adjoint_a:
        rows, cols, dims = cols, rows, dims[::-1]
    b = b.T if adjoint_b else b
    if dims[1] != b.shape[0]:
        raise ValueError(
            "Cannot multiply A and B because inner dimension does not match: "
            f"{dims[1]} vs. {b.shape[0]}.  Did you forget a transpose?"
        )
    out = xp.zeros((dims[0], b.shape[1]), dtype=b.dtype)
    if values.size:
        scatter_into(xp, out, (rows,), values[:, None] * b[cols])
    return out


def _reduced(dims: tuple[int, ...], axes: tuple[int, ...] | None) -> tuple[int, ...]:
    """The reduced axes, made non-negative, with TensorFlow's error for one out of range."""
    if axes is None:
        return tuple(range(len(dims)))
    for a in axes:
        if not -len(dims) <= a < len(dims):
            raise ValueError(
                f"Invalid reduction dimension {a}, for input with {len(dims)} dimensions."
            )
    return tuple(sorted({a % len(dims) for a in axes}))


def _kept_index(xp, indices, dims, axes):
    """Each entry's place in the output with the reduced dimensions kept as size 1."""
    kept = tuple(1 if i in axes else d for i, d in enumerate(dims))
    check_indices(xp, indices, dims, ordered=False)
    index = tuple(
        xp.zeros(indices.shape[0], dtype=indices.dtype) if k in axes else indices[:, k]
        for k in range(len(dims))
    )
    return kept, index


def _sparse_reduce_kernel(xp, indices, values, shape, *, axes, keepdims, kind):
    dims = dense_dims(xp, shape, f"sparse_reduce_{kind}")
    axes = _reduced(dims, axes)
    kept, index = _kept_index(xp, indices, dims, axes)
    if kind == "sum":
        out = scatter_into(xp, xp.zeros(kept, dtype=values.dtype), index, values)
    else:  # places without any entry are 0, as TensorFlow's
        info = np.finfo if np.dtype(values.dtype).kind == "f" else np.iinfo
        out = xp.full(kept, info(values.dtype).min, dtype=values.dtype)
        out = scatter_into(xp, out, index, values, "maximum")
        seen = scatter_into(xp, xp.zeros(kept, dtype=np.int32), index, 1)
        out = xp.where(seen > 0, out, xp.zeros((), dtype=values.dtype))
    if keepdims:
        return out
    return out.reshape(tuple(d for i, d in enumerate(dims) if i not in axes))


def _sparse_reduce_sum_grad_kernel(xp, grad, indices, shape, *, axes):
    dims = dense_dims(xp, shape, "sparse_reduce_sum")
    kept, index = _kept_index(xp, indices, dims, _reduced(dims, axes))
    return xp.asarray(grad).reshape(kept)[index]
