"""Lowering: cut a placed graph into per-device partitions and emit a pinned Dask task graph.

One Dask task per op would cost Dask's scheduling overhead (about a millisecond) per op, so
the ops a run needs are cut into *partitions*: ops on one device that can run together become
one task, which runs them in order with a lean executor (:mod:`daskgraph.execution`). Edges
between devices become data dependencies between tasks, which Dask turns into transfers
between the workers owning the devices.

Partitions are acyclic by construction: an op's *rank* is the largest rank of its inputs,
plus one across a device boundary, and a partition is the set of ops of one device and one
rank. Every edge between two partitions goes to a strictly higher rank, so the partition graph
has no cycle; computing it is linear in the number of ops.

:func:`lower` is pure (graph, placement, fetches, feeds -> :class:`Plan`);
:func:`build_task_graph` turns a plan plus feed values into a Dask ``HighLevelGraph`` whose
every task carries an explicit worker restriction (no fusion is applied, because fusion drops
annotations, dask/dask#7036).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import chain
from typing import Any

from dask._task_spec import DataNode, Task, TaskRef
from dask.highlevelgraph import HighLevelGraph, MaterializedLayer

from daskgraph.errors import InvalidArgumentError
from daskgraph.graph import Operation, Tensor
from daskgraph.ops.registry import lookup
from daskgraph.placement import Placement

__all__ = ["Instruction", "PartitionProgram", "Plan", "build_task_graph", "lower"]

#: the executor reads this slot's value from the feeds instead of running an op
FEED = -1


@dataclass(frozen=True, slots=True)
class Instruction:
    """One op of a partition: ``slots[out] = kernel(xp, [store,] *slots[args], **attrs)``."""

    op_name: str
    op_type: str
    kernel: Any
    attrs: dict
    args: tuple[int, ...]
    out: int
    stateful: bool
    deref: tuple[int, ...]  # positions in ``args`` holding variable refs to read


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


@dataclass(frozen=True, slots=True)
class Partition:
    """A partition of the plan: its program, its worker, and what it depends on."""

    index: int
    device: str
    worker: str
    program: PartitionProgram
    dependencies: tuple[int, ...]  # partition indices, in the order the program reads them
    feed_indices: tuple[int, ...]  # positions in Plan.feeds of the feeds it reads, in order


@dataclass(frozen=True, slots=True)
class Plan:
    """A compiled run: partitions in a topological order, and where each fetch ends up.

    ``fetches[i]`` is ``(partition, output index)`` for a fetched tensor, ``None`` for an op.
    """

    partitions: tuple[Partition, ...]
    fetches: tuple[tuple[int, int] | None, ...]
    feeds: tuple[Tensor, ...]
    result_partitions: tuple[int, ...]  # partitions whose results the client must wait for

    @property
    def workers(self) -> set[str]:
        return {p.worker for p in self.partitions}


def lower(
    placement: Placement,
    fetches: Sequence[Tensor | Operation],
    feeds: Sequence[Tensor] = (),
) -> Plan:
    """Compile the ops needed for ``fetches`` (given ``feeds``) into per-device partitions.

    Raises
    ------
    InvalidArgumentError
        If a placeholder the fetches depend on is not fed.
    """
    fed = {t: i for i, t in enumerate(feeds)}
    needed = _needed_ops(fetches, fed)
    devices = placement.devices

    # rank and partition of every needed op, in graph (topological) order
    part_of: dict[int, int] = {}
    keys: dict[tuple[int, int], int] = {}
    members: list[list[Operation]] = []
    part_device: list[int] = []
    part_rank: list[int] = []
    for op in needed:
        dev = placement.device_index(op)
        rank = 0
        if not _is_fed(op, fed):
            for dep in chain([t.op for t in op.inputs], op.control_inputs):
                p = part_of[dep.id]
                rank = max(rank, part_rank[p] + (part_device[p] != dev))
        key = (dev, rank)
        p = keys.get(key)
        if p is None:
            p = keys[key] = len(members)
            members.append([])
            part_device.append(dev)
            part_rank.append(rank)
        part_of[op.id] = p
        members[p].append(op)
    order = sorted(range(len(members)), key=lambda p: (part_rank[p], part_device[p]))
    renumber = {old: new for new, old in enumerate(order)}

    # slots and cross-partition outputs
    out_index: dict[tuple[int, str], int] = {}  # (producer partition, tensor name) -> output idx
    outputs: list[list[tuple[int, bool]]] = [[] for _ in members]
    slot_of: list[dict[str, int]] = [{} for _ in members]
    for p, ops in enumerate(members):
        slots = slot_of[p]
        for op in ops:
            for t in op.outputs:
                slots[t.name] = len(slots)

    def export(producer: int, tensor: Tensor, to_host: bool) -> int:
        key = (producer, tensor.name + ("@host" if to_host else ""))
        idx = out_index.get(key)
        if idx is None:
            idx = out_index[key] = len(outputs[producer])
            outputs[producer].append((slot_of[producer][tensor.name], to_host))
        return idx

    inputs: list[list[tuple[int, int, int]]] = [[] for _ in members]
    deps: list[list[int]] = [[] for _ in members]
    feed_lists: list[list[tuple[int, int]]] = [[] for _ in members]
    instructions: list[list[Instruction]] = [[] for _ in members]
    for p, ops in enumerate(members):
        slots = slot_of[p]
        device = devices[part_device[p]]

        def local_slot(t: Tensor, p: int = p, slots: dict = slots) -> int:
            if t.name in slots:
                return slots[t.name]
            producer = part_of[t.op.id]
            idx = export(producer, t, to_host=False)
            if producer not in deps[p]:
                deps[p].append(producer)
            slot = slots[t.name] = len(slots)
            inputs[p].append((deps[p].index(producer), idx, slot))
            return slot

        for op in ops:
            if _is_fed(op, fed):
                for t in op.outputs:
                    feed_lists[p].append((fed[t], slots[t.name]))  # global index for now
                continue
            opdef = lookup(op.type)
            args = tuple(local_slot(t) for t in op.inputs)
            for c in op.control_inputs:
                producer = part_of.get(c.id)
                if producer is not None and producer != p and producer not in deps[p]:
                    deps[p].append(producer)
            deref = tuple(
                i
                for i, t in enumerate(op.inputs)
                if i not in opdef.ref_inputs and lookup(t.op.type).produces_ref
            )
            instructions[p].append(
                Instruction(
                    op.name,
                    op.type,
                    opdef.kernel_for(device.device_type),
                    op.attrs,
                    args,
                    slots[op.outputs[0].name] if op.outputs else -1,
                    opdef.stateful,
                    deref,
                )
            )

    fetch_locations: list[tuple[int, int] | None] = []
    for f in fetches:
        if isinstance(f, Operation):
            fetch_locations.append(None)
            continue
        producer = part_of[f.op.id]
        to_host = devices[part_device[producer]].array_backend != "numpy"
        if lookup(f.op.type).produces_ref:
            raise InvalidArgumentError(
                f"Cannot fetch {f.name!r}: it is a variable reference; fetch the variable "
                "(or its value()) instead.",
                op=f.op.name,
            )
        fetch_locations.append((renumber[producer], export(producer, f, to_host)))

    has_consumer = {d for p in range(len(members)) for d in deps[p]}
    result_parts = {loc[0] for loc in fetch_locations if loc is not None}
    result_parts |= {renumber[p] for p in range(len(members)) if p not in has_consumer}

    partitions = []
    for p in order:
        device = devices[part_device[p]]
        program = PartitionProgram(
            device.name,
            device.device_type,
            device.array_backend,
            len(slot_of[p]),
            tuple(inputs[p]),
            tuple((local, slot) for local, (_, slot) in enumerate(feed_lists[p])),
            tuple(instructions[p]),
            tuple(outputs[p]),
        )
        partitions.append(
            Partition(
                renumber[p],
                device.name,
                device.worker,
                program,
                tuple(renumber[d] for d in deps[p]),
                tuple(i for i, _ in feed_lists[p]),
            )
        )
    return Plan(
        tuple(partitions), tuple(fetch_locations), tuple(feeds), tuple(sorted(result_parts))
    )


def _is_fed(op: Operation, fed: dict[Tensor, int]) -> bool:
    return bool(op.outputs) and all(t in fed for t in op.outputs)


def _needed_ops(fetches: Sequence[Tensor | Operation], fed: dict[Tensor, int]) -> list[Operation]:
    """The ops the fetches depend on, cut at fed tensors (their ops become sources), in order."""
    seen: dict[int, Operation] = {}
    stack = [f if isinstance(f, Operation) else f.op for f in fetches]
    while stack:
        op = stack.pop()
        if op.id in seen:
            continue
        seen[op.id] = op
        if _is_fed(op, fed):
            continue
        if op.type == "Placeholder":
            t = op.outputs[0]
            shape = "unknown" if t.shape is None else list(t.shape)
            raise InvalidArgumentError(
                f"You must feed a value for placeholder tensor {op.name!r} with dtype "
                f"{t.dtype.name} and shape {shape}: pass it in feed_dict.",
                op=op.name,
            )
        stack.extend(t.op for t in op.inputs)
        stack.extend(op.control_inputs)
    return [seen[i] for i in sorted(seen)]


def build_task_graph(
    plan: Plan,
    key_prefix: str,
    session_id: str,
    feed_values: Sequence[Any],
    execute: Any,
    trace: bool = False,
) -> tuple[HighLevelGraph, list[tuple[str, int]]]:
    """The Dask graph of one run: one task per partition, each restricted to its worker.

    ``execute`` is the worker-side function ``execute(program, session_id, feeds, trace,
    *dependency_outputs)``.
    Returns the graph and the key of every partition, in plan order.
    """
    keys = [(f"{key_prefix}-{_short(p.device)}", p.index) for p in plan.partitions]
    layers: dict[str, MaterializedLayer] = {}
    dependencies: dict[str, set[str]] = {}
    for p, key in zip(plan.partitions, keys, strict=True):
        feeds = tuple(feed_values[i] for i in p.feed_indices)
        task = Task(
            key,
            execute,
            DataNode(None, p.program),
            session_id,
            DataNode(None, feeds),
            trace,
            *(TaskRef(keys[d]) for d in p.dependencies),
        )
        name = f"{key[0]}-{key[1]}"
        layers[name] = MaterializedLayer(
            {key: task}, annotations={"workers": [p.worker], "allow_other_workers": False}
        )
        dependencies[name] = {f"{keys[d][0]}-{keys[d][1]}" for d in p.dependencies}
    return HighLevelGraph(layers, dependencies), keys


def _short(device: str) -> str:
    """``/job:localhost/replica:0/task:0/device:GPU:1`` -> ``localhost-0-gpu1``."""
    parts = dict(piece.split(":", 1) for piece in device.strip("/").split("/") if ":" in piece)
    kind = parts.get("device", "")
    return f"{parts.get('job', '')}-{parts.get('task', '')}-{kind.replace(':', '').lower()}"
