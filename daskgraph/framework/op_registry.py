"""The op registry: for each op type, its kernels per device type and the dtypes each supports.

A kernel is written once over the array API: ``kernel(xp, *inputs, **attrs)``, where ``xp`` is
NumPy on a CPU and CuPy on a GPU (NumPy again on a virtual GPU). Stateful kernels (variables)
also receive the worker's variable store: ``kernel(xp, store, *inputs, **attrs)``.

The placer only asks the registry which device types can run an op with its dtypes; it never
calls kernels. Some ops honestly lack a GPU kernel (string ops, integer variables, as in
TensorFlow), and that is what soft placement is for.

>>> from daskgraph import dtypes
>>> sorted(lookup("MatMul").device_types({dtypes.float32}))
['CPU', 'GPU']
>>> lookup("MatMul").device_types({dtypes.int32})
('CPU',)
>>> lookup("Frobnicate")
Traceback (most recent call last):
...
daskgraph.errors.NotFoundError: Op type 'Frobnicate' is not registered...
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from daskgraph.errors import NotFoundError
from daskgraph.framework import dtypes
from daskgraph.framework.device import CPU, GPU

__all__ = [
    "ArrayFunction",
    "OpDef",
    "blocking_types",
    "lookup",
    "mark_blocking",
    "register",
    "registered_types",
]

Kernel = Callable[..., object]


class ArrayFunction:
    """A kernel that is one function of the array module: ``xp.<name>(*inputs)``.

    The executor binds it to ``numpy.<name>`` (or ``cupy.<name>``) once per program and calls
    that directly, without a Python wrapper per op; it pickles as its name.

    >>> import numpy as np
    >>> ArrayFunction("add")(np, np.float32(1), np.float32(2))
    np.float32(3.0)
    """

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __call__(self, xp: Any, *inputs: Any) -> Any:
        return getattr(xp, self.name)(*inputs)

    def __reduce__(self) -> tuple:
        return (ArrayFunction, (self.name,))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ArrayFunction) and other.name == self.name

    def __hash__(self) -> int:
        return hash(("ArrayFunction", self.name))

    def __repr__(self) -> str:
        return f"ArrayFunction({self.name!r})"


#: dtypes with GPU kernels for ordinary math (no strings, as in TensorFlow)
GPU_NUMERIC = dtypes.NUMERIC | {dtypes.bool_}
CPU_ALL = dtypes.ALL


@dataclass(frozen=True, slots=True)
class OpDef:
    """What the runtime knows about one op type.

    Attributes
    ----------
    type
        The op type (``"MatMul"``).
    kernel
        The array-API kernel; ``gpu_kernel`` overrides it on GPUs where needed.
    supported
        Device type -> dtypes the kernel for that device type accepts (every input and output
        dtype of the op must be among them).
    stateful
        The kernel takes the worker's variable store after ``xp``.
    ref_inputs
        Positions of inputs consumed as variable references (not dereferenced).
    produces_ref
        The op's output is a variable reference (``VariableV2``).
    """

    type: str
    kernel: Kernel
    supported: dict[str, frozenset[dtypes.DType]]
    stateful: bool = False
    ref_inputs: frozenset[int] = frozenset()
    produces_ref: bool = False
    gpu_kernel: Kernel | None = None
    _cache: dict = field(default_factory=dict, compare=False, repr=False)

    def device_types(self, op_dtypes: Iterable[dtypes.DType]) -> tuple[str, ...]:
        """Device types with a kernel for every dtype in ``op_dtypes``, GPU first."""
        key = frozenset(op_dtypes)
        found = self._cache.get(key)
        if found is None:
            found = tuple(
                t for t, ok in sorted(self.supported.items(), key=_gpu_first) if key <= ok
            )
            self._cache[key] = found
        return found

    def kernel_for(self, device_type: str) -> Kernel:
        """The kernel to run on a device of ``device_type`` (the GPU kernel on a GPU when
        the op has one, else the generic kernel)."""
        if device_type == GPU and self.gpu_kernel is not None:
            return self.gpu_kernel
        return self.kernel


def _gpu_first(item: tuple[str, frozenset]) -> tuple[int, str]:
    return ({GPU: 0, CPU: 2}.get(item[0], 1), item[0])


_REGISTRY: dict[str, OpDef] = {}


def register(
    op_type: str,
    kernel: Kernel,
    *,
    cpu: Iterable[dtypes.DType] | None = CPU_ALL,
    gpu: Iterable[dtypes.DType] | None = GPU_NUMERIC,
    stateful: bool = False,
    ref_inputs: Iterable[int] = (),
    produces_ref: bool = False,
    gpu_kernel: Kernel | None = None,
) -> OpDef:
    """Register ``op_type`` once, with its kernel and the dtypes supported per device type.

    ``cpu=None`` or ``gpu=None`` means no kernel for that device type.
    """
    if op_type in _REGISTRY:
        raise ValueError(f"Op type {op_type!r} is already registered")
    supported = {}
    if cpu is not None:
        supported[CPU] = frozenset(cpu)
    if gpu is not None:
        supported[GPU] = frozenset(gpu)
    opdef = OpDef(
        op_type,
        kernel,
        supported,
        stateful=stateful,
        ref_inputs=frozenset(ref_inputs),
        produces_ref=produces_ref,
        gpu_kernel=gpu_kernel,
    )
    _REGISTRY[op_type] = opdef
    return opdef


#: op types whose kernels may block until another run acts (a queue's dequeue), see
#: :func:`mark_blocking`
_BLOCKING: set[str] = set()


def mark_blocking(op_type: str) -> None:
    """Declare that kernels of ``op_type`` may wait for another run (a dequeue from an empty
    queue): their runs go where every run has a thread of its own (the calling thread of an
    in-process worker, or the scheduler's tasks), never as a compiled step on a worker of
    another process, whose step a waiting kernel would hold; the kernels honour the run's
    deadline.

    >>> mark_blocking("QueueDequeueV2")
    >>> "QueueDequeueV2" in blocking_types()
    True
    """
    _BLOCKING.add(op_type)


def blocking_types() -> frozenset[str]:
    """The op types declared by :func:`mark_blocking`."""
    return frozenset(_BLOCKING)


def is_blocking(op_type: str) -> bool:
    """Whether ``op_type`` was declared by :func:`mark_blocking` (no set is made: kernels ask
    this per call).

    >>> is_blocking("Add")
    False
    """
    return op_type in _BLOCKING


_UNPREDICTABLE: set[str] = set()


def mark_unpredictable(op_type: str) -> None:
    """Declare that how long a kernel of ``op_type`` runs depends on what it computes, not on
    the shapes of its inputs and outputs (Python code, a loop): a compiled step never runs a
    partition with such an op on its worker's event loop, however short its last run was
    (see :mod:`daskgraph.runtime.worker.step_run`).

    >>> mark_unpredictable("While")
    >>> "While" in unpredictable_types()
    True
    """
    _UNPREDICTABLE.add(op_type)


def unpredictable_types() -> frozenset[str]:
    """The op types declared by :func:`mark_unpredictable`."""
    return frozenset(_UNPREDICTABLE)


def lookup(op_type: str) -> OpDef:
    """The :class:`OpDef` of ``op_type``; :class:`~daskgraph.errors.NotFoundError` if none."""
    try:
        return _REGISTRY[op_type]
    except KeyError:
        known = ", ".join(sorted(_REGISTRY))
        raise NotFoundError(
            f"Op type {op_type!r} is not registered; registered op types: {known}",
            op=None,
            op_type=op_type,
        ) from None


def ref_producing_types() -> frozenset[str]:
    """Op types whose output is a variable reference (``VariableV2``)."""
    return frozenset(t for t, d in _REGISTRY.items() if d.produces_ref)


def registered_types() -> list[str]:
    """The registered op types, sorted."""
    return sorted(_REGISTRY)
