"""A^n + B^n, TensorFlow's classic device-placement example: daskgraph against plain CuPy.

GPU mode (the default) needs an NVIDIA GPU, CuPy and nvidia-ml-py. A and B are N x N float32
matrices (N = 10000), fed through placeholders under ``/gpu:0``; each is raised to the n-th
power (n = 10) by n - 1 repeated matrix products on the GPU, and ``add_n`` sums the two powers
under ``/cpu:0``, as in TensorFlow's example. The baseline does the same work in plain CuPy in
this process, transfers included: ``cp.asarray`` of the inputs, the same chain of products,
``cp.asnumpy`` of the sum.

CPU mode (``--cpu``, no GPU needed) runs the same graph entirely under ``/cpu:0``
(N = 2000 by default) against NumPy in this process.

Both sides multiply in the same precision: ``--tf32 off|on`` sets ``CUPY_TF32`` (which CuPy
reads when it is imported) in this process's environment before CuPy is imported here and
before the session starts its GPU worker, whose process inherits it; the value the worker sees
is reported.

Reported, for each way: the median (and minimum) of ``--repeats`` timed runs after
``--warmup`` untimed ones, the ways taking turns; the ratio daskgraph / baseline; the achieved
TFLOP/s, end to end (2(n - 1) products of 2 N^3 flops each), against the device's peak
(``--peak``; default: H100 SXM, 67 TFLOP/s FP32 without tensor cores, 495 TFLOP/s dense TF32);
and the bytes copied host <-> device, measured from a traced run's ``DeviceStepStats``, against
what the placement implies (both powers leave the GPU for the CPU's ``add_n``) and the minimum
(the two inputs in, one sum out). The two results are checked against each other.

Run::

    .venv/bin/python benchmarks/matpow.py                  # GPU: 10000 x 10000, n = 10
    .venv/bin/python benchmarks/matpow.py --tf32 on
    .venv/bin/python benchmarks/matpow.py --cpu            # CPU: 2000 x 2000, n = 10
    .venv/bin/python benchmarks/matpow.py --cpu --json out.json   # '--json -': to stdout
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

if not __package__:  # run as `python benchmarks/matpow.py`: make the benchmarks package importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks.compute_bound import inputs, numpy_way  # the same A^n + B^n reference

LOCAL = "/job:localhost/replica:0/task:0/device:"
GPU0 = LOCAL + "GPU:0"
#: H100 SXM peaks, TFLOP/s: FP32 on CUDA cores, and TF32 on tensor cores (dense)
PEAK_FP32 = 67.0
PEAK_TF32 = 495.0
#: relative tolerance between the two ways' results (same precision, different summation order)
RTOL = 1e-3


# -- the computation, each way -------------------------------------------------------------------
def build_graph(size: int, n: int, power_device: str):
    """(graph, A, B, A^n + B^n, [A^n, B^n]): the powers under ``power_device``, the sum on
    the CPU. Each power is n - 1 products ``m @ (m @ (... @ m))``, as TensorFlow's example."""
    import daskgraph as dg

    graph = dg.Graph()
    with graph.as_default():
        powers, feeds = [], []
        with dg.device(power_device):
            for name in ("A", "B"):
                m = dg.placeholder(dg.float32, (size, size), name=name)
                result = m
                for _ in range(n - 1):
                    result = dg.matmul(m, result)
                feeds.append(m)
                powers.append(result)
        with dg.device("/cpu:0"):
            total = dg.add_n(powers, name="total")
    return graph, feeds[0], feeds[1], total, powers


def cupy_way(cp: Any, a: np.ndarray, b: np.ndarray, n: int) -> np.ndarray:
    """The same work on the GPU, transfers included; ``asnumpy`` waits for the GPU."""
    da, db = cp.asarray(a), cp.asarray(b)
    pa, pb = da, db
    for _ in range(n - 1):
        pa = da @ pa
    for _ in range(n - 1):
        pb = db @ pb
    return cp.asnumpy(pa + pb)


# -- timing ----------------------------------------------------------------------------------------
def time_ways(
    ways: dict[str, Callable[[], Any]], repeats: int, warmup: int
) -> tuple[dict[str, list[float]], dict[str, Any]]:
    """Warm every way up, then time them taking turns; (seconds per way, last result per way)."""
    results: dict[str, Any] = {}
    for _ in range(warmup):
        for key, fn in ways.items():
            results[key] = fn()
    times: dict[str, list[float]] = {key: [] for key in ways}
    for _ in range(repeats):
        for key, fn in ways.items():
            results[key] = None  # let the previous result go before timing
            gc.collect()
            start = time.perf_counter()
            results[key] = fn()
            times[key].append(time.perf_counter() - start)
    return times, results


def way_record(seconds: list[float], flops: float, peak: float | None) -> dict[str, Any]:
    median = statistics.median(seconds)
    tflops = flops / median / 1e12
    return {
        "times_s": seconds,
        "median_s": median,
        "min_s": min(seconds),
        "tflops": tflops,
        "percent_of_peak": 100.0 * tflops / peak if peak else None,
    }


def traced_copies(sess: Any, fetch: Any, feeds: dict) -> dict[str, Any]:
    """Bytes each partition of one traced run copied host <-> device, and the totals."""
    import daskgraph as dg

    metadata = dg.RunMetadata()
    trace = dg.RunOptions(trace_level=dg.RunOptions.FULL_TRACE)
    sess.run(fetch, feeds, options=trace, run_metadata=metadata)
    partitions = [
        {
            "device": s.device,
            "ops": len(s.node_stats),
            "host_to_device": s.host_to_device_bytes,
            "device_to_host": s.device_to_host_bytes,
        }
        for s in metadata.step_stats.dev_stats
    ]
    return {
        "host_to_device": sum(p["host_to_device"] for p in partitions),
        "device_to_host": sum(p["device_to_host"] for p in partitions),
        "partitions": partitions,
    }


def worker_environment(names: tuple[str, ...] = ("CUPY_TF32",)) -> dict[str, str | None]:
    """Run on a worker: the environment variables it sees (pickled by value from __main__)."""
    import os

    return {name: os.environ.get(name) for name in names}


# -- the two modes ---------------------------------------------------------------------------------
def run_gpu(args: argparse.Namespace) -> dict[str, Any]:
    from daskgraph.cluster.gpus import visible_gpus

    found = visible_gpus()
    if not found:
        raise SystemExit(
            "matpow: GPU mode needs an NVIDIA GPU, and none was found (no NVIDIA driver, or NVML "
            "through nvidia-ml-py is missing, or CUDA_VISIBLE_DEVICES hides them all). "
            "Run with --cpu to compare daskgraph with NumPy on the CPU."
        )
    # CuPy reads CUPY_TF32 when imported; the GPU worker inherits this process's environment
    os.environ["CUPY_TF32"] = "1" if args.tf32 == "on" else "0"
    try:
        import cupy as cp
    except ImportError:
        raise SystemExit(
            "matpow: GPU mode needs CuPy: pip install -e '.[cuda12]' (or '.[cuda13]')."
        ) from None
    import dask

    import daskgraph as dg

    size, n = args.size or 10_000, args.n
    peak = args.peak or (PEAK_TF32 if args.tf32 == "on" else PEAK_FP32)
    a_value, b_value = inputs(size)
    graph, a, b, total, _ = build_graph(size, n, "/gpu:0")
    feeds = {a: a_value, b: b_value}
    config = dg.SessionConfig(gpu_options=dg.GPUOptions(visible_device_list="0"))
    with dask.config.set({"daskgraph.virtual-gpus": 0}):
        sess = dg.Session(graph=graph, config=config)
    try:
        gpu_worker = {d.name: d.worker for d in sess.list_devices()}[GPU0]
        seen = sess.client.run(worker_environment, workers=[gpu_worker])[gpu_worker]
        ways = {
            "daskgraph": lambda: sess.run(total, feeds),
            "cupy": lambda: cupy_way(cp, a_value, b_value, n),
        }
        times, results = time_ways(ways, args.repeats, args.warmup)
        copies = traced_copies(sess, total, feeds)
    finally:
        sess.close()
    record = common_record(args, "gpu", size, n, peak, times, results, "cupy")
    record.update(
        device=found[0].describe(),
        tf32=args.tf32 == "on",
        cupy_tf32_client=os.environ["CUPY_TF32"],
        cupy_tf32_gpu_worker=seen.get("CUPY_TF32"),
        cupy_version=cp.__version__,
        bytes=gpu_bytes(size, copies),
    )
    return record


def gpu_bytes(size: int, copies: dict[str, Any]) -> dict[str, Any]:
    """A GPU record's ``bytes``: the copies measured (:func:`traced_copies`), against what the
    placement implies, the minimum, and the CuPy baseline's, for ``size`` x ``size`` float32."""
    matrix = size * size * 4
    return {
        "measured_daskgraph": copies,
        "placement_implies": {
            "host_to_device": 2 * matrix,
            "device_to_host": 2 * matrix,
            "why": "A and B are fed to GPU:0; A^n and B^n both leave it for add_n on CPU:0",
        },
        "minimum": {
            "host_to_device": 2 * matrix,
            "device_to_host": matrix,
            "why": "the two inputs in, the sum out (add_n on the GPU, as the CuPy baseline)",
        },
        "cupy_baseline": {"host_to_device": 2 * matrix, "device_to_host": matrix},
    }


def run_cpu(args: argparse.Namespace) -> dict[str, Any]:
    import dask

    import daskgraph as dg

    size, n = args.size or 2000, args.n
    a_value, b_value = inputs(size)
    graph, a, b, total, _ = build_graph(size, n, "/cpu:0")
    feeds = {a: a_value, b: b_value}
    config = dg.SessionConfig(device_count={"GPU": 0})
    with dask.config.set({"daskgraph.virtual-gpus": 0}):
        sess = dg.Session(graph=graph, config=config)
    try:
        cpu_worker = sess.list_devices()[0].worker
        blas_env = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
        seen = sess.client.run(worker_environment, blas_env, workers=[cpu_worker])[cpu_worker]
        ways = {
            "daskgraph": lambda: sess.run(total, feeds),
            "numpy": lambda: numpy_way(a_value, b_value, n),
        }
        times, results = time_ways(ways, args.repeats, args.warmup)
        copies = traced_copies(sess, total, feeds)
    finally:
        sess.close()
    record = common_record(args, "cpu", size, n, args.peak, times, results, "numpy")
    record.update(
        device=f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs",
        cpu_worker_blas_environment=seen,
        bytes={
            "measured_daskgraph": copies,
            "placement_implies": {"host_to_device": 0, "device_to_host": 0, "why": "no GPU"},
            "minimum": {"host_to_device": 0, "device_to_host": 0, "why": "no GPU"},
        },
    )
    return record


def common_record(
    args: argparse.Namespace,
    mode: str,
    size: int,
    n: int,
    peak: float | None,
    times: dict[str, list[float]],
    results: dict[str, Any],
    baseline: str,
) -> dict[str, Any]:
    import dask
    import distributed

    import daskgraph

    matmuls = 2 * (n - 1)
    flops = matmuls * 2.0 * size**3
    got, want = results["daskgraph"], results[baseline]
    error = float(np.max(np.abs(got - want) / np.maximum(np.abs(want), np.finfo(np.float32).tiny)))
    ways = {key: way_record(seconds, flops, peak) for key, seconds in times.items()}
    return {
        "benchmark": "matpow",
        "mode": mode,
        "summary": f"A^{n} + B^{n}, {size}x{size} float32, {matmuls} matmuls "
        f"({flops / 1e12:.3g} TFLOP), sum on /cpu:0",
        "size": size,
        "n": n,
        "matmuls": matmuls,
        "flops": flops,
        "repeats": args.repeats,
        "warmup": args.warmup,
        "peak_tflops": peak,
        "baseline": baseline,
        "ways": ways,
        "ratio": ways["daskgraph"]["median_s"] / ways[baseline]["median_s"],
        "results_match": bool(np.allclose(got, want, rtol=RTOL, atol=0.0)),
        "largest_relative_difference": error,
        "versions": {
            "python": platform.python_version(),
            "numpy": np.__version__,
            "dask": dask.__version__,
            "distributed": distributed.__version__,
            "daskgraph": daskgraph.__version__,
        },
    }


# -- output ----------------------------------------------------------------------------------------
def fmt_bytes(n: float) -> str:
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{int(n)} B"


def report(record: dict[str, Any]) -> str:
    peak = record["peak_tflops"]
    lines = [record["summary"], f"device: {record['device']}"]
    if record["mode"] == "gpu":
        lines.append(
            f"precision: TF32 {'on' if record['tf32'] else 'off'} (CUPY_TF32 here "
            f"{record['cupy_tf32_client']}, on the GPU worker {record['cupy_tf32_gpu_worker']})"
        )
    else:
        env = ", ".join(f"{k}={v}" for k, v in record["cpu_worker_blas_environment"].items())
        lines.append(f"daskgraph's CPU worker process: {env}")
    peak_label = f"% of {peak:g} TFLOP/s peak" if peak else "% of peak (give --peak)"
    lines.append(
        f"median of {record['repeats']} runs after {record['warmup']} warm-up, end to end:"
    )
    lines.append(f"  {'way':<10} {'median':>10} {'min':>10} {'TFLOP/s':>9}  {peak_label}")
    for key, way in record["ways"].items():
        share = f"{way['percent_of_peak']:.1f}%" if way["percent_of_peak"] is not None else "-"
        lines.append(
            f"  {key:<10} {way['median_s']:>8.3f} s {way['min_s']:>8.3f} s "
            f"{way['tflops']:>9.3g}  {share}"
        )
    lines.append(f"ratio daskgraph / {record['baseline']}: {record['ratio']:.2f}")
    lines.append(
        f"results match (rtol {RTOL:g}): {record['results_match']} "
        f"(largest relative difference {record['largest_relative_difference']:.2e})"
    )
    copies = record["bytes"]
    measured = copies["measured_daskgraph"]
    lines.append("host <-> device copies per run (in / out):")
    lines.append(
        f"  daskgraph, measured:   {fmt_bytes(measured['host_to_device'])} / "
        f"{fmt_bytes(measured['device_to_host'])}"
    )
    for key, label in (
        ("placement_implies", "placement implies:"),
        ("minimum", "minimum:"),
        ("cupy_baseline", "CuPy baseline:"),
    ):
        if key in copies:
            entry = copies[key]
            why = f"  ({entry['why']})" if "why" in entry else ""
            lines.append(
                f"  {label:<22} {fmt_bytes(entry['host_to_device'])} / "
                f"{fmt_bytes(entry['device_to_host'])}{why}"
            )
    return "\n".join(lines)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--cpu", action="store_true", help="run on the CPU against NumPy (no GPU needed)"
    )
    parser.add_argument(
        "--size", type=int, default=None, help="rows and columns of A and B (10000; --cpu: 2000)"
    )
    parser.add_argument("--n", type=int, default=10, help="the power (default 10)")
    parser.add_argument("--repeats", type=int, default=5, help="timed runs per way (default 5)")
    parser.add_argument("--warmup", type=int, default=1, help="untimed runs first (default 1)")
    parser.add_argument(
        "--tf32",
        choices=("off", "on"),
        default="off",
        help="let both ways use TF32 tensor cores (CUPY_TF32; GPU mode only; default off)",
    )
    parser.add_argument(
        "--peak",
        type=float,
        default=None,
        help=f"the device's peak TFLOP/s (GPU default: {PEAK_FP32:g} FP32, {PEAK_TF32:g} TF32, "
        "H100 SXM; CPU: none)",
    )
    parser.add_argument(
        "--json",
        nargs="?",
        const="-",
        default=None,
        metavar="PATH",
        help="also write the results as JSON to PATH ('-' or no PATH: to stdout, instead of "
        "the table)",
    )
    args = parser.parse_args(argv)
    if (args.size is not None and args.size < 1) or args.n < 2:
        parser.error("--size must be >= 1 and --n >= 2")
    if args.repeats < 1 or args.warmup < 0:
        parser.error("--repeats must be >= 1 and --warmup >= 0")
    if args.peak is not None and args.peak <= 0:
        parser.error("--peak must be > 0")
    if args.cpu and args.tf32 == "on":
        parser.error("--tf32 on applies to GPU mode only")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    record = run_cpu(args) if args.cpu else run_gpu(args)
    if args.json == "-":
        json.dump(record, sys.stdout, indent=2)
        print()
    else:
        print(report(record))
        if args.json:
            with open(args.json, "w") as out:
                json.dump(record, out, indent=2)
            print(f"wrote {args.json}")
    return 0 if record["results_match"] else 1


if __name__ == "__main__":
    sys.exit(main())
