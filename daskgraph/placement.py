"""The placer: a pure function from (graph, devices, soft placement) to a device for every op.

It follows TensorFlow's rules:

* an op with no device request goes to the highest-priority device that has a kernel for it:
  the lowest-numbered GPU when the cluster has one, else the CPU; on a cluster session, among
  devices of the same type those of the master's own task come first (``local_task``);
* a partial request (``/gpu:*``, ``/job:worker``) matches any device that fits it;
* ops that must live together (a Variable with its reads and assigns, ``colocate_with``) are
  placed as one group, on a device with a kernel for every member;
* a request no device satisfies, or an op with no kernel for the requested device type, raises
  :class:`~daskgraph.errors.InvalidArgumentError` naming the op, the request and the
  available devices, unless soft placement is on: then the op falls back, keeping job, replica
  and task, to another device of the requested type before any other type, and the placement
  records why.

It runs in linear time: ops are grouped with a union-find, and the device chosen for each
distinct (request, kernel types) pair is computed once.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from daskgraph.device import CPU, GPU, DeviceSpec
from daskgraph.errors import InvalidArgumentError
from daskgraph.graph import Graph, Operation
from daskgraph.ops.registry import lookup
from daskgraph.topology import Device

__all__ = ["PlacedOp", "Placement", "format_placement_log", "place"]

EXPLICIT = "explicit"
AUTOMATIC = "automatic"
COLOCATED = "colocated"
SOFT = "soft"

_TYPE_PRIORITY = {GPU: 0, CPU: 2}


@dataclass(frozen=True, slots=True)
class PlacedOp:
    """Where one op goes and why: ``reason`` is explicit, automatic, colocated or soft."""

    device: str
    reason: str
    detail: str = ""


class Placement:
    """The result of :func:`place`: op name -> :class:`PlacedOp`, and the devices used."""

    __slots__ = ("_details", "_graph_version", "_ops", "_reasons", "_where", "devices")

    def __init__(
        self,
        devices: Sequence[Device],
        ops: Sequence[Operation],
        where: list[int],
        reasons: list[str],
        details: dict[int, str],
        graph_version: int,
    ) -> None:
        self.devices = tuple(devices)
        self._ops = ops
        self._where = where
        self._reasons = reasons
        self._details = details
        self._graph_version = graph_version

    @property
    def ops(self) -> Sequence[Operation]:
        return self._ops

    @property
    def graph_version(self) -> int:
        return self._graph_version

    def device_index(self, op: Operation) -> int:
        """Index into :attr:`devices` of the device ``op`` is placed on."""
        return self._where[op.id]

    def device_of(self, op: Operation) -> Device:
        return self.devices[self._where[op.id]]

    def __getitem__(self, op: Operation | str) -> PlacedOp:
        if isinstance(op, str):
            op = self._ops[0].graph.get_operation_by_name(op)
        i = op.id
        return PlacedOp(
            self.devices[self._where[i]].name, self._reasons[i], self._details.get(i, "")
        )

    def __len__(self) -> int:
        return len(self._where)

    def items(self):
        """(op name, PlacedOp) for every op, in graph order."""
        for op in self._ops:
            yield op.name, self[op]

    def soft_fallbacks(self) -> dict[str, str]:
        """op name -> why it was moved by soft placement."""
        return {self._ops[i].name: why for i, why in self._details.items()}


def place(
    graph: Graph,
    devices: Sequence[Device],
    *,
    allow_soft_placement: bool = False,
    local_task: tuple[str, int] | None = None,
) -> Placement:
    """Choose a device for every operation of ``graph``.

    Among the devices a request allows (every device, for an op without a request), the
    placer takes the first in TensorFlow's order: ``DeviceSet::SortPrioritizedDeviceVector``
    (tensorflow/core/common_runtime/device_set.cc), applied to every colocation group by
    ``FilterSupportedDevices`` (colocation_graph.cc), sorts by the device type's priority
    (GPU before CPU), then local devices before remote ones (``Device::IsLocal``), then by
    name. The master's local devices are those of its own task: ``Master::CreateSession``
    (distributed_runtime/master.cc) adds the server's own devices as they are and every other
    task's as a ``RemoteDevice``, whose ``IsLocal`` is false (remote_device.cc). Names are
    compared field by field here (job, then replica, task and index as numbers), where
    TensorFlow compares the strings (``task:10`` before ``task:2``).

    Parameters
    ----------
    graph
        The graph to place (every op of it, as TensorFlow does).
    devices
        The cluster's devices (see :func:`daskgraph.topology.devices_from_workers`).
    allow_soft_placement
        Fall back to an available device instead of raising.
    local_task
        ``(job, task)`` of the master's task (the :class:`~daskgraph.server.Server` whose
        target the session was created on): its devices go before other tasks' devices of the
        same type. ``None``: no device is local (only type priority, then name, decide).

    Raises
    ------
    InvalidArgumentError
        When a request cannot be satisfied and soft placement is off.

    Examples
    --------
    >>> import daskgraph as dg
    >>> from daskgraph.topology import Device
    >>> devs = [Device("/job:localhost/replica:0/task:0/device:CPU:0", "w0", "cpu"),
    ...         Device("/job:localhost/replica:0/task:0/device:GPU:0", "w1", "virtual-gpu")]
    >>> with dg.Graph().as_default() as g:
    ...     with dg.device("/cpu:0"):
    ...         a = dg.constant(1.0, name="a")
    ...     b = a * 2.0
    >>> p = place(g, devs)
    >>> p["a"].device
    '/job:localhost/replica:0/task:0/device:CPU:0'
    >>> p["mul"].device, p["mul"].reason
    ('/job:localhost/replica:0/task:0/device:GPU:0', 'automatic')

    On a session created on task 1's server, task 1's CPU goes before task 0's:

    >>> two = [Device(f"/job:local/replica:0/task:{t}/device:CPU:0", f"w{t}", "cpu")
    ...        for t in (0, 1)]
    >>> place(g, two)["mul"].device
    '/job:local/replica:0/task:0/device:CPU:0'
    >>> place(g, two, local_task=("local", 1))["mul"].device
    '/job:local/replica:0/task:1/device:CPU:0'
    """
    if not devices:
        raise InvalidArgumentError(
            "Cannot place the graph: the cluster has no devices (no workers are connected).",
            available=[],
        )
    ops = graph.get_operations()
    n = len(ops)
    parent = list(range(n))
    by_name = {op.name: op.id for op in ops} if any(op.colocation for op in ops) else {}

    def find(i: int) -> int:
        root = i
        while parent[root] != root:
            root = parent[root]
        while parent[i] != root:
            parent[i], i = root, parent[i]
        return root

    for op in ops:
        if op.colocation is not None:
            other = by_name.get(op.colocation)
            if other is None:
                raise InvalidArgumentError(
                    f"Operation {op.name!r} is colocated with {op.colocation!r}, which is not in "
                    "the graph.",
                    op=op.name,
                )
            a, b = find(op.id), find(other)
            if a != b:
                parent[max(a, b)] = min(a, b)

    # per group: the merged request, the op it came from, and the device types of its kernels
    request: dict[int, tuple[DeviceSpec, str]] = {}
    kernel_types: dict[int, tuple[str, ...]] = {}
    type_cache: dict[tuple, tuple[str, ...]] = {}
    specs: dict[str, DeviceSpec] = {}
    for op in ops:
        root = find(op.id)
        types = _kernel_types(op, type_cache)
        known = kernel_types.get(root)
        kernel_types[root] = types if known is None else tuple(t for t in known if t in types)
        if op.device:
            spec = specs.get(op.device)
            if spec is None:
                spec = specs[op.device] = DeviceSpec.from_string(op.device)
            if root in request:
                request[root] = _merge_group_request(request[root], spec, op, allow_soft_placement)
            else:
                request[root] = (spec, op.name)

    chooser = _Chooser(devices, allow_soft_placement, local_task)
    where = [0] * n
    reasons = [AUTOMATIC] * n
    details: dict[int, str] = {}
    decided: dict[int, tuple[int, str, str]] = {}
    for op in ops:
        root = find(op.id)
        result = decided.get(root)
        if result is None:
            spec, requester = request.get(root, (_EMPTY, ""))
            result = chooser.choose(
                spec, kernel_types[root], op if root == op.id else ops[root], requester
            )
            decided[root] = result
        index, reason, detail = result
        where[op.id] = index
        if reason == SOFT:
            reasons[op.id] = SOFT
            details[op.id] = detail
        elif root != op.id or op.colocation is not None or (reason == EXPLICIT and not op.device):
            reasons[op.id] = COLOCATED
        else:
            reasons[op.id] = reason
    return Placement(devices, ops, where, reasons, details, graph.version)


_EMPTY = DeviceSpec()


def _kernel_types(op: Operation, cache: dict[tuple, tuple[str, ...]]) -> tuple[str, ...]:
    key = (op.type, *[t.dtype for t in op.outputs], *[t.dtype for t in op.inputs])
    types = cache.get(key)
    if types is None:
        types = cache[key] = lookup(op.type).device_types(key[1:])
    return types


def _merge_group_request(
    current: tuple[DeviceSpec, str], spec: DeviceSpec, op: Operation, soft: bool
) -> tuple[DeviceSpec, str]:
    known, source = current
    for field in ("job", "replica", "task", "device_type", "device_index"):
        a, b = getattr(known, field), getattr(spec, field)
        if a is not None and b is not None and a != b:
            if soft:
                return current  # the first request of the group wins
            raise InvalidArgumentError(
                f"Cannot colocate operations {source!r} and {op.name!r}: they request "
                f"incompatible devices '{known}' and '{spec}'. Put them under one device scope, "
                "or set allow_soft_placement=True.",
                op=op.name,
                requested=str(spec),
                conflicting=str(known),
            )
    return known.make_merged_spec(spec), source


class _Chooser:
    """Picks a device for a (request, kernel types) pair, caching every answer."""

    def __init__(
        self, devices: Sequence[Device], soft: bool, local_task: tuple[str, int] | None = None
    ) -> None:
        self.devices = list(devices)
        self.specs = [d.spec for d in devices]
        self.soft = soft
        # 0 for a device of the master's task, 1 for the others: TensorFlow's IsLocal tie-break
        self.remote = [
            0
            if local_task is not None
            and (s.job, s.replica or 0, s.task) == (local_task[0], 0, local_task[1])
            else 1
            for s in self.specs
        ]
        self.cache: dict[tuple[DeviceSpec, tuple[str, ...]], tuple] = {}
        self.names = ", ".join(d.name for d in devices)

    def _best(self, spec: DeviceSpec, types: tuple[str, ...], prefer: str | None) -> int | None:
        best, best_key = None, None
        for i, candidate in enumerate(self.specs):
            if candidate.device_type not in types or not spec.matches(candidate):
                continue
            key = (
                0 if candidate.device_type == prefer else 1,
                _TYPE_PRIORITY.get(candidate.device_type, 1),
                self.remote[i],
                candidate.job or "",
                candidate.replica or 0,
                candidate.task or 0,
                candidate.device_index or 0,
            )
            if best_key is None or key < best_key:
                best, best_key = i, key
        return best

    def choose(
        self, spec: DeviceSpec, types: tuple[str, ...], op: Operation, requester: str
    ) -> tuple[int, str, str]:
        key = (spec, types)
        cached = self.cache.get(key)
        if cached is not None:
            return cached
        found = self._best(spec, types, None)
        if found is not None:
            result = (found, EXPLICIT if not spec.is_empty else AUTOMATIC, "")
        else:
            result = self._fallback(spec, types, op, requester)
        self.cache[key] = result
        return result

    def _fallback(
        self, spec: DeviceSpec, types: tuple[str, ...], op: Operation, requester: str
    ) -> tuple[int, str, str]:
        why = self._why(spec, types, op)
        if self.soft and not spec.is_empty:
            relaxed = DeviceSpec(spec.job, spec.replica, spec.task)
            found = self._best(relaxed, types, spec.device_type)
            if found is not None:
                detail = (
                    f"requested '{spec}' but {why}; placed on {self.devices[found].name} "
                    "by soft placement"
                )
                return (found, SOFT, detail)
        fix = (
            ""
            if self.soft or spec.is_empty
            else " Set allow_soft_placement=True in the session config to fall back to an available"
            " device."
        )
        raise InvalidArgumentError(
            f"Cannot assign a device for operation {op.name!r} ({op.type}): Could not satisfy "
            f"explicit device specification '{spec}' because {why}; available devices: "
            f"{self.names}.{fix}",
            op=op.name,
            requested=str(spec),
            available=[d.name for d in self.devices],
            requested_by=requester,
        )

    def _why(self, spec: DeviceSpec, types: tuple[str, ...], op: Operation) -> str:
        if not types:
            return f"op type {op.type} has no kernel for its dtypes on any device type"
        if not any(spec.matches(s) for s in self.specs):
            return "no devices matching that specification are registered in this cluster"
        kinds = ", ".join(types) or "none"
        dts = sorted({t.dtype.name for t in (*op.outputs, *op.inputs)})
        return (
            f"no supported kernel for {spec.device_type or 'the requested'} devices is available"
            f" ({op.type} with dtype {', '.join(dts) or 'none'} has kernels for: {kinds})"
        )


def format_placement_log(placement: Placement) -> list[str]:
    """One line per op in TensorFlow's format, then one line per soft fallback saying why.

    Lines look like ``MatMul: (MatMul): /job:localhost/replica:0/task:0/device:GPU:0``.
    """
    names = [d.name for d in placement.devices]
    lines = [f"{op.name}: ({op.type}): {names[placement.device_index(op)]}" for op in placement.ops]
    lines += [f"{name}: soft placement: {why}" for name, why in placement.soft_fallbacks().items()]
    return lines
