"""Proximal training ops: the in-place updates of proximal gradient descent, proximal Adagrad
and Adagrad dual averaging, with L1 and L2 regularization.

As in :mod:`daskgraph.ops.training`, each op takes the variable and its slot variables as
references, applies its whole update in one kernel call under the variable store's update
lock, and outputs the variable's new value. The formulas are TensorFlow's
(``tensorflow/core/kernels/training_ops.cc``: ``ApplyProximalGradientDescent``,
``ApplyProximalAdagrad``, ``ApplyAdagradDA``); float kernels only.

>>> import daskgraph as dg
>>> with dg.Graph().as_default():
...     w = dg.Variable([1.0, -0.05], name="w")
...     step = apply_proximal_gradient_descent(w, 0.5, 0.2, 0.0, dg.constant([1.0, 0.0]))
...     with dg.Session() as sess:
...         sess.run(w.initializer)
...         sess.run(step).tolist()
[0.4000000059604645, -0.0]
"""

from __future__ import annotations

from typing import Any

from daskgraph.framework import dtypes
from daskgraph.framework.gradient_registry import no_gradient
from daskgraph.framework.graph import Tensor
from daskgraph.framework.op_registry import register
from daskgraph.kernels import training as kernels
from daskgraph.ops.array import convert_to_tensor
from daskgraph.ops.training import _check_grad, _create, _ref, _value

__all__ = ["apply_adagrad_da", "apply_proximal_adagrad", "apply_proximal_gradient_descent"]

_FLOAT = dtypes.FLOATING


# -- kernels (daskgraph.kernels.training): the worker's, registered here by op type ------------
_DA_DTYPES = _FLOAT | {dtypes.int64}  # the global step input
register(
    "ApplyProximalGradientDescent",
    kernels.apply_proximal_gradient_descent,
    cpu=_FLOAT,
    gpu=_FLOAT,
    stateful=True,
    ref_inputs=(0,),
)
register(
    "ApplyProximalAdagrad",
    kernels.apply_proximal_adagrad,
    cpu=_FLOAT,
    gpu=_FLOAT,
    stateful=True,
    ref_inputs=(0, 1),
)
register(
    "ApplyAdagradDA",
    kernels.apply_adagrad_da,
    cpu=_DA_DTYPES,
    gpu=_DA_DTYPES,
    stateful=True,
    ref_inputs=(0, 1, 2),
)
for _op_type in ("ApplyProximalGradientDescent", "ApplyProximalAdagrad", "ApplyAdagradDA"):
    no_gradient(_op_type)  # updates, as Assign: nothing to differentiate


# -- builders -------------------------------------------------------------------------------------
def _scalars(var: Any, op_type: str, **scalars: Any) -> list[Tensor]:
    return [_value(value, var, what, op_type) for what, value in scalars.items()]


def _grad(grad: Any, var: Any, op_type: str) -> Tensor:
    g = _value(grad, var, "grad", op_type)
    _check_grad(g, var, op_type)
    return g


def apply_proximal_gradient_descent(
    var: Any, alpha: Any, l1: Any, l2: Any, delta: Any, name: str | None = None
) -> Tensor:
    """Proximal gradient descent, TensorFlow's formulas::

    prox = var - alpha * delta
    var = sign(prox) * max(|prox| - alpha * l1, 0) / (1 + alpha * l2)
    """
    op_type = "ApplyProximalGradientDescent"
    ref = _ref(var, "var", op_type)
    inputs = [ref, *_scalars(var, op_type, alpha=alpha, l1=l1, l2=l2), _grad(delta, var, op_type)]
    return _create(op_type, var, inputs, name)


def apply_proximal_adagrad(
    var: Any, accum: Any, lr: Any, l1: Any, l2: Any, grad: Any, name: str | None = None
) -> Tensor:
    """Proximal Adagrad, TensorFlow's formulas::

    accum += grad * grad
    rate = lr / sqrt(accum)
    prox = var - rate * grad
    var = sign(prox) * max(|prox| - rate * l1, 0) / (1 + rate * l2)
    """
    op_type = "ApplyProximalAdagrad"
    refs = [_ref(var, "var", op_type), _ref(accum, "accum", op_type)]
    scalars = _scalars(var, op_type, lr=lr, l1=l1, l2=l2)
    return _create(op_type, var, [*refs, *scalars, _grad(grad, var, op_type)], name)


def apply_adagrad_da(
    var: Any,
    gradient_accumulator: Any,
    gradient_squared_accumulator: Any,
    grad: Any,
    lr: Any,
    l1: Any,
    l2: Any,
    global_step: Any,
    name: str | None = None,
) -> Tensor:
    """Adagrad dual averaging, TensorFlow's formulas (``global_step``: an int64 scalar)::

    g_acc += grad
    gg_acc += grad * grad
    var = -lr * sign(g_acc) * max(|g_acc| - l1 * global_step, 0)
          / (l2 * global_step * lr + sqrt(gg_acc))
    """
    op_type = "ApplyAdagradDA"
    refs = [
        _ref(var, "var", op_type),
        _ref(gradient_accumulator, "gradient_accumulator", op_type),
        _ref(gradient_squared_accumulator, "gradient_squared_accumulator", op_type),
    ]
    step = convert_to_tensor(global_step, dtype=dtypes.int64)
    if step.dtype != dtypes.int64:
        raise TypeError(f"{op_type}: global_step must be int64; got {step.dtype.name}")
    scalars = _scalars(var, op_type, lr=lr, l1=l1, l2=l2)
    return _create(op_type, var, [*refs, _grad(grad, var, op_type), *scalars, step], name)
