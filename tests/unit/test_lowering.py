"""Unit tests for lowering: partitions, pruning, feeds, fetches, and an in-process executor run.

No Dask cluster is involved: the plans are run in this process, partition by partition in plan
order, with :func:`daskgraph.runtime.worker.execution.execute_partition` (see
:func:`run_plan_in_process`).
"""

from __future__ import annotations

import itertools
import random
import uuid
from collections.abc import Sequence
from typing import Any

import dask
import numpy as np
import pytest

import daskgraph as dg
from daskgraph.cluster.topology import Device
from daskgraph.errors import FailedPreconditionError, InvalidArgumentError
from daskgraph.runtime.planner.lowering import Plan, build_task_graph, lower
from daskgraph.runtime.planner.placement import place
from daskgraph.runtime.program import RunStep
from daskgraph.runtime.worker.execution import RunFailure, execute_partition
from daskgraph.runtime.worker.worker_state import current_state

LOCAL = "/job:localhost/replica:0/task:0/device:"
CPU0, GPU0, GPU1 = LOCAL + "CPU:0", LOCAL + "GPU:0", LOCAL + "GPU:1"
_run_numbers = itertools.count(1)  # every in-process run is a new Session.run call


def new_step(session_id: str) -> RunStep:
    return RunStep(session_id, next(_run_numbers))


def run_plan_in_process(
    plan: Plan, feed_values: Sequence[Any] = (), session_id: str | None = None
) -> list[Any]:
    """Run ``plan`` here, partition by partition in plan order; return the fetched values.

    Each partition gets the feed values it reads, selected as ``build_task_graph`` selects
    them, and the output tuples of its ``dependencies``. Operations fetch as ``None``. A
    partition's :class:`RunFailure` is raised as its error. This is the one place that knows
    ``execute_partition``'s signature: adapt it here when the signature changes.
    """
    step = new_step(session_id or f"unit-{uuid.uuid4().hex}")
    results: list[Any] = []
    for partition in plan.partitions:
        feeds = tuple(feed_values[i] for i in partition.feed_indices)
        dependencies = [results[d] for d in partition.dependencies]
        results.append(execute_partition(partition.program, step, feeds, False, *dependencies))
    for index in plan.result_partitions:
        if isinstance(results[index], RunFailure):
            raise results[index].error
    return [None if loc is None else results[loc[0]][loc[1]] for loc in plan.fetches]


@pytest.fixture
def session_id():
    sid = f"unit-{uuid.uuid4().hex}"
    yield sid
    current_state().close_session(sid)


def devices(n_gpus: int = 2, kind: str = "virtual-gpu") -> list[Device]:
    found = [Device(CPU0, "tcp://127.0.0.1:1000", "cpu")]
    found += [Device(f"{LOCAL}GPU:{i}", f"tcp://127.0.0.1:{1001 + i}", kind) for i in range(n_gpus)]
    return found


def lowered(graph: dg.Graph, fetches, feeds=(), n_gpus: int = 2, kind: str = "virtual-gpu"):
    return lower(place(graph, devices(n_gpus, kind)), fetches, feeds)


def instruction_names(plan: Plan) -> list[list[str]]:
    """The ops of each partition, in order (those of a fused kernel one by one)."""
    return [
        [name for ins in p.program.instructions for name in _op_names(ins)] for p in plan.partitions
    ]


def _op_names(ins) -> tuple[str, ...]:
    return getattr(ins.kernel, "op_names", None) or (ins.op_name,)


def assert_topological(plan: Plan) -> None:
    for position, partition in enumerate(plan.partitions):
        assert partition.index == position
        for dep in partition.dependencies:
            assert dep < position, f"partition {position} depends on later partition {dep}"


# -- partitioning -----------------------------------------------------------------------------
def test_single_device_graph_is_one_partition() -> None:
    with dg.Graph().as_default() as g:
        a = dg.constant([[1.0, 2.0]], name="a")
        b = dg.matmul(a, a, transpose_b=True, name="b")
        c = dg.add(b, 1.0, name="c")
    plan = lowered(g, [c], n_gpus=0)
    assert len(plan.partitions) == 1
    (partition,) = plan.partitions
    assert partition.device == CPU0
    assert partition.worker == "tcp://127.0.0.1:1000"
    assert partition.dependencies == ()
    assert partition.program.backend == "numpy"
    assert partition.program.device_type == "CPU"
    assert instruction_names(plan) == [[op.name for op in g.get_operations()]]
    assert plan.fetches == ((0, 0),)
    assert plan.result_partitions == (0,)
    assert plan.workers == {"tcp://127.0.0.1:1000"}
    np.testing.assert_allclose(run_plan_in_process(plan)[0], [[6.0]])


def test_cpu_gpu_cpu_chain_gives_three_ordered_partitions() -> None:
    with dg.Graph().as_default() as g:
        with dg.device("/cpu:0"):
            a = dg.constant([1.0, 2.0], name="a")
        with dg.device("/gpu:1"):
            b = dg.multiply(a, a, name="b")
        with dg.device("/cpu:0"):
            c = dg.negative(b, name="c")
    plan = lowered(g, [c])
    assert [p.device for p in plan.partitions] == [CPU0, GPU1, CPU0]
    assert [p.dependencies for p in plan.partitions] == [(), (0,), (1,)]
    assert instruction_names(plan) == [["a"], ["b"], ["c"]]
    assert [p.worker for p in plan.partitions] == [
        "tcp://127.0.0.1:1000",
        "tcp://127.0.0.1:1002",
        "tcp://127.0.0.1:1000",
    ]
    # b reads a (one input, the same slot twice); c reads b
    ((dep_position, output_index, slot),) = plan.partitions[1].program.inputs
    assert (dep_position, output_index) == (0, 0)
    assert plan.partitions[1].program.instructions[0].args == (slot, slot)
    assert plan.partitions[0].program.outputs == ((0, False),)
    assert plan.fetches == ((2, 0),)
    assert plan.result_partitions == (2,)
    np.testing.assert_allclose(run_plan_in_process(plan)[0], [-1.0, -4.0])


def test_independent_ops_on_one_device_share_a_partition() -> None:
    with dg.Graph().as_default() as g:
        with dg.device("/cpu:0"):
            a = dg.constant([1.0], name="a")
            b = dg.constant([2.0], name="b")
            x = dg.square(a, name="x")
            y = dg.exp(b, name="y")
        with dg.device("/gpu:0"):
            p = dg.negative(x, name="p")
            q = dg.negative(y, name="q")
    plan = lowered(g, [p, q])
    assert [p.device for p in plan.partitions] == [CPU0, GPU0]
    assert instruction_names(plan) == [["a", "b", "x", "y"], ["p", "q"]]
    assert plan.partitions[1].dependencies == (0,)
    got = run_plan_in_process(plan)
    np.testing.assert_allclose(got[0], [-1.0])
    np.testing.assert_allclose(got[1], -np.exp([2.0]), rtol=1e-6)


def test_pruning_keeps_only_what_the_fetches_need() -> None:
    with dg.Graph().as_default() as g:
        a = dg.constant([1.0], name="a")
        with dg.device("/cpu:0"):
            unused = dg.constant([5.0], name="unused")
            dg.square(unused, name="unused_sq")
        b = dg.negative(a, name="b")
        dg.square(b, name="after")
        dg.global_variables_initializer()
    plan = lowered(g, [b])
    assert instruction_names(plan) == [["a", "b"]]
    assert [p.device for p in plan.partitions] == [GPU0]


def test_fetching_an_operation() -> None:
    with dg.Graph().as_default() as g:
        with dg.device("/cpu:0"):
            a = dg.constant([1.0], name="a")
        with dg.device("/gpu:0"):
            b = dg.negative(a, name="b")
        done = dg.group(b, name="done")
    plan = lowered(g, [done, b])
    assert plan.fetches[0] is None
    assert plan.fetches[1] is not None
    done_partition = next(
        p.index for p in plan.partitions if "done" in [i.op_name for i in p.program.instructions]
    )
    assert done_partition in plan.result_partitions
    assert run_plan_in_process(plan)[0] is None


def test_fetch_locations() -> None:
    with dg.Graph().as_default() as g:
        with dg.device("/cpu:0"):
            a = dg.constant([1.0], name="a")
        with dg.device("/gpu:0"):
            b = dg.negative(a, name="b")
        with dg.device("/cpu:0"):
            c = dg.square(b, name="c")
    plan = lowered(g, [c, b, a, b])
    by_device = {p.device: p.index for p in plan.partitions if p.device == GPU0}
    assert plan.fetches[0][0] == 2
    assert plan.fetches[1][0] == by_device[GPU0]
    assert plan.fetches[2][0] == 0
    assert plan.fetches[1] == plan.fetches[3]  # the same tensor is exported once
    assert set(plan.result_partitions) == {0, 1, 2}
    got = run_plan_in_process(plan)
    np.testing.assert_allclose(got[0], [1.0])
    np.testing.assert_allclose(got[1], [-1.0])
    np.testing.assert_allclose(got[2], [1.0])
    np.testing.assert_allclose(got[3], [-1.0])


@pytest.mark.parametrize(
    ("kind", "to_host"), [("gpu", True), ("virtual-gpu", False)], ids=["cupy", "virtual"]
)
def test_fetches_from_a_real_gpu_are_copied_to_host(kind: str, to_host: bool) -> None:
    with dg.Graph().as_default() as g:
        with dg.device("/gpu:0"):
            a = dg.constant([1.0], name="a")
            b = dg.negative(a, name="b")
        with dg.device("/cpu:0"):
            c = dg.square(b, name="c")
    plan = lowered(g, [b, c], kind=kind)
    gpu_part = plan.partitions[plan.fetches[0][0]]
    cpu_part = plan.partitions[plan.fetches[1][0]]
    assert gpu_part.device == GPU0
    assert gpu_part.program.backend == ("cupy" if kind == "gpu" else "numpy")
    assert cpu_part.program.backend == "numpy"
    # from a real GPU, b leaves as one host copy, read by both the CPU partition and the client
    (b_slot,) = {ins.out for ins in gpu_part.program.instructions if ins.op_name == "b"}
    expected = [(b_slot, to_host)]
    assert list(gpu_part.program.outputs) == expected
    assert gpu_part.program.outputs[plan.fetches[0][1]] == (b_slot, to_host)
    assert cpu_part.program.outputs[plan.fetches[1][1]][1] is False


def test_a_partition_can_read_from_a_partition_created_after_it() -> None:
    """Partitions are numbered as the graph's order first meets their (device, rank): here
    the CPU partition of ``x`` and ``z`` comes before the GPU:1 partition of ``y``, which
    ``z`` reads, so ``y``'s slot is looked up before its partition is emitted."""
    with dg.Graph().as_default() as g:
        with dg.device("/gpu:0"):
            g0 = dg.constant([1.0, 2.0], name="g0")
        with dg.device("/cpu:0"):
            x = dg.tanh(g0, name="x")
        with dg.device("/gpu:1"):
            y = dg.constant([3.0, 4.0], name="y")
        with dg.device("/cpu:0"):
            z = dg.add(y, x, name="z")
    plan = lowered(g, [z])
    assert_topological(plan)
    assert instruction_names(plan) == [["g0"], ["y"], ["x", "z"]]
    expected = np.array([3.0, 4.0]) + np.tanh([1.0, 2.0])
    np.testing.assert_allclose(run_plan_in_process(plan)[0], expected)


def test_slots_freed_together_are_in_first_use_order() -> None:
    """An instruction reading two values for the last time frees both, in the order they
    were first used (written by an instruction, or first read for a feed), whatever the
    order of its arguments; fetched values are never freed."""
    with dg.Graph().as_default() as g:
        x = dg.placeholder(dg.float32, [2], name="x")  # slot 0, a feed
        k = dg.constant([2.0, 3.0], name="k")  # slot 1, written by instruction 0
        y = dg.tanh(x, name="y")  # slot 2: instruction 1 reads x first
        z = dg.add(x, k, name="z")  # slot 3: the last read of x and k
    plan = lowered(g, [z, y], [x], n_gpus=0)
    (partition,) = plan.partitions
    frees = {ins.op_name: ins.free for ins in partition.program.instructions}
    assert frees == {"k": (), "y": (), "z": (1, 0)}
    got = run_plan_in_process(plan, [np.array([1.0, 2.0], np.float32)])
    np.testing.assert_allclose(got[0], [3.0, 5.0])


# -- feeds ------------------------------------------------------------------------------------
def test_placeholder_feed() -> None:
    with dg.Graph().as_default() as g:
        x = dg.placeholder(dg.float32, [None, 2], name="x")
        y = dg.multiply(x, 2.0, name="y")
    plan = lowered(g, [y], [x], n_gpus=0)
    (partition,) = plan.partitions
    assert [plan.feeds[i].name for i in partition.feed_indices] == ["x:0"]
    assert partition.program.feeds == ((0, 0),)
    assert "x" not in instruction_names(plan)[0]
    assert plan.feeds == (x,)
    got = run_plan_in_process(plan, [np.array([[1.0, 2.0]], np.float32)])
    np.testing.assert_allclose(got[0], [[2.0, 4.0]])


def test_fed_tensor_cuts_the_graph() -> None:
    with dg.Graph().as_default() as g:
        with dg.device("/cpu:0"):
            a = dg.constant([1.0, 2.0], name="a")
        with dg.device("/gpu:0"):
            b = dg.square(a, name="b")
            c = dg.add(b, 1.0, name="c")
    plan = lowered(g, [c], [b])
    names = [n for part in instruction_names(plan) for n in part]
    assert "a" not in names
    assert "b" not in names
    assert "c" in names
    assert len(plan.partitions) == 1
    assert [plan.feeds[i].name for i in plan.partitions[0].feed_indices] == ["b:0"]
    got = run_plan_in_process(plan, [np.array([10.0, 20.0], np.float32)])
    np.testing.assert_allclose(got[0], [11.0, 21.0])


def test_feeding_a_placeholder_that_is_also_fetched() -> None:
    with dg.Graph().as_default() as g:
        x = dg.placeholder(dg.float32, [2], name="x")
    plan = lowered(g, [x], [x])
    np.testing.assert_allclose(
        run_plan_in_process(plan, [np.array([3.0, 4.0], np.float32)])[0], [3, 4]
    )


@pytest.mark.parametrize("feed_other", [False, True], ids=["no-feeds", "other-feed"])
def test_unfed_placeholder_raises_naming_it(feed_other: bool) -> None:
    with dg.Graph().as_default() as g:
        x = dg.placeholder(dg.float32, [None, 3], name="x")
        other = dg.placeholder(dg.int32, name="other")
        y = dg.square(x, name="y")
    with pytest.raises(InvalidArgumentError, match="placeholder tensor 'x'") as info:
        lowered(g, [y], [other] if feed_other else [])
    assert info.value.op == "x"
    assert "float32" in str(info.value)
    assert "[None, 3]" in str(info.value)
    assert "feed_dict" in str(info.value)


def test_unneeded_placeholder_need_not_be_fed() -> None:
    with dg.Graph().as_default() as g:
        dg.placeholder(dg.float32, name="x")
        c = dg.constant([1.0], name="c")
    plan = lowered(g, [c])
    assert instruction_names(plan) == [["c"]]


def _two_placeholders_on_two_devices() -> tuple[dg.Graph, Any, Any, Any]:
    with dg.Graph().as_default() as g:
        with dg.device("/cpu:0"):
            x = dg.placeholder(dg.float32, [2], name="x")
        with dg.device("/gpu:0"):
            y = dg.placeholder(dg.float32, [2], name="y")
            z = dg.multiply(y, 2.0, name="z")
        out = dg.add(x, z, name="out")
    return g, x, y, out


def test_feeds_read_by_different_partitions_in_process() -> None:
    g, x, y, out = _two_placeholders_on_two_devices()
    plan = lowered(g, [out], [x, y])
    got = run_plan_in_process(plan, [np.ones(2, np.float32), np.full(2, 3.0, np.float32)])
    np.testing.assert_allclose(got[0], [7.0, 7.0])


def test_feeds_read_by_different_partitions_through_the_task_graph() -> None:
    """The Dask task graph of a plan, run with Dask's synchronous scheduler (no cluster)."""
    g, x, y, out = _two_placeholders_on_two_devices()
    plan = lowered(g, [out], [x, y])
    values = [np.ones(2, np.float32), np.full(2, 3.0, np.float32)]
    hlg, keys = build_task_graph(
        plan, "unit", new_step(f"unit-{uuid.uuid4().hex}"), values, execute_partition
    )
    results = dask.get(dict(hlg), keys)
    partition, index = plan.fetches[0]
    np.testing.assert_allclose(results[partition][index], [7.0, 7.0])


def test_task_graph_is_pinned_to_the_workers() -> None:
    with dg.Graph().as_default() as g:
        with dg.device("/cpu:0"):
            x = dg.placeholder(dg.float32, [2], name="x")
        with dg.device("/gpu:1"):
            y = dg.square(x, name="y")
    plan = lowered(g, [y], [x])
    hlg, keys = build_task_graph(
        plan, "unit", new_step("sid"), [np.array([2.0, 3.0], np.float32)], execute_partition
    )
    # the key names the device (its group) and the partition's main ops (a fed one has none)
    assert keys == [
        ("dg-localhost-0-cpu0", "unit", 0),
        ("dg-localhost-0-gpu1", "unit-Square", 1),
    ]
    for partition, key in zip(plan.partitions, keys, strict=True):
        layer = hlg.layers[f"{key[1]}-{key[0]}-{key[2]}"]
        assert layer.annotations == {"workers": [partition.worker], "allow_other_workers": False}
    results = dask.get(dict(hlg), keys)
    np.testing.assert_allclose(results[1][0], [4.0, 9.0])


# -- variables --------------------------------------------------------------------------------
def test_variable_reads_are_dereferenced() -> None:
    with dg.Graph().as_default() as g:
        v = dg.Variable([1.0, 2.0], name="v")
        inc = v.assign_add([1.0, 1.0], name="inc")
        y = dg.add(v, 1.0, name="y")
        init = dg.global_variables_initializer()
    plan = lowered(g, [init, inc, y])
    by_name = {i.op_name: i for p in plan.partitions for i in p.program.instructions}
    assert by_name["v/read"].deref == (0,)
    assert by_name["v/Assign"].deref == ()  # the reference input of Assign is not read
    assert by_name["inc"].deref == ()
    assert by_name["y"].deref == ()  # it reads v/read's value, not the reference
    assert by_name["v"].stateful and by_name["v/Assign"].stateful and by_name["inc"].stateful
    assert not by_name["v/read"].stateful


def test_fetching_a_variable_reference_is_rejected() -> None:
    with dg.Graph().as_default() as g:
        v = dg.Variable([1.0], name="v")
    with pytest.raises(InvalidArgumentError, match="variable reference") as info:
        lowered(g, [v.op.outputs[0]])
    assert info.value.op == "v"


def test_variables_live_across_runs_in_process(session_id: str) -> None:
    with dg.Graph().as_default() as g:
        with dg.device("/cpu:0"):
            v = dg.Variable([1.0, 2.0], name="v")
        with dg.device("/gpu:0"):
            doubled = dg.multiply(v, 2.0, name="doubled")
        step = v.assign_add([10.0, 10.0], name="step")
        init = dg.global_variables_initializer()
    placement = place(g, devices(2))
    assert run_plan_in_process(lower(placement, [init]), session_id=session_id) == [None]
    read = lower(placement, [v.value(), doubled])
    got = run_plan_in_process(read, session_id=session_id)
    np.testing.assert_allclose(got[0], [1.0, 2.0])
    np.testing.assert_allclose(got[1], [2.0, 4.0])
    got = run_plan_in_process(lower(placement, [step]), session_id=session_id)
    np.testing.assert_allclose(got[0], [11.0, 12.0])
    got = run_plan_in_process(read, session_id=session_id)
    np.testing.assert_allclose(got[1], [22.0, 24.0])
    assert current_state().close_session(session_id) == 1


def test_uninitialized_variable_read_fails_and_the_failure_propagates(session_id: str) -> None:
    with dg.Graph().as_default() as g:
        with dg.device("/cpu:0"):
            v = dg.Variable([1.0], name="v")
        with dg.device("/gpu:0"):
            y = dg.negative(v, name="y")
    plan = lowered(g, [y])
    assert len(plan.partitions) == 2
    with pytest.raises(FailedPreconditionError, match="uninitialized value v "):
        run_plan_in_process(plan, session_id=session_id)
    # the CPU partition returns the failure; the GPU one passes it on without running
    step = new_step(session_id)
    first = execute_partition(plan.partitions[0].program, step, (), False)
    assert isinstance(first, RunFailure)
    second = execute_partition(plan.partitions[1].program, step, (), False, first)
    assert second is first


def test_kernel_errors_become_invalid_argument_naming_the_op(session_id: str) -> None:
    with dg.Graph().as_default() as g:
        x = dg.placeholder(dg.float32, [None, None], name="x")
        m = dg.matmul(x, x, name="m")
    plan = lowered(g, [m], [x], n_gpus=0)
    with pytest.raises(InvalidArgumentError, match=r"m \(MatMul\) failed on .*CPU:0") as info:
        run_plan_in_process(plan, [np.ones((2, 3), np.float32)], session_id=session_id)
    assert info.value.op == "m"
    assert info.value.device == CPU0


# -- control dependencies ---------------------------------------------------------------------
def test_control_dependency_across_devices_becomes_a_partition_dependency() -> None:
    with dg.Graph().as_default() as g:
        with dg.device("/cpu:0"):
            a = dg.constant([1.0], name="a")
        with dg.device("/gpu:0"), dg.control_dependencies([a]):
            b = dg.constant([2.0], name="b")
    plan = lowered(g, [b])
    assert [p.device for p in plan.partitions] == [CPU0, GPU0]
    assert instruction_names(plan) == [["a"], ["b"]]
    assert plan.partitions[1].dependencies == (0,)
    assert plan.partitions[1].program.inputs == ()  # ordering only, no data
    np.testing.assert_allclose(run_plan_in_process(plan)[0], [2.0])


def test_control_dependency_on_one_device_keeps_one_partition_in_order() -> None:
    with dg.Graph().as_default() as g:
        a = dg.constant([1.0], name="a")
        with dg.control_dependencies([a]):
            b = dg.constant([2.0], name="b")
    plan = lowered(g, [b])
    assert instruction_names(plan) == [["a", "b"]]


def test_initializer_control_inputs_run_before_init(session_id: str) -> None:
    with dg.Graph().as_default() as g:
        with dg.device("/cpu:0"):
            v = dg.Variable([1.0], name="v")
        with dg.device("/gpu:1"):
            w = dg.Variable([2.0], name="w")
        init = dg.global_variables_initializer()
    plan = lowered(g, [init])
    assert_topological(plan)
    init_part = next(
        p for p in plan.partitions if "init" in [i.op_name for i in p.program.instructions]
    )
    assigns = {
        p.index
        for p in plan.partitions
        if {"v/Assign", "w/Assign"} & {i.op_name for i in p.program.instructions}
    }
    assert assigns - {init_part.index} <= set(init_part.dependencies)
    run_plan_in_process(plan, session_id=session_id)
    got = run_plan_in_process(lowered(g, [v.value(), w.value()]), session_id=session_id)
    np.testing.assert_allclose(got[0], [1.0])
    np.testing.assert_allclose(got[1], [2.0])


# -- random graphs ----------------------------------------------------------------------------
_SCOPES = [None, "/cpu:0", "/gpu:0", "/gpu:1"]
_BINARY = {
    "add": (dg.add, np.add),
    "sub": (dg.subtract, np.subtract),
    "mul": (dg.multiply, np.multiply),
}


def _random_graph(seed: int):
    """A random DAG of float32 ops spread over three devices, with its NumPy values."""
    rng = random.Random(seed)
    tensors: list[Any] = []
    values: list[np.ndarray] = []
    with dg.Graph().as_default() as g:
        for i in range(rng.randint(15, 40)):
            with dg.device(rng.choice(_SCOPES)):
                kind = rng.random()
                controls = (
                    [tensors[rng.randrange(len(tensors))]]
                    if tensors and rng.random() < 0.15
                    else []
                )
                with dg.control_dependencies(controls):
                    if len(tensors) < 2 or kind < 0.2:
                        value = np.array([rng.uniform(-1, 1) for _ in range(3)], np.float32)
                        t = dg.constant(value, name=f"c{i}")
                    elif kind < 0.35:
                        j = rng.randrange(len(tensors))
                        t, value = dg.tanh(tensors[j], name=f"t{i}"), np.tanh(values[j])
                    else:
                        name = rng.choice(sorted(_BINARY))
                        build, reference = _BINARY[name]
                        j, k = rng.randrange(len(tensors)), rng.randrange(len(tensors))
                        t = build(tensors[j], tensors[k], name=f"{name}{i}")
                        value = reference(values[j], values[k])
            tensors.append(t)
            values.append(value.astype(np.float32))
    return g, tensors, values, rng


@pytest.mark.parametrize("seed", range(25), ids=[f"seed{s}" for s in range(25)])
def test_random_graphs_lower_to_acyclic_plans_that_compute_the_right_values(seed: int) -> None:
    g, tensors, values, rng = _random_graph(seed)
    n_fetch = rng.randint(1, min(5, len(tensors)))
    picks = rng.sample(range(len(tensors)), n_fetch)
    placement = place(g, devices(2))
    plan = lower(placement, [tensors[i] for i in picks])
    assert_topological(plan)
    # every instruction runs on its partition's device, and no op runs twice
    seen: list[str] = []
    for partition in plan.partitions:
        for ins in partition.program.instructions:
            assert placement[ins.op_name].device == partition.device
            seen.append(ins.op_name)
    assert len(seen) == len(set(seen))
    got = run_plan_in_process(plan)
    for i, value in zip(picks, got, strict=True):
        np.testing.assert_allclose(value, values[i], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("seed", range(5), ids=[f"seed{s}" for s in range(5)])
def test_random_graphs_with_a_fed_intermediate(seed: int) -> None:
    g, tensors, values, rng = _random_graph(100 + seed)
    fed_index = rng.randrange(len(tensors) // 2, len(tensors))
    fed = tensors[fed_index]
    plan = lower(place(g, devices(2)), [fed, tensors[-1]], [fed])
    assert_topological(plan)
    names = {ins.op_name for p in plan.partitions for ins in p.program.instructions}
    assert fed.op.name not in names
    got = run_plan_in_process(plan, [values[fed_index]])
    np.testing.assert_array_equal(got[0], values[fed_index])
    np.testing.assert_allclose(got[1], values[-1], rtol=1e-5, atol=1e-6)


def test_assign_from_another_device_passes_the_reference_between_partitions(
    session_id: str,
) -> None:
    with dg.Graph().as_default() as g:
        with dg.device("/cpu:0"):
            v = dg.Variable([1.0, 2.0], name="v")
        with dg.device("/gpu:1"):
            x = dg.multiply(v, 3.0, name="x")
        update = v.assign(x, name="update")
        init = dg.global_variables_initializer()
    placement = place(g, devices(2))
    plan = lower(placement, [update])
    assert_topological(plan)
    first, last = plan.partitions[0], plan.partitions[-1]
    assert first.device == last.device == CPU0
    assert [ins.op_name for ins in first.program.instructions] == ["v", "v/read"]
    assert [ins.op_name for ins in last.program.instructions] == ["update"]
    # update reads the variable reference from partition 0 and x from the GPU
    assert 0 in last.dependencies
    assert any(plan.partitions[d].device == GPU1 for d in last.dependencies)
    run_plan_in_process(lower(placement, [init]), session_id=session_id)
    np.testing.assert_allclose(run_plan_in_process(plan, session_id=session_id)[0], [3.0, 6.0])
    got = run_plan_in_process(lower(placement, [v.value()]), session_id=session_id)
    np.testing.assert_allclose(got[0], [3.0, 6.0])


@pytest.mark.parametrize("collector_on", [True, False], ids=["gc-on", "gc-off"])
@pytest.mark.parametrize("fails", [False, True], ids=["ok", "raises"])
def test_lowering_leaves_the_cyclic_collector_as_it_found_it(
    collector_on, fails, monkeypatch
) -> None:
    """Lowering pauses Python's cyclic GC (it walks big graphs again and again otherwise)
    and must give the caller back the collector state it had, also when lowering raises."""
    import gc

    from daskgraph.runtime.planner import lowering

    seen: list[bool] = []
    original = lowering._Emitter.plan

    def spy(self, *args):
        seen.append(gc.isenabled())
        return original(self, *args)

    monkeypatch.setattr(lowering._Emitter, "plan", spy)
    with dg.Graph().as_default() as g:
        x = dg.placeholder(dg.float32, [2], name="x")
        y = dg.square(x, name="y")
    placement = place(g, [Device(CPU0, "tcp://w:1", "cpu")])
    was = gc.isenabled()
    try:
        (gc.enable if collector_on else gc.disable)()
        if fails:
            with pytest.raises(InvalidArgumentError):
                lower(placement, [y], [])
        else:
            lower(placement, [y], [x])
        assert gc.isenabled() is collector_on
        assert seen == ([] if fails else [False])
    finally:
        (gc.enable if was else gc.disable)()
