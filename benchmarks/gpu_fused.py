"""The GPU check's row for fused kernels bit for bit: its verdict from the test outcomes.

On a GPU the row is the outcome of ``tests/gpu/test_fused_chains_gpu.py`` within the run of
the ``gpu``-marked tests (a hypothesis property: random chains holding multiply-then-add and
division, float32 and float64, one fused CuPy kernel built with ``--fmad=false`` against
CuPy's ops one by one and NumPy's, bit for bit). Without a GPU it is the same property on the
CPU's fused loops (``tests/unit/test_fused_chains.py``, run by itself), and the GPU side is
skipped.
"""

from __future__ import annotations

from benchmarks.gpu_report import FAIL, NO_GPU, PASS, SKIPPED, CheckResult

NAME, TITLE = "fused-chains", "fused kernels bit for bit (multiply-add chains, hypothesis)"
GPU_TEST = "test_fused_chains_gpu"
CPU_TEST = "tests/unit/test_fused_chains.py"


def fused_chains_result(
    real: bool, gpu_tests: list[tuple[str, str, str]] | None, cpu_tests: list | None = None
) -> CheckResult:
    """The row's verdict: on a GPU, the outcome of :data:`GPU_TEST` among ``gpu_tests``
    ((test, outcome, message) from the JUnit XML); without one, that of :data:`CPU_TEST`
    (``cpu_tests``), the GPU side skipped.

    >>> case = "tests.gpu.test_fused_chains_gpu::test_a"
    >>> fused_chains_result(True, [(case, "passed", "")]).status
    'PASS'
    >>> fused_chains_result(True, [(case, "failure", "4 of 256 elements differ")]).reason
    'fused vs unfused bits differ: 4 of 256 elements differ'
    >>> fused_chains_result(False, None, [("tests.unit.test_fused_chains::t", "passed", "")]).status
    'SKIPPED'
    """
    if not real:
        return _cpu_result(cpu_tests)
    ours = [t for t in gpu_tests or () if GPU_TEST in t[0]]
    if not ours:
        return CheckResult(NAME, TITLE, FAIL, f"{GPU_TEST} did not run (see the gpu-tests row)")
    bad = [(n, o, m) for n, o, m in ours if o in ("failure", "error", "skipped")]
    lines = [f"{n}: {o}" + (f": {m[:300]}" if m else "") for n, o, m in ours]
    if bad:
        return CheckResult(NAME, TITLE, FAIL, f"fused vs unfused bits differ: {bad[0][2]}", lines)
    lines.append("float32 and float64 chains of x*y+z, z-a*b, /, sqrt: fused = CuPy = NumPy")
    return CheckResult(NAME, TITLE, PASS, lines=lines)


def _cpu_result(cpu_tests: list | None) -> CheckResult:
    """Without a GPU: the CPU loops' property must pass; the GPU's is skipped."""
    if not cpu_tests:
        return CheckResult(NAME, TITLE, FAIL, f"{CPU_TEST} did not run")
    bad = [(n, o, m) for n, o, m in cpu_tests if o != "passed"]
    lines = [f"{n}: {o}" + (f": {m[:300]}" if m else "") for n, o, m in cpu_tests]
    if bad:
        return CheckResult(NAME, TITLE, FAIL, f"the CPU's fused loops: {bad[0][2]}", lines)
    why = (
        f"{NO_GPU}: the fused CuPy kernels were not compared (tests/gpu/{GPU_TEST}.py); "
        "the same chains passed on the CPU's fused loops"
    )
    return CheckResult(NAME, TITLE, SKIPPED, why, lines)
