"""Norms, clipping by norm and the moment reductions of TF1: ``norm``,
``reduce_euclidean_norm``, ``global_norm``, ``clip_by_norm``, ``clip_by_global_norm``,
``clip_by_average_norm``, ``reduce_variance``, ``reduce_std`` and ``count_nonzero``.

Each is built from differentiable ops as TensorFlow builds it (so gradients come for free),
with TensorFlow's guards: ``clip_by_norm`` takes the square root only where the sum of
squares is positive (no NaN gradient at 0), and ``clip_by_global_norm`` gives NaN values for
an infinite or NaN norm. ``None`` entries of the lists given to ``global_norm`` and
``clip_by_global_norm`` (variables without gradient, from ``compute_gradients``) pass through.

>>> import daskgraph as dg
>>> with dg.Graph().as_default():
...     grads = [dg.constant([3.0, 4.0]), None, dg.constant(12.0)]
...     clipped, norm = clip_by_global_norm(grads, 6.5)
...     with dg.Session() as sess:
...         float(sess.run(norm)), sess.run(clipped[0]).tolist(), clipped[1]
(13.0, [1.5, 2.0], None)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from daskgraph.framework import dtypes
from daskgraph.framework.graph import Tensor, name_scope
from daskgraph.framework.scopes import colocate_with
from daskgraph.ops.array import cast, convert_to_tensor, identity
from daskgraph.ops.elementwise import minimum, pow, reciprocal, rsqrt
from daskgraph.ops.fill_ops import ones_like
from daskgraph.ops.logic import not_equal, where
from daskgraph.ops.math import abs, maximum, reduce_max, reduce_mean, reduce_sum, sqrt
from daskgraph.ops.nn import l2_loss
from daskgraph.ops.shape_ops import size, squeeze, stack

__all__ = [
    "clip_by_average_norm",
    "clip_by_global_norm",
    "clip_by_norm",
    "count_nonzero",
    "global_norm",
    "norm",
    "reduce_euclidean_norm",
    "reduce_std",
    "reduce_variance",
]


# -- reductions -----------------------------------------------------------------------------------
def reduce_euclidean_norm(
    input_tensor: Any, axis: Any = None, keepdims: bool = False, name: str | None = None
) -> Tensor:
    """``sqrt(sum(x ** 2))`` along ``axis`` (all by default); integer tensors give the
    truncated integer norm, as TensorFlow's.

    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     n = reduce_euclidean_norm(dg.constant([[3.0, 4.0], [6.0, 8.0]]), axis=1)
    ...     i = reduce_euclidean_norm(dg.constant([1, 2, 3]))
    ...     with dg.Session() as sess:
    ...         sess.run(n).tolist(), int(sess.run(i))
    ([5.0, 10.0], 3)
    """
    x = convert_to_tensor(input_tensor)
    if not x.dtype.is_numeric:
        raise TypeError(f"reduce_euclidean_norm: expects a numeric tensor; {x.name!r} is {x.dtype}")
    with name_scope(name or "EuclideanNorm"):
        if x.dtype.is_floating:
            return sqrt(reduce_sum(x * x, axis=axis, keepdims=keepdims))
        wide = cast(x, dtypes.float64)
        return cast(sqrt(reduce_sum(wide * wide, axis=axis, keepdims=keepdims)), x.dtype)


def reduce_variance(
    input_tensor: Any, axis: Any = None, keepdims: bool = False, name: str | None = None
) -> Tensor:
    """The variance ``mean((x - mean(x)) ** 2)`` along ``axis`` (all by default), as
    ``tf.math.reduce_variance`` (floating-point tensors only).

    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     x = dg.constant([[1.0, 2.0], [3.0, 5.0]])
    ...     with dg.Session() as sess:
    ...         sess.run(reduce_variance(x, axis=0)).tolist(), float(sess.run(reduce_std(x)))
    ([1.0, 2.25], 1.4790199995040894)
    """
    x = convert_to_tensor(input_tensor)
    with name_scope(name or "reduce_variance"):
        if not x.dtype.is_floating:
            raise TypeError(
                f"Input must be either real or complex. Received integer type <dtype: "
                f"'{x.dtype.name}'>."
            )
        means = reduce_mean(x, axis=axis, keepdims=True)
        diff = x - means
        return reduce_mean(diff * diff, axis=axis, keepdims=keepdims)


def reduce_std(
    input_tensor: Any, axis: Any = None, keepdims: bool = False, name: str | None = None
) -> Tensor:
    """The standard deviation along ``axis``: the square root of :func:`reduce_variance`."""
    with name_scope(name or "reduce_std"):
        return sqrt(reduce_variance(input_tensor, axis=axis, keepdims=keepdims))


def count_nonzero(
    input_tensor: Any,
    axis: Any = None,
    keepdims: bool = False,
    dtype: Any = dtypes.int64,
    name: str | None = None,
) -> Tensor:
    """How many elements along ``axis`` (all by default) are not zero (not ``False``, not
    the empty string), as ``dtype`` (int64 by default).

    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     c = count_nonzero(dg.constant([[0, 1, 2], [0, 0, 3]]), axis=1)
    ...     with dg.Session() as sess:
    ...         sess.run(c).tolist(), c.dtype
    ([2, 1], int64)
    """
    x = convert_to_tensor(input_tensor)
    with name_scope(name or "count_nonzero"):
        zero = "" if x.dtype is dtypes.string else np.zeros((), x.dtype.numpy)
        nonzero = cast(not_equal(x, convert_to_tensor(zero, dtype=x.dtype)), dtypes.int64)
        return cast(reduce_sum(nonzero, axis=axis, keepdims=keepdims), dtypes.as_dtype(dtype))


# -- norm -----------------------------------------------------------------------------------------
_VECTOR_ORDS = ("euclidean", 1, 2, np.inf)
_MATRIX_ORDS = ("euclidean", "fro", 1, np.inf)


def _norm_axes(axis: Any) -> tuple[int, ...] | None:
    """``axis`` as the axes of a vector (one) or matrix (two) norm, None for all."""
    if isinstance(axis, (list, tuple)) and len(axis) == 2:
        if not all(isinstance(a, (int, np.integer)) for a in axis) or axis[0] == axis[1]:
            raise ValueError(
                "'axis' must be None, an integer, or a tuple of 2 unique integers, got "
                f"{tuple(axis)}"
            )
        return tuple(int(a) for a in axis)
    if axis is None:
        return None
    if not isinstance(axis, (int, np.integer)) or isinstance(axis, bool):
        raise ValueError(
            f"'axis' must be None, an integer, or a tuple of 2 unique integers, got {axis}"
        )
    return (int(axis),)


def _check_ord(ord: Any, matrix: bool) -> None:
    if matrix:
        if ord not in _MATRIX_ORDS:
            raise ValueError(
                "'ord' must be a supported matrix norm in ['euclidean', 'fro', 1, inf] (the "
                f"spectral norm, 2, is not supported by daskgraph), got {ord}"
            )
        return
    if isinstance(ord, str) or isinstance(ord, bool):
        if ord not in _VECTOR_ORDS:
            raise ValueError(f"'ord' must be a supported vector norm, got {ord}")
    elif not isinstance(ord, (int, float, np.integer, np.floating)) or ord <= 0:
        raise ValueError(f"'ord' must be a supported vector norm, got {ord}")


def norm(
    tensor: Any,
    ord: Any = "euclidean",
    axis: Any = None,
    keepdims: bool = False,
    name: str | None = None,
) -> Tensor:
    """The vector norm of ``tensor`` along ``axis`` (an int; None: all elements as one
    vector) or the matrix norm over two axes, as ``tf.norm``.

    ``ord``: ``'euclidean'`` (2), 1, ``np.inf`` or any positive number ``p`` for vectors;
    ``'fro'``/``'euclidean'``, 1 (largest column sum) or ``np.inf`` (largest row sum) for
    matrices.

    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     m = dg.constant([[1.0, -3.0], [2.0, 4.0]], dg.float64)
    ...     norms = [norm(m, ord=np.inf), norm(m, ord=1, axis=[0, 1]), norm(m, axis=1)]
    ...     with dg.Session() as sess:
    ...         [np.round(v, 4).tolist() for v in sess.run(norms)]
    [4.0, 7.0, [3.1623, 4.4721]]
    """
    axes = _norm_axes(axis)
    matrix = axes is not None and len(axes) == 2
    _check_ord(ord, matrix)
    with name_scope(name or "norm"):
        x = convert_to_tensor(tensor)
        if not x.dtype.is_numeric:
            raise TypeError(f"norm: expects a numeric tensor; {x.name!r} is {x.dtype.name}")
        if ord in ("fro", "euclidean", 2, 2.0):
            result = sqrt(reduce_sum(x * x, axis=axes, keepdims=True))
        elif ord == 1:
            result = reduce_sum(abs(x), axis=None if axes is None else axes[0], keepdims=True)
            if matrix:
                result = reduce_max(result, axis=axes[-1], keepdims=True)
        elif ord == np.inf:
            result = abs(x)
            if matrix:
                result = reduce_sum(result, axis=axes[1], keepdims=True)
            result = reduce_max(result, axis=None if axes is None else axes[0], keepdims=True)
        else:
            p = convert_to_tensor(float(ord), dtype=x.dtype)
            total = reduce_sum(pow(abs(x), p), axis=axes, keepdims=True)
            result = pow(total, reciprocal(p))
        return result if keepdims else squeeze(result, axes)


# -- clipping by norm -----------------------------------------------------------------------------
def _tensor_list(t_list: Any) -> list[Any]:
    if not isinstance(t_list, Sequence) or isinstance(t_list, str):
        raise TypeError(f"`t_list` should be a sequence of tensors. Received {type(t_list)}.")
    return [None if t is None else convert_to_tensor(t) for t in t_list]


def global_norm(t_list: Sequence[Any], name: str | None = None) -> Tensor:
    """``sqrt(sum(l2norm(t) ** 2 for t in t_list))``, ``None`` entries ignored, as
    ``tf.global_norm``; each tensor's square sum is computed where it lives.

    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     n = global_norm([dg.constant([3.0, 4.0]), None, dg.constant(12.0)])
    ...     with dg.Session() as sess:
    ...         float(sess.run(n))
    13.0
    """
    values = _tensor_list(t_list)
    with name_scope(name or "global_norm"):
        halves = []
        for v in values:
            if v is not None:
                with colocate_with(v.op):
                    halves.append(l2_loss(v))
        if not halves:
            raise ValueError("global_norm: t_list holds no tensor (only None)")
        half = reduce_sum(stack(halves))
        return sqrt(half * convert_to_tensor(2.0, dtype=half.dtype), name="global_norm")


def clip_by_global_norm(
    t_list: Sequence[Any], clip_norm: Any, use_norm: Any = None, name: str | None = None
) -> tuple[list[Tensor | None], Tensor]:
    """``(list_clipped, global_norm)``: every tensor of ``t_list`` scaled by
    ``clip_norm / max(global_norm, clip_norm)`` (``None`` entries kept), and the global norm
    (``use_norm`` when given), as ``tf.clip_by_global_norm``. An infinite or NaN norm makes
    every clipped value NaN, as in TensorFlow.
    """
    values = _tensor_list(t_list)
    if use_norm is None:
        use_norm = global_norm(values, name)
    use_norm = convert_to_tensor(use_norm)
    with name_scope(name or "clip_by_global_norm"):
        clip = convert_to_tensor(clip_norm, dtype=use_norm.dtype)
        one = convert_to_tensor(1.0, dtype=use_norm.dtype)
        scale_for_finite = clip * minimum(one / use_norm, one / clip)
        scale = scale_for_finite + (use_norm - use_norm)  # NaN for an infinite or NaN norm
        clipped: list[Tensor | None] = []
        for i, v in enumerate(values):
            if v is None:
                clipped.append(None)
                continue
            with colocate_with(v.op):
                clipped.append(identity(v * cast(scale, v.dtype), name=f"_{i}"))
    return clipped, use_norm


def clip_by_norm(t: Any, clip_norm: Any, axes: Any = None, name: str | None = None) -> Tensor:
    """``t * clip_norm / max(l2norm(t), clip_norm)``, the L2 norm taken along ``axes`` (all
    by default), as ``tf.clip_by_norm``: ``t`` unchanged where its norm is at most
    ``clip_norm``.

    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     c = clip_by_norm(dg.constant([[3.0, 4.0], [0.0, 0.5]]), 1.0, axes=[1])
    ...     with dg.Session() as sess:
    ...         sess.run(c).tolist()
    [[0.6000000238418579, 0.800000011920929], [0.0, 0.5]]
    """
    with name_scope(name or "clip_by_norm"):
        values = convert_to_tensor(t, name="t")
        clip = convert_to_tensor(clip_norm, dtype=values.dtype)
        l2sum = reduce_sum(values * values, axis=axes, keepdims=True)
        positive = l2sum > 0
        l2sum_safe = where(positive, l2sum, ones_like(l2sum))  # no NaN gradient at 0
        l2norm = where(positive, sqrt(l2sum_safe), l2sum)
        intermediate = values * clip
        if values.shape is not None and intermediate.shape not in (None, values.shape):
            raise ValueError(
                f"clip_by_norm: clip_norm would broadcast {values.name!r} of shape "
                f"{values.shape} to {intermediate.shape}"
            )
        return identity(intermediate / maximum(l2norm, clip), name="clip_by_norm")


def clip_by_average_norm(t: Any, clip_norm: Any, name: str | None = None) -> Tensor:
    """``t * clip_norm / max(l2norm(t) / size(t), clip_norm)``: ``t`` clipped by its L2 norm
    per element (``tf.clip_by_average_norm``)."""
    with name_scope(name or "clip_by_average_norm"):
        t = convert_to_tensor(t, name="t")
        clip = convert_to_tensor(clip_norm, dtype=t.dtype)
        n_element = cast(size(t), t.dtype)
        l2norm_inv = rsqrt(reduce_sum(t * t))
        one = convert_to_tensor(1.0, dtype=t.dtype)
        return identity(
            t * clip * minimum(l2norm_inv * n_element, one / clip), name="clip_by_average_norm"
        )
