"""The slot optimizers' compiled loops: one pass updating a variable and its slots.

Each loop reads, element by element, the gradient and the variable's and its slots' old
values, and writes their new values over the old ones, in place. Each array is passed once:
LLVM's vector loop, which checks at run time that no two arrays overlap, then runs (an
array passed as both input and output overlaps itself, and got the scalar loop: 2.5 times
slower for Adagrad over 10M float32).
Every loop computes TensorFlow's formulas (``training_ops.cc``) in the order and the dtype of
the NumPy calls of :mod:`daskgraph.kernels.training` (all arrays and scalars of the
variable's dtype), compiled without fast math (no contraction into fused multiply-adds), so
its bits are the NumPy calls' bits.

Each update is one function of an element's values (inlined into its loop); a large array's
loop runs in pieces on the worker's threads (:mod:`daskgraph.kernels.split_loops`: the loops
hold no GIL), each piece the same bits as the whole loop there. This module imports Numba: only
:mod:`daskgraph.kernels.slot_updates`' compiler thread imports it, the first time a loop is
needed. The loops are module-level functions compiled with Numba's on-disk cache
(``cache=True``), its files in daskgraph's cache folder
(:func:`~daskgraph.kernels.kernel_cache.install_locator`): a second process loads them instead
of compiling them.

>>> import numpy as np
>>> var, accum = np.ones(3, np.float32), np.zeros(3, np.float32)
>>> grad = np.full(3, 2.0, np.float32)
>>> adagrad(var, accum, grad, np.float32(0.5))
>>> var.tolist(), accum.tolist()
([0.5, 0.5, 0.5], [4.0, 4.0, 4.0])
"""

from __future__ import annotations

import numba
import numpy as np

from daskgraph.kernels.kernel_cache import install_locator

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

install_locator()  # (Numba's cache files in daskgraph's cache folder: kernel_cache)
_FLAGS = {"nogil": True, "cache": True, "fastmath": False, "error_model": "numpy"}
_element = numba.njit(inline="always", **_FLAGS)
_serial = numba.njit(**_FLAGS)


# -- one element's update: (the variable's new value, the slots' new values) ----------------------
@_element
def _gradient_descent(w, g, alpha):  # pragma: no cover (compiled)
    return w - alpha * g


@_element
def _momentum(w, a, g, lr, mom):  # pragma: no cover (compiled)
    a = a * mom + g
    return w - lr * a, a


@_element
def _momentum_nesterov(w, a, g, lr, mom):  # pragma: no cover (compiled)
    a = a * mom + g
    return w - (g * lr + a * mom * lr), a


@_element
def _adam(w, m, v, g, lr_t, c1, c2, eps):  # pragma: no cover (compiled)
    m = m + (g - m) * c1
    v = v + (g * g - v) * c2
    return w - m * lr_t / (np.sqrt(v) + eps), m, v


@_element
def _adam_nesterov(w, m, v, g, lr_t, beta1, c1, c2, eps):  # pragma: no cover (compiled)
    m = m + (g - m) * c1
    v = v + (g * g - v) * c2
    return w - (m * beta1 + c1 * g) * lr_t / (np.sqrt(v) + eps), m, v


@_element
def _adagrad(w, a, g, lr):  # pragma: no cover (compiled)
    a = a + g * g
    return w - g * lr / np.sqrt(a), a


@_element
def _rms_prop(w, ms, mom, g, lr, c_rho, momentum, eps):  # pragma: no cover (compiled)
    ms = ms + (g * g - ms) * c_rho
    mom = mom * momentum + (g * lr) / np.sqrt(ms + eps)
    return w - mom, ms, mom


@_element
def _centered_rms_prop(w, mg, ms, mom, g, lr, c_rho, momentum, eps):  # pragma: no cover
    ms = ms + (g * g - ms) * c_rho
    mg = mg + (g - mg) * c_rho
    mom = mom * momentum + (g * lr) / np.sqrt((ms - mg * mg) + eps)
    return w - mom, mg, ms, mom


# -- the loops: the variable and its slots (updated in place), the gradient, the scalars -------
@_serial
def gradient_descent(var, grad, alpha):  # pragma: no cover (compiled)
    """``var -= alpha * delta``."""
    for i in range(var.size):
        var[i] = _gradient_descent(var[i], grad[i], alpha)


@_serial
def momentum(var, accum, grad, lr, mom):  # pragma: no cover (compiled)
    """``accum = accum * momentum + grad``; ``var -= lr * accum``."""
    for i in range(var.size):
        var[i], accum[i] = _momentum(var[i], accum[i], grad[i], lr, mom)


@_serial
def momentum_nesterov(var, accum, grad, lr, mom):  # pragma: no cover (compiled)
    """``accum = accum * momentum + grad``; ``var -= grad * lr + accum * momentum * lr``."""
    for i in range(var.size):
        var[i], accum[i] = _momentum_nesterov(var[i], accum[i], grad[i], lr, mom)


@_serial
def adam(var, m, v, grad, lr_t, c1, c2, eps):  # pragma: no cover (compiled)
    """``m += (grad - m) * c1``; ``v += (grad * grad - v) * c2``;
    ``var -= m * lr_t / (sqrt(v) + epsilon)`` (``c1 = 1 - beta1``, ``c2 = 1 - beta2``)."""
    for i in range(var.size):
        var[i], m[i], v[i] = _adam(var[i], m[i], v[i], grad[i], lr_t, c1, c2, eps)


@_serial
def adam_nesterov(var, m, v, grad, lr_t, b1, c1, c2, eps):  # pragma: no cover (compiled)
    """As :func:`adam`, the step ``(m * beta1 + c1 * grad) * lr_t / (sqrt(v) + epsilon)``."""
    for i in range(var.size):
        var[i], m[i], v[i] = _adam_nesterov(var[i], m[i], v[i], grad[i], lr_t, b1, c1, c2, eps)


@_serial
def adagrad(var, accum, grad, lr):  # pragma: no cover (compiled)
    """``accum += grad * grad``; ``var -= grad * lr / sqrt(accum)``."""
    for i in range(var.size):
        var[i], accum[i] = _adagrad(var[i], accum[i], grad[i], lr)


@_serial
def rms_prop(var, ms, mom, grad, lr, c_rho, momentum, eps):  # pragma: no cover (compiled)
    """``ms += (grad * grad - ms) * (1 - rho)``;
    ``mom = mom * momentum + (grad * lr) / sqrt(ms + epsilon)``; ``var -= mom``."""
    for i in range(var.size):
        var[i], ms[i], mom[i] = _rms_prop(var[i], ms[i], mom[i], grad[i], lr, c_rho, momentum, eps)


@_serial
def centered_rms_prop(var, mg, ms, mom, grad, lr, c_rho, momentum, eps):  # pragma: no cover
    """As :func:`rms_prop`, with ``mg += (grad - mg) * (1 - rho)`` and the denominator
    ``sqrt((ms - mg * mg) + epsilon)``."""
    for i in range(var.size):
        var[i], mg[i], ms[i], mom[i] = _centered_rms_prop(
            var[i], mg[i], ms[i], mom[i], grad[i], lr, c_rho, momentum, eps
        )
