"""Clusters in processes of their own, for faults that kill a process: a scheduler, workers.

:class:`SeparateCluster` starts a Dask scheduler (``dask scheduler``) and one process holding
two plain workers (``CPU: 1`` each, so two CPU devices), both children of the test that can be
killed without taking the test down. :func:`wait_until_executing` waits, on an event the worker
itself reports, until a worker is inside a partition: the moment to kill something mid-run.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager

from distributed import Client

from daskgraph.cluster.server import free_ports

__all__ = ["SeparateCluster", "executing", "separate_cluster", "wait_until_executing"]

#: two plain workers in one process, one thread each; run as ``python -c WORKERS address``
WORKERS = """
import asyncio, sys
from distributed import Worker

async def main(address):
    workers = [
        Worker(address, name=f"cpu-{i}", nthreads=1, resources={"CPU": 1}, dashboard=False)
        for i in range(2)
    ]
    await asyncio.gather(*workers)
    await asyncio.gather(*(w.finished() for w in workers))

asyncio.run(main(sys.argv[1]))
"""


class SeparateCluster:
    """A scheduler process and a process of two workers on 127.0.0.1 (see the module)."""

    def __init__(self) -> None:
        self.address = f"tcp://127.0.0.1:{free_ports(1)[0]}"
        port = self.address.rsplit(":", 1)[1]
        quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
        self.scheduler = subprocess.Popen(
            [
                *(sys.executable, "-m", "distributed.cli.dask_scheduler", "--host", "127.0.0.1"),
                *("--port", port, "--dashboard-address", "127.0.0.1:0"),
            ],
            **quiet,
        )
        self.workers = subprocess.Popen([sys.executable, "-c", WORKERS, self.address], **quiet)

    def wait_ready(self, timeout: float = 60.0) -> None:
        """Until the scheduler answers and both workers have joined."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                with Client(self.address, set_as_default=False, timeout=2) as client:
                    client.wait_for_workers(2, timeout=max(deadline - time.monotonic(), 1))
                    return
            except OSError:
                if time.monotonic() > deadline or self.scheduler.poll() is not None:
                    raise

    def kill_scheduler(self) -> None:
        """SIGKILL the scheduler's process (nothing of it says goodbye)."""
        os.kill(self.scheduler.pid, signal.SIGKILL)
        self.scheduler.wait()

    def close(self) -> None:
        """Kill whatever of the cluster is still running."""
        for process in (self.workers, self.scheduler):
            if process.poll() is None:
                process.kill()
            process.wait()


@contextmanager
def separate_cluster() -> Iterator[SeparateCluster]:
    """A started :class:`SeparateCluster`, killed at the end."""
    cluster = SeparateCluster()
    try:
        cluster.wait_ready()
        yield cluster
    finally:
        cluster.close()


def executing() -> bool:
    """Whether a thread of this process is inside a partition (run on a worker by
    ``client.run``; a function made here, so that it travels by value, not as a name the
    worker would have to import)."""
    return _executing()()


def _executing():
    def inside() -> bool:
        names = {"execute_partition", "run_partition"}  # on the stack on every path
        for frame in sys._current_frames().values():
            while frame is not None:
                code = frame.f_code
                if code.co_name in names and "daskgraph" in code.co_filename:
                    return True
                frame = frame.f_back
        return False

    return inside


def wait_until_executing(
    client: Client, timeout: float = 30.0, workers: list[str] | None = None
) -> None:
    """Until some worker of ``client``'s cluster (of ``workers``) reports that it is running
    a partition."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if any(client.run(_executing(), workers=workers).values()):
            return
        time.sleep(0.01)
    raise AssertionError(f"no worker started a partition within {timeout} s")
