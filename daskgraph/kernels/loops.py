"""Loop kernels: ``While``, a traced body run until its condition fails.

The kernels of :mod:`daskgraph.ops.loops`'s ops, each ``kernel(xp, *inputs, **attrs)``.
"""

from __future__ import annotations


def _loop_kernel(xp, store, *inputs, plan):
    return plan.run(xp, store, inputs)


def _stateless_loop_kernel(xp, *inputs, plan):
    return plan.run(xp, None, inputs)
