"""``tf.get_static_value`` (daskgraph/framework/static_value.py) and
``tf.register_tensor_conversion_function`` (daskgraph/framework/tensor_conversion.py): the values
TensorFlow 2.21 folds for the same graph, and users' types converted by every op."""

from __future__ import annotations

import numpy as np
import pytest

import daskgraph.compat.v1 as tf


def test_static_values_as_tensorflow_folds_them():
    with tf.Graph().as_default() as g:
        x = tf.placeholder(tf.float32, [2, 3])
        u = tf.placeholder(tf.float32, [None, 3])
        p = tf.placeholder(tf.int32, [])
        v = tf.Variable(30)
        cases = {
            "const": tf.constant([[1, 2]]),
            "shape": tf.shape(x),
            "shape64": tf.shape(x, out_type=tf.int64),
            "shape_unknown": tf.shape(u),
            "size": tf.size(x),
            "rank": tf.rank(u),
            "range": tf.range(1, 10, 3),
            "rangef": tf.range(0.0, 1.0, 0.25),
            "cast": tf.cast(tf.constant([1.7, -2.2]), tf.int32),
            "concat": tf.concat([tf.shape(x), [4]], 0),
            "stack": tf.stack([tf.constant(1), tf.constant(2)]),
            "stack_p": tf.stack([p, tf.constant(2)]),
            "fill": tf.fill([2, 2], 7.0),
            "equal": tf.equal(tf.constant([1, 2]), tf.constant([1, 3])),
            "ne": tf.not_equal(tf.constant([1, 2]), 1),
            "sg": tf.stop_gradient(tf.constant(3.0)),
            "id": tf.identity(tf.constant([5])),
            "add": tf.constant(1) + tf.constant(2),
            "var": v,
            "varread": v.value(),
            "pwd": tf.placeholder_with_default(3, []),
            "zeros": tf.zeros([2]),
            "ones_like": tf.ones_like(tf.constant([1.0])),
        }
        got = {k: tf.get_static_value(t) for k, t in cases.items()}
        partial = tf.get_static_value(cases["stack_p"], partial=True)
        feedable = [g.is_feedable(cases[k]) for k in ("const", "stack_p", "shape", "add")]
    # TF 2.21's values and dtypes
    expected = {
        "const": np.array([[1, 2]], np.int32),
        "shape": np.array([2, 3], np.int32),
        "shape64": np.array([2, 3], np.int64),
        "size": np.array(6, np.int32),
        "rank": np.array(2, np.int32),
        "range": np.array([1, 4, 7], np.int32),
        "rangef": np.array([0.0, 0.25, 0.5, 0.75], np.float32),
        "cast": np.array([1, -2], np.int32),
        "concat": np.array([2, 3, 4], np.int32),
        "stack": np.array([1, 2], np.int32),
        "fill": np.full((2, 2), 7.0, np.float32),
        "equal": np.array([True, False]),
        "ne": np.array([False, True]),
        "sg": np.array(3.0, np.float32),
        "id": np.array([5], np.int32),
        "zeros": np.zeros(2, np.float32),
        "ones_like": np.ones(1, np.float32),
    }
    for key, value in got.items():
        if key in expected:
            assert value.dtype == expected[key].dtype, key
            np.testing.assert_array_equal(value, expected[key], err_msg=key)
        else:
            assert value is None, key  # shape_unknown, stack_p, add, var, varread, pwd
    assert partial.dtype == object and partial[0] is None and partial[1] == 2
    assert feedable == [False, False, False, True]  # TF 2.21: folded tensors are not feedable
    assert tf.get_static_value(3) == 3 and tf.get_static_value([1, 2]) == [1, 2]


class _Meters:
    def __init__(self, value):
        self.value = value


class _Other:
    pass


def test_registered_conversions_make_tensors_of_users_types():
    def to_tensor(m, dtype=None, name=None, as_ref=False):
        return tf.constant(m.value, dtype=dtype, name=name or "meters")

    def decline(value, dtype=None, name=None, as_ref=False):
        return NotImplemented

    tf.register_tensor_conversion_function(_Meters, decline, priority=1)  # tried first
    tf.register_tensor_conversion_function(_Meters, to_tensor)
    with tf.Graph().as_default():
        t = tf.convert_to_tensor(_Meters([1.0, 2.0]))
        y = tf.add(_Meters([1.0, 2.0]), 1.0)
        z = tf.reduce_sum(_Meters([3.0, 4.0]))
        assert t.op.name == "meters" and t.dtype == tf.float32
        with tf.Session() as sess:
            assert sess.run(y).tolist() == [2.0, 3.0] and float(sess.run(z)) == 7.0


def test_bad_registrations_and_conversions_are_refused():
    with pytest.raises(TypeError, match="must be a type or a tuple of types"):
        tf.register_tensor_conversion_function("Meters", lambda *a, **k: None)
    with pytest.raises(TypeError, match="Python numeric types and NumPy scalars and arrays"):
        tf.register_tensor_conversion_function(float, lambda *a, **k: None)
    with pytest.raises(TypeError, match="must be callable"):
        tf.register_tensor_conversion_function(_Other, 3)

    class Bad:
        pass

    tf.register_tensor_conversion_function(Bad, lambda value, **kwargs: 1)
    with tf.Graph().as_default(), pytest.raises(RuntimeError, match="returned non-Tensor"):
        tf.convert_to_tensor(Bad())
