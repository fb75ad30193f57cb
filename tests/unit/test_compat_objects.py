"""TF1's methods on sessions, graphs, tensors, variables and dtypes that programs and
TensorFlow's own tests call: ``make_callable``, ``graph_def``, ``set_shape``, ``load``,
``initialized_value``, feeding and fetching rules, ``gradient_override_map``, dtype
comparisons."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

import daskgraph.compat.v1 as tf


@pytest.fixture(autouse=True)
def _fresh_graph():
    tf.reset_default_graph()
    yield
    tf.reset_default_graph()


def test_make_callable_runs_with_positional_feeds():
    x = tf.placeholder(tf.float32, [None])
    y = tf.placeholder(tf.float32, [])
    with tf.Session() as sess:
        f = sess.make_callable([tf.reduce_sum(x) * y, x + 1.0], [x, y])
        total, plus = f(np.array([1.0, 2.0]), 3.0)
        assert total == 9.0 and plus.tolist() == [2.0, 3.0]
        assert sess.make_callable(tf.constant(4))() == 4
        with pytest.raises(TypeError, match="takes 2 positional"):
            f(np.array([1.0]))
        with pytest.raises(TypeError, match="accept_options"):
            f(np.array([1.0]), 1.0, options=tf.RunOptions())
        g = sess.make_callable(x * 2.0, [x], accept_options=True)
        meta = tf.RunMetadata()
        assert g(np.array([1.0]), options=tf.RunOptions(), run_metadata=meta).tolist() == [2.0]


def test_graph_def_lists_nodes_with_inputs_and_devices():
    with tf.device("/cpu:0"):
        a = tf.constant(1.0, name="a")
    b = tf.add(a, a, name="b")
    with tf.Session() as sess:
        nodes = {n.name: n for n in sess.graph_def.node}
        assert sess.sess_str == ""
    assert nodes["a"].op == "Const" and nodes["a"].device == "/device:CPU:0"
    assert nodes["b"].input == ["a:0", "a:0"]
    assert len(tf.get_default_graph().as_graph_def(from_version=1).node) == 1
    assert b.op.get_attr("T") is tf.float32 and b.value_index == 0


def test_set_shape_refines_and_refuses_incompatible():
    x = tf.placeholder(tf.float32)
    x.set_shape([None, 3])
    assert x.shape.as_list() == [None, 3]
    x.set_shape([2, None])
    assert x.shape.as_list() == [2, 3]
    with pytest.raises(ValueError, match="not compatible"):
        x.set_shape([2, 4])


def test_variable_load_and_initialized_value():
    w = tf.Variable(2.0, name="w")
    w2 = tf.Variable(w.initialized_value() * 3.0, name="w2")
    with tf.Session() as sess:
        sess.run(w2.initializer)  # w not initialized: its initial value is used
        assert sess.run(w2) == 6.0
        w.load(5.0, sess)
        assert sess.run(w) == 5.0
        assert sess.run(w.initialized_value()) == 5.0
        with sess.as_default():
            w.load(7.0)
            assert w.eval() == 7.0


def test_prevent_feeding_and_fetching():
    g = tf.get_default_graph()
    x = tf.constant(1.0)
    y = x + 1.0
    g.prevent_feeding(x)
    g.prevent_fetching(y.op)
    assert not g.is_feedable(x) and not g.is_fetchable(y) and g.is_fetchable(x)
    with tf.Session() as sess:
        with pytest.raises(ValueError, match="may not be fed"):
            sess.run(y * 2.0, {x: 3.0})
        with pytest.raises(ValueError, match="marked as not fetchable"):
            sess.run(y)
        assert sess.run(y * 2.0) == 4.0


def test_gradient_override_map_uses_the_named_gradient():
    @tf.RegisterGradient("TimesTen")
    def _times_ten(op, grad):
        return [grad * 10.0]

    x = tf.constant(3.0)
    g = tf.get_default_graph()
    with g.gradient_override_map({"Identity": "TimesTen"}):
        y = tf.identity(x)
    z = tf.identity(x)
    with tf.name_scope("outer"):
        assert g.get_name_scope() == "outer"
    with tf.Session() as sess:
        assert sess.run(tf.gradients(y, x)[0]) == 10.0
        assert sess.run(tf.gradients(z, x)[0]) == 1.0
    with pytest.raises(TypeError, match="gradient_override_map"):
        with g.gradient_override_map({"Identity": 3}):
            pass


def test_dtype_properties_and_comparisons():
    assert tf.float32 == np.float32 and tf.float32 == "float32" and tf.float32 != tf.float64
    assert tf.float32.base_dtype is tf.float32 and tf.int32.as_datatype_enum == 3
    assert tf.uint8.is_unsigned and tf.bool.is_bool and not tf.float32.is_complex
    assert (tf.int8.min, tf.int8.max, tf.int16.size) == (-128, 127, 2)
    assert {tf.float32: "f"}[tf.float32] == "f"
    with pytest.raises(TypeError, match="minimum/maximum"):
        _ = tf.string.min


def test_errors_stand_for_the_graph_operation():
    a = tf.placeholder(tf.float32, name="needs_feed")
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError) as info:
            sess.run(a * 2.0)
    err = info.value
    assert err.op == a.op and err.op == "needs_feed" and err.op.type == "Placeholder"
    assert err.node_def.name == "needs_feed"
    assert pickle.loads(pickle.dumps(err)).op == "needs_feed"


def test_attrs_classes_are_fetched_field_by_field():
    attr = pytest.importorskip("attr")

    @attr.s
    class Pair:
        first = attr.ib()
        second = attr.ib()

    x = tf.placeholder_with_default(1.0, [])
    pair = Pair(x, Pair(x * 2.0, [x + 1.0]))
    with tf.Session() as sess:
        got = sess.run(pair, {x: 3.0})
    assert isinstance(got, Pair) and isinstance(got.second, Pair)
    assert (got.first, got.second.first, got.second.second) == (3.0, 6.0, [4.0])


def test_read_value_under_control_dependencies_reads_after_them():
    v = tf.get_variable("v", shape=(), initializer=tf.zeros_initializer())
    assignment = v.assign_add(1.0)
    with tf.control_dependencies([assignment]):
        w = v.read_value()
    with tf.Session() as sess:
        sess.run(v.initializer)
        assert sess.run(w) == 1.0 and sess.run(w) == 2.0
        assert sess.run(v.value()) == 2.0  # the plain read has no dependency


def test_sessions_on_a_server_share_variables_as_tensorflows():
    server = tf.train.Server.create_local_server()
    v = tf.Variable(1.0, name="shared_v")
    with tf.Session(server.target) as first:
        first.run(v.initializer)
        first.run(v.assign_add(2.0))
    with tf.Session(server.target) as second:
        assert second.run(v) == 3.0  # the server keeps it after the first session closed
    other = tf.Graph()
    with other.as_default():
        same_name = tf.Variable(0.0, name="shared_v")
        with tf.Session(server.target) as third:
            assert third.run(same_name) == 3.0  # shared by name, as in TensorFlow
    isolated = tf.ConfigProto(isolate_session_state=True)
    with tf.Session(server.target, config=isolated) as own:
        with pytest.raises(tf.errors.FailedPreconditionError, match="uninitialized value"):
            own.run(v)
    with tf.Session() as local:  # a local session's variables are its own
        with pytest.raises(tf.errors.FailedPreconditionError):
            local.run(v)
    tf.Session.reset(server.target)
    with tf.Session(server.target) as after:
        with pytest.raises(tf.errors.FailedPreconditionError):
            after.run(v)


def test_variable_tf1_conveniences():
    v = tf.Variable(lambda: tf.constant([1.0, 5.0]), dtype=tf.float32)
    below = v < 3.0
    with tf.Session() as sess:
        sess.run(v.initializer)
        assert sess.run(below).tolist() == [True, False]
        assert sess.run(v[1]) == 5.0 and sess.run(v**2).tolist() == [1.0, 25.0]
    g = tf.Graph()
    g.add_to_collections(["a", "b"], 1)
    assert g.get_collection("a") == g.get_collection("b") == [1]
    with pytest.raises(ValueError, match="same saveable will be restored with two names"):
        tf.train.Saver({"v0": v, "v0too": v})


def test_variable_scope_regularizer_and_tf1_arguments():
    def penalty(w):
        return 0.5 * tf.reduce_sum(w)

    with tf.variable_scope("m", regularizer=penalty, caching_device="/cpu:0"):
        tf.get_variable("w", [2], initializer=tf.ones_initializer())
        with tf.variable_scope("inner"):
            tf.get_variable("u", [3], initializer=tf.ones_initializer())
    losses = tf.get_collection(tf.GraphKeys.REGULARIZATION_LOSSES)
    assert [t.op.name for t in losses] == ["m/w/Regularizer/mul", "m/inner/u/Regularizer/mul"]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        assert sess.run(tf.add_n(losses)) == 2.5
    with pytest.raises(ValueError, match="partitioner"):
        with tf.variable_scope("p", partitioner=object()):
            pass


def test_control_dependencies_as_tensorflow_applies_them():
    c = tf.constant(1.0)
    with tf.control_dependencies([c]):
        d = tf.constant(2.0)
        e = tf.identity(d)  # dominated: d already runs after c
        x = tf.Variable(2.0)  # a variable's ops depend on nothing (TF1's init_scope)
        initialized = x.initialized_value()
    assert d.op.control_inputs == [c.op] and e.op.control_inputs == []
    assert x.initializer.control_inputs == [] and x.value().op.control_inputs == []
    assert initialized.op.control_inputs == []
    with tf.device("/cpu:0"):
        v = tf.Variable(lambda: tf.constant(42.0), dtype=tf.float32, name="v1")
    assert v.op.colocation_groups() == [b"loc:@v1"]
    assert all(i.op.colocation_groups() == [b"loc:@v1"] for i in v.initializer.inputs)


def test_assign_to_a_shared_variable_of_another_shape_is_refused():
    server = tf.train.Server.create_local_server()
    with tf.Graph().as_default():
        vector = tf.Variable([1, 2, 3], name="w_shape")
        with tf.Session(server.target) as sess:
            sess.run(vector.initializer)
    with tf.Graph().as_default():
        scalar = tf.Variable(86, name="w_shape")
        with tf.Session(server.target) as sess:
            with pytest.raises(tf.errors.InvalidArgumentError, match="lhs shape= \\[3\\]"):
                sess.run(scalar.initializer)
    tf.Session.reset(server.target)


def test_variable_count_up_to_method():
    v = tf.Variable(0, name="counter")
    step = v.count_up_to(2)
    with tf.Session() as sess:
        sess.run(v.initializer)
        assert [sess.run(step), sess.run(step)] == [0, 1]
        with pytest.raises(tf.errors.OutOfRangeError, match="Reached limit of 2"):
            sess.run(step)


def test_entering_a_session_makes_its_graph_the_default_and_bytes_names_work():
    graph = tf.Graph()
    with tf.Session(graph=graph) as sess:
        assert tf.get_default_graph() is graph
        tf.constant(3.0, name="scale")
        with tf.name_scope(b"block"):
            inner = tf.constant(1.0, name="d")
        assert sess.run(b"scale:0") == 3.0 and inner.op.name == "block/d"
    assert tf.get_default_graph() is not graph


def test_replica_device_setter_takes_a_cluster_def():
    cluster = tf.train.ClusterSpec({"ps": ["ps0:2222"], "worker": ["w0:2222"]})
    with tf.device(tf.train.replica_device_setter(cluster=cluster.as_cluster_def())):
        v = tf.Variable(1.0)
        w = v * 2.0
    assert (v.device, w.device) == ("/job:ps/task:0", "/job:worker")
