"""TensorFlow 1's streaming metrics (``tf.metrics``): values accumulated over many runs.

Each metric makes LOCAL variables (``total``/``count``, confusion counts, ...: in the
``LOCAL_VARIABLES`` and ``METRIC_VARIABLES`` collections, not trainable, zero when
initialized; :mod:`daskgraph.metrics.base`) under a variable scope named after the metric
(``accuracy/total:0``), and returns ``(value, update_op)``: running ``update_op`` adds a batch
to the variables and gives the metric so far, ``value`` reads it without changing anything.
``local_variables_initializer()`` starts them again. The ops and their names follow
TensorFlow's ``metrics_impl.py``, also ``metrics_collections`` / ``updates_collections``
(graph collections the value / the update op join) and ``weights`` (a scalar, or broadcastable
to the values with their rank; 0 masks an element out). This module has the means, counts,
precision and recall and the per-class metrics, and brings the metrics over thresholds
(:mod:`daskgraph.metrics.thresholds`: ``auc``, ...) and at k
(:mod:`daskgraph.metrics.at_k`) under its roof: it is the whole ``tf.metrics``.

>>> import daskgraph as dg
>>> with dg.Graph().as_default():
...     labels = dg.placeholder(dg.int64, [4])
...     acc, update = accuracy(labels, dg.constant([1, 0, 1, 1], dtype=dg.int64))
...     with dg.Session() as sess:
...         _ = sess.run(dg.local_variables_initializer())
...         _ = sess.run(update, {labels: [1, 0, 0, 0]})
...         float(sess.run(update, {labels: [1, 0, 1, 1]})), float(sess.run(acc)), acc.op.name
(0.75, 0.75, 'accuracy/value')
"""

from __future__ import annotations

from typing import Any

from daskgraph.framework import dtypes
from daskgraph.framework.graph import Tensor
from daskgraph.framework.scopes import control_dependencies
from daskgraph.metrics.at_k import (
    precision_at_k,
    precision_at_top_k,
    recall_at_k,
    recall_at_top_k,
)
from daskgraph.metrics.base import (
    METRIC_VARIABLES,
    broadcast_weights,
    check_compatible,
    collected,
    metric_variable,
    rank,
    remove_squeezable_dimensions,
)
from daskgraph.metrics.thresholds import (
    auc,
    false_negatives_at_thresholds,
    false_positives_at_thresholds,
    precision_at_thresholds,
    recall_at_thresholds,
    sensitivity_at_specificity,
    specificity_at_sensitivity,
    true_negatives_at_thresholds,
    true_positives_at_thresholds,
)
from daskgraph.ops import (
    abs,
    add,
    assign_add,
    cast,
    convert_to_tensor,
    diag_part,
    div_no_nan,
    divide,
    equal,
    greater,
    identity,
    less,
    logical_and,
    maximum,
    multiply,
    not_equal,
    ones_like,
    reduce_mean,
    reduce_sum,
    reshape,
    scatter_add,
    size,
    sqrt,
    squared_difference,
    subtract,
    where,
)
from daskgraph.ops.segments import confusion_matrix
from daskgraph.ops.variable_scope import variable_scope

__all__ = [
    "METRIC_VARIABLES",
    "accuracy",
    "auc",
    "false_negatives",
    "false_negatives_at_thresholds",
    "false_positives",
    "false_positives_at_thresholds",
    "mean",
    "mean_absolute_error",
    "mean_cosine_distance",
    "mean_iou",
    "mean_per_class_accuracy",
    "mean_relative_error",
    "mean_squared_error",
    "mean_tensor",
    "metric_variable",
    "percentage_below",
    "precision",
    "precision_at_k",
    "precision_at_thresholds",
    "precision_at_top_k",
    "recall",
    "recall_at_k",
    "recall_at_thresholds",
    "recall_at_top_k",
    "root_mean_squared_error",
    "sensitivity_at_specificity",
    "sparse_precision_at_k",
    "specificity_at_sensitivity",
    "true_negatives",
    "true_negatives_at_thresholds",
    "true_positives",
    "true_positives_at_thresholds",
]


# -- means ----------------------------------------------------------------------------------------
def mean(
    values: Any,
    weights: Any = None,
    metrics_collections: Any = None,
    updates_collections: Any = None,
    name: str | None = None,
) -> tuple[Tensor, Tensor]:
    """The (weighted) mean of ``values`` over every update: variables ``total`` and
    ``count``, value ``total / count`` (0 before any update).

    Examples
    --------
    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     x = dg.placeholder(dg.float32, [3])
    ...     m, update = mean(x, weights=[1.0, 1.0, 0.0])
    ...     with dg.Session() as sess:
    ...         _ = sess.run(dg.local_variables_initializer())
    ...         for batch in ([1.0, 2.0, 100.0], [3.0, 4.0, 100.0]):
    ...             _ = sess.run(update, {x: batch})
    ...         float(sess.run(m)), m.name, update.name
    (2.5, 'mean/value:0', 'mean/update_op:0')
    """
    with variable_scope(name, "mean", (values, weights)):
        values = cast(values, dtypes.float32)
        total = metric_variable([], dtypes.float32, name="total")
        count = metric_variable([], dtypes.float32, name="count")
        if weights is None:
            num_values = cast(size(values), dtypes.float32)
        else:
            values, _, weights = remove_squeezable_dimensions(values, None, weights)
            weights = broadcast_weights(cast(weights, dtypes.float32), values)
            values = multiply(values, weights)
            num_values = reduce_sum(weights)
        update_total = assign_add(total, reduce_sum(values))
        with control_dependencies([values]):
            update_count = assign_add(count, num_values)
        return _ratio(
            total, count, update_total, update_count, metrics_collections, updates_collections
        )


def _ratio(total, count, update_total, update_count, metrics_collections, updates_collections):
    """``(value, update_op)``: ``total / count`` of the variables and of their updates."""
    value = div_no_nan(total, maximum(count, 0.0), name="value")
    update_op = div_no_nan(update_total, maximum(update_count, 0.0), name="update_op")
    return collected(value, update_op, metrics_collections, updates_collections)


def mean_tensor(
    values: Any,
    weights: Any = None,
    metrics_collections: Any = None,
    updates_collections: Any = None,
    name: str | None = None,
) -> tuple[Tensor, Tensor]:
    """The elementwise (weighted) mean of ``values`` (whose shape must be known) over every
    update: variables ``total_tensor`` and ``count_tensor``."""
    with variable_scope(name, "mean", (values, weights)):
        values = cast(values, dtypes.float32)
        if values.shape is None or None in values.shape:
            raise ValueError(f"mean_tensor: the shape of values must be known; got {values.shape}")
        total = metric_variable(values.shape, dtypes.float32, name="total_tensor")
        count = metric_variable(values.shape, dtypes.float32, name="count_tensor")
        num_values = ones_like(values)
        if weights is not None:
            values, _, weights = remove_squeezable_dimensions(values, None, weights)
            weights = broadcast_weights(cast(weights, dtypes.float32), values)
            values = multiply(values, weights)
            num_values = multiply(num_values, weights)
        update_total = assign_add(total, values)
        with control_dependencies([values]):
            update_count = assign_add(count, num_values)
        return _ratio(
            total, count, update_total, update_count, metrics_collections, updates_collections
        )


def accuracy(
    labels: Any,
    predictions: Any,
    weights: Any = None,
    metrics_collections: Any = None,
    updates_collections: Any = None,
    name: str | None = None,
) -> tuple[Tensor, Tensor]:
    """How often ``predictions`` equals ``labels``: the mean of ``1.0`` where they match (see
    :func:`mean`; scope ``accuracy``)."""
    predictions, labels, weights = remove_squeezable_dimensions(predictions, labels, weights)
    if labels.dtype != predictions.dtype:
        predictions = cast(predictions, labels.dtype)
    is_correct = cast(equal(predictions, labels), dtypes.float32)
    return mean(is_correct, weights, metrics_collections, updates_collections, name or "accuracy")


def _errors(labels: Any, predictions: Any, weights: Any, compute) -> tuple[Tensor, Any]:
    predictions, labels, weights = remove_squeezable_dimensions(predictions, labels, weights)
    return compute(labels, predictions), weights


def mean_absolute_error(
    labels: Any,
    predictions: Any,
    weights: Any = None,
    metrics_collections: Any = None,
    updates_collections: Any = None,
    name: str | None = None,
) -> tuple[Tensor, Tensor]:
    """The mean of ``|predictions - labels|`` (scope ``mean_absolute_error``)."""
    errors, weights = _errors(labels, predictions, weights, lambda y, p: abs(subtract(p, y)))
    return mean(
        errors, weights, metrics_collections, updates_collections, name or "mean_absolute_error"
    )


def mean_squared_error(
    labels: Any,
    predictions: Any,
    weights: Any = None,
    metrics_collections: Any = None,
    updates_collections: Any = None,
    name: str | None = None,
) -> tuple[Tensor, Tensor]:
    """The mean of ``(labels - predictions)**2`` (scope ``mean_squared_error``)."""
    errors, weights = _errors(labels, predictions, weights, squared_difference)
    return mean(
        errors, weights, metrics_collections, updates_collections, name or "mean_squared_error"
    )


def root_mean_squared_error(
    labels: Any,
    predictions: Any,
    weights: Any = None,
    metrics_collections: Any = None,
    updates_collections: Any = None,
    name: str | None = None,
) -> tuple[Tensor, Tensor]:
    """The square root of :func:`mean_squared_error` (its variables under
    ``root_mean_squared_error``)."""
    predictions, labels, weights = remove_squeezable_dimensions(predictions, labels, weights)
    mse, update_mse = mean_squared_error(
        labels, predictions, weights, None, None, name or "root_mean_squared_error"
    )
    rmse, update_rmse = sqrt(mse), sqrt(update_mse)
    return collected(rmse, update_rmse, metrics_collections, updates_collections)


def mean_relative_error(
    labels: Any,
    predictions: Any,
    normalizer: Any,
    weights: Any = None,
    metrics_collections: Any = None,
    updates_collections: Any = None,
    name: str | None = None,
) -> tuple[Tensor, Tensor]:
    """The mean of ``|labels - predictions| / normalizer`` (0 where ``normalizer`` is 0)."""
    predictions, labels, weights = remove_squeezable_dimensions(predictions, labels, weights)
    predictions, normalizer, _ = remove_squeezable_dimensions(predictions, normalizer, None)
    relative = where(
        equal(normalizer, 0.0),
        ones_like(labels) * 0.0,
        divide(abs(subtract(labels, predictions)), normalizer),
    )
    return mean(
        relative, weights, metrics_collections, updates_collections, name or "mean_relative_error"
    )


def mean_cosine_distance(
    labels: Any,
    predictions: Any,
    dim: int,
    weights: Any = None,
    metrics_collections: Any = None,
    updates_collections: Any = None,
    name: str | None = None,
) -> tuple[Tensor, Tensor]:
    """``1 -`` the mean of the dot products of ``labels`` and ``predictions`` (unit vectors
    along ``dim``)."""
    predictions, labels, weights = remove_squeezable_dimensions(predictions, labels, weights)
    radial = reduce_sum(multiply(predictions, labels), axis=[dim], keepdims=True)
    mean_distance, update_op = mean(radial, weights, None, None, name or "mean_cosine_distance")
    mean_distance, update_op = subtract(1.0, mean_distance), subtract(1.0, update_op)
    return collected(mean_distance, update_op, metrics_collections, updates_collections)


def percentage_below(
    values: Any,
    threshold: Any,
    weights: Any = None,
    metrics_collections: Any = None,
    updates_collections: Any = None,
    name: str | None = None,
) -> tuple[Tensor, Tensor]:
    """The fraction of ``values`` below ``threshold`` (scope ``percentage_below_threshold``)."""
    below = cast(less(values, threshold), dtypes.float32)
    return mean(
        below,
        weights,
        metrics_collections,
        updates_collections,
        name or "percentage_below_threshold",
    )


# -- counts ---------------------------------------------------------------------------------------
def _count_condition(
    values: Tensor, weights: Any, metrics_collections: Any, updates_collections: Any
) -> tuple[Tensor, Tensor]:
    """The (weighted) number of true ``values`` over every update: variable ``count``."""
    if values.dtype != dtypes.bool_:
        raise TypeError(f"{values.name!r} must be of type bool; got {values.dtype.name}")
    count = metric_variable([], dtypes.float32, name="count")
    values = cast(values, dtypes.float32)
    if weights is not None:
        weights = convert_to_tensor(weights)
        if rank(weights) not in (None, 0, rank(values)):
            raise ValueError(
                f"weights must be a scalar or have the rank of the values ({rank(values)}); "
                f"got shape {tuple(weights.shape)}"
            )
        values = multiply(values, cast(weights, dtypes.float32))
    value = identity(count)
    update_op = assign_add(count, reduce_sum(values))
    return collected(value, update_op, metrics_collections, updates_collections)


def _condition_metric(kind: str, label: bool, prediction: bool):
    def metric(
        labels: Any,
        predictions: Any,
        weights: Any = None,
        metrics_collections: Any = None,
        updates_collections: Any = None,
        name: str | None = None,
    ) -> tuple[Tensor, Tensor]:
        with variable_scope(name, kind, (predictions, labels, weights)):
            predictions, labels, weights = remove_squeezable_dimensions(
                cast(predictions, dtypes.bool_), cast(labels, dtypes.bool_), weights
            )
            hit = logical_and(equal(labels, label), equal(predictions, prediction))
            return _count_condition(hit, weights, metrics_collections, updates_collections)

    metric.__name__ = metric.__qualname__ = kind
    metric.__doc__ = (
        f"The (weighted) number of {kind.replace('_', ' ')}: labels {label} predicted "
        f"{prediction} (``labels``, ``predictions`` cast to bool), over every update "
        f"(variable ``{kind}/count``)."
    )
    return metric


true_positives = _condition_metric("true_positives", True, True)
false_positives = _condition_metric("false_positives", False, True)
true_negatives = _condition_metric("true_negatives", False, False)
false_negatives = _condition_metric("false_negatives", True, False)


def _fraction(kind: str, other):
    def metric(
        labels: Any,
        predictions: Any,
        weights: Any = None,
        metrics_collections: Any = None,
        updates_collections: Any = None,
        name: str | None = None,
    ) -> tuple[Tensor, Tensor]:
        with variable_scope(name, kind, (predictions, labels, weights)):
            predictions, labels, weights = remove_squeezable_dimensions(
                cast(predictions, dtypes.bool_), cast(labels, dtypes.bool_), weights
            )
            tp, tp_update = true_positives(labels, predictions, weights)
            wrong, wrong_update = other(labels, predictions, weights)
            value = _share(tp, wrong, "value")
            update_op = _share(tp_update, wrong_update, "update_op")
            return collected(value, update_op, metrics_collections, updates_collections)

    metric.__name__ = metric.__qualname__ = kind
    return metric


def _share(tp: Any, wrong: Any, name: str) -> Tensor:
    """``tp / (tp + wrong)``, 0 where that is 0/0."""
    both = add(tp, wrong)
    return where(greater(both, 0.0), divide(tp, both), 0.0, name=name)


precision = _fraction("precision", false_positives)
precision.__doc__ = """The precision ``tp / (tp + fp)`` of ``predictions`` (cast to bool)
against ``labels`` over every update, from :func:`true_positives` and :func:`false_positives`
under the scope ``precision`` (0 before any positive prediction)."""
recall = _fraction("recall", false_negatives)
recall.__doc__ = """The recall ``tp / (tp + fn)`` of ``predictions`` (cast to bool) against
``labels`` over every update, from :func:`true_positives` and :func:`false_negatives` under the
scope ``recall`` (0 before any positive label)."""


# -- classes --------------------------------------------------------------------------------------
def _flat(x: Tensor) -> Tensor:
    return reshape(x, [-1]) if rank(x) is None or rank(x) > 1 else x


def mean_iou(
    labels: Any,
    predictions: Any,
    num_classes: int,
    weights: Any = None,
    metrics_collections: Any = None,
    updates_collections: Any = None,
    name: str | None = None,
) -> tuple[Tensor, Tensor]:
    """The mean intersection over union of the classes (``num_classes`` known when the graph
    is built) from a confusion matrix accumulated by every update (variable
    ``total_confusion_matrix``, float64); the update op gives that matrix, as TensorFlow's."""
    with variable_scope(name, "mean_iou", (predictions, labels, weights)):
        labels, predictions = convert_to_tensor(labels), convert_to_tensor(predictions)
        check_compatible(predictions, labels)
        n = int(num_classes)
        total_cm = metric_variable([n, n], dtypes.float64, name="total_confusion_matrix")
        if weights is not None:
            weights = _flat(convert_to_tensor(weights))
        current = confusion_matrix(
            _flat(cast(labels, dtypes.int64)),
            _flat(cast(predictions, dtypes.int64)),
            n,
            dtype=dtypes.float64,
            weights=weights,
        )
        update_op = assign_add(total_cm, current)
        value = _mean_iou_value(total_cm)
        return collected(value, update_op, metrics_collections, updates_collections)


def _mean_iou_value(total_cm: Any) -> Tensor:
    """The mean, over the classes that occur, of diagonal / (row sum + column sum - diagonal)."""
    rows = cast(reduce_sum(total_cm, 0), dtypes.float32)
    cols = cast(reduce_sum(total_cm, 1), dtypes.float32)
    diagonal = cast(diag_part(total_cm), dtypes.float32)
    denominator = subtract(add(rows, cols), diagonal)
    valid = reduce_sum(cast(not_equal(denominator, 0.0), dtypes.float32))
    denominator = where(greater(denominator, 0.0), denominator, ones_like(denominator))
    iou = divide(diagonal, denominator)
    return where(greater(valid, 0.0), divide(reduce_sum(iou, name="mean_iou"), valid), 0.0)


def mean_per_class_accuracy(
    labels: Any,
    predictions: Any,
    num_classes: int,
    weights: Any = None,
    metrics_collections: Any = None,
    updates_collections: Any = None,
    name: str | None = None,
) -> tuple[Tensor, Tensor]:
    """The mean over classes of the accuracy on each class's labels (scope ``mean_accuracy``,
    variables ``total`` and ``count`` of ``num_classes`` each); the update op gives the
    per-class accuracies, as TensorFlow's."""
    with variable_scope(name, "mean_accuracy", (predictions, labels, weights)):
        labels = _flat(cast(labels, dtypes.int64))
        predictions = _flat(convert_to_tensor(predictions))
        check_compatible(predictions, labels)
        total = metric_variable([num_classes], dtypes.float32, name="total")
        count = metric_variable([num_classes], dtypes.float32, name="count")
        ones = cast(ones_like(labels), dtypes.float32)
        if labels.dtype != predictions.dtype:
            predictions = cast(predictions, labels.dtype)
        is_correct = cast(equal(predictions, labels), dtypes.float32)
        if weights is not None:
            weights = _flat(cast(weights, dtypes.float32))
            is_correct, ones = multiply(is_correct, weights), multiply(ones, weights)
        update_total = scatter_add(total, labels, ones)
        update_count = scatter_add(count, labels, is_correct)
        per_class = div_no_nan(count, maximum(total, 0.0))
        value = reduce_mean(per_class, name="mean_accuracy")
        update_op = div_no_nan(update_count, maximum(update_total, 0.0), name="update_op")
        return collected(value, update_op, metrics_collections, updates_collections)


#: TensorFlow's deprecated name of :func:`precision_at_k`
sparse_precision_at_k = precision_at_k


def __getattr__(name: str) -> object:
    """A name tf.metrics does not have: the AttributeError pointing to docs/compat.md."""
    from daskgraph.errors import missing_name

    raise missing_name("tf.metrics", name, globals())
