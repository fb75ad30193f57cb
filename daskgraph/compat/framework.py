"""TF1's small framework helpers at the top level of ``tf``: ``init_scope``, ``container``,
``is_numeric_tensor``, ``dimension_at_index``, ``convert_to_tensor_or_indexed_slices``.

Its one job is to give daskgraph's objects TF1's names and behaviour: ``init_scope`` clears
the control dependencies in force (the name and device scopes stay), as TensorFlow's does in
graph mode; ``container`` names a resource container, which daskgraph does not name (a local
session's variables are its own; those of sessions on a server are in its one shared
container), so it changes nothing;
``convert_to_tensor_or_indexed_slices`` keeps an ``IndexedSlices`` and converts anything
else.

>>> import daskgraph as dg
>>> with dg.Graph().as_default():
...     x = dg.constant(1.0)
...     with dg.control_dependencies([x]), init_scope():
...         y = dg.constant(2.0)
>>> y.op.control_inputs
[]
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from daskgraph.framework.graph import Tensor
from daskgraph.framework.scopes import control_dependencies
from daskgraph.framework.tensor_shape import Dimension, TensorShape
from daskgraph.ops.array import convert_to_tensor
from daskgraph.ops.indexed_slices import IndexedSlices

__all__ = [
    "container",
    "convert_to_tensor_or_indexed_slices",
    "dimension_at_index",
    "init_scope",
    "is_numeric_tensor",
]


@contextmanager
def init_scope() -> Iterator[None]:
    """A block whose ops ignore the control dependencies in force (``tf.init_scope`` in graph
    mode: where variables' initial values are built)."""
    with control_dependencies(None):
        yield


@contextmanager
def container(container_name: str) -> Iterator[str]:
    """``tf.container(name)``: the block's stateful ops in the resource container ``name``.
    daskgraph keeps variables per session and device, not in containers, so it changes
    nothing; it yields ``container_name`` as TensorFlow's does."""
    yield container_name


def is_numeric_tensor(tensor: Any) -> bool:
    """Whether ``tensor`` is a tensor of a numeric dtype (integers and floats; not bool or
    string; a Variable is not a tensor here, as in TensorFlow 1).

    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     is_numeric_tensor(dg.constant(1)), is_numeric_tensor(dg.constant(True))
    (True, False)
    """
    return isinstance(tensor, Tensor) and tensor.dtype.is_numeric


def dimension_at_index(shape: Any, index: int) -> Dimension:
    """The ``index``-th dimension of ``shape`` as a
    :class:`~daskgraph.framework.tensor_shape.Dimension`
    (``Dimension(None)`` for any index of an unknown rank).

    >>> dimension_at_index(TensorShape([2, None]), 0), dimension_at_index(TensorShape(None), 5)
    (Dimension(2), Dimension(None))
    """
    shape = shape if isinstance(shape, TensorShape) else TensorShape(shape)
    if shape.dims is None:
        return Dimension(None)
    return shape.dims[index]


def convert_to_tensor_or_indexed_slices(value: Any, dtype: Any = None, name: str | None = None):
    """An :class:`~daskgraph.ops.indexed_slices.IndexedSlices` as it is, anything else through
    ``convert_to_tensor(value, dtype, name)``."""
    if isinstance(value, IndexedSlices):
        return value
    return convert_to_tensor(value, dtype=dtype, name=name)
