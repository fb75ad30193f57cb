"""Silent, clean exits: a program that did its job exits 0 and prints nothing it did not print.

Whether its sessions were closed or left open, after its scheduler was lost, and after
pytest's summary, nothing of Dask's shutdown (an INFO line, a ``CommClosedError``
traceback, a resource tracker's ``KeyError: '/mp-...'``) reaches the user's stderr, and the
embedded cluster's worker processes exit by themselves, leaving no semaphore behind
(:mod:`daskgraph.cluster.shutdown`). Every program runs in a fresh interpreter, as a user's would;
each verdict is about what the program printed and left, never about how fast it ran.
"""

from __future__ import annotations

import os
import pathlib
import re
import subprocess
import sys
import textwrap
from concurrent.futures import ThreadPoolExecutor

import psutil
import pytest
from distributed import Client

from daskgraph.cluster.local import local_cluster

REPO = pathlib.Path(__file__).resolve().parents[2]
#: runs of the training program, how many of every 5 have process workers (the embedded
#: cluster's default; the others have thread workers), and how many run at once. A process
#: run costs about 5 CPU-seconds (a client and scheduler, two nannies and two worker
#: processes, each importing daskgraph), a thread run about 2: 50 runs measured 167
#: CPU-seconds, under a minute and a half on 2 idle cores.
RUNS = 30
PROCESS_RUNS_IN_5 = 2
AT_A_TIME = 4
#: a run that has not ended after this long hangs at exit, which is a failure too
RUN_TIMEOUT_S = 300

TRAINING = textwrap.dedent(
    """
    import sys

    import numpy as np

    import daskgraph as dg

    mode = sys.argv[1]
    with dg.device("/cpu:0"):
        w = dg.Variable(np.ones((3, 3), np.float32), name="w")
    towers = []
    for gpu in range(2):
        with dg.device(f"/gpu:{gpu}"):
            x = dg.constant(np.full((3, 3), gpu + 1.0, np.float32))
            towers.append(dg.reduce_sum(dg.matmul(x, w)))
    with dg.device("/cpu:0"):
        loss = dg.add_n(towers)
        step = dg.train.GradientDescentOptimizer(0.01).minimize(loss)
    if mode == "with":
        with dg.Session() as sess:
            sess.run(dg.global_variables_initializer())
            for _ in range(2):
                sess.run(step)
            print("loss", sess.run(loss))
    else:
        sess = dg.Session()
        sess.run(dg.global_variables_initializer())
        for _ in range(2):
            sess.run(step)
        print("loss", sess.run(loss))
        if mode == "close":
            sess.close()
    """
)
#: the sessions of the runs: closed, left open, closed by a ``with`` block
MODES = ("close", "open", "with")
#: the loss after two steps, as the program prints it
LOSS = "loss 66.42"


def _env(**extra: str) -> dict[str, str]:
    """This checkout's daskgraph, with ``extra`` settings."""
    path = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p)
    return {**os.environ, "PYTHONPATH": path, **extra}


def _run(script: pathlib.Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(script), *args],
        capture_output=True,
        text=True,
        env=_env(**env),
        timeout=RUN_TIMEOUT_S,
        check=False,
    )


@pytest.mark.timeout(1800)
def test_a_multi_gpu_training_program_exits_silently_every_time(tmp_path) -> None:
    """30 fresh runs of a two-GPU training program (2 virtual GPUs; worker processes or
    threads), with its session closed, left open or closed by ``with``: each exits 0,
    printed its result, and wrote nothing to stderr. (Before: about 1 run with worker
    processes in 20 wrote Dask's ``Batched Comm Closed`` or a heartbeat's
    ``CommClosedError`` traceback after the program's last line.)"""
    script = tmp_path / "train.py"
    script.write_text(TRAINING)

    def one(i: int) -> tuple[str, subprocess.CompletedProcess[str]]:
        mode = MODES[i % len(MODES)]
        processes = "true" if i % 5 < PROCESS_RUNS_IN_5 else "false"
        env = {"DASK_DASKGRAPH__VIRTUAL_GPUS": "2", "DASK_DASKGRAPH__LOCAL__PROCESSES": processes}
        return f"{mode}, processes={processes}", _run(script, mode, **env)

    with ThreadPoolExecutor(AT_A_TIME) as pool:
        runs = list(pool.map(one, range(RUNS)))
    noisy = [
        f"run {i} ({mode}): rc {p.returncode}, stdout {p.stdout[-200:]!r}\n{p.stderr[-3000:]}"
        for i, (mode, p) in enumerate(runs)
        if p.returncode != 0 or p.stderr != "" or LOSS not in p.stdout
    ]
    assert not noisy, f"{len(noisy)} of {RUNS} runs were not clean:\n" + "\n".join(noisy[:3])


def _semaphores(pid: int) -> set[str]:
    """The named POSIX semaphores (multiprocessing's ``/mp-...``) process ``pid`` maps."""
    maps = pathlib.Path(f"/proc/{pid}/maps").read_text()
    return set(re.findall(r"/dev/shm/sem\.mp-[\w-]+", maps))


def _tree(pid: int) -> list[int]:
    """``pid`` and its descendants."""
    return [pid, *(p.pid for p in psutil.Process(pid).children(recursive=True))]


@pytest.mark.skipif(not pathlib.Path("/proc/self/maps").exists(), reason="reads /proc")
@pytest.mark.timeout(300)
def test_worker_processes_exit_by_themselves_and_leave_no_semaphore() -> None:
    """Closing the embedded cluster lets each worker process's nanny close its worker and
    exit (code 0) before anything is killed, so the semaphores of its multiprocessing queues
    are unlinked by their owner. (Before: nannies and their children were killed with
    SIGKILL (code -9), their six semaphores each were left in /dev/shm, and a resource
    tracker killed under a nanny still running was restarted and printed a ``KeyError`` for
    each.)"""
    cluster = local_cluster(virtual_gpus=2, processes=True, cpu_in_process=True)
    client = Client(cluster, set_as_default=False)
    try:
        client.wait_for_workers(3, timeout=120)
        nannies = [w.process for w in cluster.workers.values() if hasattr(w, "process")]
        semaphores = {s for n in nannies for pid in _tree(n.pid) for s in _semaphores(pid)}
    finally:
        client.close()
        cluster.close()
    assert len(nannies) == 2
    assert semaphores, "the premise: a nanny's queues are named semaphores in /dev/shm"
    assert [n.returncode for n in nannies] == [0, 0]
    assert sorted(s for s in semaphores if os.path.exists(s)) == []


LOST_SCHEDULER = textwrap.dedent(
    """
    import json, os, signal, socket, subprocess, sys, time

    import daskgraph as dg

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    with open("spec.json", "w") as f:
        json.dump({"worker": [f"127.0.0.1:{port}"]}, f)
    server = subprocess.Popen(
        [sys.executable, "-m", "daskgraph.cli", "server", "--cluster-spec", "spec.json",
         "--job-name", "worker", "--task-index", "0"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, start_new_session=True,
    )
    assert "serving" in server.stdout.readline()
    with dg.device("/cpu:0"):
        x = dg.constant([1.0, 2.0]) * 2.0
    sess = dg.Session(f"grpc://127.0.0.1:{port}")
    print(sess.run(x))
    os.killpg(server.pid, signal.SIGKILL)
    server.wait()
    deadline = time.monotonic() + 60
    while sess.client.status == "running" and time.monotonic() < deadline:
        time.sleep(0.05)  # until the client has noticed: it is reconnecting now
    print("client", sess.client.status)
    sess.close()
    print("closed")
    """
)


@pytest.mark.timeout(300)
def test_close_after_the_scheduler_was_killed_prints_nothing(tmp_path) -> None:
    """A session on a server whose processes were killed: ``close()`` cancels its client's
    attempts to reconnect, and prints nothing (before: a ``distributed.client - ERROR``
    line and the ``CancelledError`` traceback of the cancelled reconnection)."""
    script = tmp_path / "lost.py"
    script.write_text(LOST_SCHEDULER)
    p = subprocess.run(
        [sys.executable, str(script)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env=_env(DASK_DASKGRAPH__VIRTUAL_GPUS="0"),
        timeout=RUN_TIMEOUT_S,
        check=False,
    )
    assert p.stdout.splitlines()[0] == "[2. 4.]"
    assert p.stdout.splitlines()[1] != "client running"  # the premise: the loss was seen
    assert p.stdout.splitlines()[-1] == "closed"
    assert (p.returncode, p.stderr) == (0, "")


TINY_TESTS = textwrap.dedent(
    """
    import daskgraph as dg


    def test_on_the_fixture(dg_session):
        with dg.device("/gpu:1"):
            x = dg.constant(2.0) * 3.0
        assert dg_session.run(x) == 6.0


    def test_on_the_embedded_cluster():
        with dg.device("/cpu:0"):
            y = dg.constant(1.0) + 1.0
        with dg.Session() as sess:
            assert sess.run(y) == 2.0
    """
)


@pytest.mark.timeout(300)
def test_pytest_prints_nothing_after_its_summary(tmp_path) -> None:
    """pytest with daskgraph's plugin on tests of ``dg_session`` and of the embedded cluster:
    its summary is the last line (before: a dozen ``distributed.scheduler - INFO`` lines
    followed it, as the embedded cluster closed at exit)."""
    (tmp_path / "test_tiny.py").write_text(TINY_TESTS)
    plugins = ["-p", "daskgraph.testing", "-p", "no:cacheprovider"]
    p = subprocess.run(
        [sys.executable, "-m", "pytest", *plugins, "-q", "test_tiny.py"],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,  # one stream: what follows the summary, whichever it is
        text=True,
        env=_env(PYTEST_DISABLE_PLUGIN_AUTOLOAD="1", DASK_DASKGRAPH__VIRTUAL_GPUS="2"),
        timeout=RUN_TIMEOUT_S,
        check=False,
    )
    lines = p.stdout.rstrip("\n").splitlines()
    assert p.returncode == 0, p.stdout
    assert re.fullmatch(r"2 passed in [\d.]+s", lines[-1]), p.stdout
