"""Convert arrays between dtypes, refusing any conversion that would change a value.

Its one job is :func:`cast_exactly`, the rule for values that reach a graph with a dtype of
their own (feeds, ``from_generator`` elements, integer constants): a conversion passes when
every value survives it, and is refused, naming the first value that would not, otherwise.
TensorFlow converts feeds with ``np.asarray(value, dtype)``, which passes ``[0.0, 1.0]`` to
an ``int32`` placeholder, as it should, but also turns ``3.7`` into ``3`` and ``-1`` into
``255`` without a word; daskgraph keeps the first and refuses the others.

The rule, value by value (``source`` to ``target``):

- to an integer dtype: the value must be an integer (``2.0`` is; ``2.5``, NaN and infinities
  are not; ``-0.0`` is ``0``) within the target's range, and a complex value must have no
  imaginary part;
- to ``bool``: the value must be ``0`` or ``1`` (``False``/``True``); NaN is neither;
- integers (and ``bool``) to a float or complex dtype: the float must hold the integer exactly
  (``2**53 + 1`` does not fit ``float64``, nor ``2**24 + 1`` ``float32``);
- floats to a narrower float (``float64`` to ``float32`` or ``float16``, ``complex128`` to
  ``complex64``): rounded to the nearest value of the target, as TensorFlow and NumPy do,
  because TF 1 programs feed ``float64`` NumPy arrays (``np.random.rand``, pandas columns) to
  ``float32`` placeholders everywhere; NaN and infinities pass as themselves, and only a finite
  value beyond the target's largest (``1e300`` to ``float32``) is refused: it would become
  infinity;
- complex to real: the imaginary part must be zero, the real part follows the rules above;
- widening conversions (``int8`` to ``int32``, ``float32`` to ``float64``, ...) always pass,
  unchecked; strings and Python objects never convert to numbers.

>>> import numpy as np
>>> from daskgraph.framework import dtypes
>>> cast_exactly(np.array([[0.0, 1.0], [1.0, 0.0]], np.float32), dtypes.int32)
array([[0, 1],
       [1, 0]], dtype=int32)
>>> cast_exactly(np.array([1.0, 3.7]), dtypes.int32)
Traceback (most recent call last):
...
daskgraph.errors.LossyCastError: element [1] is 3.7, which is not an integer
"""

from __future__ import annotations

import numpy as np

from daskgraph.errors import LossyCastError
from daskgraph.framework.dtypes import DType

__all__ = ["cast_exactly"]


def cast_exactly(array: np.ndarray, dtype: DType) -> np.ndarray:
    """``array`` converted to ``dtype`` when every value survives; see the module's rule.

    Parameters
    ----------
    array : numpy.ndarray
        The values, of any NumPy dtype.
    dtype : DType
        The dtype wanted.

    Returns
    -------
    numpy.ndarray
        ``array`` itself when its dtype is already ``dtype``, else a converted copy.

    Raises
    ------
    LossyCastError
        A ``ValueError`` naming the first element (in C order) that would change: its
        ``index``, ``value`` and ``reason``, and the ``source`` and ``target`` dtypes; the
        caller names the tensor.

    Examples
    --------
    >>> import numpy as np
    >>> from daskgraph.framework import dtypes
    >>> cast_exactly(np.array([1, 2], np.int64), dtypes.int32).dtype
    dtype('int32')
    >>> cast_exactly(np.array([0.1]), dtypes.float32)  # rounded, as TensorFlow does
    array([0.1], dtype=float32)
    >>> cast_exactly(np.array([5, 2**40]), dtypes.int32)
    Traceback (most recent call last):
    ...
    daskgraph.errors.LossyCastError: element [1] is 1099511627776, outside int32's range [-2147483648, 2147483647]
    >>> cast_exactly(np.array(1e10), dtypes.float16)
    Traceback (most recent call last):
    ...
    daskgraph.errors.LossyCastError: the value is 10000000000.0, which overflows float16 (largest magnitude 65504.0) to infinity
    """  # noqa: E501
    source, target = array.dtype, dtype.numpy
    if source == target:
        return array
    if source.kind not in "biufc" or target.kind not in "biufc":
        raise LossyCastError(
            f"{source} values (strings, Python objects or numbers too large for NumPy) do not "
            f"convert to {dtype.name}",
            index=None,
            value=None,
            source=str(source),
            target=dtype.name,
            reason="not numbers",
        )
    if _always_exact(source, target) or array.size == 0:
        return array.astype(target)
    real = source.kind == "c" and target.kind != "c"  # the real parts (no ComplexWarning)
    with np.errstate(all="ignore"):
        converted = (array.real if real else array).astype(target)
        changed = _changed(array, converted)
    if changed is not None and changed.any():
        raise _lossy(array, converted, changed, dtype)
    return converted


def _always_exact(source: np.dtype, target: np.dtype) -> bool:
    """Whether every value of ``source`` converts to ``target`` unchanged, so that no value
    needs checking. NumPy's "safe" casts are not enough: int64 and uint64 to float64 (or
    complex128) are "safe" although integers beyond 2**53 are rounded.

    >>> _always_exact(np.dtype(np.int32), np.dtype(np.float64))
    True
    >>> _always_exact(np.dtype(np.int64), np.dtype(np.float64))
    False
    """
    if not np.can_cast(source, target, "safe"):
        return False
    if source.kind in "iu" and target.kind in "fc":
        magnitude_bits = source.itemsize * 8 - (source.kind == "i")
        return magnitude_bits <= np.finfo(target).nmant + 1
    return True


def _changed(array: np.ndarray, converted: np.ndarray) -> np.ndarray | None:
    """Where the conversion of ``array`` to ``converted``'s dtype changes a value (a boolean
    mask of ``array``'s shape; ``None`` when a cheap check shows that no value changes), by
    the module's rule. Vectorised; no conversion back, whose result NumPy leaves to the
    platform for values out of range."""
    source, target = array.dtype, converted.dtype
    imaginary = None
    if source.kind == "c" and target.kind != "c":
        imaginary = array.imag != 0  # NaN included
        array, source = array.real, array.real.dtype
    if target.kind == "b":
        changed = (array != 0) & (array != 1)
    elif target.kind in "iu":
        changed = _outside_integers(array, np.iinfo(target))
    elif source.kind in "biu":  # integers to a float or complex type
        changed = _rounded_integers(array, converted.real if target.kind == "c" else converted)
    else:
        changed = _overflowed(array, converted)  # a float narrowed: rounding is accepted
    if imaginary is None or changed is None:
        return imaginary if changed is None else changed
    return imaginary | changed


def _outside_integers(array: np.ndarray, info: np.iinfo) -> np.ndarray | None:
    """Where ``array`` (integers or floats) holds a value that is not an integer of ``info``'s
    range. Bounds are compared in ``array``'s own type (integers) or as float64 (floats; the
    bounds, ``-2**k`` and ``2**k``, are exact there), never across signedness. The common
    case costs two reductions (and, for floats, one test of the fractions)."""
    if array.dtype.kind == "b":
        return None
    low, high = array.min(), array.max()  # NaN, if any, fails every test below
    if array.dtype.kind in "iu":
        if info.min <= int(low) and int(high) <= info.max:
            return None
        own = np.iinfo(array.dtype)
        outside = np.zeros(array.shape, dtype=bool)
        if info.min > own.min:
            outside |= array < array.dtype.type(info.min)
        if info.max < own.max:
            outside |= array > array.dtype.type(info.max)
        return outside
    lowest, beyond = np.float64(int(info.min)), np.float64(int(info.max) + 1)
    fractional = np.trunc(array) != array  # NaN included, infinities not
    if lowest <= low and high < beyond:
        return fractional
    return fractional | ~((array >= lowest) & (array < beyond))


def _rounded_integers(array: np.ndarray, converted: np.ndarray) -> np.ndarray | None:
    """Where the float array ``converted`` does not hold the integers of ``array`` exactly
    (rounded, or overflowed to infinity). The common case costs two reductions: when every
    integer is within the float's exact range, nothing is converted back."""
    exact = 2 ** (np.finfo(converted.dtype).nmant + 1)  # every integer up to here is exact
    if -exact <= int(array.min()) and int(array.max()) <= exact:
        return None
    beyond = np.float64(int(np.iinfo(array.dtype).max) + 1)  # a power of two, exact; compared
    changed = ~((converted >= -beyond) & (converted < beyond))  # as float64 (float16 overflows)
    changed |= np.where(changed, 0, converted).astype(array.dtype) != array
    return changed


def _overflowed(array: np.ndarray, converted: np.ndarray) -> np.ndarray | None:
    """Where a finite float (or either part of a complex) became infinite when narrowed
    (``None`` when no value of ``converted`` is infinite: the common case, one test of the
    converted values, none of the source's)."""
    if not np.isinf(converted).any():
        return None
    if converted.dtype.kind == "c":  # each part on its own
        parts = ((np.real(array), converted.real), (np.imag(array), converted.imag))
        return np.logical_or(*(np.isinf(made) & np.isfinite(given) for given, made in parts))
    return np.isinf(converted) & np.isfinite(array)


def _lossy(
    array: np.ndarray, converted: np.ndarray, changed: np.ndarray, dtype: DType
) -> LossyCastError:
    """The error naming the first element that ``changed`` marks, and why it changes."""
    index = tuple(int(i) for i in np.unravel_index(int(np.argmax(changed)), array.shape))
    value = array[index].item()
    reason = _reason(value, converted[index].item(), array.dtype, dtype)
    where = f"element {list(index)} is" if index else "the value is"
    return LossyCastError(
        f"{where} {array[index]!s}, {reason}",  # NumPy's shortest text for the source's precision
        index=index,
        value=value,
        source=str(array.dtype),
        target=dtype.name,
        reason=reason,
    )


def _reason(value: complex, became: complex, source: np.dtype, dtype: DType) -> str:
    """Why ``value`` does not survive conversion to ``dtype`` (``became`` is what NumPy made
    of it).

    >>> from daskgraph.framework import dtypes
    >>> _reason(-1, 255, np.dtype(np.int8), dtypes.uint8)
    "outside uint8's range [0, 255]"
    >>> _reason(float("nan"), 0, np.dtype(np.float32), dtypes.int32)
    'which is not a finite number'
    """
    target = dtype.numpy
    if isinstance(value, complex) and target.kind != "c":
        if value.imag != 0 or value.imag != value.imag:
            return f"which has an imaginary part ({dtype.name} is real)"
        value = value.real
    if target.kind == "b":
        return "which is neither 0 nor 1 (bool holds only False and True)"
    if target.kind in "iu":
        if isinstance(value, float) and not np.isfinite(value):
            return "which is not a finite number"
        if isinstance(value, float) and not value.is_integer():
            return "which is not an integer"
        info = np.iinfo(target)
        return f"outside {dtype.name}'s range [{int(info.min)}, {int(info.max)}]"
    if source.kind in "biu":
        bits = np.finfo(target).nmant + 1
        became = became.real if isinstance(became, complex) else became
        shown = str(int(became)) if np.isfinite(became) else "inf"
        return (
            f"which cannot be represented exactly as {dtype.name} (it would become {shown}; "
            f"{dtype.name} holds every integer only up to 2**{bits})"
        )
    largest = float(np.finfo(target).max)
    return f"which overflows {dtype.name} (largest magnitude {largest}) to infinity"
