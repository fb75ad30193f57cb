"""The slot optimizers' compiled loops: one pass updating a variable and its slots.

Each loop reads, element by element, the gradient, the variable's and its slots' old values,
and writes their new values to its output arrays, which may be the old arrays themselves
(the element is read before it is written): so one loop updates in place, or into new arrays.
Every loop computes TensorFlow's formulas (``training_ops.cc``) in the order and the dtype of
the NumPy calls of :mod:`daskgraph.kernels.training` (all arrays and scalars of the
variable's dtype), compiled without fast math (no contraction into fused multiply-adds), so
its bits are the NumPy calls' bits.

This module imports Numba: only :mod:`daskgraph.kernels.slot_updates`' compiler thread
imports it, the first time a loop is needed. The loops are module-level functions compiled
with Numba's on-disk cache (``cache=True``): a second process loads them instead of
compiling them.

>>> import numpy as np
>>> var, accum = np.ones(3, np.float32), np.zeros(3, np.float32)
>>> grad = np.full(3, 2.0, np.float32)
>>> adagrad(var, accum, grad, np.float32(0.5), var, accum)  # in place
>>> var.tolist(), accum.tolist()
([0.5, 0.5, 0.5], [4.0, 4.0, 4.0])
"""

from __future__ import annotations

import numba
import numpy as np

__all__ = [
    "adagrad",
    "adam",
    "adam_nesterov",
    "centered_rms_prop",
    "gradient_descent",
    "momentum",
    "momentum_nesterov",
    "rms_prop",
]

_jit = numba.njit(nogil=True, cache=True, fastmath=False, error_model="numpy")


@_jit
def gradient_descent(var, grad, alpha, var_out):  # pragma: no cover (compiled)
    """``var - alpha * delta``."""
    for i in range(var.size):
        var_out[i] = var[i] - alpha * grad[i]


@_jit
def momentum(var, accum, grad, lr, mom, var_out, accum_out):  # pragma: no cover (compiled)
    """``accum * momentum + grad``; ``var - lr * accum``."""
    for i in range(var.size):
        a = accum[i] * mom + grad[i]
        accum_out[i] = a
        var_out[i] = var[i] - lr * a


@_jit
def momentum_nesterov(var, accum, grad, lr, mom, var_out, accum_out):  # pragma: no cover
    """``accum * momentum + grad``; ``var - (grad * lr + accum * momentum * lr)``."""
    for i in range(var.size):
        g = grad[i]
        a = accum[i] * mom + g
        accum_out[i] = a
        var_out[i] = var[i] - (g * lr + a * mom * lr)


@_jit
def adam(var, m, v, grad, lr_t, c1, c2, eps, var_out, m_out, v_out):  # pragma: no cover
    """``m + (grad - m) * c1``; ``v + (grad * grad - v) * c2``;
    ``var - m * lr_t / (sqrt(v) + epsilon)`` (``c1 = 1 - beta1``, ``c2 = 1 - beta2``)."""
    for i in range(var.size):
        g = grad[i]
        mi = m[i]
        vi = v[i]
        mi = mi + (g - mi) * c1
        vi = vi + (g * g - vi) * c2
        m_out[i] = mi
        v_out[i] = vi
        var_out[i] = var[i] - mi * lr_t / (np.sqrt(vi) + eps)


@_jit
def adam_nesterov(
    var, m, v, grad, lr_t, beta1, c1, c2, eps, var_out, m_out, v_out
):  # pragma: no cover
    """As :func:`adam`, the step ``(m * beta1 + c1 * grad) * lr_t / (sqrt(v) + epsilon)``."""
    for i in range(var.size):
        g = grad[i]
        mi = m[i]
        vi = v[i]
        mi = mi + (g - mi) * c1
        vi = vi + (g * g - vi) * c2
        m_out[i] = mi
        v_out[i] = vi
        var_out[i] = var[i] - (mi * beta1 + c1 * g) * lr_t / (np.sqrt(vi) + eps)


@_jit
def adagrad(var, accum, grad, lr, var_out, accum_out):  # pragma: no cover (compiled)
    """``accum + grad * grad``; ``var - grad * lr / sqrt(accum)``."""
    for i in range(var.size):
        g = grad[i]
        a = accum[i] + g * g
        accum_out[i] = a
        var_out[i] = var[i] - g * lr / np.sqrt(a)


@_jit
def rms_prop(
    var, ms, mom, grad, lr, c_rho, momentum, eps, var_out, ms_out, mom_out
):  # pragma: no cover
    """``ms + (grad * grad - ms) * (1 - rho)``;
    ``mom * momentum + (grad * lr) / sqrt(ms + epsilon)``; ``var - mom``."""
    for i in range(var.size):
        g = grad[i]
        s = ms[i]
        s = s + (g * g - s) * c_rho
        n = mom[i] * momentum + (g * lr) / np.sqrt(s + eps)
        ms_out[i] = s
        mom_out[i] = n
        var_out[i] = var[i] - n


@_jit
def centered_rms_prop(
    var, mg, ms, mom, grad, lr, c_rho, momentum, eps, var_out, mg_out, ms_out, mom_out
):  # pragma: no cover (compiled)
    """As :func:`rms_prop`, with ``mg + (grad - mg) * (1 - rho)`` and the denominator
    ``sqrt((ms - mg * mg) + epsilon)``."""
    for i in range(var.size):
        g = grad[i]
        s = ms[i]
        a = mg[i]
        s = s + (g * g - s) * c_rho
        a = a + (g - a) * c_rho
        n = mom[i] * momentum + (g * lr) / np.sqrt((s - a * a) + eps)
        ms_out[i] = s
        mg_out[i] = a
        mom_out[i] = n
        var_out[i] = var[i] - n
