"""Lowering: cut a placed graph into per-device partitions and emit a pinned Dask task graph.

One Dask task per op would cost Dask's scheduling overhead (about a millisecond) per op, so
the ops a run needs are cut into *partitions*: ops on one device that can run together become
one task, which runs them in order with a lean executor
(:mod:`daskgraph.runtime.worker.execution`). Edges
between devices become data dependencies between tasks, which Dask turns into transfers
between the workers owning the devices.

Partitions are acyclic by construction (:mod:`daskgraph.runtime.planner.partitioning` cuts
them, and says why); this module numbers every partition's slots and emits its program, whose
instructions free what they read last (:mod:`daskgraph.runtime.planner.slot_frees`).

:func:`lower` is pure (graph, placement, fetches, feeds -> :class:`Plan`);
:func:`build_task_graph` (:mod:`daskgraph.runtime.planner.task_graph`, re-exported here with
:func:`main_ops` and :func:`task_group`) turns a plan plus feed values into a Dask
``HighLevelGraph`` whose every task carries an explicit worker restriction (no fusion is
applied, because fusion drops annotations, dask/dask#7036).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import chain, compress
from operator import attrgetter

import dask.config

from daskgraph.cluster.footprint import cyclic_gc_paused
from daskgraph.errors import InvalidArgumentError
from daskgraph.framework.graph import Operation, Tensor
from daskgraph.framework.op_registry import lookup, ref_producing_types, unpredictable_types
from daskgraph.runtime.planner.fusion import fuse
from daskgraph.runtime.planner.partitioning import Cut, partition_ops, split_parallel
from daskgraph.runtime.planner.placement import Placement
from daskgraph.runtime.planner.slot_frees import with_frees
from daskgraph.runtime.planner.task_graph import build_task_graph, main_ops, task_group
from daskgraph.runtime.program import PartitionProgram

__all__ = [
    "Partition",
    "Plan",
    "build_task_graph",
    "lower",
    "main_ops",
    "needed_ops",
    "task_group",
]


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
    #: every op's output shape is known statically and no op runs for a data-dependent time
    #: (:func:`~daskgraph.framework.op_registry.mark_unpredictable`): its run time is about
    #: that of its last run (a compiled step may run it on the event loop)
    predictable: bool = False
    #: the static size in bytes of each of its program's outputs (None: not known)
    output_bytes: tuple[int | None, ...] = ()


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
    fusion: bool | None = None,
    jit: bool = False,
) -> Plan:
    """Compile the ops needed for ``fetches`` (given ``feeds``) into per-device partitions,
    chains of elementwise ops fused into one instruction each (:mod:`.fusion`) unless
    ``fusion`` is false (default: the ``daskgraph.fusion`` setting); with ``jit`` (the
    session's ``global_jit_level``) every op, else those made under a ``jit_scope``, may
    fuse transcendental functions too.

    Raises
    ------
    InvalidArgumentError
        If a placeholder the fetches depend on is not fed, or a variable reference is fetched.
    """
    fed = {t: i for i, t in enumerate(feeds)}
    ops = placement.ops
    fed_ops = _fed_ops(feeds)
    with cyclic_gc_paused():  # nothing made here is cyclic; see footprint
        needed = _needed_ops(ops, fetches, fed_ops)
        parts = split_parallel(partition_ops(needed, placement, fed_ops), placement, fed_ops)
        del needed
        emitter = _Emitter(parts, placement, fed, fed_ops)
        del parts
        emitter.fusion = bool(dask.config.get("daskgraph.fusion")) if fusion is None else fusion
        emitter.jit = jit
        plan = emitter.plan(fetches, feeds)
        # the per-op lists go while the collector is paused: turned on again, it would first
        # walk every object made here that is still alive (a few per op of the graph)
        del emitter
    return plan


def needed_ops(
    ops: Sequence[Operation], fetches: Sequence[Tensor | Operation], feeds: Sequence[Tensor] = ()
) -> list[Operation]:
    """The ops a run of ``fetches`` fed ``feeds`` needs, in graph order: TensorFlow's pruned
    graph, which :func:`~daskgraph.runtime.planner.placement.place` places alone under
    ``place_pruned_graph``.

    Raises
    ------
    InvalidArgumentError
        If a placeholder the fetches depend on is not fed.
    """
    return _needed_ops(ops, fetches, _fed_ops(feeds))


def _fed_ops(feeds: Sequence[Tensor]) -> set[int]:
    """The ids of the ops every output of which is fed (they run as sources)."""
    fed = set(feeds)
    return {t.op.id for t in feeds if all(o in fed for o in t.op.outputs)}


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


class _Emitter:
    """Turns a cut into programs: slots, instructions, transfers between partitions.

    A partition's slots are its ops' outputs, in order, then the values it receives from
    other partitions, in the order it first reads them. The slot of an op's first output is
    kept in a list by op id (``first``), written as the op is emitted (an op reads only older
    ops), or before, when another partition receives a value from a partition not emitted yet.
    """

    def __init__(
        self, cut: Cut, placement: Placement, fed: dict[Tensor, int], fed_ops: set[int]
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
        self.output_bytes: list[list[int | None]] = [[] for _ in range(n)]
        self.exported: dict[tuple[int, Tensor, bool], int] = {}
        self.inputs: list[list[tuple[int, int, int]]] = [[] for _ in range(n)]
        self.deps: list[list[int]] = [[] for _ in range(n)]
        self.feeds: list[list[tuple[int, int]]] = [[] for _ in range(n)]
        self.instructions: list[list[tuple]] = [[] for _ in range(n)]  # Instruction fields
        ref_types = ref_producing_types()
        # variable references to dereference: only looked for when the plan has variables
        types = map(attrgetter("type"), chain.from_iterable(cut.members))
        self.ref_types = () if ref_types.isdisjoint(types) else ref_types
        self.fusion = True  # (lower() sets it from daskgraph.fusion)
        self.jit = False  # every op under TensorFlow's JIT switch (lower() sets it)

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
            self.output_bytes[producer].append(_static_nbytes(tensor))
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
                (first[j] + t.index if t.index else first[j])
                if part_of[(j := t.op.id)] == p
                else self.receive(p, t)
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
                # (the slot's own int object where it can be: a million ops, a million
                # ints less, as ``x + 0`` makes a new one)
                if part_of[ja] == p:
                    sa = first[ja] + a.index if a.index else first[ja]
                else:
                    sa = received(a)
                if part_of[jb] == p:
                    sb = first[jb] + b.index if b.index else first[jb]
                else:
                    sb = received(b)
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
        instructions, read_at = self.instructions[p], self.read_at[p]
        self.instructions[p] = []  # (the unfused ones go once fused: they are the most memory)
        if self.fusion:
            fed_ops = self.fed_ops
            ops = [op for op in self.cut.members[p] if op.id not in fed_ops]
            dtypes = [_dtype_name(op) for op in ops]
            relaxed: list[bool] | None = None  # (none is: the common case)
            if self.jit:
                relaxed = [True] * len(ops)
            elif ops and ops[0].graph.has_jit_scopes:
                relaxed = [op.graph.jit_compiled(op) for op in ops]
            instructions, moved = fuse(instructions, dtypes, kept, relaxed)
            read_at = {slot: moved[i] for slot, i in read_at.items()}
        instructions = with_frees(instructions, kept, self.n_slots(p), read_at)
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
            _predictable(self.cut.members[p]),
            tuple(self.output_bytes[p]),
        )


def _dtype_name(op: Operation) -> str | None:
    """The dtype of ``op``'s first result (None for an op without results)."""
    return op.outputs[0].dtype.name if op.outputs else None


def _predictable(ops: Sequence[Operation]) -> bool:
    """Whether every output of ``ops`` has a fully known static shape and none is of a type
    whose run time depends on the data (see :attr:`Partition.predictable`)."""
    slow = unpredictable_types()
    known = None  # the last shape found fully defined (tensors share their shape objects)
    for op in ops:
        if op.type in slow:
            return False
        for t in op.outputs:
            shape = t.shape
            if shape is known:
                continue
            if shape is None or not shape.is_fully_defined():
                return False
            known = shape
    return True


def _derefs(
    inputs: Sequence[Tensor], ref_types: frozenset[str], ref_inputs: frozenset[int]
) -> tuple[int, ...]:
    """The positions of ``inputs`` that are variable references to read (an op taking a
    reference at that position, an assign's target, reads none)."""
    return tuple(
        [i for i, t in enumerate(inputs) if t.op.type in ref_types and i not in ref_inputs]
    )


def _static_nbytes(tensor: Tensor) -> int | None:
    """The size in bytes of ``tensor``'s values where its shape and dtype say it (None for an
    unknown dimension, or strings and other objects)."""
    shape = tensor.shape
    if shape is None or None in shape:
        return None
    dtype = tensor.dtype.numpy
    if dtype.kind not in "biufc":
        return None
    n = dtype.itemsize
    for d in shape:
        n *= d
    return n
