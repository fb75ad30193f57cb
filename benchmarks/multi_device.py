"""Case *multi-device*: repeated steps over several devices, daskgraph against TensorFlow's
logical devices (issue 24).

Rows (each one ``Session.run`` a step, repeated after a warm-up):

* ``A`` -- a 64x64 float32 matmul on each of 2 virtual GPUs (``a @ a``, ``b @ b``, ``a`` and
  ``b`` variables there), their ``add_n`` on ``/cpu:0``;
* ``chain`` -- ``x`` fed on ``/cpu:0`` -> ``tanh(x @ w0)`` on ``/gpu:0`` -> ``tanh(h @ w1) * 2``
  on ``/gpu:1`` -> ``reduce_sum(h * h)`` on ``/cpu:0`` (64x64 float32, three devices);
* ``towers_1`` (row B), ``towers_2``, ``towers_4`` (row C) -- sync training of the training
  case's MLP 64-128-10 (:mod:`benchmarks.training`: Adam, the same initial weights, the digits
  in batches of 256) with 1, 2 or 4 towers on as many virtual GPUs: the batch fed on
  ``/cpu:0`` and split there, one slice per tower, the parameters on ``/cpu:0``, each tower's
  gradients averaged there and applied there (TensorFlow 1's multi-GPU CIFAR-10 pattern).

Every graph is written once against the ``tf.compat.v1`` API and built by TensorFlow
(``tf.compat.v1``) and by daskgraph (``daskgraph.compat.v1``), so both run the same ops.
daskgraph runs on the embedded cluster a plain session gets with ``daskgraph.virtual-gpus`` =
4 (the CPU worker in the benchmark's process, each virtual GPU a worker process of one
thread); TensorFlow has no GPU here: it runs in a process of its own (:mod:`benchmarks.peer`)
with 5 logical CPU devices (``device_count={"CPU": 5}``, intra- and inter-op threads = CPU
count), its ``/cpu:{i + 1}`` standing for daskgraph's ``/gpu:{i}``. Ways, per row:

* ``compiled`` -- daskgraph as shipped (``daskgraph.compiled-steps: true``);
* ``scheduler`` -- daskgraph with ``daskgraph.compiled-steps: false`` (every step a Dask graph
  through the scheduler), its own session;
* ``tensorflow`` -- TensorFlow 1's ``Session.run``.

Every way gets ``--multi-warmup`` untimed steps, then each repeat times ``--multi-calls``
back-to-back steps (the median per step is kept), each way's warm-up and repeats back to back
(:func:`~benchmarks.common.run_back_to_back`). Checked: row A and the chain against NumPy
(rtol 1e-4); for the training rows, the losses of the first steps from the same weights agree
between the three ways (rtol 1e-4, as the training case). After the repeats, a traced step per
way and row (the median of :data:`TRACES`, by wall time) says where its time goes, hop by hop
(:mod:`benchmarks.hops`).

Targets: row A's compiled step <= 1 ms; row C's compiled step / TensorFlow's <= 3x.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from benchmarks import hops
from benchmarks.common import (
    Way,
    default_cluster,
    fmt_time,
    per_call,
    ratio,
    run_back_to_back,
    target_record,
    tf_session,
    way_record,
)
from benchmarks.peer import Peers, SessionModel, peer_way
from benchmarks.training import (
    CHECK_STEPS,
    FEATURES,
    LEARNING_RATE,
    RTOL,
    digits_batches,
    initial_weights,
    losses_agree,
    mlp_loss,
)

VIRTUAL_GPUS = 4
SIZE = 64
ROWS = {
    "A": "row A: matmul on 2 GPUs, add_n on /cpu:0",
    "chain": "chain x -> /gpu:0 -> /gpu:1 -> /cpu:0",
    "towers_1": "row B: training, 1 tower on /gpu:0",
    "towers_2": "training, 2 towers",
    "towers_4": "row C: training, 4 towers",
}
WAYS = {  # short: the columns of the case's table
    "compiled": "daskgraph compiled",
    "scheduler": "daskgraph scheduler",
    "tensorflow": "TensorFlow",
}
ROW_A_GOAL_MS = 1.0
ROW_C_GOAL = 3.0
TRACES = 3  # traced steps per way and row after the repeats; the median one is shown
VARIABLE_OPS = frozenset({"VariableV2", "Variable", "VarHandleOp"})


# -- the graphs, once for both frameworks ---------------------------------------------------------
def inputs(batch: int) -> dict[str, Any]:
    """Every row's data: matrices, weights, batches (NumPy; sent to TensorFlow's peer)."""
    rng = np.random.default_rng(7)

    def matrix() -> np.ndarray:
        return (rng.standard_normal((SIZE, SIZE)) / np.sqrt(SIZE)).astype(np.float32)

    return {
        "a": matrix(),
        "b": matrix(),
        "x": matrix(),
        "w0": matrix(),
        "w1": matrix(),
        "weights": initial_weights(),
        "batches": digits_batches(batch),
    }


class Built:
    """A row's graph: what a step fetches and is fed (a list cycled through), its check."""

    def __init__(self, graph: Any, fetch: Any, init: Any, feeds: Any = None, check: Any = None):
        self.graph, self.fetch, self.init, self.feeds, self.check = graph, fetch, init, feeds, check


def build(v1: Any, row: str, gpus: list[str], data: dict[str, Any]) -> Built:
    """Row ``row`` in ``v1`` (``tf.compat.v1`` or ``daskgraph.compat.v1``), ``gpus`` naming
    the devices that stand for ``/gpu:0``, ``/gpu:1``, ..."""
    if row == "A":
        return _two_matmuls(v1, gpus, data)
    if row == "chain":
        return _chain(v1, gpus, data)
    towers = int(row.split("_")[1])
    return _towers(v1, gpus[:towers], data)


def _two_matmuls(v1: Any, gpus: list[str], data: dict[str, Any]) -> Built:
    graph = v1.Graph()
    with graph.as_default():
        products = []
        for name, device in (("a", gpus[0]), ("b", gpus[1])):
            with v1.device(device):
                m = v1.Variable(data[name], name=name)
                products.append(v1.matmul(m, m))
        with v1.device("/cpu:0"):
            total = v1.add_n(products, name="total")
        init = v1.global_variables_initializer()
    return Built(graph, total, init)


def _chain(v1: Any, gpus: list[str], data: dict[str, Any]) -> Built:
    graph = v1.Graph()
    with graph.as_default():
        with v1.device("/cpu:0"):
            x = v1.placeholder(v1.float32, (SIZE, SIZE), name="x")
        with v1.device(gpus[0]):
            h = v1.tanh(v1.matmul(x, v1.Variable(data["w0"], name="w0")))
        with v1.device(gpus[1]):
            h = v1.multiply(v1.tanh(v1.matmul(h, v1.Variable(data["w1"], name="w1"))), 2.0)
        with v1.device("/cpu:0"):
            total = v1.reduce_sum(v1.multiply(h, h), name="total")
        init = v1.global_variables_initializer()
    return Built(graph, total, init, {x: data["x"]})


def chain_numpy(data: dict[str, Any]) -> float:
    h = np.tanh(data["x"] @ data["w0"])
    h = np.tanh(h @ data["w1"]) * 2.0
    return float(np.sum(h * h))


def _towers(v1: Any, devices: list[str], data: dict[str, Any]) -> Built:
    """Sync data-parallel training, one tower per device, parameters on ``/cpu:0``."""
    n, batch = len(devices), len(data["batches"][0][1])
    graph = v1.Graph()
    with graph.as_default():
        with v1.device("/cpu:0"):
            x = v1.placeholder(v1.float32, [batch, FEATURES], name="x")
            y = v1.placeholder(v1.int32, [batch], name="y")
            step = v1.train.get_or_create_global_step()
            optimizer = v1.train.AdamOptimizer(LEARNING_RATE)
            xs, ys = (v1.split(x, n, axis=0), v1.split(y, n, axis=0)) if n > 1 else ([x], [y])
        losses, tower_grads = [], []
        with v1.variable_scope(v1.get_variable_scope()):
            for i, device in enumerate(devices):
                with v1.device(_parameters_on_cpu(device)), v1.name_scope(f"tower_{i}"):
                    loss = mlp_loss(
                        v1, v1.get_variable, v1.constant_initializer, data["weights"], xs[i], ys[i]
                    )
                    v1.get_variable_scope().reuse_variables()
                    losses.append(loss)
                    tower_grads.append(optimizer.compute_gradients(loss))
        with v1.device("/cpu:0"):
            train_op = optimizer.apply_gradients(_average(v1, tower_grads), global_step=step)
            loss = v1.multiply(v1.add_n(losses), 1.0 / n) if n > 1 else losses[0]
        init = v1.global_variables_initializer()
    feeds = [{x: bx, y: by} for bx, by in data["batches"]]
    return Built(graph, train_op, init, feeds, loss)


def _parameters_on_cpu(device: str) -> Callable[[Any], str]:
    """A device function: variables on ``/cpu:0``, every other op on ``device``."""
    return lambda op: "/cpu:0" if op.type in VARIABLE_OPS else device


def _average(v1: Any, tower_grads: list[list[tuple]]) -> list[tuple]:
    """Each variable's gradient averaged over the towers (on the current device)."""
    averaged = []
    for pairs in zip(*tower_grads, strict=True):
        grads = [g for g, _ in pairs]
        mean = grads[0] if len(grads) == 1 else v1.multiply(v1.add_n(grads), 1.0 / len(grads))
        averaged.append((mean, pairs[0][1]))
    return averaged


# -- the models -----------------------------------------------------------------------------------
def tf_model(tf: Any, row: str, data: dict[str, Any]) -> SessionModel:
    """TensorFlow's session of ``row`` (built in its peer): logical CPUs for the GPUs."""
    v1 = tf.compat.v1
    built = build(v1, row, [f"/cpu:{i + 1}" for i in range(VIRTUAL_GPUS)], data)
    session = tf_session(tf, built.graph, os.cpu_count() or 1, cpus=1 + VIRTUAL_GPUS)
    session.run(built.init)
    return SessionModel(v1, session, built.fetch, built.feeds, built.check)


@contextlib.contextmanager
def compiled_steps(on: bool) -> Iterator[None]:
    import dask

    with dask.config.set({"daskgraph.compiled-steps": on}):
        yield


def daskgraph_model(row: str, data: dict[str, Any], compiled: bool) -> SessionModel:
    """daskgraph's session of ``row`` on the default embedded cluster, initialized."""
    import daskgraph.compat.v1 as v1

    built = build(v1, row, [f"/gpu:{i}" for i in range(VIRTUAL_GPUS)], data)
    with compiled_steps(compiled):
        session = v1.Session(graph=built.graph)
        session.run(built.init)
    return SessionModel(v1, session, built.fetch, built.feeds, built.check)


def _switched(fn: Callable[[], Any], compiled: bool) -> Callable[[], Any]:
    def run() -> Any:
        with compiled_steps(compiled):
            return fn()

    return run


# -- the case -------------------------------------------------------------------------------------
def run(args: Any, peers: Peers) -> dict[str, Any]:
    import dask

    import daskgraph  # noqa: F401  (its config keys first: leaving a set() would drop them)

    batch = args.training_batch
    data = inputs(batch)
    calls, warmup = args.multi_calls, args.multi_warmup
    with contextlib.ExitStack() as stack:
        stack.enter_context(dask.config.set({"daskgraph.virtual-gpus": VIRTUAL_GPUS}))
        stack.enter_context(default_cluster())
        rows = {}
        for row in ROWS:
            models, handle = _models(row, data, peers)
            for model in models.values():
                stack.callback(model.session.close)
            rows[row] = (models, handle, _row_ways(row, models, handle, peers, calls, warmup))
        losses = {row: _check(row, *rows[row][:2], peers) for row in ROWS if row.startswith("tow")}
        run_back_to_back([w for *_, ways in rows.values() for w in ways], args.repeats, None)
        traces = {row: _traces(models, handle, peers) for row, (models, handle, _) in rows.items()}
    for row, (_, _, ways) in rows.items():
        _check_result(row, ways, data)
    return _record({row: ways for row, (_, _, ways) in rows.items()}, traces, losses, args, peers)


def _models(row: str, data: dict, peers: Peers) -> tuple[dict[str, SessionModel], int | None]:
    """daskgraph's two sessions of ``row`` (compiled, scheduler) and TensorFlow's handle."""
    models = {
        "compiled": daskgraph_model(row, data, compiled=True),
        "scheduler": daskgraph_model(row, data, compiled=False),
    }
    handle = None
    if peers.tensorflow is not None:
        handle = peers.tensorflow.build("benchmarks.multi_device:tf_model", row=row, data=data)
    return models, handle


def _row_ways(
    row: str, models: dict, handle: int | None, peers: Peers, calls: int, warmup: int
) -> list[Way]:
    ways = []
    for key, compiled in (("compiled", True), ("scheduler", False)):
        step = models[key].step
        ways.append(
            Way(
                f"{row}.{key}",
                f"{ROWS[row]}: {WAYS[key]}",
                _switched(per_call(step, calls), compiled),
                warmup=_switched(per_call(step, warmup), compiled),
            )
        )
    tf_way = Way(f"{row}.tensorflow", f"{ROWS[row]}: {WAYS['tensorflow']}")
    tf_way.unavailable = peers.tf_missing
    peer_way(tf_way, peers.tensorflow, handle, calls, warmup)
    return [*ways, tf_way]


def _check(row: str, models: dict, handle: int | None, peers: Peers) -> dict[str, list]:
    """The losses of the first ``CHECK_STEPS`` steps of every way (before any timed step);
    AssertionError unless they agree to ``RTOL``."""
    losses = {}
    if handle is not None:
        losses["tensorflow"] = peers.tensorflow.call(handle, "check_values", CHECK_STEPS)
    for key, compiled in (("compiled", True), ("scheduler", False)):
        with compiled_steps(compiled):
            losses[key] = models[key].check_values(CHECK_STEPS)
    return losses_agree(losses, f"multi-device {row}")


def _check_result(row: str, ways: list[Way], data: dict[str, Any]) -> None:
    if row == "A":
        expected = data["a"] @ data["a"] + data["b"] @ data["b"]
    elif row == "chain":
        expected = chain_numpy(data)
    else:
        return  # the training rows' losses were checked before the repeats
    for way in ways:
        if way.result is not None:
            np.testing.assert_allclose(way.result, expected, rtol=RTOL, atol=1e-5)


def _traces(models: dict, handle: int | None, peers: Peers) -> dict[str, Any]:
    """Per way, the summary (:func:`benchmarks.hops.summarize`) of the median of ``TRACES``
    traced steps (by wall time): one step, not blown up by one preemption of a busy machine."""
    out: dict[str, Any] = {}
    for key, compiled in (("compiled", True), ("scheduler", False)):
        with compiled_steps(compiled):
            out[key] = _median_trace([hops.summarize(models[key].trace()) for _ in range(TRACES)])
    if handle is not None:
        traces = [peers.tensorflow.call(handle, "trace") for _ in range(TRACES)]
        out["tensorflow"] = _median_trace([hops.summarize(t, gpu_offset=1) for t in traces])
    return out


def _median_trace(summaries: list[dict[str, Any]]) -> dict[str, Any]:
    return sorted(summaries, key=lambda s: s["wall_us"])[len(summaries) // 2]


# -- the record -----------------------------------------------------------------------------------
def _record(
    ways: dict[str, list[Way]], traces: dict, losses: dict, args: Any, peers: Peers
) -> dict[str, Any]:
    rows = [_row_record(row, row_ways, traces[row]) for row, row_ways in ways.items()]
    return {
        "title": "multi-device",
        "summary": f"repeated steps over several devices ({VIRTUAL_GPUS} virtual GPUs; "
        f"TensorFlow's logical CPUs /cpu:1.. standing for them), median per step of "
        f"{args.multi_calls} steps a repeat after {args.multi_warmup} untimed ones",
        "params": {
            "virtual_gpus": VIRTUAL_GPUS,
            "size": SIZE,
            "batch": args.training_batch,
            "steps_per_repeat": args.multi_calls,
            "warmup_steps": args.multi_warmup,
            "tf_threads": os.cpu_count() or 1,
            "results_checked": f"row A and the chain against NumPy; training: losses of "
            f"{CHECK_STEPS} steps from the same weights, rtol {RTOL:g}",
            "check_losses_last": {
                row: {k: round(v[-1], 6) for k, v in by_way.items()}
                for row, by_way in losses.items()
            },
        },
        "ways_order": list(WAYS),
        "way_labels": WAYS,
        "steps": rows,
        "ways": [
            dict(r, label=f"{row['label']}: {WAYS[k]}")
            for row in rows
            for k, r in row["ways"].items()
        ],
        "targets": _targets({r["key"]: r for r in rows}, peers),
    }


def _row_record(row: str, ways: list[Way], trace: dict[str, Any]) -> dict[str, Any]:
    records = {w.key.split(".")[1]: way_record(w) for w in ways}
    tf_s = records["tensorflow"]["median_s"]
    return {
        "key": row,
        "label": ROWS[row],
        "ways": records,
        "vs_tensorflow": {k: ratio(records[k]["median_s"], tf_s) for k in records},
        "trace": trace,
    }


def _targets(by: dict[str, dict[str, Any]], peers: Peers) -> list[dict[str, Any]]:
    row_a = by["A"]["ways"]["compiled"]["median_s"]
    towers = [r for key, r in by.items() if key.startswith("towers")]

    def per_tower_count(way: str) -> str:
        return " / ".join(fmt_time(r["ways"][way]["median_s"]) for r in towers)

    counts = " / ".join(r["key"].split("_")[1] for r in towers)
    tower_steps = (
        f"the step with {counts} towers: compiled {per_tower_count('compiled')}, scheduler "
        f"{per_tower_count('scheduler')}, TensorFlow {per_tower_count('tensorflow')}"
    )
    return [
        target_record(
            "multi.row_a",
            "row A: repeated two-device step (compiled)",
            row_a * 1e3 if row_a is not None else None,
            "<=",
            ROW_A_GOAL_MS,
            unit=" ms",
        ),
        target_record(
            "multi.row_c_vs_tensorflow",
            "row C: 4-tower training step / TensorFlow's",
            by["towers_4"]["vs_tensorflow"]["compiled"],
            "<=",
            ROW_C_GOAL,
            note=peers.tf_missing or tower_steps,
        ),
    ]
