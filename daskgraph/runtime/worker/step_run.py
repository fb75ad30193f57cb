"""One compiled step on one worker: each partition runs as soon as its inputs are here.

A :class:`StepRun` is made when the client's message for a step reaches a worker
(:mod:`daskgraph.runtime.worker.step_service`). Each of the worker's partitions of the step
(:class:`~daskgraph.runtime.program.WorkerStep`) becomes an ``asyncio`` task on the worker's
event loop that

1. waits for what it reads: outputs of partitions on this worker (by reference) and messages
   from partitions on other workers (TensorFlow's ``Recv``), one per producer;
2. runs: on the event loop itself when its previous run took less than
   ``daskgraph.compiled-inline-limit`` (no thread hand-off; a small partition costs tens of
   microseconds), else on the worker's threads;
3. sends each consumer worker just the outputs that worker reads, the moment it has run
   (TensorFlow's ``Send``), and keeps the outputs the client fetches for the reply. A
   consumer in the client's own process (the embedded CPU worker) gets the tensors of the
   worker's last partition inside the reply to the client, which leaves at that moment
   anyway: one message less on the client's event loop.

A partition that fails (or reads a failure) passes the failure on instead of tensors, so that
every partition of the step ends and the client hears of the first failure. Messages are
keyed by the run (a fresh key per attempt of a ``Session.run``) and the producing partition,
so that steps under way at the same time (towers from several threads) never mix.

>>> StepTiming(0.001, 0.002, 0.0).total
0.003
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from daskgraph.errors import InternalError, OpError
from daskgraph.runtime.program import RunStep, StepPart, WorkerStep
from daskgraph.runtime.worker.execution import RunFailure, run_partition
from daskgraph.runtime.worker.wire import by_index
from daskgraph.runtime.worker.worker_state import WorkerState

__all__ = ["PeerLost", "StepHost", "StepRun", "StepTiming"]


@dataclass(frozen=True, slots=True)
class StepTiming:
    """Where one partition's time in a step went (seconds): waiting for its inputs, running
    its ops, and sending its outputs to the workers that read them."""

    waiting: float
    compute: float
    sending: float

    @property
    def total(self) -> float:
        """The three together."""
        return round(self.waiting + self.compute + self.sending, 9)


class PeerLost(Exception):
    """A partition's output could not be sent to the worker that reads it (that worker left,
    or the connection failed); the step ends, and the client decides what to do."""

    def __init__(self, address: str, cause: BaseException) -> None:
        super().__init__(f"sending to {address} failed: {type(cause).__name__}: {cause}")
        self.address = address


class StepHost:
    """What a :class:`StepRun` needs of its worker: its daskgraph state and address, how to
    run a function on its threads, how to send a producer's outputs to a peer, and the last
    run time of each partition (to run the small ones inline). Implemented by
    :class:`~daskgraph.runtime.worker.step_service.StepService`."""

    state: WorkerState
    address: str

    async def in_thread(self, fn: Callable[[], Any]) -> Any:  # pragma: no cover (interface)
        """``fn()`` on the worker's threads."""
        raise NotImplementedError

    async def send(self, address: str, key: tuple, producer: int, value: Any) -> None:
        """Deliver ``value`` (outputs by index, or a RunFailure) of partition ``producer`` of
        run ``key`` to the worker at ``address``."""
        raise NotImplementedError  # pragma: no cover (interface)

    def inline(self, token: str, part: StepPart) -> bool:
        """Whether ``part`` is small enough to run on the event loop."""
        raise NotImplementedError  # pragma: no cover (interface)

    def ran(self, token: str, part: StepPart, seconds: float) -> None:
        """Note how long ``part`` took (for :meth:`inline`)."""
        raise NotImplementedError  # pragma: no cover (interface)


class StepRun:
    """One step of one :class:`~daskgraph.runtime.program.WorkerStep` on its worker (see the
    module). ``early`` holds messages that arrived before the client's."""

    def __init__(
        self,
        host: StepHost,
        key: tuple,
        token: str,
        plan: WorkerStep,
        peers: Mapping[str, str],
        step: RunStep,
        feeds: Mapping[int, Any],
        trace: bool,
        early: Mapping[int, Any],
        near: frozenset[str] = frozenset(),
    ) -> None:
        self.host, self.key, self.token, self.plan, self.peers = host, key, token, plan, peers
        self.near = near  # workers in the client's process: the reply may carry their tensors
        self.forward: list[tuple[str, int, Any]] = []
        self.step, self.feeds, self.trace = step, feeds, trace
        loop = asyncio.get_running_loop()
        self.inbox = {producer: loop.create_future() for producer in plan.remote}
        self.done = {part.index: loop.create_future() for part in plan.parts}
        self.timing: dict[int, StepTiming] = {}
        self._tasks: list[asyncio.Task] = []
        self._started = time.perf_counter()
        for producer, value in early.items():
            self.deliver(producer, value)

    def deliver(self, producer: int, value: Any) -> None:
        """A message from partition ``producer`` on another worker arrived."""
        future = self.inbox.get(producer)
        if future is not None and not future.done():
            future.set_result(value)

    def cancel(self) -> None:
        """Stop waiting (the client aborted the step); a partition running on a thread
        finishes there, and nothing more is sent."""
        for task in self._tasks:
            task.cancel()

    async def run(self) -> dict[str, Any]:
        """Run the worker's partitions; the reply for the client: ``outputs`` (partition ->
        fetched outputs by index; every output and the trace when tracing), the first
        ``failure`` (its partition and the RunFailure), and each partition's :class:`StepTiming`."""
        self._tasks = [asyncio.ensure_future(self._part(part)) for part in self.plan.parts]
        try:
            await asyncio.gather(*self._tasks)
        except BaseException:  # a send failed, or the client aborted: stop the other parts
            self.cancel()
            raise
        outputs: dict[int, Any] = {}
        failure = None
        for part in self.plan.parts:
            result = self.done[part.index].result()
            if isinstance(result, RunFailure):
                failure = failure or (part.index, result)
            elif self.trace:
                outputs[part.index] = dict(enumerate(result))
            elif part.to_client:
                outputs[part.index] = {i: result[i] for i in part.to_client}
        reply = {"status": "ok", "outputs": outputs, "failure": failure, "timing": self.timing}
        if self.forward:
            reply["forward"] = self.forward
        return reply

    async def _part(self, part: StepPart) -> None:
        dependencies = await self._inputs(part)
        ready = time.perf_counter()
        result = await self._execute(part, dependencies)
        ran = time.perf_counter()
        self.done[part.index].set_result(result)
        await self._send(part, result)
        sent = time.perf_counter()
        self.timing[part.index] = StepTiming(ready - self._started, ran - ready, sent - ran)

    async def _inputs(self, part: StepPart) -> tuple:
        """What ``part`` reads of each partition it depends on, in its program's order: a
        producer's outputs (a tuple, by index), or the failure it passed on."""
        values = []
        for producer in part.dependencies:
            local = self.done.get(producer)
            value = await (local if local is not None else self.inbox[producer])
            if isinstance(value, dict):
                value = by_index(value)
            values.append(value)
        return tuple(values)

    async def _execute(self, part: StepPart, dependencies: tuple) -> Any:
        """Run ``part`` (inline or on a thread); its outputs, or the failure."""
        feeds = tuple(self.feeds[i] for i in part.feed_indices)
        state, address, step = self.host.state, self.host.address, self.step

        def call() -> Any:
            started = time.perf_counter()
            try:
                return run_partition(
                    state, address, part.program, step, feeds, self.trace, dependencies
                )
            except Exception as exc:  # not an op's error (those come back as RunFailure)
                return RunFailure(_internal(exc, part))
            finally:
                self.host.ran(self.token, part, time.perf_counter() - started)

        if self.host.inline(self.token, part):
            return call()
        return await self.host.in_thread(call)

    async def _send(self, part: StepPart, result: Any) -> None:
        """Send each destination of ``part`` what it reads (or the failure)."""
        if not part.sends:
            return
        failed = isinstance(result, RunFailure)
        last = all(future.done() for future in self.done.values())
        sends = []
        for worker, outputs in part.sends:
            value = result if failed else {i: result[i] for i in outputs}
            if last and worker in self.near:  # the reply goes there now anyway: ride along
                self.forward.append((worker, part.index, value))
            else:
                sends.append(self.host.send(self.peers[worker], self.key, part.index, value))
        if sends:
            await asyncio.gather(*sends)


def _internal(exc: Exception, part: StepPart) -> Exception:
    """An error that is not an op's (a bug, a lost staged value) as one the client raises."""
    if isinstance(exc, OpError):
        return exc
    return InternalError(
        f"The partition {part.index} on {part.program.device} failed outside its ops: "
        f"{type(exc).__name__}: {exc}",
        device=part.program.device,
    )
