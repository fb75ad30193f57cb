"""daskgraph: TensorFlow-1 style device-placed computation graphs, run on Dask clusters.

Build a graph under device scopes, and a :class:`Session` places every op on a device of a
Dask cluster, lowers the placed graph into per-device Dask tasks, runs them on the workers
that own the devices, and returns NumPy arrays::

    import daskgraph as dg

    with dg.device("/cpu:0"):
        a = dg.constant([[1.0, 2.0]])
    b = dg.matmul(a, a, transpose_b=True)
    with dg.Session(config=dg.SessionConfig(log_device_placement=True)) as sess:
        print(sess.run(b))

Data flows one way through the subpackages, each a stage; read them in this order, none imports
a later one (``pyproject.toml``'s import contracts and ``tests/unit/test_layout.py`` check it):

* :mod:`daskgraph.framework`: graphs (device specs, operations and tensors, scopes, the op and
  gradient registries); :mod:`daskgraph.cluster`: a cluster's devices, workers and processes;
* :mod:`daskgraph.ops`, then :mod:`daskgraph.layers`, :mod:`daskgraph.metrics`,
  :mod:`daskgraph.data`, :mod:`daskgraph.summary`: the op builders and what is built of them;
* :mod:`daskgraph.runtime`: :mod:`~daskgraph.runtime.program` (what a worker runs), the
  planner (placement, lowering), the worker side (it never imports the planner) and the client
  (:class:`Session`); :mod:`daskgraph.diagnostics`: plans as data and pictures;
* :mod:`daskgraph.training` (optimizers, checkpoints, monitored sessions) and
  :mod:`daskgraph.compat` (``import daskgraph.compat.v1 as tf``).
"""

from daskgraph import data, errors, layers
from daskgraph.cluster.server import ClusterSpec, Server
from daskgraph.config import GPUOptions, SessionConfig
from daskgraph.diagnostics.drawing import visualize
from daskgraph.framework import dtypes
from daskgraph.framework.device import DeviceSpec
from daskgraph.framework.dtypes import (
    DType,
    as_dtype,
    bool_,
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
from daskgraph.framework.gradient_registry import RegisterGradient, no_gradient, register_gradient
from daskgraph.framework.graph import (
    Graph,
    GraphKeys,
    Operation,
    Tensor,
    get_default_graph,
    name_scope,
    reset_default_graph,
)
from daskgraph.framework.scopes import colocate_with, control_dependencies, device
from daskgraph.ops import *  # noqa: F403 - the op constructors are the public API
from daskgraph.ops import __all__ as _ops_all
from daskgraph.ops import initializers, losses
from daskgraph.ops import nn_namespace as nn
from daskgraph.ops import sparse_elementwise as _sparse_operators  # noqa: F401 (SparseTensor * /)
from daskgraph.ops.gradients import gradients
from daskgraph.ops.initializers import (
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
from daskgraph.ops.sparse_tensor import SparseTensor, SparseTensorValue
from daskgraph.ops.variable_scope import (
    AUTO_REUSE,
    VariableScope,
    get_variable,
    get_variable_scope,
    variable_scope,
)
from daskgraph.runtime.client.session import RunMetadata, RunOptions, Session, get_default_session
from daskgraph.training import namespace as train
from daskgraph.training import optimizers, saver

__version__ = "0.1.0"

__all__ = [
    "ClusterSpec",
    "DType",
    "DeviceSpec",
    "GPUOptions",
    "RunMetadata",
    "Server",
    "RunOptions",
    "Session",
    "SessionConfig",
    "SparseTensor",
    "SparseTensorValue",
    "get_default_session",
    "Graph",
    "Operation",
    "Tensor",
    "as_dtype",
    "bool_",
    "colocate_with",
    "control_dependencies",
    "data",
    "device",
    "dtypes",
    "errors",
    "float16",
    "float32",
    "float64",
    "get_default_graph",
    "int16",
    "int32",
    "int64",
    "int8",
    "layers",
    "losses",
    "name_scope",
    "nn",
    "reset_default_graph",
    "string",
    "uint8",
    "visualize",
    "gradients",
    "register_gradient",
    "RegisterGradient",
    "no_gradient",
    "AUTO_REUSE",
    "GraphKeys",
    "VariableScope",
    "constant_initializer",
    "get_variable",
    "get_variable_scope",
    "glorot_normal_initializer",
    "glorot_uniform_initializer",
    "initializers",
    "ones_initializer",
    "optimizers",
    "random_normal_initializer",
    "random_uniform_initializer",
    "saver",
    "train",
    "truncated_normal_initializer",
    "variable_scope",
    "variance_scaling_initializer",
    "zeros_initializer",
    *_ops_all,
]
