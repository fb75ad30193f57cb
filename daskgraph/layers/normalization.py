"""TF1's batch normalization layer: ``tf.layers.batch_normalization`` and its class.

It keeps ``<scope>/gamma`` and ``<scope>/beta`` (trainable, when ``scale`` / ``center``) and
``<scope>/moving_mean`` and ``<scope>/moving_variance`` (not trainable, in
``GLOBAL_VARIABLES``). While ``training`` it normalises with the batch's mean and variance
over every axis but ``axis`` and adds two update ops to ``UPDATE_OPS``, each moving its
average ``momentum`` of the way less towards the batch's
(``moving -= (moving - batch) * (1 - momentum)``); TF1 programs run them with the training
step::

    update_ops = tf.get_collection(tf.GraphKeys.UPDATE_OPS)
    with tf.control_dependencies(update_ops):
        train_op = optimizer.minimize(loss)

Otherwise it normalises with the moving averages. As TensorFlow's, 4-D inputs normalised over
their channels (``axis`` 1 or 3, ``fused`` left None) take the moving variance from the
batch's unbiased variance (TensorFlow's fused kernel's), other inputs from the biased one.
``training`` may be a scalar bool tensor: the batch's or the moving statistics are then
selected when the graph runs, and the update ops move the averages by zero when it is false.

>>> import numpy as np
>>> import daskgraph as dg
>>> with dg.Graph().as_default():
...     x = dg.constant(np.array([[1.0, 2.0], [3.0, 6.0]], np.float32))
...     y = batch_normalization(x, training=True, momentum=0.5)
...     update_ops = dg.get_default_graph().get_collection("update_ops")
...     with dg.Session() as sess:
...         sess.run(dg.global_variables_initializer())
...         normalised = sess.run(y)
...         _ = sess.run(update_ops)
...         moving = sess.run(dg.global_variables()[2:])
>>> normalised.round(3).tolist(), [m.tolist() for m in moving]
([[-1.0, -1.0], [1.0, 1.0]], [[1.0, 2.0], [1.0, 2.5]])
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from daskgraph.framework.graph import Tensor, name_scope
from daskgraph.layers.base import Layer, check_no_constraint
from daskgraph.ops.array import cast, constant, convert_to_tensor, reshape
from daskgraph.ops.elementwise import rsqrt, squared_difference
from daskgraph.ops.initializers import ones_initializer, zeros_initializer
from daskgraph.ops.logic import where
from daskgraph.ops.math import reduce_mean
from daskgraph.ops.shape_ops import size, stop_gradient
from daskgraph.ops.state import Variable, assign_sub

__all__ = ["BatchNormalization", "batch_normalization"]

#: the smallest epsilon TensorFlow's fused kernel takes (it raises smaller ones to this)
_FUSED_MIN_EPSILON = 1.001e-5


class BatchNormalization(Layer):
    """Batch normalization (``tf.layers.BatchNormalization``); call it with ``training``
    (a Python bool or a scalar bool tensor; default False).

    Parameters
    ----------
    axis
        The features axis (normalised separately); the others are averaged over.
    momentum
        How much of a moving average stays at each update.
    epsilon
        Added to the variance before its square root.
    center, scale
        Whether to add ``beta`` / multiply by ``gamma``.
    beta_initializer, gamma_initializer, moving_mean_initializer, moving_variance_initializer
        Their variables' initializers (zeros, ones, zeros, ones by default).
    beta_regularizer, gamma_regularizer
        Functions of the variable whose results join ``REGULARIZATION_LOSSES``.
    fused
        None or True: TensorFlow's fused kernel's unbiased moving variance for 4-D inputs;
        False: the biased one.
    renorm, virtual_batch_size, adjustment, beta_constraint, gamma_constraint
        Not supported (must keep their defaults).
    """

    def __init__(
        self,
        axis: int = -1,
        momentum: float = 0.99,
        epsilon: float = 1e-3,
        center: bool = True,
        scale: bool = True,
        beta_initializer: Any = None,
        gamma_initializer: Any = None,
        moving_mean_initializer: Any = None,
        moving_variance_initializer: Any = None,
        beta_regularizer: Callable[[Any], Any] | None = None,
        gamma_regularizer: Callable[[Any], Any] | None = None,
        beta_constraint: Any = None,
        gamma_constraint: Any = None,
        renorm: bool = False,
        renorm_clipping: Any = None,
        renorm_momentum: float = 0.99,
        fused: bool | None = None,
        trainable: bool = True,
        virtual_batch_size: int | None = None,
        adjustment: Any = None,
        name: str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(trainable, name, **kwargs)
        check_no_constraint(
            "BatchNormalization",
            beta_constraint=beta_constraint,
            gamma_constraint=gamma_constraint,
            renorm_clipping=renorm_clipping,
            virtual_batch_size=virtual_batch_size,
            adjustment=adjustment,
        )
        if renorm:
            raise ValueError("BatchNormalization: renorm is not supported by daskgraph")
        self.axis = _one_axis(axis)
        self.momentum = float(momentum)
        self.epsilon = float(epsilon)
        self.center, self.scale = bool(center), bool(scale)
        self.beta_initializer = beta_initializer or zeros_initializer()
        self.gamma_initializer = gamma_initializer or ones_initializer()
        self.moving_mean_initializer = moving_mean_initializer or zeros_initializer()
        self.moving_variance_initializer = moving_variance_initializer or ones_initializer()
        self.beta_regularizer, self.gamma_regularizer = beta_regularizer, gamma_regularizer
        self.fused = fused
        self.gamma: Variable | None = None
        self.beta: Variable | None = None
        self.moving_mean: Any = None
        self.moving_variance: Any = None

    def build(self, input_shape: Any) -> None:
        """Make gamma, beta, moving_mean and moving_variance, one value per feature."""
        if input_shape is None:
            raise ValueError("BatchNormalization: the rank of the inputs must be known")
        rank = len(input_shape)
        if not -rank <= self.axis < rank:
            raise ValueError(f"Invalid axis: {self.axis} for inputs of rank {rank}")
        self.axis %= rank
        features = input_shape[self.axis]
        if features is None:
            raise ValueError(
                f"Input has undefined `axis` dimension. Received input with shape "
                f"{tuple(input_shape)} and axis={self.axis}"
            )
        fusable = rank == 4 and self.axis in (1, 3)
        if self.fused and not fusable:
            raise ValueError(
                "BatchNormalization: fused=True needs 4-D inputs normalised over axis 1 or 3"
            )
        self.fused = fusable if self.fused is None else bool(self.fused)
        if self.fused:
            self.epsilon = max(self.epsilon, _FUSED_MIN_EPSILON)
        shape = [features]
        if self.scale:
            self.gamma = self.add_weight(
                "gamma", shape, None, self.gamma_initializer, self.gamma_regularizer
            )
        if self.center:
            self.beta = self.add_weight(
                "beta", shape, None, self.beta_initializer, self.beta_regularizer
            )
        init = self.moving_mean_initializer
        self.moving_mean = self.add_weight("moving_mean", shape, None, init, trainable=False)
        init = self.moving_variance_initializer
        self.moving_variance = self.add_weight("moving_variance", shape, None, init,
                                               trainable=False)  # fmt: skip

    def call(self, inputs: Tensor, training: Any = False) -> Tensor:
        """``inputs`` normalised with the batch's statistics (``training``) or the moving
        ones, scaled by gamma and shifted by beta."""
        rank = len(inputs.shape)
        axes = [i for i in range(rank) if i != self.axis]
        if training is None or isinstance(training, (bool, np.bool_)):
            if not training:
                return self._normalize(inputs, self._moving(self.moving_mean, rank),
                                       self._moving(self.moving_variance, rank))  # fmt: skip
            training = None
        else:
            training = convert_to_tensor(training)
        with name_scope("moments"):
            mean = reduce_mean(inputs, axes, keepdims=True, name="mean")
            deviation = squared_difference(inputs, stop_gradient(mean))
            variance = reduce_mean(deviation, axes, keepdims=True, name="variance")
        new_mean, new_variance = self._flat(mean), self._moving_target(inputs, variance, axes)
        if training is not None:
            mean = where(training, mean, self._moving(self.moving_mean, rank))
            variance = where(training, variance, self._moving(self.moving_variance, rank))
            new_mean = where(training, new_mean, self.moving_mean.value())
            new_variance = where(training, new_variance, self.moving_variance.value())
        self.add_update(self._assign_moving_average(self.moving_mean, new_mean))
        self.add_update(self._assign_moving_average(self.moving_variance, new_variance))
        return self._normalize(inputs, mean, variance)

    # -- pieces ---------------------------------------------------------------------------------
    def _broadcast_shape(self, rank: int) -> list[int]:
        shape = [1] * rank
        shape[self.axis] = int(self.moving_mean.shape[0])
        return shape

    def _moving(self, variable: Any, rank: int) -> Tensor:
        """A parameter shaped to broadcast against the inputs."""
        if self.axis == rank - 1:
            return variable.value()
        return reshape(variable.value(), self._broadcast_shape(rank))

    def _flat(self, statistic: Tensor) -> Tensor:
        return reshape(statistic, [int(self.moving_mean.shape[0])])

    def _moving_target(self, inputs: Tensor, variance: Tensor, axes: list[int]) -> Tensor:
        """The batch variance the moving variance moves towards: unbiased when fused."""
        variance = self._flat(variance)
        if not self.fused:
            return variance
        counted = [inputs.shape[i] for i in axes]
        if None not in counted:
            n = constant(float(math.prod(counted)), dtype=variance.dtype)
        else:
            features = float(self.moving_mean.shape[0])
            n = cast(size(inputs), variance.dtype) / features
        return variance * (n / (n - 1.0))

    def _assign_moving_average(self, variable: Any, value: Tensor) -> Tensor:
        """``variable -= (variable - value) * (1 - momentum)``."""
        with name_scope("AssignMovingAvg"):
            decay = constant(1.0 - self.momentum, dtype=variable.dtype, name="decay")
            delta = (variable.value() - value) * decay
            return assign_sub(variable, delta)

    def _normalize(self, inputs: Tensor, mean: Tensor, variance: Tensor) -> Tensor:
        """``inputs * inv + (beta - mean * inv)`` with ``inv = gamma / sqrt(variance + eps)``,
        as TensorFlow's ``nn.batch_normalization``."""
        rank = len(inputs.shape)
        with name_scope("batchnorm"):
            inv = rsqrt(variance + constant(self.epsilon, dtype=variance.dtype))
            if self.gamma is not None:
                inv = inv * self._moving(self.gamma, rank)
            shift = -(mean * inv)
            if self.beta is not None:
                shift = self._moving(self.beta, rank) - mean * inv
            return inputs * inv + shift


def _one_axis(axis: Any) -> int:
    if isinstance(axis, (list, tuple)):
        if len(axis) != 1:
            raise ValueError(
                f"BatchNormalization: daskgraph normalises over one axis only; got axis={axis!r}"
            )
        axis = axis[0]
    if isinstance(axis, bool) or not isinstance(axis, (int, np.integer)):
        raise TypeError(f"BatchNormalization: axis must be an int; got {axis!r}")
    return int(axis)


def batch_normalization(
    inputs: Any,
    axis: int = -1,
    momentum: float = 0.99,
    epsilon: float = 1e-3,
    center: bool = True,
    scale: bool = True,
    beta_initializer: Any = None,
    gamma_initializer: Any = None,
    moving_mean_initializer: Any = None,
    moving_variance_initializer: Any = None,
    beta_regularizer: Callable[[Any], Any] | None = None,
    gamma_regularizer: Callable[[Any], Any] | None = None,
    beta_constraint: Any = None,
    gamma_constraint: Any = None,
    training: Any = False,
    trainable: bool = True,
    name: str | None = None,
    reuse: Any = None,
    renorm: bool = False,
    renorm_clipping: Any = None,
    renorm_momentum: float = 0.99,
    fused: bool | None = None,
    virtual_batch_size: int | None = None,
    adjustment: Any = None,
) -> Tensor:
    """``tf.layers.batch_normalization``: a :class:`BatchNormalization` layer applied once
    to ``inputs``; with ``training`` (a bool or a bool tensor) its moving-average updates
    join ``UPDATE_OPS``.

    Examples
    --------
    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     y = batch_normalization(dg.placeholder(dg.float32, [None, 4]), training=True)
    ...     names = [v.op.name for v in dg.global_variables()]
    ...     updates = dg.get_default_graph().get_collection("update_ops")
    ...     names, len(updates), [v.op.name for v in dg.trainable_variables()]
    (['batch_normalization/gamma', 'batch_normalization/beta', \
'batch_normalization/moving_mean', 'batch_normalization/moving_variance'], 2, \
['batch_normalization/gamma', 'batch_normalization/beta'])
    """
    layer = BatchNormalization(
        axis,
        momentum,
        epsilon,
        center,
        scale,
        beta_initializer,
        gamma_initializer,
        moving_mean_initializer,
        moving_variance_initializer,
        beta_regularizer,
        gamma_regularizer,
        beta_constraint,
        gamma_constraint,
        renorm,
        renorm_clipping,
        renorm_momentum,
        fused,
        trainable,
        virtual_batch_size,
        adjustment,
        name,
        _reuse=reuse,
    )
    return layer(inputs, training=training)
