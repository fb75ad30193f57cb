"""Variable kernels: a variable's name, its assignments and updates, over the worker's store.

A ``VariableV2`` op outputs a :class:`VariableRef` (the variable's name in the store of the
running session); the assignment kernels take the store after ``xp`` (stateful kernels).
"""

from __future__ import annotations

from daskgraph.errors import InvalidArgumentError


class VariableRef:
    """What a ``VariableV2`` op outputs at run time: the name of the variable in the store."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __reduce__(self):
        return (VariableRef, (self.name,))

    def __repr__(self) -> str:
        return f"VariableRef({self.name!r})"


# -- kernels: ``store`` is the worker's variable store of the running session -----------------
def _variable_kernel(xp, store, *, var_name, shape, dtype):
    return VariableRef(var_name)


def _assign_kernel(xp, store, ref, value, *, validate_shape, shape):
    value = xp.asarray(value)
    if validate_shape and shape is not None and tuple(value.shape) != shape:
        raise InvalidArgumentError(
            f"Assign to {ref.name!r}: value of shape {tuple(value.shape)} does not match the "
            f"variable's shape {shape}",
            op=ref.name,
        )
    if validate_shape:  # a variable shared by sessions may hold another graph's shape
        held = store.peek(ref.name)
        if held is not None and tuple(held.shape) != tuple(value.shape):
            raise InvalidArgumentError(
                "Assign requires shapes of both tensors to match. "
                f"lhs shape= {list(held.shape)} rhs shape= {list(value.shape)}",
                op=ref.name,
            )
    store.assign(ref.name, value)
    return value


def _assign_add_kernel(xp, store, ref, delta):
    value = xp.add(store.read(ref.name), delta)
    store.assign(ref.name, value)
    return value


def _assign_sub_kernel(xp, store, ref, delta):
    value = xp.subtract(store.read(ref.name), delta)
    store.assign(ref.name, value)
    return value


def _initialized_value_kernel(xp, store, ref, initial):
    return store.read(ref.name) if ref.name in store.names() else initial
