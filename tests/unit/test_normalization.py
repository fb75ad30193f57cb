"""tf.nn's normalizations (l2_normalize, moments, batch_normalization, fused_batch_norm, lrn)
against NumPy references, their gradients against finite differences, lrn on a virtual GPU,
and their errors."""

from __future__ import annotations

import numpy as np
import pytest

import daskgraph as dg
import daskgraph.compat.v1 as tf
from daskgraph.compat.gradient_check import check_gradients

RNG = np.random.default_rng(23)


def _run(fetches, feeds=None):
    with dg.Session() as sess:
        return sess.run(fetches, feeds)


def _ref_lrn(x, r, bias, alpha, beta):
    """Written from TensorFlow's documentation, one channel at a time."""
    out = np.empty_like(x)
    depth = x.shape[-1]
    for d in range(depth):
        window = x[..., max(0, d - r) : min(depth, d + r + 1)]
        out[..., d] = x[..., d] / (bias + alpha * (window**2).sum(-1)) ** beta
    return out


def test_l2_normalize_axis_dim_and_epsilon():
    x = np.array([[3.0, 4.0], [0.0, 0.0], [1e-8, 0.0]])
    with dg.Graph().as_default():
        outs = [tf.nn.l2_normalize(x, axis=1), tf.nn.l2_normalize(x, dim=0), tf.nn.l2_normalize(x)]
        got = _run(outs)
        with pytest.raises(ValueError, match="give axis or dim"):
            tf.nn.l2_normalize(x, axis=0, dim=1)
    norms1 = np.sqrt(np.maximum((x**2).sum(1, keepdims=True), 1e-12))
    np.testing.assert_allclose(got[0], x / norms1, rtol=1e-12)
    np.testing.assert_allclose(got[1], x / np.linalg.norm(x, axis=0, keepdims=True), rtol=1e-12)
    np.testing.assert_allclose(got[2], x / np.linalg.norm(x), rtol=1e-12)
    check_gradients(lambda a: tf.nn.l2_normalize(a, axis=1), [RNG.normal(size=(3, 4))])


def test_moments_values_shapes_and_gradients():
    x = RNG.normal(size=(4, 3, 2))
    with dg.Graph().as_default():
        mean, variance = tf.nn.moments(dg.constant(x), axes=[0, 2])
        kept = tf.nn.moments(dg.constant(x), [1], keep_dims=True)
        assert mean.shape == (3,) and kept[1].shape == (4, 1, 2)
        assert mean.op.name.startswith("moments")
        half = tf.nn.moments(dg.constant(x, dg.float16), [0])
        assert half[0].dtype is dg.float16
        got = _run([mean, variance, *kept, *half])
    np.testing.assert_allclose(got[0], x.mean((0, 2)), rtol=1e-12)
    np.testing.assert_allclose(got[1], x.var((0, 2)), rtol=1e-12)
    np.testing.assert_allclose(got[3], x.var(1, keepdims=True), rtol=1e-12)
    np.testing.assert_allclose(got[5], x.var(0), rtol=2e-3, atol=2e-3)
    check_gradients(lambda a: tf.nn.moments(a, [0])[1], [x])
    check_gradients(lambda a: tf.nn.moments(a, [0, 1], keepdims=True)[0], [x])


def test_batch_normalization_with_and_without_offset_and_scale():
    x = RNG.normal(size=(5, 3))
    mean, var, offset, scale = RNG.normal(size=3), RNG.uniform(1, 2, 3), RNG.normal(size=3), 2.0
    with dg.Graph().as_default():
        full = tf.nn.batch_normalization(x, mean, var, offset, scale, 1e-3)
        bare = tf.nn.batch_normalization(x, mean, var, None, None, 1e-3)
        got = _run([full, bare])
    np.testing.assert_allclose(got[0], scale * (x - mean) / np.sqrt(var + 1e-3) + offset)
    np.testing.assert_allclose(got[1], (x - mean) / np.sqrt(var + 1e-3))
    check_gradients(
        lambda *a: tf.nn.batch_normalization(*a, 1e-3),
        [x, mean, var, offset, RNG.normal(size=3)],
    )


def test_fused_batch_norm_training_inference_and_running_averages():
    x = RNG.normal(size=(2, 3, 3, 2)).astype(np.float32)
    scale, offset = np.array([1.5, 0.5], np.float32), np.array([0.1, -0.2], np.float32)
    old_mean, old_var = np.zeros(2, np.float32), np.ones(2, np.float32)
    with dg.Graph().as_default():
        train = tf.nn.fused_batch_norm(x, scale, offset)
        mixed = tf.nn.fused_batch_norm(
            x, scale, offset, old_mean, old_var, exponential_avg_factor=0.5
        )
        infer = tf.nn.fused_batch_norm(x, scale, offset, old_mean, old_var, is_training=False)
        nchw = tf.nn.fused_batch_norm(x.transpose(0, 3, 1, 2), scale, offset, data_format="NCHW")
        assert train.y.shape == x.shape and train.mean.shape == (2,)
        got = _run([train, mixed, infer, nchw])
    mean, var = x.mean((0, 1, 2)), x.var((0, 1, 2))
    normalized = scale * (x - mean) / np.sqrt(var + 1e-3) + offset
    np.testing.assert_allclose(got[0][0], normalized, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(got[0][1], mean, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got[0][2], x.var((0, 1, 2), ddof=1), rtol=1e-5)  # Bessel's
    np.testing.assert_allclose(got[1][1], 0.5 * mean, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got[1][2], 0.5 + 0.5 * x.var((0, 1, 2), ddof=1), rtol=1e-5)
    np.testing.assert_allclose(got[2][0], scale * x / np.sqrt(1 + 1e-3) + offset, rtol=1e-5)
    np.testing.assert_allclose(got[3][0].transpose(0, 2, 3, 1), got[0][0], rtol=1e-5, atol=1e-6)
    check_gradients(
        lambda a, s, o: tf.nn.fused_batch_norm(a, s, o).y,
        [RNG.normal(size=(2, 2, 2, 3)), RNG.normal(size=3), RNG.normal(size=3)],
    )


LRN_CASES = [(5, 1.0, 1.0, 0.5), (2, 1.5, 0.3, 0.75), (0, 2.0, 0.5, 1.0), (4, 1.0, 0.001 / 9, 0.75)]


@pytest.mark.parametrize("r, bias, alpha, beta", LRN_CASES)
def test_lrn_matches_the_reference(r, bias, alpha, beta):
    x = RNG.normal(size=(2, 3, 2, 7))
    with dg.Graph().as_default():
        y = tf.nn.lrn(dg.constant(x), r, bias, alpha, beta)
        assert y.op.type == "LRN" and y.shape == x.shape
        got = _run(y)
    np.testing.assert_allclose(got, _ref_lrn(x, r, bias, alpha, beta), rtol=1e-12)


def test_lrn_gradient_and_second_derivative():
    x = RNG.normal(size=(1, 2, 2, 6))
    check_gradients(lambda a: tf.nn.local_response_normalization(a, 2, 1.5, 0.3, 0.75), [x])

    def first(a):
        return dg.gradients(tf.nn.lrn(a, 1, 1.0, 0.5, 0.75), [a])[0]

    check_gradients(first, [x])


@pytest.mark.virtual_gpus(1)
def test_lrn_and_moments_on_a_virtual_gpu(dg_session):
    x = RNG.normal(size=(2, 4, 4, 5)).astype(np.float32)
    with dg.device("/gpu:0"):
        images = dg.placeholder(dg.float32, [None, 4, 4, 5])
        y = tf.nn.lrn(images, 2, 1.0, 0.2, 0.75)
        (dx,) = dg.gradients(dg.reduce_sum(y), [images])
        mean, variance = tf.nn.moments(y, [0, 1, 2])
    got = dg_session.run([y, dx, mean, variance], {images: x})
    ops = dg_session.placement([y, dx], {images: x}).ops
    assert all("GPU" in o.assigned.upper() for o in ops if o.type.startswith("LRN"))
    expected = _ref_lrn(x.astype(np.float64), 2, 1.0, 0.2, 0.75)
    np.testing.assert_allclose(got[0], expected, rtol=1e-5)
    np.testing.assert_allclose(got[2], expected.mean((0, 1, 2)), rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(got[3], expected.var((0, 1, 2)), rtol=1e-4)
    assert got[1].shape == x.shape and np.isfinite(got[1]).all()


def test_errors_name_the_argument():
    with dg.Graph().as_default():
        with pytest.raises(ValueError, match="lrn: input must be 4-D"):
            tf.nn.lrn(dg.zeros([2, 7]))
        with pytest.raises(TypeError, match="moments: x must be floating-point"):
            tf.nn.moments(dg.constant([1, 2]), [0])
        with pytest.raises(ValueError, match="mean and variance must be given for inference"):
            tf.nn.fused_batch_norm(dg.zeros([1, 2, 2, 1]), [1.0], [0.0], is_training=False)
        with pytest.raises(ValueError, match="data_format must be 'NHWC' or 'NCHW'"):
            tf.nn.fused_batch_norm(dg.zeros([1, 2, 2, 1]), [1.0], [0.0], data_format="NDHWC")
