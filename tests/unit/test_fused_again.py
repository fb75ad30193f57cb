"""A fused kernel called again: with inputs like its last call's it goes straight to the loop
that call took, and any input that differs (dtype, shape, order, writability, scalar or
array) takes the full path: NumPy's result, bit for bit and dtype for dtype, either way. Op
by op, it looks its functions up once per array module."""

from __future__ import annotations

import numpy as np
import pytest

from daskgraph.kernels import fused, fused_again
from daskgraph.kernels.fused import FusedKernel, compile_now

#: a chain long enough to take the loop on a small array (worth_a_loop)
STEPS = tuple((f"s{i}", "add" if i % 2 else "multiply", (i + 1 if i else 0, 1)) for i in range(8))


def _kernel() -> FusedKernel:
    return FusedKernel(STEPS, 2)


def _same(found, expected) -> bool:
    return found.dtype == expected.dtype and found.tobytes() == expected.tobytes()


@pytest.fixture
def kinds_counted(monkeypatch):
    """How many times the full path classified an input (fused._kind)."""
    calls = []
    kind = fused._kind

    def counted(x):
        calls.append(x)
        return kind(x)

    monkeypatch.setattr(fused, "_kind", counted)
    return calls


def test_a_call_like_the_last_skips_classifying_its_inputs(kinds_counted):
    kernel = _kernel()
    x = np.linspace(-2, 2, 64, dtype=np.float32).reshape(8, 8)
    scale = np.asarray(np.float32(0.75))  # a constant: a read-only 0-d array
    scale.flags.writeable = False
    assert compile_now(kernel, x, scale) is not None
    expected = kernel.one_by_one(np, (x, scale))
    assert _same(kernel(np, x, scale), expected)
    classified = len(kinds_counted)
    assert classified > 0
    for _ in range(3):
        assert _same(kernel(np, x, scale), expected)
    assert len(kinds_counted) == classified


def _variants(x: np.ndarray, scale: np.float32) -> list[tuple]:
    readonly = x.copy()
    readonly.flags.writeable = False
    return [
        (x, np.float64(0.75)),  # a float64 scalar: a float64 result (NEP 50)
        (x.astype(np.float64), scale),
        (x[:, :4], scale),  # another shape, not C-contiguous
        (np.asfortranarray(x), scale),
        (readonly, scale),
        (x.reshape(-1), scale),
        (x, np.full((8, 8), 0.75, np.float32)),  # an array where a scalar was
        (np.float32(1.5), x),  # a scalar where an array was
        (x, 0.75),  # a Python number
        (x.tolist(), scale),  # not an array at all
    ]


@pytest.mark.parametrize("case", range(10))
def test_inputs_unlike_the_last_call_s_take_the_full_path(case, kinds_counted):
    kernel = _kernel()
    x = np.linspace(-2, 2, 64, dtype=np.float32).reshape(8, 8)
    scale = np.float32(0.75)
    assert compile_now(kernel, x, scale) is not None
    kernel(np, x, scale)
    before = len(kinds_counted)
    kernel(np, x, scale)
    assert len(kinds_counted) == before  # the call like the last went straight to its loop
    inputs = _variants(x, scale)[case]
    expected = kernel.one_by_one(np, tuple(np.asarray(v) if isinstance(v, list) else v
                                           for v in inputs))  # fmt: skip
    found = kernel(np, *inputs)
    assert _same(np.asarray(found), np.asarray(expected))
    assert isinstance(found, np.ndarray) == isinstance(expected, np.ndarray)
    assert len(kinds_counted) > before or fused._loop_shape(inputs) is None
    assert _same(kernel(np, x, scale), kernel.one_by_one(np, (x, scale)))  # and back again


class _CountingModule:
    """An array module that counts the functions looked up on it (NumPy's, underneath)."""

    __name__ = "counting"

    def __init__(self) -> None:
        self.looked_up: list[str] = []

    def __getattr__(self, name: str):
        self.looked_up.append(name)
        return getattr(np, name)


def test_op_by_op_a_kernel_looks_its_functions_up_once_per_array_module():
    kernel = _kernel()
    x = np.linspace(-2, 2, 64, dtype=np.float32).reshape(8, 8)
    scale = np.float32(0.75)
    expected = kernel.one_by_one(np, (x, scale))
    counting = _CountingModule()
    for _ in range(3):
        assert _same(kernel(counting, x, scale), expected)
    assert len(counting.looked_up) == len(STEPS)  # once each, on the first call
    other = _CountingModule()
    assert _same(kernel(other, x, scale), expected)  # another module: its own functions
    assert len(other.looked_up) == len(STEPS)


def test_a_kernel_of_many_inputs_takes_the_full_path_and_gives_numpys_result(kinds_counted):
    n = fused_again.MAX_INPUTS + 1
    kernel = FusedKernel(
        (("s0", "add", (0, 1)), *[(f"s{i}", "add", (n + i - 1, i + 1)) for i in range(1, n - 1)]),
        n,
    )
    inputs = [np.full(16, i, np.float32) for i in range(n)]
    assert compile_now(kernel, *inputs) is not None
    expected = kernel.one_by_one(np, tuple(inputs))
    for _ in range(3):
        before = len(kinds_counted)
        assert _same(kernel(np, *inputs), expected)
        assert len(kinds_counted) > before  # classified every call
    assert kernel._again is None
