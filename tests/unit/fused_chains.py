"""Random elementwise chains with multiply-then-add in them, and bit-for-bit comparison: what
the fused-kernel property tests draw (tests/unit/test_fused_chains.py on the CPU's compiled
loops, tests/gpu/test_fused_chains_gpu.py on CuPy's kernels).

A chain is a :class:`~daskgraph.kernels.fused.FusedKernel` over three inputs built from motifs:
a product then a sum or difference with a third value (``x * y + z``, ``z - a * b``: what a
compiler contracts into one fused multiply-add, rounding once where NumPy rounds twice), a
quotient, or a square root, square or negation. The inputs mix ordinary values (where the
product's rounding shows in the sum's last bit) with zeros, infinities, NaN and subnormals.
"""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from daskgraph.kernels.fused import FusedKernel

N_INPUTS = 3
#: values every input holds besides the drawn ones
EDGES = (0.0, -0.0, np.inf, -np.inf, np.nan, 1e-40, -1e-45, 1.0, -1.0, 3.0)
SIZE = 256


@st.composite
def motif(draw, values: int) -> list[tuple[str, tuple[int, ...]]]:
    """One motif's steps (function name, argument slots) over ``values`` values so far."""
    slot = st.integers(0, values - 1)
    kind = draw(st.sampled_from(("multiply-add", "multiply-add", "divide", "unary")))
    if kind == "multiply-add":
        a, b, c = draw(slot), draw(slot), draw(slot)
        then = draw(st.sampled_from(("add", "subtract")))
        first = draw(st.booleans())
        return [("multiply", (a, b)), (then, (values, c) if first else (c, values))]
    if kind == "divide":
        return [("divide", (draw(slot), draw(slot)))]
    return [(draw(st.sampled_from(("sqrt", "square", "negative"))), (draw(slot),))]


@st.composite
def chains(draw) -> tuple[FusedKernel, str, list[np.ndarray]]:
    """(a chain of 1 to 5 motifs, the last one's value its result; its dtype; its inputs)."""
    dtype = draw(st.sampled_from(("float32", "float64")))
    steps: list[tuple[str, str, tuple[int, ...]]] = []
    for _ in range(draw(st.integers(1, 5))):
        for name, args in draw(motif(N_INPUTS + len(steps))):
            steps.append((f"op{len(steps)}", name, args))
    seed = draw(st.integers(0, 2**32 - 1))
    return FusedKernel(tuple(steps), N_INPUTS), dtype, inputs(dtype, seed)


def inputs(dtype: str, seed: int) -> list[np.ndarray]:
    """Three inputs of ``dtype``: :data:`EDGES`, then values spread over many magnitudes."""
    rng = np.random.default_rng(seed)
    drawn = rng.standard_normal((N_INPUTS, SIZE - len(EDGES))) * 10.0 ** rng.integers(
        -3, 4, (N_INPUTS, SIZE - len(EDGES))
    )
    return [np.concatenate([np.roll(EDGES, k), row]).astype(dtype) for k, row in enumerate(drawn)]


def bits(values: np.ndarray) -> np.ndarray:
    """``values`` as unsigned integers of their width, every NaN as one NaN: where the NaNs
    are must match, not their sign and payload, which are the hardware's and the compiler's
    (NumPy's ``-(0 / 0)`` is a positive NaN on x86, a Numba loop's a negative one; a GPU
    makes others again).

    >>> bits(np.array([1.0, -np.nan], np.float32)).tolist()
    [1065353216, 2143289344]
    """
    values = np.ascontiguousarray(values)
    values = np.where(np.isnan(values), values.dtype.type(np.nan), values)
    return values.view(f"u{values.dtype.itemsize}")


def assert_same_bits(found: np.ndarray, expected: np.ndarray, what: str) -> None:
    """``found`` is ``expected`` bit for bit, its NaNs where ``expected``'s are."""
    assert found.dtype == expected.dtype, f"{what}: dtype {found.dtype}, not {expected.dtype}"
    got, want = bits(found), bits(expected)
    differ = np.flatnonzero(got != want)
    assert differ.size == 0, (
        f"{what}: {differ.size} of {got.size} elements differ, first at {differ[0]}: "
        f"{found.reshape(-1)[differ[0]]!r} against {expected.reshape(-1)[differ[0]]!r}"
    )
