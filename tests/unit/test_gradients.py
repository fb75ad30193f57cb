"""Reverse-mode gradients: every core op against finite differences, and the machinery
(variables, colocation with the forward ops, stop_gradients, grad_ys, the registry)."""

from __future__ import annotations

import numpy as np
import pytest

import daskgraph as dg
from daskgraph.compat.gradient_check import check_gradients
from daskgraph.framework.gradient_registry import registered_gradient

RNG = np.random.default_rng(7)


def _r(*shape: int) -> np.ndarray:
    return RNG.uniform(0.5, 2.0, shape)


BINARY = {
    "add": lambda x, y: x + y,
    "sub": lambda x, y: x - y,
    "mul": lambda x, y: x * y,
    "div": lambda x, y: x / y,
    "maximum": dg.maximum,
}


@pytest.mark.parametrize("name", list(BINARY))
@pytest.mark.parametrize("shapes", [((3, 4), (3, 4)), ((3, 4), (4,)), ((2, 1, 3), (4, 1))])
def test_broadcasting_binary_ops(name, shapes):
    x, y = _r(*shapes[0]), _r(*shapes[1])
    if name == "maximum":
        y = y + 0.01  # keep clear of ties, where the derivative jumps
    check_gradients(BINARY[name], [x, y])


@pytest.mark.parametrize(
    "fn",
    [dg.negative, dg.abs, dg.square, dg.sqrt, dg.exp, dg.tanh, dg.identity],
    ids=lambda f: f.__name__,
)
def test_unary_ops(fn):
    x = _r(2, 3)
    if fn is dg.abs:
        x = x * np.array([1.0, -1.0, 1.0])
    check_gradients(fn, [x])


@pytest.mark.parametrize("ta", [False, True])
@pytest.mark.parametrize("tb", [False, True])
def test_matmul_with_every_transpose(ta, tb):
    a = _r(4, 3) if ta else _r(3, 4)
    b = _r(5, 4) if tb else _r(4, 5)
    check_gradients(lambda x, y: dg.matmul(x, y, transpose_a=ta, transpose_b=tb), [a, b])


@pytest.mark.parametrize("axis", [None, 0, 1, [0, 2], -1])
@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("reduce", [dg.reduce_sum, dg.reduce_mean, dg.reduce_max])
def test_reductions(reduce, axis, keepdims):
    x = RNG.permutation(24).reshape(2, 3, 4) / 7.0  # distinct values: a unique maximum
    check_gradients(lambda t: reduce(t, axis=axis, keepdims=keepdims), [x])


def test_max_shares_the_gradient_among_ties():
    with dg.Graph().as_default():
        x = dg.constant(np.array([[1.0, 3.0, 3.0]]))
        (g,) = dg.gradients(dg.reduce_max(x), [x])
        with dg.Session() as sess:
            np.testing.assert_allclose(sess.run(g), [[0.0, 0.5, 0.5]])


def test_shape_ops_and_add_n():
    x = _r(2, 3, 4)
    check_gradients(lambda t: dg.reshape(t, [4, 6]) * dg.constant(_r(4, 6)), [x])
    check_gradients(lambda t: dg.transpose(t, [2, 0, 1]) * dg.constant(_r(4, 2, 3)), [x])
    check_gradients(lambda t: dg.transpose(t) * dg.constant(_r(4, 3, 2)), [x])
    check_gradients(lambda a, b: dg.add_n([a, b, a]), [x, _r(2, 3, 4)])
    check_gradients(lambda t: dg.cast(dg.cast(t, dg.float32), dg.float64), [x], rtol=1e-3)


def test_a_composite_model_and_a_partial_batch_dimension():
    w, b = _r(4, 3), _r(3)

    def model(x, w, b):
        return dg.tanh(dg.matmul(x, w) + b) * 2.0 - dg.reduce_mean(dg.square(x))

    check_gradients(model, [_r(5, 4), w, b])
    with dg.Graph().as_default():
        x = dg.placeholder(dg.float64, [None, 4])
        wv = dg.Variable(w)
        loss = dg.reduce_sum(dg.matmul(x, wv) + b)
        (gw,) = dg.gradients(loss, [wv])  # a variable means its value
        feed = _r(6, 4)
        with dg.Session() as sess:
            sess.run(dg.global_variables_initializer())
            got = sess.run(gw, {x: feed})
    np.testing.assert_allclose(got, np.repeat(feed.sum(axis=0)[:, None], 3, axis=1))


@pytest.mark.virtual_gpus(1)
def test_gradient_ops_sit_with_their_forward_ops(dg_session):
    with dg.device("/cpu:0"):
        w = dg.Variable(np.ones((3, 3), np.float32), name="w")
    with dg.device("/gpu:0"):
        x = dg.constant(np.full((2, 3), 2.0, np.float32), name="x")
        y = dg.matmul(x, w, name="y")
        loss = dg.reduce_sum(y * y, name="loss")
    (gw,) = dg.gradients(loss, [w])
    plan = dg_session.placement(gw)
    grads = [o for o in plan.ops if o.name.startswith("gradients/")]
    assert grads and all(o.assigned.endswith("GPU:0") for o in grads), [
        (o.name, o.assigned) for o in grads
    ]
    assert any(o.name.startswith("gradients/y_grad/") for o in grads)
    dg_session.run(w.initializer)
    # d/dw sum((x w)^2) = 2 x^T (x w) = 2 * 2 * (6 * 2) per entry with x=2, w=1
    np.testing.assert_allclose(dg_session.run(gw), np.full((3, 3), 48.0))


def test_stop_gradients_grad_ys_and_unrelated_inputs():
    with dg.Graph().as_default():
        a = dg.constant(2.0)
        b = dg.constant(5.0)
        c = a * a
        y = c * a
        ga, gb = dg.gradients(y, [a, b])
        (stopped,) = dg.gradients(y, [a], stop_gradients=[c])
        (scaled,) = dg.gradients(y, [a], grad_ys=[dg.constant(10.0)])
        with dg.Session() as sess:
            assert sess.run(ga) == pytest.approx(12.0)  # 3 a^2
            assert sess.run(stopped) == pytest.approx(4.0)  # c held constant: c
            assert sess.run(scaled) == pytest.approx(120.0)
    assert gb is None


def test_the_registry_names_what_is_missing_and_takes_users_gradients():
    from daskgraph.framework.op_registry import register

    with pytest.raises(LookupError, match="No gradient defined for op type 'NoSuchOp'"):
        registered_gradient("NoSuchOp")
    register("TestTriple", lambda xp, x: x * 3)

    @dg.RegisterGradient("TestTriple")
    def _triple_grad(op, grad):
        return [grad * 3.0]

    with pytest.raises(KeyError, match="already registered"):
        dg.register_gradient("TestTriple")(_triple_grad)

    def triple(x):
        graph = dg.get_default_graph()
        return graph.create_op("TestTriple", [x], dtype=x.dtype, shape=x.shape).outputs[0]

    check_gradients(triple, [_r(3)])
    with dg.Graph().as_default():
        x = dg.constant(1.0)
        op = dg.get_default_graph().create_op("Frobnicate2", [x], dtype=x.dtype, shape=())
        with pytest.raises(LookupError, match="Frobnicate2"):
            dg.gradients(op.outputs[0], [x])


def test_a_wrong_gradient_is_caught_by_the_checker():
    from daskgraph.framework.op_registry import register

    register("TestWrongGrad", lambda xp, x: x * x)

    @dg.register_gradient("TestWrongGrad")
    def _wrong(op, grad):
        return [grad * op.inputs[0]]  # should be 2x

    def wrong(x):
        graph = dg.get_default_graph()
        return graph.create_op("TestWrongGrad", [x], dtype=x.dtype, shape=x.shape).outputs[0]

    with pytest.raises(AssertionError, match="differs from finite differences"):
        check_gradients(wrong, [_r(3)])


#: backward ops, which have no gradient of their own yet (no second derivatives through them):
#: differentiating through one raises the registry's LookupError, naming it
NO_SECOND_DERIVATIVE = {
    "BiasAddGrad", "ConcatSlice", "Conv2DBackpropFilter", "MaxPoolGrad",
    "ProdGrad", "Relu6Grad", "ReluGrad", "SigmoidGrad", "SoftmaxCrossEntropyWithLogitsGrad",
    "SparseSoftmaxCrossEntropyWithLogitsGrad",
}  # fmt: skip


def test_every_op_type_says_how_it_differentiates():
    """Each registered op has a gradient or is marked not differentiable, but for the backward
    ops listed above; a new op must make that choice."""
    from daskgraph.framework.gradient_registry import _GRADIENTS
    from daskgraph.framework.op_registry import registered_types

    undecided = {t for t in registered_types() if t not in _GRADIENTS}
    undecided -= {t for t in undecided if t.startswith("Test")}  # this module's own test ops
    assert undecided == NO_SECOND_DERIVATIVE


def test_gradients_alone_do_not_compute_the_value_they_differentiate():
    """The seed (ones of the loss's static shape) reads no op: a run fetching only the
    gradients leaves the loss (and whatever only it needs) out, as TensorFlow's constant
    folding of ``shape(loss)`` does; with an unknown shape the seed reads the loss."""
    with dg.Graph().as_default():
        x = dg.placeholder(dg.float32, [4], name="x")
        w = dg.Variable(np.ones(4, np.float32), name="w")
        loss = dg.reduce_mean(dg.square(x * w), name="loss")
        (grad,) = dg.gradients(loss, [w])
        with dg.Session() as sess:
            sess.run(w.initializer)
            ran = {op.name for op in sess.placement(grad, {x: np.ones(4)}).ops}
            value = sess.run(grad, {x: np.arange(4, dtype=np.float32)})
        np.testing.assert_allclose(value, 2 * np.arange(4) ** 2 / 4)
        assert "loss" not in ran
        unknown = dg.placeholder(dg.float32, None, name="u")
        (seeded,) = dg.gradients(dg.reduce_sum(unknown * 2.0, name="s"), [unknown])
        with dg.Session() as sess:
            ran = {op.name for op in sess.placement(seeded, {unknown: np.ones(2)}).ops}
        assert "s" in ran
