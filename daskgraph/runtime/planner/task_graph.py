"""The Dask graph of one run: one task per partition, restricted to its device's worker.

Its one job is to turn a :class:`~daskgraph.runtime.planner.lowering.Plan` plus feed values
into a Dask ``HighLevelGraph`` (:func:`build_task_graph`) whose every task carries an explicit
worker restriction (no fusion is applied, because fusion drops annotations, dask/dask#7036),
in which only the tensors a consumer (or the client) reads leave a partition's worker, and
to name those tasks: their group per device (:func:`task_group`) and their label, the
partition's main ops (:func:`main_ops`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from dask.highlevelgraph import HighLevelGraph, MaterializedLayer

from daskgraph.runtime.program import Instruction, select_outputs

if TYPE_CHECKING:
    from daskgraph.runtime.planner.lowering import Plan

__all__ = ["build_task_graph", "main_ops", "task_group"]

#: A partition's outputs that no other worker (nor the client) reads stay on its worker, by a
#: small task there selecting those read, when the unread ones add up to at least this many
#: bytes or their size is not known; smaller ones travel along. 1 MiB: a task costs the
#: scheduler a round trip, about as long as sending 1 MiB. Read at each call through this
#: module, so a test may patch it.
SELECTED_OUTPUT_BYTES = 1 << 20


def build_task_graph(
    plan: Plan,
    key_prefix: str,
    step: Any,
    feed_values: Sequence[Any],
    execute: Any,
    trace: bool = False,
    programs: Sequence[Any] | None = None,
    sent_feeds: dict[int, Any] | None = None,
) -> tuple[HighLevelGraph, list[tuple[str, str, int]]]:
    """The Dask graph of one run: one task per partition, each restricted to its device's
    worker by the worker's *name*, which the scheduler resolves when the run is submitted (so
    a worker restarted under its device's name takes the plan's partitions again).

    Tasks are Dask's classic tuples ``(execute, program, step, feeds, trace, *dependencies)``
    in one ``MaterializedLayer`` per task, whose annotations carry the restriction (no
    fusion is applied: fusion drops annotations, dask/dask#7036). ``execute`` is the
    worker-side function (:func:`daskgraph.runtime.worker.execution.execute_partition`);
    ``step`` identifies the run to it (a :class:`daskgraph.runtime.program.RunStep`).
    ``programs`` are the programs already on their workers (futures, see
    :mod:`daskgraph.runtime.client.dispatch`); without them the programs travel in the graph.
    ``sent_feeds`` maps feed positions to futures of values already sent to a worker: those
    feeds are referenced, not embedded.

    Only what is needed moves. A partition returns all its outputs as one tuple; where the
    partitions of another worker read only some, they depend on a *selection* of those, a
    small task on the producer's worker (:func:`~daskgraph.runtime.program.select_outputs`),
    and the client gathers the selection of a partition's fetched outputs (unless tracing:
    each whole result then ends with its statistics), wherever the outputs left behind are
    large (:data:`SELECTED_OUTPUT_BYTES`) or of unknown size, as a task costs the
    scheduler a round trip. Returns the graph and, for every partition, the key the client
    gathers for its results: its own or its fetched outputs' selection.

    A key is ``(task_group(device), f"{key_prefix}-{label}", partition)`` (a selection's
    name ends with ``-out<n>``): Dask groups tasks (and keeps metrics and caches) by the key's
    first element, which is the same for every run on a device and for the programs resident
    there (:func:`task_group`), so that a long program's runs add nothing up in the scheduler
    and on the workers; the run (``key_prefix``, unique per run) and the partition make the
    key unique, and the partition's main ops (``label``) say in Dask's task stream what it
    computes.
    """
    keys = [
        (task_group(p.device), f"{key_prefix}-{p.label}" if p.label else key_prefix, p.index)
        for p in plan.partitions
    ]
    graph = _Layers(plan, keys, SELECTED_OUTPUT_BYTES)
    reads = _reads_elsewhere(plan)
    for p, key in zip(plan.partitions, keys, strict=True):
        feeds = [
            sent_feeds[i] if sent_feeds and i in sent_feeds else feed_values[i]
            for i in p.feed_indices
        ]
        program = programs[p.index] if programs is not None else p.program
        inputs = [graph.read(d, reads.get((d, p.worker))) for d in p.dependencies]
        graph.add(key, (execute, program, step, feeds, trace, *inputs), p.worker, inputs)
    gathered = list(keys)
    if not trace:
        for r in plan.result_partitions:
            gathered[r] = graph.read(r, {loc[1] for loc in plan.fetches if loc and loc[0] == r})
    return HighLevelGraph(graph.layers, graph.dependencies), gathered


class _Layers:
    """The layers of a run's graph as they are added, with the selections made so far."""

    def __init__(self, plan: Plan, keys: list[tuple[str, str, int]], threshold: int) -> None:
        self.plan = plan
        self.keys = keys
        self.threshold = threshold  # the bytes left behind that make a selection worth it
        self.layers: dict[str, MaterializedLayer] = {}
        self.dependencies: dict[str, set[str]] = {}
        self.selections: dict[tuple[int, tuple[int, ...]], tuple[str, str, int]] = {}

    def add(self, key: tuple[str, str, int], task: tuple, worker: str, inputs: list) -> None:
        """Add ``task`` under ``key``, restricted to ``worker``; ``inputs`` are its
        dependencies' keys."""
        name = _layer_name(key)
        self.layers[name] = MaterializedLayer(
            {key: task}, annotations={"workers": [worker], "allow_other_workers": False}
        )
        self.dependencies[name] = {_layer_name(k) for k in inputs}

    def read(self, producer: int, wanted: set[int] | None) -> tuple[str, str, int]:
        """The key to depend on for outputs ``wanted`` of partition ``producer`` (``None``: a
        reader on the producer's own worker): the partition's own, or a selection of them
        where what it leaves behind is large (or of unknown size)."""
        partition = self.plan.partitions[producer]
        outputs = len(partition.program.outputs)
        if wanted is None or len(wanted) >= outputs:
            return self.keys[producer]
        sizes = partition.output_bytes
        if len(sizes) == outputs:
            left = [sizes[i] for i in range(outputs) if i not in wanted]
            if None not in left and sum(left) < self.threshold:  # type: ignore[arg-type]
                return self.keys[producer]
        chosen = tuple(sorted(wanted))
        key = self.selections.get((producer, chosen))
        if key is None:
            group, name, index = self.keys[producer]
            key = (group, f"{name}-out{len(self.selections)}", index)
            self.selections[producer, chosen] = key
            source = self.keys[producer]
            self.add(key, (select_outputs, source, chosen), partition.worker, [source])
        return key


def _reads_elsewhere(plan: Plan) -> dict[tuple[int, str], set[int]]:
    """(producer, worker) -> the producer's outputs that partitions on that worker read, for
    every producer whose readers are on another worker than its own (a reader that only waits
    for the producer, a control dependency, reads nothing)."""
    partitions = plan.partitions
    reads: dict[tuple[int, str], set[int]] = {}
    for p in partitions:
        by_position: dict[int, set[int]] = {}
        for position, output, _ in p.program.inputs:
            by_position.setdefault(position, set()).add(output)
        for position, d in enumerate(p.dependencies):
            if partitions[d].worker != p.worker:
                reads.setdefault((d, p.worker), set()).update(by_position.get(position, ()))
    return reads


#: op types that say nothing of what a partition computes
_PLUMBING = frozenset({"Const", "Identity", "NoOp", "Placeholder", "VariableV2", "Variable"})


def main_ops(instructions: Sequence[Instruction], most: int = 2) -> str:
    """The ``most`` commonest op types of a partition (plumbing such as constants and
    identities aside, unless there is nothing else), with their counts: what the partition
    computes, as its tasks' keys and the dashboard show it.

    >>> from daskgraph.runtime.program import Instruction
    >>> ops = [Instruction(f"m{i}", "MatMul", None, {}, (), i, False, ()) for i in range(3)]
    >>> main_ops([*ops, Instruction("a", "Add", None, {}, (), 3, False, ())])
    'MatMul*3+Add'
    >>> main_ops([Instruction("c", "Const", None, {}, (), 0, False, ())])
    'Const'
    """
    counts: dict[str, int] = {}
    for ins in instructions:
        counts[ins.op_type] = counts.get(ins.op_type, 0) + 1
    telling = {t: n for t, n in counts.items() if t not in _PLUMBING} or counts
    top = sorted(telling.items(), key=lambda item: -item[1])[:most]
    return "+".join(t if n == 1 else f"{t}*{n}" for t, n in top)


def task_group(device: str) -> str:
    """The Dask task group of a device's tasks: the first element of their keys.

    Every task daskgraph submits for a device -- each run's partition, and the programs
    resident on the device's worker (:mod:`daskgraph.runtime.client.dispatch`) -- is in this group.
    The
    scheduler drops a task group when its last task is forgotten and makes a new one for the
    next task of that name, and distributed's span extension keeps every group it ever saw:
    with its programs' futures held in the group, a device's group lives as long as the
    session's plans, and runs reuse it instead of leaving a new one behind each time.

    >>> task_group("/job:localhost/replica:0/task:0/device:GPU:1")
    'dg-localhost-0-gpu1'
    """
    return f"dg-{_short(device)}"


def _layer_name(key: tuple[str, str, int]) -> str:
    return f"{key[1]}-{key[0]}-{key[2]}"


def _short(device: str) -> str:
    """``/job:localhost/replica:0/task:0/device:GPU:1`` -> ``localhost-0-gpu1``."""
    parts = dict(piece.split(":", 1) for piece in device.strip("/").split("/") if ":" in piece)
    kind = parts.get("device", "")
    return f"{parts.get('job', '')}-{parts.get('task', '')}-{kind.replace(':', '').lower()}"
