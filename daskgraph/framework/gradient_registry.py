"""The gradient registry: one gradient function per op type, as TensorFlow's
``RegisterGradient`` sits beside its op registry.

:func:`register_gradient` is how every op, users' own included, gets a gradient,
:func:`no_gradient` marks an op type as not differentiable, and :func:`registered_gradient` is
what :func:`daskgraph.ops.gradients.gradients` looks up. Only the registry lives here, so an op
module registers its gradient without importing the differentiation algorithm.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from daskgraph.framework.graph import Tensor

__all__ = [
    "GradientFunction",
    "RegisterGradient",
    "no_gradient",
    "register_gradient",
    "registered_gradient",
]

GradientFunction = Callable[..., Sequence["Tensor | None"]]
_GRADIENTS: dict[str, GradientFunction | None] = {}


def register_gradient(op_type: str) -> Callable[[GradientFunction], GradientFunction]:
    """Decorator: register ``fn(op, grad) -> [grad per input]`` as ``op_type``'s gradient.

    >>> @register_gradient("DoubleItForTheDocs")
    ... def _double_grad(op, grad):
    ...     return [grad * 2.0]
    >>> registered_gradient("DoubleItForTheDocs") is _double_grad
    True
    """
    if not isinstance(op_type, str) or not op_type:
        raise TypeError(f"register_gradient expects an op type name; got {op_type!r}")

    def decorate(fn: GradientFunction) -> GradientFunction:
        if op_type in _GRADIENTS:
            raise KeyError(f"A gradient for op type {op_type!r} is already registered")
        _GRADIENTS[op_type] = fn
        return fn

    return decorate


class RegisterGradient:
    """TensorFlow's spelling: ``@tf.RegisterGradient("OpType")`` on a gradient function."""

    def __init__(self, op_type: str) -> None:
        self._decorate = register_gradient(op_type)

    def __call__(self, fn: GradientFunction) -> GradientFunction:
        """Register ``fn``."""
        return self._decorate(fn)


def no_gradient(op_type: str) -> None:
    """Mark ``op_type`` as not differentiable: no gradient flows through it (TF's
    ``NotDifferentiable``)."""
    if op_type in _GRADIENTS:
        raise KeyError(f"A gradient for op type {op_type!r} is already registered")
    _GRADIENTS[op_type] = None


def registered_gradient(op_type: str) -> GradientFunction | None:
    """The gradient function of ``op_type`` (``None`` when not differentiable); a
    ``LookupError`` naming the op type when there is none."""
    try:
        return _GRADIENTS[op_type]
    except KeyError:
        raise LookupError(
            f"No gradient defined for op type {op_type!r}; register one with "
            f"@daskgraph.register_gradient({op_type!r}), or mark it with no_gradient"
        ) from None
