"""``tf.contrib.layers``' most used names, built from daskgraph's ops.

Its one job is TF 1.15's ``tf.contrib.layers`` API as multi-GPU and distributed TF1 programs
call it: the layers (``fully_connected``, ``conv2d``, ``max_pool2d``, ``avg_pool2d``,
``flatten``, ``dropout``, ``batch_norm``, ``one_hot_encoding``, ``repeat``, ``stack``), the
regularizers (``l1_regularizer``, ``l2_regularizer``, ``sum_regularizer``,
``apply_regularization``) and initializers (``xavier_initializer``,
``variance_scaling_initializer``) with TensorFlow's names, defaults and variable names
(``fully_connected/weights``, ``Conv/biases``, ...), so that checkpoints line up. Every layer
takes its defaults from :func:`~daskgraph.compat.contrib.arg_scopes.arg_scope`.

>>> import daskgraph as dg
>>> with dg.Graph().as_default() as g:
...     x = dg.ones([2, 3])
...     y = fully_connected(x, 4)
>>> y.shape, sorted(v.op.name for v in g.get_collection("model_variables"))
((2, 4), ['fully_connected/biases', 'fully_connected/weights'])
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from daskgraph.compat.contrib.arg_scopes import add_arg_scope
from daskgraph.framework import dtypes
from daskgraph.framework.graph import (
    GLOBAL_VARIABLES,
    REGULARIZATION_LOSSES,
    Tensor,
    get_default_graph,
    name_scope,
)
from daskgraph.layers.normalization import batch_normalization
from daskgraph.ops import nn_namespace as nn
from daskgraph.ops.array import convert_to_tensor, identity, reshape
from daskgraph.ops.conv import conv2d as conv2d_op
from daskgraph.ops.conv import max_pool
from daskgraph.ops.fill_ops import one_hot
from daskgraph.ops.initializers import VarianceScaling, Zeros
from daskgraph.ops.math import abs as abs_op
from daskgraph.ops.math import add_n, matmul, multiply, reduce_sum
from daskgraph.ops.pooling import avg_pool
from daskgraph.ops.variable_scope import get_variable, variable_scope

__all__ = [
    "apply_regularization",
    "avg_pool2d",
    "batch_norm",
    "conv2d",
    "dropout",
    "flatten",
    "fully_connected",
    "l1_regularizer",
    "l2_regularizer",
    "max_pool2d",
    "model_variable",
    "one_hot_encoding",
    "repeat",
    "stack",
    "sum_regularizer",
    "variance_scaling_initializer",
    "xavier_initializer",
]

MODEL_VARIABLES = "model_variables"
#: contrib's default biases initializer (one instance: initializers hold no state)
_ZEROS = Zeros()
#: TensorFlow's ``truncated_normal`` stddev correction (VarianceScaling's 0.87962566...)
_TRUNCATED = 0.87962566103423978


# -- initializers and regularizers ----------------------------------------------------------------
def variance_scaling_initializer(
    factor: float = 2.0,
    mode: str = "FAN_IN",
    uniform: bool = False,
    seed: int | None = None,
    dtype: Any = dtypes.float32,
) -> VarianceScaling:
    """contrib's He-style initializer: ``n`` the fan in, out or their mean (``mode``);
    uniform in ``±sqrt(3 * factor / n)``, or a normal of stddev ``sqrt(1.3 * factor / n)``
    cut at two stddevs."""
    if mode not in ("FAN_IN", "FAN_OUT", "FAN_AVG"):
        raise TypeError(f"Unknown mode {mode} [FAN_IN, FAN_OUT, FAN_AVG]")
    dtype = dtypes.as_dtype(dtype)
    if not dtype.is_floating:
        raise TypeError("Cannot create initializer for non-floating point type.")
    if uniform:
        return VarianceScaling(factor, mode.lower(), "uniform", seed=seed, dtype=dtype)
    scale = 1.3 * factor * _TRUNCATED**2  # (VarianceScaling divides its stddev by _TRUNCATED)
    return VarianceScaling(scale, mode.lower(), "truncated_normal", seed=seed, dtype=dtype)


def xavier_initializer(
    uniform: bool = True, seed: int | None = None, dtype: Any = dtypes.float32
) -> VarianceScaling:
    """Glorot's initializer: :func:`variance_scaling_initializer` with factor 1 over the mean
    fan."""
    return variance_scaling_initializer(1.0, "FAN_AVG", uniform, seed, dtype)


def _checked_scale(scale: Any) -> float:
    """A regularizer's scale as TensorFlow checks it: a real number (not an int) >= 0."""
    if isinstance(scale, int) and not isinstance(scale, bool):
        raise ValueError(f"scale cannot be an integer: {scale}")
    if isinstance(scale, bool) or not isinstance(scale, float):
        raise ValueError(f"scale must be a real number; got {scale!r}")
    if scale < 0.0:
        raise ValueError(f"Setting a scale less than 0 on a regularizer: {scale:g}")
    return scale


def l2_regularizer(scale: float, scope: str | None = None) -> Callable[[Any], Tensor | None]:
    """A regularizer of ``scale * sum(w ** 2) / 2`` (None for a scale of 0)."""
    scale = _checked_scale(scale)

    def l2(weights: Any) -> Tensor | None:
        if scale == 0.0:
            return None
        with name_scope(scope or "l2_regularizer"):
            return multiply(scale, nn.l2_loss(weights), name="value")

    return l2


def l1_regularizer(scale: float, scope: str | None = None) -> Callable[[Any], Tensor | None]:
    """A regularizer of ``scale * sum(|w|)`` (None for a scale of 0)."""
    scale = _checked_scale(scale)

    def l1(weights: Any) -> Tensor | None:
        if scale == 0.0:
            return None
        with name_scope(scope or "l1_regularizer"):
            return multiply(scale, reduce_sum(abs_op(weights)), name="value")

    return l1


def sum_regularizer(
    regularizer_list: Sequence[Callable[[Any], Any]], scope: str | None = None
) -> Callable[[Any], Tensor | None]:
    """The sum of several regularizers (None where every one gives None)."""

    def summed(weights: Any) -> Tensor | None:
        terms = [t for t in (r(weights) for r in regularizer_list) if t is not None]
        if not terms:
            return None
        with name_scope(scope or "sum_regularizer"):
            return add_n(terms)

    return summed


def apply_regularization(
    regularizer: Callable[[Any], Any], weights_list: Sequence[Any] | None = None
) -> Tensor:
    """The sum of ``regularizer`` over ``weights_list`` (default: the ``weights``
    collection), also added to ``REGULARIZATION_LOSSES``."""
    graph = get_default_graph()
    weights = list(weights_list) if weights_list is not None else graph.get_collection("weights")
    if not weights:
        raise ValueError("No weights to regularize.")
    with name_scope("get_regularization_penalty"):
        terms = [t for t in (regularizer(w) for w in weights) if t is not None]
        if not terms:
            raise ValueError("No regularization penalty: every weight gave None.")
        penalty = add_n(terms)
    graph.add_to_collection(REGULARIZATION_LOSSES, penalty)
    return penalty


# -- variables ------------------------------------------------------------------------------------
def model_variable(
    name: str,
    shape: Any = None,
    dtype: Any = dtypes.float32,
    initializer: Any = None,
    regularizer: Any = None,
    trainable: bool = True,
    collections: Sequence[str] | None = None,
) -> Any:
    """``get_variable`` that also joins the ``model_variables`` collection (and
    ``collections``)."""
    joined = [GLOBAL_VARIABLES, MODEL_VARIABLES, *(collections or ())]
    return get_variable(
        name, shape, dtype, initializer, regularizer=regularizer, trainable=trainable,
        collections=list(dict.fromkeys(joined)),
    )  # fmt: skip


def _collect(outputs: Tensor, outputs_collections: Any) -> Tensor:
    for key in (
        [outputs_collections]
        if isinstance(outputs_collections, str)
        else (outputs_collections or ())
    ):
        get_default_graph().add_to_collection(key, outputs)
    return outputs


def _finish(
    outputs: Tensor,
    num_outputs: int,
    normalizer_fn: Any,
    normalizer_params: Any,
    biases_initializer: Any,
    biases_regularizer: Any,
    variables_collections: Any,
    trainable: bool,
    activation_fn: Any,
) -> Tensor:
    """A layer's normalizer or biases, then its activation (contrib's order)."""
    if normalizer_fn is not None:
        outputs = normalizer_fn(outputs, **(normalizer_params or {}))
    elif biases_initializer is not None:
        biases = model_variable(
            "biases", [num_outputs], outputs.dtype, biases_initializer, biases_regularizer,
            trainable, _variable_collections(variables_collections, "biases"),
        )  # fmt: skip
        outputs = nn.bias_add(outputs, biases)
    if activation_fn is not None:
        outputs = activation_fn(outputs)
    return outputs


def _variable_collections(collections: Any, name: str) -> list[str]:
    if isinstance(collections, dict):
        collections = collections.get(name)
    if collections is None:
        return []
    return [collections] if isinstance(collections, str) else list(collections)


# -- layers ---------------------------------------------------------------------------------------
@add_arg_scope
def fully_connected(
    inputs: Any,
    num_outputs: int,
    activation_fn: Any = nn.relu,
    normalizer_fn: Any = None,
    normalizer_params: Any = None,
    weights_initializer: Any = "xavier",
    weights_regularizer: Any = None,
    biases_initializer: Any = _ZEROS,
    biases_regularizer: Any = None,
    reuse: Any = None,
    variables_collections: Any = None,
    outputs_collections: Any = None,
    trainable: bool = True,
    scope: Any = None,
) -> Tensor:
    """``activation_fn(inputs @ weights + biases)`` over the last axis (variables
    ``<scope>/weights``, ``<scope>/biases``; scope ``fully_connected`` by default)."""
    if not isinstance(num_outputs, int) or isinstance(num_outputs, bool):
        raise ValueError(f"num_outputs type should be one of {int}, got {type(num_outputs)}.")
    inputs = convert_to_tensor(inputs)
    if inputs.shape is None or inputs.shape[-1] is None:
        raise ValueError(f"fully_connected: the last dimension of {inputs.name!r} must be known")
    with variable_scope(scope, default_name="fully_connected", reuse=reuse):
        weights = model_variable(
            "weights", [inputs.shape[-1], num_outputs], inputs.dtype,
            _initializer(weights_initializer), weights_regularizer, trainable,
            _variable_collections(variables_collections, "weights"),
        )  # fmt: skip
        if len(inputs.shape) == 2:
            outputs = matmul(inputs, weights)
        else:  # (over the last axis, as contrib's tensordot)
            flat = reshape(inputs, [-1, inputs.shape[-1]])
            outputs = reshape(
                matmul(flat, weights),
                [*(d if d is not None else -1 for d in inputs.shape[:-1]), num_outputs],
            )
        outputs = _finish(outputs, num_outputs, normalizer_fn, normalizer_params,
                          biases_initializer, biases_regularizer, variables_collections,
                          trainable, activation_fn)  # fmt: skip
        return _collect(outputs, outputs_collections)


def _initializer(given: Any) -> Any:
    """contrib's default weights initializer is Glorot's uniform (None: get_variable's)."""
    return xavier_initializer() if isinstance(given, str) and given == "xavier" else given


def _pair(value: Any, what: str) -> tuple[int, int]:
    if isinstance(value, int) and not isinstance(value, bool):
        return value, value
    value = tuple(value)
    if len(value) != 2 or not all(isinstance(v, int) for v in value):
        raise ValueError(f"{what} must be an int or a list of 2 ints; got {value!r}")
    return value  # type: ignore[return-value]


@add_arg_scope
def conv2d(
    inputs: Any,
    num_outputs: int,
    kernel_size: Any,
    stride: Any = 1,
    padding: str = "SAME",
    data_format: Any = None,
    rate: Any = 1,
    activation_fn: Any = nn.relu,
    normalizer_fn: Any = None,
    normalizer_params: Any = None,
    weights_initializer: Any = "xavier",
    weights_regularizer: Any = None,
    biases_initializer: Any = _ZEROS,
    biases_regularizer: Any = None,
    reuse: Any = None,
    variables_collections: Any = None,
    outputs_collections: Any = None,
    trainable: bool = True,
    scope: Any = None,
) -> Tensor:
    """A 2-D convolution of ``NHWC`` images (variables ``<scope>/weights`` of shape
    ``[kh, kw, in, num_outputs]`` and ``<scope>/biases``; scope ``Conv`` by default)."""
    if data_format not in (None, "NHWC"):
        raise ValueError(f"conv2d: daskgraph takes NHWC only; got {data_format!r}")
    inputs = convert_to_tensor(inputs)
    if inputs.shape is None or len(inputs.shape) != 4 or inputs.shape[-1] is None:
        raise ValueError(
            f"conv2d: inputs must be NHWC with known channels; {inputs.name!r} is {inputs.shape}"
        )
    kh, kw = _pair(kernel_size, "kernel_size")
    sh, sw = _pair(stride, "stride")
    dh, dw = _pair(rate, "rate")
    with variable_scope(scope, default_name="Conv", reuse=reuse):
        weights = model_variable(
            "weights", [kh, kw, inputs.shape[-1], num_outputs], inputs.dtype,
            _initializer(weights_initializer), weights_regularizer, trainable,
            _variable_collections(variables_collections, "weights"),
        )  # fmt: skip
        dilations = None if (dh, dw) == (1, 1) else [1, dh, dw, 1]
        outputs = conv2d_op(inputs, weights, [1, sh, sw, 1], padding.upper(), dilations=dilations)
        outputs = _finish(outputs, num_outputs, normalizer_fn, normalizer_params,
                          biases_initializer, biases_regularizer, variables_collections,
                          trainable, activation_fn)  # fmt: skip
        return _collect(outputs, outputs_collections)


def _pool(
    pool: Any,
    default_name: str,
    inputs: Any,
    kernel_size: Any,
    stride: Any,
    padding: str,
    data_format: str,
    outputs_collections: Any,
    scope: Any,
) -> Tensor:
    if data_format != "NHWC":
        raise ValueError(f"{default_name}: daskgraph takes NHWC only; got {data_format!r}")
    kh, kw = _pair(kernel_size, "kernel_size")
    sh, sw = _pair(stride, "stride")
    with name_scope(scope or default_name):
        outputs = pool(inputs, [1, kh, kw, 1], [1, sh, sw, 1], padding.upper())
    return _collect(outputs, outputs_collections)


@add_arg_scope
def max_pool2d(
    inputs: Any,
    kernel_size: Any,
    stride: Any = 2,
    padding: str = "VALID",
    data_format: str = "NHWC",
    outputs_collections: Any = None,
    scope: Any = None,
) -> Tensor:
    """Max pooling of ``NHWC`` images (name scope ``MaxPool2D``)."""
    return _pool(max_pool, "MaxPool2D", inputs, kernel_size, stride, padding, data_format,
                 outputs_collections, scope)  # fmt: skip


@add_arg_scope
def avg_pool2d(
    inputs: Any,
    kernel_size: Any,
    stride: Any = 2,
    padding: str = "VALID",
    data_format: str = "NHWC",
    outputs_collections: Any = None,
    scope: Any = None,
) -> Tensor:
    """Average pooling of ``NHWC`` images (name scope ``AvgPool2D``)."""
    return _pool(avg_pool, "AvgPool2D", inputs, kernel_size, stride, padding, data_format,
                 outputs_collections, scope)  # fmt: skip


@add_arg_scope
def flatten(inputs: Any, outputs_collections: Any = None, scope: Any = None) -> Tensor:
    """``inputs`` as ``[batch, everything else]`` (name scope ``Flatten``)."""
    inputs = convert_to_tensor(inputs)
    if inputs.shape is None or len(inputs.shape) < 2:
        raise ValueError(
            f"Inputs must have a least 2 dimensions; {inputs.name!r} is {inputs.shape}"
        )
    rest = inputs.shape[1:]
    size = -1 if None in rest else math.prod(rest)
    batch = inputs.shape[0] if inputs.shape[0] is not None and size != -1 else -1
    with name_scope(scope or "Flatten"):
        return _collect(
            reshape(inputs, [batch, size] if batch != -1 else [-1, size]), outputs_collections
        )


@add_arg_scope
def dropout(
    inputs: Any,
    keep_prob: Any = 0.5,
    noise_shape: Any = None,
    is_training: Any = True,
    outputs_collections: Any = None,
    scope: Any = None,
    seed: int | None = None,
) -> Tensor:
    """``tf.nn.dropout`` while ``is_training`` (a bool; name scope ``Dropout``), else
    ``inputs`` unchanged."""
    if not isinstance(is_training, bool):
        raise TypeError(
            "dropout: is_training must be a Python bool here (daskgraph builds one of the two "
            f"branches); got {is_training!r}"
        )
    with name_scope(scope or "Dropout"):
        inputs = convert_to_tensor(inputs)
        outputs = (
            nn.dropout(inputs, keep_prob=keep_prob, noise_shape=noise_shape, seed=seed)
            if is_training
            else identity(inputs)
        )
        return _collect(outputs, outputs_collections)


@add_arg_scope
def batch_norm(
    inputs: Any,
    decay: float = 0.999,
    center: bool = True,
    scale: bool = False,
    epsilon: float = 0.001,
    activation_fn: Any = None,
    is_training: Any = True,
    trainable: bool = True,
    reuse: Any = None,
    outputs_collections: Any = None,
    scope: Any = None,
    **unsupported: Any,
) -> Tensor:
    """Batch normalization over the last axis (variables ``<scope>/beta``, ``gamma``,
    ``moving_mean``, ``moving_variance``; scope ``BatchNorm``), its moving averages updated
    by ops in ``UPDATE_OPS``, as contrib's."""
    given = {k: v for k, v in unsupported.items() if v not in (None, False)}
    if given:
        raise ValueError(f"batch_norm: daskgraph does not support {sorted(given)}")
    outputs = batch_normalization(
        inputs, momentum=decay, epsilon=epsilon, center=center, scale=scale, training=is_training,
        trainable=trainable, name=scope or "BatchNorm", reuse=reuse,
    )  # fmt: skip
    if activation_fn is not None:
        outputs = activation_fn(outputs)
    return _collect(outputs, outputs_collections)


def one_hot_encoding(
    labels: Any,
    num_classes: int,
    on_value: float = 1.0,
    off_value: float = 0.0,
    outputs_collections: Any = None,
    scope: Any = None,
) -> Tensor:
    """``tf.one_hot`` of ``labels`` (name scope ``OneHotEncoding``)."""
    with name_scope(scope or "OneHotEncoding"):
        return _collect(
            one_hot(labels, num_classes, on_value=on_value, off_value=off_value),
            outputs_collections,
        )


def _layer_name(layer: Any) -> str:
    if hasattr(layer, "__name__"):
        return layer.__name__
    if hasattr(layer, "func") and hasattr(layer.func, "__name__"):
        return layer.func.__name__  # (a functools.partial)
    return "repeat"


def repeat(inputs: Any, repetitions: int, layer: Any, *args: Any, **kwargs: Any) -> Tensor:
    """``layer`` applied ``repetitions`` times, each in scope ``<name>_<i>`` (``<name>``: the
    ``scope`` given, else the layer's name) inside a ``Repeat`` scope."""
    scope = kwargs.pop("scope", None)
    with variable_scope(scope, default_name="Repeat"):
        base = scope or _layer_name(layer)
        outputs = convert_to_tensor(inputs)
        for i in range(repetitions):
            outputs = layer(outputs, *args, scope=f"{base}_{i + 1}", **kwargs)
        return outputs


def stack(inputs: Any, layer: Any, stack_args: Sequence[Any], **kwargs: Any) -> Tensor:
    """``layer`` applied once per item of ``stack_args`` (a tuple of positional arguments, or
    one), each in scope ``<name>_<i>`` inside a ``Stack`` scope."""
    scope = kwargs.pop("scope", None)
    if not isinstance(stack_args, (list, tuple)):
        raise ValueError("stack_args need to be a list or tuple")
    with variable_scope(scope, default_name="Stack"):
        base = scope or _layer_name(layer)
        outputs = convert_to_tensor(inputs)
        for i, args in enumerate(stack_args):
            args = args if isinstance(args, (list, tuple)) else (args,)
            outputs = layer(outputs, *args, scope=f"{base}_{i + 1}", **kwargs)
        return outputs


def __getattr__(name: str) -> object:
    """A name tf.contrib.layers does not have: the AttributeError pointing to docs/compat.md."""
    from daskgraph.errors import missing_name

    raise missing_name("tf.contrib.layers", name, globals())
