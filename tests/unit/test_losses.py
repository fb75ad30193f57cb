"""tf.losses: every loss and reduction against values computed with the reference TensorFlow
(2.21, ``tensorflow.compat.v1.losses``, graph mode) on the same inputs; names, dtypes,
collections and errors as TensorFlow's."""

from __future__ import annotations

import numpy as np
import pytest

import daskgraph as dg
import daskgraph.compat.v1 as tf
from daskgraph.framework.graph import REGULARIZATION_LOSSES
from daskgraph.ops import losses

R = losses.Reduction


def sin(*shape: int, offset: int = 0) -> np.ndarray:
    """The inputs the TensorFlow numbers were computed on."""
    return np.sin(np.arange(np.prod(shape)) + offset).reshape(shape).astype(np.float32)


LABELS = sin(3, 4, offset=1)
PREDS = sin(3, 4, offset=2)
W_ROW = np.array([[1.0], [0.0], [2.0]], np.float32)
W_FULL = np.abs(sin(3, 4, offset=3)) * (sin(3, 4, offset=3) > -0.2)
BINARY = (sin(3, 4, offset=4) > 0).astype(np.float32)
PROBS = (sin(3, 4, offset=5) + 1) / 2
ONEHOT = np.eye(4, dtype=np.float32)[[2, 0, 3]]

# fmt: off
MSE_NONE = {
    "one": [[0.004600427, 0.5900965, 0.8062648, 0.04085322],
            [0.4617322, 0.8768489, 0.11047091, 0.33320573],
            [0.914203, 0.20790781, 0.21475558, 0.91535133]],
    "row": [[0.004600427, 0.5900965, 0.8062648, 0.04085322], [0.0, 0.0, 0.0, 0.0],
            [1.828406, 0.41581562, 0.42951116, 1.8307027]],
    "full": [[6.4921228e-04, 0.0, 0.0, 0.0], [3.0335188e-01, 8.6751765e-01, 4.5527108e-02, 0.0],
             [0.0, 0.0, 9.0233214e-02, 9.0675378e-01]],
}
MSE_REDUCED = {
    (R.SUM, "one"): 5.4762907, (R.SUM, "row"): 5.9462504, (R.SUM, "full"): 2.2140326,
    (R.MEAN, "one"): 0.45635757, (R.MEAN, "row"): 0.49552086, (R.MEAN, "full"): 0.61324465,
    (R.SUM_OVER_BATCH_SIZE, "one"): 0.45635757, (R.SUM_OVER_BATCH_SIZE, "row"): 0.49552086,
    (R.SUM_OVER_BATCH_SIZE, "full"): 0.18450272,
    (R.SUM_BY_NONZERO_WEIGHTS, "one"): 0.45635757, (R.SUM_BY_NONZERO_WEIGHTS, "row"): 0.7432813,
    (R.SUM_BY_NONZERO_WEIGHTS, "full"): 0.36900544,
}
HUBER_NONE = [[0.8855808, 1.5657405, 0.5811137, 0.6730382],
              [1.57315, 0.80166316, 0.4421211, 1.5441694],
              [1.0012636, 0.19975825, 1.4793783, 1.17592]]
HINGE_NONE = [[2.818595, 1.28224, 0.0, 2.9178486], [1.558831, 0.0, 2.9787164, 1.824237],
              [0.0, 2.9999804, 2.0731459, 0.15966594]]
# fmt: on
WEIGHTS = {"one": 1.0, "row": W_ROW, "full": W_FULL}


@pytest.fixture
def graph():
    with dg.Graph().as_default() as g:
        yield g


def _run(fetches):
    with dg.Session() as sess:
        return sess.run(fetches)


def test_mean_squared_error_with_every_reduction_and_weighting(graph):
    built = {
        (reduction, w): losses.mean_squared_error(LABELS, PREDS, WEIGHTS[w], reduction=reduction)
        for reduction in R.all()[:5]
        for w in WEIGHTS
    }
    values = _run(built)
    for w, expected in MSE_NONE.items():
        np.testing.assert_allclose(values[(R.NONE, w)], expected, rtol=1e-5, atol=1e-7)
    for key, expected in MSE_REDUCED.items():
        np.testing.assert_allclose(values[key], expected, rtol=1e-5, err_msg=str(key))
    assert len(graph.get_collection(tf.GraphKeys.LOSSES)) == len(built)


def test_each_loss_as_tensorflow(graph):
    l2 = dg.constant(LABELS) / dg.sqrt(dg.reduce_sum(LABELS**2, axis=1, keepdims=True))
    p2 = dg.constant(PREDS) / dg.sqrt(dg.reduce_sum(PREDS**2, axis=1, keepdims=True))
    built = {
        "abs": losses.absolute_difference(LABELS, PREDS, weights=W_ROW),
        "huber": losses.huber_loss(LABELS * 3, PREDS, delta=0.7),
        "huber_none": losses.huber_loss(LABELS * 3, PREDS, delta=0.7, reduction=R.NONE),
        "log": losses.log_loss(BINARY, PROBS),
        "log_w": losses.log_loss(BINARY, PROBS, weights=W_FULL, epsilon=1e-3),
        "hinge": losses.hinge_loss(BINARY, PREDS * 2),
        "hinge_none": losses.hinge_loss(BINARY, PREDS * 2, reduction=R.NONE),
        "sig": losses.sigmoid_cross_entropy(BINARY, PREDS * 3),
        "sig_ls": losses.sigmoid_cross_entropy(BINARY, PREDS * 3, W_ROW, label_smoothing=0.2),
        "soft": losses.softmax_cross_entropy(ONEHOT, PREDS * 3),
        "soft_ls": losses.softmax_cross_entropy(
            ONEHOT, PREDS * 3, np.array([1.0, 0.5, 0.0], np.float32), label_smoothing=0.1
        ),
        "soft_none": losses.softmax_cross_entropy(ONEHOT, PREDS * 3, reduction=R.NONE),
        "sparse": losses.sparse_softmax_cross_entropy([2, 0, 3], PREDS * 3),
        "sparse_col": losses.sparse_softmax_cross_entropy(
            np.array([[2], [0], [3]]), PREDS * 3, weights=np.array([[1.0], [2.0], [0.0]])
        ),
        "cos": losses.cosine_distance(l2, p2, axis=1),
        "cos_none": losses.cosine_distance(l2, p2, dim=1, reduction=R.NONE),
        "mpse": losses.mean_pairwise_squared_error(LABELS, PREDS),
        "mpse_w": losses.mean_pairwise_squared_error(LABELS, PREDS, weights=W_ROW),
        "zero_w": losses.mean_squared_error(LABELS, PREDS, weights=0.0),
    }
    values = _run(built)
    expected = {
        "abs": 0.95007247, "huber": 0.9935747, "huber_none": HUBER_NONE, "log": 0.56615216,
        "log_w": 0.46482706, "hinge": 1.551105, "hinge_none": HINGE_NONE, "sig": 1.4878721,
        "sig_ls": 2.0707998, "soft": 3.159324, "soft_ls": 3.4726057,
        "soft_none": [5.102872, 4.256219, 0.11888107], "sparse": 3.159324,
        "sparse_col": 6.807655, "cos": 0.46381307,
        "cos_none": [[0.32204026], [0.42848736], [0.6409116]], "mpse": 2.7973192,
        "mpse_w": 3.4239082, "zero_w": 0.0,
    }  # fmt: skip
    for key, want in expected.items():
        np.testing.assert_allclose(values[key], want, rtol=2e-5, atol=1e-6, err_msg=key)


def test_names_and_dtypes_as_tensorflow(graph):
    names = {
        "mean_squared_error/value:0": losses.mean_squared_error(LABELS, PREDS),
        "mean_squared_error_1/Mul:0": losses.mean_squared_error(LABELS, PREDS, reduction=R.NONE),
        "mean_squared_error_2/Sum:0": losses.mean_squared_error(LABELS, PREDS, reduction=R.SUM),
        "absolute_difference/value:0": losses.absolute_difference(LABELS, PREDS),
        "softmax_cross_entropy_loss/value:0": losses.softmax_cross_entropy(ONEHOT, PREDS),
        "sparse_softmax_cross_entropy_loss/value:0": losses.sparse_softmax_cross_entropy(
            [0, 1, 2], PREDS
        ),
        "sigmoid_cross_entropy_loss/value:0": losses.sigmoid_cross_entropy(BINARY, PREDS),
        "cosine_distance_loss/value:0": losses.cosine_distance(LABELS, PREDS, axis=1),
        "my_loss/value:0": losses.huber_loss(LABELS, PREDS, scope="my_loss"),
    }
    assert {t.name: t.name for t in names.values()} == {k: k for k in names}
    labels64, preds64 = dg.constant(LABELS.astype(np.float64)), dg.constant(PREDS, dg.float64)
    assert losses.mean_squared_error(labels64, preds64).dtype == dg.float32  # as TF's
    assert losses.softmax_cross_entropy(ONEHOT, preds64).dtype == dg.float64
    float64 = _run(losses.softmax_cross_entropy(ONEHOT, preds64 * 3))
    np.testing.assert_allclose(float64, 3.159324, rtol=1e-6)


def test_collections_and_totals(graph):
    losses.mean_squared_error([1.0, 2.0], [1.5, 2.0])
    losses.add_loss(dg.constant(3.0))
    graph.add_to_collection(REGULARIZATION_LOSSES, dg.constant(0.25))
    graph.add_to_collection(REGULARIZATION_LOSSES, dg.constant(0.5))
    total = losses.get_total_loss()
    without = losses.get_total_loss(add_regularization_losses=False)
    regularization = losses.get_regularization_loss()
    assert (total.name, regularization.name) == ("total_loss:0", "total_regularization_loss:0")
    assert len(losses.get_losses()) == 2 and len(losses.get_regularization_losses()) == 2
    losses.mean_squared_error([1.0], [2.0], loss_collection=None)
    losses.absolute_difference([1.0], [2.0], loss_collection="mine")
    assert len(losses.get_losses()) == 2 and len(losses.get_losses(loss_collection="mine")) == 1
    assert [t.name for t in losses.get_losses(scope="mean_")] == ["mean_squared_error/value:0"]
    assert [float(v) for v in _run([total, without, regularization])] == [3.875, 3.125, 0.75]


def test_totals_of_an_empty_graph(graph):
    assert float(_run(losses.get_regularization_loss())) == 0.0
    with pytest.raises(ValueError, match="at least one Tensor"):
        losses.get_total_loss()


def test_errors_as_tensorflow(graph):
    with pytest.raises(ValueError) as err:
        losses.mean_squared_error(LABELS, PREDS, weights=np.ones(3, np.float32))
    assert str(err.value) == (
        "weights can not be broadcast to values. values.rank=2. weights.rank=1. "
        "values.shape=(3, 4). weights.shape=(3,)."
    )
    with pytest.raises(ValueError, match="weights can not be broadcast to values"):
        losses.mean_squared_error(LABELS, PREDS, weights=np.ones((3, 2), np.float32))
    with pytest.raises(ValueError) as err:
        losses.mean_squared_error(LABELS, PREDS, reduction="bogus")
    assert str(err.value).startswith("Invalid Reduction Key bogus. Key should be one of ('none',")
    with pytest.raises(ValueError, match=r"Shapes \(3, 3\) and \(3, 4\) are incompatible"):
        losses.mean_squared_error(LABELS, PREDS[:, :3])
    with pytest.raises(ValueError, match="Argument `labels` must not be None"):
        losses.huber_loss(None, PREDS)
    with pytest.raises(ValueError, match="You must specify argument `axis`"):
        losses.cosine_distance(LABELS, PREDS)


def test_gradients_flow_into_the_predictions(graph):
    logits = dg.Variable(PREDS * 3)
    loss = losses.softmax_cross_entropy(ONEHOT, logits, label_smoothing=0.1)
    smoothed = ONEHOT * 0.9 + 0.1 / 4
    (grad,) = dg.gradients(loss, [logits])
    with dg.Session() as sess:
        sess.run(dg.global_variables_initializer())
        got = sess.run(grad)
    z = PREDS * 3
    softmax = np.exp(z - z.max(1, keepdims=True))
    softmax /= softmax.sum(1, keepdims=True)
    np.testing.assert_allclose(got, (softmax - smoothed) / 3, rtol=1e-5, atol=1e-7)
