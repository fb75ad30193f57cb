"""The ``nn`` namespace: neural-network ops under the names of TensorFlow 1's ``tf.nn``.

Its one job is to gather names: every function here is the op builder of
:mod:`daskgraph.ops.nn`, :mod:`daskgraph.ops.conv`, :mod:`daskgraph.ops.elementwise` or the
modules of the rest of ``tf.nn`` (:mod:`daskgraph.ops.activations`, ``nn_more``,
``normalization``, ``pooling``, ``top_k``, ``embedding``, ``sparse_lookup``) itself,
so ``dg.nn.relu is dg.relu``; :mod:`daskgraph.compat.v1` exposes this module as ``tf.nn``.

>>> import daskgraph as dg
>>> dg.nn.softmax is dg.softmax and dg.nn.conv2d is dg.conv2d
True
"""

from daskgraph.ops.activations import crelu, elu, leaky_relu, selu, silu, softplus, softsign, swish
from daskgraph.ops.conv import conv2d, conv2d_backprop_filter, conv2d_backprop_input, max_pool
from daskgraph.ops.elementwise import sigmoid
from daskgraph.ops.embedding import embedding_lookup
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
from daskgraph.ops.nn_impl import (
    conv2d_transpose,
    log_poisson_loss,
    relu_layer,
    sigmoid_cross_entropy_with_logits,
    weighted_cross_entropy_with_logits,
    xw_plus_b,
    zero_fraction,
)
from daskgraph.ops.normalization import (
    batch_normalization,
    fused_batch_norm,
    l2_normalize,
    local_response_normalization,
    lrn,
    moments,
)
from daskgraph.ops.pooling import avg_pool, avg_pool2d, max_pool2d
from daskgraph.ops.sparse_lookup import embedding_lookup_sparse
from daskgraph.ops.top_k import in_top_k, top_k

__all__ = [
    "avg_pool",
    "avg_pool2d",
    "batch_normalization",
    "bias_add",
    "conv2d",
    "conv2d_backprop_filter",
    "conv2d_backprop_input",
    "conv2d_transpose",
    "crelu",
    "dropout",
    "elu",
    "embedding_lookup",
    "embedding_lookup_sparse",
    "fused_batch_norm",
    "in_top_k",
    "l2_loss",
    "l2_normalize",
    "leaky_relu",
    "local_response_normalization",
    "log_poisson_loss",
    "log_softmax",
    "lrn",
    "max_pool",
    "max_pool2d",
    "moments",
    "relu",
    "relu6",
    "relu_layer",
    "selu",
    "sigmoid",
    "sigmoid_cross_entropy_with_logits",
    "silu",
    "softmax",
    "softmax_cross_entropy_with_logits",
    "softmax_cross_entropy_with_logits_v2",
    "softplus",
    "softsign",
    "sparse_softmax_cross_entropy_with_logits",
    "swish",
    "tanh",
    "top_k",
    "weighted_cross_entropy_with_logits",
    "xw_plus_b",
    "zero_fraction",
]


def __getattr__(name: str) -> object:
    """A name tf.nn does not have: the AttributeError pointing to docs/compat.md."""
    from daskgraph.errors import missing_name

    raise missing_name("tf.nn", name, globals())
