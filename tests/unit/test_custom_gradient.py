"""``custom_gradient`` and ``hessians``: gradients written by hand replace the derived ones,
second derivatives through the ops gradients build; values as TensorFlow 2.21 computed them
for the same programs."""

from __future__ import annotations

import numpy as np
import pytest

import daskgraph as dg
import daskgraph.compat.v1 as tf
from daskgraph.errors import UnimplementedError


@tf.custom_gradient
def _log1pexp(x):
    e = tf.exp(x)

    def grad(dy):
        return dy * (1 - 1 / (1 + e))

    return tf.log(1 + e), grad


@tf.custom_gradient
def _two(a, b):
    def grad(da, db):
        return da * 10.0 + db, db * 100.0

    return (a * b, a + b), grad


def test_the_written_gradient_replaces_the_derived_one():
    with tf.Graph().as_default():
        x = tf.constant([0.0, 100.0], tf.float64)
        y = _log1pexp(x)
        (g,) = tf.gradients(tf.reduce_sum(y * 2.0), x)
        a, b = tf.constant(2.0), tf.constant(3.0)
        p, q = _two(a, b)
        g2 = tf.gradients(p, [a, b])
        g3 = tf.gradients(p + 2.0 * q, [a, b])
        z = tf.constant([3.0, 4.0])

        @tf.custom_gradient
        def clip_grad(x):
            return tf.identity(x), lambda dy: tf.clip_by_norm(dy, 1.0)

        (g4,) = tf.gradients(tf.reduce_sum(clip_grad(z) * 10.0), z)
        with tf.Session() as sess:
            out = sess.run([y, g, g2, g3, g4])
    # TF 2.21: [0.69314718, 100.], [1., 2.], [10, 0], [12, 200], [0.70710677, 0.70710677]
    np.testing.assert_allclose(out[0], [np.log(2.0), 100.0])
    np.testing.assert_array_equal(out[1], [1.0, 2.0])  # derived: NaN at 100 (inf / inf)
    assert [float(v) for v in out[2]] == [10.0, 0.0]
    assert [float(v) for v in out[3]] == [12.0, 200.0]
    np.testing.assert_allclose(out[4], [0.70710677, 0.70710677], rtol=1e-6)
    assert y.op.type == "CustomGradient" and y.name == "IdentityN:0"


def test_variables_read_by_the_function_get_the_gradient_grad_fn_gives_them():
    with tf.Graph().as_default():
        w = tf.get_variable("w", initializer=2.0)

        @tf.custom_gradient
        def scale(x):
            def grad(dy, variables=None):
                assert [v.name for v in variables] == ["w:0"]
                return dy * 7.0, [dy * 5.0]

            return x * w, grad

        x = tf.constant(3.0)
        gx, gw = tf.gradients(scale(x), [x, w])

        @tf.custom_gradient
        def no_variables_argument(x):
            return x * w, lambda dy: dy

        with pytest.raises(TypeError, match="must accept keyword argument 'variables'"):
            no_variables_argument(x)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            assert sess.run([gx, gw]) == [7.0, 5.0]  # TF 2.21 (resource variable): 5.0


def test_bad_uses_are_refused():
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="keywords arguments only when eager"):
            _log1pexp(x=tf.constant(1.0))

        @tf.custom_gradient
        def bad(x):
            return x * 2.0, lambda dy: (dy, dy)

        x = tf.constant(1.0)
        with pytest.raises(ValueError, match="returned 2 gradients for a function of 1"):
            tf.gradients(bad(x), x)


def test_hessians_as_tensorflow_computes_them():
    with tf.Graph().as_default():
        x = tf.constant([1.0, 2.0, 3.0], tf.float64)
        f = tf.reduce_sum(x**3) + x[0] * x[1]
        m = tf.constant([[0.5, -1.0], [2.0, 0.25]], tf.float64)
        w = tf.constant([1.5, -0.5], tf.float64)
        g = tf.reduce_mean(tf.tanh(m * w)) + tf.reduce_sum(tf.maximum(m, 0.3) ** 2)
        (h,) = tf.hessians(f, x)
        hm, hw = tf.hessians(g, [m, w])
        assert (h.shape, hm.shape, hw.shape) == ((3, 3), (2, 2, 2, 2), (2, 2))
        with tf.Session() as sess:
            h, hm, hw = sess.run([h, hm, hw])
    np.testing.assert_array_equal(h, [[6.0, 1.0, 0.0], [1.0, 12.0, 0.0], [0.0, 0.0, 18.0]])
    expected_m = np.diag([1.573714042468613, -0.04542887383647421, 1.9889555969207886,
                          0.01530375601335939])  # fmt: skip
    np.testing.assert_allclose(hm.reshape(4, 4), expected_m, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(hw, np.diag([-0.06699960075541882, -0.177889556342557]), rtol=1e-12)


def test_second_derivatives_of_broadcasts_reshapes_and_means():
    """d²/dx² of mean((x * c + b) ** 3) over a broadcast (SumToShapeOf, ReduceGrad,
    ReshapeLike in the first gradient), against the closed form."""
    c = np.array([[1.0], [2.0]])
    x0 = np.array([0.5, -1.0, 2.0])
    with dg.Graph().as_default():
        x = dg.constant(x0)
        y = dg.reshape(x * dg.constant(c) + 1.0, [-1])
        (h,) = tf.hessians(dg.reduce_mean(y**3), x)
        with dg.Session() as sess:
            h = sess.run(h)
    inner = x0[None, :] * c + 1.0  # d²/dx_j² = sum_i 6 (c_i x_j + 1) c_i² / 6
    np.testing.assert_allclose(h, np.diag((6.0 * inner * c**2).sum(axis=0) / 6.0), rtol=1e-12)


def test_hessians_refuse_what_they_cannot_compute():
    with tf.Graph().as_default():
        x = tf.constant([1.0, 2.0])
        with pytest.raises(UnimplementedError, match="ExtremumReduceGrad"):
            tf.hessians(tf.reduce_max(x * x), x)
        with pytest.raises(ValueError, match="do not depend on"):
            tf.hessians(tf.reduce_sum(x), tf.constant(1.0))
        p = tf.placeholder(tf.float32, [None])
        with pytest.raises(ValueError, match="must be known"):
            tf.hessians(tf.reduce_sum(p * p), p)
