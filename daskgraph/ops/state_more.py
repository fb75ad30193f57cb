"""More of TF1's variable ops: ``count_up_to`` (a counter variable that stops at a limit) and
``assert_variables_initialized`` (a tensor that fails to compute while a variable has no
value).

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

from daskgraph import dtypes
from daskgraph.errors import OutOfRangeError
from daskgraph.gradients import no_gradient
from daskgraph.graph import GLOBAL_VARIABLES, Tensor, get_default_graph
from daskgraph.ops.registry import register
from daskgraph.ops.shape_ops import stack
from daskgraph.ops.state import Variable
from daskgraph.ops.variable_status import LOCAL_VARIABLES

__all__ = ["assert_variables_initialized", "count_up_to"]

_COUNTER_DTYPES = frozenset({dtypes.int32, dtypes.int64})


# -- kernels ---------------------------------------------------------------------------------------
def _count_up_to_kernel(xp, store, ref, *, limit, node):
    """The variable's value, which is then incremented; OutOfRangeError at ``limit``."""
    value = store.read(ref.name)
    if int(value) >= limit:
        raise OutOfRangeError(f"Reached limit of {limit}\n\t [[{{{{node {node}}}}}]]", op=node)
    store.assign(ref.name, xp.asarray(value + 1, dtype=value.dtype))
    return value


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
