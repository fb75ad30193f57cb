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
**Page faults on every op output, and 48 MB across a process boundary.** Fixed: Dask's nanny
starts workers with OpenBLAS limited to one thread (`execution.py` gives BLAS the CPU worker's
threads with `threadpoolctl`: 1.7x became 1.1x); large feeds went through the scheduler (the
fast path now sends them straight to the worker; the suite's client talks to workers
directly, as a session's own client does); and the nanny's `MALLOC_TRIM_THRESHOLD_=65536`
switches off glibc's dynamic mmap threshold, so each 16 MB MatMul output was a fresh `mmap`
with about 900 page faults (a MatMul 8-10% slower on the worker than in the client, which
faults about 60 times): the worker preload now sets the mmap threshold to 32 MiB and the trim
threshold to 64 MiB (`daskgraph.worker-malloc-mmap-threshold`), which brought 1.10-1.15x to
1.01-1.02x. What remains when it shows: the two 16 MB feeds in and the 16 MB result out (an
`A + B` run with the same transfers takes 40 ms against 3 ms in NumPy).

*If it regresses:* count the worker's minor page faults per op (`resource.getrusage` through
`client.run`) before looking elsewhere.""",
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
