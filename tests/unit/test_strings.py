"""String ops (ops/strings.py) through ``compat.v1``: ``tf.as_string``, ``tf.strings.*``,
``tf.string_join``, ``tf.string_to_number``, ``tf.substr``, ``tf.reduce_join``, ...: the
values and errors TensorFlow 2.21 gives for the same programs (pasted from its run)."""

from __future__ import annotations

import numpy as np
import pytest

import daskgraph as dg
import daskgraph.compat.v1 as tf

InvalidArgument = tf.errors.InvalidArgumentError


def _run(t):
    with tf.Session() as sess:
        out = sess.run(t)
    if isinstance(out, list):
        return [v.tolist() if isinstance(v, np.ndarray) else v for v in out]
    return out.tolist() if isinstance(out, np.ndarray) else out


def test_as_string_as_tensorflow():
    with tf.Graph().as_default():
        f = tf.constant([3.14159, -2.5, 1e10, 0.0001234])
        ints = tf.constant([1, -22, 333])
        got = _run([
            tf.as_string(f),
            tf.as_string(f, precision=2),
            tf.as_string(f, scientific=True),
            tf.as_string(f, shortest=True),
            tf.as_string(ints, width=5),
            tf.as_string(ints, width=5, fill="0"),
            tf.as_string(tf.constant([True, False])),
            tf.dtypes.as_string(tf.constant([2**40], tf.int64)),
            tf.strings.as_string(tf.constant([1 / 3], tf.float64)),
            tf.as_string(tf.constant([200], tf.uint8)),
            tf.as_string(tf.constant(["ab"])),
        ])  # fmt: skip
        with pytest.raises(InvalidArgument, match='Fill argument not supported: "x"'):
            tf.as_string(f, width=3, fill="x")
        with pytest.raises(InvalidArgument, match="Cannot select both scientific and shortest"):
            tf.as_string(f, scientific=True, shortest=True)
    assert [list(v) for v in got] == [
        [b"3.141590", b"-2.500000", b"10000000000.000000", b"0.000123"],
        [b"3.14", b"-2.50", b"10000000000.00", b"0.00"],
        [b"3.141590e+00", b"-2.500000e+00", b"1.000000e+10", b"1.234000e-04"],
        [b"3.14159", b"-2.5", b"1e+10", b"0.0001234"],
        [b"    1", b"  -22", b"  333"],
        [b"00001", b"-0022", b"00333"],
        [b"true", b"false"],
        [b"1099511627776"],
        [b"0.333333"],
        [b"200"],
        [b"ab"],
    ]


def test_join_to_number_substr_length():
    with tf.Graph().as_default():
        got = _run([
            tf.string_join([tf.constant(["a", "b"]), "-", tf.constant(["x", "y"])], separator="+"),
            tf.strings.join(["a", "b"], separator=","),
            tf.string_to_number(tf.constant(["1.5", "-2e3", " 7", "inf", "0x10"])),
            tf.string_to_number(tf.constant(["12", "-7", "  3 "]), out_type=tf.int32),
            tf.strings.to_number(tf.constant(["123456789012"]), out_type=tf.int64),
            tf.substr(tf.constant(["hello", "world"]), 1, 3),
            tf.substr(tf.constant(["hello", "world"]), -3, 2),
            tf.substr(tf.constant(["hello", "world"]), [0, 2], [2, 10]),
            tf.strings.substr(tf.constant(["héllo"]), 1, 2, unit="UTF8_CHAR"),
            tf.strings.length(tf.constant(["héllo", ""])),
            tf.strings.length(tf.constant(["héllo", ""]), unit="UTF8_CHAR"),
        ])  # fmt: skip
        bad = [
            (tf.string_to_number(tf.constant(["abc"])), "could not correctly convert string: abc"),
            (tf.string_to_number(tf.constant(["1.5"]), out_type=tf.int32), "string: 1.5"),
            (tf.string_to_number(tf.constant(["3000000000"]), out_type=tf.int32), "3000000000"),
            (tf.substr(tf.constant(["hi"]), 5, 1), "pos 5 out of range for string b'hi' at index"),
        ]
        for t, message in bad:
            with pytest.raises(InvalidArgument, match=message):
                _run(t)
        with pytest.raises(ValueError, match="shapes must be equal"):
            tf.string_join([tf.constant(["a", "b"]), tf.constant(["x", "y", "z"])])
    assert got[0] == [b"a+-+x", b"b+-+y"] and got[1] == b"a,b"  # TF 2.21
    assert got[2] == [1.5, -2000.0, 7.0, np.inf, 16.0]
    assert got[3] == [12, -7, 3] and got[4] == [123456789012]
    assert got[5:9] == [[b"ell", b"orl"], [b"ll", b"rl"], [b"he", b"rld"], ["él".encode()]]
    assert got[9:] == [[6, 0], [5, 0]]


def test_case_strip_regex_reduce_join_format():
    with tf.Graph().as_default():
        words = tf.constant([["a", "b"], ["c", "d"]])
        got = _run([
            tf.strings.lower(tf.constant(["HeLLo É"])),
            tf.strings.lower(tf.constant(["HeLLo É"]), encoding="utf-8"),
            tf.strings.upper(tf.constant(["héllo"])),
            tf.strings.strip(tf.constant(["  a b \t\n", "x"])),
            tf.string_strip(tf.constant([" q "])),
            tf.regex_replace(tf.constant(["aaa bbb", "abab"]), "a+", "X"),
            tf.strings.regex_replace(tf.constant(["aaa bbb", "abab"]), "a", "X",
                                     replace_global=False),
            tf.strings.regex_full_match(tf.constant(["abc", "abcd"]), "a.c"),
            tf.reduce_join(words),
            tf.reduce_join(words, axis=0, separator="-"),
            tf.strings.reduce_join(words, axis=1, keepdims=True),
            tf.reduce_join(words, -1),
            tf.strings.format("x={} y={}", [tf.constant([1, 2, 3, 4, 5]), tf.constant(2.5)]),
            tf.strings.format("m: {}", tf.constant([[1.5, 2.0], [3.0, 4.25]]), summarize=1),
            tf.strings.format("{} | {} | {}", [tf.constant("a"), tf.constant([["x", "y"]]),
                                               tf.constant(list(range(10)))]),
        ])  # fmt: skip
        with pytest.raises(ValueError, match="The template expects 2 tensors, but the inputs "
                           "only has 1"):  # fmt: skip
            tf.strings.format("{} {}", [tf.constant(1)])
    assert got[:5] == [["hello É".encode()], ["hello é".encode()], ["HéLLO".encode()],
                       [b"a b", b"x"], [b"q"]]  # fmt: skip
    assert got[5:8] == [[b"X bbb", b"XbXb"], [b"Xaa bbb", b"Xbab"], [True, False]]
    assert got[8:12] == [b"abcd", [b"a-c", b"b-d"], [[b"ab"], [b"cd"]], [b"ab", b"cd"]]
    assert got[12:] == [b"x=[1 2 3 4 5] y=2.5", b"m: [[1.5 2]\n [3 4.25]]",
                        b'"a" | [["x" "y"]] | [0 1 2 ... 7 8 9]']  # fmt: skip


def test_names_and_placement():
    assert tf.strings.join is tf.string_join and tf.strings.strip is tf.string_strip
    assert tf.dtypes.double is tf.float64 and tf.dtypes.half is tf.float16
    assert tf.dtypes.bool is tf.bool and tf.dtypes.saturate_cast is tf.saturate_cast
    with tf.Graph().as_default():
        s = tf.as_string(tf.constant([1.0, 2.0]))
        n = tf.strings.to_number(s)
        assert (s.dtype, n.dtype, n.shape) == (tf.string, tf.float32, (2,))
        with pytest.raises(TypeError, match="expects a string tensor"):
            tf.strings.length(tf.constant([1]))
    assert dg.framework.op_registry.lookup("StringJoin").device_types({dg.string}) == ("CPU",)
