"""The optimizers' kernels: the updates of a variable and its slots (TensorFlow's
``training_ops``), as a worker runs them.

Each kernel is called ``kernel(xp, store, *inputs, **attrs)``: ``store`` is the worker's
variable store, the variable and its slots come as references (their names in it), the
hyperparameters and the gradient as values. It applies its whole update under the locks of
the variables it updates (the caller's :meth:`~daskgraph.runtime.worker.worker_state.
VariableStore.apply_once`) and returns the variable's new value. The formulas are
TensorFlow's (``tensorflow/core/kernels/training_ops.cc``), computed as NumPy (or CuPy) ops
one by one; with ``daskgraph.fusion`` on, Adam, Momentum, RMSProp, Adagrad and gradient
descent over float32 and float64 NumPy arrays are one pass that writes the variable and its
slots in place where nothing else holds them (:mod:`daskgraph.kernels.slot_updates`), with
the same bits. The graph builders and the ops' registration are :mod:`daskgraph.ops.training`'s
and :mod:`daskgraph.ops.training_proximal`'s.

>>> import numpy as np
>>> from daskgraph.ops.state import VariableRef
>>> from daskgraph.runtime.worker.worker_state import VariableStore
>>> store = VariableStore()
>>> store.assign("w", np.array([1.0, 2.0]))
>>> apply_gradient_descent(np, store, VariableRef("w"), 0.5, np.array([2.0, 2.0])).tolist()
[0.0, 1.0]
"""

from __future__ import annotations

from typing import Any

import dask.config
import numpy as np

from daskgraph.kernels import slot_updates

__all__ = [
    "apply_adadelta",
    "apply_adagrad",
    "apply_adagrad_da",
    "apply_adam",
    "apply_centered_rms_prop",
    "apply_ftrl",
    "apply_gradient_descent",
    "apply_momentum",
    "apply_proximal_adagrad",
    "apply_proximal_gradient_descent",
    "apply_rms_prop",
]


def updated(xp: Any, store: Any, ref: Any, value: Any) -> Any:
    """Store ``value`` (in the variable's dtype) as variable ``ref``'s; returns it."""
    old = store.read(ref.name)
    value = xp.asarray(value).astype(old.dtype, copy=False)
    store.assign(ref.name, value)
    return value


def _in_place(xp: Any, store: Any, kind: str, refs: tuple, grad: Any, scalars: tuple) -> Any:
    """The update ``kind`` in one pass (:func:`daskgraph.kernels.slot_updates.update`), or
    None where it runs as NumPy's ops one by one (not NumPy, ``daskgraph.fusion`` off, or an
    update the pass does not apply to)."""
    if xp is not np or not dask.config.get("daskgraph.fusion"):
        return None
    return slot_updates.update(store, kind, tuple(r.name for r in refs), grad, scalars)


def apply_gradient_descent(xp, store, var, alpha, delta):
    """``var -= alpha * delta``."""
    new = _in_place(xp, store, "gradient_descent", (var,), delta, (alpha,))
    if new is not None:
        return new
    return updated(xp, store, var, store.read(var.name) - alpha * delta)


def apply_momentum(xp, store, var, accum, lr, grad, momentum, *, use_nesterov):
    """``accum = accum * momentum + grad``; ``var -= lr * accum`` (Nesterov:
    ``var -= grad * lr + accum * momentum * lr``)."""
    kind = "momentum_nesterov" if use_nesterov else "momentum"
    new = _in_place(xp, store, kind, (var, accum), grad, (lr, momentum))
    if new is not None:
        return new
    new_accum = store.read(accum.name) * momentum + grad
    if use_nesterov:
        step = grad * lr + new_accum * momentum * lr
    else:
        step = lr * new_accum
    updated(xp, store, accum, new_accum)
    return updated(xp, store, var, store.read(var.name) - step)


def apply_adam(
    xp, store, var, m, v, beta1_power, beta2_power, lr, beta1, beta2, epsilon, grad, *, use_nesterov
):
    """Adam: ``m += (grad - m) * (1 - beta1)``; ``v += (grad * grad - v) * (1 - beta2)``;
    ``var -= lr_t * m / (sqrt(v) + epsilon)``."""
    lr_t = lr * xp.sqrt(1 - beta2_power) / (1 - beta1_power)
    c1, c2 = 1 - beta1, 1 - beta2
    if use_nesterov:
        new = _in_place(
            xp, store, "adam_nesterov", (var, m, v), grad, (lr_t, beta1, c1, c2, epsilon)
        )
    else:
        new = _in_place(xp, store, "adam", (var, m, v), grad, (lr_t, c1, c2, epsilon))
    if new is not None:
        return new
    old_m = store.read(m.name)
    old_v = store.read(v.name)
    new_m = old_m + (grad - old_m) * c1
    new_v = old_v + (grad * grad - old_v) * c2
    if use_nesterov:
        step = (new_m * beta1 + c1 * grad) * lr_t / (xp.sqrt(new_v) + epsilon)
    else:
        step = new_m * lr_t / (xp.sqrt(new_v) + epsilon)
    updated(xp, store, m, new_m)
    updated(xp, store, v, new_v)
    return updated(xp, store, var, store.read(var.name) - step)


def apply_adagrad(xp, store, var, accum, lr, grad):
    """``accum += grad * grad``; ``var -= grad * lr / sqrt(accum)``."""
    new = _in_place(xp, store, "adagrad", (var, accum), grad, (lr,))
    if new is not None:
        return new
    new_accum = store.read(accum.name) + grad * grad
    updated(xp, store, accum, new_accum)
    return updated(xp, store, var, store.read(var.name) - grad * lr / xp.sqrt(new_accum))


def apply_rms_prop(xp, store, var, ms, mom, lr, rho, momentum, epsilon, grad):
    """``ms += (grad * grad - ms) * (1 - rho)``;
    ``mom = mom * momentum + (grad * lr) / sqrt(ms + epsilon)``; ``var -= mom``."""
    c_rho = 1 - rho
    new = _in_place(xp, store, "rms_prop", (var, ms, mom), grad, (lr, c_rho, momentum, epsilon))
    if new is not None:
        return new
    old_ms = store.read(ms.name)
    new_ms = old_ms + (grad * grad - old_ms) * c_rho
    new_mom = store.read(mom.name) * momentum + (grad * lr) / xp.sqrt(new_ms + epsilon)
    updated(xp, store, ms, new_ms)
    updated(xp, store, mom, new_mom)
    return updated(xp, store, var, store.read(var.name) - new_mom)


def apply_centered_rms_prop(xp, store, var, mg, ms, mom, lr, rho, momentum, epsilon, grad):
    """As :func:`apply_rms_prop`, with ``mg += (grad - mg) * (1 - rho)`` and the denominator
    ``sqrt((ms - mg * mg) + epsilon)``."""
    c_rho = 1 - rho
    scalars = (lr, c_rho, momentum, epsilon)
    new = _in_place(xp, store, "centered_rms_prop", (var, mg, ms, mom), grad, scalars)
    if new is not None:
        return new
    old_ms, old_mg = store.read(ms.name), store.read(mg.name)
    new_ms = old_ms + (grad * grad - old_ms) * c_rho
    new_mg = old_mg + (grad - old_mg) * c_rho
    denominator = (new_ms - new_mg * new_mg) + epsilon
    new_mom = store.read(mom.name) * momentum + (grad * lr) / xp.sqrt(denominator)
    updated(xp, store, ms, new_ms)
    updated(xp, store, mg, new_mg)
    updated(xp, store, mom, new_mom)
    return updated(xp, store, var, store.read(var.name) - new_mom)


def apply_adadelta(xp, store, var, accum, accum_update, lr, rho, epsilon, grad):
    """Adadelta: ``accum = accum * rho + grad * grad * (1 - rho)``; the update
    ``sqrt(accum_update + epsilon) / sqrt(accum + epsilon) * grad``; ``accum_update`` its
    running square; ``var -= update * lr``."""
    new_accum = store.read(accum.name) * rho + grad * grad * (1 - rho)
    old_update = store.read(accum_update.name)
    update = xp.sqrt(old_update + epsilon) / xp.sqrt(new_accum + epsilon) * grad
    updated(xp, store, accum, new_accum)
    updated(xp, store, accum_update, old_update * rho + update * update * (1 - rho))
    return updated(xp, store, var, store.read(var.name) - update * lr)


def apply_ftrl(xp, store, var, accum, linear, grad, lr, l1, l2, *rest):
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
    updated(xp, store, linear, new_linear)
    updated(xp, store, accum, new_accum)
    return updated(xp, store, var, adjusted / (new_power / lr + 2 * l2))


def _shrink(xp, prox, lr, l1, l2):
    """The proximal step of L1 then L2: soft-threshold by ``lr * l1``, scale by
    ``1 / (1 + lr * l2)``."""
    if l1 > 0:
        prox = xp.sign(prox) * xp.maximum(xp.abs(prox) - lr * l1, 0)
    return prox / (1 + lr * l2)


def apply_proximal_gradient_descent(xp, store, var, alpha, l1, l2, delta):
    """``var = shrink(var - alpha * delta)`` (:func:`_shrink`)."""
    prox = store.read(var.name) - alpha * delta
    return updated(xp, store, var, _shrink(xp, prox, alpha, l1, l2))


def apply_proximal_adagrad(xp, store, var, accum, lr, l1, l2, grad):
    """``accum += grad * grad``; ``var = shrink(var - grad * lr / sqrt(accum))``."""
    new_accum = store.read(accum.name) + grad * grad
    rate = lr / xp.sqrt(new_accum)
    prox = store.read(var.name) - grad * rate
    updated(xp, store, accum, new_accum)
    return updated(xp, store, var, _shrink(xp, prox, rate, l1, l2))


def apply_adagrad_da(xp, store, var, g_acc, gg_acc, grad, lr, l1, l2, global_step):
    """Adagrad dual averaging: the accumulated gradient and its square, then the variable
    from them (TensorFlow's ``ApplyAdagradDA``)."""
    new_g = store.read(g_acc.name) + grad
    new_gg = store.read(gg_acc.name) + grad * grad
    step = xp.asarray(global_step).astype(new_g.dtype)
    denominator = l2 * step * lr + xp.sqrt(new_gg)
    if l1 > 0:
        value = -lr * xp.sign(new_g) * xp.maximum(xp.abs(new_g) - l1 * step, 0) / denominator
    else:
        value = -lr * new_g / denominator
    updated(xp, store, g_acc, new_g)
    updated(xp, store, gg_acc, new_gg)
    return updated(xp, store, var, value)
