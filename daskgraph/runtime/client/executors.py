"""The ways a compiled run reaches its workers, behind one interface, tried quickest first.

A session holds an :class:`ExecutorChain` of four :class:`Executor` s:

* :class:`InProcessExecutor`: every partition on a worker of this process (the embedded CPU
  worker) runs by a plain call in the caller's thread (:mod:`~daskgraph.runtime.client.inprocess`);
* :class:`ActorExecutor`: a one-partition plan goes to the executor actor of its worker, without
  the scheduler (:class:`~daskgraph.runtime.client.dispatch.FastPath`);
* :class:`CompiledStepExecutor`: a plan of several partitions as one message per worker,
  tensors sent worker to worker, without the scheduler
  (:mod:`~daskgraph.runtime.client.compiled_steps`; ``daskgraph.compiled-steps``);
* :class:`SchedulerExecutor`: anything, as a Dask graph through the scheduler
  (:func:`~daskgraph.runtime.client.dispatch.submit_run`).

Each returns the run's outputs by partition, or ``None`` when it cannot take the plan, and the
chain moves on to the next; the last one takes every plan. Errors (a lost worker, a deadline)
are raised, not passed over: recovering from them is the session's job
(:mod:`~daskgraph.runtime.client.recovery`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from daskgraph.runtime.client.compiled_steps import CompiledSteps
from daskgraph.runtime.client.dispatch import CompiledRun, FastPath, submit_run
from daskgraph.runtime.client.inprocess import InProcessDevices
from daskgraph.runtime.program import RunStep

__all__ = [
    "ActorExecutor",
    "CompiledStepExecutor",
    "Executor",
    "ExecutorChain",
    "InProcessExecutor",
    "RunRequest",
    "SchedulerExecutor",
]

Outputs = dict[int, tuple]


@dataclass(frozen=True)
class RunRequest:
    """One attempt at a run: the compiled plan, the keys' prefix, the step, the feeds' values,
    whether to trace, the liveness tick (seconds) of its waits, whether the fast paths
    (in-process and actor) may take it (``daskgraph.fast-path``) and whether compiled steps
    may (``daskgraph.compiled-steps``), both read once per run."""

    compiled: CompiledRun
    prefix: str
    step: RunStep
    values: Sequence[Any]
    trace: bool
    tick: float
    fast_path: bool = True
    compiled_steps: bool = True


class Executor(Protocol):
    """A way to run a compiled plan: its outputs by partition, or ``None`` to pass it on."""

    name: str

    def run(self, request: RunRequest) -> Outputs | None:
        """The run's outputs by partition, or None when this executor cannot take it."""
        ...


class InProcessExecutor:
    """Runs plans whose partitions are all on one worker of this process, in this thread."""

    name = "in-process"

    def __init__(self, devices: InProcessDevices) -> None:
        self.devices = devices

    def run(self, request: RunRequest) -> Outputs | None:
        """Run here, or None when the plan's worker is elsewhere or the run has a deadline."""
        if not request.fast_path:
            return None
        compiled = request.compiled
        return self.devices.run(
            compiled.plan, request.step, request.values, request.trace, compiled.blocking
        )


class ActorExecutor:
    """Runs one-partition plans by a direct call to their worker's executor actor. A plan that
    may block (a dequeue waiting for another run) stays off the actor's one thread."""

    name = "actor"

    def __init__(self, fast: FastPath) -> None:
        self.fast = fast

    def run(self, request: RunRequest) -> Outputs | None:
        """Run through the actor, or None for a plan of several partitions (or one that may
        block), or when the actor failed while its worker stayed."""
        compiled = request.compiled
        if not request.fast_path or not compiled.single_partition or compiled.blocking:
            return None
        return self.fast.run(compiled, request.step, request.values, request.trace, request.tick)


class CompiledStepExecutor:
    """Runs plans of several partitions as compiled steps: one message per worker, straight
    from the client, the workers sending each other the tensors. A plan that may block (a
    dequeue waiting for another run) keeps the scheduler's path."""

    name = "compiled"

    def __init__(self, steps: CompiledSteps) -> None:
        self.steps = steps

    def run(self, request: RunRequest) -> Outputs | None:
        """Run as a compiled step, or None (switched off, a blocking plan, or a worker that
        cannot take it: the scheduler runs it)."""
        r = request
        if not r.compiled_steps or r.compiled.blocking:
            return None
        return self.steps.run(r.compiled, r.prefix, r.step, r.values, r.trace, r.tick)


class SchedulerExecutor:
    """Runs any plan as one Dask graph through the scheduler, large feeds sent ahead by the
    session's actors."""

    name = "scheduler"

    def __init__(self, client: Any, watch: Any, fast: FastPath) -> None:
        self.client, self.watch, self.fast = client, watch, fast

    def run(self, request: RunRequest) -> Outputs | None:
        """Run through the scheduler: it takes every plan."""
        r = request
        return submit_run(
            self.client, self.watch, r.compiled, r.prefix, r.step, r.values, r.trace, r.tick,
            self.fast,
        )  # fmt: skip


class ExecutorChain:
    """Executors tried in order; the first that takes a plan runs it.

    >>> class Never:
    ...     name = "never"
    ...     def run(self, request): return None
    >>> class Always:
    ...     name = "always"
    ...     def run(self, request): return {0: ("done",)}
    >>> chain = ExecutorChain([Never(), Always()])
    >>> tried = []
    >>> chain.run(None, tried)
    ({0: ('done',)}, 'always')
    >>> tried
    ['never', 'always']
    """

    def __init__(self, executors: Sequence[Executor]) -> None:
        self.executors = list(executors)

    def run(self, request: RunRequest, tried: list[str] | None = None) -> tuple[Outputs, str]:
        """The outputs of the first executor that takes ``request``, and its name; ``tried``
        (if given) gets the name of each executor asked, so that a caller knows which one
        raised. Raises what that executor raised, or RuntimeError when none takes the plan
        (the chain must end with one that takes any)."""
        for executor in self.executors:
            if tried is not None:
                tried.append(executor.name)
            outputs = executor.run(request)
            if outputs is not None:
                return outputs, executor.name
        raise RuntimeError(f"no executor took the plan: {[e.name for e in self.executors]}")
