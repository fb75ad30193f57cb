"""Fused CuPy kernels bit for bit on a real NVIDIA GPU: for random chains holding
multiply-then-add (``x * y + z``, ``z - a * b``) and division, float32 and float64, one fused
kernel (NVRTC ``--fmad=false``) gives the bits of CuPy's ops one by one and of NumPy's, its
NaNs where theirs are. The same chains run on the CPU's loops in tests/unit/test_fused_chains.py.

Marked ``gpu`` (skipped where ``nvidia-smi -L`` finds no GPU); needs the ``cuda12`` or
``cuda13`` extra. ``make gpu-check`` reports it as its own row.
"""

from __future__ import annotations

import pathlib
import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

from daskgraph.kernels.fused_cuda import call_on_cupy

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "unit"))
from fused_chains import assert_same_bits, chains  # (the CPU test's chains)

pytestmark = pytest.mark.gpu


@settings(max_examples=40, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])  # fmt: skip
@given(chains())
def test_a_fused_cupy_kernel_gives_the_bits_of_cupy_and_numpy_op_by_op(chain) -> None:
    import cupy as cp

    kernel, dtype, inputs = chain
    on_gpu = tuple(cp.asarray(x) for x in inputs)
    what = f"{kernel.steps} ({dtype})"
    with np.errstate(all="ignore"):
        # a chain's first call rents (op by op, None), the next builds the kernel; hypothesis
        # may draw a chain again, then it is built already
        fused = call_on_cupy(kernel, cp, on_gpu)
        fused = call_on_cupy(kernel, cp, on_gpu) if fused is None else fused
        assert fused is not None, f"{what}: no fused kernel (NVRTC refused it: DEBUG log)"
        unfused = kernel.one_by_one(cp, on_gpu)
        numpy = kernel.one_by_one(np, tuple(inputs))
    assert_same_bits(cp.asnumpy(fused), cp.asnumpy(unfused), f"{what}, fused vs CuPy op by op")
    assert_same_bits(cp.asnumpy(fused), numpy, f"{what}, fused vs NumPy")
