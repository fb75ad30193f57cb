"""TensorFlow 1's streaming metrics over thresholds: ``auc``, the confusion counts and the
precision and recall at given thresholds, ``sensitivity_at_specificity`` and
``specificity_at_sensitivity``.

Each keeps one count per threshold in variables ``true_positives``, ``false_negatives``,
``true_negatives`` and ``false_positives`` (those it needs; a prediction above a threshold is
positive, ``predictions`` must lie in [0, 1], which the update checks), accumulated by every
update, and computes its value from them as TensorFlow's ``metrics_impl.py`` does (``auc``:
the end points just below 0 and just above 1, ``num_thresholds - 2`` evenly spaced in between,
and a Riemann sum of the ROC or precision-recall curve).

>>> import daskgraph as dg
>>> with dg.Graph().as_default():
...     tp, update = true_positives_at_thresholds([1, 1, 0], [0.9, 0.4, 0.8], [0.5, 0.3])
...     with dg.Session() as sess:
...         _ = sess.run(dg.local_variables_initializer())
...         sess.run(update).tolist(), tp.op.name
([1.0, 2.0], 'true_positives/Identity')
"""

from __future__ import annotations

from typing import Any

import numpy as np

from daskgraph.framework import dtypes
from daskgraph.framework.graph import Tensor
from daskgraph.framework.scopes import control_dependencies
from daskgraph.metrics.base import (
    broadcast_weights,
    collected,
    metric_variable,
    remove_squeezable_dimensions,
)
from daskgraph.ops import (
    abs,
    add,
    argmax,
    argmin,
    assert_greater_equal,
    assert_less_equal,
    assign_add,
    cast,
    constant,
    convert_to_tensor,
    cumsum,
    div_no_nan,
    divide,
    equal,
    gather,
    greater,
    identity,
    log,
    logical_and,
    logical_not,
    maximum,
    minimum,
    multiply,
    ones_like,
    reduce_min,
    reduce_sum,
    reshape,
    subtract,
    where,
)
from daskgraph.ops.variable_scope import variable_scope

__all__ = [
    "auc",
    "false_negatives_at_thresholds",
    "false_positives_at_thresholds",
    "precision_at_thresholds",
    "recall_at_thresholds",
    "sensitivity_at_specificity",
    "specificity_at_sensitivity",
    "true_negatives_at_thresholds",
    "true_positives_at_thresholds",
]

_KEPSILON = 1e-7  # TensorFlow's end points below 0 and above 1 of the thresholds
_COUNTS = ("tp", "fn", "tn", "fp")


def _confusion_at_thresholds(
    labels: Any,
    predictions: Any,
    thresholds: list[float],
    weights: Any = None,
    includes: tuple[str, ...] = _COUNTS,
):
    """Variables ``true_positives``, ``false_negatives``, ``true_negatives``,
    ``false_positives`` (those of ``includes``) of ``len(thresholds)`` counts each: a
    prediction above a threshold is positive. Returns ``(variables, updates)`` by key."""
    predictions = convert_to_tensor(predictions)
    checks = [
        assert_greater_equal(
            predictions, cast(0.0, predictions.dtype), message="predictions must be in [0, 1]"
        ),
        assert_less_equal(
            predictions, cast(1.0, predictions.dtype), message="predictions must be in [0, 1]"
        ),
    ]
    with control_dependencies(checks):
        predictions, labels, weights = remove_squeezable_dimensions(
            cast(predictions, dtypes.float32), cast(labels, dtypes.bool_), weights
        )
    column = constant(np.array(thresholds, np.float32).reshape(-1, 1))
    pred_is_pos = greater(reshape(predictions, [1, -1]), column)  # [thresholds, values]
    label_is_pos = reshape(labels, [1, -1])
    if weights is not None:
        weights = broadcast_weights(cast(weights, dtypes.float32), predictions)
        weights = reshape(weights, [1, -1])
    cases = {
        "tp": ("true_positives", label_is_pos, pred_is_pos),
        "fn": ("false_negatives", label_is_pos, logical_not(pred_is_pos)),
        "tn": ("true_negatives", logical_not(label_is_pos), logical_not(pred_is_pos)),
        "fp": ("false_positives", logical_not(label_is_pos), pred_is_pos),
    }
    values, updates = {}, {}
    for key in includes:
        var_name, label_case, pred_case = cases[key]
        variable = metric_variable([len(thresholds)], dtypes.float32, name=var_name)
        hits = cast(logical_and(label_case, pred_case), dtypes.float32)
        if weights is not None:
            hits = multiply(hits, weights)
        updates[key] = assign_add(variable, reduce_sum(hits, axis=1))
        values[key] = variable
    return values, updates


def _count_at_thresholds(key: str, kind: str):
    def metric(
        labels: Any,
        predictions: Any,
        thresholds: Any,
        weights: Any = None,
        metrics_collections: Any = None,
        updates_collections: Any = None,
        name: str | None = None,
    ) -> tuple[Tensor, Tensor]:
        with variable_scope(name, kind, (predictions, labels, weights)):
            values, updates = _confusion_at_thresholds(
                labels, predictions, list(thresholds), weights, includes=(key,)
            )
            value = identity(values[key])
            return collected(value, updates[key], metrics_collections, updates_collections)

    metric.__name__ = metric.__qualname__ = f"{kind}_at_thresholds"
    metric.__doc__ = (
        f"The (weighted) number of {kind.replace('_', ' ')} at each of ``thresholds`` (a "
        "prediction above a threshold is positive; ``predictions`` in [0, 1]) over every "
        f"update (variable ``{kind}/{kind}``)."
    )
    return metric


true_positives_at_thresholds = _count_at_thresholds("tp", "true_positives")
false_positives_at_thresholds = _count_at_thresholds("fp", "false_positives")
true_negatives_at_thresholds = _count_at_thresholds("tn", "true_negatives")
false_negatives_at_thresholds = _count_at_thresholds("fn", "false_negatives")


def _ratio_at_thresholds(kind: str, other: str):
    def metric(
        labels: Any,
        predictions: Any,
        thresholds: Any,
        weights: Any = None,
        metrics_collections: Any = None,
        updates_collections: Any = None,
        name: str | None = None,
    ) -> tuple[Tensor, Tensor]:
        with variable_scope(name, f"{kind}_at_thresholds", (predictions, labels, weights)):
            values, updates = _confusion_at_thresholds(
                labels, predictions, list(thresholds), weights, includes=("tp", other)
            )

            def compute(counts: dict, suffix: str) -> Tensor:
                total = add(add(counts["tp"], _KEPSILON), counts[other])
                return divide(counts["tp"], total, name=f"{kind}_{suffix}")

            value = compute(values, "value")
            update_op = compute(updates, "update_op")
            return collected(value, update_op, metrics_collections, updates_collections)

    metric.__name__ = metric.__qualname__ = f"{kind}_at_thresholds"
    return metric


precision_at_thresholds = _ratio_at_thresholds("precision", "fp")
precision_at_thresholds.__doc__ = """The precision ``tp / (tp + fp + 1e-7)`` at each of
``thresholds`` (``predictions`` in [0, 1]) over every update."""
recall_at_thresholds = _ratio_at_thresholds("recall", "fn")
recall_at_thresholds.__doc__ = """The recall ``tp / (tp + fn + 1e-7)`` at each of
``thresholds`` (``predictions`` in [0, 1]) over every update."""


def _auc_thresholds(num_thresholds: int, thresholds: Any) -> list[float]:
    """TensorFlow's thresholds of ``auc``: ``num_thresholds - 2`` evenly spaced in (0, 1),
    or the given ones sorted, between end points just below 0 and just above 1."""
    if thresholds is not None:
        inner = sorted(float(t) for t in thresholds)
    else:
        inner = [(i + 1) * 1.0 / (num_thresholds - 1) for i in range(num_thresholds - 2)]
    return [0.0 - _KEPSILON, *inner, 1.0 + _KEPSILON]


def _pairs(x: Tensor) -> tuple[Tensor, Tensor]:
    """``x[:-1]`` and ``x[1:]`` of a vector of known length."""
    n = x.shape[0]
    return x[: n - 1], x[1:]


def _interpolate_pr_auc(tp: Tensor, fp: Tensor, fn: Tensor) -> Tensor:
    """TensorFlow's ``careful_interpolation`` of the area under the precision-recall curve."""
    (tp_a, tp_b), p = _pairs(tp), add(tp, fp)
    p_a, p_b = _pairs(p)
    dtp = subtract(tp_a, tp_b)
    slope = div_no_nan(dtp, maximum(subtract(p_a, p_b), 0.0), name="prec_slope")
    intercept = subtract(tp_b, multiply(slope, p_b))
    ratio = where(
        logical_and(greater(p_a, 0.0), greater(p_b, 0.0)),
        div_no_nan(p_a, maximum(p_b, 0.0), name="recall_relative_ratio"),
        ones_like(p_b),
    )
    increments = div_no_nan(
        multiply(slope, add(dtp, multiply(intercept, log(ratio)))),
        maximum(add(tp_b, _pairs(fn)[1]), 0.0),
        name="pr_auc_increment",
    )
    return reduce_sum(increments, name="interpolate_pr_auc")


def _area(counts: dict, curve: str, summation_method: str, name: str) -> Tensor:
    """The area under the ROC or PR curve of the counts, by ``summation_method``."""
    tp, fn, tn, fp = (counts[k] for k in _COUNTS)
    if curve == "PR" and summation_method == "careful_interpolation":
        return _interpolate_pr_auc(tp, fp, fn)
    epsilon = 1.0e-6
    rec = divide(add(tp, epsilon), add(add(tp, fn), epsilon))
    if curve == "ROC":
        x, y = divide(fp, add(add(fp, tn), epsilon)), rec
    else:
        x, y = rec, divide(add(tp, epsilon), add(add(tp, fp), epsilon))
    (x_a, x_b), (y_a, y_b) = _pairs(x), _pairs(y)
    if summation_method in ("trapezoidal", "careful_interpolation"):
        heights = divide(add(y_a, y_b), 2.0)
    else:
        heights = (minimum if summation_method == "minoring" else maximum)(y_a, y_b)
    return reduce_sum(multiply(subtract(x_a, x_b), heights), name=name)


def auc(
    labels: Any,
    predictions: Any,
    weights: Any = None,
    num_thresholds: int = 200,
    metrics_collections: Any = None,
    updates_collections: Any = None,
    curve: str = "ROC",
    name: str | None = None,
    summation_method: str = "trapezoidal",
    thresholds: Any = None,
) -> tuple[Tensor, Tensor]:
    """The area under the ROC (``curve="ROC"``) or precision-recall (``"PR"``) curve, a
    Riemann sum over ``num_thresholds`` thresholds (or ``thresholds``) of the confusion counts
    accumulated by every update (``predictions`` in [0, 1]); ``summation_method``
    ``trapezoidal``, ``careful_interpolation``, ``minoring`` or ``majoring``.

    Examples
    --------
    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     area, update = auc([0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8])
    ...     with dg.Session() as sess:
    ...         _ = sess.run(dg.local_variables_initializer())
    ...         round(float(sess.run(update)), 4)
    0.75
    """
    if curve not in ("ROC", "PR"):
        raise ValueError(f"Curve must be either ROC or PR. Curve {curve} is unknown.")
    if summation_method not in ("trapezoidal", "careful_interpolation", "minoring", "majoring"):
        raise ValueError(
            f"Invalid summation_method: {summation_method} summation_method should be "
            "'trapezoidal', 'careful_interpolation', 'minoring', or 'majoring'."
        )
    with variable_scope(name, "auc", (labels, predictions, weights)):
        points = _auc_thresholds(num_thresholds, thresholds)
        values, updates = _confusion_at_thresholds(labels, predictions, points, weights)
        value = _area(values, curve, summation_method, "value")
        update_op = _area(updates, curve, summation_method, "update_op")
        return collected(value, update_op, metrics_collections, updates_collections)


def _at_rate(kind: str, target_name: str, end: float, pick):
    def metric(
        labels: Any,
        predictions: Any,
        target: float,
        weights: Any = None,
        num_thresholds: int = 200,
        metrics_collections: Any = None,
        updates_collections: Any = None,
        name: str | None = None,
    ):
        if target < 0 or target > 1:
            raise ValueError(
                f"`{target_name}` must be in the range [0, 1]. Currently, `{target_name}` "
                f"{'got' if kind.startswith('sens') else 'is'} {target}."
            )
        with variable_scope(name, kind, (predictions, labels, weights)):
            inner = [(i + 1) * 1.0 / (num_thresholds - 1) for i in range(num_thresholds - 2)]
            points = [0.0 - _KEPSILON, *inner, end]
            values, updates = _confusion_at_thresholds(labels, predictions, points, weights)
            value = pick(values, float(target), "value")
            update_op = pick(updates, float(target), "update_op")
            return collected(value, update_op, metrics_collections, updates_collections)

    metric.__name__ = metric.__qualname__ = kind
    return metric


def _sensitivity(counts: dict, specificity: float, name: str) -> Tensor:
    tp, fn, tn, fp = (counts[k] for k in _COUNTS)
    specificities = divide(tn, add(add(tn, fp), _KEPSILON))
    index = cast(argmin(abs(subtract(specificities, specificity)), 0), dtypes.int32)
    tp_i, fn_i = gather(tp, index), gather(fn, index)
    return divide(tp_i, add(add(tp_i, fn_i), _KEPSILON), name=name)


def _specificity(counts: dict, sensitivity: float, name: str) -> Tensor:
    tp, fn, tn, fp = (counts[k] for k in _COUNTS)
    distance = abs(subtract(divide(tp, add(add(tp, fn), _KEPSILON)), sensitivity))
    at_min = cast(equal(distance, reduce_min(distance)), dtypes.int64)
    index = cast(argmax(cumsum(at_min), 0), dtypes.int32)  # the first of the closest
    tn_i, fp_i = gather(tn, index), gather(fp, index)
    return divide(tn_i, add(add(tn_i, fp_i), _KEPSILON), name=name)


sensitivity_at_specificity = _at_rate(
    "sensitivity_at_specificity", "specificity", 1.0 + _KEPSILON, _sensitivity
)
sensitivity_at_specificity.__doc__ = """The sensitivity (recall) at the threshold whose
specificity is closest to ``specificity`` (the third argument), over every update."""
specificity_at_sensitivity = _at_rate(
    "specificity_at_sensitivity", "sensitivity", 1.0 - _KEPSILON, _specificity
)
specificity_at_sensitivity.__doc__ = """The specificity at the threshold whose sensitivity is
closest to ``sensitivity`` (the third argument), over every update."""
