"""``make gpu-check``: every GPU claim of daskgraph checked in one run, on this machine's NVIDIA
GPU, or on virtual GPUs where there is none (saying what it skipped and why).

In one run of at most ``--budget`` seconds (8 minutes) it

1. prints the GPU model, driver, CUDA, CuPy, RMM, dask-cuda and distributed versions;
2. runs the seed programs of the compatibility suite (placement logging, manual placement,
   soft placement of integer variables, a missing ``/gpu:1``, towers on two logical GPUs of
   one GPU, A^n + B^n), checking that their GPU ops' outputs were CuPy arrays on that GPU (a
   traced run's ``NodeStats.output_location``) and that every result matches NumPy
   (:mod:`benchmarks.gpu_sessions`);
3. starts dask-cuda's ``LocalCUDACluster`` by hand and checks that a ``Session`` on it finds
   the GPU and runs there; checks ``per_process_gpu_memory_fraction`` (the cap, and an
   allocation above it raising ``ResourceExhaustedError`` naming the op, the device and the
   bytes, after which the worker runs the next graph) and ``allow_growth``; trains the digits
   example on two logical GPUs (:mod:`benchmarks.gpu_clusters`);
4. runs A^n + B^n with each power on its own logical GPU of one GPU (two workers), counting
   the bytes between them that cross host memory (zero over UCX; "needs UCX" without it), and
   a 4-tower training step on 4 logical GPUs against the same model in plain CuPy
   (:mod:`benchmarks.gpu_devices`);
5. runs ``benchmarks/matpow.py`` (10000 x 10000, n = 10, daskgraph against plain CuPy, TF32
   off, then on; median of 5 after a warm-up), checking the targets: daskgraph within
   1.10x CuPy's time with TF32 off, 1.25x with it on, host <-> GPU bytes within 1.05x the
   minimum (800 MB in, 400 MB out);
6. runs the ``gpu``-marked tests (``pytest -m gpu tests/gpu``), the fused kernels' bit-for-bit
   property among them as a row of its own (:mod:`benchmarks.gpu_fused`);

and writes one report, Markdown into ``docs/gpu.md`` (between its report markers) and JSON
next to it (``docs/gpu-check.json``) and to ``benchmarks/results/gpu-check.json``. Every check
ends PASS, FAIL or SKIPPED (with the reason); the exit status is 0 when none failed.

Without a GPU (or with ``--mode virtual``) the checks run on virtual GPUs where they can: the
programs, the hand-started cluster (named workers standing in for ``LocalCUDACluster``), the
out-of-memory path, training, and ``matpow.py --cpu``; what needs a GPU says ``skipped: no
NVIDIA GPU (why)``. Such a run never replaces a real GPU's report in ``docs/gpu.md``.

Run::

    make gpu-check                                   # or: .venv/bin/python -m benchmarks.gpu_check
    python -m benchmarks.gpu_check --only programs,memory --docs none
    python -m benchmarks.gpu_check --save-digits     # the digits for a machine without sklearn
"""

from __future__ import annotations

import argparse
import datetime
import json
import logging
import os
import pathlib
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import xml.etree.ElementTree as ET
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

if not __package__:  # run as `python benchmarks/gpu_check.py`: make `benchmarks` importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks.gpu_report import (
    FAIL,
    GPU_STACK,
    NO_GPU,
    PASS,
    SKIPPED,
    CheckResult,
    console_lines,
    environment,
    environment_lines,
    missing_modules,
    report_record,
    summary,
    write_docs,
)

ROOT = pathlib.Path(__file__).resolve().parents[1]
#: the targets of issues 15 and 33: daskgraph / CuPy time (TF32 off, on), host <-> GPU bytes /
#: the minimum
RATIO_GOALS, BYTES_GOAL = {False: 1.10, True: 1.25}, 1.05
#: (a fragment of NVML's name, FP32 TFLOP/s, dense TF32 TFLOP/s), from NVIDIA's data sheets;
#: the first entry whose fragment is in the GPU's name applies
PEAKS = (
    ("H200 NVL", 60.0, 418.0),
    ("H200", 67.0, 495.0),
    ("H100 NVL", 60.0, 418.0),
    ("H100 PCIe", 51.0, 378.0),
    ("H100", 67.0, 495.0),
    ("A100", 19.5, 156.0),
    ("L40S", 91.6, 183.0),
    ("L4", 30.3, 60.0),
    ("A10", 31.2, 62.5),
)
#: the checks, in the report's order, by the names ``--only`` takes
GROUPS = ("environment", "gpu-tests", "fused-chains", "programs", "cluster", "memory", "matpow",
          "training", "two-gpus", "towers")  # fmt: skip


@dataclass
class Run:
    """One run of the check: its options, what it runs on, and the time it has left."""

    args: argparse.Namespace
    real: bool
    target: Any
    deadline: float

    def left(self) -> float:
        """Seconds of the budget left."""
        return self.deadline - time.monotonic()


def peak_of(gpu_name: str, tf32: bool) -> float | None:
    """The GPU's peak TFLOP/s for float32 products (None for a GPU not in :data:`PEAKS`).

    >>> peak_of("NVIDIA H100 80GB HBM3", False), peak_of("NVIDIA H100 PCIe", True)
    (67.0, 378.0)
    >>> peak_of("NVIDIA A10", False), peak_of("Tesla T4", False) is None
    (31.2, True)
    """
    for fragment, fp32, tf32_peak in PEAKS:
        if fragment in gpu_name:
            return tf32_peak if tf32 else fp32
    return None


# -- running checks -------------------------------------------------------------------------------
def call_within(seconds: float, fn: Callable[[], Any]) -> Any:
    """``fn()``, or TimeoutError once ``seconds`` have passed (``fn`` is left running in a
    daemon thread: the run goes on, and its report is written)."""
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = fn()
        except BaseException as exc:
            box["error"] = exc

    thread = threading.Thread(target=target, daemon=True, name="gpu-check")
    thread.start()
    thread.join(max(1.0, seconds))
    if thread.is_alive():
        raise TimeoutError(f"did not finish within {seconds:.0f} s")
    if "error" in box:
        raise box["error"]
    return box.get("value")


def in_process(run: Run, name: str, title: str, check: Callable, allowance: float) -> CheckResult:
    """Run one check of :mod:`benchmarks.gpu_sessions`/``gpu_clusters`` as a CheckResult."""
    start = time.perf_counter()
    if run.left() < 10:
        return _out_of_time(run, name, title)
    try:
        found = call_within(min(allowance, run.left()), lambda: check(run.target))
    except Exception as exc:
        lines = traceback.format_exception(exc)[-4:]
        return CheckResult(
            name,
            title,
            FAIL,
            reason=_said(exc),
            lines=[line.rstrip() for line in lines],
            seconds=time.perf_counter() - start,
        )
    status = FAIL if found.problems else PASS
    if status == PASS and found.skipped and (not found.lines or found.data.get("verdict")):
        status = SKIPPED  # (a verdict SKIPPED: measured, but the goal needs what is missing)
    reason = (
        found.problems[0] if found.problems else (found.skipped[0] if status == SKIPPED else "")
    )
    lines = found.lines + [f"problem: {p}" for p in found.problems[1:]]
    skipped = found.skipped if status != SKIPPED else found.skipped[1:]
    return CheckResult(
        name,
        title,
        status,
        reason,
        lines,
        sorted(set(skipped)),
        found.data,
        time.perf_counter() - start,
    )


def _said(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {str(exc).splitlines()[0][:300] if str(exc) else ''}"


def _out_of_time(run: Run, name: str, title: str) -> CheckResult:
    return CheckResult(
        name, title, FAIL, reason=f"not run: the {run.args.budget:.0f} s budget was spent"
    )


def run_command(command: list[str], timeout: float) -> tuple[int | None, str]:
    """(exit status or None on timeout, stdout and stderr) of a command run from the project's
    root in a process group of its own (killed whole on timeout: workers it started too)."""
    process = subprocess.Popen(
        command,
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        out, _ = process.communicate(timeout=max(1.0, timeout))
        return process.returncode, out
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        out, _ = process.communicate()
        return None, out


# -- the checks -----------------------------------------------------------------------------------
def check_environment(run: Run, env: dict[str, Any]) -> CheckResult:
    """The versions; on a GPU machine, the GPU stack must be there and NVML must see the GPU."""
    lines = environment_lines(env)
    missing = [m for m in GPU_STACK if env["versions"][m] == "absent"]
    if not run.real:
        why = f"{NO_GPU}: nvidia-smi -L finds none; the GPU, driver and CUDA are absent"
        return CheckResult(
            "environment", "environment and versions", PASS, lines=lines, skipped=[why]
        )
    problems = [f"missing {', '.join(missing)} (the cuda12/cuda13 extra)"] if missing else []
    if not run.target.gpu_id:
        problems.append("NVML (nvidia-ml-py) does not see the GPU nvidia-smi lists")
    status = FAIL if problems else PASS
    return CheckResult(
        "environment", "environment and versions", status, "; ".join(problems), lines
    )


def check_gpu_tests(run: Run) -> tuple[CheckResult, list[tuple[str, str, str]] | None]:
    """``pytest -m gpu tests/gpu`` in a subprocess, read from its JUnit XML; and the tests'
    outcomes (for the fused-chains row)."""
    title, start = "the gpu-marked tests (pytest -m gpu tests/gpu)", time.perf_counter()
    if run.left() < 30:
        return _out_of_time(run, "gpu-tests", title), None
    status, out, tests = pytest_outcomes(run, ["-m", "gpu", "tests/gpu"], 300.0)
    result = gpu_tests_result(run.real, status, out, tests)
    result.seconds = time.perf_counter() - start
    return result, tests


def check_fused_chains(run: Run, tests: list[tuple[str, str, str]] | None) -> CheckResult:
    """The fused kernels' bit-for-bit row: from the gpu-marked tests' outcomes (``tests``;
    its test alone where those did not run), or, without a GPU, the CPU loops' property."""
    from benchmarks import gpu_fused

    start = time.perf_counter()
    if run.left() < 20:
        return _out_of_time(run, gpu_fused.NAME, gpu_fused.TITLE)
    if run.real and tests is None:
        gpu_test = f"tests/gpu/{gpu_fused.GPU_TEST}.py"
        tests = pytest_outcomes(run, ["-m", "gpu", gpu_test], 200.0)[2]
    cpu = None if run.real else pytest_outcomes(run, [gpu_fused.CPU_TEST], 200.0)[2]
    result = gpu_fused.fused_chains_result(run.real, tests, cpu)
    result.seconds = time.perf_counter() - start
    return result


def pytest_outcomes(
    run: Run, arguments: list[str], most: float
) -> tuple[int | None, str, list[tuple[str, str, str]] | None]:
    """(exit status or None on timeout, output, outcomes from the JUnit XML) of pytest run on
    ``arguments`` in a subprocess, for at most ``most`` seconds of what is left."""
    with tempfile.TemporaryDirectory() as folder:
        xml = pathlib.Path(folder) / "junit.xml"
        command = [sys.executable, "-m", "pytest", *arguments, "-q", "-p", "no:cacheprovider",
                   "-o", "addopts=", f"--junitxml={xml}"]  # fmt: skip
        status, out = run_command(command, min(most, run.left() - 5))
        return status, out, junit_outcomes(xml) if xml.exists() else None


def junit_outcomes(path: pathlib.Path) -> list[tuple[str, str, str]]:
    """(test, outcome, message) of every test case of a JUnit XML file."""
    outcomes = []
    for case in ET.parse(path).getroot().iter("testcase"):
        name = f"{case.get('classname', '')}::{case.get('name', '')}"
        outcome, message = "passed", ""
        for kind in ("failure", "error", "skipped"):
            found = case.find(kind)
            if found is not None:
                outcome, message = kind, (found.get("message") or "").splitlines()[0:1]
                message = message[0] if message else ""
                break
        outcomes.append((name, outcome, message))
    return outcomes


def gpu_tests_result(
    real: bool, status: int | None, out: str, tests: list[tuple[str, str, str]] | None
) -> CheckResult:
    """The verdict on the gpu-marked tests: on a GPU every one must pass; without one every
    one must skip itself (and none may fail to import).

    >>> skipped = [("t::a", "skipped", "needs an NVIDIA GPU"), ("t::b", "skipped", "")]
    >>> gpu_tests_result(False, 0, "", skipped).status
    'SKIPPED'
    >>> gpu_tests_result(True, 1, "", [("t::a", "failure", "boom"), ("t::b", "passed", "")]).reason
    '1 of 2 failed'
    """
    title = "the gpu-marked tests (pytest -m gpu tests/gpu)"
    tail = out.strip().splitlines()[-3:]
    if status is None or not tests:
        why = (
            "did not finish in time" if status is None else f"pytest exited {status}, no tests run"
        )
        return CheckResult("gpu-tests", title, FAIL, why, tail)
    bad = [(n, o, m) for n, o, m in tests if o in ("failure", "error")]
    skipped = [(n, m) for n, o, m in tests if o == "skipped"]
    lines = [
        f"{len(tests)} tests: {len(tests) - len(bad) - len(skipped)} passed, "
        f"{len(bad)} failed, {len(skipped)} skipped"
    ]
    lines += [f"{o}: {n}: {m[:200]}" for n, o, m in bad]
    if bad:
        return CheckResult("gpu-tests", title, FAIL, f"{len(bad)} of {len(tests)} failed", lines)
    if not real and len(skipped) == len(tests):
        why = f"{NO_GPU}: all {len(tests)} gpu-marked tests skip themselves (nvidia-smi -L)"
        return CheckResult("gpu-tests", title, SKIPPED, why, lines)
    lines += [f"skipped: {n}: {m}" for n, m in skipped]
    return CheckResult("gpu-tests", title, PASS, lines=lines)


def check_matpow(run: Run, tf32: str) -> CheckResult:
    """benchmarks/matpow.py in a subprocess (GPU: 10000^2 against CuPy; without: --cpu)."""
    name, start = f"matpow-tf32-{tf32}", time.perf_counter()
    title = (
        f"matpow: daskgraph vs CuPy, TF32 {tf32}"
        if run.real
        else "matpow: daskgraph vs NumPy (--cpu)"
    )
    if run.left() < 30:
        return _out_of_time(run, name, title)
    with tempfile.TemporaryDirectory() as folder:
        out_json = pathlib.Path(folder) / "matpow.json"
        command = [sys.executable, "benchmarks/matpow.py", "--json", str(out_json)]
        if run.real:
            command += ["--tf32", tf32, "--repeats", "5", "--warmup", "1"]
            peak = peak_of(run.target.gpu_name, tf32 == "on")
            command += ["--peak", str(peak)] if peak else []
        else:
            command += ["--cpu", "--size", "500", "--repeats", "3", "--warmup", "1"]
        status, out = run_command(command, min(200.0, run.left() - 5))
        record = json.loads(out_json.read_text()) if out_json.exists() else None
    if record is None:
        why = "did not finish in time" if status is None else f"matpow.py exited {status}"
        result = CheckResult(name, title, FAIL, why, out.strip().splitlines()[-6:])
    else:
        result = matpow_result(record, name, title, run.real, run.target.gpu_name)
    result.seconds = time.perf_counter() - start
    return result


def matpow_result(
    record: dict[str, Any], name: str, title: str, real: bool, gpu: str
) -> CheckResult:
    """The verdict on one matpow.py record: the results must match and, on a GPU, the
    ratio and the bytes must meet their targets (:data:`RATIO_GOALS`, :data:`BYTES_GOAL`)."""
    ways, baseline = record["ways"], record["baseline"]
    ours, theirs = ways["daskgraph"], ways[baseline]
    problems = (
        []
        if record["results_match"]
        else [
            f"results differ from {baseline}'s (largest relative difference "
            f"{record['largest_relative_difference']:.2e})"
        ]
    )
    lines = [
        record["summary"],
        f"median of {record['repeats']} after {record['warmup']} warm-up: daskgraph "
        f"{ours['median_s']:.3f} s, {baseline} {theirs['median_s']:.3f} s, ratio "
        f"{record['ratio']:.2f}",
    ]
    if not real:
        skipped = [
            f"{NO_GPU}: the 10000 x 10000 run against CuPy (TF32 off, then on), its "
            f"ratio (target <= {RATIO_GOALS[False]}x, TF32 on {RATIO_GOALS[True]}x), TFLOP/s "
            "against the GPU's peak and host "
            f"<-> GPU bytes (target <= {BYTES_GOAL}x the minimum) were not measured"
        ]
        return CheckResult(
            name,
            title,
            FAIL if problems else PASS,
            "; ".join(problems),
            lines,
            skipped,
            {"matpow": record},
        )
    targets = matpow_targets(record)
    problems += [t["problem"] for t in targets.values() if not t["met"]]
    share = ours["percent_of_peak"]
    headline = (
        f"daskgraph / CuPy {record['ratio']:.2f}x (goal <= {targets['time_vs_cupy']['goal']}x); "
        f"daskgraph "
        f"{ours['tflops']:.1f} TFLOP/s"
        + (f" ({share:.0f}% of {record['peak_tflops']:g})" if share is not None else "")
        + f", CuPy {theirs['tflops']:.1f}; host <-> GPU bytes "
        f"{targets['bytes_vs_minimum']['measured']:.2f}x the minimum (goal <= {BYTES_GOAL}x)"
    )
    lines = [headline, *lines, *matpow_lines(record, gpu)]
    lines += [
        f"target {key}: {t['measured']:.3f} (goal <= {t['goal']}): "
        f"{'met' if t['met'] else 'NOT MET'}"
        for key, t in targets.items()
    ]
    client, worker = record.get("cupy_tf32_client"), record.get("cupy_tf32_gpu_worker")
    if client != worker:
        problems.append(f"CUPY_TF32 differs: here {client!r}, on the GPU worker {worker!r}")
    return CheckResult(
        name,
        title,
        FAIL if problems else PASS,
        "; ".join(problems),
        lines,
        data={"targets": targets, "matpow": record},
    )


def matpow_targets(record: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The targets of a GPU record: the time ratio, bytes (in + out) over the minimum, and
    bytes over what the placement implies (copies only at the device boundary)."""
    copies = record["bytes"]
    measured, minimum = copies["measured_daskgraph"], copies["minimum"]
    moved = measured["host_to_device"] + measured["device_to_host"]
    least = minimum["host_to_device"] + minimum["device_to_host"]
    goal = RATIO_GOALS[bool(record.get("tf32"))]
    implied = copies["placement_implies"]
    implies = implied["host_to_device"] + implied["device_to_host"]
    floor = implies / least
    return {
        "time_vs_cupy": {
            "measured": record["ratio"],
            "goal": goal,
            "met": record["ratio"] <= goal,
            "problem": f"daskgraph took {record['ratio']:.2f}x CuPy's time (goal {goal}x)",
        },
        "bytes_vs_minimum": {
            "measured": moved / least,
            "goal": BYTES_GOAL,
            "met": moved / least <= BYTES_GOAL,
            "problem": f"host <-> GPU bytes {moved / least:.2f}x the minimum (goal "
            f"{BYTES_GOAL}x; the placement, the sum on /cpu:0, implies {floor:.2f}x)",
        },
        "bytes_vs_placement": {
            "measured": moved / implies,
            "goal": 1.0,
            "met": moved <= implies,
            "problem": f"host <-> GPU bytes {moved / implies:.2f}x what the placement implies "
            "(copies beyond the device boundary)",
        },
    }


def matpow_lines(record: dict[str, Any], gpu: str) -> list[str]:
    """TFLOP/s against the peak, bytes against the minimum, and TF32 as each side saw it."""
    peak = record["peak_tflops"]
    known = peak_of(gpu, bool(record.get("tf32"))) is not None
    label = f"{peak:g} TFLOP/s peak" + ("" if known else " (H100 SXM's: this GPU is not in PEAKS)")
    lines = [
        f"{way}: {w['tflops']:.1f} TFLOP/s, {w['percent_of_peak']:.1f}% of the {label}"
        for way, w in record["ways"].items()
    ]
    copies = record["bytes"]
    for key in ("measured_daskgraph", "placement_implies", "minimum"):
        c = copies[key]
        lines.append(
            f"host <-> GPU bytes, {key.replace('_', ' ')}: "
            f"{c['host_to_device'] / 1e6:.0f} MB in, {c['device_to_host'] / 1e6:.0f} MB out"
        )
    lines.append(
        f"CUPY_TF32: here {record.get('cupy_tf32_client')}, on the GPU worker "
        f"{record.get('cupy_tf32_gpu_worker')}"
    )
    return lines


# -- the run --------------------------------------------------------------------------------------
def smi_lists_a_gpu() -> bool:
    """Whether ``nvidia-smi -L`` lists a GPU (asked before daskgraph is imported)."""
    from benchmarks.gpu_report import nvidia_smi

    return bool(nvidia_smi().get("gpus"))


def make_run(args: argparse.Namespace) -> Run:
    """What the run checks: the first visible GPU (``--mode gpu``), or virtual GPUs."""
    from benchmarks.gpu_sessions import Target
    from daskgraph.cluster.gpus import visible_gpus
    from daskgraph.testing import gpu_available

    real = args.mode == "gpu" or (args.mode == "auto" and gpu_available())
    target = Target(real=False)
    if real:
        found = visible_gpus()
        first = found[0] if found else None
        target = (
            Target(True, first.visible_id, first.name, first.total_memory)
            if first
            else Target(True)
        )
    return Run(args, real, target, time.monotonic() + args.budget)


def in_process_checks(run: Run) -> list[tuple[str, str, str, Callable, float]]:
    """(group, name, title, check, seconds allowed) of every in-process check."""
    from benchmarks import gpu_clusters as clusters
    from benchmarks import gpu_devices as devices
    from benchmarks.gpu_sessions import PROGRAMS

    kind = "logical" if run.real else "virtual"

    checks = [
        ("programs", f"program-{key}", title, fn, 90.0) for key, (title, fn) in PROGRAMS.items()
    ]
    cluster_title = (
        "dask-cuda LocalCUDACluster started by hand"
        if run.real
        else "a cluster started by hand (virtual GPU)"
    )
    checks += [
        ("cluster", "hand-started-cluster", cluster_title, clusters.hand_started_cluster, 120.0),
        (
            "memory",
            "memory-options",
            "GPU memory options -> RMM pools (no GPU needed)",
            clusters.memory_translation,
            10.0,
        ),
        (
            "memory",
            "memory-fraction",
            "per_process_gpu_memory_fraction and OOM recovery",
            clusters.memory_fraction,
            120.0,
        ),
        ("memory", "allow-growth", "allow_growth", clusters.allow_growth, 120.0),
        (
            "two-gpus",
            "two-logical-gpus",
            f"A^n + B^n, a power on each of two {kind} GPUs"
            f"{' of one GPU' if run.real else ''}: bytes through the host between them",
            devices.two_logical_gpus,
            120.0,
        ),
        (
            "towers",
            "tower-step",
            f"a 4-tower training step on 4 {kind} GPUs vs plain {'CuPy' if run.real else 'NumPy'}",
            devices.tower_step,
            120.0,
        ),
        (
            "training",
            "training",
            f"training the digits example on two {'logical' if run.real else 'virtual'} GPUs",
            clusters.training,
            150.0,
        ),
    ]
    return checks


def run_checks(
    run: Run, env: dict[str, Any], emit: Callable[[CheckResult], None]
) -> list[CheckResult]:
    """Every chosen check, the subprocess ones last but the report in :data:`GROUPS` order."""
    from daskgraph.cluster import embedded

    chosen = set(run.args.only)
    results: list[tuple[str, CheckResult]] = []

    def add(group: str, result: CheckResult) -> None:
        results.append((group, result))
        emit(result)

    if "environment" in chosen:
        add("environment", check_environment(run, env))
    for group, name, title, check, allowance in in_process_checks(run):
        if group in chosen:
            add(group, in_process(run, name, title, check, allowance))
    embedded.shutdown()  # free the GPU (and the processes) for the subprocesses
    if "matpow" in chosen:
        for tf32 in ("off", "on") if run.real else ("off",):
            add("matpow", check_matpow(run, tf32))
    tests = None
    if "gpu-tests" in chosen:
        result, tests = check_gpu_tests(run)
        add("gpu-tests", result)
    if "fused-chains" in chosen:
        add("fused-chains", check_fused_chains(run, tests))
    results.sort(key=lambda item: GROUPS.index(item[0]))  # stable: order within a group kept
    return [result for _, result in results]


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--mode",
        choices=("auto", "gpu", "virtual"),
        default="auto",
        help="gpu: a real GPU; virtual: virtual GPUs; auto: gpu if nvidia-smi finds one",
    )
    parser.add_argument(
        "--only",
        default=",".join(GROUPS),
        help=f"comma-separated checks to run, of: {', '.join(GROUPS)}",
    )
    parser.add_argument(
        "--budget",
        type=float,
        default=480.0,
        help="seconds the whole run may take (default 480: 8 minutes)",
    )
    parser.add_argument(
        "--json",
        type=pathlib.Path,
        default=ROOT / "benchmarks" / "results" / "gpu-check.json",
        help="where the JSON report goes (default benchmarks/results/)",
    )
    parser.add_argument(
        "--docs",
        default=str(ROOT / "docs" / "gpu.md"),
        help="the page whose report section the run fills ('none': no page)",
    )
    parser.add_argument(
        "--save-digits",
        action="store_true",
        help="save the digits data for a machine without scikit-learn, and stop",
    )
    args = parser.parse_args(argv)
    args.only = [name.strip() for name in args.only.split(",") if name.strip()]
    unknown = sorted(set(args.only) - set(GROUPS))
    if unknown:
        parser.error(f"--only: unknown checks {unknown}; known: {', '.join(GROUPS)}")
    if args.budget <= 0:
        parser.error("--budget must be > 0")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.save_digits:
        from benchmarks.gpu_clusters import save_digits

        print(f"saved the digits data in {save_digits()}")
        return 0
    missing = missing_modules(args.mode == "gpu" or (args.mode == "auto" and smi_lists_a_gpu()))
    if missing:
        print(f"gpu-check: cannot run: missing {', '.join(missing)}. Install them (pip install "
              f"{' '.join(sorted(set(missing.values())))}), or on the accelerator machine pass "
              "their pip names to ../shared/gpu/wheels.sh (see docs/gpu.md)")  # fmt: skip
        return 2
    logging.getLogger("distributed").setLevel(logging.WARNING)  # dask-cuda's clusters chatter
    started = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    clock = time.perf_counter()
    run = make_run(args)
    env = environment()
    mode = "gpu" if run.real else "virtual"
    print(f"gpu-check: {mode} mode, checks: {', '.join(args.only)}, budget {args.budget:.0f} s")
    for line in environment_lines(env):
        print(f"  {line}")

    def emit(result: CheckResult) -> None:
        print("\n".join(console_lines(result)), flush=True)

    results = run_checks(run, env, emit)
    record = report_record(results, env, mode, started, time.perf_counter() - clock)
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(record, indent=2, default=str) + "\n", encoding="utf-8")
    counts = summary(results)
    print(
        f"gpu-check: {counts[PASS]} passed, {counts[FAIL]} failed, {counts[SKIPPED]} skipped "
        f"in {record['seconds']} s; JSON: {args.json}"
    )
    if args.docs != "none":
        print(f"gpu-check: {write_docs(pathlib.Path(args.docs), record)}")
    return 1 if counts[FAIL] else 0


if __name__ == "__main__":
    sys.exit(main())
