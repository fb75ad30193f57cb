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

Data flows one way: device -> graph -> placement -> lowering -> execution, with the session
tying them together. Read the modules in that order; none imports a later one
(``tests/unit/test_layout.py`` checks it):

* :mod:`~daskgraph.device`: device names (:class:`DeviceSpec`); :mod:`~daskgraph.topology`:
  a cluster's devices, read from its workers;
* :mod:`~daskgraph.nodes`, :mod:`~daskgraph.scopes`, :mod:`~daskgraph.graph` and
  :mod:`daskgraph.ops`: building a graph (operations and tensors, device, colocation and
  control scopes, the op constructors and their kernels);
  :mod:`~daskgraph.default_session` is the session ``tensor.eval()`` runs in;
* :mod:`~daskgraph.placement`: a device for every op;
* :mod:`~daskgraph.program`: what a worker runs; :mod:`~daskgraph.lowering`: the placed graph
  cut into one program per device;
* :mod:`~daskgraph.execution` and :mod:`~daskgraph.worker_state`: the worker side, running
  programs (it never imports the planner);
* :mod:`~daskgraph.session` ties them together: :mod:`~daskgraph.connection` (the cluster and
  its devices), :mod:`~daskgraph.fetches` (fetches and feeds), :mod:`~daskgraph.dispatch`
  (submitting a run's tasks).
"""

from daskgraph import (
    data,
    dtypes,
    errors,
    initializers,
    layers,
    losses,
    nn,
    optimizers,
    saver,
    train,
)
from daskgraph.config import GPUOptions, SessionConfig
from daskgraph.device import DeviceSpec
from daskgraph.drawing import visualize
from daskgraph.dtypes import (
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
from daskgraph.gradients import RegisterGradient, gradients, no_gradient, register_gradient
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
from daskgraph.ops import *  # noqa: F403 - the op constructors are the public API
from daskgraph.ops import __all__ as _ops_all
from daskgraph.ops import sparse_elementwise as _sparse_operators  # noqa: F401 (SparseTensor * /)
from daskgraph.scopes import colocate_with, control_dependencies, device
from daskgraph.server import ClusterSpec, Server
from daskgraph.session import RunMetadata, RunOptions, Session, get_default_session
from daskgraph.sparse_tensor import SparseTensor, SparseTensorValue
from daskgraph.variable_scope import (
    AUTO_REUSE,
    VariableScope,
    get_variable,
    get_variable_scope,
    variable_scope,
)

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
