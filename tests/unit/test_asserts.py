"""TF1's assertions and numeric checks (``daskgraph.ops.asserts``, ``daskgraph.ops.numerics``):
runs fail with InvalidArgumentError in TensorFlow's words (messages recorded from TensorFlow
2.21's ``tf.compat.v1``) and pass otherwise, static cases raise when the graph is built, and
the ops gate others through ``control_dependencies``, on a CPU and a virtual GPU."""

from __future__ import annotations

import numpy as np
import pytest

import daskgraph as dg
from daskgraph.compat.gradient_check import check_gradients
from daskgraph.errors import InvalidArgumentError


@pytest.fixture
def graph():
    with dg.Graph().as_default() as g:
        yield g


def _fails(fetch, feed, match):
    with dg.Session() as sess, pytest.raises(InvalidArgumentError, match=match) as info:
        sess.run(fetch, feed)
    return info.value


def _passes(fetch, feed=None):
    with dg.Session() as sess:
        return sess.run(fetch, feed)


# -- runtime failures in TensorFlow's words ------------------------------------------------------
def test_assert_equal_fails_the_run_with_tensorflows_message(graph):
    p = dg.placeholder(dg.float32, [3], name="p")
    check = dg.assert_equal(p, [1.0, 2.0, 3.0])
    assert isinstance(check, dg.Operation) and check.name == "assert_equal/Assert/Assert"
    _passes(check, {p: [1.0, 2.0, 3.0]})
    error = _fails(check, {p: [1.0, 2.0, 4.0]}, "assertion failed")
    # TensorFlow: assertion failed: [Condition x == y did not hold element-wise:] [x (p:0) = ]
    # [1 2 4] [y (assert_equal_1/y:0) = ] [1 2 3]   (its graph had another assert_equal first)
    assert str(error).splitlines()[0] == (
        "assertion failed: [Condition x == y did not hold element-wise:] [x (p:0) = ] [1 2 4] "
        "[y (assert_equal/y:0) = ] [1 2 3]"
    )
    assert error.op == "assert_equal/Assert/Assert"


def test_message_summarize_and_unary_wording(graph):
    q = dg.placeholder(dg.int32, [None], name="q")
    p = dg.placeholder(dg.float32, [3], name="p")
    eq = dg.assert_equal(q, 1, message="hello")
    pos = dg.assert_positive(p)
    error = _fails(eq, {q: [1, 2, 3, 4, 5]}, "hello")
    assert str(error).splitlines()[0] == (  # TensorFlow's, word for word
        "assertion failed: [hello] [Condition x == y did not hold element-wise:] [x (q:0) = ] "
        "[1 2 3...] [y (assert_equal/y:0) = ] [1]"
    )
    error = _fails(pos, {p: [1.0, -2.0, 3.0]}, "x > 0")
    assert str(error).splitlines()[0] == (
        "assertion failed: [] [Condition x > 0 did not hold element-wise:] [x (p:0) = ] [1 -2 3]"
    )
    assert pos.name == "assert_positive/assert_less/Assert/Assert"


@pytest.mark.parametrize(
    ("fn", "good", "bad"),
    [
        (dg.assert_none_equal, [5.0, 6.0], [1.0, 6.0]),
        (dg.assert_less, [0.0, 1.0], [0.0, 3.0]),
        (dg.assert_less_equal, [1.0, 2.0], [1.0, 2.5]),
        (dg.assert_greater, [2.0, 3.0], [1.0, 3.0]),
        (dg.assert_greater_equal, [1.0, 2.0], [0.5, 2.0]),
    ],
    ids=lambda v: getattr(v, "__name__", ""),
)
def test_binary_asserts(graph, fn, good, bad):
    p = dg.placeholder(dg.float32, [2])
    check = fn(p, [1.0, 2.0])
    _passes(check, {p: good})
    _fails(check, {p: bad}, "did not hold element-wise")


@pytest.mark.parametrize(
    ("fn", "good", "bad", "sym"),
    [
        (dg.assert_positive, [1, 2], [0, 2], ">"),
        (dg.assert_negative, [-1, -2], [-1, 0], "<"),
        (dg.assert_non_negative, [0, 2], [-1, 2], ">="),
        (dg.assert_non_positive, [0, -2], [1, -2], "<="),
    ],
    ids=lambda v: getattr(v, "__name__", ""),
)
def test_sign_asserts(graph, fn, good, bad, sym):
    p = dg.placeholder(dg.int64, [2])
    check = fn(p, message="m")
    _passes(check, {p: good})
    error = _fails(check, {p: bad}, f"Condition x {sym} 0 did not hold")
    assert str(error).startswith("assertion failed: [m.  ] ")


def test_assert_near(graph):
    p = dg.placeholder(dg.float64, [3], name="p")
    check = dg.assert_near(p, [1.0, 2.0, 3.0])
    _passes(check, {p: [1.0, 2.0, 3.0 + 1e-15]})
    error = _fails(check, {p: [1.0, 2.0, 3.1]}, "x and y not equal to tolerance")
    assert "[x (p:0) = ] [1 2 3.1] [y (assert_near/y:0) = ] [1 2 3]" in str(error)
    loose = dg.assert_near(p, [1.0, 2.0, 3.0], rtol=0.1)
    _passes(loose, {p: [1.0, 2.0, 3.1]})


def test_dynamic_rank(graph):
    x = dg.placeholder(dg.float32, name="x")  # rank unknown until the run
    check = dg.assert_rank(x, 2)
    _passes(check, {x: np.zeros((2, 3))})
    error = _fails(check, {x: np.zeros(3)}, "must have rank")
    assert str(error).splitlines()[0] == (  # TensorFlow's, word for word
        "assertion failed: [] [Tensor x:0 must have rank] [2] [Received shape: ] [3]"
    )
    at_least = dg.assert_rank_at_least(x, 2)
    _passes(at_least, {x: np.zeros((1, 1, 1))})
    _fails(at_least, {x: np.zeros(3)}, "must have rank at least")


def test_plain_assert_and_summarize(graph):
    p = dg.placeholder(dg.float32, [3])
    q = dg.placeholder(dg.int32, [3])
    check = dg.Assert(dg.reduce_all(p > 0.0), [p, "text", q], summarize=2)
    assert check.type == "Assert" and check.outputs == []
    _passes(check, {p: [1.0, 2.0, 3.0], q: [0, 0, 0]})
    error = _fails(check, {p: [-1.0, 2.0, 3.0], q: [5, 6, 7]}, "assertion failed")
    assert str(error).splitlines()[0] == "assertion failed: [-1 2...] [text] [5 6...]"  # TF's
    everything = dg.Assert(dg.constant(False), [p], summarize=-1)
    error = _fails(everything, {p: [1.0, 2.0, 3.0]}, "assertion failed")
    assert str(error).splitlines()[0] == "assertion failed: [1 2 3]"


def test_asserts_gate_other_ops_through_control_dependencies(graph):
    x = dg.placeholder(dg.float32, [None])
    v = dg.Variable(0.0)
    with dg.control_dependencies([dg.assert_non_negative(x)]):
        update = dg.assign_add(v, dg.reduce_sum(x))
    with dg.Session() as sess:
        sess.run(v.initializer)
        sess.run(update, {x: [1.0, 2.0]})
        with pytest.raises(InvalidArgumentError, match="x >= 0"):
            sess.run(update, {x: [1.0, -2.0]})
        assert sess.run(v) == 3.0  # the failed run applied nothing


# -- static checks at build time -----------------------------------------------------------------
def test_two_constants_are_compared_when_built(graph):
    with pytest.raises(InvalidArgumentError) as info:
        dg.assert_equal(dg.constant([1, 2]), [1, 3], message="boom")
    assert str(info.value) == (  # TensorFlow's, but for its graph's constant names
        "boom\nCondition x == y did not hold element-wise:\nx (Const:0) = \n[1 2]\n"
        "y (assert_equal/y:0) = \n[1 3]"
    )
    with pytest.raises(InvalidArgumentError, match="Condition x > 0"):
        dg.assert_positive(dg.constant([1, -2]))
    ok = dg.assert_equal(dg.constant([1, 2]), dg.constant([1, 2]))
    assert ok.type == "Assert"
    same = dg.constant(1.0)
    assert dg.assert_equal(same, same).type == "NoOp"


def test_static_ranks_types_and_scalars(graph):
    c = dg.constant([1, 2])
    with pytest.raises(ValueError, match=r"Tensor Const:0 must have rank 2.  Received rank 1"):
        dg.assert_rank(c, 2)
    assert dg.assert_rank(c, 1).name == "assert_rank_1/static_checks_determined_all_ok"
    with pytest.raises(ValueError, match=r"must have rank at least 1.  Received rank 0, shape"):
        dg.assert_rank_at_least(dg.constant(1.0), 1)
    with pytest.raises(ValueError, match=r"Expected scalar shape for Const_\d+:0, saw shape"):
        dg.assert_scalar(dg.constant([1]))
    s = dg.constant(3)
    assert dg.assert_scalar(s) is s
    with pytest.raises(TypeError, match=r"must be of type tf.float32; got tf.int32"):
        dg.assert_type(c, dg.float32)
    assert dg.assert_type(c, dg.int32).type == "NoOp"
    with pytest.raises(TypeError, match='Expected "x" to be integer type'):
        dg.assert_integer(dg.constant([1.0]))
    assert dg.assert_integer(c).type == "NoOp"


def test_assert_same_float_dtype(graph):
    a, b = dg.constant(1.0), dg.constant(1.0, dg.float64)
    assert dg.assert_same_float_dtype([a, None, a]) is dg.float32
    assert dg.assert_same_float_dtype(None, dg.float64) is dg.float64
    assert dg.assert_same_float_dtype() is dg.float32
    with pytest.raises(ValueError, match=r"Const_1:0, type=<dtype: 'float64'>, must be of the"):
        dg.assert_same_float_dtype([a, b])
    with pytest.raises(ValueError, match="Expected floating point type"):
        dg.assert_same_float_dtype([dg.constant(1)])


def test_monotonicity(graph):
    x = dg.placeholder(dg.int32, [None, None])
    fetch = [dg.is_non_decreasing(x), dg.is_strictly_increasing(x)]
    assert _passes(fetch, {x: [[1, 2], [2, 3]]}) == [True, False]
    assert _passes(fetch, {x: [[1, 2], [3, 4]]}) == [True, True]
    assert _passes(fetch, {x: [[2, 1]]}) == [False, False]


# -- numeric checks -------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("value", "found"),
    [([np.nan, 1.0, np.inf], "Inf and NaN"), ([np.inf, 1.0, 1.0], "Inf"), ([np.nan, 1, 1], "NaN")],
)
def test_check_numerics_says_what_it_found(graph, value, found):
    p = dg.placeholder(dg.float32, [3])
    y = dg.check_numerics(p, "my msg")
    assert _passes(y, {p: [1.0, 2.0, 3.0]}).tolist() == [1.0, 2.0, 3.0]
    error = _fails(y, {p: value}, "Tensor had")
    assert str(error).splitlines()[0] == f"my msg : Tensor had {found} values"  # TF's words
    with pytest.raises(TypeError, match="DataType int32 not in list of allowed values"):
        dg.check_numerics(dg.constant([1]), "m")


def test_verify_tensor_all_finite_and_gradient(graph):
    p = dg.placeholder(dg.float64, [2])
    y = dg.verify_tensor_all_finite(p, "vf msg")
    assert y.name == "VerifyFinite/control_dependency:0"
    _fails(y, {p: [np.nan, 1.0]}, "vf msg : Tensor had NaN values")
    assert dg.verify_tensor_all_finite(x=p, message="m").op.type == "Identity"
    with pytest.raises(ValueError, match="Cannot specify both 'x' and 't'"):
        dg.verify_tensor_all_finite(t=p, x=p)
    (g,) = dg.gradients(dg.reduce_sum(dg.sqrt(dg.check_numerics(p, "fwd"))), [p])
    error = _fails(g, {p: [0.0, 1.0]}, "detected in gradient")
    assert str(error).splitlines()[0] == (
        "Not a number (NaN) or infinity (Inf) values detected in gradient. fwd : Tensor had "
        "Inf values"
    )
    check_gradients(lambda t: dg.check_numerics(t, "m") * 2.0, [np.array([1.0, 2.0])])


def test_add_check_numerics_ops(graph):
    x = dg.placeholder(dg.float32, [2], name="x")
    v = dg.Variable([1.0, 1.0], name="v")
    y = dg.log(x * v, name="y")
    update = dg.assign_add(v, [1.0, 1.0])
    checks = dg.add_check_numerics_ops()
    with dg.Session() as sess:
        sess.run(v.initializer)
        sess.run([y, checks], {x: [1.0, 2.0]})
        with pytest.raises(InvalidArgumentError, match="y:0 : Tensor had NaN values"):
            sess.run([y, checks], {x: [1.0, -2.0]})
        assert sess.run(v).tolist() == [1.0, 1.0]  # the update was not checked, so not run
    del update


@pytest.mark.virtual_gpus(1)
def test_asserts_and_checks_on_a_virtual_gpu(dg_session):
    with dg.device("/gpu:0"):
        p = dg.placeholder(dg.float32, [2])
        check = dg.assert_less(p, 10.0)
        y = dg.check_numerics(p * 2.0, "doubled")
    plan = dg_session.placement([check, y], {p: [1.0, 2.0]})
    assigned = {op.name: op.assigned for op in plan.ops}
    assert "GPU" in assigned[check.name] and "GPU" in assigned[y.op.name]
    assert dg_session.run([check, y], {p: [1.0, 2.0]})[1].tolist() == [2.0, 4.0]
    with pytest.raises(InvalidArgumentError, match="Condition x < y did not hold"):
        dg_session.run(check, {p: [1.0, 20.0]})
    with pytest.raises(InvalidArgumentError, match="doubled : Tensor had Inf values"):
        dg_session.run(y, {p: [np.inf, 1.0]})
