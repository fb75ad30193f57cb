"""TF1's numeric checks: ``check_numerics`` (op ``CheckNumerics``), which passes a float
tensor through unchanged or fails the run when it holds NaN or infinite values,
``verify_tensor_all_finite`` and ``add_check_numerics_ops``.

The error is TensorFlow's: :class:`~daskgraph.errors.InvalidArgumentError` with the message
``"<message> : Tensor had NaN values"`` (``Inf``, or ``Inf and NaN``). The gradient of
``check_numerics`` checks the gradient in turn, as TensorFlow's does.

>>> import daskgraph as dg
>>> with dg.Graph().as_default():
...     x = dg.placeholder(dg.float32, [2])
...     y = check_numerics(dg.log(x), "log x")
...     sess = dg.Session()
>>> sess.run(y, {x: [1.0, 1.0]}).tolist()
[0.0, 0.0]
>>> sess.run(y, {x: [1.0, -1.0]})
Traceback (most recent call last):
...
daskgraph.errors.InvalidArgumentError: log x : Tensor had NaN values...
>>> sess.close()
"""

from __future__ import annotations

from typing import Any

from daskgraph.framework import dtypes
from daskgraph.framework.gradient_registry import register_gradient
from daskgraph.framework.graph import Operation, Tensor, get_default_graph, name_scope
from daskgraph.framework.op_registry import lookup, register
from daskgraph.framework.scopes import colocate_with, control_dependencies
from daskgraph.kernels.numerics import _check_numerics
from daskgraph.ops.array import convert_to_tensor, group, identity

__all__ = ["add_check_numerics_ops", "check_numerics", "verify_tensor_all_finite"]

_FLOAT = dtypes.FLOATING
_GRADIENT_MESSAGE = "Not a number (NaN) or infinity (Inf) values detected in gradient. "


register("CheckNumerics", _check_numerics, cpu=_FLOAT, gpu=_FLOAT)


# -- builders -------------------------------------------------------------------------------------
def check_numerics(tensor: Any, message: str, name: str | None = None) -> Tensor:
    """``tensor`` unchanged, failing the run with ``InvalidArgumentError`` (``"<message> :
    Tensor had NaN values"``) when it holds NaN or infinite values (``tf.check_numerics``;
    floating-point tensors only)."""
    x = convert_to_tensor(tensor)
    if not x.dtype.is_floating:
        raise TypeError(
            f"Value passed to parameter 'tensor' has DataType {x.dtype.name} not in list of "
            "allowed values: float16, float32, float64"
        )
    graph = get_default_graph()
    exact = graph.unique_name(name or "CheckNumerics")
    attrs = {"message": str(message), "node": exact}
    return graph.create_op(
        "CheckNumerics", [x], dtype=x.dtype, shape=x.shape, attrs=attrs, exact_name=exact
    ).outputs[0]


def verify_tensor_all_finite(
    t: Any = None,
    msg: str | None = None,
    name: str | None = None,
    x: Any = None,
    message: str | None = None,
) -> Tensor:
    """``x`` (or ``t``, TF1's old name) through an identity that runs after
    :func:`check_numerics` of it with ``message`` (or ``msg``), as
    ``tf.verify_tensor_all_finite``.

    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     y = verify_tensor_all_finite(dg.constant([1.0, float("inf")]), "y")
    ...     with dg.Session() as sess:
    ...         sess.run(y)
    Traceback (most recent call last):
    ...
    daskgraph.errors.InvalidArgumentError: y : Tensor had Inf values...
    """
    x = _one_of(x, t, "x", "t")
    message = _one_of(message, msg, "message", "msg")
    with name_scope(name or "VerifyFinite"):
        x = convert_to_tensor(x, name="x")
        with colocate_with(x.op):
            check = check_numerics(x, message=message)
            with control_dependencies([check]):
                return identity(x, name="control_dependency")


def _one_of(new: Any, old: Any, new_name: str, old_name: str) -> Any:
    if new is not None and old is not None:
        raise ValueError(f"Cannot specify both '{new_name}' and '{old_name}'.")
    return new if new is not None else old


def add_check_numerics_ops() -> Operation:
    """One op running :func:`check_numerics` on every floating-point output of the default
    graph's ops so far (one after the other, each message ``"<op name>:<output index>"``),
    as ``tf.add_check_numerics_ops``.

    Outputs of stateful ops (variables, assignments, random ops) are left out: checking them
    would read or run them again. As in TensorFlow, placeholders are checked, so running the
    returned op needs their feeds.
    """
    checks: list[Tensor] = []
    for op in get_default_graph().get_operations():
        if not op.outputs or lookup(op.type).stateful or lookup(op.type).produces_ref:
            continue
        for output in op.outputs:
            if output.dtype.is_floating:
                with control_dependencies([c.op for c in checks]):
                    checks = [check_numerics(output, message=f"{op.name}:{output.value_index}")]
    return group(*checks)


# -- gradients ------------------------------------------------------------------------------------
@register_gradient("CheckNumerics")
def _check_numerics_grad(op: Operation, grad: Tensor) -> list[Tensor]:
    return [check_numerics(grad, _GRADIENT_MESSAGE + op.attrs["message"])]
