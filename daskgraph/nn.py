"""The ``nn`` namespace: neural-network ops under the names of TensorFlow 1's ``tf.nn``.

Its one job is to gather names: every function here is the op builder of
:mod:`daskgraph.ops.nn`, :mod:`daskgraph.ops.conv` or :mod:`daskgraph.ops.elementwise` itself,
so ``dg.nn.relu is dg.relu``; :mod:`daskgraph.compat.v1` exposes this module as ``tf.nn``.

>>> import daskgraph as dg
>>> dg.nn.softmax is dg.softmax and dg.nn.conv2d is dg.conv2d
True
"""

from daskgraph.ops.conv import conv2d, conv2d_backprop_filter, conv2d_backprop_input, max_pool
from daskgraph.ops.elementwise import sigmoid
from daskgraph.ops.math import tanh
from daskgraph.ops.nn import (
    bias_add,
    dropout,
    l2_loss,
    log_softmax,
    relu,
    relu6,
    softmax,
    softmax_cross_entropy_with_logits,
    softmax_cross_entropy_with_logits_v2,
    sparse_softmax_cross_entropy_with_logits,
)
from daskgraph.ops.pooling import avg_pool

__all__ = [
    "avg_pool",
    "bias_add",
    "conv2d",
    "conv2d_backprop_filter",
    "conv2d_backprop_input",
    "dropout",
    "l2_loss",
    "log_softmax",
    "max_pool",
    "relu",
    "relu6",
    "sigmoid",
    "softmax",
    "softmax_cross_entropy_with_logits",
    "softmax_cross_entropy_with_logits_v2",
    "sparse_softmax_cross_entropy_with_logits",
    "tanh",
]
