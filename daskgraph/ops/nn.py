"""Neural-network ops: activations, softmax, cross-entropy losses, ``bias_add``, ``l2_loss`` and
``dropout``.

They are TensorFlow 1's ``tf.nn`` ops with its op types and signatures (the namespace
:mod:`daskgraph.ops.nn_namespace` gathers them with the convolutions), each one kernel over the
array API.
Softmax and the cross entropies subtract the maximum logit first, so logits of 1000 are as
safe as logits of 1. Each op is registered with its gradient; the builders whose names end in
``_grad`` make the ops those gradients use, as TensorFlow's ``ReluGrad`` or ``BiasAddGrad``.

>>> import daskgraph as dg
>>> with dg.Graph().as_default():
...     logits = dg.constant([[1000.0, 0.0], [0.0, 0.0]], dg.float64)
...     loss = softmax_cross_entropy_with_logits(labels=[[0.0, 1.0], [1.0, 0.0]], logits=logits)
...     with dg.Session() as sess:
...         sess.run(loss).round(4).tolist()
[1000.0, 0.6931]
"""

from __future__ import annotations

from typing import Any

from daskgraph.framework import dtypes
from daskgraph.framework.gradient_registry import register_gradient
from daskgraph.framework.graph import Operation, Shape, Tensor, name_scope, new_tensor
from daskgraph.framework.op_registry import register
from daskgraph.kernels.nn import (
    _bias_add,
    _bias_add_grad,
    _channels_axis,
    _l2_loss,
    _log_softmax,
    _relu,
    _relu6,
    _relu6_grad,
    _relu_grad,
    _softmax,
    _sparse_xent,
    _sparse_xent_grad,
    _xent,
    _xent_grad,
)
from daskgraph.ops import shape_ops
from daskgraph.ops.array import cast, convert_to_tensor
from daskgraph.ops.logic import greater_equal
from daskgraph.ops.math import _as_pair, divide, exp, multiply, reduce_sum
from daskgraph.ops.random import random_uniform

__all__ = [
    "bias_add",
    "dropout",
    "l2_loss",
    "log_softmax",
    "relu",
    "relu6",
    "softmax",
    "softmax_cross_entropy_with_logits",
    "softmax_cross_entropy_with_logits_v2",
    "sparse_softmax_cross_entropy_with_logits",
]

_FLOAT = dtypes.FLOATING
_NUM = dtypes.NUMERIC
_INDEX = frozenset({dtypes.int32, dtypes.int64})


register("Relu", _relu, cpu=_NUM, gpu=_NUM)
register("Relu6", _relu6, cpu=_NUM, gpu=_NUM)
register("ReluGrad", _relu_grad, cpu=_NUM, gpu=_NUM)
register("Relu6Grad", _relu6_grad, cpu=_NUM, gpu=_NUM)
register("Softmax", _softmax, cpu=_FLOAT, gpu=_FLOAT)
register("LogSoftmax", _log_softmax, cpu=_FLOAT, gpu=_FLOAT)
register("SoftmaxCrossEntropyWithLogits", _xent, cpu=_FLOAT, gpu=_FLOAT)
register("SoftmaxCrossEntropyWithLogitsGrad", _xent_grad, cpu=_FLOAT, gpu=_FLOAT)
register(
    "SparseSoftmaxCrossEntropyWithLogits", _sparse_xent, cpu=_FLOAT | _INDEX, gpu=_FLOAT | _INDEX
)
register(
    "SparseSoftmaxCrossEntropyWithLogitsGrad",
    _sparse_xent_grad,
    cpu=_FLOAT | _INDEX,
    gpu=_FLOAT | _INDEX,
)
register("BiasAdd", _bias_add, cpu=_NUM, gpu=_NUM)
register("BiasAddGrad", _bias_add_grad, cpu=_NUM, gpu=_NUM)
register("L2Loss", _l2_loss, cpu=_FLOAT, gpu=_FLOAT)


# -- helpers --------------------------------------------------------------------------------------


def _floats(x: Any, where: str, what: str = "x") -> Tensor:
    x = convert_to_tensor(x)
    if not x.dtype.is_floating:
        raise TypeError(
            f"{where}: {what} must be a floating-point tensor; {x.name!r} is {x.dtype.name}"
        )
    return x


def _axis(axis: Any, dim: Any, x: Tensor, where: str, default: int = -1) -> int:
    """``axis`` (or its old name ``dim``), checked against ``x``'s rank, made >= 0 when the
    rank is known."""
    if axis is not None and dim is not None and axis != dim:
        raise ValueError(f"{where}: cannot specify both 'axis' and 'dim'")
    axis = default if axis is None and dim is None else axis if axis is not None else dim
    try:
        axis = int(axis)
    except (TypeError, ValueError):
        raise TypeError(f"{where}: axis must be an int; got {axis!r}") from None
    if x.shape is None:
        return axis
    rank = len(x.shape)
    if not -rank <= axis < rank:
        raise ValueError(f"{where}: axis {axis} is out of range for {x.name!r} of rank {rank}")
    return axis % rank


def _without(shape: Shape | None, axis: int) -> Shape | None:
    return None if shape is None else tuple(d for i, d in enumerate(shape) if i != axis)


# -- activations ----------------------------------------------------------------------------------
def relu(features: Any, name: str | None = None) -> Tensor:
    """``max(features, 0)`` elementwise; its gradient is 0 where ``features <= 0``.

    Examples
    --------
    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     r = relu(dg.constant([-2.0, 0.0, 3.0]))
    ...     with dg.Session() as sess:
    ...         sess.run(r).tolist()
    [0.0, 0.0, 3.0]
    """
    x = convert_to_tensor(features)
    return new_tensor("Relu", [x], x.dtype, x.shape, name)


def relu6(features: Any, name: str | None = None) -> Tensor:
    """``min(max(features, 0), 6)`` elementwise."""
    x = convert_to_tensor(features)
    return new_tensor("Relu6", [x], x.dtype, x.shape, name)


def relu_grad(gradients: Tensor, features: Tensor, name: str | None = None) -> Tensor:
    """``gradients`` where ``features > 0``, else 0: the backward pass of :func:`relu`."""
    return new_tensor("ReluGrad", [gradients, features], gradients.dtype, gradients.shape, name)


def relu6_grad(gradients: Tensor, features: Tensor, name: str | None = None) -> Tensor:
    """``gradients`` where ``0 < features < 6``, else 0: the backward pass of :func:`relu6`."""
    return new_tensor("Relu6Grad", [gradients, features], gradients.dtype, gradients.shape, name)


def softmax(
    logits: Any, axis: int | None = None, name: str | None = None, dim: int | None = None
) -> Tensor:
    """``exp(logits) / sum(exp(logits))`` along ``axis`` (the last by default).

    Examples
    --------
    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     p = softmax(dg.constant([[1000.0, 1000.0], [0.0, -1000.0]]))
    ...     with dg.Session() as sess:
    ...         sess.run(p).tolist()
    [[0.5, 0.5], [1.0, 0.0]]
    """
    x = _floats(logits, "softmax", "logits")
    return new_tensor("Softmax", [x], x.dtype, x.shape, name, axis=_axis(axis, dim, x, "softmax"))


def log_softmax(
    logits: Any, axis: int | None = None, name: str | None = None, dim: int | None = None
) -> Tensor:
    """``logits - log(sum(exp(logits)))`` along ``axis`` (the last by default), computed
    without overflow."""
    x = _floats(logits, "log_softmax", "logits")
    axis = _axis(axis, dim, x, "log_softmax")
    return new_tensor("LogSoftmax", [x], x.dtype, x.shape, name, axis=axis)


# -- losses ---------------------------------------------------------------------------------------
def softmax_cross_entropy_with_logits_v2(
    labels: Any,
    logits: Any,
    axis: int | None = None,
    name: str | None = None,
    dim: int | None = None,
) -> Tensor:
    """Per-example cross entropy ``-sum(labels * log_softmax(logits), axis)`` between a
    probability distribution ``labels`` and ``logits`` of the same shape (classes along
    ``axis``, the last by default). The gradient flows into both ``logits`` and ``labels``.
    """
    where = "softmax_cross_entropy_with_logits_v2"
    return _cross_entropy(labels, logits, axis, dim, name, True, where)


def softmax_cross_entropy_with_logits(
    labels: Any = None,
    logits: Any = None,
    dim: int = -1,
    name: str | None = None,
    axis: int | None = None,
) -> Tensor:
    """As :func:`softmax_cross_entropy_with_logits_v2`, but, as in TensorFlow 1, no gradient
    flows into ``labels`` (they are data).

    Examples
    --------
    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     softmax_cross_entropy_with_logits(labels=[[1.0, 0.0]], logits=[[1.0, 2.0, 3.0]])
    Traceback (most recent call last):
    ...
    ValueError: softmax_cross_entropy_with_logits: labels and logits must have the same \
shape; 'Const_1:0' is (1, 2) and 'Const:0' is (1, 3)
    """
    dim = None if axis is not None and dim == -1 else dim
    where = "softmax_cross_entropy_with_logits"
    return _cross_entropy(labels, logits, axis, dim, name, False, where)


def _cross_entropy(
    labels: Any,
    logits: Any,
    axis: Any,
    dim: Any,
    name: str | None,
    labels_gradient: bool,
    where: str,
) -> Tensor:
    if labels is None or logits is None:
        raise ValueError(f"{where}: both labels= and logits= must be given")
    logits, labels = _labels_as_logits(logits, labels, where)
    if (
        labels.shape is not None
        and logits.shape is not None
        and (
            len(labels.shape) != len(logits.shape)
            or any(
                a != b
                for a, b in zip(labels.shape, logits.shape, strict=True)
                if None not in (a, b)
            )
        )
    ):
        raise ValueError(
            f"{where}: labels and logits must have the same shape; {labels.name!r} is "
            f"{labels.shape} and {logits.name!r} is {logits.shape}"
        )
    axis = _axis(axis, dim, logits, where)
    return new_tensor(
        "SoftmaxCrossEntropyWithLogits",
        [logits, labels],
        logits.dtype,
        _without(logits.shape, axis),
        name,
        axis=axis,
        labels_gradient=labels_gradient,
    )


def _labels_as_logits(logits: Any, labels: Any, where: str) -> tuple[Tensor, Tensor]:
    """``logits`` (floating point) and ``labels`` cast to their dtype where they are of
    another numeric dtype (integer one-hot labels), as TensorFlow's cross entropy does."""
    logits = _floats(logits if _is_tensor(logits) else convert_to_tensor(logits), where, "logits")
    labels = labels if _is_tensor(labels) else convert_to_tensor(labels, dtype=logits.dtype)
    labels = convert_to_tensor(labels)
    if labels.dtype != logits.dtype:
        if not (labels.dtype.is_floating or labels.dtype.is_integer or labels.dtype.is_bool):
            raise TypeError(
                f"{where}: labels must be numeric (cast to the logits' {logits.dtype.name}); "
                f"{labels.name!r} is {labels.dtype.name}"
            )
        labels = cast(labels, logits.dtype)
    return logits, labels


def _is_tensor(value: Any) -> bool:
    return isinstance(value, Tensor) or hasattr(value, "_as_tensor")


def softmax_cross_entropy_grad(
    grad: Tensor, logits: Tensor, labels: Tensor, axis: int, wrt: str, name: str | None = None
) -> Tensor:
    """The gradient of the cross entropy (of per-example gradient ``grad``) with respect to
    ``logits`` (``wrt="logits"``: ``(softmax(logits) - labels) * grad``) or ``labels``
    (``-log_softmax(logits) * grad``)."""
    return new_tensor(
        "SoftmaxCrossEntropyWithLogitsGrad",
        [grad, logits, labels],
        logits.dtype,
        logits.shape,
        name,
        axis=axis,
        wrt=wrt,
    )


def sparse_softmax_cross_entropy_with_logits(
    labels: Any = None, logits: Any = None, name: str | None = None
) -> Tensor:
    """Per-example cross entropy between integer class ``labels`` (shape ``logits.shape[:-1]``,
    values in ``[0, classes)``) and ``logits`` (classes on the last axis). No gradient flows
    into ``labels``; a label out of range fails the run with ``InvalidArgumentError``.

    Examples
    --------
    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     loss = sparse_softmax_cross_entropy_with_logits(
    ...         labels=[0, 1], logits=dg.constant([[2.0, 0.0], [0.0, 1000.0]], dg.float64))
    ...     with dg.Session() as sess:
    ...         sess.run(loss).round(4).tolist()
    [0.1269, 0.0]
    """
    where = "sparse_softmax_cross_entropy_with_logits"
    if labels is None or logits is None:
        raise ValueError(f"{where}: both labels= and logits= must be given")
    logits = _floats(logits, where, "logits")
    labels = convert_to_tensor(labels)
    if labels.dtype not in _INDEX:
        raise TypeError(
            f"{where}: labels must be int32 or int64 class indices; {labels.name!r} is "
            f"{labels.dtype.name} (for one-hot or probability labels use "
            "softmax_cross_entropy_with_logits)"
        )
    if logits.shape is not None and not logits.shape:
        raise ValueError(f"{where}: logits must have rank >= 1; {logits.name!r} is a scalar")
    expected = None if logits.shape is None else logits.shape[:-1]
    if (
        labels.shape is not None
        and expected is not None
        and (
            len(labels.shape) != len(expected)
            or any(
                a != b for a, b in zip(labels.shape, expected, strict=True) if None not in (a, b)
            )
        )
    ):
        raise ValueError(
            f"{where}: labels must have the shape of logits without its last axis; "
            f"{labels.name!r} is {labels.shape} and {logits.name!r} is {logits.shape}"
        )
    return new_tensor(
        "SparseSoftmaxCrossEntropyWithLogits", [logits, labels], logits.dtype, expected, name
    )


def sparse_softmax_cross_entropy_grad(
    grad: Tensor, logits: Tensor, labels: Tensor, name: str | None = None
) -> Tensor:
    """The gradient of the sparse cross entropy with respect to ``logits``:
    ``(softmax(logits) - one_hot(labels)) * grad``."""
    return new_tensor(
        "SparseSoftmaxCrossEntropyWithLogitsGrad",
        [grad, logits, labels],
        logits.dtype,
        logits.shape,
        name,
    )


# -- bias and weight decay ------------------------------------------------------------------------
def _data_format(data_format: Any, where: str) -> str:
    data_format = "NHWC" if data_format is None else data_format
    if data_format not in ("NHWC", "NCHW"):
        raise ValueError(f"{where}: data_format must be 'NHWC' or 'NCHW'; got {data_format!r}")
    return data_format


def bias_add(
    value: Any, bias: Any, data_format: str | None = None, name: str | None = None
) -> Tensor:
    """``value + bias`` with the vector ``bias`` added along the channels axis: the last
    (``NHWC``, the default) or axis 1 (``NCHW``).

    Examples
    --------
    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     bias_add(dg.constant([[1.0, 2.0]]), dg.constant([1.0, 2.0, 3.0]))
    Traceback (most recent call last):
    ...
    ValueError: bias_add: bias 'Const_1:0' has 3 elements but value 'Const:0' has 2 channels \
(shape (1, 2), data_format NHWC)
    """
    data_format = _data_format(data_format, "bias_add")
    value, bias = _as_pair(value, bias, "bias_add")
    if bias.shape is not None and len(bias.shape) != 1:
        raise ValueError(f"bias_add: bias must be a vector; {bias.name!r} has shape {bias.shape}")
    if value.shape is not None:
        if len(value.shape) < 2:
            raise ValueError(
                f"bias_add: value must have rank >= 2; {value.name!r} has shape {value.shape}"
            )
        channels = value.shape[_channels_axis(len(value.shape), data_format)]
        size = None if bias.shape is None else bias.shape[0]
        if None not in (channels, size) and channels != size:
            raise ValueError(
                f"bias_add: bias {bias.name!r} has {size} elements but value {value.name!r} "
                f"has {channels} channels (shape {value.shape}, data_format {data_format})"
            )
    return new_tensor(
        "BiasAdd", [value, bias], value.dtype, value.shape, name, data_format=data_format
    )


def bias_add_grad(
    out_backprop: Tensor, data_format: str | None = None, name: str | None = None
) -> Tensor:
    """``out_backprop`` summed over every axis but the channels: the gradient of
    :func:`bias_add` with respect to ``bias``."""
    data_format = _data_format(data_format, "bias_add_grad")
    shape = out_backprop.shape
    channels = None
    if shape is not None:
        channels = (shape[_channels_axis(len(shape), data_format)],)
    return new_tensor(
        "BiasAddGrad", [out_backprop], out_backprop.dtype, channels, name, data_format=data_format
    )


def l2_loss(t: Any, name: str | None = None) -> Tensor:
    """``sum(t ** 2) / 2``, a scalar (weight decay).

    Examples
    --------
    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     loss = l2_loss(dg.constant([[1.0, 2.0], [3.0, 4.0]]))
    ...     with dg.Session() as sess:
    ...         float(sess.run(loss))
    15.0
    """
    x = _floats(t, "l2_loss", "t")
    return new_tensor("L2Loss", [x], x.dtype, (), name)


# -- dropout --------------------------------------------------------------------------------------
def dropout(
    x: Any,
    keep_prob: Any = None,
    noise_shape: Any = None,
    seed: int | None = None,
    name: str | None = None,
    rate: Any = None,
) -> Tensor:
    """``x / keep_prob`` where a uniform draw keeps the element (with probability
    ``keep_prob``, or ``1 - rate``), else 0, as TF1's ``tf.nn.dropout``. ``keep_prob`` may be a
    tensor (a placeholder fed 1.0 to evaluate); a Python ``keep_prob`` of 1 returns ``x``.
    ``noise_shape`` (default: ``x``'s shape) broadcasts against ``x``, e.g. ``[n, 1]`` keeps or
    drops whole rows. The gradient is the same mask divided by ``keep_prob``.

    Examples
    --------
    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     y = dropout(dg.ones([2, 1000]), keep_prob=0.5, seed=1)
    ...     with dg.Session() as sess:
    ...         values = sess.run(y)
    >>> sorted(set(values.ravel().tolist())), bool(0.4 < (values > 0).mean() < 0.6)
    ([0.0, 2.0], True)
    """
    if (keep_prob is None) == (rate is None):
        raise ValueError("dropout: give exactly one of keep_prob and rate")
    x = _floats(x, "dropout", "x")
    given = keep_prob if rate is None else rate
    if not isinstance(given, Tensor) and not hasattr(given, "_as_tensor"):
        if _static_keep(keep_prob, rate) == 1.0:
            return x
    with name_scope(name or "dropout"):
        if rate is None:
            keep = convert_to_tensor(keep_prob, dtype=x.dtype, name="keep_prob")
        else:
            keep = 1.0 - convert_to_tensor(rate, dtype=x.dtype, name="rate")
        if noise_shape is None:
            static = x.shape is not None and None not in x.shape
            noise_shape = list(x.shape) if static else shape_ops.shape(x)
        draw = random_uniform(noise_shape, dtype=x.dtype, seed=seed)
        kept = cast(greater_equal(draw, 1.0 - keep), x.dtype)
        return multiply(divide(x, keep), kept)


def _static_keep(keep_prob: Any, rate: Any) -> float:
    what, value = ("keep_prob", keep_prob) if rate is None else ("rate", rate)
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise TypeError(f"dropout: {what} must be a number or a tensor; got {value!r}") from None
    keep = number if rate is None else 1.0 - number
    if not 0.0 < keep <= 1.0:
        bounds = "(0, 1]" if rate is None else "[0, 1)"
        raise ValueError(f"dropout: {what} must be in {bounds}; got {number}")
    return keep


# -- gradients ------------------------------------------------------------------------------------
@register_gradient("Relu")
def _relu_grad_fn(op: Operation, grad: Tensor) -> list[Tensor]:
    return [relu_grad(grad, op.outputs[0])]


@register_gradient("Relu6")
def _relu6_grad_fn(op: Operation, grad: Tensor) -> list[Tensor]:
    return [relu6_grad(grad, op.outputs[0])]


@register_gradient("Softmax")
def _softmax_grad(op: Operation, grad: Tensor) -> list[Tensor]:
    """(grad - sum(grad * y)) * y along the softmax axis."""
    y = op.outputs[0]
    return [(grad - reduce_sum(grad * y, axis=op.attrs["axis"], keepdims=True)) * y]


@register_gradient("LogSoftmax")
def _log_softmax_grad(op: Operation, grad: Tensor) -> list[Tensor]:
    """grad - sum(grad) * softmax along the axis (softmax = exp(y))."""
    y = op.outputs[0]
    return [grad - reduce_sum(grad, axis=op.attrs["axis"], keepdims=True) * exp(y)]


@register_gradient("SoftmaxCrossEntropyWithLogits")
def _xent_grad_fn(op: Operation, grad: Tensor) -> list[Tensor | None]:
    logits, labels = op.inputs
    axis = op.attrs["axis"]
    d_logits = softmax_cross_entropy_grad(grad, logits, labels, axis, "logits")
    if not op.attrs["labels_gradient"]:
        return [d_logits, None]
    return [d_logits, softmax_cross_entropy_grad(grad, logits, labels, axis, "labels")]


@register_gradient("SparseSoftmaxCrossEntropyWithLogits")
def _sparse_xent_grad_fn(op: Operation, grad: Tensor) -> list[Tensor | None]:
    logits, labels = op.inputs
    return [sparse_softmax_cross_entropy_grad(grad, logits, labels), None]


@register_gradient("BiasAdd")
def _bias_add_grad_fn(op: Operation, grad: Tensor) -> list[Tensor]:
    return [grad, bias_add_grad(grad, op.attrs["data_format"])]


@register_gradient("L2Loss")
def _l2_loss_grad(op: Operation, grad: Tensor) -> list[Tensor]:
    return [op.inputs[0] * grad]
