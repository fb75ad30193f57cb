"""Symbolic reverse-mode differentiation: ``gradients(ys, xs)`` adds the ops computing
d(sum ys)/d(xs) to the graph, from a registry with one gradient function per op type.

As in TensorFlow 1, a gradient function takes the forward
:class:`~daskgraph.framework.graph.Operation`
and the gradient flowing into its output, and returns one gradient per input (``None`` for
an input that gets none); :func:`register_gradient` is how every op, users' own included,
gets one, and :func:`no_gradient` marks an op type as not differentiable. The gradient ops
of an op are colocated with it by default (TensorFlow's ``colocate_gradients_with_ops``), so
each tower's backward pass runs on the tower's device, and they are named under
``gradients/<op>_grad/``. The functions for the ops of :mod:`daskgraph.ops.math` and
:mod:`daskgraph.ops.array` are at the bottom; other op modules register theirs.
"""

from __future__ import annotations

from contextlib import ExitStack
from typing import Any

from daskgraph.errors import InvalidArgumentError
from daskgraph.framework import scopes
from daskgraph.framework.gradient_registry import (
    RegisterGradient,
    no_gradient,
    register_gradient,
    registered_gradient,
)
from daskgraph.framework.graph import Operation, Tensor, name_scope
from daskgraph.ops import backprop
from daskgraph.ops.array import cast, convert_to_tensor, transpose
from daskgraph.ops.math import add_n, matmul, negative, reduce_mean, reduce_sum

__all__ = [
    "RegisterGradient",
    "gradients",
    "no_gradient",
    "register_gradient",
    "registered_gradient",
    "unbroadcast",
]


def unbroadcast(grad: Tensor, x: Tensor) -> Tensor:
    """``grad`` (of a broadcasting op's output) summed down to the runtime shape of its
    input ``x``."""
    return backprop.sum_to_shape_of(grad, x)


# -- the algorithm ------------------------------------------------------------------------------
def gradients(
    ys: Any,
    xs: Any,
    grad_ys: Any = None,
    name: str = "gradients",
    colocate_gradients_with_ops: bool = True,
    stop_gradients: Any = None,
) -> list[Tensor | None]:
    """The symbolic gradients of ``sum(ys)`` with respect to each of ``xs``.

    Parameters
    ----------
    ys, xs
        A tensor (or variable) or a list of them; a variable in ``xs`` means its value.
    grad_ys
        The gradients flowing into ``ys`` (default: ones of each ``y``'s shape).
    colocate_gradients_with_ops
        Place each op's gradient ops with the op (default ``True``).
    stop_gradients
        Tensors through which no gradient flows (as if constants).

    Returns
    -------
    list
        One tensor per ``x``, or ``None`` where ``ys`` do not depend on it.

    Examples
    --------
    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     x = dg.constant(3.0)
    ...     (dx,) = gradients(x * x, [x])
    ...     with dg.Session() as sess:
    ...         float(sess.run(dx))
    6.0
    """
    ys, xs = _tensors(ys, "ys"), _tensors(xs, "xs")
    stops = {id(t) for t in _tensors(stop_gradients or [], "stop_gradients")}
    between = _ops_between(ys, xs, stops)
    partials: dict[int, list[Tensor]] = {}
    with name_scope(name):
        for y, seed in zip(ys, _seeds(ys, grad_ys), strict=True):
            partials.setdefault(id(y), []).append(seed)
        for op in sorted(between, key=lambda o: -o.id):
            _backprop_op(op, partials, stops, colocate_gradients_with_ops)
        return [_total(partials.get(id(x))) for x in xs]


def _tensors(values: Any, what: str) -> list[Tensor]:
    items = list(values) if isinstance(values, (list, tuple)) else [values]
    out = []
    for value in items:
        ref = getattr(value, "_ref", None)  # a Variable: its reference, read by every user
        try:
            out.append(ref() if callable(ref) else convert_to_tensor(value))
        except (TypeError, ValueError) as exc:
            raise TypeError(
                f"gradients: {what} must be tensors or variables; got {value!r}"
            ) from exc
    return out


def _seeds(ys: list[Tensor], grad_ys: Any) -> list[Tensor]:
    if grad_ys is None:
        return [backprop.ones_like_seed(y) for y in ys]
    given = list(grad_ys) if isinstance(grad_ys, (list, tuple)) else [grad_ys]
    if len(given) != len(ys):
        raise InvalidArgumentError(
            f"gradients: grad_ys has {len(given)} entries but ys has {len(ys)}",
            op="gradients",
        )
    return [backprop.ones_like_seed(y) if g is None else convert_to_tensor(g) for y, g in
            zip(ys, given, strict=True)]  # fmt: skip


def _ops_between(ys: list[Tensor], xs: list[Tensor], stops: set[int]) -> list[Operation]:
    """The ops on a data path from some ``x`` to some ``y`` (not through a stopped tensor)."""
    consumers: dict[int, list[Operation]] = {}
    for op in ys[0].graph.get_operations() if ys else []:
        for t in op.inputs:
            if id(t) not in stops:
                consumers.setdefault(id(t), []).append(op)
    reached: set[int] = set()
    frontier = [op for x in xs for op in consumers.get(id(x), ())]
    while frontier:
        op = frontier.pop()
        if op.id in reached:
            continue
        reached.add(op.id)
        frontier.extend(c for t in op.outputs for c in consumers.get(id(t), ()))
    between: dict[int, Operation] = {}
    frontier = [y.op for y in ys]
    while frontier:
        op = frontier.pop()
        if op.id in between or op.id not in reached:
            continue
        between[op.id] = op
        frontier.extend(t.op for t in op.inputs if id(t) not in stops)
    return list(between.values())


def _backprop_op(
    op: Operation, partials: dict[int, list[Tensor]], stops: set[int], colocate: bool
) -> None:
    """Add ``op``'s gradient ops, given the gradients of its output; pass them to its inputs."""
    if not op.outputs or not op.inputs:
        return
    grad = _total(partials.get(id(op.outputs[0])))
    if grad is None:
        return
    fn = registered_gradient(op.graph.gradient_name(op))
    if fn is None:
        return
    with ExitStack() as stack:
        if colocate:
            stack.enter_context(scopes.colocate_with(op, ignore_existing=True))
        stack.enter_context(name_scope(f"{op.name}_grad"))
        grads = list(fn(op, grad))
    if len(grads) != len(op.inputs):
        raise ValueError(
            f"the gradient function of {op.type} returned {len(grads)} gradients for "
            f"{op.name!r}, which has {len(op.inputs)} inputs"
        )
    for tensor, g in zip(op.inputs, grads, strict=True):
        if g is not None and id(tensor) not in stops and tensor.dtype.is_floating:
            partials.setdefault(id(tensor), []).append(convert_to_tensor(g))


def _total(parts: list[Tensor] | None) -> Tensor | None:
    if not parts:
        return None
    return parts[0] if len(parts) == 1 else add_n(parts)


# -- gradients of the core ops ------------------------------------------------------------------
def _both(op: Operation, gx: Any, gy: Any) -> list[Tensor]:
    x, y = op.inputs
    return [unbroadcast(gx, x), unbroadcast(gy, y)]


@register_gradient("Add")
def _add_grad(op: Operation, grad: Tensor) -> list[Tensor]:
    return _both(op, grad, grad)


@register_gradient("Sub")
def _sub_grad(op: Operation, grad: Tensor) -> list[Tensor]:
    return _both(op, grad, negative(grad))


@register_gradient("Mul")
def _mul_grad(op: Operation, grad: Tensor) -> list[Tensor]:
    x, y = op.inputs
    return _both(op, grad * y, grad * x)


@register_gradient("RealDiv")
def _div_grad(op: Operation, grad: Tensor) -> list[Tensor]:
    x, y = op.inputs
    return _both(op, grad / y, negative(grad) * x / (y * y))


@register_gradient("Maximum")
def _maximum_grad(op: Operation, grad: Tensor) -> list[Tensor]:
    x, y = op.inputs
    gx = backprop.extremum_grad(x, y, grad, take_x=True, kind="max")
    gy = backprop.extremum_grad(x, y, grad, take_x=False, kind="max")
    return _both(op, gx, gy)


@register_gradient("Neg")
def _neg_grad(op: Operation, grad: Tensor) -> list[Tensor]:
    return [negative(grad)]


@register_gradient("Abs")
def _abs_grad(op: Operation, grad: Tensor) -> list[Tensor]:
    x = op.inputs[0]  # d|x| = sign(x): the share of max(x, -x) that x won, minus the rest
    zero = x * 0.0
    return [backprop.extremum_grad(x, zero, grad, take_x=True, kind="max") - backprop.
            extremum_grad(x, zero, grad, take_x=True, kind="min")]  # fmt: skip


@register_gradient("Square")
def _square_grad(op: Operation, grad: Tensor) -> list[Tensor]:
    return [grad * (op.inputs[0] * 2.0)]


@register_gradient("Sqrt")
def _sqrt_grad(op: Operation, grad: Tensor) -> list[Tensor]:
    return [grad * 0.5 / op.outputs[0]]


@register_gradient("Exp")
def _exp_grad(op: Operation, grad: Tensor) -> list[Tensor]:
    return [grad * op.outputs[0]]


@register_gradient("Tanh")
def _tanh_grad(op: Operation, grad: Tensor) -> list[Tensor]:
    y = op.outputs[0]
    return [grad * (1.0 - y * y)]


@register_gradient("MatMul")
def _matmul_grad(op: Operation, grad: Tensor) -> list[Tensor]:
    a, b = op.inputs
    ta, tb = op.attrs.get("transpose_a", False), op.attrs.get("transpose_b", False)
    if not ta and not tb:
        return [matmul(grad, b, transpose_b=True), matmul(a, grad, transpose_a=True)]
    if ta and not tb:
        return [matmul(b, grad, transpose_b=True), matmul(a, grad)]
    if not ta and tb:
        return [matmul(grad, b), matmul(grad, a, transpose_a=True)]
    return [matmul(b, grad, transpose_a=True, transpose_b=True),
            matmul(grad, a, transpose_a=True, transpose_b=True)]  # fmt: skip


@register_gradient("AddN")
def _add_n_grad(op: Operation, grad: Tensor) -> list[Tensor]:
    return [unbroadcast(grad, x) for x in op.inputs]


@register_gradient("Sum")
def _sum_grad(op: Operation, grad: Tensor) -> list[Tensor]:
    x = op.inputs[0]
    return [backprop.reduce_grad(grad, x, op.attrs["axis"], op.attrs["keepdims"], mean=False)]


@register_gradient("Mean")
def _mean_grad(op: Operation, grad: Tensor) -> list[Tensor]:
    x = op.inputs[0]
    return [backprop.reduce_grad(grad, x, op.attrs["axis"], op.attrs["keepdims"], mean=True)]


@register_gradient("Max")
def _max_grad(op: Operation, grad: Tensor) -> list[Tensor]:
    x, y = op.inputs[0], op.outputs[0]
    return [backprop.extremum_reduce_grad(x, y, grad, op.attrs["axis"], op.attrs["keepdims"])]


@register_gradient("Identity")
@register_gradient("PlaceholderWithDefault")
def _identity_grad(op: Operation, grad: Tensor) -> list[Tensor]:
    return [grad]


@register_gradient("Reshape")
def _reshape_grad(op: Operation, grad: Tensor) -> list[Tensor]:
    return [backprop.reshape_like(grad, op.inputs[0])]


@register_gradient("ReshapeTo")
def _reshape_to_grad(op: Operation, grad: Tensor) -> list[Tensor | None]:
    return [backprop.reshape_like(grad, op.inputs[0]), None]


@register_gradient("Transpose")
def _transpose_grad(op: Operation, grad: Tensor) -> list[Tensor]:
    perm = op.attrs.get("perm")
    if perm is None:
        return [transpose(grad)]
    inverse = [0] * len(perm)
    for i, p in enumerate(perm):
        inverse[p] = i
    return [transpose(grad, inverse)]


@register_gradient("Cast")
def _cast_grad(op: Operation, grad: Tensor) -> list[Tensor | None]:
    x = op.inputs[0]
    if x.dtype.is_floating and grad.dtype.is_floating:
        return [cast(grad, x.dtype)]
    return [None]


for _op_type in (
    "Const",
    "Placeholder",
    "VariableV2",
    "NoOp",
    "Assign",
    "AssignAdd",
    "ShapeFromParts",
):
    no_gradient(_op_type)
no_gradient("ExtremumReduceGrad")  # second derivatives through it are not supported yet
no_gradient("OnesLikeSeed")
no_gradient("OnesSeed")


# -- second derivatives: the gradients of the ops gradients build -------------------------------
@register_gradient("SumToShapeOf")
def _sum_to_shape_of_grad(op: Operation, grad: Tensor) -> list[Tensor | None]:
    return [backprop.ones_like_seed(op.inputs[0]) * grad, None]  # broadcast back


@register_gradient("ReduceGrad")
def _reduce_grad_grad(op: Operation, grad: Tensor) -> list[Tensor | None]:
    reduce = reduce_mean if op.attrs["mean"] else reduce_sum
    return [reduce(grad, axis=op.attrs["axis"], keepdims=op.attrs["keepdims"]), None]


@register_gradient("ReshapeLike")
def _reshape_like_grad(op: Operation, grad: Tensor) -> list[Tensor | None]:
    return [backprop.reshape_like(grad, op.inputs[0]), None]


@register_gradient("ExtremumGrad")
def _extremum_grad_grad(op: Operation, grad: Tensor) -> list[Tensor | None]:
    x, y, _ = op.inputs
    take_x, kind = op.attrs["take_x"], op.attrs["kind"]
    return [None, None, backprop.extremum_grad(x, y, grad, take_x=take_x, kind=kind)]
