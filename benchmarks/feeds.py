"""Case *feeds*: large feeds go to the worker that reads them, never through the scheduler.

Two 400 MB float32 feeds (10000 x 10000) to placeholders under ``/gpu:0`` on the embedded
cluster with one virtual GPU; the fetch is ``reduce_sum(a + b)``, so the result is a scalar.
daskgraph sends every feed straight to the worker that reads it: in the step's message (a
one-device step through the worker's step channel, large arrays through shared memory), or,
for a run on the scheduler's path, ahead of its tasks to the worker's step service when at
least ``dispatch.DIRECT_FEED_BYTES`` (1 MiB); only a run's task graph (a few KB) goes to the
scheduler.

Bytes are counted by :class:`CommTraffic`, which wraps ``distributed.comm.tcp.TCP.write`` in
this process (the client *and* the embedded scheduler live here; the workers are other
processes) and sorts every message written by direction: client -> scheduler, scheduler ->
out (to workers and clients, forwarded ``proxy`` calls included), and client -> workers
directly. The counts are what goes on the wire (serialized frames, headers included).

Ways, on the same cluster and worker:

* ``dg.Session.run`` with the two feeds;
* the baseline that proves the counter works: the same arrays embedded in a plain Dask graph,
  ``client.get({"a": A, "b": B, "out": (add_and_sum, "a", "b")}, "out")``, which must count
  about 800 MB through the scheduler (in, and out again to the worker).

Target: no feed bytes through the scheduler: at most 1 MiB per run in and out of it (a feed
is 400 MB, so even part of one would show), and the graph and control messages are reported.
"""

from __future__ import annotations

import threading
import warnings
from typing import Any

import numpy as np

from benchmarks.common import (
    LOCAL,
    Way,
    fmt_bytes,
    median,
    run_back_to_back,
    settle,
    target_record,
    way_record,
)
from daskgraph.runtime.client import dispatch

ALLOWANCE = 2**20  # bytes per run in and out of the scheduler: graph and control messages
DIRECTIONS = ("client_to_scheduler", "scheduler_out", "client_to_workers", "other")


class CommTraffic:
    """Counts the bytes written on this process's TCP comms, by direction.

    A frame written on a comm whose peer is the scheduler is *client -> scheduler* (the client
    and the cluster object are the only things here that connect to it); one written by the
    scheduler, on a comm it accepted or on one from its own connection pool (how it forwards
    ``proxy`` calls and gathers), is *scheduler -> out*; one on a comm of the client's
    connection pool to a worker is *client -> workers* (direct). Use it as a context manager
    (it patches ``TCP.write`` for its duration); :meth:`take` returns the counts since the last
    call and starts afresh.
    """

    def __init__(self, client, scheduler) -> None:
        self.scheduler_address = scheduler.address
        self._scheduler_pool = scheduler.rpc
        self._client_pool = client.rpc
        self._lock = threading.Lock()
        self._original = None
        self._counts = self._empty()

    @staticmethod
    def _empty() -> dict[str, dict[str, int]]:
        return {d: {"bytes": 0, "messages": 0, "largest": 0} for d in DIRECTIONS}

    def direction(self, comm) -> str:
        local, peer = comm.local_address, comm.peer_address
        if peer == self.scheduler_address:
            return "client_to_scheduler"
        if local == self.scheduler_address or comm in self._scheduler_pool.occupied.get(peer, ()):
            return "scheduler_out"
        if comm in self._client_pool.occupied.get(peer, ()):
            return "client_to_workers"
        return "other"

    def add(self, comm, nbytes: int) -> None:
        direction = self.direction(comm)
        with self._lock:
            count = self._counts[direction]
            count["bytes"] += nbytes
            count["messages"] += 1
            count["largest"] = max(count["largest"], nbytes)

    def take(self) -> dict[str, dict[str, int]]:
        with self._lock:
            counts, self._counts = self._counts, self._empty()
        return counts

    def __enter__(self) -> CommTraffic:
        from distributed.comm.tcp import TCP

        original = self._original = TCP.write
        counter = self

        async def write(comm, msg, serializers=None, on_error="message"):
            nbytes = await original(comm, msg, serializers=serializers, on_error=on_error)
            counter.add(comm, nbytes or 0)
            return nbytes

        TCP.write = write
        return self

    def __exit__(self, *exc: Any) -> None:
        from distributed.comm.tcp import TCP

        TCP.write = self._original


def add_and_sum(a: np.ndarray, b: np.ndarray) -> np.float32:
    """The baseline's task: what the daskgraph graph computes."""
    return np.add(a, b).sum()


def run(client, scheduler, devices: dict[str, str], args) -> dict[str, Any]:
    import daskgraph as dg

    size = args.feed_size
    gpu_worker = devices[LOCAL + "GPU:0"]
    rng = np.random.default_rng(7)
    a_value = rng.random((size, size), dtype=np.float32)
    b_value = rng.random((size, size), dtype=np.float32)
    feed_bytes = a_value.nbytes + b_value.nbytes

    graph = dg.Graph()
    with graph.as_default(), dg.device("/gpu:0"):
        a = dg.placeholder(dg.float32, (size, size), name="a")
        b = dg.placeholder(dg.float32, (size, size), name="b")
        total = dg.reduce_sum(a + b, name="total")

    def baseline() -> np.float32:
        dsk = {"feed-a": a_value, "feed-b": b_value, "out": (add_and_sum, "feed-a", "feed-b")}
        with warnings.catch_warnings():  # distributed warns about large graphs: that's the point
            warnings.simplefilter("ignore")
            return client.get(dsk, "out", workers=[gpu_worker], allow_other_workers=False)

    traffic: dict[str, list[dict]] = {"daskgraph": [], "dask_graph_embedded": []}
    counter = CommTraffic(client, scheduler)

    def start(_: int) -> None:
        settle(client)  # the settle's own messages are not counted
        counter.take()

    def stop(key: str):
        def record(repeat: int) -> None:
            counts = counter.take()
            if repeat >= 0:
                traffic[key].append(counts)

        return record

    with counter, dg.Session(client, graph=graph) as sess:
        ways = [
            Way(
                "daskgraph",
                "daskgraph Session.run",
                lambda: sess.run(total, {a: a_value, b: b_value}),
                before=start,
                after=stop("daskgraph"),
            ),
            Way(
                "dask_graph_embedded",
                "baseline: feeds embedded in a Dask graph (client.get)",
                baseline,
                before=start,
                after=stop("dask_graph_embedded"),
            ),
        ]
        run_back_to_back(ways, args.repeats, None)  # `start` settles before the counter resets

    np.testing.assert_allclose(ways[0].result, ways[1].result, rtol=1e-5)
    by = {w.key: way_record(w) for w in ways}
    summary: dict[str, dict[str, float]] = {}
    for key, runs in traffic.items():
        summary[key] = {
            f"{d}_{field}": median([r[d][field] for r in runs])
            for d in DIRECTIONS
            for field in ("bytes", "messages", "largest")
        }
        summary[key]["through_scheduler_bytes"] = median(
            [r["client_to_scheduler"]["bytes"] + r["scheduler_out"]["bytes"] for r in runs]
        )
        by[key]["traffic"] = runs
        by[key]["traffic_median"] = summary[key]
    dg_through = max(
        r["client_to_scheduler"]["bytes"] + r["scheduler_out"]["bytes"]
        for r in traffic["daskgraph"]
    )
    base_in = summary["dask_graph_embedded"]["client_to_scheduler_bytes"]
    dgt = summary["daskgraph"]
    return {
        "title": "feeds",
        "summary": f"two {fmt_bytes(a_value.nbytes)} float32 feeds ({size}x{size}) to "
        "placeholders on /gpu:0 (1 virtual GPU), fetch reduce_sum(a + b)",
        "params": {
            "size": size,
            "feed_bytes_total": feed_bytes,
            "allowance_bytes": ALLOWANCE,
            "direct_feed_threshold_bytes": dispatch.DIRECT_FEED_BYTES,
        },
        "baseline": "daskgraph",
        "ways": list(by.values()),
        "traffic": summary,
        "targets": [
            target_record(
                "feeds.through_scheduler",
                "bytes in + out of the scheduler per daskgraph run (worst repeat)",
                float(dg_through),
                "<=",
                float(ALLOWANCE),
                unit=" B",
                goal_text="1 MiB (no feed bytes)",
                timed=False,
                note=f"into the scheduler {fmt_bytes(dgt['client_to_scheduler_bytes'])} in "
                f"{int(dgt['client_to_scheduler_messages'])} messages (largest "
                f"{fmt_bytes(dgt['client_to_scheduler_largest'])}), out of it "
                f"{fmt_bytes(dgt['scheduler_out_bytes'])}; client -> worker directly "
                f"{fmt_bytes(dgt['client_to_workers_bytes'])} (median per run)",
            ),
            target_record(
                "feeds.counter_check",
                "check: the baseline's bytes into the scheduler / the feeds' size",
                base_in / feed_bytes,
                ">=",
                1.0,
                timed=False,
                note=f"{fmt_bytes(base_in)} counted into the scheduler for "
                f"{fmt_bytes(feed_bytes)} of feeds: the counter sees feeds that go that way",
            ),
        ],
    }
