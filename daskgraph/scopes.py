"""Construction scopes: ``device``, ``colocate_with`` and ``control_dependencies``.

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

from daskgraph.device import DeviceSpec, parse
from daskgraph.nodes import Operation, as_operation

__all__ = [
    "DeviceScope",
    "colocate_with",
    "control_dependencies",
    "current_colocation",
    "current_control_inputs",
    "current_device_scope",
    "device",
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
_control_inputs: ContextVar[tuple[Operation, ...]] = ContextVar(
    "daskgraph_control_inputs", default=()
)


def current_device_scope() -> DeviceScope:
    """The device scope in force in this context."""
    return _device_scope.get()


def current_colocation() -> Operation | None:
    """The operation new operations must be colocated with, if any."""
    return _colocation.get()


def current_control_inputs() -> tuple[Operation, ...]:
    """The operations new operations must run after."""
    return _control_inputs.get()


@contextmanager
def device(request: str | DeviceSpec | DeviceFunction | None) -> Iterator[None]:
    """Request a device for the operations created in this block.

    Parameters
    ----------
    request
        A device string (``"/gpu:1"``, ``"/job:worker/device:GPU:*"``), a
        :class:`~daskgraph.device.DeviceSpec`, a callable from the new operation to one of
        those, or ``None`` to clear every enclosing request.

    Examples
    --------
    >>> with device("/cpu:0"):
    ...     current_device_scope().spec
    DeviceSpec('/device:CPU:0')
    >>> device("/gpu:0/cpu:0").__enter__()
    Traceback (most recent call last):
    ...
    ValueError: Malformed device specification '/gpu:0/cpu:0': ...
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
        new: tuple[Operation, ...] = ()
    else:
        extra = tuple(as_operation(o, "control_dependencies") for o in ops)
        new = _control_inputs.get() + tuple(o for o in extra if o not in _control_inputs.get())
    token = _control_inputs.set(new)
    try:
        yield
    finally:
        _control_inputs.reset(token)
