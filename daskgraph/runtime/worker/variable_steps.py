"""The lean loop for programs with variables: every instruction bound once, then one call each.

A training step is a program with variables: reads of them, updates (``ApplyAdam``,
``Assign``), the ``VariableV2`` ops that name them. The executor's generic loop
(:func:`daskgraph.runtime.worker.execution.run_partition` without a compiled form) works out
for every op, at every run, what kind of op it is, builds its argument list, unpacks its
attributes and, for a stateful op, a closure for
:meth:`~daskgraph.runtime.worker.worker_state.VariableStore.apply_once`: about 1.8 us an op,
a sixth of a small MLP's step. Here that work is done once per program and session
(:func:`compile_program`), and a run (:func:`run`) is one loop over prepared steps:

* an op without variables is the call the stateless loop makes (the array module's own
  function, or the kernel with its attributes bound), with one or two slots as arguments;
* a ``VariableV2`` op, whose output is only the name of its variable, is that name, made once
  (the op has no effect a run could repeat or skip); a NumPy ``Const`` is its value, as its
  kernel returns it;
* a read of a variable (``name/read``) reads the store and calls its kernel;
* a stateful op goes through ``apply_once`` as in the generic loop (applied once per run,
  holding the locks of the variables it updates: :func:`updated_variables`).

The kernels, their arguments and their order are the generic loop's: results are the same.
Traced runs keep the generic loop, which times every op.

>>> import numpy as np
>>> from daskgraph.kernels.state import _assign_add_kernel, _variable_kernel
>>> from daskgraph.runtime.program import Instruction, PartitionProgram, RunStep
>>> from daskgraph.runtime.worker.worker_state import SessionState
>>> attrs = {"var_name": "n", "shape": (), "dtype": None}
>>> program = PartitionProgram("/device:CPU:0", "CPU", "numpy", 3, (), ((0, 0),), (
...     Instruction("n", "VariableV2", _variable_kernel, attrs, (), 1, True, ()),
...     Instruction("add", "AssignAdd", _assign_add_kernel, {}, (1, 0), 2, True, ()),
... ), ((2, False),))
>>> session = SessionState()
>>> session.store(program.device).assign("n", np.float32(1.0))
>>> compiled = compile_program(program, np)
>>> slots = [np.float32(2.0), None, None]
>>> run(compiled, program, slots, session, RunStep("doc", 1), None)
>>> slots[2], session.store(program.device).read("n")
(np.float32(3.0), np.float32(3.0))
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from daskgraph.errors import OpError
from daskgraph.framework.op_registry import ArrayFunction, is_blocking
from daskgraph.kernels.array import _const_kernel
from daskgraph.kernels.state import VariableRef, _variable_kernel
from daskgraph.runtime.program import Instruction, PartitionProgram, RunStep

__all__ = [
    "VariableProgram",
    "changes_state",
    "compile_program",
    "names_variable",
    "run",
    "updated_variables",
]

#: kinds of step: two slots, one slot, any slots, a value made once (a variable's name, a
#: constant), a read of variables, a stateful op
CALL2, CALL1, CALL, NAME, READ, STATEFUL = range(6)

#: (kind, function or value, first slot, second slot, argument slots, argument positions
#: holding variable refs, output slot, slots to free, op name, instruction index)
_Step = tuple[int, Any, int, int, tuple, tuple, int, tuple, str, int]


def updated_variables(op_type: str, args: Any) -> tuple[str, ...] | None:
    """The variables a stateful op of ``op_type`` updates when called with ``args`` (those
    of its arguments that are :class:`~daskgraph.kernels.state.VariableRef`: an ``Assign``'s
    target, an ``ApplyAdam``'s variable and its slots), whose locks it holds while it applies
    (:meth:`~daskgraph.runtime.worker.worker_state.VariableStore.apply_once`). An op without
    any gives None (it holds a lock of its own: a random op's generator is the op's), or
    ``()`` if it may wait for another run
    (:func:`~daskgraph.framework.op_registry.mark_blocking`: a queue's enqueue or dequeue),
    whose resource locks itself and is released while it waits.

    >>> updated_variables("ApplyAdam", (VariableRef("w"), VariableRef("w/Adam"), 0.1))
    ('w', 'w/Adam')
    >>> updated_variables("RandomStandardNormal", (3,)) is None
    True
    >>> import daskgraph.data.queue_ops  # (marks the queue ops blocking)
    >>> updated_variables("QueueDequeueV2", ("queue",))
    ()
    """
    names = tuple([a.name for a in args if type(a) is VariableRef])
    if names or not is_blocking(op_type):
        return names or None
    return ()


def changes_state(program: PartitionProgram) -> bool:
    """Whether ``program`` has an op that changes state (a variable's update, a queue's
    enqueue, a random draw): every stateful op but ``VariableV2``, which only names its
    variable. Such a program never runs on an event loop, where waiting for a variable's
    lock would hold the loop up.

    >>> from daskgraph.runtime.program import Instruction
    >>> attrs = {"var_name": "n", "shape": (), "dtype": None}
    >>> name = Instruction("n", "VariableV2", _variable_kernel, attrs, (), 0, True, ())
    >>> program = PartitionProgram("/device:CPU:0", "CPU", "numpy", 1, (), (), (name,), ())
    >>> changes_state(program)
    False
    """
    return any(ins.stateful and not names_variable(ins) for ins in program.instructions)


def names_variable(ins: Instruction) -> bool:
    """Whether ``ins`` is a ``VariableV2`` that only names its variable (no inputs): stateful,
    yet it changes nothing, so it runs without
    :meth:`~daskgraph.runtime.worker.worker_state.VariableStore.apply_once`."""
    return ins.kernel is _variable_kernel and not ins.args


class VariableProgram:
    """A program with variables, its instructions bound for :func:`run`."""

    __slots__ = ("device", "steps")

    def __init__(self, device: str, steps: list[_Step]) -> None:
        self.device = device
        self.steps = steps


def compile_program(program: PartitionProgram, xp: Any) -> VariableProgram:
    """Bind every instruction of ``program`` to one callable (or value) of array module ``xp``."""
    bound: dict[int, Any] = {}  # id(kernel) -> its callable (attribute-free kernels)
    steps = [_step(ins, index, xp, bound) for index, ins in enumerate(program.instructions)]
    return VariableProgram(program.device, steps)


def _step(ins: Instruction, index: int, xp: Any, bound: dict[int, Any]) -> _Step:
    args, n = ins.args, len(ins.args)
    first, second = (args[0] if n else -1), (args[1] if n > 1 else -1)
    if ins.stateful:
        if names_variable(ins):
            kind, fn = NAME, _variable_kernel(xp, None, **ins.attrs)
        else:
            kind, fn = STATEFUL, functools.partial(ins.kernel, xp, **ins.attrs)
    elif ins.kernel is _const_kernel and xp.__name__ == "numpy":
        kind, fn = NAME, _const_kernel(xp, **ins.attrs)  # the value itself, every run
    else:
        fn = _bind(ins.kernel, ins.attrs, xp, bound)
        kind = READ if ins.deref else CALL2 if n == 2 else CALL1 if n == 1 else CALL
    return (kind, fn, first, second, args, ins.deref, ins.out, ins.free, ins.op_name, index)


def _bind(kernel: Any, attrs: dict, xp: Any, bound: dict[int, Any]) -> Any:
    """A kernel as the stateless loop calls it: the module's own function for an
    :class:`~daskgraph.framework.op_registry.ArrayFunction`, else the kernel with ``xp`` and
    its attributes bound (one ``partial`` per attribute-free kernel and program)."""
    if attrs:
        return functools.partial(kernel, xp, **attrs)
    fn = bound.get(id(kernel))
    if fn is None:
        if isinstance(kernel, ArrayFunction):
            fn = getattr(xp, kernel.name)
        else:
            fn = functools.partial(kernel, xp)
        bound[id(kernel)] = fn
    return fn


def run(
    compiled: VariableProgram,
    program: PartitionProgram,
    slots: list,
    session: Any,
    step: RunStep,
    failed: Callable[[Exception, Instruction, PartitionProgram], Exception] | None,
) -> None:
    """Run ``compiled`` (``program``'s bound form) against ``session``'s variables for run
    ``step``, filling ``slots``. A kernel's error other than an
    :class:`~daskgraph.errors.OpError` is raised as ``failed(exc, instruction, program)``
    (as it is, without ``failed``)."""
    store = session.store(compiled.device)
    read, apply_once = store.read, store.apply_once
    number, oldest = step.number, step.oldest
    index = -1
    try:
        for kind, fn, a, b, args, deref, out, free, name, index in compiled.steps:
            if kind == CALL2:
                result = fn(slots[a], slots[b])
            elif kind == CALL1:
                result = fn(slots[a])
            elif kind == NAME:
                result = fn
            elif kind == CALL:
                result = fn(*[slots[i] for i in args])
            else:
                values = [slots[i] for i in args]
                for i in deref:
                    values[i] = read(values[i].name)
                if kind == READ:
                    result = fn(*values)
                else:
                    call = functools.partial(fn, store, *values)
                    updates = updated_variables(program.instructions[index].op_type, values)
                    result = apply_once(number, name, call, oldest, updates)
            if out >= 0:
                slots[out] = result
            for slot in free:
                slots[slot] = None
    except OpError:
        raise
    except Exception as exc:
        if failed is None:
            raise
        raise failed(exc, program.instructions[index], program) from exc
