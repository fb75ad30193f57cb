"""Splitting a lowered plan by worker for compiled steps: who sends what to whom."""

from __future__ import annotations

import daskgraph as dg
from daskgraph.cluster.topology import Device
from daskgraph.runtime.planner.lowering import lower
from daskgraph.runtime.planner.placement import place
from daskgraph.runtime.planner.step_split import OneRound, one_round, worker_steps

CPU0 = "/job:localhost/replica:0/task:0/device:CPU:0"
GPU0 = "/job:localhost/replica:0/task:0/device:GPU:0"
GPU1 = "/job:localhost/replica:0/task:0/device:GPU:1"


def _devices() -> list[Device]:
    kinds = {CPU0: "cpu", GPU0: "virtual-gpu", GPU1: "virtual-gpu"}
    return [Device(name, worker=name[-5:], kind=kind) for name, kind in kinds.items()]


def _plan(graph, fetches, feeds=()):
    return lower(place(graph, _devices()), fetches, feeds)


def _check(plan, steps):
    """Every cross-worker read is sent exactly as read, and the client gets what it fetches."""
    worker_of = {p.index: p.worker for p in plan.partitions}
    by_index = {part.index: part for step in steps.values() for part in step.parts}
    assert sorted(by_index) == [p.index for p in plan.partitions]
    expected: dict[tuple[int, str], set[int]] = {}
    for consumer in plan.partitions:
        for position, producer in enumerate(consumer.dependencies):
            if worker_of[producer] != consumer.worker:
                read = {i for d, i, _ in consumer.program.inputs if d == position}
                expected.setdefault((producer, consumer.worker), set()).update(read)
    sent = {
        (part.index, worker): set(outputs)
        for part in by_index.values()
        for worker, outputs in part.sends
    }
    assert sent == expected
    for worker, step in steps.items():
        assert set(step.remote) == {p for p, w in expected if w == worker}
    fetched: dict[int, set[int]] = {}
    for location in plan.fetches:
        if location is not None:
            fetched.setdefault(location[0], set()).add(location[1])
    assert {i: set(p.to_client) for i, p in by_index.items() if p.to_client} == fetched


def test_each_worker_gets_its_partitions_and_a_consumer_only_what_it_reads():
    with dg.Graph().as_default() as g:
        x = dg.placeholder(dg.float32, [4, 4], name="x")
        with dg.device("/gpu:0"):
            big = dg.matmul(x, x, name="big")
            small = dg.reduce_sum(big, name="small")
        with dg.device("/cpu:0"):
            out = dg.add(big, 1.0, name="out")
    plan = _plan(g, [out, small], [x])
    steps = worker_steps(plan)
    _check(plan, steps)
    assert set(steps) == {"CPU:0", "GPU:0"}
    # the partition holding the scalar sends the CPU worker the product only, and the
    # client the scalar only
    small_part, small_index = plan.fetches[1]
    part = next(p for p in steps["GPU:0"].parts if p.index == small_part)
    assert part.to_client == (small_index,)
    ((destination, outputs),) = part.sends
    assert destination == "CPU:0" and small_index not in outputs and len(outputs) == 1


def test_a_control_dependency_sends_a_message_without_tensors():
    with dg.Graph().as_default() as g:
        with dg.device("/cpu:0"):
            v = dg.Variable(1.0, name="v")
            bump = v.assign_add(1.0)
        with dg.device("/gpu:0"):
            x = dg.placeholder(dg.float32, [], name="x")
            with dg.control_dependencies([bump]):
                out = x * 3.0
    plan = _plan(g, [out], [x])
    steps = worker_steps(plan)
    _check(plan, steps)
    bump_part = next(p for p in steps["CPU:0"].parts if p.sends)
    assert bump_part.sends == (("GPU:0", ()),)


def test_partitions_on_one_worker_exchange_nothing():
    with dg.Graph().as_default() as g:
        x = dg.placeholder(dg.float32, [2], name="x")
        with dg.device("/gpu:0"):
            a = x * 2.0
        with dg.device("/gpu:1"):
            b = a + 1.0
        with dg.device("/gpu:0"):
            c = b * 3.0
    plan = _plan(g, [c], [x])
    steps = worker_steps(plan)
    _check(plan, steps)
    gpu0 = steps["GPU:0"]
    assert len(gpu0.parts) >= 2  # before and after GPU:1
    assert all(w != "GPU:0" for part in gpu0.parts for w, _ in part.sends)


def _towers_graph():
    """Parameters on /cpu:0 read by a tower per GPU, the towers' outputs summed on /cpu:0."""
    with dg.Graph().as_default() as g:
        with dg.device("/cpu:0"):
            x = dg.placeholder(dg.float32, [4, 4], name="x")
            w = dg.constant(2.0, shape=[4, 4], name="w")
        outs = []
        for i in range(2):
            with dg.device(f"/gpu:{i}"):
                outs.append(dg.reduce_sum(dg.matmul(x, w) * float(i + 1)))
        with dg.device("/cpu:0"):
            total = dg.add_n(outs, name="total")
    return g, x, total


def test_one_round_runs_the_cpu_reads_before_and_the_sum_after():
    g, x, total = _towers_graph()
    plan = _plan(g, [total], [x])
    steps = worker_steps(plan)
    shape = one_round(steps, frozenset({"CPU:0"}))
    assert shape is not None
    cpu = {part.index for part in steps["CPU:0"].parts}
    assert set(shape.before) | set(shape.after) == cpu
    assert not set(shape.before) & set(shape.after)
    for index in shape.after:  # the sum waits for the towers
        (part,) = [p for p in steps["CPU:0"].parts if p.index == index]
        deps = part.dependencies
        assert any(plan.partitions[d].worker != "CPU:0" or d in shape.after for d in deps)
    for index in shape.before:  # what the towers read is ready before the messages leave
        (part,) = [p for p in steps["CPU:0"].parts if p.index == index]
        assert all(plan.partitions[d].worker == "CPU:0" for d in part.dependencies)
    # with every worker away, the CPU worker is one more worker that a tower sends to
    assert one_round(steps, frozenset()) is None
    # with every worker here, nothing runs away
    assert one_round(steps, frozenset(steps)) == OneRound(
        tuple(sorted(p.index for p in plan.partitions)), ()
    )


def test_a_chain_between_two_gpus_takes_more_than_one_round():
    with dg.Graph().as_default() as g:
        with dg.device("/cpu:0"):
            x = dg.placeholder(dg.float32, [4, 4], name="x")
        with dg.device("/gpu:0"):
            h = dg.tanh(x)
        with dg.device("/gpu:1"):
            h2 = h * 2.0
        with dg.device("/cpu:0"):
            out = dg.reduce_sum(h2)
    steps = worker_steps(_plan(g, [out], [x]))
    assert one_round(steps, frozenset({"CPU:0"})) is None
    assert one_round(steps, frozenset({"CPU:0", "GPU:0"})) is not None
