"""More training ops: the in-place updates of Adagrad, RMSProp, Adadelta and FTRL.

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

from daskgraph import dtypes
from daskgraph.gradients import no_gradient
from daskgraph.graph import Tensor
from daskgraph.ops.registry import register
from daskgraph.ops.training import _check_grad, _create, _ref, _updated, _value

__all__ = [
    "apply_adadelta",
    "apply_adagrad",
    "apply_centered_rms_prop",
    "apply_ftrl",
    "apply_rms_prop",
]

_FLOAT = dtypes.FLOATING


# -- kernels: ``store`` is the worker's variable store; refs name the variables in it --------------
def _apply_adagrad(xp, store, var, accum, lr, grad):
    new_accum = store.read(accum.name) + grad * grad
    _updated(xp, store, accum, new_accum)
    return _updated(xp, store, var, store.read(var.name) - grad * lr / xp.sqrt(new_accum))


def _apply_rms_prop(xp, store, var, ms, mom, lr, rho, momentum, epsilon, grad):
    old_ms = store.read(ms.name)
    new_ms = old_ms + (grad * grad - old_ms) * (1 - rho)
    new_mom = store.read(mom.name) * momentum + (grad * lr) / xp.sqrt(new_ms + epsilon)
    _updated(xp, store, ms, new_ms)
    _updated(xp, store, mom, new_mom)
    return _updated(xp, store, var, store.read(var.name) - new_mom)


def _apply_centered_rms_prop(xp, store, var, mg, ms, mom, lr, rho, momentum, epsilon, grad):
    old_ms, old_mg = store.read(ms.name), store.read(mg.name)
    new_ms = old_ms + (grad * grad - old_ms) * (1 - rho)
    new_mg = old_mg + (grad - old_mg) * (1 - rho)
    denominator = (new_ms - new_mg * new_mg) + epsilon
    new_mom = store.read(mom.name) * momentum + (grad * lr) / xp.sqrt(denominator)
    _updated(xp, store, ms, new_ms)
    _updated(xp, store, mg, new_mg)
    _updated(xp, store, mom, new_mom)
    return _updated(xp, store, var, store.read(var.name) - new_mom)


def _apply_adadelta(xp, store, var, accum, accum_update, lr, rho, epsilon, grad):
    new_accum = store.read(accum.name) * rho + grad * grad * (1 - rho)
    old_update = store.read(accum_update.name)
    update = xp.sqrt(old_update + epsilon) / xp.sqrt(new_accum + epsilon) * grad
    _updated(xp, store, accum, new_accum)
    _updated(xp, store, accum_update, old_update * rho + update * update * (1 - rho))
    return _updated(xp, store, var, store.read(var.name) - update * lr)


def _apply_ftrl(xp, store, var, accum, linear, grad, lr, l1, l2, *rest):
    """``ApplyFtrl`` (``rest``: ``lr_power``) and ``ApplyFtrlV2`` (``l2_shrinkage, lr_power``)."""
    *shrinkage, lr_power = rest
    value = store.read(var.name)
    shrunk = grad + 2 * shrinkage[0] * value if shrinkage else grad
    old_accum = store.read(accum.name)
    new_accum = old_accum + grad * grad
    if float(lr_power) == -0.5:
        new_power, old_power = xp.sqrt(new_accum), xp.sqrt(old_accum)
    else:
        new_power, old_power = xp.power(new_accum, -lr_power), xp.power(old_accum, -lr_power)
    new_linear = store.read(linear.name) + shrunk - (new_power - old_power) / lr * value
    adjusted = xp.maximum(xp.minimum(new_linear, l1), -l1) - new_linear
    _updated(xp, store, linear, new_linear)
    _updated(xp, store, accum, new_accum)
    return _updated(xp, store, var, adjusted / (new_power / lr + 2 * l2))


register("ApplyAdagrad", _apply_adagrad, cpu=_FLOAT, gpu=_FLOAT, stateful=True, ref_inputs=(0, 1))
register(
    "ApplyRMSProp", _apply_rms_prop, cpu=_FLOAT, gpu=_FLOAT, stateful=True, ref_inputs=(0, 1, 2)
)
register(
    "ApplyCenteredRMSProp",
    _apply_centered_rms_prop,
    cpu=_FLOAT,
    gpu=_FLOAT,
    stateful=True,
    ref_inputs=(0, 1, 2, 3),
)
register(
    "ApplyAdadelta", _apply_adadelta, cpu=_FLOAT, gpu=_FLOAT, stateful=True, ref_inputs=(0, 1, 2)
)
register("ApplyFtrl", _apply_ftrl, cpu=_FLOAT, gpu=_FLOAT, stateful=True, ref_inputs=(0, 1, 2))
register("ApplyFtrlV2", _apply_ftrl, cpu=_FLOAT, gpu=_FLOAT, stateful=True, ref_inputs=(0, 1, 2))
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
