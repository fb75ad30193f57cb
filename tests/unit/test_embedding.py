"""tf.nn.embedding_lookup: one table or partitions with TensorFlow 1's "mod" and "div"
strategies (the rows TensorFlow's own assignment picks), max_norm, gradients per partition,
an open table size, a variable table with an optimizer, and errors."""

from __future__ import annotations

import numpy as np
import pytest

import daskgraph as dg
import daskgraph.compat.v1 as tf
from daskgraph.compat.gradient_check import check_gradients
from daskgraph.errors import InvalidArgumentError

RNG = np.random.default_rng(31)
TABLE = RNG.normal(size=(10, 3))
IDS = np.array([[0, 9, 3], [4, 4, 7]])


def _run(fetches, feeds=None):
    with dg.Session() as sess:
        return sess.run(fetches, feeds)


def _mod_partitions(table, n):
    """Partition p holds ids p, p + n, p + 2n, ... (TensorFlow's "mod")."""
    return [table[p::n] for p in range(n)]


def _div_partitions(table, n):
    """Contiguous ranges, the first len % n partitions one row longer (TensorFlow's "div")."""
    per, extras = divmod(len(table), n)
    sizes = [per + 1] * extras + [per] * (n - extras)
    return np.split(table, np.cumsum(sizes)[:-1])


@pytest.mark.parametrize("n", [1, 2, 3, 4])
@pytest.mark.parametrize("strategy", ["mod", "div"])
def test_partitions_give_the_table_rows(strategy, n):
    split = _mod_partitions if strategy == "mod" else _div_partitions
    parts = split(TABLE, n)
    with dg.Graph().as_default():
        params = [dg.constant(p) for p in parts] if n > 1 else dg.constant(TABLE)
        rows = tf.nn.embedding_lookup(params, IDS, partition_strategy=strategy)
        assert rows.shape == (2, 3, 3)
        got = _run(rows)
    np.testing.assert_array_equal(got, TABLE[IDS])


def test_gradients_reach_each_partition():
    parts = _mod_partitions(TABLE, 3)
    check_gradients(
        lambda a, b, c: tf.nn.embedding_lookup([a, b, c], IDS) * 1.5, [p.copy() for p in parts]
    )
    check_gradients(
        lambda a, b: tf.nn.embedding_lookup([a, b], IDS % 7, "div"), [p.copy() for p in parts[:2]]
    )


def test_max_norm_clips_long_embeddings_only():
    table = np.array([[3.0, 4.0], [0.3, 0.4], [0.0, 0.0]])
    with dg.Graph().as_default():
        rows = tf.nn.embedding_lookup([table[:2], table[2:]], [0, 1, 2], "div", max_norm=1.0)
        got = _run(rows)
    np.testing.assert_allclose(got, [[0.6, 0.8], [0.3, 0.4], [0.0, 0.0]], rtol=1e-12)
    check_gradients(lambda t: tf.nn.embedding_lookup(t, [[0, 1]], max_norm=1.0), [table[:2]])


def test_partitions_of_unknown_size_and_ids_out_of_range():
    parts = _div_partitions(TABLE, 3)
    with dg.Graph().as_default():
        holders = [dg.placeholder(dg.float64, [None, 3]) for _ in parts]
        ids = dg.placeholder(dg.int64, [None])
        rows = tf.nn.embedding_lookup(holders, ids, partition_strategy="div")
        assert rows.shape == (None, 3)
        feeds = dict(zip(holders, parts, strict=True))
        with dg.Session() as sess:
            got = sess.run(rows, {**feeds, ids: [9, 0, 5]})
            with pytest.raises(InvalidArgumentError, match="not in"):
                sess.run(rows, {**feeds, ids: [10]})
    np.testing.assert_array_equal(got, TABLE[[9, 0, 5]])


def test_an_id_past_its_partitions_end_fails_as_in_tensorflow():
    """With "mod", id 6 of partitions of 3 and 2 rows is row 3 of partition 0: not there."""
    with dg.Graph().as_default():
        rows = tf.nn.embedding_lookup([TABLE[:3], TABLE[3:5]], [6])
        with pytest.raises(InvalidArgumentError, match="index -1"):
            _run(rows)


def test_a_variable_table_trains():
    with dg.Graph().as_default():
        table = tf.get_variable("emb", initializer=TABLE.astype(np.float32))
        rows = tf.nn.embedding_lookup(table, [1, 1, 4])
        loss = tf.reduce_sum(rows)
        step = tf.train.GradientDescentOptimizer(0.5).minimize(loss)
        with dg.Session() as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(step)
            after = sess.run(table)
    expected = TABLE.astype(np.float32).copy()
    expected[1] -= 1.0  # looked up twice
    expected[4] -= 0.5
    np.testing.assert_allclose(after, expected, rtol=1e-6)


def test_errors_name_the_argument():
    with dg.Graph().as_default():
        with pytest.raises(ValueError, match="partition_strategy must be 'mod' or 'div'"):
            tf.nn.embedding_lookup(TABLE, [0], partition_strategy="hash")
        with pytest.raises(TypeError, match="ids must be int32 or int64"):
            tf.nn.embedding_lookup(TABLE, [0.0])
        with pytest.raises(TypeError, match="one dtype"):
            tf.nn.embedding_lookup([TABLE, TABLE.astype(np.float32)], [0])
