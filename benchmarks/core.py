"""Core benchmarks of daskgraph: fine-grained graphs, placement/lowering scale, and latency.

Run from the repository root::

    .venv/bin/python benchmarks/core.py [--repeats 5] [--json out.json] [--big]

Three measurements, each the median of ``--repeats`` timed repeats after one untimed warm-up:

1. **fine-grained** -- a graph of a few thousand tiny ops (``--chains`` chains of ``--length``
   elementwise ops, alternately adding and multiplying small constants, on 16x16 float32
   arrays fed from one placeholder, joined by ``add_n``), run three ways on the same embedded
   cluster (one CPU worker, no virtual GPUs):

   * ``dg.Session.run`` (one partition: one Dask task that runs every op in a lean loop);
   * the same ops as one Dask task per op, all restricted to the CPU worker
     (``client.get(dsk, keys, workers=[cpu], allow_other_workers=False)``);
   * a plain NumPy loop in this process.

   All three results are checked against each other. The headline ratio is
   ``one-Dask-task-per-op / daskgraph`` (the goal is >= 10x).

2. **scale** -- graph-build, placement (:func:`daskgraph.placement.place`) and lowering
   (:func:`daskgraph.lowering.lower`) time for graphs of 10k and 100k ops (1M with ``--big``)
   over one CPU and two virtual-GPU devices (hand-made :class:`daskgraph.topology.Device`
   objects, no cluster), with device scopes so that the plan has several partitions. The goal
   is placement + lowering of 100k ops in under 1 s.

3. **latency** -- ``Session.run`` of a one-op graph against ``client.submit(...).result()``
   and ``client.compute(delayed(...)).result()`` of the same single call on the same worker
   (median per call).

This is a script, not a test: it prints a table and ratios, and writes every repeat to JSON
with ``--json``.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np

SIZE = 16  # the arrays of the fine-grained and latency graphs are SIZE x SIZE float32
LOCAL = "/job:localhost/replica:0/task:0/device:"
SCALE_SCOPES = ("/cpu:0", "/gpu:0", "/gpu:1")


# -- helpers --------------------------------------------------------------------------------------
def fmt_time(seconds: float) -> str:
    if seconds >= 1.0:
        return f"{seconds:8.3f} s "
    if seconds >= 1e-3:
        return f"{seconds * 1e3:8.2f} ms"
    return f"{seconds * 1e6:8.1f} us"


def settle(client, timeout: float = 30.0) -> None:
    """Wait until the scheduler and the workers hold no tasks but the ones this client keeps
    on purpose (a session's programs resident on their workers), then collect garbage here and
    on the workers: so that the aftermath of one way (releasing thousands of keys) is not
    timed in the next one."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        held = set(client.futures)
        on_scheduler = client.run_on_scheduler(
            lambda dask_scheduler, held=held: sum(k not in held for k in dask_scheduler.tasks)
        )
        on_workers = client.run(
            lambda dask_worker, held=held: sum(k not in held for k in dask_worker.state.tasks)
        )
        if not on_scheduler and not any(on_workers.values()):
            break
        time.sleep(0.01)
    client.run(gc.collect)
    gc.collect()


def machine_info() -> dict[str, Any]:
    import dask
    import distributed

    import daskgraph

    return {
        "platform": platform.platform(),
        "machine": platform.machine(),
        "processor": platform.processor() or "unknown",
        "cpu_count": os.cpu_count(),
        "python": sys.version.split()[0],
        "dask": dask.__version__,
        "distributed": distributed.__version__,
        "numpy": np.__version__,
        "daskgraph": daskgraph.__version__,
    }


# -- 1. fine-grained ------------------------------------------------------------------------------
def chain_constants(n_chains: int) -> list[tuple[np.float32, np.float32]]:
    """(addend, factor) of every chain: small, and distinct per chain to catch mis-wiring."""
    return [
        (np.float32(0.01 * (c + 1) / n_chains), np.float32(0.99 - 0.001 * c))
        for c in range(n_chains)
    ]


def build_fine_graph(n_chains: int, length: int):
    """(graph, placeholder, fetch): ``n_chains`` chains of ``length`` Add/Mul ops, then AddN."""
    import daskgraph as dg

    graph = dg.Graph()
    with graph.as_default():
        x = dg.placeholder(dg.float32, shape=(SIZE, SIZE), name="x")
        ends = []
        for c, (addend, factor) in enumerate(chain_constants(n_chains)):
            a = dg.constant(addend, name=f"a{c}")
            m = dg.constant(factor, name=f"m{c}")
            y = x
            for j in range(length):
                y = dg.add(y, a) if j % 2 == 0 else dg.multiply(y, m)
            ends.append(y)
        total = dg.add_n(ends, name="total")
    return graph, x, total


def _add_n(*arrays: np.ndarray) -> np.ndarray:
    total = arrays[0]
    for a in arrays[1:]:
        total = np.add(total, a)
    return total


_FUNCS = {"Add": np.add, "Mul": np.multiply, "AddN": _add_n}


def dask_graph_per_op(graph, x_value: np.ndarray) -> tuple[dict, str, int]:
    """The same ops as a plain Dask graph, one ``(func, dep_key, const)`` task per op.

    Constants are inlined into the tasks that use them; the placeholder becomes a data key.
    Returns (graph, output key, number of op tasks).
    """
    dsk: dict[str, Any] = {}
    consts: dict[str, Any] = {}
    n_tasks = 0
    last = ""
    for op in graph.get_operations():
        if op.type == "Placeholder":
            dsk[op.name] = x_value
            continue
        if op.type == "Const":
            consts[op.name] = op.attrs["value"]
            continue
        args = [consts.get(t.op.name, t.op.name) for t in op.inputs]
        dsk[op.name] = (_FUNCS[op.type], *args)
        n_tasks += 1
        last = op.name
    return dsk, last, n_tasks


def numpy_loop(x_value: np.ndarray, n_chains: int, length: int) -> np.ndarray:
    """The same computation as a plain in-process NumPy loop."""
    ends = []
    for addend, factor in chain_constants(n_chains):
        y = x_value
        for j in range(length):
            y = np.add(y, addend) if j % 2 == 0 else np.multiply(y, factor)
        ends.append(y)
    return _add_n(*ends)


def bench_fine_grained(client, cpu_worker: str, args) -> dict[str, Any]:
    """The three ways, interleaved repeat by repeat so that a noisy machine hurts all alike."""
    import daskgraph as dg

    graph, x, total = build_fine_graph(args.chains, args.length)
    x_value = np.random.default_rng(0).standard_normal((SIZE, SIZE)).astype(np.float32)
    dsk, out_key, n_ops = dask_graph_per_op(graph, x_value)
    # the one-task-per-op warm-up runs a single chain: the same code paths, a 40th of the time
    warm_graph, _, _ = build_fine_graph(1, args.length)
    warm_dsk, warm_key, _ = dask_graph_per_op(warm_graph, x_value)

    def per_op(graph_dict: dict, key: str) -> np.ndarray:
        return client.get(graph_dict, key, workers=[cpu_worker], allow_other_workers=False)

    times: dict[str, list[float]] = {"daskgraph": [], "dask": [], "numpy": []}
    results: dict[str, Any] = {}
    with dg.Session(client, graph=graph) as sess:
        ways: dict[str, Callable[[], Any]] = {
            "daskgraph": lambda: sess.run(total, feed_dict={x: x_value}),
            "dask": lambda: per_op(dsk, out_key),
            "numpy": lambda: numpy_loop(x_value, args.chains, args.length),
        }
        ways["daskgraph"]()  # warm-ups: placement, lowering, worker imports
        per_op(warm_dsk, warm_key)
        ways["numpy"]()
        for _ in range(args.repeats):
            for name, fn in ways.items():
                settle(client)
                start = time.perf_counter()
                results[name] = fn()
                times[name].append(time.perf_counter() - start)
        # introspection only, to report the partition count; None if the internals change
        plans = list(getattr(sess, "_plans", {}).values())
        n_partitions = len(plans[0].plan.partitions) if plans else None

    np.testing.assert_allclose(results["daskgraph"], results["numpy"], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(results["dask"], results["numpy"], rtol=1e-5, atol=1e-5)
    return {
        "n_ops": n_ops,
        "graph_ops": len(graph),
        "partitions": n_partitions,
        "daskgraph_session_s": times["daskgraph"],
        "dask_task_per_op_s": times["dask"],
        "numpy_loop_s": times["numpy"],
    }


# -- 2. scale -------------------------------------------------------------------------------------
def scale_devices():
    from daskgraph.topology import Device

    return [
        Device(LOCAL + "CPU:0", "tcp://127.0.0.1:40001", "cpu"),
        Device(LOCAL + "GPU:0", "tcp://127.0.0.1:40002", "virtual-gpu"),
        Device(LOCAL + "GPU:1", "tcp://127.0.0.1:40003", "virtual-gpu"),
    ]


def build_scale_graph(n_ops: int, n_chains: int = 100, segments: int = 4):
    """About ``n_ops`` ops: ``n_chains`` chains, each cut into ``segments`` segments under
    device scopes that rotate over CPU:0, GPU:0 and GPU:1 (so edges cross devices and the
    plan has several partitions), every segment with its own two constants; then AddN."""
    import daskgraph as dg

    graph = dg.Graph()
    per_segment = max(3, n_ops // (n_chains * segments))
    with graph.as_default():
        x = dg.placeholder(dg.float32, shape=(SIZE, SIZE), name="x")
        ends = []
        for c in range(n_chains):
            y = x
            for s in range(segments):
                with dg.device(SCALE_SCOPES[(c + s) % len(SCALE_SCOPES)]):
                    a = dg.constant(np.float32(0.01))
                    m = dg.constant(np.float32(0.99))
                    for j in range(per_segment - 2):
                        y = dg.add(y, a) if j % 2 == 0 else dg.multiply(y, m)
            ends.append(y)
        total = dg.add_n(ends)
    return graph, x, total


def bench_scale(n_ops: int, repeats: int) -> dict[str, Any]:
    from daskgraph.lowering import lower
    from daskgraph.placement import place

    devices = scale_devices()
    build_s, place_s, lower_s = [], [], []
    info: dict[str, Any] = {}
    for i in range(repeats + 1):  # the first round is the warm-up
        gc.collect()
        t0 = time.perf_counter()
        graph, x, total = build_scale_graph(n_ops)
        t1 = time.perf_counter()
        placement = place(graph, devices)
        t2 = time.perf_counter()
        plan = lower(placement, [total], [x])
        t3 = time.perf_counter()
        if i:
            build_s.append(t1 - t0)
            place_s.append(t2 - t1)
            lower_s.append(t3 - t2)
        info = {
            "graph_ops": len(graph),
            "partitions": len(plan.partitions),
            "devices_used": len({p.device for p in plan.partitions}),
        }
        del graph, x, total, placement, plan
    place_lower = [p + w for p, w in zip(place_s, lower_s, strict=True)]
    return {
        **info,
        "build_s": build_s,
        "place_s": place_s,
        "lower_s": lower_s,
        "place_lower_s": place_lower,
    }


# -- 3. latency -----------------------------------------------------------------------------------
def bench_latency(client, cpu_worker: str, args) -> dict[str, Any]:
    import dask

    import daskgraph as dg

    graph = dg.Graph()
    with graph.as_default():
        x = dg.placeholder(dg.float32, shape=(SIZE, SIZE), name="x")
        c = dg.constant(np.float32(1.5), name="c")
        y = dg.add(x, c, name="y")
    x_value = np.ones((SIZE, SIZE), np.float32)
    c_value = np.float32(1.5)
    expected = x_value + c_value
    calls = args.calls

    def per_call(fn: Callable[[], Any]) -> Callable[[], float]:
        def run() -> float:
            times = []
            for _ in range(calls):
                start = time.perf_counter()
                result = fn()
                times.append(time.perf_counter() - start)
            np.testing.assert_allclose(result, expected)
            return statistics.median(times)

        return run

    def submit() -> np.ndarray:
        return client.submit(
            np.add, x_value, c_value, workers=[cpu_worker], allow_other_workers=False, pure=False
        ).result()

    def compute() -> np.ndarray:
        return client.compute(
            dask.delayed(np.add, pure=False)(x_value, c_value),
            workers=[cpu_worker],
            allow_other_workers=False,
        ).result()

    out: dict[str, Any] = {"calls_per_repeat": calls}
    with dg.Session(client, graph=graph) as sess:
        ways = {
            "daskgraph_session_run_s": per_call(lambda: sess.run(y, feed_dict={x: x_value})),
            "client_submit_s": per_call(submit),
            "client_compute_s": per_call(compute),
        }
        for run in ways.values():  # warm-up: placement and lowering are cached after it
            run()
        for key in ways:
            out[key] = []
        for _ in range(args.repeats):  # interleaved, as in the fine-grained case
            for key, run in ways.items():
                settle(client)
                out[key].append(run())
    return out


# -- report ---------------------------------------------------------------------------------------
def med(values: list[float]) -> float:
    return statistics.median(values)


def print_report(info: dict, results: dict, args) -> None:
    print()
    print("daskgraph core benchmarks")
    print(f"  machine : {info['platform']} ({info['machine']}), {info['cpu_count']} CPUs")
    print(
        f"  versions: python {info['python']}, dask {info['dask']}, "
        f"distributed {info['distributed']}, numpy {info['numpy']}, "
        f"daskgraph {info['daskgraph']}"
    )
    print(f"  medians of {args.repeats} repeats after a warm-up (min in brackets)")

    def row(name: str, values: list[float], extra: str = "") -> None:
        print(f"  {name:<44}{fmt_time(med(values))}  [{fmt_time(min(values)).strip():>9}]  {extra}")

    fine = results.get("fine_grained")
    if fine:
        n = fine["n_ops"]
        print()
        print(
            f"1. fine-grained: {args.chains} chains x {args.length} ops on {SIZE}x{SIZE} float32"
            f" = {n} op tasks (graph: {fine['graph_ops']} ops, daskgraph partitions:"
            f" {fine['partitions']}); one CPU worker"
        )
        for key, label in (
            ("daskgraph_session_s", "daskgraph Session.run"),
            ("dask_task_per_op_s", "one Dask task per op (client.get)"),
            ("numpy_loop_s", "plain NumPy loop (in-process)"),
        ):
            row(label, fine[key], f"{med(fine[key]) / n * 1e6:8.2f} us/op")
        dg_t = med(fine["daskgraph_session_s"])
        ratio = med(fine["dask_task_per_op_s"]) / dg_t
        print(f"  ratio one-Dask-task-per-op / daskgraph: {ratio:7.1f}x  (goal >= 10x)")
        print(f"  ratio daskgraph / NumPy loop          : {dg_t / med(fine['numpy_loop_s']):7.1f}x")

    scale = results.get("scale")
    if scale:
        print()
        print("2. scale: place() + lower() over CPU:0, GPU:0, GPU:1 (pure functions, no cluster)")
        print(
            f"  {'ops':>9} {'parts':>5} {'build':>11} {'place':>11} {'lower':>11}"
            f" {'place+lower':>11} {'us/op':>7}  goal"
        )
        for entry in scale:
            pl = med(entry["place_lower_s"])
            n = entry["graph_ops"]
            goal = ""
            if 90_000 <= n <= 110_000:
                goal = "OK (< 1 s)" if pl < 1.0 else "MISSED (>= 1 s)"
            print(
                f"  {n:>9} {entry['partitions']:>5} {fmt_time(med(entry['build_s']))}"
                f" {fmt_time(med(entry['place_s']))} {fmt_time(med(entry['lower_s']))}"
                f" {fmt_time(pl)} {pl / n * 1e6:7.2f}  {goal}"
            )

    lat = results.get("latency")
    if lat:
        print()
        print(f"3. latency: one-op graph (16x16 add), median per call of {lat['calls_per_repeat']}")
        for key, label in (
            ("daskgraph_session_run_s", "daskgraph Session.run"),
            ("client_submit_s", "client.submit(np.add, ...).result()"),
            ("client_compute_s", "client.compute(delayed(np.add)(...)).result()"),
        ):
            row(label, lat[key])
        dg_t = med(lat["daskgraph_session_run_s"])
        print(
            f"  ratio Session.run / client.submit : {dg_t / med(lat['client_submit_s']):5.2f}x,"
            f"  / client.compute : {dg_t / med(lat['client_compute_s']):5.2f}x"
        )
    print()


# -- cluster --------------------------------------------------------------------------------------
def start_cluster() -> tuple[Any, str]:
    """(cluster, note): ``local_cluster(virtual_gpus=0, processes=True)``, daskgraph's embedded
    cluster with one CPU worker process; if that cannot start, a one-worker ``LocalCluster``
    (which daskgraph maps to the CPU device too), with a note saying why."""
    from distributed import LocalCluster

    from daskgraph.cluster import local_cluster

    try:
        return local_cluster(virtual_gpus=0, processes=True), ""
    except Exception as exc:
        note = (
            f"local_cluster(virtual_gpus=0, processes=True) failed ({type(exc).__name__}: "
            f"{exc}); using distributed.LocalCluster(n_workers=1, processes=True) instead"
        )
    cluster = LocalCluster(
        n_workers=1,
        threads_per_worker=os.cpu_count() or 1,
        processes=True,
        host="127.0.0.1",
        dashboard_address=None,
    )
    return cluster, note


# -- main -----------------------------------------------------------------------------------------
def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=5, help="timed repeats (>= 5 advised)")
    parser.add_argument("--json", metavar="PATH", help="write every repeat to this JSON file")
    parser.add_argument("--big", action="store_true", help="also run the 1M-op scale case")
    parser.add_argument("--chains", type=int, default=40, help="fine-grained: chains")
    parser.add_argument("--length", type=int, default=100, help="fine-grained: ops per chain")
    parser.add_argument("--calls", type=int, default=30, help="latency: calls per repeat")
    parser.add_argument(
        "--only",
        choices=("fine", "scale", "latency"),
        action="append",
        help="run only these sections (repeatable; default: all)",
    )
    args = parser.parse_args(argv)
    if args.repeats < 1:
        parser.error("--repeats must be >= 1")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    sections = set(args.only or ("fine", "scale", "latency"))
    info = machine_info()
    results: dict[str, Any] = {}
    started = time.perf_counter()

    if "scale" in sections:
        sizes = [10_000, 100_000] + ([1_000_000] if args.big else [])
        results["scale"] = [{"n_ops": n, **bench_scale(n, args.repeats)} for n in sizes]

    if sections & {"fine", "latency"}:
        from distributed import Client

        cluster, note = start_cluster()
        if note:
            info["cluster_note"] = note
            print(f"note: {note}", file=sys.stderr)
        with cluster, Client(cluster, set_as_default=False) as client:
            client.wait_for_workers(1, timeout=60)
            workers = client.scheduler_info(n_workers=-1)["workers"]
            (cpu_worker,) = workers  # the embedded cluster without GPUs has one worker
            info["cpu_worker_threads"] = workers[cpu_worker].get("nthreads")
            if "fine" in sections:
                results["fine_grained"] = bench_fine_grained(client, cpu_worker, args)
            if "latency" in sections:
                results["latency"] = bench_latency(client, cpu_worker, args)

    info["wall_s"] = time.perf_counter() - started
    print_report(info, results, args)
    print(f"total wall time: {info['wall_s']:.1f} s")
    if args.json:
        payload = {"machine": info, "args": vars(args), "results": results}
        with open(args.json, "w") as f:
            json.dump(payload, f, indent=2)
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
