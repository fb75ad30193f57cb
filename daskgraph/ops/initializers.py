"""Variable initializers: TensorFlow 1's ``tf.*_initializer`` / ``tf.initializers.*``.

An initializer is a callable ``init(shape, dtype=None, partition_info=None) -> Tensor``
that builds the ops computing a variable's initial value; ``get_variable`` calls it under the
name scope ``<variable>/Initializer/``. The random ones draw with the random ops of
:mod:`daskgraph.ops.random`, with TensorFlow 1's seeds (the graph seed and ``seed``).
``glorot_uniform_initializer`` is ``get_variable``'s default for float variables.

>>> import daskgraph as dg
>>> with dg.Graph().as_default():
...     w = dg.get_variable("w", [3, 2], initializer=constant_initializer(0.5))
...     b = dg.get_variable("b", [2], initializer=zeros_initializer())
...     with dg.Session() as sess:
...         sess.run(dg.global_variables_initializer())
...         sess.run(w).tolist(), sess.run(b).tolist()
([[0.5, 0.5], [0.5, 0.5], [0.5, 0.5]], [0.0, 0.0])
>>> compute_fans([3, 3, 16, 32])
(144, 288)

TF1's other variable initializers: ``orthogonal_initializer``, ``identity`` (an identity matrix)
and ``uniform_unit_scaling_initializer``, as TensorFlow computes them (the random ones draw with
TF1's seed rules and NumPy's generators, as every daskgraph random op).

>>> import numpy as np
>>> import daskgraph as dg
>>> with dg.Graph().as_default():
...     w = dg.get_variable("w", [4, 3], dg.float64, initializer=Orthogonal(seed=1))
...     with dg.Session() as sess:
...         sess.run(dg.global_variables_initializer())
...         value = sess.run(w)
>>> np.allclose(value.T @ value, np.eye(3))
True
"""

from __future__ import annotations

import math
from typing import Any

from daskgraph.framework import dtypes
from daskgraph.framework.graph import Tensor
from daskgraph.ops.array import constant, reshape
from daskgraph.ops.elementwise import sign
from daskgraph.ops.fill_ops import ones, zeros
from daskgraph.ops.linalg import qr
from daskgraph.ops.matrix import eye, matrix_diag_part, matrix_transpose
from daskgraph.ops.random import random_normal, random_uniform, truncated_normal

__all__ = [
    "Constant",
    "GlorotNormal",
    "GlorotUniform",
    "Initializer",
    "Ones",
    "RandomNormal",
    "RandomUniform",
    "TruncatedNormal",
    "VarianceScaling",
    "Zeros",
    "compute_fans",
    "constant_initializer",
    "glorot_normal_initializer",
    "glorot_uniform_initializer",
    "he_normal",
    "he_uniform",
    "lecun_normal",
    "lecun_uniform",
    "ones_initializer",
    "random_normal_initializer",
    "random_uniform_initializer",
    "truncated_normal_initializer",
    "variance_scaling_initializer",
    "zeros_initializer",
]

#: the standard deviation of a unit normal truncated to [-2, 2]
#: (``scipy.stats.truncnorm.std(a=-2, b=2)``), as TensorFlow's VarianceScaling uses
_TRUNCATED_STD = 0.87962566103423978


class Initializer:
    """The base of initializers: ``init(shape, dtype=None, partition_info=None)``."""

    def __init__(self, dtype: Any = dtypes.float32) -> None:
        self.dtype = dtypes.as_dtype(dtype)

    def __call__(self, shape: Any, dtype: Any = None, partition_info: Any = None) -> Tensor:
        """The tensor of the initial value of ``shape`` (dtype: ``dtype`` or the one given
        at construction)."""
        return self._make(_shape(shape), dtypes.as_dtype(dtype or self.dtype))

    def _make(self, shape: list[int], dtype: dtypes.DType) -> Tensor:
        raise NotImplementedError

    def get_config(self) -> dict[str, Any]:
        """The constructor arguments (TensorFlow's ``get_config``)."""
        return {"dtype": self.dtype.name}

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_config().items())
        return f"{type(self).__name__}({args})"


def _shape(shape: Any) -> list[int]:
    if isinstance(shape, int):
        return [shape]
    try:
        dims = [int(d) for d in shape]
    except (TypeError, ValueError):
        raise TypeError(f"initializer: shape must be a list of ints; got {shape!r}") from None
    if any(d < 0 for d in dims):
        raise ValueError(f"initializer: shape dimensions must be >= 0; got {shape!r}")
    return dims


class Zeros(Initializer):
    """All zeros (a ``Fill`` op named ``zeros``)."""

    def _make(self, shape: list[int], dtype: dtypes.DType) -> Tensor:
        return zeros(shape, dtype=dtype)


class Ones(Initializer):
    """All ones (a ``Fill`` op named ``ones``)."""

    def _make(self, shape: list[int], dtype: dtypes.DType) -> Tensor:
        return ones(shape, dtype=dtype)


class Constant(Initializer):
    """The value ``value``: a scalar (broadcast) or an array of the variable's size
    (reshaped), as ``tf.constant`` takes them."""

    def __init__(self, value: Any = 0, dtype: Any = dtypes.float32) -> None:
        super().__init__(dtype)
        self.value = value

    def _make(self, shape: list[int], dtype: dtypes.DType) -> Tensor:
        return constant(self.value, dtype=dtype, shape=shape)

    def get_config(self) -> dict[str, Any]:
        """The constructor arguments."""
        return {"value": self.value, "dtype": self.dtype.name}


class RandomUniform(Initializer):
    """Uniform in ``[minval, maxval)``."""

    def __init__(
        self,
        minval: Any = 0.0,
        maxval: Any = None,
        seed: int | None = None,
        dtype: Any = dtypes.float32,
    ) -> None:
        super().__init__(dtype)
        self.minval, self.maxval, self.seed = minval, maxval, seed

    def _make(self, shape: list[int], dtype: dtypes.DType) -> Tensor:
        return random_uniform(shape, self.minval, self.maxval, dtype=dtype, seed=self.seed)

    def get_config(self) -> dict[str, Any]:
        """The constructor arguments."""
        return {
            "minval": self.minval,
            "maxval": self.maxval,
            "seed": self.seed,
            "dtype": self.dtype.name,
        }


class RandomNormal(Initializer):
    """Normal with mean ``mean`` and standard deviation ``stddev``."""

    def __init__(
        self,
        mean: Any = 0.0,
        stddev: Any = 1.0,
        seed: int | None = None,
        dtype: Any = dtypes.float32,
    ) -> None:
        super().__init__(dtype)
        self.mean, self.stddev, self.seed = mean, stddev, seed

    def _make(self, shape: list[int], dtype: dtypes.DType) -> Tensor:
        return random_normal(shape, self.mean, self.stddev, dtype=dtype, seed=self.seed)

    def get_config(self) -> dict[str, Any]:
        """The constructor arguments."""
        return {
            "mean": self.mean,
            "stddev": self.stddev,
            "seed": self.seed,
            "dtype": self.dtype.name,
        }


class TruncatedNormal(RandomNormal):
    """Normal truncated to two standard deviations around ``mean`` (redrawn beyond)."""

    def _make(self, shape: list[int], dtype: dtypes.DType) -> Tensor:
        return truncated_normal(shape, self.mean, self.stddev, dtype=dtype, seed=self.seed)


def compute_fans(shape: Any) -> tuple[int, int]:
    """(fan_in, fan_out) of a weight of ``shape``, as TensorFlow computes them: a matrix is
    ``[in, out]``; a convolution kernel ``[..., in, out]`` multiplies both by its window."""
    shape = _shape(shape)
    if not shape:
        return 1, 1
    if len(shape) == 1:
        return shape[0], shape[0]
    window = math.prod(shape[:-2])
    return shape[-2] * window, shape[-1] * window


_MODES = ("fan_in", "fan_out", "fan_avg")
_DISTRIBUTIONS = ("normal", "uniform", "truncated_normal", "untruncated_normal")


class VarianceScaling(Initializer):
    """Samples with variance ``scale / n``, ``n`` the fan-in, fan-out or their average.

    ``distribution`` is ``"truncated_normal"`` (or ``"normal"``, its TF1 alias: a normal
    truncated to two standard deviations, its stddev corrected for the truncation),
    ``"untruncated_normal"`` or ``"uniform"`` (in ``[-sqrt(3 scale / n), +...]``).
    """

    def __init__(
        self,
        scale: float = 1.0,
        mode: str = "fan_in",
        distribution: str = "truncated_normal",
        seed: int | None = None,
        dtype: Any = dtypes.float32,
    ) -> None:
        super().__init__(dtype)
        if scale <= 0.0:
            raise ValueError(f"`scale` must be positive float; got {scale!r}")
        if mode not in _MODES:
            raise ValueError(f"Invalid `mode` argument: {mode!r}; expected one of {_MODES}")
        if str(distribution).lower() not in _DISTRIBUTIONS:
            raise ValueError(
                f"Invalid `distribution` argument: {distribution!r}; expected one of "
                f"{_DISTRIBUTIONS}"
            )
        self.scale, self.mode, self.seed = scale, mode, seed
        self.distribution = str(distribution).lower()

    def _make(self, shape: list[int], dtype: dtypes.DType) -> Tensor:
        fan_in, fan_out = compute_fans(shape)
        n = {"fan_in": fan_in, "fan_out": fan_out, "fan_avg": (fan_in + fan_out) / 2.0}
        scale = self.scale / max(1.0, n[self.mode])
        if self.distribution in ("normal", "truncated_normal"):
            stddev = math.sqrt(scale) / _TRUNCATED_STD
            return truncated_normal(shape, 0.0, stddev, dtype=dtype, seed=self.seed)
        if self.distribution == "untruncated_normal":
            return random_normal(shape, 0.0, math.sqrt(scale), dtype=dtype, seed=self.seed)
        limit = math.sqrt(3.0 * scale)
        return random_uniform(shape, -limit, limit, dtype=dtype, seed=self.seed)

    def get_config(self) -> dict[str, Any]:
        """The constructor arguments."""
        return {
            "scale": self.scale,
            "mode": self.mode,
            "distribution": self.distribution,
            "seed": self.seed,
            "dtype": self.dtype.name,
        }


class GlorotUniform(VarianceScaling):
    """Glorot (Xavier) uniform: in ``[-sqrt(6 / (fan_in + fan_out)), +...]``."""

    def __init__(self, seed: int | None = None, dtype: Any = dtypes.float32) -> None:
        super().__init__(1.0, "fan_avg", "uniform", seed, dtype)

    def get_config(self) -> dict[str, Any]:
        """The constructor arguments."""
        return {"seed": self.seed, "dtype": self.dtype.name}


class GlorotNormal(VarianceScaling):
    """Glorot (Xavier) normal: truncated normal with stddev ``sqrt(2 / (fan_in + fan_out))``
    (before the truncation's correction)."""

    def __init__(self, seed: int | None = None, dtype: Any = dtypes.float32) -> None:
        super().__init__(1.0, "fan_avg", "truncated_normal", seed, dtype)

    def get_config(self) -> dict[str, Any]:
        """The constructor arguments."""
        return {"seed": self.seed, "dtype": self.dtype.name}


# -- TensorFlow 1's function names -----------------------------------------------------------------
zeros_initializer = Zeros
ones_initializer = Ones
constant_initializer = Constant
random_uniform_initializer = RandomUniform
random_normal_initializer = RandomNormal
truncated_normal_initializer = TruncatedNormal
variance_scaling_initializer = VarianceScaling
glorot_uniform_initializer = GlorotUniform
glorot_normal_initializer = GlorotNormal


def he_normal(seed: int | None = None) -> VarianceScaling:
    """He normal: truncated normal with variance ``2 / fan_in``."""
    return VarianceScaling(2.0, "fan_in", "truncated_normal", seed)


def he_uniform(seed: int | None = None) -> VarianceScaling:
    """He uniform: uniform with variance ``2 / fan_in``."""
    return VarianceScaling(2.0, "fan_in", "uniform", seed)


def lecun_normal(seed: int | None = None) -> VarianceScaling:
    """LeCun normal: truncated normal with variance ``1 / fan_in``."""
    return VarianceScaling(1.0, "fan_in", "truncated_normal", seed)


def lecun_uniform(seed: int | None = None) -> VarianceScaling:
    """LeCun uniform: uniform with variance ``1 / fan_in``."""
    return VarianceScaling(1.0, "fan_in", "uniform", seed)


# -- from initializers_more ---------------------------------------------------------------
__all__ += [
    "Identity",
    "Orthogonal",
    "UniformUnitScaling",
    "identity_initializer",
    "orthogonal_initializer",
    "uniform_unit_scaling_initializer",
]


def _floating(dtype: dtypes.DType, where: str) -> dtypes.DType:
    if not dtype.is_floating:
        raise ValueError(f"{where}: expected a floating point dtype; got {dtype.name}")
    return dtype


class Orthogonal(Initializer):
    """A random orthogonal matrix (of the flattened leading axes by the last one), times
    ``gain``: the Q of the QR decomposition of a normal matrix, its columns' signs fixed by
    R's diagonal (``tf.orthogonal_initializer``)."""

    def __init__(self, gain: float = 1.0, seed: int | None = None, dtype: Any = dtypes.float32):
        super().__init__(dtype)
        self.gain, self.seed = float(gain), seed

    def _make(self, shape: list[int], dtype: dtypes.DType) -> Tensor:
        dtype = _floating(dtype, "orthogonal_initializer")
        if len(shape) < 2:
            raise ValueError("The tensor to initialize must be at least two-dimensional")
        rows = math.prod(shape[:-1])
        cols = shape[-1]
        flat = (cols, rows) if rows < cols else (rows, cols)
        a = random_normal(list(flat), dtype=dtype, seed=self.seed)
        q, r = qr(a, full_matrices=False)
        q = q * sign(matrix_diag_part(r))
        if rows < cols:
            q = matrix_transpose(q)
        return self.gain * reshape(q, shape)

    def get_config(self) -> dict[str, Any]:
        """The constructor arguments."""
        return {"gain": self.gain, "seed": self.seed, "dtype": self.dtype.name}


class Identity(Initializer):
    """The identity matrix (ones on the diagonal of a 2-D shape, which may be rectangular),
    times ``gain`` (``tf.initializers.identity``)."""

    def __init__(self, gain: float = 1.0, dtype: Any = dtypes.float32) -> None:
        super().__init__(dtype)
        self.gain = float(gain)

    def _make(self, shape: list[int], dtype: dtypes.DType) -> Tensor:
        if len(shape) != 2:
            raise ValueError("Identity matrix initializer can only be used for 2D matrices.")
        return self.gain * eye(shape[0], shape[1], dtype=_floating(dtype, "identity"))

    def get_config(self) -> dict[str, Any]:
        """The constructor arguments."""
        return {"gain": self.gain, "dtype": self.dtype.name}


class UniformUnitScaling(Initializer):
    """Uniform in ``[-m, m]``, ``m = factor * sqrt(3 / n)`` with ``n`` the product of all
    dimensions but the last (TF1's ``uniform_unit_scaling_initializer``: keeps the scale of
    the input of a matrix product or convolution)."""

    def __init__(self, factor: float = 1.0, seed: int | None = None, dtype: Any = dtypes.float32):
        super().__init__(dtype)
        self.factor, self.seed = float(factor), seed

    def _make(self, shape: list[int], dtype: dtypes.DType) -> Tensor:
        dtype = _floating(dtype, "uniform_unit_scaling_initializer")
        input_size = max(float(math.prod(shape[:-1])), 1.0)
        limit = math.sqrt(3.0 / input_size) * self.factor
        return random_uniform(shape, -limit, limit, dtype=dtype, seed=self.seed)

    def get_config(self) -> dict[str, Any]:
        """The constructor arguments."""
        return {"factor": self.factor, "seed": self.seed, "dtype": self.dtype.name}


orthogonal_initializer = Orthogonal
identity_initializer = Identity
uniform_unit_scaling_initializer = UniformUnitScaling
