"""Training ops: the optimizers' in-place updates of a variable (TensorFlow's ``training_ops``).

Each op takes the variable (and its slot variables: momentum accumulator, Adam's moments) as
references and applies its whole update in one kernel call, holding the locks of those
variables (TensorFlow's ``use_locking``), so that concurrent steps (asynchronous towers)
interleave whole updates and lose none, while updates of other variables go on meanwhile.
The op outputs the variable's new value. The formulas are TensorFlow's
(``tensorflow/core/kernels/training_ops.cc``); as there, the ops have float kernels only.
The kernels are :mod:`daskgraph.kernels.training`'s (a worker loads them without this
module); Adam, Momentum, RMSProp, Adagrad and gradient descent update the variable and its
slots in place where nothing else holds them (:mod:`daskgraph.kernels.slot_updates`).

>>> import daskgraph as dg
>>> with dg.Graph().as_default():
...     w = dg.Variable([1.0, 2.0], name="w")
...     step = apply_gradient_descent(w, 0.5, dg.constant([2.0, 2.0]))
...     with dg.Session() as sess:
...         sess.run(w.initializer)
...         sess.run(step).tolist()
[0.0, 1.0]

More training ops: the in-place updates of Adagrad, RMSProp, Adadelta and FTRL.

As in :mod:`daskgraph.ops.training`, each op takes the variable and its slot variables as
references, applies its whole update in one kernel call under the variable store's update
lock, and outputs the variable's new value. The formulas are TensorFlow's
(``tensorflow/core/kernels/training_ops.cc``: ``ApplyAdagrad``, ``ApplyRMSProp``,
``ApplyCenteredRMSProp``, ``ApplyAdadelta``, ``ApplyFtrl``, ``ApplyFtrlV2``); float kernels only.

>>> import daskgraph as dg
>>> with dg.Graph().as_default():
...     w = dg.Variable([1.0, 2.0], name="w")
...     accum = dg.Variable([1.0, 1.0], name="accum")
...     step = apply_adagrad(w, accum, 0.5, dg.constant([0.0, 3.0]))
...     with dg.Session() as sess:
...         sess.run(dg.global_variables_initializer())
...         [round(float(v), 4) for v in sess.run(step)], sess.run(accum).tolist()
([1.0, 1.5257], [1.0, 10.0])
"""

from __future__ import annotations

from typing import Any

from daskgraph.framework import dtypes
from daskgraph.framework.gradient_registry import no_gradient
from daskgraph.framework.graph import Tensor, get_default_graph
from daskgraph.framework.op_registry import register
from daskgraph.kernels import training as kernels
from daskgraph.ops.array import convert_to_tensor
from daskgraph.ops.state import Variable

__all__ = ["apply_adam", "apply_gradient_descent", "apply_momentum"]

_FLOAT = dtypes.FLOATING


# -- kernels (daskgraph.kernels.training): the worker's, registered here by op type ------------
register(
    "ApplyGradientDescent",
    kernels.apply_gradient_descent,
    cpu=_FLOAT,
    gpu=_FLOAT,
    stateful=True,
    ref_inputs=(0,),
)
register(
    "ApplyMomentum",
    kernels.apply_momentum,
    cpu=_FLOAT,
    gpu=_FLOAT,
    stateful=True,
    ref_inputs=(0, 1),
)
register(
    "ApplyAdam", kernels.apply_adam, cpu=_FLOAT, gpu=_FLOAT, stateful=True, ref_inputs=(0, 1, 2)
)
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


# -- from training_more -------------------------------------------------------------------
__all__ += [
    "apply_adadelta",
    "apply_adagrad",
    "apply_centered_rms_prop",
    "apply_ftrl",
    "apply_rms_prop",
]


register(
    "ApplyAdagrad", kernels.apply_adagrad, cpu=_FLOAT, gpu=_FLOAT, stateful=True, ref_inputs=(0, 1)
)
register(
    "ApplyRMSProp",
    kernels.apply_rms_prop,
    cpu=_FLOAT,
    gpu=_FLOAT,
    stateful=True,
    ref_inputs=(0, 1, 2),
)
register(
    "ApplyCenteredRMSProp",
    kernels.apply_centered_rms_prop,
    cpu=_FLOAT,
    gpu=_FLOAT,
    stateful=True,
    ref_inputs=(0, 1, 2, 3),
)
register(
    "ApplyAdadelta",
    kernels.apply_adadelta,
    cpu=_FLOAT,
    gpu=_FLOAT,
    stateful=True,
    ref_inputs=(0, 1, 2),
)
register(
    "ApplyFtrl", kernels.apply_ftrl, cpu=_FLOAT, gpu=_FLOAT, stateful=True, ref_inputs=(0, 1, 2)
)
register(
    "ApplyFtrlV2", kernels.apply_ftrl, cpu=_FLOAT, gpu=_FLOAT, stateful=True, ref_inputs=(0, 1, 2)
)
for _op_type in (
    "ApplyAdagrad",
    "ApplyRMSProp",
    "ApplyCenteredRMSProp",
    "ApplyAdadelta",
    "ApplyFtrl",
    "ApplyFtrlV2",
):
    no_gradient(_op_type)  # updates, as Assign: nothing to differentiate


# -- builders -------------------------------------------------------------------------------------
def _build(
    op_type: str,
    var: Any,
    slots: dict[str, Any],
    scalars: dict[str, Any],
    grad: Any,
    grad_last: bool,
    name: str | None,
) -> Tensor:
    """The update op: refs of ``var`` and ``slots``, then the gradient and the scalars (the
    gradient after them when ``grad_last``), each checked against ``var``."""
    refs = [_ref(var, "var", op_type)] + [_ref(v, what, op_type) for what, v in slots.items()]
    g = _value(grad, var, "grad", op_type)
    _check_grad(g, var, op_type)
    values = [_value(value, var, what, op_type) for what, value in scalars.items()]
    inputs = [*refs, *values, g] if grad_last else [*refs, g, *values]
    return _create(op_type, var, inputs, name)


def apply_adagrad(var: Any, accum: Any, lr: Any, grad: Any, name: str | None = None) -> Tensor:
    """Adagrad update: ``accum += grad * grad; var -= lr * grad / sqrt(accum)``."""
    return _build("ApplyAdagrad", var, {"accum": accum}, {"lr": lr}, grad, True, name)


def apply_rms_prop(
    var: Any,
    ms: Any,
    mom: Any,
    lr: Any,
    rho: Any,
    momentum: Any,
    epsilon: Any,
    grad: Any,
    name: str | None = None,
) -> Tensor:
    """RMSProp update, TensorFlow's formulas::

    ms += (grad * grad - ms) * (1 - rho)
    mom = mom * momentum + lr * grad / sqrt(ms + epsilon)
    var -= mom
    """
    scalars = {"lr": lr, "rho": rho, "momentum": momentum, "epsilon": epsilon}
    slots = {"ms": ms, "mom": mom}
    return _build("ApplyRMSProp", var, slots, scalars, grad, True, name)


def apply_centered_rms_prop(
    var: Any,
    mg: Any,
    ms: Any,
    mom: Any,
    lr: Any,
    rho: Any,
    momentum: Any,
    epsilon: Any,
    grad: Any,
    name: str | None = None,
) -> Tensor:
    """Centered RMSProp update: as :func:`apply_rms_prop`, with the mean gradient ``mg``
    (``mg += (grad - mg) * (1 - rho)``) and ``sqrt(ms - mg * mg + epsilon)`` as denominator."""
    scalars = {"lr": lr, "rho": rho, "momentum": momentum, "epsilon": epsilon}
    slots = {"mg": mg, "ms": ms, "mom": mom}
    return _build("ApplyCenteredRMSProp", var, slots, scalars, grad, True, name)


def apply_adadelta(
    var: Any,
    accum: Any,
    accum_update: Any,
    lr: Any,
    rho: Any,
    epsilon: Any,
    grad: Any,
    name: str | None = None,
) -> Tensor:
    """Adadelta update, TensorFlow's formulas::

    accum = accum * rho + grad * grad * (1 - rho)
    update = sqrt(accum_update + epsilon) / sqrt(accum + epsilon) * grad
    accum_update = accum_update * rho + update * update * (1 - rho)
    var -= update * lr
    """
    slots = {"accum": accum, "accum_update": accum_update}
    scalars = {"lr": lr, "rho": rho, "epsilon": epsilon}
    return _build("ApplyAdadelta", var, slots, scalars, grad, True, name)


def apply_ftrl(
    var: Any,
    accum: Any,
    linear: Any,
    grad: Any,
    lr: Any,
    l1: Any,
    l2: Any,
    lr_power: Any,
    l2_shrinkage: Any = None,
    name: str | None = None,
) -> Tensor:
    """FTRL-proximal update (``ApplyFtrl``; ``ApplyFtrlV2`` with ``l2_shrinkage``)::

    g = grad + 2 * l2_shrinkage * var
    new_accum = accum + grad * grad
    linear += g - (new_accum ** -lr_power - accum ** -lr_power) / lr * var
    var = (clip(linear, -l1, l1) - linear) / (new_accum ** -lr_power / lr + 2 * l2)
    accum = new_accum
    """
    slots = {"accum": accum, "linear": linear}
    scalars = {"lr": lr, "l1": l1, "l2": l2}
    op_type = "ApplyFtrl"
    if l2_shrinkage is not None:
        op_type = "ApplyFtrlV2"
        scalars["l2_shrinkage"] = l2_shrinkage
    scalars["lr_power"] = lr_power
    return _build(op_type, var, slots, scalars, grad, False, name)
