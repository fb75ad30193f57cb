"""A traced function as plain data, and how an op runs it: the :class:`Subgraph` of a
``while_loop``'s ``cond`` and ``body``, a ``map_fn``'s function, a dataset's ``map``.

:class:`~daskgraph.ops.subgraph.Tracer` (the graph side) writes each function as the kernels,
attributes and argument slots of its ops, in order; the op owning it (a loop, a dataset's
iterator) interprets it here with those kernels, on its own device, as often as it likes. So
a worker runs a traced function with the kernels' modules alone, importing no graph builder.

>>> import numpy as np
>>> from daskgraph.framework.op_registry import ArrayFunction
>>> add = Step("add", "Add", ArrayFunction("add"), None, {}, (0, 1), 2, False)
>>> double = Subgraph((add,), (2,), n_slots=3, n_params=1)
>>> double.run(np, None, [np.float32(2.0), np.float32(3.0)])
[np.float32(5.0)]
>>> double.bind(np, None, [np.float32(1.0)])([np.float32(4.0)])
[np.float32(5.0)]
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from daskgraph.errors import InvalidArgumentError, OpError
from daskgraph.framework.op_registry import ArrayFunction

__all__ = ["Step", "Subgraph"]


class Step(NamedTuple):
    """One op of a subgraph: ``slots[out] = kernel(xp, [store,] *slots[args], **attrs)``."""

    op_name: str
    op_type: str
    kernel: Any
    gpu_kernel: Any  # the op's GPU kernel where it has its own, else None
    attrs: dict
    args: tuple[int, ...]
    out: int  # -1: no output
    stateful: bool


@dataclass(frozen=True, slots=True)
class Subgraph:
    """A traced function as plain data: its ops in order over numbered slots.

    Slots ``0..n_params-1`` hold the arguments, the next ones the captured tensors' values
    (in the order of :attr:`Compiled.captures`), then each step's output.
    """

    steps: tuple[Step, ...]
    outputs: tuple[int, ...]
    n_slots: int
    n_params: int

    @property
    def stateful(self) -> bool:
        """Whether a step is stateful (a random op, ``Print``): it needs the variable store."""
        return any(step.stateful for step in self.steps)

    def run(self, xp: Any, store: Any, values: Sequence[Any]) -> list[Any]:
        """The function's results for ``values`` (arguments, then captured values); see
        :meth:`bind`."""
        return self.bind(xp, store, values[self.n_params :])(values[: self.n_params])

    def bind(
        self, xp: Any, store: Any, captured: Sequence[Any]
    ) -> Callable[[Sequence[Any]], list[Any]]:
        """The function of its arguments alone, for the ``captured`` values, with the kernels
        of the array module ``xp`` (``store``: the worker's variable store, for stateful
        steps). Steps that read no argument (constants, a captured weight's transpose) run
        here, once, not on every call. A kernel's failure names its op."""
        gpu = xp.__name__ != "numpy"
        base: list[Any] = [None] * self.n_slots
        base[self.n_params : self.n_params + len(captured)] = captured
        known = set(range(self.n_params, self.n_params + len(captured)))
        steps = []
        for step in self.steps:
            fn = _bound(step, xp, store, gpu)
            if not step.stateful and all(a in known for a in step.args):
                try:
                    result = fn(*[base[a] for a in step.args])
                except Exception:  # it raises again where the step runs, if it does
                    pass
                else:
                    if step.out >= 0:
                        base[step.out] = result
                        known.add(step.out)
                    continue
            steps.append((fn, step.args, step.out, step))
        outputs, n_params = self.outputs, self.n_params

        def call(params: Sequence[Any]) -> list[Any]:
            slots = base.copy()
            slots[:n_params] = params
            for fn, args, out, step in steps:
                try:
                    result = fn(*[slots[a] for a in args])
                except OpError:
                    raise
                except Exception as exc:
                    error = _failed(step, exc)
                    if error is exc:
                        raise
                    raise error from exc
                if out >= 0:
                    slots[out] = result
            return [slots[s] for s in outputs]

        return call


def _bound(step: Step, xp: Any, store: Any, gpu: bool) -> Callable[..., Any]:
    """The step's kernel as a function of its inputs alone."""
    kernel = step.gpu_kernel if gpu and step.gpu_kernel is not None else step.kernel
    if step.stateful:
        return functools.partial(kernel, xp, store, **step.attrs)
    if isinstance(kernel, ArrayFunction) and not step.attrs:
        return getattr(xp, kernel.name)
    return functools.partial(kernel, xp, **step.attrs)


def _failed(step: Step, exc: Exception) -> Exception:
    """A step's failure, naming its op; out-of-memory errors pass on as they are (the
    owning op's failure reports them as such)."""
    if isinstance(exc, MemoryError) or type(exc).__name__ == "OutOfMemoryError":
        return exc
    return InvalidArgumentError(
        f"{step.op_name} ({step.op_type}) failed: {type(exc).__name__}: {exc}", op=step.op_name
    )
