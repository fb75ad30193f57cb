"""``py_func`` / ``numpy_function``: values, one call per run, TensorFlow's dtype checks and
error classes (from TensorFlow 2.21's ``tf.compat.v1.py_func`` in graph mode), CPU placement,
no gradient."""

from __future__ import annotations

import numpy as np
import pytest

import daskgraph as dg
import daskgraph.compat.v1 as tf
from daskgraph.ops.script_ops import numpy_function, py_func


@pytest.fixture
def graph():
    with dg.Graph().as_default() as g:
        yield g


def run(fetches, feed=None):
    with dg.Session() as sess:
        return sess.run(fetches, feed)


def test_values_against_numpy(graph):
    x = dg.placeholder(dg.float64, [None, 3])
    value = np.arange(6.0).reshape(2, 3)
    norm, shape = py_func(
        lambda a: (np.linalg.norm(a, axis=1), np.array(a.shape, np.int32)),
        [x],
        [dg.float64, dg.int32],
    )
    assert norm.shape is None and norm.dtype is dg.float64  # unknown shape, as in TensorFlow
    got_norm, got_shape = run([norm, shape], {x: value})
    np.testing.assert_allclose(got_norm, np.linalg.norm(value, axis=1))
    np.testing.assert_array_equal(got_shape, [2, 3])
    assert float(run(norm * 2.0, {x: value})[1]) == pytest.approx(2 * np.linalg.norm(value[1]))


def test_several_results_come_from_one_call(graph):
    calls = []

    def f(a):
        calls.append(1)
        return a + 1.0, a * 2.0, np.float32(len(calls))

    a, b, n = py_func(f, [dg.constant([1.0, 2.0])], [dg.float32] * 3)
    with dg.Session() as sess:
        first = sess.run([a, b, n])
        second = sess.run([n, b])
    assert len(calls) == 2
    np.testing.assert_array_equal(first[0], [2.0, 3.0])
    np.testing.assert_array_equal(first[1], [2.0, 4.0])
    assert (first[2], second[0]) == (1.0, 2.0)


def test_arguments_are_numpy_values_as_in_tensorflow(graph):
    seen = py_func(
        lambda f, s, v: f"{type(f).__name__} {type(s).__name__} {type(v).__name__}",
        [dg.constant(1.0), dg.constant("text"), dg.constant([1, 2])],
        dg.string,
    )
    assert run(seen) == b"float32 bytes ndarray"  # TensorFlow: scalars as NumPy scalars


def test_tout_forms_and_numpy_function(graph):
    x = dg.constant([1, 2, 3])
    single = py_func(lambda a: a * 2, [x], dg.int32)
    listed = py_func(lambda a: a * 3, [x], [dg.int32])
    nothing = py_func(lambda a: None, [x], [])
    cumsum = numpy_function(np.cumsum, [x], dg.int64)
    assert isinstance(single, dg.Tensor) and isinstance(listed, list) and len(listed) == 1
    assert isinstance(nothing, dg.Operation) and nothing.type == "PyFunc"
    doubled, (tripled,), summed = run([single, listed, cumsum])
    assert doubled.tolist() == [2, 4, 6] and tripled.tolist() == [3, 6, 9]
    assert summed.tolist() == [1, 3, 6]
    run(nothing)
    stateless = py_func(lambda a: a, [x], dg.int32, stateful=False)
    assert stateless.op.inputs[0].op.type == "PyFuncStateless"
    assert run(stateless).tolist() == [1, 2, 3]


def test_python_inputs_become_tensors(graph):
    total = py_func(lambda a, b: a + b, [dg.constant([1.0, 2.0]), 2.0], dg.float32)
    assert run(total).tolist() == [3.0, 4.0]


@pytest.mark.parametrize(
    ("result", "tout", "message"),
    [  # TensorFlow 2.21's messages, with the op's name for its token
        (lambda a: 3, dg.int32, "0-th value returned by PyFunc is int64, but expects int32"),
        (lambda a: 3.5, dg.float32, "0-th value returned by PyFunc is double, but expects float"),
        (lambda a: (1, 2), dg.int32, "PyFunc returns 2 values, but expects to see 1 values."),
        (lambda a: a, [dg.float32] * 2, "PyFunc returns 1 values, but expects to see 2 values."),
    ],
)
def test_results_of_another_dtype_or_count_are_refused(graph, result, tout, message):
    y = py_func(result, [dg.constant([1.0])], tout)
    with pytest.raises(tf.errors.InvalidArgumentError, match=message) as info:
        run(y)
    assert info.value.op == "PyFunc"


def _raiser(exc):
    def f(a):
        raise exc

    return f


@pytest.mark.parametrize(
    ("exc", "error"),
    [  # as TensorFlow's PyFunc kernel maps them
        (ValueError("boom"), tf.errors.InvalidArgumentError),
        (TypeError("boom"), tf.errors.InvalidArgumentError),
        (StopIteration(), tf.errors.OutOfRangeError),
        (NotImplementedError("boom"), tf.errors.UnimplementedError),
        (RuntimeError("boom"), tf.errors.UnknownError),
        (IndexError("boom"), tf.errors.UnknownError),
        (tf.errors.NotFoundError(None, None, "boom"), tf.errors.UnknownError),
    ],
)
def test_exceptions_become_tensorflow_errors_naming_the_op(graph, exc, error):
    y = py_func(_raiser(exc), [dg.constant(1.0)], dg.float32, name="my_func")
    with pytest.raises(error) as info:
        run(y)
    assert type(info.value) is error
    assert info.value.op == "my_func" and "{{node my_func}}" in str(info.value)
    assert str(info.value).startswith(type(exc).__name__)


def test_the_session_goes_on_after_a_failing_call(graph):
    x = dg.placeholder(dg.float32, [])
    y = py_func(lambda a: a if a > 0 else 1 / 0, [x], dg.float32)
    with dg.Session() as sess:
        with pytest.raises(tf.errors.UnknownError, match="ZeroDivisionError"):
            sess.run(y, {x: 0.0})
        assert sess.run(y, {x: 2.0}) == 2.0


@pytest.mark.virtual_gpus(1)
def test_runs_on_the_cpu_and_needs_soft_placement_on_a_gpu(dg_client):
    for soft in (False, True):
        with dg.Graph().as_default() as graph:
            with dg.device("/gpu:0"):
                y = py_func(lambda a: a * 10, [dg.constant([1.0, 2.0])], dg.float32)
            config = dg.SessionConfig(allow_soft_placement=soft)
            with dg.Session(dg_client, graph=graph, config=config) as sess:
                if not soft:  # as TensorFlow: PyFunc has no GPU kernel
                    with pytest.raises(tf.errors.InvalidArgumentError, match="kernel for GPU"):
                        sess.run(y)
                    continue
                np.testing.assert_array_equal(sess.run(y * 2.0), [20.0, 40.0])
                placed = {op.name: op.assigned for op in sess.placement(y).ops}
    assert placed["PyFunc"].endswith("CPU:0") and placed["PyFunc/output"].endswith("CPU:0")


def test_no_gradient_flows_through_it(graph):
    x = dg.constant([1.0, 2.0])
    (y,) = py_func(lambda a: a * a, [x], [dg.float32])
    assert dg.gradients(y, [x]) == [None]  # TensorFlow: [None] too
