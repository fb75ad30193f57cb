"""Case *compute-bound*: A^n + B^n on the CPU, where the framework should cost nothing.

A and B are ``size`` x ``size`` float32 matrices (2000 x 2000, random, divided by their size
so that the powers stay finite), fed through placeholders; A^n and B^n are computed by
``n - 1`` repeated matrix products each (n = 10: 18 products of 16 GFLOP), then added. Ways:

* ``dg.Session.run`` on the embedded cluster a plain ``dg.Session()`` gets (one CPU worker
  with all cores as Dask threads, in this process by default), as daskgraph ships it;
* NumPy (``a @ a @ ...``; OpenBLAS with all cores), in a process of its own
  (:mod:`benchmarks.peer`);
* TensorFlow 1 graph mode, intra- and inter-op threads = CPU count, in a process of its own.

Dask's nanny starts workers with ``OPENBLAS_NUM_THREADS=1``; daskgraph's executor gives BLAS
the CPU worker's threads (``threadpoolctl``), and the case records the worker's BLAS threads.

The results are checked against NumPy's (relative tolerance 1e-3). Target: daskgraph /
NumPy <= 1.05.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from benchmarks.common import (
    Way,
    blas_threads,
    ratio,
    run_back_to_back,
    target_record,
    tf_session,
    way_record,
)
from benchmarks.peer import Peers, SessionModel, numpy_model, peer_way


def inputs(size: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(42)
    a = (rng.random((size, size), dtype=np.float32) / size).astype(np.float32)
    b = (rng.random((size, size), dtype=np.float32) / size).astype(np.float32)
    return a, b


def numpy_way(a: np.ndarray, b: np.ndarray, n: int) -> np.ndarray:
    pa, pb = a, b
    for _ in range(n - 1):
        pa = a @ pa
    for _ in range(n - 1):
        pb = b @ pb
    return pa + pb


def build_daskgraph(size: int, n: int):
    import daskgraph as dg

    graph = dg.Graph()
    with graph.as_default(), dg.device("/cpu:0"):
        a = dg.placeholder(dg.float32, (size, size), name="A")
        b = dg.placeholder(dg.float32, (size, size), name="B")
        pa, pb = a, b
        for _ in range(n - 1):
            pa = dg.matmul(a, pa)
        for _ in range(n - 1):
            pb = dg.matmul(b, pb)
        total = dg.add(pa, pb, name="total")
    return graph, a, b, total


def build_tensorflow(tf: Any, size: int, n: int):
    graph = tf.Graph()
    with graph.as_default(), tf.device("/cpu:0"):
        a = tf.compat.v1.placeholder(tf.float32, (size, size), name="A")
        b = tf.compat.v1.placeholder(tf.float32, (size, size), name="B")
        pa, pb = a, b
        for _ in range(n - 1):
            pa = tf.matmul(a, pa)
        for _ in range(n - 1):
            pb = tf.matmul(b, pb)
        total = tf.add(pa, pb, name="total")
    return graph, a, b, total


def tf_model(tf: Any, size: int, n: int, a_value: np.ndarray, b_value: np.ndarray) -> Any:
    """TensorFlow's session of the case (a peer's model), fed ``a_value`` and ``b_value``."""
    graph, a, b, total = build_tensorflow(tf, size, n)
    session = tf_session(tf, graph, os.cpu_count() or 1)
    return SessionModel(tf.compat.v1, session, total, {a: a_value, b: b_value})


def numpy_peer(np_: Any, n: int, a_value: np.ndarray, b_value: np.ndarray) -> Any:
    return numpy_model(lambda: numpy_way(a_value, b_value, n))


def _peer_ways(numpy_way: Way, tf_way: Way, peers: Peers, size: int, n: int, values: dict) -> None:
    """The peers' ways: one call a repeat, in their processes."""
    handle = peers.numpy.build("benchmarks.compute_bound:numpy_peer", n=n, **values)
    peer_way(numpy_way, peers.numpy, handle, 1, 1)
    if peers.tensorflow is not None:
        handle = peers.tensorflow.build(
            "benchmarks.compute_bound:tf_model", size=size, n=n, **values
        )
        peer_way(tf_way, peers.tensorflow, handle, 1, 1)


def run(client, cpu_worker: str, peers: Peers, args) -> dict[str, Any]:
    import daskgraph as dg

    size, n = args.matrix_size, args.power
    threads = os.cpu_count() or 1
    a_value, b_value = inputs(size)
    graph, a, b, total = build_daskgraph(size, n)
    feeds = {a: a_value, b: b_value}
    worker_threads = client.scheduler_info(n_workers=-1)["workers"][cpu_worker]["nthreads"]

    with dg.Session(client, graph=graph) as sess:
        ways = [
            Way("daskgraph", "daskgraph Session.run", lambda: sess.run(total, feeds)),
            Way("numpy", "NumPy a @ a @ ... (a process of its own)"),
            Way(
                "tensorflow",
                "TensorFlow 1 Session.run (a process of its own)",
                unavailable=peers.tf_missing,
            ),
        ]
        _peer_ways(ways[1], ways[2], peers, size, n, {"a_value": a_value, "b_value": b_value})
        run_back_to_back(ways, args.repeats, None)
        # after daskgraph's runs: its executor set the worker's BLAS threads on the first one
        worker_blas = client.run(blas_threads, workers=[cpu_worker])[cpu_worker]

    expected = ways[1].result
    for way in ways:
        if way.result is not None:
            np.testing.assert_allclose(way.result, expected, rtol=1e-3, atol=0.0)
    by = {w.key: way_record(w) for w in ways}
    return {
        "title": "compute-bound",
        "summary": f"A^{n} + B^{n}, {size}x{size} float32, by repeated matmul, on the CPU only "
        f"({2 * (n - 1)} matmuls, {2 * (n - 1) * 2 * size**3 / 1e9:.0f} GFLOP)",
        "params": {
            "size": size,
            "n": n,
            "gflop": 2 * (n - 1) * 2 * size**3 / 1e9,
            "threads": threads,
            "cpu_worker_dask_threads": worker_threads,
            "cpu_worker_blas_threads": worker_blas,
            "client_blas_threads": blas_threads(),
            "results_checked": "against NumPy, rtol 1e-3",
        },
        "baseline": "numpy",
        "ways": list(by.values()),
        "targets": [
            target_record(
                "compute.vs_numpy",
                "daskgraph / NumPy",
                ratio(by["daskgraph"]["median_s"], by["numpy"]["median_s"]),
                "<=",
                1.05,
            )
        ],
    }
