"""TensorFlow 1's session rules that its own session tests check (adapted from
tensorflow/python/client/session_test.py): nested feed keys, feed-key and feed-value errors,
constructor argument errors, re-entry, an empty graph, traced-run metadata, the interactive
session warning, an invalid target, and shapes computed by the graph."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import daskgraph.compat.v1 as tf


@pytest.fixture(autouse=True)
def _fresh_graph():
    tf.reset_default_graph()
    yield
    tf.reset_default_graph()


def test_nested_tuple_feed_keys():
    z = (((tf.zeros([2]),),), tf.zeros([2]), (tf.zeros([2]),))
    result = [z[0][0][0] * 2, z[1] * 2, z[2][0] * 2]
    values = (((np.array([1, 1]),),), np.array([2, 2]), (np.array([3, 3]),))
    with tf.Session() as sess:
        got = sess.run(result, feed_dict={z: values})
        assert [g.tolist() for g in got] == [[2, 2], [4, 4], [6, 6]]
        with pytest.raises(ValueError, match="tuple of 3 tensors"):
            sess.run(result, feed_dict={z: (1, 2)})


def test_feed_errors_in_tensorflows_words():
    a = tf.constant(1.0, tf.float32, name="a")
    s = tf.placeholder(tf.string)
    with tf.Session() as sess:
        with pytest.raises(TypeError, match="Cannot interpret feed_dict key as Tensor"):
            sess.run(a, feed_dict={"a": [2.0]})
        with pytest.raises(TypeError, match=r"Type of feed value 1 with type <class 'int'>"):
            sess.run(s, feed_dict={s: 1})


def test_session_arguments_rules():
    with pytest.raises(TypeError, match="target must be a string"):
        tf.Session(37)
    with pytest.raises(TypeError, match=r"config must be a tf\.ConfigProto"):
        tf.Session(config=37)
    with pytest.raises(TypeError, match=r"graph must be a tf\.Graph"):
        tf.Session(graph=37)
    with pytest.raises(tf.errors.NotFoundError, match="No session factory registered"):
        tf.Session("INVALID_TARGET")


def test_reentry_and_empty_graph():
    sess = tf.Session()
    with pytest.raises(RuntimeError, match="not re-entrant"):
        with sess:
            with sess:
                pass
    with tf.Graph().as_default(), tf.Session() as empty:
        with pytest.raises(RuntimeError, match=r"The Session graph is empty\."):
            empty.run([])


def test_run_metadata_has_step_stats_only_when_traced():
    meta = tf.RunMetadata()
    with tf.Session() as sess:
        c = tf.constant(1.0)
        sess.run(c, run_metadata=meta)
        assert not meta.HasField("step_stats")
        sess.run(c, options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE), run_metadata=meta)
        assert meta.HasField("step_stats") and len(meta.step_stats.dev_stats) == 1
    assert tf.RunOptions(trace_level=3).HasField("trace_level")
    assert not tf.RunOptions().HasField("timeout_in_ms")


def test_second_interactive_session_warns():
    first = tf.InteractiveSession()
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            second = tf.InteractiveSession()
            second.close()
        assert any("already active" in str(w.message) for w in caught)
    finally:
        first.close()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        tf.InteractiveSession().close()
    assert not [w for w in caught if "already active" in str(w.message)]


def test_shapes_computed_by_the_graph():
    x = tf.placeholder(tf.float32, [None, 2, 3])
    flat = tf.reshape(x, [tf.shape(x)[0], -1])
    zeros = tf.zeros([tf.shape(x)[0], 5])
    new_shape = tf.constant([2, 3])
    fixed = tf.reshape(tf.range(6), new_shape)
    assert flat.shape.as_list() == [None, None] and fixed.shape.as_list() == [2, 3]
    with tf.Session() as sess:
        got = sess.run([flat, zeros], {x: np.ones((4, 2, 3))})
        assert [g.shape for g in got] == [(4, 6), (4, 5)]
        assert sess.run(fixed, {new_shape: [3, 2]}).shape == (3, 2)
        with pytest.raises(tf.errors.InvalidArgumentError, match="requested shape has 21"):
            sess.run(fixed, {new_shape: [3, 7]})
        grad = tf.gradients(tf.reduce_sum(flat * 2.0), x)[0]
        assert sess.run(grad, {x: np.ones((1, 2, 3))}).tolist() == [[[2.0] * 3] * 2]


def test_names_may_be_bytes():
    c = tf.constant(44.0, name=b"e")
    with tf.Session() as sess:
        assert c.op.name == "e" and sess.run("e:0") == 44.0
