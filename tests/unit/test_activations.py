"""tf.nn's activations beyond relu (softplus, softsign, elu, selu, leaky_relu, crelu, swish)
against NumPy references, their gradients (and second derivatives) against finite
differences, TensorFlow's gradients at the kinks, and their errors."""

from __future__ import annotations

import numpy as np
import pytest

import daskgraph as dg
import daskgraph.compat.v1 as tf
from daskgraph.compat.gradient_check import check_gradients
from daskgraph.kernels.activations import SELU_ALPHA, SELU_SCALE

X = np.array([-800.0, -30.0, -2.0, -0.5, 0.0, 0.5, 2.0, 30.0, 800.0])


def _sigmoid(x):
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1.0 / (1.0 + e), e / (1.0 + e))


REFERENCES = {
    "softplus": lambda x: np.logaddexp(x, 0.0),
    "softsign": lambda x: x / (1.0 + np.abs(x)),
    "elu": lambda x: np.where(x > 0, x, np.expm1(np.minimum(x, 0))),
    "selu": lambda x: SELU_SCALE * np.where(x > 0, x, SELU_ALPHA * np.expm1(np.minimum(x, 0))),
    "leaky_relu": lambda x: np.where(x > 0, x, 0.2 * x),
    "crelu": lambda x: np.maximum(np.concatenate([x, -x], -1), 0),
    "swish": lambda x: x * _sigmoid(x),
}


def _run(fetches, feeds=None):
    with dg.Session() as sess:
        return sess.run(fetches, feeds)


@pytest.mark.parametrize("name", sorted(REFERENCES))
def test_values_match_numpy_without_overflow(name):
    with dg.Graph().as_default():
        y = getattr(tf.nn, name)(dg.constant(X))
        got = _run(y)
    expected = REFERENCES[name](X)
    assert y.shape == expected.shape and np.isfinite(got).all()
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-300)


@pytest.mark.parametrize("name", sorted(REFERENCES))
def test_gradients_match_finite_differences(name):
    x = np.array([[-2.5, -0.7, 0.3], [1.1, 2.2, -1.4]])
    check_gradients(getattr(tf.nn, name), [x])


@pytest.mark.parametrize("name", ["softplus", "softsign", "elu", "selu", "leaky_relu"])
def test_second_derivatives(name):
    """The gradients are ordinary ops, so they differentiate again."""

    def first_derivative(x):
        return dg.gradients(getattr(tf.nn, name)(x), [x])[0]

    check_gradients(first_derivative, [np.array([-1.3, -0.4, 0.6, 1.7])])


def test_gradients_at_the_kinks_are_tensorflows():
    """elu/selu take the right-hand slope at 0 and leaky_relu the left-hand one, as TF."""
    with dg.Graph().as_default():
        zero = dg.constant(0.0, dg.float64)
        grads = [dg.gradients(f(zero), [zero])[0] for f in (tf.nn.elu, tf.nn.selu)]
        grads.append(dg.gradients(tf.nn.leaky_relu(zero, alpha=0.3), [zero])[0])
        grads.append(dg.gradients(tf.nn.softplus(zero), [zero])[0])
        got = _run(grads)
    assert [float(g) for g in got] == [1.0, SELU_SCALE, 0.3, 0.5]


def test_leaky_relu_casts_integers_and_takes_alpha():
    with dg.Graph().as_default():
        y = tf.nn.leaky_relu(dg.constant([-4, 0, 5]), alpha=0.25)
        assert y.dtype is dg.float32
        assert _run(y).tolist() == [-1.0, 0.0, 5.0]


def test_crelu_axis_and_static_shape():
    with dg.Graph().as_default():
        x = dg.placeholder(dg.float64, [None, 2, 3])
        y = tf.nn.crelu(x, axis=1)
        assert y.shape == (None, 4, 3)
        value = np.arange(12.0).reshape(2, 2, 3) - 6.0
        got = _run(y, {x: value})
    np.testing.assert_array_equal(got, np.maximum(np.concatenate([value, -value], 1), 0))


def test_float32_stays_float32_and_errors_name_the_argument():
    with dg.Graph().as_default():
        assert tf.nn.selu(dg.constant([1.0], dg.float32)).dtype is dg.float32
        with pytest.raises(TypeError, match="elu: features must be a floating-point tensor"):
            tf.nn.elu(dg.constant([1, 2]))
        with pytest.raises(TypeError, match="leaky_relu: alpha must be a number"):
            tf.nn.leaky_relu(dg.constant([1.0]), alpha="big")
