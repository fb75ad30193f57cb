"""``tf.math`` and TF1's top-level math, assertion and clipping names in ``compat.v1``: the
names are daskgraph's objects, TF1's signatures (``keep_dims``, ``reduction_indices``,
``dimension``) work, and a TF1-style program using them runs unchanged but for the import."""

from __future__ import annotations

import json
import pathlib

import numpy as np
import pytest

import daskgraph as dg
import daskgraph.compat.v1 as tf

SNAPSHOT = pathlib.Path(tf.__file__).with_name("tf1_api.json")
TF_MATH = json.loads(SNAPSHOT.read_text())["namespaces"]["math"]


def test_tf_math_names_are_daskgraphs_objects():
    assert tf.math.add is dg.add and tf.math.reduce_variance is dg.reduce_variance
    assert tf.math.divide_no_nan is dg.div_no_nan and tf.math.rint is dg.round
    assert tf.math.top_k is dg.nn.top_k and tf.math.softplus is dg.nn.softplus
    assert tf.math.reduce_sum is tf.reduce_sum  # TF1's signature (keep_dims, ...)
    assert tf.cumsum is dg.cumsum and tf.assert_equal is dg.assert_equal
    assert tf.clip_by_global_norm is dg.clip_by_global_norm
    for name in tf.math.__all__:
        assert name in TF_MATH, name  # nothing that tf.math lacks
        assert getattr(tf.math, name) is not None


def test_most_of_tf_math_is_there():
    present = [name for name in TF_MATH if hasattr(tf.math, name)]
    assert len(present) >= 110, sorted(set(TF_MATH) - set(present))
    for name in ("bessel_i0", "igamma", "zeta"):  # what daskgraph lacks is absent
        assert not hasattr(tf.math, name)


def test_tf1_signatures():
    with tf.Graph().as_default():
        x = tf.constant([[0, 1, 2], [0, 0, 3]])
        m = tf.constant([[1.0, -3.0], [2.0, 4.0]])
        fetches = [
            tf.count_nonzero(x, reduction_indices=[1], keep_dims=True),
            tf.count_nonzero(input=x),
            tf.math.count_nonzero(x, 0, dtype=tf.int32),
            tf.norm(m, axis=1, keep_dims=True),
            tf.arg_max(m, 1),
            tf.arg_min(m, dimension=0, output_type=tf.int32),
            tf.math.reduce_sum(m, reduction_indices=1, keep_dims=True),
            tf.math.reduce_std(m),
            tf.cumsum(m, 1, True, True),
        ]
        with tf.Session() as sess:
            out = sess.run(fetches)
        with pytest.raises(ValueError, match="Cannot specify both 'axis' and 'reduction_indices'"):
            tf.count_nonzero(x, axis=0, reduction_indices=0)
    assert out[0].tolist() == [[2], [1]] and out[1] == 3
    assert out[2].tolist() == [0, 1, 2] and out[2].dtype == np.int32
    np.testing.assert_allclose(out[3], [[np.sqrt(10.0)], [np.sqrt(20.0)]], rtol=1e-6)
    assert out[4].tolist() == [0, 1] and out[4].dtype == np.int64  # TF: [0 1]
    assert out[5].tolist() == [0, 0] and out[5].dtype == np.int32
    assert out[6].tolist() == [[-2.0], [6.0]]
    np.testing.assert_allclose(out[7], np.std([[1.0, -3.0], [2.0, 4.0]]), rtol=1e-6)
    assert out[8].tolist() == [[-3.0, 0.0], [4.0, 0.0]]


def test_a_tf1_program_with_asserts_checks_and_clipping():
    """A TF1-style training step: inputs validated by assert ops in control_dependencies,
    the loss checked for NaN, gradients clipped by their global norm."""
    tf.reset_default_graph()
    x = tf.placeholder(tf.float32, [None, 2], name="x")
    y = tf.placeholder(tf.float32, [None], name="y")
    w = tf.get_variable("w", initializer=tf.constant([[3.0], [-4.0]]))
    with tf.control_dependencies(
        [tf.assert_rank(x, 2), tf.assert_non_negative(y, message="labels")]
    ):
        pred = tf.squeeze(tf.matmul(x, w), axis=1)
    loss = tf.check_numerics(tf.reduce_mean(tf.square(pred - y)), "loss")
    opt = tf.train.GradientDescentOptimizer(0.5)
    grads, variables = zip(*opt.compute_gradients(loss), strict=True)
    clipped, norm = tf.clip_by_global_norm(grads, 1.0)
    train = opt.apply_gradients(zip(clipped, variables, strict=True))
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        feed = {x: [[1.0, 0.0], [0.0, 1.0]], y: [1.0, 2.0]}
        _, n = sess.run([train, norm], feed)
        assert n > 1.0 and np.isclose(np.linalg.norm(sess.run(w) - [[3.0], [-4.0]]), 0.5)
        with pytest.raises(tf.errors.InvalidArgumentError, match=r"\[labels.  \]"):
            sess.run(train, {x: [[1.0, 0.0]], y: [-1.0]})
        with pytest.raises(tf.errors.InvalidArgumentError, match="loss : Tensor had NaN"):
            sess.run(loss, {x: [[np.nan, 0.0]], y: [1.0]})
    tf.reset_default_graph()
