"""The fast path's actors and a worker that is replaced: never a wait on the dead address.

An executor actor lives on one worker *process*. When its worker dies and the nanny restarts
it (same device name, new address), a call to the old actor goes to the dead address, where
Dask retries connecting for ``distributed.comm.timeouts.connect`` (30 s) before it gives up;
the run's watchdog, comparing the device's worker with where it was when the call started,
saw nothing wrong. These tests drive :class:`~daskgraph.runtime.client.dispatch.FastPath` with a
stand-in
client, cluster watch and actors (a call to a dead worker answers only after ``DEAD_CALL_S``)
and check that a replaced worker costs at most a liveness tick.
"""

from __future__ import annotations

import pickle
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import pytest

from daskgraph.cluster.liveness import MembershipView
from daskgraph.errors import UnavailableError
from daskgraph.runtime.client.dispatch import CompiledRun, FastPath
from daskgraph.runtime.program import RunStep

GPU = "/job:localhost/replica:0/task:0/device:GPU:0"
TICK = 0.1
DEAD_CALL_S = 30.0  # what a call to a dead address takes (Dask: 30 s of connect retries)


class Cluster:
    """Which address serves the GPU device now, and which worker processes are alive."""

    def __init__(self) -> None:
        self.address = "tcp://127.0.0.1:1001"
        self.alive = {self.address}
        self.restart_in_next_run = False

    def restart(self) -> None:
        """The worker dies and its nanny starts it again at a new address."""
        self.alive.discard(self.address)
        self.address = f"tcp://127.0.0.1:{int(self.address.rsplit(':', 1)[1]) + 1}"
        self.alive.add(self.address)


class Call:
    """An actor call: answered at once by a live worker, after DEAD_CALL_S by a dead one."""

    def __init__(self, cluster: Cluster, address: str, value: Any) -> None:
        self.started = time.monotonic()
        self.cluster, self.address, self.value = cluster, address, value

    def result(self, timeout: float | None = None) -> Any:
        while self.address not in self.cluster.alive:
            left = self.started + DEAD_CALL_S - time.monotonic()
            if left <= 0:
                raise OSError("Unable to contact Actor's worker")
            if timeout is not None and timeout < left:
                time.sleep(timeout)
                raise TimeoutError
            time.sleep(left)
        return self.value


@dataclass
class Actor:
    cluster: Cluster
    address: str
    calls: list[str] = field(default_factory=list)

    def load(self, session_id: str, token: str, program: Any) -> Call:
        self.calls.append("load")
        return Call(self.cluster, self.address, 1)

    def run(self, token: str, step: RunStep, feeds: tuple, trace: bool) -> Call:
        self.calls.append("run")
        call = Call(self.cluster, self.address, (f"ran on {self.address}",))
        if self.cluster.restart_in_next_run:  # the worker dies while it runs the partition
            self.cluster.restart_in_next_run = False
            self.cluster.restart()
        return call

    def run_packed(self, packed: bytes) -> Call:  # small feeds: the same call, pickled
        return self.run(*pickle.loads(packed))

    def stage(self, session_id: str, values: dict) -> Call:
        return Call(self.cluster, self.address, len(values))


class Future:
    key = "PartitionExecutor-1"
    status = "finished"

    def __init__(self, actor: Actor) -> None:
        self.actor = actor

    def result(self, timeout: float | None = None) -> Actor:
        return self.actor


class Client:
    """Makes actors where the GPU's worker is now."""

    direct_to_workers = True

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self.actors: list[Actor] = []

    def submit(self, *args: Any, **kwargs: Any) -> Future:
        self.actors.append(Actor(self.cluster, self.cluster.address))
        return Future(self.actors[-1])

    def who_has(self, future: Future) -> dict[str, list[str]]:
        return {future.key: [future.actor.address]}

    @contextmanager
    def as_current(self):
        yield

    def cancel(self, futures: Any) -> None:
        pass


class Watch:
    """The membership as the scheduler tells it: the GPU's worker at its current address."""

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster

    def view(self, fresh: bool = False, max_age: float | None = None) -> MembershipView:
        return MembershipView({self.cluster.address: {"name": GPU, "status": "running"}})

    def wait_until(self, ready, timeout: float | None, **kwargs: Any) -> bool:
        deadline = time.monotonic() + (timeout or 0)
        while not ready(self.view()):
            if time.monotonic() > deadline:
                return False
            time.sleep(0.01)
        return True


@dataclass(frozen=True)
class Partition:
    index: int = 0
    worker: str = GPU
    device: str = GPU
    feed_indices: tuple = ()
    program: Any = None


@dataclass(frozen=True)
class Plan:
    partitions: tuple = (Partition(),)


@pytest.fixture
def fast():
    cluster = Cluster()
    client = Client(cluster)
    return FastPath(client, Watch(cluster), "s1"), cluster, client


def _run(fast_path: FastPath, compiled: CompiledRun, number: int) -> Any:
    return fast_path.run(compiled, RunStep("s1", number), (), False, TICK)


def test_a_run_after_the_worker_was_replaced_uses_a_new_actor_at_once(fast):
    """The worker was restarted between two runs: the next run does not call the actor at
    the dead address (which would answer after DEAD_CALL_S) but one on the new worker."""
    fast_path, cluster, client = fast
    compiled = CompiledRun(Plan())
    assert _run(fast_path, compiled, 1) == {0: ("ran on tcp://127.0.0.1:1001",)}
    cluster.restart()
    start = time.monotonic()
    assert _run(fast_path, compiled, 2) == {0: ("ran on tcp://127.0.0.1:1002",)}
    assert time.monotonic() - start < DEAD_CALL_S / 2  # not a call to the dead address
    assert [a.address for a in client.actors] == ["tcp://127.0.0.1:1001", "tcp://127.0.0.1:1002"]
    assert client.actors[0].calls == ["load", "run"]  # nothing more was sent to the dead one


def test_a_worker_replaced_during_a_call_fails_it_within_a_tick(fast):
    """The worker dies while the actor runs the partition, and is back at a new address at
    once: the call fails with UnavailableError naming the device and the dead address within
    a liveness tick or two, not when the call to the dead address gives up."""
    fast_path, cluster, _ = fast
    compiled = CompiledRun(Plan())
    _run(fast_path, compiled, 1)
    dead = cluster.address
    cluster.restart_in_next_run = True
    start = time.monotonic()
    with pytest.raises(UnavailableError) as info:
        _run(fast_path, compiled, 2)
    assert time.monotonic() - start < DEAD_CALL_S / 2  # not the dead call's own end
    assert info.value.missing == [GPU]
    assert info.value.addresses == [dead]
