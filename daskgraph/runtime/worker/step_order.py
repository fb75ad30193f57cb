"""A compiled step's partitions run one after another in the calling thread.

Where a step needs one round trip (:func:`~daskgraph.runtime.planner.step_split.one_round`),
nothing has to wait for a message in the middle of a worker's part: the partitions of a
worker reached through a step channel (:mod:`~daskgraph.runtime.worker.step_channel`) run in
the channel's thread as soon as the message is read, and those of the client's own workers
run in the thread that called ``Session.run``, before the messages leave and after the
replies came. :class:`OrderedStep` holds one such run: what each partition made, by the
plan's index, and where each partition's time went.

>>> from daskgraph.runtime.program import PartitionProgram, RunStep, StepPart
>>> from daskgraph.runtime.worker.worker_state import WorkerState
>>> class Host:
...     state, address = WorkerState(), "here"
...     def ran(self, token, part, seconds): pass
>>> prog = PartitionProgram("d", "CPU", "numpy", 1, (), (), (), ())
>>> part = StepPart(0, prog, (), (), (), ())
>>> run = OrderedStep("t", RunStep("s", 1), {}, False)
>>> run.run([(Host(), part)])
>>> run.results
{0: ()}
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from typing import Any

from daskgraph.runtime.program import RunStep, StepPart
from daskgraph.runtime.worker.execution import RunFailure
from daskgraph.runtime.worker.step_run import StepHost, StepTiming, as_read, call_part

__all__ = ["OrderedStep"]


class OrderedStep:
    """Partitions of one step run in order in the calling thread (see the module).

    Parameters
    ----------
    token
        The plan's token (for the hosts' record of run times).
    step
        The run's :class:`~daskgraph.runtime.program.RunStep`.
    feeds
        The run's feed values the partitions read, by feed index.
    trace
        Whether the partitions record a trace.
    """

    def __init__(self, token: str, step: RunStep, feeds: Mapping[int, Any], trace: bool):
        self.token, self.step, self.feeds, self.trace = token, step, feeds, trace
        #: outputs (a tuple) or the RunFailure of every partition run or received, by index
        self.results: dict[int, Any] = {}
        self.timing: dict[int, StepTiming] = {}
        self._started = time.perf_counter()

    def receive(self, producer: int, values: Any) -> None:
        """Outputs of partition ``producer`` that ran elsewhere (by index), or its failure."""
        self.results[producer] = as_read(values)

    def run(self, parts: Iterable[tuple[StepHost, StepPart]]) -> None:
        """Run each of ``parts`` (in the order given, a topological one) on its host's state;
        raises ``KeyError`` for a partition whose inputs are not all here."""
        for host, part in parts:
            dependencies = tuple(self.results[d] for d in part.dependencies)
            ready = time.perf_counter()
            result = call_part(host, self.token, part, self.step, self.feeds, self.trace,
                               dependencies)  # fmt: skip
            self.results[part.index] = result
            self.timing[part.index] = StepTiming(
                ready - self._started, time.perf_counter() - ready, 0.0
            )

    def sent(self, part: StepPart, worker: str) -> Any:
        """What ``part`` sends ``worker``: the outputs it reads there, by index (or the
        failure)."""
        result = self.results[part.index]
        if isinstance(result, RunFailure):
            return result
        outputs = dict(part.sends)[worker]
        return {i: result[i] for i in outputs}
