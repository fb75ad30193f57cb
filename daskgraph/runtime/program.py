"""The program format: what lowering writes and a worker executes, as plain data.

A :class:`PartitionProgram` is one partition's ops in order, as :class:`Instruction` records
over numbered *slots*; :mod:`daskgraph.runtime.planner.lowering` writes programs and
:mod:`daskgraph.runtime.worker.execution` runs them. A :class:`RunStep` says which ``Session.run``
call a
program runs for. Nothing here imports the planner, so the worker side needs only this module.

>>> ins = Instruction("two", "Const", print, {}, (), 0, False, ())
>>> ins.free
()
>>> RunStep("session", 3).number
3
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import repeat
from typing import Any, NamedTuple

__all__ = [
    "FEED",
    "Instruction",
    "PartitionProgram",
    "RunStep",
    "StagedFeed",
    "StepPart",
    "WorkerStep",
    "op_names",
    "select_outputs",
]

#: the executor reads this slot's value from the feeds instead of running an op
FEED = -1


class Instruction(NamedTuple):
    """One op of a partition: ``slots[out] = kernel(xp, [store,] *slots[args], **attrs)``.

    A named tuple, not a dataclass: programs hold thousands of them, and tuples pickle and
    unpickle several times faster.
    """

    op_name: str
    op_type: str
    kernel: Any
    attrs: dict
    args: tuple[int, ...]
    out: int
    stateful: bool
    deref: tuple[int, ...]  # positions in ``args`` holding variable refs to read
    free: tuple[int, ...] = ()  # slots last read here (not outputs): dropped after it runs


def op_names(ins: Instruction) -> tuple[str, ...]:
    """The graph ops ``ins`` runs: its own, or those of a fused kernel (its ``op_names``, see
    :mod:`daskgraph.runtime.planner.fusion`).

    >>> op_names(Instruction("two", "Const", print, {}, (), 0, False, ()))
    ('two',)
    """
    return getattr(ins.kernel, "op_names", None) or (ins.op_name,)


@dataclass(frozen=True, slots=True)
class PartitionProgram:
    """What a partition task runs on its worker; plain data, pickled into the task.

    ``inputs`` are ``(dependency position, output index, slot)``; ``feeds`` are
    ``(feed position, slot)``; ``outputs`` are ``(slot, to_host)`` where ``to_host`` asks for
    a host (NumPy) copy because the value goes back to the client.
    """

    device: str
    device_type: str
    backend: str
    n_slots: int
    inputs: tuple[tuple[int, int, int], ...]
    feeds: tuple[tuple[int, int], ...]
    instructions: tuple[Instruction, ...]
    outputs: tuple[tuple[int, bool], ...]

    def __reduce__(self) -> tuple[Any, tuple]:
        """Pickle the instructions as columns (one tuple per field), not one named tuple
        each: a named tuple pickles through a Python-level ``__getnewargs__`` and unpickles
        through its Python-level ``__new__``, which at a million ops took seconds each way.

        >>> import pickle
        >>> ins = Instruction("two", "Const", print, {}, (), 0, False, ())
        >>> prog = PartitionProgram("/device:CPU:0", "CPU", "numpy", 1, (), (), (ins,), ())
        >>> pickle.loads(pickle.dumps(prog)) == prog
        True
        """
        columns = tuple(zip(*self.instructions, strict=True))
        fields = (self.device, self.device_type, self.backend, self.n_slots, self.inputs)
        return (_unpickle_program, (*fields, self.feeds, columns, self.outputs))


def _unpickle_program(
    device: str,
    device_type: str,
    backend: str,
    n_slots: int,
    inputs: tuple,
    feeds: tuple,
    columns: tuple[tuple, ...],
    outputs: tuple,
) -> PartitionProgram:
    """A :class:`PartitionProgram` from :meth:`PartitionProgram.__reduce__`'s columns."""
    instructions = tuple(map(tuple.__new__, repeat(Instruction), zip(*columns, strict=True)))
    return PartitionProgram(
        device, device_type, backend, n_slots, inputs, feeds, instructions, outputs
    )


def select_outputs(result: Any, wanted: tuple[int, ...]) -> Any:
    """The outputs at positions ``wanted`` of a partition's ``result``, in place (``None``
    elsewhere, so that a consumer reads them at the positions it knows), or ``result``
    itself when it is not a tuple of outputs (a failure, passed on).

    The task that runs it sits on the producer's worker, so that only the outputs a consumer
    (or the client) reads leave that worker, not every output of the partition.

    >>> select_outputs(("big", "small", "other"), (1,))
    (None, 'small')
    >>> select_outputs(("big",), ())
    ()
    >>> failure = object()
    >>> select_outputs(failure, (0,)) is failure
    True
    """
    if type(result) is not tuple:
        return result
    picked: list[Any] = [None] * (max(wanted) + 1 if wanted else 0)
    for i in wanted:
        picked[i] = result[i]
    return tuple(picked)


@dataclass(frozen=True, slots=True)
class RunStep:
    """Which run a partition belongs to: the session, and the number of its ``Session.run``
    call. A run repeated after a worker loss keeps its number, so that a stateful op (an
    assign) that already ran on a surviving worker is not applied a second time. ``oldest``
    is the number of the session's oldest run still under way when this one started (runs
    from several threads overlap; ``None``: this one): what older runs applied need not be
    remembered. ``deadline``: the run's deadline (wall-clock time, timeout in ms; see
    :func:`daskgraph.deadline.sent_deadline`), which kernels that block honour. (A dataclass,
    not a tuple: inside a Dask task a tuple would be read as a task or a list of arguments.)"""

    session: str
    number: int
    oldest: int | None = None
    deadline: tuple[float, int] | None = None


@dataclass(frozen=True, slots=True)
class StagedFeed:
    """Stands, in a run's task, for a large feed value sent ahead to the worker that reads
    it (kept in the session's state there under ``token``, until the partition takes it):
    it is sent there through the worker's step service, not scattered (scattered data cannot be
    recomputed, and the scheduler reports its loss with a worker as an error)."""

    token: str


@dataclass(frozen=True, slots=True)
class StepPart:
    """One partition of a compiled step, as the worker that runs it sees it.

    ``dependencies`` are the plan's indices of the partitions it reads (in the order its
    program reads them); those on other workers arrive as messages, one per producer and
    destination. ``sends`` are ``(destination worker, output indices)``: after it ran, the
    partition sends just those outputs to that worker (no indices: only that it ran, for a
    control dependency). ``to_client`` are the output indices the client fetches.
    ``predictable``: its ops' shapes are static and none runs for a data-dependent time.
    """

    index: int
    program: PartitionProgram
    dependencies: tuple[int, ...]
    feed_indices: tuple[int, ...]
    sends: tuple[tuple[str, tuple[int, ...]], ...]
    to_client: tuple[int, ...]
    predictable: bool = False  # may run on the event loop when its last run was short


@dataclass(frozen=True, slots=True)
class WorkerStep:
    """What one worker does in a compiled step (TensorFlow's registered partition graph):
    its partitions in a topological order, and the producers on other workers whose outputs
    it receives (``remote``). Written once per plan by
    :func:`daskgraph.runtime.planner.step_split.worker_steps`, loaded once per worker, and run
    by :mod:`daskgraph.runtime.worker.step_service` on each step's one message."""

    worker: str
    parts: tuple[StepPart, ...]
    remote: tuple[int, ...]
