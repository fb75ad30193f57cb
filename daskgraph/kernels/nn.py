"""Neural-network kernels: activations, softmax, cross-entropy losses, ``bias_add``, ``l2_loss``.

The kernels of :mod:`daskgraph.ops.nn`'s ops, each ``kernel(xp, *inputs, **attrs)``.
"""

from __future__ import annotations

import numpy as np

from daskgraph.kernels.fusable import fusable_kernel


# -- kernels --------------------------------------------------------------------------------------
@fusable_kernel("relu", "({0} if ({0} > 0 or {0} != {0}) else 0)")  # (maximum's rule)
def _relu(xp, x):
    return xp.maximum(x, 0)


def _relu6(xp, x):
    return xp.minimum(xp.maximum(x, 0), 6)


@fusable_kernel("relu_grad", "({0} * ({1} > 0))")
def _relu_grad(xp, gradients, features):
    # TensorFlow's kernel: ``gradients * (features > 0)`` (NumPy's ``where`` takes 3x longer)
    return gradients * (features > 0)


def _relu6_grad(xp, gradients, features):
    return xp.where((features > 0) & (features < 6), gradients, xp.zeros_like(gradients))


#: a last axis up to this long is reduced by its maximum across rows (see :func:`_max_keepdims`)
_SHORT_AXIS = 32


def _max_keepdims(xp, x, axis):
    """``xp.max(x, axis=axis, keepdims=True)``. NumPy reduces a short last axis (a batch of
    logits over a few classes) row by row, a few times slower than taking the maximum across
    rows of its transposed copy, which gives the same values (a maximum is exact)."""
    short = 1 < x.ndim and 0 < x.shape[-1] <= _SHORT_AXIS and axis in (-1, x.ndim - 1)
    if short and xp is np:
        return xp.max(xp.ascontiguousarray(xp.moveaxis(x, -1, 0)), axis=0)[..., None]
    return xp.max(x, axis=axis, keepdims=True)


def _softmax(xp, x, *, axis):
    e = xp.exp(x - _max_keepdims(xp, x, axis))
    return e / xp.sum(e, axis=axis, keepdims=True)


def _log_softmax(xp, x, *, axis):
    z = x - _max_keepdims(xp, x, axis)
    return z - xp.log(xp.sum(xp.exp(z), axis=axis, keepdims=True))


def _xent(xp, logits, labels, *, axis, labels_gradient):
    """Per-example ``-sum(labels * log_softmax(logits))``; ``labels_gradient`` only tells the
    gradient whether labels get one (v2) or not (v1)."""
    return 0 - xp.sum(labels * _log_softmax(xp, logits, axis=axis), axis=axis)  # no -0.0


def _xent_grad(xp, grad, logits, labels, *, axis, wrt):
    grad = xp.expand_dims(grad, axis)
    if wrt == "logits":
        return (_softmax(xp, logits, axis=axis) - labels) * grad
    return -_log_softmax(xp, logits, axis=axis) * grad


def _check_labels(xp, labels, classes):
    if not labels.size:
        return
    if labels.dtype.kind == "i":  # one reduction: as unsigned, negative labels are too large
        top = labels.view(labels.dtype.str.replace("i", "u")).max()
    else:
        top = labels.max()
    if int(top) >= classes:
        bad = labels[(labels < 0) | (labels >= classes)].ravel()[0]
        raise ValueError(
            f"sparse_softmax_cross_entropy_with_logits: received a label value of {int(bad)} "
            f"which is outside the valid range of [0, {classes})"
        )


def _sparse_xent(xp, logits, labels):
    _check_labels(xp, labels, logits.shape[-1])
    log_p = _log_softmax(xp, logits, axis=-1)
    if log_p.ndim == 2:  # a batch: plain indexing picks the same values as take_along_axis
        return 0 - log_p[xp.arange(log_p.shape[0]), labels]
    return 0 - xp.take_along_axis(log_p, labels[..., None], axis=-1)[..., 0]


def _sparse_xent_grad(xp, grad, logits, labels):
    _check_labels(xp, labels, logits.shape[-1])
    onehot = labels[..., None] == xp.arange(logits.shape[-1], dtype=labels.dtype)
    return (_softmax(xp, logits, axis=-1) - onehot) * grad[..., None]


def _channels_axis(rank, data_format):
    return 1 if data_format == "NCHW" and rank > 2 else rank - 1


def _bias_add(xp, value, bias, *, data_format):
    axis = _channels_axis(value.ndim, data_format)
    return value + bias.reshape((-1,) + (1,) * (value.ndim - 1 - axis))


def _bias_add_grad(xp, out_backprop, *, data_format):
    axis = _channels_axis(out_backprop.ndim, data_format)
    return out_backprop.sum(axis=tuple(i for i in range(out_backprop.ndim) if i != axis))


def _l2_loss(xp, x):
    return xp.asarray(xp.sum(x * x) / 2)
