"""Top-``k`` kernels: the largest entries of the last axis and ``in_top_k``.

The kernels of :mod:`daskgraph.ops.top_k`'s ops, each ``kernel(xp, *inputs, **attrs)``.
"""

from __future__ import annotations

import numpy as np


# -- kernels --------------------------------------------------------------------------------------
def _check_k(k, columns):
    if k < 0:
        raise ValueError(f"Need k >= 0, got {k}")
    if columns < k:
        raise ValueError(f"input must have at least k columns. Had {columns}, needed {k}")


def _top_k_indices(xp, x, k, *, index_type):
    k = int(k)
    _check_k(k, x.shape[-1])
    # descending and stable: negate floats; ~x (= -x - 1) reverses integers without overflow
    key = -x if x.dtype.kind == "f" else ~x
    order = xp.argsort(key, axis=-1, kind="stable")
    return order[..., :k].astype(index_type)


def _top_k_values(xp, x, indices):
    return xp.take_along_axis(x, indices.astype(np.int64), axis=-1)


def _top_k_values_grad(xp, x, indices, grad):
    columns = x.shape[-1]
    out = xp.zeros((int(np.prod(x.shape[:-1], dtype=np.int64)), columns), dtype=grad.dtype)
    picked = indices.reshape(out.shape[0], -1).astype(np.int64)
    rows = xp.arange(out.shape[0])[:, None]
    out[rows, picked] = grad.reshape(picked.shape)  # indices of a row are distinct
    return out.reshape(x.shape)


def _in_top_k(xp, predictions, targets, k):
    k = int(k)
    classes = predictions.shape[1]
    valid = (targets >= 0) & (targets < classes)
    safe = xp.where(valid, targets, 0).astype(np.int64)
    target = xp.take_along_axis(predictions, safe[:, None], axis=1)
    larger = xp.sum(predictions > target, axis=1)
    finite = xp.all(xp.isfinite(predictions), axis=1)
    return valid & finite & (larger < k)
