"""Lowering: cut a placed graph into per-device partitions and emit a pinned Dask task graph.

One Dask task per op would cost Dask's scheduling overhead (about a millisecond) per op, so
the ops a run needs are cut into *partitions*: ops on one device that can run together become
one task, which runs them in order with a lean executor
(:mod:`daskgraph.runtime.worker.execution`). Edges
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
from itertools import chain, compress, count, repeat
from operator import add, attrgetter, itemgetter
from typing import Any, NamedTuple

import dask.config
from dask.highlevelgraph import HighLevelGraph, MaterializedLayer

from daskgraph.cluster.footprint import cyclic_gc_paused
from daskgraph.errors import InvalidArgumentError
from daskgraph.framework.device import CPU
from daskgraph.framework.graph import Operation, Tensor
from daskgraph.framework.op_registry import lookup, ref_producing_types
from daskgraph.runtime.planner.placement import Placement
from daskgraph.runtime.program import Instruction, PartitionProgram

__all__ = ["Partition", "Plan", "build_task_graph", "lower", "main_ops", "task_group"]


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
    label: str = ""  # its main ops (:func:`main_ops`), shown in its tasks' keys


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
    with cyclic_gc_paused():  # nothing made here is cyclic; see footprint
        needed = _needed_ops(ops, fetches, fed_ops)
        cut = _split_parallel(_cut(needed, placement, fed_ops), placement, fed_ops)
        return _Emitter(cut, placement, fed, fed_ops).plan(fetches, feeds)


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
        inputs = op.inputs
        if len(inputs) == 2:  # most ops: unpacked, no iterator
            a, b = inputs
            mark[a.op.id] = mark[b.op.id] = 1
        else:
            for t in inputs:
                mark[t.op.id] = 1
        if op.control_inputs:
            for c in op.control_inputs:
                mark[c.id] = 1
    if unfed:
        _raise_unfed(ops, starts, fed_ops)
    return list(compress(ops, mark))


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
    if needed and where.count(where[needed[0].id]) == len(where):
        # every op on one device: every rank is 0, one partition (the common case)
        for op in needed:
            part_of[op.id] = 0
        return _Cut([needed], part_of, [where[needed[0].id]], [0])
    n_devices = len(placement.devices)
    rank_of = [0] * len(placement.ops)
    keys: dict[int, int] = {}  # rank * n_devices + device -> partition
    members: list[list[Operation]] = []
    part_device: list[int] = []
    part_rank: list[int] = []
    for op in needed:
        i = op.id
        dev = where[i]
        rank = 0
        if i not in fed_ops:
            for t in op.inputs:
                j = t.op.id
                r = rank_of[j] if where[j] == dev else rank_of[j] + 1
                if r > rank:
                    rank = r
            for c in op.control_inputs:
                j = c.id
                r = rank_of[j] if where[j] == dev else rank_of[j] + 1
                if r > rank:
                    rank = r
            rank_of[i] = rank
        key = rank * n_devices + dev
        p = keys.get(key)
        if p is None:
            p = keys[key] = len(members)
            members.append([])
            part_device.append(dev)
            part_rank.append(rank)
        part_of[i] = p
        members[p].append(op)
    return _Cut(members, part_of, part_device, part_rank)


#: op types that already use every core (BLAS): splitting them out gains nothing
_MULTITHREADED = frozenset({"MatMul"})

_JOIN = -1  # the branch label of an op joining two branches, or depending on a join


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
    branches: _Branches | None = None  # made when a partition needs it, shared by all
    for p, ops in enumerate(cut.members):
        dev = cut.device[p]
        parts = [ops]
        if len(ops) > 1 and placement.devices[dev].device_type == CPU:
            if branches is None:
                n = len(cut.part_of)
                branches = _Branches(cut.part_of, [None] * n, [0] * n, fed_ops)
            parts = _parallel_parts(ops, p, branches, threshold)
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


class _Branches(NamedTuple):
    """The branch analysis of a cut's partitions, in lists indexed by op id: each partition
    writes only its own ops' entries, so one set of lists serves every partition."""

    part_of: list[int]  # op id -> partition
    label: list[int | None]  # op id -> its branch's first op, _JOIN, or None (a source)
    weight: list[int]  # branch label -> the branch's single-threaded elements
    fed_ops: set[int]


def _parallel_parts(
    ops: list[Operation], p: int, branches: _Branches, threshold: int
) -> list[list[Operation]]:
    """Split partition ``p``'s ops into independent branches, a tail, and the rest.

    Each op gets a branch label (:func:`_label_branches`): sources (feeds, constants) none; an
    op whose non-source inputs in the partition all carry one label carries it too, one with
    none starts a new branch, and an op joining two branches, or depending on a join, belongs
    to the *tail*. Branches never read each other, and only the tail reads them, so running
    each heavy branch as its own partition, then the tail, keeps the plan acyclic. Light
    branches stay with the sources.
    """
    weight = branches.weight
    heavy = {b for b in _label_branches(ops, p, branches) if weight[b] >= threshold}
    if len(heavy) < 2:
        return [ops]
    parts: dict[int, list[Operation]] = {b: [] for b in sorted(heavy)}
    rest: list[Operation] = []
    tail: list[Operation] = []
    label = branches.label
    for op in ops:
        b = label[op.id]
        if b == _JOIN:
            tail.append(op)
        elif b in heavy:
            parts[b].append(op)  # type: ignore[index]
        else:
            rest.append(op)
    return [part for part in (rest, *parts.values(), tail) if part]


def _label_branches(ops: list[Operation], p: int, branches: _Branches) -> list[int]:
    """Label partition ``p``'s ops and weigh its branches (see :class:`_Branches`); return
    the branches' labels (the ids of the ops starting them), in order.

    Only the labels of ops in ``p`` are read: inputs from other partitions are sources here.
    """
    part_of, label, weight, fed_ops = branches
    started: list[int] = []
    sizes: dict[Any, int] = {}  # shape -> elements
    for op in ops:
        i = op.id
        if i in fed_ops or op.type == "Const":
            continue
        found = None  # the one label among the inputs' so far, or _JOIN for several
        for t in op.inputs:
            j = t.op.id
            if part_of[j] == p:
                other = label[j]
                if other is not None and other != found:
                    found = other if found is None else _JOIN
        if op.control_inputs:
            for c in op.control_inputs:
                j = c.id
                if part_of[j] == p:
                    other = label[j]
                    if other is not None and other != found:
                        found = other if found is None else _JOIN
        if found is None:
            found = i
            started.append(i)
        label[i] = found
        if found != _JOIN and op.type not in _MULTITHREADED:
            outputs = op.outputs
            if outputs:
                shape = outputs[0].shape
                n = sizes.get(shape)
                if n is None:
                    n = sizes[shape] = _elements(shape)
                weight[found] += n
    return started


def _elements(shape: tuple | None) -> int:
    """The number of elements of a static ``shape`` (0 when not fully known)."""
    if shape is None or None in shape:
        return 0
    n = 1
    for d in shape:
        n *= d
    return n


def _with_frees(
    fields: list[tuple], kept: set[int], n_slots: int, read_at: dict[int, int]
) -> tuple[Instruction, ...]:
    """The instructions, each marked with the slots it reads last, which are dropped once it
    has run: intermediates are freed as soon as they are used up (on a GPU, memory returns to
    the pool during the partition, as TensorFlow frees a tensor after its last reader).
    ``read_at`` maps received slots to the instruction first reading them."""
    frees = _frees(fields, kept, n_slots, read_at)
    new = tuple.__new__  # Instruction(*fields, free) without its Python-level __new__
    return tuple(map(new, repeat(Instruction), map(add, fields, zip(frees))))


def _frees(
    fields: list[tuple], kept: set[int], n_slots: int, read_at: dict[int, int]
) -> list[tuple[int, ...]]:
    """Every instruction's slots to free: those it reads last, and its output if nobody reads
    it, but none in ``kept``. One sweep from the last instruction back; a slot's first sight
    is its last use. Several slots freed at once are in the order they were first used."""
    seen = bytearray(n_slots)
    for s in kept:
        seen[s] = 1
    frees: list[tuple[int, ...]] = [()] * len(fields)
    several: list[int] = []
    for i in range(len(fields) - 1, -1, -1):
        ins = fields[i]
        free: tuple[int, ...] = ()
        for s in ins[4]:  # args
            if not seen[s]:
                seen[s] = 1
                free += (s,)
        out = ins[5]
        if out >= 0 and not seen[out]:  # a value nobody reads is dropped at once
            seen[out] = 1
            free += (out,)
        if free:
            frees[i] = free
            if len(free) > 1:
                several.append(i)
    if several:
        _order_frees(fields, frees, several, read_at)
    return frees


def _order_frees(
    fields: list[tuple], frees: list[tuple[int, ...]], several: list[int], read_at: dict[int, int]
) -> None:
    """Sort each instruction's slots to free (of those in ``several``, freeing more than one)
    by first use: where the instruction writing it ran, or, for a slot no instruction writes
    (a feed, a value received from another partition), where it was first read."""
    made = dict(zip(map(itemgetter(5), fields), count()))  # out slot -> its instruction
    first: dict[int, tuple[int, int, int]] = {}
    pending: set[int] = set()  # feeds: where they are first read is looked for
    for s in {s for i in several for s in frees[i] if s not in made}:
        i = read_at.get(s)
        if i is None:
            pending.add(s)
        else:
            first[s] = (i, 0, fields[i][4].index(s))
    for i, ins in enumerate(fields):
        if not pending:
            break
        if pending.isdisjoint(ins[4]):
            continue
        for k, s in enumerate(ins[4]):
            if s in pending:
                first[s] = (i, 0, k)
                pending.discard(s)

    def first_use(s: int) -> tuple[int, int, int]:
        i = made.get(s)
        return first[s] if i is None else (i, 1, 0)  # written: after the instruction's reads

    for i in several:
        frees[i] = tuple(sorted(frees[i], key=first_use))


class _Emitter:
    """Turns a cut into programs: slots, instructions, transfers between partitions.

    A partition's slots are its ops' outputs, in order, then the values it receives from
    other partitions, in the order it first reads them. The slot of an op's first output is
    kept in a list by op id (``first``), written as the op is emitted (an op reads only older
    ops), or before, when another partition receives a value from a partition not emitted yet.
    """

    def __init__(
        self, cut: _Cut, placement: Placement, fed: dict[Tensor, int], fed_ops: set[int]
    ) -> None:
        self.cut = cut
        self.devices = placement.devices
        self.fed = fed
        self.fed_ops = fed_ops
        n = len(cut.members)
        self.first = [0] * len(cut.part_of)  # op id -> the slot of its first output
        self.numbered = bytearray(n)  # partition -> whether ``first`` is written for its ops
        outputs = attrgetter("outputs")
        self.n_own = [sum(map(len, map(outputs, ops))) for ops in cut.members]
        self.received: list[dict[Tensor, int]] = [{} for _ in range(n)]  # tensor -> slot
        self.read_at: list[dict[int, int]] = [{} for _ in range(n)]  # its slot -> first reader
        self.outputs: list[list[tuple[int, bool]]] = [[] for _ in range(n)]
        self.exported: dict[tuple[int, Tensor, bool], int] = {}
        self.inputs: list[list[tuple[int, int, int]]] = [[] for _ in range(n)]
        self.deps: list[list[int]] = [[] for _ in range(n)]
        self.feeds: list[list[tuple[int, int]]] = [[] for _ in range(n)]
        self.instructions: list[list[tuple]] = [[] for _ in range(n)]  # Instruction fields
        ref_types = ref_producing_types()
        # variable references to dereference: only looked for when the plan has variables
        types = map(attrgetter("type"), chain.from_iterable(cut.members))
        self.ref_types = () if ref_types.isdisjoint(types) else ref_types

    def n_slots(self, p: int) -> int:
        return self.n_own[p] + len(self.received[p])

    def number(self, p: int) -> None:
        """Write ``first`` for partition ``p``'s ops (as :meth:`emit` does)."""
        first = self.first
        k = 0
        for op in self.cut.members[p]:
            first[op.id] = k
            k += len(op.outputs)
        self.numbered[p] = 1

    def export(self, producer: int, tensor: Tensor, to_host: bool) -> int:
        """Make ``tensor`` an output of partition ``producer``; return its output index."""
        key = (producer, tensor, to_host)
        index = self.exported.get(key)
        if index is None:
            if not self.numbered[producer]:
                self.number(producer)
            index = self.exported[key] = len(self.outputs[producer])
            slot = self.first[tensor.op.id] + tensor.index
            self.outputs[producer].append((slot, to_host))
        return index

    def depend(self, p: int, producer: int) -> int:
        deps = self.deps[p]
        if producer not in deps:
            deps.append(producer)
        return deps.index(producer)

    def receive(self, p: int, tensor: Tensor) -> int:
        """The slot of ``tensor`` (of another partition) in partition ``p``, received from
        its producer."""
        received = self.received[p]
        found = received.get(tensor)
        if found is None:
            producer = self.cut.part_of[tensor.op.id]
            # a GPU's result bound for a host (CPU) partition leaves its GPU as a NumPy array,
            # so that the CPU worker never holds (or creates a CUDA context for) a CuPy array
            source = self.devices[self.cut.device[producer]].array_backend
            target = self.devices[self.cut.device[p]].array_backend
            to_host = source != "numpy" and target == "numpy"
            index = self.export(producer, tensor, to_host=to_host)
            found = received[tensor] = self.n_slots(p)
            self.read_at[p][found] = len(self.instructions[p])  # (the one being emitted)
            self.inputs[p].append((self.depend(p, producer), index, found))
        return found

    def args(self, p: int, inputs: Sequence[Tensor]) -> tuple[int, ...]:
        """The slots of ``inputs`` in partition ``p``, in order."""
        part_of, first = self.cut.part_of, self.first
        return tuple(
            [
                first[j] + t.index if part_of[(j := t.op.id)] == p else self.receive(p, t)
                for t in inputs
            ]
        )

    def after(self, p: int, control_inputs: Sequence[Operation]) -> None:
        """Make partition ``p`` depend on the partitions of ``control_inputs``."""
        part_of = self.cut.part_of
        for c in control_inputs:
            producer = part_of[c.id]
            if producer != p:
                self.depend(p, producer)

    def emit(self, p: int) -> None:
        device_type = self.devices[self.cut.device[p]].device_type
        kernels: dict[str, tuple] = {}
        part_of, first, ref_types = self.cut.part_of, self.first, self.ref_types
        fed_ops = self.fed_ops
        append = self.instructions[p].append
        received = self.received[p].get
        k = 0  # the slot of the next op's first output
        for op in self.cut.members[p]:
            i = op.id
            first[i] = k
            outputs = op.outputs
            if i in fed_ops:
                self.feeds[p].extend([(self.fed[t], k + t.index) for t in outputs])
                k += len(outputs)
                continue
            known = kernels.get(op.type)
            if known is None:
                opdef = lookup(op.type)
                known = (opdef.kernel_for(device_type), opdef.stateful, opdef.ref_inputs)
                kernels[op.type] = known
            kernel, stateful, ref_inputs = known
            inputs = op.inputs
            if len(inputs) == 2:  # most ops: unpacked, this takes half the time of args()
                a, b = inputs
                ja, jb = a.op.id, b.op.id
                sa = first[ja] + a.index if part_of[ja] == p else received(a)
                sb = first[jb] + b.index if part_of[jb] == p else received(b)
                # (None: a value received for the first time)
                args = self.args(p, inputs) if sa is None or sb is None else (sa, sb)
            else:
                args = self.args(p, inputs)
            deref: tuple[int, ...] = ()
            if ref_types:
                deref = _derefs(inputs, ref_types, ref_inputs)
            if op.control_inputs:
                self.after(p, op.control_inputs)
            out = k if outputs else -1
            k += len(outputs)
            append((op.name, op.type, kernel, op.attrs, args, out, stateful, deref))
        self.numbered[p] = 1

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
        kept = {s for s, _ in self.outputs[p]}
        instructions = _with_frees(self.instructions[p], kept, self.n_slots(p), self.read_at[p])
        program = PartitionProgram(
            device.name,
            device.device_type,
            device.array_backend,
            self.n_slots(p),
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
            main_ops(instructions),
        )


def _derefs(
    inputs: Sequence[Tensor], ref_types: frozenset[str], ref_inputs: frozenset[int]
) -> tuple[int, ...]:
    """The positions of ``inputs`` that are variable references to read (an op taking a
    reference at that position, an assign's target, reads none)."""
    return tuple(
        [i for i, t in enumerate(inputs) if t.op.type in ref_types and i not in ref_inputs]
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
