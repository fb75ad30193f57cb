"""Devices that stop answering or leave without a word: no run waits on them for ever.

* A membership event that never reaches the client (the watch's subscription misses it) is
  made up for by the run's watchdog, which reads the membership again once a tick.
* A worker frozen with SIGSTOP (swap, a debugger, a long pause) sends no heartbeat while the
  scheduler still lists it: after ``daskgraph.worker-stall-timeout`` it is taken as gone, its
  device is named, soft placement moves its ops, and it is not trusted again when it wakes.
* After a device is lost for good, every later run says so (placed again), not "run again".
* A session opened while a worker of the cluster's spec restarts waits for it.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from collections.abc import Iterator

import dask
import numpy as np
import pytest
from distributed import Client

import daskgraph as dg
from daskgraph.cluster.liveness import ClusterWatch, cluster_workers
from daskgraph.cluster.local import local_cluster
from daskgraph.runtime.client.session import RunMetadata, RunOptions
from daskgraph.testing import within

GPU0 = "/job:localhost/replica:0/task:0/device:GPU:0"
CPU0 = "/job:localhost/replica:0/task:0/device:CPU:0"
#: a stall timeout short enough for the suite; the product's default is 15 s
STALL = "4s"


def _address_of(client: Client, name: str) -> str:
    (address,) = [a for a, w in cluster_workers(client).items() if w.get("name") == name]
    return address


def _wait_until_gone(client: Client, name: str, timeout: float = 60) -> None:
    """Until the scheduler itself no longer lists ``name`` (read completely: a plain
    ``scheduler_info()`` may come back without worker records)."""
    deadline = time.monotonic() + timeout
    while any(w.get("name") == name for w in cluster_workers(client).values()):
        assert time.monotonic() < deadline, f"{name} was never removed"
        time.sleep(0.05)


def _two_device_graph() -> tuple[dg.Tensor, np.float32]:
    value = np.arange(16, dtype=np.float32).reshape(4, 4) / 16
    with dg.device("/gpu:0"):
        x = dg.constant(value, name="x")
        y = dg.matmul(x, x, name="y")  # its device is asserted by name
    with dg.device("/cpu:0"):
        out = dg.reduce_sum(y + 1.0, name="out")
    return out, np.float32((value @ value + 1.0).sum(dtype=np.float32))


@pytest.fixture
def deaf_watches(monkeypatch) -> None:
    """Every watch made from now on misses every membership event."""
    monkeypatch.setattr(ClusterWatch, "_on_event", lambda self, event: None)


@pytest.mark.parametrize("soft", [True, False], ids=["soft-placement", "no-soft-placement"])
def test_a_missed_leave_event_does_not_hang_the_run(deaf_watches, soft):
    cluster = local_cluster(virtual_gpus=1, processes=False)
    try:
        with Client(cluster, set_as_default=False) as client, dg.Graph().as_default():
            client.wait_for_workers(2, timeout=60)
            out, expected = _two_device_graph()
            config = dg.SessionConfig(allow_soft_placement=soft)
            with dask.config.set({"daskgraph.worker-restart-grace": 1.0}):
                session = dg.Session(client, config=config)
                try:
                    assert session.run(out) == pytest.approx(expected)
                    cluster.sync(cluster.workers[GPU0].close)  # gone, and nothing restarts it
                    _wait_until_gone(client, GPU0)
                    md = RunMetadata()
                    trace = RunOptions(trace_level=RunOptions.FULL_TRACE)
                    box = within(60, lambda: session.run(out, options=trace, run_metadata=md))
                    if soft:
                        assert box.get("value") == pytest.approx(expected), box
                        assert md.step_stats.worker_of("y") == _address_of(client, CPU0)
                    else:
                        _assert_names_the_lost_gpu(box)
                        # and again: the session does not keep a placement on the lost device
                        _assert_names_the_lost_gpu(within(60, lambda: session.run(out)))
                finally:
                    session.close()
    finally:
        cluster.close()


def _assert_names_the_lost_gpu(box: dict) -> None:
    error = box.get("error")
    assert isinstance(error, dg.errors.InvalidArgumentError), box
    assert "GPU:0" in str(error)


@pytest.fixture
def process_cluster() -> Iterator[tuple[object, Client]]:
    """One CPU worker in this process and one virtual GPU worker in a process of its own."""
    cluster = local_cluster(virtual_gpus=1, processes=True, cpu_threads=1)
    client = Client(cluster, set_as_default=False)
    try:
        client.wait_for_workers(2, timeout=60)
        yield cluster, client
    finally:
        client.close()
        cluster.close()


@pytest.mark.parametrize("soft", [True, False], ids=["soft-placement", "no-soft-placement"])
def test_a_frozen_worker_is_taken_as_gone(process_cluster, soft):
    _, client = process_cluster
    gpu = _address_of(client, GPU0)
    (pid,) = client.run(os.getpid, workers=[gpu]).values()
    with dg.Graph().as_default(), dask.config.set({"daskgraph.worker-stall-timeout": STALL}):
        out, expected = _two_device_graph()
        session = dg.Session(client, config=dg.SessionConfig(allow_soft_placement=soft))
        try:
            assert session.run(out) == pytest.approx(expected)
            os.kill(pid, signal.SIGSTOP)
            try:
                md = RunMetadata()
                trace = RunOptions(trace_level=RunOptions.FULL_TRACE)
                box = within(40, lambda: session.run(out, options=trace, run_metadata=md))
            finally:
                os.kill(pid, signal.SIGCONT)
            if soft:
                assert box.get("value") == pytest.approx(expected), box
                assert md.step_stats.worker_of("y") == _address_of(client, CPU0)
                # awake again, it is not trusted: the next run stays off it
                md = RunMetadata()
                assert session.run(out, options=trace, run_metadata=md) == pytest.approx(expected)
                assert md.step_stats.worker_of("y") != gpu
            else:
                _assert_names_the_lost_gpu(box)
                assert "heartbeat" in str(box["error"].__cause__)
        finally:
            session.close()


def test_a_session_opened_while_a_worker_restarts_waits_for_it(process_cluster, monkeypatch):
    """The GPU worker dies while its nanny is frozen, so it stays away until the test lets the
    nanny go on; a session opened in that window waits for the device, and places on it."""
    cluster, client = process_cluster
    gpu = _address_of(client, GPU0)
    (nanny_pid,) = client.run(os.getppid, workers=[gpu]).values()
    (pid,) = client.run(os.getpid, workers=[gpu]).values()
    waiting = threading.Event()
    wait_for = ClusterWatch.wait_for

    def noting_wait_for(self, *args, **kwargs):
        waiting.set()
        return wait_for(self, *args, **kwargs)

    monkeypatch.setattr(ClusterWatch, "wait_for", noting_wait_for)
    os.kill(nanny_pid, signal.SIGSTOP)
    try:
        os.kill(pid, signal.SIGKILL)
        _wait_until_gone(client, GPU0)
        opened: dict = {}
        opener = threading.Thread(target=lambda: opened.update(within(120, _open(cluster))))
        opener.start()
        while opener.is_alive() and not waiting.is_set():
            waiting.wait(0.05)
    finally:
        os.kill(nanny_pid, signal.SIGCONT)  # the nanny restarts the worker
    opener.join(150)
    session = opened.get("value")
    assert session is not None, opened
    try:
        with session.graph.as_default(), dg.device("/gpu:0"):
            y = dg.constant(3.0) * 2.0
        md = RunMetadata()
        trace = RunOptions(trace_level=RunOptions.FULL_TRACE)
        assert session.run(y, options=trace, run_metadata=md) == 6.0
        assert md.step_stats.worker_of(y.op.name) == _address_of(client, GPU0)
    finally:
        session.close()


def _open(cluster: object):
    return lambda: dg.Session(cluster, graph=dg.Graph())


def test_the_embedded_cluster_restarts_a_frozen_worker():
    """On daskgraph's own cluster a stalled worker is also restarted by its nanny (as Dask's
    scheduler does after ``worker-ttl``): the device comes back, fresh, at a new address."""
    settings = {"daskgraph.virtual-gpus": 1, "daskgraph.worker-stall-timeout": STALL}
    with dask.config.set(settings), dg.Graph().as_default():
        with dg.device("/gpu:0"):
            y = dg.constant(np.ones((4, 4), np.float32), name="ones") * 2.0
        config = dg.SessionConfig(allow_soft_placement=True)
        with dg.Session(config=config) as first:
            client = first._conn.client
            gpu = _address_of(client, GPU0)
            (pid,) = client.run(os.getpid, workers=[gpu]).values()
            os.kill(pid, signal.SIGSTOP)
            try:
                assert within(40, lambda: first.run(y))["value"].sum() == 32.0
                deadline = time.monotonic() + 120
                while _gpu_address(client) in (None, gpu):
                    assert time.monotonic() < deadline, "the frozen worker was not restarted"
                    time.sleep(0.1)
            finally:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGCONT)
            with dg.Session() as second:
                md = RunMetadata()
                trace = RunOptions(trace_level=RunOptions.FULL_TRACE)
                assert second.run(y, options=trace, run_metadata=md).sum() == 32.0
                assert md.step_stats.worker_of(y.op.name) == _gpu_address(client) != gpu


def _gpu_address(client: Client) -> str | None:
    names = {w.get("name"): a for a, w in cluster_workers(client).items()}
    return names.get(GPU0)
