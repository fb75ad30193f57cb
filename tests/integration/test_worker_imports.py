"""A worker process loads only the kernels of the ops it is sent: after running programs of
elementwise math, products, reductions, random draws, variables updated by their gradients,
a queue, a loop, a checkpoint saved and restored (by ``tf.train.Saver`` and by
``init_from_checkpoint``'s ``RestoreV2``) and a ``tf.data`` dataset with a ``map``, no worker
has imported a graph builder, the gradients, training, layers, the data builders or the TF1
names (:mod:`daskgraph.kernels` holds what they ran).

The cluster is a private one with every worker in a process of its own (the CPU worker too),
so that nothing imported by other tests or by this process counts.
"""

from __future__ import annotations

import os
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
    "daskgraph.framework.nodes",
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


def _save_and_restore(session: dg.Session, directory: str) -> None:
    """A variable of the CPU worker saved by ``Saver``, then restored by it and by an
    initializer that reads the checkpoint where it runs (``RestoreV2``)."""
    with dg.device("/cpu:0"):
        v = dg.Variable(np.arange(3, dtype=np.float32), name="v")
        copy = tf.get_variable("copy", [3], dg.float32, tf.zeros_initializer())
        counter = tf.while_loop(lambda i, s: i < 4, lambda i, s: (i + 1, s + v[0] + 1.0), [0, 0.0])
    session.run(v.initializer)
    saver = tf.train.Saver([v])
    path = saver.save(session, os.path.join(directory, "model"))
    session.run(v.assign(v * 0.0))
    saver.restore(session, path)
    tf.train.init_from_checkpoint(path, {"v": copy})
    session.run(copy.initializer)
    np.testing.assert_array_equal(session.run(copy), np.arange(3, dtype=np.float32))
    np.testing.assert_array_equal(session.run(v), np.arange(3, dtype=np.float32))
    assert session.run(counter) == [4, 4.0]


def _iterate_dataset(session: dg.Session) -> None:
    """A dataset with a traced ``map``, read by an iterator on the CPU worker."""
    with dg.device("/cpu:0"):
        scale = dg.constant(10.0)
        dataset = tf.data.Dataset.from_tensor_slices(np.arange(5, dtype=np.float32))
        batches = dataset.map(lambda x: x * scale).filter(lambda x: x > 5.0).batch(2)
        iterator = batches.make_initializable_iterator()
        element = iterator.get_next()
    session.run(iterator.initializer)
    read = [session.run(element).tolist(), session.run(element).tolist()]
    assert read == [[10.0, 20.0], [30.0, 40.0]]
    with pytest.raises(dg.errors.OutOfRangeError):
        session.run(element)


def test_workers_load_kernels_but_no_graph_builders(cluster, tmp_path):
    with dg.Graph().as_default(), dg.Session(cluster) as session:
        _run_programs(session)
        _save_and_restore(session, str(tmp_path))
        _iterate_dataset(session)
    # (a lambda travels by value: a function of this module would import it on the workers)
    loaded = cluster.run(lambda: sorted(m for m in sys.modules if m.startswith("daskgraph")))
    assert len(loaded) == 3
    for address, modules in loaded.items():
        builders = [m for m in modules if m == "daskgraph.ops" or m.startswith(BUILDERS)]
        assert builders == [], f"worker {address} imported {builders}"
    everywhere = set.union(*(set(m) for m in loaded.values()))
    # what the programs ran came from the kernel modules of their families
    families = ("math", "state", "random", "reduction", "queues", "backprop")
    for family in (*families, "checkpoint_ops", "dataset_ops", "loops", "subgraph"):
        assert f"daskgraph.kernels.{family}" in everywhere
