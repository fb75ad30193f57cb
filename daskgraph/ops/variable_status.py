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

More of TF1's variable ops: ``count_up_to`` (a counter variable that stops at a limit) and
``assert_variables_initialized`` (a tensor that fails to compute while a variable has no value).

>>> import daskgraph as dg
>>> with dg.Graph().as_default():
...     v = dg.Variable(0, name="c")
...     step = count_up_to(v, 2)
...     with dg.Session() as sess:
...         _ = sess.run(v.initializer)
...         [int(sess.run(step)) for _ in range(2)]
[0, 1]
"""

from __future__ import annotations

from typing import Any

import numpy as np

from daskgraph.framework import dtypes
from daskgraph.framework.gradient_registry import no_gradient
from daskgraph.framework.graph import GLOBAL_VARIABLES, Operation, Tensor, get_default_graph
from daskgraph.framework.graph import _name_scope as graph_name_scope
from daskgraph.framework.op_registry import register
from daskgraph.kernels.variable_status import (
    _count_up_to_kernel,
    _is_initialized_kernel,
    _report_kernel,
)
from daskgraph.ops.array import constant
from daskgraph.ops.shape_ops import stack
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


# -- from state_more ----------------------------------------------------------------------
__all__ += ["assert_variables_initialized", "count_up_to"]

_COUNTER_DTYPES = frozenset({dtypes.int32, dtypes.int64})


# TensorFlow has no GPU kernel for CountUpTo: the counter lives on the CPU
register(
    "CountUpTo", _count_up_to_kernel, cpu=_COUNTER_DTYPES, gpu=None, stateful=True, ref_inputs=(0,)
)
no_gradient("CountUpTo")


# -- builders --------------------------------------------------------------------------------------
def count_up_to(ref: Variable, limit: int, name: str | None = None) -> Tensor:
    """Increment the integer variable ``ref`` until it reaches ``limit``: each run outputs the
    value before the increment; a run at ``limit`` fails with
    :class:`~daskgraph.errors.OutOfRangeError` ("Reached limit of ...") and changes nothing
    (``tf.count_up_to``).

    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     v = dg.Variable(1, name="c")
    ...     step = count_up_to(v, 2)
    ...     with dg.Session() as sess:
    ...         _ = sess.run(v.initializer)
    ...         first = int(sess.run(step))
    ...         sess.run(step)
    Traceback (most recent call last):
    ...
    daskgraph.errors.OutOfRangeError: Reached limit of 2...
    """
    if not isinstance(ref, Variable):
        raise TypeError(f"count_up_to expects a Variable; got {ref!r}")
    if ref.dtype not in _COUNTER_DTYPES:
        raise TypeError(
            f"Value passed to parameter 'ref' has DataType {ref.dtype.name} not in list of "
            "allowed values: int32, int64"
        )
    graph = get_default_graph()
    exact = graph.unique_name(name or "CountUpTo")
    op = graph.create_op(
        "CountUpTo",
        [ref._ref()],
        dtype=ref.dtype,
        shape=ref.shape,
        attrs={"limit": int(limit), "node": exact},
        exact_name=exact,
        colocate_with=ref.op,
    )
    return op.outputs[0]


def assert_variables_initialized(var_list: Any = None) -> Tensor | None:
    """A tensor whose computation fails (``FailedPreconditionError``) while one of
    ``var_list`` (default: the global and local variables) has no value; the variables'
    ranks once they all have one (a scalar for one variable, else a vector), None when there
    are no variables (``tf.assert_variables_initialized``).

    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     v = dg.Variable([1.0, 2.0])
    ...     check = assert_variables_initialized()
    ...     with dg.Session() as sess:
    ...         _ = sess.run(v.initializer)
    ...         int(sess.run(check))
    1
    """
    graph = get_default_graph()
    if var_list is None:
        var_list = graph.get_collection(GLOBAL_VARIABLES) + graph.get_collection(LOCAL_VARIABLES)
    if not var_list:
        return None
    ranks = []
    for var in var_list:  # TF: rank_internal(var, optimize=False), a Rank op that reads var
        value = var.value() if isinstance(var, Variable) else var
        ranks.append(
            graph.create_op(
                "Rank",
                [value],
                dtype=dtypes.int32,
                shape=(),
                name="Rank",
                colocate_with=value.op,
            ).outputs[0]
        )
    return ranks[0] if len(ranks) == 1 else stack(ranks)


def _variable_count_up_to(self: Variable, limit: int) -> Tensor:
    """``Variable.count_up_to(limit)``: :func:`count_up_to` of this variable."""
    return count_up_to(self, limit)


Variable.count_up_to = _variable_count_up_to  # TF1's method, as ops modules give Tensor theirs
