"""A worker process loads only the kernels of the ops it is sent: after running programs of
elementwise math, products, reductions, random draws, variables updated by their gradients
and a queue, no worker has imported a graph builder, the gradients, training, layers or the
TF1 names (:mod:`daskgraph.kernels` holds what they ran).

The cluster is a private one with every worker in a process of its own (the CPU worker too),
so that nothing imported by other tests or by this process counts.
"""

from __future__ import annotations

import sys

import numpy as np
import pytest
from worker_probes import cluster_client

import daskgraph as dg
import daskgraph.compat.v1 as tf

#: what a worker never needs: graph builders, gradients, training, layers, TF1's names
BUILDERS = (
    "daskgraph.ops",
    "daskgraph.framework.graph",
    "daskgraph.framework.gradient_registry",
    "daskgraph.training",
    "daskgraph.layers",
    "daskgraph.compat",
    "daskgraph.data",
    "daskgraph.summary",
    "daskgraph.runtime.planner",
    "daskgraph.runtime.client",
)


@pytest.fixture(scope="module")
def cluster():
    """Two virtual GPUs and the CPU worker, each in a process of its own."""
    with cluster_client(
        3, virtual_gpus=2, processes=True, cpu_in_process=False, cpu_threads=1
    ) as client:
        yield client


def _run_programs(session: dg.Session) -> None:
    x0 = np.arange(16, dtype=np.float32).reshape(4, 4) / 16
    with dg.device("/gpu:0"):
        x = dg.placeholder(dg.float32, [4, 4], name="x")
        w = dg.Variable(np.eye(4, dtype=np.float32), name="w")
        y = dg.tanh(dg.matmul(x, w) * 2.0 + 1.0)
        loss = dg.reduce_mean(dg.square(y))
        (grad,) = dg.gradients(loss, [w])
        step = w.assign_sub(0.1 * grad)
    with dg.device("/gpu:1"):
        noise = dg.random_normal([4, 4], seed=7)
        best = dg.argmax(dg.reduce_sum(noise + y, axis=0), axis=0)
    with dg.device("/cpu:0"):
        queue = tf.FIFOQueue(4, [dg.float32], shapes=[[]])
        enqueue = queue.enqueue([dg.reduce_max(y)])
        dequeued = queue.dequeue()
    session.run(dg.global_variables_initializer())
    expected_y = np.tanh(x0 @ np.eye(4, dtype=np.float32) * 2 + 1)
    np.testing.assert_allclose(session.run(y, {x: x0}), expected_y, rtol=1e-5)
    before = session.run(w)
    session.run(step, {x: x0})
    assert not np.array_equal(session.run(w), before)  # the update applied
    assert 0 <= session.run(best, {x: x0}) < 4
    session.run(enqueue, {x: x0})
    updated = np.tanh(x0 @ session.run(w) * 2 + 1)
    assert session.run(dequeued) == pytest.approx(updated.max(), rel=1e-5)


def test_workers_load_kernels_but_no_graph_builders(cluster):
    with dg.Graph().as_default(), dg.Session(cluster) as session:
        _run_programs(session)
    # (a lambda travels by value: a function of this module would import it on the workers)
    loaded = cluster.run(lambda: sorted(m for m in sys.modules if m.startswith("daskgraph")))
    assert len(loaded) == 3
    for address, modules in loaded.items():
        builders = [m for m in modules if m == "daskgraph.ops" or m.startswith(BUILDERS)]
        assert builders == [], f"worker {address} imported {builders}"
    everywhere = set.union(*(set(m) for m in loaded.values()))
    # what the programs ran came from the kernel modules of their families
    for family in ("math", "state", "random", "reduction", "queues", "backprop"):
        assert f"daskgraph.kernels.{family}" in everywhere
