"""Comparison and logic kernels: boolean outputs, and ``where`` choosing between tensors.

The kernels of :mod:`daskgraph.ops.logic`'s ops, each ``kernel(xp, *inputs, **attrs)``.
"""

from __future__ import annotations


# -- kernels --------------------------------------------------------------------------------------
def _where_indices(xp, condition):
    return xp.argwhere(condition).astype(xp.int64)
