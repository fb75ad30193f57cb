"""Which lost workers a :class:`~daskgraph.cluster.liveness.ClusterWatch` waits for: only those
a nanny may restart. Retired ones (the scheduler's ``retire-workers`` stimulus), ones without a
nanny and ones whose nanny refuses connections are gone for good; a watch inside a run whose
session closed stops waiting with ``CancelledError``. A stand-in client plays the scheduler."""

from __future__ import annotations

import socket
import threading

import dask
import pytest

from daskgraph.cluster.liveness import ClusterWatch, restart_grace
from daskgraph.deadline import run_deadline
from daskgraph.errors import CancelledError


class FakeClient:
    """The scheduler's worker records, changed by the test; events delivered at once."""

    status = "running"

    def __init__(self, workers: dict) -> None:
        self.workers = workers
        self.handler = None

    def scheduler_info(self, n_workers: int = -1) -> dict:
        return {"n_workers": len(self.workers), "workers": dict(self.workers)}

    def subscribe_topic(self, topic, handler) -> None:
        self.handler = handler

    def unsubscribe_topic(self, topic) -> None:
        self.handler = None

    def remove(self, address: str, stimulus_id: str) -> None:
        del self.workers[address]
        self.handler(
            (0.0, {"action": "remove-worker", "worker": address, "stimulus_id": stimulus_id})
        )


@pytest.fixture
def listening():
    """A nanny's address where something listens."""
    server = socket.create_server(("127.0.0.1", 0))
    yield f"tcp://127.0.0.1:{server.getsockname()[1]}"
    server.close()


def _refused() -> str:
    """An address where nothing listens (bound and released)."""
    with socket.create_server(("127.0.0.1", 0)) as s:
        return f"tcp://127.0.0.1:{s.getsockname()[1]}"


def _watch(nannies: dict[str, str | None]) -> tuple[FakeClient, ClusterWatch]:
    workers = {f"tcp://h:{i}": {"name": name, "nanny": nanny} for i, (name, nanny) in
               enumerate(nannies.items(), 1)}  # fmt: skip
    client = FakeClient(workers)
    watch = ClusterWatch(client)
    watch.view()  # the session saw every worker
    return client, watch


def test_only_a_worker_whose_nanny_runs_is_awaited(listening):
    client, watch = _watch(
        {"restarts": listening, "retired": listening, "no-nanny": None, "nanny-gone": _refused()}
    )
    client.remove("tcp://h:1", "handle-worker-cleanup-1.0")
    client.remove("tcp://h:2", "retire-workers-1.0")
    client.remove("tcp://h:3", "handle-worker-cleanup-1.0")
    client.remove("tcp://h:4", "handle-worker-cleanup-1.0")
    names = ["restarts", "retired", "no-nanny", "nanny-gone", "never-seen"]
    assert watch.gone_for_good(names) == ["retired", "no-nanny", "nanny-gone"]


def test_waiting_for_workers_gone_for_good_ends_at_once():
    client, watch = _watch({"cpu": None, "gpu": None})
    client.remove("tcp://h:2", "retire-workers-1.0")
    with dask.config.set({"daskgraph.worker-restart-grace": "1h"}):
        assert restart_grace() == 3600.0
        assert watch.wait_for(["cpu", "gpu"], restart_grace()) is False  # (else: an hour)
    assert watch.wait_for(["cpu"], restart_grace()) is True


def test_a_closed_session_stops_waiting_for_a_restart(listening):
    client, watch = _watch({"gpu": listening})
    client.remove("tcp://h:1", "handle-worker-cleanup-1.0")  # its nanny runs: awaited
    closed = threading.Event()
    closed.set()
    with run_deadline(0, closed), pytest.raises(CancelledError):
        watch.wait_for(["gpu"], 3600.0)
