"""Contraction kernels: ``Einsum`` by subscripts.

The kernels of :mod:`daskgraph.ops.einsum`'s ops, each ``kernel(xp, *inputs, **attrs)``.
"""

from __future__ import annotations


def _einsum_kernel(xp, *operands, equation):
    return xp.asarray(xp.einsum(equation, *operands))
