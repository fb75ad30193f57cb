"""Cutting the ops a run needs into partitions: one device's ops that run together as one task.

Its one job is that cut (:func:`partition_ops`) and the split of a CPU partition's heavy
independent parts into partitions of their own (:func:`split_parallel`), for
:func:`daskgraph.runtime.planner.lowering.lower`.

Partitions are acyclic by construction: an op's *rank* is the largest rank of its inputs,
plus one across a device boundary, and a partition is the set of ops of one device and one
rank. Every edge between two partitions goes to a strictly higher rank, so the partition graph
has no cycle; computing it is linear in the number of ops.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import dask.config

from daskgraph.framework.device import CPU
from daskgraph.framework.graph import Operation
from daskgraph.runtime.planner.placement import Placement

__all__ = ["Cut", "partition_ops", "split_parallel"]


class Cut(NamedTuple):
    """The needed ops of a run, cut into partitions: lists indexed by partition or op id."""

    members: list[list[Operation]]  # ops of each partition, in graph order
    part_of: list[int]  # op id -> partition (-1: not needed)
    device: list[int]  # partition -> device index
    rank: list[int]  # partition -> rank


def partition_ops(needed: list[Operation], placement: Placement, fed_ops: set[int]) -> Cut:
    """Partition ``needed`` by (device, rank); see the module docstring for why it is acyclic."""
    where = placement.device_indices
    part_of = [-1] * len(placement.ops)
    if needed and where.count(where[needed[0].id]) == len(where):
        # every op on one device: every rank is 0, one partition (the common case)
        for op in needed:
            part_of[op.id] = 0
        return Cut([needed], part_of, [where[needed[0].id]], [0])
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
    return Cut(members, part_of, part_device, part_rank)


#: op types that already use every core (BLAS): splitting them out gains nothing
_MULTITHREADED = frozenset({"MatMul"})

_JOIN = -1  # the branch label of an op joining two branches, or depending on a join


def split_parallel(cut: Cut, placement: Placement, fed_ops: set[int]) -> Cut:
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
    return Cut(members, part_of, device, rank)


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
