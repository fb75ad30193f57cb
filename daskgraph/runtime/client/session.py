"""The Session: connect to a Dask cluster, then place, lower and run fetches, returning NumPy.

A :class:`Session` ties the stages together. On ``run`` it checks the fetches and feeds, places
the graph on the cluster's devices (once per graph version), lowers the fetched subgraph into
per-device partitions (once per fetch/feed signature, TensorFlow's ``make_callable`` idea),
submits one pinned Dask task per partition, and hands back the results in the structure of the
fetches.

``target=None`` runs on the process's embedded local cluster (:mod:`daskgraph.cluster.embedded`,
shared by every such session); an address such as ``"tcp://host:port"`` or a
``distributed.Client`` connects to an existing Dask cluster, whose scheduler plays the role of
TensorFlow's ``ClusterSpec`` (:mod:`daskgraph.runtime.client.connection`). Checking fetches and
feeds is
:mod:`daskgraph.runtime.client.fetches`' job; the recovery from lost workers is here.
"""

from __future__ import annotations

import itertools
import logging
import sys
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from typing import Any

import dask.config
from distributed import Client

from daskgraph.cluster import master
from daskgraph.cluster.shutdown import end_quietly_at_exit
from daskgraph.cluster.topology import Device, format_device_mapping
from daskgraph.config import SessionConfig, check_timeout_ms, default_session_config
from daskgraph.deadline import cancelled_error, raise_if_cancelled, run_deadline, sent_deadline
from daskgraph.diagnostics.inspection import PlacementPlan, describe
from daskgraph.diagnostics.reporting import reporter_for
from daskgraph.diagnostics.transport_report import format_transport_log, plan_transports
from daskgraph.errors import (
    FailedPreconditionError,
    InvalidArgumentError,
    OpError,
    OpName,
    UnavailableError,
    UnreachableError,
    mark_message_only,
    quote,
    without_internal_frames,
)
from daskgraph.framework import default_session
from daskgraph.framework.default_session import get_default_session
from daskgraph.framework.graph import Graph, Operation, Tensor, get_default_graph
from daskgraph.framework.nodes import GraphDef
from daskgraph.runtime.client.channel_steps import ChannelTransport
from daskgraph.runtime.client.compiled_steps import CommTransport
from daskgraph.runtime.client.connection import Connection
from daskgraph.runtime.client.dispatch import CompiledRun, FeedStager
from daskgraph.runtime.client.executors import RunRequest, SchedulerExecutor, StepExecutor
from daskgraph.runtime.client.fetches import as_result, check_feeds, flatten_fetches, item_key
from daskgraph.runtime.client.inprocess import InProcessDevices
from daskgraph.runtime.client.plan_cache import PlanCache
from daskgraph.runtime.client.recovery import Recovery
from daskgraph.runtime.client.transports import InProcessTransport, StepBook, StepReport
from daskgraph.runtime.planner.fusion import format_fusion_log
from daskgraph.runtime.planner.lowering import Plan, lower, needed_ops
from daskgraph.runtime.planner.placement import Placement, format_placement_log, place
from daskgraph.runtime.program import RunStep
from daskgraph.runtime.worker.execution import DeviceStepStats
from daskgraph.runtime.worker.worker_state import reset_worker_containers

__all__ = ["RunMetadata", "RunOptions", "Session", "StepStats", "get_default_session"]

logger = logging.getLogger("daskgraph.placement")


class RunOptions:
    """Options of one ``Session.run``, as TensorFlow's ``RunOptions``: ``trace_level``, and
    ``timeout_in_ms`` (0: the session config's ``operation_timeout_in_ms``), after which the
    run is cancelled with :class:`~daskgraph.errors.DeadlineExceededError`."""

    NO_TRACE = 0
    SOFTWARE_TRACE = 1
    HARDWARE_TRACE = 2
    FULL_TRACE = 3

    def __init__(self, trace_level: int = NO_TRACE, timeout_in_ms: int = 0) -> None:
        if isinstance(trace_level, bool) or trace_level not in (0, 1, 2, 3):
            raise ValueError(
                f"RunOptions.trace_level must be one of NO_TRACE (0), SOFTWARE_TRACE (1), "
                f"HARDWARE_TRACE (2) or FULL_TRACE (3); got {quote(trace_level)}"
            )
        check_timeout_ms("RunOptions.timeout_in_ms", timeout_in_ms)
        self.trace_level = trace_level
        self.timeout_in_ms = timeout_in_ms


class StepStats:
    """Per-partition statistics of a traced run: ``dev_stats`` is a list of
    :class:`~daskgraph.runtime.worker.execution.DeviceStepStats` (device, worker, node_stats)."""

    def __init__(self, dev_stats: list[DeviceStepStats]) -> None:
        self.dev_stats = dev_stats

    def worker_of(self, op_name: str) -> str:
        """Address of the worker that actually ran ``op_name``."""
        return self._stats_of(op_name).worker

    def device_of(self, op_name: str) -> str:
        """Device name of the partition that actually ran ``op_name``."""
        return self._stats_of(op_name).device

    def _stats_of(self, op_name: str) -> DeviceStepStats:
        for stats in self.dev_stats:
            for node in stats.node_stats:  # (an op of a fused kernel ran in it)
                if node.node_name == op_name or op_name in node.fused:
                    return stats
        raise KeyError(f"Op {op_name!r} did not run in this step")


class RunMetadata:
    """Filled by a traced ``Session.run``: ``step_stats`` says where and when each op ran."""

    def __init__(self) -> None:
        self.step_stats = StepStats([])


class Session:
    """Runs fetches of a graph on a Dask cluster.

    Parameters
    ----------
    target
        ``None`` for the embedded local cluster (one CPU worker with all cores, plus one
        worker per GPU or virtual GPU; shared by the sessions of the process), a scheduler
        address (``"tcp://host:port"``), or a ``distributed.Client``.
    graph
        The graph to run (the default graph by default).
    config
        A :class:`~daskgraph.config.SessionConfig`.
    security
        A ``distributed.Security`` for a ``tls://`` target (see :mod:`daskgraph.cluster.tls`).
    """

    def __init__(
        self,
        target: str | Client | None = None,
        graph: Graph | None = None,
        config: SessionConfig | None = None,
        security: Any = None,
    ) -> None:
        if graph is not None and not isinstance(graph, Graph):
            raise TypeError(f"graph must be a tf.Graph (a daskgraph Graph); got {graph!r}")
        if config is not None and not isinstance(config, SessionConfig):
            raise TypeError(
                f"config must be a tf.ConfigProto (a daskgraph SessionConfig); got {config!r}"
            )
        self._graph = graph if graph is not None else get_default_graph()
        self._config = (config or default_session_config()).validate()
        self._id = uuid.uuid4().hex[:12] + _container_suffix(target, self._config)
        # numbers of runs (attempts) and steps (calls): next() of a count is atomic, so runs
        # from several threads (async towers) never share a number (keys, RunStep ids)
        self._run_numbers = itertools.count(1)
        self._step_numbers = itertools.count(1)
        self._runs = 0  # the latest numbers given out
        self._steps = 0
        self._under_way = _RunsUnderWay()
        self._cancel = threading.Event()  # set by close(): the runs under way are cancelled
        self._closed = True  # until connected
        self._placement: Placement | None = None  # the whole graph's, or the last run's
        #: placing pruned graphs: each run's own placement, by run signature
        self._pruned: dict[tuple, Placement] | None = (
            {} if self._config.places_pruned_graph() else None
        )
        self._last_run: tuple[list, list] = ([], [])  # (fetched items, feeds) of the last plan
        self._plans: PlanCache[CompiledRun] = PlanCache(
            int(dask.config.get("daskgraph.plan-cache-size")), self._release_plan
        )
        self._tokens: list = []
        self._target = target if isinstance(target, str) else ""
        self._conn = Connection(target, self._config, self._id, security)
        self._local_task = self._conn.local_task  # preferred by the placer, as TF's master
        self._closed = False
        self._in_process = InProcessDevices(self._conn.client)
        self._step_reports = threading.local()  # a compiled step's timing, for its report
        client, watch, book = self._conn.client, self._conn.watch, StepBook()
        transports = [
            InProcessTransport(self._in_process),
            ChannelTransport(client, watch, self._id, book),
            CommTransport(client, watch, self._id, book),
        ]
        self._steps_path = StepExecutor(watch, transports, self._stepped)
        self._scheduler_path = SchedulerExecutor(client, watch, FeedStager(client, watch, self._id))
        self._recovery = Recovery(self._conn, self)
        self._reporter = reporter_for(self._conn.client)  # for the dashboard's /daskgraph page
        self._plan_numbers = itertools.count(1)

    # -- properties -----------------------------------------------------------------------------
    @property
    def graph(self) -> Graph:
        """The graph this session runs."""
        return self._graph

    @property
    def client(self) -> Client:
        """The ``distributed.Client`` the session submits to."""
        return self._conn.client

    @property
    def config(self) -> SessionConfig:
        """The session's :class:`~daskgraph.config.SessionConfig`."""
        return self._config

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called."""
        return self._closed

    @property
    def dashboard_link(self) -> str | None:
        """The address of the ``/daskgraph`` page on the cluster's Dask dashboard, where this
        session's plans and runs show (``None`` where the scheduler serves no dashboard)."""
        link = self._conn.client.dashboard_link if self._reporter is not None else None
        return f"{link.rsplit('/', 1)[0]}/daskgraph" if link else None

    @property
    def graph_def(self) -> GraphDef:
        """The session's graph as TensorFlow's ``GraphDef`` fields (``graph.as_graph_def()``)."""
        return self._graph.as_graph_def()

    @property
    def sess_str(self) -> str:
        """The target the session was made with (``""`` for the embedded cluster)."""
        return self._target

    def list_devices(self) -> list[Device]:
        """The devices of the cluster this session places ops on.

        Raises :class:`~daskgraph.errors.UnreachableError` once the cluster's scheduler is gone.
        """
        if not self._closed:
            self._conn.check()
        return list(self._conn.devices)

    # -- running --------------------------------------------------------------------------------
    def run(
        self,
        fetches: Any,
        feed_dict: Mapping[Any, Any] | None = None,
        options: RunOptions | None = None,
        run_metadata: RunMetadata | None = None,
    ) -> Any:
        """Run the ops needed for ``fetches`` and return their values.

        ``fetches`` may be a tensor, an operation, a Variable, a name, or a (nested) list,
        tuple or dict of them; results come back in the same structure, as NumPy arrays (or
        NumPy scalars for 0-d tensors), with ``None`` for operations. With
        ``options=RunOptions(trace_level=RunOptions.FULL_TRACE)`` and a ``run_metadata``,
        the metadata records, per partition, the device, the worker it actually ran on and
        the timing of each op.
        """
        try:
            return self._run(fetches, feed_dict, options, run_metadata)
        except Exception as exc:
            end_quietly_at_exit(exc)  # (a daemon thread at exit: it ends with the process)
            if getattr(exc, "show_message_only", False):  # a device no placement satisfies
                raise without_internal_frames(exc) from None  # the planner's frames: on exc
            raise

    def _run(
        self,
        fetches: Any,
        feed_dict: Mapping[Any, Any] | None,
        options: RunOptions | None,
        run_metadata: RunMetadata | None,
    ) -> Any:
        """:meth:`run`'s work."""
        self._check_usable()
        if not len(self._graph):
            raise RuntimeError(
                "The Session graph is empty. Add operations to the graph before calling run()."
            )
        _check_run_arguments(options, run_metadata)
        items, rebuild = flatten_fetches(fetches, self._graph)
        feeds, values = check_feeds(feed_dict, self._graph)
        trace = bool(options is not None and options.trace_level and run_metadata is not None)
        self._steps = number = next(self._step_numbers)
        # one per call: a repeat applies no assign twice, although other threads ran since
        timeout_ms = (options and options.timeout_in_ms) or self._config.operation_timeout_in_ms
        deadline = sent_deadline(timeout_ms)
        step = RunStep(self._id, number, self._under_way.start(number), deadline)
        try:
            with run_deadline(timeout_ms, self._cancel):
                if self._conn.changed:
                    self._recovery.follow_cluster()
                plan, results = self._run_attempts(items, feeds, step, values, trace)
        except Exception as exc:
            if self._cancel.is_set():  # closed under the run: whatever it met, it was cancelled
                raise cancelled_error("the run's steps") from exc
            if isinstance(exc, OpError):
                _attach_operation(exc, self._graph)
            raise
        finally:
            self._under_way.end(number)
        if self._cancel.is_set():  # closed while it ran: TensorFlow's call raises, too
            raise cancelled_error("the run's steps")
        if trace:
            run_metadata.step_stats = StepStats([results[i][-1] for i in sorted(results)])
        by_item = []
        for location in plan.fetches:
            if location is None:
                by_item.append(None)
            else:
                partition, index = location
                by_item.append(as_result(results[partition][index]))
        return rebuild(by_item)

    def make_callable(
        self, fetches: Any, feed_list: Any = None, accept_options: bool = False
    ) -> Callable[..., Any]:
        """A function that runs ``fetches``, taking the values of ``feed_list``'s tensors as
        its positional arguments, in order (TF1's ``Session.make_callable``); with
        ``accept_options`` it also takes ``options`` and ``run_metadata`` keywords.

        >>> import daskgraph as dg
        >>> with dg.Graph().as_default():
        ...     x = dg.placeholder(dg.float32, [])
        ...     with dg.Session() as sess:
        ...         double = sess.make_callable(x * 2.0, [x])
        ...         float(double(3.0)), float(double(5.0))
        (6.0, 10.0)
        """
        feeds = list(feed_list or [])
        run = self.run

        def call(*args: Any, options: Any = None, run_metadata: Any = None) -> Any:
            if len(args) != len(feeds):
                raise TypeError(
                    f"This callable takes {len(feeds)} positional argument(s), one value per "
                    f"tensor of its feed_list; got {len(args)}"
                )
            if not accept_options and (options is not None or run_metadata is not None):
                raise TypeError("options and run_metadata need make_callable(accept_options=True)")
            feed_dict = dict(zip(feeds, args, strict=True)) if feeds else None
            return run(fetches, feed_dict, options=options, run_metadata=run_metadata)

        return call

    def _check_usable(self) -> None:
        """Raise if the session is closed, or its scheduler is gone (at once, every time)."""
        if self._closed:
            raise RuntimeError("Attempted to use a closed Session.")
        self._conn.check()

    def placement(self, fetches: Any, feed_dict: Mapping[Any, Any] | None = None) -> PlacementPlan:
        """What running ``fetches`` (fed ``feed_dict``'s keys) would do, without running it:
        a :class:`~daskgraph.diagnostics.inspection.PlacementPlan` with, per op, the device
        requested,
        the device assigned and the reason; per partition its device and ops; and the tensors
        sent between devices. It prints as a table; ``.to_json()`` exports it. Only the keys
        of ``feed_dict`` matter (which tensors are fed)."""
        self._check_usable()
        items, _ = flatten_fetches(fetches, self._graph)
        feeds, _ = check_feeds(feed_dict, self._graph)
        if self._conn.changed:
            self._recovery.follow_cluster()
        try:
            compiled = self._plan(items, feeds)
        except InvalidArgumentError as exc:
            if getattr(exc, "show_message_only", False):
                raise without_internal_frames(exc) from None
            raise
        return describe(self._graph, self._current_placement(items, feeds), compiled.plan)

    def _run_attempts(
        self, items: list, feeds: list[Tensor], step: RunStep, values: list[Any], trace: bool
    ) -> tuple[Plan, dict]:
        """Run once, and again after recovering from lost workers (``daskgraph.run-retries``
        times at most): the plan that ran and its results by partition."""
        retries = int(dask.config.get("daskgraph.run-retries"))
        attempt = 0
        while True:
            compiled = self._plan(items, feeds)
            plan = compiled.plan
            self._recovery.refuse_gone_devices(plan)
            try:
                results = self._execute(compiled, step, values, trace) if plan.partitions else {}
                return plan, results
            except UnreachableError:  # the scheduler is gone: nothing to place or wait for
                raise
            except UnavailableError as exc:
                raise_if_cancelled("the run's lost workers")  # (closed: nothing to wait for)
                if attempt == retries:
                    raise
                self._recovery.recover(exc)
            except FailedPreconditionError as exc:
                raise_if_cancelled("the run's steps")
                raise self._recovery.explain_lost(exc) from None
            attempt += 1

    def _plan(self, items: list[Tensor | Operation], feeds: list[Tensor]) -> CompiledRun:
        placement = self._current_placement(items, feeds)
        key = (
            placement.graph_version,
            id(placement),
            *(item_key(i) for i in items),
            "|",
            *(t.name for t in feeds),
        )
        plan = self._plans.get(key)
        if plan is None:
            plan = CompiledRun(
                lower(placement, items, feeds, jit=self._config.jit_compiles_graph())
            )
            self._plans.put(key, plan)
            plan.number = next(self._plan_numbers)
            if self._config.log_device_placement:
                self._log_lines(format_fusion_log(plan.plan))
                transports = plan_transports(plan.plan, self._conn.devices)
                self._log_lines(format_transport_log(transports))
            if self._reporter is not None:
                label = ", ".join(i.name for i in items)
                self._reporter.planned(
                    self._id, plan.number, self._graph, placement, plan.plan,
                    list(self._conn.devices), label if len(label) <= 80 else label[:77] + "...",
                )  # fmt: skip
        return plan

    # -- what Recovery needs of the session (recovery.PlacementHolder) --------------------------
    def placement_now(self) -> Placement | None:
        """The current placement (None before the first run, or after it was forgotten)."""
        return self._placement

    def place_again(self) -> Placement:
        """Place the graph (placing pruned graphs: the last run's) on the devices there are
        now (raises InvalidArgumentError)."""
        return self._current_placement(*self._last_run, replace_devices=True)

    def forget_placement(self) -> None:
        """Drop the placement and its plans: the next run places the graph again."""
        self._placement = None
        if self._pruned is not None:
            self._pruned.clear()
        self._plans.clear()

    def forget_paths(self) -> None:
        """Look the workers up again (they may be at new addresses)."""
        self._steps_path.forget()

    def _current_placement(
        self, items: list, feeds: list[Tensor], replace_devices: bool = False
    ) -> Placement:
        """The placement a run of ``items`` fed ``feeds`` uses: the graph's, placed again when
        the graph changed or the cluster's devices did (``replace_devices``); placing pruned
        graphs, the ops that run needs, one placement per run signature."""
        self._last_run = (items, feeds)
        if self._pruned is not None:
            return self._pruned_placement(items, feeds, replace_devices)
        placement = self._placement
        if replace_devices or placement is None or placement.graph_version != self._graph.version:
            placement = self._place(None)
            self._plans.clear()
        return placement

    def _pruned_placement(
        self, items: list, feeds: list[Tensor], replace_devices: bool
    ) -> Placement:
        key = (*(item_key(i) for i in items), "|", *(t.name for t in feeds))
        placement = self._pruned.get(key)  # type: ignore[union-attr]
        stale = placement is None or placement.graph_version != self._graph.version
        if replace_devices or stale:
            if replace_devices or len(self._pruned) > 1024:  # type: ignore[arg-type]
                self._pruned.clear()  # type: ignore[union-attr]
            placement = self._place(needed_ops(self._graph.get_operations(), items, feeds))
            self._pruned[key] = placement  # type: ignore[index]
        self._placement = placement  # (the last run's, for recovery)
        return placement

    def _place(self, only: list[Operation] | None) -> Placement:
        """Place the graph (``only``'s ops, when given); a request no device satisfies is
        raised by the public entry point with its message only (:func:`mark_message_only`)."""
        try:
            placement = place(
                self._graph,
                self._conn.devices,
                allow_soft_placement=self._config.allow_soft_placement,
                local_task=self._local_task,
                only=only,
            )
        except InvalidArgumentError as exc:
            mark_message_only(exc)
            raise
        self._placement = placement
        if self._config.log_device_placement:
            self._log_placement(placement)
        return placement

    def _execute(
        self, compiled: CompiledRun, step: RunStep, values: list[Any], trace: bool
    ) -> dict:
        """Run ``compiled`` once as a compiled step, or through the scheduler where the steps
        cannot take it, and report the run to the dashboard."""
        self._runs = number = next(self._run_numbers)  # per attempt: a retry gets fresh keys
        prefix = f"dg-{self._id}-{number}"
        tick = float(dask.config.get("daskgraph.liveness-check-interval"))
        compiled_steps = bool(dask.config.get("daskgraph.compiled-steps"))
        request = RunRequest(compiled, prefix, step, values, trace, tick, compiled_steps)
        started, path = time.perf_counter(), self._steps_path.name
        try:
            ran = self._steps_path.run(request)
            if ran is None:
                path = self._scheduler_path.name
                ran = self._scheduler_path.run(request)
        except BaseException:
            self._report(compiled, path, started, prefix, failed=True)
            raise
        results, path = ran
        self._report(compiled, path, started, prefix)
        return results

    def _stepped(self, compiled: CompiledRun, report: StepReport) -> None:
        """Keep a compiled step's timing for :meth:`_report` (same thread, same run)."""
        self._step_reports.last = report

    def _release_plan(self, compiled: CompiledRun) -> None:
        """Free what an evicted plan holds on the workers (see :mod:`.plan_cache`)."""
        self._scheduler_path.release(compiled)
        self._steps_path.release(compiled)

    def _report(
        self, compiled: CompiledRun, path: str, started: float, prefix: str, failed: bool = False
    ) -> None:
        report = getattr(self._step_reports, "last", None)
        self._step_reports.last = None
        if self._reporter is not None:
            seconds = time.perf_counter() - started
            timing = report.by_device() if report is not None else None
            self._reporter.ran(
                self._id, compiled.number, compiled.plan, path, seconds, prefix, failed, timing
            )

    # -- logging --------------------------------------------------------------------------------
    def _log_placement(self, placement: Placement) -> None:
        lines = [format_device_mapping(list(placement.devices)), *format_placement_log(placement)]
        self._log_lines(lines)

    @staticmethod
    def _log_lines(lines: list[str]) -> None:
        """``log_device_placement``'s lines: to the logger and to stderr, as TensorFlow."""
        if not lines:
            return
        text = "\n".join(lines)
        for line in text.splitlines():
            logger.info(line)
        print(text, file=sys.stderr, flush=True)

    # -- life cycle -----------------------------------------------------------------------------
    def close(self) -> None:
        """Free this session's variables and programs on the workers, and let go of the
        cluster (the embedded cluster keeps running for the process's next session). Runs
        under way in other threads are cancelled: they raise
        :class:`~daskgraph.errors.CancelledError` (within a liveness tick, or once a kernel
        running in their own thread returns), as TensorFlow's do."""
        if self._closed:
            return
        self._closed = True
        self._cancel.set()  # a run under way in another thread raises CancelledError
        if self._reporter is not None and not self._conn.watch.lost:
            self._reporter.flush()  # this session's last runs, for the page
        if self._reporter is not None:
            self._reporter.forget(self._id)
        self._plans.clear(release=False)  # the session's state on the workers goes below
        self._steps_path.forget()
        self._placement = None
        self._conn.close()

    @staticmethod
    def reset(target: str, containers: list[str] | None = None, config: Any = None) -> None:
        """Drop the variables that the sessions on the server ``target`` share (those of the
        ``containers`` named, all by default), as TF1's ``Session.reset``; open sessions
        there see them uninitialized."""
        session = Session(target, config=config)
        try:
            names = (
                None if containers is None else ["default" if c == "" else c for c in containers]
            )
            session.client.run(reset_worker_containers, names)
            reset_worker_containers(names)  # the process's own (in-process runs)
        finally:
            session.close()

    def as_default(self) -> AbstractContextManager[Session]:
        """Make this session the default one in a ``with`` block (without closing it)."""
        return default_session.as_default(self)

    def __enter__(self) -> Session:
        if self._tokens:
            raise RuntimeError(
                "Session context managers are not re-entrant. Use `Session.as_default()` if you "
                "want to enter a session multiple times."
            )
        graph_scope = self._graph.as_default()  # as TF1: the session's graph is the default
        graph_scope.__enter__()
        self._tokens.append((default_session.push(self), graph_scope))
        return self

    def __exit__(self, *exc: Any) -> None:
        token, graph_scope = self._tokens.pop()
        default_session.pop(token)
        graph_scope.__exit__(None, None, None)
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self._closed else f"{len(self._conn.devices)} devices"
        return f"<daskgraph.Session {self._id} {state}>"


def _container_suffix(target: Any, config: SessionConfig) -> str:
    """``"~default"`` for a session on a TensorFlow-style server target (a ``Server``'s, or a
    ``grpc://`` task address): its variables live in the cluster's shared container, where the
    other sessions on that cluster find them, as a TensorFlow server's sessions share theirs
    (unless ``isolate_session_state``). ``""`` for any other session: its variables are its
    own, as those of TensorFlow's local ``DirectSession``."""
    if not isinstance(target, str) or not target.strip():
        return ""
    if getattr(config, "isolate_session_state", False):
        return ""
    try:
        resolved = master.resolve_target(target)
    except (InvalidArgumentError, TypeError, ValueError):
        return ""  # the connection says what is wrong with it
    server_target = resolved.local_task is not None or target.lower().startswith("grpc")
    return "~default" if server_target else ""


def _attach_operation(exc: OpError, graph: Graph) -> None:
    """Let the error's ``op`` (a name) stand for the graph's operation too, and fill in its
    ``node_def``, as TensorFlow's errors carry the operation."""
    name = exc.op
    if not isinstance(name, str) or isinstance(name, OpName):
        return
    try:
        op = graph.get_operation_by_name(name)
    except KeyError:
        return
    exc.op = OpName(name, op)
    if exc.node_def is None:
        exc.node_def = op.node_def


class _RunsUnderWay:
    """The numbers of a session's runs under way (several threads may run at once). The
    oldest goes with each run (``RunStep.oldest``): workers forget what older runs applied,
    which are done and will not be repeated.

    >>> runs = _RunsUnderWay()
    >>> runs.start(1), runs.start(2)
    (1, 1)
    >>> runs.end(1)
    >>> runs.start(3)
    2
    """

    def __init__(self) -> None:
        self._numbers: set[int] = set()
        self._lock = threading.Lock()

    def start(self, number: int) -> int:
        """Note run ``number`` as under way; returns the oldest run under way."""
        with self._lock:
            self._numbers.add(number)
            return min(self._numbers)

    def end(self, number: int) -> None:
        """Run ``number`` returned or raised: it will not be repeated."""
        with self._lock:
            self._numbers.discard(number)


def _check_run_arguments(options: Any, run_metadata: Any) -> None:
    """Refuse ``options`` and ``run_metadata`` of the wrong types, naming the argument."""
    for name, value, example in (
        ("options", options, "RunOptions(trace_level=RunOptions.FULL_TRACE)"),
        ("run_metadata", run_metadata, "RunMetadata()"),
    ):
        kind = RunOptions if name == "options" else RunMetadata
        if value is not None and not isinstance(value, kind):
            raise TypeError(
                f"Session.run: {name} must be None or a {kind.__name__}, e.g. {example}; got "
                f"{quote(value)} of type {type(value).__name__}"
            )
