"""Indexing ops: ``gather_nd``, ``batch_gather``, ``boolean_mask``, ``sequence_mask``,
``reverse``, ``reverse_sequence``, ``broadcast_to`` and ``space_to_depth``/``depth_to_space``,
with their gradients.

Indices are checked when the op runs, as TensorFlow's CPU kernels check them: one out of range
fails the run with TensorFlow's message. The gradients of the gathering ops add the incoming
gradient into zeros of the input's runtime shape at the gathered places (repeated places adding
up): ``numpy.add.at`` on a CPU, ``cupyx.scatter_add`` on a GPU (:func:`scatter_into`).

>>> import daskgraph as dg
>>> with dg.Graph().as_default():
...     x = dg.placeholder(dg.float32, [None, 3, 4])
...     rows = gather_nd(x, [[0, 1], [1, 2]])
...     kept = boolean_mask(x, dg.placeholder(dg.bool_, [None]))
>>> rows.shape, kept.shape
((2, 4), (None, 3, 4))
"""

from __future__ import annotations

from typing import Any

from daskgraph.framework import dtypes
from daskgraph.framework.gradient_registry import no_gradient, register_gradient
from daskgraph.framework.graph import Operation, Shape, Tensor, new_tensor
from daskgraph.framework.op_registry import CPU_ALL, GPU_NUMERIC, register
from daskgraph.kernels.indexing import (
    _batch_gather_grad_kernel,
    _batch_gather_kernel,
    _boolean_mask_grad_kernel,
    _boolean_mask_kernel,
    _broadcast_to_kernel,
    _depth_to_space_kernel,
    _gather_nd_grad_kernel,
    _gather_nd_kernel,
    _reverse_kernel,
    _reverse_sequence_kernel,
    _sequence_mask_kernel,
    _space_to_depth_kernel,
    scatter_into,
)
from daskgraph.ops.array import convert_to_tensor
from daskgraph.ops.fill_ops import shape_argument
from daskgraph.ops.gradients import unbroadcast
from daskgraph.ops.math import broadcast_shape
from daskgraph.ops.slicing import _static_ints

__all__ = [
    "batch_gather",
    "boolean_mask",
    "broadcast_to",
    "depth_to_space",
    "gather_nd",
    "reverse",
    "reverse_sequence",
    "scatter_into",
    "sequence_mask",
    "space_to_depth",
]

INDEX_DTYPES = frozenset({dtypes.int32, dtypes.int64})
_NUMERIC_GRAD = dtypes.NUMERIC  # the gradients' kernels add numbers


_ANY = {"cpu": CPU_ALL, "gpu": GPU_NUMERIC}
_GRAD = {"cpu": _NUMERIC_GRAD, "gpu": _NUMERIC_GRAD}
register("GatherNd", _gather_nd_kernel, **_ANY)
register("GatherNdGrad", _gather_nd_grad_kernel, **_GRAD)
register("BatchGather", _batch_gather_kernel, **_ANY)
register("BatchGatherGrad", _batch_gather_grad_kernel, **_GRAD)
register("BooleanMask", _boolean_mask_kernel, **_ANY)
register("BooleanMaskGrad", _boolean_mask_grad_kernel, cpu=CPU_ALL - {dtypes.string},
         gpu=GPU_NUMERIC)  # fmt: skip
register("SequenceMask", _sequence_mask_kernel, cpu=CPU_ALL - {dtypes.string}, gpu=GPU_NUMERIC)
register("ReverseV2", _reverse_kernel, **_ANY)
register("ReverseSequence", _reverse_sequence_kernel, **_ANY)
register("BroadcastTo", _broadcast_to_kernel, **_ANY)
register("SpaceToDepth", _space_to_depth_kernel, **_ANY)
register("DepthToSpace", _depth_to_space_kernel, **_ANY)


# -- helpers --------------------------------------------------------------------------------------
def _indices(indices: Any, where: str) -> Tensor:
    t = convert_to_tensor(indices)
    if t.dtype not in INDEX_DTYPES:
        raise TypeError(f"{where}: indices must be int32 or int64; {t.name!r} is {t.dtype.name}")
    return t


def _axes(axis: Any, rank: int | None, where: str) -> tuple[int, ...]:
    """``axis`` (ints, or a constant) as sorted non-negative axes (when the rank is known)."""
    axes = _static_ints(axis, where, "axis")
    if rank is None:
        if any(a < 0 for a in axes):
            raise ValueError(f"{where}: a negative axis needs the input's rank known")
        return tuple(sorted(set(axes)))
    for a in axes:
        if not -rank <= a < rank:
            raise ValueError(f"{where}: axis {a} is out of range for rank {rank}")
    normal = [a % rank for a in axes]
    if len(set(normal)) != len(normal):
        raise ValueError(f"{where}: axis {list(axes)} names an axis twice")
    return tuple(sorted(normal))


def _block(block_size: Any, data_format: str, where: str) -> int:
    if data_format != "NHWC":
        raise ValueError(f"{where}: only data_format='NHWC' is supported; got {data_format!r}")
    block = int(block_size)
    if block < 2:
        raise ValueError(f"{where}: block_size must be >= 2; got {block}")
    return block


def _nhwc(x: Tensor, where: str) -> Shape:
    if x.shape is not None and len(x.shape) != 4:
        raise ValueError(f"{where}: the input must have rank 4 (NHWC); its shape is {x.shape}")
    return x.shape or (None,) * 4


# -- builders -------------------------------------------------------------------------------------
def gather_nd(
    params: Any, indices: Any, name: str | None = None, batch_dims: int = 0,
    bad_indices_policy: str = "",
) -> Tensor:  # fmt: skip
    """The slices of ``params`` at the coordinates in the last axis of ``indices``: the output
    has shape ``indices.shape[:-1] + params.shape[indices.shape[-1]:]``.

    Examples
    --------
    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     y = gather_nd(dg.constant([[1, 2], [3, 4]]), [[1, 0], [0, 1]])
    ...     with dg.Session() as sess:
    ...         print(sess.run(y))
    [3 2]
    """
    if batch_dims:
        raise ValueError(f"gather_nd: batch_dims must be 0 here; got {batch_dims}")
    p, idx = convert_to_tensor(params), _indices(indices, "gather_nd")
    shape = None
    if idx.shape is not None and p.shape is not None and idx.shape and idx.shape[-1] is not None:
        depth = idx.shape[-1]
        if depth > len(p.shape):
            raise ValueError(f"gather_nd: index depth {depth} exceeds the rank of {p.name!r}, "
                             f"{len(p.shape)}")  # fmt: skip
        shape = (*idx.shape[:-1], *p.shape[depth:])
    return new_tensor("GatherNd", [p, idx], p.dtype, shape, name)


def batch_gather(params: Any, indices: Any, name: str | None = None) -> Tensor:
    """``params[b..., indices[b..., k]]``: a ``gather`` along axis ``rank(indices) - 1``
    within each batch entry ``b...`` (TF1's ``tf.batch_gather``).

    Examples
    --------
    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     y = batch_gather(dg.constant([[1, 2, 3], [4, 5, 6]]), [[2, 0], [1, 1]])
    ...     with dg.Session() as sess:
    ...         print(sess.run(y).tolist())
    [[3, 1], [5, 5]]
    """
    p, idx = convert_to_tensor(params), _indices(indices, "batch_gather")
    shape = None
    if p.shape is not None and idx.shape is not None:
        batch = len(idx.shape) - 1
        if batch < 0 or len(p.shape) <= batch:
            raise ValueError(f"batch_gather: indices of rank {len(idx.shape)} need params of "
                             f"rank > {batch}; {p.name!r} has shape {p.shape}")  # fmt: skip
        lead = broadcast_shape(p.shape[:batch], idx.shape[:-1], "batch_gather")
        shape = (*lead, idx.shape[-1], *p.shape[batch + 1 :])
    return new_tensor("BatchGather", [p, idx], p.dtype, shape, name)


def boolean_mask(
    tensor: Any, mask: Any, name: str = "boolean_mask", axis: int | None = None
) -> Tensor:
    """The entries of ``tensor`` where the bool ``mask`` is true: the ``mask.ndim`` axes from
    ``axis`` (default 0) become one axis, whose size is known only when the op runs.

    Examples
    --------
    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     y = boolean_mask(dg.constant([[1, 2], [3, 4], [5, 6]]), [True, False, True])
    ...     with dg.Session() as sess:
    ...         print(y.shape, sess.run(y).tolist())
    (None, 2) [[1, 2], [5, 6]]
    """
    x, m = convert_to_tensor(tensor), convert_to_tensor(mask)
    if m.dtype is not dtypes.bool_:
        raise TypeError(f"boolean_mask: the mask must be bool; {m.name!r} is {m.dtype.name}")
    if m.shape is None:
        raise ValueError("boolean_mask: the rank of the mask must be known")
    if not m.shape:
        raise ValueError("boolean_mask: the mask cannot be a scalar")
    axis = 0 if axis is None else int(axis)
    shape = None
    if x.shape is not None:
        axis %= max(len(x.shape), 1)
        k = len(m.shape)
        covered = x.shape[axis : axis + k]
        if len(covered) != k or any(
            None not in (a, b) and a != b for a, b in zip(covered, m.shape, strict=True)
        ):
            raise ValueError(f"boolean_mask: shapes {x.shape[axis:axis + k]} (of the tensor) and "
                             f"{m.shape} (of the mask) are incompatible")  # fmt: skip
        shape = (*x.shape[:axis], None, *x.shape[axis + k :])
    elif axis < 0:
        raise ValueError("boolean_mask: a negative axis needs the tensor's rank known")
    return new_tensor("BooleanMask", [x, m], x.dtype, shape, name, axis=axis)


def sequence_mask(
    lengths: Any, maxlen: Any = None, dtype: Any = dtypes.bool_, name: str | None = None
) -> Tensor:
    """``mask[i..., j] = j < lengths[i...]`` for ``j`` below ``maxlen`` (default: the largest
    length, known when the op runs).

    Examples
    --------
    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     m = sequence_mask([1, 3], 4, dtype=dg.int32)
    ...     with dg.Session() as sess:
    ...         print(sess.run(m).tolist())
    [[1, 0, 0, 0], [1, 1, 1, 0]]
    """
    n = _indices(lengths, "sequence_mask")
    out = dtypes.as_dtype(dtype)
    inputs, size = [n], None
    if isinstance(maxlen, Tensor) and maxlen.op.type != "Const":
        inputs.append(maxlen)
    elif maxlen is not None:
        size = _static_ints(maxlen, "sequence_mask", "maxlen")
        if len(size) != 1 or size[0] < 0:
            raise ValueError(f"sequence_mask: maxlen must be one int >= 0; got {maxlen!r}")
        size = size[0]
    shape = None if n.shape is None else (*n.shape, size)
    return new_tensor("SequenceMask", inputs, out, shape, name or "SequenceMask", maxlen=size,
                      out_type=out.numpy)  # fmt: skip


def reverse(tensor: Any, axis: Any, name: str | None = None) -> Tensor:
    """``tensor`` with the order of its entries reversed along each axis in ``axis``
    (``ReverseV2``; TF1's ``tf.reverse`` and ``tf.reverse_v2``).

    Examples
    --------
    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     y = reverse(dg.constant([[1, 2, 3], [4, 5, 6]]), [-1])
    ...     with dg.Session() as sess:
    ...         print(sess.run(y).tolist())
    [[3, 2, 1], [6, 5, 4]]
    """
    x = convert_to_tensor(tensor)
    axes = _axes(axis, None if x.shape is None else len(x.shape), "reverse")
    return new_tensor("ReverseV2", [x], x.dtype, x.shape, name, axis=axes)


def reverse_sequence(
    input: Any, seq_lengths: Any, seq_axis: int | None = None, batch_axis: int | None = None,
    name: str | None = None, seq_dim: int | None = None, batch_dim: int | None = None,
) -> Tensor:  # fmt: skip
    """Reverse the first ``seq_lengths[b]`` entries along ``seq_axis`` of each batch entry
    ``b`` (along ``batch_axis``, default 0); ``seq_dim``/``batch_dim`` are TF1's old names.

    Examples
    --------
    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     y = reverse_sequence(dg.constant([[1, 2, 3], [4, 5, 6]]), [2, 3], seq_axis=1)
    ...     with dg.Session() as sess:
    ...         print(sess.run(y).tolist())
    [[2, 1, 3], [6, 5, 4]]
    """
    seq_axis = seq_dim if seq_axis is None else seq_axis
    batch_axis = (0 if batch_dim is None else batch_dim) if batch_axis is None else batch_axis
    if seq_axis is None:
        raise ValueError("reverse_sequence: seq_axis must be given")
    x, n = convert_to_tensor(input), _indices(seq_lengths, "reverse_sequence")
    if x.shape is None:
        raise ValueError("reverse_sequence: the input's rank must be known")
    rank = len(x.shape)
    seq, batch = (_axes([a], rank, "reverse_sequence")[0] for a in (seq_axis, batch_axis))
    if seq == batch:
        raise ValueError(f"reverse_sequence: seq_axis and batch_axis are both {seq}")
    if n.shape is not None and len(n.shape) != 1:
        raise ValueError(f"reverse_sequence: seq_lengths must be a vector; got {n.shape}")
    return new_tensor("ReverseSequence", [x, n], x.dtype, x.shape, name, seq_axis=seq,
                      batch_axis=batch)  # fmt: skip


def broadcast_to(input: Any, shape: Any, name: str | None = None) -> Tensor:
    """``input`` broadcast to ``shape`` (ints, or a 1-D int tensor), as NumPy broadcasts.

    Examples
    --------
    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     y = broadcast_to(dg.constant([1, 2, 3]), [2, 3])
    ...     with dg.Session() as sess:
    ...         print(sess.run(y).tolist())
    [[1, 2, 3], [1, 2, 3]]
    """
    x = convert_to_tensor(input)
    static, inputs = shape_argument(shape, "broadcast_to")
    out = static
    if static is None:
        known = inputs[0].shape
        out = None if known is None or known[0] is None else (None,) * known[0]
    elif x.shape is not None and not _broadcasts(x.shape, static):
        raise ValueError(
            f"broadcast_to: cannot broadcast {x.name!r} of shape {x.shape} to {list(static)}"
        )
    return new_tensor("BroadcastTo", [x, *inputs], x.dtype, out, name, target=static)


def _broadcasts(shape: Shape, target: Shape) -> bool:
    if len(shape) > len(target):
        return False
    try:
        return broadcast_shape(shape, target, "broadcast_to") == tuple(target)
    except ValueError:
        return False


def space_to_depth(
    input: Any, block_size: int, name: str | None = None, data_format: str = "NHWC"
) -> Tensor:
    """Move each ``block_size`` x ``block_size`` block of an NHWC image into the depth.

    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     space_to_depth(dg.placeholder(dg.float32, [None, 4, 6, 3]), 2).shape
    (None, 2, 3, 12)
    """
    x = convert_to_tensor(input)
    block = _block(block_size, data_format, "space_to_depth")
    n, h, w, c = _nhwc(x, "space_to_depth")
    for size in (h, w):
        if size is not None and size % block:
            raise ValueError(f"space_to_depth: height and width ({h}, {w}) must be divisible "
                             f"by block_size {block}")  # fmt: skip
    shape = (n, *(None if d is None else d // block for d in (h, w)),
             None if c is None else c * block * block)  # fmt: skip
    return new_tensor("SpaceToDepth", [x], x.dtype, shape, name, block=block)


def depth_to_space(
    input: Any, block_size: int, name: str | None = None, data_format: str = "NHWC"
) -> Tensor:
    """Move depth into ``block_size`` x ``block_size`` blocks of an NHWC image (the inverse
    of :func:`space_to_depth`).

    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     depth_to_space(dg.placeholder(dg.float32, [None, 2, 3, 12]), 2).shape
    (None, 4, 6, 3)
    """
    x = convert_to_tensor(input)
    block = _block(block_size, data_format, "depth_to_space")
    n, h, w, c = _nhwc(x, "depth_to_space")
    if c is not None and c % (block * block):
        raise ValueError(f"depth_to_space: depth {c} must be divisible by block_size^2 = "
                         f"{block * block}")  # fmt: skip
    shape = (n, *(None if d is None else d * block for d in (h, w)),
             None if c is None else c // (block * block))  # fmt: skip
    return new_tensor("DepthToSpace", [x], x.dtype, shape, name, block=block)


# -- gradients ------------------------------------------------------------------------------------
def _into_params(op_type: str, op: Operation, grad: Tensor, **attrs: Any) -> Tensor:
    """A gradient op writing ``grad`` into zeros of the shape of ``op.inputs[0]``."""
    x = op.inputs[0]
    return new_tensor(op_type, [grad, *op.inputs], grad.dtype, x.shape, op_type, **attrs)


@register_gradient("GatherNd")
def _gather_nd_grad(op: Operation, grad: Tensor) -> list[Tensor | None]:
    return [_into_params("GatherNdGrad", op, grad), None]


@register_gradient("GatherNdGrad")
def _gather_nd_grad_grad(op: Operation, grad: Tensor) -> list[Tensor | None]:
    return [gather_nd(grad, op.inputs[2]), None, None]


@register_gradient("BatchGather")
def _batch_gather_grad(op: Operation, grad: Tensor) -> list[Tensor | None]:
    return [_into_params("BatchGatherGrad", op, grad), None]


@register_gradient("BatchGatherGrad")
def _batch_gather_grad_grad(op: Operation, grad: Tensor) -> list[Tensor | None]:
    return [batch_gather(grad, op.inputs[2]), None, None]


@register_gradient("BooleanMask")
def _boolean_mask_grad(op: Operation, grad: Tensor) -> list[Tensor | None]:
    return [_into_params("BooleanMaskGrad", op, grad, axis=op.attrs["axis"]), None]


@register_gradient("BooleanMaskGrad")
def _boolean_mask_grad_grad(op: Operation, grad: Tensor) -> list[Tensor | None]:
    return [boolean_mask(grad, op.inputs[2], axis=op.attrs["axis"]), None, None]


@register_gradient("ReverseV2")
def _reverse_grad(op: Operation, grad: Tensor) -> list[Tensor]:
    return [reverse(grad, op.attrs["axis"])]


@register_gradient("ReverseSequence")
def _reverse_sequence_grad(op: Operation, grad: Tensor) -> list[Tensor | None]:
    attrs = op.attrs
    return [reverse_sequence(grad, op.inputs[1], attrs["seq_axis"], attrs["batch_axis"]), None]


@register_gradient("BroadcastTo")
def _broadcast_to_grad(op: Operation, grad: Tensor) -> list[Tensor | None]:
    return [unbroadcast(grad, op.inputs[0]), *[None] * (len(op.inputs) - 1)]


@register_gradient("SpaceToDepth")
def _space_to_depth_grad(op: Operation, grad: Tensor) -> list[Tensor]:
    return [depth_to_space(grad, op.attrs["block"])]


@register_gradient("DepthToSpace")
def _depth_to_space_grad(op: Operation, grad: Tensor) -> list[Tensor]:
    return [space_to_depth(grad, op.attrs["block"])]


no_gradient("SequenceMask")
