"""Case *handover*: a 400 MB host feed handed to a GPU worker process costs about one memcpy.

On the embedded cluster with one virtual GPU (the GPU worker a process of its own), one
10000 x 10000 float32 feed (``--feed-size``) to a placeholder on ``/gpu:0`` whose fetch is
one element of it (``slice``: the run's work is the hand-over). A feed of this size between
processes of one machine goes through shared memory
(:mod:`daskgraph.runtime.worker.shared_arrays`): written once, mapped by the worker.

Ways, back to back, each a loop of ``--handover-calls`` back-to-back calls (median per call):

* ``memcpy`` -- ``a.copy()`` of the same array into a fresh destination (the yardstick);
* ``feed`` -- ``Session.run`` of the one-device graph: the done-when's measurement;
* ``feed_compiled_step`` -- the same feed beside a small ``/cpu:0`` part (a two-device
  compiled step, through the GPU worker's step channel);
* ``feed_and_fetch`` -- that step fetching the whole feed back (``identity``: two
  hand-overs, compared with two memcpys);
* ``channel`` -- the hand-over alone: the feed in a message through a step channel that the
  GPU worker's process serves for the benchmark, which reads one element of each page of it
  (the transport under the rows above, without the step's own work).

Targets: ``feed`` / ``memcpy`` <= 1.5 (issue 33); the other rows are reported beside it,
with the bytes that went through shared memory each run.
"""

from __future__ import annotations

from multiprocessing.connection import Client as connect_channel
from typing import Any

import numpy as np

from benchmarks.common import (
    LOCAL,
    Way,
    fmt_bytes,
    fmt_time,
    median,
    per_call,
    ratio,
    run_back_to_back,
    target_record,
    way_record,
)

GOAL = 1.5  # a feed / one memcpy of it


def _graph(size: int):
    import daskgraph as dg

    graph = dg.Graph()
    with graph.as_default():
        with dg.device("/gpu:0"):
            x = dg.placeholder(dg.float32, (size, size), name="x")
            probe = dg.slice(x, [0, 0], [1, 1])
            echoed = dg.identity(x)
        with dg.device("/cpu:0"):
            c = dg.placeholder(dg.float32, (2,), name="c")
            small = c + 1.0
    return graph, x, probe, echoed, c, small


def _serve_probe() -> dict[str, Any]:
    """In the GPU worker's process: a step channel that reads one element of each page of
    the message's ``feed`` (kept by the module until :func:`_close_probe`)."""
    from daskgraph.runtime.worker import step_channel

    def serve(message: dict[str, Any]) -> dict[str, Any]:
        return {"status": "ok", "sum": float(message["feed"].reshape(-1)[::1024].sum())}

    server = step_channel.ChannelServer(serve, "handover-probe")
    step_channel._handover_probe = server  # type: ignore[attr-defined]
    return server.endpoint()


def _close_probe() -> None:
    from daskgraph.runtime.worker import step_channel

    step_channel._handover_probe.close()  # type: ignore[attr-defined]


def _through_channel(conn, value: np.ndarray) -> float:
    from daskgraph.runtime.worker.shared_arrays import release
    from daskgraph.runtime.worker.step_channel import recv_message, send_message

    segments = send_message(conn, {"feed": value})
    reply = recv_message(conn)
    release(segments)
    return reply["sum"]


def _shared_bytes(client, address: str) -> int:
    from daskgraph.runtime.worker import shared_arrays

    counts = client.run(lambda: dict(shared_arrays.COUNTS), workers=[address])[address]
    return int(counts.get("shared bytes in", 0))


def run(client, devices: dict[str, str], args) -> dict[str, Any]:
    import daskgraph as dg

    size, calls = args.feed_size, args.handover_calls
    gpu_worker = devices[LOCAL + "GPU:0"]
    value = np.random.default_rng(11).random((size, size), dtype=np.float32)
    two = np.ones(2, np.float32)
    graph, x, probe, echoed, c, small = _graph(size)
    shared: dict[str, list[int]] = {}

    def counted(key: str, fn):
        def call():
            before = _shared_bytes(client, gpu_worker)
            result = per_call(fn, calls)()
            shared.setdefault(key, []).append((_shared_bytes(client, gpu_worker) - before) // calls)
            return result

        return call

    with dg.Session(client, graph=graph) as sess:
        sess.run(small, {c: two})  # (the first run of each plan goes through the scheduler)
        step = [probe, small]
        ways = [
            Way("memcpy", "a.copy() of the feed (fresh destination)", per_call(value.copy, calls)),
            Way("feed", "Session.run: the feed to /gpu:0, one element fetched",
                counted("feed", lambda: sess.run(probe, {x: value}))),
            Way("feed_compiled_step", "the same beside a small /cpu:0 part (compiled step)",
                counted("feed_compiled_step", lambda: sess.run(step, {x: value, c: two}))),
            Way("feed_and_fetch", "compiled step: the feed fetched back whole (identity)",
                counted("feed_and_fetch", lambda: sess.run([echoed, small], {x: value, c: two}))),
        ]  # fmt: skip
        endpoint = client.run(_serve_probe, workers=[gpu_worker])[gpu_worker]
        conn = connect_channel(endpoint["path"], family="AF_UNIX", authkey=endpoint["authkey"])
        ways.append(
            Way("channel", "the hand-over alone: the GPU worker's process reads each page",
                counted("channel", lambda: _through_channel(conn, value)))
        )  # fmt: skip
        try:
            run_back_to_back(ways, args.repeats, None)
        finally:
            conn.close()
            client.run(_close_probe, workers=[gpu_worker])
    np.testing.assert_array_equal(ways[3].result[0], value)
    return _record(ways, shared, value.nbytes, size, calls)


def _record(ways: list[Way], shared: dict, nbytes: int, size: int, calls: int) -> dict:
    by = {w.key: way_record(w) for w in ways}
    memcpy = by["memcpy"]["median_s"]
    notes = {
        key: f"{fmt_time(by[key]['median_s'])}, "
        f"{ratio(by[key]['median_s'], memcpy * n) or 0:.2f}x {n} memcpy "
        f"({fmt_time(memcpy * n)}); through shared memory "
        f"{fmt_bytes(median(shared.get(key, [])[1:] or [0]) or 0)} a run into the worker"
        for key, n in (
            ("feed", 1),
            ("feed_compiled_step", 1),
            ("feed_and_fetch", 2),
            ("channel", 1),
        )
    }
    return {
        "title": "feed hand-over",
        "summary": f"one {fmt_bytes(nbytes)} float32 feed ({size}x{size}) to a placeholder on "
        "/gpu:0 (a virtual GPU's worker process), against one memcpy of it",
        "params": {"size": size, "feed_bytes": nbytes, "calls": calls, "goal": GOAL},
        "baseline": "memcpy",
        "ways": list(by.values()),
        "shared_bytes_per_run": shared,
        "targets": [
            target_record(
                "handover.feed",
                f"a {fmt_bytes(nbytes)} feed to a GPU worker process / one memcpy of it",
                ratio(by["feed"]["median_s"], memcpy),
                "<=",
                GOAL,
                note=(
                    f"{notes['feed']}; as a compiled step: {notes['feed_compiled_step']}; "
                    f"fed and fetched back (two hand-overs): {notes['feed_and_fetch']}; "
                    f"the hand-over alone (step channel): {notes['channel']}"
                ),
            ),
        ],
    }
