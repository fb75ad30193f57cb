"""Segment kernels: segment reductions and counts over sorted and unsorted ids.

The kernels of :mod:`daskgraph.ops.segments`'s ops, each ``kernel(xp, *inputs, **attrs)``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from daskgraph.errors import InvalidArgumentError

#: what CuPy scatters on a GPU (cupyx.scatter_add/max/min); other dtypes go through the host
_GPU_SCATTER = ("float32", "float64", "int32")


# -- kernels --------------------------------------------------------------------------------------
def _scatter(xp, kind: str, out, ids, values) -> None:
    """``out[ids] (+|max|min|*)= values``, repeated ids accumulating."""
    if xp is np:
        {"sum": np.add, "max": np.maximum, "min": np.minimum, "prod": np.multiply}[kind].at(
            out, ids, values
        )
    elif kind != "prod" and out.dtype.name in _GPU_SCATTER:
        import cupyx  # only on CuPy workers

        getattr(cupyx, f"scatter_{'add' if kind == 'sum' else kind}")(out, ids, values)
    else:  # what CuPy cannot scatter goes through the host
        host = xp.asnumpy(out)
        ids = tuple(map(xp.asnumpy, ids)) if isinstance(ids, tuple) else xp.asnumpy(ids)
        _scatter(np, kind, host, ids, xp.asnumpy(values))
        out[...] = xp.asarray(host)


def _initial(xp, kind: str, dtype) -> Any:
    if kind in ("sum", "mean"):
        return 0
    if kind == "prod":
        return 1
    info = np.finfo(dtype) if np.dtype(dtype).kind == "f" else np.iinfo(dtype)
    return info.min if kind == "max" else info.max


def _rows(xp, data, ids, num: int, kind: str, empty_zero: bool):
    """The segment reduction: ``num`` rows, ``ids`` already checked and non-negative."""
    inner = data.shape[ids.ndim :]
    flat_ids = ids.reshape(-1)
    flat = data.reshape((flat_ids.shape[0], *inner))
    out = xp.full((num, *inner), _initial(xp, kind, data.dtype), dtype=data.dtype)
    _scatter(xp, "sum" if kind == "mean" else kind, out, flat_ids, flat)
    if kind == "mean" or (empty_zero and kind in ("max", "min")):
        counts = xp.bincount(flat_ids, minlength=num).reshape((num,) + (1,) * len(inner))
        if kind == "mean":
            return (out / xp.maximum(counts, 1)).astype(data.dtype)
        return xp.where(counts > 0, out, xp.zeros((), dtype=data.dtype))
    return out


def _sorted_segments(xp, data, ids, *, kind):
    ids = xp.asarray(ids)
    if ids.ndim != 1 or (data.ndim == 0 or ids.shape[0] != data.shape[0]):
        raise InvalidArgumentError(
            f"segment_ids should be the same size as dimension 0 of input; segment_ids shape "
            f"{list(ids.shape)}, data shape {list(data.shape)}",
            op=f"Segment{kind.capitalize()}",
        )
    if ids.size and bool(xp.any(ids[1:] < ids[:-1])):
        raise InvalidArgumentError("segment ids are not increasing", op="Segment")
    num = int(ids[-1]) + 1 if ids.size else 0
    if ids.size and int(ids[0]) < 0:
        raise InvalidArgumentError(
            f"Segment id {int(ids[0])} out of range [0, {num}), possibly because "
            "'segment_ids' input is not sorted.",
            op="Segment",
        )
    return _rows(xp, data, ids, num, kind, empty_zero=True)


def _valid_ids(xp, ids, num: int):
    """``ids`` checked against ``[0, num)``, and the mask of the non-negative ones."""
    keep = ids >= 0
    over = ids >= num
    if bool(xp.any(over)):
        flat = ids.reshape(-1)
        i = int(xp.argmax(over.reshape(-1)))
        where = ",".join(str(int(v)) for v in np.unravel_index(i, ids.shape))
        raise InvalidArgumentError(
            f"segment_ids[{where}] = {int(flat[i])} is out of range [0, {num})",
            op="UnsortedSegment",
        )
    return keep


def _unsorted_segments(xp, data, ids, num_segments, *, kind):
    ids, num = xp.asarray(ids), int(num_segments)
    if tuple(data.shape[: ids.ndim]) != tuple(ids.shape):
        raise InvalidArgumentError(
            f"data.shape = {list(data.shape)} does not start with segment_ids.shape = "
            f"{list(ids.shape)}",
            op="UnsortedSegment",
        )
    keep = _valid_ids(xp, ids, num)
    return _rows(xp, data[keep], ids[keep], num, kind, empty_zero=False)


def _segment_grad(xp, data, ids, output, grad, *, kind):
    """The gradient of a segment reduction with respect to ``data``, as TensorFlow's."""
    ids = xp.asarray(ids)
    keep = ids >= 0
    safe = xp.where(keep, ids, 0)
    mask = keep.reshape(ids.shape + (1,) * (data.ndim - ids.ndim))
    num = output.shape[0]
    if kind == "mean":
        counts = xp.bincount(safe[keep], minlength=num).reshape(
            (num,) + (1,) * (data.ndim - ids.ndim)
        )
        grad = grad / xp.maximum(counts, 1)
    g = xp.take(grad, safe, axis=0)
    if kind in ("max", "min"):
        chosen = (data == xp.take(output, safe, axis=0)) & mask
        counts = xp.zeros(output.shape, dtype=data.dtype)
        _scatter(xp, "sum", counts, safe[keep], chosen[keep].astype(data.dtype))
        g = xp.where(chosen, g / xp.maximum(xp.take(counts, safe, axis=0), 1), 0)
    elif kind == "prod":
        g = g * _prod_partials(xp, data, safe, keep, output)
    return xp.where(mask, g, 0).astype(data.dtype)


def _prod_partials(xp, data, safe, keep, output):
    """d(product of the segment)/d(element): the product of the other elements."""
    zero = data == 0
    zeros = xp.zeros(output.shape, dtype=data.dtype)
    _scatter(xp, "sum", zeros, safe[keep], zero[keep].astype(data.dtype))
    non_zero = xp.where(zero, xp.ones((), dtype=data.dtype), data)
    non_zero_prod = xp.ones(output.shape, dtype=data.dtype)
    _scatter(xp, "prod", non_zero_prod, safe[keep], non_zero[keep])
    gathered_zeros = xp.take(zeros, safe, axis=0)
    divided = xp.take(output, safe, axis=0) / non_zero
    partial = xp.where(zero, xp.take(non_zero_prod, safe, axis=0), divided)
    return xp.where(gathered_zeros > 1, 0, partial)


def _bincount(xp, arr, *weights, minlength, maxlength, dtype):
    arr = xp.asarray(arr).reshape(-1)
    if arr.size and int(arr.min()) < 0:
        raise InvalidArgumentError("Input arr must be non-negative!", op="Bincount")
    w = weights[0].reshape(-1) if weights else None
    size = max(int(arr.max()) + 1 if arr.size else 0, minlength or 0)
    if maxlength is not None:
        size = min(size, maxlength)
        keep = arr < maxlength
        arr = arr[keep]
        w = None if w is None else w[keep]
    return xp.bincount(arr, weights=w, minlength=size)[:size].astype(dtype)


def _confusion(xp, labels, predictions, *weights, num_classes, dtype):
    labels, predictions = labels.reshape(-1).astype(np.int64), predictions.reshape(-1)
    predictions = predictions.astype(np.int64)
    for what, values in (("labels", labels), ("predictions", predictions)):
        if values.size and int(values.min()) < 0:
            raise InvalidArgumentError(f"`{what}` contains negative values", op="confusion_matrix")
    top = max([int(v.max()) + 1 for v in (labels, predictions) if v.size] + [0])
    n = top if num_classes is None else num_classes
    if top > n:
        raise InvalidArgumentError(f"`labels` and `predictions` must be < {n}", op="confusion")
    out = xp.zeros((n, n), dtype=dtype)
    values = weights[0].reshape(-1).astype(dtype) if weights else xp.ones(labels.shape, dtype)
    _scatter(xp, "sum", out, (labels, predictions), values)
    return out
