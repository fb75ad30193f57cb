"""The client side of a run: ship a plan's programs once, submit each run, and never hang.

A :class:`CompiledRun` is a lowered plan whose partition programs have been sent to the
workers that run them (one task per program, restricted to its device's worker, kept as
futures): repeated runs then send only the feeds and the task graph, not the programs, and the
constants inside them cross the network once per session. Being tasks, not scattered data, a
program lost with its worker is sent again by Dask itself to the worker restarted under the
device's name. :func:`submit_run` sends a run's large feeds ahead to the workers that read
them (through the session's executor actors, never scattered: scattered data lost with a
worker is an error to Dask's scheduler), builds the run's graph, submits it, and
waits for it with a watchdog: while the run is pending it checks every ``tick`` seconds that
the workers of the plan's devices are still in the cluster (a
:class:`~daskgraph.cluster.liveness.ClusterWatch`, which asks the scheduler only after a worker
came or
went), so that a vanished device fails the run within seconds instead of leaving its tasks in
Dask's ``no-worker`` state forever. Partitions are restricted to their workers by name, so a
plan stays valid when a nanny restarts a worker under its device's name.

:class:`FastPath` is the shortcut for the commonest case, a plan of one partition (everything
on one device): the run is one direct call to an executor actor living on that device's worker,
and the scheduler is not involved at all (``daskgraph.fast-path``; on by default). Plans that
span devices keep the scheduler's path, which moves data between workers.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import logging
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import dask
import dask.config
import distributed
from dask.highlevelgraph import HighLevelGraph, MaterializedLayer
from distributed import Client, Future
from distributed.client import FutureCancelledError, FuturesCancelledError

from daskgraph.cluster.liveness import ClusterWatch
from daskgraph.cluster.shutdown import end_quietly_at_exit
from daskgraph.deadline import raise_if_past, wait_time
from daskgraph.errors import CancelledError as RunCancelledError
from daskgraph.errors import DeadlineExceededError, UnavailableError
from daskgraph.framework.op_registry import blocking_types
from daskgraph.runtime.planner.lowering import Plan, build_task_graph, task_group
from daskgraph.runtime.planner.step_split import worker_steps
from daskgraph.runtime.program import RunStep, StagedFeed, WorkerStep
from daskgraph.runtime.worker.execution import (
    MISSING_PROGRAM,
    PartitionExecutor,
    RunFailure,
    execute_partition,
    pack_small,
    resident,
    unpack,
)

__all__ = [
    "CompiledRun",
    "FastPath",
    "in_span",
    "raise_if_devices_left",
    "submit_run",
    "workers_now",
]

logger = logging.getLogger("daskgraph.runtime.client.dispatch")


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
        :func:`~daskgraph.framework.op_registry.mark_blocking`): the fast path's actor must not run
        it."""
        types = blocking_types()
        return any(
            ins.op_type in types for p in self.plan.partitions for ins in p.program.instructions
        )

    @functools.cached_property
    def worker_steps(self) -> dict[str, WorkerStep]:
        """The plan split by worker for compiled steps
        (:func:`~daskgraph.runtime.planner.step_split.worker_steps`)."""
        return worker_steps(self.plan)

    @property
    def single_partition(self) -> bool:
        """Whether the plan has exactly one partition (the fast path can run it)."""
        return len(self.plan.partitions) == 1

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


@dataclass
class _Executor:
    """The executor actor of a session on one worker, where it lives, and what it holds."""

    actor: Any
    address: str
    loaded: set[str] = field(default_factory=set)


class FastPath:
    """One :class:`~daskgraph.runtime.worker.execution.PartitionExecutor` actor per worker, for a
    session.

    Runs one-partition plans by calling the actor of their worker directly (client to worker,
    no scheduler) when the client talks to workers directly (``direct_to_workers``, as the
    embedded cluster's client does); otherwise Dask relays actor calls through the scheduler.
    The actors also take the large feeds of multi-device runs ahead of the run's tasks
    (:meth:`stage`).

    An actor is bound to the worker *address* it was made on: a worker restarted by its nanny
    (same device name, new address) gets a new one. Every call is watched with that address:
    when its worker leaves or is replaced, the call fails within a liveness tick with
    :class:`~daskgraph.errors.UnavailableError` naming the device, and the session recovers
    (instead of waiting for Dask to give up connecting to the dead address, 30 s). An actor
    that fails while its worker stays makes :meth:`run` return ``None``, and the caller takes
    the scheduler's path.
    """

    def __init__(self, client: Client, watch: ClusterWatch, session_id: str) -> None:
        self.client = client
        self.watch = watch
        self.session_id = session_id
        self._actors: dict[Any, _Executor] = {}

    def _executor(self, worker: Any, plan: Plan, tick: float) -> _Executor:
        """The actor on ``worker`` as it is now: made on first use, and made again when the
        worker was replaced since. Raises UnavailableError if the worker is gone."""
        now = workers_now(self.watch, plan)
        executor = self._actors.get(worker)
        if executor is not None and executor.address == now[worker]:
            return executor
        self.forget(worker)
        with in_span():
            future = self.client.submit(
                PartitionExecutor,
                actor=True,
                workers=[worker],
                allow_other_workers=False,
                pure=False,
            )
        with self.client.as_current():  # the actor's handle binds to the current client
            actor = _result_watching_workers(self.watch, plan, [future], future, tick, now)
        where = self.client.who_has(future).get(future.key) or [now[worker]]
        executor = self._actors[worker] = _Executor(actor, where[0])
        return executor

    def run(
        self,
        compiled: CompiledRun,
        step: RunStep,
        feed_values: Sequence[Any],
        trace: bool,
        tick: float,
    ) -> dict[int, tuple] | None:
        """Run a one-partition plan through its worker's actor: ``{0: results}``, or
        ``None`` when the scheduler's path must run it instead (the actor failed while its
        worker stayed). Raises UnavailableError when the worker left or was replaced."""
        (partition,) = compiled.plan.partitions
        worker = partition.worker
        feeds = tuple(feed_values[i] for i in partition.feed_indices)
        executor = None
        try:
            executor = self._executor(worker, compiled.plan, tick)
            result = self._call(executor, compiled, step, feeds, trace, tick)
        except (UnavailableError, DeadlineExceededError, RunCancelledError):
            self.forget(worker)  # a timed-out actor may still be busy: the next run makes anew
            raise
        except Exception as exc:  # the actor failed: its worker died, or something else
            self._failed(worker, executor, compiled.plan, exc, tick)
            return None
        if isinstance(result, str):
            return None
        if isinstance(result, RunFailure):
            raise result.error
        return {0: result}

    def _call(
        self,
        executor: _Executor,
        compiled: CompiledRun,
        step: RunStep,
        feeds: tuple,
        trace: bool,
        tick: float,
    ) -> Any:
        """Load the program if the actor lacks it, and run it; watched with the actor's
        address."""
        (partition,) = compiled.plan.partitions
        started = {partition.worker: executor.address}
        actor, result = executor.actor, None
        for _ in range(2):  # a second time if the actor had dropped the program
            if compiled.token not in executor.loaded:
                load = actor.load(self.session_id, compiled.token, partition.program)
                _actor_result_watching(self.watch, compiled.plan, load, tick, started)
                executor.loaded.add(compiled.token)
            args = (compiled.token, step, feeds, trace)
            packed = pack_small(args, arrays=feeds)  # small feeds: one frame, not four
            call = actor.run_packed(packed) if packed is not args else actor.run(*args)
            result = unpack(_actor_result_watching(self.watch, compiled.plan, call, tick, started))
            if not (isinstance(result, str) and result == MISSING_PROGRAM):
                break
            executor.loaded.discard(compiled.token)
        return result

    def stage(self, plan: Plan, worker: Any, values: dict[str, Any], tick: float) -> bool:
        """Send feed ``values`` (token -> value) ahead to ``worker`` for the run's partition
        there (:class:`~daskgraph.runtime.program.StagedFeed`). Returns whether they are there;
        False
        when the actor failed while its worker stayed (the values must travel in the run's
        graph instead). Raises UnavailableError when the worker left or was replaced."""
        executor = None
        try:
            executor = self._executor(worker, plan, tick)
            call = executor.actor.stage(self.session_id, values)
            _actor_result_watching(self.watch, plan, call, tick, {worker: executor.address})
        except UnavailableError:
            self.forget(worker)
            raise
        except Exception as exc:
            self._failed(worker, executor, plan, exc, tick)
            return False
        return True

    def unstage(self, worker: Any, tokens: list[str]) -> None:
        """Drop staged values no partition will take, where the worker still runs (a run
        that failed); nothing is waited for."""
        executor = self._actors.get(worker)
        if executor is None or not tokens:
            return
        try:
            if self.watch.view().addresses([worker])[worker] == executor.address:
                executor.actor.unstage(self.session_id, tokens)
        except Exception:  # the cluster is going away: nothing is left to drop
            logger.debug("could not drop staged feeds on %s", worker, exc_info=True)

    def _failed(
        self, worker: Any, executor: _Executor | None, plan: Plan, exc: Exception, tick: float
    ) -> None:
        """After an actor call raised: UnavailableError if its worker left or was replaced
        (waiting up to a tick for the scheduler to say so: the call may notice first),
        otherwise a warning; the actor is dropped either way."""
        self.forget(worker)
        if executor is not None:
            address = executor.address
            self.watch.wait_until(lambda view: view.addresses([worker])[worker] != address, tick)
            raise_if_devices_left(self.watch, plan, [], exc, started={worker: address})
        logger.warning("fast path to %s unavailable (%r); using the scheduler", worker, exc)

    def release(self, compiled: CompiledRun) -> None:
        """Free ``compiled``'s program where an actor loaded it (a plan the session's cache
        evicted); nothing is waited for, and a worker that is gone has nothing to free."""
        compiled.forget_programs()
        for executor in list(self._actors.values()):
            if compiled.token in executor.loaded:
                executor.loaded.discard(compiled.token)
                try:
                    executor.actor.forget(self.session_id, [compiled.token])
                except Exception:  # the cluster is going away: nothing is left to free
                    logger.debug("could not free a program on %s", executor.address)

    def forget(self, worker: Any = None) -> None:
        """Drop the actor of ``worker`` (all actors when None)."""
        for w in [worker] if worker is not None else list(self._actors):
            self._actors.pop(w, None)


def _actor_result_watching(
    watch: ClusterWatch,
    plan: Plan,
    call: Any,
    tick: float,
    started: dict[Any, str | None],
) -> Any:
    """The result of an actor call, raising UnavailableError within a tick once a worker of
    ``started`` (the actor's) left or was replaced."""
    while True:
        try:
            return call.result(timeout=wait_time(tick))
        except TimeoutError:
            raise_if_past("an actor's run of the partition")
            raise_if_devices_left(watch, plan, [], started=started, max_age=tick)


def submit_run(
    client: Client,
    watch: ClusterWatch,
    compiled: CompiledRun,
    key_prefix: str,
    step: RunStep,
    feed_values: Sequence[Any],
    trace: bool,
    tick: float,
    stager: FastPath | None = None,
) -> dict[int, tuple]:
    """Run ``compiled`` once; partition index -> its outputs (results, or all when tracing).

    Feeds of at least ``daskgraph.direct-feed-bytes`` are sent ahead to the workers that read
    them by ``stager``'s actors (:meth:`FastPath.stage`); without a stager, or where it
    cannot, they travel in the run's graph like smaller ones.

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
    stager: FastPath | None,
) -> dict[int, tuple]:
    plan = compiled.plan
    end_quietly_at_exit()  # a daemon thread at exit submits nothing to a closing scheduler
    started = workers_now(watch, plan)  # raises at once if a device's worker is missing
    programs = compiled.program_futures(client)
    staged = _stage_large_feeds(stager, plan, key_prefix, feed_values, tick)
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
        _unstage(stager, staged)
        raise
    for result in gathered:
        if isinstance(result, RunFailure):
            _unstage(stager, staged)  # a partition that passes a failure on takes nothing
            raise result.error
    return dict(zip(parts, gathered, strict=True))


def _stage_large_feeds(
    stager: FastPath | None,
    plan: Plan,
    key_prefix: str,
    feed_values: Sequence[Any],
    tick: float,
) -> dict[int, tuple[str, list[Any]]]:
    """Send each feed of at least ``daskgraph.direct-feed-bytes`` ahead to every worker that
    reads it; feed position -> (token, workers) of those sent. Smaller feeds, and any that
    could not be sent, travel inside the graph."""
    threshold = int(dask.config.get("daskgraph.direct-feed-bytes"))
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
        if stager.stage(plan, worker, values, tick):
            for i in mine:
                staged.setdefault(i, (f"{key_prefix}-feed-{i}", []))[1].append(worker)
        else:
            failed.update(mine)
    if failed:  # those travel in the graph: drop the copies some workers already have
        _unstage(stager, {i: staged.pop(i) for i in failed if i in staged})
    return staged


def _unstage(stager: FastPath | None, staged: dict[int, tuple[str, list[Any]]]) -> None:
    """Drop staged values that no partition took (their run failed)."""
    by_worker: dict[Any, list[str]] = {}
    for token, workers in staged.values():
        for worker in workers:
            by_worker.setdefault(worker, []).append(token)
    for worker, tokens in by_worker.items():
        stager.unstage(worker, tokens)


def _result_watching_workers(
    watch: ClusterWatch,
    plan: Plan,
    futures: list[Future],
    future: Future,
    tick: float,
    started: dict[Any, str | None] | None = None,
) -> Any:
    """The result of ``future``, checking every ``tick`` that the plan's workers are there.

    The result is gathered in the background (:func:`_gathering`) and polled, not asked for
    with ``Future.result(timeout=tick)``: the client batches the gathers of all threads into
    one request, and a waiter that times out while attached to it cancels it for every thread
    (another tower's run then fails with an ``UnboundLocalError`` out of Dask's ``sync``).
    """
    pending = _gathering(future)
    while True:
        try:
            return pending.result(timeout=wait_time(tick))
        except concurrent.futures.CancelledError:
            if not pending.cancelled():
                raise  # the future itself was cancelled (FutureCancelledError)
            pending = _gathering(future)  # another thread's waiter cancelled the batched gather
        except (TimeoutError, concurrent.futures.TimeoutError):
            try:
                raise_if_past("the partitions of the run")
            except (DeadlineExceededError, RunCancelledError):
                future.client.cancel(futures)
                raise
            raise_if_devices_left(watch, plan, futures, started=started, max_age=tick)


def _gathering(future: Any) -> Any:
    """A ``concurrent.futures.Future`` of ``future``'s value, gathered on the client's event
    loop; waiting on it with a timeout cancels nothing. Anything other than a Dask future (a
    stand-in in tests) is returned as it is: it has the same ``result(timeout)``."""
    if not isinstance(future, Future):
        return future
    client = future.client
    gather = client.gather(future, asynchronous=True)  # the coroutine, run on the loop below
    return asyncio.run_coroutine_threadsafe(gather, client.loop.asyncio_loop)


def workers_now(watch: ClusterWatch, plan: Plan) -> dict[Any, str | None]:
    """The address of each worker of the plan as a run starts; a run must not be submitted
    while one is missing (the scheduler resolves a worker name when a task arrives: a task
    restricted to a name it does not know would wait for that name forever)."""
    raise_if_devices_left(watch, plan, [])
    return watch.view().addresses({p.worker for p in plan.partitions})


def raise_if_devices_left(
    watch: ClusterWatch,
    plan: Plan,
    futures: list[Future],
    cause: Exception | None = None,
    started: dict[Any, str | None] | None = None,
    max_age: float | None = None,
) -> None:
    """Raise UnavailableError if a worker of the plan is missing, stalled (silent for longer
    than ``daskgraph.worker-stall-timeout``), or (given the addresses at the start of the run,
    or where an actor lives) was replaced since: a restarted worker lost the run's partitions
    there, and Dask may hold them for a worker that never comes. The membership is read again
    when older than ``max_age`` seconds (a waiting run's tick). The error names the devices,
    their workers, (field ``addresses``) the dead addresses and (``stalled``) the devices of
    stalled workers; the run's futures are cancelled, so a stalled worker that wakes up runs
    nothing more of it."""
    workers = {p.worker for p in plan.partitions}
    view = watch.view(max_age=max_age)
    now = view.addresses(workers)
    started = started or {}
    gone = [
        p
        for p in plan.partitions
        if now[p.worker] is None or started.get(p.worker, now[p.worker]) != now[p.worker]
    ]
    if not gone:
        return
    missing = sorted({p.device for p in gone})
    frozen = set(view.stalled_names(workers))
    stalled = sorted({p.device for p in gone if p.worker in frozen})
    if futures:
        futures[0].client.cancel(futures)
    raise UnavailableError(
        _left_message(missing, stalled, cause),
        missing=missing,
        stalled=stalled,
        workers=sorted({str(p.worker) for p in gone}),
        addresses=sorted({a for p in gone if (a := started.get(p.worker))}),
    ) from cause


def _left_message(missing: list[str], stalled: list[str], cause: Exception | None) -> str:
    """What :func:`raise_if_devices_left` says.

    >>> print(_left_message(["/device:GPU:0"], ["/device:GPU:0"], None))  # doctest: +ELLIPSIS
    The workers of devices /device:GPU:0 left the cluster during the run; ... stopped sending...
    """
    seen = f" ({type(cause).__name__}: {cause})" if cause is not None else ""
    frozen = (
        f"; the workers of {', '.join(stalled)} stopped sending heartbeats for longer than "
        "daskgraph.worker-stall-timeout and are taken as gone"
        if stalled
        else ""
    )
    return (
        f"The workers of devices {', '.join(missing)} left the cluster during the run{seen}"
        f"{frozen}, so its partitions there cannot run. The session runs the step again once "
        "they are back (within daskgraph.worker-restart-grace), or places the graph again on "
        "the devices that remain (soft placement may move ops elsewhere)."
    )
