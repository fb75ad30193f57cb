"""The dataflow graph: :class:`Graph`, :class:`Operation` and :class:`Tensor`.

A graph is an append-only list of operations. Each operation has a unique name (TensorFlow's
defaults: the op type, made unique with ``_1``, ``_2``, ...; prefixed by the ``name_scope``),
input tensors, control inputs, attributes, and the device *requested* for it by the device
scopes in force when it was created. Where it actually runs is decided later by the placer.

>>> g = Graph()
>>> with g.as_default():
...     op1 = g.create_op("Const", [], dtype=dtypes.float32, shape=(), attrs={"value": 1.0})
...     op2 = g.create_op("Const", [], dtype=dtypes.float32, shape=(), attrs={"value": 2.0})
...     with name_scope("layer"):
...         op3 = g.create_op("Const", [], dtype=dtypes.float32, shape=())
>>> [op.name for op in g.get_operations()]
['Const', 'Const_1', 'layer/Const']
>>> op2.outputs[0]
<Tensor 'Const_1:0' shape=() dtype=float32>
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from daskgraph import dtypes, scopes
from daskgraph.device import DeviceSpec
from daskgraph.errors import InvalidArgumentError

__all__ = [
    "Graph",
    "Operation",
    "Shape",
    "Tensor",
    "as_operation",
    "get_default_graph",
    "name_scope",
    "reset_default_graph",
]

Shape = tuple  # a static shape: a tuple of ints and None (unknown size), or None (unknown rank)

GLOBAL_VARIABLES = "variables"


class Tensor:
    """One output of an :class:`Operation`: a symbolic value with a dtype and a static shape.

    Tensors compare and hash by identity, as in TensorFlow 1, so they can key feed dicts.
    Arithmetic operators (``+ - * / @``, unary ``-``) build new operations.
    """

    __slots__ = ("dtype", "index", "op", "shape")
    __array_priority__ = 100  # NumPy defers ``ndarray + Tensor`` to Tensor.__radd__

    def __init__(self, op: Operation, index: int, dtype: dtypes.DType, shape: Shape | None):
        self.op = op
        self.index = index
        self.dtype = dtype
        self.shape = shape

    @property
    def name(self) -> str:
        return f"{self.op.name}:{self.index}"

    @property
    def graph(self) -> Graph:
        return self.op.graph

    @property
    def device(self) -> str:
        """The device requested for the producing operation (not where it was placed)."""
        return self.op.device

    def get_shape(self) -> Shape | None:
        return self.shape

    def __repr__(self) -> str:
        return f"<Tensor {self.name!r} shape={self.shape} dtype={self.dtype.name}>"

    def __bool__(self) -> bool:
        raise TypeError(
            f"Using tensor {self.name!r} as a Python bool is not allowed: its value is only "
            "known when a Session runs it. Use Session.run to get the value first."
        )

    def __iter__(self):
        raise TypeError(f"Tensor {self.name!r} is not iterable before it is run.")


class Operation:
    """A node of the graph.

    Attributes
    ----------
    name, type
        Unique name and op type (``"MatMul"``).
    inputs
        Input tensors, in order.
    control_inputs
        Operations that must run before this one.
    attrs
        Op attributes (``value`` of a constant, ``perm`` of a transpose, ...).
    outputs
        Output tensors.
    device
        Canonical string of the device requested for it ('' when none).
    colocation
        Name of the operation this one must share a device with, or None.
    """

    __slots__ = (
        "attrs",
        "colocation",
        "control_inputs",
        "device",
        "graph",
        "id",
        "inputs",
        "name",
        "outputs",
        "type",
    )

    def __init__(
        self,
        graph: Graph,
        op_id: int,
        name: str,
        op_type: str,
        inputs: tuple[Tensor, ...],
        control_inputs: tuple[Operation, ...],
        attrs: dict[str, Any],
    ) -> None:
        self.graph = graph
        self.id = op_id  # position in the graph: creation order, a topological order
        self.name = name
        self.type = op_type
        self.inputs = inputs
        self.control_inputs = control_inputs
        self.attrs = attrs
        self.outputs: list[Tensor] = []
        self.device = ""
        self.colocation: str | None = None

    def _set_device(self, spec: DeviceSpec) -> None:
        self.device = spec.to_string()

    def run(self, feed_dict: dict | None = None, session: Any = None) -> None:
        """Run this operation in ``session`` (default: the default session), as TF1's ``run``."""
        from daskgraph.session import get_default_session  # a convenience for TF1 programs

        (session or get_default_session()).run(self, feed_dict=feed_dict)

    def __repr__(self) -> str:
        return f"<Operation {self.name!r} type={self.type}>"


def as_operation(value: Any, where: str) -> Operation:
    """The operation behind an Operation, a Tensor or a Variable, or a clear TypeError."""
    if isinstance(value, Operation):
        return value
    if isinstance(value, Tensor):
        return value.op
    op = getattr(value, "op", None)
    if isinstance(op, Operation):
        return op
    raise TypeError(f"{where} expects an Operation, a Tensor or a Variable; got {value!r}")


_name_stack: ContextVar[tuple[Graph, str] | None] = ContextVar("daskgraph_name", default=None)


class Graph:
    """A TensorFlow-1 style dataflow graph.

    Operations are appended by the op constructors of :mod:`daskgraph.ops`; a graph can be
    made the default with :meth:`as_default`. ``version`` grows with every new operation, so
    that compiled run plans know when they are stale.
    """

    def __init__(self) -> None:
        self._ops: list[Operation] = []
        self._by_name: dict[str, Operation] = {}
        self._names_in_use: dict[str, int] = {}
        self._collections: defaultdict[str, list[Any]] = defaultdict(list)
        self._finalized = False

    # -- building ---------------------------------------------------------------------------
    @property
    def version(self) -> int:
        return len(self._ops)

    def unique_name(self, name: str, mark_as_used: bool = True) -> str:
        """``name`` under the current name scope, made unique with ``_1``, ``_2``, ...

        Examples
        --------
        >>> g = Graph()
        >>> g.unique_name("a"), g.unique_name("a"), g.unique_name("a_1")
        ('a', 'a_1', 'a_1_1')
        """
        prefix = self._name_prefix()
        if prefix:
            name = f"{prefix}/{name}"
        key = name.lower()
        count = self._names_in_use.get(key, 0)
        if mark_as_used:
            self._names_in_use[key] = count + 1
        if count:
            base = key
            while f"{base}_{count}" in self._names_in_use:
                count += 1
            if mark_as_used:
                self._names_in_use[f"{base}_{count}"] = 1
            name = f"{name}_{count}"
        return name

    def _name_prefix(self) -> str:
        current = _name_stack.get()
        return current[1] if current is not None and current[0] is self else ""

    def create_op(
        self,
        op_type: str,
        inputs: Sequence[Tensor],
        *,
        dtype: dtypes.DType | None,
        shape: Shape | None = None,
        attrs: dict[str, Any] | None = None,
        name: str | None = None,
        control_inputs: Sequence[Operation] = (),
        colocate_with: Operation | None = None,
        exact_name: str | None = None,
    ) -> Operation:
        """Append an operation with one output (or none when ``dtype`` is None).

        The device requested for it comes from the device scopes in force; a colocation
        request (``colocate_with`` here or in a scope) takes that op's requested device.
        ``exact_name`` is a name already made unique by :meth:`unique_name`.
        """
        if self._finalized:
            raise RuntimeError("Graph is finalized and cannot be modified.")
        for tensor in inputs:
            if tensor.op.graph is not self:
                raise InvalidArgumentError(
                    f"Tensor {tensor.name!r} belongs to another graph than the one "
                    f"{op_type} is being added to; build every op of a computation in one "
                    "graph (check `with graph.as_default():` blocks).",
                    op=op_type,
                    tensor=tensor.name,
                )
        target = colocate_with or scopes.current_colocation()
        scope_controls = scopes.current_control_inputs()
        for other in (target, *control_inputs, *scope_controls):
            if other is not None and other.graph is not self:
                raise ValueError(
                    f"Operation {other.name!r} belongs to another graph; it cannot be a control "
                    f"input of, or colocated with, a new {op_type} op of this graph."
                )
        controls = tuple(control_inputs) + tuple(
            c for c in scope_controls if c not in control_inputs
        )
        op = Operation(
            self,
            len(self._ops),
            exact_name or self.unique_name(name or op_type),
            op_type,
            tuple(inputs),
            controls,
            attrs or {},
        )
        if dtype is not None:
            op.outputs.append(Tensor(op, 0, dtype, shape))
        scope = scopes.current_device_scope()
        if target is not None:
            op.colocation = target.colocation or target.name
            op.device = target.device or scope.device_for(op).to_string()
        elif scope.functions:
            op._set_device(scope.device_for(op))
        else:
            op.device = _canonical(scope.spec)
        self._ops.append(op)
        self._by_name[op.name] = op
        return op

    # -- looking up -------------------------------------------------------------------------
    def get_operations(self) -> list[Operation]:
        """All operations, in creation order."""
        return list(self._ops)

    def get_operation_by_name(self, name: str) -> Operation:
        try:
            return self._by_name[name]
        except KeyError:
            raise KeyError(f"The graph has no operation named {name!r}") from None

    def get_tensor_by_name(self, name: str) -> Tensor:
        op_name, _, index = name.rpartition(":")
        if not op_name or not index.isdigit():
            raise ValueError(f"Tensor name {name!r} is not of the form '<op name>:<output index>'")
        op = self.get_operation_by_name(op_name)
        if int(index) >= len(op.outputs):
            raise KeyError(f"Operation {op_name!r} has {len(op.outputs)} output(s); no {name!r}")
        return op.outputs[int(index)]

    def add_to_collection(self, name: str, value: Any) -> None:
        self._collections[name].append(value)

    def get_collection(self, name: str) -> list[Any]:
        return list(self._collections.get(name, ()))

    def finalize(self) -> None:
        """Make the graph read-only (any later ``create_op`` raises)."""
        self._finalized = True

    @property
    def finalized(self) -> bool:
        return self._finalized

    # -- scopes -----------------------------------------------------------------------------
    @contextmanager
    def as_default(self) -> Iterator[Graph]:
        """Make this graph the default graph of the block."""
        token = _default_graph.set(self)
        try:
            yield self
        finally:
            _default_graph.reset(token)

    def device(self, request: Any):
        """Same as :func:`daskgraph.device` (kept for TF1 code calling ``graph.device``)."""
        return scopes.device(request)

    def colocate_with(self, op: Any, ignore_existing: bool = False):
        return scopes.colocate_with(op, ignore_existing)

    def control_dependencies(self, ops: Any):
        return scopes.control_dependencies(ops)

    def name_scope(self, name: str | None):
        return _name_scope(self, name)

    def __len__(self) -> int:
        return len(self._ops)

    def __repr__(self) -> str:
        return f"<daskgraph.Graph with {len(self._ops)} operations>"


_canonical_cache: dict[DeviceSpec, str] = {}


def _canonical(spec: DeviceSpec) -> str:
    text = _canonical_cache.get(spec)
    if text is None:
        text = _canonical_cache[spec] = spec.to_string()
    return text


@contextmanager
def _name_scope(graph: Graph, name: str | None) -> Iterator[str]:
    if name is None or name == "":
        new = ""
    elif name.endswith("/"):
        new = name[:-1]  # re-entering an existing scope, as in TensorFlow
    else:
        new = graph.unique_name(name)
    token = _name_stack.set((graph, new))
    try:
        yield f"{new}/" if new else ""
    finally:
        _name_stack.reset(token)


def name_scope(name: str | None):
    """Prefix the names of the operations created in this block with ``name/``.

    A second scope of the same name is made unique (``name_1``), as in TensorFlow.
    """
    return _name_scope(get_default_graph(), name)


_default_graph: ContextVar[Graph | None] = ContextVar("daskgraph_graph", default=None)
_global_graph: list[Graph] = []


def get_default_graph() -> Graph:
    """The graph new operations go to: the innermost ``as_default`` one, else a global graph."""
    graph = _default_graph.get()
    if graph is not None:
        return graph
    if not _global_graph:
        _global_graph.append(Graph())
    return _global_graph[0]


def reset_default_graph() -> None:
    """Replace the global default graph by a new, empty one."""
    if _default_graph.get() is not None:
        raise RuntimeError(
            "reset_default_graph() was called inside `with graph.as_default()`; "
            "leave the block first"
        )
    _global_graph[:] = [Graph()]
