"""What a session does when its cluster's workers come, go, restart or stall.

:class:`Recovery` holds the session's knowledge of lost things: variables whose worker died
with them (a later read names them) and devices gone for good that soft placement could not
place around (runs that need them are refused at once, with what to do). It decides, after a
run failed for lost workers, whether to wait for a nanny's restart (within
``daskgraph.worker-restart-grace``; not for a stalled worker, nor for one gone for good:
retired on purpose, or with no nanny left to restart it), to run
the same plans again, or to place the graph again on the devices that remain; and, between
runs, how the session follows workers joining and leaving. The session it serves gives it a
narrow handle (:class:`PlacementHolder`): the current placement, placing again, forgetting
the placement and the ways to reach workers.
"""

from __future__ import annotations

import logging
from typing import Any, Protocol

from daskgraph.cluster.liveness import restart_grace
from daskgraph.cluster.topology import Device
from daskgraph.errors import FailedPreconditionError, InvalidArgumentError, UnavailableError
from daskgraph.runtime.planner.lowering import Plan
from daskgraph.runtime.planner.placement import Placement

__all__ = ["PlacementHolder", "Recovery"]

logger = logging.getLogger("daskgraph.placement")


class PlacementHolder(Protocol):
    """What :class:`Recovery` needs of its session."""

    def placement_now(self) -> Placement | None:
        """The current placement (None before the first run, or after it was forgotten)."""

    def place_again(self) -> Placement:
        """Place the graph on the connection's devices now (raises InvalidArgumentError)."""

    def forget_placement(self) -> None:
        """Drop the placement and its plans: the next run places again."""

    def forget_paths(self) -> None:
        """Look up the workers' executors again (they may be at new addresses)."""


class Recovery:
    """A session's recovery from lost, restarted and stalled workers (see the module)."""

    def __init__(self, conn: Any, session: PlacementHolder) -> None:
        self._conn = conn
        self._session = session
        self.lost: dict[str, str] = {}  # variable -> device whose worker died with it
        self.gone: set[str] = set()  # devices lost for good that the placement still uses

    def follow_cluster(self) -> None:
        """Read the devices again after workers came or went. Plans stay valid while every
        device is still served (perhaps by a restarted worker: tasks are restricted by worker
        name). When devices appeared (or changed), the graph is placed again on the devices
        there are now, so a run that failed for a missing device succeeds once it joins. A
        device that is only missing is left to the run: its worker may be restarting, and
        :meth:`recover` waits for it before placing around it."""
        before = self._conn.devices
        devices = self._conn.discover()
        self.note_restarts(before, devices)
        if _serving(devices) - _serving(before):
            self._conn.devices = devices
            self._session.forget_placement()
            self.gone.clear()
        elif _serving(devices) == _serving(before):
            self._conn.devices = devices  # the same devices, perhaps at new addresses

    def note_restarts(self, before: list[Device], after: list[Device]) -> None:
        """Devices whose worker is now at another address were restarted: the variables
        placed there are lost, and a later read says so by name."""
        address = {d.name: d.worker for d in after}
        restarted = {d.name for d in before if address.get(d.name, d.worker) != d.worker}
        placement = self._session.placement_now()
        if placement is None or not restarted:
            return
        for op in placement.placed_ops:
            if op.type == "VariableV2" and placement.device_of(op).name in restarted:
                self.lost[op.name] = placement.device_of(op).name

    def recover(self, failure: UnavailableError) -> None:
        """After devices' workers left during a run: wait a grace period for them to come back
        (a nanny restarts a dead worker under the same device name, at a new address). When
        every device is served again the same plans run again, unchanged; devices that are
        gone for good raise :class:`InvalidArgumentError` naming them, unless soft placement
        moves their ops (and every later run places again, as TensorFlow's would on the
        devices there are). A stalled worker (frozen: no heartbeat for
        ``daskgraph.worker-stall-timeout``) is not waited for: no nanny restarts it. Variables
        of a restarted worker are lost, and a later read says so by name.
        """
        before = list(self._conn.devices)
        dead = set(failure.fields.get("workers", ()))
        stalled = set(failure.fields.get("stalled", ()))
        # the addresses the failure saw die; else those the session knew for its devices (a
        # session that already saw a restarted worker knows its new address, alive)
        dead_addresses = set(failure.fields.get("addresses", ())) or {
            d.worker for d in before if str(d.restriction) in dead
        }
        grace = restart_grace()
        # every device the session knew, not only those the run missed: another worker may
        # have died since (its restart is then awaited too, not placed around)
        awaited = [d.restriction for d in before if d.name not in stalled]
        watch = self._conn.watch
        back = watch.wait_for(awaited, grace, exclude=dead_addresses) and not stalled
        for_good = watch.gone_for_good(awaited, exclude=dead_addresses) if not back else []
        self._session.forget_paths()
        devices = self._conn.discover()
        self._conn.devices = devices
        self.note_restarts(before, devices)
        missing = sorted(
            {d.name for d in before} - {d.name for d in devices} | set(failure.missing)
        )
        if not self._placement_served(devices):
            self._place_around(missing, grace, failure, bool(for_good))
        if back:  # what a nanny is there for: one line, no alarm
            logger.info(
                "devices %s left during a run; their workers restarted; running it again",
                sorted(failure.missing),
            )
        elif for_good:
            logger.warning(
                "devices %s left the cluster for good during a run (retired, or no nanny to "
                "restart their workers); placed again on the remaining devices; running it again",
                sorted(failure.missing),
            )
        elif stalled:
            logger.warning(
                "devices %s stopped answering during a run (no heartbeat for "
                "daskgraph.worker-stall-timeout); placed again on the remaining devices; "
                "running it again",
                sorted(stalled),
            )
        else:
            logger.warning(
                "devices %s left during a run and did not come back within %s s; placed again "
                "on the remaining devices; running it again",
                sorted(failure.missing),
                grace,
            )

    def _placement_served(self, devices: list[Device]) -> bool:
        """Whether every device the current placement uses is among ``devices`` as it was
        placed on (the same name, kind and task restriction)."""
        placement = self._session.placement_now()
        return placement is not None and _serving(list(placement.devices)) <= _serving(devices)

    def _place_around(
        self, missing: list[str], grace: float, failure: Exception, for_good: bool = False
    ) -> None:
        """Place the graph again on the devices there are now, after ``missing`` left (gone
        ``for_good``, or not back within ``grace``); without soft placement, ops pinned to
        them raise InvalidArgumentError naming them (and so does every later run: no stale
        placement is kept)."""
        try:
            self._session.place_again()
        except InvalidArgumentError as exc:
            # runs that need only the devices that remain still run (a checkpoint of the
            # parameters on the CPU can still be saved); the others are refused at once
            self.gone.update(missing)
            why = (
                "for good (retired, or no nanny left to restart their workers)"
                if for_good
                else f"and did not come back within {grace} s"
            )
            raise InvalidArgumentError(
                f"{exc} (devices {missing} left the cluster during a run {why})",
                op=exc.op,
                missing=missing,
                **exc.fields,
            ) from failure

    def refuse_gone_devices(self, plan: Plan) -> None:
        """Raise InvalidArgumentError, at once, if ``plan`` needs a device that left the
        cluster for good while soft placement could not move its ops elsewhere."""
        gone = sorted({p.device for p in plan.partitions} & self.gone)
        if gone:
            ops = [
                i.op_name
                for p in plan.partitions
                if p.device in gone
                for i in p.program.instructions
            ][:3]
            raise InvalidArgumentError(
                f"Cannot run ops {ops} (and the others of {', '.join(gone)}): their devices "
                "left the cluster during an earlier run and did not come back, and without "
                "soft placement they cannot go elsewhere. Open a new Session with "
                "allow_soft_placement=True, or bring the devices back (the session places "
                "the graph again when they rejoin).",
                op=ops[0] if ops else None,
                missing=gone,
            )

    def explain_lost(self, exc: FailedPreconditionError) -> FailedPreconditionError:
        """``exc`` (an uninitialized variable), or, when the variable's worker died with it,
        an error that says the value was lost and how to get it back."""
        name = exc.fields.get("variable")
        if name not in self.lost and self._conn.changed:
            self.follow_cluster()  # a worker restarted since the session last looked?
        if name not in self.lost:
            return exc
        return FailedPreconditionError(
            f"Variable {name!r} was lost: the worker of {self.lost[name]} died and was "
            "restarted, so its value is gone. Run its initializer again (or restore it from a "
            "checkpoint).",
            op=name,
            variable=name,
            lost=True,
        )


def _serving(devices: list[Device]) -> set[tuple[str, str, Any]]:
    """What placement depends on: each device, its kind, and what its tasks are restricted
    to (a worker name survives a restart; an address does not)."""
    return {(d.name, d.kind, d.restriction) for d in devices}
