"""A two-device step over Dask's UCX transport (``daskgraph.local.protocol: ucx``), on a
machine without a GPU: UCX over TCP, shared memory and loopback (issue 33, item 2).

The workers listen on ``ucx://``; a tensor made on one virtual GPU's worker process is read
on the other's, by a compiled step (no task through the scheduler), and
``log_device_placement`` and the ``/daskgraph`` page name the pair's transport ``ucx``.
Skipped only where ``distributed-ucxx`` is not installed (``make test`` installs it on Linux
x86_64: the ``ucx-cu12`` extra).
"""

from __future__ import annotations

import json
import urllib.request

import dask
import numpy as np
import pytest
from worker_probes import cluster_client, step_counts, transitions

import daskgraph as dg

pytest.importorskip("distributed_ucxx", reason="Dask's UCX transport is not installed")

PREFIX = "/job:localhost/replica:0/task:0/device:"


@pytest.fixture(scope="module")
def ucx_cluster():
    """Two virtual GPUs in processes of their own, the CPU worker in this process, on UCX."""
    with dask.config.set({"daskgraph.local.security": "none"}):
        with cluster_client(
            3, virtual_gpus=2, processes=True, cpu_in_process=True, cpu_threads=1, protocol="ucx"
        ) as client:
            yield client


def _gpu_to_gpu():
    """A tensor made on GPU:0 and read on GPU:1, fed from and fetched to the client."""
    a = dg.placeholder(dg.float32, [8, 8], name="a")
    with dg.device("/gpu:0"):
        first = dg.matmul(a, a, name="first")
    with dg.device("/gpu:1"):
        second = dg.tanh(first * 0.01, name="second")
    return a, second


def test_a_two_device_step_runs_over_ucx(ucx_cluster):
    workers = ucx_cluster.scheduler_info(n_workers=-1)["workers"]
    assert len(workers) == 3 and all(a.startswith("ucx://") for a in workers), list(workers)
    value = np.random.default_rng(0).random((8, 8), dtype=np.float32)
    expected = np.tanh((value @ value) * np.float32(0.01))
    with dg.Graph().as_default(), dg.Session(ucx_cluster) as session:
        a, second = _gpu_to_gpu()
        np.testing.assert_allclose(session.run(second, {a: value}), expected, rtol=1e-5)
        before, steps_before = transitions(ucx_cluster), step_counts(ucx_cluster)
        for i in range(5):
            fed = value + np.float32(i)
            want = np.tanh((fed @ fed) * np.float32(0.01))
            np.testing.assert_allclose(session.run(second, {a: fed}), want, rtol=1e-5)
        assert transitions(ucx_cluster) == before  # compiled steps: no task went by the scheduler
        steps = step_counts(ucx_cluster)
        for device in ("GPU:0", "GPU:1"):
            assert steps[device]["steps"] - steps_before[device].get("steps", 0) == 5


def test_placement_log_and_page_name_the_ucx_transport(ucx_cluster, capfd):
    config = dg.SessionConfig(log_device_placement=True)
    with dg.Graph().as_default(), dg.Session(ucx_cluster, config=config) as session:
        a, second = _gpu_to_gpu()
        session.run(second, {a: np.ones((8, 8), np.float32)})
        link, sid = session.dashboard_link, session._id
    log = capfd.readouterr().err
    assert "Transports between devices:" in log
    assert f"{PREFIX}GPU:0 <-> {PREFIX}GPU:1: ucx" in log, log
    assert link is not None
    with urllib.request.urlopen(link + ".json", timeout=30) as answer:
        snap = json.loads(answer.read().decode())
    plan = next(p for p in snap["plans"] if p["session"] == sid)
    assert plan["transports"] == [
        {"source": f"{PREFIX}GPU:0", "target": f"{PREFIX}GPU:1", "transport": "ucx"}
    ]


def test_a_cpu_to_gpu_pair_on_ucx_goes_through_the_local_socket_it_is_named(ucx_cluster, capfd):
    """The client's own CPU worker reaches a GPU worker of this machine through its step
    channel (a local socket) whatever Dask's transport: the log names what the step uses."""
    config = dg.SessionConfig(log_device_placement=True)
    value = np.arange(16, dtype=np.float32).reshape(4, 4)
    with dg.Graph().as_default(), dg.Session(ucx_cluster, config=config) as session:
        with dg.device("/cpu:0"):
            a = dg.placeholder(dg.float32, [4, 4], name="a")
            doubled = a * 2.0
        with dg.device("/gpu:0"):
            product = dg.matmul(doubled, doubled, name="product")
        with dg.device("/cpu:0"):
            total = dg.reduce_sum(product, name="total")
        expected = ((value * 2) @ (value * 2)).sum()
        np.testing.assert_allclose(session.run(total, {a: value}), expected, rtol=1e-5)
        before = step_counts(ucx_cluster)["GPU:0"].get("channel steps", 0)
        for _ in range(3):
            np.testing.assert_allclose(session.run(total, {a: value}), expected, rtol=1e-5)
        assert step_counts(ucx_cluster)["GPU:0"]["channel steps"] - before == 3
    assert f"{PREFIX}CPU:0 <-> {PREFIX}GPU:0: local socket" in capfd.readouterr().err


def test_a_session_names_a_ucx_cluster_by_its_address(ucx_cluster):
    address = ucx_cluster.scheduler.address
    assert address.startswith("ucx://")
    with dg.Graph().as_default(), dg.Session(address) as session:
        a, second = _gpu_to_gpu()
        value = np.eye(8, dtype=np.float32)
        np.testing.assert_allclose(session.run(second, {a: value}), np.tanh(value * 0.01))
