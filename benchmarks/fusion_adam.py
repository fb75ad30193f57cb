"""Case *fusion-adam*: one Adam update of a 10M-parameter float32 variable (issue 25).

The update (``AdamOptimizer.apply_gradients`` of a gradient held in a second variable, the
train op run) reads the gradient, the variable and its two slots and writes the three; op by
op it makes about eleven passes over 40 MB arrays, as fused loops three. Ways:

* ``daskgraph`` -- as shipped (``daskgraph.fusion: true``): Adam's update as three fused loops;
* ``daskgraph_unfused`` -- ``daskgraph.fusion: false``: NumPy's calls one by one;
* ``numpy`` -- the same update in NumPy op by op, in a process of its own (in place where
  NumPy's ufuncs allow, as an optimizer written by hand would);
* ``tensorflow`` -- TensorFlow 1's ``Session.run`` of the same graph, in a process of its own.

No target: the issue asks for the row. The digits training step, the other row the issue
names, is the *training* case's one-device step (Adam on a small MLP, fused by default).
"""

from __future__ import annotations

import contextlib
from typing import Any

import numpy as np

from benchmarks.common import Way, per_call, run_back_to_back, way_record
from benchmarks.peer import Peers, SessionModel, numpy_and_tf_ways, numpy_model

PARAMETERS = 10_000_000
WARMUP_CALLS = 3
CALLS = 5
LEARNING_RATE = 1e-3


def _values() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    return (
        rng.standard_normal(PARAMETERS, dtype=np.float32),
        rng.standard_normal(PARAMETERS, dtype=np.float32) * np.float32(1e-2),
    )


def _graph(v1: Any) -> tuple[Any, Any, Any]:
    """(graph, train op, initializer) in ``v1`` (``tf.compat.v1`` or daskgraph's)."""
    start, gradient = _values()
    graph = v1.Graph()
    with graph.as_default():
        variable = v1.Variable(start, name="w")
        grad = v1.Variable(gradient, name="grad", trainable=False)
        train = v1.train.AdamOptimizer(LEARNING_RATE).apply_gradients([(grad.value(), variable)])
        init = v1.global_variables_initializer()
    return graph, train, init


def tf_model(tf: Any) -> SessionModel:
    """TensorFlow's session of the update."""
    v1 = tf.compat.v1
    graph, train, init = _graph(v1)
    session = v1.Session(graph=graph)
    session.run(init)
    return SessionModel(v1, session, train)


def numpy_peer(np_: Any) -> Any:
    """Adam's update in NumPy, op by op."""
    var, grad = _values()
    m, v = np.zeros_like(var), np.zeros_like(var)
    state = {"t": 0}
    beta1, beta2, eps = np.float32(0.9), np.float32(0.999), np.float32(1e-8)

    def step() -> None:
        state["t"] += 1
        t = state["t"]
        lr_t = np.float32(LEARNING_RATE * np.sqrt(1 - 0.999**t) / (1 - 0.9**t))
        m[...] += (grad - m) * (1 - beta1)
        v[...] += (grad * grad - v) * (1 - beta2)
        var[...] -= m * lr_t / (np.sqrt(v) + eps)

    return numpy_model(step)


def _daskgraph_way(key: str, label: str, fusion: bool, stack: contextlib.ExitStack) -> Way:
    import dask

    import daskgraph.compat.v1 as v1

    graph, train, init = _graph(v1)
    session = stack.enter_context(v1.Session(graph=graph))
    session.run(init)

    def step() -> None:
        with dask.config.set({"daskgraph.fusion": fusion}):
            session.run(train)

    return Way(key, label, per_call(step, CALLS), warmup=per_call(step, WARMUP_CALLS))


def run(client: Any, cpu_worker: str, peers: Peers, args: Any) -> dict[str, Any]:
    with contextlib.ExitStack() as stack:
        ways = [
            _daskgraph_way("daskgraph", "daskgraph Session.run (fused loops)", True, stack),
            _daskgraph_way("daskgraph_unfused", "daskgraph, daskgraph.fusion: false", False, stack),
            *numpy_and_tf_ways(peers, "benchmarks.fusion_adam", CALLS, WARMUP_CALLS),
        ]
        run_back_to_back(ways, args.repeats, None)
    by = {w.key: way_record(w) for w in ways}
    return {
        "title": "fusion: Adam",
        "summary": f"one Adam update of a {PARAMETERS // 1_000_000}M-parameter float32 variable "
        f"(the train op run); median per call of {CALLS} calls a repeat after {WARMUP_CALLS} "
        "untimed ones",
        "params": {"parameters": PARAMETERS, "calls": CALLS},
        "baseline": "daskgraph",
        "ways": list(by.values()),
        "targets": [],
    }
