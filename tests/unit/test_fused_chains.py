"""The CPU's fused loops (Numba, no fast math) give NumPy's bits, op by op, for random
chains holding multiply-then-add and division: LLVM contracts nothing into a fused
multiply-add. tests/gpu/test_fused_chains_gpu.py checks the same chains on CuPy's kernels."""

from __future__ import annotations

import numpy as np
from fused_chains import assert_same_bits, chains
from hypothesis import HealthCheck, given, settings

from daskgraph.kernels.fused import compile_now


@settings(max_examples=40, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])  # fmt: skip
@given(chains())
def test_a_fused_loop_gives_numpys_bits_for_multiply_add_chains(chain) -> None:
    kernel, dtype, inputs = chain
    with np.errstate(all="ignore"):
        assert compile_now(kernel, *inputs) is not None, f"{kernel!r} did not compile"
        looped = kernel.looped(inputs[0].shape, tuple(inputs))
        numpy = kernel.one_by_one(np, tuple(inputs))
    assert looped is not None
    assert_same_bits(looped, numpy, f"{kernel.steps} ({dtype})")
