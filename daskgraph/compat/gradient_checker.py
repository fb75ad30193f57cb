"""``tf.test.compute_gradient`` and ``compute_gradient_error``: TensorFlow 1's Jacobian checks.

Its one job is TensorFlow 1's ``gradient_checker`` with its signatures and results: the
*theoretical* Jacobian of ``y`` with respect to ``x``, one column per element of ``y``,
from :func:`~daskgraph.ops.gradients.gradients` of ``y`` weighted by a fed one-hot ``dy``, and
the *numeric* one, one row per element of ``x``, from central differences
``(y(x + delta) - y(x - delta)) / (2 delta)``; both are ``(x size, y size)`` arrays computed
by the default session, feeding ``x`` (any tensor).
:func:`daskgraph.compat.gradient_check.check_gradients`
is the native check (a scalar loss, its own session); this module is the TF1 interface.

>>> import daskgraph as dg
>>> with dg.Graph().as_default(), dg.Session() as sess:
...     x = dg.constant([1.0, 2.0], dtype=dg.float64)
...     theoretical, numeric = compute_gradient(x, [2], x * x, [2])
>>> theoretical.shape, float(abs(theoretical - numeric).max()) < 1e-6
((2, 2), True)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from daskgraph.framework import dtypes
from daskgraph.framework.default_session import get_default_session
from daskgraph.framework.graph import Tensor
from daskgraph.ops.array import constant, identity
from daskgraph.ops.gradients import gradients

__all__ = ["compute_gradient", "compute_gradient_error"]

_FLOATS = (dtypes.float16, dtypes.float32, dtypes.float64)


def _size(shape: Sequence[int] | int) -> int:
    return int(shape) if isinstance(shape, int) else int(np.prod(list(shape), dtype=np.int64))


def _feeds(extra: Mapping[Any, Any] | None, new: dict[Any, Any]) -> dict[Any, Any]:
    return {**(extra or {}), **new}


def _theoretical(x, x_data, dy, dy_shape, dx, extra) -> np.ndarray:
    """The Jacobian from backpropagating a one-hot ``dy`` per element of ``y``."""
    sess = get_default_session()
    x_size, dy_size = _size(x_data.shape), _size(dy_shape)
    jacobian = np.zeros((x_size, dy_size), dtype=x.dtype.numpy)
    dy_data = np.zeros(dy_shape, dtype=dy.dtype.numpy)
    flat = dy_data.reshape(-1)
    for col in range(dy_size):
        flat[col] = 1
        if dx is not None:
            backprop = sess.run(dx, feed_dict=_feeds(extra, {x: x_data, dy: dy_data}))
            jacobian[:, col] = np.asarray(backprop).ravel()
        flat[col] = 0
    if not dy_size and dx is not None:
        backprop = np.asarray(sess.run(dx, feed_dict=_feeds(extra, {x: x_data, dy: dy_data})))
        if backprop.shape != x_data.shape:
            raise ValueError(
                f"Empty gradient has wrong shape: expected {x_data.shape}, got {backprop.shape}"
            )
        if np.any(backprop):
            raise ValueError("Empty tensor with nonzero gradients")
    return jacobian


def _numeric(x, x_data, y, y_shape, delta, extra) -> np.ndarray:
    """The Jacobian from central differences, one element of ``x`` at a time."""
    sess = get_default_session()
    x_size, y_size = _size(x_data.shape), _size(y_shape)
    jacobian = np.zeros((x_size, y_size), dtype=x.dtype.numpy)
    scale = np.asarray(2 * delta, dtype=y.dtype.numpy)[()]
    for row in range(x_size):
        moved = []
        for step in (delta, -delta):
            x_step = x_data.copy()
            x_step.reshape(-1)[row] += step
            moved.append(np.asarray(sess.run(y, feed_dict=_feeds(extra, {x: x_step}))))
        jacobian[row, :] = ((moved[0] - moved[1]) / scale).ravel()
    return jacobian


def _check_float(tensor: Tensor, what: str) -> None:
    if tensor.dtype not in _FLOATS:
        raise TypeError(f"Don't support type {tensor.dtype.name} for {what}")


def _dx_and_dy(x: Tensor, y: Tensor, y_shape: Sequence[int]) -> tuple[Any, Tensor]:
    """The gradient of ``y`` with respect to ``x``, weighted by a fed ``dy``, and ``dy``."""
    with x.graph.as_default():
        dy_orig = constant(1.0, shape=list(y_shape), dtype=y.dtype)
        dy = identity(dy_orig)
    (dx,) = gradients(y, [x], grad_ys=[dy])
    return dx, dy_orig


def _one(x, x_shape, dx, y, y_shape, dy, x_init_value, delta, extra):
    _check_float(x, "x")
    _check_float(y, "y")
    if x_init_value is not None:
        x_data = np.asarray(x_init_value)
        if list(x_shape) != list(x_data.shape):
            raise ValueError(f"x_shape = {x_shape}, init_data shape = {list(x_data.shape)}")
    else:
        x_data = np.random.random_sample(x_shape).astype(x.dtype.numpy)
    x_data = np.asarray(x_data, dtype=x.dtype.numpy)
    return (
        _theoretical(x, x_data, dy, list(y_shape), dx, extra),
        _numeric(x, x_data, y, list(y_shape), delta, extra),
    )


def compute_gradient(
    x: Any,
    x_shape: Any,
    y: Tensor,
    y_shape: Sequence[int],
    x_init_value: Any = None,
    delta: float = 1e-3,
    init_targets: Sequence[Any] | None = None,
    extra_feed_dict: Mapping[Any, Any] | None = None,
):
    """The theoretical and numeric Jacobians of ``y`` with respect to ``x``, as TensorFlow 1.

    Parameters
    ----------
    x, x_shape
        A float tensor (fed, so any tensor) and its shape, or lists of both.
    y, y_shape
        A float tensor and its shape.
    x_init_value
        The value of ``x`` (a list for a list ``x``); uniform in [0, 1) by default.
    delta
        The finite-difference step.
    init_targets
        Operations to run first (variable initializers).
    extra_feed_dict
        Further feeds of every run.

    Returns
    -------
    tuple or list
        ``(theoretical, numeric)``, each of shape ``(x size, y size)``; for a list ``x``, a
        list of those pairs.
    """
    if isinstance(x, list):
        pairs = [_dx_and_dy(xi, y, y_shape) for xi in x]
        _run_inits(init_targets)
        inits = [None] * len(x) if x_init_value is None else x_init_value
        return [
            _one(xi, shape, dx, y, y_shape, dy, init, delta, extra_feed_dict)
            for xi, shape, (dx, dy), init in zip(x, x_shape, pairs, inits, strict=True)
        ]
    _run_inits(init_targets)
    dx, dy = _dx_and_dy(x, y, y_shape)
    return _one(x, x_shape, dx, y, y_shape, dy, x_init_value, delta, extra_feed_dict)


def _run_inits(init_targets: Sequence[Any] | None) -> None:
    if init_targets is not None:
        if not isinstance(init_targets, (list, tuple)):
            raise TypeError(f"init_targets must be a list or tuple; got {init_targets!r}")
        for init in init_targets:
            init.run()


def compute_gradient_error(
    x: Any,
    x_shape: Any,
    y: Tensor,
    y_shape: Sequence[int],
    x_init_value: Any = None,
    delta: float = 1e-3,
    init_targets: Sequence[Any] | None = None,
    extra_feed_dict: Mapping[Any, Any] | None = None,
) -> float:
    """The largest absolute difference between the theoretical and numeric Jacobians
    (:func:`compute_gradient`'s arguments)."""
    grad = compute_gradient(
        x, x_shape, y, y_shape, x_init_value, delta, init_targets, extra_feed_dict
    )
    error = 0.0
    for theoretical, numeric in [grad] if isinstance(grad, tuple) else grad:
        if theoretical.size or numeric.size:
            error = max(error, float(np.fabs(theoretical - numeric).max()))
    return error
