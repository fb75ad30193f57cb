"""Counting kernels: ``Range`` and ``Rank``.

The kernels of :mod:`daskgraph.ops.ranges`'s ops, each ``kernel(xp, *inputs, **attrs)``.
"""

from __future__ import annotations

import numpy as np

from daskgraph.errors import InvalidArgumentError


# -- kernels --------------------------------------------------------------------------------------
def _range_kernel(xp, start, limit, delta, *, dtype):
    problem = _bounds_problem(float(start), float(limit), float(delta))
    if problem:
        raise InvalidArgumentError(f"range: {problem}", op="Range")
    return xp.arange(start, limit, delta, dtype=dtype)


def _bounds_problem(start: float, limit: float, delta: float) -> str | None:
    """What TensorFlow refuses in a range's bounds (None: nothing)."""
    if delta == 0:
        return "delta must not be 0"
    if delta > 0 and start > limit:
        return f"requires start <= limit when delta > 0: {start:g}/{limit:g}"
    if delta < 0 and start < limit:
        return f"requires start >= limit when delta < 0: {start:g}/{limit:g}"
    return None


def _rank_kernel(xp, x):
    return xp.asarray(x.ndim, dtype=np.int32)
