"""Bundle kernels: several results carried as one output, and the picking of one.

The kernels of :mod:`daskgraph.ops.bundle`'s ops, each ``kernel(xp, *inputs, **attrs)``.
"""

from __future__ import annotations


def _bundle_get_kernel(xp, bundle, *, index):
    return bundle[index]
