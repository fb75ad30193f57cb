"""TensorFlow 1's ``tf.losses``: weighted, reduced losses collected in the graph.

Each loss computes a per-element loss, weights it (``weights`` is a scalar or has the rank
of the loss, each dimension 1 or the loss's) and reduces it as ``reduction`` says
(:class:`Reduction`; by default the weighted sum divided by the number of non-zero weights),
then adds the result to the ``LOSSES`` collection (``loss_collection``), where
:func:`get_total_loss` finds it with the ``REGULARIZATION_LOSSES`` of ``tf.layers``. As in
TensorFlow, the regression losses compute in float32, and the names follow TensorFlow's
(``mean_squared_error/value``).

>>> import daskgraph as dg
>>> with dg.Graph().as_default():
...     loss = mean_squared_error([[1.0, 2.0], [3.0, 4.0]], [[1.0, 1.0], [1.0, 1.0]],
...                               weights=[[1.0], [0.0]])
...     total = get_total_loss()
...     with dg.Session() as sess:
...         float(sess.run(loss)), float(sess.run(total)), loss.op.name
(0.5, 0.5, 'mean_squared_error/value')
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from daskgraph.framework import dtypes
from daskgraph.framework.graph import REGULARIZATION_LOSSES, Tensor, get_default_graph, name_scope
from daskgraph.ops.array import cast, constant, convert_to_tensor
from daskgraph.ops.elementwise import log, log1p, minimum, squared_difference
from daskgraph.ops.fill_ops import ones_like, zeros_like
from daskgraph.ops.logic import equal, greater, greater_equal, where
from daskgraph.ops.math import abs as abs_
from daskgraph.ops.math import add_n, divide, exp, maximum, multiply, reduce_sum, square, subtract
from daskgraph.ops.nn import (
    relu,
    softmax_cross_entropy_with_logits_v2,
    sparse_softmax_cross_entropy_with_logits,
)
from daskgraph.ops.shape_ops import shape, size, squeeze, stop_gradient

__all__ = [
    "Reduction",
    "absolute_difference",
    "add_loss",
    "compute_weighted_loss",
    "cosine_distance",
    "get_losses",
    "get_regularization_loss",
    "get_regularization_losses",
    "get_total_loss",
    "hinge_loss",
    "huber_loss",
    "log_loss",
    "mean_pairwise_squared_error",
    "mean_squared_error",
    "sigmoid_cross_entropy",
    "softmax_cross_entropy",
    "sparse_softmax_cross_entropy",
]

#: ``tf.GraphKeys.LOSSES``: the losses ``tf.losses`` made
LOSSES = "losses"


class Reduction:
    """How a loss reduces its weighted per-element values (``tf.losses.Reduction``)."""

    #: no reduction: the weighted losses themselves
    NONE = "none"
    #: their sum
    SUM = "weighted_sum"
    #: their sum over the number of elements
    SUM_OVER_BATCH_SIZE = "weighted_sum_over_batch_size"
    #: their sum over the sum of the weights
    MEAN = "weighted_mean"
    #: their sum over the number of non-zero weights (the default)
    SUM_BY_NONZERO_WEIGHTS = "weighted_sum_by_nonzero_weights"
    SUM_OVER_NONZERO_WEIGHTS = SUM_BY_NONZERO_WEIGHTS

    @classmethod
    def all(cls) -> tuple[str, ...]:
        """Every reduction's key."""
        return (cls.NONE, cls.SUM, cls.MEAN, cls.SUM_OVER_BATCH_SIZE,
                cls.SUM_OVER_NONZERO_WEIGHTS, cls.SUM_BY_NONZERO_WEIGHTS)  # fmt: skip

    @classmethod
    def validate(cls, key: str) -> None:
        """Raise ``ValueError`` unless ``key`` is a reduction's key.

        >>> Reduction.validate("sum")
        Traceback (most recent call last):
        ...
        ValueError: Invalid Reduction Key sum. Key should be one of ('none', 'weighted_sum', \
'weighted_mean', 'weighted_sum_over_batch_size', 'weighted_sum_by_nonzero_weights', \
'weighted_sum_by_nonzero_weights').
        """
        if key not in cls.all():
            raise ValueError(f"Invalid Reduction Key {key}. Key should be one of {cls.all()}.")


_DEFAULT = Reduction.SUM_BY_NONZERO_WEIGHTS


# -- helpers --------------------------------------------------------------------------------------
@contextmanager
def _scope(scope: str | None, default: str) -> Iterator[str]:
    """TF's ``name_scope(scope, default)``: ``scope`` when given, else ``default`` made
    unique; yields the opened scope (``"name/"``) to re-enter."""
    with name_scope(scope or default) as opened:
        yield opened


def _to(x: Any, dtype: dtypes.DType) -> Tensor:
    """``x`` as a tensor of ``dtype`` (cast only when it is another)."""
    x = convert_to_tensor(x)
    return x if x.dtype == dtype else cast(x, dtype)


def _required(**values: Any) -> None:
    for what, value in values.items():
        if value is None:
            raise ValueError(f"Argument `{what}` must not be None.")


def _check_compatible(a: Tensor, b: Tensor) -> None:
    """Raise unless the static shapes of ``a`` and ``b`` can be equal."""
    if a.shape is None or b.shape is None:
        return
    if len(a.shape) != len(b.shape) or any(
        x is not None and y is not None and x != y for x, y in zip(a.shape, b.shape, strict=True)
    ):
        raise ValueError(f"Shapes {_show(a.shape)} and {_show(b.shape)} are incompatible")


def _show(shape: Any) -> str:
    """A static shape as TensorFlow prints one: ``(3, None)``, ``(3,)``."""
    return str(tuple(shape))


def _check_broadcastable(weights: Tensor, values: Tensor) -> None:
    """TF's ``assert_broadcastable``, on static shapes: ``weights`` is a scalar or has the
    rank of ``values``, each of its dimensions 1 or the same as ``values``'."""
    ws, vs = weights.shape, values.shape
    if ws is None or vs is None or len(ws) == 0:
        return
    if len(ws) != len(vs):
        raise ValueError(
            f"weights can not be broadcast to values. values.rank={len(vs)}. "
            f"weights.rank={len(ws)}. values.shape={_show(vs)}. weights.shape={_show(ws)}."
        )
    for w, v in zip(ws, vs, strict=True):
        if w is not None and v is not None and w not in (1, v):
            raise ValueError(
                f"weights can not be broadcast to values. values.shape={_show(vs)}. "
                f"weights.shape={_show(ws)}."
            )


def _safe_divide(total: Tensor, count: Tensor, name: str = "value") -> Tensor:
    """``total / count``, 0 where ``count`` is 0 (TF's ``div_no_nan``)."""
    positive = greater(count, 0.0)
    return where(positive, divide(total, where(positive, count, ones_like(count))),
                 zeros_like(total), name=name)  # fmt: skip


def _num_elements(losses: Tensor) -> Tensor:
    with name_scope("num_elements"):
        return cast(size(losses), losses.dtype)


def _num_present(losses: Tensor, weights: Any, per_batch: bool = False) -> Tensor:
    """How many elements of ``losses`` have a non-zero weight (per example when
    ``per_batch``)."""
    if isinstance(weights, float) and weights != 0.0 and not per_batch:
        return _num_elements(losses)
    with name_scope("num_present"):
        weights = _to(weights, dtypes.float32)
        present = where(equal(weights, 0.0), zeros_like(weights), ones_like(weights))
        present = multiply(present, ones_like(losses))
        if per_batch:
            axes = list(range(1, len(present.shape)))
            return reduce_sum(present, axis=axes, keepdims=True)
        return reduce_sum(present)


# -- the collections ------------------------------------------------------------------------------
def add_loss(loss: Any, loss_collection: str | None = LOSSES) -> None:
    """Add ``loss`` to the collection ``loss_collection`` (none when it is None)."""
    if loss_collection:
        get_default_graph().add_to_collection(loss_collection, loss)


def _collection(key: str, scope: str | None) -> list[Any]:
    items = get_default_graph().get_collection(key)
    if scope is None:
        return items
    return [i for i in items if re.match(scope, str(getattr(i, "name", "")))]


def get_losses(scope: str | None = None, loss_collection: str = LOSSES) -> list[Tensor]:
    """The losses of ``loss_collection`` whose names match the regular expression ``scope``."""
    return _collection(loss_collection, scope)


def get_regularization_losses(scope: str | None = None) -> list[Tensor]:
    """The ``REGULARIZATION_LOSSES`` whose names match the regular expression ``scope``."""
    return _collection(REGULARIZATION_LOSSES, scope)


def get_regularization_loss(
    scope: str | None = None, name: str = "total_regularization_loss"
) -> Tensor:
    """The sum of the regularization losses (a constant 0.0 when there is none)."""
    losses = get_regularization_losses(scope)
    if losses:
        return add_n(losses, name=name)
    return constant(0.0)


def get_total_loss(
    add_regularization_losses: bool = True, name: str = "total_loss", scope: str | None = None
) -> Tensor:
    """The sum of the ``LOSSES`` (and the regularization losses, unless told not to).

    Raises
    ------
    ValueError
        There is no loss to add.
    """
    losses = get_losses(scope=scope)
    if add_regularization_losses:
        losses += get_regularization_losses(scope=scope)
    if not losses:
        raise ValueError(
            "Inputs must be an iterable of at least one Tensor/IndexedSlices with the same "
            "dtype and shape."
        )
    return add_n(losses, name=name)


# -- weighting and reducing -----------------------------------------------------------------------
def compute_weighted_loss(
    losses: Any,
    weights: Any = 1.0,
    scope: str | None = None,
    loss_collection: str | None = LOSSES,
    reduction: str = _DEFAULT,
) -> Tensor:
    """``losses`` times ``weights``, reduced as ``reduction`` says and added to
    ``loss_collection``; computed in float32 and returned in ``losses``' dtype.

    Examples
    --------
    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     losses = dg.constant([[1.0, 2.0], [3.0, 4.0]])
    ...     weights = dg.constant([[0.0], [2.0]])
    ...     values = [compute_weighted_loss(losses, weights, reduction=r)
    ...               for r in (Reduction.SUM, Reduction.MEAN, Reduction.SUM_OVER_BATCH_SIZE,
    ...                         Reduction.SUM_BY_NONZERO_WEIGHTS)]
    ...     with dg.Session() as sess:
    ...         [float(v) for v in sess.run(values)]
    [14.0, 3.5, 3.5, 7.0]
    """
    Reduction.validate(reduction)
    with _scope(scope, "weighted_loss"):
        losses = convert_to_tensor(losses)
        weights_tensor = convert_to_tensor(weights, name="weights")
        _check_broadcastable(weights_tensor, losses)
        input_dtype = losses.dtype
        losses = _to(losses, dtypes.float32)
        cast_weights = _to(weights_tensor, dtypes.float32)
        weighted = multiply(losses, cast_weights)
        if reduction == Reduction.NONE:
            loss = weighted
        else:
            loss = reduce_sum(weighted)
            if reduction == Reduction.MEAN:
                count = reduce_sum(multiply(ones_like(losses), cast_weights))
                loss = _safe_divide(loss, count)
            elif reduction == Reduction.SUM_BY_NONZERO_WEIGHTS:
                present = weights if isinstance(weights, float) else cast_weights
                loss = _safe_divide(loss, _num_present(losses, present))
            elif reduction == Reduction.SUM_OVER_BATCH_SIZE:
                loss = _safe_divide(loss, _num_elements(losses))
        loss = _to(loss, input_dtype)
        add_loss(loss, loss_collection)
        return loss


def _regression_pair(labels: Any, predictions: Any) -> tuple[Tensor, Tensor]:
    """``labels`` and ``predictions`` as float32 tensors of compatible shapes."""
    predictions = _to(predictions, dtypes.float32)
    labels = _to(labels, dtypes.float32)
    _check_compatible(predictions, labels)
    return labels, predictions


def _elementwise_loss(
    default: str,
    compute: Callable[[Tensor, Tensor], Tensor],
    labels: Any,
    predictions: Any,
    weights: Any,
    scope: str | None,
    loss_collection: str | None,
    reduction: str,
    what: str = "predictions",
) -> Tensor:
    """A loss of each element, reduced: ``compute(labels, predictions)`` of the float32 pair
    (``predictions`` called ``what`` when missing), in the scope ``scope`` or ``default``,
    through :func:`compute_weighted_loss`."""
    _required(**{"labels": labels, what: predictions})
    with _scope(scope, default) as opened:
        labels, predictions = _regression_pair(labels, predictions)
        losses = compute(labels, predictions)
        return compute_weighted_loss(losses, weights, opened, loss_collection, reduction)


# -- regression losses ----------------------------------------------------------------------------
def absolute_difference(
    labels: Any,
    predictions: Any,
    weights: Any = 1.0,
    scope: str | None = None,
    loss_collection: str | None = LOSSES,
    reduction: str = _DEFAULT,
) -> Tensor:
    """The weighted ``|predictions - labels|``, reduced."""
    return _elementwise_loss(
        "absolute_difference",
        lambda y, p: abs_(subtract(p, y)),
        labels,
        predictions,
        weights,
        scope,
        loss_collection,
        reduction,
    )


def mean_squared_error(
    labels: Any,
    predictions: Any,
    weights: Any = 1.0,
    scope: str | None = None,
    loss_collection: str | None = LOSSES,
    reduction: str = _DEFAULT,
) -> Tensor:
    """The weighted ``(predictions - labels) ** 2``, reduced.

    Examples
    --------
    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     mean_squared_error([[1.0, 2.0]], [[1.0, 2.0, 3.0]])
    Traceback (most recent call last):
    ...
    ValueError: Shapes (1, 3) and (1, 2) are incompatible
    """
    return _elementwise_loss(
        "mean_squared_error",
        lambda y, p: squared_difference(p, y),
        labels,
        predictions,
        weights,
        scope,
        loss_collection,
        reduction,
    )


def huber_loss(
    labels: Any,
    predictions: Any,
    weights: Any = 1.0,
    delta: float = 1.0,
    scope: str | None = None,
    loss_collection: str | None = LOSSES,
    reduction: str = _DEFAULT,
) -> Tensor:
    """The weighted Huber loss: ``0.5 * e ** 2`` where ``|e| <= delta``, else
    ``0.5 * delta ** 2 + delta * (|e| - delta)``, with ``e = predictions - labels``."""

    def huber(labels: Tensor, predictions: Tensor) -> Tensor:
        abs_error = abs_(subtract(predictions, labels))
        quadratic = minimum(abs_error, delta)
        linear = subtract(abs_error, quadratic)
        half = constant(0.5, dtype=quadratic.dtype)
        return multiply(half, multiply(quadratic, quadratic)) + multiply(delta, linear)

    return _elementwise_loss(
        "huber_loss", huber, labels, predictions, weights, scope, loss_collection, reduction
    )


def log_loss(
    labels: Any,
    predictions: Any,
    weights: Any = 1.0,
    epsilon: float = 1e-7,
    scope: str | None = None,
    loss_collection: str | None = LOSSES,
    reduction: str = _DEFAULT,
) -> Tensor:
    """The weighted binary cross entropy of probabilities ``predictions``:
    ``-labels * log(p + eps) - (1 - labels) * log(1 - p + eps)``."""

    def cross_entropy(labels: Tensor, predictions: Tensor) -> Tensor:
        return -multiply(labels, log(predictions + epsilon)) - multiply(
            1.0 - labels, log(1.0 - predictions + epsilon)
        )

    return _elementwise_loss(
        "log_loss", cross_entropy, labels, predictions, weights, scope, loss_collection, reduction
    )


def hinge_loss(
    labels: Any,
    logits: Any,
    weights: Any = 1.0,
    scope: str | None = None,
    loss_collection: str | None = LOSSES,
    reduction: str = _DEFAULT,
) -> Tensor:
    """The weighted hinge loss ``max(0, 1 - (2 * labels - 1) * logits)`` of 0/1 ``labels``."""

    def hinge(labels: Tensor, logits: Tensor) -> Tensor:
        all_ones = ones_like(labels)
        signs = subtract(2.0 * labels, all_ones)
        return relu(subtract(all_ones, multiply(signs, logits)))

    return _elementwise_loss(
        "hinge_loss", hinge, labels, logits, weights, scope, loss_collection, reduction, "logits"
    )


def cosine_distance(
    labels: Any,
    predictions: Any,
    axis: int | None = None,
    weights: Any = 1.0,
    scope: str | None = None,
    loss_collection: str | None = LOSSES,
    reduction: str = _DEFAULT,
    dim: int | None = None,
) -> Tensor:
    """The weighted ``1 - sum(predictions * labels, axis)`` of unit-normalised vectors (the
    losses keep ``axis`` with size 1); ``dim`` is ``axis``'s old name."""
    if axis is not None and dim is not None:
        raise ValueError("Cannot specify both 'axis' and 'dim'")
    axis = dim if axis is None else axis
    if axis is None:
        raise ValueError("You must specify argument `axis`.")

    def distance(labels: Tensor, predictions: Tensor) -> Tensor:
        products = multiply(predictions, labels)
        return 1.0 - reduce_sum(products, axis=(axis,), keepdims=True)

    return _elementwise_loss(
        "cosine_distance_loss",
        distance,
        labels,
        predictions,
        weights,
        scope,
        loss_collection,
        reduction,
    )


def mean_pairwise_squared_error(
    labels: Any,
    predictions: Any,
    weights: Any = 1.0,
    scope: str | None = None,
    loss_collection: str | None = LOSSES,
) -> Tensor:
    """The weighted mean, over each example's pairs of elements, of the squared difference
    between their differences in ``predictions`` and in ``labels``, summed over examples."""
    _required(labels=labels, predictions=predictions)
    with _scope(scope, "mean_pairwise_squared_error"):
        weights = _to(weights, dtypes.float32)
        labels, predictions = _regression_pair(labels, predictions)
        diffs = subtract(predictions, labels)
        if diffs.shape is None:
            raise ValueError("mean_pairwise_squared_error: the rank of the inputs must be known")
        _check_broadcastable(weights, diffs)
        axes = list(range(1, len(diffs.shape)))
        squares = reduce_sum(square(diffs), axis=axes, keepdims=True)
        present = _num_present(diffs, weights, per_batch=True)
        term1 = 2.0 * _safe_divide(squares, maximum(present - 1.0, 0.0))
        sums = reduce_sum(diffs, axis=axes, keepdims=True)
        term2 = 2.0 * _safe_divide(square(sums), maximum(multiply(present, present - 1.0), 0.0))
        loss = reduce_sum(multiply(term1 - term2, weights))
        mean_loss = where(greater(reduce_sum(present), 0.0), loss, zeros_like(loss), name="value")
        add_loss(mean_loss, loss_collection)
        return mean_loss


# -- classification losses ------------------------------------------------------------------------
def sigmoid_cross_entropy(
    multi_class_labels: Any,
    logits: Any,
    weights: Any = 1.0,
    label_smoothing: float = 0,
    scope: str | None = None,
    loss_collection: str | None = LOSSES,
    reduction: str = _DEFAULT,
) -> Tensor:
    """The weighted sigmoid cross entropy of ``logits`` against 0/1 (or probability)
    labels, each smoothed towards 1/2 by ``label_smoothing``; computed without overflow."""
    _required(multi_class_labels=multi_class_labels, logits=logits)
    with _scope(scope, "sigmoid_cross_entropy_loss") as opened:
        logits = convert_to_tensor(logits)
        labels = _to(multi_class_labels, logits.dtype)
        _check_compatible(logits, labels)
        if label_smoothing > 0:
            labels = labels * (1.0 - label_smoothing) + 0.5 * label_smoothing
        with name_scope("xentropy"):
            zeros = zeros_like(logits)
            positive = greater_equal(logits, zeros)
            relu_logits = where(positive, logits, zeros)
            neg_abs_logits = where(positive, -logits, logits)
            losses = relu_logits - logits * labels + log1p(exp(neg_abs_logits))
        return compute_weighted_loss(losses, weights, opened, loss_collection, reduction)


def softmax_cross_entropy(
    onehot_labels: Any,
    logits: Any,
    weights: Any = 1.0,
    label_smoothing: float = 0,
    scope: str | None = None,
    loss_collection: str | None = LOSSES,
    reduction: str = _DEFAULT,
) -> Tensor:
    """The weighted softmax cross entropy of ``logits`` (classes on the last axis) against
    one-hot labels, smoothed towards uniform by ``label_smoothing``; one loss per example.

    Examples
    --------
    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     loss = softmax_cross_entropy([[0.0, 1.0], [1.0, 0.0]], [[0.0, 0.0], [3.0, 1.0]],
    ...                                  weights=[1.0, 3.0])
    ...     with dg.Session() as sess:
    ...         round(float(sess.run(loss)), 4), loss.op.name
    (0.537, 'softmax_cross_entropy_loss/value')
    """
    _required(onehot_labels=onehot_labels, logits=logits)
    with _scope(scope, "softmax_cross_entropy_loss") as opened:
        logits = convert_to_tensor(logits)
        labels = _to(onehot_labels, logits.dtype)
        _check_compatible(logits, labels)
        if label_smoothing > 0:
            classes = _to(shape(labels)[-1], logits.dtype)
            labels = labels * (1.0 - label_smoothing) + label_smoothing / classes
        labels = stop_gradient(labels, name="labels_stop_gradient")
        losses = softmax_cross_entropy_with_logits_v2(labels=labels, logits=logits,
                                                      name="xentropy")  # fmt: skip
        return compute_weighted_loss(losses, weights, opened, loss_collection, reduction)


def sparse_softmax_cross_entropy(
    labels: Any,
    logits: Any,
    weights: Any = 1.0,
    scope: str | None = None,
    loss_collection: str | None = LOSSES,
    reduction: str = _DEFAULT,
) -> Tensor:
    """The weighted softmax cross entropy of ``logits`` against integer class ``labels``
    (of ``logits``' shape without its last axis, or with a last axis of size 1)."""
    _required(labels=labels, logits=logits)
    with _scope(scope, "sparse_softmax_cross_entropy_loss") as opened:
        labels, logits, weights = _squeeze_labels(labels, logits, weights)
        losses = sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits,
                                                          name="xentropy")  # fmt: skip
        return compute_weighted_loss(losses, weights, opened, loss_collection, reduction)


def _squeeze_labels(labels: Any, logits: Any, weights: Any) -> tuple[Tensor, Tensor, Tensor]:
    """TF's ``_remove_squeezable_dimensions`` on static ranks: labels of ``logits``' rank
    lose their last axis, and so do weights of one more rank than the labels."""
    labels, logits = convert_to_tensor(labels), convert_to_tensor(logits)
    weights = convert_to_tensor(weights)
    if labels.shape is not None and logits.shape is not None:
        if len(logits.shape) - len(labels.shape) == 0:
            labels = squeeze(labels, [-1])
        elif len(logits.shape) - len(labels.shape) == 2:
            logits = squeeze(logits, [-1])
    if labels.shape is not None and weights.shape is not None:
        if len(weights.shape) - len(labels.shape) == 1:
            weights = squeeze(weights, [-1])
    return labels, logits, weights


def __getattr__(name: str) -> object:
    """A name tf.losses does not have: the AttributeError pointing to docs/compat.md."""
    from daskgraph.errors import missing_name

    raise missing_name("tf.losses", name, globals())
