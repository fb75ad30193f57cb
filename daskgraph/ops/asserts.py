"""TF1's assertions: ``Assert`` and the ``assert_*`` family, ops that fail the run with
:class:`~daskgraph.errors.InvalidArgumentError` when their condition does not hold.

``Assert(condition, data)`` is one op with no output (``Assert``): where its scalar ``bool``
condition is false when it runs, it fails the run with TensorFlow's message,
``assertion failed: [<data 0>] [<data 1>] ...`` (each tensor summarized as ``tf.Print`` does,
``summarize`` elements, 3 by default). Give it to ``control_dependencies`` (or fetch it) to
make it run. Python strings among the data stay attributes of the op, not string tensors, so
an assertion on numbers can run on a GPU.

The ``assert_*`` functions build the condition and the data as TensorFlow 1 does, with its
wording and names (``assert_equal/Assert/Assert``). What the graph already tells is checked
when the assertion is built, as TensorFlow does: comparisons of two constants raise
``InvalidArgumentError`` at once, ranks known statically raise ``ValueError`` (or give a
``no_op`` when they hold), and ``assert_type``/``assert_integer``/``assert_scalar`` are only
static.

>>> import daskgraph as dg
>>> with dg.Graph().as_default():
...     x = dg.placeholder(dg.int32, [None])
...     check = assert_positive(x)
...     with dg.control_dependencies([check]):
...         y = dg.identity(x)
...     sess = dg.Session()
>>> print(sess.run(y, {x: [1, 2]}))
[1 2]
>>> sess.run(y, {x: [1, -2]})
Traceback (most recent call last):
...
daskgraph.errors.InvalidArgumentError: assertion failed: [] [Condition x > 0 did not hold...
>>> sess.close()
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from daskgraph.errors import InvalidArgumentError
from daskgraph.framework import dtypes
from daskgraph.framework.gradient_registry import no_gradient
from daskgraph.framework.graph import Operation, Tensor, get_default_graph, name_scope
from daskgraph.framework.op_registry import CPU_ALL, GPU_NUMERIC, register
from daskgraph.kernels.asserts import _assert_kernel
from daskgraph.ops.array import convert_to_tensor, no_op, reshape
from daskgraph.ops.logic import (
    equal,
    greater,
    greater_equal,
    less,
    less_equal,
    not_equal,
)
from daskgraph.ops.math import _as_pair, abs
from daskgraph.ops.ranges import rank as rank_of
from daskgraph.ops.reduction import reduce_all
from daskgraph.ops.shape_ops import shape as shape_of

__all__ = [
    "Assert",
    "assert_equal",
    "assert_greater",
    "assert_greater_equal",
    "assert_integer",
    "assert_less",
    "assert_less_equal",
    "assert_near",
    "assert_negative",
    "assert_non_negative",
    "assert_non_positive",
    "assert_none_equal",
    "assert_positive",
    "assert_rank",
    "assert_rank_at_least",
    "assert_same_float_dtype",
    "assert_scalar",
    "assert_type",
    "is_non_decreasing",
    "is_strictly_increasing",
]


register("Assert", _assert_kernel, cpu=CPU_ALL, gpu=GPU_NUMERIC)
no_gradient("Assert")


# -- Assert ---------------------------------------------------------------------------------------
def Assert(condition: Any, data: Any, summarize: int | None = None, name: str | None = None):
    """An op that fails the run with ``InvalidArgumentError`` when the scalar ``bool``
    ``condition`` is false, its message the entries of ``data`` (strings, or tensors of which
    ``summarize`` elements are shown, 3 by default; negative: all), as ``tf.Assert``.

    Returns the :class:`~daskgraph.framework.graph.Operation`, to use in ``control_dependencies``.

    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     x = dg.constant([-1.0, 2.0, 3.0, 4.0])
    ...     check = Assert(dg.reduce_all(x > 0.0), ["x is", x], summarize=2)
    ...     with dg.Session() as sess:
    ...         sess.run(check)
    Traceback (most recent call last):
    ...
    daskgraph.errors.InvalidArgumentError: assertion failed: [x is] [-1 2...]...
    """
    graph = get_default_graph()
    items = list(data) if isinstance(data, (list, tuple)) else [data]
    with name_scope(name or "Assert"):
        condition = convert_to_tensor(condition, name="Condition")
        if condition.dtype is not dtypes.bool_:
            raise TypeError(
                f"Assert: condition must be a bool tensor; {condition.name!r} is "
                f"{condition.dtype.name}"
            )
        template: list[str | None] = []
        tensors: list[Tensor] = []
        for item in items:
            if isinstance(item, (str, bytes)):
                template.append(item.decode() if isinstance(item, bytes) else item)
            else:
                tensors.append(convert_to_tensor(item))
                template.append(None)
        exact = graph.unique_name("Assert")
        attrs = {
            "template": tuple(template),
            "summarize": 3 if summarize is None else int(summarize),
            "node": exact,
        }
        return graph.create_op(
            "Assert", [condition, *tensors], dtype=None, attrs=attrs, exact_name=exact
        )


# -- static checks --------------------------------------------------------------------------------
def constant_value(tensor: Tensor) -> np.ndarray | None:
    """The value of ``tensor`` when the graph fixes it (a constant), else None."""
    if isinstance(tensor, Tensor) and tensor.op.type == "Const":
        return np.asarray(tensor.op.attrs["value"])
    return None


def _static_text(item: Any) -> str:
    value = constant_value(item) if isinstance(item, Tensor) else None
    return str(value) if value is not None else str(item)


def _assert_static(condition: bool, data: list[Any]) -> None:
    """Raise TensorFlow's build-time error when a statically known condition is false."""
    if not condition:
        raise InvalidArgumentError("\n".join(_static_text(d) for d in data), op=None)


def _message_prefix(message: str | None) -> str:
    return f"{message}.  " if message else ""


def _operands(x: Any, y: Any) -> tuple[Tensor, Tensor]:
    """``x`` and ``y`` as tensors (constants named ``x`` and ``y``), of one dtype."""
    if not isinstance(x, Tensor) and not hasattr(x, "_as_tensor"):
        x = convert_to_tensor(x, name="x")
    if not isinstance(y, Tensor) and not hasattr(y, "_as_tensor"):
        y = convert_to_tensor(y, dtype=convert_to_tensor(x).dtype, name="y")
    return _as_pair(x, y, "assert")


# -- comparisons ----------------------------------------------------------------------------------
_NUMPY = {
    "==": np.equal,
    "!=": np.not_equal,
    "<": np.less,
    "<=": np.less_equal,
    ">": np.greater,
    ">=": np.greater_equal,
}
_OPS: dict[str, Callable[..., Tensor]] = {
    "==": equal,
    "!=": not_equal,
    "<": less,
    "<=": less_equal,
    ">": greater,
    ">=": greater_equal,
}


def _binary_assert(
    sym: str,
    opname: str,
    x: Any,
    y: Any,
    data: Any,
    summarize: int | None,
    message: str | None,
    name: str | None,
) -> Operation:
    """TensorFlow's ``_binary_assert``: ``x sym y`` elementwise, checked now when both are
    constants."""
    with name_scope(name or opname):
        x, y = _operands(x, y)
        if data is None:
            data = [
                f"Condition x {sym} y did not hold element-wise:",
                f"x ({x.name}) = ",
                x,
                f"y ({y.name}) = ",
                y,
            ]
        if message is not None:
            data = [message, *data]
        condition = reduce_all(_OPS[sym](x, y))
        x_static, y_static = constant_value(x), constant_value(y)
        if x_static is not None and y_static is not None:
            _assert_static(bool(np.all(_NUMPY[sym](x_static, y_static))), list(data))
        return Assert(condition, data, summarize=summarize)


def assert_equal(
    x: Any,
    y: Any,
    data: Any = None,
    summarize: int | None = None,
    message: str | None = None,
    name: str | None = None,
) -> Operation:
    """An op failing the run unless ``x == y`` everywhere (with broadcasting), as
    ``tf.assert_equal``; two constants are compared at once.

    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     assert_equal(dg.constant([1, 2]), dg.constant([1, 3]))
    Traceback (most recent call last):
    ...
    daskgraph.errors.InvalidArgumentError: Condition x == y did not hold element-wise:
    x (Const:0) =...[1 2]
    y (Const_1:0) =...[1 3]
    """
    if x is y:
        with name_scope(name or "assert_equal"):
            return no_op()
    return _binary_assert("==", "assert_equal", x, y, data, summarize, message, name)


def _comparison_assert(sym: str, opname: str) -> Callable[..., Operation]:
    """The public ``assert_*`` named ``opname``: an op failing the run unless ``x sym y``
    everywhere (see :func:`_binary_assert`)."""

    def comparison_assert(
        x: Any,
        y: Any,
        data: Any = None,
        summarize: int | None = None,
        message: str | None = None,
        name: str | None = None,
    ) -> Operation:
        return _binary_assert(sym, opname, x, y, data, summarize, message, name)

    comparison_assert.__name__ = comparison_assert.__qualname__ = opname
    comparison_assert.__doc__ = (
        f"An op failing the run unless ``x {sym} y`` everywhere, as ``tf.{opname}``."
    )
    return comparison_assert


assert_none_equal = _comparison_assert("!=", "assert_none_equal")
assert_less = _comparison_assert("<", "assert_less")
assert_less_equal = _comparison_assert("<=", "assert_less_equal")
assert_greater = _comparison_assert(">", "assert_greater")
assert_greater_equal = _comparison_assert(">=", "assert_greater_equal")


def _sign_assert(
    opname: str, sym: str, x: Any, data: Any, summarize: Any, message: Any, name: Any
) -> Operation:
    """``x sym 0`` as TensorFlow words it: a comparison of ``x`` with 0."""
    message = _message_prefix(message)
    with name_scope(name or opname):
        x = convert_to_tensor(x, name="x")
        if data is None:
            condition = f"Condition x {sym} 0 did not hold element-wise:"
            data = [message, condition, f"x ({x.name}) = ", x]
        zero = convert_to_tensor(0, dtype=x.dtype)
        if sym in ("<", "<="):
            compare = assert_less if sym == "<" else assert_less_equal
            return compare(x, zero, data=data, summarize=summarize)
        compare = assert_less if sym == ">" else assert_less_equal
        return compare(zero, x, data=data, summarize=summarize)


def _sign_check(sym: str, opname: str) -> Callable[..., Operation]:
    """The public ``assert_*`` named ``opname``: an op failing the run unless ``x sym 0``
    everywhere (see :func:`_sign_assert`)."""

    def sign_assert(
        x: Any, data: Any = None, summarize: Any = None, message: Any = None, name: Any = None
    ) -> Operation:
        return _sign_assert(opname, sym, x, data, summarize, message, name)

    sign_assert.__name__ = sign_assert.__qualname__ = opname
    sign_assert.__doc__ = (
        f"An op failing the run unless ``x {sym} 0`` everywhere, as ``tf.{opname}``."
    )
    return sign_assert


assert_positive = _sign_check(">", "assert_positive")
assert_negative = _sign_check("<", "assert_negative")
assert_non_negative = _sign_check(">=", "assert_non_negative")
assert_non_positive = _sign_check("<=", "assert_non_positive")


def _tensor_text(t: Tensor) -> str:
    """A tensor as TensorFlow 1 prints one: ``Tensor("name:0", shape=(), dtype=float32)``."""
    return f'Tensor("{t.name}", shape={_shape_text(t.shape)}, dtype={t.dtype.name})'


def _shape_text(shape: tuple | None) -> str:
    return "<unknown>" if shape is None else str(tuple(shape))


def assert_near(
    x: Any,
    y: Any,
    rtol: Any = None,
    atol: Any = None,
    data: Any = None,
    summarize: int | None = None,
    message: str | None = None,
    name: str | None = None,
) -> Operation:
    """An op failing the run unless ``|x - y| < atol + rtol * |y|`` everywhere (floats;
    ``rtol`` and ``atol`` default to 10 machine epsilons of the dtype), as
    ``tf.assert_near``."""
    message = _message_prefix(message)
    with name_scope(name or "assert_near"):
        x = convert_to_tensor(x, name="x")
        if not x.dtype.is_floating:
            raise TypeError(f"assert_near: expects floating-point tensors; {x.name!r} is {x.dtype}")
        y = convert_to_tensor(y, dtype=x.dtype, name="y")
        eps = float(np.finfo(x.dtype.numpy).eps)
        rtol = convert_to_tensor(10 * eps if rtol is None else rtol, dtype=x.dtype, name="rtol")
        atol = convert_to_tensor(10 * eps if atol is None else atol, dtype=x.dtype, name="atol")
        if data is None:
            data = [
                message,
                f"x and y not equal to tolerance rtol = {_tensor_text(rtol)}, "
                f"atol = {_tensor_text(atol)}",
                f"x ({x.name}) = ",
                x,
                f"y ({y.name}) = ",
                y,
            ]
        condition = reduce_all(less(abs(x - y), atol + rtol * abs(y)))
        return Assert(condition, data, summarize=summarize)


# -- ranks, types and shapes ----------------------------------------------------------------------
def _rank_assert(
    x: Any,
    rank: Any,
    data: Any,
    summarize: Any,
    message: Any,
    name: str,
    at_least: bool,
) -> Operation:
    words = "rank at least" if at_least else "rank"
    with name_scope(name):
        x = convert_to_tensor(x, name="x")
        rank = convert_to_tensor(rank, name="rank")
        message = _message_prefix(message)
        if rank.dtype is not dtypes.int32:
            raise TypeError(f"{rank.name} must be of type tf.int32; got tf.{rank.dtype.name}")
        if data is None:
            data = [message, f"Tensor {x.name} must have {words}", rank, "Received shape: "]
            data.append(shape_of(x))
        static = constant_value(rank)
        if (static is not None and static.ndim != 0) or rank.shape not in (None, ()):
            raise ValueError("Rank must be a scalar.")
        if static is not None and x.shape is not None:
            wanted, actual = int(static), len(x.shape)
            if actual < wanted if at_least else actual != wanted:
                raise ValueError(
                    f"{message}Tensor {x.name} must have {words} {wanted}.  Received rank "
                    f"{actual}, shape {_shape_text(x.shape)}"
                )
            return no_op(name="static_checks_determined_all_ok")
        compare = greater_equal if at_least else equal
        return Assert(compare(rank_of(x), rank), data, summarize=summarize)


def assert_rank(
    x: Any,
    rank: Any,
    data: Any = None,
    summarize: int | None = None,
    message: str | None = None,
    name: str | None = None,
) -> Operation:
    """An op failing the run unless ``x`` has rank ``rank``, as ``tf.assert_rank``: a
    ``ValueError`` now when the rank is known statically and wrong, a ``no_op`` when it is
    right.

    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     assert_rank(dg.constant([1, 2]), 2)
    Traceback (most recent call last):
    ...
    ValueError: Tensor Const:0 must have rank 2.  Received rank 1, shape (2,)
    """
    name = name or "assert_rank"
    return _rank_assert(x, rank, data, summarize, message, name, at_least=False)


def assert_rank_at_least(
    x: Any,
    rank: Any,
    data: Any = None,
    summarize: int | None = None,
    message: str | None = None,
    name: str | None = None,
) -> Operation:
    """An op failing the run unless ``x`` has rank ``rank`` or more, as
    ``tf.assert_rank_at_least`` (checked now when the rank is known statically)."""
    name = name or "assert_rank_at_least"
    return _rank_assert(x, rank, data, summarize, message, name, at_least=True)


def assert_scalar(tensor: Any, name: str | None = None, message: str | None = None) -> Tensor:
    """``tensor`` itself when its static shape is a scalar's; ``ValueError`` otherwise (also
    when the shape is unknown), as ``tf.assert_scalar``."""
    with name_scope(name or "assert_scalar"):
        tensor = convert_to_tensor(tensor)
        if tensor.shape != ():
            raise ValueError(
                f"{_message_prefix(message)}Expected scalar shape for {tensor.name}, saw shape: "
                f"{_shape_text(tensor.shape)}."
            )
        return tensor


def assert_type(tensor: Any, tf_type: Any, message: str | None = None, name: str | None = None):
    """A ``no_op`` when ``tensor`` is of dtype ``tf_type``; ``TypeError`` otherwise (only
    static, as ``tf.assert_type``)."""
    tf_type = dtypes.as_dtype(tf_type)
    with name_scope(name or "assert_type"):
        tensor = convert_to_tensor(tensor, name="tensor")
        if tensor.dtype != tf_type:
            raise TypeError(
                f"{_message_prefix(message)}{tensor.name} must be of type tf.{tf_type.name}; "
                f"got tf.{tensor.dtype.name}"
            )
        return no_op(name="statically_determined_correct_type")


def assert_integer(x: Any, message: str | None = None, name: str | None = None) -> Operation:
    """A ``no_op`` when ``x`` has an integer dtype; ``TypeError`` otherwise (only static, as
    ``tf.assert_integer``)."""
    with name_scope(name or "assert_integer"):
        x = convert_to_tensor(x, name="x")
        if not x.dtype.is_integer:
            raise TypeError(
                f'{_message_prefix(message)}Expected "x" to be integer type.  Found: {x.name} '
                f"of dtype <dtype: '{x.dtype.name}'>"
            )
        return no_op(name="statically_determined_was_integer")


def assert_same_float_dtype(tensors: Any = None, dtype: Any = None) -> dtypes.DType:
    """The one floating-point dtype of ``tensors`` (``None`` entries ignored) and ``dtype``
    (float32 when neither gives one); ``ValueError`` when they differ or it is not floating
    point, as ``tf.assert_same_float_dtype``."""
    expected = dtypes.as_dtype(dtype) if dtype is not None else None
    first = None
    for item in tensors or ():
        if item is None:
            continue
        item_type = item.dtype
        if expected is None:
            expected, first = item_type, getattr(item, "name", str(item))
        elif item_type != expected:
            origin = f" as {first}" if first else ""
            raise ValueError(
                f"{getattr(item, 'name', item)}, type=<dtype: '{item_type.name}'>, must be of "
                f"the same type (<dtype: '{expected.name}'>){origin}."
            )
    if expected is None:
        return dtypes.float32
    if not expected.is_floating:
        raise ValueError(f"Expected floating point type, got <dtype: '{expected.name}'>.")
    return expected


# -- monotonicity ---------------------------------------------------------------------------------
def _monotonic(x: Any, compare: Callable[..., Tensor], name: str) -> Tensor:
    with name_scope(name):
        x = convert_to_tensor(x)
        if not x.dtype.is_numeric:
            raise TypeError(f"Expected x to be numeric, instead found: {x.dtype.name}")
        flat = x if x.shape is not None and len(x.shape) == 1 else reshape(x, [-1])
        return reduce_all(compare(flat[:-1], flat[1:]))


def is_non_decreasing(x: Any, name: str | None = None) -> Tensor:
    """Whether the elements of ``x``, flattened, never decrease (a scalar ``bool`` tensor;
    true for fewer than two elements).

    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     a = is_non_decreasing([1, 1, 2])
    ...     b = is_strictly_increasing([1, 1, 2])
    ...     with dg.Session() as sess:
    ...         bool(sess.run(a)), bool(sess.run(b))
    (True, False)
    """
    return _monotonic(x, less_equal, name or "is_non_decreasing")


def is_strictly_increasing(x: Any, name: str | None = None) -> Tensor:
    """Whether the elements of ``x``, flattened, always increase (a scalar ``bool`` tensor)."""
    return _monotonic(x, less, name or "is_strictly_increasing")
