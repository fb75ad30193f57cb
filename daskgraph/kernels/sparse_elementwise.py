"""Elementwise sparse kernels: a sparse tensor times, divided by or the maximum of a dense one.

The kernels of :mod:`daskgraph.ops.sparse_elementwise`'s ops, each ``kernel(xp, *inputs, **attrs)``.
"""

from __future__ import annotations

from daskgraph.kernels.indexing import scatter_into
from daskgraph.kernels.sparse_ops import check_indices, dense_dims, linear_index


# -- kernels --------------------------------------------------------------------------------------
def _places(xp, indices, shape, dense_shape):
    """The index of ``dense[...]`` at each entry, ``dense`` broadcast to the dense shape (its
    dimensions aligned to the last ones); TensorFlow's error where it does not broadcast."""
    dims = dense_dims(xp, shape, "SparseTensor * dense")
    lead = len(dims) - len(dense_shape)
    if lead < 0 or any(d not in (1, dims[lead + k]) for k, d in enumerate(dense_shape)):
        raise ValueError(
            "SparseDenseBinaryOpShared broadcasts dense to sparse only; got incompatible "
            f"shapes: [{','.join(map(str, dims))}] vs. [{','.join(map(str, dense_shape))}]"
        )
    check_indices(xp, indices, dims, ordered=False)
    zero = xp.zeros(indices.shape[0], dtype=indices.dtype)
    return tuple(zero if d == 1 else indices[:, lead + k] for k, d in enumerate(dense_shape))


def _gather_kernel(xp, indices, shape, dense):
    index = _places(xp, indices, shape, dense.shape)
    if not index:
        return xp.full(indices.shape[0], dense, dtype=dense.dtype)
    return dense[index]


def _gather_grad_kernel(xp, grad, indices, shape, dense):
    index = _places(xp, indices, shape, dense.shape)
    if not index:
        return grad.sum().astype(grad.dtype)
    return scatter_into(xp, xp.zeros(dense.shape, dtype=grad.dtype), index, grad)


def _extremum(xp, a_idx, a_val, a_shape, b_idx, b_val, b_shape, *, kind):
    """The union of two SparseTensors' entries in row-major order, each the larger (smaller)
    of its two values, a missing one counting as 0."""
    dims, other = dense_dims(xp, a_shape, "sparse_" + kind), dense_dims(xp, b_shape, kind)
    if dims != other:
        raise ValueError(f"Operands do not have the same shapes: [{','.join(map(str, dims))}] "
                         f"and [{','.join(map(str, other))}]")  # fmt: skip
    for idx in (a_idx, b_idx):
        check_indices(xp, idx, dims, ordered=False)
    idx = xp.concatenate([a_idx, b_idx]).reshape(-1, len(dims))
    val = xp.concatenate([a_val, b_val])
    place = linear_index(xp, idx, dims)
    order = xp.argsort(place, kind="stable")
    place, idx, val = place[order], idx[order], val[order]
    pair = place[1:] == place[:-1]
    first = xp.concatenate([pair, xp.zeros(1, dtype=bool)])
    second = xp.concatenate([xp.zeros(1, dtype=bool), pair])
    pick = xp.maximum if kind == "maximum" else xp.minimum
    out = pick(val, xp.zeros((), dtype=val.dtype))  # alone: against the implicit zero
    out[first] = pick(val[first], val[second])
    return idx[~second], out[~second]


def _extremum_indices_kernel(xp, *inputs, kind):
    return _extremum(xp, *inputs, kind=kind)[0]


def _extremum_values_kernel(xp, *inputs, kind):
    return _extremum(xp, *inputs, kind=kind)[1]
