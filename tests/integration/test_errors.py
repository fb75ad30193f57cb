"""Bad input gets a clear error naming it, and the session stays usable afterwards."""

from __future__ import annotations

import dask
import numpy as np
import pytest

import daskgraph as dg
from daskgraph.cluster import embedded, master
from daskgraph.errors import InvalidArgumentError
from daskgraph.testing import within as _within


@pytest.fixture
def still_works(dg_session):
    """Call after an error: a valid run (on two devices) must still give the right answer."""
    with dg.device("/cpu:0"):
        x = dg.constant([1.0, 2.0], name="ok_x")
    with dg.device("/gpu:1"):
        y = dg.multiply(x, 2.0, name="ok_y")

    def check() -> None:
        np.testing.assert_array_equal(dg_session.run(y), [2.0, 4.0])

    return check


# -- device strings -------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "spec",
    ["/gpu:0/cpu:0", "/gpu:x", "/foo:1", "/device:GPU:-1", "/job:", "gpu0", "/task:a"],
    ids=[
        "two-types",
        "bad-index",
        "unknown-field",
        "negative-index",
        "empty-job",
        "no-colon",
        "bad-task",
    ],
)
def test_malformed_device_string_raises_value_error_quoting_it(dg_session, still_works, spec):
    with pytest.raises(ValueError) as info:
        with dg.device(spec):
            dg.constant(1.0, name="never")
    assert repr(spec) in str(info.value)
    # the failed scope left nothing behind: new ops have no device request
    after = dg.constant(3.0, name="after")
    assert after.op.device == ""
    assert "never" not in [op.name for op in dg_session.graph.get_operations()]
    assert dg_session.run(after) == 3.0
    still_works()


def test_device_of_wrong_type_raises_type_error(dg_session, still_works):
    with pytest.raises(TypeError, match="int"):
        with dg.device(1):
            pass
    still_works()


# -- feeds ----------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("value", "shown"),
    [(np.ones((2, 4)), "(2, 4)"), (np.ones(3), "(3,)"), (np.ones((1, 2, 3)), "(1, 2, 3)")],
    ids=["wrong-dim", "wrong-rank-low", "wrong-rank-high"],
)
def test_feed_of_wrong_shape_names_placeholder_and_both_shapes(
    dg_session, still_works, value, shown
):
    images = dg.placeholder(dg.float32, [None, 3], name="images")
    total = dg.reduce_sum(images)
    with pytest.raises(ValueError) as info:
        dg_session.run(total, {images: value})
    message = str(info.value)
    assert "images" in message
    assert shown in message
    assert "(?, 3)" in message
    assert dg_session.run(total, {images: np.ones((2, 3))}) == 6.0
    still_works()


@pytest.mark.parametrize(
    ("value", "dtype"),
    [([1.5, 2.5], "float64"), (np.array([1.0, 2.5], np.float32), "float32"), (["a", "b"], "<U1")],
    ids=["python-floats", "float32-array", "strings"],
)
def test_feed_of_wrong_dtype_raises_value_error(dg_session, still_works, value, dtype):
    labels = dg.placeholder(dg.int32, [2], name="labels")
    out = labels + 1
    with pytest.raises(ValueError) as info:
        dg_session.run(out, {labels: value})
    message = str(info.value)
    assert "labels" in message and "int32" in message and dtype in message
    result = dg_session.run(out, {labels: [1, 2]})
    assert result.dtype == np.int32
    np.testing.assert_array_equal(result, [2, 3])
    still_works()


def test_feed_key_from_another_graph(dg_session, still_works):
    p = dg.placeholder(dg.float32, [], name="p")
    with dg.Graph().as_default():
        foreign = dg.placeholder(dg.float32, [], name="foreign")
    with pytest.raises(ValueError, match="another graph") as info:
        dg_session.run(p * 2.0, {foreign: 1.0, p: 2.0})
    assert "foreign" in str(info.value)
    assert dg_session.run(p * 2.0, {p: 2.0}) == 4.0
    still_works()


@pytest.mark.parametrize(
    "key",
    ["nope:0", "nope", 3, None],
    ids=["unknown-tensor-name", "unknown-op-name", "int", "none"],
)
def test_feed_key_that_is_no_tensor(dg_session, still_works, key):
    with pytest.raises((TypeError, ValueError)) as info:
        dg_session.run(dg.constant(1.0), {key: 1.0})
    assert repr(key) in str(info.value)
    still_works()


def test_feed_key_that_is_an_operation(dg_session, still_works):
    c = dg.constant(1.0, name="c")
    with pytest.raises(TypeError, match="operation"):
        dg_session.run(c, {c.op: 2.0})
    still_works()


def test_feed_value_that_is_a_tensor(dg_session, still_works):
    p = dg.placeholder(dg.float32, [], name="p")
    other = dg.constant(1.0, name="other")
    with pytest.raises(TypeError, match="'p:0'"):
        dg_session.run(p + 1.0, {p: other})
    still_works()


def test_feed_dict_that_is_no_mapping(dg_session, still_works):
    p = dg.placeholder(dg.float32, [], name="p")
    with pytest.raises(TypeError, match="feed_dict"):
        dg_session.run(p, [(p, 1.0)])
    still_works()


def test_unfed_placeholder_raises_invalid_argument_naming_it(dg_session, still_works):
    x = dg.placeholder(dg.float32, [None, 2], name="inputs")
    with dg.device("/gpu:1"):
        y = dg.reduce_sum(x * 2.0)
    with pytest.raises(InvalidArgumentError, match="'inputs'") as info:
        dg_session.run(y)
    assert info.value.op == "inputs"
    assert "float32" in str(info.value)
    assert dg_session.run(y, {x: [[1.0, 2.0]]}) == 6.0
    still_works()


# -- fetches --------------------------------------------------------------------------------------
def test_fetch_from_another_graph_raises_value_error(dg_session, still_works):
    with dg.Graph().as_default():
        foreign = dg.constant(1.0, name="foreign")
    for fetch in (foreign, [dg.constant(2.0), foreign], {"x": foreign.op}):
        with pytest.raises(ValueError, match="another graph") as info:
            dg_session.run(fetch)
        assert "foreign" in str(info.value)
    still_works()


@pytest.mark.parametrize(
    "fetch",
    [3, np.ones(2), None, object(), 2.5],
    ids=["int", "ndarray", "none", "object", "float"],
)
def test_fetch_of_non_tensor_raises_type_error(dg_session, still_works, fetch):
    with pytest.raises(TypeError) as info:
        dg_session.run(fetch)
    assert type(fetch).__name__ in str(info.value)
    with pytest.raises(TypeError):
        dg_session.run([dg.constant(1.0), fetch])  # also inside a structure
    still_works()


@pytest.mark.parametrize(
    "name",
    ["missing:0", "missing", "ok_x:1", "ok_x:zero"],
    ids=["tensor", "operation", "bad-index", "not-a-number"],
)
def test_fetch_of_unknown_name_raises_value_error_quoting_it(dg_session, still_works, name):
    with pytest.raises(ValueError) as info:
        dg_session.run(name)
    assert repr(name) in str(info.value)
    still_works()


# -- run-time failures ----------------------------------------------------------------------------
@pytest.mark.parametrize("device", ["/gpu:0", "/gpu:1", "/cpu:0"], ids=["gpu0", "gpu1", "cpu0"])
def test_kernel_failure_names_op_and_device(dg_session, still_works, device):
    a = dg.placeholder(dg.float32, [None, None], name="lhs")
    b = dg.placeholder(dg.float32, [None, None], name="rhs")
    with dg.device(device):
        product = dg.matmul(a, b, name="product")
    with pytest.raises(InvalidArgumentError) as info:
        dg_session.run(product, {a: np.ones((2, 3)), b: np.ones((4, 5))})
    full = "/job:localhost/replica:0/task:0/device:" + device[1:].upper()
    assert info.value.op == "product"
    assert info.value.device == full
    assert "product" in str(info.value) and full in str(info.value)
    # the same fetch with compatible shapes works afterwards
    np.testing.assert_array_equal(
        dg_session.run(product, {a: np.ones((2, 3)), b: np.ones((3, 5))}), np.full((2, 5), 3.0)
    )
    still_works()


def test_kernel_failure_upstream_of_another_device_is_reported(dg_session, still_works):
    a = dg.placeholder(dg.float32, [None, None], name="lhs")
    with dg.device("/gpu:1"):
        bad = dg.matmul(a, a, name="bad")
    with dg.device("/cpu:0"):
        after = dg.reduce_sum(bad, name="after")
    with pytest.raises(InvalidArgumentError, match="bad") as info:
        dg_session.run(after, {a: np.ones((2, 3))})
    assert info.value.op == "bad"
    assert dg_session.run(after, {a: np.ones((2, 2))}) == 8.0
    still_works()


# -- sessions -------------------------------------------------------------------------------------
def test_using_a_closed_session_raises_runtime_error(dg_client, dg_session, still_works):
    sess = dg.Session(dg_client, graph=dg_session.graph)
    c = dg.constant(1.0, name="c")
    assert sess.run(c) == 1.0
    sess.close()
    assert sess.closed
    with pytest.raises(RuntimeError, match="closed"):
        sess.run(c)
    sess.close()  # closing twice is harmless
    assert dg_client.status == "running"  # it did not own the client
    still_works()


@pytest.mark.parametrize(
    "kwargs",
    [{"target": 123}, {"target": 1.5}, {"graph": "default"}, {"config": {"a": 1}}],
    ids=["int-target", "float-target", "str-graph", "dict-config"],
)
def test_session_arguments_of_wrong_type_raise_type_error(kwargs, monkeypatch):
    started: list[str] = []  # what the session began to connect to, if anything
    monkeypatch.setattr(embedded, "acquire", lambda *a: started.append("the embedded cluster"))
    monkeypatch.setattr(master, "connect", lambda *a: started.append("a scheduler"))
    with pytest.raises(TypeError) as info:
        dg.Session(**kwargs)
    assert repr(next(iter(kwargs.values()))) in str(info.value)
    assert started == []  # refused before anything starts


def test_unreachable_scheduler_fails_within_seconds():
    address = "tcp://127.0.0.1:1"
    # a refused port fails at once; the limit is the product's own bound on connecting,
    # daskgraph.connect-timeout, with a wide margin: only a hang fails, not a busy machine
    with dask.config.set({"daskgraph.local.startup-timeout": 3}):
        box = _within(master.connect_timeout() + 60, lambda: dg.Session(address))
    error = box.get("error")
    assert isinstance(error, (InvalidArgumentError, OSError)), box
    assert address in str(error)
