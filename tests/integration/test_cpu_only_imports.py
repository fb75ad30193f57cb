"""Where no GPU is found, daskgraph imports nothing GPU-related: no CuPy, NVML, RMM, dask-cuda
or CUDA bindings, in the client or (with stand-in packages) in any worker.

Each test runs a small graph through ``dg.Session()`` on the embedded cluster with one virtual
GPU (``DASK_DASKGRAPH__VIRTUAL_GPUS=1``, worker processes as shipped) in a fresh interpreter, so
that nothing imported by other tests counts. On a machine that has an NVIDIA driver, the
subprocess hides it from daskgraph (``daskgraph.cluster.gpus._driver_present`` returns False), so
the tests mean "no GPU found" everywhere.
"""

from __future__ import annotations

import json
import os
import pathlib
import textwrap

import distributed
from script_report import script_report

import daskgraph
from daskgraph.cluster import gpus

GPU_MODULES = ("cupy", "pynvml", "rmm", "dask_cuda", "cuda")
LOCAL = "/job:localhost/replica:0/task:0/device:"

# The client: note what `import distributed` alone brings in (distributed's own GPU diagnostics
# import pynvml and rmm wherever they are installed, whatever daskgraph does), then run a graph
# with a matmul on the virtual GPU:0 and report what is in sys.modules afterwards.
CLIENT = textwrap.dedent(
    """
    import json, os, sys
    GPU_MODULES = {modules!r}
    import distributed
    before = sorted(m for m in GPU_MODULES if m in sys.modules)
    import numpy as np
    import daskgraph as dg
    import daskgraph.cluster.gpus
    if os.environ.get("DG_HIDE_DRIVER") == "1":
        daskgraph.cluster.gpus._driver_present = lambda: False
    with dg.device("/cpu:0"):
        a = dg.constant([[1.0, 2.0], [3.0, 4.0]], name="a")
    with dg.device("/gpu:0"):
        b = dg.matmul(a, a, name="b")
    with dg.device("/cpu:0"):
        c = dg.add(b, 1.0, name="c")
    with dg.Session() as sess:
        devices = [(d.name, d.kind) for d in sess.list_devices()]
        value = sess.run(c)
    after = sorted(m for m in GPU_MODULES if m in sys.modules)
    print(json.dumps({{"before": before, "after": after, "devices": devices,
                       "value": value.tolist(), "pid": os.getpid()}}))
    """
).format(modules=GPU_MODULES)

# A stand-in for a GPU package: it records who tried to import it (the file that ran the import
# statement), then fails as a package that is not installed would.
STUB = textwrap.dedent(
    """
    import json, os, traceback
    _stack = [f for f in traceback.extract_stack()[:-1] if not f.filename.startswith("<")]
    _importer = _stack[-1] if _stack else None
    with open(os.environ["DG_IMPORT_LOG"], "a") as _log:
        _log.write(json.dumps({
            "module": __name__,
            "pid": os.getpid(),
            "importer": f"{_importer.filename}:{_importer.lineno}" if _importer else "",
        }) + "\\n")
    raise ImportError(f"{__name__} is a stand-in for a package that is not installed here")
    """
)


def run_client(extra_env: dict[str, str] | None = None) -> dict:
    env = {
        **os.environ,
        "DASK_DASKGRAPH__VIRTUAL_GPUS": "1",
        "DG_HIDE_DRIVER": "1" if gpus._driver_present() else "0",
        **(extra_env or {}),
    }
    report = script_report(["-c", CLIENT], env, timeout=180)
    assert report["devices"] == [[LOCAL + "CPU:0", "cpu"], [LOCAL + "GPU:0", "virtual-gpu"]]
    assert report["value"] == [[8.0, 11.0], [16.0, 23.0]]
    return report


def test_client_imports_no_gpu_package() -> None:
    report = run_client()
    # nothing GPU-related beyond what `import distributed` itself brings (its diagnostics import
    # pynvml and rmm where they are installed); on a machine without GPU packages: nothing
    assert [m for m in report["after"] if m not in report["before"]] == []


def _at_start_up(importer: str) -> bool:
    """Whether an import came from a module that ``site`` runs at every interpreter's start
    (a ``.pth`` file's module, directly in ``site-packages``): cuda-bindings, which the UCX
    extra installs, makes ``cuda`` a namespace package there in every process, whatever runs.

    >>> _at_start_up("/v/lib/python3.11/site-packages/_cuda_bindings_redirector.py:9")
    True
    >>> _at_start_up("/v/lib/python3.11/site-packages/distributed/worker.py:3054")
    False
    """
    folder = pathlib.PurePath(importer.rsplit(":", 1)[0]).parent
    return folder.name in ("site-packages", "dist-packages")


def test_no_process_tries_to_import_a_gpu_package(tmp_path: pathlib.Path) -> None:
    """With stand-ins for the GPU packages first on the path of the client and of every worker
    process, no daskgraph code tries to import any of them, and nothing at all tries CuPy,
    dask-cuda or the CUDA bindings (distributed's own diagnostics try pynvml and rmm)."""
    stubs = tmp_path / "stubs"
    for name in GPU_MODULES:
        (stubs / name).mkdir(parents=True)
        (stubs / name / "__init__.py").write_text(STUB)
    log = tmp_path / "imports.jsonl"
    log.touch()
    path = os.pathsep.join(p for p in (str(stubs), os.environ.get("PYTHONPATH", "")) if p)
    report = run_client({"PYTHONPATH": path, "DG_IMPORT_LOG": str(log)})
    tries = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    tries = [t for t in tries if not _at_start_up(t["importer"])]
    package = str(pathlib.Path(daskgraph.__file__).parent)
    by_daskgraph = [t for t in tries if t["importer"].startswith(package)]
    assert by_daskgraph == []
    assert [t for t in tries if t["module"] not in ("pynvml", "rmm")] == []
    distributed_dir = str(pathlib.Path(distributed.__file__).parent)
    assert all(t["importer"].startswith(distributed_dir) for t in tries), tries
    assert {t["pid"] for t in tries} > {report["pid"]}  # the workers were watched too
    assert report["after"] == []
