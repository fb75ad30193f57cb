"""Unit tests for the executor's lean loop: programs compiled once to array-module calls.

Programs come from :func:`daskgraph.runtime.planner.lowering.lower` on one CPU device and run in
this process
with :func:`daskgraph.runtime.worker.execution.execute_partition`, plain (the compiled loop) and
traced (the
general loop), which must agree.
"""

from __future__ import annotations

import functools
import pickle

import numpy as np
import pytest

import daskgraph as dg
from daskgraph.cluster.topology import Device
from daskgraph.errors import InvalidArgumentError
from daskgraph.framework.op_registry import ArrayFunction
from daskgraph.runtime.planner.lowering import lower
from daskgraph.runtime.planner.placement import place
from daskgraph.runtime.program import RunStep
from daskgraph.runtime.worker import execution
from daskgraph.runtime.worker.execution import RunFailure, execute_partition
from daskgraph.runtime.worker.worker_state import current_state

CPU0 = "/job:localhost/replica:0/task:0/device:CPU:0"
STEP = RunStep("t", 1)


def one_partition(graph: dg.Graph, fetches, feeds):
    plan = lower(place(graph, [Device(CPU0, "tcp://w:1", "cpu")]), fetches, feeds, fusion=False)
    (partition,) = plan.partitions
    return partition.program


def chain_graph():
    with dg.Graph().as_default() as g:
        x = dg.placeholder(dg.float32, [3, 3], name="x")
        y = dg.matmul(x, x, transpose_b=True, name="mm")
        z = dg.tanh(y * 0.5 - x, name="z")
        out = dg.add_n([z, dg.square(z), -x], name="out")
    return g, x, out


def test_array_function_kernels_pickle_as_their_name() -> None:
    add = ArrayFunction("add")
    again = pickle.loads(pickle.dumps(add))
    assert again == add and again.name == "add" and hash(again) == hash(add)
    assert len(pickle.dumps(add)) < 100
    assert again(np, np.float32(1), np.float32(2)) == np.float32(3)


def test_compile_binds_array_module_functions_and_partials() -> None:
    g, x, out = chain_graph()
    program = one_partition(g, [out], [x])
    steps = execution._compile(program, np)
    by_type = {program.instructions[s[7]].op_type: s for s in steps}
    assert by_type["Tanh"][0] is np.tanh  # the ufunc itself, no wrapper
    assert by_type["Mul"][0] is np.multiply and by_type["Mul"][1] == 2
    matmul = by_type["MatMul"][0]
    assert isinstance(matmul, functools.partial) and matmul.args == (np,)
    assert matmul.keywords == {"transpose_a": False, "transpose_b": True}
    assert by_type["AddN"][1] == 3  # three inputs: the general call


def test_compiled_and_traced_loops_agree_and_compile_once() -> None:
    g, x, out = chain_graph()
    program = one_partition(g, [out], [x])
    value = np.arange(9, dtype=np.float32).reshape(3, 3) / 10
    plain = execute_partition(program, STEP, (value,), False)
    traced = execute_partition(program, STEP, (value,), True)
    z = np.tanh((value @ value.T) * np.float32(0.5) - value)
    np.testing.assert_allclose(plain[0], z + z * z - value, rtol=1e-6)
    np.testing.assert_array_equal(plain[0], traced[0])
    session = current_state().session(STEP.session)
    assert execution._compiled(program, np, session) is execution._compiled(program, np, session)


def test_programs_with_variables_take_the_general_loop() -> None:
    with dg.Graph().as_default() as g:
        v = dg.Variable(np.ones(2, np.float32), name="v")
        y = v * 2.0
    program = one_partition(g, [y], [])
    assert execution._compile(program, np) is None


@pytest.mark.parametrize("trace", [False, True], ids=["compiled", "traced"])
def test_a_failing_op_is_named_in_either_loop(trace: bool) -> None:
    with dg.Graph().as_default() as g:
        x = dg.placeholder(dg.float32, name="x")
        y = dg.placeholder(dg.float32, name="y")
        first = dg.add(x, 1.0, name="first")
        bad = dg.matmul(first, y, name="bad")
        last = dg.negative(bad, name="last")
    program = one_partition(g, [last], [x, y])
    result = execute_partition(
        program, STEP, (np.ones((2, 3), np.float32), np.ones((2, 3), np.float32)), trace
    )
    assert isinstance(result, RunFailure)
    assert isinstance(result.error, InvalidArgumentError)
    assert result.error.op == "bad"
    assert "bad (MatMul) failed on " + CPU0 in str(result.error)


def test_a_repeated_run_applies_an_assign_once() -> None:
    """A run repeated after a worker loss keeps its step number: an assign that already ran
    on a surviving worker returns its earlier result instead of applying again."""

    with dg.Graph().as_default() as g:
        v = dg.Variable(np.float32(0.0), name="counter")
        bump = v.assign_add(1.0)
    session = "exactly-once"
    try:
        execute_partition(one_partition(g, [v.initializer], []), RunStep(session, 1), (), False)
        program = one_partition(g, [bump], [])
        first = execute_partition(program, RunStep(session, 2), (), False)
        again = execute_partition(program, RunStep(session, 2), (), True)  # the repeat
        assert first[0] == again[0] == 1.0
        assert execute_partition(program, RunStep(session, 3), (), False)[0] == 2.0
        stale = execute_partition(program, RunStep(session, 2), (), False)  # an older run
        assert stale[0] == 3.0  # is not deduplicated against the newer one's record
    finally:
        current_state().close_session(session)


def test_a_run_repeated_after_newer_runs_applies_its_assign_once() -> None:
    """Async towers: while one tower's run (2) waits out a lost worker, the other tower's runs
    (3, 4: newer numbers, started while run 2 was under way) update the same variable. The
    repeat of run 2 still finds its assign applied; once run 2 is done (the oldest run under
    way is 5), what it applied is forgotten."""
    with dg.Graph().as_default() as g:
        v = dg.Variable(np.float32(0.0), name="counter")
        mine, theirs = v.assign_add(1.0), v.assign_add(10.0)
    session = "towers"
    try:
        execute_partition(one_partition(g, [v.initializer], []), RunStep(session, 1), (), False)
        tower_0, tower_1 = one_partition(g, [mine], []), one_partition(g, [theirs], [])
        assert execute_partition(tower_0, RunStep(session, 2, 2), (), False)[0] == 1.0
        assert execute_partition(tower_1, RunStep(session, 3, 2), (), False)[0] == 11.0
        assert execute_partition(tower_1, RunStep(session, 4, 2), (), False)[0] == 21.0
        again = execute_partition(tower_0, RunStep(session, 2, 2), (), True)  # the repeat
        assert again[0] == 1.0  # its result of that time, not applied again
        assert execute_partition(tower_1, RunStep(session, 5, 5), (), False)[0] == 31.0
        forgotten = execute_partition(tower_0, RunStep(session, 2, 2), (), False)
        assert forgotten[0] == 32.0  # (a session never repeats a run that is done)
    finally:
        current_state().close_session(session)
