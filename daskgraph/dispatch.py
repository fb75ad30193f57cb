"""The client side of a run: ship a plan's programs once, submit each run, and never hang.

A :class:`CompiledRun` is a lowered plan whose partition programs have been sent to the
workers that run them (one task per program, restricted to its device's worker, kept as
futures): repeated runs then send only the feeds and the task graph, not the programs, and the
constants inside them cross the network once per session. Being tasks, not scattered data, a
program lost with its worker is sent again by Dask itself to the worker restarted under the
device's name. :func:`submit_run` builds one run's graph, submits it, and
waits for it with a watchdog: while the run is pending it checks every ``tick`` seconds that
the workers of the plan's devices are still in the cluster (a
:class:`~daskgraph.liveness.ClusterWatch`, which asks the scheduler only after a worker came or
went), so that a vanished device fails the run within seconds instead of leaving its tasks in
Dask's ``no-worker`` state forever. Partitions are restricted to their workers by name, so a
plan stays valid when a nanny restarts a worker under its device's name.

:class:`FastPath` is the shortcut for the commonest case, a plan of one partition (everything
on one device): the run is one direct call to an executor actor living on that device's worker,
and the scheduler is not involved at all (``daskgraph.fast-path``; on by default). Plans that
span devices keep the scheduler's path, which moves data between workers.
"""

from __future__ import annotations

import functools
import logging
import uuid
from collections.abc import Sequence
from typing import Any

import dask
import dask.config
import distributed
from dask.highlevelgraph import HighLevelGraph, MaterializedLayer
from distributed import Client, Future
from distributed.client import FutureCancelledError, FuturesCancelledError

from daskgraph.errors import UnavailableError
from daskgraph.execution import (
    MISSING_PROGRAM,
    PartitionExecutor,
    RunFailure,
    execute_partition,
    resident,
)
from daskgraph.liveness import ClusterWatch
from daskgraph.lowering import Plan, build_task_graph, task_group
from daskgraph.program import RunStep

__all__ = ["CompiledRun", "FastPath", "in_span", "submit_run"]

logger = logging.getLogger("daskgraph.dispatch")


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
        self._programs: list[Future] | None = None

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
        (:func:`~daskgraph.lowering.task_group`): held as a future, it keeps that group alive
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


class FastPath:
    """One :class:`~daskgraph.execution.PartitionExecutor` actor per worker, for a session.

    Runs one-partition plans by calling the actor of their worker directly (client to worker,
    no scheduler) when the client talks to workers directly (``direct_to_workers``, as the
    embedded cluster's client does); otherwise Dask relays actor calls through the scheduler,
    so runs with large feeds take the scheduler's path, where feeds are scattered straight to
    their worker. Anything that goes wrong with the actor itself (its worker restarted or
    left) makes :meth:`run` return ``None``, and the caller takes the scheduler's path.
    """

    def __init__(self, client: Client, watch: ClusterWatch, session_id: str) -> None:
        self.client = client
        self.watch = watch
        self.session_id = session_id
        self._actors: dict[Any, Any] = {}
        self._loaded: dict[Any, set[str]] = {}

    def _actor(self, worker: Any, plan: Plan, tick: float) -> Any:
        actor = self._actors.get(worker)
        if actor is None:
            with in_span():
                future = self.client.submit(
                    PartitionExecutor,
                    actor=True,
                    workers=[worker],
                    allow_other_workers=False,
                    pure=False,
                )
            with self.client.as_current():  # the actor's handle binds to the current client
                actor = _result_watching_workers(self.watch, plan, [future], future, tick)
            self._actors[worker] = actor
            self._loaded[worker] = set()
        return actor

    def run(
        self,
        compiled: CompiledRun,
        step: RunStep,
        feed_values: Sequence[Any],
        trace: bool,
        tick: float,
    ) -> dict[int, tuple] | None:
        """Run a one-partition plan through its worker's actor: ``{0: results}``, or
        ``None`` when the scheduler's path must run it instead (large feeds without direct
        connections, or an actor that is gone)."""
        (partition,) = compiled.plan.partitions
        worker = partition.worker
        feeds = tuple(feed_values[i] for i in partition.feed_indices)
        if not self.client.direct_to_workers and _has_large(feeds):
            return None  # actor calls would relay them through the scheduler: scatter instead
        try:
            actor = self._actor(worker, compiled.plan, tick)
            for _ in range(2):  # a second time if the actor had dropped the program
                if compiled.token not in self._loaded[worker]:
                    load = actor.load(self.session_id, compiled.token, partition.program)
                    _actor_result_watching(self.watch, compiled.plan, load, tick)
                    self._loaded[worker].add(compiled.token)
                call = actor.run(compiled.token, step, feeds, trace)
                result = _actor_result_watching(self.watch, compiled.plan, call, tick)
                if not (isinstance(result, str) and result == MISSING_PROGRAM):
                    break
                self._loaded[worker].discard(compiled.token)
        except UnavailableError:
            self.forget(worker)
            raise
        except Exception as exc:  # the actor's worker restarted or is gone: the scheduler's path
            logger.warning("fast path to %s unavailable (%r); using the scheduler", worker, exc)
            self.forget(worker)
            return None
        if isinstance(result, str):
            return None
        if isinstance(result, RunFailure):
            raise result.error
        return {0: result}

    def forget(self, worker: Any = None) -> None:
        """Drop the actor of ``worker`` (all actors when None)."""
        for w in [worker] if worker is not None else list(self._actors):
            self._actors.pop(w, None)
            self._loaded.pop(w, None)


def _has_large(values: Sequence[Any]) -> bool:
    threshold = int(dask.config.get("daskgraph.direct-feed-bytes"))
    return any(getattr(v, "nbytes", 0) >= threshold for v in values)


def _actor_result_watching(watch: ClusterWatch, plan: Plan, call: Any, tick: float) -> Any:
    started = _workers_now(watch, plan)
    while True:
        try:
            return call.result(timeout=tick)
        except TimeoutError:
            _raise_if_devices_left(watch, plan, [], started=started)


def submit_run(
    client: Client,
    watch: ClusterWatch,
    compiled: CompiledRun,
    key_prefix: str,
    step: RunStep,
    feed_values: Sequence[Any],
    trace: bool,
    tick: float,
) -> dict[int, tuple]:
    """Run ``compiled`` once; partition index -> its outputs (results, or all when tracing).

    Raises the error a partition returned, or :class:`~daskgraph.errors.UnavailableError`
    naming the devices whose workers left the cluster during the run (noticed by the
    watchdog, or as lost data that cancelled the run, or a worker that refused a send). A
    program released while its worker stayed is sent again, once.
    """
    args = (client, watch, compiled, key_prefix, step, feed_values, trace, tick)
    try:
        return _submit_once(*args)
    except UnavailableError:
        raise
    except (FutureCancelledError, FuturesCancelledError, KeyError, OSError, ValueError) as exc:
        # (a ValueError: a large feed scattered to a worker name the scheduler lacks)
        _raise_if_devices_left(watch, compiled.plan, [], exc)
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
) -> dict[int, tuple]:
    plan = compiled.plan
    started = _workers_now(watch, plan)  # raises at once if a device's worker is missing
    programs = compiled.program_futures(client)
    feed_futures = _send_large_feeds(client, plan, feed_values)
    dsk, keys = build_task_graph(
        plan,
        key_prefix,
        step,
        feed_values,
        execute_partition,
        trace,
        programs=programs,
        sent_feeds=feed_futures,
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
        del futures, feed_futures
    for result in gathered:
        if isinstance(result, RunFailure):
            raise result.error
    return dict(zip(parts, gathered, strict=True))


def _send_large_feeds(client: Client, plan: Plan, feed_values: Sequence[Any]) -> dict[int, Future]:
    """Send each feed of at least ``daskgraph.direct-feed-bytes`` straight to the (first)
    worker that reads it, bypassing the scheduler; smaller feeds travel inside the graph."""
    threshold = int(dask.config.get("daskgraph.direct-feed-bytes"))
    readers: dict[int, Any] = {}
    for p in plan.partitions:
        for i in p.feed_indices:
            readers.setdefault(i, p.worker)
    sent: dict[int, Future] = {}
    for i, worker in readers.items():
        value = feed_values[i]
        if getattr(value, "nbytes", 0) >= threshold:
            sent[i] = client.scatter(value, workers=[worker], direct=True, hash=False)
    return sent


def _result_watching_workers(
    watch: ClusterWatch,
    plan: Plan,
    futures: list[Future],
    future: Future,
    tick: float,
    started: dict[Any, str | None] | None = None,
) -> Any:
    while True:
        try:
            return future.result(timeout=tick)
        except TimeoutError:
            _raise_if_devices_left(watch, plan, futures, started=started)


def _workers_now(watch: ClusterWatch, plan: Plan) -> dict[Any, str | None]:
    """The address of each worker of the plan as a run starts; a run must not be submitted
    while one is missing (the scheduler resolves a worker name when a task arrives: a task
    restricted to a name it does not know would wait for that name forever)."""
    _raise_if_devices_left(watch, plan, [])
    return watch.view().addresses({p.worker for p in plan.partitions})


def _raise_if_devices_left(
    watch: ClusterWatch,
    plan: Plan,
    futures: list[Future],
    cause: Exception | None = None,
    started: dict[Any, str | None] | None = None,
) -> None:
    """Raise UnavailableError if a worker of the plan is missing, or (given the addresses at
    the start of the run) was replaced during the run: a restarted worker lost the run's
    partitions there, and Dask may hold them for a worker that never comes."""
    now = watch.view().addresses({p.worker for p in plan.partitions})
    gone = [
        p
        for p in plan.partitions
        if now[p.worker] is None or (started is not None and started[p.worker] != now[p.worker])
    ]
    if gone:
        missing = sorted({p.device for p in gone})
        if futures:
            futures[0].client.cancel(futures)
        seen = f" ({type(cause).__name__}: {cause})" if cause is not None else ""
        raise UnavailableError(
            f"The workers of devices {', '.join(missing)} left the cluster during the run{seen}, "
            "so its partitions there cannot run. Run again: the graph is placed again on the "
            "devices that remain (soft placement may move ops elsewhere).",
            missing=missing,
            workers=sorted({str(p.worker) for p in gone}),
        ) from cause
