"""Runs on a device whose worker lives in this process: a plain call, with every guarantee
of the other paths (one copy of each variable, assigns once per run, feeds the run's own)."""

from __future__ import annotations

import os
import threading

import dask
import numpy as np
import pytest

import daskgraph as dg
from daskgraph.cluster import embedded
from daskgraph.runtime.client.session import RunMetadata, RunOptions


def _accumulator():
    with dg.device("/cpu:0"):
        x = dg.placeholder(dg.float32, [3], name="x")
        v = dg.Variable(np.zeros(3, np.float32), name="v")
        step = v.assign_add(x)
        store = v.assign(x)
    return x, v, step, store


def _plans_loaded(session: dg.Session) -> int:
    """Plans of ``session`` that compiled steps loaded on its workers (a step over Dask's
    comm loads its plan; a plain call in this thread loads none)."""
    from daskgraph.runtime.worker.worker_state import state_of

    session_id = session._id

    def count(dask_worker=None) -> int:
        return len(state_of(dask_worker).session(session_id).steps)

    return sum(session.client.run(count).values())


def test_runs_load_no_plan_and_make_no_task(dg_session, dg_client):
    x, v, step, _ = _accumulator()
    dg_session.run(v.initializer)
    for _ in range(3):
        dg_session.run(step, {x: np.ones(3, np.float32)})
    np.testing.assert_array_equal(dg_session.run(v), [3.0, 3.0, 3.0])
    assert _plans_loaded(dg_session) == 0
    session = dg_session._id

    def keys_of_session(dask_scheduler=None) -> list[str]:
        return [str(t[0]) for t in dask_scheduler.transition_log if session in str(t[0])]

    assert dg_client.run_on_scheduler(keys_of_session) == []


def test_a_fed_array_refilled_after_the_run_does_not_change_a_variable(dg_session):
    x, v, _, store = _accumulator()
    batch = np.ones(3, np.float32)
    dg_session.run(store, {x: batch})
    batch[:] = 5.0  # the caller reuses its buffer for the next step
    np.testing.assert_array_equal(dg_session.run(v), [1.0, 1.0, 1.0])


def test_a_fetched_variable_is_the_callers_to_change(dg_session):
    x, v, _, store = _accumulator()
    dg_session.run(store, {x: np.arange(3, dtype=np.float32)})
    fetched = dg_session.run(v)
    fetched[0] = 42.0  # TF1 programs do this; it must neither fail nor reach the variable
    np.testing.assert_array_equal(dg_session.run(v), [0.0, 1.0, 2.0])


def test_concurrent_runs_from_threads_apply_every_assign_once(dg_session):
    x, v, step, _ = _accumulator()
    dg_session.run(v.initializer)
    one = np.ones(3, np.float32)
    errors: list[BaseException] = []

    def steps() -> None:
        try:
            for _ in range(50):
                dg_session.run(step, {x: one})
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=steps) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not errors
    np.testing.assert_array_equal(dg_session.run(v), [200.0, 200.0, 200.0])


def test_a_run_with_a_deadline_goes_to_the_worker_over_dasks_comm(dg_session):
    with dg.device("/cpu:0"):
        y = dg.constant(2.0) * 3.0
    assert dg_session.run(y, options=RunOptions(timeout_in_ms=30_000)) == 6.0
    assert _plans_loaded(dg_session) == 1  # abandonable: a step on the worker, not this thread
    assert dg_session.run(y) == 6.0


def test_the_embedded_cpu_worker_is_here_and_gpu_workers_are_not():
    """The default embedded cluster: CPU ops run in this process, GPU ops in their worker's."""
    config = {
        "daskgraph.virtual-gpus": 1,
        "daskgraph.local.processes": True,
        "daskgraph.local.cpu-threads": 1,
    }
    with dask.config.set(config), dg.Graph().as_default():
        with dg.device("/gpu:0"):
            on_gpu = dg.constant(np.arange(4, dtype=np.float32)) * 2.0
        with dg.device("/cpu:0"):
            on_cpu = dg.reduce_sum(on_gpu) + 1.0
        with dg.Session() as session:
            pids = session.client.run(os.getpid)
            by_device = {d.name: pids[d.worker] for d in session.list_devices()}
            md = RunMetadata()
            options = RunOptions(RunOptions.FULL_TRACE)
            assert session.run(on_cpu, options=options, run_metadata=md) == pytest.approx(13.0)
            np.testing.assert_array_equal(session.run(on_gpu), [0.0, 2.0, 4.0, 6.0])
            assert session.run(on_cpu) == pytest.approx(13.0)  # CPU only: in this process
    embedded.shutdown()  # its GPU worker's process ends now, not at exit
    cpu = [pid for name, pid in by_device.items() if name.endswith("CPU:0")]
    gpu = [pid for name, pid in by_device.items() if "GPU" in name]
    assert cpu == [os.getpid()] and gpu and os.getpid() not in gpu
    assert md.step_stats.device_of(on_gpu.op.name).endswith("GPU:0")


def test_a_session_on_this_programs_server_calls_its_workers_directly():
    """``tf.Session(server.target)``: the server's workers live in this process too."""
    from daskgraph.cluster.server import Server

    server = Server.create_local_server(config=dg.SessionConfig(device_count={"GPU": 0}))
    try:
        with dg.Graph().as_default():
            x, v, step, _ = _accumulator()
            with dg.Session(server.target) as session:
                session.run(v.initializer)
                for _ in range(3):
                    session.run(step, {x: np.ones(3, np.float32)})
                np.testing.assert_array_equal(session.run(v), [3.0, 3.0, 3.0])
                assert _plans_loaded(session) == 0
                assert session._in_process.worker(session.list_devices()[0].restriction)
    finally:
        server.stop()


def _branches(n: int = 40):
    """Two independent chains on /cpu:0 (split into parallel partitions under a low
    ``daskgraph.parallel-partition-elements``), joined at the end."""
    with dg.device("/cpu:0"):
        x = dg.placeholder(dg.float32, [n, n], name="x")
        sums = []
        for k in range(2):
            y = x
            for _ in range(3):
                y = dg.tanh(y * 1.01 + float(k))
            sums.append(dg.reduce_sum(y))
        total = dg.add_n(sums, name="total")
    return x, total


def _branches_np(value):
    total = np.float32(0.0)
    for k in range(2):
        y = value
        for _ in range(3):
            y = np.tanh(y * np.float32(1.01) + np.float32(k))
        total += y.sum(dtype=np.float32)
    return total


def test_the_parallel_parts_of_a_cpu_partition_run_here_on_the_workers_threads(
    dg_session, dg_client
):
    x, total = _branches()
    value = np.random.default_rng(1).random((40, 40), dtype=np.float32)
    with dask.config.set({"daskgraph.parallel-partition-elements": 100}):
        md = RunMetadata()
        options = RunOptions(RunOptions.FULL_TRACE)
        got = dg_session.run(total, {x: value}, options=options, run_metadata=md)
        assert dg_session.run(total, {x: value}) == pytest.approx(got)
        (plan,) = dg_session._plans.values()
    assert len(plan.plan.partitions) > 2  # split: several partitions, one worker
    np.testing.assert_allclose(got, _branches_np(value), rtol=1e-5)
    (cpu,) = [d.worker for d in dg_session.list_devices() if d.name.endswith("CPU:0")]
    assert {s.worker for s in md.step_stats.dev_stats} == {cpu}
    assert len(md.step_stats.dev_stats) == len(plan.plan.partitions)
    session = dg_session._id

    def keys_of_session(dask_scheduler=None) -> list[str]:
        return [str(t[0]) for t in dask_scheduler.transition_log if session in str(t[0])]

    assert dg_client.run_on_scheduler(keys_of_session) == []


def test_a_failing_parallel_part_fails_the_run_and_the_session_goes_on(dg_session):
    x, total = _branches()
    with dg.device("/cpu:0"):
        w = dg.placeholder(dg.float32, [None], name="w")
        broken = dg.add_n([total, dg.reduce_sum(dg.tanh(x * 2.0) + w)])
    value = np.ones((40, 40), np.float32)
    with dask.config.set({"daskgraph.parallel-partition-elements": 100}):
        with pytest.raises(dg.errors.InvalidArgumentError, match="add"):
            dg_session.run(broken, {x: value, w: np.ones(3, np.float32)})  # (40, 40) + (3,)
        assert len(dg_session._plans.values()[0].plan.partitions) > 2
        got = dg_session.run(broken, {x: value, w: np.ones(40, np.float32)})
    expected = _branches_np(value) + (np.tanh(value * 2.0) + 1.0).sum(dtype=np.float32)
    np.testing.assert_allclose(got, expected, rtol=1e-5)


def test_a_users_local_cluster_with_thread_workers_is_called_directly():
    from distributed import LocalCluster

    with (
        LocalCluster(
            n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None
        ) as cluster,
        dg.Graph().as_default(),
    ):
        x, v, step, _ = _accumulator()
        with dg.Session(cluster) as session:
            session.run(v.initializer)
            session.run(step, {x: np.full(3, 2.0, np.float32)})
            np.testing.assert_array_equal(session.run(v), [2.0, 2.0, 2.0])
            assert _plans_loaded(session) == 0
