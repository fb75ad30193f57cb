"""Scatter kernels: ``scatter_nd``, ``tensor_scatter_*`` and the variable scatters.

The kernels of :mod:`daskgraph.ops.scatter`'s ops, each ``kernel(xp, *inputs, **attrs)``.
"""

from __future__ import annotations

from typing import Any

from daskgraph.kernels.fill_ops import runtime_shape
from daskgraph.kernels.indexing import nd_index, scatter_into

_UFUNCS = {"add": "add", "max": "maximum", "min": "minimum", "mul": "multiply"}


# -- kernels --------------------------------------------------------------------------------------
def _apply(xp: Any, mode: str, out: Any, index: tuple, updates: Any) -> Any:
    """``out[index] (mode)= updates`` in place; returns ``out``."""
    updates = xp.asarray(updates, dtype=out.dtype)
    if mode == "update":
        out[index] = updates
        return out
    if mode == "sub":
        return scatter_into(xp, out, index, -updates)
    if mode == "div" and out.dtype.kind in "iu":  # TensorFlow's integer division truncates
        divisors = scatter_into(xp, xp.ones(out.shape, out.dtype), index, updates, "multiply")
        out[...] = xp.abs(out) // xp.abs(divisors) * xp.sign(out) * xp.sign(divisors)
        return out
    if mode == "div":
        return scatter_into(xp, out, index, updates, "divide")
    return scatter_into(xp, out, index, updates, _UFUNCS[mode])


def _first_axis_index(xp: Any, shape: tuple[int, ...], indices: Any) -> tuple[Any]:
    indices = xp.asarray(indices)
    flat = indices.reshape(-1)
    bad = xp.nonzero((flat < 0) | (flat >= shape[0]))[0]
    if bad.size:
        i = int(bad[0])
        raise ValueError(f"indices[{i}] = {int(flat[i])} is not in [0, {shape[0]})")
    return (indices,)


def _index(xp: Any, shape: tuple[int, ...], indices: Any, nd: bool, where: str) -> tuple:
    if not shape:
        raise ValueError(f"{where}: cannot scatter into a scalar")
    return nd_index(xp, shape, indices, where) if nd else _first_axis_index(xp, shape, indices)


def _variable_scatter_kernel(xp, store, ref, indices, updates, *, mode, nd):
    value = xp.array(store.read(ref.name), copy=True)
    _apply(xp, mode, value, _index(xp, value.shape, indices, nd, "scatter"), updates)
    store.assign(ref.name, value)
    return value


def _tensor_scatter_kernel(xp, tensor, indices, updates, *, mode):
    out = xp.array(tensor, copy=True)
    return _apply(xp, mode, out, _index(xp, out.shape, indices, True, "tensor_scatter"), updates)


def _scatter_nd_kernel(xp, indices, updates, *inputs, target):
    if target is None:
        target = runtime_shape(xp, inputs[0], "scatter_nd")
    updates = xp.asarray(updates)
    out = xp.zeros(target, dtype=updates.dtype)
    return _apply(xp, "add", out, _index(xp, tuple(target), indices, True, "scatter_nd"), updates)
