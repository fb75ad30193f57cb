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

Importing the package is cheap: its names are loaded on first use (PEP 562), so that a worker
process, which imports only what it runs (``daskgraph.runtime.worker``), never loads the
planner, the session or training, and ``import daskgraph`` costs only the modules behind the
names a program touches.
"""

from __future__ import annotations

import importlib as _importlib
from typing import Any as _Any

from daskgraph import config as config  # registers the daskgraph.* Dask config keys
from daskgraph import errors as errors  # cheap, and what every error is

__version__ = "0.1.0"

#: public name -> (module, attribute in it; None for the module itself)
_WHERE: dict[str, tuple[str, str | None]] = {
    "data": ("daskgraph.data", None),
    "layers": ("daskgraph.layers", None),
    "dtypes": ("daskgraph.framework.dtypes", None),
    "initializers": ("daskgraph.ops.initializers", None),
    "losses": ("daskgraph.ops.losses", None),
    "nn": ("daskgraph.ops.nn_namespace", None),
    "train": ("daskgraph.training.namespace", None),
    "optimizers": ("daskgraph.training.optimizers", None),
    "saver": ("daskgraph.training.saver", None),
    **{n: ("daskgraph.cluster.server", n) for n in ("ClusterSpec", "Server")},
    **{n: ("daskgraph.config", n) for n in ("GPUOptions", "SessionConfig")},
    "visualize": ("daskgraph.diagnostics.drawing", "visualize"),
    "DeviceSpec": ("daskgraph.framework.device", "DeviceSpec"),
    **{
        n: ("daskgraph.framework.dtypes", n)
        for n in (
            "DType",
            "as_dtype",
            "bool_",
            "float16",
            "float32",
            "float64",
            "int8",
            "int16",
            "int32",
            "int64",
            "string",
            "uint8",
        )
    },
    **{
        n: ("daskgraph.framework.gradient_registry", n)
        for n in ("RegisterGradient", "no_gradient", "register_gradient")
    },
    **{
        n: ("daskgraph.framework.graph", n)
        for n in (
            "Graph",
            "GraphKeys",
            "Operation",
            "Tensor",
            "get_default_graph",
            "name_scope",
            "reset_default_graph",
        )
    },
    **{
        n: ("daskgraph.framework.scopes", n)
        for n in ("colocate_with", "control_dependencies", "device")
    },
    "gradients": ("daskgraph.ops.gradients", "gradients"),
    **{
        n: ("daskgraph.ops.initializers", n)
        for n in (
            "constant_initializer",
            "glorot_normal_initializer",
            "glorot_uniform_initializer",
            "ones_initializer",
            "random_normal_initializer",
            "random_uniform_initializer",
            "truncated_normal_initializer",
            "variance_scaling_initializer",
            "zeros_initializer",
        )
    },
    **{n: ("daskgraph.ops.sparse_tensor", n) for n in ("SparseTensor", "SparseTensorValue")},
    **{
        n: ("daskgraph.ops.variable_scope", n)
        for n in (
            "AUTO_REUSE",
            "VariableScope",
            "get_variable",
            "get_variable_scope",
            "variable_scope",
        )
    },
    **{
        n: ("daskgraph.runtime.client.session", n)
        for n in ("RunMetadata", "RunOptions", "Session", "get_default_session")
    },
}

_NAMED = [
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
]


def _ops() -> _Any:
    """The op constructors' package, with the sparse operators (``SparseTensor * x``)."""
    _importlib.import_module("daskgraph.ops.sparse_elementwise")
    return _importlib.import_module("daskgraph.ops")


def __getattr__(name: str) -> _Any:
    """Load a public name on first use (PEP 562), and keep it in the module."""
    if name == "__all__":
        value: _Any = [*_NAMED, *_ops().__all__]
    elif name in _WHERE:
        module, attribute = _WHERE[name]
        loaded = _importlib.import_module(module)
        value = loaded if attribute is None else getattr(loaded, attribute)
    elif not name.startswith("__") and name in _ops().__all__:
        value = getattr(_ops(), name)
    else:
        raise AttributeError(f"module 'daskgraph' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__getattr__("__all__")})
