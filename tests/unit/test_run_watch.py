"""One watch over every wait of a run: a worker replaced, a deadline passed or a session closed
ends the wait within a tick, the run's workers told to give it up first.

:class:`~daskgraph.runtime.client.run_watch.RunWatch` is driven here with a stand-in cluster
watch and a reply that never comes (a worker that died answers nothing); every path of the
client waits through it (compiled steps over Dask's comm, step channels, the scheduler's
path, feeds sent ahead).
"""

from __future__ import annotations

import threading
from types import SimpleNamespace

import pytest

from daskgraph.cluster.liveness import MembershipView
from daskgraph.deadline import run_deadline
from daskgraph.errors import CancelledError, DeadlineExceededError, UnavailableError
from daskgraph.runtime.client.run_watch import RunWatch

GPU = "/job:localhost/replica:0/task:0/device:GPU:0"
TICK = 0.05
PLAN = SimpleNamespace(partitions=[SimpleNamespace(worker="gpu-worker", device=GPU)])


class Watch:
    """A cluster whose one worker is at ``address`` (None: gone)."""

    def __init__(self, address: str | None) -> None:
        self.address = address

    def view(self, fresh: bool = False, max_age: float | None = None) -> MembershipView:
        workers = {} if self.address is None else {self.address: {"name": "gpu-worker"}}
        return MembershipView(workers)

    def wait_until(self, ready, timeout: float) -> bool:
        return ready(self.view())


def _never(timeout: float) -> None:
    """A reply that does not come within ``timeout``."""
    threading.Event().wait(timeout)
    raise TimeoutError


def _watched(watch: Watch, aborted: list[str]) -> RunWatch:
    started = {"gpu-worker": "tcp://old:1"}
    return RunWatch(watch, PLAN, started, TICK, lambda: aborted.append("abort"), "the reply")


def test_a_replaced_worker_ends_the_wait_and_aborts_the_run():
    aborted: list[str] = []
    with pytest.raises(UnavailableError) as caught:
        _watched(Watch("tcp://new:2"), aborted).wait(_never)
    assert caught.value.missing == [GPU]
    assert caught.value.addresses == ["tcp://old:1"]
    assert aborted == ["abort"]


def test_a_worker_that_stays_is_waited_for():
    aborted: list[str] = []
    calls = []

    def third_time(timeout: float) -> str:
        calls.append(timeout)
        if len(calls) < 3:
            raise TimeoutError
        return "reply"

    assert _watched(Watch("tcp://old:1"), aborted).wait(third_time) == "reply"
    assert calls == [TICK] * 3 and aborted == []


def test_a_deadline_ends_the_wait_with_its_message():
    aborted: list[str] = []
    with run_deadline(1), pytest.raises(DeadlineExceededError, match="the reply"):
        _watched(Watch("tcp://old:1"), aborted).wait(_never)
    assert aborted == ["abort"]


def test_a_closed_session_cancels_the_wait():
    aborted: list[str] = []
    cancel = threading.Event()
    cancel.set()
    with run_deadline(0, cancel), pytest.raises(CancelledError):
        _watched(Watch("tcp://old:1"), aborted).wait(_never)
    assert aborted == ["abort"]


def test_an_error_of_the_reply_is_raised_without_an_abort():
    aborted: list[str] = []

    def fails(timeout: float) -> None:
        raise KeyError("lost")

    with pytest.raises(KeyError):
        _watched(Watch("tcp://old:1"), aborted).wait(fails)
    assert aborted == []


def test_after_a_failure_a_replaced_worker_is_named():
    watch = _watched(Watch("tcp://new:2"), [])
    with pytest.raises(UnavailableError) as caught:
        watch.raise_if_left(ConnectionResetError("closed"))
    assert caught.value.missing == [GPU]
    assert isinstance(caught.value.__cause__, ConnectionResetError)


def test_after_a_failure_a_worker_that_stayed_is_no_error():
    assert _watched(Watch("tcp://old:1"), []).raise_if_left(ConnectionResetError()) is None
