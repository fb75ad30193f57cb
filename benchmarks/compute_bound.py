"""Case *compute-bound*: A^n + B^n on the CPU, where the framework should cost nothing.

A and B are ``size`` x ``size`` float32 matrices (2000 x 2000, random, divided by their size
so that the powers stay finite), fed through placeholders; A^n and B^n are computed by
``n - 1`` repeated matrix products each (n = 10: 18 products of 16 GFLOP), then added. Ways:

* ``dg.Session.run`` on the embedded cluster a plain ``dg.Session()`` gets (one CPU worker
  with all cores as Dask threads, in this process by default), as daskgraph ships it;
* NumPy in this process (``a @ a @ ...``; OpenBLAS with all cores);
* TensorFlow 1 graph mode, intra- and inter-op threads = CPU count.

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
    run_interleaved,
    settle,
    target_record,
    tf_session,
    way_record,
)


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


def run(client, cpu_worker: str, tf: Any, tf_missing: str, args) -> dict[str, Any]:
    import daskgraph as dg

    size, n = args.matrix_size, args.power
    threads = os.cpu_count() or 1
    a_value, b_value = inputs(size)
    graph, a, b, total = build_daskgraph(size, n)
    feeds = {a: a_value, b: b_value}
    worker_threads = client.scheduler_info(n_workers=-1)["workers"][cpu_worker]["nthreads"]

    tf_sess = None
    with dg.Session(client, graph=graph) as sess:
        ways = [
            Way("daskgraph", "daskgraph Session.run", lambda: sess.run(total, feeds)),
            Way("numpy", "NumPy a @ a @ ... (in-process)", lambda: numpy_way(a_value, b_value, n)),
            Way("tensorflow", "TensorFlow 1 Session.run (graph mode)", unavailable=tf_missing),
        ]
        if tf is not None:
            tf_graph, tf_a, tf_b, tf_total = build_tensorflow(tf, size, n)
            tf_sess = tf_session(tf, tf_graph, threads)
            ways[2].fn = lambda: tf_sess.run(tf_total, {tf_a: a_value, tf_b: b_value})
        try:
            run_interleaved(ways, args.repeats, lambda: settle(client))
        finally:
            if tf_sess is not None:
                tf_sess.close()
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
