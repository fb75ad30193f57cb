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

import gc
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, NamedTuple

import dask.config
from dask.highlevelgraph import HighLevelGraph, MaterializedLayer

from daskgraph.device import CPU
from daskgraph.errors import InvalidArgumentError
from daskgraph.graph import Operation, Tensor
from daskgraph.ops.registry import lookup, ref_producing_types
from daskgraph.placement import Placement
from daskgraph.program import Instruction, PartitionProgram

__all__ = ["Partition", "Plan", "build_task_graph", "lower", "task_group"]


@dataclass(frozen=True, slots=True)
class Partition:
    """A partition of the plan: its program, its worker, and what it depends on.

    ``worker`` is what its task is restricted to: the Dask name of its device's worker (which
    survives a restart), or the address of a worker known by address only."""

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
        """The workers the plan's partitions run on."""
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
        If a placeholder the fetches depend on is not fed, or a variable reference is fetched.
    """
    fed = {t: i for i, t in enumerate(feeds)}
    ops = placement.ops
    fed_ops = {t.op.id for t in feeds if all(o in fed for o in t.op.outputs)}
    with _cyclic_gc_paused():
        needed = _needed_ops(ops, fetches, fed_ops)
        cut = _split_parallel(_cut(needed, placement, fed_ops), placement, fed_ops)
        return _Emitter(cut, placement, fed, fed_ops).plan(fetches, feeds)


@contextmanager
def _cyclic_gc_paused() -> Iterator[None]:
    """Pause Python's cyclic garbage collector while a plan is built.

    Lowering allocates a few small, acyclic objects per op and keeps most of them; with a
    large graph alive, every full collection that those allocations trigger walks the whole
    graph again, which doubled the time of lowering a million ops. Nothing lowering makes is
    cyclic, so there is nothing for the collector to find here; reference counting still
    frees everything. The collector is turned back on (if it was on) when the plan is done.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _needed_ops(
    ops: Sequence[Operation], fetches: Sequence[Tensor | Operation], fed_ops: set[int]
) -> list[Operation]:
    """The ops the fetches depend on, cut at fed ops (which become sources), in graph order.

    One sweep from the last op back: op ids are a topological order (an op's inputs and
    control inputs are older), so an op's mark is final when the sweep reaches it.
    """
    mark = bytearray(len(ops))
    starts = [f.id if isinstance(f, Operation) else f.op.id for f in fetches]
    unfed = False
    for i in starts:
        mark[i] = 1
    for i in range(max(starts, default=-1), -1, -1):
        if not mark[i] or i in fed_ops:
            continue
        op = ops[i]
        if op.type == "Placeholder":
            unfed = True
            continue
        for t in op.inputs:
            mark[t.op.id] = 1
        for c in op.control_inputs:
            mark[c.id] = 1
    if unfed:
        _raise_unfed(ops, starts, fed_ops)
    return [op for op, m in zip(ops, mark) if m]  # noqa: B905 (one per op)


def _raise_unfed(ops: Sequence[Operation], starts: list[int], fed_ops: set[int]) -> None:
    """Name the first unfed placeholder a depth-first walk from the fetches meets."""
    seen = bytearray(len(ops))
    stack = list(starts)
    while stack:
        i = stack.pop()
        if seen[i] or i in fed_ops:
            seen[i] = 1
            continue
        seen[i] = 1
        op = ops[i]
        if op.type == "Placeholder":
            t = op.outputs[0]
            shape = "unknown" if t.shape is None else list(t.shape)
            raise InvalidArgumentError(
                f"You must feed a value for placeholder tensor {op.name!r} with dtype "
                f"{t.dtype.name} and shape {shape}: pass it in feed_dict.",
                op=op.name,
            )
        stack.extend([t.op.id for t in op.inputs])
        stack.extend([c.id for c in op.control_inputs])


class _Cut(NamedTuple):
    members: list[list[Operation]]  # ops of each partition, in graph order
    part_of: list[int]  # op id -> partition (-1: not needed)
    device: list[int]  # partition -> device index
    rank: list[int]  # partition -> rank


def _cut(needed: list[Operation], placement: Placement, fed_ops: set[int]) -> _Cut:
    """Partition ``needed`` by (device, rank); see the module docstring for why it is acyclic."""
    where = placement.device_indices
    part_of = [-1] * len(placement.ops)
    keys: dict[tuple[int, int], int] = {}
    members: list[list[Operation]] = []
    part_device: list[int] = []
    part_rank: list[int] = []
    for op in needed:
        i = op.id
        dev = where[i]
        rank = 0
        if i not in fed_ops:
            for t in op.inputs:
                p = part_of[t.op.id]
                r = part_rank[p] + (part_device[p] != dev)
                if r > rank:
                    rank = r
            for c in op.control_inputs:
                p = part_of[c.id]
                r = part_rank[p] + (part_device[p] != dev)
                if r > rank:
                    rank = r
        p = keys.get((dev, rank))
        if p is None:
            p = keys[(dev, rank)] = len(members)
            members.append([])
            part_device.append(dev)
            part_rank.append(rank)
        part_of[i] = p
        members[p].append(op)
    return _Cut(members, part_of, part_device, part_rank)


#: op types that already use every core (BLAS): splitting them out gains nothing
_MULTITHREADED = frozenset({"MatMul"})


def _split_parallel(cut: _Cut, placement: Placement, fed_ops: set[int]) -> _Cut:
    """Split CPU partitions whose independent parts are each large enough to gain from
    running on different threads of the worker.

    A partition runs its ops one after another. When it holds several *independent* parts
    (connected components of its internal edges) that each do at least
    ``daskgraph.parallel-partition-elements`` elements of single-threaded work (elementwise
    ops, reductions; not BLAS matmuls, which already use every core), each such part becomes a
    partition of its own, and Dask runs them on the CPU worker's threads at once. Parts are
    independent and keep their rank; the only edges among them go from the part holding the
    shared sources (feeds, constants) to the others, so the partition graph stays acyclic.
    """
    threshold = int(dask.config.get("daskgraph.parallel-partition-elements"))
    members: list[list[Operation]] = []
    device: list[int] = []
    rank: list[int] = []
    for p, ops in enumerate(cut.members):
        dev = cut.device[p]
        parts = [ops]
        if len(ops) > 1 and placement.devices[dev].device_type == CPU:
            parts = _parallel_parts(ops, fed_ops, threshold)
        for part in parts:
            members.append(part)
            device.append(dev)
            rank.append(cut.rank[p])
    if len(members) == len(cut.members):
        return cut
    part_of = list(cut.part_of)
    for p, ops in enumerate(members):
        for op in ops:
            part_of[op.id] = p
    return _Cut(members, part_of, device, rank)


def _parallel_parts(ops: list[Operation], fed_ops: set[int], threshold: int) -> list[list]:
    """Split one partition's ops into independent branches, a tail, and the rest.

    Each op gets a branch label: sources (feeds, constants) none; an op whose non-source inputs
    in the partition all carry one label carries it too, one with none starts a new branch,
    and an op joining two branches, or depending on a join, belongs to the *tail*. Branches
    never read each other, and only the tail reads them, so running each heavy branch as its
    own partition, then the tail, keeps the plan acyclic. Light branches stay with the sources.
    """
    JOIN = -1
    position = {op.id: i for i, op in enumerate(ops)}
    label: list[int | None] = [None] * len(ops)
    for i, op in enumerate(ops):
        if op.id in fed_ops or op.type == "Const":
            continue
        found = None  # the one label among the inputs' so far, or JOIN for several
        for t in op.inputs:
            j = position.get(t.op.id)
            if j is not None:
                other = label[j]
                if other is not None and other != found:
                    found = other if found is None else JOIN
        for c in op.control_inputs:
            j = position.get(c.id)
            if j is not None:
                other = label[j]
                if other is not None and other != found:
                    found = other if found is None else JOIN
        label[i] = i if found is None else found
    weight: dict[int, int] = {}
    for i, op in enumerate(ops):
        if label[i] is not None and label[i] != JOIN:
            weight[label[i]] = weight.get(label[i], 0) + _single_threaded_elements(op)
    heavy = {b for b, w in weight.items() if w >= threshold}
    if len(heavy) < 2:
        return [ops]
    branches: dict[int, list[Operation]] = {b: [] for b in sorted(heavy)}
    rest: list[Operation] = []
    tail: list[Operation] = []
    for i, op in enumerate(ops):
        if label[i] == JOIN:
            tail.append(op)
        elif label[i] in heavy:
            branches[label[i]].append(op)  # type: ignore[index]
        else:
            rest.append(op)
    return [part for part in (rest, *branches.values(), tail) if part]


def _single_threaded_elements(op: Operation) -> int:
    if op.type in _MULTITHREADED or not op.outputs:
        return 0
    shape = op.outputs[0].shape
    if shape is None or None in shape:
        return 0
    n = 1
    for d in shape:
        n *= d
    return n


def _with_frees(fields: list[tuple], kept: set[int]) -> tuple[Instruction, ...]:
    """The instructions, each marked with the slots it reads last, which are dropped once it
    has run: intermediates are freed as soon as they are used up (on a GPU, memory returns to
    the pool during the partition, as TensorFlow frees a tensor after its last reader)."""
    last: dict[int, int] = {}
    for i, ins in enumerate(fields):
        for slot in ins[4]:  # args
            last[slot] = i
        if ins[5] >= 0:  # out: a value nobody reads is dropped at once
            last.setdefault(ins[5], i)
    frees: dict[int, list[int]] = {}
    for slot, i in last.items():
        if slot not in kept:
            frees.setdefault(i, []).append(slot)
    empty: tuple[int, ...] = ()
    new = tuple.__new__  # Instruction(*fields, free) without its Python-level __new__
    return tuple(
        [
            new(Instruction, (*ins, tuple(frees[i]) if i in frees else empty))
            for i, ins in enumerate(fields)
        ]
    )


class _Emitter:
    """Turns a cut into programs: slots, instructions, transfers between partitions."""

    def __init__(
        self, cut: _Cut, placement: Placement, fed: dict[Tensor, int], fed_ops: set[int]
    ) -> None:
        self.cut = cut
        self.devices = placement.devices
        self.fed = fed
        self.fed_ops = fed_ops
        n = len(cut.members)
        self.slots: list[dict[Tensor, int]] = [
            {t: i for i, t in enumerate(t for op in ops for t in op.outputs)} for ops in cut.members
        ]
        self.outputs: list[list[tuple[int, bool]]] = [[] for _ in range(n)]
        self.exported: dict[tuple[int, Tensor, bool], int] = {}
        self.inputs: list[list[tuple[int, int, int]]] = [[] for _ in range(n)]
        self.deps: list[list[int]] = [[] for _ in range(n)]
        self.feeds: list[list[tuple[int, int]]] = [[] for _ in range(n)]
        self.instructions: list[list[tuple]] = [[] for _ in range(n)]  # Instruction fields
        ref_types = ref_producing_types()
        # variable references to dereference: only looked for when the plan has variables
        self.ref_types = (
            ref_types if any(op.type in ref_types for ops in cut.members for op in ops) else ()
        )

    def export(self, producer: int, tensor: Tensor, to_host: bool) -> int:
        """Make ``tensor`` an output of partition ``producer``; return its output index."""
        key = (producer, tensor, to_host)
        index = self.exported.get(key)
        if index is None:
            index = self.exported[key] = len(self.outputs[producer])
            self.outputs[producer].append((self.slots[producer][tensor], to_host))
        return index

    def depend(self, p: int, producer: int) -> int:
        deps = self.deps[p]
        if producer not in deps:
            deps.append(producer)
        return deps.index(producer)

    def slot(self, p: int, tensor: Tensor) -> int:
        """The slot of ``tensor`` in partition ``p``, receiving it from its producer if needed."""
        slots = self.slots[p]
        found = slots.get(tensor)
        if found is None:
            producer = self.cut.part_of[tensor.op.id]
            # a GPU's result bound for a host (CPU) partition leaves its GPU as a NumPy array,
            # so that the CPU worker never holds (or creates a CUDA context for) a CuPy array
            source = self.devices[self.cut.device[producer]].array_backend
            target = self.devices[self.cut.device[p]].array_backend
            to_host = source != "numpy" and target == "numpy"
            index = self.export(producer, tensor, to_host=to_host)
            found = slots[tensor] = len(slots)
            self.inputs[p].append((self.depend(p, producer), index, found))
        return found

    def emit(self, p: int) -> None:
        device_type = self.devices[self.cut.device[p]].device_type
        kernels: dict[str, tuple] = {}
        slots = self.slots[p]
        part_of = self.cut.part_of
        ref_types = self.ref_types
        instructions = self.instructions[p]
        for op in self.cut.members[p]:
            if op.id in self.fed_ops:
                for t in op.outputs:
                    self.feeds[p].append((self.fed[t], slots[t]))
                continue
            known = kernels.get(op.type)
            if known is None:
                opdef = lookup(op.type)
                known = kernels[op.type] = (opdef, opdef.kernel_for(device_type))
            opdef, kernel = known
            args = tuple([slots.get(t) or self.slot(p, t) for t in op.inputs])
            deref: tuple[int, ...] = ()
            if ref_types:
                for i, t in enumerate(op.inputs):
                    if t.op.type in ref_types and i not in opdef.ref_inputs:
                        deref += (i,)
            for c in op.control_inputs:
                producer = part_of[c.id]
                if producer != p:
                    self.depend(p, producer)
            out = slots[op.outputs[0]] if op.outputs else -1
            instructions.append(
                (op.name, op.type, kernel, op.attrs, args, out, opdef.stateful, deref)
            )

    def plan(self, fetches: Sequence[Tensor | Operation], feeds: Sequence[Tensor]) -> Plan:
        cut = self.cut
        for p in range(len(cut.members)):
            self.emit(p)
        order = sorted(range(len(cut.members)), key=lambda p: (cut.rank[p], cut.device[p]))
        renumber = {old: new for new, old in enumerate(order)}
        locations: list[tuple[int, int] | None] = []
        for f in fetches:
            if isinstance(f, Operation):
                locations.append(None)
                continue
            if f.op.type in ref_producing_types():
                raise InvalidArgumentError(
                    f"Cannot fetch {f.name!r}: it is a variable reference; fetch the variable "
                    "(or its value()) instead.",
                    op=f.op.name,
                )
            producer = cut.part_of[f.op.id]
            to_host = self.devices[cut.device[producer]].array_backend != "numpy"
            locations.append((renumber[producer], self.export(producer, f, to_host)))
        consumed = {d for deps in self.deps for d in deps}
        results = {loc[0] for loc in locations if loc is not None}
        results |= {renumber[p] for p in range(len(cut.members)) if p not in consumed}
        partitions = tuple(self.partition(p, renumber[p], renumber) for p in order)
        return Plan(partitions, tuple(locations), tuple(feeds), tuple(sorted(results)))

    def partition(self, p: int, index: int, renumber: dict[int, int]) -> Partition:
        device = self.devices[self.cut.device[p]]
        instructions = _with_frees(self.instructions[p], {s for s, _ in self.outputs[p]})
        program = PartitionProgram(
            device.name,
            device.device_type,
            device.array_backend,
            len(self.slots[p]),
            tuple(self.inputs[p]),
            tuple((local, slot) for local, (_, slot) in enumerate(self.feeds[p])),
            instructions,
            tuple(self.outputs[p]),
        )
        return Partition(
            index,
            device.name,
            device.restriction,
            program,
            tuple(renumber[d] for d in self.deps[p]),
            tuple(i for i, _ in self.feeds[p]),
        )


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
    worker-side function (:func:`daskgraph.execution.execute_partition`); ``step`` identifies
    the run to it (a :class:`daskgraph.program.RunStep`). ``programs`` are the programs already
    on their workers (futures, see :mod:`daskgraph.dispatch`); without them the programs travel
    in the graph. ``sent_feeds`` maps feed positions to futures of values already sent to a
    worker: those feeds are referenced, not embedded. Returns the graph and every partition's
    key, in order.

    A key is ``(task_group(device), key_prefix, partition)``: Dask groups tasks (and keeps
    metrics and caches) by the key's first element, which is the same for every run on a
    device and for the programs resident there (:func:`task_group`), so that a long program's
    runs add nothing up in the scheduler and on the workers; the run (``key_prefix``, unique
    per run) and the partition make the key unique.
    """
    keys = [(task_group(p.device), key_prefix, p.index) for p in plan.partitions]
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


def task_group(device: str) -> str:
    """The Dask task group of a device's tasks: the first element of their keys.

    Every task daskgraph submits for a device -- each run's partition, and the programs
    resident on the device's worker (:mod:`daskgraph.dispatch`) -- is in this group. The
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
