"""TensorFlow 1's top-level graph names: graphs, tensors, dtypes, shapes, scopes, gradients.

Its one job is to name the framework's objects as ``tf.*`` has them (``tf.Graph``,
``tf.float32``, ``tf.bool``, ``tf.TensorShape``, ``tf.name_scope``, ``tf.gradients``, ...).
"""

from daskgraph.compat._signatures import (
    is_tensor,
)
from daskgraph.compat.framework import (
    container,
    convert_to_tensor_or_indexed_slices,
    dimension_at_index,
    init_scope,
    is_numeric_tensor,
)
from daskgraph.compat.gradients import (
    AggregationMethod,
    UnconnectedGradients,
    gradients,
    hessians,
)
from daskgraph.errors import (
    OpError,
)
from daskgraph.framework.dtypes import (
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
from daskgraph.framework.dtypes import (
    bool_ as bool,
)
from daskgraph.framework.dtypes import (
    float16 as half,
)
from daskgraph.framework.dtypes import (
    float64 as double,
)
from daskgraph.framework.gradient_registry import (
    RegisterGradient,
    no_gradient,
)
from daskgraph.framework.gradient_registry import (
    no_gradient as NoGradient,
)
from daskgraph.framework.gradient_registry import (
    no_gradient as NotDifferentiable,
)
from daskgraph.framework.graph import (
    Graph,
    Operation,
    Tensor,
    get_default_graph,
    name_scope,
    reset_default_graph,
)
from daskgraph.framework.nodes import (
    GraphDef,
    NodeDef,
)
from daskgraph.framework.scopes import (
    colocate_with,
    control_dependencies,
    device,
)
from daskgraph.framework.static_value import (
    get_static_value,
)
from daskgraph.framework.tensor_conversion import (
    register_tensor_conversion_function,
)
from daskgraph.framework.tensor_shape import (
    Dimension,
    TensorShape,
    dimension_value,
)
from daskgraph.ops import (
    convert_to_tensor,
    stop_gradient,
)
from daskgraph.ops.custom_gradient import (
    custom_gradient,
)

__all__ = [
    "AggregationMethod",
    "DType",
    "Dimension",
    "Graph",
    "GraphDef",
    "NoGradient",
    "NodeDef",
    "NotDifferentiable",
    "OpError",
    "Operation",
    "RegisterGradient",
    "Tensor",
    "TensorShape",
    "UnconnectedGradients",
    "as_dtype",
    "bool",
    "colocate_with",
    "container",
    "control_dependencies",
    "convert_to_tensor",
    "convert_to_tensor_or_indexed_slices",
    "custom_gradient",
    "device",
    "dimension_at_index",
    "dimension_value",
    "double",
    "float16",
    "float32",
    "float64",
    "get_default_graph",
    "get_static_value",
    "gradients",
    "half",
    "hessians",
    "init_scope",
    "int8",
    "int16",
    "int32",
    "int64",
    "is_numeric_tensor",
    "is_tensor",
    "name_scope",
    "no_gradient",
    "register_tensor_conversion_function",
    "reset_default_graph",
    "stop_gradient",
    "string",
    "uint8",
]
