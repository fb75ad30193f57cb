"""What fuses: the functions a fused chain may hold, their one-element expressions, and the
dtype each step computes in.

Its one job is those tables and rules, shared by the CPU's compiled loops
(:mod:`daskgraph.kernels.fused`) and CuPy's kernels (:mod:`daskgraph.kernels.fused_cuda`):
:data:`FUSABLE` (NumPy's exactly rounded functions and selections, fused by default),
:data:`RELAXED` (transcendental functions, fused under TensorFlow's JIT switches), and
daskgraph's own elementwise kernels registered with :func:`fusable_kernel`.

>>> step_dtypes((("m", "multiply", (0, 1)), ("c", "greater", (2, 0))),
...             [np.dtype("float32"), np.dtype("float64")])
[dtype('float64'), dtype('bool')]
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = [
    "BOUNDED",
    "CARRIED_ULPS",
    "DTYPES",
    "FUSABLE",
    "KERNELS",
    "KERNEL_NAMES",
    "RELAXED",
    "RELAXED_RTOL",
    "RELAXED_ULPS",
    "expression_of",
    "fusable_kernel",
    "step_dtypes",
]

#: NumPy functions a fused chain may hold, with their expression in the compiled loop
FUSABLE: dict[str, str] = {
    "add": "({0} + {1})",
    "subtract": "({0} - {1})",
    "multiply": "({0} * {1})",
    "divide": "({0} / {1})",
    "negative": "(-{0})",
    "abs": "abs({0})",
    "square": "({0} * {0})",
    "sqrt": "np.sqrt({0})",
    "less": "({0} < {1})",
    "less_equal": "({0} <= {1})",
    "greater": "({0} > {1})",
    "greater_equal": "({0} >= {1})",
    "equal": "({0} == {1})",
    "not_equal": "({0} != {1})",
    "logical_and": "({0} and {1})",
    "logical_or": "({0} or {1})",
    "logical_not": "(not {0})",
    # NumPy's maximum and minimum: the second operand where the two compare equal (so
    # maximum(-0.0, 0.0) is 0.0), a NaN where either is one
    "maximum": "({0} if ({0} > {1} or {0} != {0}) else {1})",
    "minimum": "({0} if ({0} < {1} or {0} != {0}) else {1})",
    "where": "({1} if {0} else {2})",
    "reciprocal": "(1 / {0})",
}
#: functions fused only under TensorFlow's JIT switches (``global_jit_level``,
#: ``jit_scope``): Numba's (LLVM's) transcendental functions, whose results may differ from
#: NumPy's in the last bits (within :data:`RELAXED_RTOL` of them)
RELAXED: dict[str, str] = {
    "exp": "np.exp({0})",
    "log": "np.log({0})",
    "tanh": "np.tanh({0})",
    "sin": "np.sin({0})",
    "cos": "np.cos({0})",
    "log1p": "np.log1p({0})",
    "expm1": "np.expm1({0})",
}
#: the relative difference a relaxed (JIT) fused kernel's result may have from its ops' one by
#: one, by dtype (the tolerance of TensorFlow's XLA tests), measured against the smallest
#: normal number where the result is smaller: ``|fused - unfused| <= RELAXED_RTOL *
#: max(|unfused|, tiny)`` elementwise, with NaNs and infinities where the unfused result has them
RELAXED_RTOL = {"float32": 1e-5, "float64": 1e-13}
#: units in the last place a relaxed function's compiled result may differ from NumPy's
#: (measured on x86-64 over 10**6 arguments per function and dtype: 3 at most, tanh and log)
RELAXED_ULPS = 4
#: units in the last place a relaxed result may grow to on its way to its kernel's result
#: (float32's RELAXED_RTOL is 84 of them): see :data:`BOUNDED`
CARRIED_ULPS = 64
#: Per fusable function, by how much a relative error of each argument may grow in its result
#: (0: without bound). Sums, differences and comparisons cancel or flip (``exp(x) - 1`` near
#: ``x = 0``, ``tanh(x) + 1`` for large negative ``x``), and the transcendental functions have
#: unbounded condition numbers (``log`` near 1, ``sin`` near its zeros), save ``tanh`` (at most
#: 1). A relaxed step joins a kernel only through arguments that carry its error to the
#: kernel's result within :data:`CARRIED_ULPS` (:mod:`daskgraph.runtime.planner.fusion`).
BOUNDED: dict[str, tuple[int, ...]] = {
    "multiply": (1, 1),
    "divide": (1, 1),
    "reciprocal": (1,),
    "negative": (1,),
    "abs": (1,),
    "square": (2,),
    "sqrt": (1,),
    "maximum": (1, 1),
    "minimum": (1, 1),
    "where": (0, 1, 1),
    "tanh": (1,),
    "relu": (1,),
    "relu_grad": (1, 0),
    "sigmoid_grad": (0, 1),
}
#: daskgraph's kernels a chain may hold, by their name in :data:`FUSABLE` (see
#: :func:`fusable_kernel`): ``kernel(xp, *inputs)``
KERNELS: dict[str, Callable[..., Any]] = {}
#: the other way round: kernel -> its name
KERNEL_NAMES: dict[Callable[..., Any], str] = {}
_COMPARES = {"less", "less_equal", "greater", "greater_equal", "equal", "not_equal"}
_LOGICAL = {"logical_and", "logical_or", "logical_not"}
#: dtypes a fused chain computes in
DTYPES = frozenset({"float32", "float64", "bool"})


def expression_of(name: str) -> str:
    """The compiled loop's expression of fusable function ``name`` (exact or relaxed)."""
    found = FUSABLE.get(name)
    return RELAXED[name] if found is None else found


def fusable_kernel(name: str, expression: str, relaxed: bool = False) -> Callable[[Any], Any]:
    """Register an elementwise kernel ``kernel(xp, *inputs)`` of daskgraph's (not one NumPy
    function) as fusable: ``expression`` is what it computes for one element, over fields
    ``{0}``, ``{1}``, ... for its inputs, giving NumPy's bits (as :data:`FUSABLE`'s do), or,
    ``relaxed``, within :data:`RELAXED_RTOL` of them (fused only under the JIT switches).

    >>> @fusable_kernel("twice", "({0} + {0})")
    ... def _twice(xp, x):
    ...     return x + x
    >>> KERNEL_NAMES[_twice], FUSABLE["twice"]
    ('twice', '({0} + {0})')
    >>> for table in (FUSABLE, KERNELS):
    ...     del table["twice"]
    >>> del KERNEL_NAMES[_twice]
    """

    def register(kernel: Any) -> Any:
        (RELAXED if relaxed else FUSABLE)[name] = expression
        KERNELS[name] = kernel
        KERNEL_NAMES[kernel] = name
        return kernel

    return register


def step_dtypes(steps: tuple, inputs: list[np.dtype]) -> list[np.dtype] | None:
    """The dtype of each step's result as NumPy's ufuncs give it, or None where a step
    would leave :data:`DTYPES`."""
    dtypes = list(inputs)
    out = []
    for _, name, args in steps:
        if name in _COMPARES or name in _LOGICAL:
            dtype = np.dtype(bool)
        elif name == "where":  # (the condition's dtype does not count)
            dtype = np.result_type(*[dtypes[a] for a in args[1:]])
        else:
            dtype = np.result_type(*[dtypes[a] for a in args])
        if dtype.name not in DTYPES or (dtype.kind == "b" and name not in _COMPARES | _LOGICAL):
            return None
        dtypes.append(dtype)
        out.append(dtype)
    return out
