"""Normalization in ``tf.nn``: ``l2_normalize``, ``moments``, ``batch_normalization``,
``fused_batch_norm`` and local response normalization (``lrn``).

The first four are compositions of ops, written as TensorFlow 1 writes them (``moments`` takes
the variance around a ``stop_gradient`` of the mean; ``batch_normalization`` folds ``scale``
into ``rsqrt(variance + epsilon)``), so they have TensorFlow's values and gradients.
``lrn`` is TensorFlow's ``LRN`` op, one kernel; its gradient is built from ordinary ops and
``LRNWindowSum`` (the sum over each channel's ``depth_radius`` neighbours, its own adjoint), so
it has second derivatives too.

>>> import daskgraph as dg
>>> with dg.Graph().as_default():
...     mean, variance = moments(dg.constant([[1.0, 2.0], [3.0, 6.0]]), axes=[0])
...     with dg.Session() as sess:
...         sess.run(mean).tolist(), sess.run(variance).tolist()
([2.0, 4.0], [1.0, 4.0])
"""

from __future__ import annotations

from collections import namedtuple
from typing import Any

import numpy as np

from daskgraph.framework import dtypes
from daskgraph.framework.gradient_registry import register_gradient
from daskgraph.framework.graph import Operation, Tensor, name_scope, new_tensor
from daskgraph.framework.op_registry import register
from daskgraph.kernels.normalization import _lrn, _window_sum
from daskgraph.ops.array import cast, convert_to_tensor, reshape
from daskgraph.ops.elementwise import pow, rsqrt, squared_difference
from daskgraph.ops.math import maximum, multiply, reduce_mean, reduce_sum, square
from daskgraph.ops.reduction import reduce_prod
from daskgraph.ops.shape_ops import shape, squeeze, stop_gradient
from daskgraph.ops.slicing import gather

__all__ = [
    "batch_normalization",
    "fused_batch_norm",
    "l2_normalize",
    "local_response_normalization",
    "lrn",
    "moments",
]

_FLOAT = dtypes.FLOATING

#: what ``fused_batch_norm`` returns
FusedBatchNorm = namedtuple("FusedBatchNorm", ["y", "mean", "variance"])


register("LRN", _lrn, cpu=_FLOAT, gpu=_FLOAT)
register("LRNWindowSum", _window_sum, cpu=_FLOAT, gpu=_FLOAT)


# -- helpers --------------------------------------------------------------------------------------
def _floats(x: Any, what: str, caller: str) -> Tensor:
    x = convert_to_tensor(x)
    if not x.dtype.is_floating:
        raise TypeError(f"{caller}: {what} must be floating-point; {x.name!r} is {x.dtype.name}")
    return x


def _one_of(new: Any, old: Any, new_name: str, old_name: str, caller: str) -> Any:
    """An argument given by its name or by TF1's old name (not both)."""
    if new is not None and old is not None and new != old:
        raise ValueError(f"{caller}: give {new_name} or {old_name} (its old name), not both")
    return old if new is None else new


# -- l2_normalize and moments ---------------------------------------------------------------------
def l2_normalize(
    x: Any, axis: Any = None, epsilon: float = 1e-12, name: str | None = None, dim: Any = None
) -> Tensor:
    """``x / sqrt(max(sum(x ** 2, axis), epsilon))``: unit L2 norm along ``axis`` (all axes
    by default; ``dim`` is its old name).

    Examples
    --------
    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     y = l2_normalize(dg.constant([[3.0, 4.0], [0.0, 0.0]], dg.float64), axis=1)
    ...     with dg.Session() as sess:
    ...         sess.run(y).round(12).tolist()
    [[0.6, 0.8], [0.0, 0.0]]
    """
    axis = _one_of(axis, dim, "axis", "dim", "l2_normalize")
    with name_scope(name or "l2_normalize"):
        x = _floats(x, "x", "l2_normalize")
        square_sum = reduce_sum(square(x), axis, keepdims=True)
        return multiply(x, rsqrt(maximum(square_sum, epsilon)))


def moments(
    x: Any,
    axes: Any,
    shift: Any = None,
    name: str | None = None,
    keep_dims: bool | None = None,
    keepdims: bool | None = None,
) -> tuple[Tensor, Tensor]:
    """``(mean, variance)`` of ``x`` along ``axes`` (``keepdims`` keeps them as size 1;
    ``keep_dims`` is its old name; ``shift`` is unused, as in TensorFlow). float16 is averaged
    in float32.

    Examples
    --------
    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     mean, variance = moments(dg.zeros([8, 4, 4, 3]), [0, 1, 2], keep_dims=True)
    >>> mean.shape, variance.shape
    ((1, 1, 1, 3), (1, 1, 1, 3))
    """
    keep = bool(_one_of(keepdims, keep_dims, "keepdims", "keep_dims", "moments"))
    axes = [int(a) for a in ([axes] if isinstance(axes, int) else axes)]
    with name_scope(name or "moments"):
        x = _floats(x, "x", "moments")
        y = cast(x, dtypes.float32) if x.dtype is dtypes.float16 else x
        mean = reduce_mean(y, axes, keepdims=True, name="mean")
        variance = reduce_mean(
            squared_difference(y, stop_gradient(mean)), axes, keepdims=True, name="variance"
        )
        if not keep:
            mean, variance = squeeze(mean, axes), squeeze(variance, axes)
        if x.dtype is dtypes.float16:
            mean, variance = cast(mean, x.dtype), cast(variance, x.dtype)
        return mean, variance


# -- batch normalization --------------------------------------------------------------------------
def batch_normalization(
    x: Any,
    mean: Any,
    variance: Any,
    offset: Any,
    scale: Any,
    variance_epsilon: float,
    name: str | None = None,
) -> Tensor:
    """``scale * (x - mean) / sqrt(variance + variance_epsilon) + offset``, everything
    broadcasting against ``x``; ``offset`` and ``scale`` may be ``None`` (0 and 1).

    Examples
    --------
    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     y = batch_normalization(dg.constant([1.0, 3.0]), 2.0, 4.0, 10.0, 2.0, 0.0)
    ...     with dg.Session() as sess:
    ...         sess.run(y).tolist()
    [9.0, 11.0]
    """
    with name_scope(name or "batchnorm"):
        x = _floats(x, "x", "batch_normalization")
        mean = convert_to_tensor(mean, dtype=x.dtype)
        inv = rsqrt(convert_to_tensor(variance, dtype=x.dtype) + variance_epsilon)
        if scale is not None:
            inv = inv * convert_to_tensor(scale, dtype=x.dtype)
        shift = -mean * inv if offset is None else convert_to_tensor(offset, x.dtype) - mean * inv
        return x * inv + shift


def fused_batch_norm(
    x: Any,
    scale: Any,
    offset: Any,
    mean: Any = None,
    variance: Any = None,
    epsilon: float = 0.001,
    data_format: str = "NHWC",
    is_training: bool = True,
    name: str | None = None,
    exponential_avg_factor: float = 1.0,
) -> FusedBatchNorm:
    """Batch normalization of 4-D ``x`` over its batch and spatial axes, per channel:
    ``(y, mean, variance)``. Training: normalizes with the batch's statistics and returns them
    (the variance with Bessel's correction, mixed into the given ``mean``/``variance`` when
    ``exponential_avg_factor < 1``, as TensorFlow); else normalizes with ``mean`` and
    ``variance`` and returns them. As in TensorFlow, gradients flow from ``y`` only, and
    into ``x``, ``scale`` and ``offset`` only.

    Examples
    --------
    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     x = dg.reshape(dg.constant([1.0, 3.0, 5.0, 7.0], dg.float64), [2, 2, 1, 1])
    ...     y, mean, variance = fused_batch_norm(x, [1.0], [0.0], epsilon=0.0)
    ...     with dg.Session() as sess:
    ...         sess.run(mean).tolist(), sess.run(variance).round(4).tolist()
    ([4.0], [6.6667])
    """
    where_ = "fused_batch_norm"
    if data_format not in ("NHWC", "NCHW"):
        raise ValueError(f"{where_}: data_format must be 'NHWC' or 'NCHW'; got {data_format!r}")
    with name_scope(name or "FusedBatchNorm"):
        x = _floats(x, "x", where_)
        if x.shape is not None and len(x.shape) != 4:
            raise ValueError(f"{where_}: x must be 4-D; {x.name!r} has shape {x.shape}")
        axes = [0, 1, 2] if data_format == "NHWC" else [0, 2, 3]
        if is_training:
            batch_mean, batch_var = moments(x, axes)
            out_mean, out_var = _running(
                x, axes, (batch_mean, batch_var), (mean, variance), exponential_avg_factor
            )
        else:
            if mean is None or variance is None:
                raise ValueError(f"{where_}: mean and variance must be given for inference")
            batch_mean = out_mean = stop_gradient(convert_to_tensor(mean, dtype=x.dtype))
            batch_var = out_var = stop_gradient(convert_to_tensor(variance, dtype=x.dtype))
        channels = [1, 1, 1, -1] if data_format == "NHWC" else [1, -1, 1, 1]
        stats = [reshape(convert_to_tensor(t, dtype=x.dtype), channels)
                 for t in (batch_mean, batch_var, offset, scale)]  # fmt: skip
        y = batch_normalization(x, *stats, epsilon)
        return FusedBatchNorm(y, stop_gradient(out_mean), stop_gradient(out_var))


def _running(
    x: Tensor, axes: list[int], batch: tuple, given: tuple, factor: float
) -> tuple[Tensor, Tensor]:
    """The batch's mean and (Bessel-corrected) variance, mixed into the ``given`` mean and
    variance as ``(1 - factor) * given + factor * batch`` when ``factor < 1``."""
    if x.shape is not None and all(x.shape[a] is not None for a in axes):
        count = convert_to_tensor(float(np.prod([x.shape[a] for a in axes])), dtype=x.dtype)
    else:
        count = cast(reduce_prod(gather(shape(x), axes)), x.dtype)
    mean, variance = batch[0], batch[1] * (count / maximum(count - 1.0, 1.0))
    if factor == 1.0:
        return mean, variance
    if given[0] is None or given[1] is None:
        raise ValueError("fused_batch_norm: exponential_avg_factor < 1 needs mean and variance")
    old_mean, old_variance = (convert_to_tensor(t, dtype=x.dtype) for t in given)
    return (
        (1.0 - factor) * old_mean + factor * mean,
        (1.0 - factor) * old_variance + factor * variance,
    )


# -- local response normalization -----------------------------------------------------------------
def lrn(
    input: Any,
    depth_radius: int = 5,
    bias: float = 1.0,
    alpha: float = 1.0,
    beta: float = 0.5,
    name: str | None = None,
) -> Tensor:
    """Local response normalization of 4-D ``input`` along its last (channels) axis:
    ``input / (bias + alpha * sqr_sum) ** beta``, where ``sqr_sum`` is the sum of the squares
    of each channel's neighbours ``d - depth_radius .. d + depth_radius``.

    Examples
    --------
    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     x = dg.reshape(dg.constant([1.0, 2.0, 2.0], dg.float64), [1, 1, 1, 3])
    ...     y = lrn(x, depth_radius=1, bias=0.0, alpha=1.0, beta=0.5)
    ...     with dg.Session() as sess:
    ...         sess.run(y).round(4).ravel().tolist()
    [0.4472, 0.6667, 0.7071]
    >>> with dg.Graph().as_default():
    ...     lrn(dg.zeros([2, 7]))
    Traceback (most recent call last):
    ...
    ValueError: lrn: input must be 4-D (NHWC); 'zeros:0' has shape (2, 7)
    """
    x = _floats(input, "input", "lrn")
    if x.shape is not None and len(x.shape) != 4:
        raise ValueError(f"lrn: input must be 4-D (NHWC); {x.name!r} has shape {x.shape}")
    if int(depth_radius) < 0:
        raise ValueError(f"lrn: depth_radius must be >= 0; got {depth_radius}")
    attrs = {"depth_radius": int(depth_radius), "bias": float(bias), "alpha": float(alpha),
             "beta": float(beta)}  # fmt: skip
    return new_tensor("LRN", [x], x.dtype, x.shape, name, **attrs)


local_response_normalization = lrn  # TensorFlow's other name for it


def lrn_window_sum(x: Tensor, depth_radius: int, name: str | None = None) -> Tensor:
    """The sum of each channel's ``depth_radius`` neighbours on each side (and itself) along
    the last axis: a symmetric linear map, so its own gradient."""
    return new_tensor("LRNWindowSum", [x], x.dtype, x.shape, name, depth_radius=depth_radius)


# -- gradients ------------------------------------------------------------------------------------
@register_gradient("LRN")
def _lrn_grad(op: Operation, grad: Tensor) -> list[Tensor]:
    """With ``s = bias + alpha * W(x**2)`` and ``y = x * s**-beta`` (``W`` the window sum):
    ``dx = grad * s**-beta - 2 * alpha * beta * x * W(grad * y / s)``."""
    x = op.inputs[0]
    r, bias, alpha, beta = (op.attrs[k] for k in ("depth_radius", "bias", "alpha", "beta"))
    s = bias + alpha * lrn_window_sum(square(x), r)
    inner = lrn_window_sum(grad * op.outputs[0] / s, r)
    return [grad * pow(s, -beta) - (2.0 * alpha * beta) * x * inner]


@register_gradient("LRNWindowSum")
def _lrn_window_sum_grad(op: Operation, grad: Tensor) -> list[Tensor]:
    return [lrn_window_sum(grad, op.attrs["depth_radius"])]
