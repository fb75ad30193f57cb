"""Shape-manipulating ops: ``concat``, ``split``, ``stack``, ``unstack``, ``expand_dims``,
``squeeze``, ``tile``, ``shape``, ``size`` and ``stop_gradient``, with their gradients.

Every op has one output, so TensorFlow's multi-output ``Split`` and ``Unpack`` become one
slicing op per piece (see :mod:`daskgraph.ops.slicing`), named ``<name>/output_<i>``.

>>> import daskgraph as dg
>>> with dg.Graph().as_default():
...     x = dg.placeholder(dg.float32, [None, 6])
...     a, b = split(x, [2, -1], axis=1)
...     y = concat([b, a], axis=-1)
>>> a.shape, b.shape, y.shape, y.op.type
((None, 2), (None, 4), (None, 6), 'ConcatV2')
"""

from __future__ import annotations

import builtins
import itertools
from collections.abc import Sequence
from typing import Any

import numpy as np

from daskgraph.framework import dtypes
from daskgraph.framework.gradient_registry import no_gradient, register_gradient
from daskgraph.framework.graph import Shape, Tensor, get_default_graph
from daskgraph.framework.graph import _name_scope as graph_name_scope
from daskgraph.framework.op_registry import register
from daskgraph.kernels.shape_ops import (
    _concat_kernel,
    _concat_slice_kernel,
    _expand_dims_kernel,
    _identity_kernel,
    _shape_kernel,
    _size_kernel,
    _squeeze_kernel,
    _stack_kernel,
    _tile_grad_kernel,
    _tile_kernel,
)
from daskgraph.kernels.slicing import axis_index
from daskgraph.ops import backprop
from daskgraph.ops.array import convert_to_tensor, identity
from daskgraph.ops.slicing import _static_ints, piece, slice_with_index

__all__ = [
    "concat",
    "expand_dims",
    "shape",
    "size",
    "split",
    "squeeze",
    "stack",
    "stop_gradient",
    "tile",
    "unstack",
]

_INDEX = frozenset({dtypes.int32, dtypes.int64})


register("ConcatV2", _concat_kernel)
register("ConcatSlice", _concat_slice_kernel)
register("Pack", _stack_kernel)
register("ExpandDims", _expand_dims_kernel)
register("Squeeze", _squeeze_kernel)
register("Tile", _tile_kernel)
register("TileGrad", _tile_grad_kernel, cpu=dtypes.NUMERIC, gpu=dtypes.NUMERIC)
register("Shape", _shape_kernel)
register("Size", _size_kernel)
register("StopGradient", _identity_kernel)


# -- helpers --------------------------------------------------------------------------------------
def _tensors(values: Any, where: str) -> list[Tensor]:
    """A non-empty list of tensors of one dtype (Python values take the tensors' dtype)."""
    if not isinstance(values, (list, tuple)) or not values:
        raise ValueError(f"{where} expects a non-empty list of tensors; got {values!r}")
    like = next((v for v in values if isinstance(v, Tensor) or hasattr(v, "_as_tensor")), None)
    dtype = convert_to_tensor(like).dtype if like is not None else None
    tensors = [convert_to_tensor(v, dtype=None if _is_tensor(v) else dtype) for v in values]
    for t in tensors[1:]:
        if t.dtype != tensors[0].dtype:
            raise TypeError(
                f"{where}: all values must have one dtype; {tensors[0].name!r} is "
                f"{tensors[0].dtype.name} and {t.name!r} is {t.dtype.name}"
            )
    return tensors


def _is_tensor(value: Any) -> bool:
    return isinstance(value, Tensor) or hasattr(value, "_as_tensor")


def _axis(axis: Any, where: str, rank: int | None, extra: int = 0) -> int:
    """``axis`` as an int in range for ``rank + extra`` dims (normalised when ``rank`` is
    known); ``extra`` is 1 where the op adds a dimension (``stack``, ``expand_dims``)."""
    if isinstance(axis, (bool, np.bool_)):
        raise TypeError(f"{where}: axis must be an int; got {axis!r}")
    if isinstance(axis, (int, np.integer)):
        value = int(axis)
    else:
        ints = _static_ints(axis, where, "axis")
        if len(ints) != 1:
            raise TypeError(f"{where}: axis must be one int; got {axis!r}")
        value = ints[0]
    if rank is None:
        return value
    bound = rank + extra
    if not -bound <= value < bound:
        raise ValueError(f"{where}: axis {value} is out of range [{-bound}, {bound})")
    return value % bound


def _merge(dims: Sequence[int | None], where: str, axis: int) -> int | None:
    """Sizes that must agree (None: unknown) merged into one."""
    known = {d for d in dims if d is not None}
    if len(known) > 1:
        raise ValueError(f"{where}: dimension {axis} differs between values: {sorted(known)}")
    return known.pop() if known else None


def _rank(tensors: Sequence[Tensor], where: str) -> int | None:
    ranks = {len(t.shape) for t in tensors if t.shape is not None}
    if len(ranks) > 1:
        raise ValueError(f"{where}: all values must have one rank; got ranks {sorted(ranks)}")
    return ranks.pop() if ranks else None


def _pieces(x: Tensor, indices: Sequence[Any], op_type: str, name: str) -> list[Tensor]:
    """One slicing op per index, named ``<name>/output_<i>``."""
    graph = get_default_graph()
    base = graph.unique_name(name)
    with graph_name_scope(graph, base + "/"):
        return [
            slice_with_index(x, index, op_type, f"output_{i}", name)
            for i, index in enumerate(indices)
        ]


# -- builders -------------------------------------------------------------------------------------
def concat(values: Sequence[Any], axis: Any, name: str = "concat") -> Tensor:
    """Join ``values`` (of one dtype and rank) along ``axis`` (``ConcatV2``).

    Examples
    --------
    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     y = concat([dg.constant([[1, 2]]), dg.constant([[3, 4], [5, 6]])], axis=0)
    >>> y.shape
    (3, 2)
    """
    tensors = _tensors(values, "concat")
    if len(tensors) == 1:
        return identity(tensors[0], name=name)
    rank = _rank(tensors, "concat")
    if rank == 0:
        raise ValueError("concat: cannot concatenate scalars (use stack instead)")
    axis = _axis(axis, "concat", rank)
    shape = None
    if rank is not None:
        known = [t.shape for t in tensors if t.shape is not None]
        dims = [None if a == axis else _merge([s[a] for s in known], "concat", a)
                for a in range(rank)]  # fmt: skip
        sizes = [None if t.shape is None else t.shape[axis] for t in tensors]
        dims[axis] = None if None in sizes else sum(sizes)
        shape = tuple(dims)
    op = get_default_graph().create_op(
        "ConcatV2", tensors, dtype=tensors[0].dtype, shape=shape, attrs={"axis": axis}, name=name
    )
    return op.outputs[0]


def split(
    value: Any,
    num_or_size_splits: Any,
    axis: Any = 0,
    num: int | None = None,
    name: str = "split",
) -> list[Tensor]:
    """Split ``value`` along ``axis`` into ``num_or_size_splits`` equal pieces (an int), or
    pieces of the given sizes (a list; one may be -1, for the rest).

    Examples
    --------
    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     pieces = split(dg.constant(np.arange(10)), [3, -1, 2])
    ...     with dg.Session() as sess:
    ...         print(sess.run(pieces))
    [array([0, 1, 2]), array([3, 4, 5, 6, 7]), array([8, 9])]
    """
    x = convert_to_tensor(value)
    rank = None if x.shape is None else len(x.shape)
    if rank == 0:
        raise ValueError(f"split: cannot split the scalar {x.name!r}")
    axis = _axis(axis, "split", rank)
    dim = None if x.shape is None else x.shape[axis]
    if isinstance(num_or_size_splits, (int, np.integer)):
        count = int(num_or_size_splits)
        if count <= 0 or (dim is not None and dim % count):
            raise ValueError(
                f"split: cannot split dimension {axis} of {x.name!r} (size {dim}) into "
                f"{num_or_size_splits} equal pieces"
            )
        if dim is None:
            items = [piece(i, count) for i in range(count)]
        else:
            items = [builtins.slice(i * dim // count, (i + 1) * dim // count) for i in range(count)]
    else:
        sizes = _static_ints(num_or_size_splits, "split", "num_or_size_splits")
        items = _size_slices(sizes, dim, x.name, axis)
    if num is not None and num != len(items):
        raise ValueError(f"split: num is {num} but the split makes {len(items)} pieces")
    return _pieces(x, [axis_index(axis, item) for item in items], "Split", name)


def _size_slices(sizes: Sequence[int], dim: int | None, name: str, axis: int) -> list[Any]:
    """The slices of pieces of ``sizes`` (one may be -1) along an axis of size ``dim``."""
    if not sizes or sizes.count(-1) > 1 or any(s < -1 for s in sizes):
        raise ValueError(
            f"split: size_splits must be a non-empty list of sizes >= 0, at most one of them "
            f"-1; got {list(sizes)}"
        )
    known = sum(s for s in sizes if s != -1)
    if dim is not None:
        if (-1 in sizes and known > dim) or (-1 not in sizes and known != dim):
            raise ValueError(
                f"split: sizes {list(sizes)} do not add up to dimension {axis} of {name!r}, "
                f"of size {dim}"
            )
        sizes = [dim - known if s == -1 else s for s in sizes]
    if -1 not in sizes:
        starts = np.cumsum([0, *sizes]).tolist()
        return [builtins.slice(a, b) for a, b in itertools.pairwise(starts)]
    # an unknown dimension and a -1: the pieces after the -1 count from the end
    at = sizes.index(-1)
    out = []
    for i, s in enumerate(sizes):
        tail = sum(sizes[i + 1 :]) if i >= at else None
        if i < at:
            start = sum(sizes[:i])
            out.append(builtins.slice(start, start + s))
        elif i == at:
            out.append(builtins.slice(sum(sizes[:i]), -tail if tail else None))
        else:
            out.append(builtins.slice(-(tail + s), -tail if tail else None))
    return out


def stack(values: Sequence[Any], axis: int = 0, name: str = "stack") -> Tensor:
    """Stack tensors of one shape along a new axis ``axis`` (``Pack``).

    Examples
    --------
    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     y = stack([dg.constant([1, 2]), dg.constant([3, 4])], axis=1)
    >>> y.shape
    (2, 2)
    """
    tensors = _tensors(values, "stack")
    rank = _rank(tensors, "stack")
    axis = _axis(axis, "stack", rank, extra=1)
    shape = None
    if rank is not None:
        known = [t.shape for t in tensors if t.shape is not None]
        dims = [_merge([s[a] for s in known], "stack", a) for a in range(rank)]
        shape = (*dims[:axis], len(tensors), *dims[axis:])
    op = get_default_graph().create_op(
        "Pack", tensors, dtype=tensors[0].dtype, shape=shape, attrs={"axis": axis}, name=name
    )
    return op.outputs[0]


def unstack(
    value: Any, num: int | None = None, axis: int = 0, name: str = "unstack"
) -> list[Tensor]:
    """The slices of ``value`` along ``axis``, each without that axis (``Unpack``).

    Examples
    --------
    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     rows = unstack(dg.placeholder(dg.float32, [3, None]))
    >>> len(rows), rows[0].shape
    (3, (None,))
    """
    x = convert_to_tensor(value)
    if x.shape is None:
        raise ValueError(f"unstack: the rank of {x.name!r} must be known")
    axis = _axis(axis, "unstack", len(x.shape))
    dim = x.shape[axis] if x.shape else None
    if num is None:
        if dim is None:
            raise ValueError(
                f"unstack: cannot infer num from dimension {axis} of {x.name!r}, of unknown "
                "size; give num"
            )
        num = dim
    elif dim is not None and num != dim:
        raise ValueError(f"unstack: num is {num} but dimension {axis} of {x.name!r} is {dim}")
    return _pieces(x, [axis_index(axis, i) for i in range(num)], "Unpack", name)


def expand_dims(input: Any, axis: Any = None, name: str | None = None, dim: Any = None) -> Tensor:
    """``input`` with a new axis of size 1 at ``axis`` (``dim`` is TF1's old name for it).

    Examples
    --------
    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     y = expand_dims(dg.placeholder(dg.float32, [2, 3]), -1)
    >>> y.shape
    (2, 3, 1)
    """
    if dim is not None:
        if axis is not None:
            raise ValueError("expand_dims: cannot specify both 'axis' and 'dim'")
        axis = dim
    if axis is None:
        raise ValueError("expand_dims: axis must be given")
    x = convert_to_tensor(input)
    rank = None if x.shape is None else len(x.shape)
    axis = _axis(axis, "expand_dims", rank, extra=1)
    shape = None if x.shape is None else (*x.shape[:axis], 1, *x.shape[axis:])
    op = get_default_graph().create_op(
        "ExpandDims", [x], dtype=x.dtype, shape=shape, attrs={"axis": axis}, name=name
    )
    return op.outputs[0]


def squeeze(
    input: Any, axis: Any = None, name: str | None = None, squeeze_dims: Any = None
) -> Tensor:
    """``input`` without the axes of size 1 listed in ``axis`` (all of them by default;
    ``squeeze_dims`` is TF1's old name).

    Examples
    --------
    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     x = dg.placeholder(dg.float32, [1, 3, 1])
    ...     print(squeeze(x).shape, squeeze(x, [-1]).shape)
    (3,) (1, 3)
    >>> with dg.Graph().as_default():
    ...     squeeze(dg.placeholder(dg.float32, [1, 3, 1]), 1)
    Traceback (most recent call last):
    ...
    ValueError: squeeze: cannot squeeze dimension 1 of 'Placeholder:0', of size 3 (not 1)
    """
    if squeeze_dims is not None:
        if axis is not None:
            raise ValueError("squeeze: cannot specify both 'axis' and 'squeeze_dims'")
        axis = squeeze_dims
    x = convert_to_tensor(input)
    rank = None if x.shape is None else len(x.shape)
    axes = None
    if axis is not None and (isinstance(axis, (int, np.integer)) or len(axis)):
        listed = [axis] if isinstance(axis, (int, np.integer)) else list(axis)
        axes = tuple(sorted({_axis(a, "squeeze", rank) for a in listed}))
    shape = None
    if x.shape is not None:
        if axes is None and None not in x.shape:
            shape = tuple(d for d in x.shape if d != 1)
        elif axes is not None:
            for a in axes:
                if x.shape[a] not in (1, None):
                    raise ValueError(
                        f"squeeze: cannot squeeze dimension {a} of {x.name!r}, of size "
                        f"{x.shape[a]} (not 1)"
                    )
            shape = tuple(d for i, d in enumerate(x.shape) if i not in axes)
    op = get_default_graph().create_op(
        "Squeeze", [x], dtype=x.dtype, shape=shape, attrs={"axis": axes}, name=name
    )
    return op.outputs[0]


def tile(input: Any, multiples: Any, name: str | None = None) -> Tensor:
    """``input`` repeated ``multiples[i]`` times along each axis ``i``.

    Examples
    --------
    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     y = tile(dg.constant([[1, 2]]), [2, 3])
    >>> y.shape
    (2, 6)
    """
    x = convert_to_tensor(input)
    multiples = _static_ints(multiples, "tile", "multiples")
    if x.shape is not None and len(multiples) != len(x.shape):
        raise ValueError(
            f"tile: multiples has {len(multiples)} entries; {x.name!r} has rank {len(x.shape)}"
        )
    if any(m < 0 for m in multiples):
        raise ValueError(f"tile: multiples must be >= 0; got {list(multiples)}")
    shape = None
    if x.shape is not None:
        shape = tuple(None if d is None else d * m for d, m in zip(x.shape, multiples, strict=True))
    op = get_default_graph().create_op(
        "Tile", [x], dtype=x.dtype, shape=shape, attrs={"multiples": multiples}, name=name
    )
    return op.outputs[0]


def _shape_op(op_type: str, x: Any, name: str | None, out_type: Any, shape: Shape) -> Tensor:
    x = convert_to_tensor(x)
    out = dtypes.as_dtype(out_type)
    if out not in _INDEX:
        raise TypeError(f"{op_type.lower()}: out_type must be int32 or int64; got {out.name}")
    if op_type == "Shape":
        shape = (None if x.shape is None else len(x.shape),)
    op = get_default_graph().create_op(
        op_type, [x], dtype=out, shape=shape, attrs={"out_type": out.numpy}, name=name
    )
    return op.outputs[0]


def shape(input: Any, name: str | None = None, out_type: Any = dtypes.int32) -> Tensor:
    """The runtime shape of ``input``, a 1-D int32 (or ``out_type``) tensor.

    Examples
    --------
    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     x = dg.placeholder(dg.float32, [None, 3])
    ...     s = shape(x)
    ...     with dg.Session() as sess:
    ...         print(sess.run(s, {x: np.zeros((5, 3))}))
    [5 3]
    """
    return _shape_op("Shape", input, name, out_type, (None,))


def size(input: Any, name: str | None = None, out_type: Any = dtypes.int32) -> Tensor:
    """The number of elements of ``input`` at run time, a scalar int32 (or ``out_type``)."""
    return _shape_op("Size", input, name, out_type, ())


def stop_gradient(input: Any, name: str | None = None) -> Tensor:
    """``input`` itself, as a constant to ``gradients``: no gradient flows through it.

    Examples
    --------
    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     x = dg.constant(3.0)
    ...     (dx,) = dg.gradients(x * stop_gradient(x), [x])
    ...     with dg.Session() as sess:
    ...         float(sess.run(dx))
    3.0
    """
    x = convert_to_tensor(input)
    op = get_default_graph().create_op("StopGradient", [x], dtype=x.dtype, shape=x.shape, name=name)
    return op.outputs[0]


# -- gradients ------------------------------------------------------------------------------------
@register_gradient("ConcatV2")
def _concat_grad(op: Any, grad: Tensor) -> list[Tensor]:
    axis = op.attrs["axis"]
    values = op.inputs
    sizes = [None if t.shape is None else t.shape[axis] for t in values]
    if None not in sizes:
        starts = np.cumsum([0, *sizes]).tolist()
        return [
            slice_with_index(grad, axis_index(axis, builtins.slice(a, b)))
            for a, b in itertools.pairwise(starts)
        ]
    graph = get_default_graph()
    return [
        graph.create_op(
            "ConcatSlice", [grad, *values], dtype=grad.dtype, shape=t.shape,
            attrs={"axis": axis, "position": i}, name="ConcatSlice",
        ).outputs[0]
        for i, t in enumerate(values)
    ]  # fmt: skip


@register_gradient("Pack")
def _stack_grad(op: Any, grad: Tensor) -> list[Tensor]:
    axis = op.attrs["axis"]
    return [slice_with_index(grad, axis_index(axis, i), "Unpack") for i in range(len(op.inputs))]


@register_gradient("ExpandDims")
def _expand_dims_grad(op: Any, grad: Tensor) -> list[Tensor]:
    return [backprop.reshape_like(grad, op.inputs[0])]


@register_gradient("Squeeze")
def _squeeze_grad(op: Any, grad: Tensor) -> list[Tensor]:
    return [backprop.reshape_like(grad, op.inputs[0])]


@register_gradient("Tile")
def _tile_grad(op: Any, grad: Tensor) -> list[Tensor]:
    x = op.inputs[0]
    out = get_default_graph().create_op(
        "TileGrad", [grad, x], dtype=grad.dtype, shape=x.shape, attrs=dict(op.attrs),
        name="TileGrad",
    )  # fmt: skip
    return [out.outputs[0]]


@register_gradient("TileGrad")
def _tile_grad_grad(op: Any, grad: Tensor) -> list[Tensor | None]:
    return [tile(grad, op.attrs["multiples"]), None]


for _type in ("Shape", "Size", "StopGradient"):
    no_gradient(_type)
