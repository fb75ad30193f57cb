"""Indexing and sorting ops (ops/indexing.py, ops/sorting.py) against NumPy and TensorFlow
2.21's results, with static shapes, gradients checked by finite differences, errors in
TensorFlow's words, and a run on a virtual GPU."""

from __future__ import annotations

import numpy as np
import pytest

import daskgraph as dg
import daskgraph.compat.v1 as tf
from daskgraph.compat.gradient_check import check_gradients

RNG = np.random.default_rng(3)
X = np.arange(24).reshape(2, 3, 4)


def _run(fn, *arrays, feeds=None):
    """``fn`` of constants of ``arrays``: (static shape(s), value)."""
    with dg.Graph().as_default():
        out = fn(*[dg.constant(a) for a in arrays])
        with dg.Session() as sess:
            value = sess.run(out, feeds)
    shapes = [t.shape for t in out] if isinstance(out, (list, tuple)) else out.shape
    return shapes, value


# -- gather_nd, batch_gather ----------------------------------------------------------------------
@pytest.mark.parametrize(
    "indices", [[[0, 1], [1, 2]], [[[0, 1, 2]], [[1, 2, 3]]], [[1]], [[0, 2, 3], [1, 0, 0]]]
)
def test_gather_nd_matches_numpy(indices):
    idx = np.array(indices)
    shape, got = _run(lambda x: tf.gather_nd(x, indices), X)
    expected = X[tuple(np.moveaxis(idx, -1, 0))]
    assert shape == expected.shape
    np.testing.assert_array_equal(got, expected)


def test_gather_nd_out_of_range_in_tensorflows_words():
    with dg.Graph().as_default():
        y = tf.gather_nd(dg.constant(X), [[0, 5]])
        with dg.Session() as sess, pytest.raises(dg.errors.InvalidArgumentError) as caught:
            sess.run(y)
    assert "indices[0] = [0, 5] does not index into param shape [2,3,4]" in str(caught.value)


def test_gather_nd_and_batch_gather_gradients_add_repeated_places():
    x = RNG.normal(size=(3, 2))
    check_gradients(lambda p: tf.gather_nd(p, [[0, 1], [2, 0], [0, 1]]), [x])
    check_gradients(lambda p: tf.gather_nd(p, [[1], [1]]), [x])
    with dg.Graph().as_default():
        p = dg.constant(x)
        (g,) = dg.gradients(tf.reduce_sum(tf.gather_nd(p, [[0, 1], [0, 1]])), [p])
        with dg.Session() as sess:
            assert sess.run(g).tolist() == [[0.0, 2.0], [0.0, 0.0], [0.0, 0.0]]
    check_gradients(lambda p: tf.batch_gather(p, [[2, 0, 2], [1, 1, 0]]),
                    [RNG.normal(size=(2, 3, 2))])  # fmt: skip


def test_batch_gather_matches_take_along_axis():
    params, idx = RNG.normal(size=(2, 3, 5)), np.array([[[4, 0], [1, 1], [2, 3]]] * 2)
    shape, got = _run(lambda p: tf.batch_gather(p, idx), params)
    expected = np.take_along_axis(params, idx, axis=2)
    assert shape == expected.shape
    np.testing.assert_array_equal(got, expected)


# -- masks ----------------------------------------------------------------------------------------
def test_boolean_mask_as_tensorflow():
    shape, got = _run(lambda x: tf.boolean_mask(x, [True, False]), X)
    assert shape == (None, 3, 4) and got.tolist() == X[:1].tolist()
    mask = np.array([[True, False, True], [False, False, True]])
    shape, got = _run(lambda x: tf.boolean_mask(x, mask), X)
    assert shape == (None, 4)
    assert got[:, 0].tolist() == [0, 8, 20]  # TensorFlow's rows
    shape, got = _run(lambda x: tf.boolean_mask(x, [True, False, True], axis=1), X)
    assert shape == (2, None, 4) and got[1, :, 0].tolist() == [12, 20]
    check_gradients(lambda x: tf.boolean_mask(x, [True, False, True], axis=1),
                    [RNG.normal(size=(2, 3, 2))])  # fmt: skip
    with dg.Graph().as_default(), pytest.raises(ValueError, match="incompatible"):
        tf.boolean_mask(dg.constant(X), [True, False, True])


def test_boolean_mask_with_a_fed_mask():
    with dg.Graph().as_default():
        m = dg.placeholder(dg.bool_, [None])
        y = tf.boolean_mask(dg.constant(np.arange(4.0)), m)
        with dg.Session() as sess:
            assert sess.run(y, {m: [False, True, True, False]}).tolist() == [1.0, 2.0]


def test_sequence_mask_as_tensorflow():
    shape, got = _run(lambda: tf.sequence_mask([1, 3, 2], 5))
    assert shape == (3, 5) and got.dtype == np.bool_
    assert got.sum(axis=1).tolist() == [1, 3, 2]
    shape, got = _run(lambda: tf.sequence_mask([[1, 3], [2, 0]]))
    assert shape == (2, 2, None) and got.shape == (2, 2, 3)
    assert got.astype(int).tolist() == [[[1, 0, 0], [1, 1, 1]], [[1, 1, 0], [0, 0, 0]]]
    assert _run(lambda: tf.sequence_mask([1, 2], dtype=tf.float32))[1].dtype == np.float32
    with dg.Graph().as_default():
        n = dg.placeholder(dg.int32, [])
        m = tf.sequence_mask(dg.constant([1, 2]), n)
        with dg.Session() as sess:
            assert sess.run(m, {n: 4}).shape == (2, 4)


# -- reversing ------------------------------------------------------------------------------------
def test_reverse_and_reverse_v2():
    np.testing.assert_array_equal(_run(lambda x: tf.reverse(x, [1, -1]), X)[1], X[:, ::-1, ::-1])
    np.testing.assert_array_equal(_run(lambda x: tf.reverse_v2(x, [0]), X)[1], X[::-1])
    check_gradients(lambda x: tf.reverse(x, [0, 1]), [RNG.normal(size=(2, 3))])
    with dg.Graph().as_default(), pytest.raises(ValueError, match="out of range"):
        tf.reverse(dg.constant(X), [3])


def test_reverse_sequence_as_tensorflow():
    _, got = _run(lambda x: tf.reverse_sequence(x, [1, 3], seq_axis=1, batch_axis=0), X)
    assert got[1, :, 0].tolist() == [20, 16, 12] and got[0].tolist() == X[0].tolist()
    x = np.arange(12).reshape(3, 4)
    _, got = _run(lambda t: tf.reverse_sequence(t, [2, 3, 1, 0], seq_axis=0, batch_axis=1), x)
    assert got.tolist() == [[4, 9, 2, 3], [0, 5, 6, 7], [8, 1, 10, 11]]
    _, got = _run(lambda t: tf.reverse_sequence(t, [2, 1, 3], seq_dim=1), x)
    assert got[0].tolist() == [1, 0, 2, 3]
    check_gradients(lambda t: tf.reverse_sequence(t, [2, 3], seq_axis=1),
                    [RNG.normal(size=(2, 3))])  # fmt: skip
    with dg.Graph().as_default():
        y = tf.reverse_sequence(dg.constant(x), [2, 5, 1, 0], seq_axis=0, batch_axis=1)
        with dg.Session() as sess, pytest.raises(dg.errors.InvalidArgumentError) as caught:
            sess.run(y)
    assert "seq_lens(1) > input.dims(0)" in str(caught.value)


# -- broadcasting, blocks -------------------------------------------------------------------------
def test_broadcast_to_static_and_fed_shapes():
    shape, got = _run(lambda x: tf.broadcast_to(x, [2, 3]), np.array([1, 2, 3]))
    assert shape == (2, 3) and got.tolist() == [[1, 2, 3]] * 2
    check_gradients(lambda x: tf.broadcast_to(x, [2, 3, 2]), [RNG.normal(size=(3, 1))])
    with dg.Graph().as_default():
        x = dg.placeholder(dg.float32, [None, 2])
        y = tf.broadcast_to(dg.constant([1.0, 2.0]), tf.shape(x))
        assert y.shape == (None, None)
        with dg.Session() as sess:
            assert sess.run(y, {x: np.zeros((3, 2))}).shape == (3, 2)
        with pytest.raises(ValueError, match="cannot broadcast"):
            tf.broadcast_to(dg.constant([1, 2]), [2, 3])


def test_space_to_depth_and_back():
    x = np.arange(16).reshape(1, 4, 4, 1)
    shape, got = _run(lambda t: tf.space_to_depth(t, 2), x)
    assert shape == (1, 2, 2, 4)
    assert got[0, 0, 0].tolist() == [0, 1, 4, 5] and got[0, 1, 1].tolist() == [10, 11, 14, 15]
    y = RNG.normal(size=(2, 2, 3, 8))
    _, back = _run(lambda t: tf.space_to_depth(tf.depth_to_space(t, 2), 2), y)
    np.testing.assert_array_equal(back, y)
    check_gradients(lambda t: tf.space_to_depth(t, 2), [RNG.normal(size=(1, 2, 4, 2))])
    with dg.Graph().as_default(), pytest.raises(ValueError, match="NHWC"):
        tf.space_to_depth(dg.constant(x), 2, data_format="NCHW")


# -- sorting --------------------------------------------------------------------------------------
S = np.array([[3, 1, 2, 1], [0, 5, 5, 4]])


def test_sort_and_argsort_as_tensorflow():
    assert _run(tf.sort, S)[1].tolist() == [[1, 1, 2, 3], [0, 4, 5, 5]]
    assert _run(lambda x: tf.sort(x, direction="DESCENDING", axis=0), S)[1].tolist() == [
        [3, 5, 5, 4], [0, 1, 2, 1]]  # fmt: skip
    shape, got = _run(tf.argsort, S)
    assert shape == (2, 4) and got.dtype == np.int32
    assert got.tolist() == [[1, 3, 2, 0], [0, 3, 1, 2]]  # TensorFlow's (stable)
    got = _run(lambda x: tf.argsort(x, direction="DESCENDING"), S)[1]
    assert got.tolist() == [[0, 2, 1, 3], [1, 2, 3, 0]]
    with dg.Graph().as_default(), pytest.raises(ValueError, match="Unknown direction"):
        tf.sort(dg.constant(S), direction="UP")


def test_searchsorted_and_where_with_one_argument():
    shape, got = _run(lambda a, b: tf.searchsorted(a, b), np.array([[1, 3, 5], [2, 4, 6]]),
                      np.array([[3, 6], [1, 7]]))  # fmt: skip
    assert shape == (2, 2) and got.dtype == np.int32 and got.tolist() == [[1, 3], [0, 3]]
    assert _run(lambda: tf.searchsorted([1, 3, 5], [3, 6], side="right"))[1].tolist() == [2, 3]
    shape, got = _run(lambda: tf.where([[True, False], [False, True]]))
    assert shape == (None, 2) and got.dtype == np.int64 and got.tolist() == [[0, 0], [1, 1]]


@pytest.mark.parametrize("direction", ["ASCENDING", "DESCENDING"])
def test_sort_gradient(direction):
    check_gradients(lambda x: tf.sort(x, axis=0, direction=direction), [RNG.normal(size=(4, 3))])
    check_gradients(lambda x: tf.sort(tf.sort(x) * x, direction=direction),
                    [RNG.normal(size=(2, 5))])  # fmt: skip


def test_unique_and_unique_with_counts_as_tensorflow():
    shapes, (y, idx) = _run(tf.unique, np.array([4, 1, 4, 2, 1], np.int32))
    assert shapes == [(None,), (5,)]
    assert y.tolist() == [4, 1, 2] and idx.tolist() == [0, 1, 0, 2, 1] and idx.dtype == np.int32
    _, (y, idx, count) = _run(lambda x: tf.unique_with_counts(x, out_idx=tf.int64),
                              np.array([4.5, 1.0, 4.5, 2.0, 1.0]))  # fmt: skip
    assert y.tolist() == [4.5, 1.0, 2.0] and count.tolist() == [2, 2, 1]
    assert idx.dtype == np.int64 and count.dtype == np.int64
    with dg.Graph().as_default():
        found = tf.unique(dg.constant([3, 3]))
        assert found.y.op.name == "Unique/output_0" and found.idx.op.name == "Unique/output_1"


def test_dynamic_partition_and_stitch_as_tensorflow():
    shapes, parts = _run(lambda d: tf.dynamic_partition(d, [0, 1, 0, 2, 1], 3),
                         np.array([10, 20, 30, 40, 50]))  # fmt: skip
    assert shapes == [(None,)] * 3
    assert [p.tolist() for p in parts] == [[10, 30], [20, 50], [40]]
    shape, got = _run(lambda: tf.dynamic_stitch([[0, 2], [1, 2]], [[1.0, 2.0], [3.0, 4.0]]))
    assert shape == (3,) and got.tolist() == [1.0, 3.0, 4.0]
    data = [np.array([[1.0, 1.0], [2.0, 2.0]]), np.array([[3.0, 3.0], [4.0, 4.0]])]
    shape, got = _run(lambda a, b: tf.dynamic_stitch([[0, 4], [1, 2]], [a, b]), *data)
    assert shape == (5, 2) and got[:, 0].tolist() == [1.0, 3.0, 4.0, 0.0, 2.0]
    with dg.Graph().as_default():
        bad = tf.dynamic_partition(dg.constant([1, 2]), [0, 3], 2)[0]
        with dg.Session() as sess, pytest.raises(dg.errors.InvalidArgumentError) as caught:
            sess.run(bad)
    assert "partitions[1] = 3 is not in [0, 2)" in str(caught.value)


def test_partition_and_stitch_gradients():
    def parted(d):
        a, b = tf.dynamic_partition(d, [1, 0, 1], 2)
        return tf.concat([a * 2.0, b], axis=0)

    check_gradients(parted, [RNG.normal(size=(3, 2))])
    check_gradients(lambda a, b: tf.dynamic_stitch([[0, 2], [1, 3]], [a, b]),
                    [RNG.normal(size=(2, 2)), RNG.normal(size=(2, 2))])  # fmt: skip


@pytest.mark.virtual_gpus(1)
def test_indexing_on_a_virtual_gpu(dg_session):
    x = RNG.normal(size=(4, 3)).astype(np.float32)
    with dg.device("/gpu:0"):
        p = dg.placeholder(dg.float32, [None, 3])
        picked = tf.gather_nd(p, [[0, 2], [3, 1], [0, 2]])
        kept = tf.boolean_mask(p, tf.greater(tf.reduce_sum(p, axis=1), 0.0))
        ordered = tf.sort(p, axis=0, direction="DESCENDING")
        (dp,) = dg.gradients(tf.reduce_sum(picked) + tf.reduce_sum(ordered * ordered), [p])
    got = dg_session.run([picked, kept, ordered, dp], {p: x})
    placed = {o.name: o.assigned for o in dg_session.placement([picked, dp], {p: x}).ops}
    assert all("GPU" in placed[t.op.name].upper() for t in (picked, dp))
    np.testing.assert_array_equal(got[0], x[[0, 3, 0], [2, 1, 2]])
    np.testing.assert_array_equal(got[1], x[x.sum(axis=1) > 0])
    np.testing.assert_array_equal(got[2], -np.sort(-x, axis=0))
    expected = 2 * x
    expected[0, 2] += 2
    expected[3, 1] += 1
    np.testing.assert_allclose(got[3], expected, rtol=1e-6)
