"""avg_pool against a NumPy loop reference (padding never counted), its gradient and the
gradient's own gradient against finite differences, on a virtual GPU too, and its errors."""

from __future__ import annotations

import math

import numpy as np
import pytest

import daskgraph as dg
from daskgraph.compat.gradient_check import check_gradients

RNG = np.random.default_rng(11)

CASES = [
    ((2, 7, 6, 3), (3, 2), (2, 2), "SAME"),
    ((2, 7, 6, 3), (3, 2), (2, 1), "VALID"),
    ((1, 5, 5, 2), (2, 2), (1, 1), "SAME"),
    ((1, 4, 4, 1), (3, 3), (3, 3), "SAME"),
]


def _ref_avg_pool(x, ksize, strides, padding):
    """Written from TensorFlow's documentation: a window's mean over the inputs it covers."""
    n, h, w, c = x.shape
    dims = []
    for size, k, s in zip((h, w), ksize, strides, strict=True):
        if padding == "VALID":
            dims.append((math.ceil((size - k + 1) / s), 0))
        else:
            out = math.ceil(size / s)
            dims.append((out, max((out - 1) * s + k - size, 0) // 2))
    (oh, top), (ow, left) = dims
    out = np.zeros((n, oh, ow, c))
    for i in range(oh):
        for j in range(ow):
            r0, c0 = i * strides[0] - top, j * strides[1] - left
            rows = slice(max(r0, 0), min(r0 + ksize[0], h))
            cols = slice(max(c0, 0), min(c0 + ksize[1], w))
            out[:, i, j, :] = x[:, rows, cols, :].mean(axis=(1, 2))
    return out


@pytest.mark.parametrize("shape, ksize, strides, padding", CASES)
def test_avg_pool_matches_the_reference(shape, ksize, strides, padding):
    x = RNG.normal(size=shape)
    with dg.Graph().as_default():
        y = dg.nn.avg_pool(dg.constant(x), [1, *ksize, 1], [1, *strides, 1], padding)
        with dg.Session() as sess:
            got = sess.run(y)
    expected = _ref_avg_pool(x, ksize, strides, padding)
    assert y.shape == expected.shape
    np.testing.assert_allclose(got, expected, rtol=1e-12)


@pytest.mark.parametrize("shape, ksize, strides, padding", CASES[:3])
def test_avg_pool_gradient(shape, ksize, strides, padding):
    def pool(x):
        return dg.nn.avg_pool(x, [1, *ksize, 1], [1, *strides, 1], padding)

    check_gradients(pool, [RNG.normal(size=shape)])


def test_avg_pool_grad_has_a_gradient_too():
    """Second derivatives: AvgPoolGrad is linear in its gradient, its adjoint is avg_pool."""

    def backward(g):
        return dg.avg_pool_grad([2, 5, 4, 3], g, [1, 2, 3, 1], [1, 2, 1, 1], "SAME")

    check_gradients(backward, [RNG.normal(size=(2, 3, 4, 3))])


def _ref_avg_pool_grad(shape, grad, ksize, strides, padding):
    """The adjoint of :func:`_ref_avg_pool`, column by column of its (linear) matrix."""
    flat = np.zeros(int(np.prod(shape)))
    out = np.zeros(shape)
    for k in range(flat.size):
        flat[k] = 1.0
        out.flat[k] = (_ref_avg_pool(flat.reshape(shape), ksize, strides, padding) * grad).sum()
        flat[k] = 0.0
    return out


@pytest.mark.virtual_gpus(1)
def test_avg_pool_on_a_virtual_gpu_with_an_open_batch_size(dg_session):
    x = RNG.normal(size=(3, 6, 5, 2)).astype(np.float32)
    with dg.device("/gpu:0"):
        images = dg.placeholder(dg.float32, [None, 6, 5, 2])
        y = dg.nn.avg_pool(images, [1, 3, 3, 1], [1, 2, 2, 1], "SAME")
        (dx,) = dg.gradients(dg.reduce_sum(y * y), [images])
    assert y.shape == (None, 3, 3, 2) and dx.shape == (None, 6, 5, 2)
    got, grad = dg_session.run([y, dx], {images: x})
    pools = [o for o in dg_session.placement([y, dx], {images: x}).ops if "AvgPool" in o.type]
    assert len(pools) == 2 and all("GPU" in o.assigned.upper() for o in pools)
    expected = _ref_avg_pool(x.astype(np.float64), (3, 3), (2, 2), "SAME")
    np.testing.assert_allclose(got, expected, rtol=1e-5)
    reference = _ref_avg_pool_grad(x.shape, 2 * expected, (3, 3), (2, 2), "SAME")
    np.testing.assert_allclose(grad, reference, rtol=1e-5, atol=1e-6)


def test_tf1_other_names_avg_pool2d_and_max_pool2d():
    x = RNG.normal(size=(1, 4, 4, 2))
    with dg.Graph().as_default():
        avg = dg.nn.avg_pool2d(x, [1, 2, 2, 1], [1, 2, 2, 1], "VALID")
        big = dg.nn.max_pool2d(input=dg.constant(x), ksize=2, strides=2, padding="VALID")
        with dg.Session() as sess:
            got_avg, got_max = sess.run([avg, big])
    blocks = x.reshape(1, 2, 2, 2, 2, 2).transpose(0, 1, 3, 2, 4, 5).reshape(1, 2, 2, 4, 2)
    np.testing.assert_allclose(got_avg, blocks.mean(3), rtol=1e-12)
    np.testing.assert_array_equal(got_max, blocks.max(3))
