"""Kernels rewritten for speed against the formulas they replaced, bit for bit: softmax and
log-softmax over a short last axis, the sparse cross entropy and its gradient; ReluGrad is
TensorFlow's ``gradients * (features > 0)``."""

from __future__ import annotations

import numpy as np
import pytest

from daskgraph.ops import nn

RNG = np.random.default_rng(11)


def assert_same_bits(got, expected):
    """Equal to the bit: signs of zeros and NaN payloads too."""
    got, expected = np.asarray(got), np.asarray(expected)
    assert (got.dtype, got.shape) == (expected.dtype, expected.shape)
    assert got.tobytes() == expected.tobytes(), (got, expected)


def _old_softmax(x, axis):
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)


def _old_log_softmax(x, axis):
    z = x - np.max(x, axis=axis, keepdims=True)
    return z - np.log(np.sum(np.exp(z), axis=axis, keepdims=True))


LOGITS = [
    RNG.standard_normal((256, 10)).astype(np.float32) * 5,
    RNG.standard_normal((7, 3, 4)).astype(np.float64),
    RNG.standard_normal((5, 40)).astype(np.float32),  # a longer axis: NumPy's reduction
    np.array([[1.0, np.nan, 2.0], [np.inf, 0.0, -np.inf], [-0.0, 0.0, -1.0]], np.float32),
    np.zeros((0, 10), np.float32),
    RNG.standard_normal(6).astype(np.float32),  # one example
]


@pytest.mark.parametrize("x", LOGITS, ids=lambda x: str(x.shape))
@pytest.mark.parametrize("axis", [-1, 0])
def test_softmax_and_log_softmax_are_the_old_formulas(x, axis):
    for new, old in ((nn._softmax, _old_softmax), (nn._log_softmax, _old_log_softmax)):
        with np.errstate(invalid="ignore"):
            try:
                expected = old(x, axis)
            except ValueError as exc:  # an empty axis has no maximum, in either
                with pytest.raises(ValueError, match=str(exc)):
                    new(np, x, axis=axis)
                continue
            assert_same_bits(new(np, x, axis=axis), expected)


@pytest.mark.parametrize("shape", [(256,), (4, 6), (0,)])
@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_sparse_cross_entropy_and_gradient_are_the_old_formulas(shape, dtype):
    logits = RNG.standard_normal((*shape, 10)).astype(np.float32)
    labels = RNG.integers(0, 10, shape).astype(dtype)
    grad = RNG.random(shape).astype(np.float32)
    old = 0 - np.take_along_axis(_old_log_softmax(logits, -1), labels[..., None], axis=-1)[..., 0]
    assert_same_bits(nn._sparse_xent(np, logits, labels), old)
    onehot = labels[..., None] == np.arange(10)
    old_grad = (_old_softmax(logits, -1) - onehot) * grad[..., None]
    assert_same_bits(nn._sparse_xent_grad(np, grad, logits, labels), old_grad)


@pytest.mark.parametrize("bad", [-1, 10, np.iinfo(np.int32).min])
def test_labels_out_of_range_are_refused(bad):
    labels = np.array([1, bad, 2], np.int32)
    with pytest.raises(ValueError, match=f"label value of {bad} which is outside"):
        nn._sparse_xent(np, np.zeros((3, 10), np.float32), labels)


def test_relu_grad_is_tensorflows_product():
    features = np.array([-1.0, 0.0, 2.0, -3.0, 1.0, -2.0], np.float32)
    gradients = np.array([5.0, 6.0, -7.0, -8.0, np.nan, np.inf], np.float32)
    with np.errstate(invalid="ignore"):
        got = nn._relu_grad(np, gradients, features)
        expected = gradients * (features > 0).astype(np.float32)
    np.testing.assert_array_equal(got, expected)  # NaN where an inactive unit got inf or NaN
    assert got.dtype == np.float32
    finite = RNG.standard_normal((256, 128)).astype(np.float32)
    feats = RNG.standard_normal((256, 128)).astype(np.float32)
    assert np.array_equal(  # finite gradients: the values of the old where(), to the bit
        nn._relu_grad(np, finite, feats) + 0.0, np.where(feats > 0, finite, 0.0) + 0.0
    )
