"""tf.nn.top_k and tf.nn.in_top_k against NumPy references and TensorFlow's tie and
non-finite rules, the values' gradient (and its gradient), on a virtual GPU too, and errors."""

from __future__ import annotations

import numpy as np
import pytest

import daskgraph as dg
import daskgraph.compat.v1 as tf
from daskgraph.compat.gradient_check import check_gradients
from daskgraph.errors import InvalidArgumentError

RNG = np.random.default_rng(29)


def _run(fetches, feeds=None):
    with dg.Session() as sess:
        return sess.run(fetches, feeds)


def _ref_top_k(x, k):
    """Largest first; among equal values the lower index first (a stable sort)."""
    order = np.argsort(-x, axis=-1, kind="stable")[..., :k]
    return np.take_along_axis(x, order, -1), order


def test_top_k_values_indices_and_ties():
    x = RNG.normal(size=(2, 3, 6))
    x[0, 0, 4] = x[0, 0, 1] = 9.0  # a tie: index 1 first, as TensorFlow
    with dg.Graph().as_default():
        result = tf.nn.top_k(dg.constant(x), k=3)
        assert result.values.shape == (2, 3, 3) and result.indices.dtype is dg.int32
        assert type(result).__name__ == "TopKV2"
        values, indices = _run(tuple(result))
    expected_values, expected_indices = _ref_top_k(x, 3)
    np.testing.assert_array_equal(indices, expected_indices)
    np.testing.assert_array_equal(values, expected_values)
    assert indices[0, 0, :2].tolist() == [1, 4]


def test_top_k_integers_a_tensor_k_and_int64_indices():
    x = np.array([[1, 3, 3, 2, -7], [5, 5, 5, 5, 5], [np.iinfo(np.int32).min, 0, 0, 1, 2]])
    with dg.Graph().as_default():
        k = dg.placeholder(dg.int32, [])
        values, indices = tf.nn.top_k(dg.constant(x, dg.int32), k, index_type=dg.int64)
        assert values.shape == (3, None) and indices.dtype is dg.int64
        got = _run([values, indices], {k: 4})
    np.testing.assert_array_equal(got[0], _ref_top_k(x, 4)[0])
    assert got[1].tolist() == [[1, 2, 3, 0], [0, 1, 2, 3], [4, 3, 1, 2]]


def test_top_k_gradient_goes_to_the_picked_entries():
    x = RNG.normal(size=(3, 5))
    check_gradients(lambda a: tf.nn.top_k(a, 2).values, [x])

    def backward(a):  # TopKValuesGrad's own gradient
        return dg.gradients(tf.nn.top_k(a, 3).values, [a], grad_ys=[a[:, :3] * 2.0])[0]

    check_gradients(backward, [x])
    with dg.Graph().as_default():
        values, indices = tf.nn.top_k(dg.constant(x), 2)
        assert dg.gradients(dg.cast(indices, dg.float64), [values]) == [None]


def test_top_k_refuses_a_k_too_large():
    with dg.Graph().as_default():
        with pytest.raises(ValueError, match=r"input must have last dimension >= k = 3 but is 2"):
            tf.nn.top_k(dg.constant([[1.0, 2.0]]), k=3)
        with pytest.raises(ValueError, match="Need k >= 0, got -1"):
            tf.nn.top_k(dg.constant([1.0, 2.0]), k=-1)
        k = dg.placeholder(dg.int32, [])
        values = tf.nn.top_k(dg.constant([1.0, 2.0]), k).values
        with pytest.raises(InvalidArgumentError, match=r"at least k columns\. Had 2, needed 3"):
            _run(values, {k: 3})


def test_in_top_k_counts_ties_in_favour_and_refuses_non_finite_rows():
    """The numbers TensorFlow 2.21's in_top_k gives for these rows (k = 0, 1, 2)."""
    predictions = np.array(
        [[0.1, 0.5, 0.5, 0.2], [np.nan, 1, 2, 3], [1, 1, 1, 1], [0.3, 0.2, 0.1, 0.0]],
        np.float32,
    )
    targets = np.array([2, 3, 0, 5], np.int32)
    with dg.Graph().as_default():
        hits = [tf.nn.in_top_k(predictions, targets, k) for k in (0, 1, 2)]
        assert hits[0].dtype is dg.bool_ and hits[0].shape == (4,)
        got = _run(hits)
    assert [h.tolist() for h in got] == [
        [False, False, False, False],
        [True, False, True, False],
        [True, False, True, False],
    ]


def test_in_top_k_against_a_reference():
    predictions = RNG.normal(size=(20, 6)).astype(np.float32)
    targets = RNG.integers(0, 6, 20).astype(np.int64)
    with dg.Graph().as_default():
        got = _run(tf.nn.in_top_k(predictions, targets, dg.constant(2)))
    target_values = predictions[np.arange(20), targets]
    expected = (predictions > target_values[:, None]).sum(1) < 2
    np.testing.assert_array_equal(got, expected)
    assert 0 < expected.sum() < 20


@pytest.mark.virtual_gpus(1)
def test_top_k_on_a_virtual_gpu(dg_session):
    x = RNG.normal(size=(4, 7)).astype(np.float32)
    with dg.device("/gpu:0"):
        scores = dg.placeholder(dg.float32, [None, 7])
        values, indices = tf.nn.top_k(scores, 3)
        (grad,) = dg.gradients(dg.reduce_sum(values * values), [scores])
        hit = tf.nn.in_top_k(scores, dg.constant([0, 1, 2, 3]), 3)
    got = dg_session.run([values, indices, grad, hit], {scores: x})
    ops = dg_session.placement([values, grad], {scores: x}).ops
    assert all("GPU" in o.assigned.upper() for o in ops if o.type.startswith("TopK"))
    expected_values, expected_indices = _ref_top_k(x, 3)
    np.testing.assert_array_equal(got[1], expected_indices)
    np.testing.assert_array_equal(got[0], expected_values)
    expected_grad = np.zeros_like(x)
    np.put_along_axis(expected_grad, expected_indices, 2 * expected_values, -1)
    np.testing.assert_allclose(got[2], expected_grad, rtol=1e-6)
    assert got[3].tolist() == [bool(i in row) for i, row in enumerate(expected_indices)]
