"""TF1's framework, variable and gradient names in ``compat.v1`` (``tables_initializer``,
``assert_variables_initialized``, ``count_up_to``, ``init_scope``, ``unconnected_gradients``,
...), with the values and names TensorFlow 2.21 gives for the same programs."""

from __future__ import annotations

import numpy as np
import pytest

import daskgraph as dg
import daskgraph.compat.v1 as tf


def test_names_are_daskgraphs_objects():
    assert tf.OpError is dg.errors.OpError and tf.double is tf.float64 and tf.half is tf.float16
    assert tf.GraphDef is dg.framework.nodes.GraphDef and tf.NodeDef is dg.framework.nodes.NodeDef
    assert tf.initialize_all_tables is tf.tables_initializer
    # TF 2.21: ADD_N 0, DEFAULT 0, EXPERIMENTAL_TREE 1, EXPERIMENTAL_ACCUMULATE_N 2
    assert (tf.AggregationMethod.ADD_N, tf.AggregationMethod.DEFAULT) == (0, 0)
    assert tf.AggregationMethod.EXPERIMENTAL_TREE == 1
    assert tf.UnconnectedGradients.ZERO.value == "zero" and tf.VariableAggregation.SUM.value == 1
    assert tf.VariableSynchronization.ON_READ.value == 3


def test_variable_helpers():
    with tf.Graph().as_default():
        v = tf.Variable([1.0, 2.0], name="v", synchronization=tf.VariableSynchronization.AUTO,
                        aggregation=tf.VariableAggregation.MEAN)  # fmt: skip
        tf.Variable(3, name="w")
        tables = tf.tables_initializer()
        init = tf.initialize_variables([v])
        check, check_v = tf.assert_variables_initialized(), tf.assert_variables_initialized([v])
        assert [x.name for x in tf.all_variables()] == ["v:0", "w:0"]
        assert (tables.name, tables.type, init.name, init.type) == (
            "init_all_tables",
            "NoOp",
            "init",
            "NoOp",
        )  # TF 2.21's
        assert (check.shape, check.dtype, check_v.shape) == ((2,), tf.int32, ())
        assert tf.no_regularizer(v) is None
        with tf.Session() as sess:
            sess.run(tables)
            with pytest.raises(tf.errors.FailedPreconditionError, match="uninitialized"):
                sess.run(check)
            sess.run(tf.global_variables_initializer())
            ranks, rank_v = sess.run([check, check_v])
    assert ranks.tolist() == [1, 0] and rank_v == 1  # TF 2.21: [1 0] 1
    with tf.Graph().as_default():
        assert tf.assert_variables_initialized() is None
    with pytest.raises(ValueError, match="constraint"):
        tf.Variable(1.0, constraint=lambda x: x)


def test_count_up_to_stops_at_its_limit():
    with tf.Graph().as_default():
        v = tf.Variable(0, name="c")
        c = tf.count_up_to(v, 3)
        assert (c.name, c.op.type, c.dtype, c.shape) == ("CountUpTo:0", "CountUpTo", tf.int32, ())
        with tf.Session() as sess:
            sess.run(v.initializer)
            assert [int(sess.run(c)) for _ in range(3)] == [0, 1, 2]
            with pytest.raises(tf.errors.OutOfRangeError, match="Reached limit of 3"):
                sess.run(c)
            assert int(sess.run(v)) == 3
        with pytest.raises(TypeError, match="not in list of allowed values: int32, int64"):
            tf.count_up_to(tf.Variable(0.0), 3)


def test_tensor_and_shape_helpers():
    with tf.Graph().as_default():
        v = tf.Variable(1.0)
        checks = [
            tf.is_numeric_tensor(tf.constant(1.0)),
            tf.is_numeric_tensor(tf.constant(True)),
            tf.is_numeric_tensor(tf.constant("a")),
            tf.is_numeric_tensor(v),
            tf.is_numeric_tensor(1.0),
            tf.is_numeric_tensor(v.value()),
        ]
        assert checks == [True, False, False, False, False, True]  # TF 2.21's
        assert tf.convert_to_tensor_or_indexed_slices([1, 2]).dtype == tf.int32
    shape = tf.TensorShape([2, None])
    assert repr(tf.dimension_at_index(shape, 0)) == "Dimension(2)"
    assert repr(tf.dimension_at_index(shape, 1)) == "Dimension(None)"
    assert repr(tf.dimension_at_index(tf.TensorShape(None), 5)) == "Dimension(None)"
    with pytest.raises(IndexError):
        tf.dimension_at_index(tf.TensorShape([2]), 3)


def test_init_scope_clears_control_dependencies_and_keeps_the_name_scope():
    with tf.Graph().as_default():
        x = tf.constant(1.0)
        with tf.control_dependencies([x.op]), tf.name_scope("ns"):
            with tf.init_scope():
                y = tf.constant(2.0, name="y")
            z = tf.constant(3.0, name="z")
        with tf.container("box") as box:
            tf.constant(1)
    # TF 2.21: ns/y:0 [] ['Const']
    assert (y.name, list(y.op.control_inputs), [c.name for c in z.op.control_inputs]) == (
        "ns/y:0",
        [],
        ["Const"],
    )
    assert box == "box"


def test_unconnected_gradients():
    with tf.Graph().as_default():
        v = tf.Variable([1.0, 2.0])
        w = tf.Variable(3)
        u = tf.placeholder(tf.float32, [2, 3])
        loss = tf.reduce_sum(v)
        g = tf.gradients(loss, [v, u, w], unconnected_gradients="zero")
        assert (g[1].op.type, g[1].shape, g[2].dtype, g[2].shape) == (
            "ZerosLike",
            (2, 3),
            tf.int32,
            (),
        )  # TF 2.21: zeros_like (2, 3) int32 ()
        none = tf.gradients(loss, [u], unconnected_gradients=tf.UnconnectedGradients.NONE)
        assert none == [None]
        with pytest.raises(ValueError, match="Unknown value for unconnected_gradients: 'bogus'"):
            tf.gradients(loss, [u], unconnected_gradients="bogus")
        same = tf.gradients(
            loss, v, gate_gradients=True, aggregation_method=tf.AggregationMethod.ADD_N
        )
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            values = sess.run([g[0], g[1], g[2], same[0]], {u: np.ones((2, 3))})
    assert values[0].tolist() == [1.0, 1.0] and values[1].tolist() == [[0.0] * 3] * 2
    assert values[2] == 0 and values[3].tolist() == [1.0, 1.0]
