"""Average pooling over ``NHWC`` images (``tf.nn.avg_pool``) and its backward op.

``AvgPool`` is TensorFlow 1's op with its padding rules (:func:`daskgraph.ops.conv.output_size`):
with ``"SAME"`` padding a window at the border averages only the input elements it covers,
never the padding. Its gradient is an op of its own, ``AvgPoolGrad`` (each window's gradient
shared equally among the elements it averaged), whose own gradient is ``avg_pool`` again, as
in TensorFlow. The kernels reuse the strided window views of :mod:`daskgraph.ops.conv`, so they
run on NumPy and CuPy alike.

>>> import daskgraph as dg
>>> with dg.Graph().as_default():
...     images = dg.placeholder(dg.float32, [None, 7, 7, 3])
...     avg_pool(images, [1, 2, 2, 1], [1, 2, 2, 1], "SAME").shape
(None, 4, 4, 3)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from daskgraph.framework import dtypes
from daskgraph.framework.gradient_registry import register_gradient
from daskgraph.framework.graph import Operation, Tensor, new_tensor
from daskgraph.framework.op_registry import register
from daskgraph.kernels.pooling import _avg_pool, _avg_pool_grad
from daskgraph.ops.conv import (
    _check_nhwc,
    _floats,
    _out_shape,
    _padding,
    _sizes,
    _sizes_of,
    _spatial,
    max_pool,
)

__all__ = ["avg_pool", "avg_pool2d", "avg_pool_grad", "max_pool2d"]

_FLOAT = dtypes.FLOATING
_SIZES = frozenset({dtypes.int32, dtypes.int64})


register("AvgPool", _avg_pool, cpu=_FLOAT, gpu=_FLOAT)
register("AvgPoolGrad", _avg_pool_grad, cpu=_FLOAT | _SIZES, gpu=_FLOAT | _SIZES)


# -- builders -------------------------------------------------------------------------------------
def avg_pool(
    value: Any,
    ksize: Sequence[int],
    strides: Sequence[int],
    padding: str,
    data_format: str = "NHWC",
    name: str | None = None,
    input: Any = None,
) -> Tensor:
    """The mean of each ``ksize`` window (``[1, kh, kw, 1]``) of ``NHWC`` images, moved by
    ``strides``; with ``"SAME"`` padding a border window averages only the elements it covers.

    Examples
    --------
    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     x = dg.reshape(dg.constant([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]]),
    ...                    [1, 3, 3, 1])
    ...     y = avg_pool(x, [1, 2, 2, 1], [1, 2, 2, 1], "SAME")
    ...     with dg.Session() as sess:
    ...         sess.run(y)[0, :, :, 0].tolist()
    [[3.0, 4.5], [7.5, 9.0]]
    >>> with dg.Graph().as_default():
    ...     avg_pool(dg.constant(1.0, shape=[1, 2, 2, 1]), [1, 3, 3, 1], [1, 1, 1, 1], "VALID")
    Traceback (most recent call last):
    ...
    ValueError: avg_pool: the window of size 3 is larger than the input of size 2 with VALID \
padding
    """
    where = "avg_pool"
    _check_nhwc(data_format, None, where)
    value = input if value is None else value
    padding = _padding(padding, where)
    window = _spatial(ksize, "ksize", where)
    stride = _spatial(strides, "strides", where)
    x = _floats(value, "value", 4, where)
    channels = None if x.shape is None else x.shape[3]
    shape = _out_shape(x.shape, window, stride, padding, channels, where)
    attrs = {"ksize": window, "strides": stride, "padding": padding}
    return new_tensor("AvgPool", [x], x.dtype, shape, name, **attrs)


avg_pool2d = avg_pool  # TensorFlow 1's other name for it


def max_pool2d(
    input: Any,
    ksize: Sequence[int],
    strides: Sequence[int],
    padding: str,
    data_format: str = "NHWC",
    name: str | None = None,
) -> Tensor:
    """:func:`~daskgraph.ops.conv.max_pool` under TensorFlow 1's other name, whose first
    argument is ``input``.

    Examples
    --------
    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     x = dg.zeros([1, 4, 4, 2])
    ...     max_pool2d(input=x, ksize=2, strides=2, padding="VALID").shape
    (1, 2, 2, 2)
    """
    return max_pool(input, ksize, strides, padding, data_format=data_format, name=name)


def avg_pool_grad(
    orig_input_shape: Any,
    grad: Any,
    ksize: Sequence[int],
    strides: Sequence[int],
    padding: str,
    data_format: str = "NHWC",
    name: str | None = None,
) -> Tensor:
    """The gradient of :func:`avg_pool` with respect to its input, of shape
    ``orig_input_shape`` (4 ints or an int32 vector; a batch size of -1 means ``grad``'s):
    each window's gradient divided equally among the elements it averaged."""
    where = "avg_pool_grad"
    _check_nhwc(data_format, None, where)
    padding = _padding(padding, where)
    window = _spatial(ksize, "ksize", where)
    stride = _spatial(strides, "strides", where)
    sizes, shape = _sizes(orig_input_shape, 4, "orig_input_shape", where)
    g = _floats(grad, "grad", 4, where)
    if shape[0] is None and g.shape is not None:
        shape = (g.shape[0], *shape[1:])
    attrs = {"ksize": window, "strides": stride, "padding": padding}
    return new_tensor("AvgPoolGrad", [sizes, g], g.dtype, shape, name, **attrs)


# -- gradients ------------------------------------------------------------------------------------
def _window_args(op: Operation) -> tuple[list[int], list[int], str]:
    return [1, *op.attrs["ksize"], 1], [1, *op.attrs["strides"], 1], op.attrs["padding"]


@register_gradient("AvgPool")
def _avg_pool_grad_fn(op: Operation, grad: Tensor) -> list[Tensor]:
    return [avg_pool_grad(_sizes_of(op.inputs[0], True), grad, *_window_args(op))]


@register_gradient("AvgPoolGrad")
def _avg_pool_grad_grad(op: Operation, grad: Tensor) -> list[Tensor | None]:
    """``AvgPoolGrad`` is linear in its gradient input, and its adjoint is ``avg_pool``."""
    return [None, avg_pool(grad, *_window_args(op))]
