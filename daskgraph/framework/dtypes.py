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

from daskgraph.errors import quote

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
    "strings_as_bytes",
    "uint8",
    "variant",
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

    # -- TensorFlow's other DType properties (there are no reference or quantized types) ---
    @property
    def base_dtype(self) -> DType:
        """This dtype (TensorFlow's non-reference type of a reference dtype)."""
        return self

    real_dtype = base_dtype

    @property
    def is_bool(self) -> bool:
        """Whether this is ``bool``."""
        return self.numpy.kind == "b"

    @property
    def is_unsigned(self) -> bool:
        """Whether this is an unsigned integer dtype."""
        return self.numpy.kind == "u"

    @property
    def is_complex(self) -> bool:
        """False: daskgraph has no complex dtypes."""
        return False

    @property
    def is_quantized(self) -> bool:
        """False: daskgraph has no quantized dtypes."""
        return False

    @property
    def size(self) -> int:
        """Bytes per element (strings: 1, as TensorFlow's ``DType.size`` of ``string`` is)."""
        return 1 if self.name == "string" else self.numpy.itemsize

    @property
    def min(self) -> Any:
        """The smallest value of a numeric or bool dtype.

        >>> int8.min, float16.min
        (-128, np.float16(-6.55e+04))
        """
        return self._limits()[0]

    @property
    def max(self) -> Any:
        """The largest value of a numeric or bool dtype."""
        return self._limits()[1]

    def _limits(self) -> tuple[Any, Any]:
        kind = self.numpy.kind
        if kind == "b":
            return False, True
        if kind in "iu":
            info = np.iinfo(self.numpy)
            return int(info.min), int(info.max)
        if kind == "f":
            info = np.finfo(self.numpy)
            return info.min, info.max
        raise TypeError(f"Cannot find minimum/maximum value for {self.name}")

    @property
    def as_datatype_enum(self) -> int:
        """TensorFlow's ``DataType`` enum value of this dtype (``float32`` is 1)."""
        return _ENUMS[self.name]

    def is_compatible_with(self, other: Any) -> bool:
        """Whether ``other`` is this same dtype."""
        return as_dtype(other) is self

    def __eq__(self, other: Any) -> bool:
        """Equal to itself and to what :func:`as_dtype` makes of it (``tf.float32 ==
        np.float32`` is True, as in TensorFlow); hashing stays by identity."""
        if other is self:
            return True
        if other is None:
            return False
        try:
            return as_dtype(other) is self
        except (TypeError, ValueError):
            return False

    def __ne__(self, other: Any) -> bool:
        return not self.__eq__(other)

    __hash__ = object.__hash__

    def __repr__(self) -> str:
        return self.name

    def __reduce__(self):
        return (as_dtype, (self.name,))


_ENUMS = {
    "float32": 1,
    "float64": 2,
    "int32": 3,
    "uint8": 4,
    "int16": 5,
    "int8": 6,
    "string": 7,
    "int64": 9,
    "bool": 10,
    "float16": 19,
}


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
#: an opaque value (a tuple of arrays, a Python object) passed between ops of one device, as
#: TensorFlow's ``variant``: ops that bundle several results use it; no ordinary op takes it
variant = DType("variant", np.dtype(object))

_ALL = (float16, float32, float64, int8, int16, int32, int64, uint8, bool_, string)
_BY_NAME = {d.name: d for d in _ALL} | {
    "half": float16,
    "float": float32,
    "double": float64,
    "variant": variant,
}
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
    if array.dtype.kind in "iu":  # Python ints: int32 where every value fits, else int64
        info = np.iinfo(np.int32)
        fits = array.size == 0 or (info.min <= int(array.min()) and int(array.max()) <= info.max)
        return int32 if fits else int64
    if array.dtype.kind == "b":
        return bool_
    if array.dtype.kind == "O" and array.size and all(_is_int(v) for v in array.flat):
        raise ValueError(f"{quote(value)} does not fit int64, the widest integer dtype")
    if array.dtype.kind in "USO":
        return string
    return as_dtype(array.dtype)


def strings_as_bytes(array: np.ndarray) -> np.ndarray:
    """A ``string`` array with every ``str`` element encoded as UTF-8 ``bytes``: TensorFlow's
    strings are bytes, and come back from a run as ``bytes`` (object arrays of ``bytes``).

    >>> strings_as_bytes(np.array(["a", b"b", "é"], dtype=object))
    array([b'a', b'b', b'\\xc3\\xa9'], dtype=object)
    """
    if array.dtype.kind == "U" or (
        array.dtype.kind == "O" and any(isinstance(v, str) for v in array.flat)
    ):
        encoded = [v.encode() if isinstance(v, str) else v for v in array.flat]
        out = np.empty(array.shape, dtype=object)
        out.flat[:] = encoded
        return out
    return array


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)
