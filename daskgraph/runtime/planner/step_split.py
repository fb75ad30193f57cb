"""Split a plan into one :class:`~daskgraph.runtime.program.WorkerStep` per worker.

A compiled step (TensorFlow's registered partition graphs) runs a plan without the Dask
scheduler: the client sends each worker holding partitions one message, and the partitions
send each other just the tensors their consumers read, as TensorFlow's ``Send``/``Recv``
pairs do. This module works out, as plain data, who sends what to whom:

* a producer sends one message per *destination worker* (not per consumer partition), holding
  the union of the outputs that worker's partitions read; a consumer that only waits for a
  producer (a control dependency) gets a message with no tensors;
* the client receives only fetched outputs, from the partitions that hold them;
* partitions on the same worker read each other's outputs by reference (no message).

>>> from daskgraph.runtime.planner.lowering import Partition, Plan
>>> from daskgraph.runtime.program import PartitionProgram
>>> def prog(inputs, outputs):
...     return PartitionProgram("d", "CPU", "numpy", 4, inputs, (), (), outputs)
>>> gpu = Partition(0, "/gpu:0", "g", prog((), ((0, False), (1, False))), (), ())
>>> cpu = Partition(1, "/cpu:0", "c", prog(((0, 1, 0),), ((1, False),)), (0,), ())
>>> steps = worker_steps(Plan((gpu, cpu), ((1, 0),), (), (1,)))
>>> steps["g"].parts[0].sends, steps["g"].parts[0].to_client
((('c', (1,)),), ())
>>> steps["c"].remote, steps["c"].parts[0].to_client
((0,), (0,))
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from daskgraph.runtime.planner.lowering import Partition, Plan
from daskgraph.runtime.program import StepPart, WorkerStep

__all__ = ["OneRound", "one_round", "worker_steps"]


def worker_steps(plan: Plan) -> dict[str, WorkerStep]:
    """One :class:`~daskgraph.runtime.program.WorkerStep` per worker of ``plan`` (by the
    worker's name), each with its partitions in the plan's topological order."""
    reads = _reads_by_destination(plan)
    fetched = _fetched_outputs(plan)
    parts: dict[str, list[StepPart]] = {}
    remote: dict[str, list[int]] = {}
    for p in plan.partitions:
        sends = tuple(sorted(reads.get(p.index, {}).items()))
        part = StepPart(
            p.index,
            p.program,
            p.dependencies,
            p.feed_indices,
            tuple((worker, tuple(sorted(outputs))) for worker, outputs in sends),
            tuple(sorted(fetched.get(p.index, ()))),
            p.predictable,
        )
        parts.setdefault(p.worker, []).append(part)
        for worker, _ in sends:
            remote.setdefault(worker, []).append(p.index)
    return {
        worker: WorkerStep(worker, tuple(mine), tuple(remote.get(worker, ())))
        for worker, mine in parts.items()
    }


def _reads_by_destination(plan: Plan) -> dict[int, dict[str, set[int]]]:
    """producer partition -> destination worker -> the producer's outputs read there (an
    empty set: only a control dependency)."""
    worker_of = [p.worker for p in plan.partitions]
    reads: dict[int, dict[str, set[int]]] = {}
    for consumer in plan.partitions:
        for position, producer in enumerate(consumer.dependencies):
            if worker_of[producer] == consumer.worker:
                continue
            outputs = reads.setdefault(producer, {}).setdefault(consumer.worker, set())
            outputs.update(_outputs_read(consumer, position))
    return reads


def _outputs_read(consumer: Partition, position: int) -> set[int]:
    """The outputs of ``consumer``'s dependency at ``position`` that its program reads."""
    return {index for dep, index, _ in consumer.program.inputs if dep == position}


def _fetched_outputs(plan: Plan) -> dict[int, set[int]]:
    """partition -> the outputs of it the client fetches."""
    fetched: dict[int, set[int]] = {}
    for location in plan.fetches:
        if location is not None:
            fetched.setdefault(location[0], set()).add(location[1])
    return fetched


@dataclass(frozen=True)
class OneRound:
    """A step that one message to each worker outside the client's process and one reply
    from it can run (see :func:`one_round`): the partitions of the client's own workers that
    run ``before`` the messages leave (what they send the other workers rides in the
    messages) and ``after`` the replies came (reading what the replies carried), each in the
    plan's topological order."""

    before: tuple[int, ...]
    after: tuple[int, ...]


def one_round(steps: Mapping[str, WorkerStep], near: frozenset[str]) -> OneRound | None:
    """How a step runs in one round trip to each worker not in ``near`` (the client's
    process), or ``None`` when it cannot: a partition of such a worker reads from, or sends
    to, another such worker, or reads a partition here that itself waits for one of them.

    >>> from daskgraph.runtime.program import PartitionProgram
    >>> prog = PartitionProgram("d", "CPU", "numpy", 1, (), (), (), ())
    >>> def part(i, deps=(), sends=()):
    ...     return StepPart(i, prog, deps, (), sends, ())
    >>> cpu = WorkerStep("cpu", (part(0, sends=(("g0", ()), ("g1", ()))), part(3, (1, 2))), (1, 2))
    >>> g0 = WorkerStep("g0", (part(1, (0,), (("cpu", ()),)),), (0,))
    >>> g1 = WorkerStep("g1", (part(2, (0,), (("cpu", ()),)),), (0,))
    >>> one_round({"cpu": cpu, "g0": g0, "g1": g1}, frozenset({"cpu"}))
    OneRound(before=(0,), after=(3,))
    >>> chain = WorkerStep("g1", (part(2, (1,), (("cpu", ()),)),), (1,))
    >>> g0_to_g1 = WorkerStep("g0", (part(1, (0,), (("g1", ()),)),), (0,))
    >>> one_round({"cpu": cpu, "g0": g0_to_g1, "g1": chain}, frozenset({"cpu"})) is None
    True
    """
    owner = {part.index: name for name, step in steps.items() for part in step.parts}
    parts = sorted((p for step in steps.values() for p in step.parts), key=lambda p: p.index)
    waits: set[int] = set()  # partitions that wait, directly or not, for a worker away
    for part in parts:
        away = owner[part.index] not in near
        if away or any(d in waits for d in part.dependencies):
            waits.add(part.index)
        if not away:
            continue
        for dependency in part.dependencies:
            mine = owner[dependency] == owner[part.index]
            if not mine and (owner[dependency] not in near or dependency in waits):
                return None
        if any(worker not in near for worker, _ in part.sends):
            return None
    here = [p.index for p in parts if owner[p.index] in near]
    return OneRound(
        before=tuple(i for i in here if i not in waits),
        after=tuple(i for i in here if i in waits),
    )
