"""Linear-algebra kernels: inverses, determinants, solves and decompositions.

The kernels of :mod:`daskgraph.ops.linalg`'s ops, each ``kernel(xp, *inputs, **attrs)``.
"""

from __future__ import annotations

from typing import Any

import numpy as np


# -- kernels --------------------------------------------------------------------------------------
def _t(xp: Any, x: Any) -> Any:
    return xp.swapaxes(x, -1, -2)


def _lapack(fn: Any, message: str) -> Any:
    """``fn()``, NumPy's ``LinAlgError`` turned into TensorFlow's message."""
    try:
        return fn()
    except np.linalg.LinAlgError:
        raise ValueError(message) from None


def _inverse_kernel(xp, x, *, adjoint):
    x = _t(xp, x) if adjoint else x
    return _lapack(lambda: xp.linalg.inv(x), "Input is not invertible.")


def _determinant_kernel(xp, x):
    return xp.asarray(xp.linalg.det(x))


def _solve_kernel(xp, matrix, rhs, *, adjoint):
    matrix = _t(xp, matrix) if adjoint else matrix
    return _lapack(lambda: xp.linalg.solve(matrix, rhs), "Input matrix is not invertible.")


def _triangular_solve_kernel(xp, matrix, rhs, *, lower, adjoint):
    """Only the ``lower`` (or upper) triangle of ``matrix`` is read, as in TensorFlow."""
    matrix = xp.tril(matrix) if lower else xp.triu(matrix)
    matrix = _t(xp, matrix) if adjoint else matrix
    return _lapack(lambda: xp.linalg.solve(matrix, rhs), "Input matrix is not invertible.")


def _cholesky_kernel(xp, x):
    message = "Cholesky decomposition was not successful. The input might not be valid."
    return _lapack(lambda: xp.linalg.cholesky(x), message)


def _qr_kernel(xp, x, *, full_matrices, part):
    q, r = xp.linalg.qr(x, mode="complete" if full_matrices else "reduced")
    return q if part == "q" else r


def _svd_kernel(xp, x, *, full_matrices, part):
    if part == "s":
        return xp.linalg.svd(x, compute_uv=False)
    u, _, vh = xp.linalg.svd(x, full_matrices=full_matrices)
    return u if part == "u" else _t(xp, vh).copy()


def _eigh_kernel(xp, x, *, part):
    e, v = xp.linalg.eigh(x)  # reads the lower triangle, as TensorFlow
    return e if part == "e" else v


def _cross_kernel(xp, a, b):
    return xp.cross(a, b)


def _slogdet_kernel(xp, x, *, part):
    sign, logdet = xp.linalg.slogdet(x)
    return xp.asarray(sign if part == "sign" else logdet)


def _default_rcond(x: Any) -> float:
    """TensorFlow's ``pinv`` cutoff: ``10 * max(m, n) * eps`` times the largest singular value."""
    return 10.0 * max(x.shape[-2:]) * float(np.finfo(x.dtype).eps)


def _pinv_kernel(xp, x, *, rcond):
    u, s, vh = xp.linalg.svd(x, full_matrices=False)
    rcond = _default_rcond(x) if rcond is None else rcond
    cutoff = rcond * s.max(axis=-1, keepdims=True) if s.size else s
    inverse = xp.where(s > cutoff, 1 / xp.where(s > cutoff, s, 1), 0)
    return xp.matmul(_t(xp, vh) * inverse[..., None, :], _t(xp, u))


def _matrix_rank_kernel(xp, x, *, tol):
    s = xp.linalg.svd(x, compute_uv=False)
    if tol is None:
        eps = float(np.finfo(x.dtype).eps)
        tol = max(x.shape[-2:]) * eps * s.max(axis=-1, keepdims=True) if s.size else 0
    return (s > tol).sum(axis=-1).astype(np.int32)
