"""``tf.contrib.slim`` (TF-Slim)'s basics: its layers, ``arg_scope`` and variable helpers.

Its one job is to name them as ``import tensorflow.contrib.slim as slim`` programs use them
(``slim.conv2d``, ``slim.fully_connected``, ``slim.arg_scope``, ``slim.l2_regularizer``,
``slim.get_variables_to_restore``, ...); they are :mod:`~daskgraph.compat.contrib.layers`'
and :mod:`~daskgraph.compat.contrib.framework`'s. TF-Slim's training loop
(``slim.learning``), its model zoo (``slim.nets``) and its data readers are not provided.
"""

from daskgraph.compat.contrib import framework, layers
from daskgraph.compat.contrib.framework import (
    add_arg_scope,
    arg_scope,
    get_model_variables,
    get_or_create_global_step,
    get_trainable_variables,
    get_variables,
    get_variables_by_name,
    get_variables_to_restore,
    model_variable,
)
from daskgraph.compat.contrib.layers import (
    apply_regularization,
    avg_pool2d,
    batch_norm,
    conv2d,
    dropout,
    flatten,
    fully_connected,
    l1_regularizer,
    l2_regularizer,
    max_pool2d,
    one_hot_encoding,
    repeat,
    stack,
    variance_scaling_initializer,
    xavier_initializer,
)

__all__ = [
    "add_arg_scope",
    "apply_regularization",
    "arg_scope",
    "avg_pool2d",
    "batch_norm",
    "conv2d",
    "dropout",
    "flatten",
    "framework",
    "fully_connected",
    "get_model_variables",
    "get_or_create_global_step",
    "get_trainable_variables",
    "get_variables",
    "get_variables_by_name",
    "get_variables_to_restore",
    "l1_regularizer",
    "l2_regularizer",
    "layers",
    "max_pool2d",
    "model_variable",
    "one_hot_encoding",
    "repeat",
    "stack",
    "variance_scaling_initializer",
    "xavier_initializer",
]

#: ``slim.conv2d`` is also ``slim.convolution2d``, as in TF-Slim
convolution2d = conv2d


def __getattr__(name: str) -> object:
    from daskgraph.errors import missing_name

    raise missing_name("tf.contrib.slim", name, globals())
