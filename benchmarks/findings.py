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
**Moving 48 MB per run, and BLAS sharing the cores with the worker.** Two causes found and fixed:
Dask's nanny starts worker processes with OpenBLAS/OpenMP/MKL limited to one thread (the 18
MatMuls took 154-159 ms each instead of 78 ms; now `execution.py` gives BLAS the CPU worker's
threads with `threadpoolctl` before its first partition: 1.7-1.8x NumPy became 1.1x), and the
fast path relayed feeds through the scheduler (now large feeds are scattered straight to the
worker). What remains, about 0.15 s of a 1.5 s run: the two 16 MB feeds are sent to the worker
and the 16 MB result comes back (a process boundary NumPy and TensorFlow, in-process, do not
cross; about 50-80 ms on this machine), the scheduler round trip of a run that carries large
feeds (about 10 ms), and the worker's event loop and heartbeat threads competing with BLAS for
the two cores during 1.4 s of matmuls. On a larger machine the fixed costs shrink relative to
the work; with ``daskgraph.local.processes: false`` (an in-process CPU worker) there is no
copy at all.

*Next steps:* keep fed arrays that do not change between runs resident on the worker (TF's
`make_callable` with feeds held as variables), and pin BLAS to the cores not used by the
worker's I/O threads.""",
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
**The executor's per-op Python overhead, then the round trip.** A run of the 4,081-op program
is one call, so its time is the worker's instruction loop plus one round trip. The loop
(`execution._run`) takes 5.5-5.8 ms for this program, in the client process and on the worker
alike, against 2.3-2.4 ms for the bare NumPy loop: about 0.8 us of interpreter work per op on
top of NumPy's own ~0.6 us. Per op it builds an argument list with a comprehension (a function
call in Python 3.11), tests `stateful`/`deref`, calls the kernel through a Python wrapper
(`ops.math._add(xp, x, y)` -> `xp.add`) with `**attrs`, and tests `trace` twice. The round trip
adds 1.4-2 ms (through the scheduler's `proxy`: see the feeds case); TensorFlow's C++ executor
runs the same graph in 2-3 ms in-process.

*Fix in daskgraph (`execution.py`, `lowering.py`):* compile each program once, on the worker,
into a flat list of `(callable, argument slots, output slot)` with the array module bound in
(for NumPy, `Add`/`Mul`/... straight to `np.add`/`np.multiply`, no wrapper, no `**{}`), with
separate loops for traced, stateful and plain programs and fixed-arity calls
(`f(slots[a], slots[b])`) instead of a list per op. A prototype of that loop over the same
program takes 2.84 ms (NumPy floor 2.36 ms), which with a direct call to the worker puts the
run near 4 ms: within 2x of TensorFlow.""",
    "scale.us_per_op": """\
**Cyclic garbage collection while a million small objects are made.** 100k ops are placed and
lowered in 0.87 s (8.7 us/op, the goal of the core issue); the 1M-op size, timed once without
a warm-up, came to 10.85 us/op. Each op's instruction is now built once (the frees are worked
out while the program is assembled), and the per-op key tuples and repeated device-string
parses are gone. With the collector off, lowering 100k ops takes about 0.47 s instead of
0.68 s: CPython's full collections scan the whole graph while place() and lower() allocate a
few objects per op, more of it as the graph grows, which is also why us/op rises with size.

*Next step:* run place() and lower() with the collector paused (`gc.disable()` in a
try/finally, or `gc.freeze()` of the built graph), which the profile says brings 1M ops under
8 us/op.""",
    "scale.linearity": """\
Per-op cost grows with size mostly through cyclic garbage collection (see the us/op target):
the collector's full passes scan the whole graph, more of it as it grows. Pausing the
collector around `place` and `lower` in daskgraph removes most of the growth.""",
}
