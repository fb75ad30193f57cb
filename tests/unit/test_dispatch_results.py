"""Waiting for a run's results a liveness tick at a time cancels nothing.

The run's watchdog (``daskgraph.runtime.client.dispatch._result_watching_workers``) waits for each
result
for a tick, checks that the plan's workers are there, and waits again. Dask's client gathers
the results that all threads ask for in shared requests; waiting with
``Future.result(timeout=tick)`` cancelled the gather under way at every tick, so that a result
slower to gather than a tick never came (the run hung until its deadline), and a thread whose
result travelled in the same request failed with an ``UnboundLocalError`` out of Dask's
``sync`` (async towers, one of them waiting out a lost worker). Here every gather from the
workers takes :data:`SLOW_S`, several ticks.
"""

from __future__ import annotations

import asyncio
import operator
from concurrent.futures import ThreadPoolExecutor
from types import SimpleNamespace

import distributed.client
import pytest
from distributed import Client

from daskgraph.cluster.liveness import MembershipView
from daskgraph.deadline import run_deadline
from daskgraph.runtime.client.dispatch import _result_watching_workers

SLOW_S = 0.3
TICK = 0.05
PLAN = SimpleNamespace(partitions=())  # no device to watch: only the waiting is tested


class Watch:
    def view(self, fresh: bool = False, max_age: float | None = None) -> MembershipView:
        return MembershipView({})


@pytest.fixture
def client(dg_cluster_factory, monkeypatch):
    """A client that gathers from the workers directly, each gather taking SLOW_S."""
    cluster = dg_cluster_factory()
    gather = distributed.client.gather_from_workers

    async def slowly(*args, **kwargs):
        await asyncio.sleep(SLOW_S)
        return await gather(*args, **kwargs)

    monkeypatch.setattr(distributed.client, "gather_from_workers", slowly)
    with Client(cluster, set_as_default=False, direct_to_workers=True) as client:
        yield client


def _wait(future) -> object:
    with run_deadline(20 * int(SLOW_S * 1000)):  # the old way: DeadlineExceededError
        return _result_watching_workers(Watch(), PLAN, [future], future, TICK)


def test_a_result_slower_to_gather_than_a_tick_arrives(client):
    future = client.submit(operator.add, 1, 2, pure=False)
    assert _wait(future) == 3


def test_threads_waiting_at_once_all_get_their_results(client):
    futures = [client.submit(operator.mul, i, 10, pure=False) for i in range(6)]
    with ThreadPoolExecutor(len(futures)) as pool:
        assert list(pool.map(_wait, futures)) == [i * 10 for i in range(6)]


def test_a_cancelled_future_raises(client):
    future = client.submit(operator.add, 1, 2, pure=False)
    client.cancel([future])
    with pytest.raises(distributed.client.FutureCancelledError):
        _wait(future)
