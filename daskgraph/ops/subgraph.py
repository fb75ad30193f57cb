"""Python functions traced into pieces of graph that one op runs in-process, as many times as
it needs: ``while_loop``'s ``cond`` and ``body``, ``map_fn``'s function, a dataset's ``map``.

daskgraph's runtime runs each op of a plan once, so a loop cannot be a cycle of graph ops.
Instead a :class:`Tracer` calls the function once on placeholders standing for its arguments
(the *params*), under a name scope; the ops it makes are ordinary graph ops, which the
runtime never runs itself. :meth:`Tracer.compile` then walks back from the function's
results and writes the ops they need as a :class:`~daskgraph.kernels.subgraph.Subgraph`:
plain data (each op's kernels, attributes and argument slots) that the op owning it
interprets with the registered kernels (:mod:`daskgraph.kernels.subgraph`, which a worker
imports without this module), on its own device, as often as it likes. Tensors of the outer
graph the function used (weights, a variable's value, a placeholder fed by the run) are
*captured*: they become inputs of the owning op and are read once per run. Ops that update or
create variables are refused: their effect would be hidden inside one op.

>>> import numpy as np
>>> import daskgraph as dg
>>> with dg.Graph().as_default():
...     scale = dg.constant(3.0)
...     tracer = Tracer("example")
...     (x,) = tracer.params([(dg.float32, ())], "x")
...     with tracer.scope("fn"):
...         y = x * scale + 1.0
...     compiled = tracer.compile([[y]])
>>> [t.op.name for t in compiled.captures], [s.op_type for s in compiled.subgraphs[0].steps]
(['Const'], ['Mul', 'Const', 'Add'])
>>> compiled.subgraphs[0].run(np, None, [np.float32(2.0), np.float32(3.0)])
[np.float32(7.0)]
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass

from daskgraph.errors import UnimplementedError
from daskgraph.framework import dtypes
from daskgraph.framework.graph import Graph, Operation, Shape, Tensor, get_default_graph
from daskgraph.framework.graph import _name_scope as graph_name_scope
from daskgraph.framework.op_registry import lookup
from daskgraph.framework.scopes import colocate_with
from daskgraph.kernels.subgraph import Step, Subgraph

__all__ = ["Compiled", "Step", "Subgraph", "Tracer"]


@dataclass(frozen=True, slots=True)
class Compiled:
    """What :meth:`Tracer.compile` returns: a subgraph per list of results, the outer
    tensors they capture (the owning op's extra inputs, in slot order) and the outer ops
    their ops wait for (its control inputs)."""

    subgraphs: tuple[Subgraph, ...]
    captures: tuple[Tensor, ...]
    control_inputs: tuple[Operation, ...]

    @property
    def stateful(self) -> bool:
        """Whether some subgraph has a stateful step."""
        return any(s.stateful for s in self.subgraphs)


class Tracer:
    """Traces functions of ``params`` into :class:`Subgraph` objects of the default graph.

    ``where`` names the construct in error messages (``"while_loop"``). With ``colocate``,
    every op traced (and the owning op, made with ``colocate_with=tracer.anchor``) joins the
    first param's colocation group, so that the placer puts the owning op on a device that
    has a kernel for every op of the function.
    """

    def __init__(self, where: str, colocate: bool = True) -> None:
        self.where = where
        self.graph: Graph = get_default_graph()
        self.first = len(self.graph)  # ops made from here on are the functions' own
        self.colocate = colocate
        self.anchor: Operation | None = None
        self._params: list[Tensor] = []

    def params(self, specs: Sequence[tuple[dtypes.DType, Shape | None]], name: str) -> list[Tensor]:
        """New placeholders standing for arguments of the given dtypes and static shapes."""
        made = []
        for dtype, shape in specs:
            op = self.graph.create_op(
                "Placeholder", [], dtype=dtype, shape=shape, name=name, colocate_with=self.anchor
            )
            if self.anchor is None and self.colocate:
                self.anchor = op
            made.append(op.outputs[0])
        self._params.extend(made)
        return made

    @contextmanager
    def scope(self, label: str) -> Iterator[None]:
        """The block calling a traced function: under the name scope ``label``, colocated
        with the first param (see the class docstring)."""
        with ExitStack() as stack:
            if self.anchor is not None:
                stack.enter_context(colocate_with(self.anchor))
            stack.enter_context(graph_name_scope(self.graph, label))
            yield

    def compile(self, results: Sequence[Sequence[Tensor]]) -> Compiled:
        """One :class:`Subgraph` per list of result tensors, over shared params and captures.

        Raises
        ------
        UnimplementedError
            A function creates or updates a variable.
        ValueError
            A function makes a placeholder of its own (nothing could feed it).
        """
        walks = [self._walk(outputs) for outputs in results]
        captures: dict[Tensor, None] = {}
        controls: dict[Operation, None] = {}
        for _, found, waits in walks:
            captures.update(dict.fromkeys(found))
            controls.update(dict.fromkeys(waits))
        slot = {t: i for i, t in enumerate(self._params)}
        slot.update({t: len(slot) + i for i, t in enumerate(captures)})
        subgraphs = tuple(
            self._subgraph(ops, outputs, dict(slot))
            for (ops, _, _), outputs in zip(walks, results, strict=True)
        )
        return Compiled(subgraphs, tuple(captures), tuple(controls))

    def _walk(self, outputs: Sequence[Tensor]) -> tuple[list[Operation], list[Tensor], list]:
        """The function's ops ``outputs`` need (in graph order), the outer tensors they read
        and the outer ops they wait for."""
        params = {t.op.id for t in self._params}
        needed: dict[int, Operation] = {}
        captures: dict[Tensor, None] = {}
        controls: dict[Operation, None] = {}
        tensors = list(outputs)
        ops: list[Operation] = []
        while tensors or ops:
            if tensors:
                t = tensors.pop()
                if t.op.id in params:
                    continue
                if t.op.id < self.first:
                    captures[t] = None
                    continue
                op = t.op
            else:
                op = ops.pop()
                if op.id < self.first:
                    controls[op] = None
                    continue
            if op.id in needed or op.id in params:
                continue
            self._check(op)
            needed[op.id] = op
            tensors.extend(op.inputs)
            ops.extend(op.control_inputs)
        return [needed[i] for i in sorted(needed)], list(captures), list(controls)

    def _check(self, op: Operation) -> None:
        opdef = lookup(op.type)
        if op.type == "Placeholder":
            raise ValueError(
                f"{self.where}: the function makes a placeholder ({op.name!r}), which no run "
                "can feed inside it; make the placeholder outside and use it in the function."
            )
        if opdef.produces_ref or opdef.ref_inputs:
            what = "creates" if opdef.produces_ref else "updates"
            raise UnimplementedError(
                f"{self.where}: the function {what} a variable ({op.name!r}, {op.type}); "
                f"daskgraph runs {self.where}'s function inside one op, where variables are "
                "only read. Create and update variables outside it.",
                op=op.name,
            )

    def _subgraph(
        self, ops: list[Operation], outputs: Sequence[Tensor], slot: dict[Tensor, int]
    ) -> Subgraph:
        steps = []
        for op in ops:
            opdef = lookup(op.type)
            args = tuple(slot[t] for t in op.inputs)
            out = -1
            if op.outputs:
                out = slot[op.outputs[0]] = len(slot)
            gpu_kernel = opdef.gpu_kernel
            step = Step(op.name, op.type, opdef.kernel, gpu_kernel, op.attrs, args, out, False)
            steps.append(step._replace(stateful=opdef.stateful))
        outs = tuple(slot[t] for t in outputs)
        return Subgraph(tuple(steps), outs, len(slot), len(self._params))

    def device_types(self, compiled: Compiled) -> set[str]:
        """The device types with a kernel for every op of the compiled subgraphs."""
        types = {"CPU", "GPU"}
        for subgraph in compiled.subgraphs:
            for step in subgraph.steps:
                op = self.graph.get_operation_by_name(step.op_name)
                dts = [t.dtype for t in (*op.outputs, *op.inputs)]
                types &= set(lookup(op.type).device_types(dts))
        return types
