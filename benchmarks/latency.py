"""Cases *latency* and *trivial*: the fixed cost of one run, on graphs of one and two ops.

Both run on the embedded cluster a plain ``dg.Session()`` gets (:func:`~benchmarks.common.
default_cluster`: by default its CPU worker lives in this process, so a one-device CPU graph
runs by a plain call, no message sent). Each repeat makes ``calls`` back-to-back calls of
every way and keeps the median per call; every way is warmed up by one repeat's calls, untimed.
TensorFlow and NumPy run in processes of their own (:mod:`benchmarks.peer`), as their users
run them: not beside the cluster's threads.

*trivial* -- what a TensorFlow user's tight loop of small steps pays per step: ``y = x * 2 +
1`` on 4 float32 fed through a placeholder. Ways:

* ``dg.Session.run`` (placement and lowering are cached after the warm-up);
* TensorFlow 1's ``Session.run`` of the same graph (its C++ executor, in a process of its own);
* the NumPy expression (the floor: no framework at all; a process of its own).

Target: daskgraph / TensorFlow <= 2x.

*latency* -- ``y = x + c`` on a 16x16 float32 array fed through a placeholder, against plain
Dask on the same cluster and worker. Ways:

* ``dg.Session.run``;
* ``client.compute(dask.delayed(np.add)(x, c)).result()`` -- the equivalent delayed call;
* ``client.submit(np.add, x, c).result()``;
* TensorFlow 1's ``Session.run`` (a process of its own, for reference).

The Dask ways leave their tasks to be released: the cluster settles after each of their
repeats (no tasks held), so that the next way does not pay for it.

Target: Session.run / client.compute <= 1.2x.
"""

from __future__ import annotations

import os
from functools import partial
from typing import Any

import numpy as np

from benchmarks.common import (
    Way,
    per_call,
    ratio,
    run_back_to_back,
    settle,
    target_record,
    tf_session,
    way_record,
)
from benchmarks.peer import Peers, SessionModel, numpy_model, peer_way

SIZE = 16
TRIVIAL_SIZE = 4
TRIVIAL_GOAL = 2.0
TF_LABEL = "TensorFlow 1 Session.run (a process of its own)"


# -- the peers' models (built in the peer processes) ----------------------------------------------
def tf_model(tf: Any, op: str, x_value: np.ndarray) -> SessionModel:
    """TensorFlow's session of ``y = x * 2 + 1`` (``op="trivial"``) or ``y = x + 1.5``
    (``op="latency"``), fed ``x_value``."""
    v1 = tf.compat.v1
    graph = tf.Graph()
    with graph.as_default():
        x = v1.placeholder(tf.float32, x_value.shape, name="x")
        if op == "trivial":
            y = tf.add(tf.multiply(x, np.float32(2.0)), np.float32(1.0), name="y")
        else:
            y = tf.add(x, tf.constant(np.float32(1.5)), name="y")
    return SessionModel(v1, tf_session(tf, graph, os.cpu_count() or 1), y, {x: x_value})


def numpy_trivial(np_: Any, x_value: np.ndarray) -> Any:
    """The NumPy expression of the trivial graph."""
    return numpy_model(lambda: x_value * 2 + 1)


def _tf_way(peers: Peers, op: str, x_value: np.ndarray, calls: int) -> Way:
    way = Way("tensorflow", TF_LABEL, unavailable=peers.tf_missing)
    peer = peers.tensorflow
    if peer is not None:
        handle = peer.build("benchmarks.latency:tf_model", op=op, x_value=x_value)
        peer_way(way, peer, handle, calls, calls)
    return way


# -- the cases ------------------------------------------------------------------------------------
def run(client, cpu_worker: str, peers: Peers, args) -> dict[str, Any]:
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

    settled = partial(_settled, client)
    with dg.Session(graph=graph) as sess:  # on the default embedded cluster: client's
        ways = [
            Way(
                "daskgraph",
                "daskgraph Session.run",
                per_call(lambda: sess.run(y, {x: x_value}), calls),
            ),
            Way(
                "client_compute",
                "client.compute(delayed(np.add)(...))",
                per_call(compute, calls),
                after=settled,
            ),
            Way(
                "client_submit",
                "client.submit(np.add, ...)",
                per_call(submit, calls),
                after=settled,
            ),
            _tf_way(peers, "latency", x_value, calls),
        ]
        run_back_to_back(ways, args.repeats, None)

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


def _settled(client, repeat: int) -> None:
    settle(client, collect=False)


def run_trivial(client, cpu_worker: str, peers: Peers, args) -> dict[str, Any]:
    """Case *trivial*: ``y = x * 2 + 1`` on 4 float32, daskgraph against TensorFlow 1."""
    import daskgraph as dg

    graph = dg.Graph()
    with graph.as_default():
        x = dg.placeholder(dg.float32, shape=(TRIVIAL_SIZE,), name="x")
        y = dg.add(dg.multiply(x, np.float32(2.0)), np.float32(1.0), name="y")
    x_value = np.arange(TRIVIAL_SIZE, dtype=np.float32)
    calls = args.trivial_calls
    with dg.Session(graph=graph) as sess:
        numpy_way = Way("numpy", "NumPy x * 2 + 1 (a process of its own)")
        peer_way(
            numpy_way,
            peers.numpy,
            peers.numpy.build("benchmarks.latency:numpy_trivial", x_value=x_value),
            calls,
            calls,
        )
        ways = [
            Way(
                "daskgraph",
                "daskgraph Session.run",
                per_call(lambda: sess.run(y, {x: x_value}), calls),
            ),
            _tf_way(peers, "trivial", x_value, calls),
            numpy_way,
        ]
        run_back_to_back(ways, args.repeats, None)

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
                note=peers.tf_missing,
            )
        ],
    }


def _where(client) -> str:
    """Where the cluster's CPU worker runs: in this process, or in a process of its own."""
    cluster = getattr(client, "cluster", None)
    workers = getattr(cluster, "workers", {}) or {}
    kinds = {type(w).__name__ for w in workers.values()}
    return "CPU worker in this process" if "Worker" in kinds else "worker processes"
