"""2-D convolution and max pooling over ``NHWC`` images, and their backward ops.

``conv2d`` and ``max_pool`` are TensorFlow 1's ``Conv2D`` and ``MaxPool`` with its padding
rules (``VALID``; ``SAME``: ``ceil(in / stride)`` outputs, the padding split with the smaller
half before). Their gradients are ops of their own, as in TensorFlow:
``Conv2DBackpropInput``, ``Conv2DBackpropFilter`` and ``MaxPoolGrad``.

The kernels are im2col over the array API: the (padded) input is viewed as windows with
``as_strided`` (no copy until the one reshape to im2col rows) and one ``matmul`` multiplies
them with the filter; the backward passes add window gradients back with one strided add per
filter tap. So they run on NumPy and CuPy alike. ``Conv2DBackpropInput`` (which is
``conv2d_transpose``) has a gradient, as in TensorFlow; the other backward ops have none (no
second derivatives).

>>> import daskgraph as dg
>>> with dg.Graph().as_default():
...     images = dg.placeholder(dg.float32, [None, 8, 8, 1])
...     h = conv2d(images, dg.constant(0.1, shape=[3, 3, 1, 4]), [1, 2, 2, 1], "SAME")
...     p = max_pool(h, [1, 2, 2, 1], [1, 2, 2, 1], "VALID")
>>> h.shape, p.shape
((None, 4, 4, 4), (None, 2, 2, 4))
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from daskgraph.framework import dtypes
from daskgraph.framework.gradient_registry import register_gradient
from daskgraph.framework.graph import Operation, Shape, Tensor, new_tensor
from daskgraph.framework.op_registry import register
from daskgraph.kernels.conv import (
    _conv2d,
    _conv2d_backprop_filter,
    _conv2d_backprop_input,
    _max_pool,
    _max_pool_grad,
    output_size,
)
from daskgraph.ops import shape_ops
from daskgraph.ops.array import convert_to_tensor

__all__ = [
    "conv2d",
    "conv2d_backprop_filter",
    "conv2d_backprop_input",
    "max_pool",
    "max_pool_grad",
]

_FLOAT = dtypes.FLOATING
_SIZES = frozenset({dtypes.int32, dtypes.int64})


register("Conv2D", _conv2d, cpu=_FLOAT, gpu=_FLOAT)
register("Conv2DBackpropInput", _conv2d_backprop_input, cpu=_FLOAT | _SIZES, gpu=_FLOAT | _SIZES)
register("Conv2DBackpropFilter", _conv2d_backprop_filter, cpu=_FLOAT | _SIZES, gpu=_FLOAT | _SIZES)
register("MaxPool", _max_pool, cpu=_FLOAT, gpu=_FLOAT)
register("MaxPoolGrad", _max_pool_grad, cpu=_FLOAT, gpu=_FLOAT)


# -- arguments ------------------------------------------------------------------------------------
def _padding(padding: Any, where: str) -> str:
    if isinstance(padding, bytes):
        padding = padding.decode()
    if not isinstance(padding, str) or padding.upper() not in ("SAME", "VALID"):
        raise ValueError(f"{where}: padding must be 'SAME' or 'VALID'; got {padding!r}")
    return padding.upper()


def _spatial(values: Any, what: str, where: str) -> tuple[int, int]:
    """``[1, h, w, 1]`` (or ``[h, w]``, or one int for both) as ``(h, w)``."""
    if isinstance(values, (int, np.integer)):
        values = [values, values]
    try:
        items = [int(v) for v in values]
    except (TypeError, ValueError):
        raise TypeError(f"{where}: {what} must be a list of 4 ints; got {values!r}") from None
    if len(items) == 4 and (items[0] != 1 or items[3] != 1):
        raise ValueError(
            f"{where}: {what} over the batch or channels axis is not supported; {what} must "
            f"be [1, height, width, 1] (NHWC); got {values!r}"
        )
    if len(items) not in (2, 4) or any(v < 1 for v in items):
        raise ValueError(f"{where}: {what} must be 4 positive ints [1, h, w, 1]; got {values!r}")
    return (items[1], items[2]) if len(items) == 4 else (items[0], items[1])


def _check_nhwc(data_format: Any, dilations: Any, where: str) -> None:
    if data_format not in (None, "NHWC"):
        raise ValueError(f"{where}: only data_format 'NHWC' is supported; got {data_format!r}")
    if dilations is not None and [int(d) for d in dilations] not in ([1, 1, 1, 1], [1, 1]):
        raise ValueError(f"{where}: dilations are not supported; got {dilations!r}")


def _floats(x: Any, what: str, rank: int, where: str) -> Tensor:
    x = convert_to_tensor(x)
    if not x.dtype.is_floating:
        raise TypeError(f"{where}: {what} must be floating-point; {x.name!r} is {x.dtype.name}")
    if x.shape is not None and len(x.shape) != rank:
        raise ValueError(f"{where}: {what} must have rank {rank}; {x.name!r} has shape {x.shape}")
    return x


def _same_dtype(a: Tensor, b: Tensor, where: str) -> None:
    if a.dtype is not b.dtype:
        raise TypeError(
            f"{where}: {a.name!r} is {a.dtype.name} and {b.name!r} is {b.dtype.name}; "
            "both must have one dtype"
        )


def _out_shape(
    x: Shape | None,
    window: tuple[Any, Any],
    strides: tuple[int, int],
    padding: str,
    channels: Any,
    where: str,
) -> Shape:
    x = x if x is not None else (None,) * 4
    dims = []
    for size, k, s in zip(x[1:3], window, strides, strict=True):
        if size is None or k is None:
            dims.append(None)
            continue
        out = output_size(size, k, s, padding)[0]
        if out <= 0:
            raise ValueError(
                f"{where}: the window of size {k} is larger than the input of size {size} "
                "with VALID padding"
            )
        dims.append(out)
    return (x[0], dims[0], dims[1], channels)


def _sizes(sizes: Any, length: int, what: str, where: str) -> tuple[Tensor, Shape]:
    """A sizes argument (a list, or an int tensor) as a tensor and its static value (None
    for a size unknown until the graph runs, as a batch size of -1)."""
    if not isinstance(sizes, Tensor) and not hasattr(sizes, "_as_tensor"):
        values = np.asarray(sizes)
        if values.shape != (length,) or values.dtype.kind not in "iu":
            raise ValueError(f"{where}: {what} must be {length} ints; got {sizes!r}")
        sizes = convert_to_tensor(values.astype(np.int32))
    sizes = convert_to_tensor(sizes)
    if sizes.dtype not in _SIZES or sizes.shape not in (None, (None,), (length,)):
        raise ValueError(
            f"{where}: {what} must be a vector of {length} int32; {sizes.name!r} is "
            f"{sizes.dtype.name} of shape {sizes.shape}"
        )
    value = sizes.op.attrs.get("value") if sizes.op.type == "Const" else None
    static = (None,) * length if value is None else tuple(None if v < 0 else int(v) for v in value)
    return sizes, static


# -- builders -------------------------------------------------------------------------------------
def conv2d(
    input: Any,
    filter: Any = None,
    strides: Sequence[int] | None = None,
    padding: str | None = None,
    use_cudnn_on_gpu: bool = True,
    data_format: str = "NHWC",
    dilations: Sequence[int] | None = None,
    name: str | None = None,
    filters: Any = None,
) -> Tensor:
    """2-D convolution (TensorFlow's, a cross-correlation) of ``NHWC`` images with a filter
    ``[height, width, in_channels, out_channels]``; ``strides`` is ``[1, sh, sw, 1]`` and
    ``padding`` ``"SAME"`` or ``"VALID"``.

    Examples
    --------
    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     x = dg.constant(1.0, shape=[1, 3, 3, 1])
    ...     y = conv2d(x, dg.constant(1.0, shape=[2, 2, 1, 1]), [1, 1, 1, 1], "SAME")
    ...     with dg.Session() as sess:
    ...         sess.run(y)[0, :, :, 0].tolist()
    [[4.0, 4.0, 2.0], [4.0, 4.0, 2.0], [2.0, 2.0, 1.0]]
    >>> with dg.Graph().as_default():
    ...     x = dg.constant(1.0, shape=[1, 3, 3, 1])
    ...     conv2d(x, dg.constant(1.0, shape=[2, 2, 3, 1]), [1, 1, 1, 1], "SAME")
    Traceback (most recent call last):
    ...
    ValueError: conv2d: the input 'Const:0' has 1 channels but the filter 'Const_1:0' expects 3 \
(its shape is [height, width, in_channels, out_channels] = (2, 2, 3, 1))
    """
    where = "conv2d"
    _check_nhwc(data_format, dilations, where)
    if filter is not None and filters is not None:
        raise ValueError(f"{where}: give filter or filters, not both")
    filter = filters if filter is None else filter
    if filter is None or strides is None or padding is None:
        raise ValueError(f"{where}: filter, strides and padding must be given")
    padding = _padding(padding, where)
    stride = _spatial(strides, "strides", where)
    x = _floats(input, "input", 4, where)
    w = _floats(filter, "filter", 4, where)
    _same_dtype(x, w, where)
    xs, ws = x.shape or (None,) * 4, w.shape or (None,) * 4
    if None not in (xs[3], ws[2]) and xs[3] != ws[2]:
        raise ValueError(
            f"{where}: the input {x.name!r} has {xs[3]} channels but the filter {w.name!r} "
            f"expects {ws[2]} (its shape is [height, width, in_channels, out_channels] = {ws})"
        )
    shape = _out_shape(x.shape, ws[:2], stride, padding, ws[3], where)
    return new_tensor("Conv2D", [x, w], x.dtype, shape, name, strides=stride, padding=padding)


def conv2d_backprop_input(
    input_sizes: Any,
    filter: Any = None,
    out_backprop: Any = None,
    strides: Sequence[int] | None = None,
    padding: str | None = None,
    use_cudnn_on_gpu: bool = True,
    data_format: str = "NHWC",
    dilations: Sequence[int] | None = None,
    name: str | None = None,
    filters: Any = None,
) -> Tensor:
    """The gradient of :func:`conv2d` with respect to its input, of shape ``input_sizes``
    (4 ints, or an int32 vector tensor; a batch size of -1 means ``out_backprop``'s)."""
    where = "conv2d_backprop_input"
    _check_nhwc(data_format, dilations, where)
    filter = filters if filter is None else filter
    if filter is None or out_backprop is None or strides is None or padding is None:
        raise ValueError(f"{where}: filter, out_backprop, strides and padding must be given")
    padding = _padding(padding, where)
    stride = _spatial(strides, "strides", where)
    sizes, shape = _sizes(input_sizes, 4, "input_sizes", where)
    w = _floats(filter, "filter", 4, where)
    grad = _floats(out_backprop, "out_backprop", 4, where)
    _same_dtype(w, grad, where)
    if shape[0] is None and grad.shape is not None:
        shape = (grad.shape[0], *shape[1:])
    attrs = {"strides": stride, "padding": padding}
    return new_tensor("Conv2DBackpropInput", [sizes, w, grad], w.dtype, shape, name, **attrs)


def conv2d_backprop_filter(
    input: Any,
    filter_sizes: Any,
    out_backprop: Any,
    strides: Sequence[int],
    padding: str,
    use_cudnn_on_gpu: bool = True,
    data_format: str = "NHWC",
    dilations: Sequence[int] | None = None,
    name: str | None = None,
) -> Tensor:
    """The gradient of :func:`conv2d` with respect to its filter, of shape ``filter_sizes``
    (``[height, width, in_channels, out_channels]``)."""
    where = "conv2d_backprop_filter"
    _check_nhwc(data_format, dilations, where)
    padding = _padding(padding, where)
    stride = _spatial(strides, "strides", where)
    x = _floats(input, "input", 4, where)
    sizes, shape = _sizes(filter_sizes, 4, "filter_sizes", where)
    grad = _floats(out_backprop, "out_backprop", 4, where)
    _same_dtype(x, grad, where)
    attrs = {"strides": stride, "padding": padding}
    return new_tensor("Conv2DBackpropFilter", [x, sizes, grad], x.dtype, shape, name, **attrs)


def max_pool(
    value: Any,
    ksize: Sequence[int],
    strides: Sequence[int],
    padding: str,
    data_format: str = "NHWC",
    name: str | None = None,
    input: Any = None,
) -> Tensor:
    """The maximum of each ``ksize`` window (``[1, kh, kw, 1]``) of ``NHWC`` images, moved by
    ``strides``; with ``"SAME"`` padding, the padding never wins.

    Examples
    --------
    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     x = dg.constant([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]])
    ...     y = max_pool(dg.reshape(x, [1, 3, 3, 1]), [1, 2, 2, 1], [1, 2, 2, 1], "SAME")
    ...     with dg.Session() as sess:
    ...         sess.run(y)[0, :, :, 0].tolist()
    [[5.0, 6.0], [8.0, 9.0]]
    >>> with dg.Graph().as_default():
    ...     max_pool(dg.constant(1.0, shape=[1, 2, 2, 1]), [1, 2, 2, 1], [1, 1, 1, 1], "FULL")
    Traceback (most recent call last):
    ...
    ValueError: max_pool: padding must be 'SAME' or 'VALID'; got 'FULL'
    """
    where = "max_pool"
    _check_nhwc(data_format, None, where)
    value = input if value is None else value
    padding = _padding(padding, where)
    window = _spatial(ksize, "ksize", where)
    stride = _spatial(strides, "strides", where)
    x = _floats(value, "value", 4, where)
    channels = None if x.shape is None else x.shape[3]
    shape = _out_shape(x.shape, window, stride, padding, channels, where)
    attrs = {"ksize": window, "strides": stride, "padding": padding}
    return new_tensor("MaxPool", [x], x.dtype, shape, name, **attrs)


def max_pool_grad(
    orig_input: Any,
    orig_output: Any,
    grad: Any,
    ksize: Sequence[int],
    strides: Sequence[int],
    padding: str,
    data_format: str = "NHWC",
    name: str | None = None,
) -> Tensor:
    """The gradient of :func:`max_pool` with respect to its input: each window's gradient
    goes to the window's first element equal to its maximum ``orig_output``."""
    where = "max_pool_grad"
    _check_nhwc(data_format, None, where)
    padding = _padding(padding, where)
    window = _spatial(ksize, "ksize", where)
    stride = _spatial(strides, "strides", where)
    x = _floats(orig_input, "orig_input", 4, where)
    y = _floats(orig_output, "orig_output", 4, where)
    g = _floats(grad, "grad", 4, where)
    _same_dtype(x, g, where)
    attrs = {"ksize": window, "strides": stride, "padding": padding}
    return new_tensor("MaxPoolGrad", [x, y, g], x.dtype, x.shape, name, **attrs)


# -- gradients ------------------------------------------------------------------------------------
def _sizes_of(t: Tensor, batch_open: bool) -> Any:
    """``t``'s shape for a backward op: its static shape (with a batch size unknown until the
    graph runs as -1, when ``batch_open``), or else its runtime shape (a ``Shape`` op)."""
    dims = t.shape if t.shape is not None else (None,) * 4
    if None in dims[1 if batch_open else 0 :]:
        return shape_ops.shape(t)
    return [-1 if d is None else int(d) for d in dims]


@register_gradient("Conv2D")
def _conv2d_grad(op: Operation, grad: Tensor) -> list[Tensor]:
    x, w = op.inputs
    strides = [1, *op.attrs["strides"], 1]
    padding = op.attrs["padding"]
    return [
        conv2d_backprop_input(_sizes_of(x, True), w, grad, strides, padding),
        conv2d_backprop_filter(x, _sizes_of(w, False), grad, strides, padding),
    ]


@register_gradient("MaxPool")
def _max_pool_grad_fn(op: Operation, grad: Tensor) -> list[Tensor]:
    x, y = op.inputs[0], op.outputs[0]
    ksize, strides = [1, *op.attrs["ksize"], 1], [1, *op.attrs["strides"], 1]
    return [max_pool_grad(x, y, grad, ksize, strides, op.attrs["padding"])]


@register_gradient("Conv2DBackpropInput")
def _conv2d_backprop_input_grad(op: Operation, grad: Tensor) -> list[Tensor | None]:
    """As TensorFlow's (``conv2d_transpose`` is this op): none for the sizes, then
    ``conv2d_backprop_filter(grad, ...)`` for the filter and ``conv2d(grad, filter)`` for the
    gradient input, both linear maps' adjoints."""
    _, w, out_backprop = op.inputs
    strides = [1, *op.attrs["strides"], 1]
    padding = op.attrs["padding"]
    return [
        None,
        conv2d_backprop_filter(grad, _sizes_of(w, False), out_backprop, strides, padding),
        conv2d(grad, w, strides, padding),
    ]
