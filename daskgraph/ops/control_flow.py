"""TF1's control-flow and debugging names on a runtime without control flow: ``cond`` (both
branches built and run, the taken one's result selected), ``Print`` (an identity that prints
to stderr when it runs) and ``tuple`` (tensors gated on each other).

daskgraph runs every op a fetch needs, with one output each and no ``Switch``/``Merge``, so
``cond`` cannot skip the branch not taken: it runs both and picks the result with a
``Select`` on the scalar predicate. Values are as TensorFlow's, gradients too (the branch not
taken gets zeros); what differs is that both branches' ops run. So a branch may not update
variables (``cond`` refuses ``assign``, ``assign_add``, optimizer updates ...: an
:class:`~daskgraph.errors.UnimplementedError` names them), ``Print`` ops in both branches
both print, and an op failing in the branch not taken fails the run.

>>> import daskgraph as dg
>>> with dg.Graph().as_default():
...     p = dg.placeholder(dg.bool_, [])
...     x = dg.constant(3.0)
...     y = cond(p, lambda: x * 2.0, lambda: x - 1.0)
...     with dg.Session() as sess:
...         sess.run(y, {p: True}), sess.run(y, {p: False})
(np.float32(6.0), np.float32(2.0))
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from daskgraph.errors import UnimplementedError
from daskgraph.framework import dtypes
from daskgraph.framework.gradient_registry import register_gradient
from daskgraph.framework.graph import Operation, Tensor, as_operation, get_default_graph
from daskgraph.framework.graph import _name_scope as graph_name_scope
from daskgraph.framework.op_registry import CPU_ALL, GPU_NUMERIC, lookup, register
from daskgraph.framework.scopes import control_dependencies
from daskgraph.kernels.control_flow import _print_kernel
from daskgraph.ops.array import convert_to_tensor, group, identity
from daskgraph.ops.logic import where

__all__ = ["Print", "cond", "tuple"]

_builtin_tuple = tuple


register("Print", _print_kernel, stateful=True, cpu=CPU_ALL, gpu=GPU_NUMERIC)


# -- builders -------------------------------------------------------------------------------------
def Print(
    input_: Any,
    data: Any,
    message: str | None = None,
    first_n: int | None = None,
    summarize: int | None = None,
    name: str | None = None,
) -> Tensor:
    """``input_`` unchanged, printing ``message`` and the values of the tensors ``data`` to
    the standard error of the worker that runs it, each time it runs (``tf.Print``).

    ``first_n`` prints only the first runs of a session; ``summarize`` (default 3) is how many
    elements of each tensor are printed. The embedded cluster's CPU worker lives in the
    program's process, so ops on the CPU print to the program's own stderr.

    Examples
    --------
    >>> import contextlib, io
    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     x = dg.constant([1.0, 2.0, 3.0, 4.0])
    ...     y = Print(x, [x, dg.reduce_sum(x)], "x, sum: ")
    ...     err = io.StringIO()
    ...     with dg.Session() as sess, contextlib.redirect_stderr(err):
    ...         value = sess.run(y, options=dg.RunOptions())
    >>> value.tolist(), err.getvalue()
    ([1.0, 2.0, 3.0, 4.0], 'x, sum: [1 2 3...][10]\\n')
    """
    x = convert_to_tensor(input_)
    data = data if isinstance(data, (list, _builtin_tuple)) else [data]
    values = [convert_to_tensor(d) for d in data]
    graph = get_default_graph()
    exact = graph.unique_name(name or "Print")
    attrs = {
        "message": "" if message is None else str(message),
        "first_n": -1 if first_n is None else int(first_n),
        "summarize": 3 if summarize is None else int(summarize),
        "key": ("Print", exact),
    }
    op = graph.create_op(
        "Print", [x, *values], dtype=x.dtype, shape=x.shape, attrs=attrs, exact_name=exact
    )
    return op.outputs[0]


@register_gradient("Print")
def _print_grad(op: Operation, grad: Tensor) -> list[Tensor | None]:
    return [grad] + [None] * (len(op.inputs) - 1)


def tuple(tensors: Any, name: str | None = None, control_inputs: Any = None) -> list[Tensor | None]:
    """The ``tensors`` (``None`` entries kept), each gated so that none is available before
    all of them (and the ``control_inputs``) are computed (``tf.tuple``).

    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     a, b = tuple([dg.constant(1.0), dg.constant(2.0)])
    >>> a.op.type, [c.type for c in a.op.control_inputs]
    ('Identity', ['NoOp'])
    """
    graph = get_default_graph()
    with graph_name_scope(graph, name or "tuple"):
        gating = [as_operation(t, "tuple") for t in tensors if t is not None]
        gating += [as_operation(c, "tuple") for c in control_inputs or ()]
        if not gating:
            raise ValueError("tuple: expects at least one tensor")
        gate = group(*gating, name="control_dependency")
        with control_dependencies([gate]):
            return [None if t is None else identity(t) for t in tensors]


def cond(
    pred: Any,
    true_fn: Callable[[], Any] | None = None,
    false_fn: Callable[[], Any] | None = None,
    strict: bool = False,
    name: str | None = None,
    fn1: Callable[[], Any] | None = None,
    fn2: Callable[[], Any] | None = None,
) -> Any:
    """``true_fn()`` if the scalar ``bool`` tensor ``pred`` is true when the graph runs, else
    ``false_fn()`` (``tf.cond``; ``fn1``/``fn2`` are TF1's old names).

    Both functions are called once, building both branches, and both run: each output of
    the result is a ``Select`` of the two branches' (see the module docstring for what
    differs from TensorFlow). The functions return a tensor, a (nested) list, tuple or dict
    of tensors of one structure, or operations (then the result is an operation running
    both). Singleton lists are unpacked unless ``strict``.

    Raises
    ------
    UnimplementedError
        A branch updates a variable: both branches would run, so both updates would apply.
    """
    true_fn = _one_of(true_fn, fn1, "true_fn", "fn1")
    false_fn = _one_of(false_fn, fn2, "false_fn", "fn2")
    if isinstance(pred, (bool, np.bool_)):
        raise TypeError("cond: pred must not be a Python bool; give a bool tensor")
    if not callable(true_fn) or not callable(false_fn):
        raise TypeError("cond: true_fn and false_fn must be callables")
    graph = get_default_graph()
    with graph_name_scope(graph, name or "cond"):
        pred = convert_to_tensor(pred)
        if pred.dtype is not dtypes.bool_ or pred.shape not in (None, ()):
            raise TypeError(
                f"cond: pred must be a scalar bool tensor; {pred.name!r} is {pred.dtype.name} "
                f"of shape {pred.shape}"
            )
        taken = _branch(graph, true_fn, "true_fn")
        other = _branch(graph, false_fn, "false_fn")
        result = _merge(pred, taken, other)
    if not strict and isinstance(result, list) and len(result) == 1:
        return result[0]
    return result


def _one_of(new: Any, old: Any, new_name: str, old_name: str) -> Any:
    if new is not None and old is not None:
        raise TypeError(f"cond: give {new_name} or {old_name}, not both")
    if new is None and old is None:
        raise TypeError(f"cond: {new_name} must be given")
    return new if new is not None else old


def _branch(graph: Any, fn: Callable[[], Any], label: str) -> Any:
    """Call ``fn`` under a name scope; refuse variable updates among the ops it made."""
    first = len(graph)
    with graph_name_scope(graph, label):
        result = fn()
    updates = [op for op in graph.get_operations()[first:] if _updates_variables(op.type)]
    if updates:
        names = ", ".join(f"{op.name!r} ({op.type})" for op in updates[:5])
        raise UnimplementedError(
            f"cond: the {label} branch updates variables ({names}); daskgraph runs both "
            "branches of a cond (it has no conditional execution), so both updates would "
            "apply. Compute the new value with cond and assign it outside.",
            op=updates[0].name,
        )
    return result


def _updates_variables(op_type: str) -> bool:
    opdef = lookup(op_type)
    return opdef.stateful and bool(opdef.ref_inputs) and op_type != "IsVariableInitialized"


def _merge(pred: Tensor, a: Any, b: Any) -> Any:
    """Select between the branches' results, structure by structure."""
    if isinstance(a, (list, _builtin_tuple)) and isinstance(b, (list, _builtin_tuple)):
        if len(a) != len(b):
            raise ValueError(f"cond: the branches return {len(a)} and {len(b)} values")
        merged = [_merge(pred, x, y) for x, y in zip(a, b, strict=True)]
        return merged if isinstance(a, list) else _builtin_tuple(merged)
    if isinstance(a, dict) and isinstance(b, dict):
        if set(a) != set(b):
            raise ValueError(f"cond: the branches return dicts of keys {sorted(a)} and {sorted(b)}")
        return {k: _merge(pred, a[k], b[k]) for k in a}
    if isinstance(a, Operation) or isinstance(b, Operation):
        return group(as_operation(a, "cond"), as_operation(b, "cond"), name="Merge")
    if a is None or b is None:
        raise ValueError("cond: a branch returned None where the other returned a value")
    return where(pred, convert_to_tensor(a), convert_to_tensor(b), name="Merge")
