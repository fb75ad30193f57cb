"""Fused kernels on CuPy: a chain of elementwise ops as one ``cupy.ElementwiseKernel``.

Its one job is the GPU side of :class:`~daskgraph.kernels.fused.FusedKernel`: on a GPU worker a
fused chain is one CUDA kernel (one launch, one pass over memory) instead of a launch per op.
The kernel's body is the chain in C++, each step cast to the dtype NumPy's (and CuPy's) ufunc
gives it, as the CPU loop does (:func:`operation`), and NVRTC compiles it with
:data:`NVRTC_OPTIONS`: no contraction of ``x * y + z`` into one fused multiply-add (NVRTC's
default ``--fmad=true`` rounds it once where NumPy rounds twice), IEEE 754 division and square
root, subnormals kept. So ``+ - * /`` and ``sqrt`` give NumPy's and CuPy's op-by-op results bit
for bit (the transcendental functions of the JIT switches within ``RELAXED_RTOL``).

Rent or buy, as on the CPU: a chain's first call for given input dtypes runs op by op; its
second builds the kernel (CuPy compiles it at its first launch, and caches it on disk for the
next processes: in the ``cupy`` folder of daskgraph's cache folder, ``daskgraph.cache-dir``,
where the environment sets no ``CUPY_CACHE_DIR``, which CuPy reads at each compile;
:func:`~daskgraph.kernels.kernel_cache.configure_cupy_cache`). A chain CuPy cannot build or
run runs op by op from then on, and says why at
DEBUG (logger ``daskgraph.kernels.fused``).

>>> steps = (("m", "multiply", (0, 1)), ("a", "add", (2, 0)))
>>> print(operation(steps, 2, [np.dtype("float32")] * 2))
float t0 = (float)((x0 * x1));
float t1 = (float)((t0 + x0));
out = t1;
"""

from __future__ import annotations

import logging
import threading
from typing import Any

import numpy as np

from daskgraph.kernels import kernel_cache
from daskgraph.kernels.fusable import expression_of, step_dtypes

__all__ = ["NVRTC_OPTIONS", "call_on_cupy", "operation"]

logger = logging.getLogger("daskgraph.kernels.fused")

#: NVRTC's options for every fused kernel, NumPy's rounding: ``--fmad=false`` (no fused
#: multiply-add: ``x * y + z`` rounds after the product, as NumPy's two ufuncs do); the
#: others are NVRTC's defaults, stated so that nothing (no ``--use_fast_math``) changes them:
#: subnormals kept, not flushed to zero, and IEEE 754 round-to-nearest ``/`` and ``sqrt``.
NVRTC_OPTIONS = ("--fmad=false", "--ftz=false", "--prec-div=true", "--prec-sqrt=true")

#: C++ expressions where the loop's (Python) ones differ; the others are valid C++ as they are
_C_EXPRESSIONS = {
    "abs": "fabs({0})",
    "sqrt": "sqrt({0})",
    "logical_and": "({0} && {1})",
    "logical_or": "({0} || {1})",
    "logical_not": "(!{0})",
    "maximum": "(({0} > {1} || {0} != {0}) ? {0} : {1})",
    "minimum": "(({0} < {1} || {0} != {0}) ? {0} : {1})",
    "where": "({0} ? {1} : {2})",
    "relu": "(({0} > 0 || {0} != {0}) ? {0} : 0)",
    "exp": "exp({0})",
    "log": "log({0})",
    "tanh": "tanh({0})",
    "sin": "sin({0})",
    "cos": "cos({0})",
    "log1p": "log1p({0})",
    "expm1": "expm1({0})",
    # (the kernel's formula: exp never overflows)
    "sigmoid": (
        "({0} >= 0 ? 1 / (1 + exp(-fabs({0}))) : exp(-fabs({0})) * (1 / (1 + exp(-fabs({0})))))"
    ),
}
_C_TYPES = {"float32": "float", "float64": "double", "bool": "bool"}


def operation(steps: tuple, n_inputs: int, input_dtypes: list[np.dtype]) -> str | None:
    """The kernel's body for inputs of ``input_dtypes`` (``x0``, ``x1``, ...; the result
    ``out``), or None where a step would leave the fused dtypes."""
    dtypes = step_dtypes(steps, list(input_dtypes))
    return None if dtypes is None else _body(steps, n_inputs, dtypes)


def _body(steps: tuple, n_inputs: int, dtypes: list[np.dtype]) -> str:
    """The kernel's body, each step's result of ``dtypes``."""
    names = [f"x{i}" for i in range(n_inputs)]
    lines = []
    for k, (_, name, args) in enumerate(steps):
        template = _C_EXPRESSIONS.get(name) or expression_of(name)
        ctype = _C_TYPES[dtypes[k].name]
        expression = template.format(*[names[a] for a in args])
        lines.append(f"{ctype} t{k} = ({ctype})({expression});")
        names.append(f"t{k}")
    lines.append(f"out = t{len(steps) - 1};")
    return "\n".join(lines)


class _Kernels:
    """The process's CuPy kernels, by (chain, input dtypes): rent (the first call), then buy."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._kernels: dict[tuple, Any] = {}  # key -> kernel, or None (runs op by op)
        self._seen: set[tuple] = set()

    def lookup(self, xp: Any, kernel: Any, dtypes: list[np.dtype]) -> Any:
        key = (kernel.source, *dtypes)
        found = self._kernels.get(key, "")
        if found != "":
            return found
        with self._lock:
            if key not in self._seen:
                self._seen.add(key)
                return None
            steps = step_dtypes(kernel.steps, list(dtypes))
            built = None if steps is None else _build(xp, kernel, dtypes, steps)
            self._kernels[key] = built
            return built

    def drop(self, kernel: Any, dtypes: list[np.dtype]) -> None:
        """Run ``kernel`` on inputs of ``dtypes`` op by op from now on."""
        self._kernels[(kernel.source, *dtypes)] = None


def _build(xp: Any, kernel: Any, dtypes: list[np.dtype], steps: list[np.dtype]) -> Any:
    """The ``ElementwiseKernel`` of ``kernel`` for inputs of ``dtypes`` (its steps' results
    of ``steps``), or None where CuPy refuses it."""
    kernel_cache.configure_cupy_cache()  # (before CuPy compiles its first kernel here)
    body = _body(kernel.steps, kernel.n_inputs, steps)
    out = steps[-1]
    params = ", ".join(f"{d.name} x{i}" for i, d in enumerate(dtypes))
    name = "daskgraph_fused_" + "_".join(step[1] for step in kernel.steps)[:60]
    try:
        return xp.ElementwiseKernel(params, f"{out.name} out", body, name, options=NVRTC_OPTIONS)
    except Exception as exc:  # (a CuPy without ElementwiseKernel, a body it refuses)
        logger.debug("fused chain %r not built for CuPy: %s", kernel, exc)
        return None


_KERNELS = _Kernels()


def call_on_cupy(kernel: Any, xp: Any, inputs: tuple) -> Any:
    """The chain's result by one CuPy kernel, or None where there is none (yet) for such
    inputs (then the caller runs it op by op)."""
    args = [x if hasattr(x, "dtype") else np.asarray(x)[()] for x in inputs]
    dtypes = [np.dtype(x.dtype) for x in args]
    built = _KERNELS.lookup(xp, kernel, dtypes)
    if built is None:
        return None
    try:
        return built(*args)
    except Exception as exc:  # (it compiles at its first launch: a body NVRTC refuses)
        logger.debug("fused chain %r failed on CuPy, op by op from now on: %s", kernel, exc)
        _KERNELS.drop(kernel, dtypes)
        return None
