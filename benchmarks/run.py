"""The benchmark suite's entry point: run every case, print the table, write JSON and docs.

Run from the repository root (``make bench`` does)::

    .venv/bin/python -m benchmarks.run [--only CASE ...] [--repeats 5] [--update-docs]

Cases, in the order they run (each in its own module):

* ``scale`` -- place() + lower() of 10k, 100k and 1M ops (pure functions, no cluster);
* ``fine``, ``compute``, ``trivial``, ``latency`` -- on the embedded cluster a plain
  ``dg.Session()`` gets (by default its CPU worker in this process, no virtual GPU);
* ``feeds``, ``handover`` -- on an embedded cluster with one virtual GPU (``handover``: a
  400 MB feed to the GPU's worker process against one memcpy, ``--handover-calls``);
* ``training`` -- an MLP trained on the digits data against TensorFlow 1: one device (the
  default embedded cluster), and 4 towers sync and async on an embedded cluster with 4 virtual
  GPUs; there too, whether 2 towers on 2 virtual GPUs run at the same time within one run
  (``--training-steps``, ``--tower-steps``, ``--training-batch``, ``--tower-size``);
* ``multi-device`` -- repeated multi-device steps (two matmuls on 2 virtual GPUs and their sum
  on the CPU, a chain over three devices, sync training with 1, 2 and 4 towers) on the
  embedded cluster with 4 virtual GPUs, compiled steps and the scheduler's path, against
  TensorFlow's logical devices; one traced step each, hop by hop (``--multi-calls``,
  ``--multi-warmup``);
* ``sessions`` -- ``Session()`` creation and worker memory over session cycles, each repeat in
  a fresh process (the process's own shared embedded cluster, one virtual GPU);
* ``memory`` -- client, scheduler and worker memory over long runs of a two-device graph (a
  client process of its own, the cluster in another; ``--memory-runs``);
* ``first-run`` -- a million-op graph built, a ``Session()`` opened and run once, in a fresh
  process (``--first-run-ops``);
* ``big-graph`` -- TF1 programs of 100k and 1M ops built and run twice, build and run times
  and peak RSS, a fresh process per size (``--big-graph-sizes``);
* ``warm-up`` -- the fine-grained graph in a continuous ``sess.run`` loop from a fresh
  process's first call, cold and warm kernel cache, beside TensorFlow's same loop in its own
  fresh process: the step time over the first 1, 5 and 30 s (``--warmup-seconds``,
  ``--warmup-repeats``);
* ``session-ready`` -- a fresh process's first ``Session()`` with 4 virtual GPU workers and its
  first run, cold and warm kernel cache (``--session-ready-repeats``).

TensorFlow and NumPy are timed in processes of their own (:mod:`benchmarks.peer`), started once
and kept for the run. TensorFlow is an optional peer (the ``bench`` extra): without it, its rows
and targets say "n/a (tensorflow not installed)" and the rest runs. Results go to
``benchmarks/results/latest.json``, with the page and plot rendered from them
(``benchmarks.md``, ``scale.png``: :mod:`benchmarks.report`) beside it, in that untracked
folder; ``--update-docs`` (``make bench UPDATE_DOCS=1``) renders them into ``docs/`` instead.
The output ends with the verdict: each target met or not met, with its measured value over
its goal.
"""

from __future__ import annotations

import argparse
import datetime
import gc
import os
import pathlib
import shlex
import sys
import time
from typing import Any

import cloudpickle

import benchmarks
from benchmarks import (
    big_graph,
    compute_bound,
    feeds,
    fine_grained,
    first_run,
    fusion,
    fusion_adam,
    handover,
    latency,
    memory,
    multi_device,
    report,
    scale,
    session_ready,
    sessions,
    training,
    warm_up,
)
from benchmarks.common import (
    background_busy,
    cpu_worker,
    default_cluster,
    machine_info,
    start_cluster,
)
from benchmarks.peer import Peers

CASES = (
    "scale",
    "fine",
    "fusion",
    "fusion-adam",
    "compute",
    "trivial",
    "latency",
    "feeds",
    "handover",
    "training",
    "multi-device",
    "sessions",
    "memory",
    "first-run",
    "big-graph",
    "warm-up",
    "session-ready",
)
#: the cases on the default embedded cluster, each a function (client, worker, peers, args)
CPU_CASES = {
    "fine": fine_grained.run,
    "fusion": fusion.run,
    "fusion-adam": fusion_adam.run,
    "compute": compute_bound.run,
    "trivial": latency.run_trivial,
    "latency": latency.run,
}
#: the cases with TensorFlow rows (its peer process starts when one of them runs)
TF_CASES = frozenset({*CPU_CASES, "training", "multi-device", "sessions", "warm-up"})
BUSY = 0.1  # warn when other processes use more than this fraction of the CPUs at the start
RESULT_KEYS = {
    "scale": "scale",
    "fine": "fine_grained",
    "fusion": "fusion",
    "fusion-adam": "fusion_adam",
    "compute": "compute_bound",
    "trivial": "trivial",
    "latency": "latency",
    "feeds": "feeds",
    "handover": "handover",
    "training": "training",  # and "towers": the case's tower-concurrency section
    "multi-device": "multi_device",
    "sessions": "sessions",
    "memory": "memory",
    "first-run": "first_run",
    "big-graph": "big_graph",
    "warm-up": "warm_up",
    "session-ready": "session_ready",
}


def _sizes(text: str) -> list[int]:
    sizes = sorted({int(s.replace("_", "")) for s in text.split(",") if s.strip()})
    if not sizes or sizes[0] < 100:
        raise argparse.ArgumentTypeError("sizes must be integers >= 100, comma-separated")
    return sizes


def _per_call_args(parser: argparse.ArgumentParser) -> None:
    """The calls a repeat (and warm-up) of the cases that time loops of calls."""
    parser.add_argument("--fine-calls", type=int, default=30, help="fine: calls per repeat")
    parser.add_argument("--multi-calls", type=int, default=20, help="multi-device: steps a repeat")
    parser.add_argument(
        "--multi-warmup", type=int, default=20, help="multi-device: untimed steps per way"
    )


def _fresh_process_args(parser: argparse.ArgumentParser) -> None:
    """The cases that time a fresh process's first seconds."""
    parser.add_argument(
        "--warmup-seconds",
        type=float,
        default=warm_up.SECONDS,
        help="warm-up: seconds of each process's sess.run loop (default 30)",
    )
    parser.add_argument(
        "--warmup-repeats", type=int, default=1, help="warm-up: rounds of three fresh processes"
    )
    parser.add_argument(
        "--session-ready-repeats",
        type=int,
        default=1,
        help="session-ready: rounds of a cold and a warm process",
    )


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.run", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--only", choices=CASES, action="append", help="run only these cases")
    parser.add_argument("--repeats", type=int, default=5, help="timed repeats per way (>= 5)")
    parser.add_argument("--json", type=pathlib.Path, default=report.DEFAULT_JSON, metavar="PATH")
    parser.add_argument(
        "--docs",
        type=pathlib.Path,
        default=None,
        metavar="DIR",
        help="render the page and plot into DIR (default: benchmarks/results/)",
    )
    parser.add_argument(
        "--update-docs",
        action="store_true",
        help="render them into docs/ (the tracked docs/benchmarks.md and docs/scale.png)",
    )
    parser.add_argument("--no-docs", action="store_true", help="render no page or plot")
    parser.add_argument("--chains", type=int, default=40, help="fine: chains")
    parser.add_argument("--length", type=int, default=100, help="fine: ops per chain")
    parser.add_argument(
        "--per-op-chains", type=int, default=4, help="fine: chains of the one-task-per-op peer"
    )
    parser.add_argument("--matrix-size", type=int, default=2000, help="compute: rows of A, B")
    parser.add_argument("--power", type=int, default=10, help="compute: n in A^n + B^n")
    parser.add_argument("--calls", type=int, default=30, help="latency: calls per repeat")
    parser.add_argument("--trivial-calls", type=int, default=200, help="trivial: calls per repeat")
    _per_call_args(parser)
    parser.add_argument(
        "--scale-sizes",
        type=_sizes,
        default=[10_000, 100_000, 1_000_000],
        help="scale: op counts, comma-separated (default 10000,100000,1000000)",
    )
    parser.add_argument(
        "--big-repeats", type=int, default=1, help="scale: timed rounds for sizes >= 1M"
    )
    parser.add_argument("--feed-size", type=int, default=10_000, help="feeds: rows of each feed")
    parser.add_argument(
        "--handover-calls", type=int, default=5, help="handover: calls a repeat (median)"
    )
    parser.add_argument(
        "--training-steps", type=int, default=200, help="training: steps a repeat, one device"
    )
    parser.add_argument(
        "--tower-steps", type=int, default=12, help="training: steps a repeat, 4 towers"
    )
    parser.add_argument(
        "--training-batch", type=int, default=256, help="training: batch (a multiple of 4)"
    )
    parser.add_argument(
        "--tower-size", type=int, default=512, help="training: tower concurrency matrix rows"
    )
    parser.add_argument(
        "--session-calls", type=int, default=30, help="sessions: Session() calls per process"
    )
    parser.add_argument(
        "--session-cycles", type=int, default=1000, help="sessions: open/run/close cycles"
    )
    parser.add_argument(
        "--memory-runs", type=int, default=6000, help="memory: measured runs (after 1,000)"
    )
    parser.add_argument(
        "--memory-feed-kib", type=int, default=16, help="memory: KiB fed to each run"
    )
    parser.add_argument(
        "--first-run-ops",
        type=int,
        default=first_run.DEFAULT_OPS,
        help="first-run: ops in the graph (default 1,000,000)",
    )
    parser.add_argument(
        "--big-graph-sizes",
        type=_sizes,
        default=list(big_graph.DEFAULT_SIZES),
        help="big-graph: op counts, comma-separated (default 100000,1000000)",
    )
    _fresh_process_args(parser)
    args = parser.parse_args(argv)
    if args.repeats < 1 or args.big_repeats < 1:
        parser.error("--repeats and --big-repeats must be >= 1")
    if args.power < 2:
        parser.error("--power must be >= 2")
    if min(args.trivial_calls, args.fine_calls, args.multi_calls, args.multi_warmup) < 1:
        parser.error("--trivial-calls, --fine-calls, --multi-calls, --multi-warmup must be >= 1")
    if args.first_run_ops < 100:
        parser.error("--first-run-ops must be >= 100")
    if args.training_steps < 1 or args.tower_steps < 1 or args.tower_size < 1:
        parser.error("--training-steps, --tower-steps and --tower-size must be >= 1")
    if args.training_batch < training.TOWERS or args.training_batch % training.TOWERS:
        parser.error(f"--training-batch must be a positive multiple of {training.TOWERS}")
    if args.docs is not None and args.update_docs:
        parser.error("--docs DIR and --update-docs name two folders: give one")
    if args.warmup_seconds < 2 or min(args.warmup_repeats, args.session_ready_repeats) < 1:
        parser.error("--warmup-seconds must be >= 2, the -repeats options >= 1")
    if args.memory_runs < memory.SAMPLES:
        parser.error(f"--memory-runs must be >= {memory.SAMPLES}")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    cases = [c for c in CASES if c in (args.only or CASES)]
    if args.repeats < 5:
        print(f"note: --repeats {args.repeats}: fewer than the suite's 5", file=sys.stderr)
    # the workers unpickle this package's task functions by value: no import path needed there
    cloudpickle.register_pickle_by_value(benchmarks)
    started = time.perf_counter()
    # the peers' processes start before any cluster, and serve every case of the run
    peers = Peers(tensorflow=bool(set(cases) & TF_CASES))
    try:
        results = _run_cases(cases, args, argv, peers, started)
    finally:
        peers.close()
    report.print_report(results)
    report.write_json(results, args.json)
    print(f"wrote {_show(args.json)}")
    if not args.no_docs:
        for written in report.render_docs(results, docs_folder(args), partial=bool(args.only)):
            print(f"wrote {_show(written)}")
    report.print_verdict(results)
    return 0


def docs_folder(args: argparse.Namespace) -> pathlib.Path:
    """Where the page and plot go: ``--docs DIR``, else ``docs/`` with ``--update-docs``,
    else the untracked results folder (a run never rewrites tracked files unasked).

    >>> str(docs_folder(parse_args([])).relative_to(report.ROOT))
    'benchmarks/results'
    >>> str(docs_folder(parse_args(["--update-docs"])).relative_to(report.ROOT))
    'docs'
    """
    if args.docs is not None:
        return args.docs
    return report.DOCS if args.update_docs else report.RESULTS


def _run_cases(
    cases: list[str], args: argparse.Namespace, argv, peers: Peers, started: float
) -> dict[str, Any]:
    if set(cases) & TF_CASES and peers.tf_missing:
        print(f"note: TensorFlow rows: {peers.tf_missing}", file=sys.stderr)
    results: dict[str, Any] = {
        "suite": {
            "command": _command(argv),
            "started": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
            "repeats": args.repeats,
            "args": {
                k: str(v) if isinstance(v, pathlib.Path) else v for k, v in vars(args).items()
            },
        },
        "machine": machine_info(peers.tf_version),
        "cases": {},
    }
    busy = background_busy()
    results["suite"]["background_busy_before"] = busy
    if busy is not None and busy > BUSY:
        print(
            f"note: other processes use {busy:.0%} of the CPUs right now: timings will be noisy",
            file=sys.stderr,
        )
    done = results["cases"]

    if "scale" in cases:
        _progress("scale", started)
        done["scale"] = scale.run(args)
        gc.collect()

    cpu_cases = [c for c in CPU_CASES if c in cases]
    if cpu_cases:
        with default_cluster() as (_, client, devices):
            worker = cpu_worker(devices)
            for case in cpu_cases:
                _progress(case, started)
                done[RESULT_KEYS[case]] = CPU_CASES[case](client, worker, peers, args)
                gc.collect()

    if "feeds" in cases or "handover" in cases:
        cluster, client, devices = start_cluster(virtual_gpus=1)
        try:
            if "feeds" in cases:
                _progress("feeds", started)
                done["feeds"] = feeds.run(client, cluster.scheduler, devices, args)
            if "handover" in cases:
                _progress("handover", started)
                done["handover"] = handover.run(client, devices, args)
        finally:
            client.close()
            cluster.close()

    if "training" in cases:
        _progress("training", started)
        done.update(training.run(args, peers))
        gc.collect()

    if "multi-device" in cases:
        _progress("multi-device", started)
        done["multi_device"] = multi_device.run(args, peers)
        gc.collect()

    _fresh_process_cases(cases, args, peers, done, started)
    results["suite"]["wall_s"] = time.perf_counter() - started
    results["suite"]["loadavg_after"] = list(os.getloadavg()) if hasattr(os, "getloadavg") else None
    results["suite"]["finished"] = (
        datetime.datetime.now().astimezone().isoformat(timespec="seconds")
    )
    return results


def _fresh_process_cases(
    cases: list[str], args: argparse.Namespace, peers: Peers, done: dict, started: float
) -> None:
    """The cases whose every measurement is a fresh process of its own (or several)."""
    if "sessions" in cases:
        _progress("sessions", started)
        done["sessions"] = sessions.run(args, peers.tf_missing)

    if "memory" in cases:
        _progress("memory", started)
        done["memory"] = memory.run(args)

    if "first-run" in cases:
        _progress("first-run", started)
        done["first_run"] = first_run.run(args)

    if "big-graph" in cases:
        _progress("big-graph", started)
        done["big_graph"] = big_graph.run(args)

    if "warm-up" in cases:
        _progress("warm-up", started)
        done["warm_up"] = warm_up.run(args, peers.tf_missing)

    if "session-ready" in cases:
        _progress("session-ready", started)
        done["session_ready"] = session_ready.run(args)


def _command(argv: list[str] | None) -> str:
    words = sys.argv[1:] if argv is None else argv
    return " ".join(["python -m benchmarks.run", *map(shlex.quote, words)])


def _progress(case: str, started: float) -> None:
    print(f"[{time.perf_counter() - started:6.1f} s] {case} ...", file=sys.stderr, flush=True)


def _show(path: pathlib.Path) -> str:
    try:
        return str(path.resolve().relative_to(report.ROOT))
    except ValueError:
        return str(path)


if __name__ == "__main__":
    sys.exit(main())
