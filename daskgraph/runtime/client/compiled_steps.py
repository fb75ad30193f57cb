"""Compiled steps over Dask's comm: one message per worker, no scheduler (the ``comm`` transport).

TensorFlow's master registers each device's partition graph with its worker once, and a step
is then one ``RunGraph`` call per worker; Ray's compiled graphs do the same for actors. Here,
a plan is split once into one :class:`~daskgraph.runtime.program.WorkerStep` per worker
(:func:`~daskgraph.runtime.planner.step_split.worker_steps`); a run sends each of those
workers one message straight from the client (``Client.rpc``: Dask's comm, not the scheduler),
with the worker's feeds, and the plan itself the first time the worker runs it (again when a
peer moved). The workers run their partitions as their inputs arrive and send each other the
tensors, worker to worker (:mod:`daskgraph.runtime.worker.step_service`); each replies with
the fetched outputs it holds once its partitions are done. A worker in this process (the
embedded CPU worker) is called directly, and values cross by reference. This is the
transport that takes every step (:mod:`~daskgraph.runtime.client.transports`): traced runs,
runs with a deadline, workers on other machines, over whatever protocol the cluster's comm
uses (``tcp``, ``tls``, ``ucx``).

The guarantees of the scheduler's path hold:

* **Exactly once.** Assigns apply once per ``Session.run`` whichever path (or attempt) runs
  it (:meth:`~daskgraph.runtime.worker.worker_state.VariableStore.apply_once`).
* **Lost workers.** While it waits, the client checks once a liveness tick that the plan's
  workers are there and the same; a worker that left (or a send between workers that failed
  because one did) ends the step with
  :class:`~daskgraph.errors.UnavailableError`, and the session recovers and runs it again, as
  after a scheduled run. The step is aborted on every worker first, so that no one waits for
  tensors that will not come. A failure that is not a lost worker sends the run to the
  scheduler's path.
* **Deadlines** abort the step on every worker and raise
  :class:`~daskgraph.errors.DeadlineExceededError`.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from dataclasses import dataclass
from typing import Any

from distributed import Client

from daskgraph.cluster.liveness import ClusterWatch
from daskgraph.runtime.client import channel_steps
from daskgraph.runtime.client.dispatch import CompiledRun, fire
from daskgraph.runtime.client.inprocess import private_feed
from daskgraph.runtime.client.run_watch import RunWatch
from daskgraph.runtime.client.transports import StepBook, StepCall, StepOutcome
from daskgraph.runtime.worker.step_service import StepService, local_service
from daskgraph.runtime.worker.wire import envelope, open_envelope, pack, unpack

__all__ = ["CommTransport"]

logger = logging.getLogger("daskgraph.runtime.client.compiled_steps")


@dataclass
class _Target:
    """One worker of a step: its name, address, the service if it lives in this process, and
    the message for it."""

    name: str
    address: str
    local: StepService | None
    message: dict[str, Any]
    near: dict[str, StepService]  # the step's workers in this process, by name


class CommTransport:
    """A session's compiled steps over Dask's comm (see the module).

    Parameters
    ----------
    client, watch
        The session's client and its cluster watch.
    session_id
        The session's id (its state's key on the workers).
    book
        What the session's transports know of its workers (shared with the channels).
    """

    name = "comm"

    def __init__(
        self, client: Client, watch: ClusterWatch, session_id: str, book: StepBook
    ) -> None:
        self.client, self.watch, self.session_id = client, watch, session_id
        self.book = book

    def carry(self, call: StepCall) -> StepOutcome | None:
        """Run ``call`` as a compiled step: its outcome, or ``None`` when the scheduler's path
        must run it (a plan that may block, a worker without the handlers, or a failure that
        is not a lost worker). Raises :class:`~daskgraph.errors.UnavailableError` for lost
        workers and :class:`~daskgraph.errors.DeadlineExceededError`."""
        compiled, started = call.compiled, call.started
        if compiled.blocking or any(a in self.book.without for a in started.values()):
            return None
        for attempt in range(2):  # again (loading the plan) where a worker had lost it
            targets = self._targets(call, f"{call.key}~{attempt}")
            replies = self._wait(targets, call)
            missing = [t for t, r in zip(targets, replies, strict=True) if _status(r) == "missing"]
            if not missing:
                break
            self._abort(targets)
            for target in missing:
                self.book.loaded.pop(target.address, None)
        return self._results(call, targets, replies)

    def release(self, compiled: CompiledRun) -> None:
        """Free ``compiled``'s plan where a worker loaded it; nothing is waited for."""
        for address, tokens in list(self.book.loaded.items()):
            if tokens.pop(compiled.token, None) is not None:
                local = local_service(address)
                if local is not None:
                    forget = functools.partial(
                        local.forget, session=self.session_id, tokens=[compiled.token]
                    )
                    local.loop.call_soon_threadsafe(forget)
                else:
                    fire(self.client, address, "daskgraph_step_forget",
                         session=self.session_id, tokens=[compiled.token])  # fmt: skip

    def forget(self) -> None:
        """Send every plan again on the next runs (the workers may have moved)."""
        self.book.forget()

    # -- one step -------------------------------------------------------------------------------
    def _targets(self, call: StepCall, run: str) -> list[_Target]:
        """The message for each worker of the plan."""
        compiled, peers, values, trace = call.compiled, call.peers, call.values, call.trace
        near_services = call.near
        near = frozenset(near_services)
        targets = []
        for name, plan in compiled.worker_steps.items():
            address, local = str(peers[str(name)]), near_services.get(str(name))
            indices = compiled.feed_indices[name]
            feeds = {i: private_feed(values[i]) if local else values[i] for i in indices}
            loaded = self.book.has(address, compiled.token, call.signature)
            # a worker of this process hands tensors to its neighbours by reference at once
            load = None if loaded else (plan, peers, frozenset() if local else near)
            message = {"session": self.session_id, "run": run, "token": compiled.token}
            if local is None:
                near_host = channel_steps.POOL.same_host(self.client, address)
                message.update(step=pack(call.step), feeds=pack(feeds, near_host), trace=trace)
                message["near"] = near_host  # (its reply's large arrays: shared memory too)
                message["load"] = None if load is None else pack(load)
            else:
                message.update(step=call.step, feeds=feeds, trace=trace, load=load)
            targets.append(_Target(str(name), address, local, message, near_services))
        return targets

    def _wait(self, targets: list[_Target], call: StepCall) -> list[Any]:
        """Send every message and wait for every reply, watched by a
        :class:`~daskgraph.runtime.client.run_watch.RunWatch` (which aborts the step on every
        worker before it raises)."""
        loop = self.client.loop.asyncio_loop
        future = asyncio.run_coroutine_threadsafe(self._send_all(targets), loop)

        def abort() -> None:
            future.cancel()
            self._abort(targets)

        watch = RunWatch(self.watch, call.compiled.plan, call.started, call.tick, abort,
                         "the partitions of the step")  # fmt: skip
        return watch.wait(future.result)

    async def _send_all(self, targets: list[_Target]) -> list[Any]:
        """Every worker's reply (or the exception its message met).

        The workers of this process start first: their partitions that are ready at once
        (variables read for the towers) run, and what they send to the other workers rides
        in the messages to them (one message per worker, and those partitions find their
        inputs there on arrival) instead of following in messages of their own."""
        loop = asyncio.get_running_loop()
        here = [t for t in targets if t.local is not None and t.local.loop is loop]
        away = [t for t in targets if t.local is None]
        if not here or not away:
            return await asyncio.gather(*map(self._send, targets), return_exceptions=True)
        key = (self.session_id, targets[0].message["run"])
        for t in here:
            t.local.outbox[key] = {r.address: [] for r in away}
        started = {id(t): asyncio.ensure_future(self._send(t)) for t in here}
        await asyncio.sleep(0)  # (one turn: the local steps run their ready partitions)
        by_address = {t.address: t for t in away}
        for t in here:
            for address, values in t.local.outbox.pop(key, {}).items():
                if values:
                    _ride_along(by_address[address], values)
        for t in away:
            started[id(t)] = asyncio.ensure_future(self._send(t))
        tasks = [started[id(t)] for t in targets]
        return await asyncio.gather(*tasks, return_exceptions=True)

    async def _send(self, target: _Target) -> Any:
        local = target.local
        if local is None:
            rpc = self.client.rpc(target.address)
            reply = await rpc.daskgraph_step(**envelope(target.message))
            if isinstance(reply, dict):
                reply = open_envelope(reply)
                for field in ("outputs", "failure", "timing", "forward"):
                    if field in reply:
                        reply[field] = unpack(reply[field])
                self._forward(target, reply.pop("forward", ()))
            return reply
        if local.loop is asyncio.get_running_loop():
            reply = await local.step(**target.message)
        else:
            running = asyncio.run_coroutine_threadsafe(local.step(**target.message), local.loop)
            reply = await asyncio.wrap_future(running)
        self._forward(target, reply.pop("forward", ()))
        return reply

    def _forward(self, target: _Target, forward: Any) -> None:
        """Hand the tensors a reply carried for workers of this process to them (see
        :mod:`~daskgraph.runtime.worker.step_run`)."""
        key = (self.session_id, target.message["run"])
        for worker, producer, value in forward:
            local = target.near.get(worker)
            if local is None:
                continue
            if local.loop is asyncio.get_running_loop():
                local.deliver(key, producer, value)
            else:
                local.loop.call_soon_threadsafe(local.deliver, key, producer, value)

    def _abort(self, targets: list[_Target]) -> None:
        """Tell every worker of the step to give it up (nothing is waited for)."""
        for t in targets:
            run = t.message["run"]
            if t.local is not None:
                t.local.loop.call_soon_threadsafe(t.local.abort, self.session_id, run)
            else:
                fire(self.client, t.address, "daskgraph_step_abort",
                     session=self.session_id, run=run)  # fmt: skip

    # -- the replies ----------------------------------------------------------------------------
    def _results(
        self, call: StepCall, targets: list[_Target], replies: list[Any]
    ) -> StepOutcome | None:
        """The step's outcome; raises what a lost worker means; None when the scheduler's
        path must run the step."""
        trouble = [(t, r) for t, r in zip(targets, replies, strict=True) if _status(r) != "ok"]
        if trouble:
            self._abort(targets)
            return self._troubled(call, trouble)
        for target in targets:
            self.book.mark(target.address, call.compiled.token, call.signature)
        return StepOutcome.of(replies)

    def _troubled(self, call: StepCall, trouble: list[tuple[_Target, Any]]) -> None:
        """After a step some worker did not finish: UnavailableError if a worker of the plan
        left or was replaced (waiting up to a tick for the scheduler to say so), else None
        (the scheduler's path runs it), remembering workers without the handlers."""
        cause = next((r for _, r in trouble if isinstance(r, BaseException)), None)
        for target, reply in trouble:
            if reply is None or (not isinstance(reply, (dict, BaseException))):
                self.book.without.add(target.address)  # an older daskgraph: no handlers
        RunWatch(self.watch, call.compiled.plan, call.started, call.tick).raise_if_left(cause)
        logger.warning(
            "compiled step of plan %s unavailable (%s); using the scheduler",
            call.compiled.number,
            "; ".join(f"{t.name}: {_describe(r)}" for t, r in trouble),
        )
        return None


def _ride_along(target: _Target, values: list[tuple[int, Any]]) -> None:
    """Add tensors of partitions in this process to the (unsent) message to ``target``."""
    message = target.message
    arrived = unpack(message.get("arrivals")) or []
    message["arrivals"] = pack([*arrived, *values])


def _status(reply: Any) -> str:
    """A reply's status: ``ok``, ``missing``, ``aborted``, ``peer-lost``, or ``error``."""
    if isinstance(reply, dict):
        return str(reply.get("status", "error"))
    return "error"


def _describe(reply: Any) -> str:
    if isinstance(reply, BaseException):
        return f"{type(reply).__name__}: {reply}"
    if isinstance(reply, dict):
        return str(reply.get("error") or reply.get("status"))
    return repr(reply)
