"""Long runs of a two-device graph: the client, the scheduler and the workers stay flat.

Reported: a placeholder on ``/gpu:0`` (a virtual GPU) feeding an op on ``/cpu:0`` grew the
process of the client (which holds the embedded cluster's scheduler) by about 8 KB per run,
without levelling off; one-device runs stayed flat. What Dask kept per run
(:mod:`daskgraph.cluster.footprint`): a task group per run in the span extension, each graph's
metadata in the span, every run's keys in ``dask.utils.key_split``'s memo, and whole messages,
feeds included, in its low-level logs.

Here :data:`RUNS` runs on the shared embedded cluster (one virtual GPU, process workers), a
feed each run, every result checked against NumPy (a trial per batch of :data:`BATCH` runs).
After the first batch and after the last, once the cluster has settled:

* the state that must come back to the same size is the same: the scheduler's tasks (the
  session's resident programs), task groups, the span extension's groups and graph metadata,
  the workers' tasks and data;
* no Dask or daskgraph type has more objects in the client's process (with the scheduler);
* every process's key memo is within ``footprint.KEY_MEMO_LIMIT``;
* no process's resident memory (after ``malloc_trim``, which gives the allocator's reserve
  back) grew by more than :data:`RSS_BOUND`, a generous bound.
"""

from __future__ import annotations

import collections
import gc
import os
import time
from collections.abc import Callable
from typing import Any

import dask
import numpy as np
import psutil
import pytest

import daskgraph as dg
from daskgraph.cluster.footprint import KEY_MEMO_LIMIT, trim_heap

RUNS = 800
BATCH = 100
FEED = 4096  # float32 values: 16 KiB per run
RSS_BOUND = 8 * 2**20
#: objects of one type that may come and go between two censuses (connections, timers, ...)
CENSUS_SLACK = 20
#: the packages whose objects the census counts
OURS = ("dask", "distributed", "daskgraph")
#: keys of one graph that may sit in a memo above its limit until the next check
MEMO_SLACK = 16


def _scheduler_state() -> Callable[..., dict[str, int]]:
    """Sizes of the scheduler's state (a function made here: it travels by value)."""

    def probe(dask_scheduler: Any) -> dict[str, int]:
        from dask.utils import key_split

        spans = dask_scheduler.extensions["spans"].spans.values()
        return {
            "tasks": len(dask_scheduler.tasks),
            "task groups": len(dask_scheduler.task_groups),
            "span groups": sum(len(s.groups) for s in spans),
            "span graph metadata": sum(
                len((s.metadata or {}).get("collections", ())) for s in spans
            ),
            "key memo": key_split.cache_info().currsize,
        }

    return probe


def _worker_state() -> Callable[..., dict[str, int]]:

    def probe(dask_worker: Any) -> dict[str, int]:
        import os

        import psutil
        from dask.utils import key_split

        trim_heap()
        return {
            "tasks": len(dask_worker.state.tasks),
            "data": len(dask_worker.data),
            "key memo": key_split.cache_info().currsize,
            "rss": psutil.Process(os.getpid()).memory_info().rss,
        }

    return probe


def _settle(client: Any, timeout: float = 60.0) -> None:
    """Until the scheduler and the workers hold no task but the client's futures (the
    session's programs): the last run's tasks are released a moment after it returns."""
    held = set(client.futures)

    def on_scheduler(dask_scheduler: Any) -> int:
        return sum(key not in held for key in dask_scheduler.tasks)

    def on_worker(dask_worker: Any) -> int:
        return sum(key not in held for key in dask_worker.state.tasks)

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not client.run_on_scheduler(on_scheduler) and not any(client.run(on_worker).values()):
            return
        time.sleep(0.05)


def _census() -> collections.Counter:
    """Objects of Dask's and daskgraph's types in this process, by type."""
    gc.collect()
    return collections.Counter(
        f"{type(o).__module__}.{type(o).__qualname__}"
        for o in gc.get_objects()
        if str(getattr(type(o), "__module__", "")).split(".")[0]
        in ("dask", "distributed", "daskgraph")
    )


def _without(sizes: dict[str, int], *names: str) -> dict[str, int]:
    return {k: v for k, v in sizes.items() if k not in names}


def _snapshot(client: Any) -> dict[str, Any]:
    """What must stay flat, once the cluster has settled: state sizes by process, key memos,
    resident memory, and the census of this process (the client's and the scheduler's)."""
    _settle(client)
    trim_heap()
    scheduler = client.run_on_scheduler(_scheduler_state())
    probes = {f"worker {w}": s for w, s in client.run(_worker_state()).items()}
    state = {"scheduler": scheduler} | probes
    return {
        "state": {
            p: {k: v for k, v in s.items() if k not in ("key memo", "rss")}
            for p, s in state.items()
        },
        "memo": {p: s["key memo"] for p, s in state.items()},
        "rss": {"client and scheduler": psutil.Process(os.getpid()).memory_info().rss}
        | {p: s["rss"] for p, s in probes.items()},
        "census": _census(),
    }


@pytest.fixture()
def two_device_session():
    """A session of the shared embedded cluster with one virtual GPU, and its graph."""
    with dask.config.set({"daskgraph.virtual-gpus": 1}), dg.Graph().as_default() as graph:
        with dg.device("/gpu:0"):
            a = dg.placeholder(dg.float32, [FEED], name="a")
        with dg.device("/cpu:0"):
            out = dg.reduce_sum(a * 2.0, name="out")
        with dg.Session(graph=graph) as session:
            yield session, a, out


def test_long_runs_of_two_devices_keep_memory_flat(tally, two_device_session):
    session, a, out = two_device_session
    base = np.linspace(0.0, 1.0, FEED, dtype=np.float32)
    scenario = tally.scenario("long runs of two devices, memory flat", limit_s=30.0)
    first = None
    for start in range(0, RUNS, BATCH):
        values = [base + np.float32(i) for i in range(start, start + BATCH)]
        with scenario.trial() as trial:
            got = trial.run(lambda vs=values: [session.run(out, {a: v}) for v in vs], timeout=60)
            trial.check(got, [(v * np.float32(2.0)).sum(dtype=np.float32) for v in values])
        if first is None:
            first = _snapshot(session.client)  # after one batch: programs shipped, all warm
    scenario.verify(min_trials=RUNS // BATCH)
    problems = _growth(first, _snapshot(session.client), RUNS - BATCH)
    assert not problems, "\n".join(problems)


def _growth(first: dict[str, Any], last: dict[str, Any], runs: int) -> list[str]:
    """What grew between two snapshots ``runs`` runs apart, in words (nothing should)."""
    problems = []
    if last["state"] != first["state"]:
        problems.append(f"state grew over {runs} runs: {first['state']} -> {last['state']}")
    grown = {
        name: (first["census"][name], count)
        for name, count in last["census"].items()
        if count > first["census"][name] + CENSUS_SLACK
    }
    if grown:
        problems.append(f"Dask/daskgraph objects grew over {runs} runs: {grown}")
    limit = KEY_MEMO_LIMIT + MEMO_SLACK
    if max(last["memo"].values()) > limit:
        problems.append(f"key memos over {limit} keys: {last['memo']}")
    growth = {p: last["rss"][p] - first["rss"][p] for p in first["rss"]}
    if max(growth.values()) > RSS_BOUND:
        shown = {p: f"{g / 2**20:+.1f} MiB" for p, g in growth.items()}
        problems.append(f"resident memory grew over {runs} runs: {shown}")
    return problems
