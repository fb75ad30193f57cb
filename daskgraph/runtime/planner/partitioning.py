"""Cutting the ops a run needs into partitions: one device's ops that run together as one task.

Its one job is that cut (:func:`partition_ops`) and the split of a CPU partition's heavy
independent parts into partitions of their own (:func:`split_parallel`), for
:func:`daskgraph.runtime.planner.lowering.lower`.

Partitions are acyclic by construction. The cut has three steps, each linear in the number of
ops (the second and third work on the few (device, rank) groups, not on ops):

1. *ranks* (:func:`_rank_ops`): an op's rank is the largest rank of its inputs, plus one
   across a device boundary. *Sources* (ops without inputs or control inputs, such as
   constants and variables, and fed ops) count as rank 0 there, and are placed in step 3.
   The non-source ops of one device and one rank form a *group*; every edge between two
   groups goes to a strictly higher rank (a same-device edge to a higher or equal one).
2. *levels* (:func:`_levels`): groups of one device are merged where no path through
   another device separates them. Every group gets a level between its rank and the
   lowest level its consumers allow (theirs, less one across devices), taking the level of
   its device's lowest group when that fits, else its own rank; groups of one device and
   one level are merged. Every edge still goes to a strictly higher level, or stays inside a
   merged group, so merging keeps the partition graph acyclic. (Not in a run with an op that
   may wait for another, such as a dequeue: merged groups run one after the other.)
3. *sources* (:func:`_place_sources`): a source joins the group of its first (lowest)
   consumer on its device, unless a consumer on another device needs it earlier; then it
   joins the device's lowest group that is early enough, or gets a partition of its own.
   A source has no inputs, so it never closes a cycle: ``(x * 2 + 1 on GPU) + 1 on CPU`` is
   two partitions, the CPU's constant ``1`` in the CPU's partition, not one of its own.

A partition is then the ops of one (device, level), in graph order.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from operator import attrgetter
from typing import Any, NamedTuple

import dask.config

from daskgraph.framework.device import CPU
from daskgraph.framework.graph import Operation
from daskgraph.framework.op_registry import blocking_types
from daskgraph.runtime.planner.placement import Placement

__all__ = ["Cut", "partition_ops", "split_parallel"]


class Cut(NamedTuple):
    """The needed ops of a run, cut into partitions: lists indexed by partition or op id."""

    members: list[list[Operation]]  # ops of each partition, in graph order
    part_of: list[int]  # op id -> partition (-1: not needed)
    device: list[int]  # partition -> device index
    rank: list[int]  # partition -> its level (a topological order: see the module docstring)


def partition_ops(needed: list[Operation], placement: Placement, fed_ops: set[int]) -> Cut:
    """Partition ``needed`` by (device, level); see the module docstring for how, and why the
    partitions are acyclic.

    Examples
    --------
    ``(x * 2 + 1 on GPU:0) + 1 on CPU:0``: one partition per device, the CPU's constant with
    the CPU's add.

    >>> import daskgraph as dg
    >>> from daskgraph.cluster.topology import Device
    >>> from daskgraph.runtime.planner.placement import place
    >>> devs = [Device("/job:localhost/replica:0/task:0/device:CPU:0", "w0", "cpu"),
    ...         Device("/job:localhost/replica:0/task:0/device:GPU:0", "w1", "virtual-gpu")]
    >>> with dg.Graph().as_default() as g:
    ...     with dg.device("/gpu:0"):
    ...         y = dg.constant(3.0, name="x") * 2.0 + 1.0
    ...     with dg.device("/cpu:0"):
    ...         z = dg.add(y, 1.0, name="z")
    >>> cut = partition_ops(g.get_operations(), place(g, devs), set())
    >>> [[op.name for op in ops] for ops in cut.members]
    [['x', 'Const', 'mul', 'Const_1', 'add'], ['Const_2', 'z']]
    >>> cut.device, cut.rank
    ([1, 0], [0, 1])
    """
    where = placement.device_indices
    part_of = [-1] * len(placement.ops)
    if needed and where.count(where[needed[0].id]) == len(where):
        # every op on one device: every rank is 0, one partition (the common case)
        for op in needed:
            part_of[op.id] = 0
        return Cut([needed], part_of, [where[needed[0].id]], [0])
    n_devices = len(placement.devices)
    ranks = _rank_ops(needed, where, len(placement.ops), n_devices, fed_ops)
    level, lowest = _levels(ranks.groups, ranks.edges, n_devices)
    if any(lv != key // n_devices for key, lv in level.items()) and not blocking_types().isdisjoint(
        map(attrgetter("type"), needed)
    ):
        # an op that may wait for another (a dequeue for an enqueue of the same run) keeps
        # its group apart: merged, the two would run one after the other in graph order
        level, lowest = _levels(ranks.groups, ranks.edges, n_devices, merge=False)
    sources = _place_sources(ranks, where, level, lowest, n_devices)
    return _assemble(needed, where, ranks.rank, level, sources, n_devices, part_of)


_UNSEEN = 1 << 60  # no consumer of a source on that side (yet)


class _Ranks(NamedTuple):
    """Step 1's result (see the module docstring): lists indexed by op id, and the edges
    between groups. A group is named by its key, ``rank * n_devices + device``."""

    rank: list[int]  # op id -> rank; a source: -1 (step 3 writes -1 - its level)
    sources: list[int]  # the needed sources' ids, in graph order
    low_same: list[int]  # source id -> the lowest rank of its consumers on its device
    low_cross: list[int]  # source id -> the lowest rank of its consumers on other devices
    edges: set[tuple[int, int]]  # (producer group, consumer group), between different groups
    groups: set[int]  # every group's key


def _rank_ops(
    needed: list[Operation], where: Sequence[int], n_ops: int, n: int, fed_ops: set[int]
) -> _Ranks:
    """Rank the non-source ops, note the groups each source's consumers are in, and collect
    the edges between groups: one sweep in graph order (a topological order). An input that
    is a source counts as rank 0, so its consumer's rank does not depend on where step 3
    puts it."""
    rank_of = [0] * n_ops
    ranks = _Ranks(rank_of, [], [_UNSEEN] * n_ops, [_UNSEEN] * n_ops, set(), set())
    low_same, low_cross, edges, groups = ranks.low_same, ranks.low_cross, ranks.edges, ranks.groups
    last = -1  # the group last added to ``groups``
    for op in needed:
        i = op.id
        inputs = op.inputs
        controls = op.control_inputs
        if i in fed_ops or not (inputs or controls):
            rank_of[i] = -1
            ranks.sources.append(i)
            continue
        dev = where[i]
        if controls or len(inputs) != 2:
            rank_of[i] = _rank_of(op, dev, where, ranks, n)
            continue
        a, b = inputs  # most ops: unpacked, no loop
        ja, jb = a.op.id, b.op.id
        ra, rb = rank_of[ja], rank_of[jb]
        da, db = where[ja], where[jb]
        ea = ra if da == dev else (ra + 1 if ra >= 0 else 1)
        eb = rb if db == dev else (rb + 1 if rb >= 0 else 1)
        rank = ea if ea > eb else eb
        if rank < 0:
            rank = 0
        rank_of[i] = rank
        if ra == rank == rb and da == dev == db:
            continue  # both inputs in its own group (already in ``groups``)
        key = rank * n + dev
        if key != last:
            groups.add(key)
            last = key
        if ra < 0:
            if da == dev:
                if rank < low_same[ja]:
                    low_same[ja] = rank
            elif rank < low_cross[ja]:
                low_cross[ja] = rank
        elif ra != rank or da != dev:
            edges.add((ra * n + da, key))
        if rb < 0:
            if db == dev:
                if rank < low_same[jb]:
                    low_same[jb] = rank
            elif rank < low_cross[jb]:
                low_cross[jb] = rank
        elif rb != rank or db != dev:
            edges.add((rb * n + db, key))
    return ranks


def _rank_of(op: Operation, dev: int, where: Sequence[int], ranks: _Ranks, n: int) -> int:
    """The rank of ``op`` (on device ``dev``), any number of inputs and control inputs, with
    its sources' consumers and its edges noted in ``ranks`` (as :func:`_rank_ops` does)."""
    rank_of = ranks.rank
    producers = [t.op.id for t in op.inputs]
    producers += [c.id for c in op.control_inputs]
    rank = 0
    for j in producers:
        r = rank_of[j]
        if where[j] != dev:
            r = r + 1 if r >= 0 else 1
        if r > rank:
            rank = r
    key = rank * n + dev
    ranks.groups.add(key)
    for j in producers:
        r = rank_of[j]
        if r < 0:
            low = ranks.low_same if where[j] == dev else ranks.low_cross
            if rank < low[j]:
                low[j] = rank
        elif r != rank or where[j] != dev:
            ranks.edges.add((r * n + where[j], key))
    return rank


def _levels(
    groups: Iterable[int], edges: set[tuple[int, int]], n: int, merge: bool = True
) -> tuple[dict[int, int], dict[int, int]]:
    """Step 2: every group's level (group key -> level), and each device's lowest level;
    without ``merge``, every group's level is its rank.

    Consumers come first (the highest rank first; every edge goes to a higher rank). A group
    may take any level from its rank up to the lowest its consumers allow; it takes its
    device's lowest level so far when that fits (merging with those groups), else its rank.
    A device's levels so far are never below the group's rank (they belong to groups of
    higher ranks), and the level taken is never above them, so each device's lowest level is
    its latest group's.
    """
    after: dict[int, list[int]] = {}
    for producer, consumer in edges:
        after.setdefault(producer, []).append(consumer)
    level: dict[int, int] = {}
    lowest: dict[int, int] = {}  # device -> the lowest level of its groups so far
    for key in sorted(groups, reverse=True):
        rank, dev = divmod(key, n)
        latest = _UNSEEN
        for consumer in after.get(key, ()):
            bound = level[consumer] - (consumer % n != dev)
            if bound < latest:
                latest = bound
        low = lowest.get(dev)
        level[key] = lowest[dev] = low if merge and low is not None and low <= latest else rank
    return level, lowest


def _place_sources(
    ranks: _Ranks, where: Sequence[int], level: dict[int, int], lowest: dict[int, int], n: int
) -> set[tuple[int, int]]:
    """Step 3: the level of every source, written as ``-1 - level`` into ``ranks.rank``;
    returns the (level, device) pairs the sources are at.

    A source goes to the level of its lowest-ranked consumer on its device (that consumer's
    group: each device's levels grow with the ranks, so it is the lowest of its consumers'
    levels there), when that is below the levels of its consumers on other devices (each at
    least its rank: the source must come one level earlier). Otherwise it joins its device's
    lowest group if that is early enough, or gets a level of its own.
    """
    rank_of, low_same, low_cross = ranks.rank, ranks.low_same, ranks.low_cross
    found: set[tuple[int, int]] = set()
    for s in ranks.sources:
        dev = where[s]
        same, cross = low_same[s], low_cross[s]
        latest = cross - 1 if cross != _UNSEEN else _UNSEEN
        at = None
        if same != _UNSEEN:
            at = level[same * n + dev]
            if at > latest:
                at = None
        if at is None:
            at = lowest.get(dev)
            if at is None or at > latest:
                at = latest if latest != _UNSEEN else 0
        rank_of[s] = -1 - at
        found.add((at, dev))
    return found


def _assemble(
    needed: list[Operation],
    where: Sequence[int],
    rank_of: list[int],
    level: dict[int, int],
    sources: set[tuple[int, int]],
    n: int,
    part_of: list[int],
) -> Cut:
    """The partitions of (level, device), numbered in that order, their members in graph
    order. A source's ``rank_of`` is ``-1 - level``, a non-source's its group's rank;
    ``sources`` are the (level, device) pairs of the sources."""
    at = {(lv, key % n) for key, lv in level.items()} | sources
    pairs = sorted(at)
    number = {pair: p for p, pair in enumerate(pairs)}
    members: list[list[Operation]] = [[] for _ in pairs]
    index: dict[int, int] = {}  # rank * n + device (rank: -1 - level for a source) -> partition
    last, p, append = None, -1, None
    for op in needed:
        i = op.id
        key = rank_of[i] * n + where[i]
        if key != last:
            p = index.get(key, -1)
            if p < 0:
                rank, dev = divmod(key, n)
                p = index[key] = number[(level[key] if rank >= 0 else -1 - rank, dev)]
            append = members[p].append
            last = key
        part_of[i] = p
        append(op)  # type: ignore[misc]
    return Cut(members, part_of, [d for _, d in pairs], [lv for lv, _ in pairs])


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
    independent and keep their level; the only edges among them go from the part holding the
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
    last: Any = ()  # the shape last looked up (never a tensor's: those are TensorShapes)
    n = 0
    for op in ops:
        i = op.id
        if i in fed_ops or (op.type == "Const" and not op.control_inputs):
            continue  # a source (a constant made after others, Adam's ``beta1``, is not)
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
        if found != _JOIN and op.inputs and op.type not in _MULTITHREADED:  # (a variable: none)
            outputs = op.outputs
            if outputs:
                shape = outputs[0].shape
                if shape is not last:  # (tensors share their shape objects: no hashing)
                    n = sizes.get(shape)
                    if n is None:
                        n = sizes[shape] = _elements(shape)
                    last = shape
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
