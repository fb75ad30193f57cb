"""Fused kernels on a real NVIDIA GPU: every fusable function as one CuPy kernel gives
CuPy's op-by-op bits (NaNs apart), and a 30-op chain over 64 MiB runs as one kernel.

Marked ``gpu`` (skipped where ``nvidia-smi -L`` finds no GPU); needs the ``cuda12`` or
``cuda13`` extra.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from daskgraph.kernels.fusable import FUSABLE
from daskgraph.kernels.fused import FusedKernel

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", sorted(FUSABLE))
def test_every_fusable_function_gives_cupys_bits(name, dtype):
    import cupy as cp

    rng = np.random.default_rng(1)
    values = rng.standard_normal(1000).astype(dtype)
    values[:4] = [0.0, -0.0, np.inf, np.nan]
    logical = name.startswith("logical")
    x = values > 0 if logical else values
    y = np.roll(values, 3) <= 0 if logical else np.roll(values, 3)
    arity = len(set(re.findall(r"\{(\d)\}", FUSABLE[name])))
    inputs = {1: (x,), 2: (x, y), 3: (values > 0, x, y)}[arity]
    kernel = FusedKernel((("op", name, tuple(range(arity))),), arity)
    on_gpu = [cp.asarray(a) for a in inputs]
    with np.errstate(all="ignore"):
        for _ in range(2):  # the second call builds the kernel
            kernel(cp, *on_gpu)
        fused = cp.asnumpy(kernel(cp, *on_gpu))
        unfused = cp.asnumpy(kernel.one_by_one(cp, tuple(on_gpu)))
    nan = np.isnan(unfused) if unfused.dtype.kind == "f" else np.zeros(unfused.shape, bool)
    assert (np.isnan(fused) == nan).all() if fused.dtype.kind == "f" else True
    assert fused[~nan].tobytes() == unfused[~nan].tobytes(), name


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_the_fused_sigmoid_keeps_cupys_small_values(dtype):
    """``1 / (1 + exp(100))`` would be 0: the kernel's formula keeps the sigmoid of -100
    (3.7e-44, a subnormal float32) within RELAXED_RTOL of CuPy's op by op."""
    import cupy as cp

    from daskgraph.kernels.fusable import RELAXED_RTOL

    x = cp.asarray(np.array([-800.0, -100.0, -20.0, 0.0, 20.0, 100.0], dtype))
    big = cp.full(x.shape, 1e30, dtype)
    kernel = FusedKernel((("s", "sigmoid", (0,)), ("m", "multiply", (2, 1))), 2)
    for _ in range(2):  # the second call builds the kernel
        kernel(cp, x, big)
    fused = cp.asnumpy(kernel(cp, x, big))
    unfused = cp.asnumpy(kernel.one_by_one(cp, (x, big)))
    assert fused[1] > 0
    np.testing.assert_allclose(fused, unfused, rtol=RELAXED_RTOL[dtype])
