"""cast_exactly over every pair of numeric dtypes, with the values at their edges (±0, NaN,
±inf, each dtype's limits, 2**11, 2**24 and 2**53 ± 1, fractions): the verdict of each value is
worked out here with Python's exact integers and fractions, independently of NumPy's casts,
and compared with what cast_exactly does; a refusal names the first offending element.

The rule checked (see daskgraph.framework.casting): a value converts when it survives the cast
(``-0.0`` to an integer is ``0``); a float narrowed to a smaller float is rounded, refused only
when a finite value would become infinite; an integer into a float must be held exactly.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from daskgraph.errors import LossyCastError
from daskgraph.framework import dtypes
from daskgraph.framework.casting import cast_exactly

# every NumPy numeric dtype a fed value can have, and every numeric dtype a tensor can have
SOURCES = [
    np.dtype(t)
    for t in (
        np.bool_,
        np.int8,
        np.int16,
        np.int32,
        np.int64,
        np.uint8,
        np.uint16,
        np.uint32,
        np.uint64,
        np.float16,
        np.float32,
        np.float64,
        np.complex64,
        np.complex128,
    )
]
TARGETS = [
    dtypes.bool_,
    dtypes.int8,
    dtypes.int16,
    dtypes.int32,
    dtypes.int64,
    dtypes.uint8,
    dtypes.float16,
    dtypes.float32,
    dtypes.float64,
]
INTEGER_KINDS = [d for d in SOURCES if d.kind in "iu"]
FLOAT_KINDS = [d for d in SOURCES if d.kind == "f"]


def _edge_integers() -> list[int]:
    """Integers at the edges: small ones, every integer dtype's limits and one past them,
    and the powers of two where float16/32/64 stop holding every integer, ± 1."""
    values = {0, 1, -1, 2, 3, -2, 7}
    for d in INTEGER_KINDS:
        info = np.iinfo(d)
        values |= {int(info.min), int(info.max), int(info.min) - 1, int(info.max) + 1}
    for bits in (11, 24, 53, 63, 64):
        values |= {2**bits - 1, 2**bits, 2**bits + 1, -(2**bits) - 1, -(2**bits) + 1}
    return sorted(values)


def _edge_floats() -> list[float]:
    """Floats at the edges: ±0, NaN, ±inf, fractions, each float dtype's largest and
    smallest normal value, values just past float16's and float32's range, the integer
    edges as floats."""
    values = [0.0, -0.0, math.nan, math.inf, -math.inf, 0.5, -0.5, 3.7, -3.7, 1.0, 2.0]
    values += [1e-300, 1e300, -1e300, 65504.0, 65519.0, 65520.0, 1e5, 3.5e38, 3.4e38]
    for d in FLOAT_KINDS:
        info = np.finfo(d)
        values += [float(info.max), -float(info.max), float(info.tiny)]
    values += [float(v) for v in _edge_integers()]
    return values


def _source_values(source: np.dtype) -> list:
    """The edge values a ``source`` array can hold, as NumPy scalars of ``source``."""
    if source.kind == "b":
        return [np.bool_(False), np.bool_(True)]
    if source.kind in "iu":
        info = np.iinfo(source)
        return [source.type(v) for v in _edge_integers() if info.min <= v <= info.max]
    with np.errstate(over="ignore"):  # float16 and float32 round the big edges to infinity
        reals = [source.type(v) for v in _edge_floats()]
    if source.kind == "f":
        return reals
    parts = [0.0, -0.0, 1.0, 2.5, math.nan, math.inf, 1e300]
    with np.errstate(over="ignore"):
        return reals + [source.type(complex(r, i)) for r in (0.0, 3.0) for i in parts]


def _holds_integer(target: np.dtype, value: int) -> bool:
    """Whether float type ``target`` holds the integer ``value`` exactly: its odd part fits
    the significand, and it is not beyond the largest finite value."""
    info = np.finfo(target)
    magnitude = abs(value)
    if magnitude == 0:
        return True
    odd = magnitude >> ((magnitude & -magnitude).bit_length() - 1)
    return odd.bit_length() <= info.nmant + 1 and magnitude <= int(info.max)


def _rounds_to_infinity(target: np.dtype, value: float) -> bool:
    """Whether the finite ``value`` rounds beyond ``target``'s largest finite value: at or
    beyond the largest plus half its spacing (ties go to the even neighbour: infinity)."""
    info = np.finfo(target)
    largest = Fraction(int(info.max))
    half_spacing = Fraction(2) ** (info.maxexp - 1 - info.nmant) / 2
    return math.isfinite(value) and abs(Fraction(value)) >= largest + half_spacing


def _survives(value, target: np.dtype) -> bool:
    """The verdict, from Python's exact arithmetic: whether ``value`` (a Python bool, int,
    float or complex) converts to ``target`` by the rule."""
    if isinstance(value, complex):
        if target.kind == "c":
            return not (
                _rounds_to_infinity(target, value.real) or _rounds_to_infinity(target, value.imag)
            )
        if value.imag != 0 or math.isnan(value.imag):
            return False
        value = value.real
    if target.kind == "b":
        return value in (0, 1)  # NaN is neither
    if target.kind in "iu":
        if isinstance(value, float) and not (math.isfinite(value) and value.is_integer()):
            return False
        info = np.iinfo(target)
        return int(info.min) <= int(value) <= int(info.max)
    if isinstance(value, (bool, int)):
        return _holds_integer(target, int(value))
    return not _rounds_to_infinity(target, value)  # a float: rounding is accepted


def _same(got, wanted) -> bool:
    """Equal values, NaN equal to NaN (part by part for complex)."""
    got, wanted = complex(got), complex(wanted)
    parts = ((got.real, wanted.real), (got.imag, wanted.imag))
    return all(a == b or (math.isnan(a) and math.isnan(b)) for a, b in parts)


@pytest.mark.parametrize("target", TARGETS, ids=lambda d: d.name)
@pytest.mark.parametrize("source", SOURCES, ids=str)
def test_every_edge_value_of_every_pair(source: np.dtype, target: dtypes.DType) -> None:
    wanted = target.numpy
    for scalar in _source_values(source):
        value = scalar.item()
        array = np.array([scalar], dtype=source)
        if _survives(value, wanted):
            result = cast_exactly(array, target)
            assert result.dtype == wanted, (value, source, target)
            if source.kind in "fc" and wanted.kind == "f":  # rounded to the nearest float
                with np.errstate(over="ignore"):
                    nearest = wanted.type(scalar.real if source.kind == "c" else scalar)
                assert _same(result[0].item(), nearest.item()), (value, source, target)
            else:  # nothing may be rounded: the value itself arrived
                assert _same(result[0].item(), value), (value, source, target, result)
        else:
            with pytest.raises(LossyCastError) as info:
                cast_exactly(array, target)
            err = info.value
            assert isinstance(err, ValueError)
            assert err.index == (0,) and _same(err.value, value), (value, source, target)
            assert (err.source, err.target) == (str(source), target.name)
            assert str(err).startswith(f"element [0] is {scalar!s}, ")


def test_the_rule_on_the_values_the_issue_names() -> None:
    refused = [
        (np.array([3.7]), dtypes.int32),
        (np.array([2**53 + 1], np.int64), dtypes.float64),
        (np.array([300]), dtypes.uint8),
        (np.array([math.nan]), dtypes.int64),
        (np.array([math.inf], np.float32), dtypes.int32),
        (np.array([-1], np.int32), dtypes.uint8),
        (np.array([1e300]), dtypes.float32),
    ]
    for array, target in refused:
        with pytest.raises(LossyCastError):
            cast_exactly(array, target)
    labels = np.array([[0.0, 1.0], [1.0, -0.0]], np.float32)
    assert cast_exactly(labels, dtypes.int32).tolist() == [[0, 1], [1, 0]]
    assert cast_exactly(np.array([0.1]), dtypes.float32)[0] == np.float32(0.1)  # rounded


_PAIRS = [(s, t) for s in SOURCES for t in TARGETS if s != t.numpy]


@settings(max_examples=300, deadline=None)
@given(
    pair=st.sampled_from(_PAIRS),
    shape=st.lists(st.integers(1, 4), min_size=0, max_size=3),
    data=st.data(),
)
def test_a_refusal_names_the_first_offending_element(pair, shape, data) -> None:
    source, target = pair
    pool = _source_values(source)
    size = math.prod(shape)
    picks = data.draw(st.lists(st.sampled_from(pool), min_size=size, max_size=size))
    array = np.array(picks, dtype=source).reshape(shape)
    verdicts = [_survives(v.item(), target.numpy) for v in picks]
    if all(verdicts):
        assert cast_exactly(array, target).shape == array.shape
        return
    first = verdicts.index(False)
    with pytest.raises(LossyCastError) as info:
        cast_exactly(array, target)
    assert info.value.index == tuple(int(i) for i in np.unravel_index(first, array.shape))
    assert _same(info.value.value, picks[first].item())
