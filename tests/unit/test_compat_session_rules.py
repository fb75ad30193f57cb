"""TensorFlow 1's session rules, the ones its own session tests also check, written here in our
own words: feed keys that are nested tuples, feed-key and feed-value errors, the constructor's
argument errors, re-entry, an empty graph, traced-run metadata, the interactive session
warning, an invalid target, names given as bytes, and shapes computed by the graph."""

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


def test_a_nested_tuple_of_tensors_is_one_feed_key():
    first = tf.placeholder(tf.float32, [3], name="first")
    second = tf.placeholder(tf.int32, [2, 2], name="second")
    third = tf.placeholder(tf.float32, [], name="third")
    key = (first, (second, (third,)))
    combined = tf.reduce_sum(first) * third + tf.cast(tf.reduce_sum(second), tf.float32)
    value = (np.array([0.5, 1.5, 2.0]), (np.array([[1, 2], [3, 4]]), (np.float32(10.0),)))
    with tf.Session() as sess:
        assert sess.run(combined, feed_dict={key: value}) == pytest.approx(4.0 * 10.0 + 10.0)
        got_first, got_second = sess.run([first * 2.0, second + 1], {key: value})
        assert got_first.tolist() == [1.0, 3.0, 4.0]
        assert got_second.tolist() == [[2, 3], [4, 5]]
        as_lists = [value[0], [value[1][0], [value[1][1][0]]]]  # lists in place of tuples
        assert sess.run(third, {key: as_lists}) == 10.0
        with pytest.raises(ValueError, match=r"tuple of 2 tensors|Could not flatten dictionary"):
            sess.run(combined, feed_dict={key: (value[0], value[1], 7.0)})  # one too many


def test_feed_key_and_feed_value_errors_in_tensorflows_words():
    tf.constant([1, 2], name="pair")
    text = tf.placeholder(tf.string, name="text")
    scale = tf.placeholder(tf.float32, name="scale")
    with tf.Session() as sess:
        with pytest.raises(TypeError, match="Cannot interpret feed_dict key as Tensor"):
            sess.run(text, feed_dict={"pair": [3, 4]})  # an operation's name, not a tensor's
        for number in (7, False):
            with pytest.raises(TypeError, match=f"Type of feed value {number} with type <class"):
                sess.run(text, feed_dict={text: number})
        assert sess.run(scale * 2.0, feed_dict={"scale:0": 1.5}) == 3.0  # a tensor's name


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"target": 12.5}, "target`? must be a string"),  # TF 2.21 quotes the argument
        ({"config": {"allow_soft_placement": True}}, r"config`? must be a tf\.ConfigProto"),
        ({"graph": "default"}, r"graph`? must be a tf\.Graph"),
    ],
)
def test_session_arguments_of_the_wrong_type_are_refused(arguments, message):
    with pytest.raises(TypeError, match=message):
        tf.Session(**arguments)


@pytest.mark.parametrize("target", ["http://example:80", "no-port-here", "INVALID_TARGET"])
def test_an_unusable_target_is_tensorflows_not_found_error(target):
    with pytest.raises(tf.errors.NotFoundError, match="No session factory registered"):
        tf.Session(target)


def test_a_session_context_is_entered_once():
    value = tf.constant(5) * 3
    sess = tf.Session()
    with sess:
        assert tf.get_default_session() is sess and value.eval() == 15
        with pytest.raises(RuntimeError, match="Session context managers are not re-entrant"):
            with sess:
                pass
        with sess.as_default():  # what the message suggests works
            assert value.eval() == 15


def test_running_an_empty_graph_is_an_error():
    with tf.Graph().as_default():
        with tf.Session() as empty:
            for fetches in ([], {}):
                with pytest.raises(RuntimeError, match=r"The Session graph is empty\."):
                    empty.run(fetches)


def test_step_stats_only_when_the_run_is_traced():
    x = tf.placeholder(tf.float32, [2, 2], name="x")
    square = tf.matmul(x, x, name="square")
    meta = tf.RunMetadata()
    identity = np.eye(2, dtype=np.float32)
    with tf.Session() as sess:
        sess.run(square, {x: identity}, options=tf.RunOptions(), run_metadata=meta)
        assert not meta.HasField("step_stats")
        traced = tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE)
        assert sess.run(square, {x: identity}, options=traced, run_metadata=meta).tolist() == [
            [1.0, 0.0],
            [0.0, 1.0],
        ]
    assert meta.HasField("step_stats")
    devices = [stats.device for stats in meta.step_stats.dev_stats]
    assert devices == ["/job:localhost/replica:0/task:0/device:CPU:0"]
    names = {node.node_name for node in meta.step_stats.dev_stats[0].node_stats}
    assert "square" in names
    assert traced.trace_level == tf.RunOptions.FULL_TRACE == 3
    assert tf.RunOptions().trace_level == tf.RunOptions.NO_TRACE == 0


def _active_warnings(make) -> list[str]:
    """The "already active" warnings that ``make()`` gives."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        make()
    return [str(w.message) for w in caught if "already active" in str(w.message)]


def test_a_second_open_interactive_session_warns():
    opened = []
    assert _active_warnings(lambda: opened.append(tf.InteractiveSession())) == []
    try:
        assert tf.get_default_session() is opened[0] and tf.constant(2).eval() == 2
        found = _active_warnings(lambda: opened.append(tf.InteractiveSession()))
        assert len(found) == 1
        assert found[0].startswith("An interactive session is already active.")
    finally:
        for sess in reversed(opened):
            sess.close()

    def one_after_another():
        for _ in range(2):
            tf.InteractiveSession().close()

    assert _active_warnings(one_after_another) == []


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


def test_names_given_as_bytes_or_str_are_the_same_names():
    scale = tf.constant(2.5, name=b"scale")
    with tf.name_scope("block"):  # TF also takes bytes here; daskgraph does not yet
        scaled = tf.multiply(scale, 4.0, name=b"scaled")
    assert (scale.op.name, scaled.op.name) == ("scale", "block/scaled")
    with tf.Session() as sess:
        assert sess.run(["scale:0", "block/scaled:0"]) == [2.5, 10.0]
        assert sess.run(tf.get_default_graph().get_tensor_by_name("block/scaled:0")) == 10.0
