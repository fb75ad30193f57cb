"""The ``PyFunc`` kernels: a Python function called on NumPy arrays.

The kernels of :mod:`daskgraph.ops.script_ops`'s ops, each ``kernel(xp, *inputs, **attrs)``.
"""

from __future__ import annotations

import traceback
from collections.abc import Callable
from typing import Any

import numpy as np

from daskgraph.errors import (
    InvalidArgumentError,
    OutOfRangeError,
    ResourceExhaustedError,
    UnimplementedError,
    UnknownError,
)
from daskgraph.framework import dtypes

#: TensorFlow's names of dtypes in its messages (``DataTypeString``)
_TF_NAMES = {"float16": "half", "float32": "float", "float64": "double"}

#: Python exceptions -> the error TensorFlow's PyFunc kernel reports them as
_ERRORS: tuple[tuple[type[BaseException], type[Exception]], ...] = (
    ((ValueError, TypeError), InvalidArgumentError),
    (StopIteration, OutOfRangeError),
    (MemoryError, ResourceExhaustedError),
    (NotImplementedError, UnimplementedError),
)


# -- kernels --------------------------------------------------------------------------------------
def _py_func_kernel(xp, store, *inputs, func, tout, name):
    return _call(func, inputs, tout, name)


def _py_func_stateless_kernel(xp, *inputs, func, tout, name):
    return _call(func, inputs, tout, name)


def _call(func: Callable[..., Any], inputs: tuple, tout: tuple[str, ...], name: str) -> tuple:
    """Call ``func`` on ``inputs`` as TensorFlow's PyFunc kernel does; the results as a tuple
    of arrays of the dtypes named in ``tout``."""
    args = [_argument(value) for value in inputs]
    try:
        result = func(*args)
    except Exception as exc:
        raise python_error(exc, name) from exc
    if result is None:
        values = []
    else:
        values = list(result) if isinstance(result, (list, tuple)) else [result]
    if len(values) != len(tout):
        raise InvalidArgumentError(
            f"{name} returns {len(values)} values, but expects to see {len(tout)} values.",
            op=name,
        )
    return tuple(
        _result(value, dtypes.as_dtype(t), k, name)
        for k, (value, t) in enumerate(zip(values, tout, strict=True))
    )


def _argument(value: Any) -> Any:
    """An input as TensorFlow hands it to the function: scalars as NumPy scalars (``bytes``
    for strings), arrays as arrays."""
    array = np.asarray(value)
    if array.ndim == 0:
        item = array[()]
        return item.encode() if isinstance(item, str) else item
    return dtypes.strings_as_bytes(array) if array.dtype.kind in "OU" else array


def _result(value: Any, dtype: dtypes.DType, k: int, name: str) -> Any:
    array = np.asarray(value)
    if dtype is dtypes.string and array.dtype.kind in "USO":
        converted = dtypes.strings_as_bytes(np.asarray(array, dtype=object))
        return converted[()] if converted.ndim == 0 else converted
    if array.dtype != dtype.numpy:
        raise InvalidArgumentError(
            f"{k}-th value returned by {name} is {_tf_name(array.dtype)}, but expects "
            f"{_tf_name(dtype.numpy)}",
            op=name,
        )
    return array[()] if array.ndim == 0 else array


def _tf_name(dtype: np.dtype) -> str:
    """TensorFlow's name of a NumPy dtype in its messages (``float``, ``double``, ...).

    >>> _tf_name(np.dtype(np.float32)), _tf_name(np.dtype(np.int64)), _tf_name(np.dtype("c8"))
    ('float', 'int64', 'complex64')
    """
    try:
        name = dtypes.as_dtype(dtype).name
    except TypeError:
        return str(dtype)
    return _TF_NAMES.get(name, name)


def python_error(exc: Exception, name: str) -> Exception:
    """The TensorFlow error for ``exc``, raised by Python code op ``name`` called (its
    function, a dataset's generator), as TensorFlow's PyFunc kernel reports it.

    >>> error = python_error(ValueError("bad"), "PyFunc")
    >>> type(error).__name__, str(error).splitlines()[0], error.op
    ('InvalidArgumentError', 'ValueError: bad', 'PyFunc')
    """
    kind = next((error for types, error in _ERRORS if isinstance(exc, types)), UnknownError)
    trace = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    return kind(
        f"{type(exc).__name__}: {exc}\n{trace}\t [[{{{{node {name}}}}}]]",
        op=name,
        python_error=type(exc).__name__,
    )
