"""Logical CPU devices: ``ConfigProto(device_count={"CPU": n})`` gives a session n CPU devices
(issue 26), each a worker of the embedded cluster, placed on, run on, and run at the same
time; a cluster of one's own that has fewer is refused with a message saying so."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import daskgraph.compat.v1 as tf
from daskgraph.cluster.local import local_cluster
from daskgraph.runtime.client.session import RunMetadata, RunOptions

TRACE = RunOptions(trace_level=RunOptions.FULL_TRACE)
CPU = "/job:localhost/replica:0/task:0/device:CPU:"


def _four_cpus(**options) -> tf.ConfigProto:
    return tf.ConfigProto(device_count={"CPU": 4}, **options)


def test_four_cpu_devices_are_listed_logged_placed_on_and_run_on(capfd) -> None:
    graph = tf.Graph()
    with graph.as_default():
        products = []
        for i in range(4):
            with tf.device(f"/cpu:{i}"):
                x = tf.constant(np.full((2, 2), i + 1, np.float32), name=f"x{i}")
                products.append(tf.matmul(x, x, name=f"product{i}"))
        with tf.device("/cpu:0"):
            total = tf.add_n(products, name="total")
    with tf.Session(graph=graph, config=_four_cpus(log_device_placement=True)) as session:
        assert [d.name for d in session.list_devices()] == [f"{CPU}{i}" for i in range(4)]
        metadata = RunMetadata()
        value = session.run(total, options=TRACE, run_metadata=metadata)
        workers = {d.name: d.worker for d in session.list_devices()}
    np.testing.assert_allclose(value, np.full((2, 2), 2 * (1 + 4 + 9 + 16), np.float32))
    for i in range(4):  # where each product actually ran: its device's own worker
        assert metadata.step_stats.worker_of(f"product{i}") == workers[f"{CPU}{i}"]
    assert len(set(workers.values())) == 4
    logged = capfd.readouterr().err
    assert f"product3: (MatMul): {CPU}3" in logged


def test_two_cpu_partitions_run_at_the_same_time() -> None:
    """Each of two ops on /cpu:1 and /cpu:2 waits for the other at a barrier: a run ends only
    if their partitions overlap in time (one after the other, the barrier breaks)."""
    barrier = threading.Barrier(2, timeout=30)
    ran_on: list[str] = []

    def meet(x: np.ndarray) -> np.ndarray:
        ran_on.append(threading.current_thread().name)
        barrier.wait()
        return x + 1

    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float32, [2], name="x")
        met = []
        for i in (1, 2):
            with tf.device(f"/cpu:{i}"):
                met.append(tf.py_func(meet, [x * float(i)], tf.float32, name=f"meet{i}"))
        with tf.device("/cpu:0"):
            total = tf.add_n(met)
    with tf.Session(graph=graph, config=_four_cpus()) as session:
        for _ in range(4):  # the first run, and the repeated (compiled) ones
            value = session.run(total, {x: np.ones(2, np.float32)})
            np.testing.assert_allclose(value, [5.0, 5.0])
    assert not barrier.broken
    assert {name.split("-Dask")[0] for name in ran_on} == {f"{CPU}1", f"{CPU}2"}


def test_a_cluster_of_ones_own_with_fewer_cpus_is_refused_and_stays_usable() -> None:
    cluster = local_cluster(processes=False, virtual_gpus=0, gpus=[])
    try:
        address = cluster.scheduler_address
        with pytest.raises(tf.errors.InvalidArgumentError) as raised:
            tf.Session(address, config=_four_cpus())
        message = str(raised.value)
        assert "device_count={'CPU': 4}" in message and "has 1 (/cpu:0)" in message
        assert "one CPU worker per device" in message
        with tf.Session(address, config=tf.ConfigProto(device_count={"CPU": 1})) as session:
            assert session.run(tf.constant(2.0) * 3.0) == 6.0
    finally:
        cluster.close()


def test_a_cluster_of_ones_own_may_have_logical_cpus_too() -> None:
    cluster = local_cluster(processes=False, virtual_gpus=0, gpus=[], cpu_devices=2)
    try:
        with tf.Graph().as_default():
            with tf.device("/cpu:1"):
                y = tf.constant(4.0) + 1.0
            config = tf.ConfigProto(device_count={"CPU": 2})
            with tf.Session(cluster.scheduler_address, config=config) as session:
                metadata = RunMetadata()
                assert session.run(y, options=TRACE, run_metadata=metadata) == 5.0
                (cpu1,) = [d.worker for d in session.list_devices() if d.name == f"{CPU}1"]
                assert metadata.step_stats.worker_of(y.op.name) == cpu1
    finally:
        cluster.close()
