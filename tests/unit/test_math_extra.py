"""TF1's remaining elementwise math (``daskgraph.ops.math_functions``, ``daskgraph.ops.special``):
values against NumPy (and numbers computed with TensorFlow 2.21 where NumPy has no function),
gradients against finite differences, dtype checks and integer division errors."""

from __future__ import annotations

import math

import numpy as np
import pytest

import daskgraph as dg
from daskgraph.compat.gradient_check import check_gradients

RNG = np.random.default_rng(23)


def _run(build, *arrays):
    """Build ``build(*constants)`` in a fresh graph and run it on the embedded cluster."""
    with dg.Graph().as_default():
        out = build(*[dg.constant(a) for a in arrays])
        with dg.Session() as sess:
            return sess.run(out)


UNARY = {
    "acos": (dg.acos, np.arccos, (-0.9, 0.9)),
    "asin": (dg.asin, np.arcsin, (-0.9, 0.9)),
    "atan": (dg.atan, np.arctan, (-3.0, 3.0)),
    "tan": (dg.tan, np.tan, (-1.2, 1.2)),
    "sinh": (dg.sinh, np.sinh, (-3.0, 3.0)),
    "cosh": (dg.cosh, np.cosh, (-3.0, 3.0)),
    "asinh": (dg.asinh, np.arcsinh, (-3.0, 3.0)),
    "acosh": (dg.acosh, np.arccosh, (1.1, 4.0)),
    "atanh": (dg.atanh, np.arctanh, (-0.9, 0.9)),
    "expm1": (dg.expm1, np.expm1, (-2.0, 2.0)),
    "log_sigmoid": (dg.log_sigmoid, lambda x: -np.logaddexp(0, -x), (-5.0, 5.0)),
    "erf": (dg.erf, np.vectorize(math.erf), (-2.0, 2.0)),
    "erfc": (dg.erfc, np.vectorize(math.erfc), (-2.0, 2.0)),
    "lgamma": (dg.lgamma, np.vectorize(math.lgamma), (0.2, 6.0)),
}


@pytest.mark.parametrize("name", list(UNARY))
def test_unary_values_and_gradients(name):
    ours, ref, (low, high) = UNARY[name]
    x = RNG.uniform(low, high, (3, 4))
    out = _run(ours, x)
    np.testing.assert_allclose(out, ref(x), rtol=1e-12, atol=1e-14)
    assert out.shape == (3, 4) and out.dtype == np.float64
    check_gradients(ours, [x])


def test_float32_results_keep_their_dtype():
    x = np.array([0.25, 0.5], np.float32)
    for fn in (dg.acos, dg.erf, dg.lgamma, dg.digamma, dg.log_sigmoid):
        assert _run(fn, x).dtype == np.float32


# digamma, lgamma and trigamma (digamma's derivative) from TensorFlow 2.21's tf.math.digamma,
# tf.math.lgamma and tf.math.polygamma(1, x) (float64)
GAMMA_X = [0.0, -1.0, -0.5, 0.5, 1.0, 2.5, 10.0, 1e-3]
TF_DIGAMMA = [
    np.nan,
    np.nan,
    3.64899740e-02,
    -1.96351003e00,
    -5.77215665e-01,
    7.03156641e-01,
    2.25175259e00,
    -1.00057557e03,
]
TF_LGAMMA = [np.inf, np.inf, 1.26551212, 0.57236494, 0.0, 0.28468287, 12.80182748, 6.90717889]
TF_TRIGAMMA = [
    np.inf,
    np.inf,
    8.93480220,
    4.93480220,
    1.64493407,
    4.90357756e-01,
    1.05166336e-01,
    1.00000164e06,
]


def test_gamma_functions_match_tensorflow_poles_included():
    digamma, lgamma = _run(lambda x: [dg.digamma(x), dg.lgamma(x)], np.array(GAMMA_X))
    np.testing.assert_allclose(digamma, TF_DIGAMMA, rtol=1e-8)
    np.testing.assert_allclose(lgamma, TF_LGAMMA, rtol=1e-8)


def test_digamma_gradient_is_trigamma():
    x = np.array(GAMMA_X[2:])
    with dg.Graph().as_default():
        c = dg.constant(x)
        (g,) = dg.gradients(dg.digamma(c), [c])
        with dg.Session() as sess:
            np.testing.assert_allclose(sess.run(g), TF_TRIGAMMA[2:], rtol=1e-8)
    check_gradients(dg.digamma, [RNG.uniform(0.3, 5.0, (2, 3))])


def test_erf_and_lgamma_without_scipy(monkeypatch):
    """SciPy is not a dependency: Python's math module, element by element, stands in."""
    import sys

    monkeypatch.setitem(sys.modules, "scipy", None)  # import scipy now fails
    x = np.array([-1.5, 0.25, 0.5, 3.0, -2.0])
    erf, erfc, lgamma = _run(lambda t: [dg.erf(t), dg.erfc(t), dg.lgamma(t)], x)
    np.testing.assert_allclose(erf, [math.erf(v) for v in x], rtol=1e-15)
    np.testing.assert_allclose(erfc, [math.erfc(v) for v in x], rtol=1e-15)
    np.testing.assert_allclose(lgamma[:4], [math.lgamma(v) for v in x[:4]], rtol=1e-15)
    assert lgamma[4] == np.inf and lgamma.dtype == np.float64


@pytest.mark.parametrize("shapes", [((3, 4), (3, 4)), ((3, 4), (4,)), ((2, 1, 3), (4, 1))])
def test_atan2_broadcasts_and_differentiates(shapes):
    y, x = RNG.uniform(-2, 2, shapes[0]), RNG.uniform(0.5, 2, shapes[1])
    np.testing.assert_allclose(_run(dg.atan2, y, x), np.arctan2(y, x), rtol=1e-12)
    check_gradients(dg.atan2, [y, x])


def test_nan_inf_finite_tests():
    x = np.array([1.0, np.nan, np.inf, -np.inf, 0.0], np.float32)
    nan, inf, finite = _run(lambda t: [dg.is_nan(t), dg.is_inf(t), dg.is_finite(t)], x)
    assert nan.tolist() == [False, True, False, False, False]
    assert inf.tolist() == [False, False, True, True, False]
    assert finite.tolist() == [True, False, False, False, True]
    with dg.Graph().as_default(), pytest.raises(TypeError, match="is_nan: expects a floating"):
        dg.is_nan(dg.constant([1, 2]))


def test_no_nan_divisions_and_products_match_tensorflow():
    x, y = np.array([0.0, 1.0, 2.0]), np.array([0.0, 2.0, 0.0])
    div, xdivy, xlogy = _run(lambda a, b: [dg.div_no_nan(a, b), dg.xdivy(a, b), dg.xlogy(a, b)],
                             x, y)  # fmt: skip
    assert div.tolist() == [0.0, 0.5, 0.0]  # TensorFlow: [0, 0.5, 0]
    assert xdivy.tolist() == [0.0, 0.5, np.inf]  # [0, 0.5, inf]
    np.testing.assert_allclose(xlogy, [0.0, np.log(2.0), -np.inf])  # [0, 0.6931472, -inf]
    mul = _run(dg.multiply_no_nan, np.array([np.inf, np.nan, 2.0]), np.array([0.0, 0.0, 3.0]))
    assert mul.tolist() == [0.0, 0.0, 6.0]  # TensorFlow: [0, 0, 6]
    x1p = _run(dg.xlog1py, np.array([0.0, 2.0]), np.array([-1.0, 1.0]))
    np.testing.assert_allclose(x1p, [0.0, 2 * np.log(2.0)])
    assert _run(dg.reciprocal_no_nan, np.array([0.0, 4.0])).tolist() == [0.0, 0.25]


@pytest.mark.parametrize("fn", [dg.div_no_nan, dg.multiply_no_nan, dg.xdivy, dg.xlogy, dg.xlog1py])
def test_no_nan_gradients(fn):
    x, y = RNG.uniform(0.5, 2, (3, 4)), RNG.uniform(0.5, 2, (4,))
    check_gradients(fn, [x, y])


def test_truncating_division_follows_c():
    x, y = np.array([7, -7, 7, -7], np.int32), np.array([2, 2, -2, -2], np.int32)
    assert _run(dg.truncatediv, x, y).tolist() == [3, -3, -3, 3]  # TensorFlow's values
    assert _run(dg.truncatemod, x, y).tolist() == [1, -1, 1, -1]
    assert _run(dg.truncatediv, np.array([7.0, -7.0]), np.array([2.0, 2.0])).tolist() == [3, -3]
    assert _run(dg.floor_div, x, y).tolist() == [3, -4, -4, 3]
    with pytest.raises(dg.errors.InvalidArgumentError, match="Integer division by zero"):
        _run(dg.truncatediv, np.array([1, 2]), np.array([1, 0]))


def test_scalar_mul_accumulate_n_and_polyval():
    x = np.array([[1.0, 2.0], [3.0, 4.0]])
    out = _run(lambda t: dg.scalar_mul(2.0, t), x)
    np.testing.assert_array_equal(out, 2 * x)
    out = _run(lambda a, b: dg.accumulate_n([a, b, a], shape=[2, 2]), x, x + 1)
    np.testing.assert_array_equal(out, 3 * x + 1)
    out = _run(lambda t: dg.polyval([1.0, -2.0, 3.0], t), x)
    np.testing.assert_allclose(out, np.polyval([1.0, -2.0, 3.0], x))
    assert _run(lambda t: dg.polyval([], t), x).tolist() == [[0, 0], [0, 0]]
    with dg.Graph().as_default():
        with pytest.raises(ValueError, match="must be a 0-D value"):
            dg.scalar_mul(dg.constant([1.0, 2.0]), dg.constant([1.0, 2.0]))
        with pytest.raises(ValueError, match="must have shape"):
            dg.accumulate_n([dg.constant([1.0, 2.0])], shape=[3])
    check_gradients(lambda t: dg.polyval([1.0, -2.0, 3.0], t), [x])


def test_integer_inputs_are_refused_by_float_ops():
    with dg.Graph().as_default():
        with pytest.raises(TypeError, match="acos: expects a floating-point tensor"):
            dg.acos(dg.constant([1, 2]))
        with pytest.raises(TypeError, match="div_no_nan: expects floating-point tensors"):
            dg.div_no_nan(dg.constant([1, 2]), dg.constant([1, 2]))


@pytest.mark.virtual_gpus(1)
def test_on_a_virtual_gpu(dg_session):
    x = np.array([0.5, 2.0, 0.0])
    with dg.device("/gpu:0"):
        c = dg.constant(x)
        outs = [dg.acosh(c + 1.0), dg.erf(c), dg.digamma(c + 1.0), dg.div_no_nan(c, c)]
    acosh, erf, digamma, div = dg_session.run(outs)
    np.testing.assert_allclose(acosh, np.arccosh(x + 1.0))
    np.testing.assert_allclose(erf, [math.erf(v) for v in x])
    np.testing.assert_allclose(digamma[2], -0.5772156649015329)
    assert div.tolist() == [1.0, 1.0, 0.0]
    assigned = {op.name: op.assigned for op in dg_session.placement(outs).ops}
    assert all("GPU" in assigned[t.op.name] for t in outs)


def test_invert_permutation_and_its_errors():
    assert _run(dg.invert_permutation, np.array([3, 4, 0, 2, 1], np.int32)).tolist() == [
        2,
        4,
        3,
        0,
        1,
    ]  # TensorFlow's value
    with pytest.raises(dg.errors.InvalidArgumentError, match="3 is not between 0 and 2"):
        _run(dg.invert_permutation, np.array([0, 3], np.int32))
    with pytest.raises(dg.errors.InvalidArgumentError, match=r"0 is duplicated in the input\."):
        _run(dg.invert_permutation, np.array([0, 0], np.int64))


def test_real_tensor_complex_helpers_lbeta_and_nextafter():
    x = np.array([-1.0, 0.0, 2.0])
    angle, imag, real, conj = _run(lambda t: [dg.angle(t), dg.imag(t), dg.real(t), dg.conj(t)], x)
    assert angle.tolist() == [np.pi, 0.0, 0.0] and imag.tolist() == [0.0, 0.0, 0.0]
    assert real.tolist() == conj.tolist() == x.tolist()
    b = _run(dg.lbeta, np.array([[1.0, 1.0], [2.0, 3.0], [0.5, 0.5]]))
    np.testing.assert_allclose(b, [0.0, np.log(1 / 12), np.log(np.pi)], rtol=1e-12)
    check_gradients(dg.lbeta, [RNG.uniform(0.5, 3.0, (2, 3))])
    up = _run(dg.nextafter, np.array([1.0, 1.0]), np.array([2.0, 0.0]))
    assert up.tolist() == [np.nextafter(1.0, 2.0), np.nextafter(1.0, 0.0)]
