"""TF1's 2-D convolution and pooling layers: ``conv2d``, ``max_pooling2d`` and
``average_pooling2d``, as classes and functions.

``conv2d(inputs, filters, kernel_size)`` makes ``<scope>/kernel``
(``[kernel_h, kernel_w, in_channels, filters]``) and ``<scope>/bias`` and computes
``activation(conv2d(inputs, kernel) + bias)`` with :func:`daskgraph.ops.conv.conv2d`.
Images are ``channels_last`` (``NHWC``) by default; ``channels_first`` (``NCHW``) inputs are
transposed to ``NHWC`` around the convolution and the pooling, as TensorFlow does on CPUs.

>>> import daskgraph as dg
>>> with dg.Graph().as_default():
...     images = dg.placeholder(dg.float32, [None, 28, 28, 1])
...     h = conv2d(images, 8, 5, padding="same", activation=dg.nn.relu)
...     p = max_pooling2d(h, 2, 2)
...     q = average_pooling2d(p, 3, 1)
...     [v.op.name for v in dg.global_variables()], h.shape, p.shape, q.shape
(['conv2d/kernel', 'conv2d/bias'], (None, 28, 28, 8), (None, 14, 14, 8), (None, 12, 12, 8))
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from daskgraph.framework.graph import Tensor
from daskgraph.layers.base import (
    Layer,
    add_kernel_and_bias,
    check_no_constraint,
    keep_kernel_and_bias,
)
from daskgraph.layers.core import channels_format, check_rank
from daskgraph.ops.array import convert_to_tensor, transpose
from daskgraph.ops.conv import conv2d as nn_conv2d
from daskgraph.ops.conv import max_pool
from daskgraph.ops.nn import bias_add
from daskgraph.ops.pooling import avg_pool

__all__ = [
    "AveragePooling2D",
    "Conv2D",
    "MaxPooling2D",
    "average_pooling2d",
    "conv2d",
    "max_pooling2d",
]

_TO_NHWC = [0, 2, 3, 1]
_TO_NCHW = [0, 3, 1, 2]


def normalize_pair(value: Any, what: str) -> tuple[int, int]:
    """An int or a pair of ints as a pair, refused otherwise in Keras's words.

    >>> normalize_pair(3, "kernel_size"), normalize_pair([2, 1], "strides")
    ((3, 3), (2, 1))
    >>> normalize_pair((1, 2, 3), "strides")
    Traceback (most recent call last):
    ...
    ValueError: The `strides` argument must be a tuple of 2 integers. Received: (1, 2, 3)
    """
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        items = [int(value)] * 2
    else:
        try:
            items = [int(v) for v in value]
        except (TypeError, ValueError):
            items = []
        if len(items) != 2 or any(isinstance(v, bool) for v in value):
            raise ValueError(
                f"The `{what}` argument must be a tuple of 2 integers. Received: {value!r}"
            )
    if any(v < 1 for v in items):
        raise ValueError(
            f"The `{what}` argument must be a tuple of 2 positive integers. Received: {value!r}"
        )
    return items[0], items[1]


def normalize_padding(padding: Any) -> str:
    """``"valid"`` or ``"same"`` (either case) as the ops' ``"VALID"`` / ``"SAME"``."""
    text = padding.lower() if isinstance(padding, str) else padding
    if text not in ("valid", "same"):
        raise ValueError(
            f'The `padding` argument must be one of "valid", "same". Received: {padding!r}'
        )
    return text.upper()


class Conv2D(Layer):
    """A 2-D convolution layer (``tf.layers.Conv2D``): ``activation(conv2d(inputs, kernel) +
    bias)``.

    Parameters
    ----------
    filters
        The number of output channels.
    kernel_size, strides
        An int or a pair of ints (height, width).
    padding
        ``"valid"`` or ``"same"``.
    data_format
        ``"channels_last"`` (``NHWC``) or ``"channels_first"`` (``NCHW``).
    dilation_rate
        Must be 1: dilated convolutions are not supported.
    activation, use_bias, kernel_initializer, bias_initializer, kernel_regularizer,
    bias_regularizer, activity_regularizer
        As :class:`~daskgraph.layers.core.Dense`'s.
    """

    def __init__(
        self,
        filters: int,
        kernel_size: Any,
        strides: Any = (1, 1),
        padding: str = "valid",
        data_format: str = "channels_last",
        dilation_rate: Any = (1, 1),
        activation: Callable[[Tensor], Tensor] | None = None,
        use_bias: bool = True,
        kernel_initializer: Any = None,
        bias_initializer: Any = None,
        kernel_regularizer: Callable[[Any], Any] | None = None,
        bias_regularizer: Callable[[Any], Any] | None = None,
        activity_regularizer: Callable[[Tensor], Any] | None = None,
        kernel_constraint: Any = None,
        bias_constraint: Any = None,
        trainable: bool = True,
        name: str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(trainable, name, activity_regularizer=activity_regularizer, **kwargs)
        check_no_constraint(
            "Conv2D", kernel_constraint=kernel_constraint, bias_constraint=bias_constraint
        )
        if isinstance(filters, bool) or not isinstance(filters, (int, np.integer)) or filters <= 0:
            raise ValueError(
                "Invalid value for argument `filters`. Expected a strictly positive value. "
                f"Received filters={filters!r}."
            )
        if normalize_pair(dilation_rate, "dilation_rate") != (1, 1):
            raise ValueError(
                f"Conv2D: dilation_rate other than 1 is not supported by daskgraph; got "
                f"{dilation_rate!r}"
            )
        self.filters = int(filters)
        self.kernel_size = normalize_pair(kernel_size, "kernel_size")
        self.strides = normalize_pair(strides, "strides")
        self.padding = normalize_padding(padding)
        self.data_format = channels_format(data_format, "Conv2D")
        keep_kernel_and_bias(
            self,
            activation,
            use_bias,
            kernel_initializer,
            bias_initializer,
            kernel_regularizer,
            bias_regularizer,
        )

    def build(self, input_shape: Any) -> None:
        """Make ``kernel`` ``[kh, kw, in_channels, filters]`` and ``bias`` ``[filters]``."""
        axis = 1 if self.data_format == "channels_first" else -1
        channels = None if input_shape is None else input_shape[axis]
        if channels is None:
            raise ValueError(
                "The channel dimension of the inputs should be defined. The input_shape "
                f"received is {input_shape}, where axis {axis} (0-based) is the channel "
                "dimension, which found to be `None`."
            )
        shape = [*self.kernel_size, channels, self.filters]
        add_kernel_and_bias(self, shape, self.filters)

    def __call__(self, inputs: Any, *args: Any, **kwargs: Any) -> Any:
        """Build the layer on the first call, then apply it to ``inputs``."""
        check_rank(self, convert_to_tensor(inputs), 4)
        return super().__call__(inputs, *args, **kwargs)

    def call(self, inputs: Tensor) -> Tensor:
        """The convolution of ``inputs`` (plus bias, through the activation)."""
        first = self.data_format == "channels_first"
        x = transpose(inputs, _TO_NHWC) if first else inputs
        strides = [1, *self.strides, 1]
        outputs = nn_conv2d(x, self.kernel.value(), strides, self.padding)
        if first:
            outputs = transpose(outputs, _TO_NCHW)
        if self.use_bias:
            outputs = bias_add(outputs, self.bias, data_format="NCHW" if first else "NHWC")
        if self.activation is not None:
            outputs = self.activation(outputs)
        return outputs


class _Pooling2D(Layer):
    """A 2-D pooling layer: ``pool`` over windows of ``pool_size`` moved by ``strides``."""

    _pool: Callable[..., Tensor]

    def __init__(
        self,
        pool_size: Any,
        strides: Any,
        padding: str = "valid",
        data_format: str = "channels_last",
        name: str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(True, name, **kwargs)
        self.pool_size = normalize_pair(pool_size, "pool_size")
        self.strides = normalize_pair(self.pool_size if strides is None else strides, "strides")
        self.padding = normalize_padding(padding)
        self.data_format = channels_format(data_format, type(self).__name__)

    def __call__(self, inputs: Any, *args: Any, **kwargs: Any) -> Any:
        """Apply the pooling to ``inputs`` (a batch of images)."""
        check_rank(self, convert_to_tensor(inputs), 4)
        return super().__call__(inputs, *args, **kwargs)

    def call(self, inputs: Tensor) -> Tensor:
        """The pooled ``inputs``."""
        first = self.data_format == "channels_first"
        x = transpose(inputs, _TO_NHWC) if first else inputs
        pool = type(self)._pool
        outputs = pool(x, [1, *self.pool_size, 1], [1, *self.strides, 1], self.padding)
        return transpose(outputs, _TO_NCHW) if first else outputs


class MaxPooling2D(_Pooling2D):
    """Max pooling over 2-D windows (``tf.layers.MaxPooling2D``).

    Parameters
    ----------
    pool_size, strides
        An int or a pair of ints (height, width).
    padding
        ``"valid"`` or ``"same"``.
    data_format
        ``"channels_last"`` or ``"channels_first"``.
    """

    _pool = staticmethod(max_pool)


class AveragePooling2D(_Pooling2D):
    """Average pooling over 2-D windows (``tf.layers.AveragePooling2D``); with ``"same"``
    padding a border window averages only the elements it covers.

    Parameters
    ----------
    pool_size, strides
        An int or a pair of ints (height, width).
    padding
        ``"valid"`` or ``"same"``.
    data_format
        ``"channels_last"`` or ``"channels_first"``.
    """

    _pool = staticmethod(avg_pool)


# -- TF1's functions ------------------------------------------------------------------------------
def conv2d(
    inputs: Any,
    filters: int,
    kernel_size: Any,
    strides: Any = (1, 1),
    padding: str = "valid",
    data_format: str = "channels_last",
    dilation_rate: Any = (1, 1),
    activation: Callable[[Tensor], Tensor] | None = None,
    use_bias: bool = True,
    kernel_initializer: Any = None,
    bias_initializer: Any = None,
    kernel_regularizer: Callable[[Any], Any] | None = None,
    bias_regularizer: Callable[[Any], Any] | None = None,
    activity_regularizer: Callable[[Tensor], Any] | None = None,
    kernel_constraint: Any = None,
    bias_constraint: Any = None,
    trainable: bool = True,
    name: str | None = None,
    reuse: Any = None,
) -> Tensor:
    """``tf.layers.conv2d``: a :class:`Conv2D` layer applied once to ``inputs``.

    Examples
    --------
    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     x = dg.placeholder(dg.float32, [None, 3, 8, 8])
    ...     y = conv2d(x, 4, (3, 2), strides=2, data_format="channels_first")
    ...     y.shape, dg.global_variables()[0].shape
    ((None, 4, 3, 4), (3, 2, 3, 4))
    >>> with dg.Graph().as_default():
    ...     conv2d(dg.placeholder(dg.float32, [None, 8, 8, 3]), 4, 3, dilation_rate=2)
    Traceback (most recent call last):
    ...
    ValueError: Conv2D: dilation_rate other than 1 is not supported by daskgraph; got 2
    """
    layer = Conv2D(
        filters,
        kernel_size,
        strides,
        padding,
        data_format,
        dilation_rate,
        activation,
        use_bias,
        kernel_initializer,
        bias_initializer,
        kernel_regularizer,
        bias_regularizer,
        activity_regularizer,
        kernel_constraint,
        bias_constraint,
        trainable,
        name,
        _reuse=reuse,
    )
    return layer(inputs)


def max_pooling2d(
    inputs: Any,
    pool_size: Any,
    strides: Any,
    padding: str = "valid",
    data_format: str = "channels_last",
    name: str | None = None,
) -> Tensor:
    """``tf.layers.max_pooling2d``: the maximum of each ``pool_size`` window of ``inputs``,
    moved by ``strides``."""
    return MaxPooling2D(pool_size, strides, padding, data_format, name)(inputs)


def average_pooling2d(
    inputs: Any,
    pool_size: Any,
    strides: Any,
    padding: str = "valid",
    data_format: str = "channels_last",
    name: str | None = None,
) -> Tensor:
    """``tf.layers.average_pooling2d``: the mean of each ``pool_size`` window of ``inputs``,
    moved by ``strides``."""
    return AveragePooling2D(pool_size, strides, padding, data_format, name)(inputs)
