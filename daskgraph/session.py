"""The Session: connect to a Dask cluster, then place, lower and run fetches, returning NumPy.

A :class:`Session` ties the stages together. On ``run`` it checks the fetches and feeds, places
the graph on the cluster's devices (once per graph version), lowers the fetched subgraph into
per-device partitions (once per fetch/feed signature, TensorFlow's ``make_callable`` idea),
submits one pinned Dask task per partition, and hands back the results in the structure of the
fetches.

``target=None`` starts an embedded local cluster (:mod:`daskgraph.cluster`); an address such as
``"tcp://host:port"`` or a ``distributed.Client`` connects to an existing Dask cluster, whose
scheduler plays the role of TensorFlow's ``ClusterSpec``.
"""

from __future__ import annotations

import logging
import sys
import time
import uuid
from collections import defaultdict
from collections.abc import Callable, Mapping
from contextvars import ContextVar
from dataclasses import replace
from typing import Any

import dask.config
import numpy as np
from distributed import Client

from daskgraph import gpu_worker
from daskgraph.cluster import local_cluster
from daskgraph.config import SessionConfig
from daskgraph.device import GPU
from daskgraph.dispatch import CompiledRun, FastPath, submit_run
from daskgraph.errors import FailedPreconditionError, InvalidArgumentError, UnavailableError
from daskgraph.execution import DeviceStepStats, RunStep, drop_session
from daskgraph.graph import Graph, Operation, Tensor, get_default_graph
from daskgraph.lowering import lower
from daskgraph.placement import Placement, format_placement_log, place
from daskgraph.topology import Device, devices_from_workers, format_device_mapping

__all__ = ["RunMetadata", "RunOptions", "Session", "StepStats", "get_default_session"]

logger = logging.getLogger("daskgraph.placement")

_default_session: ContextVar[Session | None] = ContextVar("daskgraph_session", default=None)


def get_default_session() -> Session:
    """The session of the innermost ``with Session(...)`` block."""
    session = _default_session.get()
    if session is None:
        raise ValueError(
            "No default session: run this inside `with Session() as sess:` or pass session=."
        )
    return session


class RunOptions:
    """Options of one ``Session.run``, as TensorFlow's ``RunOptions``."""

    NO_TRACE = 0
    FULL_TRACE = 3

    def __init__(self, trace_level: int = NO_TRACE) -> None:
        self.trace_level = trace_level


class StepStats:
    """Per-partition statistics of a traced run: ``dev_stats`` is a list of
    :class:`~daskgraph.execution.DeviceStepStats` (device, worker, node_stats)."""

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
            if any(node.node_name == op_name for node in stats.node_stats):
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
        ``None`` for an embedded local cluster (one CPU worker with all cores, plus one worker
        per GPU or virtual GPU), a scheduler address (``"tcp://host:port"``), or a
        ``distributed.Client``.
    graph
        The graph to run (the default graph by default).
    config
        A :class:`~daskgraph.config.SessionConfig`.
    security
        A ``distributed.Security`` for a ``tls://`` target (see :mod:`daskgraph.tls`).
    """

    def __init__(
        self,
        target: str | Client | None = None,
        graph: Graph | None = None,
        config: SessionConfig | None = None,
        security: Any = None,
    ) -> None:
        if graph is not None and not isinstance(graph, Graph):
            raise TypeError(f"graph must be a daskgraph Graph; got {graph!r}")
        if config is not None and not isinstance(config, SessionConfig):
            raise TypeError(f"config must be a SessionConfig (or tf.ConfigProto); got {config!r}")
        self._graph = graph if graph is not None else get_default_graph()
        self._config = (config or SessionConfig()).validate()
        self._id = uuid.uuid4().hex[:12]
        self._runs = 0
        self._steps = 0
        self._closed = False
        self._placement: Placement | None = None
        self._plans: dict[tuple, CompiledRun] = {}
        self._tokens: list = []
        self._lost: dict[str, str] = {}  # variable -> device whose worker died with it
        self._cluster, self._client, self._owns_client = _connect(target, self._config, security)
        self._fast = FastPath(self._client)
        try:
            self._devices = self._discover_devices()
        except BaseException:
            self.close()
            raise

    # -- properties -----------------------------------------------------------------------------
    @property
    def graph(self) -> Graph:
        return self._graph

    @property
    def client(self) -> Client:
        """The ``distributed.Client`` the session submits to."""
        return self._client

    @property
    def config(self) -> SessionConfig:
        return self._config

    @property
    def closed(self) -> bool:
        return self._closed

    def list_devices(self) -> list[Device]:
        """The devices of the cluster this session places ops on."""
        return list(self._devices)

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
        if self._closed:
            raise RuntimeError("Attempted to use a closed Session.")
        items, rebuild = _flatten_fetches(fetches, self._graph)
        feeds, values = _check_feeds(feed_dict, self._graph)
        trace = bool(options is not None and options.trace_level and run_metadata is not None)
        retries = int(dask.config.get("daskgraph.run-retries"))
        self._steps += 1
        step = RunStep(self._id, self._steps)  # one per call: a repeat applies no assign twice
        for attempt in range(retries + 1):
            compiled = self._plan(items, feeds)
            plan = compiled.plan
            try:
                results = self._execute(compiled, step, values, trace) if plan.partitions else {}
                break
            except UnavailableError as exc:
                if attempt == retries:
                    raise
                self._recover(exc)
            except FailedPreconditionError as exc:
                raise self._explain_lost(exc) from None
        if trace:
            run_metadata.step_stats = StepStats([results[i][-1] for i in sorted(results)])
        by_item = []
        for location in plan.fetches:
            if location is None:
                by_item.append(None)
            else:
                partition, index = location
                by_item.append(_as_result(results[partition][index]))
        return rebuild(by_item)

    def _plan(self, items: list[Tensor | Operation], feeds: list[Tensor]) -> CompiledRun:
        placement = self._current_placement()
        key = (
            placement.graph_version,
            id(placement),
            *(_item_key(i) for i in items),
            "|",
            *(t.name for t in feeds),
        )
        plan = self._plans.get(key)
        if plan is None:
            plan = self._plans[key] = CompiledRun(lower(placement, items, feeds))
        return plan

    def _current_placement(self, devices: list[Device] | None = None) -> Placement:
        """The graph's placement, placed again when the graph changed or when ``devices``
        (the cluster's devices, newly discovered) are given."""
        placement = self._placement
        stale = placement is None or placement.graph_version != self._graph.version
        if devices is not None or stale:
            placement = place(
                self._graph,
                devices if devices is not None else self._devices,
                allow_soft_placement=self._config.allow_soft_placement,
            )
            if devices is not None:
                self._devices = devices
            self._placement = placement
            self._plans.clear()
            if self._config.log_device_placement:
                self._log_placement(placement)
        return placement

    def _recover(self, failure: UnavailableError) -> None:
        """After devices' workers left during a run: wait a grace period for them to come back
        (a nanny restarts a dead worker under the same device name, at a new address), then
        place the graph again on the devices there are. Devices that are gone for good raise
        :class:`InvalidArgumentError` naming them, unless soft placement moves their ops;
        variables of a restarted worker are lost, and a later read says so by name.
        """
        missing = set(failure.missing)
        dead = set(failure.fields.get("workers", ()))
        before = {d.name: d.worker for d in self._devices}
        # every device the session knew, not only those the run missed: another worker may
        # have died since (its restart is then awaited too, not placed around)
        wanted = set(before) | missing
        grace = float(dask.config.get("daskgraph.worker-restart-grace"))
        deadline = time.monotonic() + grace
        while True:
            # one view of the cluster both decides and places: the scheduler may still list a
            # dead worker for a moment, so a device is back only on a worker other than those
            devices = self._discover_devices()
            back = {d.name for d in devices if d.worker not in dead} >= wanted
            if back or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        missing |= wanted - {d.name for d in devices}
        self._fast.forget()
        restarted = {d.name for d in devices if d.name in before and before[d.name] != d.worker}
        old = self._placement
        if old is not None:
            for op in old.ops:
                if op.type == "VariableV2" and old.device_of(op).name in restarted:
                    self._lost[op.name] = old.device_of(op).name
        try:
            self._current_placement(devices)
        except InvalidArgumentError as exc:
            raise InvalidArgumentError(
                f"{exc} (devices {sorted(missing)} left the cluster during a run and did not "
                f"come back within {grace} s)",
                op=exc.op,
                missing=sorted(missing),
                **exc.fields,
            ) from failure
        logger.warning(
            "devices %s left during a run; %s; running it again",
            sorted(missing),
            "their workers restarted" if back else "placed again on the remaining devices",
        )

    def _explain_lost(self, exc: FailedPreconditionError) -> FailedPreconditionError:
        name = exc.fields.get("variable")
        if name not in self._lost:
            return exc
        return FailedPreconditionError(
            f"Variable {name!r} was lost: the worker of {self._lost[name]} died and was "
            "restarted, so its value is gone. Run its initializer again (or restore it from a "
            "checkpoint).",
            op=name,
            variable=name,
            lost=True,
        )

    def _execute(
        self, compiled: CompiledRun, step: RunStep, values: list[Any], trace: bool
    ) -> dict:
        self._runs += 1  # per attempt: a repeated run's tasks get fresh keys
        prefix = f"dg-{self._id}-{self._runs}"
        tick = float(dask.config.get("daskgraph.liveness-check-interval"))
        if compiled.single_partition and dask.config.get("daskgraph.fast-path"):
            results = self._fast.run(compiled, step, values, trace, tick)
            if results is not None:
                return results
        return submit_run(self._client, compiled, prefix, step, values, trace, tick)

    # -- devices and logging --------------------------------------------------------------------
    def _discover_devices(self) -> list[Device]:
        workers = self._client.scheduler_info(n_workers=-1)["workers"]
        if not workers:  # a cluster that is still starting: wait for its first worker
            try:
                self._client.wait_for_workers(1, timeout=_startup_timeout())
            except TimeoutError:
                pass  # placement then says plainly that there are no devices
            workers = self._client.scheduler_info(n_workers=-1)["workers"]
        devices = devices_from_workers(workers)
        limits = self._config.device_count
        if limits:
            counts: dict[str, int] = {}
            kept = []
            for d in devices:
                counts[d.device_type] = counts.get(d.device_type, 0) + 1
                if counts[d.device_type] <= limits.get(d.device_type, len(devices)):
                    kept.append(d)
            devices = kept
        return self._describe_gpus(devices)

    def _describe_gpus(self, devices: list[Device]) -> list[Device]:
        """Ask real GPU workers what their GPU is (name, memory, bus id) for the mapping."""
        gpu_workers = [d.worker for d in devices if d.kind == "gpu"]
        if not gpu_workers:
            return devices
        try:
            said = self._client.run(gpu_worker.describe, workers=gpu_workers)
        except Exception:  # a plain Dask worker without daskgraph: keep the resource view
            return devices
        return [
            replace(d, description=f"{d.description}, {said[d.worker]}")
            if said.get(d.worker)
            else d
            for d in devices
        ]

    def _log_placement(self, placement: Placement) -> None:
        lines = [format_device_mapping(list(placement.devices)), *format_placement_log(placement)]
        text = "\n".join(lines)
        for line in text.splitlines():
            logger.info(line)
        print(text, file=sys.stderr, flush=True)

    # -- life cycle -----------------------------------------------------------------------------
    def close(self) -> None:
        """Drop this session's variables from the workers and release what it started."""
        if self._closed:
            return
        self._closed = True
        self._plans.clear()  # releases the programs resident on the workers
        if hasattr(self, "_fast"):
            self._fast.forget()
        self._placement = None
        client = getattr(self, "_client", None)
        if client is not None and client.status == "running":
            try:
                client.run(drop_session, self._id)
            except Exception:  # a worker that is gone has nothing left to drop
                logger.debug("could not drop session %s from every worker", self._id)
        if client is not None and self._owns_client:
            client.close()
        if self._cluster is not None:
            self._cluster.close()

    def as_default(self):
        """Make this session the default one in a ``with`` block (without closing it)."""
        return _DefaultSession(self)

    def __enter__(self) -> Session:
        self._tokens.append(_default_session.set(self))
        return self

    def __exit__(self, *exc: Any) -> None:
        _default_session.reset(self._tokens.pop())
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self._closed else f"{len(self._devices)} devices"
        return f"<daskgraph.Session {self._id} {state}>"


class _DefaultSession:
    def __init__(self, session: Session) -> None:
        self.session = session
        self.token = None

    def __enter__(self) -> Session:
        self.token = _default_session.set(self.session)
        return self.session

    def __exit__(self, *exc: Any) -> None:
        _default_session.reset(self.token)


def _connect(target: Any, config: SessionConfig, security: Any = None):
    """(owned cluster or None, client, whether the session owns the client)."""
    if target is None or target == "":
        no_gpus = config.device_count.get(GPU) == 0
        cluster = local_cluster(gpus=[] if no_gpus else None, gpu_options=config.gpu_options)
        try:
            client = Client(cluster, set_as_default=False, direct_to_workers=True)
            client.wait_for_workers(len(cluster.worker_spec), timeout=_startup_timeout())
        except BaseException:
            cluster.close()
            raise
        return cluster, client, True
    if isinstance(target, Client):
        return None, target, False
    if isinstance(target, str):
        address = target if "://" in target else f"tcp://{target}"
        try:
            client = Client(
                address, set_as_default=False, timeout=_startup_timeout(), security=security
            )
        except OSError as exc:
            raise InvalidArgumentError(
                f"Cannot connect to the Dask scheduler at {target!r}: {exc}. Expected the "
                "address of a running scheduler, e.g. 'tcp://127.0.0.1:8786'.",
                target=target,
            ) from exc
        except TypeError as exc:  # distributed's answer to tls:// without certificates
            raise InvalidArgumentError(
                f"Cannot connect to {target!r}: {exc}. A tls:// target needs "
                "security=daskgraph.tls.security_from_dir(DIR) (see `daskgraph certs`).",
                target=target,
            ) from exc
        return None, client, True
    raise TypeError(
        "Session target must be None (embedded cluster), a scheduler address string or a "
        f"distributed.Client; got {target!r}"
    )


def _startup_timeout() -> float:
    return float(dask.config.get("daskgraph.local.startup-timeout"))


# -- fetches and feeds ----------------------------------------------------------------------------
def _resolve(item: Any, graph: Graph, what: str) -> Tensor | Operation:
    if isinstance(item, str):
        try:
            return (
                graph.get_tensor_by_name(item) if ":" in item else graph.get_operation_by_name(item)
            )
        except (KeyError, ValueError) as exc:
            raise ValueError(f"{what} {item!r} names nothing in the graph: {exc}") from None
    to_tensor = getattr(item, "_as_tensor", None)
    if to_tensor is not None:
        item = to_tensor()
    if not isinstance(item, (Tensor, Operation)):
        raise TypeError(
            f"{what} {item!r} has invalid type {type(item).__name__}; expected a Tensor, an "
            "Operation, a Variable, a name, or a list, tuple or dict of them."
        )
    if item.graph is not graph:
        raise ValueError(
            f"{what} {item!r} is not an element of this session's graph: it was built in "
            "another graph. Run it with a session of that graph, or build it in this one."
        )
    return item


def _flatten_fetches(fetches: Any, graph: Graph) -> tuple[list, Callable[[list], Any]]:
    """The unique fetch items of a nested structure, and a function that rebuilds it."""
    items: list[Tensor | Operation] = []
    index: dict[int, int] = {}

    def walk(value: Any) -> Any:
        if isinstance(value, (list, tuple)):
            parts = [walk(v) for v in value]
            if hasattr(value, "_fields"):  # a namedtuple
                return lambda r: type(value)(*(p(r) for p in parts))
            return lambda r: type(value)(p(r) for p in parts)
        if isinstance(value, Mapping):
            parts = {k: walk(v) for k, v in value.items()}
            if isinstance(value, defaultdict):
                return lambda r: defaultdict(
                    value.default_factory, ((k, p(r)) for k, p in parts.items())
                )
            return lambda r: type(value)((k, p(r)) for k, p in parts.items())
        item = _resolve(value, graph, "Fetch argument")
        position = index.get(id(item))
        if position is None:
            position = index[id(item)] = len(items)
            items.append(item)
        return lambda r: r[position]

    rebuild = walk(fetches)
    return items, rebuild


def _check_feeds(feed_dict: Mapping[Any, Any] | None, graph: Graph) -> tuple[list, list]:
    if feed_dict is None:
        return [], []
    if not isinstance(feed_dict, Mapping):
        raise TypeError(f"feed_dict must be a dict of tensor -> value; got {feed_dict!r}")
    tensors, values = [], []
    for key, value in feed_dict.items():
        tensor = _resolve(key, graph, "Feed key")
        if not isinstance(tensor, Tensor):
            raise TypeError(f"Feed key {key!r} is an operation; feed one of its output tensors.")
        tensors.append(tensor)
        values.append(_check_feed_value(tensor, value))
    return tensors, values


def _check_feed_value(tensor: Tensor, value: Any) -> np.ndarray:
    dtype = tensor.dtype
    if isinstance(value, (Tensor, Operation)):
        raise TypeError(
            f"The value of a feed cannot be a Tensor ({value!r}); feed NumPy arrays or Python "
            f"values to {tensor.name!r}."
        )
    array = np.asarray(value, dtype=dtype.numpy if dtype.name == "string" else None)
    if array.dtype != dtype.numpy:
        if array.dtype.kind in "OUS" or not np.can_cast(array.dtype, dtype.numpy, "same_kind"):
            raise ValueError(
                f"Cannot feed value of dtype {array.dtype} to tensor {tensor.name!r} of dtype "
                f"{dtype.name}: convert it first (e.g. np.asarray(value, np.{dtype.name}))."
            )
        array = array.astype(dtype.numpy)
    shape = tensor.shape
    if shape is not None and (
        len(shape) != array.ndim
        or any(d is not None and d != n for d, n in zip(shape, array.shape, strict=True))
    ):
        wanted = tuple("?" if d is None else d for d in shape)
        raise ValueError(
            f"Cannot feed value of shape {array.shape} for tensor {tensor.name!r}, which has "
            f"shape {wanted}".replace("'?'", "?")
        )
    return array


def _item_key(item: Tensor | Operation) -> str:
    return item.name if isinstance(item, Tensor) else f"^{item.name}"


def _as_result(value: Any) -> Any:
    """A fetched value as the caller gets it: 0-d arrays become NumPy scalars, and read-only
    arrays (constants and variables handed over by an in-process worker) are copied."""
    if isinstance(value, np.ndarray):
        if value.ndim == 0:
            return value[()]
        if not value.flags.writeable:
            return value.copy()
    return value
