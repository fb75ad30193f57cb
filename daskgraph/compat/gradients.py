"""TF1's signatures of ``tf.gradients`` and ``tf.hessians``, and the names they take
(``tf.AggregationMethod``, ``tf.UnconnectedGradients``).

Its one job is translating arguments for :func:`daskgraph.ops.gradients.gradients` and
:func:`daskgraph.ops.hessians.hessians`: ``unconnected_gradients="zero"`` gives zeros of ``x``'s
shape where ``ys`` do not depend on ``x`` (None by default); ``gate_gradients`` and
``aggregation_method`` are accepted and change nothing (the gradients reaching a tensor are
always summed by one ``AddN``, TensorFlow's default).

>>> import daskgraph as dg
>>> with dg.Graph().as_default():
...     x, u = dg.constant(1.0), dg.constant([1.0, 2.0])
...     none, zero = gradients(x * x, [u]), gradients(x * x, [u], unconnected_gradients="zero")
>>> none, zero[0].op.type, zero[0].shape
([None], 'ZerosLike', (2,))
"""

from __future__ import annotations

import enum
from typing import Any

from daskgraph.framework.graph import Tensor
from daskgraph.ops.fill_ops import zeros_like
from daskgraph.ops.gradients import gradients as native_gradients
from daskgraph.ops.hessians import hessians as native_hessians

__all__ = ["AggregationMethod", "UnconnectedGradients", "gradients", "hessians"]


class AggregationMethod:
    """How gradients reaching one tensor are added (``tf.AggregationMethod``): daskgraph always
    adds them with one ``AddN`` (``ADD_N``, TensorFlow's default)."""

    ADD_N = 0
    DEFAULT = ADD_N
    EXPERIMENTAL_TREE = 1
    EXPERIMENTAL_ACCUMULATE_N = 2


class UnconnectedGradients(enum.Enum):
    """What ``gradients`` gives for an ``x`` that ``ys`` do not depend on: ``NONE`` (None) or
    ``ZERO`` (zeros of its shape)."""

    NONE = "none"
    ZERO = "zero"


def gradients(
    ys: Any,
    xs: Any,
    grad_ys: Any = None,
    name: str = "gradients",
    colocate_gradients_with_ops: bool = True,
    gate_gradients: bool = False,
    aggregation_method: Any = None,
    stop_gradients: Any = None,
    unconnected_gradients: Any = UnconnectedGradients.NONE,
) -> list[Tensor | None]:
    """``tf.gradients`` with TF1's arguments (see the module docstring)."""
    try:
        unconnected = UnconnectedGradients(unconnected_gradients)
    except ValueError:
        raise ValueError(
            f"Unknown value for unconnected_gradients: {unconnected_gradients!r}"
        ) from None
    result = native_gradients(
        ys,
        xs,
        grad_ys=grad_ys,
        name=name,
        colocate_gradients_with_ops=colocate_gradients_with_ops,
        stop_gradients=stop_gradients,
    )
    if unconnected is UnconnectedGradients.NONE:
        return result
    xs = list(xs) if isinstance(xs, (list, tuple)) else [xs]
    return [zeros_like(x) if g is None else g for g, x in zip(result, xs, strict=True)]


def hessians(
    ys: Any,
    xs: Any,
    name: str = "hessians",
    colocate_gradients_with_ops: bool = True,
    gate_gradients: bool = False,
    aggregation_method: Any = None,
) -> list[Tensor]:
    """``tf.hessians`` with TF1's arguments (``gate_gradients`` and ``aggregation_method``
    change nothing)."""
    return native_hessians(
        ys, xs, name=name, colocate_gradients_with_ops=colocate_gradients_with_ops
    )
