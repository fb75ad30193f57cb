"""TensorFlow's behaviour switches, as a TF1 program ported to ``tf.compat.v1`` calls them.

Its one job is to answer those calls truthfully: daskgraph always builds graphs and runs them
in sessions (TF1's graph mode), so ``disable_v2_behavior()`` and ``disable_eager_execution()``
ask for what is already the case and return quietly, ``executing_eagerly()`` is False, and
``enable_eager_execution()`` raises, saying there is no eager mode. The version names say
which TensorFlow API daskgraph follows.

>>> disable_v2_behavior(); executing_eagerly()
False
>>> enable_eager_execution()
Traceback (most recent call last):
...
daskgraph.errors.UnimplementedError: enable_eager_execution: daskgraph has no eager mode; it builds graphs and runs them in a Session, as TensorFlow 1 does (remove the call, or call disable_eager_execution())
"""  # noqa: E501

from __future__ import annotations

from typing import Any

from daskgraph.errors import UnimplementedError

__all__ = [
    "COMPILER_VERSION",
    "GIT_VERSION",
    "VERSION",
    "control_flow_v2_enabled",
    "disable_control_flow_v2",
    "disable_eager_execution",
    "disable_resource_variables",
    "disable_tensor_equality",
    "disable_v2_behavior",
    "disable_v2_tensorshape",
    "enable_eager_execution",
    "enable_v2_behavior",
    "executing_eagerly",
    "executing_eagerly_outside_functions",
    "resource_variables_enabled",
]

#: The TensorFlow API version whose behaviour ``daskgraph.compat.v1`` follows.
VERSION = "1.15.0"
GIT_VERSION = "daskgraph"
COMPILER_VERSION = "daskgraph"


def _refuse(what: str, instead: str) -> UnimplementedError:
    return UnimplementedError(
        f"{what}: daskgraph has no eager mode; it builds graphs and runs them in a Session, "
        f"as TensorFlow 1 does ({instead})"
    )


def disable_v2_behavior() -> None:
    """TF1 behaviour, which daskgraph always has: nothing to change."""


def disable_eager_execution() -> None:
    """Graph mode, which daskgraph always uses: nothing to change."""


def disable_resource_variables() -> None:
    """Reference variables, the only kind daskgraph has: nothing to change."""


def disable_control_flow_v2() -> None:
    """TF1's control flow: nothing to change."""


def disable_tensor_equality() -> None:
    """TF1's tensor ``==`` (identity, so tensors can be dict keys), daskgraph's: nothing to
    change."""


def disable_v2_tensorshape() -> None:
    """TF1's shapes: ``get_shape()`` gives ``Dimension`` objects, and the ints of
    ``tensor.shape`` also have TF1's ``.value``; nothing to change."""


def enable_v2_behavior() -> None:
    """Refused: TensorFlow 2's behaviour is eager execution, which daskgraph does not have."""
    raise _refuse("enable_v2_behavior", "remove the call")


def enable_eager_execution(config: Any = None, device_policy: Any = None, **_: Any) -> None:
    """Refused: daskgraph has no eager mode."""
    raise _refuse("enable_eager_execution", "remove the call, or call disable_eager_execution()")


def executing_eagerly() -> bool:
    """False: ops build a graph; values come from ``Session.run``."""
    return False


def executing_eagerly_outside_functions() -> bool:
    """False, as :func:`executing_eagerly`."""
    return False


def resource_variables_enabled() -> bool:
    """False: variables are TF1's reference variables."""
    return False


def control_flow_v2_enabled() -> bool:
    """False: ``cond`` is TF1's (see :func:`daskgraph.cond`)."""
    return False
