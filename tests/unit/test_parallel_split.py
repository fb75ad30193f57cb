"""Heavy independent branches of a CPU partition become partitions that run in parallel."""

from __future__ import annotations

import dask
import numpy as np
import pytest
from test_lowering import GPU0, devices, run_plan_in_process

import daskgraph as dg
from daskgraph.runtime.planner.lowering import lower
from daskgraph.runtime.planner.placement import place

N = 1100  # 1.21M elements per op: above the default threshold of 1M


def _two_chains(device: str, op=lambda y: dg.tanh(y * 1.01 + 0.5), n: int = N):
    g = dg.Graph()
    with g.as_default(), dg.device(device):
        x = dg.placeholder(dg.float32, [n, n], name="x")
        sums = []
        for _ in range(2):
            y = x
            for _ in range(3):
                y = op(y)
            sums.append(dg.reduce_sum(y))
        total = dg.add_n(sums, name="total")
    return g, x, total


def _assert_topological(plan) -> None:
    for p in plan.partitions:
        assert all(d < p.index for d in p.dependencies), (p.index, p.dependencies)


def test_two_heavy_branches_split_into_parallel_partitions():
    g, x, total = _two_chains("/cpu:0")
    plan = lower(place(g, devices(0)), [total], [x])
    assert len(plan.partitions) == 4  # sources, branch 1, branch 2, the join (tail)
    _assert_topological(plan)
    rest, b1, b2, tail = plan.partitions
    assert {i.op_type for i in rest.program.instructions} == {"Const"}  # sources only
    assert [p.feed_indices for p in plan.partitions] == [(0,), (), (), ()]
    assert b1.dependencies == b2.dependencies == (0,)  # the branches only read the sources
    assert set(tail.dependencies) == {1, 2}
    assert [i.op_name for i in tail.program.instructions] == ["total"]
    value = np.random.default_rng(0).random((N, N), dtype=np.float32)
    (result,) = run_plan_in_process(plan, [value])
    expected = 0.0
    for _ in range(2):
        y = value
        for _ in range(3):
            y = np.tanh(y * np.float32(1.01) + np.float32(0.5))
        expected += y.sum(dtype=np.float32)
    np.testing.assert_allclose(result, expected, rtol=1e-5)


@pytest.mark.parametrize(
    ("device", "op", "n", "threshold"),
    [
        (GPU0, lambda y: dg.tanh(y), N, 1_000_000),
        ("/cpu:0", lambda y: dg.matmul(y, y), N, 1_000_000),
        ("/cpu:0", lambda y: dg.tanh(y), 50, 1_000_000),
        ("/cpu:0", lambda y: dg.tanh(y), N, 10**12),
    ],
    ids=["gpu-partitions-stay-whole", "blas-is-already-parallel", "small-ops", "threshold"],
)
def test_partitions_that_would_not_gain_stay_whole(device, op, n, threshold):
    g, x, total = _two_chains(device, op, n)
    with dask.config.set({"daskgraph.parallel-partition-elements": threshold}):
        plan = lower(place(g, devices(1)), [total], [x])
    assert len(plan.partitions) == 1


def test_split_partitions_share_constants_correctly():
    g = dg.Graph()
    with g.as_default(), dg.device("/cpu:0"):
        big = dg.constant(np.ones((N, N), np.float32))
        a = dg.reduce_sum(dg.tanh(big) * 2.0)
        b = dg.reduce_sum(dg.exp(big * 0.0))
        total = a + b
    plan = lower(place(g, devices(0)), [total, a, b])
    _assert_topological(plan)
    assert len(plan.partitions) == 4
    total_v, a_v, b_v = run_plan_in_process(plan, [])
    np.testing.assert_allclose(a_v, np.tanh(1.0) * 2 * N * N, rtol=1e-4)
    np.testing.assert_allclose(b_v, N * N, rtol=1e-6)
    np.testing.assert_allclose(total_v, a_v + b_v, rtol=1e-6)
