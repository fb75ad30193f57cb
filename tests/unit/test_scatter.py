"""Scatter ops (ops/scatter.py): scatter_nd and tensor_scatter_* against NumPy with their
gradients; variable scatters updating the variable across runs (and through compat.v1's
signatures), their errors, and a variable on a virtual GPU."""

from __future__ import annotations

import types

import numpy as np
import pytest

import daskgraph as dg
import daskgraph.compat.v1 as tf
from daskgraph.compat.gradient_check import check_gradients
from daskgraph.kernels.indexing import scatter_into

RNG = np.random.default_rng(5)


def _run(fn, *arrays):
    with dg.Graph().as_default():
        out = fn(*[dg.constant(a) for a in arrays])
        with dg.Session() as sess:
            return out.shape, sess.run(out)


# -- new tensors ----------------------------------------------------------------------------------
def test_scatter_nd_adds_repeated_coordinates():
    shape, got = _run(lambda: tf.scatter_nd([[4], [3], [1], [7], [1]], [9, 10, 11, 12, 1], [8]))
    assert shape == (8,) and got.tolist() == [0, 12, 0, 10, 9, 0, 0, 12]
    updates = RNG.normal(size=(2, 4))
    shape, got = _run(lambda u: tf.scatter_nd([[0], [2]], u, [3, 4]), updates)
    assert shape == (3, 4)
    np.testing.assert_array_equal(got, [updates[0], np.zeros(4), updates[1]])
    check_gradients(lambda u: tf.scatter_nd([[1, 0], [0, 1], [1, 0]], u, [2, 2]),
                    [RNG.normal(size=3)])  # fmt: skip


def test_scatter_nd_with_a_computed_shape():
    with dg.Graph().as_default():
        x = dg.placeholder(dg.float32, [None, 2])
        y = tf.scatter_nd([[1, 1]], [5.0], tf.shape(x))
        assert y.shape == (None, None)
        with dg.Session() as sess:
            assert sess.run(y, {x: np.zeros((3, 2))}).tolist() == [[0, 0], [0, 5], [0, 0]]


@pytest.mark.parametrize(
    "fn, combine",
    [
        (tf.tensor_scatter_update, lambda old, new: new),
        (tf.tensor_scatter_add, lambda old, new: old + new),
        (tf.tensor_scatter_nd_sub, lambda old, new: old - new),
        (tf.tensor_scatter_nd_max, np.maximum),
        (tf.tensor_scatter_nd_min, np.minimum),
    ],
)
def test_tensor_scatters_match_numpy_and_differentiate(fn, combine):
    x, updates = RNG.normal(size=(4, 3)), RNG.normal(size=(2, 3))
    shape, got = _run(lambda t, u: fn(t, [[3], [1]], u), x, updates)
    expected = x.copy()
    expected[[3, 1]] = combine(x[[3, 1]], updates)
    assert shape == (4, 3)
    np.testing.assert_array_equal(got, expected)
    check_gradients(lambda t, u: fn(t, [[3], [1]], u), [x, updates])


def test_tensor_scatter_refuses_mismatched_updates():
    with dg.Graph().as_default(), pytest.raises(ValueError, match="do not match"):
        tf.tensor_scatter_update(dg.constant(np.zeros((4, 3))), [[1], [2]], np.ones((2, 2)))


# -- variables ------------------------------------------------------------------------------------
def test_scatter_ops_update_the_variable_across_runs():
    with dg.Graph().as_default():
        v = tf.Variable(np.arange(6.0).reshape(3, 2), name="v")
        add = tf.scatter_add(v, [0, 2, 0], [[1.0, 1.0], [10.0, 10.0], [1.0, 1.0]])
        sub = tf.scatter_sub(v, [1], [[0.5, 0.5]])
        upd = tf.scatter_update(v, [2], [[7.0, 8.0]], use_locking=True, name="put")
        mul = tf.scatter_mul(v, [0], [[2.0, 3.0]])
        div = tf.scatter_div(v, [0], [[2.0, 3.0]])
        high = tf.scatter_max(v, [1, 1], [[100.0, 0.0], [0.0, 50.0]])
        low = tf.scatter_min(v, [2], [[-1.0, 9.0]])
        assert upd.op.name == "put" and add.op.type == "ScatterAdd" and add.shape == (3, 2)
        with dg.Session() as sess:
            sess.run(v.initializer)
            assert sess.run(add).tolist() == [[2.0, 3.0], [2.0, 3.0], [14.0, 15.0]]
            assert sess.run(add).tolist() == [[4.0, 5.0], [2.0, 3.0], [24.0, 25.0]]
            assert sess.run(sub)[1].tolist() == [1.5, 2.5]
            assert sess.run(upd)[2].tolist() == [7.0, 8.0]
            assert sess.run(mul)[0].tolist() == [8.0, 15.0]
            assert sess.run(div)[0].tolist() == [4.0, 5.0]
            assert sess.run(high)[1].tolist() == [100.0, 50.0]
            assert sess.run(low)[2].tolist() == [-1.0, 8.0]
            assert sess.run(v).tolist() == [[4.0, 5.0], [100.0, 50.0], [-1.0, 8.0]]


def test_integer_scatter_div_truncates_as_tensorflow():
    with dg.Graph().as_default():
        v = dg.Variable([-7, 7, 9, 100])
        div = tf.scatter_div(v, [0, 1, 2, 3, 3], [2, -2, 2, 3, -4])
        with dg.Session() as sess:
            sess.run(v.initializer)
            assert sess.run(div).tolist() == [-3, -3, 4, -8]  # TensorFlow's first three


def test_scatter_nd_variable_updates():
    with dg.Graph().as_default():
        v = dg.Variable(np.zeros((2, 3), np.int32))
        put = tf.scatter_nd_update(v, [[0, 1], [1, 2]], [5, 6])
        add = tf.scatter_nd_add(v, [[1], [1]], [[1, 1, 1], [2, 2, 2]])
        sub = tf.scatter_nd_sub(v, [[0, 0]], [4])
        with dg.Session() as sess:
            sess.run(v.initializer)
            sess.run(put)
            sess.run(add)
            assert sess.run(sub).tolist() == [[-4, 5, 0], [3, 3, 9]]
            assert sess.run(v).tolist() == [[-4, 5, 0], [3, 3, 9]]


def test_variable_scatter_errors():
    with dg.Graph().as_default():
        v = dg.Variable(np.zeros((3, 2)))
        with pytest.raises(TypeError, match="expects a Variable"):
            tf.scatter_update(dg.constant(np.zeros((3, 2))), [0], [[1.0, 1.0]])
        with pytest.raises(ValueError, match="do not match"):
            tf.scatter_add(v, [0, 1], [[1.0, 1.0]])
        bad = tf.scatter_update(v, [3], [[1.0, 1.0]])
        with dg.Session() as sess:
            sess.run(v.initializer)
            with pytest.raises(dg.errors.InvalidArgumentError, match=r"indices\[0\] = 3 is not"):
                sess.run(bad)
            assert sess.run(v).tolist() == [[0.0, 0.0]] * 3  # untouched


def test_scatter_ops_are_not_differentiable():
    with dg.Graph().as_default():
        v = dg.Variable(np.ones(3))
        u = dg.constant(np.array([2.0]))
        assert dg.gradients(tf.scatter_add(v, [0], u), [u]) == [None]


@pytest.mark.virtual_gpus(1)
def test_variable_scatter_on_a_virtual_gpu(dg_session):
    with dg.device("/gpu:0"):
        v = dg.Variable(np.zeros((4, 2), np.float32), name="table")
        rows = dg.placeholder(dg.int32, [None])
        add = tf.scatter_add(v, rows, tf.ones_like(tf.gather(v, rows)))
    dg_session.run(v.initializer)
    for _ in range(2):
        dg_session.run(add, {rows: [0, 3, 3]})
    placed = {o.name: o.assigned for o in dg_session.placement(add, {rows: [0]}).ops}
    assert "GPU" in placed[add.op.name].upper()
    assert dg_session.run(v).tolist() == [[2, 2], [0, 0], [0, 0], [4, 4]]


def test_scatter_into_goes_through_the_host_for_what_cupy_cannot_scatter():
    device = types.SimpleNamespace(asnumpy=np.array, asarray=np.asarray)  # copies, as CuPy
    out = np.array([1, 2, 3], dtype=np.int64)
    assert scatter_into(device, out, (np.array([0, 0, 2]),), np.array([5, 5, 1])) is out
    assert out.tolist() == [11, 2, 4]
    scatter_into(device, out, (np.array([1, 1]),), np.array([3, 2]), "multiply")
    assert out.tolist() == [11, 12, 4]
