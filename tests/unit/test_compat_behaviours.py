"""TensorFlow 1's exact behaviours under ``import daskgraph.compat.v1 as tf``: strings as bytes,
``ConfigProto`` and its messages, the mutable ``DeviceSpec``, feeds of any tensor, and
TensorFlow's words for names that are not in the graph. Expected values are what TensorFlow
2.21's ``tf.compat.v1`` gives, as literals."""

from __future__ import annotations

import numpy as np
import pytest

import daskgraph as dg
import daskgraph.compat.v1 as tf
from daskgraph.errors import GraphMismatchError


@pytest.fixture
def sess():
    with tf.Graph().as_default(), tf.Session() as session:
        yield session


# -- strings ------------------------------------------------------------------------------------
def test_strings_fetch_as_bytes(sess) -> None:
    s = tf.constant("hi")
    a = tf.constant(["a", "bc"])
    u = tf.constant("é")
    p = tf.placeholder(tf.string, [2])
    assert sess.run(s) == b"hi" and type(sess.run(s)) is bytes
    result = sess.run(a)
    assert result.dtype == object and result.tolist() == [b"a", b"bc"]
    assert sess.run(u) == "é".encode()
    assert sess.run(p, feed_dict={p: ["x", b"y"]}).tolist() == [b"x", b"y"]
    assert sess.run(tf.equal(p, a), feed_dict={p: ["a", b"b"]}).tolist() == [True, False]


def test_fetching_a_fed_string_gives_bytes(sess) -> None:
    s = tf.constant("hi")
    assert sess.run(s, feed_dict={s: "x"}) == b"x"


# -- feeds and fetches --------------------------------------------------------------------------
def test_any_tensor_can_be_fed(sess) -> None:
    c = tf.constant([[1.0, 2.0]])
    d = c + 1.0
    np.testing.assert_array_equal(sess.run(d, feed_dict={c: [[5.0, 6.0]]}), [[6.0, 7.0]])
    np.testing.assert_array_equal(sess.run(d), [[2.0, 3.0]])


def test_names_not_in_the_graph_are_tensorflows_errors(sess) -> None:
    tf.constant(1.0, name="c")
    cases = {
        "nothere:0": 'Argument `fetch` = nothere:0 cannot be interpreted as a Tensor. ("The name '
        "'nothere:0' refers to a Tensor which does not exist. The operation, 'nothere', does "
        'not exist in the graph.")',
        "nothere": 'Argument `fetch` = nothere cannot be interpreted as a Tensor. ("The name '
        "'nothere' refers to an Operation not in the graph.\")",
        "c:3": "Argument `fetch` = c:3 cannot be interpreted as a Tensor. (\"The name 'c:3' "
        "refers to a Tensor which does not exist. The operation, 'c', exists but only has 1 "
        'outputs.")',
    }
    for name, message in cases.items():
        with pytest.raises(ValueError) as info:
            sess.run(name)
        assert str(info.value) == message
    with pytest.raises(TypeError) as info:
        sess.run("c:0", feed_dict={"nothere:0": 1.0})
    assert str(info.value) == (
        "Cannot interpret feed_dict key as Tensor: The name 'nothere:0' refers to a Tensor "
        "which does not exist. The operation, 'nothere', does not exist in the graph."
    )
    assert sess.run("c:0") == 1.0


def test_fetches_and_feeds_of_another_graph_are_tensorflows_value_error(sess) -> None:
    with tf.Graph().as_default():
        foreign = tf.placeholder(tf.float32, [], name="foreign")
        doubled = foreign * 2.0
    mine = tf.placeholder(tf.float32, [], name="mine")
    attempts = [
        (lambda: sess.run(doubled), {"tensor": "mul:0"}),
        (lambda: sess.run(doubled.op), {"operation": "mul"}),
        (lambda: sess.run(mine * 1.0, {foreign: 1.0, mine: 2.0}), {"tensor": "foreign:0"}),
    ]
    for attempt, fields in attempts:
        with pytest.raises(ValueError, match="is not an element of this graph") as info:
            attempt()
        assert isinstance(info.value, GraphMismatchError)
        assert not isinstance(info.value, tf.errors.OpError)
        assert info.value.fields == fields
    assert sess.run(mine * 1.0, {mine: 2.0}) == 2.0


# -- ConfigProto and its messages ---------------------------------------------------------------
def test_config_proto_takes_every_tf1_field() -> None:
    cfg = tf.ConfigProto(
        intra_op_parallelism_threads=2,
        inter_op_parallelism_threads=3,
        use_per_session_threads=True,
        device_count={"GPU": 0, "CPU": 1},
        gpu_options=tf.GPUOptions(
            visible_device_list="0",
            per_process_gpu_memory_fraction=0.5,
            allow_growth=True,
            allocator_type="BFC",
            force_gpu_compatible=True,
        ),
        allow_soft_placement=True,
        log_device_placement=False,
        operation_timeout_in_ms=60000,
        graph_options=tf.GraphOptions(
            optimizer_options=tf.OptimizerOptions(opt_level=tf.OptimizerOptions.L0),
            place_pruned_graph=True,
        ),
        isolate_session_state=True,
        device_filters=["/job:ps"],
    )
    assert isinstance(cfg, dg.SessionConfig)
    assert cfg.intra_op_parallelism_threads == 2 and cfg.inter_op_parallelism_threads == 3
    assert cfg.device_count == {"GPU": 0, "CPU": 1}
    assert cfg.gpu_options.allocator_type == "BFC" and cfg.gpu_options.allow_growth
    assert cfg.graph_options.optimizer_options.opt_level == -1
    assert cfg.isolate_session_state and cfg.device_filters == ["/job:ps"]
    assert cfg.validate() is cfg
    # the defaults of TF1's protocol buffers
    empty = tf.ConfigProto()
    assert empty.intra_op_parallelism_threads == 0 and empty.device_filters == []
    assert empty.gpu_options.visible_device_list == "" and not empty.gpu_options.allow_growth
    assert empty.graph_options.optimizer_options.opt_level == 0
    assert tf.ConfigProto().device_filters is not empty.device_filters  # not shared
    assert (tf.OptimizerOptions.L1, tf.OptimizerOptions.ON_1, tf.OptimizerOptions.OFF) == (0, 1, -1)


def test_config_proto_fields_are_settable_and_nested_dicts_accepted() -> None:
    cfg = tf.ConfigProto(gpu_options={"allow_growth": True})
    assert cfg.gpu_options.allow_growth and isinstance(cfg.gpu_options, tf.GPUOptions)
    cfg.gpu_options.per_process_gpu_memory_fraction = 0.3
    cfg.inter_op_parallelism_threads = 1
    cfg.graph_options.optimizer_options.global_jit_level = tf.OptimizerOptions.ON_1
    cfg.device_count["GPU"] = 0
    assert cfg.validate().device_count == {"GPU": 0}
    assert tf.GPUOptions(allow_growth=True) == dg.GPUOptions(allow_growth=True)
    assert tf.GPUOptions(allocator_type="BFC") != dg.GPUOptions()


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: tf.ConfigProto(foo=1), 'Protocol message ConfigProto has no "foo" field.'),
        (lambda: tf.GPUOptions(bar=2), 'Protocol message GPUOptions has no "bar" field.'),
        (lambda: tf.GraphOptions(x=1), 'Protocol message GraphOptions has no "x" field.'),
    ],
)
def test_unknown_fields_are_protobufs_value_error(make, message) -> None:
    with pytest.raises(ValueError) as info:
        make()
    assert str(info.value) == message


def test_config_proto_is_validated_when_a_session_starts() -> None:
    with pytest.raises(TypeError, match="log_device_placement must be a bool"):
        tf.Session(config=tf.ConfigProto(log_device_placement="x"))
    with pytest.raises(TypeError, match="intra_op_parallelism_threads must be an int"):
        tf.ConfigProto(intra_op_parallelism_threads="2").validate()


def test_a_session_honours_config_proto(capfd) -> None:
    with tf.Graph().as_default():
        with tf.device("/gpu:7"):
            c = tf.constant(2.0, name="c")
        config = tf.ConfigProto(
            allow_soft_placement=True, log_device_placement=True, inter_op_parallelism_threads=1
        )
        with tf.Session(config=config) as sess:
            assert sess.run(c * 2.0) == 4.0
    assert "c: (Const): /job:localhost/replica:0/task:0/device:" in capfd.readouterr().err


# -- DeviceSpec ---------------------------------------------------------------------------------
def test_device_spec_is_tf1s_mutable_class() -> None:
    spec = tf.DeviceSpec(job="ps", task=1, device_type="GPU", device_index=0)
    assert spec.to_string() == "/job:ps/task:1/device:GPU:0"
    assert repr(spec) == (
        "<DeviceSpec(job=ps, replica=None, task=1, device_type=GPU, device_index=0)>"
    )
    spec.job = "w"
    assert spec.to_string() == "/job:w/task:1/device:GPU:0"
    assert spec.parse_from_string("/task:3/device:CPU:*") is spec
    assert spec.to_string() == "/task:3/device:CPU:*"
    assert spec.merge_from(tf.DeviceSpec(replica=2)) is spec
    assert spec.to_string() == "/replica:2/task:3/device:CPU:*"
    assert spec == tf.DeviceSpec.from_string(spec.to_string())
    assert tf.DeviceSpec.from_string("/job:a/cpu:1").to_string() == "/job:a/device:CPU:1"
    assert tf.DeviceSpec(device_type="gpu", device_index=1).to_string() == "/device:GPU:1"
    with pytest.raises(ValueError):
        spec.task = -1
    assert spec.task == 3  # a refused value leaves the spec as it was


def test_native_device_spec_stays_immutable() -> None:
    native = dg.DeviceSpec(job="ps")
    with pytest.raises(AttributeError):
        native.job = "w"  # type: ignore[misc]


def test_tf_device_takes_the_mutable_spec_as_it_is_when_entered() -> None:
    spec = tf.DeviceSpec(device_type="CPU", device_index=0)
    with tf.Graph().as_default():
        with tf.device(spec):
            spec.device_type = "GPU"  # too late for this block
            a = tf.constant(1.0)
        with tf.device(spec):
            b = tf.constant(2.0)
        with tf.device(lambda op: tf.DeviceSpec(job="ps", device_type="CPU")):
            c = tf.constant(3.0)
    assert (a.device, b.device) == ("/device:CPU:0", "/device:GPU:0")
    assert c.device == "/job:ps/device:CPU:*"


# -- ClusterSpec and Server ---------------------------------------------------------------------
def test_cluster_spec_takes_any_address_and_a_server_refuses_a_bad_one() -> None:
    spec = tf.train.ClusterSpec({"worker": ["not an address"], "ps": ["localhost:1"]})
    assert spec.job_tasks("worker") == ["not an address"]
    with pytest.raises(tf.errors.InvalidArgumentError) as info:
        tf.train.Server(spec, "worker", 0, start=False)
    assert str(info.value).startswith(
        'Could not parse port for local server from "not an address".'
    )
