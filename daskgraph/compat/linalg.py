"""``tf.linalg``'s names for daskgraph's linear algebra ops (:mod:`daskgraph.ops.matrix`,
:mod:`daskgraph.ops.linalg`, :mod:`daskgraph.ops.einsum`, and the norms), and
``tf.linalg.matmul``/``norm``, which are ``tf.matmul``/``tf.norm`` with TF1's arguments. What
``tf.linalg`` has and daskgraph does not (``lu``, ``expm``, the ``LinearOperator`` classes, ...)
is absent.

>>> import daskgraph.compat.v1 as tf
>>> tf.linalg.inv is tf.matrix_inverse and tf.linalg.norm is tf.norm
True
"""

from daskgraph.compat._signatures import matmul
from daskgraph.compat.math import norm  # TF1's signature (keep_dims)
from daskgraph.ops.einsum import einsum, tensordot
from daskgraph.ops.linalg import (
    adjoint,
    cholesky,
    cholesky_solve,
    cross,
    logdet,
    lstsq,
    matrix_rank,
    matvec,
    pinv,
    qr,
    slogdet,
    svd,
)
from daskgraph.ops.linalg import matrix_determinant as det
from daskgraph.ops.linalg import matrix_inverse as inv
from daskgraph.ops.linalg import matrix_solve as solve
from daskgraph.ops.linalg import matrix_triangular_solve as triangular_solve
from daskgraph.ops.linalg import self_adjoint_eig as eigh
from daskgraph.ops.linalg import self_adjoint_eigvals as eigvalsh
from daskgraph.ops.matrix import diag as tensor_diag
from daskgraph.ops.matrix import diag_part as tensor_diag_part
from daskgraph.ops.matrix import eye, matrix_transpose, trace
from daskgraph.ops.matrix import matrix_band_part as band_part
from daskgraph.ops.matrix import matrix_diag as diag
from daskgraph.ops.matrix import matrix_diag_part as diag_part
from daskgraph.ops.matrix import matrix_set_diag as set_diag
from daskgraph.ops.matrix import matrix_transpose as transpose
from daskgraph.ops.nn_namespace import l2_normalize
from daskgraph.ops.norms import global_norm

__all__ = [
    "adjoint",
    "band_part",
    "cholesky",
    "cholesky_solve",
    "cross",
    "det",
    "diag",
    "diag_part",
    "eigh",
    "eigvalsh",
    "einsum",
    "eye",
    "global_norm",
    "inv",
    "l2_normalize",
    "logdet",
    "lstsq",
    "matmul",
    "matrix_rank",
    "matrix_transpose",
    "matvec",
    "norm",
    "pinv",
    "qr",
    "set_diag",
    "slogdet",
    "solve",
    "svd",
    "tensor_diag",
    "tensor_diag_part",
    "tensordot",
    "trace",
    "transpose",
    "triangular_solve",
]


def __getattr__(name: str) -> object:
    """A name tf.linalg does not have: the AttributeError pointing to docs/compat.md."""
    from daskgraph.errors import missing_name

    raise missing_name("tf.linalg", name, globals())
