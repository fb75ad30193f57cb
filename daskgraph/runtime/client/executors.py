"""The two ways a compiled run reaches its workers: compiled steps, and the scheduler's path.

A session runs each plan by its :class:`StepExecutor` when it takes the plan, else by its
:class:`SchedulerExecutor`:

* :class:`StepExecutor`: the plan as a compiled step, one message per worker straight from
  the client and one reply, tensors sent worker to worker, no scheduler; a one-partition
  plan is a one-device step. The messages travel by the first
  :class:`~daskgraph.runtime.client.transports.Transport` that carries the step: in this
  process by reference (no message at all), a step channel (a local socket to a worker on
  this machine, for a step of one round trip), or Dask's comm (``tcp``, ``tls``, ``ucx``).
  It declines a plan that may block (a dequeue waiting for another run) outside this
  process, a worker without daskgraph's handlers, a failure that is not a lost worker, and
  every plan under ``daskgraph.compiled-steps: false``.
* :class:`SchedulerExecutor`: any plan, as a Dask graph through the scheduler
  (:func:`~daskgraph.runtime.client.dispatch.submit_run`), large feeds sent ahead to the
  workers' step services.

Each returns the run's outputs by partition and the name of the way it went (the
transport's, or ``"scheduler"``), or ``None`` when it cannot take the plan. Errors (a lost
worker, a deadline) are raised, not passed over: recovering from them is the session's job
(:mod:`~daskgraph.runtime.client.recovery`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from daskgraph.cluster.liveness import ClusterWatch
from daskgraph.runtime.client.dispatch import CompiledRun, FeedStager, submit_run
from daskgraph.runtime.client.transports import StepCall, StepOutcome, StepReport, Transport
from daskgraph.runtime.program import RunStep
from daskgraph.runtime.worker.wire import by_index

__all__ = ["Ran", "RunRequest", "SchedulerExecutor", "StepExecutor"]

Outputs = dict[int, tuple]
#: a run's outputs by partition, and the name of the way it went
Ran = tuple[Outputs, str]


@dataclass(frozen=True)
class RunRequest:
    """One attempt at a run: the compiled plan, the keys' prefix, the step, the feeds' values,
    whether to trace, the liveness tick (seconds) of its waits and whether compiled steps
    may take it (``daskgraph.compiled-steps``, read once per run)."""

    compiled: CompiledRun
    prefix: str
    step: RunStep
    values: Sequence[Any]
    trace: bool
    tick: float
    compiled_steps: bool = True


class StepExecutor:
    """Runs plans as compiled steps, by the first transport that carries each step.

    >>> from types import SimpleNamespace
    >>> class Declines:
    ...     name = "away"
    ...     def carry(self, call): return None
    >>> class Carries:
    ...     name = "here"
    ...     def carry(self, call): return StepOutcome({0: {0: 6.0}}, [], {})
    >>> plan = SimpleNamespace(partitions=[SimpleNamespace(device="/cpu:0")])
    >>> request = RunRequest(SimpleNamespace(plan=plan), "k", None, (), False, 1.0)
    >>> StepExecutor(None, [Declines(), Carries()]).run(request)
    ({0: (6.0,)}, 'here')
    """

    name = "steps"

    def __init__(
        self,
        watch: ClusterWatch | None,
        transports: Sequence[Transport],
        on_step: Callable[[CompiledRun, StepReport], None] | None = None,
    ) -> None:
        self.watch, self.transports, self.on_step = watch, list(transports), on_step

    def run(self, request: RunRequest) -> Ran | None:
        """The outputs and the transport's name, or None (switched off, or no transport can
        carry the step: the scheduler runs it). Raises the first failure of a partition,
        :class:`~daskgraph.errors.UnavailableError` for lost workers and
        :class:`~daskgraph.errors.DeadlineExceededError`."""
        r = request
        if not r.compiled_steps:
            return None
        call = StepCall(r.compiled, r.prefix, r.step, r.values, r.trace, r.tick, self.watch)
        for transport in self.transports:
            outcome = transport.carry(call)  # type: ignore[arg-type]
            if outcome is not None:
                return self._finish(r.compiled, outcome, transport.name), transport.name
        return None

    def _finish(self, compiled: CompiledRun, outcome: StepOutcome, name: str) -> Outputs:
        """The outputs by partition; reports the step's timing (where its workers measured
        it), then raises the first failure in the plan's order."""
        outputs = {
            index: by_index(values) if isinstance(values, dict) else values
            for index, values in outcome.outputs.items()
        }
        if self.on_step is not None and outcome.timing:
            partitions = compiled.plan.partitions
            timing = {i: (partitions[i].device, spent) for i, spent in outcome.timing.items()}
            self.on_step(compiled, StepReport(timing))
        if outcome.failures:
            raise min(outcome.failures, key=lambda f: f[0])[1].error
        return outputs

    def release(self, compiled: CompiledRun) -> None:
        """Free ``compiled``'s plan where a transport loaded it (a plan the session's cache
        evicted); nothing is waited for."""
        for transport in self.transports:
            transport.release(compiled)

    def forget(self) -> None:
        """Look the workers up again and send every plan again (the workers may have moved)."""
        for transport in self.transports:
            transport.forget()


class SchedulerExecutor:
    """Runs any plan as one Dask graph through the scheduler, large feeds sent ahead to the
    workers' step services."""

    name = "scheduler"

    def __init__(self, client: Any, watch: ClusterWatch, stager: FeedStager) -> None:
        self.client, self.watch, self.stager = client, watch, stager

    def run(self, request: RunRequest) -> Ran:
        """Run through the scheduler: it takes every plan."""
        r = request
        outputs = submit_run(
            self.client, self.watch, r.compiled, r.prefix, r.step, r.values, r.trace, r.tick,
            self.stager,
        )  # fmt: skip
        return outputs, self.name

    def release(self, compiled: CompiledRun) -> None:
        """Ship ``compiled``'s programs again should it run again."""
        compiled.forget_programs()
