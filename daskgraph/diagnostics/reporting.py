"""Sessions tell their scheduler what they placed and ran, for the ``/daskgraph`` page.

A :class:`Reporter` per client collects its sessions' new plans and counts their runs; a
background thread publishes both every ``daskgraph.dashboard.interval`` (a plan's first run
at once) as events under :data:`~daskgraph.diagnostics.board.TOPIC` (``Client.log_event``), which
the
scheduler's :class:`~daskgraph.diagnostics.board.PlacementBoard` reads and Dask's event log keeps.
A run
costs the caller a few counters: nothing is sent from the run's own thread, so runs that skip
the scheduler (compiled steps) stay as fast as they were, and still show on the page.
"""

from __future__ import annotations

import logging
import threading
import time
import weakref
from collections import deque
from dataclasses import dataclass, field
from typing import Any

import dask
from distributed import Client

from daskgraph.cluster.topology import Device
from daskgraph.diagnostics.board import PLUGIN_NAME, TOPIC, PlacementBoard
from daskgraph.diagnostics.inspection import describe
from daskgraph.diagnostics.transport_report import plan_transports
from daskgraph.framework.graph import Graph
from daskgraph.runtime.planner.lowering import Plan, task_group
from daskgraph.runtime.planner.placement import Placement
from daskgraph.runtime.program import op_names

__all__ = ["Reporter", "reporter_for"]

logger = logging.getLogger(__name__)


@dataclass
class _Tally:
    """The runs of one plan since they were last published."""

    plan: Plan
    runs: int = 0
    failed: int = 0
    seconds: float = 0.0  # time of the runs that skipped the scheduler, untimed per device
    paths: dict[str, int] = field(default_factory=dict)
    #: compiled steps' time per device: [steps, compute, waiting, sending] (seconds)
    steps: dict[str, list[float]] = field(default_factory=dict)
    last_prefix: str = ""


@dataclass
class _NewPlan:
    session: str
    number: int
    graph: Graph
    placement: Placement
    plan: Plan
    devices: list[Device]
    label: str


class Reporter:
    """Publishes the plans and runs of the sessions of one client (see the module)."""

    def __init__(self, client: Client) -> None:
        self._client = client
        self._lock = threading.Lock()
        self._plans: deque[_NewPlan] = deque()
        self._ran: deque[tuple] = deque()  # the runs noted since the last flush
        self._next = 0.0  # when the next publication is due
        self._started: dict[str, set[int]] = {}  # session -> plans whose runs were seen

    def planned(self, session: str, number: int, graph: Graph, placement: Placement,
                plan: Plan, devices: list[Device], label: str) -> None:  # fmt: skip
        """Note a plan a session just made (published with its first run, or within an
        interval)."""
        self._plans.append(_NewPlan(session, number, graph, placement, plan, devices, label))

    def ran(self, session: str, number: int, plan: Plan, path: str, seconds: float,
            prefix: str, failed: bool = False,
            timing: dict[str, tuple[float, float, float]] | None = None) -> None:  # fmt: skip
        """Note a run of plan ``number`` that went by ``path`` (``"in-process"``,
        ``"channel"``, ``"comm"`` or ``"scheduler"``) and took ``seconds``.

        On every run's path, so it only appends to a deque (thread-safe, no lock); the
        publishing thread adds the runs up."""
        self._ran.append((session, number, plan, path, seconds, prefix, failed, timing))
        started = self._started.get(session)
        if started is None or number not in started:  # a plan's first run: publish it now
            self._started.setdefault(session, set()).add(number)
            self._next = 0.0
            _Publisher.wake()

    def forget(self, session: str) -> None:
        """Let go of what is kept of a closed session (after a last :meth:`flush`)."""
        self._started.pop(session, None)

    def due(self) -> bool:
        """Whether there is something to publish and it is time."""
        return bool(self._plans or self._ran) and time.monotonic() >= self._next

    def _tallies(self) -> dict[tuple[str, int], _Tally]:
        """The runs noted so far, added up per plan (and taken from the deque)."""
        tallies: dict[tuple[str, int], _Tally] = {}
        ran = self._ran
        for _ in range(len(ran)):
            session, number, plan, path, seconds, prefix, failed, timing = ran.popleft()
            tally = tallies.get((session, number))
            if tally is None:
                tally = tallies[session, number] = _Tally(plan)
            tally.runs += 1
            tally.failed += failed
            tally.paths[path] = tally.paths.get(path, 0) + 1
            tally.last_prefix = prefix
            if timing:  # a compiled step: timed per device by its workers
                _add_step(tally.steps, timing)
            elif path != "scheduler":  # the board times the scheduler's runs from their tasks
                tally.seconds += seconds
        return tallies

    def flush(self) -> None:
        """Publish what is pending now (in the calling thread)."""
        with self._lock:  # one flush at a time (the publisher's and a closing session's)
            self._next = time.monotonic() + _interval()
            plans = [self._plans.popleft() for _ in range(len(self._plans))]
            tallies = self._tallies()
        if self._client.status != "running":
            return
        try:
            for new in plans:
                self._client.log_event(TOPIC, plan_event(new))
            for (session, number), tally in tallies.items():
                self._client.log_event(TOPIC, runs_event(session, number, tally))
        except Exception:  # a scheduler that left: its page is gone with it
            logger.debug("could not publish daskgraph events", exc_info=True)


def _entry(ins: Any) -> str:
    """An instruction as the page lists it: its op, or a fused kernel and the ops it holds.

    >>> from types import SimpleNamespace as NS
    >>> _entry(NS(op_name="y", kernel=NS(op_names=("a", "y"))))
    'y (fused: a, y)'
    """
    names = op_names(ins)
    return ins.op_name if len(names) == 1 else f"{ins.op_name} (fused: {', '.join(names)})"


def plan_event(new: _NewPlan) -> dict[str, Any]:
    """The ``"plan"`` event of a new plan (see :mod:`daskgraph.diagnostics.board`)."""
    n_ops = sum(len(p.program.instructions) for p in new.plan.partitions)
    small = n_ops <= int(dask.config.get("daskgraph.dashboard.max-ops"))
    placement = describe(new.graph, new.placement, new.plan).to_dict() if small else None
    partitions = [
        {
            "index": p.index,
            "device": p.device,
            "worker": str(p.worker),
            "label": p.label,
            "n_ops": len(p.program.instructions),
            **({"ops": [_entry(i) for i in p.program.instructions]} if small else {}),
        }
        for p in new.plan.partitions
    ]
    return {
        "kind": "plan",
        "session": new.session,
        "plan": new.number,
        "label": new.label,
        "devices": [
            {"name": d.name, "kind": d.kind, "worker": d.worker, "description": d.description}
            for d in new.devices
        ],
        "placement": placement,
        "partitions": partitions,
        "transports": plan_transports(new.plan, new.devices),
        "n_ops": n_ops,
        "at": time.time(),
    }


def runs_event(session: str, number: int, tally: _Tally) -> dict[str, Any]:
    """The ``"runs"`` event of a plan's runs since the last one (see
    :mod:`daskgraph.diagnostics.board`):
    ``keys`` name the last run's partitions as its tasks are (or would be) keyed in Dask."""
    keys = [
        str((task_group(p.device), f"{tally.last_prefix}-{p.label}", p.index))
        for p in tally.plan.partitions
    ]
    return {
        "kind": "runs",
        "session": session,
        "plan": number,
        "keys": keys,
        "runs": tally.runs,
        "failed": tally.failed,
        "seconds": _seconds(tally),
        "steps": {
            device: {"steps": int(n), "compute": c, "waiting": w, "sending": s}
            for device, (n, c, w, s) in tally.steps.items()
        },
        "paths": dict(tally.paths),
        "at": time.time(),
    }


def _add_step(steps: dict[str, list[float]], timing: dict[str, tuple[float, ...]]) -> None:
    """Add one compiled step's (compute, waiting, sending) seconds per device.

    >>> steps = {}
    >>> _add_step(steps, {"gpu": (0.5, 0.25, 0.0)}); _add_step(steps, {"gpu": (0.5, 0.0, 0.0)})
    >>> steps
    {'gpu': [2, 1.0, 0.25, 0.0]}
    """
    for device, (compute, waiting, sending) in timing.items():
        totals = steps.setdefault(device, [0, 0.0, 0.0, 0.0])
        totals[0] += 1
        totals[1] += compute
        totals[2] += waiting
        totals[3] += sending


def _seconds(tally: _Tally) -> dict[str, float]:
    """Time per device of the runs that skipped the scheduler: compiled steps' compute time
    as their workers measured it; other runs' time shared among the plan's partitions."""
    partitions = tally.plan.partitions
    seconds = {p.device: tally.seconds / len(partitions) for p in partitions}
    for device, (_, compute, _, _) in tally.steps.items():
        seconds[device] = seconds.get(device, 0.0) + compute
    return seconds


def _interval() -> float:
    return float(dask.utils.parse_timedelta(dask.config.get("daskgraph.dashboard.interval")))


# -- one reporter per client, one publishing thread per process ---------------------------------
_reporters: weakref.WeakKeyDictionary[Client, Reporter] = weakref.WeakKeyDictionary()
_lock = threading.Lock()


def reporter_for(client: Client) -> Reporter | None:
    """The reporter of ``client`` (made, and the board registered on its scheduler, on first
    use); ``None`` when ``daskgraph.dashboard.enabled`` is false or the scheduler refused
    the board (one that cannot import daskgraph: logged, and sessions go on without it)."""
    if not dask.config.get("daskgraph.dashboard.enabled"):
        return None
    with _lock:
        reporter = _reporters.get(client)
        if reporter is not None:
            return reporter
        try:
            client.register_plugin(PlacementBoard(), name=PLUGIN_NAME)
        except Exception as exc:
            logger.warning("the scheduler did not take daskgraph's dashboard board (%r)", exc)
            return None
        reporter = _reporters[client] = Reporter(client)
    _Publisher.start()
    return reporter


class _Publisher:
    """The daemon thread that publishes every reporter's news when due."""

    _thread: threading.Thread | None = None
    _event = threading.Event()

    @classmethod
    def start(cls) -> None:
        with _lock:
            if cls._thread is None or not cls._thread.is_alive():
                cls._thread = threading.Thread(
                    target=cls._loop, name="daskgraph-reporter", daemon=True
                )
                cls._thread.start()

    @classmethod
    def wake(cls) -> None:
        cls._event.set()

    @classmethod
    def _loop(cls) -> None:
        while True:
            cls._event.wait(_interval())
            cls._event.clear()
            with _lock:
                reporters = list(_reporters.values())
            for reporter in reporters:
                if reporter.due():
                    reporter.flush()
