"""Data types of tensors: TensorFlow's names (``float32``, ``int32``, ``string``, ...) over NumPy.

A :class:`DType` is a small immutable value that knows its NumPy dtype and how TensorFlow
infers it from Python values (Python floats become ``float32``, ints ``int32``, strings
``string``), which is what users of ``tf.constant`` expect.

>>> as_dtype("float32")
float32
>>> as_dtype(np.float64).name
'float64'
>>> infer_dtype(1.5), infer_dtype([1, 2]), infer_dtype("hi")
(float32, int32, string)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = [
    "DType",
    "as_dtype",
    "bool_",
    "float16",
    "float32",
    "float64",
    "infer_dtype",
    "int8",
    "int16",
    "int32",
    "int64",
    "string",
    "uint8",
]


@dataclass(frozen=True, slots=True, eq=False)
class DType:
    """A tensor element type. Each type is one object (compared and hashed by identity, which
    keeps the placer's per-op kernel lookups cheap); unpickling returns that same object.

    Attributes
    ----------
    name
        TensorFlow's name of the type (``"float32"``).
    numpy
        The NumPy dtype values of this type are stored as (``object`` for strings).
    """

    name: str
    numpy: np.dtype

    @property
    def is_floating(self) -> bool:
        """Whether this is a floating-point dtype.

        >>> float32.is_floating, int32.is_floating
        (True, False)
        """
        return self.numpy.kind == "f"

    @property
    def is_integer(self) -> bool:
        """Whether this is a signed or unsigned integer dtype."""
        return self.numpy.kind in "iu"

    @property
    def is_numeric(self) -> bool:
        """Whether this is an integer, floating-point or complex dtype (not bool or string)."""
        return self.numpy.kind in "iufc"

    @property
    def as_numpy_dtype(self) -> type:
        """The NumPy scalar type, as TensorFlow's ``DType.as_numpy_dtype``."""
        return self.numpy.type

    def __repr__(self) -> str:
        return self.name

    def __reduce__(self):
        return (as_dtype, (self.name,))


float16 = DType("float16", np.dtype(np.float16))
float32 = DType("float32", np.dtype(np.float32))
float64 = DType("float64", np.dtype(np.float64))
int8 = DType("int8", np.dtype(np.int8))
int16 = DType("int16", np.dtype(np.int16))
int32 = DType("int32", np.dtype(np.int32))
int64 = DType("int64", np.dtype(np.int64))
uint8 = DType("uint8", np.dtype(np.uint8))
bool_ = DType("bool", np.dtype(np.bool_))
string = DType("string", np.dtype(object))

_ALL = (float16, float32, float64, int8, int16, int32, int64, uint8, bool_, string)
_BY_NAME = {d.name: d for d in _ALL} | {"half": float16, "float": float32, "double": float64}
_BY_NUMPY = {d.numpy: d for d in _ALL if d is not string}

FLOATING = frozenset({float16, float32, float64})
INTEGER = frozenset({int8, int16, int32, int64, uint8})
NUMERIC = FLOATING | INTEGER
ALL = frozenset(_ALL)


def as_dtype(value: Any) -> DType:
    """Convert a name, a NumPy dtype or a :class:`DType` to a :class:`DType`.

    Examples
    --------
    >>> as_dtype("int64")
    int64
    >>> as_dtype(float32) is float32
    True
    >>> as_dtype("complex7")
    Traceback (most recent call last):
    ...
    TypeError: Cannot convert 'complex7' to a daskgraph dtype; expected one of: bool, float16, \
float32, float64, int16, int32, int64, int8, string, uint8
    """
    if isinstance(value, DType):
        return value
    if isinstance(value, str) and value in _BY_NAME:
        return _BY_NAME[value]
    try:
        np_dtype = np.dtype(value)
    except TypeError:
        np_dtype = None
    if np_dtype is not None:
        if np_dtype.kind in "USO":
            return string
        if np_dtype in _BY_NUMPY:
            return _BY_NUMPY[np_dtype]
    names = ", ".join(sorted(d.name for d in _ALL))
    raise TypeError(f"Cannot convert {value!r} to a daskgraph dtype; expected one of: {names}")


def infer_dtype(value: Any) -> DType:
    """The dtype TensorFlow gives a constant made from ``value``.

    Python floats become ``float32`` and Python ints ``int32`` (TensorFlow's defaults);
    NumPy arrays keep their dtype; strings and bytes become ``string``.

    Examples
    --------
    >>> infer_dtype(np.zeros(2, dtype=np.float64))
    float64
    >>> infer_dtype([[1.0, 2.0]])
    float32
    >>> infer_dtype(True)
    bool
    """
    if isinstance(value, (np.ndarray, np.generic)):
        return as_dtype(value.dtype)
    array = np.asarray(value)
    if array.dtype.kind == "f":
        return float32
    if array.dtype.kind in "iu":
        return int32
    if array.dtype.kind == "b":
        return bool_
    if array.dtype.kind in "USO":
        return string
    return as_dtype(array.dtype)
