"""A device whose worker left for good is placed around at once: the restart grace
(``daskgraph.worker-restart-grace``) is for a nanny restarting its worker, not for a worker
retired on purpose (``Client.retire_workers``) or one whose nanny is gone too.

The grace is set to an hour: a run that waited for it would not end within the test's bound
(``within``), so a run that ends shows it did not wait. Each GPU worker is a process with a
nanny, as on a real cluster.
"""

from __future__ import annotations

import os
import signal

import dask
import numpy as np
import pytest
from distributed import Client
from worker_probes import cluster_client

import daskgraph as dg
from daskgraph.config import SessionConfig
from daskgraph.runtime.client.session import RunMetadata, RunOptions
from daskgraph.testing import within

#: a grace far longer than the bound below (a run that waits for it fails the test)
SETTINGS = {"daskgraph.worker-restart-grace": "3600s"}
#: a hang, not a slow machine, is what fails (the run itself takes well under a second)
LIMIT_S = 120
TRACE = RunOptions(trace_level=RunOptions.FULL_TRACE)


@pytest.fixture
def client():
    """Two virtual GPUs, each a worker process with its nanny; the CPU worker in this one."""
    options = {"processes": True, "cpu_threads": 1, "cpu_in_process": True}
    with cluster_client(3, virtual_gpus=2, **options) as client:
        yield client


def _gpu1(client: Client) -> tuple[str, dict]:
    (found,) = [
        (address, info)
        for address, info in client.scheduler_info(n_workers=-1)["workers"].items()
        if str(info["name"]).endswith("GPU:1")
    ]
    return found


def _device_of(session: dg.Session, fetch, name: str) -> tuple[float, str]:
    metadata = RunMetadata()
    value = session.run(fetch, options=TRACE, run_metadata=metadata)
    return float(value), metadata.step_stats.device_of(name)


def _runs_elsewhere_at_once(client: Client, leave) -> None:
    """Run an op pinned to /gpu:1 (soft placement), let GPU:1 leave by ``leave(address,
    record)``, and run it again: it runs on another device, without waiting for GPU:1."""
    config = SessionConfig(allow_soft_placement=True)
    with dask.config.set(SETTINGS), dg.Graph().as_default():
        with dg.device("/gpu:1"):
            y = dg.multiply(dg.constant(3.0), 2.0, name="y")
        with dg.Session(client, config=config) as session:
            assert _device_of(session, y, "y") == (
                6.0,
                "/job:localhost/replica:0/task:0/device:GPU:1",
            )
            leave(*_gpu1(client))
            box = within(LIMIT_S, lambda: _device_of(session, y, "y"))
            assert "error" not in box, box
            value, device = box["value"]
            assert value == 6.0
            assert not device.endswith("GPU:1"), device


def test_a_retired_gpu_is_placed_around_at_once(client):
    def retire(address: str, _: dict) -> None:
        assert address in client.retire_workers(workers=[address])

    _runs_elsewhere_at_once(client, retire)


def test_a_gpu_worker_that_ran_a_sessions_steps_can_be_retired(client):
    """Runs leave nothing on a worker that Dask cannot move (an actor was such a thing:
    ``retire_workers`` kept the worker that held the session's executor actor)."""
    with dask.config.set(SETTINGS), dg.Graph().as_default():
        with dg.device("/gpu:1"):
            x = dg.placeholder(dg.float32, [None], name="x")
            y = dg.reduce_sum(x * 2.0)
        with dg.device("/cpu:0"):
            z = y + 1.0
        with dg.Session(client) as session:
            for _ in range(3):  # one-device runs, and runs of two devices
                assert session.run(y, {x: np.ones(4, np.float32)}) == 8.0
                assert session.run(z, {x: np.ones(4, np.float32)}) == 9.0
            address, _ = _gpu1(client)
            box = within(LIMIT_S, lambda: client.retire_workers(workers=[address]))
            assert address in box.get("value", {}), box
            names = [w["name"] for w in client.scheduler_info(n_workers=-1)["workers"].values()]
            assert not any(str(name).endswith("GPU:1") for name in names), names


def test_a_gpu_whose_nanny_died_too_is_placed_around_at_once(client):
    def kill_with_nanny(address: str, _: dict) -> None:
        worker_pid = client.run(os.getpid, workers=[address])[address]
        nanny_pids = client.run(os.getpid, workers=[address], nanny=True)
        (nanny_pid,) = nanny_pids.values()
        os.kill(nanny_pid, signal.SIGKILL)  # first the nanny: nobody restarts the worker
        os.kill(worker_pid, signal.SIGKILL)

    _runs_elsewhere_at_once(client, kill_with_nanny)
