"""The Dask graph of a run moves only what is needed: each consumer's worker gets the outputs
its partitions read, and the client the fetched ones, not every output of a partition.

The graphs run with Dask's synchronous scheduler (no cluster); the bytes a task hands on are
measured with ``dask.sizeof``.
"""

from __future__ import annotations

import uuid

import dask
import numpy as np
import pytest
from dask.sizeof import sizeof
from test_lowering import CPU0, GPU0, GPU1, lowered, new_step

import daskgraph as dg
from daskgraph.runtime.planner import task_graph
from daskgraph.runtime.planner.lowering import Plan, build_task_graph
from daskgraph.runtime.program import select_outputs
from daskgraph.runtime.worker.execution import RunFailure, execute_partition
from daskgraph.runtime.worker.worker_state import current_state

N = 1000  # a 1000 x 1000 float32 product: 4 MB
DEVICES = (GPU0, GPU1, CPU0)


def _graph(plan: Plan, values=(), session_id: str | None = None, trace: bool = False):
    step = new_step(session_id or f"unit-{uuid.uuid4().hex}")
    return build_task_graph(plan, "unit", step, list(values), execute_partition, trace)


def _product_to_cpu_and_scalar_to_client():
    """A 4 MB product on GPU:0 read by the CPU, and a scalar of the GPU fetched."""
    with dg.Graph().as_default() as g:
        with dg.device("/gpu:0"):
            x = dg.placeholder(dg.float32, [N, N], name="x")
            product = dg.matmul(x, x, name="product")
            scalar = dg.reduce_sum(x, name="scalar")
        with dg.device("/cpu:0"):
            mean = dg.reduce_mean(product, name="mean")
    value = np.full((N, N), 0.5, np.float32)
    return lowered(g, [scalar, mean], [x]), value


def test_the_client_gathers_a_partitions_fetched_outputs_only() -> None:
    plan, value = _product_to_cpu_and_scalar_to_client()
    gpu, _ = plan.partitions
    assert gpu.device == GPU0 and len(gpu.program.outputs) == 2  # the product and the scalar
    hlg, gathered = _graph(plan, [value])
    results = dask.get(dict(hlg), gathered)
    scalar_at, mean_at = plan.fetches
    assert scalar_at[0] == gpu.index
    np.testing.assert_allclose(results[scalar_at[0]][scalar_at[1]], 0.5 * N * N)
    np.testing.assert_allclose(results[mean_at[0]][mean_at[1]], 0.25 * N, rtol=1e-5)
    # the GPU partition's result the client receives holds the scalar, not the 4 MB product
    assert sizeof(results[gpu.index]) < 1_000
    function, source, wanted = dict(hlg)[gathered[gpu.index]]
    assert function is select_outputs and source[2] == gpu.index and wanted == (scalar_at[1],)


def test_a_consumer_depends_on_the_outputs_it_reads_only() -> None:
    """GPU:0 makes a 4 MB product, read on GPU:1, and a scalar, read on the CPU: the CPU's
    partition depends on a selection of the scalar (on GPU:0's worker), which is all that
    leaves GPU:0 for the CPU; GPU:1 depends on GPU:0's whole result, as the scalar it does not
    read is too small to be worth a task."""
    with dg.Graph().as_default() as g:
        with dg.device("/gpu:0"):
            x = dg.ones([N, N], dg.float32, name="x")
            product = dg.matmul(x, x, name="product")
            scalar = dg.reduce_sum(x, name="scalar")
        with dg.device("/gpu:1"):
            big = dg.reduce_max(product, name="big")
        with dg.device("/cpu:0"):
            small = dg.negative(scalar, name="small")
    plan = lowered(g, [big, small])
    gpu0, gpu1, cpu = (next(p for p in plan.partitions if p.device == d) for d in DEVICES)
    assert sorted(gpu0.output_bytes) == [4, 4 * N * N]
    hlg, gathered = _graph(plan)
    dsk = dict(hlg)
    (read,) = dsk[_task_key(dsk, cpu.index)][5:]
    function, source, wanted = dsk[read]
    assert function is select_outputs and source == _task_key(dsk, gpu0.index)
    ((_, output, _),) = cpu.program.inputs
    assert wanted == (output,)
    layer = hlg.layers[f"{read[1]}-{read[0]}-{read[2]}"]
    assert layer.annotations == {"workers": [gpu0.worker], "allow_other_workers": False}
    assert sizeof(dask.get(dsk, read)) < 1_000
    assert dsk[_task_key(dsk, gpu1.index)][5:] == (_task_key(dsk, gpu0.index),)
    results = dask.get(dsk, gathered)
    np.testing.assert_allclose(results[cpu.index][0], -float(N * N))
    np.testing.assert_allclose(results[gpu1.index][0], float(N))


def _task_key(dsk: dict, index: int) -> tuple:
    """The key of partition ``index``'s own task (not a selection of its outputs)."""
    (key,) = [k for k, task in dsk.items() if k[2] == index and task[0] is execute_partition]
    return key


def test_a_partition_whose_outputs_are_all_read_adds_no_task() -> None:
    """A chain of single-output partitions is one task per partition, as before: a
    selection is made only where it keeps a large tensor from moving."""
    with dg.Graph().as_default() as g:
        with dg.device("/cpu:0"):
            a = dg.constant([1.0, 2.0], name="a")
            b = dg.tanh(a, name="b")
        with dg.device("/gpu:0"):
            c = dg.square(b, name="c")
        with dg.device("/cpu:0"):
            d = dg.negative(c, name="d")
    plan = lowered(g, [d, a])  # the GPU reads b of the first partition, the client a: 8 B each
    assert len(plan.partitions[0].program.outputs) == 2
    hlg, gathered = _graph(plan)
    assert len(dict(hlg)) == len(plan.partitions) == 3
    np.testing.assert_allclose(
        dask.get(dict(hlg), gathered[-1])[0], -(np.tanh([1.0, 2.0]) ** 2), rtol=1e-6
    )


def test_tracing_gathers_every_partitions_whole_result() -> None:
    plan, value = _product_to_cpu_and_scalar_to_client()
    hlg, gathered = _graph(plan, [value], trace=True)
    results = dask.get(dict(hlg), gathered)
    assert [len(r) for r in results] == [len(p.program.outputs) + 1 for p in plan.partitions]


def test_a_failure_passes_through_selections() -> None:
    """A partition that fails returns a RunFailure, which its selections hand on as it is:
    to the client, and to consumers, which pass it on without running."""
    session_id = f"unit-{uuid.uuid4().hex}"
    with dg.Graph().as_default() as g:
        with dg.device("/cpu:0"):
            v = dg.Variable([1.0], name="v")
            a = dg.multiply(v, 2.0, name="a")
            b = dg.multiply(v, 3.0, name="b")
        with dg.device("/gpu:0"):
            c = dg.negative(a, name="c")
    plan = lowered(g, [b, c])
    cpu = next(p for p in plan.partitions if "a" in [i.op_name for i in p.program.instructions])
    assert len(cpu.program.outputs) == 2  # a for the GPU, b for the client
    try:
        hlg, gathered = _graph(plan, session_id=session_id)
        results = dask.get(dict(hlg), gathered)
    finally:
        current_state().close_session(session_id)
    assert all(isinstance(r, RunFailure) for r in results)
    assert len({id(r) for r in results}) == 1


@pytest.mark.parametrize(
    ("shape", "threshold", "selected"),
    [([4], 1 << 20, False), ([4], 0, True), ([None], 1 << 20, True)],
    ids=["small", "threshold-0", "unknown-size"],
)
def test_a_selection_is_made_where_what_stays_behind_is_large_or_unknown(
    shape, threshold, selected, monkeypatch
) -> None:
    with dg.Graph().as_default() as g:
        with dg.device("/gpu:0"):
            x = dg.placeholder(dg.float32, shape, name="x")
            y = dg.square(x, name="y")  # read by the CPU
            z = dg.exp(x, name="z")  # fetched
        with dg.device("/cpu:0"):
            w = dg.negative(y, name="w")
    plan = lowered(g, [z, w], [x])
    value = np.arange(4, dtype=np.float32)
    monkeypatch.setattr(task_graph, "SELECTED_OUTPUT_BYTES", threshold)
    hlg, gathered = _graph(plan, [value])
    gpu = plan.partitions[plan.fetches[0][0]]
    assert len(dict(hlg)) == len(plan.partitions) + 2 * selected
    assert (dict(hlg)[gathered[gpu.index]][0] is select_outputs) == selected
    results = dask.get(dict(hlg), gathered)
    np.testing.assert_allclose(results[gpu.index][plan.fetches[0][1]], np.exp(value), rtol=1e-6)
    np.testing.assert_allclose(results[plan.fetches[1][0]][plan.fetches[1][1]], -(value**2))
