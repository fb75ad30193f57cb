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
distinct (request, kernel types) pair is computed once. :func:`place` is four steps, each
its own section below:

1. colocation groups (:func:`colocation_groups`): which ops must share a device;
2. request merging (:func:`group_requests`): each group's merged device request and the
   device types with a kernel for every member;
3. device choice (``_Chooser``): the first allowed device in TensorFlow's order, or the soft
   placement fallback, or the error saying why none fits;
4. reasons (:func:`op_reason`): why each op is where it is (explicit, automatic, colocated or
   soft), as ``log_device_placement`` shows it.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from itertools import compress, count
from operator import ne

from daskgraph.cluster.topology import Device
from daskgraph.errors import InvalidArgumentError, quote
from daskgraph.framework.device import CPU, GPU, DeviceSpec
from daskgraph.framework.graph import Graph, Operation
from daskgraph.framework.op_registry import lookup

__all__ = [
    "GroupRequest",
    "PlacedOp",
    "Placement",
    "colocation_groups",
    "format_placement_log",
    "group_requests",
    "op_reason",
    "place",
]

EXPLICIT = "explicit"
AUTOMATIC = "automatic"
COLOCATED = "colocated"
SOFT = "soft"
#: the reason of an op outside a pruned placement's ops (see :func:`place`'s ``only``): not placed
PRUNED = "pruned"

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
        """The graph's operations, in graph order (``op.id`` indexes them)."""
        return self._ops

    @property
    def graph_version(self) -> int:
        """The graph's ``version`` when it was placed (a later op makes the placement stale)."""
        return self._graph_version

    @property
    def device_indices(self) -> Sequence[int]:
        """Index into :attr:`devices` of every op's device, by ``op.id`` (do not modify)."""
        return self._where

    def device_index(self, op: Operation) -> int:
        """Index into :attr:`devices` of the device ``op`` is placed on."""
        return self._where[op.id]

    def device_of(self, op: Operation) -> Device:
        """The :class:`~daskgraph.cluster.topology.Device` ``op`` is placed on."""
        return self.devices[self._where[op.id]]

    @property
    def placed_ops(self) -> list[Operation]:
        """The ops placed, in graph order (every op but those a pruned placement left out)."""
        return [op for op in self._ops if self._reasons[op.id] != PRUNED]

    def __getitem__(self, op: Operation | str) -> PlacedOp:
        if isinstance(op, str):
            op = self._ops[0].graph.get_operation_by_name(op)
        i = op.id
        return PlacedOp(
            self.devices[self._where[i]].name, self._reasons[i], self._details.get(i, "")
        )

    def __len__(self) -> int:
        return len(self._where)

    def items(self) -> Iterator[tuple[str, PlacedOp]]:
        """(op name, PlacedOp) for every op placed, in graph order."""
        for op in self.placed_ops:
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
    only: Sequence[Operation] | None = None,
) -> Placement:
    """Choose a device for every operation of ``graph`` (or of ``only``).

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
        The cluster's devices (see :func:`daskgraph.cluster.topology.devices_from_workers`).
    allow_soft_placement
        Fall back to an available device instead of raising.
    local_task
        ``(job, task)`` of the master's task (the :class:`~daskgraph.cluster.server.Server` whose
        target the session was created on): its devices go before other tasks' devices of the
        same type. ``None``: no device is local (only type priority, then name, decide).
    only
        Place these ops only (in graph order), as TensorFlow places a *pruned* graph (the ops a
        run needs; ``place_pruned_graph``, ``InteractiveSession``): the others get no device
        (reason :data:`PRUNED`), so a request none of the placed ops makes cannot fail, and
        colocation binds only the placed members of a group.

    Raises
    ------
    InvalidArgumentError
        When a request cannot be satisfied and soft placement is off.

    Examples
    --------
    >>> import daskgraph as dg
    >>> from daskgraph.cluster.topology import Device
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
    placing = ops if only is None else only
    roots = colocation_groups(ops)
    # only groups of several ops need their requests merged; a lone op's is its own
    shared = set(compress(roots, map(ne, roots, count())))  # the roots of other ops
    members = [op for op in placing if roots[op.id] in shared] if shared else []
    requests = group_requests(members, roots, allow_soft_placement)
    chooser = _Chooser(devices, allow_soft_placement, local_task)
    where, reasons, details = _choose_devices(placing, roots, requests, chooser, len(ops))
    return Placement(devices, ops, where, reasons, details, graph.version)


_EMPTY = DeviceSpec()


# -- colocation groups ----------------------------------------------------------------------------
def colocation_groups(ops: Sequence[Operation]) -> list[int]:
    """The group of every op: ``roots[op.id]`` is the id of the first op of its group.

    Ops that must share a device (``op.colocation`` names another op: a Variable with its
    reads and assigns, ``colocate_with`` blocks) form one group, found with a union-find
    in linear time; ``ops`` are a graph's operations, in graph order.

    Raises
    ------
    InvalidArgumentError
        When an op is colocated with an op that is not in the graph.

    Examples
    --------
    >>> import daskgraph as dg
    >>> with dg.Graph().as_default() as g:
    ...     a = dg.constant(1.0, name="a")
    ...     b = dg.constant(2.0, name="b")
    ...     with dg.colocate_with(b):
    ...         c = dg.identity(a, name="c")
    >>> colocation_groups(g.get_operations())
    [0, 1, 1]
    """
    parent = list(range(len(ops)))
    if not any(op.colocation for op in ops):
        return parent  # no op asks to share a device: every op is a group of its own
    by_name = {op.name: op.id for op in ops}

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
                    f"Operation {quote(op.name)} is colocated with {quote(op.colocation)}, which "
                    "is not in the graph.",
                    op=op.name,
                )
            a, b = find(op.id), find(other)
            if a != b:
                parent[max(a, b)] = min(a, b)
    return [find(i) for i in range(len(ops))]


# -- request merging ------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class GroupRequest:
    """What a colocation group asks for: the merged device request of its members, the op
    the request came from, and the device types that have a kernel for every member."""

    spec: DeviceSpec
    requester: str
    kernel_types: tuple[str, ...]


def group_requests(
    ops: Sequence[Operation], roots: Sequence[int], soft: bool
) -> dict[int, GroupRequest]:
    """The :class:`GroupRequest` of every group (keyed by its root, see
    :func:`colocation_groups`).

    The members' device requests are merged field by field (incompatible requests raise,
    or with ``soft`` the first one wins), and the kernel types are those every member has a
    kernel for.

    Examples
    --------
    ``b`` asks for a GPU and must share ``a``'s device, so the group of both asks for it:

    >>> import daskgraph as dg
    >>> with dg.Graph().as_default() as g:
    ...     a = dg.constant(1.0, name="a")
    ...     with dg.colocate_with(a), dg.device("/gpu:1"):
    ...         b = dg.identity(a, name="b")
    >>> ops = g.get_operations()
    >>> group_requests(ops, colocation_groups(ops), soft=False)
    {0: GroupRequest(spec=DeviceSpec('/device:GPU:1'), requester='b', kernel_types=('GPU', 'CPU'))}
    """
    request: dict[int, tuple[DeviceSpec, str]] = {}
    kernel_types: dict[int, tuple[str, ...]] = {}
    type_cache: dict[tuple, tuple[str, ...]] = {}
    specs: dict[str, DeviceSpec] = {}
    for op in ops:
        root = roots[op.id]
        types = _kernel_types(op, type_cache)
        known = kernel_types.get(root)
        kernel_types[root] = types if known is None else tuple(t for t in known if t in types)
        if op.device:
            spec = specs.get(op.device)
            if spec is None:
                spec = specs[op.device] = DeviceSpec.from_string(op.device)
            if root in request:
                request[root] = _merge_group_request(request[root], spec, op, soft)
            else:
                request[root] = (spec, op.name)
    return {
        root: GroupRequest(*request.get(root, (_EMPTY, "")), types)
        for root, types in kernel_types.items()
    }


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
                f"Cannot colocate operations {quote(source)} and {quote(op.name)}: they request "
                f"incompatible devices {quote(str(known))} and {quote(str(spec))}. Put them "
                "under one device scope, or set allow_soft_placement=True.",
                op=op.name,
                requested=str(spec),
                conflicting=str(known),
            )
    return known.make_merged_spec(spec), source


# -- device choice --------------------------------------------------------------------------------
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

    def _best(self, spec: DeviceSpec, types: tuple[str, ...], prefer: str | None) -> int | None:
        best, best_key = None, None
        for i, candidate in enumerate(self.specs):
            if candidate.device_type not in types or not spec.matches(candidate):
                continue
            if self.devices[i].unusable:
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
        """(device index, reason, soft-placement detail) for a group's request; ``op`` and
        ``requester`` only name the group in an error."""
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
        why = _why_unsatisfied(spec, types, op, self.devices)
        if self.soft and not spec.is_empty:
            relaxed = DeviceSpec(spec.job, spec.replica, spec.task)
            found = self._best(relaxed, types, spec.device_type)
            if found is not None:
                return (found, SOFT, _soft_detail(spec, why, self.devices[found]))
        raise _unsatisfiable(spec, why, op, requester, self.devices, self.soft)


def _choose_devices(
    ops: Sequence[Operation],
    roots: Sequence[int],
    requests: dict[int, GroupRequest],
    chooser: _Chooser,
    n_ops: int,
) -> tuple[list[int], list[str], dict[int, str]]:
    """Every op's device index, reason, and (for soft fallbacks) detail, in lists of the
    graph's ``n_ops`` (the ops not in ``ops``: device 0, reason :data:`PRUNED`): one choice
    per colocation group of several ops (``requests``), made when its first op (the root)
    comes up, and one per distinct (device request, op type, dtypes) of the ops on their own."""
    where = [0] * n_ops
    reasons = [AUTOMATIC if len(ops) == n_ops else PRUNED] * n_ops
    details: dict[int, str] = {}
    decided: dict[int, tuple[int, str, str]] = {}
    alone: dict[tuple, tuple[int, str, str]] = {}  # a lone op's key -> (index, reason, detail)
    for op in ops:
        i = op.id
        if requests and roots[i] in requests:
            index, reason, detail = _choose_grouped(op, roots[i], requests, decided, chooser)
        else:
            # the key: (device request, op type, output dtypes, input dtypes), built without
            # a comprehension for the usual shapes of ops (a third of the time of placing)
            outputs, inputs = op.outputs, op.inputs
            if len(outputs) != 1:
                key = (op.device, op.type, *[t.dtype for t in outputs], *[t.dtype for t in inputs])
            elif len(inputs) == 2:
                a, b = inputs
                key = (op.device, op.type, outputs[0].dtype, a.dtype, b.dtype)
            elif not inputs:
                key = (op.device, op.type, outputs[0].dtype)
            else:
                key = (op.device, op.type, outputs[0].dtype, *[t.dtype for t in inputs])
            found = alone.get(key)
            if found is None:
                found = _choose_alone(op, key, chooser)
                if op.colocation is None:  # (a lone op's reason depends on that too)
                    alone[key] = found
            index, reason, detail = found
        where[i] = index
        reasons[i] = reason
        if reason == SOFT:
            details[i] = detail
    return where, reasons, details


def _choose_grouped(
    op: Operation,
    root: int,
    requests: dict[int, GroupRequest],
    decided: dict[int, tuple[int, str, str]],
    chooser: _Chooser,
) -> tuple[int, str, str]:
    """(device index, reason, detail) of ``op``, a member of the colocation group of ``root``,
    choosing the group's device (kept in ``decided``) when its first op comes up."""
    result = decided.get(root)
    if result is None:
        group = requests[root]
        result = chooser.choose(group.spec, group.kernel_types, op, group.requester)
        decided[root] = result
    index, reason, detail = result
    return index, op_reason(op, root, reason), detail


def _choose_alone(op: Operation, key: tuple, chooser: _Chooser) -> tuple[int, str, str]:
    """(device index, reason, detail) of an op that is a colocation group of its own, whose
    ``key`` is (device request, op type, dtypes...)."""
    spec = DeviceSpec.from_string(op.device) if op.device else _EMPTY
    types = lookup(op.type).device_types(key[2:])
    index, reason, detail = chooser.choose(spec, types, op, op.name if op.device else "")
    return index, op_reason(op, op.id, reason), detail


# -- reasons --------------------------------------------------------------------------------------
def op_reason(op: Operation, root: int, group_reason: str) -> str:
    """Why ``op`` is on its group's device, given why the group is there.

    Soft placement marks every member; otherwise the group's reason (explicit or automatic)
    is the root's own, and the other members, ops with a colocation request, and ops that
    requested nothing but share an explicitly requested device are *colocated*.

    Examples
    --------
    >>> import daskgraph as dg
    >>> with dg.Graph().as_default() as g:
    ...     a = dg.constant(1.0, name="a")
    >>> op_reason(a.op, 0, EXPLICIT), op_reason(a.op, 0, AUTOMATIC), op_reason(a.op, 0, SOFT)
    ('colocated', 'automatic', 'soft')
    """
    if group_reason == SOFT:
        return SOFT
    if root != op.id or op.colocation is not None or (group_reason == EXPLICIT and not op.device):
        return COLOCATED
    return group_reason


def _why_unsatisfied(
    spec: DeviceSpec, types: tuple[str, ...], op: Operation, devices: Sequence[Device]
) -> str:
    """Why no device of ``devices`` satisfies ``spec`` for ``op`` (kernels for ``types``)."""
    if not types:
        return f"op type {op.type} has no kernel for its dtypes on any device type"
    matching = [d for d in devices if spec.matches(d.spec)]
    if not matching:
        return "no devices matching that specification are registered in this cluster"
    broken = [d for d in matching if d.unusable and d.device_type in types]
    if broken:  # a device that would do, but cannot run kernels
        return "; ".join(f"{d.name} is unusable: {d.unusable}" for d in broken[:2])
    kinds = ", ".join(types) or "none"
    dts = sorted({t.dtype.name for t in (*op.outputs, *op.inputs)})
    return (
        f"no supported kernel for {spec.device_type or 'the requested'} devices is available"
        f" ({op.type} with dtype {', '.join(dts) or 'none'} has kernels for: {kinds})"
    )


def _soft_detail(spec: DeviceSpec, why: str, device: Device) -> str:
    """What a soft fallback records: the request, why it failed, and where the op went."""
    return f"requested {quote(str(spec))} but {why}; placed on {device.name} by soft placement"


def _unsatisfiable(
    spec: DeviceSpec,
    why: str,
    op: Operation,
    requester: str,
    devices: Sequence[Device],
    soft: bool,
) -> InvalidArgumentError:
    """The error for a request no device satisfies (suggesting soft placement if off)."""
    fix = (
        ""
        if soft or spec.is_empty
        else " Set allow_soft_placement=True in the session config to fall back to an available"
        " device."
    )
    names = ", ".join(d.name for d in devices if not d.unusable)
    return InvalidArgumentError(
        f"Cannot assign a device for operation {quote(op.name)} ({op.type}): Could not satisfy "
        f"explicit device specification {quote(str(spec))} because {why}; available devices: "
        f"{names}.{fix}{_virtual_gpu_hint(spec, devices)}",
        op=op.name,
        requested=str(spec),
        available=[d.name for d in devices if not d.unusable],
        requested_by=requester,
    )


def _virtual_gpu_hint(spec: DeviceSpec, devices: Sequence[Device]) -> str:
    """How to get GPUs, for a GPU request on a cluster that has none at all, where a GPU
    would have satisfied it (its job, replica and task exist): virtual GPUs, workers that run
    the GPU kernels over NumPy. Empty otherwise."""
    if spec.device_type != GPU or any(d.device_type == GPU for d in devices):
        return ""
    host = spec.replace(device_type=None, device_index=None)
    if not any(host.matches(d.spec) for d in devices):
        return ""  # the job or task is what is missing, not a GPU
    return (
        " This cluster has no GPU: to run GPU placements without one, use virtual GPUs "
        "(workers that run the GPU kernels over NumPy): DASK_DASKGRAPH__VIRTUAL_GPUS=N in the "
        "environment, or the Dask config key daskgraph.virtual-gpus, for the embedded cluster; "
        "`daskgraph server --virtual-gpus N` for a server."
    )


def format_placement_log(placement: Placement) -> list[str]:
    """One line per op in TensorFlow's format; an op soft placement moved says so, and why,
    after its device, on the same line.

    Lines look like ``MatMul: (MatMul): /job:localhost/replica:0/task:0/device:GPU:0``, and
    ``s: (Const): /job:localhost/replica:0/task:0/device:CPU:0 (soft placement: requested
    '/device:GPU:0' but no supported kernel for GPU devices is available (...))``.
    """
    names = [d.name for d in placement.devices]
    moved = placement.soft_fallbacks()
    lines = []
    for op in placement.placed_ops:
        device = names[placement.device_index(op)]
        line = f"{op.name}: ({op.type}): {device}"
        why = moved.get(op.name)
        if why is not None:  # the device is on the line already
            why = why.removesuffix(f"; placed on {device} by soft placement")
            line = f"{line} (soft placement: {why})"
        lines.append(line)
    return lines
