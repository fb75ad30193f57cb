"""The global step: the int64 variable counting training steps (``tf.train.*global_step``).

It is the variable ``global_step`` of the root variable scope, in the ``GLOBAL_STEP``
collection, not trainable; its device is the one requested around it, as in TF1's graph mode,
but never a GPU (TensorFlow has no GPU kernels for integer variables, and the placer puts it
on a CPU). Optimizers' ``apply_gradients(..., global_step=...)`` add one to it per step.

>>> import daskgraph as dg
>>> with dg.Graph().as_default():
...     step = get_or_create_global_step()
...     same = get_or_create_global_step()
...     (step.op.name, step.dtype.name, step.device, same is step, step.trainable)
('global_step', 'int64', '', True, False)
"""

from __future__ import annotations

import contextlib
from contextlib import AbstractContextManager
from typing import Any

from daskgraph.framework import dtypes, scopes
from daskgraph.framework.graph import (
    GLOBAL_STEP,
    GLOBAL_VARIABLES,
    Graph,
    Tensor,
    get_default_graph,
)
from daskgraph.ops.initializers import zeros_initializer
from daskgraph.ops.state import Variable
from daskgraph.ops.variable_scope import VariableScope, get_variable, variable_scope

__all__ = [
    "assert_global_step",
    "create_global_step",
    "get_global_step",
    "get_or_create_global_step",
    "global_step",
]


def get_global_step(graph: Graph | None = None) -> Variable | Tensor | None:
    """The global step of ``graph`` (default graph by default), or None when it has none.

    It is the one member of the ``GLOBAL_STEP`` collection, else the tensor
    ``global_step:0`` if the graph has one (as in TensorFlow).
    """
    graph = graph or get_default_graph()
    found = graph.get_collection(GLOBAL_STEP)
    if len(found) > 1:
        raise TypeError("Multiple tensors in global_step collection.")
    if found:
        step = found[0]
    else:
        try:
            step = graph.get_tensor_by_name("global_step:0")
        except KeyError:
            return None
    if not step.dtype.is_integer:
        raise TypeError(f"Existing 'global_step' {step.name!r} must be an integer type")
    if getattr(step, "shape", ()) not in ((), None):
        raise TypeError(f"Existing 'global_step' {step.name!r} is not a scalar: {step.shape}")
    return step


def _off_gpus() -> AbstractContextManager[Any]:
    """The device scope for the global step: as requested around it, as in TF1's graph mode,
    except that a GPU request becomes the CPU (no GPU kernels for integer variables)."""
    scope = scopes.current_device_scope()
    if not scope.functions and scope.spec.device_type == "GPU":
        return scopes.device("/device:CPU:0")
    return contextlib.nullcontext()


def create_global_step(graph: Graph | None = None) -> Variable:
    """Make the global step of ``graph``: ValueError if it has one already."""
    graph = graph or get_default_graph()
    if get_global_step(graph) is not None:
        raise ValueError('"global_step" already exists.')
    with graph.as_default(), graph.name_scope(None), _off_gpus():
        with variable_scope(VariableScope(False), auxiliary_name_scope=False):
            return get_variable(
                "global_step",
                shape=[],
                dtype=dtypes.int64,
                initializer=zeros_initializer(),
                trainable=False,
                collections=[GLOBAL_VARIABLES, GLOBAL_STEP],
            )


def get_or_create_global_step(graph: Graph | None = None) -> Variable | Tensor:
    """The global step of ``graph``, made first if it has none."""
    graph = graph or get_default_graph()
    step = get_global_step(graph)
    return create_global_step(graph) if step is None else step


def global_step(sess: Any, global_step_tensor: Any) -> int:
    """The value of ``global_step_tensor`` in ``sess``, as a Python int."""
    return int(sess.run(global_step_tensor))


def assert_global_step(global_step_tensor: Any) -> None:
    """Raise TypeError, in TensorFlow's words, unless ``global_step_tensor`` can be a global
    step: a Variable or Tensor of an integer dtype whose shape, when fully known, is scalar.

    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     assert_global_step(dg.Variable(0, name="step"))
    ...     assert_global_step(dg.Variable(0.0, name="float_step"))
    Traceback (most recent call last):
    ...
    TypeError: Existing "global_step" does not have integer type: float32
    """
    if not isinstance(global_step_tensor, (Variable, Tensor)):
        raise TypeError(
            f'Existing "global_step" must be a Variable or Tensor: {global_step_tensor}.'
        )
    if not global_step_tensor.dtype.is_integer:
        raise TypeError(
            f'Existing "global_step" does not have integer type: {global_step_tensor.dtype}'
        )
    shape = global_step_tensor.get_shape()
    if shape.ndims != 0 and shape.is_fully_defined():
        raise TypeError(f'Existing "global_step" is not scalar: {shape}')
