"""The bytes a worker's compiled steps send another worker are counted where they are packed
(:func:`daskgraph.runtime.worker.wire.packed_bytes`, read by ``client.run``): what
``make gpu-check`` reads to tell how many bytes between two GPU workers crossed host memory.
Here virtual GPUs in processes of their own: NumPy arrays, counted as host bytes."""

from __future__ import annotations

import numpy as np
import pytest
from worker_probes import cluster_client

import daskgraph as dg
from daskgraph.runtime.worker.wire import packed_bytes

SIDE, RUNS = 256, 5


@pytest.fixture(scope="module")
def cluster():
    """Two virtual GPUs in processes of their own, the CPU worker in this process."""
    with cluster_client(3, virtual_gpus=2, processes=True, cpu_threads=1) as client:
        yield client


def test_a_tensor_one_gpu_worker_sends_another_is_counted_in_host_bytes(cluster):
    value = np.random.default_rng(0).random((SIDE, SIDE), dtype=np.float32)
    with dg.Graph().as_default(), dg.Session(cluster) as session:
        a = dg.placeholder(dg.float32, [SIDE, SIDE], name="a")
        with dg.device("/gpu:1"):
            product = dg.matmul(a, a, name="product")
        with dg.device("/gpu:0"):
            out = dg.add(product, 1.0, name="out")
        for _ in range(3):  # the first through the scheduler, then compiled steps
            session.run(out, {a: value})
        cluster.run(packed_bytes, True)
        for _ in range(RUNS):
            np.testing.assert_allclose(session.run(out, {a: value}), value @ value + 1, rtol=1e-5)
        counts = cluster.run(packed_bytes)
    workers = cluster.scheduler_info()["workers"]
    gpu1 = next(a for a, w in workers.items() if w["id"].endswith("GPU:1"))
    sent = RUNS * SIDE * SIDE * 4  # the product, every run, to GPU:0's worker
    assert sent <= counts[gpu1]["host"] < sent + 2**20, counts
    assert counts[gpu1]["cuda"] == 0  # (virtual GPUs hold NumPy arrays)
