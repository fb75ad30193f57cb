"""Integers into float dtypes: feeds and constants whose integer values a float dtype cannot
hold exactly (int64/uint64 beyond 2**53 into float64, beyond 2**24 into float32) are refused
with a clear error, value by value; values the float holds exactly (2**60, small ints) pass
and arrive unchanged."""

from __future__ import annotations

import numpy as np
import pytest

import daskgraph as dg
from daskgraph.framework import dtypes
from daskgraph.framework.casting import cast_exactly


@pytest.fixture(autouse=True)
def graph():
    with dg.Graph().as_default() as g:
        yield g


@pytest.mark.parametrize(
    ("value", "placeholder_dtype"),
    [
        (np.array([1, 2**53 + 1], np.int64), dg.float64),
        (np.array([2**63 - 1], np.int64), dg.float64),
        (np.array([2**64 - 1], np.uint64), dg.float64),
        (np.array([2**60 + 1], np.uint64), dg.float64),
        (np.array([2**24 + 1], np.int64), dg.float32),
    ],
    ids=["int64-2**53+1", "int64-max", "uint64-max", "uint64-2**60+1", "float32-2**24+1"],
)
def test_integer_feeds_a_float_cannot_hold_are_refused(value, placeholder_dtype):
    x = dg.placeholder(placeholder_dtype, [None], name="amounts")
    with dg.Session() as sess, pytest.raises(ValueError) as info:
        sess.run(x * 1, {x: value})
    message = str(info.value)
    bad = int(value[-1])
    assert "amounts" in message and str(value.dtype) in message
    assert f"{bad}, which cannot be represented exactly as {placeholder_dtype.name}" in message


def test_integer_feeds_a_float_holds_exactly_arrive_unchanged():
    x = dg.placeholder(dg.float64, [None], name="amounts")
    value = np.array([2**60, -(2**63), 2**63 - 1024, 3, 2**53], np.int64)
    with dg.Session() as sess:
        got = sess.run(x + 0.0, {x: value})
        small = sess.run(x + 0.0, {x: np.arange(5, dtype=np.uint64)})
    assert got.dtype == np.float64
    assert [int(v) for v in got] == [int(v) for v in value]
    np.testing.assert_array_equal(small, [0.0, 1.0, 2.0, 3.0, 4.0])


def test_a_big_feed_is_checked_value_by_value():
    """One inexact value at the end of a million exact ones is found (and named)."""
    value = np.arange(1_000_000, dtype=np.int64) * 2**20  # up to ~2**40: all exact
    assert cast_exactly(value, dtypes.float64)[-1] == float(value[-1])
    value[-1] = 2**62 + 1
    named = rf"element \[999999\] is {2**62 + 1}, which cannot be represented exactly"
    with pytest.raises(ValueError, match=named):
        cast_exactly(value, dtypes.float64)


@pytest.mark.parametrize(
    "value", [2**53 + 1, np.int64(2**60 + 1), np.uint64(2**64 - 1), [1, 2**70 + 1]]
)
def test_integer_constants_a_float_cannot_hold_are_refused(value):
    with pytest.raises(TypeError, match="cannot be represented exactly as float64"):
        dg.constant(value, dtype=dg.float64, name="big")
    with pytest.raises(TypeError, match="constant 'scaled'"):
        dg.placeholder(dg.float64, []) * dg.constant(value, dtype=dg.float64, name="scaled")


@pytest.mark.parametrize("value", [2**60, np.int64(2**53), np.uint64(2**63), [1, 2**70], 7])
def test_integer_constants_a_float_holds_exactly_are_kept(value):
    const = dg.constant(value, dtype=dg.float64)
    with dg.Session() as sess:
        got = sess.run(const)
    assert np.array_equal(np.asarray(got, dtype=object), np.asarray(value, dtype=object))
