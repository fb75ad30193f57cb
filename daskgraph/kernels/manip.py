"""Array-manipulation kernels: ``roll``, ``repeat``, ``setdiff1d`` and the rest.

The kernels of :mod:`daskgraph.ops.manip`'s ops, each ``kernel(xp, *inputs, **attrs)``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from daskgraph.errors import InvalidArgumentError
from daskgraph.kernels.indexing import scatter_into


# -- kernels --------------------------------------------------------------------------------------
def _ints(xp: Any, value: Any) -> list[int]:
    return [int(v) for v in xp.asarray(value).reshape(-1).tolist()]


def _roll_kernel(xp, x, shift, axis):
    shifts, axes = _ints(xp, shift), _ints(xp, axis)
    if len(shifts) != len(axes):
        raise InvalidArgumentError(
            f"shift and axis must have the same size; got {len(shifts)} and {len(axes)}"
        )
    for a in axes:
        if not -x.ndim <= a < x.ndim:
            raise InvalidArgumentError(f"axis {a} is out of range for a tensor of rank {x.ndim}")
    return xp.roll(x, tuple(shifts), tuple(axes)) if axes else x


def _repeats(xp: Any, repeats: Any, size: int) -> list[int]:
    reps = _ints(xp, repeats)
    if len(reps) == 1:
        reps = reps * size
    if len(reps) != size:
        raise InvalidArgumentError(
            f"repeats has {len(reps)} entries; the axis repeated has {size} elements"
        )
    if any(r < 0 for r in reps):
        raise InvalidArgumentError(f"repeats must be >= 0; got {reps}")
    return reps


def _repeat_kernel(xp, x, repeats, *, axis):
    return xp.repeat(x, _repeats(xp, repeats, x.shape[axis]), axis=axis)


def _repeat_grad_kernel(xp, grad, repeats, x, *, axis):
    """The sum of the gradient over each element's copies."""
    n = x.shape[axis]
    ids = np.repeat(np.arange(n), _repeats(xp, repeats, n))
    moved = xp.moveaxis(grad, axis, 0)
    out = xp.zeros((n, *moved.shape[1:]), dtype=grad.dtype)
    return xp.moveaxis(scatter_into(xp, out, (xp.asarray(ids),), moved), 0, axis)


def _list_diff_kernel(xp, x, y, *, part, out_type):
    keep = ~xp.isin(x, y)
    return x[keep] if part == "out" else xp.nonzero(keep)[0].astype(out_type)


def _ensure_shape_kernel(xp, x, *, shape, input_name):
    if len(x.shape) != len(shape) or any(
        d is not None and d != n for d, n in zip(shape, x.shape, strict=False)
    ):
        got = ",".join(str(n) for n in x.shape)
        wanted = ",".join("?" if d is None else str(d) for d in shape)
        raise InvalidArgumentError(
            f"Shape of tensor {input_name} [{got}] is not compatible with expected shape "
            f"[{wanted}]."
        )
    return x


def _broadcast_args_kernel(xp, s0, s1):
    a, b = _ints(xp, s0), _ints(xp, s1)
    try:
        out = np.broadcast_shapes(tuple(a), tuple(b))
    except ValueError:
        show = ",".join
        raise InvalidArgumentError(
            f"Incompatible shapes: [{show(map(str, a))}] vs. [{show(map(str, b))}]"
        ) from None
    return xp.asarray(out, dtype=getattr(s0, "dtype", np.int32))
