"""Sessions and tensors under ``import daskgraph.compat.v1 as tf``, as TensorFlow 1 has them.

Expected values and messages are what TensorFlow 2.21's ``tf.compat.v1`` (graph mode) gives,
written here as literals.
"""

from __future__ import annotations

import numpy as np
import pytest

import daskgraph as dg
import daskgraph.compat.v1 as tf
from daskgraph.framework.tensor_shape import Dimension, TensorShape

EVAL_WITHOUT_SESSION = (
    "Cannot evaluate tensor using `eval()`: No default session is registered. Use "
    "`with sess.as_default()` or pass an explicit session to `eval(session=sess)`"
)
RUN_WITHOUT_SESSION = (
    "Cannot execute operation using `run()`: No default session is registered. Use "
    "`with sess.as_default():` or pass an explicit session to `run(session=sess)`"
)


# -- default sessions ----------------------------------------------------------------------------
def test_eval_and_run_without_a_session_raise_tensorflows_words() -> None:
    with tf.Graph().as_default():
        c = tf.constant(1.0)
        v = tf.Variable(2.0)
    for call, message in ((c.eval, EVAL_WITHOUT_SESSION), (c.op.run, RUN_WITHOUT_SESSION)):
        with pytest.raises(ValueError) as info:
            call()
        assert str(info.value) == message
    with pytest.raises(ValueError) as info:
        v.eval()
    assert str(info.value) == EVAL_WITHOUT_SESSION


def test_get_default_session_is_none_without_one() -> None:
    assert tf.get_default_session() is None
    with pytest.raises(ValueError, match="No default session"):
        dg.get_default_session()  # the native one still raises


def test_interactive_session_is_the_default_until_closed() -> None:
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [2])
        y = x * 3.0
        v = tf.Variable([1.0, 2.0])
        sess = tf.InteractiveSession()
        try:
            assert tf.get_default_session() is sess
            assert isinstance(sess, tf.Session)
            tf.global_variables_initializer().run()
            np.testing.assert_array_equal(y.eval(feed_dict={x: [1.0, 2.0]}), [3.0, 6.0])
            np.testing.assert_array_equal(v.eval(), [1.0, 2.0])
            tf.assign_add(v, [1.0, 1.0]).op.run()
            np.testing.assert_array_equal(v.eval(), [2.0, 3.0])
        finally:
            sess.close()
        assert tf.get_default_session() is None
        assert sess.closed
        sess.close()  # twice is fine


def test_with_session_and_as_default_are_the_default() -> None:
    with tf.Graph().as_default():
        c = tf.constant([1, 2])
        with tf.Session() as sess:
            assert tf.get_default_session() is sess
            np.testing.assert_array_equal(c.eval(), [1, 2])
        assert tf.get_default_session() is None
        sess = tf.Session()
        try:
            with sess.as_default():
                assert tf.get_default_session() is sess
                assert c.eval(session=sess).tolist() == [1, 2]
        finally:
            sess.close()


# -- devices ------------------------------------------------------------------------------------
def test_list_devices_gives_tensorflows_device_attributes() -> None:
    with tf.Graph().as_default(), tf.Session() as sess:
        devices = sess.list_devices()
    cpu = devices[0]
    assert cpu.name == "/job:localhost/replica:0/task:0/device:CPU:0"
    assert cpu.device_type == "CPU"
    assert isinstance(cpu.memory_limit_bytes, int) and cpu.memory_limit_bytes >= 0
    assert isinstance(cpu.incarnation, int) and cpu.incarnation == devices[0].incarnation
    assert all(d.device_type in ("CPU", "GPU") for d in devices)


# -- tensors and operations ---------------------------------------------------------------------
def test_tensor_and_operation_attributes() -> None:
    with tf.Graph().as_default() as g:
        with tf.device("/cpu:0"):
            c = tf.constant([[1.0, 2.0]], name="c")
        d = tf.add(c, 1.0, name="d")
        with tf.control_dependencies([d.op]):
            e = tf.identity(c, name="e")
        with tf.colocate_with(c):
            f = tf.identity(d, name="f")
    assert c.op.type == "Const" and c.op.name == "c" and c.name == "c:0"
    assert c.graph is g and c.op.graph is g
    assert c.device == "/device:CPU:0"
    assert [op.name for op in c.consumers()] == ["d", "e"]
    assert d.consumers() == [f.op]
    assert f.consumers() == []
    assert d.op.inputs[0] is c and len(d.op.inputs) == 2
    assert d.op.outputs == [d] and d.op.values() == (d,)
    assert list(e.op.control_inputs) == [d.op]
    assert c.op.colocation_groups() == [b"loc:@c"]
    assert f.op.colocation_groups() == [b"loc:@c"]
    assert c.op.get_attr("dtype") is tf.float32
    np.testing.assert_array_equal(c.op.get_attr("value"), [[1.0, 2.0]])
    assert e.op.node_def.name == "e" and e.op.node_def.op == "Identity"
    assert e.op.node_def.input == ["c:0", "^d"]


def test_get_attr_of_a_missing_attr_is_tensorflows_value_error() -> None:
    with tf.Graph().as_default():
        c = tf.constant(1.0, name="c")
    with pytest.raises(ValueError) as info:
        c.op.get_attr("nope")
    assert str(info.value) == "Operation 'c' has no attr named 'nope'."


def test_graph_finalize_and_reset_default_graph() -> None:
    g = tf.Graph()
    with g.as_default():
        tf.constant(1.0)
    g.finalize()
    assert g.finalized
    with g.as_default(), pytest.raises(RuntimeError, match="finalized"):
        tf.constant(2.0)
    tf.reset_default_graph()
    assert tf.get_default_graph().get_operations() == []


def test_run_options_and_metadata_take_tf1_fields() -> None:
    options = tf.RunOptions(
        trace_level=tf.RunOptions.FULL_TRACE, report_tensor_allocations_upon_oom=True
    )
    metadata = tf.RunMetadata()
    assert options.report_tensor_allocations_upon_oom is True
    assert tf.RunOptions().trace_level == 0 and tf.RunOptions.FULL_TRACE == 3
    with pytest.raises(ValueError, match='Protocol message RunOptions has no "foo" field'):
        tf.RunOptions(foo=1)
    with tf.Graph().as_default():
        c = tf.constant(2.0, name="two") * 3.0
        with tf.Session() as sess:
            assert sess.run(c, options=options, run_metadata=metadata) == 6.0
    assert metadata.partition_graphs == []
    assert any(
        node.node_name == "two" for dev in metadata.step_stats.dev_stats for node in dev.node_stats
    )


# -- shapes -------------------------------------------------------------------------------------
def test_tensor_shape_is_tensorflow_2s_indexing_to_ints() -> None:
    with tf.Graph().as_default():
        p = tf.placeholder(tf.float32, [None, 3])
        u = tf.placeholder(tf.float32)
    shape = p.shape
    assert isinstance(shape, tf.TensorShape)
    assert shape[0] is None and shape[1] == 3 and isinstance(shape[1], int)
    assert shape[1].value == 3  # TF1 programs read .value; the int has it too
    assert list(shape) == [None, 3]
    assert shape == [None, 3] and shape == (None, 3) and shape != [2, 3]
    assert shape.as_list() == [None, 3]
    assert (shape.ndims, shape.rank, len(shape)) == (2, 2, 2)
    assert str(shape) == "(None, 3)"
    assert shape[1:] == (3,) and isinstance(shape[1:], tf.TensorShape)
    assert not shape.is_fully_defined()
    assert u.shape is None  # unknown rank: get_shape() gives TensorShape(None)
    assert repr(p) == "<Tensor 'Placeholder:0' shape=(None, 3) dtype=float32>"


def test_get_shape_is_tensorflow_1s_with_dimensions() -> None:
    with tf.Graph().as_default():
        p = tf.placeholder(tf.float32, [None, 3])
        u = tf.placeholder(tf.float32)
        v = tf.Variable(tf.zeros([2, 5]))
    shape = p.get_shape()
    assert repr(shape) == "TensorShape([None, 3])" and str(shape) == "(?, 3)"
    assert repr(shape[0]) == "Dimension(None)" and shape[0].value is None
    assert shape[1].value == 3 and shape[1] == 3 and int(shape[1]) == 3
    assert [d.value for d in shape] == [None, 3]
    assert all(isinstance(d, tf.Dimension) for d in shape)
    assert shape.dims[1].value == 3
    assert shape == [None, 3] and shape == p.shape
    assert v.get_shape().as_list() == [2, 5] and v.shape == (2, 5)
    unknown = u.get_shape()
    assert unknown.ndims is None and repr(unknown) == "TensorShape(None)"
    assert str(unknown) == "<unknown>"
    with pytest.raises(ValueError, match=r"^as_list\(\) is not defined on an unknown TensorShape"):
        unknown.as_list()
    with pytest.raises(ValueError, match=r"^Cannot take the length of shape with unknown rank\."):
        len(unknown)
    with pytest.raises(ValueError, match=r"^Cannot iterate over a shape with unknown rank\."):
        iter(unknown)


def test_tensor_shape_methods_match_tensorflow() -> None:
    s = tf.TensorShape([None, 3])
    assert s.merge_with([2, None]).as_list() == [2, 3]
    with pytest.raises(ValueError) as info:
        s.merge_with([2, 4])
    assert str(info.value) == "Shapes (?, 3) and (2, 4) are not compatible"
    assert tf.TensorShape([2, 3]).num_elements() == 6 and s.num_elements() is None
    assert tf.TensorShape([2, None]).is_compatible_with([2, 5])
    assert not tf.TensorShape([2, None]).is_compatible_with([3, 5])
    assert tf.TensorShape([1]).concatenate([2]) == [1, 2]
    assert tf.TensorShape(None).merge_with([4]) == [4]
    assert tf.TensorShape(3) == [3]
    assert tf.TensorShape([tf.Dimension(2), None]) == (2, None)
    with pytest.raises(ValueError, match="Shape \\(\\?,\\) is not fully defined"):
        tf.TensorShape([None]).assert_is_fully_defined()
    assert tf.TensorShape([1, 2]).with_rank(2) == [1, 2]
    assert tf.TensorShape(None) == tf.TensorShape(None) and tf.TensorShape(None) != []


def test_dimension_matches_tensorflow() -> None:
    d, unknown = tf.Dimension(3), tf.Dimension(None)
    assert (d == 3, unknown == 3, d != 4) == (True, None, True)
    assert (d + 1).value == 4 and (unknown * d).value is None and (2 * d).value == 6
    assert (str(d), str(unknown), repr(unknown)) == ("3", "?", "Dimension(None)")
    assert d.merge_with(None).value == 3 and unknown.is_compatible_with(4)
    assert (tf.dimension_value(d), tf.dimension_value(5), tf.dimension_value(None)) == (3, 5, None)
    with pytest.raises(TypeError, match="non-int"):
        int(unknown)
    with pytest.raises(TypeError, match="unhashable"):
        hash(d)
    with pytest.raises(ValueError, match="Dimension -1 must be >= 0"):
        tf.Dimension(-1)


def test_tf1_shapes_feed_back_into_ops() -> None:
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, 4])
        y = tf.placeholder(tf.float32, x.get_shape())  # Dimensions, one unknown
        z = tf.zeros(x.get_shape()[1:])
        w = tf.get_variable("w", shape=x.get_shape()[1:], initializer=tf.zeros_initializer())
        u = tf.placeholder(tf.float32, tf.TensorShape(None))
        r = tf.reshape(z, tf.TensorShape([2, 2]))
    assert y.shape == (None, 4) and z.shape == (4,) and w.shape == (4,)
    assert u.shape is None and r.shape == (2, 2)


def test_shapes_pickle_and_copy_as_themselves() -> None:
    import copy
    import pickle

    for shape in (tf.TensorShape([None, 2]), TensorShape([1], v1=False), tf.TensorShape(None)):
        back = pickle.loads(pickle.dumps(shape))
        assert back == shape and repr(back) == repr(shape) and type(back) is TensorShape
        assert copy.deepcopy(shape) is shape
    assert isinstance(Dimension(1), tf.Dimension)
