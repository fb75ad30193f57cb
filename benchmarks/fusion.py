"""Case *fusion*: a 30-op elementwise chain over a 64 MiB float32 array, against the
machine's memory bandwidth (issue 25).

The chain (``y * 1.0001`` and ``y + 0.5`` in turn, from a variable of 16 Mi float32 values,
the result fetched) reads 64 MiB and writes 64 MiB when it runs as one loop; op by op it
reads and writes the whole array 30 times. Ways:

* ``daskgraph`` -- as shipped (``daskgraph.fusion: true``): the chain is one fused kernel;
* ``daskgraph_unfused`` -- ``daskgraph.fusion: false``, its own session;
* ``numpy`` -- the same ops one NumPy call each, in a process of its own;
* ``tensorflow`` -- TensorFlow 1's ``Session.run`` of the same graph (a variable, the chain,
  the result fetched), in a process of its own (graph optimizations at their defaults: no
  XLA);
* ``triad`` -- the memory bandwidth of this machine measured in the same run: NumPy's STREAM
  triad ``a = b + s * c`` on three 64 MiB arrays (``multiply`` into ``a``, then ``add`` into
  it), counted as STREAM counts it (three arrays of bytes moved).

Every way is warmed up by :data:`WARMUP_CALLS` calls; each repeat times ``CALLS`` calls (the
median per call is kept); results are checked against NumPy's, bit for bit for the fused and
unfused daskgraph ways. Target: the fused chain's bandwidth (128 MiB a call) is at least 60%
of the triad's.
"""

from __future__ import annotations

import contextlib
from typing import Any

import numpy as np

from benchmarks.common import Way, per_call, ratio, run_back_to_back, target_record, way_record
from benchmarks.peer import Peers, SessionModel, numpy_and_tf_ways, numpy_model

ELEMENTS = 16 * 1024 * 1024  # 64 MiB of float32
LENGTH = 30
WARMUP_CALLS = 5
CALLS = 5
GOAL = 0.6


def chain(y: Any, length: int = LENGTH) -> Any:
    """The chain on ``y`` (a tensor or an array): ``* 1.0001`` and ``+ 0.5`` in turn."""
    for i in range(length):
        y = y * np.float32(1.0001) if i % 2 else y + np.float32(0.5)
    return y


def _value() -> np.ndarray:
    return np.random.default_rng(0).random(ELEMENTS, dtype=np.float32)


def tf_model(tf: Any) -> SessionModel:
    """TensorFlow's session: a variable, the chain, the result fetched."""
    v1 = tf.compat.v1
    graph = tf.Graph()
    with graph.as_default():
        variable = v1.Variable(_value())
        out = chain(variable.read_value())
        init = v1.global_variables_initializer()
    session = v1.Session(graph=graph)
    session.run(init)
    return SessionModel(v1, session, out)


def numpy_peer(np_: Any) -> Any:
    """The chain op by op in NumPy, as a peer's model."""
    value = _value()
    return numpy_model(lambda: chain(value))


def triad_way() -> Way:
    """NumPy's STREAM triad on three arrays of :data:`ELEMENTS` float32 values."""
    b, c = _value(), _value()[::-1].copy()
    a = np.empty_like(b)
    s = np.float32(3.0)

    def triad() -> None:
        np.multiply(c, s, out=a)
        np.add(a, b, out=a)

    return Way("triad", "NumPy STREAM triad a = b + s * c (3 x 64 MiB)", per_call(triad, CALLS),
               warmup=per_call(triad, WARMUP_CALLS))  # fmt: skip


def _daskgraph_way(key: str, label: str, fusion: bool, stack: contextlib.ExitStack) -> Way:
    import dask

    import daskgraph as dg

    graph = dg.Graph()
    with graph.as_default():
        variable = dg.Variable(_value())
        out = chain(variable.value())
    session = stack.enter_context(dg.Session(graph=graph))
    session.run(variable.initializer)
    with dask.config.set({"daskgraph.fusion": fusion}):
        session.run(out)  # (the plan is lowered now, with fusion as asked)
    return Way(key, label, per_call(lambda: session.run(out), CALLS),
               warmup=per_call(lambda: session.run(out), WARMUP_CALLS))  # fmt: skip


def run(client: Any, cpu_worker: str, peers: Peers, args: Any) -> dict[str, Any]:
    expected = chain(_value())
    with contextlib.ExitStack() as stack:
        ways = [
            _daskgraph_way("daskgraph", "daskgraph Session.run (fused)", True, stack),
            _daskgraph_way("daskgraph_unfused", "daskgraph, daskgraph.fusion: false", False, stack),
            *numpy_and_tf_ways(peers, "benchmarks.fusion", CALLS, WARMUP_CALLS),
            triad_way(),
        ]
        run_back_to_back(ways, args.repeats, None)
    for way in ways[:2]:
        assert way.result.tobytes() == expected.tobytes(), way.key  # bit for bit
    for way in ways[2:4]:
        if way.result is not None:
            np.testing.assert_allclose(way.result, expected, rtol=1e-5)
    by = {w.key: way_record(w) for w in ways}
    triad_bandwidth = 3 * ELEMENTS * 4 / by["triad"]["median_s"]
    chain_bandwidth = 2 * ELEMENTS * 4 / by["daskgraph"]["median_s"]
    return {
        "title": "fusion",
        "summary": f"a {LENGTH}-op elementwise chain over {ELEMENTS * 4 >> 20} MiB of float32 "
        f"(a variable, the result fetched); median per call of {CALLS} calls a repeat after "
        f"{WARMUP_CALLS} untimed ones",
        "params": {"elements": ELEMENTS, "length": LENGTH, "calls": CALLS},
        "baseline": "daskgraph",
        "ways": list(by.values()),
        "bandwidth": {"triad_GBps": triad_bandwidth / 1e9, "chain_GBps": chain_bandwidth / 1e9},
        "targets": [
            target_record(
                "fusion.chain_vs_triad",
                "64 MiB chain's bandwidth / STREAM triad's",
                ratio(chain_bandwidth, triad_bandwidth),
                ">=",
                GOAL,
            )
        ],
    }
