"""Slicing kernels: ``strided_slice``, ``slice``, ``gather`` and their backward ops.

The kernels of :mod:`daskgraph.ops.slicing`'s ops, each ``kernel(xp, *inputs, **attrs)``.
"""

from __future__ import annotations

import builtins
from typing import Any

import numpy as np

_FULL = builtins.slice(None)

#: a static basic index: ints, slices, None, Ellipsis, and :func:`piece` entries
Index = tuple


# -- indices --------------------------------------------------------------------------------------
def axis_index(axis: int, item: Any) -> Index:
    """The index applying ``item`` to axis ``axis`` only (a negative axis counts from the end).

    >>> axis_index(1, 0)
    (slice(None, None, None), 0)
    >>> axis_index(-2, 3)
    (Ellipsis, 3, slice(None, None, None))
    """
    if axis >= 0:
        return (_FULL,) * axis + (item,)
    return (Ellipsis, item, *(_FULL,) * (-axis - 1))


def _consumes(entry: Any) -> bool:
    return entry is not None and entry is not Ellipsis


def _expand(index: Index, rank: int, where: str, name: str) -> list[Any]:
    """``index`` with its ellipsis (explicit, or implicit at the end) replaced by full slices."""
    used = sum(1 for e in index if _consumes(e))
    if used > rank:
        raise ValueError(
            f"{where}: too many indices for {name!r}: {used} indexed dimensions, but it has "
            f"rank {rank}"
        )
    fill = [_FULL] * (rank - used)
    if Ellipsis not in index:
        return [*index, *fill]
    at = index.index(Ellipsis)
    return [*index[:at], *fill, *index[at + 1 :]]


def _resolve(index: Index, shape: tuple[int, ...]) -> Index:
    """``index`` with its :func:`piece` entries turned into slices of the runtime ``shape``."""
    out = []
    axis = 0
    for entry in _expand(index, len(shape), "slice", "input"):
        if isinstance(entry, tuple):
            _, i, n = entry
            size = shape[axis]
            if size % n:
                raise ValueError(
                    f"cannot split dimension {axis} of size {size} into {n} equal pieces"
                )
            entry = builtins.slice(i * size // n, (i + 1) * size // n)
        out.append(entry)
        axis += _consumes(entry)
    return tuple(out)


# -- kernels --------------------------------------------------------------------------------------
def _slice_kernel(xp, x, *, index, pieces):
    return x[_resolve(index, x.shape) if pieces else index]


def _checked_slice_kernel(xp, x, *, index, pieces):
    """``tf.slice``: the slice must lie inside ``x`` (TensorFlow refuses to clip it)."""
    if len(index) != x.ndim:
        raise ValueError(
            f"slice: begin and size have {len(index)} entries; input has rank {x.ndim}"
        )
    for axis, (s, dim) in enumerate(zip(index, x.shape, strict=True)):
        stop = dim if s.stop is None else s.stop
        if s.start > dim or stop > dim:
            raise ValueError(
                f"slice: [{s.start}, {stop}) is out of bounds of dimension {axis}, of size {dim}"
            )
    return x[index]


def _slice_grad_kernel(xp, grad, x, *, index, pieces):
    out = xp.zeros(x.shape, dtype=grad.dtype)
    out[_resolve(index, x.shape) if pieces else index] = grad
    return out


def _check_indices(xp, indices, size, axis):
    indices = xp.asarray(indices)
    if indices.size and (int(indices.min()) < 0 or int(indices.max()) >= size):
        bad = int(indices.min()) if int(indices.min()) < 0 else int(indices.max())
        raise IndexError(f"gather: index {bad} is not in [0, {size}) (axis {axis} of params)")


def _gather_kernel(xp, params, indices, *, axis):
    _check_indices(xp, indices, params.shape[axis], axis)
    return xp.take(params, indices, axis=axis)


def _gather_grad_kernel(xp, grad, params, indices, *, axis):
    out = xp.zeros(params.shape, dtype=grad.dtype)
    xp.add.at(out, axis_index(axis, indices), grad)
    return out


def _gather_grad_gpu_kernel(xp, grad, params, indices, *, axis):
    """On CuPy, ``cupyx.scatter_add`` (atomic adds); NumPy on a virtual GPU."""
    if xp is np:
        return _gather_grad_kernel(xp, grad, params, indices, axis=axis)
    import cupyx

    out = xp.zeros(params.shape, dtype=grad.dtype)
    cupyx.scatter_add(out, axis_index(axis, xp.asarray(indices)), xp.asarray(grad))
    return out


SLICE_TYPES = ("StridedSlice", "Slice", "Split", "Unpack")
