"""Compiled steps, the client's half: a multi-device run as one message per worker, no scheduler.

TensorFlow's master registers each device's partition graph with its worker once, and a step
is then one ``RunGraph`` call per worker; Ray's compiled graphs do the same for actors. Here,
a plan is split once into one :class:`~daskgraph.runtime.program.WorkerStep` per worker
(:func:`~daskgraph.runtime.planner.step_split.worker_steps`); a run sends each of those
workers one message straight from the client (``Client.rpc``: Dask's comm, not the scheduler),
with the worker's feeds, and the plan itself the first time the worker runs it (again when a
peer moved). The workers run their partitions as their inputs arrive and send each other the
tensors, worker to worker (:mod:`daskgraph.runtime.worker.step_service`); each replies with
the fetched outputs it holds once its partitions are done. A worker in this process (the
embedded CPU worker) is called directly, and values cross by reference.

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
import concurrent.futures
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from distributed import Client

from daskgraph.cluster.liveness import ClusterWatch
from daskgraph.deadline import has_deadline, raise_if_past, wait_time
from daskgraph.runtime.client.channel_steps import ChannelSteps, StepOutcome
from daskgraph.runtime.client.dispatch import (
    CompiledRun,
    raise_if_devices_left,
    workers_now,
)
from daskgraph.runtime.client.inprocess import private_feed
from daskgraph.runtime.program import RunStep
from daskgraph.runtime.worker.step_run import StepTiming
from daskgraph.runtime.worker.step_service import StepService, local_service
from daskgraph.runtime.worker.wire import by_index, envelope, open_envelope, pack, unpack

__all__ = ["CompiledSteps", "StepReport"]

logger = logging.getLogger("daskgraph.runtime.client.compiled_steps")


@dataclass(frozen=True)
class StepReport:
    """Where a compiled step's time went: per partition, its device and
    :class:`~daskgraph.runtime.worker.step_run.StepTiming` (for the dashboard and the event
    log)."""

    timing: dict[int, tuple[str, StepTiming]]

    def by_device(self) -> dict[str, tuple[float, float, float]]:
        """(compute, waiting, sending) seconds per device, over its partitions.

        >>> StepReport({0: ("gpu", StepTiming(0.5, 1.0, 0.0))}).by_device()
        {'gpu': (1.0, 0.5, 0.0)}
        """
        out: dict[str, tuple[float, float, float]] = {}
        for device, t in self.timing.values():
            c, w, s = out.get(device, (0.0, 0.0, 0.0))
            out[device] = (c + t.compute, w + t.waiting, s + t.sending)
        return out


@dataclass
class _Target:
    """One worker of a step: its name, address, the service if it lives in this process, and
    the message for it."""

    name: str
    address: str
    local: StepService | None
    message: dict[str, Any]
    near: dict[str, StepService]  # the step's workers in this process, by name


class CompiledSteps:
    """A session's compiled steps (see the module).

    Parameters
    ----------
    client, watch
        The session's client and its cluster watch.
    session_id
        The session's id (its state's key on the workers).
    on_step
        Called with the plan and a :class:`StepReport` after each step that ran.
    """

    def __init__(
        self,
        client: Client,
        watch: ClusterWatch,
        session_id: str,
        on_step: Callable[[CompiledRun, StepReport], None] | None = None,
    ) -> None:
        self.client, self.watch, self.session_id = client, watch, session_id
        self.on_step = on_step
        self._loaded: dict[str, dict[str, tuple]] = {}  # address -> token -> peers loaded
        self._without: set[str] = set()  # addresses of workers without the handlers
        self.channels = ChannelSteps(client, watch, session_id, self._loaded)

    def run(
        self,
        compiled: CompiledRun,
        key: str,
        step: RunStep,
        values: Sequence[Any],
        trace: bool,
        tick: float,
    ) -> dict[int, tuple] | None:
        """Run ``compiled`` as a compiled step under the run key ``key``: its outputs by
        partition, or ``None`` when the scheduler's path must run it (a worker without the
        handlers, or a failure that is not a lost worker). Raises the first failure of a
        partition, :class:`~daskgraph.errors.UnavailableError` for lost workers and
        :class:`~daskgraph.errors.DeadlineExceededError`."""
        plan = compiled.plan
        started = workers_now(self.watch, plan)  # raises at once if a worker is missing
        if any(address in self._without for address in started.values()):
            return None
        peers = {str(name): started[name] for name in compiled.worker_steps}
        if not trace and not has_deadline():  # (a call here cannot be abandoned)
            near = {n: s for n, a in peers.items() if (s := local_service(str(a))) is not None}
            outcome = self.channels.run(
                compiled, f"{key}~c", step, values, peers, near, _signature(peers), tick
            )  # type: ignore[arg-type]
            if outcome is not None:
                return self._finish(compiled, outcome)
        for attempt in range(2):  # again (loading the plan) where a worker had lost it
            targets = self._targets(compiled, f"{key}~{attempt}", step, values, trace, peers)
            replies = self._wait(targets, plan, started, tick)
            missing = [t for t, r in zip(targets, replies, strict=True) if _status(r) == "missing"]
            if not missing:
                break
            self._abort(targets)
            for target in missing:
                self._loaded.pop(target.address, None)
        return self._results(compiled, targets, replies, started, peers, tick)

    def release(self, compiled: CompiledRun) -> None:
        """Free ``compiled``'s plan where a worker loaded it; nothing is waited for."""
        for address, tokens in list(self._loaded.items()):
            if tokens.pop(compiled.token, None) is not None:
                local = local_service(address)
                if local is not None:
                    local.loop.call_soon_threadsafe(local.forget, self.session_id, [compiled.token])
                else:
                    self._fire(address, "daskgraph_step_forget", tokens=[compiled.token])

    def forget(self) -> None:
        """Send every plan again on the next runs (the workers may have moved)."""
        self._loaded.clear()
        self._without.clear()

    # -- one step -------------------------------------------------------------------------------
    def _targets(
        self,
        compiled: CompiledRun,
        run: str,
        step: RunStep,
        values: Sequence[Any],
        trace: bool,
        peers: dict[str, str | None],
    ) -> list[_Target]:
        """The message for each worker of the plan (``peers``: their addresses by name)."""
        services = {name: local_service(str(address)) for name, address in peers.items()}
        near_services = {name: service for name, service in services.items() if service}
        near = frozenset(near_services)
        signature = _signature(peers)
        targets = []
        for name, plan in compiled.worker_steps.items():
            address, local = str(peers[str(name)]), services[str(name)]
            indices = {i for part in plan.parts for i in part.feed_indices}
            feeds = {i: private_feed(values[i]) if local else values[i] for i in indices}
            loaded = self._loaded.get(address, {}).get(compiled.token) == signature
            # a worker of this process hands tensors to its neighbours by reference at once
            load = None if loaded else (plan, peers, frozenset() if local else near)
            message = {"session": self.session_id, "run": run, "token": compiled.token}
            if local is None:
                near_host = self.channels.pool.same_host(self.client, address)
                message.update(step=pack(step), feeds=pack(feeds, near_host), trace=trace)
                message["near"] = near_host  # (its reply's large arrays: shared memory too)
                message["load"] = None if load is None else pack(load)
            else:
                message.update(step=step, feeds=feeds, trace=trace, load=load)
            targets.append(_Target(str(name), address, local, message, near_services))
        return targets

    def _wait(
        self, targets: list[_Target], plan: Any, started: dict[Any, str | None], tick: float
    ) -> list[Any]:
        """Send every message and wait for every reply, checking each tick that the plan's
        workers are there and the deadline has not passed (else abort and raise)."""
        loop = self.client.loop.asyncio_loop
        future = asyncio.run_coroutine_threadsafe(self._send_all(targets), loop)
        while True:
            try:
                return future.result(timeout=wait_time(tick))
            except (TimeoutError, concurrent.futures.TimeoutError):
                try:
                    raise_if_past("the partitions of the step")
                    raise_if_devices_left(self.watch, plan, [], started=started, max_age=tick)
                except BaseException:
                    future.cancel()
                    self._abort(targets)
                    raise
            except BaseException:  # interrupted
                future.cancel()
                self._abort(targets)
                raise

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
                self._fire(t.address, "daskgraph_step_abort", run=run)

    def _fire(self, address: str, op: str, **kwargs: Any) -> None:
        """Send ``op`` to the worker at ``address`` without waiting for it."""

        async def send() -> None:
            try:
                await getattr(self.client.rpc(address), op)(session=self.session_id, **kwargs)
            except Exception:  # the worker is gone: it has nothing left to drop
                logger.debug("%s to %s failed", op, address, exc_info=True)

        asyncio.run_coroutine_threadsafe(send(), self.client.loop.asyncio_loop)

    # -- the replies ----------------------------------------------------------------------------
    def _results(
        self,
        compiled: CompiledRun,
        targets: list[_Target],
        replies: list[Any],
        started: dict[Any, str | None],
        peers: dict[str, str | None],
        tick: float,
    ) -> dict[int, tuple] | None:
        """The outputs by partition; raises the first failure, or what a lost worker means;
        None when the scheduler's path must run the step."""
        trouble = [(t, r) for t, r in zip(targets, replies, strict=True) if _status(r) != "ok"]
        if trouble:
            self._abort(targets)
            return self._troubled(compiled, trouble, started, tick)
        signature = _signature(peers)
        for target in targets:
            self._loaded.setdefault(target.address, {})[compiled.token] = signature
        return self._finish(compiled, StepOutcome.of(replies))

    def _finish(self, compiled: CompiledRun, outcome: StepOutcome) -> dict[int, tuple]:
        """The outputs by partition; reports the step's timing, then raises the first
        failure in the plan's order."""
        outputs = {index: by_index(values) for index, values in outcome.outputs.items()}
        partitions = compiled.plan.partitions
        timing = {i: (partitions[i].device, spent) for i, spent in outcome.timing.items()}
        if self.on_step is not None:
            self.on_step(compiled, StepReport(timing))
        if outcome.failures:
            raise min(outcome.failures, key=lambda f: f[0])[1].error
        return outputs

    def _troubled(
        self,
        compiled: CompiledRun,
        trouble: list[tuple[_Target, Any]],
        started: dict[Any, str | None],
        tick: float,
    ) -> None:
        """After a step some worker did not finish: UnavailableError if a worker of the plan
        left or was replaced (waiting up to a tick for the scheduler to say so), else None
        (the scheduler's path runs it), remembering workers without the handlers."""
        plan = compiled.plan
        cause = next((r for _, r in trouble if isinstance(r, BaseException)), None)
        for target, reply in trouble:
            if reply is None or (not isinstance(reply, (dict, BaseException))):
                self._without.add(target.address)  # an older daskgraph there: no handlers
        now = dict(started)
        self.watch.wait_until(lambda view: view.addresses(list(now)) != now, tick)
        raise_if_devices_left(self.watch, plan, [], cause, started=started)
        logger.warning(
            "compiled step of plan %s unavailable (%s); using the scheduler",
            compiled.number,
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


def _signature(peers: dict[str, str | None]) -> tuple:
    """The plan's workers and their addresses: a worker loads the plan again when this
    changed (a peer moved).

    >>> _signature({"b": "tcp://2", "a": "tcp://1"})
    (('a', 'tcp://1'), ('b', 'tcp://2'))
    """
    return tuple(sorted(peers.items()))
