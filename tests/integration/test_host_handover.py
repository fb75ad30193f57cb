"""Large host arrays between processes of this machine go through shared memory: a feed to
a virtual GPU's worker process and the fetch of its result arrive whole and equal, in
segments (counted on both sides), and leave none behind; so does a tensor one GPU's worker
process sends another's, and a feed sent over Dask's comm.

The cluster has the embedded cluster's shape: the CPU worker in this process, each virtual
GPU a process of its own, so that a GPU's partition is reached through its step channel
(or, for steps that are not one round, Dask's comm).
"""

from __future__ import annotations

import os

import dask
import numpy as np
import pytest
from distributed import Client
from worker_probes import cluster_client

import daskgraph as dg
from daskgraph.runtime.client import channel_steps
from daskgraph.runtime.worker import shared_arrays

pytestmark = pytest.mark.skipif(not shared_arrays.available(), reason="no /dev/shm here")

ROWS = 4096  # x 4096 float32: 64 MiB a feed


@pytest.fixture(scope="module")
def cluster():
    """Two virtual GPUs in processes of their own, the CPU worker in this process."""
    options = {"processes": True, "cpu_threads": 1, "cpu_in_process": True}
    with cluster_client(3, virtual_gpus=2, **options) as client:
        yield client


def _gpu_counts(client: Client, gpu: str = "GPU:0") -> dict[str, int]:
    """The shared-segment counters of the worker process of virtual GPU ``gpu``."""
    workers = client.scheduler_info()["workers"].items()
    address = next(a for a, w in workers if str(w["name"]).endswith(gpu))
    return client.run(lambda: dict(shared_arrays.COUNTS), workers=[address])[address]


def _segments_left(client: Client) -> list[str]:
    pids = {os.getpid(), *client.run(os.getpid).values()}
    names = os.listdir(shared_arrays.SHARED_FOLDER)
    return [n for n in names for pid in pids if n.startswith(shared_arrays.segment_prefix(pid))]


def _feed_on_the_gpu():
    """A 64 MiB feed doubled on /gpu:0 and fetched, beside a small CPU part (two devices:
    a compiled step)."""
    with dg.device("/gpu:0"):
        x = dg.placeholder(dg.float32, [ROWS, ROWS], name="x")
        doubled = x * 2.0
        kept = dg.Variable(np.zeros((ROWS, ROWS), np.float32), name="kept")
        keep = dg.assign(kept, x)
    with dg.device("/cpu:0"):
        c = dg.placeholder(dg.float32, [2], name="c")
        small = c + 1.0
    return x, doubled, kept, keep, c, small


def test_a_large_feed_and_its_fetch_go_through_shared_memory(cluster):
    value = np.random.default_rng(3).random((ROWS, ROWS), dtype=np.float32)
    two = np.ones(2, np.float32)
    with dg.Graph().as_default(), dg.Session(cluster) as session:
        x, doubled, _, _, c, small = _feed_on_the_gpu()
        session.run(small, {c: two})  # (the first run goes through the scheduler)
        session.run([doubled, small], {x: value, c: two})
        gpu_before, here_before = _gpu_counts(cluster), dict(shared_arrays.COUNTS)
        got, _ = session.run([doubled, small], {x: value, c: two})
        gpu_after, here_after = _gpu_counts(cluster), dict(shared_arrays.COUNTS)
    np.testing.assert_array_equal(got, value * 2.0)
    feed_in = gpu_after.get("shared bytes in", 0) - gpu_before.get("shared bytes in", 0)
    fetch_in = here_after.get("shared bytes in", 0) - here_before.get("shared bytes in", 0)
    assert feed_in == value.nbytes  # the feed, mapped by the GPU's worker
    assert fetch_in == value.nbytes  # its result, mapped here
    assert _segments_left(cluster) == []


def test_a_variable_assigned_from_a_feed_keeps_it_when_the_feed_is_refilled(cluster):
    value = np.full((ROWS, ROWS), 1.0, np.float32)
    two = np.ones(2, np.float32)
    with dg.Graph().as_default(), dg.Session(cluster) as session:
        x, _, kept, keep, c, small = _feed_on_the_gpu()
        session.run(kept.initializer)
        session.run(small, {c: two})
        before = _gpu_counts(cluster).get("shared in", 0)
        session.run([keep.op, small], {x: value, c: two})
        value[:] = 5.0  # the caller refills its array after the run
        first = session.run(kept)
        session.run([keep.op, small], {x: value, c: two})
        value[:] = 7.0
        second = session.run(kept)
        assert _gpu_counts(cluster).get("shared in", 0) - before == 2
    assert float(first.min()) == float(first.max()) == 1.0
    assert float(second.min()) == float(second.max()) == 5.0
    assert _segments_left(cluster) == []


def test_a_tensor_between_gpu_worker_processes_goes_through_shared_memory(cluster):
    value = np.random.default_rng(5).random((ROWS, ROWS), dtype=np.float32)
    with dg.Graph().as_default(), dg.Session(cluster) as session:
        with dg.device("/gpu:0"):
            x = dg.placeholder(dg.float32, [ROWS, ROWS], name="x")
            doubled = x * 2.0
        with dg.device("/gpu:1"):
            total = dg.reduce_sum(doubled + 1.0)  # (GPU:0 sends GPU:1 the whole tensor)
        session.run(total, {x: value})
        session.run(total, {x: value})
        before = {gpu: _gpu_counts(cluster, gpu) for gpu in ("GPU:0", "GPU:1")}
        got = session.run(total, {x: value})
        after = {gpu: _gpu_counts(cluster, gpu) for gpu in ("GPU:0", "GPU:1")}
    np.testing.assert_allclose(got, (value * 2.0 + 1.0).sum(dtype=np.float64), rtol=1e-4)
    gained = {
        gpu: after[gpu].get("shared bytes in", 0) - before[gpu].get("shared bytes in", 0)
        for gpu in after
    }
    assert gained == {"GPU:0": value.nbytes, "GPU:1": value.nbytes}  # the feed; the tensor
    assert _segments_left(cluster) == []


def test_a_worker_that_sees_another_shared_folder_gets_its_feeds_as_frames(cluster, monkeypatch):
    """A worker in another container of this machine (here: one whose shared memory folder
    differs) cannot map this process's segments: no channel, no segment, same results."""
    monkeypatch.setattr(channel_steps, "POOL", channel_steps.ChannelPool())
    monkeypatch.setattr(channel_steps, "folder_identity", lambda: "another-container")
    value = np.random.default_rng(4).random((ROWS, ROWS), dtype=np.float32)
    two = np.ones(2, np.float32)
    with dg.Graph().as_default(), dg.Session(cluster) as session:
        x, doubled, _, _, c, small = _feed_on_the_gpu()
        session.run(small, {c: two})
        before = _gpu_counts(cluster).get("shared bytes in", 0)
        for _ in range(2):
            got, _ = session.run([doubled, small], {x: value, c: two})
            np.testing.assert_array_equal(got, value * 2.0)
        assert _gpu_counts(cluster).get("shared bytes in", 0) == before


def test_over_dask_comm_a_large_feed_and_its_fetch_go_through_shared_memory(cluster):
    """Where a step goes through Dask's comm (step channels off, as for traced runs and
    runs with a deadline), the feed and the fetched tensor still go through segments."""
    value = np.random.default_rng(6).random((ROWS, ROWS), dtype=np.float32)
    two = np.ones(2, np.float32)
    with (
        dask.config.set({"daskgraph.step-channels": False}),
        dg.Graph().as_default(),
        dg.Session(cluster) as session,
    ):
        x, doubled, _, _, c, small = _feed_on_the_gpu()
        session.run(small, {c: two})
        session.run([doubled, small], {x: value, c: two})
        gpu_before, here_before = _gpu_counts(cluster), dict(shared_arrays.COUNTS)
        got, _ = session.run([doubled, small], {x: value, c: two})
        gpu_after, here_after = _gpu_counts(cluster), dict(shared_arrays.COUNTS)
    np.testing.assert_array_equal(got, value * 2.0)
    assert gpu_after.get("channel steps", 0) == gpu_before.get("channel steps", 0)
    feed_in = gpu_after.get("shared bytes in", 0) - gpu_before.get("shared bytes in", 0)
    fetch_in = here_after.get("shared bytes in", 0) - here_before.get("shared bytes in", 0)
    assert (feed_in, fetch_in) == (value.nbytes, value.nbytes)
    assert _segments_left(cluster) == []
