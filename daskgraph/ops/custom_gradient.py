"""``custom_gradient``: a decorator giving a function the gradient its author wrote, in place
of the one ``gradients`` would derive from its ops (``tf.custom_gradient``).

The decorated ``f(*args)`` returns ``(result, grad_fn)``. Each output of ``result`` is passed
through a ``CustomGradient`` op, an identity that also takes ``f``'s floating arguments (and
the variables ``f`` reads) as inputs; a gradient registered for the call and put in force with
:meth:`~daskgraph.framework.graph.Graph.gradient_override_map` calls ``grad_fn`` and hands its
results to
those inputs, while nothing flows into ``f``'s own ops, as TensorFlow's ``IdentityN`` does.

daskgraph's ops have one output each, so a function with several outputs gets one
``CustomGradient`` op per output, and ``grad_fn`` is called once per output that receives a
gradient (zeros for the others'): the gradients add up to TensorFlow's, ``grad_fn`` being
linear in them, but its ops are built once per such output.

>>> import daskgraph as dg
>>> @custom_gradient
... def log1pexp(x):
...     e = dg.exp(x)
...     def grad(dy):
...         return dy * (1.0 - 1.0 / (1.0 + e))
...     return dg.log(1.0 + e), grad
>>> with dg.Graph().as_default():
...     x = dg.constant([0.0, 100.0], dg.float64)
...     (dx,) = dg.gradients(dg.reduce_sum(log1pexp(x)), [x])
...     with dg.Session() as sess:
...         sess.run(dx).tolist()
[0.5, 1.0]
"""

from __future__ import annotations

import functools
import inspect
import itertools
from collections.abc import Callable
from typing import Any

from daskgraph.framework import nest
from daskgraph.framework.gradient_registry import RegisterGradient, register_gradient
from daskgraph.framework.graph import GLOBAL_VARIABLES, Graph, Operation, Tensor, get_default_graph
from daskgraph.framework.op_registry import CPU_ALL, GPU_NUMERIC, register
from daskgraph.kernels.custom_gradient import _custom_gradient_kernel
from daskgraph.ops.array import convert_to_tensor
from daskgraph.ops.fill_ops import zeros_like
from daskgraph.ops.variable_status import LOCAL_VARIABLES

__all__ = ["custom_gradient"]

_uids = itertools.count()


register("CustomGradient", _custom_gradient_kernel, cpu=CPU_ALL, gpu=GPU_NUMERIC)


@register_gradient("CustomGradient")
def _identity_grad(op: Operation, grad: Tensor) -> list[Tensor | None]:
    """Without its override (a copied graph), the op is an identity of its first input."""
    return [grad] + [None] * (len(op.inputs) - 1)


def custom_gradient(f: Callable[..., Any] | None = None) -> Callable[..., Any]:
    """Decorate ``f(*args) -> (result, grad_fn)`` so that the gradient of ``result`` with
    respect to ``args`` is ``grad_fn(*dys)`` (``tf.custom_gradient``).

    ``grad_fn`` takes one gradient per (flattened) output of ``result`` and returns one per
    argument (a tensor, or a list); when ``f`` reads variables, ``grad_fn`` must take them as
    the keyword argument ``variables`` and return ``(argument_grads, variable_grads)``.
    Keyword arguments of the decorated function are refused, as in TensorFlow's graph mode.
    """
    if f is None:
        return custom_gradient

    @functools.wraps(f)
    def decorated(*args: Any, **kwargs: Any) -> Any:
        if kwargs:
            raise ValueError(
                "The custom_gradient decorator currently supports keywords arguments only when "
                "eager execution is enabled."
            )
        return _wrap(f, args)

    return decorated


def _wrap(f: Callable[..., Any], args: tuple) -> Any:
    graph = get_default_graph()
    args = nest.map_structure(convert_to_tensor, args)
    flat_args = nest.flatten(args)
    first = len(graph)
    result, grad_fn = f(*args)
    flat_result = [convert_to_tensor(r) for r in nest.flatten(result)]
    reads = _variables_read(graph, first)
    if reads and not _takes_variables(grad_fn):
        names = [v.name for v, _ in reads]
        raise TypeError(
            "@tf.custom_gradient grad_fn must accept keyword argument 'variables', since "
            f"function uses variables: {names}"
        )
    call = _Call(grad_fn, flat_result, flat_args, [v for v, _ in reads])
    name = f"CustomGradient-{next(_uids)}"
    RegisterGradient(name)(call.gradient)
    floating = [a for a in flat_args if a.dtype.is_floating]
    with graph.gradient_override_map({"CustomGradient": name}):
        outputs = [
            graph.create_op(
                "CustomGradient",
                [y, *floating, *(read for _, read in reads)],
                dtype=y.dtype,
                shape=y.shape,
                name="IdentityN",
            ).outputs[0]
            for y in flat_result
        ]
    call.ops = [t.op for t in outputs]
    return nest.pack_sequence_as(result, outputs)


class _Call:
    """One call of a decorated function: what its gradient needs."""

    def __init__(self, grad_fn: Callable[..., Any], results: list, args: list, variables: list):
        self.grad_fn, self.results, self.args, self.variables = grad_fn, results, args, variables
        self.ops: list[Operation] = []

    def gradient(self, op: Operation, grad: Tensor) -> list[Tensor | None]:
        """``grad_fn`` of the gradient of output ``op`` (zeros for the other outputs)."""
        k = self.ops.index(op)
        dys = [grad if j == k else zeros_like(y) for j, y in enumerate(self.results)]
        if self.variables:
            arg_grads, variable_grads = self.grad_fn(*dys, variables=self.variables)
            variable_grads = list(variable_grads)
            if len(variable_grads) != len(self.variables):
                raise ValueError(
                    "Must return gradient for each variable from @custom_gradient grad_fn."
                )
        else:
            arg_grads, variable_grads = self.grad_fn(*dys), []
        flat = nest.flatten(arg_grads)
        if len(flat) != len(self.args):
            raise ValueError(
                f"@custom_gradient grad_fn returned {len(flat)} gradients for a function of "
                f"{len(self.args)} (flattened) arguments"
            )
        floating = [g for g, a in zip(flat, self.args, strict=True) if a.dtype.is_floating]
        return [None, *floating, *variable_grads]


def _variables_read(graph: Graph, first: int) -> list[tuple[Any, Tensor]]:
    """The variables the ops made since op ``first`` read (with their read tensors), by name."""
    by_op = {
        v.op: v
        for v in graph.get_collection(GLOBAL_VARIABLES) + graph.get_collection(LOCAL_VARIABLES)
    }
    found: dict[str, tuple[Any, Tensor]] = {}
    for op in graph.get_operations()[first:]:
        for t in op.inputs:
            source = t.op
            if source.type == "Identity" and source.inputs and source.inputs[0].op in by_op:
                var = by_op[source.inputs[0].op]
                found.setdefault(var.name, (var, t))
    return [found[name] for name in sorted(found)]


def _takes_variables(fn: Callable[..., Any]) -> bool:
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return True
    return "variables" in params or any(p.kind is p.VAR_KEYWORD for p in params.values())
