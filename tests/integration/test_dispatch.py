"""How runs reach the workers: compiled steps (a plain call to a worker in this process, Dask's
comm when the run has a deadline) and the scheduler's path (``daskgraph.compiled-steps:
false``)."""

from __future__ import annotations

import dask
import numpy as np
import pytest

import daskgraph as dg
from daskgraph.runtime.client import dispatch
from daskgraph.runtime.client.session import RunMetadata, RunOptions


def _scheduled_runs(client, session: dg.Session) -> set[int]:
    """Numbers of this session's runs whose tasks went through the scheduler."""
    prefix = f"dg-{session._id}-"

    def runs(dask_scheduler) -> set[int]:
        runs = {t[0][1] for t in dask_scheduler.transition_log if isinstance(t[0], tuple)}
        # the key's second element is "dg-<session>-<run>-<main ops>"
        return {
            int(r[len(prefix) :].split("-")[0])
            for r in runs
            if isinstance(r, str) and r.startswith(prefix)
        }

    return client.run_on_scheduler(runs)


def _one_device_graph():
    with dg.device("/cpu:0"):
        x = dg.placeholder(dg.float32, [None])
        v = dg.Variable(np.zeros(3, np.float32), name="acc")
        step = v.assign_add(x * 2.0)
    return x, v, step


PATHS = {
    "in-process": {"daskgraph.compiled-steps": True},
    "scheduler": {"daskgraph.compiled-steps": False},
}
#: a run with a deadline: a compiled step over Dask's comm, not a call in this thread
DEADLINE = RunOptions(timeout_in_ms=60_000)


@pytest.mark.parametrize("deadline", [False, True], ids=["no-deadline", "deadline"])
@pytest.mark.parametrize("path", list(PATHS))
def test_one_partition_runs_skip_the_scheduler_only_as_compiled_steps(
    dg_session, dg_client, path, deadline
):
    x, _, step = _one_device_graph()
    options = DEADLINE if deadline else None
    with dask.config.set(PATHS[path]):
        dg_session.run(dg.global_variables_initializer())
        dg_session.run(step, {x: np.ones(3, np.float32)}, options=options)  # warm: the plan
        first = dg_session._runs + 1
        for _ in range(3):
            result = dg_session.run(step, {x: np.ones(3, np.float32)}, options=options)
        measured = set(range(first, dg_session._runs + 1))
    np.testing.assert_array_equal(result, [8.0, 8.0, 8.0])
    scheduled = _scheduled_runs(dg_client, dg_session) & measured
    assert scheduled == (measured if path == "scheduler" else set())


def test_every_path_shares_the_same_variables(dg_session):
    x, v, step = _one_device_graph()
    dg_session.run(dg.global_variables_initializer())
    feed = {x: np.ones(3, np.float32)}
    for path in PATHS:
        with dask.config.set(PATHS[path]):
            dg_session.run(step, feed)
            dg_session.run(step, feed, options=DEADLINE)
    for path in PATHS:
        with dask.config.set(PATHS[path]):
            np.testing.assert_array_equal(dg_session.run(v), [8.0, 8.0, 8.0])


@pytest.mark.parametrize("path", list(PATHS))
def test_one_device_runs_trace_where_ops_ran(dg_session, path):
    with dg.device("/gpu:1"):
        y = dg.constant(2.0) * 3.0
    md = RunMetadata()
    with dask.config.set(PATHS[path]):
        assert dg_session.run(y, options=RunOptions(RunOptions.FULL_TRACE), run_metadata=md) == 6.0
    (gpu1,) = [d.worker for d in dg_session.list_devices() if d.name.endswith("GPU:1")]
    assert md.step_stats.worker_of(y.op.name) == gpu1


def test_one_device_errors_leave_the_session_usable(dg_session):
    with dg.device("/cpu:0"):
        v = dg.Variable(1.0, name="later")
        doubled = v * 2.0
    with pytest.raises(dg.errors.FailedPreconditionError, match="later"):
        dg_session.run(doubled)
    dg_session.run(v.initializer)
    assert dg_session.run(doubled) == 2.0


def _drop_plans(session_id: str, dask_worker=None) -> int:
    """On a worker: forget the compiled steps' plans of ``session_id`` (as a restart would)."""
    from daskgraph.runtime.worker.worker_state import state_of

    plans = state_of(dask_worker).session(session_id).steps
    dropped = len(plans)
    plans.clear()
    return dropped


def test_a_plan_dropped_by_a_worker_is_sent_again(dg_session, dg_client):
    with dg.device("/cpu:0"):
        a = dg.constant(1.0) + 1.0
        b = dg.constant(10.0) + 1.0
    for _ in range(2):
        assert dg_session.run(a, options=DEADLINE) == 2.0
        assert dg_session.run(b, options=DEADLINE) == 11.0
        dropped = dg_client.run(_drop_plans, dg_session._id)
        assert sum(dropped.values()) == 2  # both plans were held, on the CPU's worker
    assert dg_session.run(a, options=DEADLINE) == 2.0  # reloaded


def _staged_and_scattered(session_id: str, dask_worker=None) -> tuple[int, int]:
    """On a worker: feeds staged for ``session_id`` not taken yet, and keys held that no task
    computed (scattered data)."""
    from daskgraph.runtime.worker.worker_state import state_of

    scattered = [k for k, ts in dask_worker.state.tasks.items() if ts.run_spec is None]
    return len(state_of(dask_worker).session(session_id).staged), len(scattered)


def test_large_feeds_are_sent_ahead_not_scattered(dg_session, dg_client, monkeypatch):
    """On the scheduler's path, a feed above ``dispatch.DIRECT_FEED_BYTES`` read on two
    devices reaches both through their step services: right results, no scattered data
    (which the scheduler reports as an ERROR when a worker holding it dies), nothing left
    behind, after a failed run too."""
    big = np.arange(300_000, dtype=np.float32).reshape(600, 500) / 1e5  # 1.2 MB
    x = dg.placeholder(dg.float32, [None, 500])
    with dg.device("/gpu:0"):
        left = dg.reduce_sum(x * 2.0)
    with dg.device("/gpu:1"):
        right = dg.reduce_max(x)
    with dg.device("/cpu:0"):
        both = left + right
        bad = dg.matmul(x, x)  # (600, 500) @ (600, 500) fails at run time, after the feed is sent
    monkeypatch.setattr(dispatch, "DIRECT_FEED_BYTES", 1_000_000)
    with dask.config.set(PATHS["scheduler"]):
        got = dg_session.run([left, right, both], {x: big})
        np.testing.assert_allclose(got, [big.sum() * 2, big.max(), big.sum() * 2 + big.max()])
        with pytest.raises(dg.errors.InvalidArgumentError, match="MatMul"):
            dg_session.run([both, bad], {x: big})
    assert dg_client.run_on_scheduler(_scattered_keys_seen) == []
    left_behind = dg_client.run(_staged_and_scattered, dg_session._id)
    assert set(left_behind.values()) == {(0, 0)}, left_behind


def _scattered_keys_seen(dask_scheduler=None) -> list:
    """Keys the scheduler's transition log shows that no task computed (``client.scatter``
    names them after their type: ``ndarray-<token>``)."""
    keys = {t[0] for t in dask_scheduler.transition_log}
    return sorted(str(k) for k in keys if isinstance(k, str) and k.startswith("ndarray-"))


def test_the_scheduler_path_moves_only_the_tensors_that_are_read(dg_session, monkeypatch):
    """A 4 MB product sent from GPU:0 to the CPU while a scalar is fetched from the same GPU
    partition: the client receives the scalar and the CPU's mean, never the product (before
    issue 24 it received every output of the GPU partition, the product included)."""
    from dask.sizeof import sizeof

    from daskgraph.runtime.client import dispatch

    received: list[int] = []
    original = dispatch._result_watching_workers

    def measured(*args, **kwargs):
        result = original(*args, **kwargs)
        received.append(sizeof(result))
        return result

    monkeypatch.setattr(dispatch, "_result_watching_workers", measured)
    n = 1000
    with dg.device("/gpu:0"):
        x = dg.ones([n, n], dg.float32)
        product = dg.matmul(x, x)  # 4 MB, read by the CPU
        scalar = dg.reduce_sum(x)  # fetched from the GPU's partition
    with dg.device("/cpu:0"):
        mean = dg.reduce_mean(product)
    with dask.config.set(PATHS["scheduler"]):
        for _ in range(2):
            got = dg_session.run([scalar, mean])
    assert got == [n * n, n]
    assert len(received) == 4  # two partitions gathered by each of the two runs
    assert max(received) < 10_000, received
