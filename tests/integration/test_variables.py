"""Variables on a live cluster: state across runs, on their device's worker, per session."""

from __future__ import annotations

import numpy as np
import pytest

import daskgraph as dg
from daskgraph.errors import FailedPreconditionError
from daskgraph.runtime.client.session import RunMetadata, RunOptions

TRACE = RunOptions(trace_level=RunOptions.FULL_TRACE)
DEVICES = ["/cpu:0", "/gpu:0", "/gpu:1"]


def _worker_of(session: dg.Session, device: str) -> str:
    (found,) = [d.worker for d in session.list_devices() if d.name.endswith(device)]
    return found


def _stored_variables(session_id: str, dask_worker=None) -> list[str]:
    """On a worker: names of the variables ``session_id`` holds there (in the worker's
    daskgraph extension, where the session's WorkerPlugin keeps them)."""
    from daskgraph.runtime.worker.worker_state import state_of

    state = state_of(dask_worker)
    if session_id not in state.session_ids():
        return []
    stores = state.session(session_id).stores.values()
    return sorted(name for store in stores for name in store.names())


def _held_by(session: dg.Session, client) -> dict[str, list[str]]:
    return {w: v for w, v in client.run(_stored_variables, session._id).items() if v}


@pytest.fixture
def sessions(dg_client, dg_session):
    """Open more sessions on the test's graph and cluster; all closed after the test."""
    opened: list[dg.Session] = []

    def make() -> dg.Session:
        session = dg.Session(dg_client, graph=dg_session.graph)
        opened.append(session)
        return session

    yield make
    for session in opened:
        session.close()


@pytest.mark.parametrize("device", DEVICES, ids=["cpu0", "gpu0", "gpu1"])
def test_assign_add_counter_keeps_its_value_across_runs(dg_session, device):
    with dg.device(device):
        counter = dg.Variable(0.0, name="counter")
        step = counter.assign_add(1.0)
    dg_session.run(dg.global_variables_initializer())
    assert [dg_session.run(step) for _ in range(5)] == [1.0, 2.0, 3.0, 4.0, 5.0]
    assert dg_session.run(counter) == 5.0


@pytest.mark.parametrize("device", DEVICES, ids=["cpu0", "gpu0", "gpu1"])
def test_variable_lives_on_the_worker_of_its_device(dg_session, device):
    with dg.device(device):
        v = dg.Variable(np.ones(3, np.float32), name="v")
    step = v.assign_add(np.full(3, 2.0, np.float32))  # colocated with v, built outside the scope
    dg_session.run(v.initializer)
    md = RunMetadata()
    np.testing.assert_array_equal(dg_session.run(step, options=TRACE, run_metadata=md), [3.0] * 3)
    owner = _worker_of(dg_session, device[-5:].upper())
    assert md.step_stats.worker_of("v") == owner
    assert md.step_stats.worker_of(step.op.name) == owner
    assert md.step_stats.device_of(step.op.name).endswith(device[-5:].upper())
    md = RunMetadata()
    np.testing.assert_array_equal(dg_session.run(v, options=TRACE, run_metadata=md), [3.0] * 3)
    assert md.step_stats.worker_of("v/read") == owner


def test_value_is_held_only_on_its_devices_worker(dg_session, dg_client):
    with dg.device("/gpu:1"):
        v = dg.Variable([1.0, 2.0], name="on_gpu1")
    with dg.device("/cpu:0"):
        w = dg.Variable([3.0], name="on_cpu")
    dg_session.run(dg.global_variables_initializer())
    assert _held_by(dg_session, dg_client) == {
        _worker_of(dg_session, "GPU:1"): ["on_gpu1"],
        _worker_of(dg_session, "CPU:0"): ["on_cpu"],
    }
    np.testing.assert_array_equal(dg_session.run(v), [1.0, 2.0])
    np.testing.assert_array_equal(dg_session.run(w), [3.0])


def test_assign_then_read_in_later_runs(dg_session):
    with dg.device("/gpu:1"):
        v = dg.Variable(np.zeros((2, 2), np.float32), name="v")
    p = dg.placeholder(dg.float32, [2, 2], name="p")
    store = v.assign(p)
    dg_session.run(v.initializer)
    value = np.arange(4, dtype=np.float32).reshape(2, 2)
    dg_session.run(store, {p: value})
    for _ in range(2):
        np.testing.assert_array_equal(dg_session.run(v), value)
    np.testing.assert_array_equal(dg_session.run(v * 2.0), value * 2.0)


def test_values_survive_the_graph_growing(dg_session):
    with dg.device("/gpu:0"):
        v = dg.Variable(0.0, name="v")
        step = v.assign_add(1.0)
    dg_session.run(v.initializer)
    dg_session.run(step)
    dg_session.run(step)
    with dg.device("/cpu:0"):
        scaled = v * 10.0  # a new op: the graph is placed again
    assert dg_session.run(scaled) == 20.0
    assert dg_session.run(step) == 3.0


@pytest.mark.parametrize("what", ["read", "assign_add"], ids=["read", "assign_add"])
def test_use_before_init_raises_failed_precondition_naming_it(dg_session, what):
    with dg.device("/gpu:1"):
        v = dg.Variable([1.0, 2.0], name="weights")
        step = v.assign_add([1.0, 1.0])
    with pytest.raises(FailedPreconditionError, match="weights") as info:
        dg_session.run(v if what == "read" else step)
    assert "uninitialized" in str(info.value)
    # the session stays usable: initialize, then the same fetch works
    dg_session.run(dg.global_variables_initializer())
    np.testing.assert_array_equal(dg_session.run(v), [1.0, 2.0])
    np.testing.assert_array_equal(dg_session.run(step), [2.0, 3.0])


def test_only_the_uninitialized_variable_is_named(dg_session):
    a = dg.Variable(1.0, name="ready")
    b = dg.Variable(2.0, name="not_ready")
    dg_session.run(a.initializer)
    with pytest.raises(FailedPreconditionError, match="not_ready") as info:
        dg_session.run(a + b)
    assert "'ready'" not in str(info.value)
    assert dg_session.run(a) == 1.0


def test_two_sessions_on_one_cluster_have_independent_values(dg_session, sessions):
    with dg.device("/gpu:1"):
        v = dg.Variable(0.0, name="v")
        step = v.assign_add(1.0)
    other = sessions()
    dg_session.run(v.initializer)
    with pytest.raises(FailedPreconditionError, match="'v'"):
        other.run(v)  # initialized in the first session only
    other.run(v.initializer)
    for _ in range(3):
        dg_session.run(step)
    other.run(step)
    assert dg_session.run(v) == 3.0
    assert other.run(v) == 1.0


def test_closing_a_session_drops_its_variables(dg_session, dg_client, sessions):
    with dg.device("/gpu:1"):
        v = dg.Variable(0.0, name="v")
        step = v.assign_add(5.0)
    with dg.device("/cpu:0"):
        w = dg.Variable(1.0, name="w")
    first = sessions()
    first.run(dg.global_variables_initializer())
    first.run(step)
    assert sorted(n for names in _held_by(first, dg_client).values() for n in names) == ["v", "w"]
    first.close()
    assert _held_by(first, dg_client) == {}  # dropped from every worker
    second = sessions()
    with pytest.raises(FailedPreconditionError, match="'v'"):
        second.run(v)
    second.run(dg.global_variables_initializer())
    assert second.run([v, w]) == [0.0, 1.0]
    assert dg_session.run(dg.constant(1.0)) == 1.0  # the shared client is still open
