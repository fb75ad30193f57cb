"""Case *fusion-adam*: one update of a 10M-parameter float32 variable by Adam, and by
Momentum, RMSProp and Adagrad (issues 25 and 34).

The update (``<Optimizer>.apply_gradients`` of a gradient held in a second variable, the
train op run) reads the gradient, the variable and its slots and writes them; op by op Adam
makes about eleven passes over 40 MB arrays and allocates an array for each, in place one
(:mod:`daskgraph.kernels.slot_updates`). Ways:

* ``daskgraph`` -- as shipped (``daskgraph.fusion: true``): Adam's update as one loop writing
  the variable and its slots in place;
* ``daskgraph_unfused`` -- ``daskgraph.fusion: false``: NumPy's calls one by one;
* ``numpy`` -- the same update in NumPy op by op, in a process of its own (in place where
  NumPy's ufuncs allow, as an optimizer written by hand would);
* ``tensorflow`` -- TensorFlow 1's ``Session.run`` of the same graph, in a process of its own;
* ``daskgraph_<optimizer>``, ``tensorflow_<optimizer>`` -- the same two for Momentum, RMSProp
  (momentum 0.9) and Adagrad.

Targets: Adam's update at most :data:`GOAL` times TensorFlow's (issue 34); Momentum's,
RMSProp's and Adagrad's ratios to TensorFlow's are reported against the same bound. The
digits training step is the *training* case's one-device step (Adam on a small MLP).
"""

from __future__ import annotations

import contextlib
from typing import Any

import numpy as np

from benchmarks.common import (
    Way,
    per_call,
    ratio,
    run_back_to_back,
    target_record,
    way_record,
)
from benchmarks.peer import Peers, SessionModel, numpy_and_tf_ways, numpy_model, peer_way

PARAMETERS = 10_000_000
WARMUP_CALLS = 3
CALLS = 5
LEARNING_RATE = 1e-3
#: the update's time at most this many times TensorFlow's (issue 34)
GOAL = 1.2
#: optimizer -> (its class in ``v1.train``, constructor arguments); ``adam`` is the case's own
OPTIMIZERS = {
    "adam": ("AdamOptimizer", {"learning_rate": LEARNING_RATE}),
    "momentum": ("MomentumOptimizer", {"learning_rate": LEARNING_RATE, "momentum": 0.9}),
    "rms_prop": ("RMSPropOptimizer", {"learning_rate": LEARNING_RATE, "momentum": 0.9}),
    "adagrad": ("AdagradOptimizer", {"learning_rate": LEARNING_RATE}),
}
LABELS = {"momentum": "Momentum", "rms_prop": "RMSProp", "adagrad": "Adagrad"}


def _values() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    return (
        rng.standard_normal(PARAMETERS, dtype=np.float32),
        rng.standard_normal(PARAMETERS, dtype=np.float32) * np.float32(1e-2),
    )


def _graph(v1: Any, optimizer: str = "adam") -> tuple[Any, Any, Any]:
    """(graph, train op, initializer) in ``v1`` (``tf.compat.v1`` or daskgraph's)."""
    start, gradient = _values()
    cls, kwargs = OPTIMIZERS[optimizer]
    graph = v1.Graph()
    with graph.as_default():
        variable = v1.Variable(start, name="w")
        grad = v1.Variable(gradient, name="grad", trainable=False)
        train = getattr(v1.train, cls)(**kwargs).apply_gradients([(grad.value(), variable)])
        init = v1.global_variables_initializer()
    return graph, train, init


def tf_model(tf: Any, optimizer: str = "adam") -> SessionModel:
    """TensorFlow's session of the update."""
    v1 = tf.compat.v1
    graph, train, init = _graph(v1, optimizer)
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


def _daskgraph_way(
    key: str, label: str, fusion: bool, stack: contextlib.ExitStack, optimizer: str = "adam"
) -> Way:
    import dask

    import daskgraph.compat.v1 as v1
    from daskgraph.kernels import slot_updates

    graph, train, init = _graph(v1, optimizer)
    session = stack.enter_context(v1.Session(graph=graph))
    session.run(init)

    def step() -> None:
        with dask.config.set({"daskgraph.fusion": fusion}):
            session.run(train)

    def warmup() -> Any:
        timed = per_call(step, WARMUP_CALLS)()
        slot_updates.settle()  # the loop compiled on the first call (runs never wait for it)
        return timed

    return Way(key, label, per_call(step, CALLS), warmup=warmup)


def _tf_way(peers: Peers, optimizer: str) -> Way:
    """TensorFlow's session of ``optimizer``'s update, in the peer process."""
    way = Way(f"tensorflow_{optimizer}", f"TensorFlow 1, {LABELS[optimizer]} (its own process)")
    way.unavailable = peers.tf_missing
    if peers.tensorflow is not None:
        handle = peers.tensorflow.build("benchmarks.fusion_adam:tf_model", optimizer=optimizer)
        peer_way(way, peers.tensorflow, handle, CALLS, WARMUP_CALLS)
    return way


def _ways(peers: Peers, stack: contextlib.ExitStack) -> list[Way]:
    ways = [
        _daskgraph_way("daskgraph", "daskgraph Session.run (in place)", True, stack),
        _daskgraph_way("daskgraph_unfused", "daskgraph, daskgraph.fusion: false", False, stack),
        *numpy_and_tf_ways(peers, "benchmarks.fusion_adam", CALLS, WARMUP_CALLS),
    ]
    for name, label in LABELS.items():
        text = f"daskgraph, {label} (in place)"
        ways += [_daskgraph_way(f"daskgraph_{name}", text, True, stack, name), _tf_way(peers, name)]
    return ways


def _targets(by: dict[str, Any]) -> list[dict[str, Any]]:
    """Each optimizer's update time / TensorFlow's, at most :data:`GOAL`."""

    def median(key: str) -> float | None:
        record = by.get(key, {})
        return record.get("median_s") if record.get("status") == "ok" else None

    pairs = {"adam": ("daskgraph", "tensorflow")}
    pairs.update({name: (f"daskgraph_{name}", f"tensorflow_{name}") for name in LABELS})
    return [
        target_record(
            f"fusion_adam.{name}_vs_tf",
            f"{LABELS.get(name, 'Adam')} update of 10M float32 / TensorFlow's",
            ratio(median(ours), median(theirs)),
            "<=",
            GOAL,
        )
        for name, (ours, theirs) in pairs.items()
    ]


def run(client: Any, cpu_worker: str, peers: Peers, args: Any) -> dict[str, Any]:
    with contextlib.ExitStack() as stack:
        ways = _ways(peers, stack)
        run_back_to_back(ways, args.repeats, None)
    by = {w.key: way_record(w) for w in ways}
    return {
        "title": "fusion: Adam, Momentum, RMSProp, Adagrad",
        "summary": f"one update of a {PARAMETERS // 1_000_000}M-parameter float32 variable "
        f"(the train op run); median per call of {CALLS} calls a repeat after {WARMUP_CALLS} "
        "untimed ones",
        "params": {"parameters": PARAMETERS, "calls": CALLS},
        "baseline": "daskgraph",
        "ways": list(by.values()),
        "targets": _targets(by),
    }
