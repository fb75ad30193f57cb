"""Elementwise math, comparisons, logic, ``where`` and the extra reductions: values against
NumPy (broadcasting included), gradients against finite differences, operators, errors."""

from __future__ import annotations

import numpy as np
import pytest

import daskgraph as dg
from daskgraph.compat.gradient_check import check_gradients

RNG = np.random.default_rng(11)


def _r(*shape: int, low: float = 0.5, high: float = 2.0) -> np.ndarray:
    return RNG.uniform(low, high, shape)


def _run(build, *arrays):
    """Build ``build(*constants)`` in a fresh graph and run it on the embedded cluster."""
    with dg.Graph().as_default():
        out = build(*[dg.constant(a) for a in arrays])
        with dg.Session() as sess:
            return sess.run(out)


SHAPES = [((3, 4), (3, 4)), ((3, 4), (4,)), ((2, 1, 3), (4, 1)), ((), (2, 3))]


# -- elementwise values ---------------------------------------------------------------------------
BINARY = {
    "pow": (dg.pow, np.power),
    "minimum": (dg.minimum, np.minimum),
    "floordiv": (dg.floordiv, np.floor_divide),
    "floormod": (dg.floormod, np.mod),
}


@pytest.mark.parametrize("name", list(BINARY))
@pytest.mark.parametrize("shapes", SHAPES, ids=str)
def test_binary_ops_broadcast_as_numpy(name, shapes):
    ours, ref = BINARY[name]
    x, y = _r(*shapes[0], low=-3, high=3), _r(*shapes[1], low=0.5, high=3)
    if name == "pow":
        x = np.abs(x)
    out = _run(ours, x, y)
    np.testing.assert_allclose(out, ref(x, y), rtol=1e-12)
    assert out.shape == np.broadcast_shapes(x.shape, y.shape)


def test_integer_floordiv_mod_and_pow_follow_python():
    x, y = np.array([7, -7, 7, -7], np.int32), np.array([2, 2, -2, -2], np.int32)
    assert _run(dg.floordiv, x, y).tolist() == [3, -4, -4, 3]
    assert _run(dg.mod, x, y).tolist() == [1, 1, -1, -1]
    assert _run(dg.pow, x, np.int32(2)).tolist() == [49, 49, 49, 49]


UNARY = {
    "log": (dg.log, np.log),
    "reciprocal": (dg.reciprocal, np.reciprocal),
    "sigmoid": (dg.sigmoid, lambda x: 1 / (1 + np.exp(-x))),
    "sign": (dg.sign, np.sign),
}


@pytest.mark.parametrize("name", list(UNARY))
def test_unary_ops(name):
    ours, ref = UNARY[name]
    x = _r(3, 4) if name == "log" else _r(3, 4, low=-3, high=3)
    np.testing.assert_allclose(_run(ours, x), ref(x), rtol=1e-12)


def test_sigmoid_is_stable_and_precise_at_the_extremes():
    x = np.array([-1000.0, -80.0, -20.0, 0.0, 20.0, 1000.0], np.float32)
    with np.errstate(over="ignore"):
        expected = (1 / (1 + np.exp(-x.astype(np.float64)))).astype(np.float32)
    out = _run(dg.sigmoid, x)
    assert out.dtype == np.float32 and np.all(np.isfinite(out))
    np.testing.assert_allclose(out, expected, rtol=1e-6)
    assert out[1] > 0  # sigmoid(-80) ~ 1.8e-35: not flushed to 0 in float32


def test_operators_build_the_ops_with_tensorflow_names():
    with dg.Graph().as_default():
        x = dg.constant([1.0, 2.0, 3.0])
        ops = [x**2.0, 2.0**x, x // 2.0, 7.0 // x, x % 2.0, 7.0 % x]
        assert [t.op.type for t in ops] == ["Pow", "Pow", "FloorDiv", "FloorDiv"] + ["FloorMod"] * 2
        assert [t.op.name for t in ops[:3]] == ["pow", "pow_1", "floordiv"]
        with dg.Session() as sess:
            values = sess.run(ops)
    a = np.array([1.0, 2.0, 3.0])
    for got, want in zip(values, [a**2, 2**a, a // 2, 7 // a, a % 2, 7 % a], strict=True):
        np.testing.assert_allclose(got, want)


def test_float_only_ops_refuse_integers():
    with dg.Graph().as_default():
        for fn in (dg.log, dg.sigmoid, dg.reciprocal):
            with pytest.raises(TypeError, match=rf"{fn.__name__}: expects a floating-point"):
                fn(dg.constant([1, 2]))
        with pytest.raises(TypeError, match="same dtype"):
            dg.pow(dg.constant([1.0]), dg.constant([1]))
        with pytest.raises(ValueError, match="cannot be broadcast"):
            dg.minimum(dg.constant([1.0, 2.0]), dg.constant([1.0, 2.0, 3.0]))


# -- comparisons, logic and where -----------------------------------------------------------------
COMPARISONS = {
    "less": (dg.less, np.less),
    "less_equal": (dg.less_equal, np.less_equal),
    "greater": (dg.greater, np.greater),
    "greater_equal": (dg.greater_equal, np.greater_equal),
    "equal": (dg.equal, np.equal),
    "not_equal": (dg.not_equal, np.not_equal),
}


@pytest.mark.parametrize("name", list(COMPARISONS))
@pytest.mark.parametrize("shapes", SHAPES, ids=str)
def test_comparisons_give_bools_with_broadcasting(name, shapes):
    ours, ref = COMPARISONS[name]
    x = RNG.integers(0, 3, shapes[0]).astype(np.int32)
    y = RNG.integers(0, 3, shapes[1]).astype(np.int32)
    with dg.Graph().as_default():
        out = ours(dg.constant(x), dg.constant(y))
        assert out.dtype == dg.bool_ and out.shape == np.broadcast_shapes(x.shape, y.shape)
        with dg.Session() as sess:
            np.testing.assert_array_equal(sess.run(out), ref(x, y))


def test_comparison_operators_and_identity_equality():
    with dg.Graph().as_default():
        x = dg.constant([1.0, 2.0, 3.0])
        y = dg.constant([1.0, 2.0, 3.0])
        ops = [x < 2.0, x <= 2.0, x > 2.0, x >= 2.0, 2.0 < x, 2.0 >= x]
        assert [t.op.type for t in ops[:4]] == ["Less", "LessEqual", "Greater", "GreaterEqual"]
        assert ops[4].op.type == "Greater" and ops[5].op.type == "LessEqual"  # reflected
        assert (x == y) is False and (x != y) is True and (x == x) is True  # identity, as TF1
        assert {x: 1, y: 2}[x] == 1
        with dg.Session() as sess:
            values = [v.tolist() for v in sess.run(ops)]
    assert values == [
        [True, False, False],
        [True, True, False],
        [False, False, True],
        [False, True, True],
        [False, False, True],
        [True, True, False],
    ]


def test_equal_compares_strings_on_a_cpu():
    out = _run(dg.equal, np.array(["a", "b"], dtype=object), np.array(["a", "c"], dtype=object))
    assert out.tolist() == [True, False]


def test_logical_ops_and_operators():
    a = np.array([[True, False]])
    b = np.array([[True], [False]])
    with dg.Graph().as_default():
        x, y = dg.constant(a), dg.constant(b)
        ops = [
            dg.logical_and(x, y),
            dg.logical_or(x, y),
            dg.logical_xor(x, y),
            dg.logical_not(x),
            x & y,
            x | y,
            x ^ y,
            ~x,
            True & x,
        ]
        assert [t.op.type for t in ops[4:8]] == [
            "LogicalAnd",
            "LogicalOr",
            "LogicalXor",
            "LogicalNot",
        ]
        with dg.Session() as sess:
            values = sess.run(ops)
    expected = [a & b, a | b, a ^ b, ~a, a & b, a | b, a ^ b, ~a, a]
    for got, want in zip(values, expected, strict=True):
        np.testing.assert_array_equal(got, want)
    with dg.Graph().as_default(), pytest.raises(TypeError, match="logical_and: expects bool"):
        dg.logical_and(dg.constant([1]), dg.constant([True]))
    with dg.Graph().as_default(), pytest.raises(TypeError, match="less: expects numeric"):
        dg.less(dg.constant([True]), dg.constant([False]))


def test_where_broadcasts_and_picks_rows_as_tf1():
    c = np.array([[True, False, True]])
    x, y = _r(2, 3), _r(2, 1)
    np.testing.assert_allclose(_run(lambda c, x, y: dg.where(c, x, y), c, x, y), np.where(c, x, y))
    rows = np.array([True, False])
    m = _r(2, 3)
    np.testing.assert_allclose(
        _run(lambda c, m: dg.where(c, m, -m), rows, m), np.where(rows[:, None], m, -m)
    )
    with dg.Graph().as_default():
        t = dg.where(dg.constant([True, False]), dg.constant([1, 2]), 5)
        assert t.dtype == dg.int32 and t.op.type == "Select"
        with dg.Session() as sess:
            assert sess.run(t).tolist() == [1, 5]


def test_where_with_one_argument_gives_coordinates():
    c = np.array([[True, False], [False, True], [True, True]])
    with dg.Graph().as_default():
        found = dg.where(dg.placeholder(dg.bool_, [None, 2], name="c"))
        assert found.dtype == dg.int64 and found.shape == (None, 2)
        with dg.Session() as sess:
            out = sess.run(found, {"c:0": c})
    np.testing.assert_array_equal(out, np.argwhere(c))


def test_where_errors():
    with dg.Graph().as_default():
        with pytest.raises(TypeError, match="condition must be a bool tensor"):
            dg.where(dg.constant([1.0]), 1.0, 2.0)
        with pytest.raises(ValueError, match="give both x and y"):
            dg.where(dg.constant([True]), 1.0)
        with pytest.raises(TypeError, match="same dtype"):
            dg.where(dg.constant([True]), dg.constant([1.0]), dg.constant([1]))


# -- reductions -----------------------------------------------------------------------------------
@pytest.mark.parametrize("axis", [None, 0, 1, [0, 2], -1])
@pytest.mark.parametrize("keepdims", [False, True])
def test_reduce_min_and_prod(axis, keepdims):
    x = _r(2, 3, 4)
    np_axis = tuple(axis) if isinstance(axis, list) else axis
    for ours, ref in ((dg.reduce_min, np.min), (dg.reduce_prod, np.prod)):
        with dg.Graph().as_default():
            out = ours(dg.constant(x), axis=axis, keepdims=keepdims)
            want = ref(x, axis=np_axis, keepdims=keepdims)
            assert out.shape == want.shape
            with dg.Session() as sess:
                np.testing.assert_allclose(sess.run(out), want, rtol=1e-12)


def test_argmax_and_argmin():
    x = np.array([[3.0, 7.0, 7.0], [9.0, 1.0, 1.0]])
    with dg.Graph().as_default():
        t = dg.constant(x)
        outs = [
            dg.argmax(t, axis=1),
            dg.argmin(t, 1),
            dg.argmax(t),
            dg.argmin(t, dimension=-1),
            dg.argmax(t, axis=0, output_type=dg.int32),
        ]
        assert [o.dtype for o in outs] == [dg.int64] * 4 + [dg.int32]
        assert outs[0].shape == (2,) and outs[2].shape == (3,)
        with dg.Session() as sess:
            values = [v.tolist() for v in sess.run(outs)]
    assert values == [[1, 0], [0, 1], [1, 0, 0], [0, 1], [1, 0, 0]]
    with dg.Graph().as_default():
        t = dg.constant(x)
        with pytest.raises(ValueError, match="axis 2 is out of range"):
            dg.argmax(t, axis=2)
        with pytest.raises(ValueError, match="both 'axis' and 'dimension'"):
            dg.argmin(t, axis=0, dimension=0)
        with pytest.raises(TypeError, match="output_type must be int32 or int64"):
            dg.argmax(t, output_type=dg.float32)


def test_reductions_and_comparisons_have_no_gradient_where_tf_has_none():
    with dg.Graph().as_default():
        x = dg.constant([1.0, 2.0])
        y = dg.cast(dg.argmax(x), dg.float64) + dg.cast(x > 1.0, dg.float64)
        assert dg.gradients(y, [x]) == [None]


# -- gradients ------------------------------------------------------------------------------------
@pytest.mark.parametrize("shapes", SHAPES[:3], ids=str)
def test_pow_gradient_in_both_inputs(shapes):
    check_gradients(dg.pow, [_r(*shapes[0]), _r(*shapes[1], low=-1.5, high=2.5)])


def test_pow_gradient_where_the_base_is_zero_or_negative():
    x = np.array([0.0, -2.0, 3.0])
    y = np.array([2.0, 2.0, 2.0])
    with dg.Graph().as_default():
        tx, ty = dg.constant(x), dg.constant(y)
        gx, gy = dg.gradients(dg.pow(tx, ty), [tx, ty])
        with dg.Session() as sess:
            gx, gy = sess.run([gx, gy])
    np.testing.assert_allclose(gx, [0.0, -4.0, 6.0])
    np.testing.assert_allclose(gy, [0.0, 0.0, 9.0 * np.log(3.0)])  # log x taken as 0 for x <= 0


@pytest.mark.parametrize("shapes", SHAPES[:3], ids=str)
def test_minimum_gradient(shapes):
    x, y = _r(*shapes[0]), _r(*shapes[1]) + 0.01  # no ties
    check_gradients(dg.minimum, [x, y])


@pytest.mark.parametrize("fn", [dg.log, dg.reciprocal, dg.sigmoid], ids=lambda f: f.__name__)
def test_unary_gradients(fn):
    x = _r(2, 3) if fn is not dg.sigmoid else _r(2, 3, low=-4, high=4)
    check_gradients(fn, [x])


@pytest.mark.parametrize(
    "shapes", [((2, 3), (2, 3), (2, 3)), ((1, 3), (2, 3), (2, 1)), ((2,), (2, 3), ())], ids=str
)
def test_where_gradient_flows_to_the_chosen_side(shapes):
    c = RNG.uniform(size=shapes[0]) > 0.5
    check_gradients(lambda x, y: dg.where(dg.constant(c), x, y), [_r(*shapes[1]), _r(*shapes[2])])


@pytest.mark.parametrize("axis", [None, 1, [0, 2]])
@pytest.mark.parametrize("keepdims", [False, True])
def test_reduce_min_gradient(axis, keepdims):
    x = RNG.permutation(24).reshape(2, 3, 4) / 7.0
    check_gradients(lambda t: dg.reduce_min(t, axis=axis, keepdims=keepdims), [x])


@pytest.mark.parametrize("axis", [None, 1, [0, 2], -1])
@pytest.mark.parametrize("keepdims", [False, True])
def test_reduce_prod_gradient_also_with_zeros(axis, keepdims):
    x = _r(2, 3, 4, low=-1.5, high=1.5)
    x[0, 1, 2] = 0.0
    x[1, 2, :2] = 0.0  # two zeros in one slice
    check_gradients(lambda t: dg.reduce_prod(t, axis=axis, keepdims=keepdims), [x])


def test_sign_floordiv_and_comparisons_pass_no_gradient():
    with dg.Graph().as_default():
        x = dg.constant([1.5, -2.0])
        y = dg.sign(x) + x // 1.0 + x % 1.0 + dg.where(x > 0.0, x, 0.0)
        (g,) = dg.gradients(y, [x])
        with dg.Session() as sess:
            np.testing.assert_allclose(sess.run(g), [1.0, 0.0])


# -- TensorFlow 1 names ---------------------------------------------------------------------------
TF1_NAMES = [
    "argmax",
    "argmin",
    "equal",
    "floordiv",
    "floormod",
    "greater",
    "greater_equal",
    "less",
    "less_equal",
    "log",
    "logical_and",
    "logical_not",
    "logical_or",
    "logical_xor",
    "minimum",
    "mod",
    "not_equal",
    "pow",
    "reciprocal",
    "sigmoid",
    "sign",
    "where",
]


@pytest.mark.parametrize("name", TF1_NAMES)
def test_tf1_names_are_the_native_ops(name):
    import daskgraph.compat.v1 as tf

    assert getattr(tf, name) is getattr(dg, name) and name in tf.__all__


def test_tf1_reduce_min_and_prod_take_tf1_arguments():
    import daskgraph.compat.v1 as tf

    x = np.array([[1.0, 2.0], [3.0, 4.0]])
    with tf.Graph().as_default():
        t = tf.constant(x)
        outs = [tf.reduce_min(t, reduction_indices=[1], keep_dims=True), tf.reduce_prod(t, 0)]
        with tf.Session() as sess:
            lo, prod = sess.run(outs)
    np.testing.assert_array_equal(lo, [[1.0], [3.0]])
    np.testing.assert_array_equal(prod, [3.0, 8.0])
