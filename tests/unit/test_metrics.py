"""tf.metrics (daskgraph.metrics.core): values after several updates equal TensorFlow 2.21's
(``tf.compat.v1.metrics``, numbers pasted below), TF's names and collections, resets."""

from __future__ import annotations

import numpy as np
import pytest

import daskgraph as dg
import daskgraph.compat.v1 as tf
from daskgraph.metrics import core as metrics
from daskgraph.ops import nn_namespace as dg_nn

BATCHES = [  # labels, predictions, weights
    ([0, 1, 1, 0, 1], [0.1, 0.8, 0.4, 0.6, 0.9], [1.0, 2.0, 1.0, 0.5, 1.0]),
    ([1, 0, 0, 1, 1], [0.3, 0.2, 0.7, 0.55, 0.05], [1.0, 1.0, 3.0, 1.0, 0.0]),
    ([0, 0, 1, 1, 0], [0.95, 0.15, 0.65, 0.35, 0.5], [2.0, 1.0, 1.0, 1.0, 1.0]),
]

# tf.compat.v1.metrics (TensorFlow 2.21) on BATCHES: the first update op's value, and the
# values after the three updates
TF_FIRST_UPDATE = {
    "accuracy": 0.6000000238418579, "accuracy_w": 0.7272727489471436,
    "auc": 0.8333330154418945, "auc_min": 0.8333330154418945, "auc_pr": 0.9041060209274292,
    "auc_w": 0.9166660904884338, "cos": 0.08807545900344849, "fn": 1.0, "fp": 0.5,
    "mae": 0.3199999928474426, "mean": 0.5600000619888306,
    "mean_tensor": [0.1, 0.8, 0.4, 0.6, 0.9], "mean_w": 0.6000000238418579,
    "miou": [[1.0, 0.5, 0.0], [0.0, 1.0, 3.0], [0.0, 0.0, 0.0]],
    "mpca": [0.5, 0.3333333432674408, 0.0], "mre": 0.21164464950561523,
    "mse": 0.11636363714933395, "p_at_t": [0.75, 0.6666666865348816, 1.0],
    "pct": 0.4000000059604645, "precision": 0.6666666865348816, "r_at_t": [1.0, 0.75, 0.75],
    "recall": 0.75, "rmse": 0.3949683606624603, "sens": 1.0, "spec": 1.0, "tn": 1.0,
    "tp": 2.0, "tp_at_t": [3.0, 2.0],
}  # fmt: skip
TF_VALUES = {
    "accuracy": 0.5333333611488342, "accuracy_w": 0.5142857432365417,
    "auc": 0.5357142686843872, "auc_min": 0.5, "auc_pr": 0.5294854640960693,
    "auc_w": 0.5263158082962036, "cos": 0.13273483514785767, "fn": 4.0, "fp": 5.5,
    "mae": 0.47999998927116394, "mean": 0.48000001907348633,
    "mean_tensor": [0.574999988079071, 0.48750001192092896, 0.6299999952316284,
                    0.48000001907348633, 0.699999988079071],
    "mean_w": 0.5714285969734192, "miou": 0.23358909785747528, "mpca": 0.31481480598449707,
    "mre": 0.3343167304992676, "mse": 0.3122856914997101,
    "p_at_t": [0.6000000238418579, 0.5714285969734192, 0.6666666865348816],
    "pct": 0.46666666865348816, "precision": 0.5714285969734192, "r_at_t": [0.875, 0.625, 0.375],
    "recall": 0.625, "rmse": 0.5552777051925659, "sens": 0.5, "spec": 0.4285714328289032,
    "tn": 4.0, "tp": 4.0, "tp_at_t": [6.0, 4.0],
}  # fmt: skip


def _build(lab, pr, w):
    cls = dg.cast(pr > 0.5, dg.int64)
    y = dg.cast(lab, dg.float32)
    three = dg.cast(dg.floor(pr * 3), dg.int64)
    other = lab + dg.cast(pr > 0.9, dg.int64)
    vecs = dg_nn.l2_normalize(dg.stack([pr, 1 - pr], axis=1), axis=1)
    lvecs = dg_nn.l2_normalize(dg.stack([y + 0.5, dg.ones([5])], axis=1), axis=1)
    m = metrics
    return {
        "accuracy": m.accuracy(lab, cls),
        "accuracy_w": m.accuracy(lab, cls, weights=w, name="acc_w"),
        "mean": m.mean(pr),
        "mean_w": m.mean(pr, weights=w),
        "mae": m.mean_absolute_error(y, pr),
        "mse": m.mean_squared_error(y, pr, weights=w),
        "rmse": m.root_mean_squared_error(y, pr),
        "precision": m.precision(lab, cls),
        "recall": m.recall(lab, cls, weights=w),
        "tp": m.true_positives(lab, cls),
        "fp": m.false_positives(lab, cls, weights=w),
        "tn": m.true_negatives(lab, cls),
        "fn": m.false_negatives(lab, cls),
        "auc": m.auc(lab, pr, num_thresholds=20),
        "auc_w": m.auc(lab, pr, weights=w),
        "auc_pr": m.auc(lab, pr, curve="PR", num_thresholds=50,
                        summation_method="careful_interpolation"),
        "auc_min": m.auc(lab, pr, summation_method="minoring", num_thresholds=10),
        "pct": m.percentage_below(pr, 0.5),
        "mre": m.mean_relative_error(y, pr, normalizer=pr + 1.0),
        "mean_tensor": m.mean_tensor(dg.reshape(pr, [5]), weights=w),
        "p_at_t": m.precision_at_thresholds(lab, pr, [0.3, 0.5, 0.7]),
        "r_at_t": m.recall_at_thresholds(lab, pr, [0.3, 0.5, 0.7], weights=w),
        "tp_at_t": m.true_positives_at_thresholds(lab, pr, [0.3, 0.5]),
        "sens": m.sensitivity_at_specificity(lab, pr, 0.6, num_thresholds=20),
        "spec": m.specificity_at_sensitivity(lab, pr, 0.6, num_thresholds=20),
        "miou": m.mean_iou(other, three, 3, weights=w),
        "mpca": m.mean_per_class_accuracy(other, three, 3),
        "cos": m.mean_cosine_distance(lvecs, vecs, dim=1),
    }  # fmt: skip


@pytest.mark.virtual_gpus(1)
def test_values_after_updates_equal_tensorflows(dg_session):
    lab = dg.placeholder(dg.int64, [5])
    pr = dg.placeholder(dg.float32, [5])
    w = dg.placeholder(dg.float32, [5])
    built = _build(lab, pr, w)
    names = sorted(built)
    dg_session.run(dg.local_variables_initializer())
    for i, (labels, predictions, weights) in enumerate(BATCHES):
        feed = {lab: labels, pr: predictions, w: weights}
        updates = dg_session.run([built[k][1] for k in names], feed)
        if i == 0:
            for key, got in zip(names, updates, strict=True):
                np.testing.assert_allclose(got, TF_FIRST_UPDATE[key], rtol=2e-6, err_msg=key)
    values = dg_session.run([built[k][0] for k in names])
    for key, got in zip(names, values, strict=True):
        np.testing.assert_allclose(got, TF_VALUES[key], rtol=2e-6, err_msg=key)
    assert dg_session.run(built["accuracy"][0]) == pytest.approx(TF_VALUES["accuracy"])
    dg_session.run(dg.local_variables_initializer())  # starts every metric again
    assert dg_session.run([built["accuracy"][0], built["auc"][0], built["tp"][0]]) == [0, 0, 0]


def test_variables_names_and_collections():
    with dg.Graph().as_default() as g:
        labels, predictions = dg.constant([1, 0, 1]), dg.constant([1, 1, 1])
        acc, acc_update = tf.metrics.accuracy(labels, predictions, metrics_collections=["m"],
                                              updates_collections="u")  # fmt: skip
        precision, _ = tf.metrics.precision(labels, predictions)
        area, _ = tf.metrics.auc(labels, dg.constant([0.2, 0.5, 0.9]))
        local = [v.name for v in tf.local_variables()]
    assert local[:2] == ["accuracy/total:0", "accuracy/count:0"]
    assert "precision/true_positives/count:0" in local
    assert "auc/false_positives:0" in local and "auc/true_negatives:0" in local
    assert g.get_collection(tf.GraphKeys.METRIC_VARIABLES) == g.get_collection(
        tf.GraphKeys.LOCAL_VARIABLES
    )
    assert not g.get_collection(tf.GraphKeys.TRAINABLE_VARIABLES)
    assert not g.get_collection(tf.GraphKeys.GLOBAL_VARIABLES)
    assert g.get_collection("m") == [acc] and g.get_collection("u") == [acc_update]
    assert (acc.name, acc_update.name, precision.name, area.name) == (
        "accuracy/value:0", "accuracy/update_op:0", "precision/value:0", "auc/value:0",
    )  # fmt: skip


# tf.compat.v1.metrics at k (TensorFlow 2.21), two updates
TF_AT_K = {
    "first": {"p1d": 0.5, "p2": 0.5, "p2c": 1.0, "ptop": 0.5, "r1d": 0.7777777777777778,
              "r2": 0.5714285714285714, "r2c": 1.0, "rtop": 0.5714285714285714},
    "value": {"p1d": 0.5, "p2": 0.5, "p2c": 0.6666666666666666, "ptop": 0.5,
              "r1d": 0.8888888888888888, "r2": 0.5714285714285714, "r2c": 1.0,
              "rtop": 0.5714285714285714},
}  # fmt: skip
AT_K_BATCHES = [  # logits, labels (2 per row, -1 counts as an id), labels (1 per row)
    ([[.1, .2, .3, .9, .0], [.5, .6, .1, .2, .3], [.9, .1, .2, .3, .4], [.2, .1, .8, .7, .6]],
     [[0, 3], [1, 1], [4, -1], [2, 0]], [0, 1, 4, 2]),
    ([[.3, .2, .1, .4, .5], [.1, .9, .8, .2, .3], [.4, .6, .2, .1, .0], [.0, .1, .2, .3, .9]],
     [[3, 3], [0, 2], [1, 4], [4, 1]], [3, 2, 1, 4]),
]  # fmt: skip


def test_recall_and_precision_at_k_equal_tensorflows():
    with dg.Graph().as_default():
        logits = dg.placeholder(dg.float32, [4, 5])
        lab = dg.placeholder(dg.int64, [4, 2])
        lab1 = dg.placeholder(dg.int64, [4])
        w = dg.constant([1.0, 2.0, 0.5, 1.0])
        top = dg.ops.top_k(logits, 2).indices
        built = {
            "r2": tf.metrics.recall_at_k(lab, logits, 2),
            "p2": tf.metrics.precision_at_k(lab, logits, 2),
            "r1d": tf.metrics.recall_at_k(lab1, logits, 3, weights=w),
            "p1d": tf.metrics.sparse_precision_at_k(lab1, logits, 1),
            "r2c": tf.metrics.recall_at_k(lab, logits, 2, class_id=3),
            "p2c": tf.metrics.precision_at_k(lab, logits, 2, class_id=1),
            "rtop": tf.metrics.recall_at_top_k(lab, top),
            "ptop": tf.metrics.precision_at_top_k(lab, top, k=2),
        }
        names = sorted(built)
        local = [v.name for v in tf.local_variables()]
        with dg.Session() as sess:
            sess.run(tf.local_variables_initializer())
            for i, (x, l2, l1) in enumerate(AT_K_BATCHES):
                feed = {logits: x, lab: l2, lab1: l1}
                got = dict(zip(names, sess.run([built[k][1] for k in names], feed), strict=True))
                if i == 0:
                    assert got == pytest.approx(TF_AT_K["first"])
            values = dict(zip(names, sess.run([built[k][0] for k in names]), strict=True))
    assert values == pytest.approx(TF_AT_K["value"])
    assert local[:2] == ["recall_at_2/true_positive_at_2:0", "recall_at_2/false_negative_at_2:0"]
    assert "precision_at_2_class1/false_positive_at_2_class1:0" in local
    assert (built["r2"][0].name, built["r2"][1].name, built["ptop"][0].name) == (
        "recall_at_2:0", "recall_at_2/update:0", "precision_at_2_1:0",
    )  # fmt: skip


def test_errors_in_tensorflows_words():
    with dg.Graph().as_default():
        labels = dg.constant([0, 1])
        with pytest.raises(ValueError, match="Curve must be either ROC or PR"):
            metrics.auc(labels, [0.1, 0.2], curve="XY")
        with pytest.raises(ValueError, match="must be in the range"):
            metrics.sensitivity_at_specificity(labels, [0.1, 0.2], 1.5)
        with pytest.raises(ValueError, match="weights can not be broadcast to values"):
            metrics.mean([[1.0, 2.0], [3.0, 4.0]], weights=[[1.0, 2.0, 3.0]])
        with pytest.raises(ValueError, match="rank of 'Placeholder:0' must be known"):
            metrics.accuracy(labels, dg.placeholder(dg.int32))
        with pytest.raises(ValueError, match="incompatible"):
            metrics.accuracy([1, 2, 3], [1, 2])
        _, update = metrics.auc(labels, dg.constant([0.5, 1.5]))
        with dg.Session() as sess:
            sess.run(dg.local_variables_initializer())
            with pytest.raises(dg.errors.InvalidArgumentError, match=r"predictions must be in"):
                sess.run(update)
