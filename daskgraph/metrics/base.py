"""What TensorFlow 1's streaming metrics share: their variables, their collections, and TF's
rules for the shapes of labels, predictions and weights (``metrics_impl.py``'s helpers).

A metric's variables are LOCAL (``LOCAL_VARIABLES`` and ``METRIC_VARIABLES``), zero when
initialized, not trainable, and made outside the control dependencies in force
(:func:`metric_variable`). Labels and predictions whose ranks differ by one lose the extra last
axis, and so does ``weights`` one rank above the predictions; ``weights`` one rank below gains
one (:func:`remove_squeezable_dimensions`, on static ranks); weights must be a scalar or
broadcastable to the values with their rank (:func:`broadcast_weights`).

>>> import daskgraph as dg
>>> with dg.Graph().as_default():
...     p, y, w = remove_squeezable_dimensions(dg.zeros([4, 1]), dg.zeros([4]), dg.ones([4, 1]))
>>> p.shape, y.shape, w.shape
((4,), (4,), (4,))
"""

from __future__ import annotations

from typing import Any

from daskgraph.framework.graph import Tensor, get_default_graph
from daskgraph.ops import (
    LOCAL_VARIABLES,
    convert_to_tensor,
    expand_dims,
    multiply,
    ones_like,
    squeeze,
)
from daskgraph.ops.initializers import zeros_initializer
from daskgraph.ops.variable_scope import new_variable

__all__ = [
    "METRIC_VARIABLES",
    "broadcast_weights",
    "check_compatible",
    "collect",
    "collected",
    "metric_variable",
    "rank",
    "remove_squeezable_dimensions",
]

#: TensorFlow 1's collection of the metrics' variables (``tf.GraphKeys.METRIC_VARIABLES``)
METRIC_VARIABLES = "metric_variables"


def metric_variable(shape: Any, dtype: Any, validate_shape: bool = True, name: str | None = None):
    """A variable of zeros in ``LOCAL_VARIABLES`` and ``METRIC_VARIABLES``, not trainable,
    named ``name`` under the current name scope, made outside the control dependencies in
    force (TensorFlow's ``metric_variable``).

    >>> import daskgraph as dg
    >>> with dg.Graph().as_default() as g, dg.name_scope("m"):
    ...     v = metric_variable([2], dg.float32, name="total")
    >>> v.name, g.get_collection(METRIC_VARIABLES) == g.get_collection(LOCAL_VARIABLES) == [v]
    ('m/total:0', True)
    >>> v.trainable, g.get_collection("trainable_variables")
    (False, [])
    """
    scope = get_default_graph().get_name_scope()
    full = f"{scope}/{name or 'Variable'}" if scope else name or "Variable"
    return new_variable(
        full,
        list(shape),
        dtype,
        initializer=zeros_initializer(),
        trainable=False,
        collections=[LOCAL_VARIABLES, METRIC_VARIABLES],
        validate_shape=validate_shape,
    )


def collect(collections: Any, value: Any) -> None:
    """Add ``value`` to each of ``collections`` (a name or a list of names; None: none)."""
    if not collections:
        return
    graph = get_default_graph()
    for key in [collections] if isinstance(collections, str) else dict.fromkeys(collections):
        graph.add_to_collection(key, value)


def collected(
    value: Tensor, update_op: Tensor, metrics_collections: Any, updates_collections: Any
) -> tuple[Tensor, Tensor]:
    """A metric's ``(value, update_op)``, after adding ``value`` to ``metrics_collections``
    and ``update_op`` to ``updates_collections`` (see :func:`collect`)."""
    collect(metrics_collections, value)
    collect(updates_collections, update_op)
    return value, update_op


def rank(x: Tensor) -> int | None:
    """The static rank of ``x`` (None when unknown)."""
    return None if x.shape is None else len(x.shape)


def _squeeze_last(x: Tensor) -> Tensor:
    return squeeze(x, [-1]) if x.shape[-1] in (1, None) else x


def remove_squeezable_dimensions(predictions: Any, labels: Any, weights: Any):
    """TF's ``_remove_squeezable_dimensions``: of ``labels`` and ``predictions``, the one of
    rank one more loses its last axis (of size 1); ``weights`` of one more rank than the
    predictions loses its last axis, of one fewer gains one. TensorFlow decides that at run
    time where a rank is unknown; here the ranks must be known when the graph is built
    (ValueError)."""
    predictions = convert_to_tensor(predictions)
    if labels is not None:
        labels = convert_to_tensor(labels)
        _known_ranks(predictions, labels)
        diff = rank(labels) - rank(predictions)
        if diff == 1:
            labels = _squeeze_last(labels)
        elif diff == -1:
            predictions = _squeeze_last(predictions)
        check_compatible(predictions, labels)
    if weights is None:
        return predictions, labels, None
    weights = convert_to_tensor(weights)
    if rank(weights) == 0:
        return predictions, labels, weights
    _known_ranks(predictions, weights)
    if rank(weights) - rank(predictions) == 1:
        weights = squeeze(weights, [-1])
    elif rank(predictions) - rank(weights) == 1:
        weights = expand_dims(weights, -1)
    return predictions, labels, weights


def _known_ranks(*tensors: Tensor) -> None:
    for t in tensors:
        if rank(t) is None:
            raise ValueError(
                f"The rank of {t.name!r} must be known when the graph is built (a metric "
                "matches the ranks of its labels, predictions and weights)"
            )


def check_compatible(a: Tensor, b: Tensor) -> None:
    """TF's ``assert_is_compatible_with`` on two static shapes (ValueError)."""
    if a.shape is None or b.shape is None:
        return
    if len(a.shape) != len(b.shape) or any(
        x is not None and y is not None and x != y for x, y in zip(a.shape, b.shape, strict=True)
    ):
        raise ValueError(f"Shapes {tuple(a.shape)} and {tuple(b.shape)} are incompatible")


def broadcast_weights(weights: Tensor, values: Tensor) -> Tensor:
    """TF's ``broadcast_weights``: ``weights`` as ``values``' shape, after checking on static
    shapes that it is a scalar or has the rank of ``values``, each dimension 1 or equal."""
    ws, vs = weights.shape, values.shape
    if ws is not None and vs is not None and len(ws) > 0:
        fits = len(ws) == len(vs) and all(
            w is None or v is None or w in (1, v) for w, v in zip(ws, vs, strict=True)
        )
        if not fits:
            raise ValueError(
                f"weights can not be broadcast to values. values.rank={len(vs)}. "
                f"weights.rank={len(ws)}. values.shape={tuple(vs)}. weights.shape={tuple(ws)}."
            )
        if ws == vs and None not in ws:
            return weights
    return multiply(weights, ones_like(values))
