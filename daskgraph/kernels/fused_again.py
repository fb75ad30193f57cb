"""A fused kernel's next call, straight to its last call's loop where the inputs are alike.

Its one job is the steady state of a run loop. A program's next run calls each fused kernel
(:class:`~daskgraph.kernels.fused.FusedKernel`) with inputs like the last run's; the full
path classifies every input (dtype, scalar or array, shape, order, writability), looks the
loop up and goes through rent-or-buy, which costs more than the loop's own call on small
arrays (3.4 us of 4.7 for a 100-op chain on 16x16 float32, measured on the 2-core VM). The
kernel keeps a function made by :func:`again_for` after a call by its loop: it checks the
next call's inputs against that call's, in straight-line Python written once per pattern of
arrays and scalars, and calls the same loop; any difference returns None, and the full path
takes the call (its result NumPy's, as ever).
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["MAX_INPUTS", "again_for"]


def again_for(loop: Any, shape: tuple[int, ...], kinds: tuple) -> Any:
    """A function of a kernel's inputs that runs ``loop`` on them when they are like those of
    the call that took it (``shape``, and ``kinds``: each input's dtype, whether it was a
    scalar, whether a read-only array), else returns None, for the full path to take them;
    None for a kernel of more than :data:`MAX_INPUTS` inputs. ``loop`` is a compiled loop of
    :mod:`daskgraph.kernels.fused` (called ``loop(out, *inputs)`` on flat arrays and scalars,
    its result's dtype ``loop.out_dtype``; over a million elements it splits itself over the
    calling worker's threads).

    A program's next run calls its kernels with inputs like the last run's: the function
    checks each input against that call (an array of exact type ``ndarray``, of the shape,
    dtype, C order and writability seen; a 0-d array or NumPy scalar of the dtype seen) and
    calls the loop, skipping the classification, lookup and rent-or-buy of the full path.
    The loop was chosen for those kinds, so the result is the full path's. The checks are
    written out as straight-line Python, once per pattern of arrays and scalars.

    >>> from daskgraph.kernels.fused import FusedKernel, build
    >>> k = FusedKernel((("m", "multiply", (0, 1)), ("a", "add", (2, 0))), 2)
    >>> x = np.arange(4, dtype=np.float32)
    >>> kinds = (x.dtype, False, False), (x.dtype, True, False)
    >>> again = again_for(build(k, kinds), (4,), kinds)
    >>> again((x, np.float32(2.0)))
    array([0., 3., 6., 9.], dtype=float32)
    >>> again((x, np.float64(2.0))) is None, again((x[:2], np.float32(2.0))) is None
    (True, True)
    """
    if len(kinds) > MAX_INPUTS:
        return None
    pattern = tuple(scalar for _, scalar, _ in kinds)
    make = _MAKERS.get(pattern)
    if make is None:
        namespace: dict[str, Any] = {"ndarray": np.ndarray, "generic": np.generic}
        exec(compile(_source(pattern), "<fused again>", "exec"), namespace)
        make = namespace["_make"]
        if len(_MAKERS) < _KEPT:
            _MAKERS[pattern] = make
    expected = [d for d, _, _ in kinds] + [not ro for _, s, ro in kinds if not s]
    return make(loop, shape, np.empty, loop.out_dtype, *expected)


#: kernels of more inputs take the full path every call (their checks would take 26 ms to
#: compile for 255 inputs, and gain little beside checking that many inputs)
MAX_INPUTS = 32
#: the straight-line checks written so far, by pattern (which inputs are scalars): at most
#: :data:`_KEPT` patterns are kept
_KEPT = 4096
_MAKERS: dict[tuple[bool, ...], Any] = {}


def _source(scalars: tuple[bool, ...]) -> str:
    """The source of ``_make(loop, shape, empty, out_dtype, d0.., w..)``, which returns the
    checks of :func:`again_for` for inputs that are scalars where ``scalars`` says."""
    n = len(scalars)
    names = [f"x{i}" for i in range(n)]
    writes = [f"w{i}" for i in range(n) if not scalars[i]]
    lines = [
        f"def _make(loop, shape, empty, out_dtype, {', '.join(f'd{i}' for i in range(n))}"
        f"{''.join(', ' + w for w in writes)}):",
        "    def again(inputs):",
        f"        if len(inputs) != {n}:",
        "            return None",
        f"        {', '.join(names)}, = inputs",
    ]
    for i, (x, scalar) in enumerate(zip(names, scalars, strict=True)):
        if scalar:  # a 0-d array or a NumPy scalar, read by value
            lines += [
                f"        if type({x}) is ndarray:",
                f"            if {x}.ndim:",
                "                return None",
                f"            {x} = {x}[()]",
                f"        elif not isinstance({x}, generic):",
                "            return None",
                f"        if {x}.dtype is not d{i}:",
                "            return None",
            ]
        else:
            lines += [
                f"        if type({x}) is not ndarray or {x}.shape != shape "
                f"or {x}.dtype is not d{i}:",
                "            return None",
                f"        flags = {x}.flags",
                f"        if not flags.c_contiguous or flags.writeable is not w{i}:",
                "            return None",
                f"        {x} = {x}.reshape(-1)",
            ]
    lines += [
        "        out = empty(shape, out_dtype)",
        "        try:",
        f"            loop(out.reshape(-1), {', '.join(names)})",
        "        except TypeError:  # (never expected: the kinds are the loop's own)",
        "            return None",
        "        return out",
        "    return again",
    ]
    return "\n".join(lines)
