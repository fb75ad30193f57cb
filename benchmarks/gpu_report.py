"""The GPU check's results and report: what each check found, the machine it ran on, and the
report (Markdown and JSON) that ``docs/gpu.md`` keeps.

A check ends ``PASS``, ``FAIL`` or ``SKIPPED`` (with the reason), and a check that passed may
still have parts it could not do on this machine, each said in a ``skipped: ...`` line. The
report is written between two markers of ``docs/gpu.md`` (the page's other sections are kept);
a run on a machine without a GPU never replaces a report that came from a real GPU.

>>> r = CheckResult("demo", "a demo", PASS, lines=["2 ops checked"], skipped=["no GPU (why)"])
>>> print(console_lines(r)[0])
PASS     a demo (0.0 s)
>>> console_lines(r)[2]
'         skipped: no GPU (why)'
"""

from __future__ import annotations

import functools
import importlib
import importlib.metadata
import importlib.util
import json
import os
import pathlib
import platform
import re
import shutil
import subprocess
import sys
from dataclasses import asdict, dataclass, field
from typing import Any

PASS, FAIL, SKIPPED = "PASS", "FAIL", "SKIPPED"
NO_GPU = "no NVIDIA GPU"
BEGIN = "<!-- gpu-check:report:begin -->"
END = "<!-- gpu-check:report:end -->"
REAL_GPU_MARK = "<!-- gpu-check:real-gpu -->"
#: the modules whose versions the report gives, by the name they are imported as
PACKAGES = (
    "cupy",
    "rmm",
    "dask_cuda",
    "distributed",
    "dask",
    "numpy",
    "pynvml",
    "daskgraph",
    "pytest",
    "sklearn",
)
#: what a real-GPU run cannot do without (the ``cuda12``/``cuda13`` extra)
GPU_STACK = ("cupy", "rmm", "dask_cuda", "pynvml")
#: module -> pip name of what any run imports (daskgraph's, Dask's and the check's own needs)
NEEDED = {
    "numpy": "numpy", "yaml": "pyyaml", "click": "click", "cloudpickle": "cloudpickle",
    "toolz": "toolz", "fsspec": "fsspec", "partd": "partd", "dask": "dask",
    "distributed": "distributed", "msgpack": "msgpack", "psutil": "psutil",
    "sortedcontainers": "sortedcontainers", "tblib": "tblib", "tornado": "tornado",
    "zict": "zict", "jinja2": "jinja2", "markupsafe": "markupsafe", "packaging": "packaging",
    "bokeh": "bokeh", "pytest": "pytest", "absl": "absl-py",
}  # fmt: skip
#: module -> pip name of the GPU stack (CUDA 13's; the cuda12 extra has the -cu12 ones)
NEEDED_ON_A_GPU = {
    "cupy": "cupy-cuda13x", "rmm": "rmm-cu13", "dask_cuda": "dask-cuda",
    "pynvml": "nvidia-ml-py",
}  # fmt: skip


@dataclass
class CheckResult:
    """What one check found: its status, what it saw (``lines``), the parts it could not do
    here and why (``skipped``), its figures (``data``) and how long it took."""

    name: str
    title: str
    status: str
    reason: str = ""
    lines: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    data: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0


def console_lines(result: CheckResult) -> list[str]:
    """The check's lines as the console shows them: status and title, then indented details."""
    head = f"{result.status:<8} {result.title} ({result.seconds:.1f} s)"
    if result.reason:
        head += f": {result.reason}"
    pad = " " * 9
    return [
        head,
        *(pad + line for line in result.lines),
        *(pad + f"skipped: {s}" for s in result.skipped),
    ]


def missing_modules(real: bool) -> dict[str, str]:
    """module -> pip name of what this run needs and cannot import (``real``: on a GPU).

    >>> missing_modules(False)
    {}
    """
    wanted = {**NEEDED, **(NEEDED_ON_A_GPU if real else {})}
    return {m: pip for m, pip in wanted.items() if importlib.util.find_spec(m) is None}


# -- the machine ----------------------------------------------------------------------------------
def package_version(module: str) -> str:
    """The installed version of the package that provides ``module``, or ``"absent"``.

    >>> package_version("numpy") != "absent"
    True
    >>> package_version("no_such_module_here")
    'absent'
    """
    dists = _distributions().get(module, [])
    for dist in dists:
        try:
            return importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            continue
    if importlib.util.find_spec(module) is None:
        return "absent"
    try:  # on the path but not installed (PYTHONPATH=$PWD): ask the module
        return str(getattr(importlib.import_module(module), "__version__", "unknown"))
    except Exception as exc:  # importable in name only
        return f"broken ({type(exc).__name__}: {exc})"


@functools.cache
def _distributions() -> dict[str, list[str]]:
    return importlib.metadata.packages_distributions()


def nvidia_smi() -> dict[str, Any]:
    """GPUs, driver and the driver's CUDA version as ``nvidia-smi`` says ({} without one)."""
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return {}
    query = "index,name,driver_version,memory.total,pci.bus_id"
    try:
        listed = _run([smi, f"--query-gpu={query}", "--format=csv,noheader,nounits"])
        header = _run([smi])
    except (OSError, subprocess.SubprocessError) as exc:
        return {"error": f"nvidia-smi failed: {exc}"}
    gpus = []
    for line in listed.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) == 5:
            index, name, driver, memory, bus = parts
            gpus.append(
                {
                    "index": index,
                    "name": name,
                    "driver": driver,
                    "memory_mib": memory,
                    "pci_bus_id": bus,
                }
            )
    cuda = re.search(r"CUDA Version:\s*([\d.]+)", header)
    return {
        "gpus": gpus,
        "driver": gpus[0]["driver"] if gpus else None,
        "cuda_driver": cuda.group(1) if cuda else None,
    }


def _run(command: list[str], timeout: float = 30) -> str:
    done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, check=False)
    return done.stdout


def cupy_cuda_versions() -> dict[str, Any]:
    """The CUDA runtime CuPy was built for and the driver's CUDA version, asked in a fresh
    process (so that this one never touches CUDA); {} without CuPy."""
    if importlib.util.find_spec("cupy") is None:
        return {}
    code = (
        "import json, cupy; r = cupy.cuda.runtime; "
        "print(json.dumps({'runtime': r.runtimeGetVersion(), 'driver': r.driverGetVersion()}))"
    )
    try:
        out = _run([sys.executable, "-c", code], timeout=120)
        found = json.loads(out.strip().splitlines()[-1])
    except (OSError, subprocess.SubprocessError, ValueError, IndexError) as exc:
        return {"error": f"CuPy could not say: {exc}"}
    return {key: _cuda_version(value) for key, value in found.items()}


def _cuda_version(number: int) -> str:
    """CUDA's version number as text.

    >>> _cuda_version(13000), _cuda_version(12040)
    ('13.0', '12.4')
    """
    return f"{number // 1000}.{number % 1000 // 10}"


def machine() -> dict[str, Any]:
    """This host: name, CPU, memory, platform and Python."""
    from benchmarks.common import _cpu_model

    memory = None
    try:
        memory = round(os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") / 2**30, 1)
    except (ValueError, OSError, AttributeError):
        pass
    return {
        "host": platform.node(),
        "cpu": _cpu_model(),
        "cpu_count": os.cpu_count(),
        "memory_gib": memory,
        "platform": platform.platform(),
        "python": sys.version.split()[0],
    }


def environment() -> dict[str, Any]:
    """Everything the report's header gives: machine, GPUs, driver, CUDA, package versions."""
    return {
        "machine": machine(),
        "nvidia_smi": nvidia_smi(),
        "cuda": cupy_cuda_versions(),
        "versions": {module: package_version(module) for module in PACKAGES},
        "environment": {
            name: os.environ.get(name) for name in ("CUDA_VISIBLE_DEVICES", "CUPY_TF32")
        },
    }


def environment_lines(env: dict[str, Any]) -> list[str]:
    """The environment as the console and the report list it."""
    smi, cuda, v = env["nvidia_smi"], env["cuda"], env["versions"]
    gpus = smi.get("gpus") or []
    names = "; ".join(f"{g['index']}: {g['name']} ({g['memory_mib']} MiB)" for g in gpus)
    return [
        f"GPU: {names or 'absent'}",
        f"driver: {smi.get('driver') or 'absent'}; CUDA (driver): "
        f"{smi.get('cuda_driver') or 'absent'}; CUDA (CuPy's runtime): "
        f"{cuda.get('runtime') or 'absent'}",
        ", ".join(f"{name} {v[name]}" for name in PACKAGES),
    ]


# -- the report -----------------------------------------------------------------------------------
def summary(results: list[CheckResult]) -> dict[str, int]:
    """How many checks ended in each status."""
    counts = {PASS: 0, FAIL: 0, SKIPPED: 0}
    for result in results:
        counts[result.status] += 1
    return counts


def report_record(
    results: list[CheckResult], env: dict[str, Any], mode: str, started: str, seconds: float
) -> dict[str, Any]:
    """The whole run as JSON-ready data."""
    return {
        "report": "gpu-check",
        "date": started,
        "mode": mode,
        "real_gpu": mode == "gpu",
        "seconds": round(seconds, 1),
        "summary": summary(results),
        "environment": env,
        "checks": [asdict(r) for r in results],
    }


def markdown(record: dict[str, Any]) -> str:
    """The report section of ``docs/gpu.md`` for one run."""
    env, counts = record["environment"], record["summary"]
    host = env["machine"]
    lines = [REAL_GPU_MARK] if record["real_gpu"] else []
    if record["real_gpu"]:
        lines += ["## Report from a real NVIDIA GPU", ""]
    else:
        lines += [
            "## Report: no real-GPU report yet",
            "",
            "No report from a real NVIDIA GPU exists yet. This is a run on a machine without "
            "one: the checks that need a GPU say `SKIPPED` and why; the rest ran on virtual "
            "GPUs (the GPU code path over NumPy).",
            "",
        ]
    lines += [
        f"Run on {record['date']} in {record['seconds']} s, `{record['mode']}` mode, on "
        f"{host['host']} ({host['cpu']}, {host['cpu_count']} CPUs, {host['memory_gib']} GiB).",
        "",
        *(f"- {line}" for line in environment_lines(env)),
        "",
        f"**{counts[PASS]} passed, {counts[FAIL]} failed, {counts[SKIPPED]} skipped.**",
        "",
        "| check | status | seconds | what it found |",
        "| --- | --- | ---: | --- |",
    ]
    for check in record["checks"]:
        found = check["lines"][0] if check["lines"] else ""
        if check["skipped"]:
            found += f" ({len(check['skipped'])} part(s) skipped: see below)"
        status = check["status"] + (f": {check['reason']}" if check["reason"] else "")
        lines.append(
            f"| {check['title']} | {_cell(status)} | {check['seconds']:.1f} | {_cell(found)} |"
        )
    lines += ["", "### Details", ""]
    for check in record["checks"]:
        lines.append(f"- **{check['title']}**: {check['status']} ({check['seconds']:.1f} s)")
        lines += [f"  - {_cell(line)}" for line in check["lines"]]
        lines += [f"  - skipped: {_cell(s)}" for s in check["skipped"]]
    return "\n".join(lines) + "\n"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def keeps_real_gpu_report(page: str) -> bool:
    """Whether the report section of ``page`` came from a real GPU."""
    start, end = page.find(BEGIN), page.find(END)
    return 0 <= start < end and REAL_GPU_MARK in page[start:end]


def write_docs(path: pathlib.Path, record: dict[str, Any]) -> str:
    """Put the run's report into ``path`` between the markers (the rest of the page kept) and
    its JSON next to it (``gpu.md``: ``gpu-check.json``); returns what was done, in words. A
    run without a real GPU leaves a page that keeps a real GPU's report alone."""
    page = path.read_text(encoding="utf-8") if path.exists() else f"{BEGIN}\n{END}\n"
    if BEGIN not in page or END not in page:
        page = page.rstrip("\n") + f"\n\n{BEGIN}\n{END}\n"
    if not record["real_gpu"] and keeps_real_gpu_report(page):
        return f"{path} keeps its report from a real GPU; this run's report was not put there"
    head, rest = page.split(BEGIN, 1)
    tail = rest.split(END, 1)[1]
    path.write_text(f"{head}{BEGIN}\n{markdown(record)}{END}{tail}", encoding="utf-8")
    data = path.with_name(f"{path.stem}-check.json")
    data.write_text(json.dumps(record, indent=2, default=str) + "\n", encoding="utf-8")
    return f"wrote the report into {path} and {data}"
