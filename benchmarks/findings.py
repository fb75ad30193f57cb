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
**The CPU worker's BLAS runs on one thread.** Dask's Nanny starts every worker process with
`OMP_NUM_THREADS=MKL_NUM_THREADS=OPENBLAS_NUM_THREADS=1` (`distributed.nanny.pre-spawn-environ`),
so although the embedded CPU worker has all cores as Dask threads, a partition's `matmul` runs on
one core while NumPy and TensorFlow use all of them. A `FULL_TRACE` of one run: the 18 MatMuls
take 154-159 ms each on the worker (2.9-3.0 s of a 3.0-3.1 s run) against 78 ms in the client
process. With the worker's OpenBLAS raised to all cores (the what-if row, done at run time with
`openblas_set_num_threads`), a MatMul takes 83-85 ms and the run 1.6-1.7 s against NumPy's
1.48 s. What remains is ~60-70 ms a run outside the ops (the 2 x 16 MB of feeds and the 16 MB
result go through the scheduler's `proxy`: see the feeds case) and the worker's own threads
sharing the two cores with BLAS.

*Fix in daskgraph:* give the CPU worker's BLAS the worker's threads. Passing `env=` to the
Nanny is too late (NumPy is loaded before it applies: measured, still one thread). Either start
the embedded cluster's `SubprocessWorker` with `distributed.nanny.pre-spawn-environ` set for the
CPU worker (the variables at its thread count; `cluster.py`), or, for any cluster, raise the
BLAS/OpenMP pools to the worker's `nthreads` once per worker process before the first CPU
partition runs (`threadpoolctl.threadpool_limits(nthreads)` in `execution.py` or the executor
actor's `__init__`). Then send the fast path's feeds and results directly (feeds case).""",
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
**Every instruction is built twice, and the garbage collector scans the growing graph.**
Place + lower of 100k ops: about 1.0 s (place 0.18 s, lower 0.81 s), against 0.61 s before
`lowering._with_frees` was added. cProfile (100k ops): `_with_frees` 0.49 s cumulative -- to
add the `free` slots it rebuilds each `Instruction` with `NamedTuple._replace` (99k calls,
0.31 s: `_replace` goes through `_make` and a dict of the fields); `emit` 0.22 s own time plus
0.27 s in its slot-list comprehension; `placement.place` 0.24 s; `placement._kernel_types`
0.21 s (a key tuple built per op before the cache lookup); `_needed_ops` 0.13 s; `_cut`
0.10 s. With the collector off, lowering 100k ops takes 0.47-0.56 s instead of 0.81-0.91 s:
it allocates a few objects per op and CPython's full collections scan the whole graph
meanwhile, more of it as the graph grows.

*Fix in daskgraph (`lowering.py`, `placement.py`):* compute the last readers while emitting
(the emitter already has every instruction's `args` and `out`) and build each `Instruction`
once with its `free` (or keep the frees as one tuple per program beside the instructions);
run `place` and `lower` with the collector paused (`gc.disable()` in a `try/finally`, or
`gc.freeze()` of the built graph); key the kernel-type cache without a per-op tuple.""",
    "scale.linearity": """\
Per-op cost grows with size mostly through cyclic garbage collection (see the us/op target):
the collector's full passes scan the whole graph, more of it as it grows. Pausing the
collector around `place` and `lower` in daskgraph removes most of the growth.""",
}
