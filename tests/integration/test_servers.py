"""Clusters of several tasks: ``Server`` in one process and in several, and the ``daskgraph`` CLI.

Every step that could wait on a cluster runs under :func:`daskgraph.testing.within` (or a
subprocess timeout), so a regression fails the test instead of hanging the suite. Ports are
free ports of 127.0.0.1, found by binding to port 0.
"""

from __future__ import annotations

import json
import os
import pathlib
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator

import dask
import numpy as np
import pytest
from click.testing import CliRunner
from distributed import Client

import daskgraph as dg
import daskgraph.compat.v1 as tf
from daskgraph.cli import main as cli_main
from daskgraph.cluster.server import ClusterSpec, Server, free_ports
from daskgraph.cluster.tls import security_from_dir
from daskgraph.errors import (
    DeadlineExceededError,
    InvalidArgumentError,
    UnknownError,
    UnreachableError,
)
from daskgraph.runtime.client.session import RunMetadata, RunOptions
from daskgraph.testing import within

ROOT = pathlib.Path(__file__).resolve().parents[2]
DASKGRAPH = str(pathlib.Path(sys.executable).with_name("daskgraph"))
TRACE = RunOptions(trace_level=RunOptions.FULL_TRACE)
TASK0, TASK1 = "/job:local/replica:0/task:0/device:", "/job:local/replica:0/task:1/device:"
NO_GPUS = dg.SessionConfig(device_count={"GPU": 0})  # real GPUs stay out of these tests
START_S = 30  # limit for starting a server or a session
CLI_UP_S = 60  # limit for the CLI servers to show up in `daskgraph devices`


def local_spec(n: int = 2) -> dict[str, list[str]]:
    return {"local": [f"localhost:{p}" for p in free_ports(n)]}


def value(box: dict):
    """The value of a :func:`within` call, re-raising what it raised."""
    if "error" in box:
        raise box["error"]
    return box["value"]


def start_server(spec, task: int, **kwargs) -> Server:
    kwargs.setdefault("config", NO_GPUS)
    kwargs.setdefault("virtual_gpus", 0)
    return value(within(START_S, lambda: Server(spec, "local", task, **kwargs)))


def open_session(target: str, **kwargs) -> dg.Session:
    """A Session over this thread's default graph (``within`` runs it in another thread)."""
    kwargs.setdefault("graph", dg.get_default_graph())
    return value(within(START_S, lambda: dg.Session(target, **kwargs)))


def run(sess: dg.Session, fetches, **kwargs):
    return value(within(START_S, lambda: sess.run(fetches, **kwargs)))


def worker_names(target: str) -> list[str]:
    def names():
        with Client(target, timeout=10, set_as_default=False) as client:
            return sorted(
                str(w["name"]) for w in client.scheduler_info(n_workers=-1)["workers"].values()
            )

    return value(within(20, names))


def stop(*servers: Server) -> None:
    for server in servers:
        value(within(30, server.stop))


# -- one task: create_local_server ---------------------------------------------------------------
def test_create_local_server_runs_the_first_seed_program(capsys):
    """TensorFlow's distributed hello world, with only the import changed."""
    server = value(within(START_S, lambda: tf.train.Server.create_local_server(config=NO_GPUS)))
    try:
        assert server.target.startswith("tcp://localhost:")
        with tf.Graph().as_default():
            c = tf.constant("Hello, distributed TensorFlow!")
            sess = open_session(server.target)
            try:
                result = run(sess, c)
                print(result)
            finally:
                sess.close()
        if isinstance(result, bytes):
            result = result.decode()
        assert result == "Hello, distributed TensorFlow!"
        assert "Hello, distributed TensorFlow!" in capsys.readouterr().out
        names = [d.name for d in sess.list_devices()]
        assert names == ["/job:local/replica:0/task:0/device:CPU:0"]
    finally:
        stop(server)


def test_the_first_seed_program_exits_without_stopping_its_server(tmp_path):
    """A TF1 script never stops its server; the process must still print and exit."""
    script = tmp_path / "hello.py"
    script.write_text(
        "import daskgraph.compat.v1 as tf\n"
        'c = tf.constant("Hello, distributed TensorFlow!")\n'
        "server = tf.train.Server.create_local_server()\n"
        "sess = tf.Session(server.target)\n"
        "print(sess.run(c))\n"
    )
    env = {**os.environ, "DASK_DASKGRAPH__VIRTUAL_GPUS": "0"}
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=60, env=env
    )
    assert done.returncode == 0, done.stderr
    assert "Hello, distributed TensorFlow!" in done.stdout


def test_server_start_false_knows_its_target_and_starts_later():
    spec = local_spec(1)
    server = Server(spec, "local", 0, start=False, config=NO_GPUS, virtual_gpus=0)
    try:
        assert server.target == f"tcp://{spec['local'][0]}"
        assert "/job:local/task:0" in repr(server)
        assert nothing_listens(server.target)
        value(within(START_S, server.start))
        value(within(START_S, server.start))  # a second start does nothing
        assert worker_names(server.target) == [TASK0 + "CPU:0"]
    finally:
        stop(server)


def nothing_listens(target: str) -> bool:
    """Whether the scheduler's port is closed (a socket probe: no Client that fails to connect)."""
    host, port = target.split("://", 1)[-1].rsplit(":", 1)
    try:
        with socket.create_connection((host, int(port)), timeout=2):
            return False
    except OSError:
        return True


# -- two tasks in one process --------------------------------------------------------------------
@pytest.fixture(scope="module")
def pair() -> Iterator[tuple[Server, Server]]:
    """Two tasks of one cluster in this process; task 1 has a virtual GPU."""
    spec = local_spec(2)
    s0 = start_server(spec, 0)
    s1 = start_server(spec, 1, virtual_gpus=1)
    try:
        value(within(60, lambda: s0.wait_for_cluster(timeout=30)))
        yield s0, s1
    finally:
        stop(s1, s0)


@pytest.fixture
def session(pair) -> Iterator[dg.Session]:
    with dg.Graph().as_default():
        sess = open_session(pair[0].target)
        try:
            yield sess
        finally:
            sess.close()


def _worker_of(sess: dg.Session, name: str) -> str:
    (found,) = [d.worker for d in sess.list_devices() if d.name == name]
    return found


def test_two_servers_one_scheduler_each_targets_its_own_address(pair):
    """As TensorFlow's: ``server.target`` is the task's own address; one scheduler, task 0's."""
    s0, s1 = pair
    spec = s0.cluster_spec
    assert s0.target == f"tcp://{spec.task_address('local', 0)}"
    assert s1.target == f"tcp://{spec.task_address('local', 1)}"
    assert s0.scheduler_address == s1.scheduler_address == s0.target
    assert s0._hosts_scheduler and not s1._hosts_scheduler


def test_a_session_sees_the_devices_of_both_tasks(session):
    names = [d.name for d in session.list_devices()]
    assert names == [TASK0 + "CPU:0", TASK1 + "CPU:0", TASK1 + "GPU:0"]
    assert len({d.worker for d in session.list_devices()}) == 3


@pytest.mark.parametrize("target", ["server1", "host-port", "task1-grpc"])
def test_either_server_and_either_spelling_of_the_target(pair, target):
    address = {
        "server1": pair[1].target,
        "host-port": pair[0].target.removeprefix("tcp://"),
        "task1-grpc": "grpc://" + pair[1].target.removeprefix("tcp://"),
    }[target]
    with dg.Graph().as_default():
        sess = open_session(address)
        try:
            assert len(sess.list_devices()) == 3
        finally:
            sess.close()


@pytest.mark.parametrize(
    ("request_", "device"),
    [
        ("/job:local/task:1/cpu:0", TASK1 + "CPU:0"),
        ("/job:local/task:1/device:GPU:0", TASK1 + "GPU:0"),
        ("/job:local/task:0/cpu:0", TASK0 + "CPU:0"),
        ("/task:1", TASK1 + "GPU:0"),  # partial: GPU first, as the placer does
    ],
    ids=["task1-cpu", "task1-gpu", "task0-cpu", "task1-partial"],
)
def test_ops_run_on_the_worker_of_the_task_they_are_placed_on(session, request_, device):
    with dg.device(request_):
        x = dg.constant(np.arange(6, dtype=np.float32).reshape(2, 3), name="x")
        y = dg.reduce_sum(x * 2.0, name="y")
    md = RunMetadata()
    assert run(session, y, options=TRACE, run_metadata=md) == 30.0
    assert md.step_stats.worker_of("y") == _worker_of(session, device)
    assert md.step_stats.worker_of("x") == _worker_of(session, device)


def test_a_graph_across_both_tasks(session):
    with dg.device("/job:local/task:1/cpu:0"):
        a = dg.constant(np.ones((2, 2), np.float32), name="a")
    with dg.device("/job:local/task:0/cpu:0"):
        b = dg.matmul(a, a, name="b")
    md = RunMetadata()
    np.testing.assert_allclose(run(session, b, options=TRACE, run_metadata=md), 2 * np.ones((2, 2)))
    assert md.step_stats.worker_of("a") == _worker_of(session, TASK1 + "CPU:0")
    assert md.step_stats.worker_of("b") == _worker_of(session, TASK0 + "CPU:0")


def test_variables_live_on_the_other_task(session):
    with dg.device("/job:local/task:1/cpu:0"):
        v = dg.Variable(1.0, name="v")
        step = v.assign_add(2.0)
    run(session, v.initializer)
    assert [run(session, step) for _ in range(3)] == [3.0, 5.0, 7.0]


def test_log_device_placement_names_the_task(pair, capsys):
    with dg.Graph().as_default():
        with dg.device("/job:local/task:1/cpu:0"):
            c = dg.constant(3.0, name="c")
            d = dg.multiply(c, 2.0, name="d")
        config = dg.SessionConfig(log_device_placement=True)
        sess = open_session(pair[0].target, config=config)
        try:
            assert run(sess, d) == 6.0
        finally:
            sess.close()
    err = capsys.readouterr().err
    assert "Device mapping:" in err
    assert f"{TASK1}CPU:0 -> " in err and f"{TASK0}CPU:0 -> " in err
    assert "c: (Const): /job:local/replica:0/task:1/device:CPU:0" in err
    assert "d: (Mul): /job:local/replica:0/task:1/device:CPU:0" in err


@pytest.mark.parametrize("soft", [False, True], ids=["hard", "soft"])
@pytest.mark.parametrize(
    ("request_", "canonical"),
    [
        ("/job:local/task:5", "/job:local/task:5"),
        ("/job:local/task:5/cpu:0", "/job:local/task:5/device:CPU:0"),
        ("/job:nope", "/job:nope"),
        ("/job:nope/task:0/cpu:0", "/job:nope/task:0/device:CPU:0"),
    ],
    ids=["task5", "task5-cpu", "job-nope", "job-nope-cpu"],
)
def test_soft_placement_never_relaxes_job_or_task(pair, soft, request_, canonical):
    with dg.Graph().as_default():
        with dg.device(request_):
            x = dg.constant(1.0, name="x")
        config = dg.SessionConfig(allow_soft_placement=soft)
        sess = open_session(pair[0].target, config=config)
        try:
            box = within(START_S, lambda: sess.run(x))
        finally:
            sess.close()
    error = box.get("error")
    assert isinstance(error, InvalidArgumentError), box
    assert "'x'" in str(error) and f"'{canonical}'" in str(error), str(error)
    assert TASK1 + "CPU:0" in str(error)  # the devices there are


def test_soft_placement_falls_back_within_the_task(pair):
    with dg.Graph().as_default():
        with dg.device("/job:local/task:1/device:GPU:3"):  # task 1 has only GPU:0
            g = dg.constant(1.0, name="g")
        with dg.device("/job:local/task:0/device:GPU:0"):  # task 0 has no GPU at all
            c = dg.constant(2.0, name="c")
        sess = open_session(pair[0].target, config=dg.SessionConfig(allow_soft_placement=True))
        try:
            md = RunMetadata()
            assert run(sess, [g, c], options=TRACE, run_metadata=md) == [1.0, 2.0]
            # never task 1's GPU for task 0's op: the task is kept, the device type is relaxed
            assert md.step_stats.worker_of("g") == _worker_of(sess, TASK1 + "GPU:0")
            assert md.step_stats.worker_of("c") == _worker_of(sess, TASK0 + "CPU:0")
        finally:
            sess.close()


def test_wait_for_cluster_names_the_missing_task():
    spec = local_spec(3)
    s0 = start_server(spec, 0)
    try:
        box = within(20, lambda: s0.wait_for_cluster(timeout=1))
        assert isinstance(box.get("error"), TimeoutError), box
        assert isinstance(box["error"], DeadlineExceededError), box
        assert box["error"].missing == [
            "/job:local/replica:0/task:1",
            "/job:local/replica:0/task:2",
        ]
        message = str(box["error"])
        assert f"/job:local/replica:0/task:1 (at {spec['local'][1]})" in message
        assert f"/job:local/replica:0/task:2 (at {spec['local'][2]})" in message
        assert "/task:0" not in message
    finally:
        stop(s0)


# -- stop and join -------------------------------------------------------------------------------
def test_stop_takes_the_tasks_workers_away():
    spec = local_spec(2)
    s0 = start_server(spec, 0)
    s1 = start_server(spec, 1)
    try:
        value(within(60, lambda: s0.wait_for_cluster(timeout=30)))
        assert worker_names(s0.target) == [TASK0 + "CPU:0", TASK1 + "CPU:0"]
        stop(s1)
        assert worker_names(s0.target) == [TASK0 + "CPU:0"]
        stop(s1)  # stopping twice is harmless
        # a new session waits for task 1, as TensorFlow's master does: then an error, not a
        # hang (a run on a device that left is test_run_on_a_device_that_left_...)
        with dask.config.set({"daskgraph.cluster.wait-timeout": "1s"}):
            box = within(START_S, lambda: dg.Session(s0.target, graph=dg.Graph()))
        assert isinstance(box.get("error"), DeadlineExceededError), box
        assert box["error"].missing == ["/job:local/replica:0/task:1"]
    finally:
        stop(s1, s0)
    assert nothing_listens(s0.target)  # the scheduler is gone with task 0


def test_server_is_a_context_manager():
    spec = local_spec(1)
    with start_server(spec, 0) as server:
        assert worker_names(server.target) == [TASK0 + "CPU:0"]
    assert nothing_listens(server.target)


def test_join_returns_after_stop_from_another_thread():
    server = start_server(local_spec(1), 0)
    timer = threading.Timer(0.5, server.stop)
    timer.start()
    try:
        box = within(20, server.join)
        assert "error" not in box, box
        assert box["elapsed"] >= 0.4
    finally:
        timer.join(20)
        stop(server)
    assert nothing_listens(server.target)


def test_stop_from_this_thread_ends_a_join_in_another():
    server = start_server(local_spec(1), 0)
    joined = threading.Event()

    def join():
        server.join()
        joined.set()

    thread = threading.Thread(target=join, daemon=True)
    thread.start()
    time.sleep(0.3)
    assert not joined.is_set()  # join() blocks while the server runs
    stop(server)
    assert joined.wait(20), "join() did not return after stop()"


# -- two OS processes ----------------------------------------------------------------------------
EXAMPLE = str(ROOT / "examples" / "two_servers.py")
HELLO_1 = "Hello from server1, computed on task 1!"  # printed by task 0
HELLO_2 = "Hello from server2, computed on task 0!"  # printed by task 1


def example_env(**extra: str) -> dict[str, str]:
    return {**os.environ, "DASK_DASKGRAPH__VIRTUAL_GPUS": "0", **extra}


def assert_both_hellos(stdout: str, stderr: str) -> None:
    assert HELLO_1 in stdout and HELLO_2 in stdout, stdout + stderr
    assert "Const: (Const): /job:local/replica:0/task:1/device:CPU:0" in stderr
    assert "Const: (Const): /job:local/replica:0/task:0/device:CPU:0" in stderr
    for task in (TASK0, TASK1):
        assert f"{task}CPU:0 -> " in stderr


def test_two_servers_example_in_two_terminals(tmp_path, processes):
    """The example as its docstring runs it: two processes, task 1 serving until interrupted."""
    ports = ",".join(map(str, free_ports(2)))
    logs = {task: (tmp_path / f"task{task}.out", tmp_path / f"task{task}.err") for task in (0, 1)}
    procs = {}
    for task, extra in ((1, ["--join"]), (0, [])):
        out, err = (path.open("w") for path in logs[task])
        with out, err:
            procs[task] = subprocess.Popen(
                [sys.executable, EXAMPLE, str(task), "--ports", ports, *extra],
                stdout=out,
                stderr=err,
                stdin=subprocess.DEVNULL,
                env=example_env(),
                cwd=ROOT,
            )
        processes.procs.append((procs[task], logs[task][0]))  # killed if the test fails

    def read(task: int) -> tuple[str, str]:
        return logs[task][0].read_text(), logs[task][1].read_text()

    deadline = time.monotonic() + 60
    # task 1 is joining (SIGTERM handled) once it says so; before, SIGTERM would kill it
    while not (HELLO_1 in read(0)[0] and HELLO_2 in read(1)[0] and "serving" in read(1)[0]):
        if time.monotonic() > deadline or procs[0].poll() not in (None, 0):
            pytest.fail(f"no hellos within 60 s: task 0 {read(0)}, task 1 {read(1)}")
        time.sleep(0.2)
    procs[1].send_signal(signal.SIGTERM)  # task 1 leaves; then task 0 (the scheduler) stops
    assert procs[1].wait(30) == 0, read(1)
    assert procs[0].wait(30) == 0, read(0)
    (out0, err0), (out1, err1) = read(0), read(1)
    assert_both_hellos(out0 + out1, err0 + err1)


def test_two_servers_example_spawn():
    """The seed: ``two_servers.py 0 --ports P0,P1 --spawn`` prints both hellos."""
    run_example_spawn(example_env(), timeout=120)


def run_example_spawn(env: dict[str, str], timeout: float) -> None:
    """``two_servers.py 0 --ports P0,P1 --spawn``: it must exit 0 after both hellos."""
    p0, p1 = free_ports(2)
    done = subprocess.run(
        [sys.executable, EXAMPLE, "0", "--ports", f"{p0},{p1}", "--spawn"],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert_both_hellos(done.stdout, done.stderr)


SLOW_TASK_0 = """\
import sys, time
if sys.argv[1:2] == ["0"]:  # examples/two_servers.py task 0: start its Session 3 s late
    import daskgraph.runtime.client.session as _session
    _init = _session.Session.__init__
    def __init__(self, *args, **kwargs):
        time.sleep(3)
        _init(self, *args, **kwargs)
    _session.Session.__init__ = __init__
"""


def test_two_servers_example_spawn_when_task_0_is_slower(tmp_path):
    (tmp_path / "sitecustomize.py").write_text(SLOW_TASK_0)
    env = example_env(
        PYTHONPATH=os.pathsep.join(filter(None, [str(tmp_path), os.environ.get("PYTHONPATH")])),
        DASK_DASKGRAPH__COMPILED_STEPS="False",
        DASK_DASKGRAPH__WORKER_RESTART_GRACE="2",
    )
    run_example_spawn(env, timeout=60)


def test_run_on_a_device_that_left_before_its_first_run_does_not_hang():
    spec = local_spec(2)
    s0 = start_server(spec, 0)
    s1 = start_server(spec, 1)
    try:
        value(within(60, lambda: s0.wait_for_cluster(timeout=30)))
        grace = 1  # seconds the run waits for task 1 to come back
        with (
            dg.Graph().as_default(),
            dask.config.set({"daskgraph.worker-restart-grace": grace}),
        ):
            with dg.device("/job:local/task:1/cpu:0"):
                x = dg.constant(1.0, name="x")
            sess = open_session(s0.target)
            try:
                stop(s1)  # task 1 leaves after the session listed its devices
                # a hang, not a slow machine, is what fails: the grace and a liveness tick are
                # the waits the run may make, and the limit leaves a minute on top of them
                tick = float(dask.config.get("daskgraph.liveness-check-interval"))
                box = within(grace + tick + 60, lambda: sess.run(x))
                assert isinstance(box.get("error"), InvalidArgumentError), box
                assert "task:1" in str(box["error"]), box
            finally:
                sess.close()
    finally:
        stop(s1, s0)


# -- the CLI -------------------------------------------------------------------------------------
class Processes:
    """Server processes of a test, each logging to a file; killed (by pid) if still running."""

    def __init__(self, folder: pathlib.Path) -> None:
        self.folder = folder
        self.procs: list[tuple[subprocess.Popen, pathlib.Path]] = []

    def start(self, *args: str, env: dict[str, str] | None = None) -> subprocess.Popen:
        log = self.folder / f"server-{len(self.procs)}.log"
        with log.open("w") as out:
            proc = subprocess.Popen(
                [DASKGRAPH, *args],
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=env or cli_env(),
                cwd=self.folder,
            )
        self.procs.append((proc, log))
        return proc

    def log(self, proc: subprocess.Popen) -> str:
        return next(log for p, log in self.procs if p is proc).read_text()

    def cleanup(self) -> None:
        for proc, _ in self.procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait(10)


@pytest.fixture
def processes(tmp_path) -> Iterator[Processes]:
    procs = Processes(tmp_path)
    try:
        yield procs
    finally:
        procs.cleanup()


def cli_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "TF_CONFIG"}
    env["DASK_DASKGRAPH__VIRTUAL_GPUS"] = "0"
    env.update(extra)
    return env


def devices_listing(address: str, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [DASKGRAPH, "devices", *extra, "--timeout", "2", address],
        capture_output=True,
        text=True,
        timeout=30,
        env=cli_env(),
    )


def wait_for_devices(address: str, wanted: list[str], *extra: str) -> str:
    """Poll ``daskgraph devices ADDRESS`` until every wanted name is listed (at most 60 s)."""
    deadline = time.monotonic() + CLI_UP_S
    out = ""
    while time.monotonic() < deadline:
        listing = devices_listing(address, *extra)
        out = listing.stdout + listing.stderr
        if listing.returncode == 0 and all(f"{name} -> " in out for name in wanted):
            return listing.stdout
        time.sleep(0.3)
    pytest.fail(f"`daskgraph devices {address}` did not list {wanted} in {CLI_UP_S} s:\n{out}")


def terminate(processes: Processes, *procs: subprocess.Popen, timeout: float = 20) -> None:
    """SIGTERM every process at once; each must exit with 0 after printing 'stopped'.

    Each is first waited for until it says it serves: only then does SIGTERM stop it cleanly.
    """
    deadline = time.monotonic() + START_S
    while not all(" serving " in processes.log(p) for p in procs):
        if time.monotonic() > deadline:
            pytest.fail("servers did not say they serve:\n" + "\n".join(map(processes.log, procs)))
        time.sleep(0.1)
    for proc in procs:
        proc.send_signal(signal.SIGTERM)
    for proc in procs:
        try:
            code = proc.wait(timeout)
        except subprocess.TimeoutExpired:
            pytest.fail(
                f"server did not stop within {timeout} s of SIGTERM:\n{processes.log(proc)}"
            )
        log = processes.log(proc)
        assert code == 0, log
        assert "stopped" in log.splitlines(), log


def write_spec(folder: pathlib.Path, spec: dict) -> pathlib.Path:
    path = folder / "spec.json"
    path.write_text(json.dumps(spec))
    return path


def test_cli_two_servers_and_devices(tmp_path, processes):
    spec = local_spec(2)
    write_spec(tmp_path, spec)
    common = ["server", "--cluster-spec", "spec.json", "--job-name", "local"]
    t0 = processes.start(*common, "--task-index", "0")
    t1 = processes.start(*common, "--task-index", "1", "--virtual-gpus", "1")
    listing = wait_for_devices(
        spec["local"][0], [TASK0 + "CPU:0", TASK1 + "CPU:0", TASK1 + "GPU:0"]
    )
    assert listing.startswith("Device mapping:")
    assert "virtual GPU" in listing
    # task 1's address lists the cluster too: any task's address is a target, as in TensorFlow
    by_task1 = devices_listing(spec["local"][1])
    assert by_task1.returncode == 0, by_task1.stderr
    for name in (TASK0 + "CPU:0", TASK1 + "CPU:0", TASK1 + "GPU:0"):
        assert f"{name} -> " in by_task1.stdout, by_task1.stdout
    # a Session from this process runs ops on both server processes
    with dg.Graph().as_default():
        with dg.device("/job:local/task:1/cpu:0"):
            a = dg.constant(20.0, name="a")
        with dg.device("/job:local/task:0/cpu:0"):
            b = dg.add(a, 22.0, name="b")
        sess = open_session(spec["local"][0])
        try:
            md = RunMetadata()
            assert run(sess, b, options=TRACE, run_metadata=md) == 42.0
            assert md.step_stats.worker_of("a") == _worker_of(sess, TASK1 + "CPU:0")
            assert md.step_stats.worker_of("b") == _worker_of(sess, TASK0 + "CPU:0")
        finally:
            sess.close()
    terminate(processes, t1, t0)
    for proc, task in ((t0, 0), (t1, 1)):
        log = processes.log(proc)  # each task's target is its own address, as TensorFlow's
        assert f"daskgraph server /job:local/task:{task} serving tcp://{spec['local'][task]}" in log


def wait_for_log(processes: Processes, proc: subprocess.Popen, text: str) -> None:
    """Wait until ``text`` shows in the log of ``proc`` (at most CLI_UP_S)."""
    deadline = time.monotonic() + CLI_UP_S
    while text not in processes.log(proc):
        if time.monotonic() > deadline or proc.poll() is not None:
            pytest.fail(f"the server did not say {text!r} in {CLI_UP_S} s:\n{processes.log(proc)}")
        time.sleep(0.2)


@pytest.mark.parametrize("tls", [False, True], ids=["tcp", "tls"])
def test_a_session_on_task_1s_address_from_a_third_process(tmp_path, processes, tls):
    """Two tasks of a ClusterSpec, each in its own ``daskgraph server`` process, and
    ``tf.Session("grpc://localhost:PORT1")`` (task 1's address) in this, a third process: the
    session reaches the cluster (over TLS where the cluster uses it), runs an op on each task,
    and an op without a device on task 1, the master's own task. ``server.target`` of task 1
    (what it says it serves) is its own address. Before, only task 0's port was served:
    "nothing listens at localhost:PORT1"."""
    spec = local_spec(2)
    write_spec(tmp_path, spec)
    extra, security, protocol = [], None, "tcp"
    if tls:
        certs = tmp_path / "certs"
        made = subprocess.run(
            [DASKGRAPH, "certs", str(certs)], capture_output=True, text=True, timeout=60
        )
        assert made.returncode == 0, made.stderr
        extra, security, protocol = ["--tls-dir", str(certs)], security_from_dir(certs), "tls"
    common = ["server", "--cluster-spec", "spec.json", "--job-name", "local", *extra]
    t0 = processes.start(*common, "--task-index", "0")
    t1 = processes.start(*common, "--task-index", "1")
    for proc, task in ((t0, 0), (t1, 1)):
        wait_for_log(processes, proc, f"daskgraph server /job:local/task:{task} serving ")
    with tf.Graph().as_default():
        with tf.device("/job:local/task:0"):
            a = tf.constant(20.0, name="a")
        with tf.device("/job:local/task:1"):
            b = tf.add(a, 22.0, name="b")
        free = tf.constant(1.5, name="free")  # no device: the master's own task, task 1
        sess = open_session(f"grpc://{spec['local'][1]}", security=security)
        try:
            md = RunMetadata()
            assert run(sess, [b, free], options=TRACE, run_metadata=md) == [42.0, 1.5]
            assert md.step_stats.device_of("a") == TASK0 + "CPU:0"
            assert md.step_stats.device_of("b") == TASK1 + "CPU:0"
            assert md.step_stats.device_of("free") == TASK1 + "CPU:0"
            assert md.step_stats.worker_of("a") == _worker_of(sess, TASK0 + "CPU:0")
            assert md.step_stats.worker_of("b") == _worker_of(sess, TASK1 + "CPU:0")
            assert all(d.worker.startswith(f"{protocol}://") for d in sess.list_devices())
        finally:
            sess.close()
    for proc, task in ((t0, 0), (t1, 1)):  # server.target: the task's own address
        said = f"/task:{task} serving {protocol}://{spec['local'][task]}\n"
        assert said in processes.log(proc), processes.log(proc)
    terminate(processes, t1, t0)


def test_a_task_whose_scheduler_is_not_up_says_so(tmp_path, processes):
    """Task 1 started alone: its address answers at once (its workers wait for the scheduler),
    and a session there fails at once, naming the task and the scheduler that is not up."""
    spec = local_spec(2)
    write_spec(tmp_path, spec)
    processes.start(
        "server", "--cluster-spec", "spec.json", "--job-name", "local", "--task-index", "1"
    )
    deadline = time.monotonic() + CLI_UP_S
    while nothing_listens(f"tcp://{spec['local'][1]}"):
        assert time.monotonic() < deadline, "task 1 does not listen at its address"
        time.sleep(0.2)
    with dg.Graph().as_default():
        box = within(START_S, lambda: dg.Session(f"grpc://{spec['local'][1]}"))
    error = box.get("error")
    assert isinstance(error, UnreachableError), box
    assert error.task == "/job:local/replica:0/task:1"
    assert f"'tcp://{spec['local'][1]}' is the server of /job:local/replica:0/task:1" in str(error)
    assert f"nothing listens at {spec['local'][0]}" in str(error)


def test_a_task_whose_port_is_taken_says_so():
    """Task 1 listens at its address: when another process holds that port, the server fails
    at once (before it waits for the scheduler), naming the task and the address."""
    spec = local_spec(2)
    port = int(spec["local"][1].rsplit(":", 1)[1])
    with socket.create_server(("127.0.0.1", port)):
        box = within(START_S, lambda: Server(spec, "local", 1, config=NO_GPUS, virtual_gpus=0))
    error = box.get("error")
    assert isinstance(error, UnknownError), box
    assert error.task == "/job:local/replica:0/task:1" and error.address == spec["local"][1]
    assert f"at its address {spec['local'][1]!r}" in str(error)


def test_cli_server_from_tf_config(tmp_path, processes):
    spec = local_spec(2)
    write_spec(tmp_path, spec)
    t0 = processes.start(
        "server", "--cluster-spec", "spec.json", "--job-name", "local", "--task-index", "0"
    )
    tf_config = json.dumps({"cluster": spec, "task": {"type": "local", "index": 1}})
    t1 = processes.start("server", env=cli_env(TF_CONFIG=tf_config))
    wait_for_devices(spec["local"][0], [TASK0 + "CPU:0", TASK1 + "CPU:0"])
    assert "/job:local/task:1 serving" in processes.log(t1)
    terminate(processes, t0, t1)


def test_cli_cluster_spec_file_may_be_a_tf_config_document(tmp_path, processes):
    spec = local_spec(1)
    write_spec(tmp_path, {"cluster": spec, "task": {"type": "local", "index": 0}})
    t0 = processes.start(
        "server", "--cluster-spec", "spec.json", "--job-name", "local", "--task-index", "0"
    )
    wait_for_devices(spec["local"][0], [TASK0 + "CPU:0"])
    terminate(processes, t0)


def test_cli_servers_of_a_sparse_spec_from_json(tmp_path, processes):
    """A sparse job in a JSON file (string indices): /job:ps has only task 2."""
    p0, p2 = free_ports(2)
    spec = {"chief": [f"localhost:{p0}"], "ps": {"2": f"localhost:{p2}"}}
    write_spec(tmp_path, spec)
    chief = processes.start(
        "server", "--cluster-spec", "spec.json", "--job-name", "chief", "--task-index", "0"
    )
    ps = processes.start(
        "server", "--cluster-spec", "spec.json", "--job-name", "ps", "--task-index", "2"
    )
    wait_for_devices(
        f"localhost:{p0}",
        ["/job:chief/replica:0/task:0/device:CPU:0", "/job:ps/replica:0/task:2/device:CPU:0"],
    )
    terminate(processes, ps, chief)


def test_cli_server_without_a_spec_is_a_usage_error(tmp_path):
    done = subprocess.run(
        [DASKGRAPH, "server", "--job-name", "local", "--task-index", "0"],
        capture_output=True,
        text=True,
        timeout=30,
        env=cli_env(),
        cwd=tmp_path,
    )
    assert done.returncode == 2, done
    assert "--cluster-spec" in done.stderr and "TF_CONFIG" in done.stderr


@pytest.mark.parametrize(
    ("args", "env", "names"),
    [
        ([], {}, ["--cluster-spec", "TF_CONFIG"]),
        (["--cluster-spec", "spec.json"], {}, ["--job-name", "--task-index"]),
        (["--cluster-spec", "spec.json", "--job-name", "local"], {}, ["--task-index"]),
        (["--cluster-spec", "missing.json"], {}, ["missing.json"]),
        ([], {"TF_CONFIG": "{not json"}, ["TF_CONFIG"]),
        ([], {"TF_CONFIG": '{"cluster": {"local": ["localhost:1"]}}'}, ["TF_CONFIG", "task"]),
    ],
    ids=["nothing", "no-job", "no-task", "missing-file", "bad-tf-config", "tf-config-no-task"],
)
def test_cli_server_usage_errors(tmp_path, monkeypatch, args, env, names):
    write_spec(tmp_path, local_spec(1))
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("TF_CONFIG", raising=False)
    result = CliRunner().invoke(cli_main, ["server", *args], env=env)
    assert result.exit_code == 2, result.output
    for name in names:
        assert name in result.output, result.output


def test_cli_devices_of_a_closed_port_fails_at_once_as_a_session_does():
    """``daskgraph devices`` on a closed port answers as ``Session`` does: at once (a refused
    connection is final), with the same message. Its connect timeout here is 600 s, and the
    command gets 120 s: before, it tried again until its timeout ran out."""
    (port,) = free_ports(1)
    with dg.Graph().as_default(), pytest.raises(UnreachableError) as session_error:
        dg.Session(f"localhost:{port}")
    try:
        listing = subprocess.run(
            [DASKGRAPH, "devices", "--timeout", "600", f"localhost:{port}"],
            capture_output=True,
            text=True,
            timeout=120,
            env=cli_env(),
        )
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"`daskgraph devices` on a closed port still waited after 120 s: {exc}")
    assert listing.returncode == 1, listing
    assert f"nothing listens at localhost:{port}" in listing.stderr
    assert listing.stderr.strip() == f"Error: {session_error.value}"


def test_cluster_spec_of_a_cli_file_is_the_servers(tmp_path):
    spec = local_spec(2)
    path = write_spec(tmp_path, spec)
    assert ClusterSpec(json.loads(path.read_text())) == ClusterSpec(spec)
