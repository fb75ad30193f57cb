"""Case *fine-grained*: a few thousand tiny ops, where per-op overhead is everything.

``chains`` chains of ``length`` elementwise ops (alternately adding and multiplying small
per-chain constants) on a 16x16 float32 array fed through one placeholder, joined by
``add_n``: 40 x 100 = 4,001 op tasks. Four ways:

* ``dg.Session.run`` on the embedded cluster a plain ``dg.Session()`` gets
  (:func:`~benchmarks.common.default_cluster`; its CPU worker lives in this process by
  default) -- one partition, its ops run in a lean loop;
* TensorFlow 1 (``tf.compat.v1`` graph mode, a ``Session`` with the same ops, intra- and
  inter-op threads = CPU count, graph optimizations at their defaults), in a process of its
  own (:mod:`benchmarks.peer`);
* a plain NumPy loop (the floor: no framework at all), in a process of its own;
* one Dask task per op, all restricted to the CPU worker (``client.get(dsk, key,
  workers=[cpu], allow_other_workers=False)``) -- what daskgraph would cost without
  partitioning. It runs ``--per-op-chains`` chains (4: a Dask task costs 10-30 ms on a
  2-core machine, 40 s a repeat for the whole graph), and its target compares times per op.
  Its warm-up runs a single chain (same code paths).

The first three ways are warmed up by :data:`WARMUP_CALLS` untimed calls each, and more until
:data:`WARMUP_SECONDS` have passed (the steady state of a continuous loop of runs, which
compiles daskgraph's fused kernels meanwhile; the first seconds are the *warm-up* case's), then
each repeat times ``--fine-calls`` back-to-back calls and keeps the median per call, each way's
warm-up and repeats back to back. The per-op peer's repeat is
one call; the cluster settles after it (its 401 keys released), not billed to the next way.

Every result is checked against NumPy's. Targets: one-task-per-op / daskgraph >= 20x;
daskgraph / TensorFlow <= 1/3 (3x faster; issue 25, fused kernels).
"""

from __future__ import annotations

import os
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
#: issue 25: at least 3x faster than TensorFlow (fused elementwise kernels)
TF_GOAL = 1 / 3


def chain_constants(n_chains: int) -> list[tuple[np.float32, np.float32]]:
    """(addend, factor) of every chain: small, and distinct per chain to catch mis-wiring."""
    return [
        (np.float32(0.01 * (c + 1) / n_chains), np.float32(0.99 - 0.001 * c))
        for c in range(n_chains)
    ]


def build_daskgraph(n_chains: int, length: int):
    """(graph, placeholder, fetch): ``n_chains`` chains of ``length`` Add/Mul ops, then AddN."""
    import daskgraph as dg

    graph = dg.Graph()
    with graph.as_default():
        x = dg.placeholder(dg.float32, shape=(SIZE, SIZE), name="x")
        ends = []
        for c, (addend, factor) in enumerate(chain_constants(n_chains)):
            a = dg.constant(addend, name=f"a{c}")
            m = dg.constant(factor, name=f"m{c}")
            y = x
            for j in range(length):
                y = dg.add(y, a) if j % 2 == 0 else dg.multiply(y, m)
            ends.append(y)
        total = dg.add_n(ends, name="total")
    return graph, x, total


def build_tensorflow(tf: Any, n_chains: int, length: int):
    """The same graph in TensorFlow 1 graph mode: (graph, placeholder, fetch)."""
    graph = tf.Graph()
    with graph.as_default():
        x = tf.compat.v1.placeholder(tf.float32, shape=(SIZE, SIZE), name="x")
        ends = []
        for c, (addend, factor) in enumerate(chain_constants(n_chains)):
            a = tf.constant(addend, name=f"a{c}")
            m = tf.constant(factor, name=f"m{c}")
            y = x
            for j in range(length):
                y = tf.add(y, a) if j % 2 == 0 else tf.multiply(y, m)
            ends.append(y)
        total = tf.add_n(ends, name="total")
    return graph, x, total


def _add_n(*arrays: np.ndarray) -> np.ndarray:
    total = arrays[0]
    for a in arrays[1:]:
        total = np.add(total, a)
    return total


_FUNCS = {"Add": np.add, "Mul": np.multiply, "AddN": _add_n}


def dask_graph_per_op(graph, x_value: np.ndarray) -> tuple[dict, str, int]:
    """The same ops as a plain Dask graph, one ``(func, dep_key, const)`` task per op.

    Constants are inlined into the tasks that use them; the placeholder becomes a data key.
    Returns (graph, output key, number of op tasks).
    """
    dsk: dict[str, Any] = {}
    consts: dict[str, Any] = {}
    n_tasks = 0
    last = ""
    for op in graph.get_operations():
        if op.type == "Placeholder":
            dsk[op.name] = x_value
            continue
        if op.type == "Const":
            consts[op.name] = op.attrs["value"]
            continue
        args = [consts.get(t.op.name, t.op.name) for t in op.inputs]
        dsk[op.name] = (_FUNCS[op.type], *args)
        n_tasks += 1
        last = op.name
    return dsk, last, n_tasks


def numpy_loop(x_value: np.ndarray, n_chains: int, length: int) -> np.ndarray:
    """The same computation as a plain in-process NumPy loop."""
    ends = []
    for addend, factor in chain_constants(n_chains):
        y = x_value
        for j in range(length):
            y = np.add(y, addend) if j % 2 == 0 else np.multiply(y, factor)
        ends.append(y)
    return _add_n(*ends)


#: untimed calls of each way but the per-op peer before its timed repeats: a program run in a
#: loop reaches its steady state (TensorFlow optimizes its graph on its first calls; daskgraph
#: generates a program as one function once its runs have cost what generating it does)
WARMUP_CALLS = 100
#: and at least this long (every way alike): the ways run back to back, each a continuous loop,
#: so daskgraph's kernels compile while its own loop runs; issue 34 wants them fast within 10 s
#: of a cold start (the first seconds themselves are the warm-up case's to show)
WARMUP_SECONDS = 10.0


# -- the peers' models (built in the peer processes) ----------------------------------------------
def tf_model(tf: Any, chains: int, length: int, x_value: np.ndarray) -> SessionModel:
    """TensorFlow's session of the graph, fed ``x_value``."""
    graph, x, total = build_tensorflow(tf, chains, length)
    session = tf_session(tf, graph, os.cpu_count() or 1)
    return SessionModel(tf.compat.v1, session, total, {x: x_value})


def numpy_peer(np_: Any, chains: int, length: int, x_value: np.ndarray) -> Any:
    """The NumPy loop, as a peer's model."""
    return numpy_model(lambda: numpy_loop(x_value, chains, length))


def _peer_ways(peers: Peers, chains: int, length: int, x_value, calls: int) -> list[Way]:
    params = {"chains": chains, "length": length, "x_value": x_value}
    tf_way = Way("tensorflow", "TensorFlow 1 Session.run (a process of its own)")
    tf_way.unavailable = peers.tf_missing
    if peers.tensorflow is not None:
        handle = peers.tensorflow.build("benchmarks.fine_grained:tf_model", **params)
        peer_way(tf_way, peers.tensorflow, handle, calls, WARMUP_CALLS, WARMUP_SECONDS)
    numpy_way = Way("numpy", "NumPy loop (a process of its own)")
    handle = peers.numpy.build("benchmarks.fine_grained:numpy_peer", **params)
    peer_way(numpy_way, peers.numpy, handle, calls, WARMUP_CALLS, WARMUP_SECONDS)
    return [tf_way, numpy_way]


def run(client, cpu_worker: str, peers: Peers, args) -> dict[str, Any]:
    import daskgraph as dg

    chains, length, calls = args.chains, args.length, args.fine_calls
    graph, x, total = build_daskgraph(chains, length)
    x_value = np.random.default_rng(0).standard_normal((SIZE, SIZE)).astype(np.float32)
    n_ops = dask_graph_per_op(graph, x_value)[2]
    # the per-op peer runs on fewer chains: a Dask task costs 10-30 ms here, 40 s a repeat
    # for the whole graph; the target compares times per op
    peer_chains = max(1, min(chains, args.per_op_chains))
    dsk, out_key, peer_ops = dask_graph_per_op(build_daskgraph(peer_chains, length)[0], x_value)
    warm_dsk, warm_key, _ = dask_graph_per_op(build_daskgraph(1, length)[0], x_value)

    def per_op(graph_dict: dict, key: str) -> np.ndarray:
        return client.get(graph_dict, key, workers=[cpu_worker], allow_other_workers=False)

    with dg.Session(graph=graph) as sess:  # on the default embedded cluster: client's
        ways = [
            Way(
                "daskgraph",
                "daskgraph Session.run",
                per_call(lambda: sess.run(total, {x: x_value}), calls),
                warmup=per_call(
                    lambda: sess.run(total, {x: x_value}), WARMUP_CALLS, WARMUP_SECONDS
                ),
            ),
            *_peer_ways(peers, chains, length, x_value, calls),
            Way(
                "dask_per_op",
                f"one Dask task per op (client.get; {peer_chains} chains, {peer_ops} tasks)",
                lambda: per_op(dsk, out_key),
                warmup=lambda: per_op(warm_dsk, warm_key),
                after=lambda repeat: settle(client, collect=False),
            ),
        ]
        run_back_to_back(ways, args.repeats, None)
        plans = list(getattr(sess, "_plans", {}).values())  # introspection, for the report only
        partitions = len(plans[0].plan.partitions) if plans else None

    expected = numpy_loop(x_value, chains, length)
    for way in ways[:3]:
        if way.result is not None:
            np.testing.assert_allclose(way.result, expected, rtol=1e-5, atol=1e-5)
    peer_expected = numpy_loop(x_value, peer_chains, length)
    np.testing.assert_allclose(ways[3].result, peer_expected, rtol=1e-5, atol=1e-5)
    by = {w.key: way_record(w, per=n_ops, per_label="op") for w in ways[:3]}
    by["dask_per_op"] = way_record(ways[3], per=peer_ops, per_label="op")
    dg_s = by["daskgraph"]["median_s"]
    return {
        "title": "fine-grained",
        "summary": f"{chains} chains x {length} elementwise ops on {SIZE}x{SIZE} float32 "
        f"from a placeholder, joined by add_n ({n_ops} op tasks); median per call of {calls} "
        f"calls a repeat after {WARMUP_CALLS} untimed ones and at least {WARMUP_SECONDS:g} s, "
        "each way back to back in its own process",
        "params": {
            "chains": chains,
            "length": length,
            "size": SIZE,
            "op_tasks": n_ops,
            "per_op_peer_tasks": peer_ops,
            "graph_ops": len(graph),
            "daskgraph_partitions": partitions,
            "tf_threads": os.cpu_count() or 1,
            "calls_per_repeat": calls,
            "warmup_calls": WARMUP_CALLS,
            "warmup_s": WARMUP_SECONDS,
        },
        "baseline": "daskgraph",
        "ways": list(by.values()),
        "targets": [
            target_record(
                "fine.vs_dask_per_op",
                "one Dask task per op / daskgraph",
                ratio(by["dask_per_op"]["per_item_s"], by["daskgraph"]["per_item_s"]),
                ">=",
                20.0,
            ),
            target_record(
                "fine.vs_tensorflow",
                "daskgraph / TensorFlow",
                ratio(dg_s, by["tensorflow"]["median_s"]),
                "<=",
                TF_GOAL,
                note=peers.tf_missing,
                goal_text="0.33x",
            ),
        ],
    }
