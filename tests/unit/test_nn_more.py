"""tf.nn's other losses and layers (sigmoid and weighted cross entropy, log_poisson_loss,
zero_fraction, xw_plus_b, relu_layer, conv2d_transpose) against NumPy references and
finite differences, and TF1's keyword names and signatures of tf.nn's older functions."""

from __future__ import annotations

import math

import numpy as np
import pytest

import daskgraph as dg
import daskgraph.compat.v1 as tf
from daskgraph.compat.gradient_check import check_gradients

RNG = np.random.default_rng(17)


def _run(fetches, feeds=None):
    with dg.Session() as sess:
        return sess.run(fetches, feeds)


def _ref_sigmoid_xent(x, z):
    """-z log(sigmoid(x)) - (1 - z) log(1 - sigmoid(x)), with log(sigmoid) computed stably."""
    log_sig = -np.logaddexp(0.0, -x)
    log_one_minus = -np.logaddexp(0.0, x)
    return -z * log_sig - (1.0 - z) * log_one_minus


def test_sigmoid_cross_entropy_matches_numpy_for_huge_logits():
    logits = np.array([[-1000.0, -3.0, 0.0], [0.5, 40.0, 1000.0]])
    labels = np.array([[0.0, 0.3, 1.0], [1.0, 0.0, 0.6]])
    with dg.Graph().as_default():
        loss = tf.nn.sigmoid_cross_entropy_with_logits(labels=labels, logits=dg.constant(logits))
        assert loss.shape == (2, 3) and loss.op.name.startswith("logistic_loss")
        got = _run(loss)
    np.testing.assert_allclose(got, _ref_sigmoid_xent(logits, labels), rtol=1e-12)


def test_sigmoid_cross_entropy_gradients_and_tensorflows_slope_at_zero():
    x, z = RNG.normal(size=(3, 4)), RNG.uniform(size=(3, 4))
    check_gradients(
        lambda a, b: tf.nn.sigmoid_cross_entropy_with_logits(labels=b, logits=a), [x, z]
    )
    with dg.Graph().as_default():
        logits = dg.constant([0.0], dg.float64)
        loss = tf.nn.sigmoid_cross_entropy_with_logits(labels=[0.25], logits=logits)
        (grad,) = dg.gradients(loss, [logits])
        assert _run(grad).tolist() == [0.25]  # sigmoid(0) - 0.25


def test_weighted_cross_entropy_and_its_old_argument_name():
    x, z = RNG.normal(size=(5,)) * 30, RNG.uniform(size=(5,))
    q = 2.5
    expected = -q * z * -np.logaddexp(0.0, -x) - (1 - z) * -np.logaddexp(0.0, x)
    with dg.Graph().as_default():
        a = tf.nn.weighted_cross_entropy_with_logits(labels=z, logits=dg.constant(x), pos_weight=q)
        b = tf.nn.weighted_cross_entropy_with_logits(targets=z, logits=dg.constant(x), pos_weight=q)
        got = _run([a, b])
        with pytest.raises(ValueError, match="give labels or targets"):
            tf.nn.weighted_cross_entropy_with_logits(z, x, q, targets=z)
    np.testing.assert_allclose(got[0], expected, rtol=1e-10)
    np.testing.assert_array_equal(got[0], got[1])
    check_gradients(
        lambda a, b: tf.nn.weighted_cross_entropy_with_logits(b, a, 0.7),
        [RNG.normal(size=(2, 3)), RNG.uniform(size=(2, 3))],
    )


@pytest.mark.filterwarnings("ignore:divide by zero:RuntimeWarning")
@pytest.mark.filterwarnings("ignore:invalid value:RuntimeWarning")
def test_log_poisson_loss_with_and_without_stirling():
    """TF's formula: log(0) at targets of 0 is computed, then masked (as in TensorFlow)."""
    log_input = np.array([0.0, 1.0, -0.5, 2.0])
    targets = np.array([0.0, 3.0, 1.0, 7.0])
    base = np.exp(log_input) - log_input * targets
    stirling = targets * np.log(np.maximum(targets, 1)) - targets
    stirling += 0.5 * np.log(2 * math.pi * np.maximum(targets, 1))
    full = base + np.where(targets <= 1, 0.0, stirling)
    with dg.Graph().as_default():
        x = dg.constant(log_input)
        got = _run([tf.nn.log_poisson_loss(targets, x), tf.nn.log_poisson_loss(targets, x, True)])
    np.testing.assert_allclose(got[0], base, rtol=1e-12)
    np.testing.assert_allclose(got[1], full, rtol=1e-12)
    check_gradients(lambda a: tf.nn.log_poisson_loss(targets, a, True), [log_input])


def test_zero_fraction_xw_plus_b_and_relu_layer():
    x, w, b = RNG.normal(size=(4, 3)), RNG.normal(size=(3, 2)), RNG.normal(size=2)
    with dg.Graph().as_default():
        zf = tf.nn.zero_fraction(dg.constant([[0, 2, 0], [0, 0, 1]]))
        out = tf.nn.xw_plus_b(x, w, b)
        layer = tf.nn.relu_layer(x, w, b)
        assert zf.dtype is dg.float32 and zf.shape == () and out.shape == (4, 2)
        got = _run([zf, out, layer])
    assert math.isclose(got[0], 4 / 6, rel_tol=1e-6)
    np.testing.assert_allclose(got[1], x @ w + b, rtol=1e-12)
    np.testing.assert_allclose(got[2], np.maximum(x @ w + b, 0), rtol=1e-12)
    check_gradients(tf.nn.xw_plus_b, [x, w, b])


def _ref_conv2d_transpose(value, filt, out_shape, stride):
    """VALID-style scatter: every input pixel adds filter * value at its stride position."""
    n, h, w, _ = value.shape
    kh, kw, c, _ = filt.shape
    out = np.zeros((n, (h - 1) * stride + kh, (w - 1) * stride + kw, c))
    for i in range(h):
        for j in range(w):
            patch = np.einsum("nk,abck->nabc", value[:, i, j], filt)
            out[:, i * stride : i * stride + kh, j * stride : j * stride + kw] += patch
    return out[:, : out_shape[1], : out_shape[2]]


def test_conv2d_transpose_values_and_gradients():
    value, filt = RNG.normal(size=(2, 3, 4, 5)), RNG.normal(size=(3, 3, 2, 5))
    with dg.Graph().as_default():
        y = tf.nn.conv2d_transpose(value, dg.constant(filt), [2, 7, 9, 2], [1, 2, 2, 1], "VALID")
        assert y.shape == (2, 7, 9, 2)
        got = _run(y)
    np.testing.assert_allclose(got, _ref_conv2d_transpose(value, filt, (2, 7, 9), 2), rtol=1e-10)
    check_gradients(
        lambda v, f: tf.nn.conv2d_transpose(v, f, [2, 6, 8, 2], [1, 2, 2, 1], "SAME"),
        [value, filt],
    )


def test_tf1_keyword_names_and_positional_labels():
    """tf.nn's older functions take TF1's names: dim=/axis=, labels and logits by position
    (TensorFlow 2's compat.v1 signatures), keep_prob= or rate= in dropout."""
    logits = np.array([[1.0, 2.0], [3.0, 5.0], [0.0, 0.0]])
    labels = np.array([[0.0, 1.0], [1.0, 0.0], [0.5, 0.5]])
    log_sm = logits - np.log(np.exp(logits).sum(0, keepdims=True))
    with dg.Graph().as_default():
        x = dg.constant(logits)
        outs = [
            tf.nn.softmax(x, dim=0),
            tf.nn.softmax(x, axis=0),
            tf.nn.log_softmax(logits=x, dim=0),
            tf.nn.softmax_cross_entropy_with_logits(labels=labels, logits=x, dim=0),
            tf.nn.softmax_cross_entropy_with_logits_v2(labels, x, axis=0),
            tf.nn.softmax_cross_entropy_with_logits(labels, x),
            tf.nn.sparse_softmax_cross_entropy_with_logits([1, 0, 1], x),
            tf.nn.relu(features=x),
            tf.nn.dropout(x, keep_prob=1.0),
            tf.nn.dropout(x, rate=0.0),
        ]
        got = _run(outs)
    np.testing.assert_allclose(got[0], np.exp(log_sm), rtol=1e-12)
    np.testing.assert_array_equal(got[0], got[1])
    np.testing.assert_allclose(got[2], log_sm, rtol=1e-12)
    np.testing.assert_allclose(got[3], -(labels * log_sm).sum(0), rtol=1e-12)
    np.testing.assert_array_equal(got[3], got[4])
    log_sm1 = logits - np.log(np.exp(logits).sum(1, keepdims=True))
    np.testing.assert_allclose(got[5], -(labels * log_sm1).sum(1), rtol=1e-12)
    np.testing.assert_allclose(got[6], -log_sm1[[0, 1, 2], [1, 0, 1]], rtol=1e-12)
    for same in got[8:]:
        np.testing.assert_array_equal(same, logits)


def test_dropout_takes_keep_prob_or_rate_and_a_fed_keep_prob():
    x = np.ones((4, 500))
    with dg.Graph().as_default():
        by_keep = tf.nn.dropout(x, keep_prob=0.75, seed=3)
        by_rate = tf.nn.dropout(x, rate=0.25, seed=3)
        keep = tf.placeholder(tf.float64, [])
        fed = tf.nn.dropout(x, keep)
        with dg.Session() as sess:
            a, b, c = sess.run([by_keep, by_rate, fed], {keep: 1.0})
        with pytest.raises(ValueError, match="exactly one of keep_prob and rate"):
            tf.nn.dropout(x, keep_prob=0.5, rate=0.5)
    assert set(np.unique(a).tolist()) == {0.0, 4 / 3}
    assert 0.7 < (a > 0).mean() < 0.8
    np.testing.assert_array_equal(a, b)  # the same draws, kept with the same probability
    np.testing.assert_array_equal(c, x)
