"""``dg.Session()`` with no target starts, uses and closes its own embedded cluster."""

from __future__ import annotations

import os
import threading
import time

import dask
import numpy as np
import psutil
import pytest

import daskgraph as dg
from daskgraph.cluster import embedded as dg_embedded
from daskgraph.runtime.client.session import RunMetadata, RunOptions

TRACE = RunOptions(trace_level=RunOptions.FULL_TRACE)
PREFIX = "/job:localhost/replica:0/task:0/device:"
LOOPBACK = "tls://127.0.0.1:"  # (mutual TLS with the cluster's own credentials: issue 32)
THREADS = {"daskgraph.virtual-gpus": 1, "daskgraph.local.processes": False}
#: every worker in a process of its own, the CPU worker too
PROCESSES = {"daskgraph.local.processes": True, "daskgraph.local.cpu-in-process": False}


def _listening() -> set[tuple[str, int]]:
    """(ip, port) of the TCP sockets this process listens on."""
    return {
        (c.laddr.ip, c.laddr.port)
        for c in psutil.Process().net_connections(kind="inet")
        if c.status == psutil.CONN_LISTEN
    }


def _worker_addresses(sess: dg.Session) -> list[str]:
    return list(sess.client.scheduler_info(n_workers=-1)["workers"])


def _small_graph():
    with dg.device("/cpu:0"):
        x = dg.constant(np.arange(4, dtype=np.float32).reshape(2, 2), name="x")
    y = dg.matmul(x, x, transpose_b=True, name="y")  # default: GPU:0
    return y, np.arange(4, dtype=np.float32).reshape(2, 2) @ np.arange(4).reshape(2, 2).T


@pytest.fixture
def embedded():
    """An embedded session (threads, one virtual GPU) over a fresh default graph."""
    with dg.Graph().as_default(), dask.config.set(THREADS):
        sess = dg.Session()
        try:
            yield sess
        finally:
            sess.close()


def test_embedded_cluster_has_a_cpu_and_a_virtual_gpu(embedded):
    devices = embedded.list_devices()
    assert [d.name for d in devices] == [PREFIX + "CPU:0", PREFIX + "GPU:0"]
    assert [d.kind for d in devices] == ["cpu", "virtual-gpu"]
    assert len({d.worker for d in devices}) == 2  # one worker per device
    assert embedded.graph is dg.get_default_graph()


@pytest.mark.parametrize("count", [0, 2], ids=["no-gpu", "two-gpus"])
def test_virtual_gpu_count_comes_from_dask_config(count):
    with dg.Graph().as_default(), dask.config.set({**THREADS, "daskgraph.virtual-gpus": count}):
        sess = dg.Session()
    try:
        names = [d.name for d in sess.list_devices()]
        assert names == [PREFIX + "CPU:0"] + [f"{PREFIX}GPU:{i}" for i in range(count)]
    finally:
        sess.close()


def test_embedded_cluster_listens_on_loopback_only():
    before = _listening()
    with dg.Graph().as_default(), dask.config.set(THREADS):
        sess = dg.Session()
    try:
        assert sess.client.scheduler.address.startswith(LOOPBACK)
        addresses = _worker_addresses(sess)
        assert len(addresses) == 2
        for address in addresses:
            assert address.startswith(LOOPBACK), address
        for device in sess.list_devices():
            assert device.worker.startswith(LOOPBACK), device
        # every socket it opened (scheduler, workers, HTTP/dashboard) is on 127.0.0.1
        opened = _listening() - before
        assert opened, "the embedded cluster opened no listening socket?"
        assert {ip for ip, _ in opened} == {"127.0.0.1"}, opened
    finally:
        sess.close()


def test_embedded_session_runs_a_graph_on_its_devices(embedded):
    y, want = _small_graph()
    md = RunMetadata()
    result = embedded.run(y, options=TRACE, run_metadata=md)
    np.testing.assert_allclose(result, want)
    workers = {d.name[-5:]: d.worker for d in embedded.list_devices()}
    assert md.step_stats.worker_of("x") == workers["CPU:0"]
    assert md.step_stats.worker_of("y") == workers["GPU:0"]
    v = dg.Variable(1.0, name="v")
    step = v.assign_add(2.0)
    embedded.run(v.initializer)
    assert [embedded.run(step) for _ in range(3)] == [3.0, 5.0, 7.0]


def test_empty_target_also_starts_an_embedded_cluster():
    with dg.Graph().as_default(), dask.config.set(THREADS):
        sess = dg.Session("")
        try:
            assert sess._conn.cluster is not None
            assert [d.kind for d in sess.list_devices()] == ["cpu", "virtual-gpu"]
            assert sess.run(dg.constant(3.0) - 1.0) == 2.0
        finally:
            sess.close()
    assert sess.client.status == "running"  # the process's embedded cluster, kept for the next


def test_sessions_of_a_process_share_the_embedded_cluster():
    with dg.Graph().as_default(), dask.config.set(THREADS):
        first = dg.Session()
        v = dg.Variable(1.0, name="v")
        first.run(v.initializer)
        second = dg.Session()
        try:
            assert second.client is first.client and second._conn.cluster is first._conn.cluster
            # one cluster, but each session has its own variables
            with pytest.raises(dg.errors.FailedPreconditionError, match="'v'"):
                second.run(v)
            first.close()
            assert second.run(dg.constant(2.0) * 2.0) == 4.0  # unaffected by the other's close
        finally:
            second.close()
        third = dg.Session()  # after every session closed: the same cluster again
        try:
            assert third._conn.cluster is first._conn.cluster
        finally:
            third.close()


def test_another_cluster_shape_replaces_an_idle_embedded_cluster():
    with dg.Graph().as_default():
        with dask.config.set(THREADS):
            with dg.Session() as one:
                old = one._conn.cluster
        with dask.config.set({**THREADS, "daskgraph.virtual-gpus": 2}), dg.Session() as two:
            assert [d.kind for d in two.list_devices()].count("virtual-gpu") == 2
            assert old.status.name == "closed"  # nobody used it: closed for the new shape
    assert old not in dg_embedded.running().values()


@pytest.mark.virtual_gpus(2)
@pytest.mark.parametrize("scheme", [True, False], ids=["full-address", "host-port"])
def test_session_by_address_connects_and_leaves_the_cluster_running(dg_client, scheme):
    address = dg_client.scheduler.address
    target = address if scheme else address.split("://", 1)[1]
    with dg.Graph().as_default():
        sess = dg.Session(target)
        try:
            assert sess._conn.cluster is None  # nothing started: it joined the running cluster
            assert len(sess.list_devices()) == 3
            with dg.device("/gpu:1"):
                v = dg.Variable(1.0, name="v")
            sess.run(v.initializer)
            with sess.as_default():
                assert v.eval() == 1.0
                v.assign_add(2.0).op.run()
                assert v.eval() == 3.0
        finally:
            sess.close()
    assert sess.client.status == "closed"  # its own client
    assert dg_client.status == "running"  # the cluster is not its to close
    assert len(dg_client.scheduler_info(n_workers=-1)["workers"]) == 3


@pytest.mark.virtual_gpus(1)
def test_sessions_on_a_remote_cluster_gather_from_the_workers_directly(dg_client, dg_cluster):
    """A session by address or by cluster object makes a client that talks to the workers
    directly (results and large feeds do not pass through the scheduler), as the embedded
    cluster's client does; a run through the scheduler's path gets its results that way."""
    with dg.Graph().as_default():
        with dg.device("/gpu:0"):
            x = dg.placeholder(dg.float32, [3])
            y = dg.square(x)
        with dg.device("/cpu:0"):
            z = dg.add(y, 1.0)
        for target in (dg_client.scheduler.address, dg_cluster):
            scheduler_path = {"daskgraph.compiled-steps": False}
            with dg.Session(target) as sess, dask.config.set(scheduler_path):
                assert sess.client is not dg_client
                assert sess.client.direct_to_workers is True
                got = sess.run([y, z], {x: np.array([1.0, 2.0, 3.0], np.float32)})
            np.testing.assert_allclose(got[0], [1.0, 4.0, 9.0])
            np.testing.assert_allclose(got[1], [2.0, 5.0, 10.0])


def test_shutdown_closes_the_embedded_cluster():
    dg_embedded.shutdown()
    before = _listening()
    with dg.Graph().as_default(), dask.config.set(THREADS):
        sess = dg.Session()
        y, want = _small_graph()
    np.testing.assert_allclose(sess.run(y), want)
    opened = _listening() - before
    sess.close()
    assert sess.closed
    assert sess.client.status == "running"  # kept for the next session of the process
    dg_embedded.shutdown()
    assert sess.client.status == "closed"
    assert sess._conn.cluster.status.name == "closed"
    deadline = time.monotonic() + 60  # a wait for the event, generous for a busy machine
    while opened & _listening() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not opened & _listening(), "the cluster's sockets are still listening"
    with pytest.raises(RuntimeError, match="closed"):
        sess.run(y)
    sess.close()  # idempotent


def test_with_block_closes_the_embedded_session():
    with dg.Graph().as_default(), dask.config.set(THREADS):
        with dg.Session() as sess:
            assert dg.get_default_session() is sess
            assert sess.run(dg.constant(2.0) * 4.0) == 8.0
    assert sess.closed
    with pytest.raises(RuntimeError, match="closed"):
        sess.run(dg.constant(1.0))
    with pytest.raises(ValueError, match="No default session"):
        dg.get_default_session()


def test_workers_are_separate_processes_when_processes_is_true():
    box: dict = {}

    def body() -> None:
        with (
            dg.Graph().as_default(),
            dask.config.set({**THREADS, **PROCESSES}),
        ):
            sess = dg.Session()
            try:
                box["pids"] = sess.client.run(os.getpid)
                box["devices"] = {d.name[-5:]: d.worker for d in sess.list_devices()}
                y, want = _small_graph()
                md = RunMetadata()
                np.testing.assert_allclose(sess.run(y, options=TRACE, run_metadata=md), want)
                box["ran_on"] = md.step_stats.worker_of("y")
            finally:
                sess.close()
                dg_embedded.shutdown()  # the workers' processes end with the cluster
            box["done"] = True

    def target() -> None:
        try:
            body()
        except BaseException as exc:
            box["error"] = exc

    thread = threading.Thread(target=target, daemon=True)  # a hang fails the test, not the run
    thread.start()
    thread.join(90)
    assert not thread.is_alive(), "the process-based embedded cluster did not finish in 90 s"
    if "error" in box:
        raise box["error"]
    pids = box["pids"]
    assert len(pids) == 2
    assert os.getpid() not in pids.values()
    assert len(set(pids.values())) == 2  # one process per worker
    assert box["ran_on"] == box["devices"]["GPU:0"]
    deadline = time.monotonic() + 60  # a wait for the event, generous for a busy machine
    while any(psutil.pid_exists(p) for p in pids.values()) and time.monotonic() < deadline:
        time.sleep(0.1)
    alive = [p for p in pids.values() if psutil.pid_exists(p)]
    assert not alive or all(psutil.Process(p).status() == psutil.STATUS_ZOMBIE for p in alive)


@pytest.mark.skipif(not os.uname().sysname == "Linux", reason="glibc's mallopt")
def test_process_workers_reuse_large_blocks_instead_of_faulting_them_in():
    """Dask's nanny starts workers with MALLOC_TRIM_THRESHOLD_=65536, which makes every array
    above 128 KiB a fresh mmap; daskgraph's worker preload restores glibc's reuse (about 1,000
    page faults per 16 MB array otherwise)."""

    def blas_threads() -> int:  # defined here: sent to the workers by value
        from threadpoolctl import threadpool_info

        return max(i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas")

    def faults_per_16mb_array() -> float:
        import resource

        import numpy as np

        a = np.ones(4_000_000, np.float32)
        for _ in range(3):
            a = a + 1.0
        before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        for _ in range(10):
            a = a + 1.0
        return (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) / 10

    with (
        dg.Graph().as_default(),
        dask.config.set({**THREADS, **PROCESSES}),
        dg.Session() as sess,
    ):
        faults = sess.client.run(faults_per_16mb_array)
        envs = sess.client.run(lambda: os.environ.get("MALLOC_TRIM_THRESHOLD_"))
        blas = sess.client.run(blas_threads)
        threads = {d.worker: 1 if d.kind != "cpu" else os.cpu_count() for d in sess.list_devices()}
    # BLAS uses each device's threads (Dask's nanny would give every worker one)
    assert blas == threads
    # daskgraph's environment, set before the worker process started (Dask's is 65536)
    assert set(envs.values()) == {str(2 * 32 * 2**20)}
    assert len(faults) == 2 and all(f < 100 for f in faults.values()), faults


def test_process_workers_size_numbas_pool_and_their_kernels_to_their_threads():
    """A user's own ``parallel=True`` Numba code in a worker gets the worker's threads
    (NUMBA_NUM_THREADS, set before the process started: Numba reads it when imported), and
    daskgraph's fused loops in a partition may use as many (the CPU worker's threads)."""

    def numba_threads() -> tuple[str | None, int]:  # defined here: sent to the workers by value
        import numba

        return os.environ.get("NUMBA_NUM_THREADS"), numba.config.NUMBA_NUM_THREADS

    from daskgraph.kernels.kernel_threads import kernel_threads

    with (
        dg.Graph().as_default(),
        dask.config.set({**THREADS, **PROCESSES, "daskgraph.local.cpu-threads": 3}),
        dg.Session() as sess,
    ):
        found = sess.client.run(numba_threads)
        threads = {d.worker: 1 if d.kind != "cpu" else 3 for d in sess.list_devices()}
        with dg.device("/cpu:0"):
            used = dg.py_func(kernel_threads, [], dg.int64)  # (importable: sent by name)
        assert sess.run(used) == 3
    assert found == {w: (str(n), n) for w, n in threads.items()}
