"""The kernel cache on disk (daskgraph.kernels.kernel_cache) and the compile server.

Each case ends in a correct run: the fused loop's result equals the ops' one by one, bit for
bit. Programs that must start cold run as processes of their own, each with the cache folder
of its test (``DASK_DASKGRAPH__CACHE_DIR``); what they compiled and loaded is what
``kernel_cache.COUNTS`` says (a compile in the compile server counts as one of its asker's).
"""

from __future__ import annotations

import json
import logging
import os
import pathlib
import pickle
import shutil
import subprocess
import sys
import threading
import time

import dask.config
import numpy as np
import pytest

from daskgraph.kernels import fused, kernel_cache
from daskgraph.kernels.fused import FusedKernel

ROOT = pathlib.Path(__file__).resolve().parents[2]

#: a program that runs a 30-op chain (``now``: compiled in its thread; ``run``: as a run
#: would, its second call having it compiled, then waiting for it) and prints what it counted
PROGRAM = """
import json, sys, time, pathlib
import numpy as np
from daskgraph.kernels import kernel_cache
from daskgraph.kernels.fused import FusedKernel, compile_now, settle

steps = [("s0", "multiply", (0, 1))]
for k in range(1, 30):
    steps.append((f"s{k}", "add" if k % 2 else "multiply", (1 + k, 0)))
kernel = FusedKernel(tuple(steps), 2)
x = np.linspace(-2, 2, 256, dtype=np.float32)
y = np.float32(0.75)
if len(sys.argv) > 2:  # (wait for the go of the test: both processes at once)
    pathlib.Path(sys.argv[2] + ".ready").touch()
    while not pathlib.Path(sys.argv[2]).exists():
        time.sleep(0.001)
if sys.argv[1] == "now":
    looped = compile_now(kernel, x, y) is not None
else:
    kernel(np, x, y), kernel(np, x, y)
    settle()
    kernel(np, x, y)
    looped = bool(kernel._loops)
same = kernel(np, x, y).tobytes() == kernel.one_by_one(np, (x, y)).tobytes()
print(json.dumps({"looped": looped, "same": same, **kernel_cache.COUNTS}))
"""


def run_program(
    folder: pathlib.Path, *args: str, read_only: bool = False, server: bool = False
) -> subprocess.Popen:
    """Run :data:`PROGRAM` with the cache folder ``folder`` (``read_only``: as a user the
    permission bits bind, root too; ``server``: compiling in the compile server)."""
    env = dict(os.environ, DASK_DASKGRAPH__CACHE_DIR=str(folder))
    env["DASK_DASKGRAPH__COMPILE_PROCESS"] = str(server)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    command = [sys.executable, "-c", PROGRAM, *args]
    if read_only and os.getuid() == 0:  # (root writes anywhere, but for these capabilities)
        setpriv = shutil.which("setpriv")
        if setpriv is None:
            pytest.skip("running as root without setpriv: no folder is read-only")
        command = [setpriv, "--bounding-set=-dac_override,-dac_read_search", "--", *command]
    return subprocess.Popen(command, stdout=subprocess.PIPE, text=True, env=env)


def counted(proc: subprocess.Popen) -> dict:
    out, _ = proc.communicate(timeout=180)
    assert proc.returncode == 0, out
    result = json.loads(out.strip().splitlines()[-1])
    assert result["looped"] and result["same"], result
    return result


def chain(n: int = 12) -> FusedKernel:
    steps = [("s0", "multiply", (0, 1))]
    for k in range(1, n):
        steps.append((f"s{k}", "add" if k % 2 else "subtract", (1 + k, 0)))
    return FusedKernel(tuple(steps), 2)


X = np.linspace(-3, 3, 64, dtype=np.float32)
Y = np.float32(1.25)


def loaded(folder: pathlib.Path, kernel: FusedKernel) -> tuple[bool, dict]:
    """Build the loop of ``kernel`` from ``folder`` in this process: whether it gives the
    ops' bits, and what it compiled and loaded."""
    before = dict(kernel_cache.COUNTS)
    with dask.config.set({"daskgraph.cache-dir": str(folder)}):
        loop = fused.build(kernel, (fused._kind(X), fused._kind(np.asarray(Y))))
    out = np.empty_like(X)
    loop(out, X, Y)
    same = out.tobytes() == kernel.one_by_one(np, (X, Y)).tobytes()
    return same, {k: kernel_cache.COUNTS[k] - before[k] for k in ("compiled", "loaded")}


def cache_files(folder: pathlib.Path, suffix: str) -> list[pathlib.Path]:
    return sorted((folder / "numba" / "__pycache__").glob(f"*{suffix}"))


@pytest.mark.parametrize("how, server", [("now", False), ("run", False), ("run", True)])
def test_a_second_process_compiles_nothing(tmp_path, how, server):
    first = counted(run_program(tmp_path, how, server=server))
    assert first["compiled"] == 1 and first["compiled elsewhere"] == server
    assert first["loaded"] == server  # (what the server compiled, this process loads)
    second = counted(run_program(tmp_path, how, server=server))
    assert second["compiled"] == 0 and second["loaded"] == 1


def test_two_processes_write_one_entry_at_once(tmp_path):
    go = tmp_path / "go"
    procs = [run_program(tmp_path / "cache", "now", str(go)) for _ in range(2)]
    deadline = time.monotonic() + 120
    while not pathlib.Path(f"{go}.ready").exists() and time.monotonic() < deadline:
        time.sleep(0.01)
    go.touch()
    results = [counted(proc) for proc in procs]
    assert sum(r["compiled"] for r in results) >= 1
    assert counted(run_program(tmp_path / "cache", "now"))["compiled"] == 0


@pytest.mark.parametrize("suffix", [".nbi", ".nbc", ".py"])
def test_a_truncated_entry_is_rebuilt(tmp_path, suffix):
    kernel = chain()
    assert loaded(tmp_path, kernel) == (True, {"compiled": 1, "loaded": 0})
    files = cache_files(tmp_path, suffix) or sorted((tmp_path / "numba").glob(f"k*{suffix}"))
    assert files
    texts = [path.read_bytes() for path in files]
    for path in files:
        path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    # Numba's files: dropped and compiled again; the module's: written again (Numba's files,
    # keyed by the hash of its text, then load)
    again = {"compiled": 1, "loaded": 0} if suffix != ".py" else {"compiled": 0, "loaded": 1}
    assert loaded(tmp_path, kernel) == (True, again)
    assert loaded(tmp_path, kernel) == (True, {"compiled": 0, "loaded": 1})
    if suffix == ".py":
        assert [path.read_bytes() for path in files] == texts


def test_a_cache_of_another_numba_version_is_not_read(tmp_path, monkeypatch):
    kernel = chain()
    assert loaded(tmp_path, kernel)[0]
    # an index written by another Numba: not unpickled past its version, compiled again
    for index in cache_files(tmp_path, ".nbi"):
        with open(index, "rb") as f:
            pickle.load(f)
            rest = f.read()
        with open(index, "wb") as f:
            pickle.dump("0.1.0", f)
            f.write(rest)
    assert loaded(tmp_path, kernel) == (True, {"compiled": 1, "loaded": 0})
    # another Numba (or NumPy, Python, CPU) keys another entry
    text = fused.module_text(kernel, (fused._kind(X), fused._kind(np.asarray(Y))))[0]
    path = kernel_cache.entry_path(text, tmp_path)
    monkeypatch.setattr(kernel_cache, "_fingerprint", ["numba 0.1.0"])
    assert kernel_cache.entry_path(text, tmp_path) != path
    assert loaded(tmp_path, kernel) == (True, {"compiled": 1, "loaded": 0})


def test_a_folder_others_can_write_is_not_used(tmp_path, caplog):
    folder = tmp_path / "shared"
    folder.mkdir(mode=0o777)
    folder.chmod(0o777)
    with caplog.at_level(logging.WARNING, logger="daskgraph.kernels.cache"):
        assert loaded(folder, chain()) == (True, {"compiled": 1, "loaded": 0})
        assert loaded(folder, chain()) == (True, {"compiled": 1, "loaded": 0})
    assert not (folder / "numba").exists()
    assert len([r for r in caplog.records if "not used" in r.getMessage()]) == 1


def test_a_read_only_cache_folder_ends_in_a_correct_run(tmp_path):
    folder = tmp_path / "read-only"
    folder.mkdir(mode=0o500)
    assert counted(run_program(folder, "now", read_only=True))["compiled"] == 1
    assert not list(folder.iterdir())


def test_a_warm_read_only_cache_folder_loads(tmp_path):
    assert counted(run_program(tmp_path, "now"))["compiled"] == 1
    for folder in (tmp_path, tmp_path / "numba", tmp_path / "numba" / "__pycache__"):
        folder.chmod(0o500)
    try:
        second = counted(run_program(tmp_path, "now", read_only=True))
    finally:
        for folder in (tmp_path, tmp_path / "numba", tmp_path / "numba" / "__pycache__"):
            folder.chmod(0o700)
    assert second["compiled"] == 0 and second["loaded"] == 1


def test_a_kernel_arrives_under_a_busy_run_loop(tmp_path):
    """Compiled in the compile server while two threads run the chain op by op without a
    pause (what a continuous ``sess.run`` loop does to a compile thread of its process)."""
    kernel = chain(30)
    x = np.linspace(-1, 1, 256, dtype=np.float32)
    kind = (fused._kind(x), fused._kind(np.asarray(Y)))
    before = kernel_cache.COUNTS["compiled elsewhere"]
    stop = threading.Event()

    def busy() -> None:
        while not stop.is_set():
            kernel(np, x, Y)

    with dask.config.set({"daskgraph.cache-dir": str(tmp_path), "daskgraph.compile-process": True}):
        threads = [threading.Thread(target=busy, daemon=True) for _ in range(2)]
        for thread in threads:
            thread.start()
        try:
            deadline = time.monotonic() + 150
            while kind not in kernel._loops and time.monotonic() < deadline:
                time.sleep(0.05)
        finally:
            stop.set()
            for thread in threads:
                thread.join()
        assert kind in kernel._loops, "the loop did not arrive within 150 s"
        assert kernel_cache.COUNTS["compiled elsewhere"] == before + 1
        assert kernel_cache.is_cached(fused.module_text(kernel, kind)[0])
    assert kernel(np, x, Y).tobytes() == kernel.one_by_one(np, (x, Y)).tobytes()


def test_the_compile_server_runs_in_a_daemonic_process(tmp_path):
    """A daemonic process (as Dask's nanny starts its workers) may not have
    ``multiprocessing`` children, but has a compile server."""
    import multiprocessing

    code = DAEMONIC.format(folder=str(tmp_path), out=str(tmp_path / "result.json"))
    proc = multiprocessing.get_context("spawn").Process(target=exec, args=(code,), daemon=True)
    proc.start()
    proc.join(timeout=180)
    assert proc.exitcode == 0
    result = json.loads((tmp_path / "result.json").read_text())
    assert result == {"same": True, "compiled": 1, "compiled elsewhere": 1, "loaded": 1}


#: the daemonic process's program (run by exec: nothing of this module to pickle)
DAEMONIC = """
import json
import dask.config
import numpy as np
from daskgraph.kernels import fused, kernel_cache
from daskgraph.kernels.fused import FusedKernel

steps = (("s0", "multiply", (0, 1)), ("s1", "add", (2, 0)), ("s2", "subtract", (3, 1)))
kernel = FusedKernel(steps, 2)
x, y = np.linspace(-3, 3, 64, dtype=np.float32), np.float32(1.25)
with dask.config.set({{"daskgraph.cache-dir": {folder!r}}}):
    loop = fused.build(kernel, (fused._kind(x), fused._kind(np.asarray(y))), elsewhere=True)
out = np.empty_like(x)
loop(out, x, y)
same = out.tobytes() == kernel.one_by_one(np, (x, y)).tobytes()
with open({out!r}, "w") as f:
    json.dump({{"same": same, **kernel_cache.COUNTS}}, f)
"""


#: a program that ends while its compile server compiles a long chain
ENDS_WHILE_COMPILING = """
import time
import numpy as np
from daskgraph.kernels import compile_server
from daskgraph.kernels.fused import FusedKernel

steps = [("s0", "multiply", (0, 1))]
steps += [(f"s{k}", "add" if k % 2 else "multiply", (1 + k, 0)) for k in range(1, 250)]
kernel = FusedKernel(tuple(steps), 2)
x, y = np.linspace(-1, 1, 256, dtype=np.float32), np.float32(0.5)
kernel(np, x, y), kernel(np, x, y)
deadline = time.monotonic() + 60
server = compile_server.SERVER
while not (server.running and server._lock.locked()) and time.monotonic() < deadline:
    time.sleep(0.001)  # (until the compile thread has sent the request and waits for it)
print(compile_server.SERVER._proc.pid, flush=True)
"""


def test_a_process_ends_with_its_compile_server(tmp_path):
    env = dict(os.environ, DASK_DASKGRAPH__CACHE_DIR=str(tmp_path))
    env["DASK_DASKGRAPH__COMPILE_PROCESS"] = "true"
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    done = subprocess.run(
        [sys.executable, "-c", ENDS_WHILE_COMPILING],
        capture_output=True, text=True, env=env, timeout=180,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    pid = int(done.stdout.split()[-1])
    with pytest.raises(ProcessLookupError):  # (killed and reaped by its parent's exit)
        os.kill(pid, 0)


#: a program calling one of daskgraph's own ``njit(cache=True)`` functions (the slot loops)
SLOT_LOOP = """
import json
import numpy as np
from daskgraph.kernels import slot_loops

var, accum = np.ones(3, np.float32), np.zeros(3, np.float32)
slot_loops.adagrad(var, accum, np.full(3, 2.0, np.float32), np.float32(0.5))
stats = slot_loops.adagrad.stats
print(json.dumps({"var": var.tolist(), "path": stats.cache_path,
                  "hits": sum(stats.cache_hits.values())}))
"""


def run_slot_loop(folder: pathlib.Path) -> dict:
    env = dict(os.environ, DASK_DASKGRAPH__CACHE_DIR=str(folder))
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    done = subprocess.run(
        [sys.executable, "-c", SLOT_LOOP], capture_output=True, text=True, env=env, timeout=180
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["var"] == [0.5, 0.5, 0.5]
    return result


def test_daskgraphs_own_cached_functions_keep_their_files_in_the_cache_folder(tmp_path):
    first = run_slot_loop(tmp_path)
    assert first["path"] == str(tmp_path / "numba" / "daskgraph.kernels.slot_loops")
    assert first["hits"] == 0 and run_slot_loop(tmp_path)["hits"] == 1
    shared = tmp_path / "shared"  # (a folder others may write: its pickles are not read)
    shared.mkdir()
    shared.chmod(0o777)
    result = run_slot_loop(shared)
    assert result["hits"] == 0 and not result["path"].startswith(str(shared))


def test_the_compile_server_runs_this_daskgraph_whatever_the_working_folder_holds(tmp_path):
    shadow = tmp_path / "shadow"  # (a working folder with a daskgraph of its own)
    (shadow / "daskgraph" / "kernels").mkdir(parents=True)
    (shadow / "daskgraph" / "__init__.py").touch()
    (shadow / "daskgraph" / "kernels" / "__init__.py").touch()
    program = tmp_path / "program.py"
    program.write_text(PROGRAM)
    env = dict(os.environ, DASK_DASKGRAPH__CACHE_DIR=str(tmp_path / "cache"))
    env["DASK_DASKGRAPH__COMPILE_PROCESS"] = "true"
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    proc = subprocess.Popen(
        [sys.executable, str(program), "run"], stdout=subprocess.PIPE, text=True, env=env,
        cwd=shadow,
    )  # fmt: skip
    assert counted(proc)["compiled elsewhere"] == 1
