"""The ``k`` largest entries of the last axis (``tf.nn.top_k``) and ``tf.nn.in_top_k``.

TensorFlow's ``TopKV2`` has two outputs; here they are two one-output ops, as everywhere in
daskgraph: ``TopKIndices`` sorts once (largest first, the lower index first among ties, as
TensorFlow), and ``TopKValues`` picks the values at those indices. The values' gradient goes
back to the picked positions (``TopKValuesGrad``, whose own gradient is ``TopKValues`` again);
the indices have none. ``in_top_k`` (``InTopKV2``) says whether each target's prediction is
among the ``k`` largest of its row, ties counted in its favour, and false for a row with a
non-finite prediction or a target out of range, as TensorFlow's kernel.

>>> import daskgraph as dg
>>> with dg.Graph().as_default():
...     values, indices = top_k(dg.constant([[1.0, 3.0, 3.0, 2.0]]), k=3)
...     with dg.Session() as sess:
...         sess.run(values).tolist(), sess.run(indices).tolist()
([[3.0, 3.0, 2.0]], [[1, 2, 3]])
"""

from __future__ import annotations

from collections import namedtuple
from typing import Any

import numpy as np

from daskgraph.framework import dtypes
from daskgraph.framework.gradient_registry import no_gradient, register_gradient
from daskgraph.framework.graph import Operation, Shape, Tensor, name_scope, new_tensor
from daskgraph.framework.op_registry import register
from daskgraph.kernels.top_k import _in_top_k, _top_k_indices, _top_k_values, _top_k_values_grad
from daskgraph.ops.array import convert_to_tensor

__all__ = ["TopKV2", "in_top_k", "top_k"]

_REAL = dtypes.NUMERIC - {dtypes.bool_}
_INDEX = frozenset({dtypes.int32, dtypes.int64})

#: what ``top_k`` returns, as TensorFlow's namedtuple
TopKV2 = namedtuple("TopKV2", ["values", "indices"])


register("TopKIndices", _top_k_indices, cpu=_REAL, gpu=_REAL)
register("TopKValues", _top_k_values, cpu=_REAL, gpu=_REAL)
register("TopKValuesGrad", _top_k_values_grad, cpu=_REAL, gpu=_REAL)
register("InTopKV2", _in_top_k, cpu=_REAL | {dtypes.bool_}, gpu=_REAL | {dtypes.bool_})


# -- builders -------------------------------------------------------------------------------------
def _k_tensor(k: Any, caller: str) -> tuple[Tensor, int | None]:
    """``k`` as an int32 scalar tensor, and its value when known while building."""
    if isinstance(k, (int, np.integer)):
        if k < 0:
            raise ValueError(f"{caller}: Need k >= 0, got {k}")
        return convert_to_tensor(np.int32(k)), int(k)
    k = convert_to_tensor(k)
    if k.dtype not in _INDEX or k.shape not in (None, ()):
        raise TypeError(f"{caller}: k must be an int scalar; {k.name!r} is {k.dtype.name} "
                        f"of shape {k.shape}")  # fmt: skip
    value = k.op.attrs.get("value") if k.op.type == "Const" else None
    return k, None if value is None else int(value)


def _top_shape(x: Tensor, k: int | None) -> Shape | None:
    if x.shape is None:
        return None
    columns = x.shape[-1]
    if None not in (columns, k) and columns < k:
        raise ValueError(f"top_k: input must have last dimension >= k = {k} but is {columns} "
                         f"({x.name!r} has shape {x.shape})")  # fmt: skip
    return (*x.shape[:-1], k)


def top_k(
    input: Any,
    k: Any = 1,
    sorted: bool = True,
    index_type: Any = dtypes.int32,
    name: str | None = None,
) -> TopKV2:
    """The ``k`` largest entries of each row (the last axis) of ``input`` and their indices,
    largest first (also when ``sorted`` is false), the lower index first among equal values:
    ``TopKV2(values, indices)``. ``k`` may be an int32 scalar tensor.

    Examples
    --------
    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     top_k(dg.constant([[1.0, 2.0]]), k=3)
    Traceback (most recent call last):
    ...
    ValueError: top_k: input must have last dimension >= k = 3 but is 2 ('Const:0' has \
shape (1, 2))
    """
    index_type = dtypes.as_dtype(index_type)
    if index_type not in _INDEX:
        raise TypeError(f"top_k: index_type must be int32 or int64; got {index_type.name}")
    with name_scope(name or "TopKV2"):
        x = convert_to_tensor(input)
        if x.dtype not in _REAL:
            raise TypeError(f"top_k: input must be real numbers; {x.name!r} is {x.dtype.name}")
        if x.shape is not None and not x.shape:
            raise ValueError(f"top_k: input must have rank >= 1; {x.name!r} is a scalar")
        k, static_k = _k_tensor(k, "top_k")
        shape = _top_shape(x, static_k)
        indices = new_tensor("TopKIndices", [x, k], index_type, shape, "indices",
                             index_type=index_type.numpy)  # fmt: skip
        values = new_tensor("TopKValues", [x, indices], x.dtype, shape, "values")
    return TopKV2(values, indices)


def in_top_k(predictions: Any, targets: Any, k: Any, name: str | None = None) -> Tensor:
    """Whether ``targets[i]`` is among the ``k`` largest ``predictions[i]`` (a batch of rows
    of class scores): true when fewer than ``k`` predictions of the row exceed the target's
    (ties count in its favour); false for a row with a non-finite prediction or a target out
    of range.

    Examples
    --------
    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     scores = dg.constant([[0.1, 0.5, 0.5, 0.2], [0.3, 0.2, 0.1, 0.0]])
    ...     hit = in_top_k(scores, [2, 5], 1)
    ...     with dg.Session() as sess:
    ...         sess.run(hit).tolist()
    [True, False]
    """
    caller = "in_top_k"
    predictions = convert_to_tensor(predictions)
    targets = convert_to_tensor(targets)
    if predictions.dtype not in _REAL:
        raise TypeError(f"{caller}: predictions must be real numbers; {predictions.name!r} is "
                        f"{predictions.dtype.name}")  # fmt: skip
    if targets.dtype not in _INDEX:
        raise TypeError(f"{caller}: targets must be int32 or int64; {targets.name!r} is "
                        f"{targets.dtype.name}")  # fmt: skip
    if predictions.shape is not None and len(predictions.shape) != 2:
        raise ValueError(f"{caller}: predictions must be 2-D; {predictions.name!r} has shape "
                         f"{predictions.shape}")  # fmt: skip
    if targets.shape is not None and len(targets.shape) != 1:
        raise ValueError(f"{caller}: targets must be 1-D; {targets.name!r} has shape "
                         f"{targets.shape}")  # fmt: skip
    k, _ = _k_tensor(k, caller)
    rows = None if predictions.shape is None else predictions.shape[:1]
    rows = rows or (None if targets.shape is None else targets.shape)
    return new_tensor("InTopKV2", [predictions, targets, k], dtypes.bool_, rows, name)


# -- gradients ------------------------------------------------------------------------------------
def _top_k_values_grad_op(x: Tensor, indices: Tensor, grad: Tensor) -> Tensor:
    return new_tensor("TopKValuesGrad", [x, indices, grad], grad.dtype, x.shape, None)


@register_gradient("TopKValues")
def _top_k_values_grad_fn(op: Operation, grad: Tensor) -> list[Tensor | None]:
    x, indices = op.inputs
    return [_top_k_values_grad_op(x, indices, grad), None]


@register_gradient("TopKValuesGrad")
def _top_k_values_grad_grad(op: Operation, grad: Tensor) -> list[Tensor | None]:
    """``TopKValuesGrad`` scatters its gradient input; the adjoint picks it back."""
    indices = op.inputs[1]
    picked = new_tensor("TopKValues", [grad, indices], grad.dtype, indices.shape, None)
    return [None, None, picked]


no_gradient("TopKIndices")
no_gradient("InTopKV2")
