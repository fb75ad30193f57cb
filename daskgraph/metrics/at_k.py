"""TensorFlow 1's streaming metrics at k: ``recall_at_k``, ``precision_at_k`` and their
``_at_top_k`` forms, which take the indices of the top predictions.

Labels are class ids, ``[batch, num_labels]`` or ``[batch]`` (one label each), and each row's
labels and top-k predictions count as sets, as TensorFlow's set operations count them
(repeated ids once; every id counts, -1 too): a true positive is a predicted id among the
labels, a false positive one that is not, a false negative a label not predicted. With
``class_id``, only that id counts. The counts are summed (times ``weights``, one per row) into
float64 variables ``true_positive_at_<k>`` and ``false_negative_at_<k>`` /
``false_positive_at_<k>`` under the scope ``recall_at_<k>`` / ``precision_at_<k>``
(``_class<id>`` appended with ``class_id``), and the value is ``tp / (tp + fn)`` /
``tp / (tp + fp)`` (NaN before any count, as TensorFlow's). The ranks and the number of labels
and of predictions per row must be known when the graph is built.

>>> import daskgraph as dg
>>> with dg.Graph().as_default():
...     scores = dg.constant([[0.1, 0.7, 0.2], [0.5, 0.1, 0.4]])
...     recall, update = recall_at_k(dg.constant([[1], [1]], dtype=dg.int64), scores, k=2)
...     with dg.Session() as sess:
...         _ = sess.run(dg.local_variables_initializer())
...         float(sess.run(update)), recall.name
(0.5, 'recall_at_2:0')
"""

from __future__ import annotations

from typing import Any

import numpy as np

from daskgraph.framework import dtypes
from daskgraph.framework.graph import Tensor, get_default_graph, name_scope
from daskgraph.metrics.base import collected, metric_variable, rank
from daskgraph.ops import (
    add,
    assign_add,
    cast,
    constant,
    convert_to_tensor,
    divide,
    equal,
    expand_dims,
    logical_and,
    logical_not,
    multiply,
    reduce_any,
    reduce_sum,
    top_k,
)
from daskgraph.ops.math import broadcast_shape

__all__ = ["precision_at_k", "precision_at_top_k", "recall_at_k", "recall_at_top_k"]


def _at_k_name(name: str, k: int | None = None, class_id: int | None = None) -> str:
    """``recall_at_5``, ``recall_at_k`` (no k), ``recall_at_5_class3``, as TensorFlow names."""
    name = f"{name}_at_{k}" if k is not None else f"{name}_at_k"
    return name if class_id is None else f"{name}_class{class_id}"


def _expand_labels(labels: Tensor, predictions: Tensor) -> Tensor:
    """``labels`` with a last axis of one label when they are a rank below the predictions."""
    if rank(labels) is None or rank(predictions) is None:
        raise ValueError("recall/precision at k: the ranks of labels and predictions must be known")
    if rank(predictions) == rank(labels):
        return labels
    if rank(predictions) == rank(labels) + 1:
        return expand_dims(labels, -1, name="expand_labels")
    raise ValueError(
        f"Unexpected labels shape {tuple(labels.shape)} for predictions shape "
        f"{tuple(predictions.shape)}. Predictions rank should be the same rank as labels rank "
        "or labels rank plus one ."
    )


def _first_of_each(ids: Tensor) -> Tensor:
    """Whether each id of the last axis appears there for the first time (a set's members)."""
    n = ids.shape[-1]
    if n is None:
        raise ValueError(f"recall/precision at k: the last dimension of {ids.name!r} must be known")
    same = equal(expand_dims(ids, -1), expand_dims(ids, -2))
    earlier = constant(np.tril(np.ones((n, n), bool), -1))
    return logical_not(reduce_any(logical_and(same, earlier), axis=-1))


def _set_counts(labels: Tensor, predicted: Tensor, class_id: int | None) -> dict[str, Tensor]:
    """Per row: the predicted ids among the labels (``tp``), those not (``fp``), and the labels
    not predicted (``fn``), as booleans to sum over the last axis."""
    if class_id is not None:
        in_labels = reduce_any(equal(labels, class_id), axis=-1, keepdims=True)
        in_predicted = reduce_any(equal(predicted, class_id), axis=-1, keepdims=True)
        return {
            "tp": logical_and(in_predicted, in_labels),
            "fp": logical_and(in_predicted, logical_not(in_labels)),
            "fn": logical_and(in_labels, logical_not(in_predicted)),
        }
    matches = equal(expand_dims(predicted, -1), expand_dims(labels, -2))  # [..., k, labels]
    found = reduce_any(matches, axis=-1)
    hit = reduce_any(matches, axis=-2)
    first_predicted, first_label = _first_of_each(predicted), _first_of_each(labels)
    return {
        "tp": logical_and(first_predicted, found),
        "fp": logical_and(first_predicted, logical_not(found)),
        "fn": logical_and(first_label, logical_not(hit)),
    }


def _streaming_count(
    counts: dict[str, Tensor], key: str, kind: str, k: Any, class_id: Any, weights: Any
) -> tuple[Any, Tensor]:
    """The float64 variable ``<kind>_at_<k>`` summing ``counts[key]`` (times ``weights``, one
    per row) and its update ``<kind>_at_<k>/update``."""
    per_row = reduce_sum(cast(counts[key], dtypes.float64), axis=-1)
    if weights is not None:
        weights = cast(convert_to_tensor(weights), dtypes.float64)
        broadcast_shape(weights.shape, per_row.shape, "weights")
        per_row = multiply(per_row, weights)
    variable = metric_variable([], dtypes.float64, name=_at_k_name(kind, k, class_id))
    with get_default_graph().name_scope(f"{variable.op.name}/"):
        total = reduce_sum(per_row)
        return variable, assign_add(variable, total, name="update")


def _divide_named(x: Any, y: Any, exact_name: str) -> Tensor:
    """``x / y`` (float64 scalars) as an op named ``exact_name`` (TensorFlow names the value
    after the metric's scope itself)."""
    x, y = convert_to_tensor(x), convert_to_tensor(y)
    graph = get_default_graph()
    op = graph.create_op("RealDiv", [x, y], dtype=x.dtype, shape=(), exact_name=exact_name)
    return op.outputs[0]


def _at_top_k(kind: str, other: str, other_key: str):
    def metric(
        labels: Any,
        predictions_idx: Any,
        k: int | None = None,
        class_id: int | None = None,
        weights: Any = None,
        metrics_collections: Any = None,
        updates_collections: Any = None,
        name: str | None = None,
    ) -> tuple[Tensor, Tensor]:
        default = _at_k_name(kind, k, class_id)
        with name_scope(name, default, (predictions_idx, labels, weights)) as scope:
            predicted = cast(predictions_idx, dtypes.int64)
            labels = cast(_expand_labels(convert_to_tensor(labels), predicted), dtypes.int64)
            counts = _set_counts(labels, predicted, class_id)
            tp, tp_update = _streaming_count(counts, "tp", "true_positive", k, class_id, weights)
            wrong, wrong_update = _streaming_count(counts, other_key, other, k, class_id, weights)
            value = _divide_named(tp, add(tp, wrong), scope.rstrip("/"))
            update = divide(tp_update, add(tp_update, wrong_update), name="update")
            return collected(value, update, metrics_collections, updates_collections)

    metric.__name__ = metric.__qualname__ = f"{kind}_at_top_k"
    return metric


recall_at_top_k = _at_top_k("recall", "false_negative", "fn")
recall_at_top_k.__doc__ = """The recall of the top-k predicted class ids ``predictions_idx``
(``[..., k]``, integers) against ``labels`` over every update (see the module's text)."""
precision_at_top_k = _at_top_k("precision", "false_positive", "fp")
precision_at_top_k.__doc__ = """The precision of the top-k predicted class ids
``predictions_idx`` (``[..., k]``, integers) against ``labels`` over every update (see the
module's text)."""


def _at_k(kind: str, at_top_k):
    def metric(
        labels: Any,
        predictions: Any,
        k: int,
        class_id: int | None = None,
        weights: Any = None,
        metrics_collections: Any = None,
        updates_collections: Any = None,
        name: str | None = None,
    ):
        default = _at_k_name(kind, k, class_id)
        with name_scope(name, default, (predictions, labels, weights)) as scope:
            top = top_k(predictions, k).indices
            return at_top_k(
                labels,
                top,
                k,
                class_id,
                weights,
                metrics_collections,
                updates_collections,
                name=scope,
            )

    metric.__name__ = metric.__qualname__ = f"{kind}_at_k"
    metric.__doc__ = (
        f"The {kind} of the ``k`` classes with the largest ``predictions`` (logits or "
        f"probabilities, ``[..., num_classes]``) against ``labels``: :func:`{kind}_at_top_k` "
        "of their indices."
    )
    return metric


recall_at_k = _at_k("recall", recall_at_top_k)
precision_at_k = _at_k("precision", precision_at_top_k)
