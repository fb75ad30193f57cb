"""Lost workers: runs survive a worker that dies mid-run, and a device gone for good fails fast.

The embedded cluster's process workers run under a nanny, which restarts a dead worker under
the same device name; the session notices the loss within
``daskgraph.liveness-check-interval``
and runs again on the restarted worker. A device that does not come back is placed around
with soft placement, and reported by name without it.
"""

from __future__ import annotations

import contextlib
import random
import threading
import time

import dask
import numpy as np
import pytest
from distributed import Client
from worker_probes import kill, wait_for_devices

import daskgraph as dg
from daskgraph.cluster.liveness import cluster_workers
from daskgraph.cluster.local import local_cluster
from daskgraph.runtime.client.session import RunMetadata, RunOptions
from daskgraph.testing import within

N = 500


def _graph():
    with dg.device("/gpu:0"):
        a = dg.placeholder(dg.float32, [N, N], name="a")
        y = a
        for _ in range(30):
            y = dg.matmul(y, a) + a
    with dg.device("/cpu:0"):
        out = dg.reduce_sum(y * 2.0)
    return a, out


def _expected(value: np.ndarray) -> np.float32:
    y = value
    for _ in range(30):
        y = y @ value + value
    return (y * np.float32(2.0)).sum(dtype=np.float32)


@pytest.fixture(scope="module")
def process_cluster():
    cluster = local_cluster(virtual_gpus=1, processes=True, cpu_threads=1)
    client = Client(cluster, set_as_default=False)
    _wait_for_both(client)
    yield client
    client.close()
    cluster.close()


TRIALS = 20


def test_runs_survive_a_worker_killed_at_a_random_point(process_cluster):
    """20 kills of a random worker at a random moment (during a run, or just after one) on one
    cluster; every run returns the right result."""
    client = process_cluster
    rng = random.Random(20261121)
    value = (np.random.default_rng(0).random((N, N), dtype=np.float32) / N).astype(np.float32)
    expected = _expected(value)
    with dg.Graph().as_default() as g:
        a, out = _graph()
        session = dg.Session(client, graph=g)
        try:
            for trial in range(TRIALS):
                _wait_for_both(client)  # the last victim's nanny may still be restarting it
                victim = rng.choice(sorted(client.scheduler_info(n_workers=-1)["workers"]))
                killer = threading.Timer(rng.uniform(0.0, 0.3), kill, (client, victim))
                killer.start()
                result = within(90, lambda s=session: s.run(out, {a: value}))
                killer.join()
                assert "error" not in result, (trial, result.get("error"))
                np.testing.assert_allclose(result["value"], expected, rtol=2e-4, err_msg=trial)
        finally:
            session.close()
            _wait_for_both(client)


def _wait_for_both(client: Client, timeout: float = 60) -> None:
    """Until both devices' workers (CPU and GPU, each a process) and their nannies run."""
    wait_for_devices(client, devices=2, nannies=2, timeout=timeout)


GPU0 = "/job:localhost/replica:0/task:0/device:GPU:0"


@contextlib.contextmanager
def _cluster_quick_to_close_lost_workers():
    """A process cluster whose ``lost-worker-timeout`` (0.2 s) is far shorter than a restart."""
    with dask.config.set({"distributed.deploy.lost-worker-timeout": "0.2s"}):
        cluster = local_cluster(virtual_gpus=1, processes=True, cpu_threads=1)
        client = Client(cluster, set_as_default=False)
        try:
            _wait_for_both(client)
            yield cluster, client
        finally:
            client.close()
            cluster.close()


def test_a_restarting_worker_is_left_to_its_nanny():
    """distributed's SpecCluster closes a worker missing for ``lost-worker-timeout`` (checked
    once per removal): with the timeout shorter than a restart it would kill the nanny and
    the device would never come back. The embedded cluster waits while the nanny lives."""
    with _cluster_quick_to_close_lost_workers() as (cluster, client):
        for _ in range(3):
            workers = client.scheduler_info()["workers"].items()
            (address,) = [a for a, w in workers if w["name"] == GPU0]
            kill(client, address)
            time.sleep(1.0)  # several lost-worker timeouts pass while it restarts
            _wait_for_both(client)
            assert GPU0 in cluster.workers


def test_a_worker_whose_nanny_died_stays_gone():
    """When the nanny process itself is gone, nothing restarts the worker: its device leaves
    the cluster for good, and the cluster still closes cleanly."""
    with _cluster_quick_to_close_lost_workers() as (cluster, client):
        cluster.sync(cluster.workers[GPU0].close)  # the nanny and its worker, for good
        deadline = time.monotonic() + 20
        names = lambda: [w["name"] for w in client.scheduler_info()["workers"].values()]  # noqa: E731
        while len(names()) > 1 and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(1.0)  # several lost-worker timeouts: nothing brings it back
        assert names() == ["/job:localhost/replica:0/task:0/device:CPU:0"]
        assert (
            cluster.workers[GPU0].process is None
            or cluster.workers[GPU0].process.returncode is not None
        )


def test_variables_of_a_restarted_worker_are_reported_lost_by_name(process_cluster):
    client = process_cluster
    with dg.Graph().as_default() as g:
        with dg.device("/gpu:0"):
            v = dg.Variable(np.ones(3, np.float32), name="weights")
            doubled = v * 2.0
        session = dg.Session(client, graph=g)
        try:
            session.run(v.initializer)
            np.testing.assert_array_equal(session.run(doubled), [2.0, 2.0, 2.0])
            (gpu,) = [d.worker for d in session.list_devices() if d.name.endswith("GPU:0")]
            victim = threading.Timer(0.0, kill, (client, gpu))
            victim.start()
            victim.join()
            box = within(60, lambda: session.run(doubled))
            error = box.get("error")
            assert isinstance(error, dg.errors.FailedPreconditionError), box
            assert "'weights' was lost" in str(error) and "GPU:0" in str(error)
            session.run(v.initializer)  # re-initialized, it works again
            np.testing.assert_array_equal(session.run(doubled), [2.0, 2.0, 2.0])
        finally:
            session.close()
            _wait_for_both(client)


@pytest.mark.parametrize("soft", [False, True], ids=["no-soft-placement", "soft-placement"])
def test_a_device_gone_for_good(dg_cluster_factory, soft):
    cluster = dg_cluster_factory(virtual_gpus=1, processes=False)
    with Client(cluster, set_as_default=False) as client, dg.Graph().as_default() as g:
        client.wait_for_workers(2, timeout=30)
        with dg.device("/gpu:0"):
            x = dg.constant(np.arange(4, dtype=np.float32))
            y = dg.tanh(x) * 3.0
        config = dg.SessionConfig(allow_soft_placement=soft)
        with dask.config.set({"daskgraph.worker-restart-grace": 1.0}):
            session = dg.Session(client, graph=g, config=config)
            try:
                expected = np.tanh(np.arange(4, dtype=np.float32)) * 3.0
                np.testing.assert_allclose(session.run(y), expected, rtol=1e-6)
                (gpu,) = [d.worker for d in session.list_devices() if d.name.endswith("GPU:0")]
                gpu_name = "/job:localhost/replica:0/task:0/device:GPU:0"
                cluster.sync(cluster.workers[gpu_name].close)  # gone, and nothing restarts it
                # read completely: a plain scheduler_info() may come back without workers
                deadline = time.monotonic() + 20
                while gpu in cluster_workers(client) and time.monotonic() < deadline:
                    time.sleep(0.05)
                assert gpu not in cluster_workers(client)
                md = RunMetadata()
                trace = RunOptions(trace_level=RunOptions.FULL_TRACE)
                box = within(30, lambda: session.run(y, options=trace, run_metadata=md))
                if soft:
                    np.testing.assert_allclose(box["value"], expected, rtol=1e-6)
                    (cpu,) = [d.worker for d in session.list_devices()]
                    assert md.step_stats.worker_of(y.op.name) == cpu
                else:
                    error = box.get("error")
                    assert isinstance(error, dg.errors.InvalidArgumentError), box
                    assert "/device:GPU:0" in str(error)
                    assert box["elapsed"] < 20
            finally:
                session.close()


def test_an_assign_on_a_surviving_worker_is_not_applied_twice(process_cluster, caplog):
    """The GPU worker dies after the CPU partition's ``assign_add`` ran; the run is repeated
    on the restarted worker, and the counter on the CPU goes up by one, not two."""
    client = process_cluster
    _wait_for_both(client)
    size = 1000
    value = (np.random.default_rng(1).random((size, size), dtype=np.float32) / size).astype(
        np.float32
    )
    with dg.Graph().as_default() as g:
        with dg.device("/cpu:0"):
            counter = dg.Variable(np.float32(0.0), name="counter")
            bumped = counter.assign_add(1.0)
        with dg.device("/gpu:0"):
            a = dg.placeholder(dg.float32, [size, size], name="a")
            y = a * bumped
            for _ in range(40):  # a few seconds on one thread: the kill lands mid-run
                y = dg.matmul(y, a)
            out = dg.reduce_sum(y)
        session = dg.Session(client, graph=g)
        try:
            session.run(counter.initializer)
            (gpu,) = [d.worker for d in session.list_devices() if d.name.endswith("GPU:0")]
            killer = threading.Timer(0.5, kill, (client, gpu))
            killer.start()
            with caplog.at_level("INFO", logger="daskgraph"):
                box = within(120, lambda: session.run(out, {a: value}))
            killer.join()
            assert "error" not in box, box
            assert any("left during a run" in r.getMessage() for r in caplog.records), (
                "the kill did not interrupt the run: nothing was repeated"
            )
            assert session.run(counter) == 1.0
        finally:
            session.close()
            _wait_for_both(client)
