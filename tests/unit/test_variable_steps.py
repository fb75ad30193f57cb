"""The lean loop for programs with variables (``daskgraph.runtime.worker.variable_steps``):
bound once per program, it gives the generic loop's results bit for bit (a traced run takes the
generic loop), applies updates once per run, and names the op that failed."""

from __future__ import annotations

import numpy as np
import pytest

import daskgraph as dg
from daskgraph.cluster.topology import Device
from daskgraph.errors import FailedPreconditionError, InvalidArgumentError
from daskgraph.runtime.planner.lowering import lower
from daskgraph.runtime.planner.placement import place
from daskgraph.runtime.program import RunStep
from daskgraph.runtime.worker import execution, variable_steps
from daskgraph.runtime.worker.execution import RunFailure, execute_partition
from daskgraph.runtime.worker.worker_state import current_state

CPU0 = "/job:localhost/replica:0/task:0/device:CPU:0"


def one_partition(graph: dg.Graph, fetches, feeds):
    plan = lower(place(graph, [Device(CPU0, "tcp://w:1", "cpu")]), fetches, feeds)
    (partition,) = plan.partitions
    return partition.program


def mlp_graph():
    """An MLP 8 -> 16 relu -> 3 with Adam: (graph, x, y, loss, train_op, init)."""
    rng = np.random.default_rng(3)
    with dg.Graph().as_default() as g:
        x = dg.placeholder(dg.float32, [32, 8], name="x")
        y = dg.placeholder(dg.int32, [32], name="y")
        w1 = dg.Variable(rng.uniform(-0.5, 0.5, (8, 16)).astype(np.float32), name="w1")
        b1 = dg.Variable(np.zeros(16, np.float32), name="b1")
        w2 = dg.Variable(rng.uniform(-0.5, 0.5, (16, 3)).astype(np.float32), name="w2")
        hidden = dg.nn.relu(dg.matmul(x, w1) + b1)
        logits = dg.matmul(hidden, w2)
        loss = dg.reduce_mean(
            dg.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits)
        )
        step = dg.train.get_or_create_global_step()
        train = dg.train.AdamOptimizer(0.05).minimize(loss, global_step=step)
        init = dg.global_variables_initializer()
    return g, x, y, loss, train, init


@pytest.fixture
def sessions():
    names = ["plain", "traced"]
    yield names
    for name in names:
        current_state().close_session(name)


def test_training_steps_match_the_generic_loop_bit_for_bit(sessions) -> None:
    g, x, y, loss, train, init = mlp_graph()
    rng = np.random.default_rng(4)
    batches = [
        (rng.random((32, 8), dtype=np.float32), rng.integers(0, 3, 32).astype(np.int32))
        for _ in range(6)
    ]
    program = one_partition(g, [loss, train], [x, y])
    losses: dict[str, list] = {}
    for name in sessions:
        execute_partition(one_partition(g, [init], []), RunStep(name, 1), (), False)
        trace = name == "traced"
        losses[name] = [
            execute_partition(program, RunStep(name, 2 + i), batch, trace)[0]
            for i, batch in enumerate(batches)
        ]
    assert losses["plain"] == losses["traced"]
    assert losses["plain"][-1] < losses["plain"][0]
    plain, traced = (current_state().session(n).store(CPU0) for n in sessions)
    assert plain.names() == traced.names()
    for var in plain.names():
        np.testing.assert_array_equal(plain.read(var), traced.read(var))
    compiled = execution._compiled(program, np, current_state().session("plain"))
    assert type(compiled) is variable_steps.VariableProgram
    kinds = {program.instructions[s[-1]].op_type: s[0] for s in compiled.steps}
    assert kinds["VariableV2"] == variable_steps.NAME
    assert kinds["Identity"] == variable_steps.READ
    assert kinds["ApplyAdam"] == variable_steps.STATEFUL
    assert kinds["MatMul"] == variable_steps.CALL2
    assert kinds["Const"] == variable_steps.NAME


def test_an_uninitialized_variable_is_reported_as_it_is(sessions) -> None:
    with dg.Graph().as_default() as g:
        v = dg.Variable(np.ones(2, np.float32), name="never_set")
        out = v * 2.0
    result = execute_partition(one_partition(g, [out], []), RunStep("plain", 1), (), False)
    assert isinstance(result, RunFailure)
    assert isinstance(result.error, FailedPreconditionError)
    assert "never_set" in str(result.error)


def test_a_failing_op_among_variables_is_named(sessions) -> None:
    with dg.Graph().as_default() as g:
        v = dg.Variable(np.ones((2, 3), np.float32), name="v")
        x = dg.placeholder(dg.float32, name="x")
        bad = dg.matmul(v, x, name="bad")
        update = v.assign_add(dg.reduce_sum(bad) * dg.ones((2, 3)))
    execute_partition(one_partition(g, [v.initializer], []), RunStep("plain", 1), (), False)
    program = one_partition(g, [update], [x])
    result = execute_partition(program, RunStep("plain", 2), (np.ones((2, 3), np.float32),), False)
    assert isinstance(result, RunFailure)
    assert isinstance(result.error, InvalidArgumentError)
    assert result.error.op == "bad"
    np.testing.assert_array_equal(current_state().session("plain").store(CPU0).read("v"), 1.0)
