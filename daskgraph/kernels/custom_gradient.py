"""The kernel of ``custom_gradient``'s identity op.

The kernels of :mod:`daskgraph.ops.custom_gradient`'s ops, each ``kernel(xp, *inputs, **attrs)``.
"""

from __future__ import annotations


def _custom_gradient_kernel(xp, y, *unused):
    return y
