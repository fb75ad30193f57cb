"""Gradient checks: symbolic gradients against central finite differences.

:func:`check_gradients` is how every differentiable op is tested, daskgraph's own and users'
(as TensorFlow's ``gradient_checker``): it builds the op from placeholders in a fresh graph,
runs ``gradients`` of a randomly weighted sum of its output, and compares each entry with
``(f(x + delta) - f(x - delta)) / (2 delta)``, both computed by a real session.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from daskgraph.framework import dtypes
from daskgraph.framework.graph import Graph, Tensor
from daskgraph.framework.scopes import device as device_scope
from daskgraph.ops.array import constant, placeholder
from daskgraph.ops.gradients import gradients
from daskgraph.ops.math import multiply, reduce_sum
from daskgraph.runtime.client.session import Session

__all__ = ["check_gradients"]


def check_gradients(
    fn: Callable[..., Tensor],
    inputs: Sequence[Any],
    *,
    delta: float = 1e-3,
    rtol: float = 1e-4,
    atol: float = 1e-5,
    device: str | None = None,
    target: Any = None,
    seed: int = 0,
) -> float:
    """Check ``gradients`` of ``fn(*placeholders)`` against finite differences at ``inputs``.

    Parameters
    ----------
    fn
        Builds the output tensor from one placeholder per input (float64 for float inputs).
    inputs
        NumPy arrays (floats are differentiated; others are fed as they are).
    delta, rtol, atol
        The finite-difference step and the tolerances of the comparison.
    device
        Build ``fn`` under this device scope (``"/gpu:0"`` for a GPU's kernels).
    target
        The session target (default: the embedded cluster).

    Returns
    -------
    float
        The largest absolute difference found.

    Raises
    ------
    AssertionError
        Saying which input and entry differ, with both values.

    Examples
    --------
    >>> import numpy as np
    >>> err = check_gradients(lambda x: x * x, [np.array([1.0, 2.0])])
    >>> err < 1e-6
    True
    """

    arrays = [np.asarray(a) for a in inputs]
    graph = Graph()
    with graph.as_default():
        holders = [
            placeholder(dtypes.as_dtype(a.dtype), a.shape, name=f"input{i}")
            for i, a in enumerate(arrays)
        ]
        with device_scope(device):
            out = fn(*holders)
        with Session(target, graph=graph) as sess:
            feeds = dict(zip(holders, arrays, strict=True))
            shape = np.shape(sess.run(out, feeds))
            weights = np.random.default_rng(seed).uniform(0.5, 1.5, shape)
            loss = reduce_sum(multiply(out, constant(weights.astype(out.dtype.numpy))))
            floats = [i for i, a in enumerate(arrays) if np.issubdtype(a.dtype, np.floating)]
            symbolic = gradients(loss, [holders[i] for i in floats])
            ran = sess.run([g for g in symbolic if g is not None], feeds)
            computed = iter(ran)
            worst = 0.0
            for i, g in zip(floats, symbolic, strict=True):
                analytic = np.zeros_like(arrays[i]) if g is None else np.asarray(next(computed))
                numeric = _numeric(sess, loss, feeds, holders[i], arrays[i], delta)
                worst = max(worst, _compare(i, g is None, analytic, numeric, rtol, atol))
    return worst


def _numeric(sess: Any, loss: Tensor, feeds: dict, holder: Tensor, x: np.ndarray,
             delta: float) -> np.ndarray:  # fmt: skip
    """Central differences of ``loss`` in each entry of ``x``."""
    out = np.zeros(x.shape, dtype=np.float64)
    flat = x.astype(np.float64).ravel()
    for j in range(flat.size):
        values = []
        for step in (delta, -delta):
            moved = flat.copy()
            moved[j] += step
            values.append(
                float(sess.run(loss, {**feeds, holder: moved.reshape(x.shape).astype(x.dtype)}))
            )
        out.flat[j] = (values[0] - values[1]) / (2 * delta)
    return out


def _compare(index: int, missing: bool, analytic: np.ndarray, numeric: np.ndarray,
             rtol: float, atol: float) -> float:  # fmt: skip
    analytic = np.asarray(analytic, dtype=np.float64).reshape(numeric.shape)
    err = np.abs(analytic - numeric)
    bad = err > atol + rtol * np.abs(numeric)
    if np.any(bad):
        where = tuple(int(k) for k in np.argwhere(bad)[0])
        what = "no gradient (None)" if missing else f"symbolic {analytic[where]!r}"
        raise AssertionError(
            f"gradient of input {index} differs from finite differences at entry {where}: "
            f"{what} vs numeric {numeric[where]!r} ({int(bad.sum())} of {bad.size} entries "
            f"differ; largest difference {float(err.max()):.3g})"
        )
    return float(err.max()) if err.size else 0.0
