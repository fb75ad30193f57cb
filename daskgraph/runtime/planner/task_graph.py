"""The Dask graph of one run: one task per partition, restricted to its device's worker.

Its one job is to turn a :class:`~daskgraph.runtime.planner.lowering.Plan` plus feed values
into a Dask ``HighLevelGraph`` (:func:`build_task_graph`) whose every task carries an explicit
worker restriction (no fusion is applied, because fusion drops annotations, dask/dask#7036),
and to name those tasks: their group per device (:func:`task_group`) and their label, the
partition's main ops (:func:`main_ops`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from dask.highlevelgraph import HighLevelGraph, MaterializedLayer

from daskgraph.runtime.program import Instruction

if TYPE_CHECKING:
    from daskgraph.runtime.planner.lowering import Plan

__all__ = ["build_task_graph", "main_ops", "task_group"]


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
    in one ``MaterializedLayer`` per partition, whose annotations carry the restriction (no
    fusion is applied: fusion drops annotations, dask/dask#7036). ``execute`` is the
    worker-side function (:func:`daskgraph.runtime.worker.execution.execute_partition`); ``step``
    identifies
    the run to it (a :class:`daskgraph.runtime.program.RunStep`). ``programs`` are the programs
    already
    on their workers (futures, see :mod:`daskgraph.runtime.client.dispatch`); without them the
    programs travel
    in the graph. ``sent_feeds`` maps feed positions to futures of values already sent to a
    worker: those feeds are referenced, not embedded. Returns the graph and every partition's
    key, in order.

    A key is ``(task_group(device), f"{key_prefix}-{label}", partition)``: Dask groups tasks
    (and keeps metrics and caches) by the key's first element, which is the same for every run
    on a device and for the programs resident there (:func:`task_group`), so that a long
    program's runs add nothing up in the scheduler and on the workers; the run (``key_prefix``,
    unique per run) and the partition make the key unique, and the partition's main ops
    (``label``) say in Dask's task stream what it computes.
    """
    keys = [
        (task_group(p.device), f"{key_prefix}-{p.label}" if p.label else key_prefix, p.index)
        for p in plan.partitions
    ]
    layers: dict[str, MaterializedLayer] = {}
    dependencies: dict[str, set[str]] = {}
    for p, key in zip(plan.partitions, keys, strict=True):
        feeds = [
            sent_feeds[i] if sent_feeds and i in sent_feeds else feed_values[i]
            for i in p.feed_indices
        ]
        program = programs[p.index] if programs is not None else p.program
        task = (execute, program, step, feeds, trace, *(keys[d] for d in p.dependencies))
        name = _layer_name(key)
        layers[name] = MaterializedLayer(
            {key: task}, annotations={"workers": [p.worker], "allow_other_workers": False}
        )
        dependencies[name] = {_layer_name(keys[d]) for d in p.dependencies}
    return HighLevelGraph(layers, dependencies), keys


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
