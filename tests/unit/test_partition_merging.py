"""Fewer partitions, same values: input-less ops join their consumers' partitions, and
partitions of one device that no other device's partition separates are merged (issue 24).

No cluster: plans are run in this process (:func:`test_lowering.run_plan_in_process`).
"""

from __future__ import annotations

import numpy as np
import pytest
from test_lowering import (
    CPU0,
    GPU0,
    GPU1,
    assert_topological,
    devices,
    instruction_names,
    lowered,
    run_plan_in_process,
)

import daskgraph as dg
from daskgraph.runtime.planner.lowering import Plan, lower
from daskgraph.runtime.planner.placement import place


def same_device_dependencies(plan: Plan) -> list[tuple[int, int]]:
    """(producer, consumer) pairs of partitions on one device: transfers within a device."""
    return [
        (d, p.index)
        for p in plan.partitions
        for d in p.dependencies
        if plan.partitions[d].device == p.device
    ]


@pytest.mark.parametrize("fed", [False, True], ids=["constant-x", "fed-x"])
def test_gpu_expression_plus_a_cpu_constant_is_two_partitions(fed: bool) -> None:
    """``(x * 2 + 1 on GPU:0) + 1 on CPU:0``: the CPU's constant ``1`` runs in the CPU's
    partition (it was a rank-0 partition of its own, sent CPU -> CPU), and the GPU's
    constants in the GPU's."""
    with dg.Graph().as_default() as g:
        with dg.device("/gpu:0"):
            x = (
                dg.placeholder(dg.float32, [2], name="x")
                if fed
                else dg.constant([1.0, 2.0], name="x")
            )
            y = x * 2.0 + 1.0
        with dg.device("/cpu:0"):
            z = dg.add(y, 1.0, name="z")
    plan = lowered(g, [z], [x] if fed else [])
    assert [p.device for p in plan.partitions] == [GPU0, CPU0]
    assert plan.partitions[1].dependencies == (0,)
    assert same_device_dependencies(plan) == []
    cpu_ops = {ins.op_name for ins in plan.partitions[1].program.instructions}
    assert cpu_ops == {"z", z.op.inputs[1].op.name}  # the add and its constant
    feeds = [np.array([1.0, 2.0], np.float32)] if fed else []
    np.testing.assert_allclose(run_plan_in_process(plan, feeds)[0], [4.0, 6.0])


def test_a_constant_read_on_two_devices_stays_where_it_was_placed() -> None:
    """Joining a consumer's partition never moves an op to another device: a constant placed
    on the CPU (here by colocation with a CPU variable) and read on a GPU stays on the CPU,
    in a partition that runs before the GPU's."""
    with dg.Graph().as_default() as g:
        with dg.device("/cpu:0"):
            v = dg.Variable([1.0, 2.0], name="v")
        with dg.colocate_with(v):
            k = dg.constant([3.0, 4.0], name="k")
        with dg.device("/gpu:1"):
            y = dg.multiply(k, 2.0, name="y")
        with dg.device("/cpu:0"):
            z = dg.add(y, k, name="z")
    placement = place(g, devices(2))
    assert placement["k"].device == CPU0
    plan = lower(placement, [z])
    assert_topological(plan)
    where = {ins.op_name: p.device for p in plan.partitions for ins in p.program.instructions}
    assert where["k"] == CPU0
    assert where["y"] == GPU1
    np.testing.assert_allclose(run_plan_in_process(plan)[0], [9.0, 12.0])


def test_a_constant_read_by_a_later_cpu_partition_travels_with_no_partition_of_its_own() -> None:
    """A constant read first by a CPU op that waits for a GPU is computed in that op's
    partition: no partition of constants runs (and sends) ahead of it."""
    with dg.Graph().as_default() as g:
        with dg.device("/gpu:0"):
            a = dg.tanh(dg.constant([0.5, 1.0], name="a0"), name="a")
        with dg.device("/cpu:0"):
            big = dg.constant(np.full(2, 10.0, np.float32), name="big")
            b = dg.add(a, big, name="b")
            c = dg.multiply(b, big, name="c")
    plan = lowered(g, [c])
    assert instruction_names(plan) == [["a0", "a"], ["big", "b", "c"]]
    expected = (np.tanh([0.5, 1.0]) + 10.0) * 10.0
    np.testing.assert_allclose(run_plan_in_process(plan)[0], expected, rtol=1e-6)


def _two_gpus_feed_the_cpu(separated: bool):
    """GPU:0's ``g0`` is read by ``c1`` on the CPU and by ``h`` on GPU:1; ``c2`` on the CPU
    reads ``h``, and ``out`` adds ``c1`` and ``c2``. ``c1`` (rank 1) and ``c2`` (rank 2)
    are both on the CPU; with ``separated``, ``h`` also reads ``c1``, so a path through
    GPU:1 runs from ``c1`` to ``c2``."""
    with dg.Graph().as_default() as g:
        with dg.device("/gpu:0"):
            g0 = dg.tanh(dg.constant([0.1, 0.2], name="k"), name="g0")
        with dg.device("/cpu:0"):
            c1 = dg.square(g0, name="c1")
        with dg.device("/gpu:1"):
            h = dg.add(g0, c1, name="h") if separated else dg.negative(g0, name="h")
        with dg.device("/cpu:0"):
            c2 = dg.exp(h, name="c2")
            out = dg.add(c1, c2, name="out")
    g0_value = np.tanh(np.array([0.1, 0.2], np.float32))
    c1_value = g0_value**2
    h_value = g0_value + c1_value if separated else -g0_value
    return g, out, c1_value + np.exp(h_value)


def test_cpu_partitions_no_other_device_separates_are_merged() -> None:
    g, out, expected = _two_gpus_feed_the_cpu(separated=False)
    plan = lowered(g, [out])
    assert_topological(plan)
    assert [p.device for p in plan.partitions] == [GPU0, GPU1, CPU0]
    assert sorted(instruction_names(plan)[2]) == ["c1", "c2", "out"]  # (c1 fused into out)
    assert same_device_dependencies(plan) == []
    np.testing.assert_allclose(run_plan_in_process(plan)[0], expected, rtol=1e-6)


def test_cpu_partitions_a_gpu_path_separates_stay_apart() -> None:
    g, out, expected = _two_gpus_feed_the_cpu(separated=True)
    plan = lowered(g, [out])
    assert_topological(plan)
    assert [p.device for p in plan.partitions] == [GPU0, CPU0, GPU1, CPU0]
    assert instruction_names(plan)[1] == ["c1"]
    assert instruction_names(plan)[3] == ["c2", "out"]
    np.testing.assert_allclose(run_plan_in_process(plan)[0], expected, rtol=1e-6)


def test_merged_cpu_partitions_still_split_their_heavy_independent_branches() -> None:
    """Two heavy CPU chains from a CPU placeholder (rank 0) and a CPU add of their sums with
    a GPU value (rank 1) merge into one CPU partition, and ``split_parallel`` still runs the
    two chains as partitions of their own, which do not wait for the GPU."""
    n = 1100  # 1.21M elements per op: above the default threshold of 1M
    with dg.Graph().as_default() as g:
        with dg.device("/gpu:0"):
            gpu = dg.reduce_sum(dg.constant(np.ones(4, np.float32), name="ones"), name="gpu")
        with dg.device("/cpu:0"):
            x = dg.placeholder(dg.float32, [n, n], name="x")
            sums = []
            for i in range(2):
                y = x
                for j in range(2):
                    y = dg.tanh(y * 1.01 + 0.5, name=f"t{i}{j}")
                sums.append(dg.reduce_sum(y, name=f"sum{i}"))
            total = dg.add_n([*sums, gpu], name="total")
    plan = lower(place(g, devices(1)), [total], [x])
    assert_topological(plan)
    cpu = [p for p in plan.partitions if p.device == CPU0]
    gpu_part = next(p.index for p in plan.partitions if p.device == GPU0)
    heavy = [p for p in cpu if any(ins.op_type == "Tanh" for ins in p.program.instructions)]
    assert len(heavy) == 2
    assert all(gpu_part not in p.dependencies for p in heavy)
    (tail,) = [p for p in cpu if "total" in [ins.op_name for ins in p.program.instructions]]
    assert gpu_part in tail.dependencies
    value = np.random.default_rng(0).random((n, n), dtype=np.float32)
    (result,) = run_plan_in_process(plan, [value])
    expected = np.float32(4.0)
    for _ in range(2):
        y = value
        for _ in range(2):
            y = np.tanh(y * np.float32(1.01) + np.float32(0.5))
        expected += y.sum(dtype=np.float32)
    np.testing.assert_allclose(result, expected, rtol=1e-5)


@pytest.mark.parametrize("seed", range(40), ids=[f"seed{s}" for s in range(40)])
def test_random_graphs_have_no_partition_of_sources_a_consumer_could_take(seed: int) -> None:
    """In random graphs over three devices, no partition holds only input-less ops while
    one of their consumers on the same device could have taken them: every source-only
    partition feeds another device."""
    from test_lowering import _random_graph

    g, tensors, values, rng = _random_graph(500 + seed)
    picks = rng.sample(range(len(tensors)), rng.randint(1, min(5, len(tensors))))
    plan = lowered(g, [tensors[i] for i in picks])
    assert_topological(plan)
    ops = {op.name: op for op in g.get_operations()}
    for p in plan.partitions:
        names = [ins.op_name for ins in p.program.instructions]
        if not names or any(ops[n].inputs or ops[n].control_inputs for n in names):
            continue
        readers = [q for q in plan.partitions if p.index in q.dependencies]
        assert any(q.device != p.device for q in readers) or not readers, (p.index, names)
    got = run_plan_in_process(plan)
    for i, value in zip(picks, got, strict=True):
        np.testing.assert_allclose(value, values[i], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("blocking", [True, False], ids=["dequeue-enqueue", "size-negative"])
def test_groups_are_not_merged_where_an_op_may_wait_for_another(blocking: bool) -> None:
    """A dequeue (rank 0) and the enqueue it waits for (rank 1, after a GPU value) in one
    run stay in partitions of their own, which Dask runs side by side: merged, the dequeue
    would run first and wait forever. Ops that do not wait (a queue's size, a negation of
    the GPU's value) merge."""
    from daskgraph.data.queues import FIFOQueue

    with dg.Graph().as_default() as g:
        with dg.device("/cpu:0"):
            q = FIFOQueue(10, dg.float32)
            first = q.dequeue() if blocking else q.size()
        with dg.device("/gpu:0"):
            value = dg.reduce_sum(dg.constant([1.0, 2.0]))
        with dg.device("/cpu:0"):
            second = q.enqueue(value) if blocking else dg.negative(value)
    plan = lowered(g, [first, second])
    assert_topological(plan)
    cpu = [p for p in plan.partitions if p.device == CPU0]
    assert len(cpu) == (2 if blocking else 1)


def test_adam_on_two_large_cpu_variables_splits_into_an_acyclic_plan() -> None:
    """Adam's ``beta1``/``beta2`` are constants made under control dependencies on the
    updates (TensorFlow's ``_finish``): not sources. Counted as sources, they stayed with the
    sources' partition, which then read the updates' partition: a cycle (the plan ran
    partitions before their inputs). Slot variables, which do no work, start no branch of
    their own."""
    n = 1024  # 1M elements per variable: at the default threshold
    with dg.Graph().as_default() as g:
        with dg.device("/cpu:0"):
            a = dg.Variable(np.ones((n, n), np.float32), name="a")
            b = dg.Variable(np.ones((n, n), np.float32), name="b")
            loss = dg.reduce_sum(a * a) + dg.reduce_sum(b * 2.0)
            train = dg.train.AdamOptimizer(0.01).minimize(loss)
    plan = lower(place(g, devices(0)), [train, loss])
    assert_topological(plan)
    slots = {f"{v}/Adam{s}" for v in "ab" for s in ("", "_1")}
    for p in plan.partitions:  # no partition of a lone slot variable
        names = {ins.op_name for ins in p.program.instructions}
        assert not names or not names <= slots, names
    with dg.Session(graph=g) as session:
        session.run(dg.global_variables_initializer())
        first = session.run([train, loss])[1]
        second = session.run([train, loss])[1]
    assert first == pytest.approx(3 * n * n) and second < first
