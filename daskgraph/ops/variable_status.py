"""Which variables hold a value: ``is_variable_initialized`` (op ``IsVariableInitialized``, on
the variable's device, reading its worker's variable store) and
``report_uninitialized_variables`` (op ``ReportUninitialized``, gathering the names of those
that do not), with TF1's local-variable names and the deprecated initializer aliases.

>>> import daskgraph as dg
>>> with dg.Graph().as_default() as g:
...     w = dg.Variable(1.0, name="w")
...     b = dg.Variable(0.0, name="b")
...     missing = report_uninitialized_variables()
...     with dg.Session() as sess:
...         _ = sess.run(w.initializer)
...         sess.run(missing).tolist(), sess.run(is_variable_initialized(w))
([b'b'], np.True_)
"""

from __future__ import annotations

import numpy as np

from daskgraph import dtypes
from daskgraph.gradients import no_gradient
from daskgraph.graph import Operation, Tensor, get_default_graph
from daskgraph.graph import _name_scope as graph_name_scope
from daskgraph.ops.array import constant
from daskgraph.ops.registry import register
from daskgraph.ops.state import (
    _VAR_DTYPES,
    Variable,
    _as_variable,
    global_variables,
    global_variables_initializer,
    variables_initializer,
)

__all__ = [
    "LOCAL_VARIABLES",
    "initialize_all_variables",
    "initialize_local_variables",
    "is_variable_initialized",
    "local_variables",
    "local_variables_initializer",
    "report_uninitialized_variables",
]

#: TensorFlow 1's collection of per-process variables (``tf.GraphKeys.LOCAL_VARIABLES``)
LOCAL_VARIABLES = "local_variables"


# -- kernels --------------------------------------------------------------------------------------
def _is_initialized_kernel(xp, store, ref):
    return xp.asarray(ref.name in store.names())


def _report_kernel(xp, *flags, names):
    missing = [n.encode() for n, ok in zip(names, flags, strict=True) if not bool(ok)]
    return np.array(missing, dtype=object).reshape(len(missing))


register(
    "IsVariableInitialized",
    _is_initialized_kernel,
    stateful=True,
    ref_inputs=(0,),
    cpu=_VAR_DTYPES["cpu"] | {dtypes.bool_},
    gpu=_VAR_DTYPES["gpu"] | {dtypes.bool_},
)
register("ReportUninitialized", _report_kernel, cpu=dtypes.ALL, gpu=None)  # strings: CPU


# -- builders -------------------------------------------------------------------------------------
def is_variable_initialized(variable: Variable) -> Tensor:
    """A ``bool`` scalar: whether ``variable`` holds a value in the session that runs it
    (``tf.is_variable_initialized``). It runs on the variable's device."""
    var = _as_variable(variable, "is_variable_initialized")
    ref = var._ref()
    op = ref.graph.create_op(
        "IsVariableInitialized",
        [ref],
        dtype=dtypes.bool_,
        shape=(),
        name="IsVariableInitialized",
        colocate_with=ref.op,
    )
    return op.outputs[0]


def report_uninitialized_variables(
    var_list: list[Variable] | None = None, name: str = "report_uninitialized_variables"
) -> Tensor:
    """A 1-D ``string`` tensor of the names (``var.op.name``) of the variables of ``var_list``
    that hold no value yet, in ``var_list``'s order (``tf.report_uninitialized_variables``;
    fetched as ``bytes``, as TensorFlow's strings are). By default the global and local
    variables of the default graph; an empty list gives an empty tensor.
    """
    if var_list is None:
        var_list = global_variables() + local_variables()
    graph = get_default_graph()
    with graph_name_scope(graph, name) as scope:
        if not var_list:
            return constant(np.array([], dtype=object), dtype=dtypes.string, name="Const")
        flags = [is_variable_initialized(v) for v in var_list]
        names = tuple(v.op.name for v in var_list)
        op = graph.create_op(
            "ReportUninitialized",
            flags,
            dtype=dtypes.string,
            shape=(None,),
            attrs={"names": names},
            exact_name=scope.rstrip("/"),
        )
    return op.outputs[0]


def local_variables(scope: str | None = None) -> list[Variable]:
    """The default graph's variables of the ``LOCAL_VARIABLES`` collection (made with
    ``collections=[LOCAL_VARIABLES]``), those under name scope ``scope`` when given."""
    variables = get_default_graph().get_collection(LOCAL_VARIABLES)
    if scope is None:
        return variables
    return [v for v in variables if v.op.name.startswith(scope)]


def local_variables_initializer() -> Operation:
    """An op (``init``) that initializes the default graph's local variables."""
    return variables_initializer(local_variables(), name="init")


def initialize_all_variables() -> Operation:
    """TensorFlow 1's deprecated name of :func:`global_variables_initializer`."""
    return global_variables_initializer()


def initialize_local_variables() -> Operation:
    """TensorFlow 1's deprecated name of :func:`local_variables_initializer`."""
    return local_variables_initializer()


no_gradient("IsVariableInitialized")
no_gradient("ReportUninitialized")
