"""Padding: ``pad`` surrounds a tensor with constants (``Pad``/``PadV2``) or with its own mirror
image (``MirrorPad``, modes ``REFLECT`` and ``SYMMETRIC``), as TensorFlow 1's ``tf.pad``.

``paddings`` is an ``[rank, 2]`` list of (before, after) counts known when the graph is built
(Python ints or a constant); the gradient of every mode is registered.

>>> import daskgraph as dg
>>> with dg.Graph().as_default():
...     x = dg.placeholder(dg.float32, [None, 3])
...     y = pad(x, [[1, 1], [0, 2]])
...     z = pad(x, [[0, 0], [2, 2]], mode="REFLECT")
>>> y.shape, y.op.type, z.shape, z.op.type
((None, 5), 'Pad', (None, 7), 'MirrorPad')
"""

from __future__ import annotations

from typing import Any

import numpy as np

from daskgraph.framework import dtypes
from daskgraph.framework.gradient_registry import register_gradient
from daskgraph.framework.graph import Operation, Tensor, get_default_graph
from daskgraph.framework.op_registry import CPU_ALL, GPU_NUMERIC, register
from daskgraph.kernels.padding import (
    _mirror_pad_grad_kernel,
    _mirror_pad_kernel,
    _pad_grad_kernel,
    _pad_kernel,
)
from daskgraph.ops.array import convert_to_tensor

__all__ = ["pad"]

_MODES = {"CONSTANT": "constant", "REFLECT": "reflect", "SYMMETRIC": "symmetric"}


register("Pad", _pad_kernel, cpu=CPU_ALL, gpu=GPU_NUMERIC)
register("MirrorPad", _mirror_pad_kernel, cpu=CPU_ALL, gpu=GPU_NUMERIC)
register("PadGrad", _pad_grad_kernel, cpu=CPU_ALL, gpu=GPU_NUMERIC)
register("MirrorPadGrad", _mirror_pad_grad_kernel, cpu=dtypes.NUMERIC, gpu=dtypes.NUMERIC)


# -- builders -------------------------------------------------------------------------------------
def _static_paddings(paddings: Any, x: Tensor) -> tuple[tuple[int, int], ...]:
    if isinstance(paddings, Tensor):
        if paddings.op.type != "Const":
            raise TypeError(
                "pad: paddings must be known when the graph is built (Python ints or a "
                f"constant); {paddings.name!r} is computed by a {paddings.op.type} op"
            )
        paddings = paddings.op.attrs["value"]
    array = np.asarray(paddings)
    if array.dtype.kind not in "iu" or array.ndim != 2 or array.shape[1:] != (2,):
        raise ValueError(f"pad: paddings must be a [rank, 2] list of ints; got {paddings!r}")
    if x.shape is not None and array.shape[0] != len(x.shape):
        raise ValueError(
            f"pad: paddings has {array.shape[0]} rows but {x.name!r} has rank {len(x.shape)}"
        )
    if (array < 0).any():
        raise ValueError(f"pad: paddings must be >= 0; got {array.tolist()}")
    return tuple((int(b), int(a)) for b, a in array)


def _check_mirror(paddings: tuple, x: Tensor, mode: str) -> None:
    """TensorFlow's bound: a border may mirror at most the dimension (REFLECT: one less)."""
    if x.shape is None:
        return
    limit = 1 if mode == "REFLECT" else 0
    for axis, ((before, after), n) in enumerate(zip(paddings, x.shape, strict=True)):
        if n is not None and max(before, after) > n - limit:
            raise ValueError(
                f"pad: paddings {[before, after]} of axis {axis} must be at most "
                f"{n - limit} in mode {mode} for {x.name!r} of shape {x.shape}"
            )


def pad(
    tensor: Any,
    paddings: Any,
    mode: str = "CONSTANT",
    name: str | None = None,
    constant_values: Any = 0,
) -> Tensor:
    """Pad ``tensor`` with ``paddings[i] = [before, after]`` elements on axis ``i``
    (``tf.pad``).

    ``mode`` is ``"CONSTANT"`` (``constant_values``), ``"REFLECT"`` (the mirror image without
    the edge: ``[1, 2, 3]`` padded by 2 gives ``[3, 2, 1, 2, 3, 2, 1]``) or ``"SYMMETRIC"``
    (with the edge: ``[2, 1, 1, 2, 3, 3, 2]``); case does not matter.

    Examples
    --------
    >>> import daskgraph as dg
    >>> with dg.Graph().as_default():
    ...     x = dg.constant([1, 2, 3])
    ...     a = pad(x, [[2, 2]], mode="reflect")
    ...     b = pad(x, [[2, 2]], mode="SYMMETRIC")
    ...     c = pad(x, [[1, 0]], constant_values=9)
    ...     with dg.Session() as sess:
    ...         [v.tolist() for v in sess.run([a, b, c])]
    [[3, 2, 1, 2, 3, 2, 1], [2, 1, 1, 2, 3, 3, 2], [9, 1, 2, 3]]
    """
    x = convert_to_tensor(tensor)
    key = str(mode).upper()
    if key not in _MODES:
        raise ValueError(f"pad: mode must be CONSTANT, REFLECT or SYMMETRIC; got {mode!r}")
    pads = _static_paddings(paddings, x)
    shape = None
    if x.shape is not None:
        shape = tuple(
            None if n is None else n + b + a for n, (b, a) in zip(x.shape, pads, strict=True)
        )
    graph = get_default_graph()
    if key == "CONSTANT":
        value = convert_to_tensor(constant_values, dtype=x.dtype)
        if value.shape not in (None, ()):
            raise ValueError(f"pad: constant_values must be a scalar; got {value.shape}")
        op = graph.create_op(
            "Pad", [x, value], dtype=x.dtype, shape=shape, attrs={"paddings": pads}, name=name
        )
        return op.outputs[0]
    _check_mirror(pads, x, key)
    attrs = {"paddings": pads, "mode": _MODES[key]}
    op = graph.create_op("MirrorPad", [x], dtype=x.dtype, shape=shape, attrs=attrs, name=name)
    return op.outputs[0]


def _grad_op(op_type: str, grad: Tensor, x: Tensor, **attrs: Any) -> Tensor:
    graph = get_default_graph()
    op = graph.create_op(op_type, [grad], dtype=grad.dtype, shape=x.shape, attrs=attrs)
    return op.outputs[0]


# -- gradients ------------------------------------------------------------------------------------
@register_gradient("Pad")
def _pad_grad(op: Operation, grad: Tensor) -> list[Tensor | None]:
    x = op.inputs[0]
    return [_grad_op("PadGrad", grad, x, paddings=op.attrs["paddings"]), None]


@register_gradient("MirrorPad")
def _mirror_pad_grad(op: Operation, grad: Tensor) -> list[Tensor]:
    x = op.inputs[0]
    attrs = {"paddings": op.attrs["paddings"], "mode": op.attrs["mode"]}
    return [_grad_op("MirrorPadGrad", grad, x, **attrs)]


@register_gradient("PadGrad")
def _pad_grad_grad(op: Operation, grad: Tensor) -> list[Tensor]:
    return [pad(grad, op.attrs["paddings"])]


@register_gradient("MirrorPadGrad")
def _mirror_pad_grad_grad(op: Operation, grad: Tensor) -> list[Tensor]:
    mode = {v: k for k, v in _MODES.items()}[op.attrs["mode"]]
    return [pad(grad, op.attrs["paddings"], mode=mode)]
