"""``roll``, ``repeat``, ``setdiff1d``, ``identity_n``, ``shape_n``, ``ensure_shape``,
``saturate_cast`` and the broadcast-shape helpers (ops/manip.py) through ``compat.v1``, against
TensorFlow 2.21's results for the same programs, gradients checked by finite differences."""

from __future__ import annotations

import numpy as np
import pytest

import daskgraph as dg
import daskgraph.compat.v1 as tf
from daskgraph.compat.gradient_check import check_gradients

RNG = np.random.default_rng(5)
X = np.array([[1, 2, 3], [4, 5, 6]], dtype=np.int32)


def _run(fetches, feeds=None):
    with tf.Session() as sess:
        return sess.run(fetches, feeds)


def test_roll_and_repeat_as_tensorflow():
    with tf.Graph().as_default():
        x = tf.constant(X)
        rolls = [tf.roll(x, 1, 0), tf.roll(x, [1, -1], [0, 1]), tf.roll(x, 4, 1),
                 tf.roll(x, [1, 1], [1, 1])]  # fmt: skip
        repeats = [tf.repeat(x, 2), tf.repeat(x, [1, 2], axis=0), tf.repeat(x, [0, 1, 3], axis=1),
                   tf.repeat(x, 2, axis=-1)]  # fmt: skip
        assert [t.shape for t in repeats] == [(12,), (3, 3), (2, 4), (2, 6)]
        r, p = _run([rolls, repeats])
    assert [a.tolist() for a in r] == [  # TF 2.21
        [[4, 5, 6], [1, 2, 3]],
        [[5, 6, 4], [2, 3, 1]],
        [[3, 1, 2], [6, 4, 5]],
        [[2, 3, 1], [5, 6, 4]],
    ]
    assert [a.tolist() for a in p] == [
        [1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6],
        [[1, 2, 3], [4, 5, 6], [4, 5, 6]],
        [[2, 3, 3, 3], [5, 6, 6, 6]],
        [[1, 1, 2, 2, 3, 3], [4, 4, 5, 5, 6, 6]],
    ]


def test_roll_and_repeat_gradients():
    f = np.arange(1.0, 7.0).reshape(2, 3)
    with tf.Graph().as_default():
        x = tf.constant(f)
        w = tf.constant([[1.0, 2, 3], [4, 5, 6]], tf.float64)
        (g_roll,) = tf.gradients(tf.reduce_sum(tf.roll(x, [1, 2], [0, 1]) * w), x)
        weights = tf.constant([[1.0, 2, 3, 4]], tf.float64)
        (g_rep,) = tf.gradients(tf.reduce_sum(tf.repeat(x, [0, 1, 3], axis=1) * weights), x)
        (g_flat,) = tf.gradients(tf.reduce_sum(tf.repeat(x, 2) * np.arange(1.0, 13.0)), x)
        got = _run([g_roll, g_rep, g_flat])
    assert got[0].tolist() == [[6.0, 4.0, 5.0], [3.0, 1.0, 2.0]]  # TF 2.21
    assert got[1].tolist() == [[0.0, 1.0, 9.0], [0.0, 1.0, 9.0]]
    assert got[2].tolist() == [[3.0, 7.0, 11.0], [15.0, 19.0, 23.0]]
    check_gradients(lambda a: tf.roll(a, [2, -1], [1, 0]), [RNG.normal(size=(3, 4))])
    check_gradients(lambda a: tf.repeat(a, [2, 0, 1], axis=0), [RNG.normal(size=(3, 2))])


def test_setdiff1d_identity_n_shape_n():
    with tf.Graph().as_default():
        d = tf.setdiff1d([1, 2, 3, 4, 5, 2], [2, 5])
        x = tf.constant(X)
        ids = tf.identity_n([x, tf.constant(1.0)])
        shapes = tf.shape_n([x, x[0]], out_type=tf.int64)
        with pytest.raises(TypeError, match=r"have types \[int32, float32\] that don't all match"):
            tf.shape_n([x, tf.constant(1.0)])
        out, idx, i0, s = _run([d.out, d.idx, ids[0], shapes])
    assert (out.tolist(), idx.tolist()) == ([1, 3, 4], [0, 2, 3])  # TF 2.21
    assert d.out.dtype == tf.int32 and d.idx.dtype == tf.int32
    assert i0.tolist() == X.tolist() and [v.tolist() for v in s] == [[2, 3], [3]]
    assert s[0].dtype == np.int64


def test_ensure_shape():
    with tf.Graph().as_default():
        p = tf.placeholder(tf.float32, [None, 3])
        e = tf.ensure_shape(p, [2, None])
        assert (e.shape, e.op.type) == ((2, 3), "EnsureShape")
        with pytest.raises(ValueError, match="Dimension 1 in both shapes must be equal, but are 4 "
                           r"and 3. Shapes are \[2,4\] and \[\?,3\]"):  # fmt: skip
            tf.ensure_shape(p, [2, 4])
        with tf.Session() as sess:
            assert sess.run(e, {p: np.ones((2, 3))}).shape == (2, 3)
            wrong = r"Shape of tensor Placeholder \[3,3\] is not compatible with expected shape"
            with pytest.raises(tf.errors.InvalidArgumentError, match=wrong + r" \[2,\?\]"):
                sess.run(e, {p: np.ones((3, 3))})
        (g,) = tf.gradients(tf.reduce_sum(e * 2.0), p)
        assert _run(g, {p: np.ones((2, 3))}).tolist() == [[2.0] * 3] * 2


def test_saturate_cast_as_tensorflow():
    with tf.Graph().as_default():
        casts = [
            tf.saturate_cast(tf.constant([-300.0, 1.7, 300.0]), tf.uint8),
            tf.saturate_cast(tf.constant([1e10, -1e10], tf.float64), tf.int32),
            tf.saturate_cast(tf.constant([70000, -5], tf.int32), tf.int16),
            tf.saturate_cast(tf.constant([1e300], tf.float64), tf.float32),
            tf.saturate_cast(tf.constant([-1, 300], tf.int64), tf.uint8),
            tf.saturate_cast(tf.constant([3e9, -3e9], tf.float32), tf.int32),
        ]
        assert [c.name for c in casts[:2]] == ["saturate_cast:0", "saturate_cast_1:0"]
        got = _run(casts)
    assert got[0].tolist() == [0, 1, 255] and got[0].dtype == np.uint8  # TF 2.21
    assert got[1].tolist() == [2147483647, -2147483648]
    assert got[2].tolist() == [32767, -5] and got[3].tolist() == [np.float32(3.4028235e38)]
    assert got[4].tolist() == [0, 255]
    assert got[5].tolist() == [2147483520, -2147483648]  # float32 limits nudged inside int32


def test_broadcast_shapes():
    shape = tf.broadcast_static_shape(tf.TensorShape([2, 1, 3]), tf.TensorShape([4, 1]))
    assert shape.as_list() == [2, 4, 3]
    assert tf.broadcast_static_shape(tf.TensorShape([None, 1]), [5]).as_list() == [None, 5]
    assert tf.broadcast_static_shape(tf.TensorShape(None), [5]).ndims is None
    with pytest.raises(ValueError, match=r"Incompatible shapes for broadcasting\. .* Received: "
                       r"\(2,\) and \(3,\)\."):  # fmt: skip
        tf.broadcast_static_shape(tf.TensorShape([2]), tf.TensorShape([3]))
    with tf.Graph().as_default():
        s = tf.broadcast_dynamic_shape(tf.constant([2, 1, 3]), tf.constant([4, 1]))
        s64 = tf.broadcast_dynamic_shape(tf.constant([2, 1], tf.int64), tf.constant([3], tf.int64))
        bad = tf.broadcast_dynamic_shape(tf.constant([2]), tf.constant([3]))
        assert (s.shape, s.op.type, s.dtype) == ((3,), "BroadcastArgs", tf.int32)
        with tf.Session() as sess:
            assert sess.run(s).tolist() == [2, 4, 3] and sess.run(s64).tolist() == [2, 3]
            with pytest.raises(tf.errors.InvalidArgumentError, match=r"Incompatible shapes: "
                               r"\[2\] vs\. \[3\]"):  # fmt: skip
                sess.run(bad)


@pytest.mark.virtual_gpus(1)
def test_roll_and_repeat_on_a_virtual_gpu(dg_session):
    x = RNG.normal(size=(3, 4)).astype(np.float32)
    with dg.device("/gpu:0"):
        p = dg.placeholder(dg.float32, [3, 4])
        y = tf.repeat(tf.roll(p, 1, 1), [1, 2, 0], axis=0)
        (dp,) = dg.gradients(tf.reduce_sum(y * y), [p])
    got, grad = dg_session.run([y, dp], {p: x})
    placed = {o.name: o.assigned for o in dg_session.placement([y, dp], {p: x}).ops}
    assert all("GPU" in placed[t.op.name].upper() for t in (y, dp))
    expected = np.repeat(np.roll(x, 1, 1), [1, 2, 0], axis=0)
    np.testing.assert_array_equal(got, expected)
    np.testing.assert_allclose(grad, 2 * x * np.array([[1.0], [2.0], [0.0]]), rtol=1e-6)
