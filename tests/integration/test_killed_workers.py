"""A worker or nanny killed outright leaves nothing behind (issue 32, L1): the step channel
folder (and socket) of a worker killed with SIGKILL is removed when its nanny starts the next
one, and a nanny killed with SIGKILL prints no warning about leaked semaphores (its resource
tracker cleans them up, quietly).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import numpy as np
import psutil
import pytest
from distributed import Client
from worker_probes import wait_for_devices

import daskgraph as dg
from daskgraph.cluster.local import local_cluster
from daskgraph.runtime.worker.step_service import EXTENSION
from daskgraph.testing import within


@pytest.fixture
def cluster():
    """One virtual GPU in a process of its own (a nanny's), the CPU worker in this process."""
    with local_cluster(virtual_gpus=1, processes=True, cpu_threads=1, cpu_in_process=True) as c:
        with Client(c, set_as_default=False) as client:
            client.wait_for_workers(2, timeout=60)
            yield client


def _one_round_step():
    """A step over /gpu:0 and /cpu:0 that goes through the GPU worker's step channel."""
    with dg.device("/gpu:0"):
        x = dg.placeholder(dg.float32, [2], name="x")
        y = x * 2.0
    with dg.device("/cpu:0"):
        z = y + 1.0
    return x, z


def _channel_of(client: Client, address: str) -> tuple[int, str]:
    """The process id of the worker at ``address`` and its step channel's folder."""

    def probe(dask_worker):
        return os.getpid(), dask_worker.extensions[EXTENSION].channels._directory

    return client.run(probe, workers=[address])[address]


def _gpu_worker(session: dg.Session) -> str:
    (address,) = [d.worker for d in session.list_devices() if d.name.endswith("GPU:0")]
    return address


def test_a_killed_workers_step_folder_is_removed_when_its_nanny_starts_the_next(cluster):
    with dg.Graph().as_default(), dg.Session(cluster) as session:
        x, z = _one_round_step()
        for _ in range(2):  # (the second run goes through the step channel)
            assert session.run(z, {x: np.ones(2, np.float32)}).tolist() == [3.0, 3.0]
        pid, folder = _channel_of(cluster, _gpu_worker(session))
        assert folder and os.path.exists(os.path.join(folder, "steps.sock"))
        os.kill(pid, signal.SIGKILL)
        psutil.Process(pid).wait(30) if psutil.pid_exists(pid) else None
        wait_for_devices(cluster, devices=2, nannies=1)
        box = within(120, lambda: session.run(z, {x: np.zeros(2, np.float32)}).tolist())
        assert box.get("value") == [1.0, 1.0], box
        assert not os.path.exists(folder), "the killed worker's step folder is still there"


KILL_THE_NANNY = """
import os, psutil
import numpy as np
from distributed import Client
import daskgraph as dg
from daskgraph.cluster.local import local_cluster

with local_cluster(virtual_gpus=1, processes=True, cpu_threads=1, cpu_in_process=True) as c:
    with Client(c, set_as_default=False) as client:
        client.wait_for_workers(2, timeout=60)
        with dg.device("/gpu:0"):
            x = dg.placeholder(dg.float32, [2], name="x")
        with dg.Session(client) as session:
            assert session.run(x * 2.0, {x: np.ones(2, np.float32)}).tolist() == [2.0, 2.0]
            (gpu,) = [d.worker for d in session.list_devices() if d.name.endswith("GPU:0")]
        (pid,) = client.run(os.getpid, workers=[gpu], nanny=True).values()
        nanny = psutil.Process(pid)
        family = [nanny, *nanny.children(recursive=True)]
        assert any("resource_tracker" in " ".join(p.cmdline()) for p in family), family
        nanny.kill()
        _, alive = psutil.wait_procs(family, timeout=60)  # the tracker last, after it warned
        assert not alive, alive
print("done")
"""


def test_a_killed_nanny_prints_no_leaked_semaphore_warning():
    done = subprocess.run(
        [sys.executable, "-c", KILL_THE_NANNY], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0 and done.stdout.strip() == "done", done.stderr
    assert "leaked semaphore" not in done.stderr, done.stderr
