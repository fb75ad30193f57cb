"""Stateless random kernels: values that are a function of a seed tensor.

The kernels of :mod:`daskgraph.ops.stateless_random`'s ops, each ``kernel(xp, *inputs, **attrs)``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from daskgraph.errors import InvalidArgumentError
from daskgraph.kernels.fill_ops import runtime_shape
from daskgraph.kernels.random import _truncated

_MASK = 2**64 - 1


def _host(value: Any) -> np.ndarray:
    get = getattr(value, "get", None)  # a CuPy array comes to the host
    return np.asarray(get() if callable(get) and not isinstance(value, np.ndarray) else value)


def _rng(seed: Any) -> np.random.Generator:
    pair = _host(seed).reshape(-1)
    if pair.shape != (2,):
        raise InvalidArgumentError(f"seed must have shape [2], not {list(_host(seed).shape)}")
    return np.random.default_rng([int(v) & _MASK for v in pair.tolist()])


def _draw(rng: np.random.Generator, kind: str, size: tuple, dtype: Any, low: Any, high: Any):
    if kind == "uniform_int":
        return rng.integers(low, high, size=size, dtype=dtype)
    wide = np.float64 if dtype == np.float64 else np.float32
    if kind == "uniform":
        values = rng.random(size, dtype=wide)
    elif kind == "normal":
        values = rng.standard_normal(size, dtype=wide)
    else:
        values = _truncated(rng, size, wide)
    return values.astype(dtype, copy=False)


def _stateless_kernel(xp, seed, *dims, kind, shape, dtype, low, high):
    size = runtime_shape(np, _host(dims[0]), kind) if shape is None else tuple(shape)
    values = _draw(_rng(seed), kind, size, dtype, low, high)
    if dtype == np.float16 and kind == "uniform":  # in [0, 1) also after rounding
        values = np.minimum(values, np.nextafter(np.float16(1.0), np.float16(0.0)))
    return xp.asarray(values)


def _categorical_kernel(xp, seed, logits, num_samples, *, dtype):
    logits, count = _host(logits).astype(np.float64), int(_host(num_samples))
    if logits.ndim != 2 or count < 0 or logits.shape[1] == 0:
        raise InvalidArgumentError(
            f"logits should be a matrix with classes, and num_samples nonnegative; got logits "
            f"of shape {list(logits.shape)} and num_samples {count}"
        )
    top = np.max(logits, axis=1, keepdims=True)
    cdf = np.cumsum(np.exp(logits - np.where(np.isfinite(top), top, 0.0)), axis=1)
    draws = _rng(seed).random((logits.shape[0], count)) * cdf[:, -1:]
    picked = np.empty(draws.shape, np.int64)
    for i in range(logits.shape[0]):
        picked[i] = np.searchsorted(cdf[i], draws[i], side="right")
    return xp.asarray(np.minimum(picked, logits.shape[1] - 1).astype(dtype))
