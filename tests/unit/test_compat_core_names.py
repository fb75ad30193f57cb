"""TF1 names of the core: ``tf.print``, ``placeholder_with_default``, ``name_scope``'s TF1
arguments, shapes that index to ints with ``.value``, the collections helpers, the behaviour
switches, ``tf.compat`` and TensorFlow's lenient device strings."""

from __future__ import annotations

import numpy as np
import pytest

import daskgraph.compat.v1 as tf
from daskgraph.errors import UnimplementedError


@pytest.fixture(autouse=True)
def _fresh_graph():
    tf.reset_default_graph()
    yield
    tf.reset_default_graph()


def test_print_writes_formatted_values_when_run(capsys):
    x = tf.constant(np.arange(10))
    m = tf.constant([[1.5, 2.0], [3.0, 4.0]])
    op = tf.print("x:", x, "m:", m, {"k": 1}, summarize=2, sep="|", end="!\n")
    assert isinstance(op, tf.Operation)
    with tf.Session() as sess:
        sess.run(op)
    err = capsys.readouterr().err
    assert err == "x:|[0 1 ... 8 9]|m:|[[1.5 2]\n [3 4]]|{'k': 1}!\n"


def test_print_as_control_dependency_prints_once_per_run(capfd):
    x = tf.placeholder(tf.int32, [])
    with tf.control_dependencies([tf.print("got", x, output_stream="stdout")]):
        y = x + 1
    with tf.Session() as sess:
        assert sess.run(y, {x: 1}) == 2
        assert sess.run(y, {x: 5}) == 6
    assert capfd.readouterr().out == "got 1\ngot 5\n"


def test_print_refuses_an_unknown_stream():
    with pytest.raises(ValueError, match="output_stream"):
        tf.print(tf.constant(1), output_stream=object())


def test_placeholder_with_default_uses_default_unless_fed():
    x = tf.placeholder_with_default(tf.constant([[1.0, 2.0]]), shape=[None, 2])
    assert x.shape.as_list() == [None, 2]
    y = tf.reduce_sum(x, axis=1)
    with tf.Session() as sess:
        np.testing.assert_allclose(sess.run(y), [3.0])
        np.testing.assert_allclose(sess.run(y, {x: np.ones((3, 2))}), [2.0, 2.0, 2.0])
    grad = tf.gradients(tf.reduce_sum(x * 3.0), x)[0]
    with tf.Session() as sess:
        np.testing.assert_allclose(sess.run(grad), [[3.0, 3.0]])


def test_placeholder_with_default_refuses_an_incompatible_shape():
    with pytest.raises(ValueError, match=r"\[2\].*\[3\]"):
        tf.placeholder_with_default([1.0, 2.0], shape=[3])


def test_name_scope_takes_default_name_and_values():
    g = tf.Graph()
    with g.as_default():
        x = tf.constant(1.0, name="x")
    with tf.name_scope(None, "layer", [x]) as scope:
        y = tf.identity(x, name="y")
    assert scope == "layer/"
    assert y.graph is g and y.op.name == "layer/y"
    with tf.name_scope("given", "layer"):
        z = tf.constant(2.0, name="z")
    assert z.op.name == "given/z"
    with pytest.raises(TypeError, match="name_scope"):
        tf.name_scope(3)


def test_shape_entries_are_ints_with_tf1_value():
    x = tf.placeholder(tf.float32, [None, 5])
    assert x.shape[1].value == 5 and x.shape[1] * 2 == 10
    assert x.shape[0] is None and x.get_shape()[0].value is None
    assert [d for d in x.shape] == [None, 5]
    w = tf.Variable(tf.zeros([x.shape[-1], 3]))
    assert w.shape.as_list() == [5, 3]
    assert repr(tuple(x.shape)) == "(None, 5)"


def test_collections_helpers():
    v = tf.get_local_variable("counter", [], tf.int32, initializer=tf.zeros_initializer())
    assert tf.local_variables() == [v] and tf.trainable_variables() == []
    ref = tf.get_collection_ref("mine")
    ref.append(1)
    assert tf.get_collection("mine") == [1]
    tf.add_to_collections(["a", "b", "a"], v)
    assert tf.get_collection("a") == [v] and tf.get_collection("b") == [v]
    tf.add_to_collection(tf.GraphKeys.MODEL_VARIABLES, v)
    assert tf.model_variables() == [v]
    assert tf.is_tensor(v) and tf.is_tensor(tf.constant(1)) and not tf.is_tensor(1)


def test_behaviour_switches():
    tf.disable_v2_behavior()
    tf.disable_eager_execution()
    assert tf.executing_eagerly() is False and tf.resource_variables_enabled() is False
    with pytest.raises(UnimplementedError, match="no eager mode"):
        tf.enable_eager_execution()
    assert tf.__version__ == tf.VERSION and tf.VERSION.startswith("1.")


def test_tf_compat_namespace():
    assert tf.compat.v1 is tf
    assert tf.compat.as_bytes("é") == "é".encode() and tf.compat.as_text(b"ok") == "ok"
    assert tf.compat.as_str_any(1.5) == "1.5"
    with pytest.raises(TypeError, match="Expected binary or unicode string, got 3"):
        tf.compat.as_text(3)
    x = tf.constant([1.0, 2.0])
    assert x[:, tf.newaxis].shape.as_list() == [2, 1]


@pytest.mark.parametrize(
    ("text", "canonical"),
    [
        ("cpu/:0", "/device:CPU:*"),
        ("//gpu:0", "/device:GPU:0"),
        ("/job:ps//task:1/", "/job:ps/task:1"),
    ],
)
def test_lenient_device_strings_as_tensorflow(text, canonical):
    assert tf.DeviceSpec.from_string(text).to_string() == canonical
    with tf.device(text):
        c = tf.constant(1.0)
    assert c.device == canonical
