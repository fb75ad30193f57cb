"""The worker side of a run: execute one partition's program, and keep variables between runs.

:func:`execute_partition` is the function every partition task calls on the worker that owns
its device. It converts incoming tensors to the device's array module (NumPy, or CuPy on a
real GPU), runs the instructions in a lean loop (one kernel call and a list store per op),
and returns the outputs other partitions and the client need.

Variables and compiled programs live in the worker's daskgraph state
(:mod:`daskgraph.runtime.worker.worker_state`), per session, so they survive between
``Session.run`` calls on
the worker of their device and are freed when the session closes.
"""

from __future__ import annotations

import functools
import importlib
import pickle
import re
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from daskgraph.cluster.footprint import bound_key_memo, cyclic_gc_paused
from daskgraph.deadline import worker_deadline
from daskgraph.errors import (
    InvalidArgumentError,
    OpError,
    ResourceExhaustedError,
)
from daskgraph.framework.op_registry import ArrayFunction
from daskgraph.kernels.kernel_threads import threads_for
from daskgraph.kernels.state import VariableRef
from daskgraph.runtime.program import Instruction, PartitionProgram, RunStep, StagedFeed
from daskgraph.runtime.worker import variable_steps
from daskgraph.runtime.worker.codegen import Constant, HotProgram
from daskgraph.runtime.worker.worker_state import (
    SessionState,
    VariableStore,
    WorkerState,
    current_state,
)

__all__ = [
    "PACK_BYTES",
    "DeviceStepStats",
    "NodeStats",
    "RunFailure",
    "execute_partition",
    "pack_small",
    "requested_bytes",
    "requested_size",
    "resident",
    "run_partition",
    "store_for",
    "unpack",
]


def resident(program: PartitionProgram) -> PartitionProgram:
    """The task that keeps a program on its worker for the runs of a plan (Dask holds its
    result there; were the worker lost, Dask would run it again where it is restricted to)."""
    return program


def store_for(session_id: str, device: str = "") -> VariableStore:
    """The variable store of ``session_id`` for ``device`` on the current worker."""
    return current_state().session(session_id).store(device)


@functools.cache
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


def _is_out_of_memory(exc: Exception) -> bool:
    """CuPy's ``OutOfMemoryError``, RMM's ``MemoryError`` (``std::bad_alloc``), NumPy's too."""
    return isinstance(exc, MemoryError) or type(exc).__name__ == "OutOfMemoryError"


class _Arrival:
    """Stands for the copy of an incoming tensor onto the device in OOM messages."""

    op_name = "(input copied to the device)"
    op_type = "_Recv"


_ARRIVAL = _Arrival()


#: binary units allocators print sizes in (RMM's ``format_bytes``, NumPy's array errors)
_UNITS = {"bytes": 1, "B": 1, "KiB": 2**10, "MiB": 2**20, "GiB": 2**30, "TiB": 2**40}
_UNITS.update(PiB=2**50, EiB=2**60)
_ASKED = re.compile(r"allocat\w*\s+([\d,]+(?:\.\d+)?)\s?(" + "|".join(_UNITS) + r")\b")


def requested_bytes(message: str) -> int | None:
    """The bytes an out-of-memory error says were asked for, in the words of CuPy's pool
    (``1,024 bytes``), RMM's pool (``failed to allocate 1.5 GiB``: rounded as RMM printed it)
    or NumPy; None where the message names no size. :func:`requested_size` also says how
    precise the figure is.

    >>> requested_bytes("Out of memory allocating 1,024 bytes (allocated so far: 0 bytes).")
    1024
    >>> requested_bytes("std::bad_alloc: out_of_memory: RMM failure at:pool.hpp:276: Maximum "
    ...                 "pool size exceeded (failed to allocate 1.500000 GiB): current/max")
    1610612736
    >>> requested_bytes("Unable to allocate 4.00 PiB for an array with shape (33554432, 33554432)")
    4503599627370496
    >>> requested_bytes("std::bad_alloc") is None
    True
    """
    size = requested_size(message)
    return None if size is None else size[0]


def requested_size(message: str) -> tuple[int, int] | None:
    """``(bytes, margin)``: the bytes an out-of-memory error says were asked for, and how far
    the true count may lie from them. A count printed in bytes is exact (margin 0); one
    printed in a binary unit with a few decimals (RMM's ``7.964494 GiB``, NumPy's
    ``4.00 PiB``) is only as precise as its last digit: the margin is that digit's unit, so
    that the true count is within it whether the allocator rounded or truncated.

    >>> requested_size("Out of memory allocating 8,551,810,576 bytes (allocated so far: 0 bytes)")
    (8551810576, 0)
    >>> requested_size("Maximum pool size exceeded (failed to allocate 7.964494 GiB): current")
    (8551810315, 1074)
    >>> requested_size("std::bad_alloc") is None
    True
    """
    found = _ASKED.search(message) or re.search(r"([\d,]+) (bytes)", message)
    if found is None:
        return None
    number, unit = found.group(1).replace(",", ""), _UNITS[found.group(2)]
    decimals = len(number.partition(".")[2])
    margin = 0 if unit == 1 else -(-unit // 10**decimals)  # ceil: one unit of the last digit
    return round(float(number) * unit), margin


def _resource_exhausted(exc: Exception, ins: Any, program: PartitionProgram) -> Exception:
    """TensorFlow's OOM error, naming the op, the device and the bytes asked for; the pool's
    cached blocks are freed so that the worker keeps working.

    Fields: ``nbytes`` (None where the allocator named no size), ``nbytes_exact`` (whether
    the allocator printed the count in bytes) and ``nbytes_margin`` (how far the true count
    may lie from ``nbytes``: 0 when exact, else the unit of the last digit the allocator
    printed, e.g. 1074 bytes for RMM's ``7.964494 GiB``)."""
    size = requested_size(str(exc))
    nbytes, margin = size if size is not None else (None, None)
    if program.backend == "cupy":
        import cupy

        cupy.get_default_memory_pool().free_all_blocks()
    if nbytes is None:
        asked = "memory"
    elif margin == 0:
        asked = f"{nbytes} bytes"
    else:
        asked = f"about {nbytes} bytes (to within {margin} bytes: the allocator's rounded figure)"
    fix = (
        "Lower the batch size, or raise gpu_options.per_process_gpu_memory_fraction."
        if program.device_type == "GPU"
        else "Lower the batch size, or give the worker more memory."
    )
    return ResourceExhaustedError(
        f"OOM when allocating {asked} for op {ins.op_name} ({ins.op_type}) on {program.device}: "
        f"{exc}. {fix}",
        op=ins.op_name,
        device=program.device,
        nbytes=nbytes,
        nbytes_exact=margin == 0 if nbytes is not None else None,
        nbytes_margin=margin,
    )


@dataclass(frozen=True, slots=True)
class RunFailure:
    """What a partition returns instead of raising: the error, carried to the client.

    Returning the failure (rather than raising on the worker) keeps user errors such as an
    uninitialized variable out of the workers' error logs, and lets dependent partitions
    pass it on without running.
    """

    error: Exception


@dataclass(frozen=True, slots=True)
class NodeStats:
    """Timing of one op of a traced run (microseconds since the epoch, and duration)."""

    node_name: str
    op_type: str
    all_start_micros: int
    op_end_rel_micros: int
    output_location: str = ""  # where its output lives: "host", "gpu:N" (CuPy device N)
    fused: tuple[str, ...] = ()  # a fused kernel's ops (its node is the last of them)


@dataclass(frozen=True, slots=True)
class DeviceStepStats:
    """What one partition of a traced run did: where it ran (device *and* worker), its ops,
    and the host <-> GPU copies it made at its boundary (inputs arriving, results leaving)."""

    device: str
    worker: str
    node_stats: tuple[NodeStats, ...]
    host_to_device_bytes: int = 0
    device_to_host_bytes: int = 0


def _location(value: Any) -> str:
    device = getattr(value, "device", None)
    if type(value).__module__.startswith("cupy") and device is not None:
        return f"gpu:{device.id}"
    return "host" if isinstance(value, (np.ndarray, np.generic)) else ""


def _copied_bytes(before: Any, after: Any) -> int:
    return 0 if after is before else int(getattr(after, "nbytes", 0))


def _current_address() -> str:
    try:
        from distributed import get_worker

        return get_worker().address
    except ValueError:
        return ""


def execute_partition(
    program: PartitionProgram,
    step: RunStep,
    feeds: tuple,
    trace: bool,
    *dependencies: Any,
) -> Any:
    """Run ``program`` on this worker; return the values listed in ``program.outputs``.

    The function of every partition task: :func:`run_partition` with this worker's daskgraph
    state. With ``trace`` the result ends with a :class:`DeviceStepStats`. An error comes back
    as a :class:`RunFailure`; a failure among the dependencies is passed on without running.

    Examples
    --------
    Programs are built by :func:`daskgraph.runtime.planner.lowering.lower`; a tiny one by hand:

    >>> from daskgraph.runtime.program import Instruction, PartitionProgram
    >>> from daskgraph.kernels.math import _add
    >>> prog = PartitionProgram("/device:CPU:0", "CPU", "numpy", 2, (), ((0, 0),),
    ...     (Instruction("add", "Add", _add, {}, (0, 0), 1, False, ()),), ((1, False),))
    >>> execute_partition(prog, RunStep("doc", 1), (np.float32(3.0),), False)
    (np.float32(6.0),)
    """
    bound_key_memo()  # every run's keys are new: keep Dask's memo of them small
    address = _current_address() if trace else ""
    return run_partition(current_state(), address, program, step, feeds, trace, dependencies)


def run_partition(
    state: WorkerState,
    address: str,
    program: PartitionProgram,
    step: RunStep,
    feeds: tuple,
    trace: bool,
    dependencies: tuple = (),
) -> Any:
    """Run ``program`` against a worker's daskgraph ``state`` (its variables, compiled
    programs and staged feeds) in the calling thread; ``address`` is the worker's, recorded
    in a trace. What :func:`execute_partition` returns; also called directly for a worker
    that lives in this process (:mod:`daskgraph.runtime.client.inprocess`). A failure among the
    ``dependencies`` (other partitions' outputs) is passed on without running. NumPy's
    floating-point warnings are off while it runs: IEEE results are values. Its kernels may
    use the worker's threads (``state.threads``: :mod:`daskgraph.kernels.kernel_threads`).

    >>> from daskgraph.runtime.program import Instruction, PartitionProgram
    >>> from daskgraph.kernels.math import _add
    >>> prog = PartitionProgram("/device:CPU:0", "CPU", "numpy", 2, (), ((0, 0),),
    ...     (Instruction("add", "Add", _add, {}, (0, 0), 1, False, ()),), ((1, False),))
    >>> run_partition(WorkerState(), "", prog, RunStep("doc", 1), (np.float32(2.0),), False)
    (np.float32(4.0),)
    """
    for dependency in dependencies:
        if isinstance(dependency, RunFailure):
            return dependency
    # IEEE results (x/0 = inf, log(0) = -inf, 0/0 = nan) are values, as in TensorFlow: NumPy
    # warns of none of them (kernels, fused kernels and their parts alike)
    with np.errstate(all="ignore"), threads_for(state.threads):
        if step.deadline is not None:  # kernels that block (a queue's dequeue) wait until it
            with worker_deadline(step.deadline):
                return _run_partition(state, address, program, step, feeds, trace, dependencies)
        return _run_partition(state, address, program, step, feeds, trace, dependencies)


def _run_partition(
    state: WorkerState,
    address: str,
    program: PartitionProgram,
    step: RunStep,
    feeds: tuple,
    trace: bool,
    dependencies: tuple,
) -> Any:
    """:func:`run_partition`'s work, its dependencies all there."""
    session = state.session(step.session)
    try:
        xp = _array_module(program.backend)
        if any(type(f) is StagedFeed for f in feeds):
            feeds = tuple(
                session.take_staged(f.token) if type(f) is StagedFeed else f for f in feeds
            )
        slots: list[Any] = [None] * program.n_slots
        to_device = _arrive(program, slots, xp, feeds, dependencies, trace)
        hot = None if trace else _compiled(program, xp, session)
        if hot is None:
            stats = _run(program, slots, xp, step, trace, session)
        elif type(hot) is variable_steps.VariableProgram:
            variable_steps.run(hot, program, slots, session, step, _op_failed)
        else:
            _run_hot(program, hot, slots)
        outputs = tuple(_to_host(slots[s]) if host else slots[s] for s, host in program.outputs)
    except OpError as exc:
        return RunFailure(exc)
    if trace:
        to_host = sum(
            _copied_bytes(slots[s], out)
            for (s, host), out in zip(program.outputs, outputs, strict=True)
            if host
        )
        step = DeviceStepStats(program.device, address, tuple(stats), to_device, to_host)
        return (*outputs, step)
    return outputs


def _arrive(
    program: PartitionProgram, slots: list, xp: Any, feeds: tuple, dependencies: tuple, trace: bool
) -> int:
    """Put the incoming tensors (other partitions' outputs, feeds) in their slots, on the
    partition's device; returns the bytes copied onto a GPU (counted when tracing)."""
    arriving = [(dependencies[p][i], s) for p, i, s in program.inputs]
    arriving += [(feeds[p], s) for p, s in program.feeds]
    count = trace and program.backend != "numpy"
    to_device = 0
    for value, slot in arriving:
        try:
            slots[slot] = moved = _to_backend(value, xp)
        except Exception as exc:
            if not _is_out_of_memory(exc):
                raise
            raise _resource_exhausted(exc, _ARRIVAL, program) from exc
        if count:
            to_device += _copied_bytes(value, moved)
    return to_device


def _run(
    program: PartitionProgram,
    slots: list,
    xp: Any,
    step: RunStep,
    trace: bool,
    session: SessionState,
) -> list:
    """The instruction loop: one kernel call and one list store per op."""
    store = None
    stats: list[NodeStats] = []
    for ins in program.instructions:
        start = time.time() if trace else 0.0
        try:
            args = [slots[a] for a in ins.args]
            if ins.stateful or ins.deref:
                if store is None:
                    store = session.store(program.device)
                for i in ins.deref:
                    args[i] = store.read(args[i].name)
                if variable_steps.names_variable(ins):
                    result = ins.kernel(xp, store, **ins.attrs)
                elif ins.stateful:
                    result = store.apply_once(
                        step.number,
                        ins.op_name,
                        lambda: ins.kernel(xp, store, *args, **ins.attrs),  # noqa: B023 (now)
                        step.oldest,
                        variable_steps.updated_variables(ins.op_type, args),
                    )
                else:
                    result = ins.kernel(xp, *args, **ins.attrs)
            else:
                result = ins.kernel(xp, *args, **ins.attrs)
        except OpError:
            raise
        except Exception as exc:
            raise _op_failed(exc, ins, program) from exc
        if ins.out >= 0:
            slots[ins.out] = result
        for slot in ins.free:
            slots[slot] = None
        if trace:
            stop = time.time()
            stats.append(
                NodeStats(
                    ins.op_name,
                    ins.op_type,
                    int(start * 1e6),
                    int((stop - start) * 1e6),
                    _location(result),
                    getattr(ins.kernel, "op_names", ()),
                )
            )
    return stats


def _op_failed(exc: Exception, ins: Instruction, program: PartitionProgram) -> Exception:
    """The error of a kernel that raised: out of memory, or an invalid argument."""
    if _is_out_of_memory(exc):
        return _resource_exhausted(exc, ins, program)
    return InvalidArgumentError(
        f"{ins.op_name} ({ins.op_type}) failed on {program.device}: {type(exc).__name__}: {exc}",
        op=ins.op_name,
        device=program.device,
    )


#: step of a compiled program: (function, arity, first arg slot, second arg slot, all arg
#: slots, output slot, slots to free, instruction index)
_Step = tuple[Any, int, int, int, tuple, int, tuple, int]


def _compile(program: PartitionProgram, xp: Any) -> list[_Step] | None:
    """Bind every instruction to one callable of the array module, or None when the program
    has stateful ops (variables; they go through :func:`_run`).

    An :class:`~daskgraph.framework.op_registry.ArrayFunction` kernel becomes the module's function
    itself (``numpy.add``), looked up once per kernel and program; others a ``partial`` with
    ``xp`` and their attributes bound, so that the loop makes one call per op and builds no
    argument list for one or two inputs. A NumPy partition's constant becomes its value
    (:class:`~daskgraph.runtime.worker.codegen.Constant`: its kernel returns the same array
    every run), which a generated program reads instead of calling the kernel.
    """
    bound: dict[int, Any] = {}  # id(kernel) -> the module's function (attribute-free kernels)
    steps: list[_Step] = []
    append = steps.append
    for index, ins in enumerate(program.instructions):
        if ins.stateful or ins.deref:
            return None
        kernel, args = ins.kernel, ins.args
        if ins.op_type == "Const" and not args and xp is np:
            fn = Constant(kernel(xp, **ins.attrs))
        elif ins.attrs:
            fn = functools.partial(kernel, xp, **ins.attrs)
        else:
            fn = bound.get(id(kernel))
            if fn is None:
                fn = bound[id(kernel)] = _bind(kernel, xp)
        n = len(args)
        first = args[0] if n else -1
        second = args[1] if n > 1 else -1
        append((fn, n, first, second, args, ins.out, ins.free, index))
    return steps


def _bind(kernel: Any, xp: Any) -> Any:
    """A kernel without attributes as one callable: the module's own function for an
    :class:`~daskgraph.framework.op_registry.ArrayFunction`, else the kernel with ``xp`` bound."""
    if isinstance(kernel, ArrayFunction):
        return getattr(xp, kernel.name)
    return functools.partial(kernel, xp)


def _compiled(
    program: PartitionProgram, xp: Any, session: SessionState
) -> HotProgram | variable_steps.VariableProgram:
    """:func:`_compile` once per program object on this worker, kept with the session's state
    (a program is sent once per session and reused by every run, so later runs find it);
    a program with variables is bound by :mod:`~daskgraph.runtime.worker.variable_steps`."""
    return session.compiled_form(program, xp.__name__, lambda: _compile_quietly(program, xp))


def _compile_quietly(
    program: PartitionProgram, xp: Any
) -> HotProgram | variable_steps.VariableProgram:
    """:func:`_compile` without cyclic garbage collections (a step per op, none cyclic), as
    a :class:`~daskgraph.runtime.worker.codegen.HotProgram` (generated as one function once its
    runs have taken as long as generating it would), or a program with variables bound."""
    with cyclic_gc_paused():
        steps = _compile(program, xp)
        if steps is None:
            return variable_steps.compile_program(program, xp)
    incoming = [s for _, s in program.feeds] + [s for _, _, s in program.inputs]
    return HotProgram(steps, incoming, [s for s, _ in program.outputs])


def _run_hot(program: PartitionProgram, hot: HotProgram, slots: list) -> None:
    """Run a program by its generated function once there is one, else by the lean loop.
    Where the generated function raises, the loop runs it again to name the op that failed
    (these programs have no stateful ops: running them again changes nothing)."""
    function = hot.function()
    if function is not None:
        try:
            function(slots)
            return
        except Exception:
            _run_compiled(program, hot.steps, slots)  # raises, naming the op
            hot.failed()  # it did not raise: never trust the generated function again
            return
    start = time.perf_counter()
    _run_compiled(program, hot.steps, slots)
    hot.ran(time.perf_counter() - start)


def _run_compiled(program: PartitionProgram, steps: list[_Step], slots: list) -> None:
    """The lean loop for programs without variables and without tracing."""
    index = -1
    try:
        for fn, arity, a, b, args, out, free, index in steps:  # noqa: B007 (read on error)
            if arity == 2:
                result = fn(slots[a], slots[b])
            elif arity == 1:
                result = fn(slots[a])
            else:
                result = fn(*[slots[i] for i in args])
            if out >= 0:
                slots[out] = result
            for slot in free:
                slots[slot] = None
    except OpError:
        raise
    except Exception as exc:
        raise _op_failed(exc, program.instructions[index], program) from exc


#: values up to this many bytes in all travel pickled into one ``bytes`` in a message
PACK_BYTES = 65536


def pack_small(value: Any, arrays: Any = None) -> Any:
    """``value`` pickled into one ``bytes`` if the arrays in it (``arrays``, else the items
    of a tuple ``value``) add up to at most :data:`PACK_BYTES`; else ``value`` itself, for
    Dask to send its arrays as frames of their own, without a copy.

    >>> unpack(pack_small((np.float32(1.5), "x")))
    (np.float32(1.5), 'x')
    >>> big = (np.zeros(PACK_BYTES),)
    >>> pack_small(big) is big
    True
    """
    if arrays is None:
        arrays = value if isinstance(value, tuple) else (value,)
    if sum(getattr(v, "nbytes", 0) for v in arrays) > PACK_BYTES:
        return value
    return pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)


def unpack(value: Any) -> Any:
    """The value :func:`pack_small` packed, or ``value`` itself if it was not packed."""
    return pickle.loads(value) if isinstance(value, bytes) else value
