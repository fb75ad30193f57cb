"""``case`` and ``switch_case`` (ops/branching.py) through ``compat.v1``: the values, checks and
errors TensorFlow 2.21 gives for the same program, and gradients through the taken branch."""

from __future__ import annotations

import pytest

import daskgraph.compat.v1 as tf


def test_case_and_switch_case_as_tensorflow():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.int32, [])
        y = tf.constant(10.0)
        c1 = tf.case([(tf.less(x, 0), lambda: y * -1.0), (tf.equal(x, 0), lambda: y * 0.0)],
                     default=lambda: y * 2.0)  # fmt: skip
        c2 = tf.case([(tf.less(x, 0), lambda: y * -1.0), (tf.less(x, 5), lambda: y * 3.0)])
        c3 = tf.case([(tf.less(x, 3), lambda: y + 1.0), (tf.less(x, 5), lambda: y + 2.0)],
                     default=lambda: y, exclusive=True)  # fmt: skip
        c4 = tf.case([(tf.less(x, 0), lambda: (y, y * 2.0))], default=lambda: (y * 3.0, y * 4.0))
        s1 = tf.switch_case(x, [lambda: y, lambda: y * 2.0, lambda: y * 3.0])
        s2 = tf.switch_case(x, {0: lambda: y, 1: lambda: y * 2.0}, default=lambda: y * -1.0)
        (g,) = tf.gradients(c1, y)
        (gs,) = tf.gradients(s1, y)
        assert c1.name == "case/cond/Merge:0"  # TF 2.21's name too
        got = {}
        with tf.Session() as sess:
            for v in (-2, 0, 3, 7):
                got[v] = [float(t) for t in sess.run([c1, s1, s2, g, gs], {x: v})]
                got[v].append([float(t) for t in sess.run(c4, {x: v})])
            assert float(sess.run(c2, {x: 3})) == 30.0 and float(sess.run(c3, {x: 3})) == 12.0
            assert float(sess.run(c3, {x: 7})) == 10.0
            none = r"assertion failed: \[Input error: None of conditions evaluated as True:\] \[0 0"
            with pytest.raises(tf.errors.InvalidArgumentError, match=none):
                sess.run(c2, {x: 7})
            two = r"exclusive=True: more than 1 conditions \(Less_\d+:0, Less_\d+:0\) evaluated"
            with pytest.raises(tf.errors.InvalidArgumentError, match=two + r" as True:\] \[1 1\]"):
                sess.run(c3, {x: 0})
    # TF 2.21, for x = -2, 0, 3, 7: c1, s1, s2, dc1/dy, ds1/dy, c4
    assert got[-2] == [-10.0, 30.0, -10.0, -1.0, 3.0, [10.0, 20.0]]
    assert got[0] == [0.0, 10.0, 10.0, 0.0, 1.0, [30.0, 40.0]]
    assert got[3] == [20.0, 30.0, -10.0, 2.0, 3.0, [30.0, 40.0]]
    assert got[7] == [20.0, 30.0, -10.0, 2.0, 3.0, [30.0, 40.0]]


def test_bad_arguments_in_tensorflows_words():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.int32, [])
        y = tf.constant(10.0)
        with pytest.raises(TypeError, match="pred must be Tensor of type bool: Placeholder:0"):
            tf.case([(x, lambda: y)])
        with pytest.raises(TypeError, match=r"fn for pred Less(_\d+)?:0 must be callable\."):
            tf.case([(tf.less(x, 0), 3)])
        with pytest.raises(TypeError, match="'pred_fn_pairs' must be a list, tuple, or dict"):
            tf.case(5)
        with pytest.raises(TypeError, match="Each entry in 'pred_fn_pairs' must be a 2-tuple"):
            tf.case([tf.less(x, 0)])
        with pytest.raises(ValueError, match=r"must form contiguous range of \[0 to 2\) but "
                           r"found \{0,2\}"):  # fmt: skip
            tf.switch_case(x, {0: lambda: y, 2: lambda: y})
        with pytest.raises(TypeError, match="'branch_index' must be a Tensor"):
            tf.switch_case(1, [lambda: y])
        with pytest.raises(TypeError, match="'branch_index' must be an integer Tensor"):
            tf.switch_case(tf.constant(1.0), [lambda: y])
        with pytest.raises(ValueError, match="Must provide at least one item in 'branch_fns'"):
            tf.switch_case(x, [])
