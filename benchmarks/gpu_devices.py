"""The GPU check's rows over several logical GPUs of one GPU: tensors between GPU workers, and
a 4-tower training step against the same model in plain CuPy.

:func:`two_logical_gpus`
    A^n + B^n with A^n on ``/gpu:0`` and B^n on ``/gpu:1``, two logical GPUs of GPU 0 (each
    its own worker process), the sum on ``/gpu:0``: every run sends B^n from GPU:1's worker to
    GPU:0's. The workers count the bytes their compiled steps pack
    (:func:`daskgraph.runtime.worker.wire.packed_bytes`): host arrays, and CuPy arrays, which
    cross host memory over TCP/TLS (Dask's CUDA serializer copies them to the host there) and
    go device to device over UCX. The bytes through the host between the two workers must be
    zero; without UCX the verdict is "needs UCX", with the bytes measured.
:func:`tower_step`
    Row C of ``make bench``'s multi-device case (:mod:`benchmarks.multi_device`: the training
    case's MLP 64-128-10, Adam, batch 256 split into 4 towers, parameters on ``/cpu:0``) on 4
    logical GPUs, against the same model and batches in plain CuPy on the GPU (hand-written
    gradients and Adam update, :func:`plain_step`): the first steps' losses must agree, and
    the medians of a continuous loop of steps, each way's, give the ratio.

Without a GPU both run on virtual GPUs (worker processes over NumPy; the plain model over
NumPy) and say what they could not measure.
"""

from __future__ import annotations

import importlib.util
import statistics
import time
from collections.abc import Callable
from typing import Any

import dask
import numpy as np

import daskgraph.compat.v1 as tf
from benchmarks.gpu_report import NO_GPU, SKIPPED
from benchmarks.gpu_sessions import GPU0, GPU1, Findings, Target, matpow, matpow_rtol, session
from daskgraph.cluster.protocols import ucx_installed
from daskgraph.cluster.transports import address_scheme
from daskgraph.runtime.worker.wire import packed_bytes

#: A^n + B^n over two logical GPUs: the side on a GPU (on virtual GPUs), n, runs timed
SIDE, SIDE_VIRTUAL, POWER, RUNS = 4096, 256, 10, 3
#: MiB of each logical GPU there (A, B^n arriving, the sum, the power's buffers: 64 MiB each)
TWO_GPU_MIB = 4096
#: the tower step: logical GPUs, steps compared, warm-up steps, steps a loop, loops
TOWERS, CHECKED, WARMUP, LOOP, LOOPS = 4, 5, 10, 30, 3
TOWER_MIB = 1024
LOSS_RTOL = 1e-3
#: Adam's constants, as TensorFlow 1's AdamOptimizer has them
BETA1, BETA2, EPSILON = 0.9, 0.999, 1e-8


# -- A^n + B^n on two logical GPUs ---------------------------------------------------------------
def cluster_config(target: Target, gpus: int) -> dict[str, Any]:
    """The embedded cluster of the two-GPU row: worker processes (virtual GPUs too, so that
    tensors leave a process), on UCX where it is installed: NVLink / CUDA IPC on, and no TLS
    (UCX cannot carry it: ``daskgraph.local.protocol: ucx`` needs ``security: none``)."""
    config = {**target.cluster(gpus), "daskgraph.local.processes": True}
    if ucx_installed():
        config["daskgraph.local.protocol"] = "ucx"
        config["daskgraph.local.security"] = "none"
        config["daskgraph.local.ucx.nvlink"] = True
    return config


def crossing(counts: dict[str, int], transport: str) -> int:
    """Bytes a worker's packed tensors took through host memory: its host arrays, and its
    CuPy arrays unless ``transport`` is UCX.

    >>> crossing({"host": 10, "cuda": 400}, "tls"), crossing({"host": 10, "cuda": 400}, "ucx")
    (410, 10)
    """
    return counts["host"] + (0 if transport == "ucx" else counts["cuda"])


def two_logical_gpus(target: Target) -> Findings:
    """A^n on /gpu:0, B^n on /gpu:1 (two logical GPUs of one GPU), their sum on /gpu:0: the
    bytes of B^n between the two workers must not cross host memory (see the module)."""
    f, graph = Findings(), tf.Graph()
    side = SIDE if target.real else SIDE_VIRTUAL
    rng = np.random.default_rng(2)
    # positive entries, rows summing to about 1: powers of order 1 / side, no cancellation
    a_value, b_value = (rng.random((side, side), np.float32) * np.float32(2 / side) for _ in "ab")
    with graph.as_default():
        powers, feeds = [], []
        for i, name in enumerate("ab"):
            with tf.device(f"/gpu:{i}"):
                m = tf.placeholder(tf.float32, [side, side], name=name)
                powers.append(matpow(m, POWER, f"{name}_pow"))
                feeds.append(m)
        with tf.device("/gpu:0"):
            total = tf.add(powers[0], powers[1], name="total")
    fed = dict(zip(feeds, (a_value, b_value), strict=True))
    config = tf.ConfigProto(allow_soft_placement=True)
    for key, value in target.gpu_options(2, virtual_devices=[TWO_GPU_MIB] * 2).items():
        setattr(config.gpu_options, key, value)
    with dask.config.set(cluster_config(target, 2)):
        sess = tf.Session(graph=graph, config=config)
    try:
        workers = {d.name: d.worker for d in sess.list_devices()}
        value, seconds, counts = _counted_runs(sess, total, fed, sorted(set(workers.values())))
    finally:
        sess.close()
    want = _powers_sum(a_value, b_value)
    f.matches(value, want, f"A^{POWER} + B^{POWER}", rtol=matpow_rtol())
    sender = workers.get(GPU1, "")
    f.expect(sender and sender != workers.get(GPU0), "GPU:0 and GPU:1 share a worker")
    bytes_verdict(f, target, sender, counts.get(sender), side * side * 4 * RUNS)
    f.lines.append(
        f"{side} x {side} float32, n = {POWER}: median run {statistics.median(seconds):.3f} s "
        f"of {RUNS} after 3 warm-up runs"
    )
    return f


def _powers_sum(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """NumPy's A^n + B^n in float64."""
    return np.linalg.matrix_power(a.astype(np.float64), POWER) + np.linalg.matrix_power(
        b.astype(np.float64), POWER
    )


def _counted_runs(
    sess: Any, fetch: Any, feeds: dict, workers: list[str]
) -> tuple[Any, list[float], dict[str, dict[str, int]]]:
    """(the last value, each timed run's seconds, each worker's packed bytes over the timed
    runs): 3 warm-up runs (the first through the scheduler), then :data:`RUNS` counted."""
    for _ in range(3):
        sess.run(fetch, feeds)
    sess.client.run(packed_bytes, True, workers=workers)
    seconds = []
    for _ in range(RUNS):
        start = time.perf_counter()
        value = sess.run(fetch, feeds)
        seconds.append(time.perf_counter() - start)
    return value, seconds, sess.client.run(packed_bytes, workers=workers)


def bytes_verdict(
    f: Findings, target: Target, sender: str, counts: dict[str, int] | None, sent: int
) -> None:
    """The row's verdict on GPU:1's worker's packed bytes (``sent``: B^n's, every run)."""
    if not f.expect(counts is not None, f"no byte counts from GPU:1's worker {sender}"):
        return
    transport = address_scheme(sender)
    through_host = crossing(counts, transport)
    packed = counts["host"] + counts["cuda"]
    f.data.update(transport=transport, packed=counts, through_host=through_host, sent=sent)
    f.lines.append(
        f"GPU:1's worker -> GPU:0's over {transport}: packed {counts['cuda'] / 1e6:.1f} MB of "
        f"CuPy arrays, {counts['host'] / 1e6:.1f} MB of host arrays; through host memory "
        f"{through_host / 1e6:.1f} MB (B^n: {sent / 1e6:.1f} MB over {RUNS} runs)"
    )
    f.expect(packed >= sent, f"GPU:1's worker packed {packed} bytes, not B^n's {sent}")
    if not target.real:
        f.skipped.append(
            f"{NO_GPU}: virtual GPUs hold NumPy arrays, which cross host memory by nature; "
            "the device-to-device path (zero bytes through the host) needs a GPU and UCX"
        )
        return
    f.expect(counts["cuda"] >= sent, f"B^n left GPU:1's worker as host arrays ({counts})")
    if transport != "ucx":
        why = "distributed-ucxx is not installed" if not ucx_installed() else "not enabled"
        f.skipped.append(
            f"needs UCX: the workers talk {transport} ({why}), so CuPy arrays cross host "
            f"memory: {through_host / 1e6:.1f} MB measured between the two workers"
        )
        f.data["verdict"] = SKIPPED
        return
    f.expect(through_host == 0, f"{through_host} bytes crossed host memory over UCX")


# -- 4 towers against plain CuPy ----------------------------------------------------------------
def tower_step(target: Target) -> Findings:
    """Row C's 4-tower training step on 4 logical GPUs against the same model in plain CuPy
    (NumPy on virtual GPUs): losses agree; medians of continuous loops, and their ratio."""
    from benchmarks.multi_device import build
    from benchmarks.training import initial_weights

    f = Findings()
    data = {"weights": initial_weights(), "batches": batches(256)}
    built = build(tf, f"towers_{TOWERS}", [f"/gpu:{i}" for i in range(TOWERS)], data)
    gpu_options = {"virtual_devices": [TOWER_MIB] * TOWERS}
    with session(target, built.graph, TOWERS, soft=True, **gpu_options) as sess:
        sess.run(built.init)
        ours = [sess.run([built.fetch, built.check], feeds)[1] for feeds in built.feeds[:CHECKED]]
        ours_s = _loops(lambda i: sess.run(built.fetch, built.feeds[i % len(built.feeds)]))
    xp = _cupy() if target.real else np
    plain = PlainModel(xp, data["weights"])
    theirs = [float(plain.step(*batch)) for batch in data["batches"][:CHECKED]]
    theirs_s = _loops(lambda i: plain.step(*data["batches"][i % len(data["batches"])]), xp)
    f.expect(
        np.allclose(ours, theirs, rtol=LOSS_RTOL),
        f"the first {CHECKED} losses differ: daskgraph {np.round(ours, 5).tolist()}, "
        f"plain {np.round(theirs, 5).tolist()}",
    )
    plain_name = "CuPy" if target.real else "NumPy"
    ratio = statistics.median(ours_s) / statistics.median(theirs_s)
    f.lines.append(
        f"step (median of {LOOPS} loops of {LOOP}): daskgraph {TOWERS} towers "
        f"{statistics.median(ours_s) * 1e3:.2f} ms, plain {plain_name} "
        f"{statistics.median(theirs_s) * 1e3:.2f} ms: {ratio:.2f}x"
    )
    f.lines.append(f"first losses: {np.round(ours, 4).tolist()} (plain: same within {LOSS_RTOL})")
    f.data.update(ratio=ratio, daskgraph_s=ours_s, plain_s=theirs_s, plain=plain_name)
    if not target.real:
        f.skipped.append(f"{NO_GPU}: the plain model ran over NumPy, not CuPy; no GPU timing")
    return f


def batches(batch: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """The training case's digits batches, or random ones of their shapes without
    scikit-learn (the timings are the same)."""
    from benchmarks.training import BATCHES, CLASSES, FEATURES, digits_batches

    if importlib.util.find_spec("sklearn") is not None:
        return digits_batches(batch)
    rng = np.random.default_rng(0)
    return [
        (rng.random((batch, FEATURES), np.float32), rng.integers(0, CLASSES, batch, np.int32))
        for _ in range(BATCHES)
    ]


def _cupy() -> Any:
    import cupy

    return cupy


def _loops(step: Callable[[int], Any], xp: Any = None) -> list[float]:
    """Seconds per step of :data:`LOOPS` continuous loops of :data:`LOOP` steps, after
    :data:`WARMUP` steps (``xp``: CuPy, synchronised before each clock read)."""
    sync = getattr(getattr(xp, "cuda", None), "Device", None)
    for i in range(WARMUP):
        step(i)
    seconds = []
    for _ in range(LOOPS):
        if sync:
            sync().synchronize()
        start = time.perf_counter()
        for i in range(LOOP):
            step(i)
        if sync:
            sync().synchronize()
        seconds.append((time.perf_counter() - start) / LOOP)
    return seconds


class PlainModel:
    """The MLP and Adam of :mod:`benchmarks.training` in plain ``xp`` (CuPy or NumPy): the
    whole batch at once (the towers' averaged gradients are the batch's mean gradient)."""

    def __init__(self, xp: Any, weights: dict[str, np.ndarray]) -> None:
        self.xp, self.t = xp, 0
        self.params = {k: xp.asarray(v) for k, v in weights.items()}
        self.m = {k: xp.zeros_like(v) for k, v in self.params.items()}
        self.v = {k: xp.zeros_like(v) for k, v in self.params.items()}

    def step(self, x_host: np.ndarray, y_host: np.ndarray) -> Any:
        """One training step on a batch fed from the host; the loss before the update (an
        ``xp`` scalar: reading it waits for the GPU)."""
        from benchmarks.training import LEARNING_RATE

        xp, p = self.xp, self.params
        x, y = xp.asarray(x_host), xp.asarray(y_host)
        pre = x @ p["w1"] + p["b1"]
        hidden = xp.maximum(pre, 0)
        logits = hidden @ p["w2"] + p["b2"]
        shifted = logits - logits.max(axis=1, keepdims=True)
        log_probs = shifted - xp.log(xp.exp(shifted).sum(axis=1, keepdims=True))
        rows = xp.arange(len(y))
        loss = -log_probs[rows, y].mean()
        d_logits = xp.exp(log_probs)
        d_logits[rows, y] -= 1
        d_logits /= len(y)
        d_hidden = (d_logits @ p["w2"].T) * (pre > 0)
        grads = {"w1": x.T @ d_hidden, "b1": d_hidden.sum(axis=0), "w2": hidden.T @ d_logits,
                 "b2": d_logits.sum(axis=0)}  # fmt: skip
        self.t += 1
        rate = LEARNING_RATE * np.sqrt(1 - BETA2**self.t) / (1 - BETA1**self.t)
        for k, g in grads.items():
            self.m[k] = BETA1 * self.m[k] + (1 - BETA1) * g
            self.v[k] = BETA2 * self.v[k] + (1 - BETA2) * g * g
            p[k] = p[k] - np.float32(rate) * self.m[k] / (xp.sqrt(self.v[k]) + EPSILON)
        return loss
