"""Dense linear algebra: inverses, determinants, solves, decompositions (Cholesky, QR, SVD,
symmetric eigendecomposition), cross products, and the gradient of batched ``matmul``.

Each op acts on the matrices in the last two axes of its inputs (a matrix, or a batch of them)
with ``xp.linalg`` (NumPy's LAPACK on a CPU, cuSOLVER through CuPy on a GPU), for float32 and
float64 as TensorFlow's kernels. A decomposition with several results is one op per result,
named ``<name>/output_<i>``, each computing the whole decomposition (TensorFlow's single ``Qr``
op has two outputs). Where NumPy finds a matrix singular or not positive definite, the run
fails with TensorFlow's words; CuPy returns NaNs there instead.

>>> import daskgraph as dg
>>> with dg.Graph().as_default():
...     a = dg.constant([[4.0, 2.0], [2.0, 3.0]])
...     x = matrix_solve(a, dg.constant([[2.0], [1.0]]))
...     q, r = qr(a)
...     with dg.Session() as sess:
...         print(sess.run(x).ravel(), r.shape)
[0.5 0. ] (2, 2)
"""

from __future__ import annotations

from collections import namedtuple
from typing import Any

from daskgraph.framework import dtypes
from daskgraph.framework.gradient_registry import no_gradient, register_gradient
from daskgraph.framework.graph import Operation, Shape, Tensor, get_default_graph, new_tensor
from daskgraph.framework.graph import _name_scope as graph_name_scope
from daskgraph.framework.op_registry import register
from daskgraph.kernels.linalg import (
    _cholesky_kernel,
    _cross_kernel,
    _determinant_kernel,
    _eigh_kernel,
    _inverse_kernel,
    _matrix_rank_kernel,
    _pinv_kernel,
    _qr_kernel,
    _slogdet_kernel,
    _solve_kernel,
    _svd_kernel,
    _triangular_solve_kernel,
)
from daskgraph.ops.array import convert_to_tensor
from daskgraph.ops.elementwise import log, reciprocal
from daskgraph.ops.fill_ops import zeros_like
from daskgraph.ops.gradients import unbroadcast
from daskgraph.ops.math import broadcast_shape, matmul, multiply, negative, reduce_sum
from daskgraph.ops.matrix import (
    matrix_band_part,
    matrix_diag,
    matrix_diag_part,
    matrix_set_diag,
    matrix_transpose,
)
from daskgraph.ops.shape_ops import expand_dims, squeeze

__all__ = [
    "adjoint",
    "cholesky",
    "cholesky_solve",
    "cross",
    "logdet",
    "lstsq",
    "matrix_determinant",
    "matrix_inverse",
    "matrix_rank",
    "matrix_solve",
    "matrix_triangular_solve",
    "matvec",
    "pinv",
    "qr",
    "self_adjoint_eig",
    "self_adjoint_eigvals",
    "slogdet",
    "split_outputs",
    "svd",
]

_LINALG = frozenset({dtypes.float32, dtypes.float64})  # LAPACK's and cuSOLVER's real types

Qr = namedtuple("Qr", ["q", "r"])
LogMatrixDeterminant = namedtuple("LogMatrixDeterminant", ["sign", "log_abs_determinant"])


register("MatrixInverse", _inverse_kernel, cpu=_LINALG, gpu=_LINALG)
register("MatrixDeterminant", _determinant_kernel, cpu=_LINALG, gpu=_LINALG)
register("MatrixSolve", _solve_kernel, cpu=_LINALG, gpu=_LINALG)
register("MatrixTriangularSolve", _triangular_solve_kernel, cpu=_LINALG, gpu=_LINALG)
register("Cholesky", _cholesky_kernel, cpu=_LINALG, gpu=_LINALG)
register("Qr", _qr_kernel, cpu=_LINALG, gpu=_LINALG)
register("Svd", _svd_kernel, cpu=_LINALG, gpu=_LINALG)
register("SelfAdjointEigV2", _eigh_kernel, cpu=_LINALG, gpu=_LINALG)
register("Cross", _cross_kernel, cpu=dtypes.NUMERIC, gpu=dtypes.NUMERIC)
register("LogMatrixDeterminant", _slogdet_kernel, cpu=_LINALG, gpu=_LINALG)
register("MatrixPinv", _pinv_kernel, cpu=_LINALG, gpu=_LINALG)
register("MatrixRank", _matrix_rank_kernel, cpu=_LINALG | {dtypes.int32},
         gpu=_LINALG | {dtypes.int32})  # fmt: skip


# -- helpers --------------------------------------------------------------------------------------
def split_outputs(
    op_type: str,
    inputs: list[Tensor],
    parts: list[tuple[str, dtypes.DType, Shape | None]],
    name: str | None,
    **attrs: Any,
) -> list[Tensor]:
    """One op of ``op_type`` per result of a multi-output TensorFlow op, named
    ``<name>/output_<i>``; result ``i`` is ``(part, dtype, static shape)``, ``part`` going to
    its kernel."""
    graph = get_default_graph()
    base = graph.unique_name(name or op_type)
    with graph_name_scope(graph, base + "/"):
        return [
            new_tensor(op_type, inputs, dtype, shape, f"output_{i}", part=part, **attrs)
            for i, (part, dtype, shape) in enumerate(parts)
        ]


def _float_matrix(x: Any, where: str, square: bool = True) -> Tensor:
    """``x`` as a float32/float64 tensor of rank >= 2, square when ``square``."""
    x = convert_to_tensor(x)
    if x.dtype not in _LINALG:
        raise TypeError(f"{where}: {x.name!r} must be float32 or float64; got {x.dtype.name}")
    if x.shape is not None:
        if len(x.shape) < 2:
            raise ValueError(f"{where}: {x.name!r} must have rank >= 2; its shape is {x.shape}")
        rows, cols = x.shape[-2:]
        if square and None not in (rows, cols) and rows != cols:
            raise ValueError(f"{where}: {x.name!r} must be square; its shape is {x.shape}")
    return x


def _solve_shape(matrix: Tensor, rhs: Tensor, where: str) -> Shape | None:
    if matrix.shape is None or rhs.shape is None:
        return None
    if len(rhs.shape) < 2:
        raise ValueError(f"{where}: rhs {rhs.name!r} must have rank >= 2; got {rhs.shape}")
    if None not in (matrix.shape[-1], rhs.shape[-2]) and matrix.shape[-1] != rhs.shape[-2]:
        raise ValueError(
            f"{where}: {matrix.name!r} of shape {matrix.shape} and rhs {rhs.name!r} of shape "
            f"{rhs.shape} do not match"
        )
    return (*broadcast_shape(matrix.shape[:-2], rhs.shape[:-2], where), *rhs.shape[-2:])


# -- builders -------------------------------------------------------------------------------------
def adjoint(matrix: Any, name: str | None = None) -> Tensor:
    """The conjugate transpose of the last two axes: the transpose, for real tensors."""
    return matrix_transpose(matrix, name=name or "adjoint")


def matrix_inverse(input: Any, adjoint: bool = False, name: str | None = None) -> Tensor:
    """The inverse of each square matrix (of its transpose with ``adjoint``).

    Examples
    --------
    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     inv = matrix_inverse(dg.constant([[2.0, 0.0], [0.0, 4.0]]))
    ...     with dg.Session() as sess:
    ...         print(sess.run(inv))
    [[0.5  0.  ]
     [0.   0.25]]
    """
    x = _float_matrix(input, "matrix_inverse")
    return new_tensor("MatrixInverse", [x], x.dtype, x.shape, name, adjoint=bool(adjoint))


def matrix_determinant(input: Any, name: str | None = None) -> Tensor:
    """The determinant of each square matrix (a scalar per matrix)."""
    x = _float_matrix(input, "matrix_determinant")
    shape = None if x.shape is None else x.shape[:-2]
    return new_tensor("MatrixDeterminant", [x], x.dtype, shape, name)


def matrix_solve(matrix: Any, rhs: Any, adjoint: bool = False, name: str | None = None) -> Tensor:
    """``X`` such that ``matrix @ X = rhs`` (``transpose(matrix) @ X`` with ``adjoint``)."""
    a = _float_matrix(matrix, "matrix_solve")
    b = _float_matrix(rhs, "matrix_solve", square=False)
    shape = _solve_shape(a, b, "matrix_solve")
    return new_tensor("MatrixSolve", [a, b], a.dtype, shape, name, adjoint=bool(adjoint))


def matrix_triangular_solve(
    matrix: Any, rhs: Any, lower: bool = True, adjoint: bool = False, name: str | None = None
) -> Tensor:
    """``matrix_solve`` for a triangular ``matrix``: only its lower triangle is read (upper
    with ``lower=False``).

    Examples
    --------
    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     x = matrix_triangular_solve(dg.constant([[2.0, 9.0], [1.0, 1.0]]), [[2.0], [2.0]])
    ...     with dg.Session() as sess:
    ...         print(sess.run(x).ravel())
    [1. 1.]
    """
    a = _float_matrix(matrix, "matrix_triangular_solve")
    b = _float_matrix(convert_to_tensor(rhs, dtype=a.dtype), "matrix_triangular_solve", False)
    shape = _solve_shape(a, b, "matrix_triangular_solve")
    return new_tensor("MatrixTriangularSolve", [a, b], a.dtype, shape, name, lower=bool(lower),
                      adjoint=bool(adjoint))  # fmt: skip


def cholesky(input: Any, name: str | None = None) -> Tensor:
    """The lower-triangular ``L`` with ``L @ L^T = input``, for symmetric positive definite
    matrices (only their lower triangle is read)."""
    x = _float_matrix(input, "cholesky")
    return new_tensor("Cholesky", [x], x.dtype, x.shape, name)


def cholesky_solve(chol: Any, rhs: Any, name: str | None = None) -> Tensor:
    """``X`` with ``A @ X = rhs``, given ``chol``, the Cholesky factor of ``A``."""
    y = matrix_triangular_solve(chol, rhs, lower=True, adjoint=False)
    return matrix_triangular_solve(chol, y, lower=True, adjoint=True, name=name)


def logdet(matrix: Any, name: str | None = None) -> Tensor:
    """The log of the determinant of symmetric positive definite matrices (from their
    Cholesky factor: ``2 * sum(log(diag(L)))``)."""
    diagonal = matrix_diag_part(cholesky(matrix))
    return multiply(reduce_sum(log(diagonal), axis=-1), 2.0, name=name or "logdet")


def qr(input: Any, full_matrices: bool = False, name: str | None = None) -> Qr:
    """The QR decomposition ``input = q @ r`` (``q`` with orthonormal columns, ``r`` upper
    triangular), as the namedtuple ``Qr(q, r)``."""
    x = _float_matrix(input, "qr", square=False)
    q_shape = r_shape = None
    if x.shape is not None:
        m, n = x.shape[-2:]
        k = m if full_matrices else (None if None in (m, n) else min(m, n))
        q_shape, r_shape = (*x.shape[:-2], m, k), (*x.shape[:-2], k, n)
    parts = [("q", x.dtype, q_shape), ("r", x.dtype, r_shape)]
    return Qr(*split_outputs("Qr", [x], parts, name, full_matrices=bool(full_matrices)))


def svd(
    tensor: Any, full_matrices: bool = False, compute_uv: bool = True, name: str | None = None
) -> Any:
    """The singular value decomposition ``tensor = u @ diag(s) @ transpose(v)``: ``(s, u, v)``
    as TensorFlow orders them (``v``, not its transpose), or only ``s`` without
    ``compute_uv``. Only ``s`` has a gradient here.

    Examples
    --------
    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     s, u, v = svd(dg.constant([[3.0, 0.0], [0.0, -2.0], [0.0, 0.0]]))
    ...     with dg.Session() as sess:
    ...         print(sess.run(s), u.shape, v.shape)
    [3. 2.] (3, 2) (2, 2)
    """
    x = _float_matrix(tensor, "svd", square=False)
    shapes: dict[str, Shape | None] = {"s": None, "u": None, "v": None}
    if x.shape is not None:
        batch, (m, n) = x.shape[:-2], x.shape[-2:]
        k = None if None in (m, n) else min(m, n)
        shapes = {"s": (*batch, k), "u": (*batch, m, m if full_matrices else k),
                  "v": (*batch, n, n if full_matrices else k)}  # fmt: skip
    wanted = "suv" if compute_uv else "s"
    parts = [(p, x.dtype, shapes[p]) for p in wanted]
    outputs = split_outputs("Svd", [x], parts, name or "Svd", full_matrices=bool(full_matrices))
    return tuple(outputs) if compute_uv else outputs[0]


def self_adjoint_eig(tensor: Any, name: str | None = None) -> tuple[Tensor, Tensor]:
    """Eigenvalues (ascending) and eigenvectors (columns) of symmetric matrices, of which only
    the lower triangle is read: ``(e, v)``."""
    x = _float_matrix(tensor, "self_adjoint_eig")
    e_shape = None if x.shape is None else x.shape[:-1]
    parts = [("e", x.dtype, e_shape), ("v", x.dtype, x.shape)]
    e, v = split_outputs("SelfAdjointEigV2", [x], parts, name or "SelfAdjointEigV2")
    return e, v


def self_adjoint_eigvals(tensor: Any, name: str | None = None) -> Tensor:
    """The eigenvalues (ascending) of symmetric matrices (see :func:`self_adjoint_eig`)."""
    x = _float_matrix(tensor, "self_adjoint_eigvals")
    e_shape = None if x.shape is None else x.shape[:-1]
    return split_outputs("SelfAdjointEigV2", [x], [("e", x.dtype, e_shape)], name)[0]


def slogdet(input: Any, name: str | None = None) -> tuple[Tensor, Tensor]:
    """The sign and the log of the absolute value of the determinant of each square matrix:
    ``(sign, log_abs_determinant)``, steadier than ``log(abs(det))`` for large matrices.

    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     sign, logdet = slogdet(dg.constant([[2.0, 0.0], [0.0, -3.0]]))
    ...     with dg.Session() as sess:
    ...         print(sess.run(sign), round(float(sess.run(logdet)), 6))
    -1.0 1.791759
    """
    x = _float_matrix(input, "slogdet")
    shape = None if x.shape is None else x.shape[:-2]
    parts = [("sign", x.dtype, shape), ("log_abs_determinant", x.dtype, shape)]
    sign, logdet = split_outputs("LogMatrixDeterminant", [x], parts, name)
    return LogMatrixDeterminant(sign, logdet)


def pinv(
    a: Any, rcond: float | None = None, validate_args: bool = False, name: str | None = None
) -> Tensor:
    """The Moore-Penrose pseudo-inverse of each matrix, singular values below ``rcond`` times
    the largest (TensorFlow's default: ``10 * max(m, n) * eps``) taken as zero.

    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     p = pinv(dg.constant([[1.0, 0.0], [0.0, 2.0], [0.0, 0.0]]))
    ...     with dg.Session() as sess:
    ...         print(sess.run(p))
    [[1.  0.  0. ]
     [0.  0.5 0. ]]
    """
    x = _float_matrix(a, "pinv", square=False)
    shape = None if x.shape is None else (*x.shape[:-2], x.shape[-1], x.shape[-2])
    cut = None if rcond is None else float(rcond)
    return new_tensor("MatrixPinv", [x], x.dtype, shape, name or "pinv", rcond=cut)


def matrix_rank(
    a: Any, tol: float | None = None, validate_args: bool = False, name: str | None = None
) -> Tensor:
    """The number of singular values of each matrix above ``tol`` (default: ``max(m, n) *
    eps`` times the largest), as int32."""
    x = _float_matrix(a, "matrix_rank", square=False)
    shape = None if x.shape is None else x.shape[:-2]
    cut = None if tol is None else float(tol)
    return new_tensor("MatrixRank", [x], dtypes.int32, shape, name or "matrix_rank", tol=cut)


def lstsq(
    matrix: Any, rhs: Any, l2_regularizer: float = 0.0, fast: bool = True,
    name: str | None = None,
) -> Tensor:  # fmt: skip
    """The least-squares solution ``X`` of ``matrix @ X = rhs`` (minimum norm when there are
    fewer rows than columns), with an optional L2 penalty: TensorFlow's fast path, the
    Cholesky solve of the regularised normal equations (matrix sizes known when built).

    >>> import numpy as np
    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     a = dg.constant(np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]))
    ...     x = lstsq(a, np.ones((3, 1)))
    ...     with dg.Session() as sess:
    ...         print(np.round(sess.run(x).ravel(), 6))
    [-1.  1.]
    """
    a = _float_matrix(matrix, "lstsq", square=False)
    b = _float_matrix(convert_to_tensor(rhs, dtype=a.dtype), "lstsq", square=False)
    if a.shape is None or None in a.shape[-2:]:
        raise ValueError("lstsq: the matrix's number of rows and columns must be known")
    m, n = a.shape[-2:]
    penalty = float(l2_regularizer)

    def regularised(gram: Tensor) -> Tensor:
        return matrix_set_diag(gram, matrix_diag_part(gram) + penalty) if penalty else gram

    if m >= n:
        gram = regularised(matmul(a, a, transpose_a=True))
        return cholesky_solve(cholesky(gram), matmul(a, b, transpose_a=True), name=name)
    gram = regularised(matmul(a, a, transpose_b=True))
    return matmul(a, cholesky_solve(cholesky(gram), b), transpose_a=True, name=name)


def cross(a: Any, b: Any, name: str | None = None) -> Tensor:
    """The cross product of the 3-element vectors in the last axis of ``a`` and ``b`` (of one
    shape).

    Examples
    --------
    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     c = cross(dg.constant([1.0, 0.0, 0.0]), dg.constant([0.0, 1.0, 0.0]))
    ...     with dg.Session() as sess:
    ...         print(sess.run(c))
    [0. 0. 1.]
    """
    a, b = convert_to_tensor(a), convert_to_tensor(b)
    if a.dtype != b.dtype:
        raise TypeError(f"cross: a and b must have one dtype; got {a.dtype.name} and "
                        f"{b.dtype.name}")  # fmt: skip
    for t in (a, b):
        if t.shape is not None and (not t.shape or t.shape[-1] not in (3, None)):
            raise ValueError(f"cross: the last axis of {t.name!r} must have size 3; its shape "
                             f"is {t.shape}")  # fmt: skip
    if None not in (a.shape, b.shape) and a.shape != b.shape:
        if len(a.shape) != len(b.shape) or any(
            None not in (x, y) and x != y for x, y in zip(a.shape, b.shape, strict=True)
        ):
            raise ValueError(f"cross: a and b must have one shape; got {a.shape} and {b.shape}")
    return new_tensor("Cross", [a, b], a.dtype, a.shape if a.shape is not None else b.shape, name)


def matvec(
    a: Any, b: Any, transpose_a: bool = False, adjoint_a: bool = False,
    a_is_sparse: bool = False, b_is_sparse: bool = False, name: str | None = None,
) -> Tensor:  # fmt: skip
    """The product of matrices ``a`` and vectors ``b`` (in their last axis)."""
    product = matmul(a, expand_dims(b, -1), transpose_a=transpose_a or adjoint_a)
    return squeeze(product, [-1], name=name)


# -- gradients ------------------------------------------------------------------------------------
@register_gradient("BatchMatMulV2")
def _batch_matmul_grad(op: Operation, grad: Tensor) -> list[Tensor]:
    """MatMul's gradient, summed over the batch axes that broadcasting added or stretched."""
    a, b = op.inputs
    ta, tb = op.attrs["transpose_a"], op.attrs["transpose_b"]
    if not ta and not tb:
        ga, gb = matmul(grad, b, transpose_b=True), matmul(a, grad, transpose_a=True)
    elif ta and not tb:
        ga, gb = matmul(b, grad, transpose_b=True), matmul(a, grad)
    elif not ta and tb:
        ga, gb = matmul(grad, b), matmul(grad, a, transpose_a=True)
    else:
        ga = matmul(b, grad, transpose_a=True, transpose_b=True)
        gb = matmul(grad, a, transpose_a=True, transpose_b=True)
    return [unbroadcast(ga, a), unbroadcast(gb, b)]


@register_gradient("MatrixInverse")
def _inverse_grad(op: Operation, grad: Tensor) -> list[Tensor]:
    y = op.outputs[0]  # d(A^-1) = -A^-1 dA A^-1
    if op.attrs["adjoint"]:  # y = (A^T)^-1
        return [negative(matmul(matmul(y, grad, transpose_b=True), y))]
    return [negative(matmul(matmul(y, grad, transpose_a=True), y, transpose_b=True))]


@register_gradient("MatrixDeterminant")
def _determinant_grad(op: Operation, grad: Tensor) -> list[Tensor]:
    x, det = op.inputs[0], op.outputs[0]  # d det(A) = det(A) * A^-T
    scale = expand_dims(expand_dims(grad * det, -1), -1)
    return [multiply(scale, matrix_inverse(x, adjoint=True))]


@register_gradient("MatrixSolve")
def _solve_grad(op: Operation, grad: Tensor) -> list[Tensor]:
    a, b = op.inputs
    x, adj = op.outputs[0], op.attrs["adjoint"]
    gb = matrix_solve(a, grad, adjoint=not adj)
    ga = negative(matmul(x, gb, transpose_b=True) if adj else matmul(gb, x, transpose_b=True))
    return [unbroadcast(ga, a), unbroadcast(gb, b)]


@register_gradient("MatrixTriangularSolve")
def _triangular_solve_grad(op: Operation, grad: Tensor) -> list[Tensor]:
    a, b = op.inputs
    x, adj, lower = op.outputs[0], op.attrs["adjoint"], op.attrs["lower"]
    gb = matrix_triangular_solve(a, grad, lower=lower, adjoint=not adj)
    ga = negative(matmul(x, gb, transpose_b=True) if adj else matmul(gb, x, transpose_b=True))
    ga = matrix_band_part(ga, -1, 0) if lower else matrix_band_part(ga, 0, -1)
    return [unbroadcast(ga, a), unbroadcast(gb, b)]


@register_gradient("Cholesky")
def _cholesky_grad(op: Operation, grad: Tensor) -> list[Tensor]:
    """TensorFlow's (Murray 2016): ``phi(L^T dL)`` pushed through ``L^-T ... L^-1``."""
    chol = op.outputs[0]
    chol_inv = matrix_inverse(chol)
    middle = matmul(chol, grad, transpose_a=True)
    middle = matrix_set_diag(middle, 0.5 * matrix_diag_part(middle))
    middle = matrix_band_part(middle, -1, 0)
    ga = matmul(matmul(chol_inv, middle, transpose_a=True), chol_inv)
    return [0.5 * (ga + matrix_transpose(ga))]


def _solve_right_upper(x: Tensor, r: Tensor) -> Tensor:
    """``x @ r^-T`` for an upper-triangular ``r`` (TensorFlow's ``_TriangularSolve``)."""
    return matrix_transpose(matrix_triangular_solve(r, matrix_transpose(x), lower=False))


@register_gradient("Qr")
def _qr_grad(op: Operation, grad: Tensor) -> list[Tensor]:
    """TensorFlow's QR gradient (for ``m >= n``, and not ``full_matrices`` unless square),
    split into the part of ``dq`` and the part of ``dr`` (it is linear in both)."""
    x = op.inputs[0]
    shape = x.shape
    if shape is None or None in shape[-2:]:
        raise NotImplementedError("qr: the gradient needs the matrix's size known")
    m, n = shape[-2:]
    if m < n or (op.attrs["full_matrices"] and m != n):
        raise NotImplementedError(
            f"qr: the gradient is implemented for m >= n (and full_matrices only when square); "
            f"the matrix is {m}x{n}"
        )
    q, r = qr(x, full_matrices=op.attrs["full_matrices"])
    if op.attrs["part"] == "r":
        rdr = matmul(r, grad, transpose_b=True)
        tril = matrix_band_part(rdr - matrix_transpose(rdr), -1, 0)
        return [matmul(q, grad + _solve_right_upper(tril, r))]
    qdq = matmul(q, grad, transpose_a=True)
    tril = matrix_band_part(qdq - matrix_transpose(qdq), -1, 0)
    from_r = matmul(q, _solve_right_upper(tril, r))
    return [from_r + _solve_right_upper(grad - matmul(q, qdq), r)]


@register_gradient("Svd")
def _svd_grad(op: Operation, grad: Tensor) -> list[Tensor]:
    """The singular values' gradient ``U diag(ds) V^T``; ``u`` and ``v`` have none here."""
    if op.attrs["part"] != "s":
        raise NotImplementedError(
            "svd: only the singular values s have a gradient in daskgraph, not u and v"
        )
    _, u, v = svd(op.inputs[0], full_matrices=False)
    return [matmul(multiply(u, expand_dims(grad, -2)), v, transpose_b=True)]


@register_gradient("SelfAdjointEigV2")
def _eigh_grad(op: Operation, grad: Tensor) -> list[Tensor]:
    """TensorFlow's: ``V (diag(de) + F o (V^T dV)) V^T``, symmetrised onto the lower triangle
    (the part the op reads); linear in ``de`` and ``dV``, so one part per op."""
    e, v = self_adjoint_eig(op.inputs[0])
    if op.attrs["part"] == "e":
        middle = matrix_diag(grad)
    else:
        gaps = expand_dims(e, -2) - expand_dims(e, -1)
        f = matrix_set_diag(reciprocal(matrix_set_diag(gaps, 1.0 + zeros_like(e))), zeros_like(e))
        middle = multiply(f, matmul(v, grad, transpose_a=True))
    ga = matmul(v, matmul(middle, v, transpose_b=True))
    ga = matrix_band_part(ga + matrix_transpose(ga), -1, 0)
    return [matrix_set_diag(ga, 0.5 * matrix_diag_part(ga))]


@register_gradient("Cross")
def _cross_grad(op: Operation, grad: Tensor) -> list[Tensor]:
    a, b = op.inputs
    return [cross(b, grad), cross(grad, a)]


@register_gradient("LogMatrixDeterminant")
def _slogdet_grad(op: Operation, grad: Tensor) -> list[Tensor | None]:
    """``log|det A|`` changes by ``A^-T``; the sign is piecewise constant."""
    if op.attrs["part"] == "sign":
        return [None]
    scale = expand_dims(expand_dims(grad, -1), -1)
    return [multiply(scale, matrix_inverse(op.inputs[0], adjoint=True))]


@register_gradient("MatrixPinv")
def _pinv_grad(op: Operation, grad: Tensor) -> list[Tensor]:
    """Golub and Pereyra's derivative of ``X = A+``, as the adjoint of ``dA -> dX``:
    ``-X^T G X^T + (I - A X) G^T X X^T + X^T X G^T (I - X A)``."""
    a, x = op.inputs[0], op.outputs[0]
    g_t = matrix_transpose(grad)
    xxt = matmul(x, x, transpose_b=True)
    xtx = matmul(x, x, transpose_a=True)
    first = negative(matmul(matmul(x, grad, transpose_a=True), x, transpose_b=True))
    left = matmul(g_t, xxt)
    second = left - matmul(matmul(a, x), left)
    right = matmul(xtx, g_t)
    third = right - matmul(right, matmul(x, a))
    return [first + second + third]


no_gradient("MatrixRank")
