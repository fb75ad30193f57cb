"""The client side of a run: ship a plan's programs once, submit each run, and never hang.

A :class:`CompiledRun` is a lowered plan whose partition programs have been sent to the
workers that run them (one task per program, restricted to its device's worker, kept as
futures): repeated runs then send only the feeds and the task graph, not the programs, and the
constants inside them cross the network once per session. Being tasks, not scattered data, a
program lost with its worker is sent again by Dask itself to the worker restarted under the
device's name. :func:`submit_run` sends a run's large feeds ahead to the workers that read
them (through their step service, :class:`FeedStager`, never scattered: scattered data lost
with a worker is an error to Dask's scheduler), builds the run's graph, submits it, and
waits for it with a watchdog: while the run is pending it checks every ``tick`` seconds that
the workers of the plan's devices are still in the cluster (a
:class:`~daskgraph.cluster.liveness.ClusterWatch`, which asks the scheduler only after a worker
came or
went), so that a vanished device fails the run within seconds instead of leaving its tasks in
Dask's ``no-worker`` state forever. Partitions are restricted to their workers by name, so a
plan stays valid when a nanny restarts a worker under its device's name.

This is the scheduler's path (:class:`~daskgraph.runtime.client.executors.SchedulerExecutor`):
plans that compiled steps cannot take (a plan that may block, workers without daskgraph's
handlers), every run with ``daskgraph.compiled-steps: false``, and runs after a failure that
was not a lost worker.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import logging
import uuid
from collections.abc import Sequence
from typing import Any

import dask
import distributed
from dask.highlevelgraph import HighLevelGraph, MaterializedLayer
from distributed import Client, Future
from distributed.client import FutureCancelledError, FuturesCancelledError

from daskgraph.cluster.liveness import ClusterWatch
from daskgraph.cluster.shutdown import end_quietly_at_exit
from daskgraph.errors import CancelledError as RunCancelledError
from daskgraph.errors import DeadlineExceededError, UnavailableError
from daskgraph.framework.op_registry import blocking_types
from daskgraph.runtime.client.inprocess import private_feed
from daskgraph.runtime.client.run_watch import RunWatch, raise_if_devices_left, workers_now
from daskgraph.runtime.planner.lowering import Plan, build_task_graph, task_group
from daskgraph.runtime.planner.step_split import worker_steps
from daskgraph.runtime.program import RunStep, StagedFeed, WorkerStep
from daskgraph.runtime.worker.execution import RunFailure, execute_partition, resident
from daskgraph.runtime.worker.step_service import local_service
from daskgraph.runtime.worker.wire import envelope, pack

__all__ = [
    "CompiledRun",
    "FeedStager",
    "fire",
    "in_span",
    "submit_run",
]

logger = logging.getLogger("daskgraph.runtime.client.dispatch")

#: Feeds of at least this many bytes are sent ahead to the workers that read them, straight
#: from the client to their step service (:class:`FeedStager`), not inside the run's graph:
#: 1 MiB, where a message costs about what a round trip does, and below which a feed would
#: also sit in Dask's logs of batched messages (:mod:`daskgraph.cluster.footprint`). Read at
#: each run through this module, so a test may patch it.
DIRECT_FEED_BYTES = 1 << 20


@functools.cache
def _span_annotation() -> Any:
    with distributed.span("daskgraph"):
        return dask.get_annotations()["span"]


def in_span() -> Any:
    """A context in which tasks submitted belong to the one ``daskgraph`` span of this process.

    Dask puts tasks without a span in a *default* span, and starts a new one (a new id)
    whenever the previous one has no task left: for a program that runs a graph every few
    milliseconds, that is one span per run, each kept by the scheduler and adding its metrics
    to every worker for good. daskgraph's tasks instead share one span, entered once through
    ``distributed.span`` and reused: on the dashboard they show as ``daskgraph``.
    """
    return dask.annotate(span=_span_annotation())


class CompiledRun:
    """A plan, and the futures of its programs resident on their workers."""

    def __init__(self, plan: Plan) -> None:
        self.plan = plan
        self.token = uuid.uuid4().hex
        self.number = 0  # the session's number for it (the dashboard's "plan N")
        self._programs: list[Future] | None = None

    @functools.cached_property
    def blocking(self) -> bool:
        """Whether an op of the plan may wait for another run (a queue's dequeue, see
        :func:`~daskgraph.framework.op_registry.mark_blocking`): compiled steps leave it to
        the scheduler's path (unless it runs in this process)."""
        types = blocking_types()
        return any(
            ins.op_type in types for p in self.plan.partitions for ins in p.program.instructions
        )

    @functools.cached_property
    def worker_steps(self) -> dict[str, WorkerStep]:
        """The plan split by worker for compiled steps
        (:func:`~daskgraph.runtime.planner.step_split.worker_steps`)."""
        return worker_steps(self.plan)

    @functools.cached_property
    def feed_indices(self) -> dict[str, frozenset[int]]:
        """The feeds each worker's partitions read, by worker name (once per plan)."""
        return {
            name: frozenset(i for part in step.parts for i in part.feed_indices)
            for name, step in self.worker_steps.items()
        }

    def program_futures(self, client: Client) -> list[Future]:
        """The programs' futures, sending (again) what is not on its worker."""
        programs = self._programs
        if programs is None or any(f.status != "finished" for f in programs):
            programs = self._programs = self._ship(client)
        return programs

    def forget_programs(self) -> None:
        """Drop the programs' futures, so the next run ships them again."""
        self._programs = None

    def _ship(self, client: Client) -> list[Future]:
        """One task per program, restricted to its partition's worker, all in one graph.

        A program's key is in its device's task group, as the runs' tasks are
        (:func:`~daskgraph.runtime.planner.lowering.task_group`): held as a future, it keeps that
        group alive
        between runs, so that the scheduler does not make a new group for every run (which
        distributed's span extension would keep for good).
        """
        ship = uuid.uuid4().hex[:8]
        layers = {}
        keys = []
        for p in self.plan.partitions:
            key = (task_group(p.device), f"program-{self.token[:12]}-{ship}", p.index)
            layers[f"dg-program-{key[1]}-{p.index}"] = MaterializedLayer(
                {key: (resident, p.program)},
                annotations={"workers": [p.worker], "allow_other_workers": False},
            )
            keys.append(key)
        graph = HighLevelGraph(layers, {name: set() for name in layers})
        with in_span():
            return client.get(graph, keys, sync=False)


class FeedStager:
    """Sends the large feeds of a run on the scheduler's path ahead to the workers that read
    them, through their step service (``daskgraph_step_stage``: Dask's comm, straight from
    the client; a worker of this process is handed them directly, each copied as a transport
    would), and drops those a failed run left behind.

    A send is watched with the worker's address as the run started: when its worker leaves
    or is replaced, it fails within a liveness tick with
    :class:`~daskgraph.errors.UnavailableError` naming the device, and the session recovers.
    A send that fails while its worker stays makes :meth:`stage` return False, and the
    values travel in the run's graph instead.
    """

    def __init__(self, client: Client, watch: ClusterWatch, session_id: str) -> None:
        self.client, self.watch, self.session_id = client, watch, session_id

    def stage(
        self, plan: Plan, worker: Any, address: str, values: dict[str, Any], tick: float
    ) -> bool:
        """Send feed ``values`` (token -> value) ahead to ``worker`` (at ``address``) for the
        run's partition there (:class:`~daskgraph.runtime.program.StagedFeed`). Returns
        whether they are there. Raises UnavailableError when the worker left or was
        replaced, and what a run's deadline or cancellation raise."""
        local = local_service(address)
        if local is not None:
            local.stage(session=self.session_id, values={t: private_feed(v) for t, v in
                                                          values.items()})  # fmt: skip
            return True
        fields = envelope({"session": self.session_id, "values": pack(values)})

        async def send() -> Any:
            return await self.client.rpc(address).daskgraph_step_stage(**fields)

        future = asyncio.run_coroutine_threadsafe(send(), self.client.loop.asyncio_loop)
        started = {worker: address}
        watch = RunWatch(self.watch, plan, started, tick, future.cancel, "the feeds sent ahead")
        try:
            watch.wait(future.result)
        except (UnavailableError, DeadlineExceededError, RunCancelledError):
            raise
        except Exception as exc:  # the send failed: its worker died, or something else
            watch.raise_if_left(exc)
            logger.warning("could not send feeds ahead to %s (%r); sending them in the graph",
                           worker, exc)  # fmt: skip
            return False
        return True

    def unstage(self, address: str, tokens: list[str]) -> None:
        """Drop staged values no partition will take (a run that failed) where the worker
        still runs; nothing is waited for."""
        if not tokens:
            return
        local = local_service(address)
        if local is not None:
            local.stage(session=self.session_id, drop=tokens)  # (a dict: no loop needed)
            return
        fields = envelope({"session": self.session_id, "drop": tokens})
        fire(self.client, address, "daskgraph_step_stage", **fields)


def submit_run(
    client: Client,
    watch: ClusterWatch,
    compiled: CompiledRun,
    key_prefix: str,
    step: RunStep,
    feed_values: Sequence[Any],
    trace: bool,
    tick: float,
    stager: FeedStager | None = None,
) -> dict[int, tuple]:
    """Run ``compiled`` once; partition index -> its outputs (results, or all when tracing).

    Feeds of at least :data:`DIRECT_FEED_BYTES` are sent ahead to the workers that read
    them by ``stager`` (:meth:`FeedStager.stage`); without a stager, or where it cannot,
    they travel in the run's graph like smaller ones.

    Raises the error a partition returned, or :class:`~daskgraph.errors.UnavailableError`
    naming the devices whose workers left the cluster during the run (noticed by the
    watchdog, or as lost data that cancelled the run, or a worker that refused a send). A
    program released while its worker stayed is sent again, once.
    """
    args = (client, watch, compiled, key_prefix, step, feed_values, trace, tick, stager)
    try:
        return _submit_once(*args)
    except UnavailableError:
        raise
    except (FutureCancelledError, FuturesCancelledError, KeyError, OSError, ValueError) as exc:
        raise_if_devices_left(watch, compiled.plan, [], exc)
        if not isinstance(exc, (FutureCancelledError, FuturesCancelledError)):
            raise
        compiled.forget_programs()
        return _submit_once(*args)


def _submit_once(
    client: Client,
    watch: ClusterWatch,
    compiled: CompiledRun,
    key_prefix: str,
    step: RunStep,
    feed_values: Sequence[Any],
    trace: bool,
    tick: float,
    stager: FeedStager | None,
) -> dict[int, tuple]:
    plan = compiled.plan
    end_quietly_at_exit()  # a daemon thread at exit submits nothing to a closing scheduler
    started = workers_now(watch, plan)  # raises at once if a device's worker is missing
    programs = compiled.program_futures(client)
    staged = _stage_large_feeds(stager, plan, started, key_prefix, feed_values, tick)
    try:
        dsk, keys = build_task_graph(
            plan,
            key_prefix,
            step,
            feed_values,
            execute_partition,
            trace,
            programs=programs,
            sent_feeds={i: StagedFeed(token) for i, (token, _) in staged.items()},
        )
        # with tracing, every partition reports where it ran; otherwise only results matter
        parts = range(len(plan.partitions)) if trace else plan.result_partitions
        with in_span():
            futures = client.get(dsk, [keys[i] for i in parts], sync=False)
        try:
            gathered = [
                _result_watching_workers(watch, plan, futures, f, tick, started) for f in futures
            ]
        finally:
            del futures
    except BaseException:
        _unstage(stager, started, staged)
        raise
    for result in gathered:
        if isinstance(result, RunFailure):
            _unstage(stager, started, staged)  # a partition that passes a failure on takes nothing
            raise result.error
    return dict(zip(parts, gathered, strict=True))


def _stage_large_feeds(
    stager: FeedStager | None,
    plan: Plan,
    started: dict[Any, str | None],
    key_prefix: str,
    feed_values: Sequence[Any],
    tick: float,
) -> dict[int, tuple[str, list[Any]]]:
    """Send each feed of at least :data:`DIRECT_FEED_BYTES` ahead to every worker that
    reads it; feed position -> (token, workers) of those sent. Smaller feeds, and any that
    could not be sent, travel inside the graph."""
    threshold = DIRECT_FEED_BYTES
    readers: dict[int, list[Any]] = {}
    for p in plan.partitions:
        for i in p.feed_indices:
            if getattr(feed_values[i], "nbytes", 0) >= threshold:
                readers.setdefault(i, []).append(p.worker)
    if stager is None or not readers:
        return {}
    staged: dict[int, tuple[str, list[Any]]] = {}
    failed: set[int] = set()
    for worker in dict.fromkeys(w for ws in readers.values() for w in ws):
        mine = [i for i, ws in readers.items() if worker in ws and i not in failed]
        values = {f"{key_prefix}-feed-{i}": feed_values[i] for i in mine}
        if stager.stage(plan, worker, str(started[worker]), values, tick):
            for i in mine:
                staged.setdefault(i, (f"{key_prefix}-feed-{i}", []))[1].append(worker)
        else:
            failed.update(mine)
    if failed:  # those travel in the graph: drop the copies some workers already have
        _unstage(stager, started, {i: staged.pop(i) for i in failed if i in staged})
    return staged


def _unstage(
    stager: FeedStager | None,
    started: dict[Any, str | None],
    staged: dict[int, tuple[str, list[Any]]],
) -> None:
    """Drop staged values that no partition took (their run failed)."""
    by_worker: dict[Any, list[str]] = {}
    for token, workers in staged.values():
        for worker in workers:
            by_worker.setdefault(worker, []).append(token)
    for worker, tokens in by_worker.items():
        stager.unstage(str(started[worker]), tokens)  # type: ignore[union-attr]


def _result_watching_workers(
    watch: ClusterWatch,
    plan: Plan,
    futures: list[Future],
    future: Future,
    tick: float,
    started: dict[Any, str | None] | None = None,
) -> Any:
    """The result of ``future``, checking every ``tick`` that the plan's workers are there
    (a :class:`~daskgraph.runtime.client.run_watch.RunWatch`, which cancels the run's
    ``futures`` when it raises).

    The result is gathered in the background (:func:`_gathering`) and polled, not asked for
    with ``Future.result(timeout=tick)``: the client batches the gathers of all threads into
    one request, and a waiter that times out while attached to it cancels it for every thread
    (another tower's run then fails with an ``UnboundLocalError`` out of Dask's ``sync``).
    """
    pending = [_gathering(future)]

    def result(timeout: float) -> Any:
        try:
            return pending[0].result(timeout=timeout)
        except concurrent.futures.CancelledError:
            if not pending[0].cancelled():
                raise  # the future itself was cancelled (FutureCancelledError)
            pending[0] = _gathering(future)  # another thread's waiter cancelled the gather
            raise TimeoutError from None

    return RunWatch(watch, plan, started, tick, None, "the partitions of the run", futures).wait(
        result
    )


def _gathering(future: Any) -> Any:
    """A ``concurrent.futures.Future`` of ``future``'s value, gathered on the client's event
    loop; waiting on it with a timeout cancels nothing. Anything other than a Dask future (a
    stand-in in tests) is returned as it is: it has the same ``result(timeout)``."""
    if not isinstance(future, Future):
        return future
    client = future.client
    gather = client.gather(future, asynchronous=True)  # the coroutine, run on the loop below
    return asyncio.run_coroutine_threadsafe(gather, client.loop.asyncio_loop)


def fire(client: Client, address: str, op: str, **kwargs: Any) -> None:
    """Send ``op`` to the worker at ``address`` without waiting for it (a worker that is gone
    has nothing left to drop)."""

    async def send() -> None:
        try:
            await getattr(client.rpc(address), op)(**kwargs)
        except Exception:  # the worker is gone: it has nothing left to drop
            logger.debug("%s to %s failed", op, address, exc_info=True)

    asyncio.run_coroutine_threadsafe(send(), client.loop.asyncio_loop)
