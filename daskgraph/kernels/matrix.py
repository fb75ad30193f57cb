"""Matrix-structure kernels: identity matrices, diagonals, bands, traces, matrix transposes.

The kernels of :mod:`daskgraph.ops.matrix`'s ops, each ``kernel(xp, *inputs, **attrs)``.
"""

from __future__ import annotations

from typing import Any

import numpy as np


# -- kernels --------------------------------------------------------------------------------------
def _diagonal_index(xp: Any, length: int, k: int) -> tuple[Any, Any]:
    """Row and column indices of the first ``length`` entries of diagonal ``k``."""
    i = xp.arange(length)
    return i + max(0, -k), i + max(0, k)


def _diag_sizes(length: int, k: int, rows: int, cols: int) -> tuple[int, int]:
    """TensorFlow's ``MatrixDiagV3`` rule for the matrix's size (-1: inferred)."""
    min_rows, min_cols = length + max(0, -k), length + max(0, k)
    if rows == -1 and cols == -1:
        rows = cols = max(min_rows, min_cols)
    rows = min_rows if rows == -1 else rows
    cols = min_cols if cols == -1 else cols
    if rows != min_rows and cols != min_cols:
        raise ValueError(
            f"matrix_diag: a diagonal of length {length} at k={k} needs num_rows {min_rows} or "
            f"num_cols {min_cols}; got {rows} and {cols}"
        )
    return rows, cols


def _matrix_diag_kernel(xp, diagonal, *, k, rows, cols, padding):
    length = diagonal.shape[-1]
    rows, cols = _diag_sizes(length, k, rows, cols)
    out = xp.full((*diagonal.shape[:-1], rows, cols), padding, dtype=diagonal.dtype)
    r, c = _diagonal_index(xp, length, k)
    out[..., r, c] = diagonal
    return out


def _matrix_diag_part_kernel(xp, x, *, k):
    return xp.diagonal(x, offset=k, axis1=-2, axis2=-1).copy()


def _matrix_set_diag_kernel(xp, x, diagonal, *, k):
    out = x.copy()
    length = min(x.shape[-2] - max(0, -k), x.shape[-1] - max(0, k))
    if diagonal.shape[-1] != length:
        raise ValueError(
            f"matrix_set_diag: diagonal {k} of a {x.shape[-2]}x{x.shape[-1]} matrix has "
            f"{length} entries; the diagonal given has {diagonal.shape[-1]}"
        )
    r, c = _diagonal_index(xp, length, k)
    out[..., r, c] = diagonal
    return out


def _band_part_kernel(xp, x, *, num_lower, num_upper):
    rows = xp.arange(x.shape[-2]).reshape(-1, 1)
    cols = xp.arange(x.shape[-1]).reshape(1, -1)
    keep = xp.ones((x.shape[-2], x.shape[-1]), dtype=bool)
    if num_lower >= 0:
        keep &= rows - cols <= num_lower
    if num_upper >= 0:
        keep &= cols - rows <= num_upper
    return xp.where(keep, x, xp.zeros((), dtype=x.dtype))


def _diag_kernel(xp, diagonal):
    n = diagonal.size
    out = xp.zeros((n, n), dtype=diagonal.dtype)
    i = xp.arange(n)
    out[i, i] = diagonal.reshape(-1)
    return out.reshape(diagonal.shape * 2)


def _diag_part_kernel(xp, x):
    half = x.shape[: x.ndim // 2]
    if x.shape[x.ndim // 2 :] != half:
        raise ValueError(f"diag_part: the input's shape must be s + s; got {x.shape}")
    n = int(np.prod(half, dtype=np.int64))
    return xp.diagonal(x.reshape(n, n)).reshape(half).copy()


def _lin_space_kernel(xp, start, stop, num):
    count = int(num)
    if count < 1:
        raise ValueError(f"lin_space: num must be positive; got {count}")
    return xp.linspace(float(start), float(stop), count, dtype=start.dtype)


def _meshgrid_kernel(xp, *inputs, index, indexing):
    return xp.meshgrid(*[xp.asarray(v).reshape(-1) for v in inputs], indexing=indexing)[index]
