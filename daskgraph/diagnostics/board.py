"""The scheduler's record of daskgraph placements and runs, fed by the sessions' events.

Sessions publish what they place and run as events on the scheduler under the topic
:data:`TOPIC` (``Client.log_event``; :mod:`daskgraph.diagnostics.reporting` sends them), so the
record covers every client of the cluster, runs that never touch the scheduler (compiled
steps) included, and the events stay in Dask's own event log. :class:`PlacementBoard`, a
``SchedulerPlugin``, keeps the latest plans and per-device totals from those events and from
the compute times of daskgraph's tasks, and installs the ``/daskgraph`` dashboard page
(:mod:`daskgraph.diagnostics.dashboard`) where the scheduler serves Dask's dashboard.

The events are plain msgpack-able dicts, one of two kinds:

``{"kind": "plan", "session", "plan", "label", "devices": [...], "placement": {...} | None,
"partitions": [...], "transports": [...], "n_ops", "at"}``
    A plan a session made: its devices, its placement (:meth:`PlacementPlan.to_dict
    <daskgraph.diagnostics.inspection.PlacementPlan.to_dict>`; ``None`` when it has more ops than
    ``daskgraph.dashboard.max-ops``, then only the partitions' devices and op counts), and
    what carries tensors between each pair of its devices that exchange them
    (``{"source", "target", "transport"}``: :mod:`daskgraph.diagnostics.transport_report`).
``{"kind": "runs", "session", "plan", "keys", "runs", "failed", "seconds": {device: s},
"steps": {device: {"steps", "compute", "waiting", "sending"}}, "paths": {path: n}, "at"}``
    The runs of a plan since the last such event: how many, how many failed, the time spent
    per device on runs that skipped the scheduler (the scheduler's runs are timed from their
    tasks), where compiled steps' time went per device (as their workers measured it: running
    ops, waiting for inputs, sending outputs), by which path they went, and the task keys that
    name the partitions.
"""

from __future__ import annotations

import logging
import re
import time
from collections import Counter, OrderedDict
from dataclasses import dataclass
from typing import Any

import dask
from distributed import SchedulerPlugin

from daskgraph.runtime.planner.lowering import task_group

__all__ = ["PLUGIN_NAME", "TOPIC", "DeviceTotals", "PlacementBoard", "device_marks"]

logger = logging.getLogger(__name__)

#: the event topic sessions publish on
TOPIC = "daskgraph"
#: the name of the board's scheduler plugin
PLUGIN_NAME = "daskgraph-board"
_BUS_ID = re.compile(r"pci bus id: (\S+)")


@dataclass
class DeviceTotals:
    """What the board knows of one device, summed over the plans and runs it saw."""

    name: str
    kind: str = ""
    description: str = ""
    worker: str = ""
    runs: int = 0
    seconds: float = 0.0
    bytes_in: int = 0
    steps: int = 0  # compiled steps (runs without the scheduler) with a partition here
    waiting: float = 0.0  # of those: time waiting for inputs, and sending outputs
    sending: float = 0.0


def _is_run_key(key: Any) -> bool:
    """Whether ``key`` is a run's partition task (``(group, "dg-<session>-<run>...", i)``),
    not a resident program's (``(group, "program-...", i)``) nor anyone else's.

    >>> _is_run_key(("dg-localhost-0-cpu0", "dg-1a2b-3-MatMul", 0)), _is_run_key("x-1")
    (True, False)
    """
    return (
        isinstance(key, tuple)
        and len(key) == 3
        and str(key[0]).startswith("dg-")
        and str(key[1]).startswith("dg-")
    )


def device_marks(devices: list[DeviceTotals]) -> dict[str, str]:
    """``"virtual"`` for a virtual GPU; ``"logical"`` for a GPU that shares its physical GPU
    (its PCI bus id, on its host) with another device; ``""`` otherwise.

    >>> gpu = "name: H100, memory: 40.0 GiB, pci bus id: 0000:01:00.0"
    >>> device_marks([DeviceTotals("a", "gpu", gpu, "tcp://h:1"),
    ...               DeviceTotals("b", "gpu", gpu, "tcp://h:2"),
    ...               DeviceTotals("c", "virtual-gpu")])
    {'a': 'logical', 'b': 'logical', 'c': 'virtual'}
    """

    def physical(d: DeviceTotals) -> tuple[str, str] | None:
        found = _BUS_ID.search(d.description)
        host = d.worker.rsplit(":", 1)[0]
        return (host, found.group(1)) if d.kind == "gpu" and found else None

    shared = Counter(physical(d) for d in devices)
    marks = {}
    for d in devices:
        if d.kind == "virtual-gpu":
            marks[d.name] = "virtual"
        else:
            key = physical(d)
            marks[d.name] = "logical" if key is not None and shared[key] > 1 else ""
    return marks


class PlacementBoard(SchedulerPlugin):
    """Keeps the latest daskgraph plans of every session and per-device totals.

    Registered once per scheduler by the sessions' clients (``idempotent``: a second
    registration keeps the first board and what it holds). Holds at most
    ``daskgraph.dashboard.plans`` plans, the oldest dropped first.
    """

    name = PLUGIN_NAME
    idempotent = True

    def __init__(self) -> None:
        self.plans: OrderedDict[tuple[str, int], dict[str, Any]] = OrderedDict()
        self.devices: dict[str, DeviceTotals] = {}
        self.task_seconds: Counter[str] = Counter()  # task group -> compute time of run tasks
        self.version = 0  # bumped on every change: the page redraws only then
        self.scheduler: Any = None
        self.page_installed = False

    async def start(self, scheduler: Any) -> None:
        """Install the ``/daskgraph`` page where the scheduler serves Dask's dashboard."""
        self.scheduler = scheduler
        from daskgraph.diagnostics.dashboard import (
            install_page,  # bokeh is only needed for the page
        )

        try:
            self.page_installed = install_page(scheduler, self)
        except Exception:  # the record is still kept, and readable through snapshot()
            logger.warning("could not install the /daskgraph dashboard page", exc_info=True)

    # -- events ---------------------------------------------------------------------------------
    def log_event(self, topic: str, msg: Any) -> None:
        """Take a session's event (topic :data:`TOPIC`); others are not the board's."""
        if topic != TOPIC or not isinstance(msg, dict):
            return
        try:
            if msg.get("kind") == "plan":
                self.add_plan(msg)
            elif msg.get("kind") == "runs":
                self.add_runs(msg)
        except (KeyError, TypeError, ValueError):
            logger.warning("ignored a malformed daskgraph event: %.200r", msg, exc_info=True)

    def add_plan(self, msg: dict[str, Any]) -> None:
        """Record a plan (a ``"plan"`` event) and its devices."""
        for d in msg["devices"]:
            totals = self.devices.setdefault(d["name"], DeviceTotals(d["name"]))
            totals.kind, totals.description = d.get("kind", ""), d.get("description", "")
            totals.worker = d.get("worker", "")
        key = (msg["session"], int(msg["plan"]))
        self.plans[key] = {**msg, "runs": 0, "failed": 0, "last_run": None, "keys": []}
        self.plans.move_to_end(key)
        while len(self.plans) > int(dask.config.get("daskgraph.dashboard.plans")):
            self.plans.popitem(last=False)
        self.version += 1

    def add_runs(self, msg: dict[str, Any]) -> None:
        """Count a plan's runs (a ``"runs"`` event): per device, runs, time and bytes in."""
        plan = self.plans.get((msg["session"], int(msg["plan"])))
        runs = int(msg["runs"])
        for device, seconds in msg.get("seconds", {}).items():
            self.devices.setdefault(device, DeviceTotals(device)).seconds += float(seconds)
        for device, spent in msg.get("steps", {}).items():
            totals = self.devices.setdefault(device, DeviceTotals(device))
            totals.steps += int(spent["steps"])
            totals.waiting += float(spent["waiting"])
            totals.sending += float(spent["sending"])
        if plan is not None:
            plan["runs"] += runs
            plan["failed"] += int(msg.get("failed", 0))
            plan["last_run"] = msg.get("at", time.time())
            plan["keys"] = list(msg.get("keys", plan["keys"]))
            paths = plan.setdefault("paths", {})
            for path, n in msg.get("paths", {}).items():
                paths[path] = paths.get(path, 0) + int(n)
            for device in {p["device"] for p in plan["partitions"]}:
                self.devices.setdefault(device, DeviceTotals(device)).runs += runs
            for t in (plan.get("placement") or {}).get("transfers", ()):
                if t.get("nbytes") and t["source_device"] != t["target_device"]:
                    target = self.devices.setdefault(
                        t["target_device"], DeviceTotals(t["target_device"])
                    )
                    target.bytes_in += int(t["nbytes"]) * runs
        self.version += 1

    # -- the scheduler's own runs ---------------------------------------------------------------
    def transition(self, key: Any, start: str, finish: str, *args: Any, **kwargs: Any) -> None:
        """Add the compute time of a daskgraph partition's task to its device."""
        if finish != "memory" or not _is_run_key(key):
            return
        seconds = sum(
            s["stop"] - s["start"] for s in kwargs.get("startstops", ()) if s["action"] == "compute"
        )
        if seconds:  # by task group: the plan naming the device may not have arrived yet
            self.task_seconds[key[0]] += seconds
            self.version += 1

    # -- reading --------------------------------------------------------------------------------
    def snapshot(self) -> dict[str, Any]:
        """Everything the board holds, as plain data (what the page and ``/daskgraph.json``
        show): ``devices`` with their totals and op and partition counts, and ``plans``,
        newest last."""
        named: dict[str, set[tuple[str, str]]] = {}  # device -> (session, op name)
        counted: dict[str, dict[str, int]] = {}  # device -> session -> ops of unlisted plans
        partitions: dict[str, int] = {}
        for (session, _), plan in self.plans.items():
            for p in plan["partitions"]:
                device = p["device"]
                partitions[device] = partitions.get(device, 0) + 1
                if p.get("ops"):
                    named.setdefault(device, set()).update((session, n) for n in p["ops"])
                else:  # a plan too large to list: its op count, not a name per op
                    per_session = counted.setdefault(device, {})
                    per_session[session] = max(per_session.get(session, 0), int(p.get("n_ops", 0)))
        known = sorted((d for d in self.devices.values() if d.name), key=lambda d: d.name)
        marks = device_marks(known)
        devices = [
            {
                "name": d.name,
                "kind": d.kind,
                "marks": marks[d.name],
                "worker": d.worker,
                "description": d.description,
                "ops": len(named.get(d.name, ())) + sum(counted.get(d.name, {}).values()),
                "partitions": partitions.get(d.name, 0),
                "runs": d.runs,
                "seconds": d.seconds + self.task_seconds.get(task_group(d.name), 0.0),
                "bytes_in": d.bytes_in,
                "compiled_steps": d.steps,
                "waiting": d.waiting,
                "sending": d.sending,
            }
            for d in known
        ]
        return {"version": self.version, "devices": devices, "plans": list(self.plans.values())}
