"""Slicing ops: ``tensor[...]``, ``strided_slice``, ``slice`` and ``gather``, with gradients.

Slices are static: their bounds are Python ints known when the graph is built, so every
slicing op (``StridedSlice``, ``Slice``, and the pieces of ``split`` and ``unstack`` in
:mod:`daskgraph.ops.shape_ops`) holds a NumPy *basic index* in its ``index`` attribute: a
tuple of ints (each drops its axis), ``slice`` objects, ``None`` (a new axis of size 1) and
``Ellipsis``. TensorFlow's masks (``begin_mask``, ``shrink_axis_mask``, ...) translate into
that index. The kernel is ``x[index]``; the gradient is a ``SliceGrad`` op writing the
incoming gradient into zeros of the input's runtime shape at the same index.

>>> import daskgraph as dg
>>> with dg.Graph().as_default():
...     x = dg.placeholder(dg.float32, [None, 4, 5])
...     y = x[1:, ::-1, None, ..., 0]
>>> y.op.type, y.shape
('StridedSlice', (None, 4, 1))
"""

from __future__ import annotations

import builtins
from typing import Any

import numpy as np

from daskgraph.framework import dtypes
from daskgraph.framework.gradient_registry import register_gradient
from daskgraph.framework.graph import Shape, Tensor, get_default_graph
from daskgraph.framework.op_registry import CPU_ALL, GPU_NUMERIC, register
from daskgraph.kernels.slicing import (
    SLICE_TYPES,
    Index,
    _checked_slice_kernel,
    _expand,
    _gather_grad_gpu_kernel,
    _gather_grad_kernel,
    _gather_kernel,
    _slice_grad_kernel,
    _slice_kernel,
    axis_index,
)
from daskgraph.ops.array import convert_to_tensor
from daskgraph.ops.state import Variable

__all__ = ["axis_index", "gather", "piece", "slice", "slice_with_index", "strided_slice"]
_INDEX_DTYPES = frozenset({dtypes.int32, dtypes.int64})


def piece(i: int, n: int) -> tuple[str, int, int]:
    """An index entry for the ``i``-th of ``n`` equal parts of an axis whose size is only known
    at run time (as ``split`` makes them).

    >>> from daskgraph.kernels.slicing import _resolve
    >>> _resolve((piece(1, 2),), (6,))
    (slice(3, 6, None),)
    """
    return ("piece", i, n)


def sliced_shape(index: Index, shape: Shape | None, where: str, name: str) -> Shape | None:
    """The static shape of ``x[index]`` for ``x`` of static ``shape``; ValueError for an index
    out of range of a known dimension.

    >>> sliced_shape((0, None, ..., builtins.slice(None, None, -2)), (3, None, 5), "x[]", "x")
    (1, None, 3)
    >>> sliced_shape((3,), (3,), "x[]", "x")
    Traceback (most recent call last):
    ...
    ValueError: x[]: index 3 is out of range for dimension 0 of 'x', of size 3
    """
    if shape is None:
        return None
    out: list[int | None] = []
    axis = 0
    for entry in _expand(index, len(shape), where, name):
        if entry is None:
            out.append(1)
            continue
        dim = shape[axis]
        if isinstance(entry, builtins.slice):
            out.append(None if dim is None else len(range(dim)[entry]))
        elif isinstance(entry, tuple):
            out.append(None if dim is None else dim // entry[2])
        elif dim is not None and not -dim <= entry < dim:
            raise ValueError(
                f"{where}: index {entry} is out of range for dimension {axis} of {name!r}, "
                f"of size {dim}"
            )
        axis += 1
    return tuple(out)


for _type in SLICE_TYPES:
    register(_type, _checked_slice_kernel if _type == "Slice" else _slice_kernel)
register("SliceGrad", _slice_grad_kernel)
register("GatherV2", _gather_kernel, cpu=CPU_ALL, gpu=GPU_NUMERIC)
register(
    "GatherGrad",
    _gather_grad_kernel,
    cpu=dtypes.NUMERIC,
    gpu=frozenset({dtypes.float32, dtypes.float64}) | _INDEX_DTYPES,
    gpu_kernel=_gather_grad_gpu_kernel,
)


# -- builders -------------------------------------------------------------------------------------
def slice_with_index(
    x: Any, index: Index, op_type: str = "StridedSlice", name: str | None = None, where: str = ""
) -> Tensor:
    """``x[index]`` as one op of ``op_type`` (one of :data:`SLICE_TYPES`), for a static
    basic ``index`` (see the module's docstring).

    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     y = slice_with_index(dg.constant([[1, 2, 3]]), axis_index(1, builtins.slice(1, None)))
    >>> y.shape
    (1, 2)
    """
    x = convert_to_tensor(x)
    shape = sliced_shape(index, x.shape, where or op_type, x.name)
    attrs = {"index": tuple(index), "pieces": any(isinstance(e, tuple) for e in index)}
    op = get_default_graph().create_op(
        op_type, [x], dtype=x.dtype, shape=shape, attrs=attrs, name=name or op_type
    )
    return op.outputs[0]


def _static_ints(value: Any, where: str, what: str) -> tuple[int, ...]:
    """A list of Python ints (or a constant tensor of them) as a tuple; TypeError otherwise."""
    if isinstance(value, Tensor):
        if value.op.type != "Const":
            raise TypeError(
                f"{where}: {what} must be known when the graph is built (Python ints or a "
                f"constant); {value.name!r} is computed by a {value.op.type} op"
            )
        value = value.op.attrs["value"]
    array = np.asarray(value)
    if array.size == 0 and array.ndim == 1:
        return ()
    if array.dtype.kind not in "iu" or array.ndim > 1:
        raise TypeError(f"{where}: {what} must be an int or a list of ints; got {value!r}")
    return tuple(int(v) for v in array.reshape(-1))


def _bound(value: Any, where: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{where}: slice bounds must be ints or None; got {value!r}")
    if isinstance(value, Tensor):
        ints = _static_ints(value, where, "a slice bound")
        if value.shape != () or len(ints) != 1:
            raise TypeError(f"{where}: a slice bound must be a scalar; got {value.name!r}")
        value = ints[0]
    if not isinstance(value, (int, np.integer)):
        raise TypeError(f"{where}: slice bounds must be ints or None; got {value!r}")
    return int(value)


def _key_entry(key: Any, where: str) -> Any:
    """One entry of a ``tensor[...]`` key as an :data:`Index` entry."""
    if key is None or key is Ellipsis:
        return key
    if isinstance(key, builtins.slice):
        start, stop, step = (_bound(b, where) for b in (key.start, key.stop, key.step))
        if step == 0:
            raise ValueError(f"{where}: slice step cannot be zero")
        return builtins.slice(start, stop, step)
    if isinstance(key, Tensor) and key.op.type == "Const" and key.shape == ():
        return _bound(key, where)
    if isinstance(key, (int, np.integer)) and not isinstance(key, (bool, np.bool_)):
        return int(key)
    raise TypeError(
        f"{where}: only ints, slices (with int bounds), None (newaxis) and Ellipsis are valid "
        f"indices; got {key!r}. Use gather() to index with a tensor or a list of indices."
    )


def _getitem(tensor: Any, key: Any) -> Tensor:
    """``tensor[key]``: a ``StridedSlice`` op named ``strided_slice``, as in TensorFlow."""
    x = convert_to_tensor(tensor)
    items = key if isinstance(key, tuple) else (key,)
    where = f"{x.name}[...]"
    index = tuple(_key_entry(k, where) for k in items)
    if sum(e is Ellipsis for e in index) > 1:
        raise ValueError(f"{where}: an index can only have a single ellipsis ('...')")
    return slice_with_index(x, index, "StridedSlice", name="strided_slice", where=where)


def strided_slice(
    input_: Any,
    begin: Any,
    end: Any,
    strides: Any = None,
    begin_mask: int = 0,
    end_mask: int = 0,
    ellipsis_mask: int = 0,
    new_axis_mask: int = 0,
    shrink_axis_mask: int = 0,
    var: Any = None,
    name: str | None = None,
) -> Tensor:
    """TensorFlow's ``strided_slice`` for constant ``begin``, ``end`` and ``strides``.

    Bit ``i`` of a mask applies to entry ``i``: ``begin_mask``/``end_mask`` ignore the bound
    (the slice starts or ends at the edge), ``ellipsis_mask`` makes the entry ``...``,
    ``new_axis_mask`` a new axis of size 1, and ``shrink_axis_mask`` takes the single element
    ``begin[i]`` and drops the axis. ``x[1:, ::-1, None, ..., 0]`` is such a slice.

    Examples
    --------
    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     x = dg.constant(np.arange(24).reshape(2, 3, 4))
    ...     y = strided_slice(x, [0, 2, 1], [0, 0, 3], [1, -1, 1], begin_mask=1, end_mask=3,
    ...                       shrink_axis_mask=0)
    ...     with dg.Session() as sess:
    ...         print(sess.run(y)[1])
    [[21 22]
     [17 18]
     [13 14]]
    """
    x = convert_to_tensor(input_)
    begin = _static_ints(begin, "strided_slice", "begin")
    end = _static_ints(end, "strided_slice", "end")
    strides = (1,) * len(begin) if strides is None else _static_ints(strides, "strided_slice",
                                                                     "strides")  # fmt: skip
    if not len(begin) == len(end) == len(strides):
        raise ValueError(
            f"strided_slice: begin, end and strides must have one length; got {len(begin)}, "
            f"{len(end)} and {len(strides)}"
        )
    if bin(ellipsis_mask).count("1") > 1:
        raise ValueError("strided_slice: ellipsis_mask may have only one bit set (one '...')")
    index = []
    for i, (b, e, s) in enumerate(zip(begin, end, strides, strict=True)):
        bit = 1 << i
        if ellipsis_mask & bit:
            index.append(Ellipsis)
        elif new_axis_mask & bit:
            index.append(None)
        elif shrink_axis_mask & bit:
            index.append(b)
        elif s == 0:
            raise ValueError(f"strided_slice: strides[{i}] must be non-zero")
        else:
            index.append(
                builtins.slice(None if begin_mask & bit else b, None if end_mask & bit else e, s)
            )
    return slice_with_index(x, tuple(index), "StridedSlice", name, "strided_slice")


def slice(input_: Any, begin: Any, size: Any, name: str | None = None) -> Tensor:
    """The block of ``input_`` starting at ``begin`` with ``size`` (``-1``: up to the end) in
    each dimension, as ``tf.slice``.

    Examples
    --------
    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     y = slice(dg.constant([[1, 2, 3], [4, 5, 6]]), [0, 1], [-1, 2])
    ...     with dg.Session() as sess:
    ...         print(sess.run(y))
    [[2 3]
     [5 6]]
    """
    x = convert_to_tensor(input_)
    begin = _static_ints(begin, "slice", "begin")
    size = _static_ints(size, "slice", "size")
    if len(begin) != len(size) or (x.shape is not None and len(x.shape) != len(begin)):
        rank = "unknown" if x.shape is None else len(x.shape)
        raise ValueError(
            f"slice: begin ({len(begin)} entries) and size ({len(size)}) must have one entry "
            f"per dimension of {x.name!r} (rank {rank})"
        )
    dims = x.shape or (None,) * len(begin)
    for axis, (b, s, dim) in enumerate(zip(begin, size, dims, strict=True)):
        if b < 0 or s < -1:
            raise ValueError(f"slice: begin must be >= 0 and size >= -1; got {b} and {s}")
        if dim is not None and (b > dim or (s != -1 and b + s > dim)):
            raise ValueError(
                f"slice: begin {b} and size {s} are out of bounds of dimension {axis} of "
                f"{x.name!r}, of size {dim}"
            )
    index = tuple(
        builtins.slice(b, None if s == -1 else b + s) for b, s in zip(begin, size, strict=True)
    )
    return slice_with_index(x, index, "Slice", name or "Slice", "slice")


def gather(params: Any, indices: Any, axis: int = 0, name: str | None = None) -> Tensor:
    """The slices of ``params`` along ``axis`` at ``indices`` (``GatherV2``): the output's
    shape is ``params.shape[:axis] + indices.shape + params.shape[axis + 1:]``.

    Indices out of ``[0, params.shape[axis])`` fail the run with an error naming them.

    Examples
    --------
    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     y = gather(dg.constant([[1, 2, 3], [4, 5, 6]]), [2, 0], axis=1)
    ...     with dg.Session() as sess:
    ...         print(sess.run(y))
    [[3 1]
     [6 4]]
    """
    params = convert_to_tensor(params)
    indices = convert_to_tensor(indices)
    if indices.dtype not in _INDEX_DTYPES:
        raise TypeError(f"gather: indices must be int32 or int64; {indices.name!r} is "
                        f"{indices.dtype.name}")  # fmt: skip
    axis = int(axis)
    if params.shape is not None:
        rank = len(params.shape)
        if not -rank <= axis < rank:
            raise ValueError(
                f"gather: axis {axis} is out of range for {params.name!r} of rank {rank}"
            )
        axis %= rank
    shape = None
    if params.shape is not None and indices.shape is not None and axis >= 0:
        shape = (*params.shape[:axis], *indices.shape, *params.shape[axis + 1 :])
    op = get_default_graph().create_op(
        "GatherV2",
        [params, indices],
        dtype=params.dtype,
        shape=shape,
        attrs={"axis": axis},
        name=name or "GatherV2",
    )
    return op.outputs[0]


def _install_getitem() -> None:
    """Give tensors and variables ``x[...]``, as TensorFlow's ``_SliceHelper`` does."""
    Tensor.__getitem__ = _getitem
    Variable.__getitem__ = lambda self, key: _getitem(self._as_tensor(), key)


_install_getitem()


# -- gradients ------------------------------------------------------------------------------------
def _slice_grad(op: Any, grad: Tensor) -> list[Tensor]:
    x = op.inputs[0]
    out = get_default_graph().create_op(
        "SliceGrad", [grad, x], dtype=grad.dtype, shape=x.shape, attrs=dict(op.attrs),
        name="SliceGrad",
    )  # fmt: skip
    return [out.outputs[0]]


for _type in SLICE_TYPES:
    register_gradient(_type)(_slice_grad)


@register_gradient("SliceGrad")
def _slice_grad_grad(op: Any, grad: Tensor) -> list[Tensor | None]:
    return [slice_with_index(grad, op.attrs["index"], "StridedSlice"), None]


@register_gradient("GatherV2")
def _gather_grad(op: Any, grad: Tensor) -> list[Tensor | None]:
    params, indices = op.inputs
    out = get_default_graph().create_op(
        "GatherGrad", [grad, params, indices], dtype=grad.dtype, shape=params.shape,
        attrs=dict(op.attrs), name="GatherGrad",
    )  # fmt: skip
    return [out.outputs[0], None]


@register_gradient("GatherGrad")
def _gather_grad_grad(op: Any, grad: Tensor) -> list[Tensor | None]:
    return [gather(grad, op.inputs[2], axis=op.attrs["axis"]), None, None]
