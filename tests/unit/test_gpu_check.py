"""``make gpu-check`` cannot rot on machines without a GPU: its CPU mode runs for real here (the
quick checks, in a subprocess), and the verdicts its GPU mode gives are checked against made-up
GPU results (the gpu-marked tests' JUnit outcomes, matpow.py's GPU record, a traced run's
output locations, the report page that keeps a real GPU's report).
"""

from __future__ import annotations

import doctest
import json
import os
import pathlib
import subprocess
import sys
import time
from types import SimpleNamespace

import numpy as np
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # the benchmarks package lives next to daskgraph, not in it
    sys.path.insert(0, str(ROOT))

from benchmarks import (  # noqa: E402
    gpu_check,
    gpu_clusters,
    gpu_devices,
    gpu_fused,
    gpu_report,
    gpu_sessions,
    matpow,
)
from benchmarks.gpu_report import FAIL, PASS, SKIPPED, CheckResult  # noqa: E402
from benchmarks.gpu_sessions import Findings, Target  # noqa: E402

GPU0 = "/job:localhost/replica:0/task:0/device:GPU:0"
H100 = Target(True, "0", "NVIDIA H100 80GB HBM3", 80 * 2**30)


@pytest.mark.parametrize("module", [gpu_check, gpu_clusters, gpu_devices, gpu_fused, gpu_report])
def test_doctests(module) -> None:
    """The benchmarks are not collected by pytest: their doctests run here."""
    failed, attempted = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert (failed, attempted > 0) == (0, True)


def test_the_cpu_mode_runs_the_virtual_checks_and_says_what_it_skipped(tmp_path) -> None:
    page = tmp_path / "gpu.md"
    page.write_text("# GPUs\n\nkept text\n\n<!-- gpu-check:report:begin -->\nold\n"
                    "<!-- gpu-check:report:end -->\n\ntail text\n")  # fmt: skip
    out = tmp_path / "out.json"
    command = [sys.executable, "-m", "benchmarks.gpu_check", "--mode", "virtual", "--only",
               "environment,programs,cluster,memory", "--docs", str(page), "--json", str(out),
               "--budget", "120"]  # fmt: skip
    start = time.monotonic()
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert time.monotonic() - start < 120
    record = json.loads(out.read_text())
    statuses = {c["name"]: c["status"] for c in record["checks"]}
    assert statuses == {
        "environment": PASS,
        **{f"program-{name}": PASS for name in gpu_sessions.PROGRAMS},
        "hand-started-cluster": PASS,
        "memory-options": PASS,
        "memory-fraction": PASS,
        "allow-growth": SKIPPED,
    }
    assert record["mode"] == "virtual" and record["real_gpu"] is False
    skipped = [s for c in record["checks"] for s in c["skipped"]]
    skipped += [c["reason"] for c in record["checks"] if c["status"] == SKIPPED]
    assert skipped and all(s.startswith("no NVIDIA GPU: ") for s in skipped)
    assert "skipped: no NVIDIA GPU: " in done.stdout
    assert "ResourceExhaustedError" not in done.stdout  # the OOM was expected and named:
    assert "4.0 PiB asked: OOM when allocating about 4503599627370496 bytes" in done.stdout
    text = page.read_text()
    assert text.startswith("# GPUs\n\nkept text\n") and text.endswith("\ntail text\n")
    assert "No report from a real NVIDIA GPU exists yet" in text and "\nold\n" not in text
    assert json.loads((tmp_path / "gpu-check.json").read_text())["summary"][FAIL] == 0


def test_a_missing_module_stops_the_run_naming_it(monkeypatch, capsys) -> None:
    monkeypatch.setitem(gpu_report.NEEDED, "no_such_module_here", "no-such-package")
    assert gpu_check.main(["--mode", "virtual", "--docs", "none"]) == 2
    assert "missing no_such_module_here" in capsys.readouterr().out


# -- the verdicts of GPU mode, on made-up GPU results ---------------------------------------------
def fake_stats(*locations: str) -> SimpleNamespace:
    nodes = [
        SimpleNamespace(node_name=f"op{i}", output_location=w) for i, w in enumerate(locations)
    ]
    return SimpleNamespace(dev_stats=[SimpleNamespace(device=GPU0, node_stats=nodes)])


def test_on_a_real_gpu_every_gpu_output_must_be_on_the_gpu() -> None:
    good = Findings()
    good.outputs(fake_stats("gpu:0", "", "gpu:0"), H100)
    assert good.problems == [] and good.skipped == []
    assert good.lines == ["2 GPU op outputs checked: CuPy arrays on their worker's GPU"]
    bad = Findings()
    bad.outputs(fake_stats("gpu:0", "host"), H100)
    assert bad.problems == [f"op1 on {GPU0}: its output was on host, not gpu:0"]
    none = Findings()
    none.outputs(fake_stats(""), H100)
    assert none.problems == ["no GPU op with an array output ran"]


def test_findings_compare_with_numpy() -> None:
    f = Findings()
    f.matches(np.float32([1.0, 2.0]), np.float32([1.0, 2.0]), "same")
    f.matches(np.float32([1.0, 2.5]), np.float32([1.0, 2.0]), "differs")
    f.matches(np.float32([1.0, 2.0001]), np.float32([1.0, 2.0]), "close", rtol=1e-3)
    assert f.problems == ["differs: got [1.0, 2.5], NumPy says [1.0, 2.0]"]


def outcomes(*kinds: str) -> list[tuple[str, str, str]]:
    return [(f"tests/gpu/t.py::test_{i}", kind, "why") for i, kind in enumerate(kinds)]


def test_the_gpu_tests_verdict() -> None:
    verdict = gpu_check.gpu_tests_result
    assert verdict(True, 0, "", outcomes("passed", "passed")).status == PASS
    failed = verdict(True, 1, "", outcomes("passed", "failure", "error"))
    assert (failed.status, failed.reason) == (FAIL, "2 of 3 failed")
    assert "failure: tests/gpu/t.py::test_1: why" in failed.lines
    assert verdict(False, 0, "", outcomes("skipped", "skipped")).status == SKIPPED
    assert verdict(False, 1, "", outcomes("skipped", "error")).status == FAIL  # e.g. an import
    assert verdict(True, None, "", None).reason == "did not finish in time"
    assert verdict(True, 4, "usage", []).status == FAIL


def test_junit_outcomes(tmp_path) -> None:
    xml = tmp_path / "junit.xml"
    xml.write_text(
        '<testsuites><testsuite><testcase classname="tests.gpu.test_gpu" name="test_a"/>'
        '<testcase classname="tests.gpu.test_gpu" name="test_b"><skipped message="needs an '
        'NVIDIA GPU"/></testcase><testcase classname="c" name="d"><failure message="boom&#10;'
        'more"/></testcase></testsuite></testsuites>'
    )
    assert gpu_check.junit_outcomes(xml) == [
        ("tests.gpu.test_gpu::test_a", "passed", ""),
        ("tests.gpu.test_gpu::test_b", "skipped", "needs an NVIDIA GPU"),
        ("c::d", "failure", "boom"),
    ]


def gpu_record(ours: float, cupy: float, moved_out: int, worker_tf32: str = "0") -> dict:
    """A GPU record as matpow.py writes it (its own functions), with made-up timings."""
    args = matpow.parse_args(["--repeats", "3"])
    size, n = 10_000, 10
    result = np.ones((2, 2), np.float32)
    times = {"daskgraph": [ours] * 3, "cupy": [cupy] * 3}
    results = {"daskgraph": result, "cupy": result}
    record = matpow.common_record(args, "gpu", size, n, 67.0, times, results, "cupy")
    copies = {"host_to_device": 800_000_000, "device_to_host": moved_out, "partitions": []}
    record.update(tf32=False, cupy_tf32_client="0", cupy_tf32_gpu_worker=worker_tf32,
                  bytes=matpow.gpu_bytes(size, copies))  # fmt: skip
    return record


def test_matpow_targets_on_a_made_up_gpu_record() -> None:
    def verdict(record: dict) -> CheckResult:
        return gpu_check.matpow_result(record, "matpow", "matpow", True, H100.gpu_name)

    met = verdict(gpu_record(1.05, 1.0, 400_000_000))
    assert met.status == PASS, met.reason
    targets = met.data["targets"]
    assert targets["time_vs_cupy"]["met"] and targets["bytes_vs_minimum"]["measured"] == 1.0
    assert any("of the 67 TFLOP/s peak" in line for line in met.lines)
    slow = verdict(gpu_record(1.5, 1.0, 800_000_000))  # as the placement implies: sum on CPU
    assert slow.status == FAIL
    assert "daskgraph took 1.50x CuPy's time (goal 1.1x)" in slow.reason
    assert "1.33x the minimum (goal 1.05x; the placement, the sum on /cpu:0, implies 1.33x)" in (
        slow.reason
    )
    beyond = verdict(gpu_record(1.0, 1.0, 1_200_000_000))
    assert "1.67x the minimum" in beyond.reason
    assert "1.25x what the placement implies (copies beyond the device boundary)" in beyond.reason
    mixed = verdict(gpu_record(1.0, 1.0, 400_000_000, worker_tf32="1"))
    assert mixed.reason == "CUPY_TF32 differs: here '0', on the GPU worker '1'"


def test_matpow_with_tf32_on_has_its_own_goal_of_125x() -> None:
    def verdict(ratio: float) -> CheckResult:
        record = gpu_record(ratio, 1.0, 400_000_000, worker_tf32="1")
        record.update(tf32=True, cupy_tf32_client="1")
        return gpu_check.matpow_result(record, "matpow", "matpow", True, H100.gpu_name)

    within = verdict(1.2)
    assert within.status == PASS and within.data["targets"]["time_vs_cupy"]["goal"] == 1.25
    assert "(goal <= 1.25x)" in within.lines[0]
    assert "daskgraph took 1.30x CuPy's time (goal 1.25x)" in verdict(1.3).reason


def test_the_two_gpu_row_needs_ucx_for_zero_bytes_through_the_host() -> None:
    sent = 3 * 4096 * 4096 * 4

    def verdict(transport: str, host: int = 0) -> CheckResult:
        def check(target: Target) -> Findings:
            f = Findings(lines=["A^n + B^n matched NumPy"])
            counts = {"host": host, "cuda": sent}
            gpu_devices.bytes_verdict(f, target, f"{transport}://w1", counts, sent)
            return f

        run = gpu_check.Run(gpu_check.parse_args([]), True, H100, time.monotonic() + 60)
        return gpu_check.in_process(run, "two", "two", check, 10)

    tcp = verdict("tls")
    assert tcp.status == SKIPPED and tcp.reason.startswith("needs UCX: the workers talk tls")
    assert f"{sent / 1e6:.1f} MB measured between the two workers" in tcp.reason
    assert any("through host memory" in line for line in tcp.lines)
    assert verdict("ucx").status == PASS
    assert verdict("ucx", host=64).reason == "64 bytes crossed host memory over UCX"


def test_the_matpow_cpu_record_passes_when_the_results_match() -> None:
    record = gpu_record(1.0, 1.0, 0)
    result = gpu_check.matpow_result(record, "matpow", "matpow", False, "")
    assert result.status == PASS and result.skipped[0].startswith("no NVIDIA GPU: ")
    record["results_match"] = False
    assert gpu_check.matpow_result(record, "matpow", "matpow", False, "").status == FAIL


# -- running checks and the report ----------------------------------------------------------------
def run_of(budget: float = 60.0) -> gpu_check.Run:
    args = gpu_check.parse_args(["--budget", str(budget)])
    return gpu_check.Run(args, False, Target(False), time.monotonic() + budget)


def test_a_check_passes_fails_or_skips_by_its_findings() -> None:
    def skipped_only(target: Target) -> Findings:
        return Findings(skipped=["no NVIDIA GPU: why"])

    def failing(target: Target) -> Findings:
        return Findings(lines=["saw"], problems=["first", "second"])

    def raising(target: Target) -> Findings:
        raise RuntimeError("broken\nsecond line")

    def hanging(target: Target) -> Findings:
        time.sleep(5)
        return Findings()

    run = run_of()
    skip = gpu_check.in_process(run, "s", "s", skipped_only, 10)
    assert (skip.status, skip.reason, skip.skipped) == (SKIPPED, "no NVIDIA GPU: why", [])
    fail = gpu_check.in_process(run, "f", "f", failing, 10)
    assert (fail.status, fail.reason, fail.lines) == (FAIL, "first", ["saw", "problem: second"])
    assert gpu_check.in_process(run, "r", "r", raising, 10).reason == "RuntimeError: broken"
    assert gpu_check.in_process(run, "h", "h", hanging, 1).reason.startswith("TimeoutError")
    spent = gpu_check.in_process(run_of(budget=5), "x", "x", failing, 10)
    assert spent.reason == "not run: the 5 s budget was spent"


def record_of(real: bool) -> dict:
    checks = [CheckResult("c", "a check", PASS, lines=["fine"], skipped=["no NVIDIA GPU: x"])]
    env = {
        "machine": {"host": "h", "cpu": "c", "cpu_count": 2, "memory_gib": 1.0},
        "nvidia_smi": {},
        "cuda": {},
        "versions": dict.fromkeys(gpu_report.PACKAGES, "1.0"),
    }
    return gpu_report.report_record(checks, env, "gpu" if real else "virtual", "today", 1.0)


def test_a_run_without_a_gpu_never_replaces_a_real_gpus_report(tmp_path) -> None:
    page = tmp_path / "gpu.md"
    page.write_text("intro\n")
    assert gpu_report.write_docs(page, record_of(real=False)).startswith("wrote")
    assert "no real-GPU report yet" in page.read_text() and page.read_text().startswith("intro\n")
    gpu_report.write_docs(page, record_of(real=True))
    real = page.read_text()
    assert "## Report from a real NVIDIA GPU" in real and "no real-GPU report yet" not in real
    assert "keeps its report from a real GPU" in gpu_report.write_docs(page, record_of(False))
    assert page.read_text() == real
    assert json.loads((tmp_path / "gpu-check.json").read_text())["real_gpu"] is True


def test_the_make_target_runs_the_check() -> None:
    makefile = (ROOT / "Makefile").read_text()
    assert "gpu-check:" in makefile and "-m benchmarks.gpu_check" in makefile
    assert os.path.exists(ROOT / "docs" / "gpu.md")


def test_the_digits_travel_without_scikit_learn(tmp_path, monkeypatch) -> None:
    """The accelerator machine has no scikit-learn: ``--save-digits`` keeps the example's split
    in a file carried there, which the training check reads instead."""
    monkeypatch.setattr(gpu_clusters, "DIGITS_NPZ", tmp_path / "digits.npz")
    assert gpu_check.main(["--save-digits"]) == 0
    example = gpu_clusters.load_example()
    want = example.load_digits_data()
    real_find_spec = gpu_clusters.importlib.util.find_spec
    monkeypatch.setattr(
        gpu_clusters.importlib.util,
        "find_spec",
        lambda name, *a: None if name == "sklearn" else real_find_spec(name, *a),
    )
    got = gpu_clusters.digits(example)
    assert len(got) == 4 and all(np.array_equal(g, w) for g, w in zip(got, want, strict=True))
    assert [g.dtype for g in got] == [np.float32, np.float32, np.int64, np.int64]


@pytest.mark.virtual_gpus(2)
def test_the_workers_gpu_is_read_from_their_cuda_visible_devices(dg_session, monkeypatch) -> None:
    """What the real-GPU checks ask each GPU worker (its CUDA_VISIBLE_DEVICES), here of the
    virtual GPUs' workers, threads of this process."""
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3,1")
    seen = gpu_sessions.worker_gpus(dg_session)
    assert seen == {GPU0: "3", GPU0.replace("GPU:0", "GPU:1"): "3"}
    right, wrong = Findings(), Findings()
    gpu_sessions.on_the_gpu(right, dg_session, Target(True, "3"))
    gpu_sessions.on_the_gpu(wrong, dg_session, Target(True, "0"))
    assert right.problems == [] and len(wrong.problems) == 2
    assert wrong.problems[0] == f"the worker of {GPU0} sees GPU '3' first, not '0'"


def test_the_pool_probe_reads_rmmsetup_and_the_pool_through_adaptors(monkeypatch) -> None:
    """What the memory checks ask a dask-cuda worker, against stand-ins for its RMMSetup
    plugin and RMM's resources (a statistics adaptor over the pool)."""

    class RMMSetup:
        initial_pool_size, maximum_pool_size = 256 * 2**20, 4 * 2**30

    pool = SimpleNamespace(pool_size=lambda: 512 * 2**20)
    adaptor = SimpleNamespace(upstream_mr=pool)
    rmm = SimpleNamespace(mr=SimpleNamespace(get_current_device_resource=lambda: adaptor))
    monkeypatch.setitem(sys.modules, "rmm", rmm)
    probe = gpu_clusters.pool_probe()
    worker = SimpleNamespace(plugins={"rmm-setup": RMMSetup(), "other": object()})
    assert probe(worker) == {"rmm_setup": (256 * 2**20, 4 * 2**30), "pool_bytes": 512 * 2**20}
    monkeypatch.setitem(sys.modules, "rmm", None)  # no RMM: nothing observable
    assert probe(SimpleNamespace(plugins={})) == {"rmm_setup": None, "pool_bytes": None}
    f = Findings()
    gpu_clusters._check_pool(f, probe(worker) | {"rmm_setup": (256 * 2**20, None)}, (1, 2), None)
    assert f.problems == [f"RMMSetup (initial, maximum) = ({256 * 2**20}, None), want (1, 2)"]
