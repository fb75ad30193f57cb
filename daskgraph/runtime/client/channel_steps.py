"""Compiled steps through step channels (the ``channel`` transport): one round trip per worker
on this machine, run from the calling thread.

A compiled step whose workers outside this process exchange tensors only with this process
(:func:`~daskgraph.runtime.planner.step_split.one_round`: towers fed and updated from
``/cpu:0``, products summed there) needs one message to each of them and one reply. When
those workers are on this machine, the message goes through the worker's step channel (a
local socket, :mod:`daskgraph.runtime.worker.step_channel`) straight from the thread that
called ``Session.run``, and the reply is read there: no hand-off to the client's event loop,
no Dask framing, no worker event loop. The partitions of the client's own workers (the
embedded CPU worker) run in that thread too, as one-device runs do
(:mod:`~daskgraph.runtime.client.inprocess`): those the other workers read first, their
tensors riding in the messages, then, with what the replies carried, the rest.

Everything else goes to the next transport,
:class:`~daskgraph.runtime.client.compiled_steps.CommTransport` (Dask's comm): workers on
other machines (or whose channel cannot be opened), steps that need tensors between workers
away from this process, traced runs and runs with a deadline (a call in the caller's thread
cannot be abandoned). The guarantees are that path's: assigns apply once per
``Session.run``; a worker that dies mid-step closes its channel, and the step ends as a lost
worker (or, if no worker left, goes to the other transport).

A one-device step on a worker process of this machine is such a step: one message, one
reply. On the worker, the channel's thread reads the message and hands the step to the
worker's executor (:mod:`~daskgraph.runtime.worker.step_channel`).
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from multiprocessing.connection import Client as connect_channel
from multiprocessing.connection import Connection
from multiprocessing.connection import wait as wait_for_replies
from typing import Any

from distributed import Client

from daskgraph.cluster.liveness import ClusterWatch
from daskgraph.deadline import has_deadline
from daskgraph.errors import InternalError
from daskgraph.runtime.client.dispatch import CompiledRun
from daskgraph.runtime.client.inprocess import private_feed
from daskgraph.runtime.client.run_watch import RunWatch
from daskgraph.runtime.client.transports import StepBook, StepCall, StepOutcome
from daskgraph.runtime.planner.step_split import OneRound, one_round
from daskgraph.runtime.worker.shared_arrays import folder_identity
from daskgraph.runtime.worker.shared_arrays import release as release_segments
from daskgraph.runtime.worker.step_channel import (
    encode,
    host_identity,
    recv_message,
    send_message,
    write,
)
from daskgraph.runtime.worker.step_order import OrderedStep
from daskgraph.runtime.worker.step_run import reply_of
from daskgraph.runtime.worker.step_service import StepService

__all__ = ["POOL", "ChannelPool", "ChannelTransport"]

logger = logging.getLogger("daskgraph.runtime.client.channel_steps")


class ChannelPool:
    """Open step channels of this process, by worker address: idle connections are reused
    by the next step (one per thread at a time); a worker whose channel cannot be opened
    (another machine, an older daskgraph) is remembered and not asked again."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._idle: dict[str, list[Connection]] = {}
        self._endpoints: dict[str, dict[str, Any] | None] = {}

    def take(self, client: Client, address: str) -> Connection | None:
        """An open channel to the worker at ``address``, or None where it has none."""
        with self._lock:
            idle = self._idle.get(address)
            if idle:
                return idle.pop()
            if address in self._endpoints and self._endpoints[address] is None:
                return None
        endpoint = self._endpoint(client, address)
        if endpoint is None:
            return None
        try:
            return connect_channel(endpoint["path"], family="AF_UNIX", authkey=endpoint["authkey"])
        except Exception as exc:  # not reachable from here after all
            logger.debug("no step channel to %s: %s", address, exc)
            with self._lock:
                self._endpoints[address] = None
            return None

    def same_host(self, client: Client, address: str) -> bool:
        """Whether the worker at ``address`` runs on this machine (its channel can be
        opened from here): large host arrays of messages to it go through shared memory."""
        return self._endpoint(client, address) is not None

    def give_back(self, address: str, conn: Connection) -> None:
        """``conn`` (whose reply was read) is free for the next step."""
        with self._lock:
            self._idle.setdefault(address, []).append(conn)

    def forget(self, address: str) -> None:
        """Close the idle channels to ``address`` (its worker left) and ask it again later."""
        with self._lock:
            idle = self._idle.pop(address, [])
            self._endpoints.pop(address, None)
        for conn in idle:
            conn.close()

    def _endpoint(self, client: Client, address: str) -> dict[str, Any] | None:
        with self._lock:
            if address in self._endpoints:
                return self._endpoints[address]
        try:
            endpoint = client.sync(_ask_endpoint, client, address)
        except TimeoutError:  # gone without a word, or busy: no channel this time, ask again
            logger.debug("no answer from %s within %s s", address, ENDPOINT_TIMEOUT)
            return None
        except Exception as exc:  # a worker without the handler, or gone
            logger.debug("no step channel at %s: %s", address, exc)
            endpoint = None
        if endpoint is not None and (
            endpoint.get("host") != host_identity()
            or not os.path.exists(endpoint["path"])
            or endpoint.get("shared") != folder_identity()  # (its segments not visible here)
        ):
            endpoint = None  # another machine (or container)
        with self._lock:
            self._endpoints[address] = endpoint
        return endpoint


#: seconds a worker has to say where its channel is: the question is asked from a run's
#: calling thread, outside its RunWatch, and a worker gone without the client hearing of it
#: would otherwise hold the run for Dask's connect timeout (30 s)
ENDPOINT_TIMEOUT = 3.0


async def _ask_endpoint(client: Client, address: str) -> dict[str, Any]:
    return await asyncio.wait_for(
        client.rpc(address).daskgraph_step_channel(), timeout=ENDPOINT_TIMEOUT
    )


#: the process's channels (sessions share them, as they share the embedded cluster)
POOL = ChannelPool()


@dataclass
class _Away:
    """A worker of the step reached through a channel, and its message."""

    name: str
    address: str
    conn: Connection
    load: Any  # its part of the plan, the peers and those in the client's process
    message: dict[str, Any]


class ChannelTransport:
    """A session's steps through step channels (see the module).

    Parameters
    ----------
    client, watch, session_id
        The session's client, its cluster watch and its id.
    book
        What the session's transports know of its workers (a plan loaded by one is loaded).
    pool
        The channels of this process.
    """

    name = "channel"

    def __init__(
        self,
        client: Client,
        watch: ClusterWatch,
        session_id: str,
        book: StepBook,
        pool: ChannelPool | None = None,
    ) -> None:
        self.client, self.watch, self.session_id = client, watch, session_id
        self.book = book
        self.pool = POOL if pool is None else pool  # (the process's channels by default)
        self._rounds: dict[tuple[str, frozenset[str]], OneRound | None] = {}

    def carry(self, call: StepCall) -> StepOutcome | None:
        """Run ``call`` through channels, or None when it cannot (see the module: a traced
        run, one with a deadline, a plan that may block, a step of more than one round, a
        worker without a channel); raises :class:`~daskgraph.errors.UnavailableError` where a
        worker left mid-step."""
        compiled = call.compiled
        if call.trace or has_deadline() or compiled.blocking:
            return None  # (a call in this thread cannot be abandoned)
        peers = call.peers
        if any(address in self.book.without for address in peers.values()):
            return None
        near = call.near
        shape = self._round(compiled, frozenset(near))
        if shape is None or (len(near) == len(peers) and not _all_small(compiled, near)):
            return None  # (long partitions of this process run side by side on the other path)
        away = self._connect(compiled, peers, near)  # type: ignore[arg-type]
        if away is None:
            return None
        ordered = OrderedStep(compiled.token, call.step, _feeds(compiled, near, call.values), False)
        by_index = {p.index: (near[name], p) for name in near for p in
                    compiled.worker_steps[name].parts}  # fmt: skip
        ordered.run(by_index[i] for i in shape.before)
        for target in away:
            self._fill(call, target, f"{call.key}~c", ordered, near)
        replies = self._exchange(compiled, away, call.tick)
        if replies is None:
            return None
        for reply in replies:
            for worker, producer, value in reply.get("forward", ()):
                if worker in near:
                    ordered.receive(producer, value)
        try:
            ordered.run(by_index[i] for i in shape.after)
        except KeyError as exc:  # (one_round said every input would be here)
            raise InternalError(f"a compiled step's input {exc} did not arrive") from None
        for target in away:
            self.book.mark(target.address, compiled.token, call.signature)
        for service in near.values():
            service.counts["steps"] += 1
        return _outcome(compiled, ordered, near, replies)

    def release(self, compiled: CompiledRun) -> None:
        """Nothing to free: the plans a channel loaded are in the shared book, freed by the
        comm transport."""

    def forget(self) -> None:
        """Nothing to forget here (the book is the comm transport's to clear)."""

    def _round(self, compiled: CompiledRun, near: frozenset[str]) -> OneRound | None:
        key = (compiled.token, near)
        if key not in self._rounds:
            if len(self._rounds) > 1024:
                self._rounds.clear()
            self._rounds[key] = one_round(compiled.worker_steps, near)
        return self._rounds[key]

    def _connect(
        self, compiled: CompiledRun, peers: dict[str, str], near: dict[str, StepService]
    ) -> list[_Away] | None:
        """A channel to every worker of the step outside this process, or None (giving back
        those taken) where one has none."""
        away: list[_Away] = []
        for name in compiled.worker_steps:
            if name in near:
                continue
            address = peers[name]
            conn = self.pool.take(self.client, address)
            if conn is None:
                for target in away:
                    self.pool.give_back(target.address, target.conn)
                return None
            load = (compiled.worker_steps[name], peers, frozenset(near))
            away.append(_Away(name, address, conn, load, {}))
        return away

    def _fill(
        self,
        call: StepCall,
        target: _Away,
        run: str,
        ordered: OrderedStep,
        near: dict[str, StepService],
    ) -> None:
        """The message to ``target``: its feeds, what the partitions here sent it, and its
        part of the plan where it has not got it."""
        compiled = call.compiled
        indices = compiled.feed_indices[target.name]
        loaded = self.book.has(target.address, compiled.token, call.signature)
        arrivals = [
            (part.index, ordered.sent(part, target.name))
            for name in near
            for part in compiled.worker_steps[name].parts
            if part.index in ordered.results and target.name in dict(part.sends)
        ]
        target.message = {
            "session": self.session_id,
            "run": run,
            "token": compiled.token,
            "step": call.step,
            "feeds": {i: call.values[i] for i in indices},
            "trace": False,
            "load": None if loaded else target.load,
            "arrivals": arrivals,
        }

    def _exchange(
        self, compiled: CompiledRun, away: list[_Away], tick: float
    ) -> list[dict[str, Any]] | None:
        """Send every message and read every reply (a worker that had lost the plan gets it
        again); None, every channel closed, where a channel failed but no worker left.

        Each message goes as soon as it is encoded (its worker starts while the next one is
        made), and the replies are read as they come, in any order; between them, every
        liveness tick, the plan's workers are checked to be there (a
        :class:`~daskgraph.runtime.client.run_watch.RunWatch`)."""
        unread: dict[Connection, _Away] = {}
        replies: dict[str, dict[str, Any]] = {}
        watch = RunWatch(self.watch, compiled.plan, None, tick, None,
                         "the replies of the step's workers")  # fmt: skip

        def ready(timeout: float) -> list[Any]:
            found = wait_for_replies(list(unread), timeout)
            if not found:
                raise TimeoutError
            return found

        segments: list[str] = []  # (the messages' shared arrays: released once replied)
        try:
            for target in away:
                frames = encode(target.message)
                segments += frames.segments
                write(target.conn, frames)
                unread[target.conn] = target
            while unread:
                for conn in watch.wait(ready):
                    target = unread[conn]  # type: ignore[index]
                    reply = recv_message(conn)  # type: ignore[arg-type]
                    if reply.get("status") == "missing" and target.message["load"] is None:
                        self.book.drop(target.address, compiled.token)
                        target.message["load"] = target.load
                        segments += send_message(target.conn, target.message)  # (reply owed)
                        continue
                    del unread[conn]  # type: ignore[arg-type]
                    replies[target.name] = reply
        except (EOFError, OSError) as exc:
            return self._broken(compiled, away, exc, tick)
        except BaseException:  # interrupted: replies still on their way spoil the channels
            for target in away:
                if target.conn in unread:
                    target.conn.close()
                else:
                    self.pool.give_back(target.address, target.conn)
            raise
        finally:
            release_segments(segments)
        for target in away:
            self.pool.give_back(target.address, target.conn)
        ordered = [replies[target.name] for target in away]
        statuses = {r.get("status") for r in ordered}
        if statuses <= {"ok"}:  # (no reply at all: every partition ran in this process)
            return ordered
        if statuses <= {"ok", "paused"}:  # Dask paused a worker (its memory)
            logger.debug("a worker of plan %s is paused; using Dask's comm", compiled.number)
        else:
            logger.warning("a step channel failed: %s", ordered)
        return None

    def _broken(
        self, compiled: CompiledRun, away: list[_Away], cause: BaseException, tick: float
    ) -> None:
        """A channel failed: close them all; raise UnavailableError if a worker of the plan
        left (waiting up to a tick for the scheduler to say so), else None."""
        for target in away:
            target.conn.close()
            self.pool.forget(target.address)
        started: dict[Any, str | None] = {t.name: t.address for t in away}
        RunWatch(self.watch, compiled.plan, started, tick).raise_if_left(cause)
        return None


def _all_small(compiled: CompiledRun, near: dict[str, StepService]) -> bool:
    """Whether every partition of a step that runs all in this process is small enough to
    run in the calling thread, one after the other: predictable, and its last run shorter
    than the inline limit (:data:`~daskgraph.runtime.worker.step_run.INLINE_LIMIT`: a
    hand-off to run partitions side by side would cost more than they take)."""
    steps = compiled.worker_steps
    return all(
        near[name].small(compiled.token, part) for name in near for part in steps[name].parts
    )


def _feeds(compiled: CompiledRun, near: dict[str, StepService], values: Sequence[Any]) -> dict:
    """The feeds the partitions of this process read, each the run's own copy."""
    indices = {i for name in near for i in compiled.feed_indices[name]}
    return {i: private_feed(values[i]) for i in indices}


def _outcome(
    compiled: CompiledRun,
    ordered: OrderedStep,
    near: dict[str, StepService],
    replies: list[dict[str, Any]],
) -> StepOutcome:
    """The step's outputs, failures and timing: the replies', and those of the partitions
    that ran here."""
    parts = [part for name in near for part in compiled.worker_steps[name].parts]
    return StepOutcome.of([*replies, reply_of(parts, ordered.results, False, ordered.timing, [])])
