"""Random kernels: normal, uniform and truncated normal draws, seeded per op as in TensorFlow 1.

The kernels of :mod:`daskgraph.ops.random`'s ops, each ``kernel(xp, *inputs, **attrs)``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from daskgraph.errors import InvalidArgumentError
from daskgraph.framework import dtypes
from daskgraph.kernels.fill_ops import runtime_shape

_INDEX = frozenset({dtypes.int32, dtypes.int64})
_FLOAT_OPS = dtypes.FLOATING | _INDEX  # the output, and an optional shape tensor
_BELOW_ONE_FLOAT16 = float(np.nextafter(np.float16(1.0), np.float16(0.0)))


# -- kernels: ``store`` is the variable store of the session on this device ---------------------
def _generator(store, key, seed, seed2):
    def make():
        entropy = None if seed is None else [seed, seed2]
        return np.random.default_rng(entropy)

    return store.random_generator((key, seed, seed2), make)


def _draw(xp, store, inputs, shape, dtype, seed, seed2, key, draw):
    rng = _generator(store, key, seed, seed2)
    size = runtime_shape(xp, inputs[0], key) if shape is None else shape
    values = draw(rng, size, np.float64 if dtype == np.float64 else np.float32)
    return xp.asarray(values.astype(dtype, copy=False))


def _normal(rng, size, dtype):
    return rng.standard_normal(size, dtype=dtype)


def _uniform(rng, size, dtype):
    return rng.random(size, dtype=dtype)


def _truncated(rng, size, dtype):
    """Standard normal values, those of magnitude 2 or more drawn again (as TensorFlow)."""
    values = rng.standard_normal(size, dtype=dtype)
    outside = np.abs(values) >= 2.0
    while outside.any():
        values[outside] = rng.standard_normal(int(outside.sum()), dtype=dtype)
        outside = np.abs(values) >= 2.0
    return values


def _normal_kernel(xp, store, *inputs, shape, dtype, seed, seed2, key):
    return _draw(xp, store, inputs, shape, dtype, seed, seed2, key, _normal)


def _uniform_kernel(xp, store, *inputs, shape, dtype, seed, seed2, key):
    values = _draw(xp, store, inputs, shape, dtype, seed, seed2, key, _uniform)
    if dtype == np.float16:  # in [0, 1) also after rounding: a float32 near 1 rounds up
        values = xp.minimum(values, _BELOW_ONE_FLOAT16).astype(dtype)
    return values


def _truncated_kernel(xp, store, *inputs, shape, dtype, seed, seed2, key):
    return _draw(xp, store, inputs, shape, dtype, seed, seed2, key, _truncated)


def _uniform_int_kernel(xp, store, *inputs, shape, dtype, seed, seed2, key, minval, maxval):
    def draw(rng, size, _):
        return rng.integers(minval, maxval, size=size, dtype=dtype)

    return _draw(xp, store, inputs, shape, dtype, seed, seed2, key, draw)


_KINDS = {
    "RandomStandardNormal": _normal_kernel,
    "RandomUniform": _uniform_kernel,
    "TruncatedNormal": _truncated_kernel,
}

_INDEX = frozenset({dtypes.int32, dtypes.int64})


def _host(value: Any) -> np.ndarray:
    get = getattr(value, "get", None)  # a CuPy array comes to the host to draw from
    return np.asarray(get() if callable(get) and not isinstance(value, np.ndarray) else value)


# -- kernels: ``store`` is the variable store of the session on this device ---------------------
def _shuffle_kernel(xp, store, value, *, seed, seed2, key):
    value = xp.asarray(value)
    if value.ndim == 0 or value.shape[0] <= 1:
        return value.copy()
    order = _generator(store, key, seed, seed2).permutation(value.shape[0])
    return value[xp.asarray(order)]


def _multinomial_kernel(xp, store, logits, num_samples, *, dtype, seed, seed2, key):
    logits, count = _host(logits).astype(np.float64), int(_host(num_samples))
    if logits.ndim != 2:
        raise InvalidArgumentError(f"logits should be a matrix, got shape {list(logits.shape)}")
    if count < 0:
        raise InvalidArgumentError(f"num_samples should be nonnegative, got {count}")
    if logits.shape[1] == 0:
        raise InvalidArgumentError("num_classes should be positive, got 0")
    rng = _generator(store, key, seed, seed2)
    top = np.max(logits, axis=1, keepdims=True)
    weights = np.exp(logits - np.where(np.isfinite(top), top, 0.0))
    cdf = np.cumsum(weights, axis=1)
    draws = rng.random((logits.shape[0], count)) * cdf[:, -1:]
    picked = np.empty(draws.shape, np.int64)
    for i in range(logits.shape[0]):  # the class whose cumulative weight passes each draw
        picked[i] = np.searchsorted(cdf[i], draws[i], side="right")
    picked = np.minimum(picked, logits.shape[1] - 1)
    return xp.asarray(picked.astype(dtype))


def _sampled(store, inputs, shape, key, seed, seed2, draw):
    """``draw(rng, parameter, size)`` of ``shape`` + the parameter's shape, on the host."""
    *dims, parameter = inputs
    size = runtime_shape(np, _host(dims[0]), key) if shape is None else tuple(shape)
    parameter = _host(parameter)
    return draw(_generator(store, key, seed, seed2), parameter, size + parameter.shape)


def _gamma_kernel(xp, store, *inputs, shape, dtype, seed, seed2, key):
    def draw(rng, alpha, size):
        return rng.gamma(alpha.astype(np.float64), size=size)

    values = _sampled(store, inputs, shape, key, seed, seed2, draw)
    return xp.asarray(values.astype(dtype))


def _poisson_kernel(xp, store, *inputs, shape, dtype, seed, seed2, key):
    def draw(rng, lam, size):
        return rng.poisson(lam.astype(np.float64), size=size)

    values = _sampled(store, inputs, shape, key, seed, seed2, draw)
    return xp.asarray(values.astype(dtype))


def _crop_kernel(xp, store, value, size, *, seed, seed2, key):
    value = xp.asarray(value)
    wanted = tuple(int(s) for s in _host(size).reshape(-1).tolist())
    if len(wanted) != value.ndim or any(d < s for d, s in zip(value.shape, wanted, strict=True)):
        raise InvalidArgumentError(
            f"assertion failed: [Need value.shape >= size, got ] "
            f"[{' '.join(map(str, value.shape))}] [{' '.join(map(str, wanted))}]"
        )
    rng = _generator(store, key, seed, seed2)
    starts = [int(rng.integers(0, d - s + 1)) for d, s in zip(value.shape, wanted, strict=True)]
    return value[tuple(slice(b, b + s) for b, s in zip(starts, wanted, strict=True))]
