"""How a compiled step's messages reach its workers: the transports under the steps, as plug-ins.

A compiled step (:class:`~daskgraph.runtime.client.executors.StepExecutor`) is one message
to each worker of its plan and one reply from each; a :class:`Transport` carries those
messages, or declines a step it cannot carry, and the next one is asked. Three are
plugged in, tried in this order:

* ``in-process`` (:class:`InProcessTransport`): a plan whose partitions all sit on one worker
  of this process (the embedded CPU worker, a ``LocalCluster(processes=False)``'s) needs no
  message at all: its partitions run against that worker's state by a plain call, values
  by reference (:mod:`~daskgraph.runtime.client.inprocess`), as TensorFlow's direct session
  runs a small graph. Not for a run with a deadline (a call in the caller's thread cannot be
  abandoned) unless the plan blocks (its dequeue honours the deadline itself).
* ``channel`` (:class:`~daskgraph.runtime.client.channel_steps.ChannelTransport`): a step that
  needs one round trip (:func:`~daskgraph.runtime.planner.step_split.one_round`, a one-device
  step included) to workers on this machine goes through their local sockets, from the
  calling thread; not traced, without a deadline.
* ``comm`` (:class:`~daskgraph.runtime.client.compiled_steps.CommTransport`): Dask's comm
  (``tcp``, ``tls``, ``ucx``: the cluster's), workers of this process by reference; takes
  every step but a plan that may block (a dequeue waiting for another run, which would hold
  a worker's step), a worker without daskgraph's handlers, or a failure that is not a lost
  worker: the scheduler's path then runs the plan.

Every transport waits through a :class:`~daskgraph.runtime.client.run_watch.RunWatch`: the
same liveness checks, deadlines and aborts.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from daskgraph.cluster.liveness import ClusterWatch
from daskgraph.runtime.client.dispatch import CompiledRun
from daskgraph.runtime.client.inprocess import InProcessDevices
from daskgraph.runtime.client.run_watch import workers_now
from daskgraph.runtime.program import RunStep
from daskgraph.runtime.worker.step_run import StepTiming
from daskgraph.runtime.worker.step_service import StepService, local_service

__all__ = [
    "InProcessTransport",
    "StepBook",
    "StepCall",
    "StepOutcome",
    "StepReport",
    "Transport",
]


@dataclass
class StepOutcome:
    """What a step's workers replied: fetched outputs by partition (by output index, or the
    partition's tuple of outputs), the failures (partition, RunFailure) and each partition's
    timing."""

    outputs: dict[int, Any]
    failures: list[tuple[int, Any]]
    timing: dict[int, StepTiming]

    @classmethod
    def of(cls, replies: Sequence[dict[str, Any]]) -> StepOutcome:
        """The outcome of a step from its workers' replies (:func:`~daskgraph.runtime.worker.
        step_run.reply_of`).

        >>> StepOutcome.of([{"outputs": {0: {0: 1.5}}, "failure": None}]).outputs
        {0: {0: 1.5}}
        """
        outcome = cls({}, [], {})
        for reply in replies:
            outcome.outputs.update(reply["outputs"])
            if reply.get("failure") is not None:
                outcome.failures.append(reply["failure"])
            outcome.timing.update(reply.get("timing") or {})
        return outcome


@dataclass(frozen=True)
class StepReport:
    """Where a compiled step's time went: per partition, its device and
    :class:`~daskgraph.runtime.worker.step_run.StepTiming` (for the dashboard and the event
    log)."""

    timing: dict[int, tuple[str, StepTiming]]

    def by_device(self) -> dict[str, tuple[float, float, float]]:
        """(compute, waiting, sending) seconds per device, over its partitions.

        >>> StepReport({0: ("gpu", StepTiming(0.5, 1.0, 0.0))}).by_device()
        {'gpu': (1.0, 0.5, 0.0)}
        """
        out: dict[str, tuple[float, float, float]] = {}
        for device, t in self.timing.values():
            c, w, s = out.get(device, (0.0, 0.0, 0.0))
            out[device] = (c + t.compute, w + t.waiting, s + t.sending)
        return out


@dataclass
class StepBook:
    """What a session's transports know of its workers: address -> plan token -> the peers'
    signature it was loaded with (a plan loaded by one transport is loaded for all), and the
    addresses of workers without daskgraph's handlers."""

    loaded: dict[str, dict[str, tuple]] = field(default_factory=dict)
    without: set[str] = field(default_factory=set)

    def has(self, address: str, token: str, signature: tuple) -> bool:
        """Whether the worker at ``address`` holds plan ``token`` loaded with ``signature``."""
        return self.loaded.get(address, {}).get(token) == signature

    def mark(self, address: str, token: str, signature: tuple) -> None:
        """The worker at ``address`` ran plan ``token`` loaded with ``signature``."""
        self.loaded.setdefault(address, {})[token] = signature

    def drop(self, address: str, token: str) -> None:
        """The worker at ``address`` no longer holds plan ``token`` (it said it lost it)."""
        self.loaded.get(address, {}).pop(token, None)

    def forget(self) -> None:
        """Send every plan again (the workers may have moved)."""
        self.loaded.clear()
        self.without.clear()


@dataclass
class StepCall:
    """One attempt at a compiled step: the plan, the run's key, the step, the feeds' values,
    whether to trace and the liveness tick; the workers' addresses are read on first use."""

    compiled: CompiledRun
    key: str
    step: RunStep
    values: Sequence[Any]
    trace: bool
    tick: float
    watch: ClusterWatch

    @functools.cached_property
    def started(self) -> dict[Any, str | None]:
        """Each worker's address as the step starts (raises UnavailableError at once if one
        is missing)."""
        return workers_now(self.watch, self.compiled.plan)

    @functools.cached_property
    def peers(self) -> dict[str, str | None]:
        """The addresses of the step's workers by name."""
        started = self.started
        return {str(name): started[name] for name in self.compiled.worker_steps}

    @functools.cached_property
    def near(self) -> dict[str, StepService]:
        """The services of the step's workers that live in this process, by name (looked up
        once per step, whichever transport carries it)."""
        peers = self.peers
        return {n: s for n, a in peers.items() if (s := local_service(str(a))) is not None}

    @functools.cached_property
    def signature(self) -> tuple:
        """The plan's workers and their addresses: a worker loads the plan again when this
        changed (a peer moved)."""
        return tuple(sorted(self.peers.items()))


class Transport(Protocol):
    """A way to carry a compiled step's messages to its workers and their replies back."""

    name: str

    def carry(self, call: StepCall) -> StepOutcome | None:
        """The step's outcome, or None when this transport cannot carry it (the next is
        tried). Raises :class:`~daskgraph.errors.UnavailableError` for lost workers and what
        the :class:`~daskgraph.runtime.client.run_watch.RunWatch` raises."""
        ...

    def release(self, compiled: CompiledRun) -> None:
        """Free ``compiled``'s plan where this transport loaded it."""
        ...

    def forget(self) -> None:
        """Look the workers up again on the next step (the cluster changed)."""
        ...


class InProcessTransport:
    """The zero-hop transport: every partition on one worker of this process, run by a plain
    call (see the module)."""

    name = "in-process"

    def __init__(self, devices: InProcessDevices) -> None:
        self.devices = devices

    def carry(self, call: StepCall) -> StepOutcome | None:
        """The partitions' outputs, or None when the plan's worker is elsewhere (or closing)
        or the run has a deadline (and does not block)."""
        compiled = call.compiled
        outputs = self.devices.run(
            compiled.plan, call.step, call.values, call.trace, compiled.blocking
        )
        return None if outputs is None else StepOutcome(outputs, [], {})

    def release(self, compiled: CompiledRun) -> None:
        """Nothing is loaded anywhere: the worker's state is at hand."""

    def forget(self) -> None:
        """Look the workers of this process up again."""
        self.devices.forget()
