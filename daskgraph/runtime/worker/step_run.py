"""One compiled step on one worker: each partition runs as soon as its inputs are here.

A :class:`StepRun` is made when the client's message for a step reaches a worker
(:mod:`daskgraph.runtime.worker.step_service`). Each of the worker's partitions of the step
(:class:`~daskgraph.runtime.program.WorkerStep`) becomes an ``asyncio`` task on the worker's
event loop that

1. waits for what it reads: outputs of partitions on this worker (by reference) and messages
   from partitions on other workers (TensorFlow's ``Recv``), one per producer;
2. runs: on the event loop itself when its previous run took less than
   :data:`INLINE_LIMIT`, its run time cannot change with the data (every shape static, no
   Python function or loop: ``Partition.predictable``) and it changes no state (no update
   of a variable, which may wait for the variable's lock; no queue or random op), so that no
   partition holds the loop up much longer than the limit (no thread hand-off; a small
   partition costs tens of microseconds); else on the worker's threads. (A worker in the
   client's process shares the client's event loop: a predictable partition holds it up
   about as long as its last run did, under the limit, while the client only waits.)
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

__all__ = [
    "INLINE_LIMIT",
    "PeerLost",
    "StepHost",
    "StepRun",
    "StepTiming",
    "as_read",
    "call_part",
    "reply_of",
]

#: seconds: a partition whose last run took less may run on the event loop (if predictable
#: and stateless); a hand-off to a thread costs tens of microseconds, and the loop is held up
#: no longer than this
INLINE_LIMIT = 0.002


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

    def capture(self, address: str, key: tuple, producer: int, value: Any) -> bool:
        """Keep ``value`` for a message to ``address`` not sent yet; whether it was kept."""
        return False

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
        inline: bool = True,
    ) -> None:
        self.host, self.key, self.token, self.plan, self.peers = host, key, token, plan, peers
        self.near = near  # workers in the client's process: the reply may carry their tensors
        self.forward: list[tuple[str, int, Any]] = []
        self.may_inline = inline  # False: every partition on a thread (the client's loop)
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
        ``failure`` (its partition and the RunFailure), and each partition's
        :class:`StepTiming`.

        A small partition whose inputs are all here runs at once, in this call (no task, no
        turn of the event loop); the others become tasks that wait for their inputs."""
        for part in self.plan.parts:
            ready = self._ready_values(part)
            if ready is not None and self._inline(part):
                self._run_now(part, ready)
            else:
                self._tasks.append(asyncio.ensure_future(self._part(part)))
        if self._tasks:
            try:
                await asyncio.gather(*self._tasks)
            except BaseException:  # a send failed, or the client aborted: stop the others
                self.cancel()
                raise
        return self._reply()

    def _reply(self) -> dict[str, Any]:
        results = {part.index: self.done[part.index].result() for part in self.plan.parts}
        return reply_of(self.plan.parts, results, self.trace, self.timing, self.forward)

    def _run_now(self, part: StepPart, dependencies: tuple) -> None:
        """Run ``part`` in this call; its sends that leave the process become a task."""
        ready = time.perf_counter()
        result = self._call(part, dependencies)
        ran = time.perf_counter()
        self.done[part.index].set_result(result)
        sends = self._route(part, result)
        if sends:
            self._tasks.append(asyncio.ensure_future(asyncio.gather(*sends)))
        self.timing[part.index] = StepTiming(ready - self._started, ran - ready, 0.0)

    async def _part(self, part: StepPart) -> None:
        dependencies = await self._inputs(part)
        ready = time.perf_counter()
        if self._inline(part):
            result = self._call(part, dependencies)
        else:
            result = await self.host.in_thread(lambda: self._call(part, dependencies))
        ran = time.perf_counter()
        self.done[part.index].set_result(result)
        sends = self._route(part, result)
        if sends:
            await asyncio.gather(*sends)
        sent = time.perf_counter()
        self.timing[part.index] = StepTiming(ready - self._started, ran - ready, sent - ran)

    def _inline(self, part: StepPart) -> bool:
        return self.may_inline and self.host.inline(self.token, part)

    def _ready_values(self, part: StepPart) -> tuple | None:
        """What ``part`` reads, if all of it is here already; else None."""
        values = []
        for producer in part.dependencies:
            future = self.done.get(producer) or self.inbox[producer]
            if not future.done():
                return None
            values.append(as_read(future.result()))
        return tuple(values)

    async def _inputs(self, part: StepPart) -> tuple:
        """What ``part`` reads of each partition it depends on, in its program's order: a
        producer's outputs (a tuple, by index), or the failure it passed on."""
        values = []
        for producer in part.dependencies:
            local = self.done.get(producer)
            value = await (local if local is not None else self.inbox[producer])
            values.append(as_read(value))
        return tuple(values)

    def _call(self, part: StepPart, dependencies: tuple) -> Any:
        host, step = self.host, self.step
        return call_part(host, self.token, part, step, self.feeds, self.trace, dependencies)

    def _route(self, part: StepPart, result: Any) -> list[Any]:
        """Where ``part``'s outputs go: a worker of the client's process gets them in the
        reply if this was the last partition here; the others by a message each (the
        coroutines returned)."""
        if not part.sends:
            return []
        failed = isinstance(result, RunFailure)
        last = all(future.done() for future in self.done.values())
        sends = []
        for worker, outputs in part.sends:
            value = result if failed else {i: result[i] for i in outputs}
            address = self.peers[worker]
            if last and worker in self.near:  # the reply goes there now anyway: ride along
                self.forward.append((worker, part.index, value))
            elif not self.host.capture(address, self.key, part.index, value):
                sends.append(self.host.send(address, self.key, part.index, value))
        return sends


def call_part(
    host: StepHost,
    token: str,
    part: StepPart,
    step: RunStep,
    feeds: Mapping[int, Any],
    trace: bool,
    dependencies: tuple,
) -> Any:
    """Run ``part`` of plan ``token`` in the calling thread (an event loop's or a worker
    thread): its outputs, or the failure; its run time is noted on ``host``."""
    values = tuple(feeds[i] for i in part.feed_indices)
    started = time.perf_counter()
    try:
        return run_partition(
            host.state, host.address, part.program, step, values, trace, dependencies
        )
    except Exception as exc:  # not an op's error (those come back as RunFailure)
        return RunFailure(_internal(exc, part))
    finally:
        host.ran(token, part, time.perf_counter() - started)


def reply_of(
    parts: tuple[StepPart, ...] | list[StepPart],
    results: Mapping[int, Any],
    trace: bool,
    timing: dict[int, StepTiming],
    forward: list[tuple[str, int, Any]],
) -> dict[str, Any]:
    """A worker's reply to the client once its ``parts`` ran (``results`` by partition):
    ``outputs`` (partition -> fetched outputs by index; every output when tracing), the first
    ``failure`` (its partition and the RunFailure), each partition's :class:`StepTiming`, and
    the tensors ``forward``-ed to workers of the client's process."""
    outputs: dict[int, Any] = {}
    failure = None
    for part in parts:
        result = results[part.index]
        if isinstance(result, RunFailure):
            failure = failure or (part.index, result)
        elif trace:
            outputs[part.index] = dict(enumerate(result))
        elif part.to_client:
            outputs[part.index] = {i: result[i] for i in part.to_client}
    reply = {"status": "ok", "outputs": outputs, "failure": failure, "timing": timing}
    if forward:
        reply["forward"] = forward
    return reply


def as_read(value: Any) -> Any:
    """A producer's outputs received by index as the tuple its readers index into; a local
    producer's tuple, or a failure, as it is."""
    return by_index(value) if isinstance(value, dict) else value


def _internal(exc: Exception, part: StepPart) -> Exception:
    """An error that is not an op's (a bug, a lost staged value) as one the client raises."""
    if isinstance(exc, OpError):
        return exc
    return InternalError(
        f"The partition {part.index} on {part.program.device} failed outside its ops: "
        f"{type(exc).__name__}: {exc}",
        device=part.program.device,
    )
