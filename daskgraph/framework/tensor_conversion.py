"""Conversion functions for users' own types: ``register_tensor_conversion_function`` tells
``convert_to_tensor`` (and so every op) how to make a tensor of an object of a given class,
as TensorFlow's registry does.

>>> import daskgraph as dg
>>> class Meters:
...     def __init__(self, value):
...         self.value = value
>>> def meters_to_tensor(m, dtype=None, name=None, as_ref=False):
...     return dg.constant(m.value, dtype, name=name or "Meters")
>>> register_tensor_conversion_function(Meters, meters_to_tensor)
>>> with dg.Graph().as_default():
...     y = dg.add(Meters(2.0), 1.0)
...     with dg.Session() as sess:
...         float(sess.run(y))
3.0
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import numpy as np

from daskgraph.framework import dtypes
from daskgraph.framework.nodes import Tensor

__all__ = ["convert_registered", "register_tensor_conversion_function"]

#: (priority, order of registration, base types, function), sorted
_REGISTRY: list[tuple[int, int, Any, Callable[..., Any]]] = []
_LOCK = threading.Lock()
#: types ``constant`` converts itself: their conversion cannot be replaced, as in TensorFlow
_CONSTANT_TYPES = (int, float, complex, bool, str, bytes, np.generic, np.ndarray)


def register_tensor_conversion_function(
    base_type: Any, conversion_func: Callable[..., Any], priority: int = 100
) -> None:
    """Make ``convert_to_tensor(value)`` of an instance of ``base_type`` (a type or a tuple of
    types) call ``conversion_func(value, dtype=None, name=None, as_ref=False)``, which returns
    a tensor, or ``NotImplemented`` to let the next function (by ``priority``, lower first)
    try (``tf.register_tensor_conversion_function``)."""
    types = base_type if isinstance(base_type, tuple) else (base_type,)
    if any(not isinstance(t, type) for t in types):
        raise TypeError(
            f"Argument `base_type` must be a type or a tuple of types. Obtained: {base_type}"
        )
    if any(issubclass(t, _CONSTANT_TYPES) for t in types):
        raise TypeError(
            "Cannot register conversions for Python numeric types and NumPy scalars and arrays."
        )
    if not callable(conversion_func):
        raise TypeError(f"Argument `conversion_func` must be callable. Received {conversion_func}.")
    with _LOCK:
        _REGISTRY.append((int(priority), len(_REGISTRY), types, conversion_func))
        _REGISTRY.sort(key=lambda entry: entry[:2])


def convert_registered(value: Any, dtype: Any = None, name: str | None = None) -> Tensor | None:
    """The tensor a registered function makes of ``value``; None when none applies."""
    if not _REGISTRY or isinstance(value, _CONSTANT_TYPES):
        return None
    for _, _, types, function in list(_REGISTRY):
        if not isinstance(value, types):
            continue
        wanted = dtypes.as_dtype(dtype) if dtype is not None else None
        result = function(value, dtype=wanted, name=name, as_ref=False)
        if result is NotImplemented:
            continue
        if not isinstance(result, Tensor):
            raise RuntimeError(
                f"Conversion function {function!r} for type {type(value)} returned non-Tensor: "
                f"{result!r}"
            )
        if wanted is not None and result.dtype != wanted:
            raise RuntimeError(
                f"Conversion function {function!r} for type {type(value)} returned incompatible "
                f"dtype: requested = {wanted.name}, actual = {result.dtype.name}"
            )
        return result
    return None
