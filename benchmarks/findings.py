"""What holds a missed target back: profile findings, written by hand, keyed by target.

``docs/benchmarks.md`` is generated; for every target a run misses, it prints the paragraph
found here under the target's key (see the ``key`` of each target in
``benchmarks/results/latest.json``), or says that none is recorded yet. Paragraphs are
Markdown. A paragraph stays here when its target is met (it is then not printed), so that a
regression finds its explanation again. Regenerate the page after editing this file, without
re-running the suite: ``.venv/bin/python -m benchmarks.report --update-docs``.

The numbers quoted are from profiles on the 2-core machine the suite was written on.
"""

from __future__ import annotations

FINDINGS: dict[str, str] = {
    "trivial.vs_tensorflow": """\
**Six thread and process wake-ups and 1.3 ms of message (de)serialisation, on the actor
path; a plain call now.** Profile of `y = x * 2 + 1` on 4 float32, 2 x 400 runs back to back
on the actor path (`dispatch.FastPath` calling a `PartitionExecutor` on a worker process,
daad345): `time.monotonic_ns` stamps (`CLOCK_MONOTONIC`, one clock for every process) around
`TCP.write`/`read`, `to_frames`/`from_frames`, `Worker.actor_execute`, `_run_actor` and
`execute_partition` in the worker (installed by `client.run`) and around the session's and
the actor future's methods in the client; medians, with other jobs keeping the 2 cores at a
load average near 2 (absolute times perhaps 1.5x a quiet machine's). A run took 3.25-3.57 ms:

| hop | µs |
|---|---:|
| client Python: `run()` checks, fetches, feeds 60; plan 15; liveness 19; actor call 38 | 147 |
| client thread hands the call to its event loop (`add_callback`, the loop wakes) | 260 |
| client loop serialises the call (`to_frames`, four `to_serialize` arguments) | 560 |
| socket, the worker's loop wakes and reads the frames | 395 |
| worker deserialises the call | 365 |
| worker dispatches to `actor_execute` | 20 |
| worker loop hands off to the actor thread (`run_in_executor`; p10 130, p90 510) | 320 |
| actor thread to `execute_partition` | 36 |
| `execute_partition` (two NumPy ops on 4 floats) | 78 |
| actor thread back to the loop, reply write starts | 128 |
| worker serialises the reply | 210 |
| socket, the client's loop wakes and reads the reply | 338 |
| client deserialises the reply | 165 |
| result set on the actor future, client thread wakes (`sync`'s `threading.Event`) | 20 + 234 |
| after the result, until `Session.run` returns | 26 |

Message (de)serialisation is 1.3 ms of it: distributed serialises every `to_serialize`
argument on its own (about 100 µs each here, mostly `context_meter` and dispatch); in
isolation the call message costs 466 µs to `to_frames` and 274 µs from them, against 88 and
39 µs with the four arguments as one pickled `bytes` argument (the reply: 150 + 90 µs against
61 + 25). The six hand-offs between threads and processes cost 1.7 ms together, socket and frame
reads included (130-400 µs each on this shared VM); the program itself 78 µs.

*Now (f88d1b5):* the embedded cluster's CPU worker lives in the client's process
(`daskgraph.local.cpu-in-process`), and a one-partition plan on it is a plain call in the
caller's thread: 74 µs a run (86 µs under the stamps): `run()` checks, fetches and feeds 28;
plan lookup 7.5; to `InProcessDevices.run` 5; worker lookup and the feed copy 9;
`run_partition` 22 (its two NumPy ops on 4 floats about 3 µs of it); back to the caller 10.
TensorFlow's `Session.run` takes 300-450 µs on the same loaded machine. Left in that path:
`importlib.import_module(program.backend)` on every run (1.5 µs) and four `dask.config.get`
a run (1.3 µs each). GPU devices and clusters by address then took the actor path, where
one pickled argument each way would save about 0.8 ms a call: done since (3b516f9,
feeds and results up to 64 KiB travel as one pickled `bytes`), 4.38 -> 3.63 ms a call on a
virtual-GPU process worker, interleaved. Last full run: daskgraph 89 us, TensorFlow 453 us
(0.20x).

*Since issue 33* the executor actor and `dispatch.FastPath` are gone: a one-partition plan is a
one-device compiled step, on a worker process of this machine through its step channel
(0.29-0.38 ms a run on a virtual-GPU process worker, against 1.78-2.37 ms by the actor),
elsewhere over Dask's comm; the in-process CPU path (40-48 us) is unchanged.

*If it regresses:* cProfile 3,000 runs in one process (the in-process path has no other
thread); for a worker process, stamp the hops of the step channel and the worker's executor
as above.""",
    "first_run.total": """\
**Graph build in Python, then lowering.** The last full run (`make bench`, 2026-11-23):
build 12.9 s, first `Session()` 0.08 s, first run 12.7 s (place + lower 6.4 s, compiling and
running the 102 parts 6.3 s), second run 2.2 s: 25.7 s in all, against 72 s (build 22.9 s,
first run 48.9 s) when this issue began. What was cut: the first run is a plain call on the
in-process CPU worker (no program pickled, shipped or scheduled: the 100 chains are split
into 102 parallel parts, which before went through the scheduler as a 40.8 MiB graph), the
parts run on the worker's own threads, compiling a program pauses the cyclic GC and binds
kernels by id, and placement and lowering take 0.8 s and 4.8 s instead of 2.0 s and 7.6 s
(one pass per concern over lists indexed by op id, plans unchanged). Build: about 8.5 us an
op of Python (ten calls and four objects an op: the op, its tensor, its inputs tuple and
outputs list) and 4.2 s of cyclic garbage collection (14 full passes over the growing graph),
which a library cannot switch off around its caller's own loop. Still, TensorFlow 1 builds
the same graph several times slower (its Python op construction costs tens of microseconds
an op).

*Next steps:* fewer GC-tracked objects per op (a graph holding its ops as columns, tensors
made on demand), and an instruction format lowering can emit without a tuple subclass per op;
both are deeper changes than this issue made.""",
    "big_graph.time": """\
**Python per op, and the cyclic collector walking the graph as it grows.** 1M ops (CPU time,
2-core VM; issue 32 began at build 13.7 s + first run 9.7 s, wall, quiet moment): build
7.8-8.5 s, of which about 3.5 s are the 15 full collections Python makes while the graph grows
(each walks the 4 GC-tracked objects an op: the op, its tensor, its inputs tuple and outputs
list), the rest about 5 us an op of Python (name uniquing, scopes, the op and tensor);
first run 5.8-7.5 s: placement 0.3 s, lowering 3-3.5 s (emitting 1M instructions, the branch
analysis of `split_parallel`, fusion planning 1.7 s), the first run of the 20,000 fused
kernels op by op (the fused kernels' rent-or-buy policy: 1M NumPy calls, 1.1 s), and one full
collection that the graph's growth had made due (0.6 s). What was cut: tensors share their
shape objects (one TensorShape per distinct shape, not a TensorShape, a list, Dimensions and a
dict per tensor), ops without control inputs or attributes share read-only empty ones,
lowering frees its per-op lists before the collector is turned on again, fusion planning
keeps one reader per slot as an int (not a set) and looks kernel names up once per kernel,
and kernels of one structure share one loop source.

*Next steps:* an op's outputs as a slot rather than a list (one GC-tracked object an op
less), fusing while emitting (no million-instruction list), names uniqued without a second
lower-cased string per op.""",
    "big_graph.rss": """\
**Per op: about 575 B for the graph, 300 B at lowering's peak, 100 B kept by the plan.** At
1M ops (issue 32 began at 2.11 GB): 0.66 GB after the build (the op 112 B, its tensor and
outputs list 120 B, inputs tuple 56 B, its name and its lower-cased unique key 166 B, two
dict entries about 90 B), 1.11-1.16 GB after the first run (the fused kernels' steps, 64 B an op,
and memory freed by lowering that the allocator keeps), 1.33-1.39 GB at the peak, when the second
run starts compiling the fused kernels with Numba (about 200 MB, the import and LLVM).""",
    "compute.vs_numpy": """\
**Page faults on every op output, and 48 MB across a process boundary.** Fixed: Dask's nanny
starts workers with OpenBLAS limited to one thread (`execution.py` gives BLAS the CPU worker's
threads with `threadpoolctl`: 1.7x became 1.1x); large feeds went through the scheduler (the
fast path of the time then sent them straight to the worker, as compiled steps do now, host
arrays of 1 MiB or more through shared memory on one machine; the suite's client talks to
workers directly, as a session's own client does); and the nanny's `MALLOC_TRIM_THRESHOLD_=65536`
switches off glibc's dynamic mmap threshold, so each 16 MB MatMul output was a fresh `mmap`
with about 900 page faults (a MatMul 8-10% slower on the worker than in the client, which
faults about 60 times): the worker preload now sets the mmap threshold to 32 MiB and the trim
threshold to 64 MiB (`local.WORKER_MALLOC_MMAP_THRESHOLD`), which brought 1.10-1.15x to
1.01-1.02x. What remains when it shows: the two 16 MB feeds in and the 16 MB result out (an
`A + B` run with the same transfers takes 40 ms against 3 ms in NumPy).

*If it regresses:* count the worker's minor page faults per op (`resource.getrusage` through
`client.run`) before looking elsewhere.""",
    "feeds.through_scheduler": """\
*History: the executor actor and `dispatch.FastPath` went in issue 33. A one-partition plan is
now a one-device compiled step sent straight to its worker (a step channel or Dask's comm;
host feeds of 1 MiB or more through shared memory on one machine), and the scheduler's path
sends feeds of at least `daskgraph.direct-feed-bytes` ahead to the workers' step services
(`daskgraph_step_stage`). What was found then:*

**The one-partition fast path went through the scheduler.** `dispatch.FastPath` ran a plan of
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
send feeds of at least `DIRECT_FEED_BYTES` with `scatter(direct=True)` first and
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

*Since f88d1b5* the run is a plain call on the in-process CPU worker (no round trip: see the
trivial-graph finding), and the NumPy calls are what is left. Back to back, 3 x 60 runs
interleaved with TensorFlow's (load average near 1.6): daskgraph 6.2-6.7 ms, TensorFlow
4.3-4.6 ms, 1.42-1.57x. Of daskgraph's 6.7 ms, 6.5 ms is the compiled loop itself: 4,000
`np.add`/`np.multiply` calls on 16x16 float32 with a 0-d constant cost 1.45 us each here, so
the loop is at NumPy's floor; the same call with a preallocated `out=` array costs 0.94 us.

*Since b896199* a program that keeps running is written out as one straight-line Python
function (`daskgraph/runtime/worker/codegen.py`: locals instead of the slot list, no step
unpacking),
compiled on a background thread once the loop has spent as long on it as compiling takes:
6.4 -> 4.8 ms for this program, interleaved. Recycling dead slots as `out=` buffers was
tried and measured no gain (the saved allocation is eaten by the keyword argument). Last
full run: daskgraph 5.17 ms, TensorFlow 7.12 ms (min 3.98 ms), NumPy loop 7.95 ms: 0.73x.""",
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
    "training.vs_tensorflow": """\
**OpenBLAS's second thread, on a machine other processes share.** cProfile of 200 one-device
steps (other jobs keeping the load average at 3.5 on the 2 cores): 5.8 s, 4.3 s of it in the
five `MatMul` kernels, 4.3 ms a call on average for products of at most 2.1 M multiply-adds
(`x @ w1`, 256x64 by 64x128, and its weight gradient `x^T @ dh`). On a quiet machine the same
step takes 1.75 ms (min 1.52), and its 66 kernels, traced, add up to 1.67 ms, the two large
matmuls 0.21 ms of it: the framework's own per-step cost (checks, plan lookup, feed copies,
the instruction loop, one `apply_once` per stateful op) is about 0.1-0.2 ms. The in-process
CPU worker runs kernels in the caller's thread with the process's BLAS, and OpenBLAS splits
such a product over both cores: the calling thread waits for the second one, and when another
process holds that core, for the OS to schedule it (a time slice, milliseconds). Interleaved,
5 x 200 steps each at load 3.6: daskgraph 20.6 ms a step (min 4.5), daskgraph with OpenBLAS
limited to one thread (`threadpoolctl`, the what-if row) 3.2 ms (min 2.8), TensorFlow 3.2 ms
(min 2.7); in rounds where the other jobs left the cores free, all three took 2.1-2.5 ms.
TensorFlow's steps slow down 1.3-1.5x under the same load. So the target's verdict on this
machine follows the other jobs' load: about 1x when it is quiet, 2-10x when it is not.

*Next step (execution policy, not a kernel):* give small products one BLAS thread on the
in-process CPU worker, e.g. `openblas_set_num_threads(1)` around matmuls below a few MFLOP
(about 0.9 us a call through `ctypes`, against 40 us for a `threadpoolctl` limit), or the
executor's thread count per op by cost as Eigen does. What is left then are NumPy kernels
TensorFlow fuses: `SparseSoftmaxCrossEntropyWithLogits` (label check, log-softmax,
`take_along_axis`) 188 us, `ReluGrad` (`where` with a `zeros_like`) 153 us, `ApplyAdam` on w1
(nine temporaries) 127 us, a third of the quiet step's kernel time.

*Timed as users run it (issue 24's harness: TensorFlow in a process of its own, no settling
between steps).* TensorFlow's step is 0.56-0.83 ms there, not the 3.1-3.2 ms measured beside
the cluster's threads in the benchmark's process. daskgraph's one-device step: in a run where
other processes used 53% of the CPUs before it, 0.70-1.9 ms (median 0.90 ms, 1.25x
TensorFlow's); in one where they used 100%, 1.06 ms in the round where the cores were free
and 4.5-17 ms in the others (18x). With one BLAS thread: 0.66-0.87 ms in both runs (0.95x
and 1.07x). The 1.2x target needs the one-thread policy for small products above.

The tower ways are not in the target: a sync step of 4 towers (traced, load 4.5) is 8
partitions with about 5 ms of kernels in 110-280 ms; the towers' partitions (16 ops, 1 ms
each) start at +84, +114, +130 and +157 ms, one after the other, and the update at +212 ms:
the time goes to Dask task hand-offs and transfers among 6 processes (the scheduler in the
client's) on 2 cores, not to compute.""",
    "multi.row_a": """\
**Step channels: the client writes one message to each GPU worker's local socket from the
calling thread, and reads the reply there; no event loop, no Dask framing.** A repeated step is
one-round (the products are read only by the `add_n` on `/cpu:0`, in the client's process): the
client encodes a message per GPU worker (the run's number, the plan's token), writes it to that
worker's step channel, the worker's channel thread ran the matmul (since issue 33 it hands the
step to the worker's executor, one hand-off: about +17%, 971 -> 1135 us a two-device step on
the loaded machine) and writes back the 16 KiB product, and the client runs the `add_n` in the
calling thread. Measured (2 cores, six runs of
`--only multi-device`, each a median of 5 repeats): 0.53-0.83 ms a step, against 1.44 ms
through Dask's comm (the last session's compiled steps), 17-22 ms on the scheduler's path and
0.15-0.27 ms for TensorFlow's logical devices (2.3-3.6x). Why Dask's comm cost more: a bare
`Client.rpc` round trip to two workers side by side takes 0.76-0.95 ms here from the calling
thread (0.15-0.2 ms of it the hand-off to the client's event loop and back), before any work; a
`multiprocessing.connection` round trip to two worker processes with the same matmul takes 0.19
ms. What is left over TensorFlow: two processes to wake on two cores, pickling a 16 KiB product
each way, and the session's own per-run work (plan lookup, feeds, fetches: about 0.1 ms). With
the virtual GPUs as threads of the client's process (`daskgraph.local.processes: false`), a
step whose partitions are all small runs them one after the other in the calling thread:
0.13-0.16 ms.""",
    "multi.row_c_vs_tensorflow": """\
**Four tower processes and the client on two cores; each tower's parameters and gradients
cross processes every step.** A sync step of 4 towers is one-round: the client's own CPU
worker reads the parameters and splits the batch in the calling thread (22 us), the client
writes each tower's message (about 55 KiB: its shard and the 4 parameters) to the tower's step
channel, each tower runs its 16 ops of forward and backward pass (0.175 ms of CPU alone,
0.4-0.5 ms of wall time when four share two cores) and writes back 38 KiB of gradients, and
the client averages and applies them with Adam in the calling thread (50 ops, 0.17 ms).
Measured: 3.2-5.2 ms a step in six runs (3.2-3.9x TensorFlow's 0.86-1.44 ms), against
4.64 ms through Dask's comm and 35-46 ms on the scheduler's path; 1 and 2 towers: 1.27-1.81
and 1.63-2.26 ms. The CPU work of a step adds up to about 1.5 ms (4 x 0.175 ms of tower
kernels, 0.6 ms in the client, 0.05 ms of pickling per tower), which two cores could finish
in 0.8 ms; the rest is processes waiting for a core: a tower woken by its message preempts
the client before it has written the next one (a 55 KiB write takes 25 us of CPU, 110-130 us
of wall time on average), and the towers preempt each other. TensorFlow runs the same kernels
in one process on its own thread pool, with tensors passed by pointer.

*The way there:* fewer CPU microseconds per tower: the towers' 16 ops as a few fused kernels
(issue 25's elementwise chains) and the Adam update as one; on real GPUs a tower's step is
milliseconds of compute beside the 1-2 ms of messaging. With the virtual GPUs as threads of
the client's process, the whole step runs in the calling thread: 1.6-2.1 ms, TensorFlow's
order of time, but the default keeps a process per GPU worker, as real GPUs need.""",
    "towers.concurrency": """\
**Two cores shared with the client, the scheduler and other jobs; a two-device run's fixed
cost.** The towers do run at the same time: a traced run of two towers (`RunOptions(
trace_level=FULL_TRACE)`, load average 4.5 from other jobs) shows both partitions starting
within 2 ms of each other (+16 and +18 ms) and ending at +148 and +159 ms, where one tower
alone takes 93-96 ms and two on one virtual GPU 177-185 ms (ratios 1.4-1.6 and 1.9). Two
things keep the ratio above 1: each virtual GPU is a worker process of one thread, and the 2
cores also serve the client and scheduler process and any other job, so two towers get two
cores only on an otherwise idle machine (each took about 130 ms instead of 95 here; at load
8 two towers in one run took 2.2x one tower, as long as one after the other); and a run over
two devices goes through the Dask scheduler (one task per partition): 20-25 ms for a trivial
two-device graph against 4.5-5 ms for a one-device run (then an actor call to the worker; both
are compiled steps since), about 0.15-0.2 of the ratio at this tower size. Re-run it on a
quiet machine (`--only training`),
or with bigger towers (`--tower-size 1024`) to shrink the fixed cost's share.""",
    "warm_up.warm_vs_tensorflow": """\
**No kernel cache yet: a "warm" process compiles everything again, and its loop runs op by op
until the background compile thread delivers.** Measured before issue 34's cache (branch
i34-bench, 2 cores at a load average of 7-10 from other jobs): the cold and the warm process
alike run 10-30 ms a step (3.4 ms on a quieter machine) until the fused kernel arrives, 3-7 s
into the loop, then 0.25-0.26 ms against TensorFlow's 2.9-3.2 ms (0.08x). The slowest second
from the second on is an op-by-op second: 8.8x TensorFlow's step. A persistent kernel cache
(`daskgraph.cache-dir`) lets the warm process load the kernel in milliseconds instead.""",
    "warm_up.cold_fast_within": """\
**The chain's kernel is compiled on one background thread that the run loop starves of the
GIL.** Before issue 34, on 2 cores at a load average of 7-10, the cold loop got fast 3-7 s
into the loop (issue 34 measured about 20 s alone); until then it runs op by op.""",
    "session_ready.cold": """\
**`Session()` is all of it: starting the embedded cluster's 4 virtual GPU worker processes.**
Before issue 34 (branch i34-bench, 2 cores, load average 7-10 from other jobs): the first
`Session()` took 7.3-15.3 s, its first run 0.04-0.13 s, `import daskgraph` 0.2-0.3 s. Each
worker process starts from scratch and imports Dask, NumPy and every daskgraph module (issue
34: 72 modules, 0.9 s on top of Dask and NumPy); a warm template process (a forkserver with
the heavy modules loaded) and workers that import only their ops' kernels are the fix.""",
    "session_ready.warm": """\
As the cold cache's: before issue 34 the cache changes nothing at start-up (7.3-11.8 s on 2
cores at a load average of 7-10); see the cold row.""",
}
