"""TF1's other variable initializers: ``orthogonal_initializer``, ``identity`` (an identity
matrix) and ``uniform_unit_scaling_initializer``, as TensorFlow computes them (the random ones
draw with TF1's seed rules and NumPy's generators, as every daskgraph random op).

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

from daskgraph import dtypes
from daskgraph.graph import Tensor
from daskgraph.initializers import Initializer
from daskgraph.ops.array import reshape
from daskgraph.ops.elementwise import sign
from daskgraph.ops.linalg import qr
from daskgraph.ops.matrix import eye, matrix_diag_part, matrix_transpose
from daskgraph.ops.random import random_normal, random_uniform

__all__ = [
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
