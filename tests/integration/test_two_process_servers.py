"""The guide's two-server program from two OS processes, started in either order.

Each process starts its task's ``tf.train.Server`` of a two-task ClusterSpec and evaluates a
constant pinned to the *other* task with ``tf.Session(server.target)``, without calling
``server.wait_for_cluster``: the session must wait for the other task by itself, as
TensorFlow's master does in CreateSession. Before that wait, a session created before the other
task had joined failed with InvalidArgumentError (4 runs in 5).

To run the program 20 times in each order within about a minute on two cores, each process
runs it once per line it reads on stdin (a fresh ClusterSpec on fresh ports, a fresh Server, a
fresh Session each time) and answers with one JSON line: the interpreter starts once per
process, while every round repeats the race between the two tasks' start-up.
"""

from __future__ import annotations

import json
import os
import pathlib
import queue
import random
import subprocess
import sys
import threading
import time
from collections.abc import Iterator

import pytest

from daskgraph.cluster.server import free_ports

ROOT = pathlib.Path(__file__).resolve().parents[2]
ROUNDS = 20  # per order of start-up
ROUND_S = 30  # limit for one round (both processes)
# limit for a process whose session cannot be created to exit: its start, daskgraph's import and
# daskgraph.connect-timeout (10 s), with a wide margin for a busy machine; a session that waited
# for the cluster instead (daskgraph.cluster.wait-timeout, 300 s) or a process kept alive by a
# thread would still run past it
EXIT_S = 60

PROGRAM = r'''
"""examples/two_servers.py's program, once per stdin line: ROUND PORT0 PORT1 DELAY FORM."""
import json
import sys
import time
import traceback

from distributed import Event

import daskgraph.compat.v1 as tf
from daskgraph.runtime.client.session import RunMetadata, RunOptions

task = int(sys.argv[1])
other = 1 - task
for line in sys.stdin:
    round_, p0, p1, delay, form = line.split()
    report = {"round": int(round_), "task": task}
    server = None
    try:
        time.sleep(float(delay))
        start = time.monotonic()
        cluster = tf.train.ClusterSpec({"local": [f"localhost:{p0}", f"localhost:{p1}"]})
        server = tf.train.Server(cluster, job_name="local", task_index=task)
        target = server.target if form == "target" else f"grpc://localhost:{(p0, p1)[task]}"
        with tf.Graph().as_default():
            with tf.device(f"/job:local/task:{other}"):
                c = tf.constant(f"Hello from server{task + 1}, computed on task {other}!")
            free = tf.constant(0.0, name="free")  # no device: the master's own task
            with tf.Session(target) as sess:
                report["session_s"] = round(time.monotonic() - start, 3)
                md = RunMetadata()
                trace = RunOptions(trace_level=RunOptions.FULL_TRACE)
                value, _ = sess.run([c, free], options=trace, run_metadata=md)
                report["value"] = value.decode() if isinstance(value, bytes) else str(value)
                report["device"] = md.step_stats.device_of(c.op.name)
                report["free_device"] = md.step_stats.device_of("free")
                # stay until both tasks have run: the other's run needs this task's devices
                done = [Event(f"done-{round_}-{t}", client=sess.client) for t in (0, 1)]
                done[task].set()
                report["other_done"] = done[other].wait(timeout=20)
        server.wait_for_others_to_leave(timeout=20)  # task 0 runs the scheduler
    except BaseException as exc:
        report["error"] = f"{type(exc).__name__}: {exc}"
        report["traceback"] = traceback.format_exc()
    finally:
        if server is not None:
            server.stop()
    print(json.dumps(report), flush=True)
'''


class Task:
    """One process of the program: sends it rounds, reads its JSON answers (killed at the end)."""

    def __init__(self, program: pathlib.Path, task: int, log: pathlib.Path) -> None:
        env = {**os.environ, "DASK_DASKGRAPH__VIRTUAL_GPUS": "0"}
        env["DASK_DASKGRAPH__CLUSTER__WAIT_TIMEOUT"] = "20s"  # a lost race fails, not hangs
        self.log = log
        with log.open("w") as err:
            self.proc = subprocess.Popen(
                [sys.executable, str(program), str(task)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=err,
                text=True,
                env=env,
                cwd=ROOT,
            )
        self.answers: queue.Queue[str] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            if line.startswith("{"):  # the program's answers; anything else is not ours
                self.answers.put(line)

    def send(self, *fields: object) -> None:
        self.proc.stdin.write(" ".join(map(str, fields)) + "\n")
        self.proc.stdin.flush()

    def answer(self, deadline: float) -> dict:
        """The answer to the last round, or an error with the end of the process's stderr."""
        try:
            return json.loads(self.answers.get(timeout=max(deadline - time.monotonic(), 0.1)))
        except queue.Empty:
            return {"error": "no answer in time", "traceback": self.log.read_text()[-3000:]}

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.stdin.close()
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)


@pytest.fixture
def program(tmp_path) -> pathlib.Path:
    path = tmp_path / "two_servers_rounds.py"
    path.write_text(PROGRAM)
    return path


@pytest.fixture
def start_pair(program, tmp_path) -> Iterator:
    tasks: list[Task] = []

    def start(name: str) -> tuple[Task, Task]:
        pair = tuple(Task(program, t, tmp_path / f"{name}-task{t}.err") for t in (0, 1))
        tasks.extend(pair)
        return pair

    try:
        yield start
    finally:
        for task in tasks:
            task.close()


def play(pair: tuple[Task, Task], first: int, rounds: int, form: str = "target") -> list:
    """``rounds`` rounds, task ``first`` starting at once and the other up to 1 s later; the
    answers of each round, up to the first round that failed."""
    rng = random.Random(1000 + first)
    results = []
    for round_ in range(rounds):
        ports = free_ports(2)
        delays = [0.0, 0.0]
        delays[1 - first] = round(rng.uniform(0.0, 1.0), 3)
        for task in (0, 1):
            pair[task].send(round_, *ports, delays[task], form)
        deadline = time.monotonic() + ROUND_S
        results.append([pair[task].answer(deadline) for task in (0, 1)])
        if any("error" in r or not r.get("other_done") for r in results[-1]):
            break
    return results


def check(results: list, first: int) -> None:
    failed = [r for pair in results for r in pair if "error" in r or not r.get("other_done")]
    assert not failed, f"round {len(results) - 1} of task {first} first failed: " + (
        "\n".join(r.get("traceback") or json.dumps(r) for r in failed)
    )
    for answers in results:
        for r in answers:
            task, other = r["task"], 1 - r["task"]
            assert r["value"] == f"Hello from server{task + 1}, computed on task {other}!", r
            assert r["device"] == f"/job:local/replica:0/task:{other}/device:CPU:0", r
            # an op without a device goes to the master's own task (TensorFlow's IsLocal rule)
            assert r["free_device"] == f"/job:local/replica:0/task:{task}/device:CPU:0", r


# the suite's longest test (38 s on two busy cores); each of its 20 rounds may take ROUND_S
@pytest.mark.timeout(ROUNDS * ROUND_S + 60)
def test_the_two_server_program_passes_20_of_20_started_in_either_order(start_pair):
    """20 rounds with task 0 starting first and 20 with task 1 first, the two orders played
    at once by two pairs of processes."""
    pairs = {first: start_pair(f"first{first}") for first in (0, 1)}
    outcome: dict[int, object] = {}

    def drive(first: int) -> None:
        try:
            outcome[first] = play(pairs[first], first, ROUNDS)
        except BaseException as exc:  # pytest.fail included: reported below
            outcome[first] = exc

    started = time.monotonic()
    threads = [threading.Thread(target=drive, args=(first,)) for first in (0, 1)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = time.monotonic() - started
    for first in (0, 1):
        if isinstance(outcome[first], BaseException):
            raise outcome[first]
        check(outcome[first], first)
    waits = [r["session_s"] for first in (0, 1) for pair in outcome[first] for r in pair]
    print(f"{4 * ROUNDS} runs in {elapsed:.1f} s; session creation up to {max(waits):.2f} s")


def test_a_grpc_target_naming_task_1_from_its_own_process(start_pair):
    """``tf.Session("grpc://localhost:PORT1")`` in task 1's process: task 1's own server (its
    scheduler is task 0's), and task 1's devices are the master's local ones."""
    pair = start_pair("grpc")
    (results,) = [play(pair, first, 1, form="grpc") for first in (1,)]
    check(results, 1)


BAD_TARGET = r"""
import socket, sys, threading
import daskgraph.compat.v1 as tf
target = sys.argv[1]
if target == "junk":  # a server that is not Dask: it answers every connection with HTTP
    listener = socket.create_server(("127.0.0.1", 0))
    def serve():
        while True:
            conn, _ = listener.accept()
            conn.sendall(b"HTTP/1.1 400 Bad Request\r\n\r\n" * 64)
    threading.Thread(target=serve, daemon=True).start()
    target = f"grpc://127.0.0.1:{listener.getsockname()[1]}"
tf.Session(target)  # raises: the process must then exit by itself
"""


@pytest.mark.parametrize(
    ("target", "error", "says"),
    [
        ("grpc://127.0.0.1:{dead}", "UnreachableError", "nothing listens at 127.0.0.1:{dead}"),
        ("ftp://x:1", "InvalidTargetError", "Invalid session target 'ftp://x:1'"),
        ("junk", "InvalidArgumentError", "is not a Dask scheduler"),
    ],
    ids=["dead-port", "bad-scheme", "not-dask"],
)
def test_a_session_that_cannot_be_created_fails_fast_and_the_process_exits(
    tmp_path, target, error, says
):
    (dead,) = free_ports(1)
    script = tmp_path / "bad_target.py"
    script.write_text(BAD_TARGET)
    try:
        done = subprocess.run(
            [sys.executable, str(script), target.format(dead=dead)],
            capture_output=True,
            text=True,
            timeout=EXIT_S,
            env={**os.environ, "DASK_DASKGRAPH__VIRTUAL_GPUS": "0"},
            cwd=ROOT,
        )
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"the process did not exit within {EXIT_S} s: {exc.stderr}")
    assert done.returncode == 1, done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith(f"daskgraph.errors.{error}: "), done.stderr
    assert says.format(dead=dead) in last, done.stderr
