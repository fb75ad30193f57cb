"""Misuse raises the exception class TensorFlow raises for it (programs catch these):
a constant of a value no tensor holds."""

from __future__ import annotations

import pytest

import daskgraph.compat.v1 as tf


@pytest.mark.parametrize("value", [{"a": 1}, {1, 2}, object(), [1.0, None]])
def test_a_constant_of_objects_is_tensorflows_type_error(value: object) -> None:
    with tf.Graph().as_default():
        with pytest.raises(TypeError, match=r"^Failed to convert object of type <class '"):
            tf.constant(value)


def test_a_constant_of_none_is_tensorflows_value_error_and_strings_still_work() -> None:
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match=r"^None values not supported\.$"):
            tf.constant(None)
        assert tf.constant(["a", b"b", 1]).dtype == tf.string
        assert tf.constant([1, 2**40]).dtype == tf.int64
