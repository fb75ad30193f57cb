"""The base of TensorFlow 1's ``tf.layers`` classes: a layer's variable scope, weights, losses
and updates.

A :class:`Layer` builds its variables with :func:`~daskgraph.ops.variable_scope.get_variable`
the first time it is called, in a variable scope of its own: its ``name``, or the snake-case
class name made unique (``dense``, ``dense_1``, ...), as TensorFlow 1 does. Every later call
re-enters that scope and its name scope, so one layer applied twice shares its variables
(``dense/MatMul``, ``dense/MatMul_1``). Regularization losses (of weights and of outputs) go
to the ``REGULARIZATION_LOSSES`` collection, and the updates a layer makes while training
(batch normalization's moving averages) to ``UPDATE_OPS``.

>>> import daskgraph as dg
>>> class Scale(Layer):
...     def build(self, input_shape):
...         self.w = self.add_weight("w", [input_shape[-1]], initializer=dg.ones_initializer())
...     def call(self, inputs):
...         return inputs * self.w
>>> with dg.Graph().as_default():
...     layer = Scale()
...     y = layer(dg.constant([[1.0, 2.0]]))
...     y2 = layer(dg.constant([[3.0, 4.0]]))
...     other = Scale()(y)
...     [v.op.name for v in dg.global_variables()], y.op.name, y2.op.name, layer.name
(['scale/w', 'scale_1/w'], 'scale/mul', 'scale/mul_1', 'scale')
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from daskgraph.framework import dtypes
from daskgraph.framework.graph import REGULARIZATION_LOSSES, Tensor, get_default_graph, name_scope
from daskgraph.ops.array import cast, constant, convert_to_tensor
from daskgraph.ops.initializers import zeros_initializer
from daskgraph.ops.losses import LOSSES
from daskgraph.ops.math import divide
from daskgraph.ops.shape_ops import shape as runtime_shape
from daskgraph.ops.state import Variable, global_variables
from daskgraph.ops.variable_scope import VariableScope, get_variable, variable_scope

__all__ = ["LOSSES", "UPDATE_OPS", "Layer", "to_snake_case"]

#: ``tf.GraphKeys.UPDATE_OPS``: the updates to run with a training step (moving averages)
UPDATE_OPS = "update_ops"


def to_snake_case(name: str) -> str:
    """A class name as a layer's default name, as Keras makes it.

    >>> to_snake_case("Dense"), to_snake_case("Conv2D"), to_snake_case("BatchNormalization")
    ('dense', 'conv2d', 'batch_normalization')
    >>> to_snake_case("MaxPooling2D")
    'max_pooling2d'
    """
    step = re.sub(r"(.)([A-Z][a-z0-9]+)", r"\1_\2", name)
    return re.sub(r"([a-z])([A-Z])", r"\1_\2", step).lower()


def check_no_constraint(where: str, **constraints: Any) -> None:
    """Refuse weight constraints: TF1's optimizers do not apply them either, and daskgraph
    has no place to keep them."""
    for what, value in constraints.items():
        if value is not None:
            raise ValueError(f"{where}: {what} is not supported by daskgraph")


def keep_kernel_and_bias(
    layer: Any,
    activation: Callable[[Tensor], Tensor] | None,
    use_bias: bool,
    kernel_initializer: Any,
    bias_initializer: Any,
    kernel_regularizer: Callable[[Any], Any] | None,
    bias_regularizer: Callable[[Any], Any] | None,
) -> None:
    """Keep the arguments of a layer with a ``kernel`` and a ``bias`` (``Dense``, ``Conv2D``)
    as its attributes (``bias_initializer`` zeros by default); no variables yet."""
    layer.activation = activation
    layer.use_bias = bool(use_bias)
    layer.kernel_initializer = kernel_initializer
    layer.bias_initializer = bias_initializer or zeros_initializer()
    layer.kernel_regularizer = kernel_regularizer
    layer.bias_regularizer = bias_regularizer
    layer.kernel = None
    layer.bias = None


def add_kernel_and_bias(layer: Any, kernel_shape: list[Any], units: int) -> None:
    """Make ``layer.kernel`` of ``kernel_shape`` and, where ``layer.use_bias``, ``layer.bias``
    of ``[units]``, with the initializers and regularizers kept by
    :func:`keep_kernel_and_bias`."""
    layer.kernel = layer.add_weight(
        "kernel", kernel_shape, None, layer.kernel_initializer, layer.kernel_regularizer
    )
    if layer.use_bias:
        layer.bias = layer.add_weight(
            "bias", [units], None, layer.bias_initializer, layer.bias_regularizer
        )


class Layer:
    """A TF1 layer (``tf.layers.Layer``): call it on a tensor (or use :meth:`apply`) to build
    its variables once and its ops at each call.

    Parameters
    ----------
    trainable
        Whether its variables join ``TRAINABLE_VARIABLES``.
    name
        The name of its variable scope (default: the snake-case class name, made unique).
    dtype
        The dtype of its variables (default: the first input's, when floating-point).
    activity_regularizer
        A function of the layer's output whose result, divided by the batch size, joins
        ``REGULARIZATION_LOSSES``.
    """

    def __init__(
        self,
        trainable: bool = True,
        name: str | None = None,
        dtype: Any = None,
        activity_regularizer: Callable[[Tensor], Any] | None = None,
        _reuse: Any = None,
    ) -> None:
        if name is not None and not isinstance(name, str):
            raise TypeError(f"{type(self).__name__}: name must be a string; got {name!r}")
        self.trainable = bool(trainable)
        self.dtype = None if dtype is None else dtypes.as_dtype(dtype)
        self.activity_regularizer = activity_regularizer
        self.built = False
        self._given_name = name
        self._base_name = to_snake_case(type(self).__name__)
        self._reuse = _reuse
        self._scope: VariableScope | None = None
        self._weights: list[Variable] = []
        self._losses: list[Tensor] = []
        self._updates: list[Any] = []

    # -- what the layer holds ---------------------------------------------------------------------
    @property
    def name(self) -> str:
        """The layer's name: the one given, else its scope's last part once it was called."""
        if self._given_name is not None:
            return self._given_name
        if self._scope is not None:
            return self._scope.name.rsplit("/", 1)[-1]
        return self._base_name

    @property
    def scope_name(self) -> str:
        """The full name of the layer's variable scope (``model/dense``)."""
        if self._scope is None:
            raise ValueError(f"No name available for layer scope because the layer "
                             f"{self.name!r} has not been used yet.")  # fmt: skip
        return self._scope.name

    @property
    def variables(self) -> list[Variable]:
        """Every variable of the layer, in creation order (``weights`` too)."""
        return list(self._weights)

    weights = variables

    @property
    def trainable_variables(self) -> list[Variable]:
        """The layer's variables that optimizers train (``trainable_weights`` too)."""
        return [v for v in self._weights if v.trainable] if self.trainable else []

    trainable_weights = trainable_variables

    @property
    def non_trainable_variables(self) -> list[Variable]:
        """The layer's other variables (moving averages; all of them when not trainable)."""
        if not self.trainable:
            return list(self._weights)
        return [v for v in self._weights if not v.trainable]

    non_trainable_weights = non_trainable_variables

    @property
    def losses(self) -> list[Tensor]:
        """The regularization losses the layer made."""
        return list(self._losses)

    @property
    def updates(self) -> list[Any]:
        """The update ops the layer made (also in ``UPDATE_OPS``)."""
        return list(self._updates)

    # -- what subclasses define -------------------------------------------------------------------
    def build(self, input_shape: Any) -> None:
        """Make the layer's variables for inputs of ``input_shape`` (once)."""

    def call(self, inputs: Tensor, **kwargs: Any) -> Any:
        """The layer's computation on ``inputs``."""
        raise NotImplementedError(f"{type(self).__name__} does not define call()")

    # -- building -----------------------------------------------------------------------------
    def add_weight(
        self,
        name: str,
        shape: Any,
        dtype: Any = None,
        initializer: Any = None,
        regularizer: Callable[[Variable], Any] | None = None,
        trainable: bool | None = None,
        constraint: Any = None,
        **kwargs: Any,
    ) -> Variable:
        """A variable ``<scope>/<name>`` made with ``get_variable`` (or the existing one under
        reuse); a new variable's regularization loss joins ``REGULARIZATION_LOSSES``.
        ``constraint`` is refused; TF's other keywords (``use_resource``, ``partitioner``,
        ...) are accepted when None."""
        check_no_constraint("add_weight", constraint=constraint, **kwargs)
        before = set(map(id, global_variables()))
        variable = get_variable(
            name,
            shape,
            dtype if dtype is not None else self.dtype,
            initializer,
            trainable=(trainable is None or bool(trainable)) and self.trainable,
        )
        if regularizer is not None and id(variable) not in before:
            with name_scope(f"{variable.op.name}/Regularizer/"):
                loss = regularizer(variable)
            if loss is not None:
                self.add_loss(loss)
        if variable not in self._weights:
            self._weights.append(variable)
        return variable

    add_variable = add_weight  # TF1's older name

    def add_loss(self, loss: Any) -> None:
        """Keep ``loss`` with the layer and add it to ``REGULARIZATION_LOSSES``."""
        loss = convert_to_tensor(loss)
        self._losses.append(loss)
        get_default_graph().add_to_collection(REGULARIZATION_LOSSES, loss)

    def add_update(self, update: Any) -> None:
        """Keep the op ``update`` with the layer and add it to ``UPDATE_OPS``."""
        op = update.op if isinstance(update, Tensor) else update
        self._updates.append(op)
        get_default_graph().add_to_collection(UPDATE_OPS, op)

    # -- calling ------------------------------------------------------------------------------
    def __call__(self, inputs: Any, *args: Any, **kwargs: Any) -> Any:
        """Build the layer on the first call, then apply it to ``inputs``."""
        inputs = convert_to_tensor(inputs)
        if self._scope is None:
            self._scope = self._capture_scope()
        reuse = True if self.built else self._reuse
        with variable_scope(self._scope, reuse=reuse, auxiliary_name_scope=False):
            with name_scope(self._scope.original_name_scope):
                inputs = self._cast_inputs(inputs)
                if not self.built:
                    self.build(inputs.shape)
                    self.built = True
                outputs = self.call(inputs, *args, **kwargs)
                if self.activity_regularizer is not None:
                    self._regularize_activity(outputs)
        return outputs

    def apply(self, inputs: Any, *args: Any, **kwargs: Any) -> Any:
        """The same as calling the layer (TF1's ``Layer.apply``)."""
        return self.__call__(inputs, *args, **kwargs)

    def _capture_scope(self) -> VariableScope:
        """The layer's variable scope, opened once (TF1's ``Layer._set_scope``)."""
        if self._reuse:
            opened = variable_scope(self._given_name or self._base_name)
        else:
            opened = variable_scope(self._given_name, default_name=self._base_name)
        with opened as scope:
            return scope

    def _cast_inputs(self, inputs: Tensor) -> Tensor:
        if self.dtype is None:
            self.dtype = inputs.dtype if inputs.dtype.is_floating else dtypes.float32
        if inputs.dtype != self.dtype and (inputs.dtype.is_floating or inputs.dtype.is_integer):
            return cast(inputs, self.dtype)
        return inputs

    def _regularize_activity(self, outputs: Tensor) -> None:
        """The activity regularizer's loss of ``outputs`` divided by the batch size."""
        with name_scope("ActivityRegularizer"):
            loss = convert_to_tensor(self.activity_regularizer(outputs))
            batch = None if outputs.shape is None or not outputs.shape else outputs.shape[0]
            if batch is None:
                size = cast(runtime_shape(outputs)[0], loss.dtype)
            else:
                size = constant(batch, dtype=loss.dtype)
            self.add_loss(divide(loss, size, name="truediv"))

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r}>"
