"""A session keeps ``daskgraph.plan-cache-size`` compiled plans; those it evicts are freed on
the workers (the plans loaded by compiled steps), and evicted plans run again."""

from __future__ import annotations

import dask
import numpy as np
import pytest

import daskgraph as dg
from daskgraph.runtime.client.session import RunOptions
from daskgraph.runtime.worker.worker_state import state_of

GPU0 = "/job:localhost/replica:0/task:0/device:GPU:0"


def _programs_on(session: dg.Session, device: str) -> int:
    (worker,) = [d.worker for d in session.list_devices() if d.name == device]
    session_id = session._id

    def count(dask_worker) -> int:
        return len(state_of(dask_worker).session(session_id).steps)

    return session.client.run(count, workers=[worker])[worker]


@pytest.mark.virtual_gpus(1)
def test_evicted_plans_are_freed_on_the_workers(dg_client):
    with dg.Graph().as_default() as graph, dg.device("/gpu:0"):
        x = dg.constant(np.arange(4, dtype=np.float32), name="x")
        fetches = [x * float(k) for k in range(6)]  # six signatures, one device each
    settings = {"daskgraph.plan-cache-size": 2}
    # a deadline: the step goes to the worker over Dask's comm (which loads the plan there),
    # not by a plain call in this thread (which loads nothing)
    options = RunOptions(timeout_in_ms=60_000)
    with dask.config.set(settings), dg.Session(dg_client, graph=graph) as session:
        for k, y in enumerate(fetches):
            np.testing.assert_array_equal(session.run(y, options=options), np.arange(4) * k)
        assert _programs_on(session, GPU0) == 2  # the two plans the cache keeps
        again = session.run(fetches[0], options=options)  # compiled again
        np.testing.assert_array_equal(again, np.zeros(4))
        assert _programs_on(session, GPU0) == 2  # the two plans the cache keeps
