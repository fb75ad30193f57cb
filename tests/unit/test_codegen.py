"""Hot programs become one generated function: same results, same errors, built off the
run's thread."""

from __future__ import annotations

import numpy as np
import pytest
from test_execution import chain_graph, one_partition

import daskgraph as dg
from daskgraph.runtime.program import RunStep
from daskgraph.runtime.worker import codegen, execution
from daskgraph.runtime.worker.execution import execute_partition
from daskgraph.runtime.worker.worker_state import current_state


def _hot(program, session: str) -> codegen.HotProgram:
    return execution._compiled(program, np, current_state().session(session))


def _run_until_built(program, session: str, feeds: tuple) -> list:
    """Run ``program`` until its generated function is being built (the loop's time has
    reached the cost of building it), then wait for the build; the loop's results."""
    results = []
    for number in range(1, 10_000):
        results.append(execute_partition(program, RunStep(session, number), feeds, False))
        hot = _hot(program, session)
        if hot.building is not None:
            break
    hot.building.result(timeout=120)  # (raises what the build raised)
    return results


def test_the_function_is_built_once_the_loop_has_spent_what_building_costs() -> None:
    steps = [(np.negative, 1, 0, -1, (0,), 0, (), k) for k in range(100)]
    hot = codegen.HotProgram(steps, [0], [0])
    cost = codegen.COMPILE_SECONDS_PER_OP * len(steps)
    hot.ran(cost * 0.6)
    assert hot.building is None and hot.function() is None  # the loop's runs pay first
    hot.ran(cost * 0.6)
    building = hot.building
    assert building is not None
    building.result(timeout=120)
    hot.ran(cost * 10)
    assert hot.building is building  # built once
    slots = [np.float32(2.0)]
    hot.function()(slots)
    assert slots == [np.float32(2.0)]  # negated 100 times


def test_a_program_that_keeps_running_is_generated_and_gives_the_loops_results() -> None:
    g, x, out = chain_graph()
    program = one_partition(g, [out], [x])
    value = np.arange(9, dtype=np.float32).reshape(3, 3) / 10
    looped = _run_until_built(program, "gen", (value,))
    hot = _hot(program, "gen")
    assert hot.function() is not None
    generated = execute_partition(program, RunStep("gen", 10_000), (value,), False)
    np.testing.assert_array_equal(generated[0], looped[0][0])


def test_a_generated_program_names_the_op_that_failed_and_keeps_working() -> None:
    with dg.Graph().as_default() as g:
        x = dg.placeholder(dg.float32, [None, None], name="x")
        y = dg.matmul(x * 2.0, x, name="product")
    program = one_partition(g, [y], [x])
    square = np.eye(3, dtype=np.float32)
    _run_until_built(program, "fail", (square,))
    hot = _hot(program, "fail")
    wrong = (np.ones((2, 3), np.float32),)
    failure = execute_partition(program, RunStep("fail", 10_000), wrong, False)
    assert isinstance(failure, execution.RunFailure)
    assert "product" in str(failure.error)
    assert hot.function() is not None  # a bad input is not the function's fault
    (again,) = execute_partition(program, RunStep("fail", 10_001), (square,), False)
    np.testing.assert_array_equal(again, 2 * square)


def test_generated_source_reuses_the_variables_of_dead_tensors() -> None:
    steps = [(np.negative, 1, k, -1, (k,), k + 1, (k,), k) for k in range(100)]
    source, fns = codegen.generate(steps, incoming=[0], outputs=[100])
    assert fns == (np.negative,)
    assert {f"v{i}" for i in range(2)} <= set(source.split()) and "v2" not in source
    slots = [np.float32(1.0)] + [None] * 100
    codegen.build(steps, incoming=[0], outputs=[100])(slots)
    assert slots[100] == np.float32(1.0)  # negated 100 times


@pytest.mark.parametrize("ops", [0, codegen.MAX_OPS + 1])
def test_empty_and_huge_programs_stay_with_the_loop(ops: int) -> None:
    steps = [(np.negative, 1, 0, -1, (0,), 0, (), k) for k in range(ops)]
    hot = codegen.HotProgram(steps, [0], [0])
    hot.ran(3600.0)  # an hour in the loop: still not worth it (nothing to gain, or too big)
    assert hot.building is None and hot.function() is None


def test_a_generated_program_reads_its_constants_instead_of_calling_their_kernels() -> None:
    from daskgraph.runtime.program import Instruction, PartitionProgram

    calls = []
    value = np.full(3, 2.0, np.float32)
    value.flags.writeable = False

    def const_kernel(xp, *, value):
        calls.append(value)
        return value

    def multiply(xp, a, b):
        return xp.multiply(a, b)

    program = PartitionProgram(
        "/device:CPU:0", "CPU", "numpy", 3, (), ((0, 0),),
        (Instruction("two", "Const", const_kernel, {"value": value}, (), 1, False, ()),
         Instruction("y", "Mul", multiply, {}, (0, 1), 2, False, (), (0, 1))),
        ((2, False),),
    )  # fmt: skip
    fed = np.arange(3, dtype=np.float32)
    _run_until_built(program, "const", (fed,))
    before = len(calls)
    for number in range(3):
        (result,) = execute_partition(program, RunStep("const", 10_000 + number), (fed,), False)
        np.testing.assert_array_equal(result, fed * 2)
    assert len(calls) == before  # read by the generated function, not called
    source, _ = codegen.generate(_hot(program, "const").steps, [0], [2])
    assert "(v0, c0)" in source and "f0()" not in source
