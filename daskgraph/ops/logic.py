"""Comparisons and logic: ops with boolean outputs, and ``where`` choosing between tensors.

Comparisons broadcast as NumPy does and give ``bool`` tensors; importing this module gives
:class:`~daskgraph.framework.graph.Tensor` the operators ``<``, ``<=``, ``>``, ``>=`` and, for
booleans,
``&``, ``|``, ``^`` and ``~``. ``==`` and ``!=`` stay identity comparisons, as in TensorFlow 1
(tensors key feed dicts): use :func:`equal` and :func:`not_equal`.

>>> import daskgraph as dg
>>> with dg.Graph().as_default():
...     x = dg.constant([1.0, 5.0, 3.0])
...     big = x > 2.0
...     y = where(big, x, dg.constant([0.0, 0.0, 0.0]))
>>> big.op.type, big.dtype, y.op.type
('Greater', bool, 'Select')
"""

from __future__ import annotations

from typing import Any

from daskgraph.framework import dtypes
from daskgraph.framework.gradient_registry import no_gradient, register_gradient
from daskgraph.framework.graph import Operation, Tensor, get_default_graph
from daskgraph.framework.op_registry import CPU_ALL, GPU_NUMERIC, ArrayFunction, register
from daskgraph.kernels.logic import _where_indices
from daskgraph.ops.array import convert_to_tensor, reshape
from daskgraph.ops.gradients import unbroadcast
from daskgraph.ops.math import _as_pair, broadcast_shape

__all__ = [
    "equal",
    "greater",
    "greater_equal",
    "less",
    "less_equal",
    "logical_and",
    "logical_not",
    "logical_or",
    "logical_xor",
    "not_equal",
    "where",
]

_BOOL = frozenset({dtypes.bool_})


for _op_type, _function in (
    ("Less", "less"),
    ("LessEqual", "less_equal"),
    ("Greater", "greater"),
    ("GreaterEqual", "greater_equal"),
):
    register(_op_type, ArrayFunction(_function), cpu=GPU_NUMERIC, gpu=GPU_NUMERIC)
register("Equal", ArrayFunction("equal"), cpu=CPU_ALL, gpu=GPU_NUMERIC)
register("NotEqual", ArrayFunction("not_equal"), cpu=CPU_ALL, gpu=GPU_NUMERIC)
register("LogicalAnd", ArrayFunction("logical_and"), cpu=_BOOL, gpu=_BOOL)
register("LogicalOr", ArrayFunction("logical_or"), cpu=_BOOL, gpu=_BOOL)
register("LogicalXor", ArrayFunction("logical_xor"), cpu=_BOOL, gpu=_BOOL)
register("LogicalNot", ArrayFunction("logical_not"), cpu=_BOOL, gpu=_BOOL)
register("Select", ArrayFunction("where"), cpu=CPU_ALL, gpu=GPU_NUMERIC)
register("Where", _where_indices, cpu=CPU_ALL, gpu=GPU_NUMERIC)


# -- builders -------------------------------------------------------------------------------------
def _compare(op_type: str, x: Any, y: Any, name: str | None, where: str) -> Tensor:
    x, y = _as_pair(x, y, op_type)
    if op_type not in ("Equal", "NotEqual") and not x.dtype.is_numeric:
        raise TypeError(f"{where}: expects numeric tensors; {x.name!r} is {x.dtype.name}")
    shape = broadcast_shape(x.shape, y.shape, where)
    op = get_default_graph().create_op(op_type, [x, y], dtype=dtypes.bool_, shape=shape, name=name)
    return op.outputs[0]


def less(x: Any, y: Any, name: str | None = None) -> Tensor:
    """``x < y`` elementwise, with broadcasting: a ``bool`` tensor.

    Examples
    --------
    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     c = less(dg.constant([[1, 5]]), dg.constant([[2], [5]]))
    ...     with dg.Session() as sess:
    ...         sess.run(c).tolist()
    [[True, False], [True, False]]
    """
    return _compare("Less", x, y, name, "less")


def less_equal(x: Any, y: Any, name: str | None = None) -> Tensor:
    """``x <= y`` elementwise, with broadcasting: a ``bool`` tensor."""
    return _compare("LessEqual", x, y, name, "less_equal")


def greater(x: Any, y: Any, name: str | None = None) -> Tensor:
    """``x > y`` elementwise, with broadcasting: a ``bool`` tensor."""
    return _compare("Greater", x, y, name, "greater")


def greater_equal(x: Any, y: Any, name: str | None = None) -> Tensor:
    """``x >= y`` elementwise, with broadcasting: a ``bool`` tensor."""
    return _compare("GreaterEqual", x, y, name, "greater_equal")


def equal(x: Any, y: Any, name: str | None = None) -> Tensor:
    """``x == y`` elementwise (any dtype, strings too on a CPU): a ``bool`` tensor."""
    return _compare("Equal", x, y, name, "equal")


def not_equal(x: Any, y: Any, name: str | None = None) -> Tensor:
    """``x != y`` elementwise (any dtype, strings too on a CPU): a ``bool`` tensor."""
    return _compare("NotEqual", x, y, name, "not_equal")


def _as_bool(x: Any, where: str) -> Tensor:
    x = convert_to_tensor(x)
    if x.dtype is not dtypes.bool_:
        raise TypeError(f"{where}: expects bool tensors; {x.name!r} is {x.dtype.name}")
    return x


def _logical(op_type: str, x: Any, y: Any, name: str | None, where: str) -> Tensor:
    x, y = _as_bool(x, where), _as_bool(y, where)
    shape = broadcast_shape(x.shape, y.shape, where)
    op = get_default_graph().create_op(op_type, [x, y], dtype=dtypes.bool_, shape=shape, name=name)
    return op.outputs[0]


def logical_and(x: Any, y: Any, name: str | None = None) -> Tensor:
    """``x AND y`` of two ``bool`` tensors elementwise, with broadcasting."""
    return _logical("LogicalAnd", x, y, name, "logical_and")


def logical_or(x: Any, y: Any, name: str | None = None) -> Tensor:
    """``x OR y`` of two ``bool`` tensors elementwise, with broadcasting."""
    return _logical("LogicalOr", x, y, name, "logical_or")


def logical_xor(x: Any, y: Any, name: str | None = None) -> Tensor:
    """``x XOR y`` of two ``bool`` tensors elementwise, with broadcasting."""
    return _logical("LogicalXor", x, y, name, "logical_xor")


def logical_not(x: Any, name: str | None = None) -> Tensor:
    """``NOT x`` of a ``bool`` tensor elementwise."""
    x = _as_bool(x, "logical_not")
    op = get_default_graph().create_op("LogicalNot", [x], dtype=x.dtype, shape=x.shape, name=name)
    return op.outputs[0]


def where(condition: Any, x: Any = None, y: Any = None, name: str | None = None) -> Tensor:
    """Elements of ``x`` where ``condition`` is true, else of ``y`` (TF1's ``tf.where``).

    The three broadcast together as in NumPy; as in TensorFlow 1, a vector ``condition``
    against a matrix (or higher rank) ``x`` picks whole rows. The gradient flows to ``x`` and
    ``y`` where each was chosen. With neither ``x`` nor ``y``, the result is the ``int64``
    coordinates of the true elements, one row each (op ``Where``, not differentiable).

    Examples
    --------
    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     c = dg.constant([True, False])
    ...     rows = where(c, dg.constant([[1, 2], [3, 4]]), 0)
    ...     found = where(c)
    ...     with dg.Session() as sess:
    ...         sess.run(rows).tolist(), sess.run(found).tolist()
    ([[1, 2], [0, 0]], [[0]])
    >>> with dg.Graph().as_default():
    ...     where(dg.constant([1, 0]), 1.0, 2.0)
    Traceback (most recent call last):
    ...
    TypeError: where: condition must be a bool tensor; 'Const:0' is int32
    """
    if (x is None) != (y is None):
        raise ValueError("where: give both x and y, or neither (to get the true coordinates)")
    condition = convert_to_tensor(condition)
    if condition.dtype is not dtypes.bool_:
        raise TypeError(
            f"where: condition must be a bool tensor; {condition.name!r} is {condition.dtype.name}"
        )
    graph = get_default_graph()
    if x is None:
        rank = None if condition.shape is None else len(condition.shape)
        op = graph.create_op(
            "Where", [condition], dtype=dtypes.int64, shape=(None, rank), name=name
        )
        return op.outputs[0]
    x, y = _as_pair(x, y, "Select")
    ranks = [t.shape for t in (condition, x)]
    if None not in ranks and len(ranks[0]) == 1 and len(ranks[1]) > 1:
        condition = reshape(condition, [-1] + [1] * (len(ranks[1]) - 1))  # TF1 picks rows
    shape = broadcast_shape(broadcast_shape(condition.shape, x.shape, "where"), y.shape, "where")
    op = graph.create_op("Select", [condition, x, y], dtype=x.dtype, shape=shape, name=name)
    return op.outputs[0]


# -- gradients ------------------------------------------------------------------------------------
@register_gradient("Select")
def _select_grad(op: Operation, grad: Tensor) -> list[Tensor | None]:
    """The gradient goes to ``x`` where the condition held and to ``y`` elsewhere."""
    condition, x, y = op.inputs
    return [
        None,
        unbroadcast(where(condition, grad, 0), x),
        unbroadcast(where(condition, 0, grad), y),
    ]


for _op_type in (
    "Less",
    "LessEqual",
    "Greater",
    "GreaterEqual",
    "Equal",
    "NotEqual",
    "LogicalAnd",
    "LogicalOr",
    "LogicalXor",
    "LogicalNot",
    "Where",
):
    no_gradient(_op_type)


# -- Tensor operators -----------------------------------------------------------------------------
def _install_operators() -> None:
    """``<``, ``<=``, ``>``, ``>=``, ``&``, ``|``, ``^`` and ``~`` build ops; ``==`` is left
    alone (identity), as in TensorFlow 1."""

    def forward(f, name=None):
        return lambda self, other: f(self, other, name=name)

    def reflected(f, name):
        return lambda self, other: f(other, self, name=name)

    Tensor.__lt__ = forward(less)
    Tensor.__le__ = forward(less_equal)
    Tensor.__gt__ = forward(greater)
    Tensor.__ge__ = forward(greater_equal)
    for dunder, function, name in (
        ("and", logical_and, "and"),
        ("or", logical_or, "or"),
        ("xor", logical_xor, "xor"),
    ):
        setattr(Tensor, f"__{dunder}__", forward(function, name))
        setattr(Tensor, f"__r{dunder}__", reflected(function, name))
    Tensor.__invert__ = lambda self: logical_not(self)


_install_operators()
