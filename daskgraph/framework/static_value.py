"""Values known when the graph is built: ``get_static_value`` (TF's ``constant_value``) folds
the simple ops TensorFlow folds (constants, the shape, size and rank of tensors of known
shape, ``range``, ``cast``, ``concat``, ``stack``, ``fill``, ``zeros_like``/``ones_like``,
``equal``/``not_equal``, identities) and gives up (None) on anything else.

As in TensorFlow 1, a tensor whose value was folded may no longer be fed: the caller may have
built the graph on that value.

>>> import daskgraph as dg
>>> with dg.Graph().as_default():
...     x = dg.placeholder(dg.float32, [2, 3])
...     s = dg.concat([dg.shape(x), [4]], axis=0)
...     get_static_value(s).tolist(), get_static_value(dg.placeholder(dg.int32))
([2, 3, 4], None)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from daskgraph.framework.graph import Tensor

__all__ = ["get_static_value"]


def get_static_value(tensor: Any, partial: bool = False) -> Any:
    """The value of ``tensor`` as a NumPy array when the graph fixes it, else None
    (``tf.get_static_value``); a value that is not a tensor is returned as it is, a Variable
    gives None.

    With ``partial``, a ``stack`` of tensors some of whose values are unknown gives an object
    array with None in their place.

    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     p = dg.placeholder(dg.int32, [])
    ...     s = dg.stack([p, dg.constant(2)])
    ...     get_static_value(s), get_static_value(s, partial=True).tolist()  # as TensorFlow
    (None, [None, array(2, dtype=int32)])
    """
    if not isinstance(tensor, Tensor):
        return None if hasattr(tensor, "_as_tensor") else tensor
    value = _fold(tensor, partial)
    if value is not None:
        tensor.graph.prevent_feeding(tensor)
    return value


def _fold(t: Tensor, partial: bool = False) -> Any:
    rule = _RULES.get(t.op.type)
    return None if rule is None else rule(t, partial)


def _known_shape(t: Tensor) -> tuple[int, ...] | None:
    shape = t.shape
    return None if shape is None or None in shape else tuple(shape)


def _const(t: Tensor, partial: bool) -> Any:
    return np.array(t.op.attrs["value"])


def _shape(t: Tensor, partial: bool) -> Any:
    shape = _known_shape(t.op.inputs[0])
    return None if shape is None else np.array(shape, dtype=t.dtype.numpy)


def _size(t: Tensor, partial: bool) -> Any:
    shape = _known_shape(t.op.inputs[0])
    return None if shape is None else np.array(np.prod(shape), dtype=t.dtype.numpy)


def _rank(t: Tensor, partial: bool) -> Any:
    shape = t.op.inputs[0].shape
    return None if shape is None else np.array(len(shape), dtype=np.int32)


def _inputs(t: Tensor, partial: bool = False) -> list[Any] | None:
    values = [_fold(x) for x in t.op.inputs]
    return None if any(v is None for v in values) else values


def _range(t: Tensor, partial: bool) -> Any:
    bounds = _inputs(t)
    return None if bounds is None else np.arange(*bounds, dtype=t.dtype.numpy)


def _cast(t: Tensor, partial: bool) -> Any:
    value = _fold(t.op.inputs[0])
    return None if value is None else value.astype(t.dtype.numpy)


def _concat(t: Tensor, partial: bool) -> Any:
    values = _inputs(t)
    return None if values is None else np.concatenate(values, axis=t.op.attrs["axis"])


def _pack(t: Tensor, partial: bool) -> Any:
    if not t.op.inputs or t.op.attrs.get("axis", 0) != 0:
        return None
    values = [_fold(x, partial) for x in t.op.inputs]
    if any(v is None for v in values):
        if not partial:
            return None
        packed = np.empty(len(values), dtype=object)
        packed[:] = values
        return packed
    return np.array(values)


def _fill(t: Tensor, partial: bool) -> Any:
    shape, value = _known_shape(t), _fold(t.op.inputs[-1])
    return None if shape is None or value is None else np.full(shape, value, dtype=value.dtype)


def _like(fill: int) -> Callable[[Tensor, bool], Any]:
    def fold(t: Tensor, partial: bool) -> Any:
        shape = _known_shape(t)
        return None if shape is None else np.full(shape, fill, dtype=t.dtype.numpy)

    return fold


def _compare(function: Callable[..., Any]) -> Callable[[Tensor, bool], Any]:
    def fold(t: Tensor, partial: bool) -> Any:
        values = _inputs(t)
        return None if values is None else function(*values)

    return fold


def _through(t: Tensor, partial: bool) -> Any:
    return _fold(t.op.inputs[0], partial)


_RULES: dict[str, Callable[[Tensor, bool], Any]] = {
    "Const": _const,
    "Shape": _shape,
    "Size": _size,
    "Rank": _rank,
    "Range": _range,
    "Cast": _cast,
    "ConcatV2": _concat,
    "Pack": _pack,
    "Fill": _fill,
    "ZerosLike": _like(0),
    "OnesLike": _like(1),
    "Equal": _compare(np.equal),
    "NotEqual": _compare(np.not_equal),
    "StopGradient": _through,
    "Identity": _through,
    "CheckNumerics": _through,
}
