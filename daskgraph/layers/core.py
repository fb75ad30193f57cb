"""TF1's core layers: ``dense``, ``flatten`` and ``dropout``, as classes and functions.

``dense(inputs, units)`` makes ``<scope>/kernel`` (``[in, units]``, Glorot uniform unless the
variable scope or ``kernel_initializer`` says otherwise) and ``<scope>/bias`` (zeros), and
computes ``activation(inputs @ kernel + bias)``; inputs of rank above 2 are multiplied along
their last axis, as TensorFlow's ``tensordot``.

>>> import numpy as np
>>> import daskgraph as dg
>>> with dg.Graph().as_default():
...     x = dg.placeholder(dg.float32, [None, 3])
...     h = dense(x, 4, activation=dg.nn.relu)
...     y = dense(h, 2, kernel_initializer=dg.ones_initializer())
...     with dg.Session() as sess:
...         sess.run(dg.global_variables_initializer())
...         out = sess.run(y, {x: np.ones((5, 3))})
...     [v.op.name for v in dg.trainable_variables()], h.op.name, y.op.name, out.shape
(['dense/kernel', 'dense/bias', 'dense_1/kernel', 'dense_1/bias'], 'dense/Relu', \
'dense_1/BiasAdd', (5, 2))
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from daskgraph.framework.graph import Tensor, name_scope
from daskgraph.layers.base import (
    Layer,
    add_kernel_and_bias,
    check_no_constraint,
    keep_kernel_and_bias,
)
from daskgraph.ops.array import convert_to_tensor, identity, reshape, transpose
from daskgraph.ops.control_flow import cond
from daskgraph.ops.math import matmul, multiply, reduce_sum
from daskgraph.ops.nn import bias_add
from daskgraph.ops.nn import dropout as nn_dropout
from daskgraph.ops.shape_ops import expand_dims

__all__ = ["Dense", "Dropout", "Flatten", "dense", "dropout", "flatten"]


def check_min_rank(layer: Layer, inputs: Tensor, rank: int) -> None:
    """Refuse inputs of a known rank below ``rank``, in Keras's words."""
    if inputs.shape is not None and len(inputs.shape) < rank:
        raise ValueError(
            f'Input 0 of layer "{layer.name}" is incompatible with the layer: expected '
            f"min_ndim={rank}, found ndim={len(inputs.shape)}. Full shape received: "
            f"{tuple(inputs.shape)}"
        )


def check_rank(layer: Layer, inputs: Tensor, rank: int) -> None:
    """Refuse inputs of a known rank other than ``rank``, in Keras's words."""
    if inputs.shape is not None and len(inputs.shape) != rank:
        raise ValueError(
            f'Input 0 of layer "{layer.name}" is incompatible with the layer: expected '
            f"ndim={rank}, found ndim={len(inputs.shape)}. Full shape received: "
            f"{tuple(inputs.shape)}"
        )


class Dense(Layer):
    """A densely connected layer: ``activation(inputs @ kernel + bias)`` (``tf.layers.Dense``).

    Parameters
    ----------
    units
        The size of the output's last axis.
    activation
        A function applied to the output (None: linear).
    use_bias
        Whether to add ``bias``.
    kernel_initializer, bias_initializer
        Initializers of ``kernel`` (default: the variable scope's, else Glorot uniform) and
        ``bias`` (default: zeros).
    kernel_regularizer, bias_regularizer
        Functions of the variable whose results join ``REGULARIZATION_LOSSES``.
    kernel_constraint, bias_constraint
        Not supported (must be None).
    """

    def __init__(
        self,
        units: int,
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
            "Dense", kernel_constraint=kernel_constraint, bias_constraint=bias_constraint
        )
        if isinstance(units, bool) or not isinstance(units, (int, np.integer)) or units <= 0:
            raise ValueError(
                "Received an invalid value for `units`, expected a positive integer. "
                f"Received: units={units!r}"
            )
        self.units = int(units)
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
        """Make ``kernel`` ``[in, units]`` and ``bias`` ``[units]``."""
        last = None if input_shape is None or not input_shape else input_shape[-1]
        if last is None:
            raise ValueError(
                "The last dimension of the inputs to a Dense layer should be defined. Found None."
            )
        add_kernel_and_bias(self, [last, self.units], self.units)

    def __call__(self, inputs: Any, *args: Any, **kwargs: Any) -> Any:
        """Build the layer on the first call, then apply it to ``inputs``."""
        check_min_rank(self, convert_to_tensor(inputs), 2)
        return super().__call__(inputs, *args, **kwargs)

    def call(self, inputs: Tensor) -> Tensor:
        """``activation(inputs @ kernel + bias)`` along the last axis of ``inputs``."""
        if inputs.shape is None or len(inputs.shape) <= 2:
            outputs = matmul(inputs, self.kernel)
        else:
            outputs = _tensordot_last(inputs, self.kernel.value())
        if self.use_bias:
            outputs = bias_add(outputs, self.bias)
        if self.activation is not None:
            outputs = self.activation(outputs)
        return outputs


def _tensordot_last(x: Tensor, kernel: Tensor) -> Tensor:
    """``x`` (rank > 2) times ``kernel`` along ``x``'s last axis: one matrix product of the
    flattened leading axes when all but the first are known, else a broadcast product summed
    over the input axis."""
    with name_scope("Tensordot"):
        middle = tuple(x.shape[1:-1])
        if None not in middle:
            product = matmul(reshape(x, [-1, x.shape[-1]]), kernel)
            return reshape(product, [-1, *middle, kernel.shape[-1]])
        return reduce_sum(multiply(expand_dims(x, -1), kernel), axis=-2)


class Flatten(Layer):
    """Flattens each example of ``inputs`` to a vector, keeping the batch axis
    (``tf.layers.Flatten``; ``data_format="channels_first"`` moves the channels last
    first)."""

    def __init__(
        self, data_format: str | None = "channels_last", name: str | None = None, **kwargs: Any
    ) -> None:
        super().__init__(True, name, **kwargs)
        self.data_format = channels_format(data_format, "Flatten")

    def call(self, inputs: Tensor) -> Tensor:
        """``inputs`` reshaped to ``[batch, -1]``."""
        check_min_rank(self, inputs, 1)
        shape = inputs.shape
        if shape is None:
            raise ValueError("flatten: the rank of the inputs must be known")
        if len(shape) == 1:
            return expand_dims(inputs, 1)
        if self.data_format == "channels_first" and len(shape) > 2:
            inputs = transpose(inputs, [0, *range(2, len(shape)), 1])
            shape = inputs.shape
        rest = shape[1:]
        if None not in rest:
            return reshape(inputs, [-1, math.prod(rest)])
        if shape[0] is not None:
            return reshape(inputs, [shape[0], -1])
        raise ValueError(
            f"flatten: daskgraph needs the batch size or the other dimensions of the inputs "
            f"known to flatten them; {inputs.name!r} has shape {shape}"
        )


def channels_format(data_format: Any, where: str) -> str:
    """``channels_last`` (the default, also for None) or ``channels_first``."""
    data_format = "channels_last" if data_format is None else str(data_format).lower()
    if data_format not in ("channels_last", "channels_first"):
        raise ValueError(
            f"{where}: the `data_format` argument must be one of 'channels_first', "
            f"'channels_last'. Received: {data_format!r}"
        )
    return data_format


class Dropout(Layer):
    """Drops elements with probability ``rate`` while training, scaling the others by
    ``1 / (1 - rate)``; the identity otherwise (``tf.layers.Dropout``).

    Calling it takes ``training``: a Python bool, or a scalar bool tensor (then both
    outputs are computed and one is selected, see :func:`~daskgraph.ops.control_flow.cond`).
    """

    def __init__(
        self,
        rate: float = 0.5,
        noise_shape: Any = None,
        seed: int | None = None,
        name: str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(True, name, **kwargs)
        self.rate = rate
        self.noise_shape = noise_shape
        self.seed = seed

    def call(self, inputs: Tensor, training: Any = False) -> Tensor:
        """``inputs`` with dropout when ``training``, else unchanged."""
        if training is None or isinstance(training, (bool, np.bool_)):
            return self._drop(inputs) if training else identity(inputs)
        return cond(training, lambda: self._drop(inputs), lambda: identity(inputs))

    def _drop(self, inputs: Tensor) -> Tensor:
        return nn_dropout(inputs, noise_shape=self._noise_shape(inputs), seed=self.seed,
                          rate=self.rate)  # fmt: skip

    def _noise_shape(self, inputs: Tensor) -> Any:
        """``noise_shape`` with its None entries taken from ``inputs``' shape."""
        if self.noise_shape is None or isinstance(self.noise_shape, Tensor):
            return self.noise_shape
        dims = list(self.noise_shape)
        known = inputs.shape if inputs.shape is not None else (None,) * len(dims)
        filled = [known[i] if d is None else d for i, d in enumerate(dims)]
        if None in filled:
            raise ValueError(
                f"dropout: daskgraph needs the sizes noise_shape leaves as None known; "
                f"{inputs.name!r} has shape {inputs.shape}"
            )
        return filled


# -- TF1's functions ------------------------------------------------------------------------------
def dense(
    inputs: Any,
    units: int,
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
    """``tf.layers.dense``: a :class:`Dense` layer applied once to ``inputs``; ``reuse=True``
    (or a reusing variable scope) takes the variables of the layer called ``name``.

    Examples
    --------
    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     x = dg.constant([[1.0, 2.0]])
    ...     a = dense(x, 3, name="fc")
    ...     b = dense(x, 3, name="fc", reuse=True)
    ...     len(dg.global_variables()), b.op.name
    (2, 'fc_1/BiasAdd')
    """
    layer = Dense(
        units,
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


def flatten(inputs: Any, name: str | None = None, data_format: str = "channels_last") -> Tensor:
    """``tf.layers.flatten``: ``inputs`` reshaped to ``[batch, -1]``.

    Examples
    --------
    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     y = flatten(dg.placeholder(dg.float32, [None, 2, 3, 4]))
    >>> y.shape, y.op.name
    ((None, 24), 'flatten/Reshape')
    """
    return Flatten(data_format=data_format, name=name)(inputs)


def dropout(
    inputs: Any,
    rate: float = 0.5,
    noise_shape: Any = None,
    seed: int | None = None,
    training: Any = False,
    name: str | None = None,
) -> Tensor:
    """``tf.layers.dropout``: ``inputs`` with a fraction ``rate`` of elements dropped (and
    the others scaled by ``1 / (1 - rate)``) when ``training`` (a bool or a bool tensor);
    unchanged otherwise.

    Examples
    --------
    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     x = dg.ones([2, 500])
    ...     y = dropout(x, 0.5, training=True, seed=3)
    ...     with dg.Session() as sess:
    ...         sorted(set(sess.run(y).ravel().tolist())), dropout(x).op.name
    ([0.0, 2.0], 'dropout_1/Identity')
    """
    return Dropout(rate, noise_shape, seed, name)(inputs, training=training)
