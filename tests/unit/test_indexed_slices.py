"""``tf.IndexedSlices``: fetched as an IndexedSlicesValue, fed as one key, made dense where a
tensor is wanted."""

from __future__ import annotations

import numpy as np
import pytest

import daskgraph.compat.v1 as tf


@pytest.fixture(autouse=True)
def _fresh_graph():
    tf.reset_default_graph()
    yield
    tf.reset_default_graph()


def test_fetch_gives_the_three_arrays_in_any_structure():
    rows = tf.IndexedSlices(
        tf.constant([[1.0, 2.0], [5.0, 6.0]]), tf.constant([3, 1], tf.int64), tf.constant([4, 2])
    )
    with tf.Session() as sess:
        alone, (inside,) = sess.run(rows), sess.run([rows])
    for value in (alone, inside):
        assert isinstance(value, tf.IndexedSlicesValue)
        assert value.values.tolist() == [[1.0, 2.0], [5.0, 6.0]]
        assert value.indices.tolist() == [3, 1] and value.dense_shape.tolist() == [4, 2]


def test_feed_as_one_key_with_or_without_a_dense_shape():
    values = tf.placeholder(tf.float32, (2, 3))
    indices = tf.placeholder(tf.int64, (2,))
    with_shape = tf.IndexedSlices(values, indices, tf.placeholder(tf.int64, (2,)))
    without = tf.IndexedSlices(values, indices)
    doubled = tf.identity(with_shape.values) * 2.0
    feed = (np.ones((2, 3), np.float32), np.array([0, 4]), np.array([5, 3]))
    with tf.Session() as sess:
        got = sess.run(with_shape, {with_shape: feed})
        assert got.indices.tolist() == [0, 4] and got.dense_shape.tolist() == [5, 3]
        assert sess.run(doubled, {with_shape: tf.IndexedSlicesValue(*feed)}).sum() == 12.0
        bare = sess.run(without, {without: feed[:2]})
        assert bare.dense_shape is None and bare.indices.tolist() == [0, 4]
    with pytest.raises(TypeError, match="IndexedSlicesValue or a tuple"):
        with tf.Session() as sess:
            sess.run(without, {without: 3.0})


def test_dense_where_a_tensor_is_wanted():
    rows = tf.IndexedSlices(tf.constant([[1.0], [2.0], [4.0]]), tf.constant([0, 2, 0]), [3, 1])
    with tf.Session() as sess:
        assert sess.run(tf.convert_to_tensor(rows)).tolist() == [[5.0], [0.0], [2.0]]
    with pytest.raises(TypeError, match="int32 or int64"):
        tf.IndexedSlices(tf.constant([1.0]), tf.constant([0.5]))
    with pytest.raises(ValueError, match="dense_shape is unknown"):
        tf.convert_to_tensor(tf.IndexedSlices(tf.constant([1.0]), tf.constant([0])))
