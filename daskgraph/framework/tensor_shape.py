"""Static shapes as TensorFlow spells them: :class:`TensorShape` and :class:`Dimension`.

A :class:`TensorShape` *is* a tuple of ints and ``None`` (an unknown size), so the graph's
shape inference keeps reading it as a plain tuple, and it adds TensorFlow's methods
(``as_list``, ``ndims``, ``rank``, ``dims``, ``is_fully_defined``, ``merge_with``, ...).
``tensor.shape`` indexes and iterates to ints and ``None`` (TensorFlow 2's ``TensorShape``,
which ``tf.compat.v1`` keeps; its ints are :class:`Size`, which also have TF1's ``.value``)
and prints as its tuple; ``tensor.get_shape()`` and
``tf.TensorShape(...)`` give TensorFlow 1's, which index and iterate to :class:`Dimension`
objects (``.value``).
An unknown rank is ``TensorShape(None)`` (``ndims`` is None).

>>> s = TensorShape([None, 3])
>>> s == [None, 3], s.as_list(), s.ndims, s[1], s[0].value
(True, [None, 3], 2, Dimension(3), None)
>>> TensorShape([None, 3], v1=False)[1], str(s), s
(3, '(?, 3)', TensorShape([None, 3]))
>>> s.merge_with([2, None])
TensorShape([2, 3])
>>> TensorShape(None).as_list()
Traceback (most recent call last):
...
ValueError: as_list() is not defined on an unknown TensorShape.
"""

from __future__ import annotations

import operator
from collections.abc import Iterator
from typing import Any

import numpy as np

__all__ = [
    "Dimension",
    "Size",
    "TensorShape",
    "as_dimension",
    "as_shape",
    "dimension_value",
    "static_shape",
]


class Dimension:
    """One dimension of a static shape: an int ``value``, or ``None`` when unknown.

    Comparisons and arithmetic with an unknown dimension give ``None`` / an unknown
    dimension, as in TensorFlow.

    >>> Dimension(3) == 3, Dimension(None) == 3, Dimension(3) + 1, str(Dimension(None))
    (True, None, Dimension(4), '?')
    """

    __slots__ = ("_value",)
    __hash__ = None  # TensorFlow's Dimension is unhashable

    def __init__(self, value: Any) -> None:
        if isinstance(value, Dimension):
            value = value.value
        if value is not None:
            if isinstance(value, bool) or not hasattr(value, "__index__"):
                raise TypeError(f"Dimension value must be integer or None, got {value!r}")
            value = operator.index(value)
            if value < 0:
                raise ValueError(f"Dimension {value} must be >= 0")
        self._value = value

    @property
    def value(self) -> int | None:
        """The size, or None when unknown."""
        return self._value

    def __repr__(self) -> str:
        return f"Dimension({self._value!r})"

    def __str__(self) -> str:
        return "?" if self._value is None else str(self._value)

    def __int__(self) -> int:
        if self._value is None:
            raise TypeError("__int__ returned non-int (type NoneType)")
        return self._value

    __index__ = __int__

    def _compare(self, other: Any, op: Any) -> bool | None:
        try:
            other = as_dimension(other)
        except (TypeError, ValueError):
            return NotImplemented
        if self._value is None or other.value is None:
            return None
        return op(self._value, other.value)

    def __eq__(self, other: Any) -> bool | None:  # type: ignore[override]
        return self._compare(other, operator.eq)

    def __ne__(self, other: Any) -> bool | None:  # type: ignore[override]
        return self._compare(other, operator.ne)

    def __lt__(self, other: Any) -> bool | None:
        return self._compare(other, operator.lt)

    def __le__(self, other: Any) -> bool | None:
        return self._compare(other, operator.le)

    def __gt__(self, other: Any) -> bool | None:
        return self._compare(other, operator.gt)

    def __ge__(self, other: Any) -> bool | None:
        return self._compare(other, operator.ge)

    def _arith(self, other: Any, op: Any) -> Dimension:
        try:
            other = as_dimension(other)
        except (TypeError, ValueError):
            return NotImplemented
        if self._value is None or other.value is None:
            return Dimension(None)
        return Dimension(op(self._value, other.value))

    def __add__(self, other: Any) -> Dimension:
        return self._arith(other, operator.add)

    def __sub__(self, other: Any) -> Dimension:
        return self._arith(other, operator.sub)

    def __mul__(self, other: Any) -> Dimension:
        return self._arith(other, operator.mul)

    def __floordiv__(self, other: Any) -> Dimension:
        return self._arith(other, operator.floordiv)

    def __mod__(self, other: Any) -> Dimension:
        return self._arith(other, operator.mod)

    __radd__ = __add__
    __rmul__ = __mul__

    def __rsub__(self, other: Any) -> Dimension:
        return as_dimension(other) - self

    def __rfloordiv__(self, other: Any) -> Dimension:
        return as_dimension(other) // self

    def is_compatible_with(self, other: Any) -> bool:
        """Whether the two could be the same size (either unknown, or equal)."""
        other = as_dimension(other)
        return self._value is None or other.value is None or self._value == other.value

    def assert_is_compatible_with(self, other: Any) -> None:
        """Raise ValueError unless :meth:`is_compatible_with`."""
        if not self.is_compatible_with(other):
            raise ValueError(f"Dimensions {self} and {as_dimension(other)} are not compatible")

    def merge_with(self, other: Any) -> Dimension:
        """The known one of two compatible dimensions (ValueError when they differ)."""
        other = as_dimension(other)
        self.assert_is_compatible_with(other)
        return Dimension(self._value if self._value is not None else other.value)


class Size(int):
    """A known size read from ``tensor.shape``: an ``int`` that also has TensorFlow 1's
    ``Dimension.value``, so both ``x.shape[1] * 2`` (TF2 style) and ``x.shape[1].value``
    (TF1 style) work. An unknown size is plain ``None``, as in TensorFlow 2.

    >>> s = Size(3)
    >>> s * 2, s.value, s == 3, s
    (6, 3, True, 3)
    """

    __slots__ = ()

    @property
    def value(self) -> int:
        """The size as a plain int (``Dimension.value``)."""
        return int(self)

    def __reduce__(self) -> tuple[type, tuple[int]]:
        return (int, (int(self),))  # pickles (to workers, in plans) as a plain int


def as_dimension(value: Any) -> Dimension:
    """``value`` (a Dimension, an int or None) as a :class:`Dimension`."""
    return value if isinstance(value, Dimension) else Dimension(value)


def dimension_value(dimension: Any) -> int | None:
    """The int (or None) of a dimension, whether a :class:`Dimension` or already an int
    (``tf.compat.v1.dimension_value``).

    >>> dimension_value(Dimension(4)), dimension_value(5), dimension_value(None)
    (4, 5, None)
    """
    return dimension.value if isinstance(dimension, Dimension) else dimension


def _raw_dims(dims: Any) -> tuple[int | None, ...] | None:
    if dims is None:
        return None
    if isinstance(dims, TensorShape):
        return dims._raw()
    if isinstance(dims, (str, bytes)):
        raise TypeError(f"A TensorShape needs a list of dimensions or None; got {dims!r}")
    try:
        items = list(dims)
    except TypeError:
        items = [dims]  # TensorShape(3) is TensorShape([3]), as in TensorFlow
    return tuple(as_dimension(d).value for d in items)


class TensorShape(tuple):
    """A static shape: a tuple of ints and ``None``, or an unknown rank (``dims=None``).

    ``v1=True`` (TensorFlow 1's ``TensorShape``, the default here) indexes and iterates to
    :class:`Dimension` objects; ``v1=False`` (what ``tensor.shape`` is) to ints and ``None``.
    Either compares equal to the tuples and lists of the same sizes.
    """

    _known_rank = True
    _v1 = True

    def __new__(cls, dims: Any = None, v1: bool = True) -> TensorShape:
        raw = _raw_dims(dims)
        shape = super().__new__(cls, () if raw is None else raw)
        if raw is None:
            shape._known_rank = False
        if not v1:
            shape._v1 = False
        return shape

    def _raw(self) -> tuple[int | None, ...] | None:
        """The plain tuple of ints and None (None for an unknown rank)."""
        return tuple(tuple.__iter__(self)) if self._known_rank else None

    def _like(self, dims: Any) -> TensorShape:
        return TensorShape(dims, v1=self._v1)

    # -- TensorFlow's properties ------------------------------------------------------------
    @property
    def ndims(self) -> int | None:
        """The rank, or None when unknown."""
        return tuple.__len__(self) if self._known_rank else None

    rank = ndims

    @property
    def dims(self) -> list[Dimension] | None:
        """The dimensions as :class:`Dimension` objects (None for an unknown rank)."""
        return [Dimension(d) for d in tuple.__iter__(self)] if self._known_rank else None

    def as_list(self) -> list[int | None]:
        """The sizes as a list of ints and None."""
        if not self._known_rank:
            raise ValueError("as_list() is not defined on an unknown TensorShape.")
        return list(tuple.__iter__(self))

    def is_fully_defined(self) -> bool:
        """Whether the rank and every size are known."""
        return self._known_rank and None not in tuple.__iter__(self)

    def assert_is_fully_defined(self) -> None:
        """Raise ValueError unless :meth:`is_fully_defined`."""
        if not self.is_fully_defined():
            raise ValueError(f"Shape {self} is not fully defined")

    def num_elements(self) -> int | None:
        """The number of elements, or None when not fully defined."""
        if not self.is_fully_defined():
            return None
        count = 1
        for d in tuple.__iter__(self):
            count *= d
        return count

    def is_compatible_with(self, other: Any) -> bool:
        """Whether both could describe the same value (unknown sizes match any)."""
        other = as_shape(other)
        if not (self._known_rank and other._known_rank):
            return True
        if self.ndims != other.ndims:
            return False
        pairs = zip(tuple.__iter__(self), tuple.__iter__(other), strict=True)
        return all(a is None or b is None or a == b for a, b in pairs)

    def assert_is_compatible_with(self, other: Any) -> None:
        """Raise ValueError unless :meth:`is_compatible_with`."""
        if not self.is_compatible_with(other):
            raise ValueError(f"Shapes {self} and {as_shape(other)} are incompatible")

    def merge_with(self, other: Any) -> TensorShape:
        """The most specific shape compatible with both (ValueError when they differ)."""
        other = as_shape(other)
        if not self._known_rank:
            return self._like(other._raw())
        if not other._known_rank:
            return self
        if not self.is_compatible_with(other):
            raise ValueError(f"Shapes {self} and {other} are not compatible")
        pairs = zip(tuple.__iter__(self), tuple.__iter__(other), strict=True)
        return self._like([a if a is not None else b for a, b in pairs])

    def concatenate(self, other: Any) -> TensorShape:
        """This shape followed by ``other``'s dimensions."""
        other = as_shape(other)
        if not (self._known_rank and other._known_rank):
            return self._like(None)
        return self._like(self._raw() + other._raw())

    def with_rank(self, rank: int) -> TensorShape:
        """This shape, checked (ValueError) or made to have ``rank`` dimensions."""
        if not self._known_rank:
            return self._like([None] * rank)
        if self.ndims != rank:
            raise ValueError(f"Shape {self} must have rank {rank}")
        return self

    # -- a tuple that speaks TensorFlow -----------------------------------------------------
    def __getitem__(self, key: Any) -> Any:
        if not self._known_rank:
            return self._like(None) if isinstance(key, slice) else Dimension(None)
        value = tuple.__getitem__(self, key)
        if isinstance(key, slice):
            return self._like(value)
        if self._v1:
            return Dimension(value)
        return value if value is None else Size(value)

    def __iter__(self) -> Iterator[Any]:
        if not self._known_rank:
            raise ValueError("Cannot iterate over a shape with unknown rank.")
        if self._v1:
            return (Dimension(d) for d in tuple.__iter__(self))
        return (d if d is None else Size(d) for d in tuple.__iter__(self))

    def __len__(self) -> int:
        if not self._known_rank:
            raise ValueError("Cannot take the length of shape with unknown rank.")
        return tuple.__len__(self)

    def __bool__(self) -> bool:
        return not self._known_rank or tuple.__len__(self) > 0

    def __eq__(self, other: Any) -> bool:
        if type(other) is TensorShape:  # (no conversion: both are tuples of ints and None)
            return self._known_rank is other._known_rank and tuple.__eq__(self, other)
        try:
            other = as_shape(other)
        except (TypeError, ValueError):
            return NotImplemented
        return self._raw() == other._raw()

    def __ne__(self, other: Any) -> bool:
        equal = self.__eq__(other)
        return equal if equal is NotImplemented else not equal

    def __hash__(self) -> int:  # (a plain tuple's hash: no copy made)
        return tuple.__hash__(self) if self._known_rank else hash(None)

    def __add__(self, other: Any) -> TensorShape:
        return self.concatenate(other)

    def __radd__(self, other: Any) -> TensorShape:
        return as_shape(other, v1=self._v1).concatenate(self)

    def __repr__(self) -> str:
        if not self._v1:  # ``tensor.shape``: shown as the tuple it is, in messages too
            return tuple.__repr__(self)
        return f"TensorShape({self.as_list() if self._known_rank else None})"

    def __str__(self) -> str:
        if not self._known_rank:
            return "<unknown>"
        sizes = [("?" if self._v1 else "None") if d is None else str(d) for d in self.as_list()]
        return f"({sizes[0]},)" if len(sizes) == 1 else f"({', '.join(sizes)})"

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        return np.asarray(self.as_list(), dtype=dtype)  # the sizes, not Dimension objects

    def __reduce__(self) -> tuple:
        return (TensorShape, (self._raw(), self._v1))

    def __copy__(self) -> TensorShape:
        return self

    def __deepcopy__(self, memo: Any) -> TensorShape:
        return self


def as_shape(shape: Any, v1: bool = True) -> TensorShape:
    """``shape`` (a TensorShape, a list or tuple of ints / None / Dimensions, or None for an
    unknown rank) as a :class:`TensorShape`."""
    return shape if isinstance(shape, TensorShape) else TensorShape(shape, v1=v1)


#: ``tensor.shape`` objects by their sizes, shared (a TensorShape is immutable): a graph of a
#: million ops has a handful of distinct shapes, not a million copies of them
_SHARED: dict[tuple[int | None, ...], TensorShape] = {}
_SHARED_MAX = 4096  # distinct shapes kept (beyond: made per tensor, as before)


def static_shape(dims: Any) -> TensorShape:
    """``dims`` (not None) as ``tensor.shape``'s :class:`TensorShape` (``v1=False``): one
    shared object for each shape of plain ints and None.

    >>> a, b = static_shape((2, None)), static_shape([2, None])
    >>> a is b, a, static_shape(a) is a, static_shape(TensorShape([2, None])) is a
    (True, (2, None), True, True)
    """
    if type(dims) is TensorShape:
        if not dims._v1:
            return dims
        dims = dims._raw()
        if dims is None:
            return TensorShape(None, v1=False)
    if type(dims) is tuple or type(dims) is list:
        key = tuple(dims)
        for d in key:  # (True == 1 and 3.0 == 3: only plain sizes may find a shared shape)
            if d is not None and type(d) is not int and type(d) is not Size:
                return TensorShape(dims, v1=False)
        shape = _SHARED.get(key)
        if shape is None:
            shape = TensorShape(key, v1=False)
            if len(_SHARED) < _SHARED_MAX:
                _SHARED[shape._raw()] = shape
        return shape
    return TensorShape(dims, v1=False)
