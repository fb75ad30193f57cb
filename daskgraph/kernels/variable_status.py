"""Variable-status kernels: whether variables hold a value.

The kernels of :mod:`daskgraph.ops.variable_status`'s ops, each ``kernel(xp, *inputs, **attrs)``.
"""

from __future__ import annotations

import numpy as np

from daskgraph.errors import OutOfRangeError


# -- kernels --------------------------------------------------------------------------------------
def _is_initialized_kernel(xp, store, ref):
    return xp.asarray(ref.name in store.names())


def _report_kernel(xp, *flags, names):
    missing = [n.encode() for n, ok in zip(names, flags, strict=True) if not bool(ok)]
    return np.array(missing, dtype=object).reshape(len(missing))


# -- kernels ---------------------------------------------------------------------------------------
def _count_up_to_kernel(xp, store, ref, *, limit, node):
    """The variable's value, which is then incremented; OutOfRangeError at ``limit``."""
    value = store.read(ref.name)
    if int(value) >= limit:
        raise OutOfRangeError(f"Reached limit of {limit}\n\t [[{{{{node {node}}}}}]]", op=node)
    store.assign(ref.name, xp.asarray(value + 1, dtype=value.dtype))
    return value
