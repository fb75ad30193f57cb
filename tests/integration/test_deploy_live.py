"""The deploy/ recipes, run for real on this machine against local schedulers.

* Kubernetes: ``daskgraph-worker.sh`` (the operator pods' entrypoint) starts a Dask worker that
  joins a daskgraph cluster as ``/job:worker/replica:0/task:<from the pod's name>/device:CPU:0``
  and runs ops placed there, over ``tcp://`` and over mutual TLS.
* SSH: ``start-cluster.sh`` / ``stop-cluster.sh`` with stand-ins for ``ssh`` and ``scp`` that
  run the remote commands here: the servers come up, ``daskgraph devices`` lists them, and they
  stop cleanly.
* SLURM: ``slurm_cluster.py`` with stand-ins for ``sbatch`` and ``scancel`` that run the job
  script here: each job is one task with its device-named workers.

Every wait is bounded (:func:`daskgraph.testing.within`, subprocess timeouts, deadlines), and
every process a test starts is killed by its pid if the test fails.
"""

from __future__ import annotations

import contextlib
import gc
import importlib.util
import json
import os
import pathlib
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest

import daskgraph as dg
from daskgraph.cluster.server import Server, free_ports
from daskgraph.cluster.tls import make_certificates, security_from_dir
from daskgraph.runtime.client.session import RunMetadata, RunOptions
from daskgraph.testing import within

ROOT = pathlib.Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
BIN = pathlib.Path(sys.executable).parent
DASKGRAPH = str(BIN / "daskgraph")
BASH = shutil.which("bash")
TRACE = RunOptions(trace_level=RunOptions.FULL_TRACE)
NO_GPUS = dg.SessionConfig(device_count={"GPU": 0})
UP_S = 60  # limit for workers to show up

pytestmark = pytest.mark.skipif(BASH is None, reason="needs bash")


def value(box: dict):
    if "error" in box:
        raise box["error"]
    return box["value"]


def env(**extra: str) -> dict[str, str]:
    out = {k: v for k, v in os.environ.items() if k not in ("TF_CONFIG", "DASK_WORKER_NAME")}
    out["PATH"] = f"{BIN}{os.pathsep}{out.get('PATH', '')}"
    out["DASK_DASKGRAPH__VIRTUAL_GPUS"] = "0"
    out.update(extra)
    return out


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def kill_pids(pids: list[int]) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def wait_for_devices(target: str, wanted: list[str], security=None) -> dg.Session:
    """A Session on ``target`` once every wanted device name is there (within UP_S)."""
    graph = dg.get_default_graph()

    def poll() -> dg.Session:
        deadline = time.monotonic() + UP_S - 5
        while True:
            sess = dg.Session(target, graph=graph, security=security, config=NO_GPUS)
            names = {d.name for d in sess.list_devices()}
            if set(wanted) <= names:
                return sess
            sess.close()
            if time.monotonic() > deadline:
                raise TimeoutError(f"{sorted(set(wanted) - names)} missing; there are {names}")
            time.sleep(0.3)

    return value(within(UP_S, poll))


def device_worker(sess: dg.Session, name: str) -> str:
    (found,) = [d.worker for d in sess.list_devices() if d.name == name]
    return found


# -- Kubernetes: daskgraph-worker.sh -------------------------------------------------------------
@pytest.mark.parametrize("tls", [False, True], ids=["tcp", "tls"])
def test_kubernetes_worker_script_joins_as_its_device(tmp_path, tls):
    security = None
    tls_dir = tmp_path / "tls"
    if tls:
        make_certificates(tls_dir)
        security = security_from_dir(tls_dir)
    (port,) = free_ports(1)
    # the scheduler (and a chief's CPU) from a one-task daskgraph cluster
    chief = value(
        within(
            30,
            lambda: Server(
                {"chief": [f"localhost:{port}"]},
                "chief",
                0,
                config=NO_GPUS,
                security=security,
                virtual_gpus=0,
            ),
        )
    )
    pod = "daskgraph-default-worker-0f1e2d3c4b"
    task = int(
        subprocess.run(["cksum"], input=pod, capture_output=True, text=True).stdout.split()[0]
    )
    name = f"/job:worker/replica:0/task:{task}/device:CPU:0"
    log = tmp_path / "worker.log"
    script = [BASH, str(DEPLOY / "kubernetes" / "daskgraph-worker.sh"), "CPU"]
    options = ["--resources", "CPU=1", "--nthreads", "1", "--host", "127.0.0.1", "--no-dashboard"]
    with log.open("w") as out:
        proc = subprocess.Popen(
            [*script, *options],
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=env(
                # the operator says tcp:// whatever the scheduler speaks; the script switches
                DASK_SCHEDULER_ADDRESS=f"tcp://localhost:{port}",
                DASK_WORKER_NAME=pod,
                DASKGRAPH_TLS_DIR=str(tls_dir),
            ),
        )
    try:
        with dg.Graph().as_default():
            with dg.device("/job:worker"):
                x = dg.constant(20.0, name="x")
            with dg.device("/job:chief/task:0/cpu:0"):
                y = dg.add(x, 22.0, name="y")
            sess = wait_for_devices(chief.target, [name], security)
            try:
                worker = device_worker(sess, name)
                assert worker.startswith("tls://" if tls else "tcp://")
                md = RunMetadata()
                assert (
                    value(within(30, lambda: sess.run(y, options=TRACE, run_metadata=md))) == 42.0
                )
                assert md.step_stats.worker_of("x") == worker
            finally:
                sess.close()
        proc.terminate()  # the script exec'd `dask worker`: SIGTERM stops it
        assert proc.wait(30) in (0, -signal.SIGTERM, 143), log.read_text()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
        value(within(30, chief.stop))


# -- SSH: start-cluster.sh / stop-cluster.sh -----------------------------------------------------
FAKE_SSH = """#!/usr/bin/env bash
# ssh stand-in: run the remote command here, as ssh runs it on the host (through a shell)
echo "$1" >>"$(dirname "$0")/ssh-hosts.log"
shift
exec bash -c "$*"
"""
FAKE_SCP = """#!/usr/bin/env bash
# scp stand-in: SOURCES... HOST:DEST -> cp SOURCES... DEST
args=("$@")
dest=${args[-1]}
exec cp "${args[@]:0:${#args[@]}-1}" "${dest#*:}"
"""


def _stand_ins(folder: pathlib.Path, **scripts: str) -> pathlib.Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in scripts.items():
        path = folder / name
        path.write_text(text)
        path.chmod(0o755)
    return folder


@pytest.mark.parametrize("tls", [False, True], ids=["tcp", "tls"])
def test_ssh_scripts_start_and_stop_a_cluster(tmp_path, tls):
    fakes = _stand_ins(tmp_path / "bin", **{"fake-ssh": FAKE_SSH, "fake-scp": FAKE_SCP})
    ports = free_ports(2)
    spec = tmp_path / "cluster.json"
    spec.write_text(json.dumps({"local": [f"localhost:{p}" for p in ports]}))
    remote = tmp_path / "remote"  # the hosts' ~/.daskgraph
    certs = tmp_path / "certs"
    options = []
    if tls:
        make_certificates(certs)
        options = ["--tls-dir", str(certs)]
    script_env = env(
        SSH=str(fakes / "fake-ssh"),
        SCP=str(fakes / "fake-scp"),
        DASKGRAPH=DASKGRAPH,
        PYTHON=sys.executable,
    )

    def script(name: str, *args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [BASH, str(DEPLOY / "ssh" / name), "--remote-dir", str(remote), *args, str(spec)],
            capture_output=True,
            text=True,
            timeout=60,
            env=script_env,
        )

    pids: list[int] = []
    try:
        started = script("start-cluster.sh", *options)
        assert started.returncode == 0, started.stderr
        pids = [int((remote / f"local-{i}.pid").read_text()) for i in range(2)]
        assert (remote / "cluster.json").read_text() == spec.read_text()
        if tls:
            assert sorted(p.name for p in (remote / "tls").iterdir()) == [
                "ca.pem",  # not the CA's key
                "client-key.pem",
                "client.pem",
                "scheduler-key.pem",
                "scheduler.pem",
                "worker-key.pem",
                "worker.pem",
            ]
        names = [f"/job:local/replica:0/task:{i}/device:CPU:0" for i in range(2)]
        address = f"{'tls' if tls else 'tcp'}://localhost:{ports[0]}"
        devices = [DASKGRAPH, "devices", "--timeout", "2", address]
        devices += ["--tls-dir", str(certs)] if tls else []
        deadline = time.monotonic() + UP_S
        while True:
            listing = subprocess.run(devices, capture_output=True, text=True, timeout=30, env=env())
            if listing.returncode == 0 and all(n in listing.stdout for n in names):
                break
            if time.monotonic() > deadline:
                logs = [(remote / f"local-{i}.log").read_text() for i in range(2)]
                pytest.fail(f"servers did not come up: {listing.stderr}\n{logs}")
            time.sleep(0.3)
        stopped = script("stop-cluster.sh")
        assert stopped.returncode == 0, stopped.stderr
        for i, pid in enumerate(pids):
            assert not alive(pid), f"task {i} still runs after stop-cluster.sh"
            assert not (remote / f"local-{i}.pid").exists()
            log = (remote / f"local-{i}.log").read_text()
            own = f"{'tls' if tls else 'tcp'}://localhost:{ports[i]}"  # each task's own address
            assert f"daskgraph server /job:local/task:{i} serving {own}" in log
            assert "stopped" in log.splitlines(), log
        assert (fakes / "ssh-hosts.log").read_text().split() == ["localhost"] * 5  # 1 + 2 + 2
    finally:
        kill_pids([p for p in pids if alive(p)])


# -- SLURM: slurm_cluster.py ---------------------------------------------------------------------
FAKE_SBATCH = """#!/usr/bin/env bash
# sbatch stand-in: run the job script (the last argument) here, in the background
dir=$(dirname "$0")
n=$$  # this sbatch's pid: unique, even when jobs are submitted at once
cp "${@: -1}" "$dir/job-$n.sh"
nohup bash "$dir/job-$n.sh" >"$dir/job-$n.log" 2>&1 </dev/null &
echo $! >>"$dir/jobs.pid"
echo "Submitted batch job $!"
"""
FAKE_SCANCEL = """#!/usr/bin/env bash
# scancel stand-in: SIGTERM the job script, which stops its workers
kill -TERM "$@"
"""


@pytest.fixture
def slurm(tmp_path, monkeypatch) -> Iterator[tuple[object, pathlib.Path]]:
    pytest.importorskip("dask_jobqueue", reason="dask-jobqueue is not installed")
    spec = importlib.util.spec_from_file_location(
        "daskgraph_slurm_recipe_live", DEPLOY / "slurm" / "slurm_cluster.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    fakes = _stand_ins(tmp_path / "bin", sbatch=FAKE_SBATCH, scancel=FAKE_SCANCEL)
    monkeypatch.setenv("PATH", f"{fakes}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("DASK_DASKGRAPH__VIRTUAL_GPUS", "0")
    try:
        yield module, fakes
    finally:  # whatever still runs of the jobs this test submitted
        pids = fakes / "jobs.pid"
        if pids.exists():
            jobs = [int(p) for p in pids.read_text().split()]
            for pid in jobs:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGTERM)
            deadline = time.monotonic() + 5
            while any(alive(p) for p in jobs) and time.monotonic() < deadline:
                time.sleep(0.1)
            kill_pids([p for p in jobs if alive(p)])


def test_slurm_jobs_are_tasks_with_device_named_workers(slurm):
    module, fakes = slurm
    cluster = value(
        within(
            30,
            lambda: module.slurm_cluster(
                jobs=2,
                gpus_per_job=0,
                cores=1,
                memory="1GB",
                worker_extra_args=["--host", "127.0.0.1", "--no-dashboard"],
                scheduler_options={"host": "127.0.0.1", "dashboard_address": "127.0.0.1:0"},
            ),
        )
    )
    try:
        names = [f"/job:worker/replica:0/task:{i}/device:CPU:0" for i in range(2)]
        with dg.Graph().as_default():
            with dg.device("/job:worker/task:1/cpu:0"):
                a = dg.constant(2.0, name="a")
            with dg.device("/job:worker/task:0/cpu:0"):
                b = dg.multiply(a, 21.0, name="b")
            sess = wait_for_devices(cluster.scheduler_address, names)
            try:
                md = RunMetadata()
                assert (
                    value(within(30, lambda: sess.run(b, options=TRACE, run_metadata=md))) == 42.0
                )
                assert md.step_stats.worker_of("a") == device_worker(sess, names[1])
                assert md.step_stats.worker_of("b") == device_worker(sess, names[0])
            finally:
                sess.close()
        jobs = [int(p) for p in (fakes / "jobs.pid").read_text().split()]
        assert len(jobs) == 2
    finally:
        value(within(60, cluster.close))
        gc.collect()
    deadline = time.monotonic() + 30
    while any(alive(p) for p in jobs) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not any(alive(p) for p in jobs), "scancel did not stop the job scripts"
