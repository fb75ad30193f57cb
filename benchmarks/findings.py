"""What holds a missed target back: profile findings, written by hand, keyed by target.

``docs/benchmarks.md`` is generated; for every target a run misses, it prints the paragraph
found here under the target's key (see the ``key`` of each target in
``benchmarks/results/latest.json``), or says that none is recorded yet. Paragraphs are
Markdown. A paragraph stays here when its target is met (it is then not printed), so that a
regression finds its explanation again. Regenerate the page after editing this file, without
re-running the suite: ``.venv/bin/python -m benchmarks.report``.

The numbers quoted are from profiles on the 2-core machine the suite was written on.
"""

from __future__ import annotations

FINDINGS: dict[str, str] = {
    "compute.vs_numpy": """\
**A slower first matmul on the worker, and 48 MB across a process boundary.** Fixed earlier:
Dask's nanny starts workers with OpenBLAS limited to one thread (`execution.py` now gives BLAS
the CPU worker's threads with `threadpoolctl`: 1.7x became 1.1x), and large feeds went through
the scheduler (now the fast path sends them straight to the worker; the suite's client talks
to workers directly, as a session's own client does: 1.15x became 1.10x). What remains, from
traced runs on this machine: the 19 ops take 1.57-1.63 s on the worker against 1.51-1.55 s
for NumPy in the client; most of the difference is the first MatMul of a run with fed
inputs (90-160 ms instead of 85 ms; with constants instead of feeds it is not slower), and
the run adds 30-40 ms over its ops for the two 16 MB feeds in and the 16 MB result out (an
`A + B` run with the same transfers takes 40 ms against 3 ms in NumPy). Ruled out by
measurement: distributed's statistical profiler, the memory monitors' interval, glibc's
`MALLOC_TRIM_THRESHOLD_` / mmap threshold on the worker, calling BLAS from a non-main
thread, the alignment of received arrays, and running the actor call on the event loop
instead of a thread.

*Next steps:* find what the first MatMul after fed inputs waits for (a `perf` profile of the
worker during that op); keep inputs that do not change between runs on the worker
(Variables, or constants, which are shipped once per session), so only the result crosses.""",
    "feeds.through_scheduler": """\
**The one-partition fast path goes through the scheduler.** `dispatch.FastPath` runs a plan of
one partition by calling a `PartitionExecutor` Dask actor on the device's worker. A Dask actor
called from a client reaches its worker directly only when `client.direct_to_workers` is true;
otherwise (the default, and the session's own client) `Actor._worker_rpc` is a `ProxyRPC`: the
`actor_execute` message, feeds included as arguments, goes to the scheduler's `proxy` handler,
which forwards it to the worker (`Scheduler.broadcast`) and relays the result back. Measured:
800 MB client -> scheduler and 800 MB scheduler -> worker per run, 0 B client -> worker:
`_send_large_feeds` (`scatter(direct=True)`) is not on this path. With
`Client(..., direct_to_workers=True)` the same run (two 64 MB feeds) counts 0 B through the
scheduler and 128 MB client -> worker.

*Fix in daskgraph (`dispatch.py`):* call the executor's worker directly whatever the client's
setting: `client.rpc(worker).actor_execute(actor=key, function="run", args=[to_serialize(a)
for a in args], kwargs={})`, which is what `Actor` does when `direct_to_workers` is set (or
send feeds of at least `daskgraph.direct-feed-bytes` with `scatter(direct=True)` first and
pass their keys). It also shortens latency: a one-op run takes 1.02-1.15 ms direct against
1.38-1.44 ms through the proxy here.""",
    "fine.vs_tensorflow": """\
**The round trip to the worker, then the loop.** The executor now compiles a plain program once
per worker into direct calls (`numpy.add` itself for elementwise ops, a `partial` for the
rest, no argument list for one or two inputs): the 4,081-op program runs in 1.8 ms on the
worker, faster than the NumPy loop of the peer row (2.4 ms), where it took 5.5 ms before. A
run back to back takes 3.2 ms; the suite times each call after the cluster settles
(collections run, nothing held), when the same call takes 4.3-6.6 ms: the client, scheduler
and worker threads wake from idle for the round trip. TensorFlow's in-process C++ executor
runs the graph in 2-3 ms, so the ratio sits near the goal and moves with the machine's
noise.

*Next step:* time each hop of a cold round trip (client thread to its event loop, the
message to the worker, the worker's hand-off to the executor thread, and back) and cut the
largest; running the call on the worker's event loop instead of a thread was tried and
gained nothing measurable.""",
    "scale.us_per_op": """\
**Cyclic garbage collection while a million small objects are made.** Lowering allocated a few
small objects per op with the whole graph alive, and every full collection walked the graph
again (lowering 1M ops took 8.5-9.7 s with the collector on, 4.4-4.8 s with it off). `lower`
now pauses the collector while it builds the plan (nothing it makes is cyclic; the caller's
collector state is restored): 1M ops went from 10.85 to 6.9 us/op.""",
    "scale.linearity": """\
Per-op cost grew with size mostly through cyclic garbage collection (see the us/op target):
the collector's full passes scan the whole graph, more of it as it grows. `lower` pauses the
collector while it builds a plan, which removed most of the growth (log-log slope 1.12 ->
1.05).""",
}
