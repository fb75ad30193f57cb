"""The rest of ``tf.nn``'s losses and layers TF1 programs use, as compositions of ops:
``sigmoid_cross_entropy_with_logits``, ``weighted_cross_entropy_with_logits``,
``log_poisson_loss``, ``zero_fraction``, ``xw_plus_b``, ``relu_layer`` and
``conv2d_transpose``.

Each is written as TensorFlow 1 writes it in Python (the same formulas, so the same values and
the same gradients, kinks included): the sigmoid cross entropy is
``max(x, 0) - x * z + log(1 + exp(-|x|))``, safe for logits of any size.
``conv2d_transpose`` is :func:`~daskgraph.ops.conv.conv2d_backprop_input` (differentiable, as
in TensorFlow).

>>> import daskgraph as dg
>>> with dg.Graph().as_default():
...     loss = sigmoid_cross_entropy_with_logits(labels=[1.0, 0.0], logits=[1000.0, 1000.0])
...     with dg.Session() as sess:
...         sess.run(loss).tolist()
[0.0, 1000.0]
"""

from __future__ import annotations

import math as _math
from collections.abc import Sequence
from typing import Any

from daskgraph.framework import dtypes
from daskgraph.framework.graph import Tensor, name_scope
from daskgraph.ops.array import cast, convert_to_tensor
from daskgraph.ops.conv import conv2d_backprop_input
from daskgraph.ops.elementwise import log, log1p
from daskgraph.ops.fill_ops import zeros_like
from daskgraph.ops.logic import equal, greater_equal, less_equal, logical_and, where
from daskgraph.ops.math import abs, add, exp, matmul, negative, reduce_mean
from daskgraph.ops.nn import bias_add, relu

__all__ = [
    "conv2d_transpose",
    "log_poisson_loss",
    "relu_layer",
    "sigmoid_cross_entropy_with_logits",
    "weighted_cross_entropy_with_logits",
    "xw_plus_b",
    "zero_fraction",
]


# -- helpers --------------------------------------------------------------------------------------
def _same_shape(labels: Tensor, logits: Tensor, where_: str) -> None:
    """TensorFlow's check: ``logits and labels must have the same shape``."""
    a, b = logits.shape, labels.shape
    if a is None or b is None:
        return
    if len(a) != len(b) or any(x != y for x, y in zip(a, b, strict=True) if None not in (x, y)):
        raise ValueError(
            f"{where_}: logits and labels must have the same shape ({a} vs {b}); "
            f"logits {logits.name!r}, labels {labels.name!r}"
        )


def _pair(labels: Any, logits: Any, where_: str, labels_word: str = "labels") -> tuple:
    """``(labels, logits)`` as tensors of one floating dtype and one shape."""
    if labels is None or logits is None:
        raise ValueError(f"{where_}: both {labels_word}= and logits= must be given")
    logits = convert_to_tensor(logits)
    if not logits.dtype.is_floating:
        raise TypeError(
            f"{where_}: logits must be floating-point; {logits.name!r} is {logits.dtype.name}"
        )
    labels = convert_to_tensor(labels, dtype=logits.dtype)
    _same_shape(labels, logits, where_)
    return labels, logits


# -- losses ---------------------------------------------------------------------------------------
def sigmoid_cross_entropy_with_logits(
    labels: Any = None, logits: Any = None, name: str | None = None
) -> Tensor:
    """Per-element logistic loss ``-z * log(sigmoid(x)) - (1 - z) * log(1 - sigmoid(x))`` of
    ``labels`` ``z`` and ``logits`` ``x`` (one shape), computed as TensorFlow does:
    ``max(x, 0) - x * z + log(1 + exp(-|x|))``. Gradients flow into both.

    Examples
    --------
    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     sigmoid_cross_entropy_with_logits(labels=[1.0, 0.0], logits=[[1.0, 2.0]])
    Traceback (most recent call last):
    ...
    ValueError: sigmoid_cross_entropy_with_logits: logits and labels must have the same shape \
((1, 2) vs (2,)); logits 'logistic_loss/Const:0', labels 'logistic_loss/Const_1:0'
    """
    where_ = "sigmoid_cross_entropy_with_logits"
    with name_scope(name or "logistic_loss"):
        labels, logits = _pair(labels, logits, where_)
        zeros = zeros_like(logits)
        positive = greater_equal(logits, zeros)
        relu_logits = where(positive, logits, zeros)
        neg_abs_logits = where(positive, negative(logits), logits)
        return add(relu_logits - logits * labels, log1p(exp(neg_abs_logits)))


def weighted_cross_entropy_with_logits(
    labels: Any = None,
    logits: Any = None,
    pos_weight: Any = None,
    name: str | None = None,
    targets: Any = None,
) -> Tensor:
    """As :func:`sigmoid_cross_entropy_with_logits`, with the positive term weighted by
    ``pos_weight``: ``(1 - z) * x + (1 + (pos_weight - 1) * z) * log(1 + exp(-x))``, computed
    without overflow. ``targets`` is TF1's old name of ``labels``.

    Examples
    --------
    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     loss = weighted_cross_entropy_with_logits(
    ...         targets=[1.0, 0.0], logits=dg.constant([0.0, 0.0], dg.float64), pos_weight=3.0)
    ...     with dg.Session() as sess:
    ...         sess.run(loss).round(4).tolist()
    [2.0794, 0.6931]
    """
    where_ = "weighted_cross_entropy_with_logits"
    if labels is not None and targets is not None:
        raise ValueError(f"{where_}: give labels or targets (its old name), not both")
    labels = targets if labels is None else labels
    if pos_weight is None:
        raise ValueError(f"{where_}: pos_weight must be given")
    with name_scope(name or "logistic_loss"):
        labels, logits = _pair(labels, logits, where_)
        log_weight = 1.0 + (convert_to_tensor(pos_weight, dtype=logits.dtype) - 1.0) * labels
        softplus_neg = log1p(exp(negative(abs(logits)))) + relu(negative(logits))
        return add((1.0 - labels) * logits, log_weight * softplus_neg)


def log_poisson_loss(
    targets: Any, log_input: Any, compute_full_loss: bool = False, name: str | None = None
) -> Tensor:
    """The negative log-likelihood of ``targets`` under a Poisson distribution of log-rate
    ``log_input``, without its constant term: ``exp(log_input) - log_input * targets``; with
    ``compute_full_loss``, plus Stirling's approximation of ``log(targets!)`` where
    ``targets > 1``.

    Examples
    --------
    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     log_rate = dg.constant([0.0, 1.0], dg.float64)
    ...     loss = log_poisson_loss([0.0, 3.0], log_rate, compute_full_loss=True)
    ...     with dg.Session() as sess:
    ...         sess.run(loss).round(4).tolist()
    [1.0, 1.4824]
    """
    with name_scope(name or "log_poisson_loss"):
        log_input = convert_to_tensor(log_input)
        targets = convert_to_tensor(targets, dtype=log_input.dtype)
        _same_shape(targets, log_input, "log_poisson_loss")
        result = exp(log_input) - log_input * targets
        if not compute_full_loss:
            return result
        stirling = targets * log(targets) - targets + 0.5 * log(2.0 * _math.pi * targets)
        small = logical_and(greater_equal(targets, 0.0), less_equal(targets, 1.0))
        return result + where(small, zeros_like(targets), stirling)


# -- layers and statistics ------------------------------------------------------------------------
def zero_fraction(value: Any, name: str | None = None) -> Tensor:
    """The fraction of ``value``'s elements that are zero, a float32 scalar (for summaries of
    activations' sparsity).

    Examples
    --------
    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     with dg.Session() as sess:
    ...         float(sess.run(zero_fraction([[0, 1], [0, 0]])))
    0.75
    """
    with name_scope(name or "zero_fraction"):
        value = convert_to_tensor(value)
        return reduce_mean(cast(equal(value, zeros_like(value)), dtypes.float32))


def xw_plus_b(x: Any, weights: Any, biases: Any, name: str | None = None) -> Tensor:
    """``matmul(x, weights) + biases`` (the biases a vector along the last axis).

    Examples
    --------
    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     y = xw_plus_b([[1.0, 2.0]], [[1.0], [1.0]], [0.5])
    ...     with dg.Session() as sess:
    ...         sess.run(y).tolist()
    [[3.5]]
    """
    with name_scope(name or "xw_plus_b"):
        return bias_add(matmul(x, weights), biases)


def relu_layer(x: Any, weights: Any, biases: Any, name: str | None = None) -> Tensor:
    """``relu(matmul(x, weights) + biases)``."""
    with name_scope(name or "relu_layer"):
        return relu(bias_add(matmul(x, weights), biases))


# -- transposed convolution -----------------------------------------------------------------------
def conv2d_transpose(
    value: Any = None,
    filter: Any = None,
    output_shape: Any = None,
    strides: Sequence[int] | None = None,
    padding: str = "SAME",
    data_format: str = "NHWC",
    name: str | None = None,
    input: Any = None,
    filters: Any = None,
    dilations: Sequence[int] | None = None,
) -> Tensor:
    """The transpose (adjoint) of :func:`~daskgraph.ops.conv.conv2d`, of shape
    ``output_shape``: ``conv2d_backprop_input(output_shape, filter, value, ...)``. The filter
    is ``[height, width, output_channels, in_channels]``, ``value`` ``NHWC``.

    Examples
    --------
    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     x = dg.constant(1.0, shape=[1, 2, 2, 1])
    ...     y = conv2d_transpose(x, dg.constant(1.0, shape=[2, 2, 3, 1]), [1, 4, 4, 3],
    ...                          [1, 2, 2, 1], "SAME")
    ...     with dg.Session() as sess:
    ...         y.shape, float(sess.run(y).sum())
    ((1, 4, 4, 3), 48.0)
    """
    value = input if value is None else value
    filter = filters if filter is None else filter
    if value is None or filter is None or output_shape is None or strides is None:
        raise ValueError("conv2d_transpose: value, filter, output_shape and strides must be given")
    return conv2d_backprop_input(
        output_shape,
        filter,
        value,
        strides,
        padding,
        data_format=data_format,
        dilations=dilations,
        name=name or "conv2d_transpose",
    )
