"""Cumulative sums and products along an axis: ``cumsum`` and ``cumprod`` (ops ``Cumsum`` and
``Cumprod``), with TensorFlow's ``exclusive`` and ``reverse`` options and gradients.

``exclusive`` leaves each element out of its own total (the first is 0, or 1 for a
product); ``reverse`` accumulates from the end. The axis is known when the graph is built.

>>> import daskgraph as dg
>>> with dg.Graph().as_default():
...     x = dg.constant([[1, 2, 3], [4, 5, 6]])
...     c = cumsum(x, axis=1, exclusive=True, reverse=True)
...     with dg.Session() as sess:
...         sess.run(c).tolist()
[[5, 3, 0], [11, 6, 0]]
"""

from __future__ import annotations

from typing import Any

import numpy as np

from daskgraph.framework import dtypes
from daskgraph.framework.gradient_registry import register_gradient
from daskgraph.framework.graph import Operation, Tensor, get_default_graph
from daskgraph.framework.op_registry import register
from daskgraph.kernels.cumulative import _cumprod, _cumsum
from daskgraph.ops.array import convert_to_tensor
from daskgraph.ops.math_functions import div_no_nan

__all__ = ["cumprod", "cumsum"]

_NUM = dtypes.NUMERIC


register("Cumsum", _cumsum, cpu=_NUM, gpu=_NUM)
register("Cumprod", _cumprod, cpu=_NUM, gpu=_NUM)


# -- builders -------------------------------------------------------------------------------------
def _static_axis(axis: Any, x: Tensor, where: str) -> int:
    if isinstance(axis, Tensor):
        if axis.op.type != "Const" or axis.shape != ():
            raise TypeError(
                f"{where}: axis must be known when the graph is built (an int or a scalar "
                f"constant); {axis.name!r} is computed by a {axis.op.type} op"
            )
        axis = axis.op.attrs["value"]
    value = np.asarray(axis)
    if value.ndim != 0 or value.dtype.kind not in "iu":
        raise TypeError(f"{where}: axis must be an int; got {axis!r}")
    axis = int(value)
    if x.shape is not None:
        rank = len(x.shape)
        if not -rank <= axis < rank:
            raise ValueError(f"{where}: axis {axis} is out of range for {x.name!r} of rank {rank}")
        axis %= rank
    elif axis < 0:
        raise ValueError(f"{where}: a negative axis needs the rank of {x.name!r}, unknown here")
    return axis


def _scan(
    op_type: str, x: Any, axis: Any, exclusive: bool, reverse: bool, name: str | None
) -> Tensor:
    where = op_type.lower()
    x = convert_to_tensor(x)
    if not x.dtype.is_numeric:
        raise TypeError(f"{where}: expects a numeric tensor; {x.name!r} is {x.dtype.name}")
    attrs = {
        "axis": _static_axis(axis, x, where),
        "exclusive": bool(exclusive),
        "reverse": bool(reverse),
    }
    op = get_default_graph().create_op(
        op_type, [x], dtype=x.dtype, shape=x.shape, attrs=attrs, name=name
    )
    return op.outputs[0]


def cumsum(
    x: Any, axis: Any = 0, exclusive: bool = False, reverse: bool = False, name: str | None = None
) -> Tensor:
    """The running sum of ``x`` along ``axis`` (``tf.cumsum``): ``[a, a + b, a + b + c]``;
    exclusive ``[0, a, a + b]``; reversed ``[a + b + c, b + c, c]``."""
    return _scan("Cumsum", x, axis, exclusive, reverse, name)


def cumprod(
    x: Any, axis: Any = 0, exclusive: bool = False, reverse: bool = False, name: str | None = None
) -> Tensor:
    """The running product of ``x`` along ``axis`` (``tf.cumprod``): ``[a, a * b, a * b *
    c]``; exclusive ``[1, a, a * b]``.

    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     p = cumprod(dg.constant([1.0, 2.0, 3.0]), exclusive=True)
    ...     with dg.Session() as sess:
    ...         sess.run(p).tolist()
    [1.0, 1.0, 2.0]
    """
    return _scan("Cumprod", x, axis, exclusive, reverse, name)


# -- gradients ------------------------------------------------------------------------------------
@register_gradient("Cumsum")
def _cumsum_grad(op: Operation, grad: Tensor) -> list[Tensor]:
    a = op.attrs
    return [cumsum(grad, a["axis"], exclusive=a["exclusive"], reverse=not a["reverse"])]


@register_gradient("Cumprod")
def _cumprod_grad(op: Operation, grad: Tensor) -> list[Tensor]:
    """TensorFlow's: ``cumsum(cumprod(x) * grad, reversed) / x`` (0 where ``x`` is 0)."""
    x, a = op.inputs[0], op.attrs
    prod = cumprod(x, a["axis"], exclusive=a["exclusive"], reverse=a["reverse"])
    out = cumsum(prod * grad, a["axis"], exclusive=a["exclusive"], reverse=not a["reverse"])
    return [div_no_nan(out, x)]
