"""Case *sessions*: what a ``Session()`` costs, and what closing one gives back.

A TF1 program makes sessions freely (``with tf.Session() as sess:`` per step, per test, per
evaluation). daskgraph's sessions share one embedded cluster per process, started on first use,
so only the first ``Session()`` of a process pays for a cluster.

Every repeat is a fresh Python process (so that the first session really starts the cluster)
with the embedded cluster's defaults, what a plain ``dg.Session()`` gets on this machine (no
virtual GPU; the CPU worker in the process by default). It times, on the trivial graph
``y = x * 2 + 1`` (4 float32 fed):

* ``daskgraph`` -- ``dg.Session()`` + one ``run`` + ``close()`` after the first session,
  median of ``calls``: what ``with tf.Session() as sess: sess.run(...)`` per step costs;
* ``daskgraph_empty`` -- ``dg.Session()`` + ``close()`` after the first (no run), median of
  ``calls``;
* ``daskgraph_first`` -- the process's first ``dg.Session()`` (starts the embedded cluster);
* ``dask_client`` -- ``distributed.Client(address)`` + ``close()`` to the same scheduler,
  median of ``calls``: the Dask peer (a new client of a running cluster);
* ``tensorflow`` -- TensorFlow 1's ``tf.compat.v1.Session()`` + one ``run`` + ``close()``,
  median of ``calls`` (in-process, for reference).

Then one more process (one virtual GPU) makes ``WARMUP_CYCLES`` untimed and ``cycles``
measured open / run / close cycles of a session whose graph spans the CPU and the virtual GPU
(a variable on each, so both workers hold session state) and records each worker's resident
memory after a warm-up and at the end, and the session states still held on the workers (the
session plugin's teardown must free them all). With the CPU worker in the process, its
resident memory is the process's.

Targets: ``Session()`` + one run after the first <= 50 ms; worker memory growth over the
cycles <= 16 MiB (what glibc's arenas may keep; a leak of one compiled program or store per
cycle is far more); no session state left on any worker.
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from typing import Any

from benchmarks.common import ratio, run_json, target_record

GOAL_S = 0.05
#: untimed cycles first: they fill Dask's own bounded diagnostic buffers on the workers (the
#: batched stream's recent-message log and the stimulus and transition logs, 1,000 entries
#: each), which otherwise read as growth of the first few hundred cycles
WARMUP_CYCLES = 300
GOAL_GROWTH = 16 * 2**20
_ENV = {"DASK_DASKGRAPH__VIRTUAL_GPUS": "1"}


# -- inside the child process ---------------------------------------------------------------------
def _median_of(calls: int, fn) -> float:
    times = []
    for _ in range(calls):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _creation(calls: int) -> dict[str, Any]:
    """The child's timings: first session, later sessions (with a run, and without), Dask
    client, TF session with a run."""
    import numpy as np
    from distributed import Client

    import daskgraph as dg

    graph = dg.Graph()
    with graph.as_default():
        x = dg.placeholder(dg.float32, shape=(4,), name="x")
        y = dg.add(dg.multiply(x, np.float32(2.0)), np.float32(1.0), name="y")
    x_value = np.arange(4, dtype=np.float32)

    def session_and_run() -> None:
        with dg.Session(graph=graph) as sess:
            sess.run(y, {x: x_value})

    start = time.perf_counter()
    first = dg.Session()
    out: dict[str, Any] = {"daskgraph_first": time.perf_counter() - start}
    address = first.client.scheduler.address
    try:
        out["daskgraph"] = _median_of(calls, session_and_run)
        out["daskgraph_empty"] = _median_of(calls, lambda: dg.Session().close())
        out["dask_client"] = _median_of(
            calls, lambda: Client(address, set_as_default=False).close()
        )
    finally:
        first.close()
    out["tensorflow"] = _tf_session_and_run(calls, x_value)
    return out


def _tf_session_and_run(calls: int, x_value) -> float | None:
    """Median of TF1 ``Session()`` + one run of ``x * 2 + 1`` + ``close()``."""
    try:
        import tensorflow as tf
    except ImportError:
        return None
    tf.compat.v1.disable_eager_execution()
    graph = tf.Graph()
    with graph.as_default():
        x = tf.compat.v1.placeholder(tf.float32, (4,), name="x")
        y = tf.add(tf.multiply(x, 2.0), 1.0, name="y")

    def session_and_run() -> None:
        with tf.compat.v1.Session(graph=graph) as sess:
            sess.run(y, {x: x_value})

    return _median_of(calls, session_and_run)


def _worker_memory(client) -> dict[str, Any]:
    def probe(dask_worker) -> tuple[int, int]:
        import psutil

        from daskgraph.runtime.worker.worker_state import state_of

        return psutil.Process().memory_info().rss, len(state_of(dask_worker).session_ids())

    return client.run(probe)


def _cycles(cycles: int, warmup: int) -> dict[str, Any]:
    """Open / run / close ``cycles`` sessions on a two-device graph; worker memory around it."""
    import numpy as np
    from distributed import Client

    import daskgraph as dg

    graph = dg.Graph()
    with graph.as_default():
        with dg.device("/cpu:0"):
            a = dg.Variable(np.ones((64, 64), np.float32), name="a")
        with dg.device("/gpu:0"):
            b = dg.Variable(np.ones((64, 64), np.float32), name="b")
            y = dg.reduce_sum(dg.matmul(a, b), name="y")
        init = dg.global_variables_initializer()

    def cycle() -> float:
        with dg.Session(graph=graph) as sess:
            sess.run(init)
            return float(sess.run(y))

    for _ in range(warmup):
        cycle()
    from daskgraph.cluster import embedded

    (cluster,) = embedded.running().values()  # the shared cluster outlives its sessions
    with Client(cluster, set_as_default=False) as client:
        before = _worker_memory(client)
        samples = []  # (cycles done, max worker RSS) ten times along the way
        start = time.perf_counter()
        for i in range(1, cycles + 1):
            value = cycle()
            if i % max(cycles // 10, 1) == 0:
                samples.append((i, max(rss for rss, _ in _worker_memory(client).values())))
        seconds = time.perf_counter() - start
        after = _worker_memory(client)
    if value != 64.0 * 64 * 64:
        raise RuntimeError(f"a cycle computed {value}, expected {64.0**3}")
    return {
        "cycles": cycles,
        "seconds_per_cycle": seconds / cycles,
        "rss_before": {w: rss for w, (rss, _) in before.items()},
        "rss_after": {w: rss for w, (rss, _) in after.items()},
        "states_after": {w: n for w, (_, n) in after.items()},
        "max_rss_samples": samples,
    }


def child(argv: list[str]) -> None:
    """``python -m benchmarks.sessions creation CALLS`` or ``cycles N WARMUP``: print JSON."""
    if argv[0] == "creation":
        print(json.dumps(_creation(int(argv[1]))))
    else:
        print(json.dumps(_cycles(int(argv[1]), int(argv[2]))))


# -- in the suite's process -----------------------------------------------------------------------
def _spawn(*args: str, env: dict[str, str] | None = None, timeout: float = 900) -> dict:
    return run_json("benchmarks.sessions", *args, env=env, timeout=timeout)


def _way(key: str, label: str, times: list[float | None], unavailable: str = "") -> dict:
    kept = [t for t in times if t is not None]
    return {
        "key": key,
        "label": label,
        "times_s": kept,
        "median_s": statistics.median(kept) if kept else None,
        "min_s": min(kept) if kept else None,
        "status": unavailable if not kept else "ok",
    }


def run(args, tf_missing: str = "") -> dict[str, Any]:
    """Run the case: ``args.repeats`` creation processes and one cycles process."""
    runs = [_spawn("creation", str(args.session_calls)) for _ in range(args.repeats)]
    memory = _spawn("cycles", str(args.session_cycles), str(WARMUP_CYCLES), env=_ENV)
    ways = [
        _way(
            "daskgraph",
            "dg.Session() + one run + close(), after the first",
            [r["daskgraph"] for r in runs],
        ),
        _way(
            "daskgraph_empty",
            "dg.Session() + close(), after the first",
            [r.get("daskgraph_empty") for r in runs],
        ),
        _way(
            "daskgraph_first",
            "the process's first dg.Session() (starts the cluster)",
            [r["daskgraph_first"] for r in runs],
        ),
        _way("dask_client", "Client(address) + close()", [r["dask_client"] for r in runs]),
        _way(
            "tensorflow",
            "TensorFlow 1 Session() + one run + close() (in-process)",
            [r["tensorflow"] for r in runs],
            unavailable=tf_missing or "n/a (tensorflow not installed)",
        ),
    ]
    growth = {w: memory["rss_after"][w] - memory["rss_before"][w] for w in memory["rss_before"]}
    worst = max(growth.values())
    left = sum(memory["states_after"].values())
    by = {w["key"]: w["median_s"] for w in ways}
    dg_s = by["daskgraph"]
    return {
        "title": "sessions",
        "summary": "Session() + one run after the first in a process, and worker memory over "
        f"{memory['cycles']} open/run/close cycles of a two-device session",
        "params": {
            "calls_per_process": args.session_calls,
            "processes": args.repeats,
            "cycles": memory["cycles"],
            "virtual_gpus": "0 (creation), 1 (cycles)",
        },
        "baseline": "dask_client",
        "ways": ways,
        "memory": {**memory, "growth": growth},
        "targets": [
            target_record(
                "sessions.after_first",
                "Session() + one run after the first",
                None if dg_s is None else dg_s * 1e3,
                "<=",
                GOAL_S * 1e3,
                unit=" ms",
                note=f"Session() + close() alone {(by['daskgraph_empty'] or 0) * 1e3:.2f} ms, "
                f"{ratio(by['daskgraph_empty'], by['dask_client']) or 0:.2f}x Client(address)"
                f"; first Session() {by['daskgraph_first'] or 0:.2f} s",
            ),
            target_record(
                "sessions.worker_memory",
                f"worker memory growth over {memory['cycles']} session cycles",
                worst / 2**20,
                "<=",
                GOAL_GROWTH / 2**20,
                unit=" MiB",
                timed=False,
                note=f"per worker: {', '.join(f'{g / 2**20:+.1f} MiB' for g in growth.values())}"
                f"; {memory['seconds_per_cycle'] * 1e3:.0f} ms per cycle",
            ),
            target_record(
                "sessions.states_left",
                "session states left on the workers after every session closed",
                float(left),
                "<=",
                0.0,
                unit="",
                goal_text="0",
                timed=False,
            ),
        ],
    }


if __name__ == "__main__":
    child(sys.argv[1:])
