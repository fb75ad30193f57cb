"""A task of a two-task cluster stopped with Ctrl-C: the task that hosts the scheduler says
nothing alarming (no CRITICAL ``CommClosedError`` traceback), at most one INFO line.

The programs are the seed's ``notebook_server1.py`` / ``notebook_server2.py`` (the compat
suite's), on free ports. The test waits for the scheduler to have announced the departed
task's client leaving (an event it receives on the scheduler's ``all`` topic, sent in the
same batch as the write that used to fail), then stops the first task too and reads what it
printed.
"""

from __future__ import annotations

import os
import pathlib
import signal
import subprocess
import sys
import threading

from distributed import Client

from daskgraph.cluster.server import free_ports

REPO = pathlib.Path(__file__).resolve().parents[2]
SUITE = REPO / "tests" / "compat_suite"
#: bounds of the waits (a hang fails the test; nothing is timed)
WAIT_S = 120


def _start(name: str, ports: list[int], folder: pathlib.Path) -> subprocess.Popen:
    source = (SUITE / name).read_text()
    for old, new in zip(("2222", "2223"), ports, strict=True):
        source = source.replace(f"localhost:{old}", f"localhost:{new}")
    script = folder / name
    script.write_text(source)
    path = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p)
    return subprocess.Popen(
        [sys.executable, str(script)],
        stdout=subprocess.PIPE,
        stderr=(folder / f"{name}.err").open("w"),
        text=True,
        env={**os.environ, "PYTHONPATH": path, "PYTHONUNBUFFERED": "1"},
        cwd=folder,
    )


def test_ctrl_c_on_one_task_prints_no_traceback_on_the_other(tmp_path):
    ports = free_ports(2)
    first = _start("notebook_server1.py", ports, tmp_path)
    second = _start("notebook_server2.py", ports, tmp_path)
    client = None
    try:
        assert first.stdout.readline() == "b'Hello from server1!'\n"
        assert second.stdout.readline() == "b'Hello from server2!'\n"
        client = Client(f"tcp://localhost:{ports[0]}", set_as_default=False, timeout=WAIT_S)
        left = threading.Event()

        def on_event(event) -> None:
            if event[1].get("action") == "remove-client":
                left.set()

        client.subscribe_topic("all", on_event)
        second.send_signal(signal.SIGINT)
        second.wait(WAIT_S)
        assert left.wait(WAIT_S), "the scheduler never saw the second task's client leave"
        client.unsubscribe_topic("all")  # (a client closing while subscribed is not the test)
        client.close()
        client = None
        first.send_signal(signal.SIGINT)
        first.wait(WAIT_S)
    finally:
        if client is not None:
            client.close()
        for process in (first, second):
            if process.poll() is None:
                process.kill()
                process.wait()
    printed = (tmp_path / "notebook_server1.py.err").read_text()
    for alarm in ("CRITICAL", "Traceback", "CommClosedError"):
        assert alarm not in printed, printed
