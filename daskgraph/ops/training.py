"""Training ops: the optimizers' in-place updates of a variable (TensorFlow's ``training_ops``).

Each op takes the variable (and its slot variables: momentum accumulator, Adam's moments) as
references and applies its whole update in one kernel call, under the variable store's
update lock, so that concurrent steps (asynchronous towers) interleave whole updates and lose
none. The op outputs the variable's new value. The formulas are TensorFlow's
(``tensorflow/core/kernels/training_ops.cc``); as there, the ops have float kernels only.

>>> import daskgraph as dg
>>> with dg.Graph().as_default():
...     w = dg.Variable([1.0, 2.0], name="w")
...     step = apply_gradient_descent(w, 0.5, dg.constant([2.0, 2.0]))
...     with dg.Session() as sess:
...         sess.run(w.initializer)
...         sess.run(step).tolist()
[0.0, 1.0]
"""

from __future__ import annotations

from typing import Any

from daskgraph import dtypes
from daskgraph.gradients import no_gradient
from daskgraph.graph import Tensor, get_default_graph
from daskgraph.ops.array import convert_to_tensor
from daskgraph.ops.registry import register
from daskgraph.ops.state import Variable

__all__ = ["apply_adam", "apply_gradient_descent", "apply_momentum"]

_FLOAT = dtypes.FLOATING


# -- kernels: ``store`` is the worker's variable store; refs name the variables in it --------------
def _updated(xp, store, ref, value):
    old = store.read(ref.name)
    value = xp.asarray(value).astype(old.dtype, copy=False)
    store.assign(ref.name, value)
    return value


def _apply_gradient_descent(xp, store, var, alpha, delta):
    return _updated(xp, store, var, store.read(var.name) - alpha * delta)


def _apply_momentum(xp, store, var, accum, lr, grad, momentum, *, use_nesterov):
    new_accum = store.read(accum.name) * momentum + grad
    if use_nesterov:
        step = grad * lr + new_accum * momentum * lr
    else:
        step = lr * new_accum
    _updated(xp, store, accum, new_accum)
    return _updated(xp, store, var, store.read(var.name) - step)


def _apply_adam(
    xp, store, var, m, v, beta1_power, beta2_power, lr, beta1, beta2, epsilon, grad, *, use_nesterov
):
    lr_t = lr * xp.sqrt(1 - beta2_power) / (1 - beta1_power)
    old_m = store.read(m.name)
    new_m = old_m + (grad - old_m) * (1 - beta1)
    old_v = store.read(v.name)
    new_v = old_v + (grad * grad - old_v) * (1 - beta2)
    if use_nesterov:
        step = (new_m * beta1 + (1 - beta1) * grad) * lr_t / (xp.sqrt(new_v) + epsilon)
    else:
        step = new_m * lr_t / (xp.sqrt(new_v) + epsilon)
    _updated(xp, store, m, new_m)
    _updated(xp, store, v, new_v)
    return _updated(xp, store, var, store.read(var.name) - step)


register(
    "ApplyGradientDescent",
    _apply_gradient_descent,
    cpu=_FLOAT,
    gpu=_FLOAT,
    stateful=True,
    ref_inputs=(0,),
)
register("ApplyMomentum", _apply_momentum, cpu=_FLOAT, gpu=_FLOAT, stateful=True, ref_inputs=(0, 1))
register("ApplyAdam", _apply_adam, cpu=_FLOAT, gpu=_FLOAT, stateful=True, ref_inputs=(0, 1, 2))
for _op_type in ("ApplyGradientDescent", "ApplyMomentum", "ApplyAdam"):
    no_gradient(_op_type)  # updates, as Assign: nothing to differentiate


# -- builders -------------------------------------------------------------------------------------
def _ref(var: Any, what: str, op_type: str) -> Tensor:
    if not isinstance(var, Variable):
        raise TypeError(f"{op_type}: {what} must be a Variable; got {var!r}")
    if not var.dtype.is_floating:
        raise TypeError(
            f"{op_type}: {what} {var.op.name!r} has dtype {var.dtype.name}; training ops "
            "update float variables only"
        )
    return var._ref()


def _value(value: Any, var: Variable, what: str, op_type: str) -> Tensor:
    """``value`` as a tensor of ``var``'s dtype (a scalar hyperparameter or the gradient)."""
    tensor = convert_to_tensor(value, dtype=var.dtype if not _is_tensor(value) else None)
    if tensor.dtype != var.dtype:
        raise TypeError(
            f"{op_type}: {what} {tensor.name!r} has dtype {tensor.dtype.name}; the variable "
            f"{var.op.name!r} is {var.dtype.name}"
        )
    return tensor


def _is_tensor(value: Any) -> bool:
    return isinstance(value, Tensor) or hasattr(value, "_as_tensor")


def _check_grad(grad: Tensor, var: Variable, op_type: str) -> None:
    if grad.shape is None or var.shape is None or len(grad.shape) != len(var.shape):
        if grad.shape is not None and var.shape is not None:
            raise ValueError(
                f"{op_type}: gradient {grad.name!r} of shape {grad.shape} does not match the "
                f"variable {var.op.name!r} of shape {var.shape}"
            )
        return
    for g, v in zip(grad.shape, var.shape, strict=True):
        if g is not None and v is not None and g != v:
            raise ValueError(
                f"{op_type}: gradient {grad.name!r} of shape {grad.shape} does not match the "
                f"variable {var.op.name!r} of shape {var.shape}"
            )


def _create(op_type: str, var: Variable, inputs: list[Tensor], name: str | None, **attrs) -> Tensor:
    ref = inputs[0]
    op = get_default_graph().create_op(
        op_type,
        inputs,
        dtype=var.dtype,
        shape=var.shape,
        attrs=attrs,
        name=name,
        colocate_with=ref.op,
    )
    return op.outputs[0]


def apply_gradient_descent(var: Any, alpha: Any, delta: Any, name: str | None = None) -> Tensor:
    """Update ``var -= alpha * delta``; the op outputs the new value.

    Parameters
    ----------
    var
        A float :class:`~daskgraph.ops.state.Variable`.
    alpha
        The learning rate: a scalar (tensor) of ``var``'s dtype.
    delta
        The gradient, of ``var``'s shape and dtype.
    """
    op_type = "ApplyGradientDescent"
    ref = _ref(var, "var", op_type)
    grad = _value(delta, var, "delta", op_type)
    _check_grad(grad, var, op_type)
    return _create(op_type, var, [ref, _value(alpha, var, "alpha", op_type), grad], name)


def apply_momentum(
    var: Any,
    accum: Any,
    lr: Any,
    grad: Any,
    momentum: Any,
    use_nesterov: bool = False,
    name: str | None = None,
) -> Tensor:
    """Momentum update: ``accum = accum * momentum + grad; var -= lr * accum``.

    With ``use_nesterov``, ``var -= grad * lr + accum * momentum * lr`` (TensorFlow's
    formula, with the new ``accum``). ``accum`` is a Variable of ``var``'s shape.
    """
    op_type = "ApplyMomentum"
    refs = [_ref(var, "var", op_type), _ref(accum, "accum", op_type)]
    g = _value(grad, var, "grad", op_type)
    _check_grad(g, var, op_type)
    inputs = [*refs, _value(lr, var, "lr", op_type), g, _value(momentum, var, "momentum", op_type)]
    return _create(op_type, var, inputs, name, use_nesterov=bool(use_nesterov))


def apply_adam(
    var: Any,
    m: Any,
    v: Any,
    beta1_power: Any,
    beta2_power: Any,
    lr: Any,
    beta1: Any,
    beta2: Any,
    epsilon: Any,
    grad: Any,
    use_nesterov: bool = False,
    name: str | None = None,
) -> Tensor:
    """Adam update, TensorFlow's formulas::

        lr_t = lr * sqrt(1 - beta2_power) / (1 - beta1_power)
        m = m + (grad - m) * (1 - beta1)
        v = v + (grad * grad - v) * (1 - beta2)
        var -= lr_t * m / (sqrt(v) + epsilon)

    ``m`` and ``v`` are Variables of ``var``'s shape; the other arguments scalars.
    """
    op_type = "ApplyAdam"
    refs = [_ref(var, "var", op_type), _ref(m, "m", op_type), _ref(v, "v", op_type)]
    g = _value(grad, var, "grad", op_type)
    _check_grad(g, var, op_type)
    scalars = {
        "beta1_power": beta1_power,
        "beta2_power": beta2_power,
        "lr": lr,
        "beta1": beta1,
        "beta2": beta2,
        "epsilon": epsilon,
    }
    values = [_value(value, var, what, op_type) for what, value in scalars.items()]
    return _create(op_type, var, [*refs, *values, g], name, use_nesterov=bool(use_nesterov))
