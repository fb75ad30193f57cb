"""The dataflow graph: :class:`Graph`, the default graph and name scopes.

A graph is an append-only list of operations (:class:`~daskgraph.framework.nodes.Operation`, whose
outputs are :class:`~daskgraph.framework.nodes.Tensor` values; both are importable from here too).
Each operation has a unique name (TensorFlow's defaults: the op type, made unique with
``_1``, ``_2``, ...; prefixed by the ``name_scope``), input tensors, control inputs,
attributes, and the device *requested* for it by the device scopes in force when it was
created. Where it actually runs is decided later by the placer.

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
from contextlib import AbstractContextManager, contextmanager
from contextvars import ContextVar
from typing import Any

from daskgraph.errors import GraphMismatchError
from daskgraph.framework import dtypes, scopes
from daskgraph.framework.nodes import GraphDef, Operation, Shape, Tensor, as_operation

__all__ = [
    "Graph",
    "GraphKeys",
    "Operation",
    "Shape",
    "Tensor",
    "as_operation",
    "get_default_graph",
    "name_scope",
    "new_tensor",
    "reset_default_graph",
]

GLOBAL_VARIABLES = "variables"
TRAINABLE_VARIABLES = "trainable_variables"
GLOBAL_STEP = "global_step"
TRAIN_OP = "train_op"
REGULARIZATION_LOSSES = "regularization_losses"


class GraphKeys:
    """The names of TensorFlow 1's standard graph collections (``tf.GraphKeys``)."""

    GLOBAL_VARIABLES = GLOBAL_VARIABLES
    TRAINABLE_VARIABLES = TRAINABLE_VARIABLES
    GLOBAL_STEP = GLOBAL_STEP
    TRAIN_OP = TRAIN_OP
    REGULARIZATION_LOSSES = REGULARIZATION_LOSSES


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
        #: the graph-level random seed (``set_random_seed``); None: not set
        self.seed: int | None = None
        self._unfeedable: set[Tensor] = set()
        self._unfetchable: set[Operation] = set()
        self._override_map: dict[str, str] = {}  # op type -> gradient name, in force
        self._gradient_names: dict[Operation, str] = {}  # op -> its overriding gradient
        self._jit_ops: set[int] = set()  # ids of the ops made under a jit_scope

    # -- building ---------------------------------------------------------------------------
    @property
    def version(self) -> int:
        """Grows with every new operation (the number of operations so far)."""
        return len(self._ops)

    def unique_name(self, name: str, mark_as_used: bool = True) -> str:
        """``name`` under the current name scope, made unique with ``_1``, ``_2``, ...

        Examples
        --------
        >>> g = Graph()
        >>> g.unique_name("a"), g.unique_name("a"), g.unique_name("a_1")
        ('a', 'a_1', 'a_1_1')
        """
        if isinstance(name, bytes):  # TF1 accepts names as bytes too
            name = name.decode()
        current = _name_stack.get()
        if current is not None and current[1] and current[0] is self:
            name = f"{current[1]}/{name}"
        key = name.lower()
        in_use = self._names_in_use
        count = in_use.get(key, 0)
        if mark_as_used:
            in_use[key] = count + 1
        if count:
            taken = f"{key}_{count}"
            while taken in in_use:
                count += 1
                taken = f"{key}_{count}"
            if mark_as_used:
                in_use[taken] = 1
            name = f"{name}_{count}"
        return name

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
        inputs = tuple(inputs)
        target = colocate_with or scopes.current_colocation()
        scope_controls = scopes.control_inputs_for(inputs)
        if target is None and not control_inputs and not scope_controls:
            controls: tuple[Operation, ...] = ()  # the common case: only the inputs to check
            for tensor in inputs:
                if tensor.op.graph is not self:
                    self._check_members(op_type, inputs, ())
        else:
            self._check_members(op_type, inputs, (target, *control_inputs, *scope_controls))
            controls = tuple(control_inputs) + tuple(
                c for c in scope_controls if c not in control_inputs
            )
        op = Operation(
            self,
            len(self._ops),
            exact_name or self.unique_name(name or op_type),
            op_type,
            inputs,
            controls,
            attrs,
        )
        if dtype is not None:
            op.outputs = [Tensor(op, 0, dtype, shape)]
        _request_device(op, target)
        if self._override_map and op_type in self._override_map:
            self._gradient_names[op] = self._override_map[op_type]
        self._ops.append(op)
        self._by_name[op.name] = op
        scopes.note_created(op)  # for the control-dependency blocks in force, if any
        if scopes.jit_compiles(op):
            self._jit_ops.add(op.id)
        return op

    def jit_compiled(self, op: Operation) -> bool:
        """Whether ``op`` was made under a ``jit_scope`` that compiles it."""
        return op.id in self._jit_ops

    @property
    def has_jit_scopes(self) -> bool:
        """Whether any op was made under a ``jit_scope`` that compiles it (when not, no op
        needs asking :meth:`jit_compiled`)."""
        return bool(self._jit_ops)

    def _check_members(
        self, op_type: str, inputs: Sequence[Tensor], others: Sequence[Operation | None]
    ) -> None:
        """Raise TensorFlow's ``ValueError`` (a :class:`GraphMismatchError`) unless the inputs
        and the control / colocation ops are of this graph."""
        mine = next((t for t in inputs if t.op.graph is self), None)
        reference = repr(mine) if mine is not None else f"the {op_type} op being added to it"
        for tensor in inputs:
            if tensor.op.graph is not self:
                raise GraphMismatchError(
                    f"{tensor!r} must be from the same graph as {reference}: it belongs to "
                    f"another graph than the one {op_type} is being added to. Build every op "
                    "of a computation in one graph (check `with graph.as_default():` blocks).",
                    tensor=tensor.name,
                    op_type=op_type,
                )
        for other in others:
            if other is not None and other.graph is not self:
                raise GraphMismatchError(
                    f"{other!r} must be from the same graph as {reference}: it belongs to "
                    f"another graph, so it cannot be a control input of, or colocated with, a "
                    f"new {op_type} op of this graph.",
                    operation=other.name,
                    op_type=op_type,
                )

    # -- looking up -------------------------------------------------------------------------
    def get_operations(self) -> list[Operation]:
        """All operations, in creation order."""
        return list(self._ops)

    def get_operation_by_name(self, name: str) -> Operation:
        """The operation called ``name``, or a ``KeyError`` saying there is none."""
        try:
            return self._by_name[name]
        except KeyError:
            raise KeyError(f"The graph has no operation named {name!r}") from None

    def get_tensor_by_name(self, name: str) -> Tensor:
        """The tensor called ``name`` (``"<op name>:<output index>"``).

        Examples
        --------
        >>> g = Graph()
        >>> with g.as_default():
        ...     op = g.create_op("Const", [], dtype=dtypes.float32, shape=(), name="c")
        >>> g.get_tensor_by_name("c:0") is op.outputs[0]
        True
        >>> g.get_tensor_by_name("c")
        Traceback (most recent call last):
        ...
        ValueError: Tensor name 'c' is not of the form '<op name>:<output index>'
        """
        op_name, _, index = name.rpartition(":")
        if not op_name or not index.isdigit():
            raise ValueError(f"Tensor name {name!r} is not of the form '<op name>:<output index>'")
        op = self.get_operation_by_name(op_name)
        if int(index) >= len(op.outputs):
            raise KeyError(f"Operation {op_name!r} has {len(op.outputs)} output(s); no {name!r}")
        return op.outputs[int(index)]

    def add_to_collection(self, name: str, value: Any) -> None:
        """Append ``value`` to the collection ``name`` (TF1's graph collections)."""
        self._collections[name].append(value)

    def add_to_collections(self, names: Any, value: Any) -> None:
        """Append ``value`` to each collection of ``names`` (a name, or an iterable of them,
        each taken once)."""
        for name in [names] if isinstance(names, str) else dict.fromkeys(names):
            self.add_to_collection(name, value)

    def get_collection(self, name: str) -> list[Any]:
        """A copy of the collection ``name`` (empty when there is none)."""
        return list(self._collections.get(name, ()))

    def get_collection_ref(self, name: str) -> list[Any]:
        """The collection ``name`` itself, created empty if need be: changing the list
        changes the collection (TF1's ``get_collection_ref``)."""
        return self._collections[name]

    def get_all_collection_keys(self) -> list[str]:
        """The names of the collections that hold something."""
        return [name for name, items in self._collections.items() if items]

    def clear_collection(self, name: str) -> None:
        """Empty the collection ``name``."""
        self._collections.pop(name, None)

    # -- TF1's introspection ----------------------------------------------------------------
    def get_name_scope(self) -> str:
        """The current name scope, without a trailing slash (``""`` at the top)."""
        current = _name_stack.get()
        return current[1] if current is not None and current[0] is self else ""

    def prevent_feeding(self, tensor: Tensor) -> None:
        """Refuse values fed for ``tensor`` in ``Session.run``."""
        self._unfeedable.add(tensor)

    def prevent_fetching(self, op: Operation) -> None:
        """Refuse fetches of ``op`` (or of its outputs) in ``Session.run``."""
        self._unfetchable.add(op)

    def is_feedable(self, tensor: Tensor) -> bool:
        """Whether a value may be fed for ``tensor``."""
        return tensor not in self._unfeedable

    def is_fetchable(self, tensor_or_op: Tensor | Operation) -> bool:
        """Whether ``tensor_or_op`` may be fetched."""
        op = tensor_or_op.op if isinstance(tensor_or_op, Tensor) else tensor_or_op
        return op not in self._unfetchable

    @property
    def building_function(self) -> bool:
        """False: daskgraph graphs are never ``tf.function`` bodies."""
        return False

    @contextmanager
    def gradient_override_map(self, op_type_map: dict[str, str]) -> Iterator[None]:
        """Ops of the block whose type is a key of ``op_type_map`` are differentiated by
        the gradient registered under its value (with ``RegisterGradient``), as TF1's
        ``gradient_override_map``."""
        if not isinstance(op_type_map, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in op_type_map.items()
        ):
            raise TypeError(
                "gradient_override_map needs a dict of op type -> gradient name (strings); "
                f"got {op_type_map!r}"
            )
        saved = self._override_map
        self._override_map = {**saved, **op_type_map}
        try:
            yield
        finally:
            self._override_map = saved

    def gradient_name(self, op: Operation) -> str:
        """The name ``op``'s gradient is registered under: its type, unless a
        :meth:`gradient_override_map` was in force when it was made."""
        return self._gradient_names.get(op, op.type)

    def as_graph_def(self, from_version: int | None = None, add_shapes: bool = False) -> GraphDef:
        """The graph as TensorFlow's ``GraphDef`` fields: ``node`` holds each operation's
        :class:`~daskgraph.framework.nodes.NodeDef` (ops after ``from_version`` only, when given).

        >>> g = Graph()
        >>> with g.as_default():
        ...     _ = new_tensor("Const", [], dtypes.float32, (), name="c", value=1.0)
        >>> [(n.name, n.op) for n in g.as_graph_def().node]
        [('c', 'Const')]
        """
        ops = self._ops[from_version or 0 :]
        return GraphDef([op.node_def for op in ops], self.graph_def_versions)

    @property
    def graph_def_versions(self) -> dict[str, int]:
        """The versions of :meth:`as_graph_def` (one format: producer 1)."""
        return {"producer": 1, "min_consumer": 0}

    def finalize(self) -> None:
        """Make the graph read-only (any later ``create_op`` raises)."""
        self._finalized = True

    @property
    def finalized(self) -> bool:
        """Whether :meth:`finalize` was called."""
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

    def device(self, request: Any) -> AbstractContextManager[None]:
        """Same as :func:`daskgraph.framework.device` (kept for TF1 code calling
        ``graph.device``)."""
        return scopes.device(request)

    def colocate_with(self, op: Any, ignore_existing: bool = False) -> AbstractContextManager[None]:
        """Same as :func:`daskgraph.colocate_with` (kept for TF1 code calling the graph's)."""
        return scopes.colocate_with(op, ignore_existing)

    def control_dependencies(self, ops: Any) -> AbstractContextManager[None]:
        """Same as :func:`daskgraph.control_dependencies` (for TF1 code calling the graph's)."""
        return scopes.control_dependencies(ops)

    def name_scope(self, name: str | None) -> AbstractContextManager[str]:
        """A name scope of this graph (see :func:`name_scope`)."""
        return _name_scope(self, name)

    def __len__(self) -> int:
        return len(self._ops)

    def __repr__(self) -> str:
        return f"<daskgraph.Graph with {len(self._ops)} operations>"


def _request_device(op: Operation, target: Operation | None) -> None:
    """Set the device requested for a new ``op`` from the device scope in force, or, when it
    is colocated with ``target``, from ``target`` (the scope only fills an empty request)."""
    scope = scopes.current_device_scope()
    if target is not None:
        op.colocation = target.colocation or target.name
        op.device = target.device or scope.device_for(op).to_string()
    elif scope.functions:
        op._set_device(scope.device_for(op))
    else:
        op.device = scope.device_string  # the scope's canonical string, made once per scope


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


def name_scope(
    name: str | None, default_name: str | None = None, values: Any = None
) -> AbstractContextManager[str]:
    """Prefix the names of the operations created in this block with ``name/``.

    A second scope of the same name is made unique (``name_1``), as in TensorFlow. TF1's
    other arguments: ``default_name`` is used when ``name`` is None (library functions pass
    their own ``name`` argument and a default), and ``values``, tensors the block uses, pick
    the graph: their graph becomes the default one inside the block.

    >>> with Graph().as_default():
    ...     with name_scope(None, "dense") as scope:
    ...         pass
    ...     with name_scope("dense"):
    ...         c = new_tensor("Const", [], dtypes.float32, (), value=1.0)
    >>> scope, c.name
    ('dense/', 'dense_1/Const:0')
    """
    if name is None and default_name is not None:
        name = default_name
    if isinstance(name, bytes):  # TensorFlow takes names as bytes too
        name = name.decode()
    if name is not None and not isinstance(name, str):
        raise TypeError(f"name_scope's name must be a str or None, got {type(name).__name__}")
    graph = _graph_of(values) if values is not None else None
    if graph is None:
        return _name_scope(get_default_graph(), name)
    return _scope_in_graph(graph, name)


def _graph_of(values: Any) -> Graph | None:
    """The graph of the first tensor or operation among ``values`` (None if there is none)."""
    items = values if isinstance(values, (list, tuple)) else [values]
    for item in items:
        graph = getattr(item, "graph", None)
        if isinstance(graph, Graph):
            return graph
    return None


@contextmanager
def _scope_in_graph(graph: Graph, name: str | None) -> Iterator[str]:
    with graph.as_default(), _name_scope(graph, name) as scope:
        yield scope


_default_graph: ContextVar[Graph | None] = ContextVar("daskgraph_graph", default=None)
_global_graph: list[Graph] = []


def new_tensor(
    op_type: str,
    inputs: Sequence[Tensor],
    dtype: dtypes.DType,
    shape: Shape | None,
    name: str | None = None,
    **attrs: Any,
) -> Tensor:
    """Add an op of ``op_type`` with one output to the default graph; return that output
    (how op builders make their op, ``attrs`` going to its kernel).

    >>> with Graph().as_default():
    ...     new_tensor("Const", [], dtypes.float32, (), value=1.0).name
    'Const:0'
    """
    graph = get_default_graph()
    op = graph.create_op(op_type, inputs, dtype=dtype, shape=shape, attrs=attrs, name=name)
    return op.outputs[0]


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
