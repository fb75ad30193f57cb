"""Cases *latency* and *trivial*: the fixed cost of one run, on graphs of one and two ops.

Both run on the embedded cluster a plain ``dg.Session()`` gets (:func:`~benchmarks.common.
default_cluster`: by default its CPU worker lives in this process, so a one-device CPU graph
runs by a plain call, no message sent). Each repeat makes ``calls`` calls of every way and
keeps the median per call.

*trivial* -- what a TensorFlow user's tight loop of small steps pays per step: ``y = x * 2 +
1`` on 4 float32 fed through a placeholder. Ways:

* ``dg.Session.run`` (placement and lowering are cached after the warm-up);
* TensorFlow 1's ``Session.run`` of the same graph (in-process C++ executor);
* the NumPy expression in this process (the floor: no framework at all).

Target: daskgraph / TensorFlow <= 2x.

*latency* -- ``y = x + c`` on a 16x16 float32 array fed through a placeholder, against plain
Dask on the same cluster and worker. Ways:

* ``dg.Session.run``;
* ``client.compute(dask.delayed(np.add)(x, c)).result()`` -- the equivalent delayed call;
* ``client.submit(np.add, x, c).result()``;
* TensorFlow 1's ``Session.run`` (in-process, for reference).

Target: Session.run / client.compute <= 1.2x.
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from benchmarks.common import (
    Timed,
    Way,
    ratio,
    run_interleaved,
    settle,
    target_record,
    tf_session,
    way_record,
)

SIZE = 16
TRIVIAL_SIZE = 4
TRIVIAL_GOAL = 2.0


def per_call(fn: Callable[[], Any], calls: int) -> Callable[[], Timed]:
    """A way that makes ``calls`` calls and reports the median per call."""

    def run() -> Timed:
        times = []
        result = None
        for _ in range(calls):
            start = time.perf_counter()
            result = fn()
            times.append(time.perf_counter() - start)
        return Timed(statistics.median(times), result)

    return run


def run(client, cpu_worker: str, tf: Any, tf_missing: str, args) -> dict[str, Any]:
    import dask

    import daskgraph as dg

    graph = dg.Graph()
    with graph.as_default():
        x = dg.placeholder(dg.float32, shape=(SIZE, SIZE), name="x")
        c = dg.constant(np.float32(1.5), name="c")
        y = dg.add(x, c, name="y")
    x_value = np.ones((SIZE, SIZE), np.float32)
    c_value = np.float32(1.5)
    calls = args.calls

    def submit() -> np.ndarray:
        return client.submit(
            np.add, x_value, c_value, workers=[cpu_worker], allow_other_workers=False, pure=False
        ).result()

    def compute() -> np.ndarray:
        return client.compute(
            dask.delayed(np.add, pure=False)(x_value, c_value),
            workers=[cpu_worker],
            allow_other_workers=False,
        ).result()

    with dg.Session(graph=graph) as sess:  # on the default embedded cluster: client's
        ways = [
            Way(
                "daskgraph",
                "daskgraph Session.run",
                per_call(lambda: sess.run(y, {x: x_value}), calls),
            ),
            Way("client_compute", "client.compute(delayed(np.add)(...))", per_call(compute, calls)),
            Way("client_submit", "client.submit(np.add, ...)", per_call(submit, calls)),
            Way("tensorflow", "TensorFlow 1 Session.run (in-process)", unavailable=tf_missing),
        ]
        _run_with_tf(
            client,
            ways,
            ways[3],
            tf,
            (SIZE, SIZE),
            lambda t, x: t.add(x, t.constant(np.float32(1.5)), name="y"),
            x_value,
            calls,
            args.repeats,
        )

    for way in ways:
        if way.result is not None:
            np.testing.assert_allclose(way.result, x_value + c_value)
    by = {w.key: way_record(w) for w in ways}
    dg_s = by["daskgraph"]["median_s"]
    return {
        "title": "latency",
        "summary": f"one-op graph (x + c, {SIZE}x{SIZE} float32 fed), median per call of "
        f"{calls} calls",
        "params": {"calls_per_repeat": calls, "size": SIZE, "cluster": _where(client)},
        "baseline": "client_compute",
        "ways": list(by.values()),
        "targets": [
            target_record(
                "latency.vs_compute",
                "Session.run / client.compute",
                ratio(dg_s, by["client_compute"]["median_s"]),
                "<=",
                1.2,
                note=f"for reference, Session.run / client.submit = "
                f"{ratio(dg_s, by['client_submit']['median_s']) or 0:.2g}x",
            )
        ],
    }


def _run_with_tf(
    client, ways: list, tf_way: Way, tf: Any, shape: tuple, build, x_value, calls: int, repeats: int
) -> None:
    """Run ``ways`` interleaved, ``tf_way`` being TensorFlow's ``Session.run`` of
    ``build(tf, placeholder)`` fed ``x_value`` (where TensorFlow is installed)."""
    tf_sess = None
    if tf is not None:
        tf_graph = tf.Graph()
        with tf_graph.as_default():
            tf_x = tf.compat.v1.placeholder(tf.float32, shape, name="x")
            tf_y = build(tf, tf_x)
        tf_sess = tf_session(tf, tf_graph, os.cpu_count() or 1)
        tf_way.fn = per_call(lambda: tf_sess.run(tf_y, {tf_x: x_value}), calls)
    try:
        run_interleaved(ways, repeats, lambda: settle(client))
    finally:
        if tf_sess is not None:
            tf_sess.close()


def run_trivial(client, cpu_worker: str, tf: Any, tf_missing: str, args) -> dict[str, Any]:
    """Case *trivial*: ``y = x * 2 + 1`` on 4 float32, daskgraph against TensorFlow 1."""
    import daskgraph as dg

    graph = dg.Graph()
    with graph.as_default():
        x = dg.placeholder(dg.float32, shape=(TRIVIAL_SIZE,), name="x")
        y = dg.add(dg.multiply(x, np.float32(2.0)), np.float32(1.0), name="y")
    x_value = np.arange(TRIVIAL_SIZE, dtype=np.float32)
    calls = args.trivial_calls
    with dg.Session(graph=graph) as sess:
        ways = [
            Way(
                "daskgraph",
                "daskgraph Session.run",
                per_call(lambda: sess.run(y, {x: x_value}), calls),
            ),
            Way("tensorflow", "TensorFlow 1 Session.run (in-process)", unavailable=tf_missing),
            Way("numpy", "NumPy x * 2 + 1 (in-process)", per_call(lambda: x_value * 2 + 1, calls)),
        ]
        _run_with_tf(
            client,
            ways,
            ways[1],
            tf,
            (TRIVIAL_SIZE,),
            lambda t, x: t.add(t.multiply(x, np.float32(2.0)), np.float32(1.0), name="y"),
            x_value,
            calls,
            args.repeats,
        )

    for way in ways:
        if way.result is not None:
            np.testing.assert_allclose(way.result, x_value * 2 + 1)
    by = {w.key: way_record(w) for w in ways}
    return {
        "title": "trivial graph",
        "summary": f"y = x * 2 + 1 on {TRIVIAL_SIZE} float32 fed, median per call of {calls} calls",
        "params": {"calls_per_repeat": calls, "size": TRIVIAL_SIZE, "cluster": _where(client)},
        "baseline": "tensorflow",
        "ways": list(by.values()),
        "targets": [
            target_record(
                "trivial.vs_tensorflow",
                "Session.run / TensorFlow Session.run",
                ratio(by["daskgraph"]["median_s"], by["tensorflow"]["median_s"]),
                "<=",
                TRIVIAL_GOAL,
                note=tf_missing,
            )
        ],
    }


def _where(client) -> str:
    """Where the cluster's CPU worker runs: in this process, or in a process of its own."""
    cluster = getattr(client, "cluster", None)
    workers = getattr(cluster, "workers", {}) or {}
    kinds = {type(w).__name__ for w in workers.values()}
    return "CPU worker in this process" if "Worker" in kinds else "worker processes"
