"""Tensors counted from sizes: ``range`` (op ``Range``) and ``rank`` (op ``Rank``), with
TensorFlow 1's signatures and dtype rules.

``range`` takes its bounds as tensors, so they may be fed; when all three are known when the
graph is built, so is the length of the result. Neither op is differentiable.

>>> import daskgraph as dg
>>> with dg.Graph().as_default():
...     r = range(10, delta=3)
...     f = range(1.5, 3.0, 0.5)
...     n = dg.placeholder(dg.int32, [])
...     v = range(n)
>>> r.shape, r.dtype, f.dtype, v.shape
((4,), int32, float32, (None,))
"""

from __future__ import annotations

import builtins
import math
from typing import Any

import numpy as np

from daskgraph.framework import dtypes
from daskgraph.framework.gradient_registry import no_gradient
from daskgraph.framework.graph import Tensor, get_default_graph
from daskgraph.framework.graph import _name_scope as graph_name_scope
from daskgraph.framework.op_registry import CPU_ALL, GPU_NUMERIC, register
from daskgraph.kernels.ranges import _bounds_problem, _range_kernel, _rank_kernel
from daskgraph.ops.array import cast, constant, convert_to_tensor

__all__ = ["range", "rank"]

#: TensorFlow's order of the dtypes ``range`` infers: the widest of its arguments' wins
_RANGE_ORDER = (dtypes.int32, dtypes.int64, dtypes.float32, dtypes.float64)


register("Range", _range_kernel, cpu=dtypes.NUMERIC, gpu=dtypes.NUMERIC)
register("Rank", _rank_kernel, cpu=CPU_ALL, gpu=GPU_NUMERIC)


# -- builders -------------------------------------------------------------------------------------
def range(
    start: Any,
    limit: Any = None,
    delta: Any = 1,
    dtype: Any = None,
    name: str = "range",
) -> Tensor:
    """``start, start + delta, ...`` up to ``limit`` (excluded), as ``tf.range``.

    With one argument it is the limit and counting starts at 0. Without ``dtype`` the result
    has the widest dtype of the arguments in TensorFlow's order ``int32 < int64 < float32 <
    float64`` (Python ints are ``int32``, floats ``float32``); with one, the arguments are
    cast to it.

    Examples
    --------
    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     a = range(5)
    ...     b = range(3, 18, 3)
    ...     c = range(3, 1, -0.5, dtype=dg.float64)
    ...     with dg.Session() as sess:
    ...         [v.tolist() for v in sess.run([a, b, c])]
    [[0, 1, 2, 3, 4], [3, 6, 9, 12, 15], [3.0, 2.5, 2.0, 1.5]]
    """
    if limit is None:
        start, limit = 0, start
    graph = get_default_graph()
    with graph_name_scope(graph, name) as scope:
        bounds = [_bound(v, n) for v, n in ((start, "start"), (limit, "limit"), (delta, "delta"))]
        out = dtypes.as_dtype(dtype) if dtype is not None else _widest(bounds)
        if out not in _RANGE_ORDER and not out.is_integer:
            raise TypeError(f"range: dtype must be an integer or float type; got {out.name}")
        bounds = [b if b.dtype is out else cast(b, out) for b in bounds]
        length = _static_length([start, limit, delta])
        op = graph.create_op(
            "Range",
            bounds,
            dtype=out,
            shape=(length,),
            attrs={"dtype": out.numpy},
            exact_name=scope.rstrip("/"),
        )
    return op.outputs[0]


def _bound(value: Any, what: str) -> Tensor:
    t = value if isinstance(value, Tensor) else convert_to_tensor(value, name=what)
    if t.shape not in (None, ()):
        raise ValueError(f"range: {what} must be a scalar; {t.name!r} has shape {t.shape}")
    if not t.dtype.is_numeric:
        raise TypeError(f"range: {what} must be a number; {t.name!r} is {t.dtype.name}")
    return t


def _widest(bounds: list[Tensor]) -> dtypes.DType:
    order = {d: i for i, d in enumerate(_RANGE_ORDER)}
    return builtins.max((t.dtype for t in bounds), key=lambda d: order.get(d, -1))


def _static_length(values: list[Any]) -> int | None:
    """The result's length when the bounds are Python numbers or constants, else None."""
    numbers = []
    for v in values:
        if isinstance(v, Tensor):
            if v.op.type != "Const":
                return None
            v = v.op.attrs["value"]
        numbers.append(float(np.asarray(v)))
    start, limit, delta = numbers
    problem = _bounds_problem(start, limit, delta)
    if problem:
        raise ValueError(f"range: {problem}")
    return math.ceil((limit - start) / delta)


def rank(input: Any, name: str | None = None) -> Tensor:
    """The number of dimensions of ``input`` as an ``int32`` scalar (``tf.rank``); a constant
    when the rank is known when the graph is built.

    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     r = rank(dg.placeholder(dg.float32, [None, 3]))
    ...     u = rank(dg.placeholder(dg.float32))
    >>> r.op.type, u.op.type
    ('Const', 'Rank')
    """
    x = convert_to_tensor(input)
    if x.shape is not None:
        return constant(len(x.shape), dtype=dtypes.int32, name=name or "Rank")
    op = get_default_graph().create_op("Rank", [x], dtype=dtypes.int32, shape=(), name=name)
    return op.outputs[0]


no_gradient("Range")
no_gradient("Rank")
