"""TensorFlow 1's names for daskgraph's objects, so TF1 programs run with one changed import.

Its one job is to map names: every attribute is the native daskgraph object itself, except
for the few whose TF1 call signatures differ (``Variable``, ``assign``, ``assign_add``,
``global_variables``, ``reduce_*``), which come from :mod:`daskgraph.compat._signatures` and
only translate arguments. So ``import daskgraph.compat.v1 as tf`` lets a TensorFlow 1
device-placement program run unchanged::

    import daskgraph.compat.v1 as tf

    with tf.device("/cpu:0"):
        a = tf.constant([1.0, 2.0, 3.0, 4.0, 5.0, 6.0], shape=[2, 3], name="a")
        b = tf.constant([1.0, 2.0, 3.0, 4.0, 5.0, 6.0], shape=[3, 2], name="b")
    c = tf.matmul(a, b)
    with tf.Session(config=tf.ConfigProto(log_device_placement=True)) as sess:
        print(sess.run(c))

``tf.ConfigProto`` *is* :class:`daskgraph.SessionConfig` and ``tf.errors`` *is*
:mod:`daskgraph.errors`. What TensorFlow 1 has and daskgraph does not (``tf.train.Server``,
``tf.nn``, ...) is simply absent: using it raises ``AttributeError``.

>>> import daskgraph
>>> import daskgraph.compat.v1 as tf
>>> tf.ConfigProto is daskgraph.SessionConfig and tf.Session is daskgraph.Session
True
"""

from daskgraph import dtypes, errors
from daskgraph.compat import initializers, random, train
from daskgraph.compat._signatures import (
    Variable,
    add_to_collection,
    assign,
    assign_add,
    gather,
    get_collection,
    get_variable,
    global_variables,
    reduce_max,
    reduce_mean,
    reduce_sum,
    trainable_variables,
)
from daskgraph.config import GPUOptions
from daskgraph.config import SessionConfig as ConfigProto
from daskgraph.device import DeviceSpec
from daskgraph.dtypes import (
    DType,
    as_dtype,
    float16,
    float32,
    float64,
    int8,
    int16,
    int32,
    int64,
    string,
    uint8,
)
from daskgraph.dtypes import bool_ as bool  # TensorFlow's name: tf.bool
from daskgraph.graph import (
    Graph,
    GraphKeys,
    Operation,
    Tensor,
    get_default_graph,
    name_scope,
    reset_default_graph,
)
from daskgraph.initializers import (
    constant_initializer,
    glorot_normal_initializer,
    glorot_uniform_initializer,
    ones_initializer,
    random_normal_initializer,
    random_uniform_initializer,
    truncated_normal_initializer,
    variance_scaling_initializer,
    zeros_initializer,
)
from daskgraph.ops import (
    abs,
    add,
    add_n,
    cast,
    concat,
    constant,
    convert_to_tensor,
    divide,
    exp,
    expand_dims,
    fill,
    global_variables_initializer,
    group,
    identity,
    matmul,
    maximum,
    multiply,
    negative,
    no_op,
    one_hot,
    ones,
    ones_like,
    placeholder,
    random_normal,
    random_uniform,
    reshape,
    set_random_seed,
    shape,
    size,
    slice,
    split,
    sqrt,
    square,
    squeeze,
    stack,
    stop_gradient,
    strided_slice,
    subtract,
    tanh,
    tile,
    transpose,
    truncated_normal,
    unstack,
    variables_initializer,
    zeros,
    zeros_like,
)
from daskgraph.scopes import colocate_with, control_dependencies, device
from daskgraph.session import RunMetadata, RunOptions, Session, get_default_session
from daskgraph.variable_scope import (
    AUTO_REUSE,
    VariableScope,
    get_variable_scope,
    variable_scope,
)

__all__ = [
    "AUTO_REUSE",
    "ConfigProto",
    "DType",
    "DeviceSpec",
    "GPUOptions",
    "Graph",
    "GraphKeys",
    "Operation",
    "RunMetadata",
    "RunOptions",
    "Session",
    "Tensor",
    "Variable",
    "VariableScope",
    "abs",
    "add",
    "add_n",
    "add_to_collection",
    "as_dtype",
    "assign",
    "assign_add",
    "bool",
    "cast",
    "colocate_with",
    "concat",
    "constant",
    "constant_initializer",
    "control_dependencies",
    "convert_to_tensor",
    "device",
    "divide",
    "dtypes",
    "errors",
    "exp",
    "expand_dims",
    "fill",
    "float16",
    "float32",
    "float64",
    "gather",
    "get_collection",
    "get_default_graph",
    "get_default_session",
    "get_variable",
    "get_variable_scope",
    "global_variables",
    "global_variables_initializer",
    "glorot_normal_initializer",
    "glorot_uniform_initializer",
    "group",
    "identity",
    "initializers",
    "int8",
    "int16",
    "int32",
    "int64",
    "matmul",
    "maximum",
    "multiply",
    "name_scope",
    "negative",
    "no_op",
    "one_hot",
    "ones",
    "ones_initializer",
    "ones_like",
    "placeholder",
    "random",
    "random_normal",
    "random_normal_initializer",
    "random_uniform",
    "random_uniform_initializer",
    "reduce_max",
    "reduce_mean",
    "reduce_sum",
    "reset_default_graph",
    "reshape",
    "set_random_seed",
    "shape",
    "size",
    "slice",
    "split",
    "sqrt",
    "square",
    "squeeze",
    "stack",
    "stop_gradient",
    "strided_slice",
    "string",
    "subtract",
    "tanh",
    "tile",
    "train",
    "trainable_variables",
    "transpose",
    "truncated_normal",
    "truncated_normal_initializer",
    "uint8",
    "unstack",
    "variable_scope",
    "variables_initializer",
    "variance_scaling_initializer",
    "zeros",
    "zeros_initializer",
    "zeros_like",
]
