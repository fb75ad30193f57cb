"""A placement plan as plain data: where each op goes and why, the partitions, the transfers.

:func:`describe` turns a :class:`~daskgraph.runtime.planner.placement.Placement` and the lowered
:class:`~daskgraph.runtime.planner.lowering.Plan` of some fetches into a :class:`PlacementPlan`
without running
anything (``Session.placement`` builds one): per op the device it asked for, the device it got
and the reason (explicit, automatic, colocated, soft fallback); per partition its device,
worker and ops; and every tensor that crosses from one partition to another, with its size
where its shape and dtype are known. It prints as a table and exports as JSON.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass
from typing import Any

from daskgraph.framework.graph import Graph
from daskgraph.runtime.planner.lowering import Plan
from daskgraph.runtime.planner.placement import Placement
from daskgraph.runtime.program import op_names

__all__ = ["OpPlacement", "PartitionPlan", "PlacementPlan", "Transfer", "describe"]


@dataclass(frozen=True)
class OpPlacement:
    """One op: its name and type, the device requested, the device assigned, why, and the
    ops it reads from (``inputs``; some may be outside the plan, when they are fed)."""

    name: str
    type: str
    requested: str
    assigned: str
    reason: str
    detail: str = ""
    inputs: tuple[str, ...] = ()  # the ops it reads from (data, then control inputs)


@dataclass(frozen=True)
class PartitionPlan:
    """One partition: its index, device, the worker it is restricted to, its ops, and the
    ops of each of its fused kernels (named by the last of them)."""

    index: int
    device: str
    worker: str
    ops: tuple[str, ...]
    fused: tuple[tuple[str, ...], ...] = ()


@dataclass(frozen=True)
class Transfer:
    """A tensor sent from one partition (device) to another; ``nbytes`` is None when its
    shape is not fully known before the run."""

    tensor: str
    source: int
    target: int
    source_device: str
    target_device: str
    nbytes: int | None


@dataclass(frozen=True)
class PlacementPlan:
    """What a run of some fetches would do, without running it."""

    ops: tuple[OpPlacement, ...]
    partitions: tuple[PartitionPlan, ...]
    transfers: tuple[Transfer, ...]

    def to_dict(self) -> dict[str, Any]:
        """The plan as JSON-ready data."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PlacementPlan:
        """The plan that :meth:`to_dict` (or JSON read back) gave ``data``."""
        return cls(
            tuple(OpPlacement(**{**o, "inputs": tuple(o.get("inputs", ()))}) for o in data["ops"]),
            tuple(_partition_from(p) for p in data["partitions"]),
            tuple(Transfer(**t) for t in data["transfers"]),
        )

    def to_json(self, **kwargs: Any) -> str:
        """The plan as a JSON document (``kwargs`` go to ``json.dumps``)."""
        return json.dumps(self.to_dict(), **kwargs)

    def __str__(self) -> str:
        rows = [("op", "type", "requested", "assigned", "reason")]
        rows += [(o.name, o.type, o.requested or "-", o.assigned, o.reason) for o in self.ops]
        widths = [max(len(r[c]) for r in rows) for c in range(5)]
        lines = ["  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)) for r in rows]
        lines.insert(1, "  ".join("-" * w for w in widths))
        lines.append("")
        for p in self.partitions:
            lines.append(f"partition {p.index} on {p.device}: {len(p.ops)} ops")
            lines += [f"  fused kernel {ops[-1]}: {', '.join(ops)}" for ops in p.fused]
        for t in self.transfers:
            size = "size unknown" if t.nbytes is None else f"{t.nbytes:,} bytes"
            lines.append(f"transfer {t.tensor}: {t.source_device} -> {t.target_device} ({size})")
        return "\n".join(line.rstrip() for line in lines)


def describe(graph: Graph, placement: Placement, plan: Plan) -> PlacementPlan:
    """The :class:`PlacementPlan` of ``plan`` (lowered from ``placement`` of ``graph``).

    Ops are those the plan runs and the fed ones, in graph order.
    """
    names = [name for p in plan.partitions for ins in p.program.instructions for name in
             op_names(ins)]  # fmt: skip
    names += [tensor.op.name for tensor in plan.feeds]
    ops = []
    for name in sorted(set(names), key=lambda n: graph.get_operation_by_name(n).id):
        op = graph.get_operation_by_name(name)
        placed = placement[op]
        inputs = tuple(
            dict.fromkeys([t.op.name for t in op.inputs] + [c.name for c in op.control_inputs])
        )
        ops.append(
            OpPlacement(
                op.name, op.type, op.device, placed.device, placed.reason, placed.detail, inputs
            )
        )
    partitions = tuple(
        PartitionPlan(
            p.index,
            p.device,
            str(p.worker),
            tuple(name for ins in p.program.instructions for name in op_names(ins)),
            tuple(names for ins in p.program.instructions if len(names := op_names(ins)) > 1),
        )
        for p in plan.partitions
    )
    return PlacementPlan(tuple(ops), partitions, tuple(_transfers(graph, plan)))


def _partition_from(data: dict[str, Any]) -> PartitionPlan:
    fused = tuple(tuple(ops) for ops in data.get("fused", ()))
    return PartitionPlan(**{**data, "ops": tuple(data["ops"]), "fused": fused})


def _transfers(graph: Graph, plan: Plan) -> list[Transfer]:
    """Every tensor a partition reads from another one."""
    found = []
    for p in plan.partitions:
        for position, output, _ in p.program.inputs:
            source = plan.partitions[p.dependencies[position]]
            name = _tensor_at(graph, plan, source, source.program.outputs[output][0])
            found.append(
                Transfer(name, source.index, p.index, source.device, p.device, _nbytes(graph, name))
            )
    return found


def _tensor_at(graph: Graph, plan: Plan, partition: Any, slot: int) -> str:
    """The name of the tensor a partition holds in ``slot``."""
    for ins in partition.program.instructions:
        if ins.out == slot:
            return f"{ins.op_name}:0"
    for position, fed in partition.program.feeds:
        if fed == slot:
            return plan.feeds[partition.feed_indices[position]].name
    return f"(slot {slot})"


def _nbytes(graph: Graph, name: str) -> int | None:
    """The size of tensor ``name`` where its shape is fully known."""
    try:
        tensor = graph.get_tensor_by_name(name)
    except (KeyError, ValueError):
        return None
    shape = tensor.shape
    if shape is None or any(d is None for d in shape):
        return None
    itemsize = tensor.dtype.numpy.itemsize
    return math.prod(shape) * itemsize if tensor.dtype.name != "string" else None
