"""Case *memory*: the memory of the client, the scheduler and the workers over long runs.

A TF1 training loop calls ``Session.run`` thousands of times, and every run of a graph that
spans devices is a graph submitted to Dask. Whatever Dask or daskgraph keeps per run (task
groups, graph metadata, memoized keys, whole messages in a log) shows here as memory that
grows with the number of runs (:mod:`daskgraph.cluster.footprint` lists what there was).

One child process is the client; it starts the cluster in a process of its own
(``daskgraph.cluster.local.local_cluster(virtual_gpus=1, processes=True)``: the scheduler there, one
nanny worker process per device; its TLS credentials passed on as files only this user reads),
so that the client, the scheduler and each worker are processes apart, each with its own
resident memory. The graph: a placeholder on ``/gpu:0``
(the virtual GPU) fed ``feed_kib`` KiB each run, and ``reduce_sum(a * 2)`` on ``/cpu:0``; each
result is checked against NumPy. After ``WARMUP`` untimed runs (which fill Dask's bounded logs
and daskgraph's bounded key memo), ``runs`` runs, with every process's resident memory read
``SAMPLES`` times along the way: by ``psutil`` from outside, as it is and after each process
gave its free heap back to the system (``malloc_trim``, glibc; the allocator keeps freed heap
below ``MALLOC_TRIM_THRESHOLD_``, 64 MiB in daskgraph's workers, and its high-water mark steps
up now and then, which says nothing about what runs keep alive). The scheduler's and the
workers' state sizes are read at the middle and at the end.

Targets: over the last half of the runs, no process grows by more than :data:`GOAL_SLOPE`
bytes per run (least-squares slope of its samples, after ``malloc_trim``: a 1 MiB step of the
allocator's high-water mark over 3,000 runs alone reads 350 B/run); and the scheduler keeps
nothing per run (:data:`KEPT`, counted at the middle and the end; its key memo is bounded by
``footprint.KEY_MEMO_LIMIT``). Before the fix the client of the embedded cluster (where the
scheduler lives) grew by about 8 KB per run; after the shared span, the scheduler by 1.4 KB and
the CPU worker by 1.1 KB per run.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from benchmarks.common import run_json, target_record
from daskgraph.cluster.footprint import trim_heap

WARMUP = 1_000
SAMPLES = 20
GOAL_SLOPE = 512.0  # bytes per run, every process
#: what the scheduler keeps per run that must not grow at all (``key_memo`` is bounded apart)
KEPT = ("task_groups", "span_groups", "span_metadata")
_LOCAL = "/job:localhost/replica:0/task:0/device:"


# -- the cluster's process ------------------------------------------------------------------------
def _cluster() -> None:
    """Start the cluster, print its address, and keep it until stdin closes."""
    from daskgraph.cluster.local import local_cluster
    from daskgraph.cluster.tls import security_fields

    with local_cluster(virtual_gpus=1, processes=True) as cluster:
        # its TLS credentials, as files only this user reads (for the client's process)
        security = security_fields(cluster.security) if cluster.security else None
        started = {"address": cluster.scheduler_address, "pid": os.getpid(), "security": security}
        print(json.dumps(started), flush=True)
        sys.stdin.read()


# -- the client's process -------------------------------------------------------------------------
def _scheduler_state(dask_scheduler: Any) -> dict[str, int]:
    """Sizes of the scheduler's state that a long program's runs must not grow."""
    from dask.utils import key_split

    ext = dask_scheduler.extensions.get("spans")
    spans = list(ext.spans.values()) if ext else []
    return {
        "tasks": len(dask_scheduler.tasks),
        "task_groups": len(dask_scheduler.task_groups),
        "span_groups": sum(len(s.groups) for s in spans),
        "span_metadata": sum(len((s.metadata or {}).get("collections", [])) for s in spans),
        "key_memo": key_split.cache_info().currsize,
    }


def _worker_state(dask_worker: Any) -> dict[str, int]:
    from dask.utils import key_split

    return {
        "tasks": len(dask_worker.state.tasks),
        "data": len(dask_worker.data),
        "key_memo": key_split.cache_info().currsize,
    }


def _state(client: Any, names: dict[str, str]) -> dict[str, dict[str, int]]:
    state = {"scheduler": client.run_on_scheduler(_scheduler_state)}
    for address, probe in client.run(_worker_state).items():
        state[names[address]] = probe
    state["client"] = {"futures": len(client.futures)}
    return state


def _graph(feed: int) -> tuple[Any, Any, Any]:
    import daskgraph as dg

    graph = dg.Graph()
    with graph.as_default():
        with dg.device("/gpu:0"):
            a = dg.placeholder(dg.float32, shape=(feed,), name="a")
        with dg.device("/cpu:0"):
            out = dg.reduce_sum(a * 2.0, name="out")
    return graph, a, out


def _measure(runs: int, feed_kib: int, warmup: int) -> dict[str, Any]:
    """Run the case in this process against a cluster in a process of its own."""
    from distributed import Client

    import daskgraph as dg
    from daskgraph.cluster.tls import security_from_fields

    cluster = subprocess.Popen(
        [sys.executable, "-m", "benchmarks.memory", "cluster"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        started = json.loads(cluster.stdout.readline())
        fields = started["security"]
        security = security_from_fields(fields) if fields else None
        with Client(started["address"], security=security, set_as_default=False) as probe:
            probe.wait_for_workers(2, timeout=120)
        feed = feed_kib * 256  # float32 values
        graph, a, out = _graph(feed)
        with dg.Session(started["address"], graph=graph, security=security) as sess:
            step = _stepper(sess, a, out, feed)
            for i in range(warmup):
                step(i)
            return _loop(sess.client, step, runs, started["pid"])
    finally:
        cluster.stdin.close()
        cluster.wait(60)


def _stepper(sess: Any, a: Any, out: Any, feed: int) -> Callable[[int], bool]:
    """One run, fed afresh; whether its result matches NumPy's."""
    base = np.linspace(0.0, 1.0, feed, dtype=np.float32)

    def step(i: int) -> bool:
        value = base + np.float32(i % 1000)
        return bool(np.isclose(sess.run(out, {a: value}), (value * 2.0).sum(), rtol=1e-4))

    return step


def _loop(client: Any, step: Callable[[int], bool], runs: int, scheduler_pid: int) -> dict:
    """``runs`` runs, sampling every process's memory :data:`SAMPLES` times."""
    procs, names = _processes(client, scheduler_pid)
    samples = [(0, *_sample(client, procs))]
    segments, state, wrong = [], {}, 0
    every = max(runs // SAMPLES, 1)
    start = time.perf_counter()
    for i in range(1, every * SAMPLES + 1):
        wrong += not step(i)
        if i % every == 0:
            segments.append((time.perf_counter() - start) / every)
            samples.append((i, *_sample(client, procs)))
            if i in (every * (SAMPLES // 2), every * SAMPLES):
                state["middle" if i < every * SAMPLES else "end"] = _state(client, names)
            start = time.perf_counter()
    return {"samples": samples, "seconds_per_run": segments, "state": state, "wrong": wrong}


def _processes(client: Any, scheduler_pid: int) -> tuple[dict[str, Any], dict[str, str]]:
    """(process name -> ``psutil.Process``, worker address -> process name)."""
    import psutil

    pids = {"client": os.getpid(), "scheduler": scheduler_pid}
    workers = client.scheduler_info(n_workers=-1)["workers"]
    names = {}
    for address, pid in client.run(os.getpid).items():
        names[address] = "worker " + str(workers[address]["name"]).replace(_LOCAL, "")
        pids[names[address]] = pid
    return {name: psutil.Process(pid) for name, pid in pids.items()}, names


def _sample(client: Any, procs: dict[str, Any]) -> tuple[dict[str, int], dict[str, int]]:
    """Every process's resident memory as it is, then after
    :func:`~daskgraph.cluster.footprint.trim_heap` in each: the
    allocator keeps freed heap (up to ``MALLOC_TRIM_THRESHOLD_``, 64 MiB in the workers) and
    its high-water mark steps up now and then, which says nothing about what is kept alive."""
    raw = {name: p.memory_info().rss for name, p in procs.items()}
    trim_heap()
    client.run_on_scheduler(trim_heap)
    client.run(trim_heap)
    return raw, {name: p.memory_info().rss for name, p in procs.items()}


def _slopes(samples: list, which: int = 2) -> dict[str, dict[str, float]]:
    """Per process: resident memory after the warm-up and at the end, and the least-squares
    slope (bytes per run) and growth over the last half of the samples (``which``: 1 for the
    memory as it was, 2 for after trimming)."""
    half = samples[len(samples) // 2 :]
    runs = np.array([s[0] for s in half], dtype=float)
    out = {}
    for name in samples[0][which]:
        rss = np.array([s[which][name] for s in half], dtype=float)
        out[name] = {
            "rss_start": samples[0][which][name],
            "rss_end": samples[-1][which][name],
            "growth_last_half": float(rss[-1] - rss[0]),
            "slope_bytes_per_run": float(np.polyfit(runs, rss, 1)[0]),
        }
    return out


def child(argv: list[str]) -> None:
    """``python -m benchmarks.memory cluster`` or ``measure RUNS FEED_KIB WARMUP``."""
    if argv[0] == "cluster":
        _cluster()
    else:
        print(json.dumps(_measure(int(argv[1]), int(argv[2]), int(argv[3]))))


# -- in the suite's process -----------------------------------------------------------------------
def _spawn(*args: str, timeout: float = 3600) -> dict[str, Any]:
    return run_json("benchmarks.memory", *args, timeout=timeout)


def run(args: Any) -> dict[str, Any]:
    """Run the case: one client process, ``args.memory_runs`` measured runs."""
    runs, feed_kib = args.memory_runs, args.memory_feed_kib
    measured = _spawn("measure", str(runs), str(feed_kib), str(WARMUP))
    trimmed, raw = _slopes(measured["samples"], 2), _slopes(measured["samples"], 1)
    worst = max(trimmed, key=lambda p: trimmed[p]["slope_bytes_per_run"])
    per_run = measured["seconds_per_run"]
    return {
        "title": "memory",
        "summary": f"resident memory of the client, the scheduler and each worker over {runs:,} "
        f"runs of a two-device graph fed {feed_kib} KiB each run, after {WARMUP:,} warm-up runs",
        "params": {"runs": runs, "warmup": WARMUP, "feed_kib": feed_kib, "samples": SAMPLES},
        "ways": [
            {
                "key": "daskgraph",
                "label": "Session.run, /gpu:0 placeholder -> /cpu:0 op (time per run)",
                "times_s": per_run,
                "median_s": float(np.median(per_run)),
                "min_s": min(per_run),
                "status": "ok",
            }
        ],
        "processes": trimmed,
        "processes_untrimmed": raw,
        "samples": measured["samples"],
        "state": measured["state"],
        "wrong_results": measured["wrong"],
        "targets": [
            target_record(
                "memory.slope",
                "memory growth per run over the last half (worst of client, scheduler, workers)",
                trimmed[worst]["slope_bytes_per_run"],
                "<=",
                GOAL_SLOPE,
                unit=" B/run",
                timed=False,
                note=f"worst: {worst}; {measured['wrong']} wrong results",
            ),
            target_record(
                "memory.kept",
                "task groups, span groups and graph metadata the scheduler kept per run "
                "(middle to end)",
                _kept_per_run(measured["state"], runs),
                "<=",
                0.0,
                unit="",
                goal_text="0",
                timed=False,
                note=f"key memos at the end: {_memos(measured['state']['end'])}",
            ),
        ],
    }


def _memos(state: dict[str, dict[str, int]]) -> str:
    return ", ".join(f"{p} {s['key_memo']}" for p, s in state.items() if "key_memo" in s)


def _kept_per_run(state: dict[str, Any], runs: int) -> float:
    """Scheduler objects (:data:`KEPT`) added between the middle and the end, per run."""
    middle, end = state["middle"]["scheduler"], state["end"]["scheduler"]
    return sum(end[k] - middle[k] for k in KEPT) / (runs - runs // 2)


if __name__ == "__main__":
    child(sys.argv[1:])
