"""Linear algebra ops (ops/matrix.py, ops/linalg.py, ops/einsum.py and batched matmul) against
NumPy, with their static shapes, gradients checked by finite differences, errors, and a run on
a virtual GPU."""

from __future__ import annotations

import numpy as np
import pytest

import daskgraph as dg
import daskgraph.compat.v1 as tf
from daskgraph.compat.gradient_check import check_gradients

RNG = np.random.default_rng(7)


def _run(fn, *arrays):
    """``fn`` of constants of ``arrays``: (static shape, value)."""
    with dg.Graph().as_default():
        out = fn(*[dg.constant(a) for a in arrays])
        with dg.Session() as sess:
            value = sess.run(out)
    shapes = [t.shape for t in out] if isinstance(out, (list, tuple)) else out.shape
    return shapes, value


def _spd(n, batch=()):
    a = RNG.normal(size=(*batch, n, n))
    return a @ np.swapaxes(a, -1, -2) + n * np.eye(n)


def _sym(x):
    return 0.5 * (x + tf.matrix_transpose(x))


# -- batched matmul -------------------------------------------------------------------------------
def test_matmul_of_rank_3_tensors_broadcasts_batches():
    a, b = RNG.normal(size=(4, 2, 3)), RNG.normal(size=(3, 5))
    shape, got = _run(tf.matmul, a, b)
    assert shape == (4, 2, 5)
    np.testing.assert_allclose(got, a @ b)
    shape, got = _run(lambda x, y: tf.linalg.matmul(x, y, transpose_a=True, adjoint_b=True),
                      RNG.normal(size=(2, 1, 3, 2)), RNG.normal(size=(3, 4, 3)))  # fmt: skip
    assert shape == (2, 3, 2, 4)


def test_matmul_of_a_placeholder_batch_and_its_op_type():
    with dg.Graph().as_default():
        x = dg.placeholder(dg.float32, [None, 2, 3])
        y = dg.matmul(x, dg.constant(np.ones((3, 4), np.float32)))
        assert (y.op.type, y.op.name, y.shape) == ("BatchMatMulV2", "MatMul", (None, 2, 4))
        with dg.Session() as sess:
            got = sess.run(y, {x: np.ones((5, 2, 3), np.float32)})
    np.testing.assert_array_equal(got, np.full((5, 2, 4), 3.0))


@pytest.mark.parametrize("ta, tb", [(False, False), (True, False), (False, True), (True, True)])
def test_batch_matmul_gradient(ta, tb):
    a = RNG.normal(size=(2, 3, 2) if ta else (2, 2, 3))
    b = RNG.normal(size=(2, 3) if tb else (3, 2))
    check_gradients(lambda x, y: dg.matmul(x, y, transpose_a=ta, transpose_b=tb), [a, b])


def test_matmul_refuses_vectors():
    with dg.Graph().as_default(), pytest.raises(ValueError, match="rank >= 2"):
        dg.matmul(dg.constant([1.0, 2.0]), dg.constant([[1.0], [2.0]]))


# -- structure ------------------------------------------------------------------------------------
def test_eye_diag_and_trace():
    assert (
        _run(lambda: tf.eye(2, 3, batch_shape=[2], dtype=tf.int32))[1].tolist()
        == [[[1, 0, 0], [0, 1, 0]]] * 2
    )
    x = np.arange(16).reshape(2, 2, 2, 2)
    assert _run(tf.diag_part, x)[1].tolist() == [[0, 5], [10, 15]]  # TensorFlow's result
    shape, got = _run(tf.diag, np.array([[1, 2], [3, 4]]))
    assert shape == (2, 2, 2, 2) and got[1, 0, 1, 0] == 3 and got.sum() == 10
    assert _run(tf.trace, np.arange(18).reshape(2, 3, 3))[1].tolist() == [12, 39]


@pytest.mark.parametrize("k", [0, 1, -2])
def test_matrix_diag_part_set_diag_and_diag(k):
    x = RNG.normal(size=(2, 3, 4))
    shape, got = _run(lambda t: tf.matrix_diag_part(t, k=k), x)
    expected = np.diagonal(x, offset=k, axis1=-2, axis2=-1)
    assert shape == expected.shape
    np.testing.assert_array_equal(got, expected)
    d = RNG.normal(size=expected.shape)
    _, got = _run(lambda t, u: tf.matrix_set_diag(t, u, k=k), x, d)
    ref = x.copy()
    rows, cols = np.arange(d.shape[-1]) + max(0, -k), np.arange(d.shape[-1]) + max(0, k)
    ref[..., rows, cols] = d
    np.testing.assert_array_equal(got, ref)
    shape, got = _run(lambda u: tf.linalg.diag(u, k=k), d)
    n = d.shape[-1] + abs(k)
    assert shape == (2, n, n)
    np.testing.assert_array_equal(np.diagonal(got, offset=k, axis1=-2, axis2=-1), d)
    assert np.count_nonzero(got) == d.size


def test_matrix_diag_with_num_rows_and_padding_as_tensorflow():
    shape, got = _run(lambda d: tf.matrix_diag(d, k=-1, num_rows=4), np.array([1, 2]))
    assert shape == (4, 2) and got.tolist() == [[0, 0], [1, 0], [0, 2], [0, 0]]
    _, got = _run(lambda d: tf.matrix_diag(d, padding_value=9), np.array([1, 2]))
    assert got.tolist() == [[1, 9], [9, 2]]
    with dg.Graph().as_default(), pytest.raises(ValueError, match="one diagonal offset"):
        tf.matrix_diag(dg.constant([1, 2]), k=(0, 1))


@pytest.mark.parametrize("lower, upper", [(1, 0), (-1, 0), (0, -1), (1, 2)])
def test_matrix_band_part(lower, upper):
    x = RNG.normal(size=(2, 4, 5))
    _, got = _run(lambda t: tf.matrix_band_part(t, lower, upper), x)
    i, j = np.arange(4)[:, None], np.arange(5)[None, :]
    keep = ((lower < 0) | (i - j <= lower)) & ((upper < 0) | (j - i <= upper))
    np.testing.assert_array_equal(got, np.where(keep, x, 0.0))


def test_matrix_transpose_lin_space_and_meshgrid():
    shape, _ = _run(tf.linalg.transpose, np.zeros((5, 2, 3)))
    assert shape == (5, 3, 2)
    shape, got = _run(lambda: tf.lin_space(0.0, 10.0, 5))
    assert shape == (5,) and got.dtype == np.float32
    np.testing.assert_allclose(got, [0.0, 2.5, 5.0, 7.5, 10.0])
    assert _run(lambda: tf.linspace(0, 10, 3))[1].dtype == np.float64  # as TensorFlow
    assert _run(lambda: tf.lin_space(3.0, 5.0, 1))[1].tolist() == [3.0]
    shapes, (gx, gy) = _run(lambda a, b: tf.meshgrid(a, b), np.arange(3), np.arange(2))
    ex, ey = np.meshgrid(np.arange(3), np.arange(2))
    assert shapes == [(2, 3), (2, 3)]
    np.testing.assert_array_equal(gx, ex)
    np.testing.assert_array_equal(gy, ey)
    _, grids = _run(lambda a, b, c: tf.meshgrid(a, b, c, indexing="ij"), *map(np.arange, (2, 3, 4)))
    for got, ref in zip(grids, np.meshgrid(*map(np.arange, (2, 3, 4)), indexing="ij"), strict=True):
        np.testing.assert_array_equal(got, ref)


def test_lin_space_with_a_fed_count():
    with dg.Graph().as_default():
        n = dg.placeholder(dg.int32, [])
        v = tf.lin_space(1.0, 2.0, n)
        assert v.shape == (None,)
        with dg.Session() as sess:
            np.testing.assert_allclose(sess.run(v, {n: 3}), [1.0, 1.5, 2.0])


def test_structure_gradients():
    x = RNG.normal(size=(2, 3, 4))
    check_gradients(lambda t: tf.matrix_diag_part(t, k=1), [x])
    check_gradients(lambda t: tf.matrix_band_part(t, 1, 0), [x])
    check_gradients(lambda t, d: tf.matrix_set_diag(t, d, k=-1), [x, RNG.normal(size=(2, 2))])
    check_gradients(lambda d: tf.matrix_diag(d, k=1), [RNG.normal(size=(2, 3))])
    check_gradients(tf.diag, [RNG.normal(size=(2, 2))])
    check_gradients(tf.diag_part, [RNG.normal(size=(2, 3, 2, 3))])
    check_gradients(tf.trace, [RNG.normal(size=(2, 3, 3))])
    check_gradients(lambda a, b: tf.lin_space(a, b, 4), [np.array(1.0), np.array(3.0)])
    check_gradients(lambda a, b: tf.meshgrid(a, b)[0] * 2.0 + tf.meshgrid(a, b)[1],
                    [RNG.normal(size=3), RNG.normal(size=2)])  # fmt: skip


# -- decompositions and solves --------------------------------------------------------------------
def test_inverse_determinant_and_solves_match_numpy():
    a, b = _spd(3, (2,)), RNG.normal(size=(2, 3, 2))
    np.testing.assert_allclose(_run(tf.matrix_inverse, a)[1], np.linalg.inv(a))
    m = RNG.normal(size=(3, 3)) + 3 * np.eye(3)
    np.testing.assert_allclose(_run(lambda t: tf.linalg.inv(t, adjoint=True), m)[1],
                               np.linalg.inv(m.T))  # fmt: skip
    shape, got = _run(tf.matrix_determinant, a)
    assert shape == (2,)
    np.testing.assert_allclose(got, np.linalg.det(a))
    np.testing.assert_allclose(_run(tf.matrix_solve, a, b)[1], np.linalg.solve(a, b))
    np.testing.assert_allclose(_run(lambda u, v: tf.linalg.solve(u, v, adjoint=True), m, b[0])[1],
                               np.linalg.solve(m.T, b[0]))  # fmt: skip
    _, got = _run(lambda u, v: tf.matrix_triangular_solve(u, v, lower=False), m, b[0])
    np.testing.assert_allclose(got, np.linalg.solve(np.triu(m), b[0]))


def test_cholesky_qr_svd_and_eigh_match_numpy():
    a = _spd(3, (2,))
    chol = _run(tf.cholesky, a)[1]
    np.testing.assert_allclose(chol, np.linalg.cholesky(a))
    b = RNG.normal(size=(2, 3, 1))
    np.testing.assert_allclose(_run(tf.linalg.cholesky_solve, chol, b)[1], np.linalg.solve(a, b))
    np.testing.assert_allclose(_run(tf.linalg.logdet, a)[1], np.linalg.slogdet(a)[1])
    x = RNG.normal(size=(4, 3))
    shapes, (q, r) = _run(tf.qr, x)
    assert shapes == [(4, 3), (3, 3)]
    np.testing.assert_allclose(q @ r, x, atol=1e-12)
    np.testing.assert_allclose(np.triu(r), r)
    shapes, (s, u, v) = _run(tf.svd, x)
    assert shapes == [(3,), (4, 3), (3, 3)]
    np.testing.assert_allclose(u * s @ v.T, x, atol=1e-12)
    np.testing.assert_allclose(_run(lambda t: tf.svd(t, compute_uv=False), x)[1],
                               np.linalg.svd(x, compute_uv=False))  # fmt: skip
    e, vecs = _run(tf.self_adjoint_eig, a)[1]
    np.testing.assert_allclose(e, np.linalg.eigh(a)[0])
    np.testing.assert_allclose(vecs @ (e[..., None] * np.swapaxes(vecs, -1, -2)), a, atol=1e-9)


def test_linalg_errors_in_tensorflows_words():
    with dg.Graph().as_default():
        singular = tf.matrix_inverse(dg.constant(np.ones((2, 2))))
        not_pd = tf.cholesky(dg.constant(-np.eye(2)))
        with dg.Session() as sess:
            with pytest.raises(dg.errors.InvalidArgumentError, match="not invertible"):
                sess.run(singular)
            with pytest.raises(dg.errors.InvalidArgumentError, match="Cholesky decomposition"):
                sess.run(not_pd)
        with pytest.raises(ValueError, match="must be square"):
            tf.matrix_inverse(dg.constant(np.ones((2, 3))))
        with pytest.raises(TypeError, match="float32 or float64"):
            tf.matrix_determinant(dg.constant([[1, 2], [3, 4]]))


def test_decomposition_gradients():
    a = _spd(3)
    b = RNG.normal(size=(3, 2))
    check_gradients(tf.matrix_inverse, [a])
    check_gradients(lambda t: tf.matrix_inverse(t, adjoint=True), [RNG.normal(size=(3, 3)) + a])
    check_gradients(tf.matrix_determinant, [RNG.normal(size=(2, 3, 3))])
    check_gradients(tf.matrix_solve, [a, b])
    check_gradients(lambda u, v: tf.matrix_solve(u, v, adjoint=True), [a + np.triu(a), b])
    check_gradients(lambda u, v: tf.matrix_triangular_solve(u, v, lower=False, adjoint=True),
                    [a, b])  # fmt: skip
    check_gradients(lambda t: tf.cholesky(_sym(t)), [a])
    check_gradients(lambda t: tf.concat(list(tf.qr(t)), axis=0), [RNG.normal(size=(3, 2))])
    check_gradients(lambda t: tf.svd(t, compute_uv=False), [RNG.normal(size=(3, 2))])
    check_gradients(lambda t: tf.self_adjoint_eigvals(t), [a])
    check_gradients(lambda t: tf.abs(tf.self_adjoint_eig(t)[1]), [a])


def test_svd_vectors_have_no_gradient_here():
    with dg.Graph().as_default():
        x = dg.constant(np.eye(2))
        _, u, _ = tf.svd(x)
        with pytest.raises(NotImplementedError, match="only the singular values"):
            dg.gradients(u, [x])


def test_slogdet_pinv_rank_and_lstsq_as_tensorflow():
    shapes, (sign, logdet) = _run(tf.linalg.slogdet, np.array([[2.0, 0.0], [0.0, -3.0]]))
    assert shapes == [(), ()] and sign == -1.0
    np.testing.assert_allclose(logdet, 1.791759469228055)  # TensorFlow's
    a = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    shape, got = _run(tf.linalg.pinv, a)
    assert shape == (2, 3)
    np.testing.assert_allclose(got, [[-4 / 3, -1 / 3, 2 / 3], [13 / 12, 1 / 3, -5 / 12]])
    rank = _run(tf.linalg.matrix_rank, np.array([[1.0, 2.0], [2.0, 4.0], [0.0, 0.0]]))[1]
    assert rank == 1 and rank.dtype == np.int32
    assert _run(tf.linalg.matrix_rank, a)[1] == 2
    np.testing.assert_allclose(_run(tf.linalg.lstsq, a, np.ones((3, 1)))[1], [[-1.0], [1.0]])
    wide, b = RNG.normal(size=(2, 4)), RNG.normal(size=(2, 1))
    np.testing.assert_allclose(_run(tf.linalg.lstsq, wide, b)[1], np.linalg.pinv(wide) @ b)
    got = _run(lambda u, v: tf.linalg.lstsq(u, v, l2_regularizer=0.5), a, np.ones((3, 1)))[1]
    np.testing.assert_allclose(got, np.linalg.solve(a.T @ a + 0.5 * np.eye(2), a.T @ np.ones(3))
                               [:, None])  # fmt: skip


def test_slogdet_pinv_and_lstsq_gradients():
    check_gradients(lambda t: tf.linalg.slogdet(t)[1], [RNG.normal(size=(2, 3, 3))])
    check_gradients(tf.linalg.pinv, [RNG.normal(size=(3, 2))])
    check_gradients(tf.linalg.pinv, [RNG.normal(size=(2, 3))])
    check_gradients(tf.linalg.lstsq, [RNG.normal(size=(3, 2)), RNG.normal(size=(3, 1))])


# -- einsum, tensordot, cross ---------------------------------------------------------------------
EINSUMS = [
    ("ij,jk->ik", [(2, 3), (3, 4)]),
    ("ij,jk", [(2, 3), (3, 4)]),
    ("bij,bjk->bik", [(2, 2, 3), (2, 3, 2)]),
    ("...ij,...jk->...ik", [(2, 1, 2, 3), (3, 3, 2)]),
    ("i,i->", [(3,), (3,)]),
    ("ij->", [(2, 3)]),
    ("ij,k->ikj", [(2, 3), (2,)]),
    ("ijk->kj", [(2, 3, 2)]),
]


@pytest.mark.parametrize("equation, shapes", EINSUMS)
def test_einsum_matches_numpy_and_differentiates(equation, shapes):
    arrays = [RNG.normal(size=s) for s in shapes]
    shape, got = _run(lambda *t: tf.einsum(equation, *t), *arrays)
    expected = np.einsum(equation, *arrays)
    assert shape == expected.shape
    np.testing.assert_allclose(got, expected, rtol=1e-12)
    check_gradients(lambda *t: tf.einsum(equation, *t), arrays)


def test_einsum_diagonal_forward_and_errors():
    x = RNG.normal(size=(3, 3))
    np.testing.assert_allclose(_run(lambda t: tf.einsum("ii->i", t), x)[1], np.diag(x))
    with dg.Graph().as_default():
        with pytest.raises(ValueError, match="size 3 and 4"):
            tf.einsum("ij,jk->ik", dg.constant(np.ones((2, 3))), dg.constant(np.ones((4, 2))))
        with pytest.raises(ValueError, match="2 operands"):
            tf.einsum("ij,jk->ik", dg.constant(np.ones((2, 3))))


@pytest.mark.parametrize("axes", [1, [[1, 2], [1, 0]], [[0], [1]], 0])
def test_tensordot(axes):
    a, b = RNG.normal(size=(2, 3, 4)), RNG.normal(size=(4, 3) if axes != [[0], [1]] else (3, 2))
    if axes == 0:
        b = RNG.normal(size=(2,))
    shape, got = _run(lambda x, y: tf.tensordot(x, y, axes), a, b)
    expected = np.tensordot(a, b, axes)
    assert shape == expected.shape
    np.testing.assert_allclose(got, expected, rtol=1e-12)


def test_cross_and_matvec():
    a, b = RNG.normal(size=(2, 3)), RNG.normal(size=(2, 3))
    np.testing.assert_allclose(_run(tf.cross, a, b)[1], np.cross(a, b))
    check_gradients(tf.linalg.cross, [a, b])
    m, v = RNG.normal(size=(2, 3, 4)), RNG.normal(size=(2, 4))
    shape, got = _run(tf.linalg.matvec, m, v)
    assert shape == (2, 3)
    np.testing.assert_allclose(got, np.einsum("bij,bj->bi", m, v))


@pytest.mark.virtual_gpus(1)
def test_linalg_on_a_virtual_gpu(dg_session):
    a = _spd(3, (2,)).astype(np.float32)
    with dg.device("/gpu:0"):
        x = dg.placeholder(dg.float32, [None, 3, 3])
        inv = tf.matrix_inverse(x)
        y = tf.einsum("bij,bjk->bik", inv, x)
        band = tf.matrix_band_part(y, 0, 0)
        (dx,) = dg.gradients(tf.reduce_sum(tf.matrix_determinant(x)), [x])
    got, grad = dg_session.run([band, dx], {x: a})
    placed = {o.name: o.assigned for o in dg_session.placement([band, dx], {x: a}).ops}
    assert all("GPU" in placed[t.op.name].upper() for t in (inv, y, band))
    np.testing.assert_allclose(got, np.broadcast_to(np.eye(3), (2, 3, 3)), atol=1e-4)
    expected = np.linalg.det(a)[:, None, None] * np.linalg.inv(np.swapaxes(a, -1, -2))
    np.testing.assert_allclose(grad, expected, rtol=1e-3)
