"""Construction scopes: ``device``, ``colocate_with``, ``control_dependencies`` and
``jit_scope``.

Each scope is a :class:`contextvars.ContextVar`, as ``dask.annotate`` does it: entering a scope
merges the new request into the current value, and leaving resets it in ``finally``, so scopes
nest, survive exceptions, and are private to each thread and asyncio task.

Device scopes merge field by field with the inner scope winning, as ``tf.device`` does:

>>> with device("/job:worker/task:1"):
...     with device("/gpu:0"):
...         current_device_scope().spec.to_string()
'/job:worker/task:1/device:GPU:0'
>>> with device("/gpu:0"):
...     with device(None):
...         current_device_scope().spec.to_string()
''

A device may also be a *device function*: a callable from the new operation to a device
string (or ``DeviceSpec``), as TensorFlow's ``replica_device_setter`` is.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from daskgraph.framework.device import DeviceSpec, parse
from daskgraph.framework.nodes import Operation, as_operation

__all__ = [
    "DeviceScope",
    "colocate_with",
    "control_dependencies",
    "control_inputs_for",
    "current_colocation",
    "current_control_inputs",
    "current_device_scope",
    "device",
    "note_created",
]

DeviceFunction = Callable[[Operation], str | DeviceSpec | None]


_EMPTY_SPEC = DeviceSpec()


@dataclass(frozen=True, slots=True)
class DeviceScope:
    """The device requests in force, outermost first.

    ``spec`` is the merged static request while no device function is in force (the fast
    path). Once one is, every later request is kept in ``entries`` and :meth:`device_for`
    applies them as TensorFlow does: innermost first, a device function's result replacing
    the device so far, and an outer static spec filling only the fields still unset.
    """

    spec: DeviceSpec = _EMPTY_SPEC
    entries: tuple[DeviceSpec | DeviceFunction, ...] = ()
    #: whether a device function is in force (the op must be shown to it)
    functions: bool = field(init=False, repr=False, compare=False)
    #: ``spec.to_string()``, the request of every new op while no function is in force
    device_string: str = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        # computed once per scope, not once per op created under it
        functions = any(callable(e) and not isinstance(e, DeviceSpec) for e in self.entries)
        object.__setattr__(self, "functions", functions)
        object.__setattr__(self, "device_string", self.spec.to_string())

    def enter(self, request: str | DeviceSpec | DeviceFunction | None) -> DeviceScope:
        """The scope that results from entering ``device(request)`` inside this one."""
        if request is None:
            return _EMPTY_SCOPE
        if callable(request) and not isinstance(request, DeviceSpec):
            return DeviceScope(self.spec, (*self.entries, request))
        spec = parse(request)
        return DeviceScope(self.spec.make_merged_spec(spec), (*self.entries, spec))

    def device_for(self, op: Operation) -> DeviceSpec:
        """The device requested for ``op``, applying the device functions to it."""
        if not self.functions:
            return self.spec
        spec = _EMPTY_SPEC
        for entry in reversed(self.entries):
            if isinstance(entry, DeviceSpec):
                spec = entry.make_merged_spec(spec)  # the inner result so far wins
            else:
                op.device = spec.to_string()  # a device function may look at the device so far
                spec = parse(entry(op))
        return spec


_EMPTY_SCOPE = DeviceScope()
_device_scope: ContextVar[DeviceScope] = ContextVar("daskgraph_device", default=_EMPTY_SCOPE)
_colocation: ContextVar[Operation | None] = ContextVar("daskgraph_colocation", default=None)
#: the compile_ops of the jit_scope in force (None: none)
_jit: ContextVar[Any] = ContextVar("daskgraph_jit", default=None)


@dataclass(frozen=True, eq=False)
class _ControlBlock:
    """One ``control_dependencies`` block: its operations, and the ops created inside it."""

    ops: tuple[Operation, ...]
    seen: set[Operation] = field(default_factory=set)


_control_blocks: ContextVar[tuple[_ControlBlock, ...]] = ContextVar(
    "daskgraph_control_blocks", default=()
)


def current_device_scope() -> DeviceScope:
    """The device scope in force in this context."""
    return _device_scope.get()


def current_colocation() -> Operation | None:
    """The operation new operations must be colocated with, if any."""
    return _colocation.get()


def current_control_inputs() -> tuple[Operation, ...]:
    """The operations new operations must run after (those of every block in force)."""
    found: dict[Operation, None] = {}
    for block in _control_blocks.get():
        found.update(dict.fromkeys(block.ops))
    return tuple(found)


def control_inputs_for(inputs: Iterable[Any]) -> tuple[Operation, ...]:
    """The control inputs of a new op with data ``inputs`` (tensors), as TensorFlow gives
    them: a block whose ops an input was created in already dominates the new op (it runs
    after that input, which runs after the block's ops), so it adds nothing; nor are the
    op's own inputs' ops added.

    >>> from daskgraph import dtypes
    >>> from daskgraph.framework.graph import Graph, new_tensor
    >>> with Graph().as_default():
    ...     a = new_tensor("Const", [], dtypes.float32, (), name="a", value=1.0)
    ...     with control_dependencies([a]):
    ...         c = new_tensor("Const", [], dtypes.float32, (), name="c", value=3.0)
    ...         e = new_tensor("Identity", [c], dtypes.float32, (), name="e")
    >>> [o.name for o in c.op.control_inputs], e.op.control_inputs
    (['a'], [])
    """
    blocks = _control_blocks.get()
    if not blocks:
        return ()
    input_ops = {t.op for t in inputs}
    found: dict[Operation, None] = {}
    for block in blocks:
        if any(op in block.seen for op in input_ops):
            continue  # dominated
        found.update(dict.fromkeys(o for o in block.ops if o not in input_ops))
    return tuple(found)


def note_created(op: Operation) -> None:
    """Record that ``op`` was created inside the control-dependency blocks in force."""
    for block in _control_blocks.get():
        block.seen.add(op)


@contextmanager
def device(request: str | DeviceSpec | DeviceFunction | None) -> Iterator[None]:
    """Request a device for the operations created in this block.

    Parameters
    ----------
    request
        A device string (``"/gpu:1"``, ``"/job:worker/device:GPU:*"``), a
        :class:`~daskgraph.framework.device.DeviceSpec`, a callable from the new operation to one of
        those, or ``None`` to clear every enclosing request.

    Examples
    --------
    >>> with device("/cpu:0"):
    ...     current_device_scope().spec
    DeviceSpec('/device:CPU:0')
    >>> device("/gpu:0/cpu:0").__enter__()
    Traceback (most recent call last):
    ...
    daskgraph.errors.DeviceSpecError: Cannot specify multiple device types: '/gpu:0/cpu:0'. ...
    """
    token = _device_scope.set(_device_scope.get().enter(request))
    try:
        yield
    finally:
        _device_scope.reset(token)


@contextmanager
def colocate_with(op: Any, ignore_existing: bool = False) -> Iterator[None]:
    """Place the operations created in this block on the same device as ``op``.

    ``op`` may be an operation, a tensor (its operation) or a Variable. As in TensorFlow,
    the colocation request takes precedence over the device scopes in force.
    """
    target = as_operation(op, "colocate_with")
    token = _colocation.set(target)
    # As in TensorFlow, enclosing device scopes do not apply inside a colocation block: the
    # new ops take the device of the op they are colocated with.
    device_token = _device_scope.set(_EMPTY_SCOPE)
    try:
        yield
    finally:
        _device_scope.reset(device_token)
        _colocation.reset(token)


@contextmanager
def control_dependencies(ops: Iterable[Any] | None) -> Iterator[None]:
    """Make the operations created in this block run after ``ops``.

    ``None`` clears the enclosing control dependencies, as in TensorFlow.
    """
    if ops is None:
        new: tuple[_ControlBlock, ...] = ()
    else:
        extra = tuple(dict.fromkeys(as_operation(o, "control_dependencies") for o in ops))
        new = (*_control_blocks.get(), _ControlBlock(extra))
    token = _control_blocks.set(new)
    try:
        yield
    finally:
        _control_blocks.reset(token)


def jit_compiles(op: Operation) -> bool:
    """Whether ``op``, just made, is under a :func:`jit_scope` that compiles it."""
    compile_ops = _jit.get()
    if compile_ops is None:
        return False
    if callable(compile_ops):
        return bool(compile_ops(op.node_def))
    return bool(compile_ops)


@contextmanager
def jit_scope(compile_ops: Any = True, separate_compiled_gradients: bool = False) -> Iterator[None]:
    """Mark the ops made in this block for compilation, as TensorFlow's
    ``tf.xla.experimental.jit_scope``: ``compile_ops`` is a bool or a function of an op's
    ``node_def``. daskgraph's compiled form of marked ops is its fused kernels, which then
    take transcendental functions too (:mod:`daskgraph.kernels.fused`); a marked op says so with
    ``op.get_attr("_XlaCompile")``. ``separate_compiled_gradients`` is accepted.

    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     with jit_scope():
    ...         y = dg.tanh(dg.constant(1.0))
    ...     z = dg.tanh(y)
    >>> y.op.get_attr("_XlaCompile"), z.op.graph.jit_compiled(z.op)
    (True, False)
    """
    token = _jit.set(compile_ops)
    try:
        yield
    finally:
        _jit.reset(token)
