"""Compiled steps on a Dask worker: the handlers a step's messages reach, without the scheduler.

:meth:`StepService.install` adds six handlers to a worker's comm server (as Dask's P2P
shuffle does through its worker plugin; the session's
:class:`~daskgraph.runtime.worker.session_plugin.SessionPlugin` installs them on every worker):

``daskgraph_step``
    the client's one message for a step: the run's key, the plan's token, the
    :class:`~daskgraph.runtime.program.RunStep`, this worker's feeds and, the first time (or
    after the peers moved), the :class:`~daskgraph.runtime.program.WorkerStep`, the peers'
    addresses and which of them live in the client's process. Runs a
    :class:`~daskgraph.runtime.worker.step_run.StepRun` and replies with the fetched outputs
    once every partition here has run and sent what it must.
``daskgraph_step_recv``
    a peer's tensors for a partition here (TensorFlow's ``Recv``); one that arrives before the
    client's message waits for it.
``daskgraph_step_abort``
    the client gave the run up (a worker left, a deadline passed): stop waiting, drop what
    arrived for it, and ignore what still comes.
``daskgraph_step_forget``
    plans the session no longer keeps.
``daskgraph_step_channel``
    where the worker's step channel listens (started then), for a client on this machine:
    steps that need one round trip (:func:`~daskgraph.runtime.planner.step_split.one_round`)
    then come through a local socket, not through the event loop: the channel's thread reads
    the message and hands the whole step to the worker's executor, as one call, which also
    writes the reply (:meth:`StepService.serve_channel`, :meth:`StepService.step_now`,
    :mod:`~daskgraph.runtime.worker.step_channel`), so that its partitions run on the threads
    Dask counts, as its tasks do; a step the event loop could run itself (every partition
    small and stateless, :meth:`StepService.quick`) is answered in the channel's thread, as
    the hand-off would cost more than the step. While Dask has paused the worker (its memory
    is near the limit) no new step starts there: the reply says ``paused``, and the client
    takes the other path.
``daskgraph_step_stage``
    large feeds of a run on the scheduler's path, sent ahead of its graph (never scattered:
    scattered data lost with a worker is an error to Dask's scheduler) and kept in the
    session's state here until its partition takes them
    (:class:`~daskgraph.runtime.program.StagedFeed`); also drops those no partition will take.

Where partitions run: on the worker's executor (``Worker.executors["default"]``), or on the
event loop (:meth:`StepService.inline`) where a partition changes no state
(:func:`~daskgraph.runtime.worker.variable_steps.changes_state`), its run time cannot change
with the data and its last run was shorter than
:data:`~daskgraph.runtime.worker.step_run.INLINE_LIMIT`: a variable's update may wait for
the variable's lock, which a loop must never do.

Who is answered: these handlers unpickle what they receive and hand out the step channel's
key, so whoever they answer can run code as the worker's user. Each answers a connection that
is authenticated (TLS with a certificate of the cluster's CA, or in-process) and refuses any
other with :class:`~daskgraph.errors.UnauthenticatedError` before reading its message, unless
the worker listens only on plain TCP: a cluster its user runs without TLS (``daskgraph
server`` without ``--tls-dir``, a plain ``dask scheduler``, ``daskgraph.local.security:
none``), where anyone who reaches the worker runs code through Dask's own ``run`` anyway
(:mod:`~daskgraph.runtime.worker.comm_check`). The embedded cluster uses TLS with credentials
of its own by default (:mod:`daskgraph.cluster.local_security`), so no other user of the
machine reaches these handlers; the step channel's socket lives in a folder only its user can
enter.

Tensors between workers go through the worker's own connection pool (``Worker.rpc``), that
is, Dask's comm: TLS and every protocol Dask supports apply, and CuPy arrays travel by Dask's
CUDA serializers (:mod:`~daskgraph.runtime.worker.wire`). Between workers of one process
(the embedded CPU worker and the client, threaded workers) nothing is serialised: the value is
handed over by reference. Loaded plans live in the session's state on the worker, freed with
the session; what a run leaves is dropped when it ends (a bounded record of ended runs
keeps late messages from piling up), so nothing grows with the number of steps.
"""

from __future__ import annotations

import asyncio
import logging
import weakref
from collections import Counter, OrderedDict
from collections.abc import Callable
from typing import Any

from daskgraph.runtime.program import StepPart
from daskgraph.runtime.worker.comm_check import check_comm, open_to_any
from daskgraph.runtime.worker.shared_arrays import folder_identity
from daskgraph.runtime.worker.step_channel import ChannelServer, host_identity
from daskgraph.runtime.worker.step_order import OrderedStep
from daskgraph.runtime.worker.step_run import INLINE_LIMIT, PeerLost, StepHost, StepRun, reply_of
from daskgraph.runtime.worker.variable_steps import changes_state
from daskgraph.runtime.worker.wire import envelope, open_envelope, pack, unpack
from daskgraph.runtime.worker.worker_state import state_of

__all__ = ["ENDED_RUNS", "EXTENSION", "StepService", "local_service"]

logger = logging.getLogger("daskgraph.runtime.worker.step_service")

#: the key of the service in ``worker.extensions``
EXTENSION = "daskgraph-steps"
#: ended runs remembered, so that a message arriving after its run ended is dropped
ENDED_RUNS = 4096

#: the services of this process by worker address (for handing values over by reference)
_LOCAL: weakref.WeakValueDictionary[str, StepService] = weakref.WeakValueDictionary()


def local_service(address: str) -> StepService | None:
    """The service of the worker at ``address`` if that worker lives in this process and
    is serving (a closed worker's address may be taken again by another)."""
    service = _LOCAL.get(address)
    if service is None:
        return None
    if service.worker.status.name not in ("running", "paused") or service.loop.is_closed():
        _LOCAL.pop(address, None)
        return None
    return service


class StepService(StepHost):
    """Compiled steps on one worker (see the module)."""

    def __init__(self, worker: Any) -> None:
        self.worker = worker
        self.state = state_of(worker)
        self.address = worker.address
        self.loop = worker.loop.asyncio_loop
        self.runs: dict[tuple, StepRun] = {}
        self.early: dict[tuple, dict[int, Any]] = {}
        self.ended: OrderedDict[tuple, None] = OrderedDict()
        self.durations: dict[tuple[str, int], float] = {}
        #: what this worker did: ``steps`` run, tensors ``sent`` to and ``received`` from
        #: peers (messages), and ``received`` by sender address (``"from <address>"``)
        self.counts: Counter[str] = Counter()
        self._hosts: dict[str, bool] = {}  # peer address -> on this machine
        #: run -> worker address -> tensors to send there, kept while the client has not
        #: sent that worker its message yet (they ride along in it)
        self.outbox: dict[tuple, dict[str, list[tuple[int, Any]]]] = {}
        #: partitions whose last run took less (seconds) may run on the event loop
        self.inline_limit = INLINE_LIMIT
        #: (token, partition) -> whether its program changes state (never on the loop)
        self.changing: dict[tuple[str, int], bool] = {}
        self.channels = ChannelServer(
            self.serve_channel, str(worker.name), worker.executors["default"], self.quick
        )
        #: whether the worker listens only on plain transports (:func:`open_to_any`): read
        #: once, at the first message that needs it (a listening worker's listeners stay)
        self._open_to_any: bool | None = None

    @classmethod
    def install(cls, worker: Any) -> StepService:
        """The worker's service, made and its handlers added on first use."""
        service = worker.extensions.get(EXTENSION)
        if service is None:
            service = worker.extensions.setdefault(EXTENSION, cls(worker))
            worker.handlers.update(
                daskgraph_step=service.step_message,
                daskgraph_step_recv=service.recv,
                daskgraph_step_abort=service.abort,
                daskgraph_step_forget=service.forget,
                daskgraph_step_channel=service.channel,
                daskgraph_step_stage=service.stage,
            )
        if worker.address:
            service.address = worker.address
            _LOCAL[worker.address] = service
        return service

    # -- handlers -----------------------------------------------------------------------------
    def _check_comm(self, comm: Any, handler: str) -> None:
        """:func:`~daskgraph.runtime.worker.comm_check.check_comm` for this worker, its
        listeners read once rather than per message."""
        if self._open_to_any is None and comm is not None:
            self._open_to_any = open_to_any(self.worker)
        check_comm(self.worker, comm, handler, self._open_to_any)

    async def step_message(self, comm: Any = None, **message: Any) -> dict[str, Any]:
        """``daskgraph_step`` from another process: :meth:`step`, its reply packed (a
        connection :func:`~daskgraph.runtime.worker.comm_check.check_comm` refuses gets
        :class:`~daskgraph.errors.UnauthenticatedError`, its message unread); large host
        arrays through shared memory where the message says ``near`` (the client is on this
        machine and sees its shared memory folder)."""
        self._check_comm(comm, "daskgraph_step")
        fields = open_envelope(message)
        near = fields.pop("near", False)  # (the client maps this process's shared segments)
        reply = await self.step(**fields)
        if reply.get("outputs"):
            reply["outputs"] = pack(reply["outputs"], near)
        if reply.get("failure") is not None:
            reply["failure"] = pack(reply["failure"])
        if reply.get("timing"):
            reply["timing"] = pack(reply["timing"])
        if reply.get("forward"):
            reply["forward"] = pack(reply["forward"], near)
        return envelope(reply)

    async def step(
        self,
        session: str,
        run: str,
        token: str,
        step: Any,
        feeds: Any,
        trace: bool,
        load: Any = None,
        inline: bool = True,
        arrivals: Any = None,
    ) -> dict[str, Any]:
        """Run this worker's part of one step; the reply (see
        :meth:`~daskgraph.runtime.worker.step_run.StepRun.run`), or ``status`` ``missing``
        (the plan is not loaded here: send it) or ``aborted``."""
        key = (session, run)
        programs = self.state.session(session).steps
        if load is not None:
            programs[token] = unpack(load)
        loaded = programs.get(token)
        if loaded is None:
            self._end(key)
            return {"status": "missing"}
        if key in self.ended:
            return {"status": "aborted"}
        plan, peers, near = loaded
        early = self.early.pop(key, {})
        for producer, value in unpack(arrivals) or ():  # (they came with the message)
            early[producer] = value
        run_here = StepRun(
            self, key, token, plan, peers, unpack(step), unpack(feeds), trace,
            early, near, inline,
        )  # fmt: skip
        self.runs[key] = run_here
        self.counts["steps"] += 1
        try:
            return await run_here.run()
        except asyncio.CancelledError:
            return {"status": "aborted"}
        except PeerLost as exc:
            return {"status": "peer-lost", "peer": exc.address, "error": str(exc)}
        finally:
            self.runs.pop(key, None)
            self._end(key)

    def channel(self, comm: Any = None) -> dict[str, Any]:
        """``daskgraph_step_channel``: where this worker's step channel listens, and its key
        (only over a connection :func:`~daskgraph.runtime.worker.comm_check.check_comm`
        lets in)."""
        self._check_comm(comm, "daskgraph_step_channel")
        return self.channels.endpoint()

    def stage(self, comm: Any = None, **message: Any) -> int:
        """``daskgraph_step_stage``: keep feed values (``values``: token -> value) for the
        partitions of ``session`` that will run here, and drop those named in ``drop`` (their
        run failed); returns how many are waiting.

        >>> from types import SimpleNamespace as Stub
        >>> from daskgraph.runtime.worker.worker_state import WorkerState
        >>> service = Stub(state=WorkerState(), _check_comm=lambda comm, handler: None)
        >>> StepService.stage(service, session="s", values={"t1": 1.5, "t2": 2.5})
        2
        >>> StepService.stage(service, session="s", drop=["t1"])
        1
        """
        self._check_comm(comm, "daskgraph_step_stage")
        fields = open_envelope(message)
        staged = self.state.session(fields["session"]).staged
        staged.update(unpack(fields.get("values")) or {})
        for token in fields.get("drop") or ():
            staged.pop(token, None)
        return len(staged)

    def serve_channel(self, message: dict[str, Any]) -> dict[str, Any]:
        """A step channel's message, on the worker's executor (one hand-off for the whole
        step, from the channel's thread): :meth:`step_now`, or ``status`` ``paused`` without
        running anything while Dask has paused the worker (as it starts no task then), so
        that the client takes the other path."""
        if self.worker.status.name == "paused":
            self.counts["paused"] += 1
            return {"status": "paused"}
        return self.step_now(message)

    def quick(self, message: dict[str, Any]) -> bool:
        """Whether a channel's step is answered in the channel's thread rather than handed
        to the executor: every partition of it here may run on the event loop
        (:meth:`inline`: predictable, changes no state, last run under the inline limit), so
        the hand-off (a thread's wake-up; on a busy machine, more than the step) would cost
        more than the step, which holds the thread no longer than the loop would be held.
        A step that updates a variable, or whose partitions are long or not timed yet, runs
        on the executor.

        >>> from types import SimpleNamespace as Stub
        >>> from daskgraph.runtime.worker.worker_state import WorkerState
        >>> service = Stub(state=WorkerState(), inline=lambda token, part: True)
        >>> StepService.quick(service, {"session": "s", "token": "t"})  # (not loaded)
        False
        """
        if message.get("load") is not None:
            return False
        loaded = self.state.session(message["session"]).steps.get(message["token"])
        if loaded is None:
            return False
        token = message["token"]
        return all(self.inline(token, part) for part in loaded[0].parts)

    def step_now(self, message: dict[str, Any]) -> dict[str, Any]:
        """A step that came through a step channel, run in the calling thread (one of the
        worker's executor's): every partition here, in order, with what rode along in the
        message. The reply is :meth:`step`'s, its tensors for workers in the client's
        process ``forward``-ed in it (a one-round step sends nothing to other workers)."""
        session, token = message["session"], message["token"]
        programs = self.state.session(session).steps
        if message.get("load") is not None:
            programs[token] = message["load"]
        loaded = programs.get(token)
        if loaded is None:
            return {"status": "missing"}
        plan = loaded[0]
        self.counts["steps"] += 1
        self.counts["channel steps"] += 1
        run = OrderedStep(token, message["step"], message["feeds"], message["trace"])
        for producer, value in message.get("arrivals") or ():
            self.counts["received"] += 1
            run.receive(producer, value)
        run.run((self, part) for part in plan.parts)
        forward = [
            (worker, part.index, run.sent(part, worker))
            for part in plan.parts
            for worker, _ in part.sends
        ]
        return reply_of(plan.parts, run.results, run.trace, run.timing, forward)

    def close(self) -> None:
        """The worker closes (Dask calls its extensions' ``close``): stop the step channel."""
        self.channels.close()

    def recv(self, comm: Any = None, **message: Any) -> str:
        """``daskgraph_step_recv``: the outputs of a partition on another worker (fields
        ``session``, ``run``, ``producer``, ``value`` and the ``sender``'s address)."""
        self._check_comm(comm, "daskgraph_step_recv")
        fields = open_envelope(message)
        self._received(**fields)
        return "OK"

    def _received(self, session: str, run: str, producer: int, value: Any, sender: str) -> None:
        self.counts["received"] += 1
        self.counts[f"from {sender}"] += 1
        self.deliver((session, run), producer, unpack(value))

    def abort(self, comm: Any = None, *, session: str, run: str) -> str:
        """``daskgraph_step_abort``: the client gave run ``run`` up."""
        self._check_comm(comm, "daskgraph_step_abort")
        key = (session, run)
        self._end(key)
        found = self.runs.get(key)
        if found is not None:
            found.cancel()
        return "OK"

    def forget(self, comm: Any = None, *, session: str, tokens: list[str]) -> str:
        """``daskgraph_step_forget``: drop loaded plans of ``session``."""
        self._check_comm(comm, "daskgraph_step_forget")
        programs = self.state.session(session).steps
        for token in tokens:
            programs.pop(token, None)
        dropped = set(tokens)
        for known in [k for k in self.durations if k[0] in dropped]:
            del self.durations[known]
        for known in [k for k in self.changing if k[0] in dropped]:
            del self.changing[known]
        return "OK"

    def close_session(self, session: str) -> None:
        """Drop what arrived for ``session``'s runs (the session closed)."""
        for key in [k for k in self.early if k[0] == session]:
            del self.early[key]

    # -- what a StepRun needs (StepHost) ------------------------------------------------------
    def deliver(self, key: tuple, producer: int, value: Any) -> None:
        """Hand a producer's outputs to its run here (or keep them until the run starts)."""
        found = self.runs.get(key)
        if found is not None:
            found.deliver(producer, value)
        elif key not in self.ended:
            self.early.setdefault(key, {})[producer] = value

    def capture(self, address: str, key: tuple, producer: int, value: Any) -> bool:
        """Keep ``value`` for the client's message to the worker at ``address`` if that is
        not sent yet (see :attr:`outbox`); whether it was kept."""
        box = self.outbox.get(key)
        if box is None or address not in box:
            return False
        box[address].append((producer, value))
        self.counts["sent"] += 1
        return True

    async def send(self, address: str, key: tuple, producer: int, value: Any) -> None:
        """Deliver to the worker at ``address``: by reference in this process, else through
        this worker's connection pool (Dask's comm)."""
        self.counts["sent"] += 1
        local = local_service(address)
        if local is not None:
            local.counts["received"] += 1
            local.counts[f"from {self.address}"] += 1
            if local.loop is asyncio.get_running_loop():
                local.deliver(key, producer, value)
            else:
                local.loop.call_soon_threadsafe(local.deliver, key, producer, value)
            return
        session, run = key
        try:
            fields = dict(session=session, run=run, producer=producer, sender=self.address)
            fields["value"] = pack(value, await self._same_host(address))
            await self.worker.rpc(address).daskgraph_step_recv(**envelope(fields), reply=False)
        except (OSError, ConnectionError) as exc:  # CommClosedError is an OSError
            raise PeerLost(address, exc) from exc

    async def _same_host(self, address: str) -> bool:
        """Whether the worker at ``address`` runs on this machine and sees its shared memory
        folder (asked once: what its step channel reports), so that large host arrays to it
        go through shared memory."""
        if address not in self._hosts:
            try:
                endpoint = await self.worker.rpc(address).daskgraph_step_channel()
                self._hosts[address] = (endpoint.get("host"), endpoint.get("shared")) == (
                    host_identity(),
                    folder_identity(),
                )
            except Exception:  # (an older worker, or gone: its arrays go as frames)
                return False
        return self._hosts[address]

    async def in_thread(self, fn: Callable[[], Any]) -> Any:
        """``fn()`` on the worker's threads (its executor, as its tasks)."""
        return await asyncio.get_running_loop().run_in_executor(self.worker.executor, fn)

    def small(self, token: str, part: StepPart) -> bool:
        """Whether ``part`` is predictable and its previous run took less than the inline
        limit (a first run goes to a thread: its length is not known yet): small enough to
        run in a caller's thread before or after others, where a hand-off would cost more."""
        if not part.predictable:
            return False
        last = self.durations.get((token, part.index))
        return last is not None and last < self.inline_limit

    def inline(self, token: str, part: StepPart) -> bool:
        """Whether ``part`` may run on the event loop: it is :meth:`small` and changes no
        state (:func:`~daskgraph.runtime.worker.variable_steps.changes_state`: an update
        waits for its variables' locks, on a thread)."""
        if not self.small(token, part):
            return False
        key = (token, part.index)
        changing = self.changing.get(key)
        if changing is None:
            changing = self.changing[key] = changes_state(part.program)
        return not changing

    def ran(self, token: str, part: StepPart, seconds: float) -> None:
        """Remember ``part``'s latest run time."""
        self.durations[(token, part.index)] = seconds

    def _end(self, key: tuple) -> None:
        """Mark run ``key`` ended: drop what arrived for it, and ignore what still comes."""
        self.early.pop(key, None)
        self.ended[key] = None
        while len(self.ended) > ENDED_RUNS:
            self.ended.popitem(last=False)
