"""Fusion under TensorFlow's JIT switches, and long chains: each fused kernel stays within
RELAXED_RTOL of its ops one by one (the sigmoid never overflows, a sum or difference never
cancels a transcendental's last bits), and a chain too long for one compile is split."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import daskgraph as dg
from daskgraph.cluster.topology import Device
from daskgraph.framework.op_registry import ArrayFunction
from daskgraph.kernels.fusable import KERNELS, RELAXED_RTOL
from daskgraph.kernels.fused import SMALL_ELEMENTS, compile_now, settle
from daskgraph.runtime.planner.fusion import FUSED, MAX_KERNEL_SIZE, fuse
from daskgraph.runtime.planner.lowering import lower
from daskgraph.runtime.planner.placement import place
from daskgraph.runtime.program import RunStep
from daskgraph.runtime.worker.execution import execute_partition

CPU0 = "/job:localhost/replica:0/task:0/device:CPU:0"
UNARY = ("negative", "abs", "square", "sqrt", "reciprocal", "relu")
TRANSCENDENTAL = ("exp", "log", "tanh", "sin", "cos", "log1p", "expm1", "sigmoid")
BINARY = ("add", "subtract", "multiply", "divide", "maximum", "minimum", "sigmoid_grad")
#: the edges a chain's inputs take: where exp over- and underflows, the smallest normal
#: numbers, large ones, and a few ordinary ones
EDGES = (-100.0, 100.0, -88.5, 88.5, -20.0, 1e-38, -1e-38, 1e-30, 1e30, -1e30, 0.0, -0.0, 1.0,
         -1.0, 0.5, 3.0, -3.0, 1e-4)  # fmt: skip
#: the constants a chain adds or multiplies by
CONSTANTS = (1.0, -1.0, 2.0, 0.5, 1e30, -1e-30)


def _kernel(name: str):
    return KERNELS.get(name) or ArrayFunction(name)


def _inputs(dtype: str, floats: list[float]) -> list[np.ndarray]:
    """A chain's three inputs: every edge against every constant, then ``floats``."""
    edges = np.repeat(EDGES, len(CONSTANTS))
    return [np.array([*edges, *floats], dtype), np.array([*floats, *edges[::-1]], dtype),
            np.array([*np.tile(CONSTANTS, len(EDGES)), *floats], dtype)]  # fmt: skip


def _chain(dtype: str, *steps: tuple[str, tuple[int, ...]]) -> tuple:
    """A chain of ``steps`` (function name, argument slots) over :func:`_inputs`."""
    instructions = [(f"op{k}", name, _kernel(name), {}, args, 3 + k, False, ())
                    for k, (name, args) in enumerate(steps)]  # fmt: skip
    return instructions, _inputs(dtype, [0.0] * 4), dtype


@st.composite
def _chains(draw):
    """A partition's instructions: three inputs (slots 0-2: every edge against every
    constant, then random values), then a chain of elementwise ops as a model's elementwise
    tail has them: a function of the value so far, then an op with an input or a constant,
    and so on; its inputs; its dtype."""
    dtype = draw(st.sampled_from(["float32", "float64"]))
    inputs = _inputs(dtype, draw(st.lists(st.floats(-150, 150, width=32), min_size=4, max_size=4)))
    instructions: list[tuple] = []
    for k in range(draw(st.integers(2, 8))):
        last = 3 + k - 1 if k else draw(st.integers(0, 1))
        if k % 2 == 0:
            name, args = draw(st.sampled_from(TRANSCENDENTAL) | st.sampled_from(UNARY)), (last,)
        else:
            name = draw(st.sampled_from(BINARY))
            other = draw(st.just(2) | st.integers(0, 2))
            args = (last, other) if draw(st.booleans()) else (other, last)
        instructions.append((f"op{k}", name, _kernel(name), {}, args, 3 + k, False, ()))
    return instructions, inputs, dtype


def _assert_within(fused, unfused, dtype: str, what: str) -> None:
    """``fused`` within RELAXED_RTOL of ``unfused`` (measured against the smallest normal
    number where smaller; a value beyond the largest finite one counts as that one)."""
    nan = np.isnan(unfused)
    np.testing.assert_array_equal(np.isnan(fused), nan, err_msg=what)
    info = np.finfo(dtype)
    f = np.clip(fused[~nan], -info.max, info.max).astype(np.float64)
    u = np.clip(unfused[~nan], -info.max, info.max).astype(np.float64)
    bound = RELAXED_RTOL[dtype] * np.maximum(np.abs(u), info.tiny)
    assert (np.abs(f - u) <= bound).all(), f"{what}: fused {f} unfused {u}"


@settings(max_examples=60, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])  # fmt: skip
@given(_chains())
@example(_chain("float32", ("sigmoid", (0,)), ("multiply", (3, 2))))  # the probe's W1
@example(_chain("float64", ("exp", (0,)), ("subtract", (3, 2))))  # exp(1e-4) - 1
def test_every_jit_kernel_stays_within_relaxed_rtol_of_its_ops_one_by_one(chain) -> None:
    instructions, inputs, dtype = chain
    n = len(instructions)
    fused, _ = fuse(instructions, [dtype] * n, kept={3 + n - 1}, relaxed=[True] * n)
    slots: dict[int, np.ndarray] = dict(enumerate(inputs))
    with np.errstate(all="ignore"):
        for ins in fused:
            values = [slots[s] for s in ins[4]]
            if ins[1] != FUSED:
                slots[ins[5]] = ins[2](np, *values)
                continue
            kernel = ins[2]
            assert compile_now(kernel, *values) is not None
            looped = kernel.looped(values[0].shape, tuple(values))
            _assert_within(looped, kernel.one_by_one(np, values), dtype, repr(kernel.steps))
            slots[ins[5]] = looped


def _jit_program(build):
    with dg.Graph().as_default() as g:
        x = dg.placeholder(dg.float32, [8], name="x")
        y = build(x)
    devices = [Device(CPU0, worker="CPU:0", kind="cpu")]
    (partition,) = lower(place(g, devices), [y], [x], jit=True).partitions
    return partition.program


def _kernels(program):
    return [ins.kernel.op_names for ins in program.instructions if ins.op_type == FUSED]


def test_a_transcendental_fuses_where_what_follows_keeps_its_error_bounded() -> None:
    scaled = _jit_program(lambda x: dg.sigmoid(x, name="s") * 2.0 / dg.exp(x, name="e"))
    assert [set(k) for k in _kernels(scaled)] == [{"s", "e", "mul", "truediv"}]
    # a difference would cancel the sigmoid's last bits: it stays NumPy's
    centred = _jit_program(lambda x: dg.sigmoid(x, name="s") * 2.0 - 1.0)
    assert all("s" not in k for k in _kernels(centred)) and _kernels(centred)


def _run_three_times(program, session: str, feeds: tuple):
    """The third run's result: the second starts the compiles, the third runs them."""
    for number in range(1, 4):
        (result,) = execute_partition(program, RunStep(session, number), feeds, False)
        settle()
    return result


def test_a_long_chain_is_split_into_kernels_of_at_most_the_cap_with_the_same_bits() -> None:
    with dg.Graph().as_default() as g:
        x = dg.placeholder(dg.float32, [SMALL_ELEMENTS], name="x")  # (each piece loops)
        y = x
        for i in range(MAX_KERNEL_SIZE):  # 2 * MAX_KERNEL_SIZE ops, as many constants
            y = y * (1.0 + i / 1000) - 0.25
    devices = [Device(CPU0, worker="CPU:0", kind="cpu")]
    fused, unfused = (lower(place(g, devices), [y], [x], fusion=f).partitions[0].program
                      for f in (True, False))  # fmt: skip
    kernels = [ins.kernel for ins in fused.instructions if ins.op_type == FUSED]
    assert len(kernels) >= 3
    assert all(len(k.steps) + k.n_inputs <= MAX_KERNEL_SIZE for k in kernels)
    assert sum(len(k.steps) for k in kernels) == 2 * MAX_KERNEL_SIZE
    value = (np.linspace(-3, 3, SMALL_ELEMENTS, dtype=np.float32),)
    looped = _run_three_times(fused, "split-fused", value)
    assert all(k._loops for k in kernels)  # each piece ran as its compiled loop
    np.testing.assert_array_equal(looped, _run_three_times(unfused, "split-unfused", value))
