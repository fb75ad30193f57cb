"""The worker side of a run: execute one partition's program, and keep variables between runs.

:func:`execute_partition` is the function every partition task calls on the worker that owns
its device. It converts incoming tensors to the device's array module (NumPy, or CuPy on a
real GPU), runs the instructions in a lean loop (one kernel call and a list store per op),
and returns the outputs other partitions and the client need.

Variables live in a :class:`VariableStore`, one per (worker, session), so they survive between
``Session.run`` calls on the worker of their device and are dropped when the session closes.
"""

from __future__ import annotations

import importlib
import threading
from typing import Any

from daskgraph.errors import FailedPreconditionError, InvalidArgumentError, OpError
from daskgraph.lowering import PartitionProgram
from daskgraph.ops.state import VariableRef

__all__ = ["VariableStore", "drop_session", "execute_partition", "store_for"]


class VariableStore:
    """The values of one session's variables on one worker."""

    def __init__(self, device: str = "") -> None:
        self.device = device
        self._values: dict[str, Any] = {}
        self._lock = threading.Lock()

    def read(self, name: str) -> Any:
        try:
            return self._values[name]
        except KeyError:
            raise FailedPreconditionError(
                f"Attempting to use uninitialized value {name!r} (on {self.device or 'its device'})."
                " Run its initializer first, e.g. session.run(global_variables_initializer()).",
                op=name,
                variable=name,
            ) from None

    def assign(self, name: str, value: Any) -> None:
        with self._lock:
            self._values[name] = value

    def names(self) -> list[str]:
        return sorted(self._values)

    def __len__(self) -> int:
        return len(self._values)


_stores: dict[tuple[str, str], VariableStore] = {}
_stores_lock = threading.Lock()


def _worker_id() -> str:
    try:
        from distributed import get_worker

        return get_worker().id
    except ValueError:  # not inside a Dask worker: running in-process (tests, local use)
        return ""


def store_for(session_id: str, device: str = "") -> VariableStore:
    """The variable store of ``session_id`` on the current worker."""
    key = (_worker_id(), session_id)
    store = _stores.get(key)
    if store is None:
        with _stores_lock:
            store = _stores.setdefault(key, VariableStore(device))
    return store


def drop_session(session_id: str, dask_worker: Any = None) -> int:
    """Forget the variables of ``session_id`` on this worker; returns how many were dropped."""
    worker_id = dask_worker.id if dask_worker is not None else _worker_id()
    store = _stores.pop((worker_id, session_id), None)
    return len(store) if store is not None else 0


def _array_module(backend: str):
    return importlib.import_module(backend)


def _to_backend(value: Any, xp: Any) -> Any:
    """Move an incoming value onto this partition's device (host <-> GPU at boundaries)."""
    if xp.__name__ == "numpy":
        get = getattr(value, "get", None)  # a CuPy array arriving on a CPU partition
        return get() if get is not None and not isinstance(value, VariableRef) else value
    if isinstance(value, VariableRef) or value is None:
        return value
    return xp.asarray(value)


def _to_host(value: Any) -> Any:
    get = getattr(value, "get", None)
    return get() if get is not None else value


def execute_partition(
    program: PartitionProgram, session_id: str, feeds: tuple, *dependencies: tuple
) -> tuple:
    """Run ``program`` on this worker; return the values listed in ``program.outputs``.

    Examples
    --------
    Programs are built by :func:`daskgraph.lowering.lower`; a tiny one by hand:

    >>> from daskgraph.lowering import Instruction, PartitionProgram
    >>> from daskgraph.ops.math import _add
    >>> prog = PartitionProgram("/device:CPU:0", "CPU", "numpy", 2, (), ((0, 0),),
    ...     (Instruction("add", "Add", _add, {}, (0, 0), 1, False, ()),), ((1, False),))
    >>> execute_partition(prog, "doc", (3.0,))
    (6.0,)
    """
    xp = _array_module(program.backend)
    slots: list[Any] = [None] * program.n_slots
    for position, index, slot in program.inputs:
        slots[slot] = _to_backend(dependencies[position][index], xp)
    for position, slot in program.feeds:
        slots[slot] = _to_backend(feeds[position], xp)
    store = None
    for ins in program.instructions:
        try:
            args = [slots[a] for a in ins.args]
            if ins.stateful or ins.deref:
                if store is None:
                    store = store_for(session_id, program.device)
                for i in ins.deref:
                    args[i] = store.read(args[i].name)
                if ins.stateful:
                    slots[ins.out] = ins.kernel(xp, store, *args, **ins.attrs)
                    continue
            result = ins.kernel(xp, *args, **ins.attrs)
            if ins.out >= 0:
                slots[ins.out] = result
        except OpError:
            raise
        except Exception as exc:
            raise InvalidArgumentError(
                f"{ins.op_name} ({ins.op_type}) failed on {program.device}: "
                f"{type(exc).__name__}: {exc}",
                op=ins.op_name,
                device=program.device,
            ) from exc
    return tuple(_to_host(slots[s]) if host else slots[s] for s, host in program.outputs)
