"""Errors quote user input shortened: a 4 MB name, fetch string or feed_dict makes a short
message (the start of the input, an ellipsis and its length), never a 4 MB one."""

from __future__ import annotations

import numpy as np
import pytest

import daskgraph as dg
from daskgraph.errors import quote

HUGE = 4_000_000


def test_quote_keeps_the_start_and_says_the_length():
    text = "x" * HUGE
    assert quote(text) == f"{'x' * 40!r}... ({HUGE} characters)"
    assert quote(text, limit=200) == f"{'x' * 100!r}... ({HUGE} characters)"
    assert quote("short") == "'short'"


def test_feed_errors_quote_a_huge_tensor_name_shortened():
    with dg.Graph().as_default():
        x = dg.placeholder(dg.float32, [2], name="p" * HUGE)
        with dg.Session() as sess:
            with pytest.raises(ValueError, match="Cannot feed value of shape") as info:
                sess.run(x * 2.0, {x: np.ones(3)})
            assert len(str(info.value)) < 1_000 and f"({HUGE + 2} characters)" in str(info.value)
            with pytest.raises(TypeError, match="feed_dict must be a dict") as info:
                sess.run(x * 2.0, ["v" * HUGE])
            assert len(str(info.value)) < 1_000


def test_fetch_errors_quote_a_huge_name_shortened():
    with dg.Graph().as_default():
        dg.constant(1.0, name="c")
        with dg.Session() as sess, pytest.raises((KeyError, ValueError)) as info:
            sess.run("q" * HUGE + ":0")
        assert len(str(info.value)) < 1_000 and f"({HUGE + 2} characters)" in str(info.value)
