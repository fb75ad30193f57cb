"""Case *latency*: the fixed cost of one run, on a graph of one op.

``y = x + c`` on a 16x16 float32 array fed through a placeholder. Each repeat makes ``calls``
calls of every way and keeps the median per call. Ways, on one embedded cluster (one CPU
worker), all on the same worker:

* ``dg.Session.run`` (placement and lowering are cached after the warm-up);
* ``client.compute(dask.delayed(np.add)(x, c)).result()`` -- the equivalent delayed call;
* ``client.submit(np.add, x, c).result()``;
* TensorFlow 1's ``Session.run`` (in-process, for reference: no network hop).

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

    tf_sess = None
    with dg.Session(client, graph=graph) as sess:
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
        if tf is not None:
            tf_graph = tf.Graph()
            with tf_graph.as_default():
                tf_x = tf.compat.v1.placeholder(tf.float32, (SIZE, SIZE), name="x")
                tf_y = tf.add(tf_x, tf.constant(np.float32(1.5)), name="y")
            tf_sess = tf_session(tf, tf_graph, os.cpu_count() or 1)
            ways[3].fn = per_call(lambda: tf_sess.run(tf_y, {tf_x: x_value}), calls)
        try:
            run_interleaved(ways, args.repeats, lambda: settle(client))
        finally:
            if tf_sess is not None:
                tf_sess.close()

    for way in ways:
        if way.result is not None:
            np.testing.assert_allclose(way.result, x_value + c_value)
    by = {w.key: way_record(w) for w in ways}
    dg_s = by["daskgraph"]["median_s"]
    return {
        "title": "latency",
        "summary": f"one-op graph (x + c, {SIZE}x{SIZE} float32 fed), median per call of "
        f"{calls} calls",
        "params": {"calls_per_repeat": calls, "size": SIZE},
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
                f"{ratio(dg_s, by['client_submit']['median_s']) or 0:.2f}x",
            )
        ],
    }
