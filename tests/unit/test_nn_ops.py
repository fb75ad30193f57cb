"""Neural-network ops: activations, softmax, cross entropies, bias_add, l2_loss, conv2d and
max_pool, against NumPy references (naive loops for the convolutions), with their gradients
against finite differences, on a virtual GPU too, and their errors."""

from __future__ import annotations

import math

import numpy as np
import pytest

import daskgraph as dg
from daskgraph.compat.gradient_check import check_gradients
from daskgraph.ops import conv

RNG = np.random.default_rng(5)


def _r(*shape: int, low: float = -2.0, high: float = 2.0) -> np.ndarray:
    return RNG.uniform(low, high, shape)


def _run(build, *arrays, feeds=None):
    with dg.Graph().as_default():
        out = build(*[dg.constant(a) for a in arrays])
        with dg.Session() as sess:
            return sess.run(out, feeds)


# -- NumPy references -----------------------------------------------------------------------------
def _ref_log_softmax(x, axis=-1):
    z = x - x.max(axis=axis, keepdims=True)
    return z - np.log(np.exp(z).sum(axis=axis, keepdims=True))


def _ref_windows(size, k, stride, padding):
    """(out, pad_before), written from TensorFlow's documentation, not from the kernel."""
    if padding == "VALID":
        return math.ceil((size - k + 1) / stride), 0
    out = math.ceil(size / stride)
    return out, max((out - 1) * stride + k - size, 0) // 2


def _ref_conv2d(x, w, strides, padding):
    n, h, wd, _ = x.shape
    kh, kw, _, o = w.shape
    (oh, top), (ow, left) = (
        _ref_windows(h, kh, strides[0], padding),
        _ref_windows(wd, kw, strides[1], padding),
    )
    out = np.zeros((n, oh, ow, o))
    for i in range(oh):
        for j in range(ow):
            for di in range(kh):
                for dj in range(kw):
                    r, s = i * strides[0] + di - top, j * strides[1] + dj - left
                    if 0 <= r < h and 0 <= s < wd:
                        out[:, i, j, :] += x[:, r, s, :] @ w[di, dj]
    return out


def _ref_max_pool(x, ksize, strides, padding):
    n, h, wd, c = x.shape
    (oh, top), (ow, left) = (
        _ref_windows(h, ksize[0], strides[0], padding),
        _ref_windows(wd, ksize[1], strides[1], padding),
    )
    out = np.full((n, oh, ow, c), -np.inf)
    for i in range(oh):
        for j in range(ow):
            for di in range(ksize[0]):
                for dj in range(ksize[1]):
                    r, s = i * strides[0] + di - top, j * strides[1] + dj - left
                    if 0 <= r < h and 0 <= s < wd:
                        out[:, i, j, :] = np.maximum(out[:, i, j, :], x[:, r, s, :])
    return out


# -- activations, softmax, losses -----------------------------------------------------------------
def test_relu_and_relu6():
    x = np.array([[-3.0, 0.0, 2.5, 6.0, 9.0]])
    np.testing.assert_array_equal(_run(dg.nn.relu, x), np.maximum(x, 0))
    np.testing.assert_array_equal(_run(dg.nn.relu6, x), np.clip(x, 0, 6))
    assert _run(dg.relu, np.array([-2, 3], np.int32)).tolist() == [0, 3]


@pytest.mark.parametrize("axis", [None, 0, 1, -1])
def test_softmax_and_log_softmax_are_stable_for_large_logits(axis):
    x = np.array([[1000.0, 999.0, -1000.0], [0.0, 1.0, 2.0]], np.float32)
    ax = -1 if axis is None else axis
    ref = _ref_log_softmax(x.astype(np.float64), ax)
    p = _run(lambda t: dg.nn.softmax(t, axis=axis), x)
    lp = _run(lambda t: dg.nn.log_softmax(t, axis=axis), x)
    assert p.dtype == np.float32 and np.all(np.isfinite(p)) and np.all(np.isfinite(lp))
    np.testing.assert_allclose(p, np.exp(ref), rtol=1e-5, atol=1e-30)
    np.testing.assert_allclose(lp, ref, rtol=1e-5)


def test_softmax_tf1_dim_argument_and_errors():
    x = _r(2, 3)
    np.testing.assert_allclose(
        _run(lambda t: dg.nn.softmax(t, dim=0), x), np.exp(_ref_log_softmax(x, 0))
    )
    with dg.Graph().as_default():
        with pytest.raises(ValueError, match="axis 2 is out of range"):
            dg.nn.softmax(dg.constant(x), axis=2)
        with pytest.raises(TypeError, match="logits must be a floating-point"):
            dg.nn.log_softmax(dg.constant([1, 2]))


@pytest.mark.parametrize("v2", [False, True])
def test_softmax_cross_entropy_matches_numpy_for_large_logits(v2):
    logits = np.array([[1000.0, 0.0, -1000.0], [1.0, 2.0, 3.0], [5.0, 5.0, 5.0]])
    labels = np.array([[0.0, 1.0, 0.0], [0.2, 0.3, 0.5], [1.0, 0.0, 0.0]])
    fn = (
        dg.nn.softmax_cross_entropy_with_logits_v2
        if v2
        else dg.nn.softmax_cross_entropy_with_logits
    )
    out = _run(lambda y, x: fn(labels=y, logits=x), labels, logits)
    np.testing.assert_allclose(out, -(labels * _ref_log_softmax(logits)).sum(-1), rtol=1e-12)
    with dg.Graph().as_default():
        t = fn(labels=dg.constant(labels.T), logits=dg.constant(logits.T), dim=0)
        assert t.shape == (3,)
        with dg.Session() as sess:
            np.testing.assert_allclose(sess.run(t), out, rtol=1e-12)


@pytest.mark.parametrize("v2", [False, True])
@pytest.mark.parametrize("label_dtype", [np.int32, np.int64, np.float64, np.bool_])
def test_softmax_cross_entropy_casts_labels_of_another_numeric_dtype(v2, label_dtype):
    """As TensorFlow (``labels = cast(labels, logits.dtype)``): integer one-hot labels."""
    logits = np.array([[1.0, 2.0, 3.0], [0.5, -1.0, 2.0]], np.float32)
    labels = np.array([[0, 0, 1], [1, 0, 0]]).astype(label_dtype)
    fn = (
        dg.nn.softmax_cross_entropy_with_logits_v2
        if v2
        else dg.nn.softmax_cross_entropy_with_logits
    )
    with dg.Graph().as_default():
        out = fn(labels=dg.constant(labels), logits=dg.constant(logits))
        assert out.dtype == dg.float32
        (grad,) = dg.gradients(dg.reduce_sum(out), [out.op.inputs[0]])
        with dg.Session() as sess:
            value, d_logits = sess.run([out, grad])
    expected = -(labels.astype(np.float32) * _ref_log_softmax(logits)).sum(-1)
    np.testing.assert_allclose(value, expected, rtol=1e-6)
    softmax = np.exp(_ref_log_softmax(logits))
    np.testing.assert_allclose(d_logits, softmax - labels.astype(np.float32), rtol=1e-5, atol=1e-7)


def test_softmax_cross_entropy_refuses_labels_that_are_not_numbers():
    with dg.Graph().as_default():
        with pytest.raises(TypeError, match="labels must be numeric"):
            dg.nn.softmax_cross_entropy_with_logits_v2(
                labels=dg.constant([["a", "b"]]), logits=dg.constant([[1.0, 2.0]])
            )
        with pytest.raises(TypeError, match="logits"):
            dg.nn.softmax_cross_entropy_with_logits_v2(
                labels=dg.constant([[1.0, 0.0]]), logits=dg.constant([[1, 2]])
            )


def test_sparse_softmax_cross_entropy_matches_numpy():
    logits = np.array([[1000.0, 0.0, -1000.0], [1.0, 2.0, 3.0]], np.float32)
    for dtype in (np.int32, np.int64):
        labels = np.array([1, 2], dtype)
        out = _run(
            lambda y, x: dg.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=x),
            labels,
            logits,
        )
        ref = -_ref_log_softmax(logits.astype(np.float64))[[0, 1], labels]
        assert out.dtype == np.float32
        np.testing.assert_allclose(out, ref, rtol=1e-6)


def test_sparse_softmax_cross_entropy_errors():
    with dg.Graph().as_default():
        logits = dg.constant(_r(2, 3))
        with pytest.raises(TypeError, match="labels must be int32 or int64 class indices"):
            dg.nn.sparse_softmax_cross_entropy_with_logits(labels=[0.0, 1.0], logits=logits)
        with pytest.raises(ValueError, match="labels must have the shape of logits without"):
            dg.nn.sparse_softmax_cross_entropy_with_logits(labels=[[0, 1]], logits=logits)
        # positional labels and logits, as TensorFlow 2.21's tf.compat.v1 takes them
        assert dg.nn.sparse_softmax_cross_entropy_with_logits([0, 1], logits).shape == (2,)
        labels = dg.placeholder(dg.int32, [None], name="labels")
        loss = dg.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)
        with dg.Session() as sess:
            with pytest.raises(
                dg.errors.InvalidArgumentError,
                match=r"label value of 3 which is "
                r"outside the valid range of \[0, 3\)",
            ):
                sess.run(loss, {labels: [0, 3]})


def test_cross_entropy_errors():
    fn = dg.nn.softmax_cross_entropy_with_logits
    with dg.Graph().as_default():
        with pytest.raises(ValueError, match="labels and logits must have the same shape"):
            fn(labels=dg.constant(_r(2, 3)), logits=dg.constant(_r(2, 4)))
        with pytest.raises(TypeError, match="logits must be a floating-point"):
            fn(labels=dg.constant([[1, 0]]), logits=dg.constant([[1, 0]]))
        with pytest.raises(ValueError, match="both labels= and logits= must be given"):
            fn(labels=None, logits=dg.constant([[1.0]]))


@pytest.mark.parametrize("data_format", ["NHWC", "NCHW", None])
def test_bias_add(data_format):
    value, bias = _r(2, 3, 4, 5), _r(5 if data_format != "NCHW" else 3)
    out = _run(lambda v, b: dg.nn.bias_add(v, b, data_format=data_format), value, bias)
    want = value + (bias.reshape(3, 1, 1) if data_format == "NCHW" else bias)
    np.testing.assert_allclose(out, want)
    with dg.Graph().as_default(), pytest.raises(ValueError, match="has 5 elements but value"):
        dg.nn.bias_add(dg.constant(_r(2, 4)), dg.constant(_r(5)))
    with dg.Graph().as_default(), pytest.raises(ValueError, match="data_format must be"):
        dg.nn.bias_add(dg.constant(_r(2, 4)), dg.constant(_r(4)), data_format="NWHC")


def test_l2_loss():
    x = _r(3, 4)
    out = _run(dg.nn.l2_loss, x)
    assert out.shape == ()
    np.testing.assert_allclose(out, (x**2).sum() / 2)


# -- convolution and pooling ----------------------------------------------------------------------
CONV_CASES = [
    ((2, 5, 5, 2), (3, 3, 2, 3), (1, 1), "SAME"),
    ((2, 5, 5, 2), (3, 3, 2, 3), (1, 1), "VALID"),
    ((2, 5, 6, 2), (3, 3, 2, 3), (2, 2), "SAME"),
    ((2, 5, 6, 2), (3, 3, 2, 3), (2, 2), "VALID"),
    ((1, 4, 4, 1), (2, 2, 1, 2), (1, 1), "SAME"),  # padding after only
    ((1, 7, 5, 1), (4, 2, 1, 2), (2, 1), "SAME"),  # unequal strides and kernel sides
]


@pytest.mark.parametrize(("xs", "ws", "strides", "padding"), CONV_CASES, ids=str)
def test_conv2d_matches_a_naive_loop(xs, ws, strides, padding):
    x, w = _r(*xs), _r(*ws)
    with dg.Graph().as_default():
        images = dg.placeholder(dg.float64, [None, *xs[1:]], name="images")
        y = dg.nn.conv2d(images, dg.constant(w), [1, *strides, 1], padding)
        want = _ref_conv2d(x, w, strides, padding)
        assert y.shape == (None, *want.shape[1:])
        with dg.Session() as sess:
            np.testing.assert_allclose(sess.run(y, {images: x}), want, rtol=1e-10)


POOL_CASES = [
    ((2, 5, 5, 2), (2, 2), (2, 2), "SAME"),
    ((2, 5, 5, 2), (2, 2), (2, 2), "VALID"),
    ((2, 5, 4, 3), (3, 3), (1, 1), "SAME"),
    ((2, 5, 4, 3), (3, 2), (1, 2), "VALID"),
]


@pytest.mark.parametrize(("xs", "ksize", "strides", "padding"), POOL_CASES, ids=str)
def test_max_pool_matches_a_naive_loop(xs, ksize, strides, padding):
    x = -np.abs(_r(*xs))  # all negative: zero padding would win, -inf padding never does
    out = _run(lambda t: dg.nn.max_pool(t, [1, *ksize, 1], [1, *strides, 1], padding), x)
    np.testing.assert_array_equal(out, _ref_max_pool(x, ksize, strides, padding))


def test_tensorflow_padding_arithmetic():
    # SAME: ceil(in / stride) outputs; the smaller half of the padding goes before
    assert conv.output_size(8, 3, 1, "SAME") == (8, 1, 1)
    assert conv.output_size(8, 3, 2, "SAME") == (4, 0, 1)
    assert conv.output_size(7, 4, 2, "SAME") == (4, 1, 2)
    assert conv.output_size(8, 1, 3, "SAME") == (3, 0, 0)
    assert conv.output_size(8, 3, 2, "VALID") == (3, 0, 0)


def test_backprop_ops_are_the_adjoints_of_conv2d():
    """<conv(x, w), g> = <x, backprop_input(g)> = <w, backprop_filter(g)>."""
    x, w, g = _r(2, 6, 5, 3), _r(3, 2, 3, 4), _r(2, 3, 3, 4)
    with dg.Graph().as_default():
        y = dg.nn.conv2d(dg.constant(x), dg.constant(w), [1, 2, 2, 1], "SAME")
        dx = dg.nn.conv2d_backprop_input(
            [2, 6, 5, 3], dg.constant(w), dg.constant(g), [1, 2, 2, 1], "SAME"
        )
        dw = dg.nn.conv2d_backprop_filter(
            dg.constant(x), [3, 2, 3, 4], dg.constant(g), [1, 2, 2, 1], "SAME"
        )
        assert dx.shape == x.shape and dw.shape == w.shape
        with dg.Session() as sess:
            y, dx, dw = sess.run([y, dx, dw])
    assert y.shape == g.shape
    np.testing.assert_allclose((y * g).sum(), (x * dx).sum(), rtol=1e-10)
    np.testing.assert_allclose((y * g).sum(), (w * dw).sum(), rtol=1e-10)


def test_max_pool_grad_goes_to_the_first_maximum():
    x = np.array([[1.0, 5.0, 5.0], [0.0, 2.0, 1.0]]).reshape(1, 2, 3, 1)
    with dg.Graph().as_default():
        t = dg.constant(x)
        y = dg.nn.max_pool(t, [1, 2, 2, 1], [1, 1, 1, 1], "VALID")
        (g,) = dg.gradients(y, [t])
        with dg.Session() as sess:
            assert sess.run(g)[0, :, :, 0].tolist() == [[0.0, 2.0, 0.0], [0.0, 0.0, 0.0]]


def test_conv_errors():
    with dg.Graph().as_default():
        x, w = dg.constant(_r(1, 4, 4, 2)), dg.constant(_r(3, 3, 2, 1))
        with pytest.raises(ValueError, match="padding must be 'SAME' or 'VALID'; got 'same '"):
            dg.nn.conv2d(x, w, [1, 1, 1, 1], "same ")
        with pytest.raises(ValueError, match="has 2 channels but the filter 'Const_2:0' expects"):
            dg.nn.conv2d(x, dg.constant(_r(3, 3, 1, 1)), [1, 1, 1, 1], "SAME")
        with pytest.raises(ValueError, match="strides over the batch or channels axis"):
            dg.nn.conv2d(x, w, [2, 1, 1, 1], "SAME")
        with pytest.raises(ValueError, match="filter must have rank 4"):
            dg.nn.conv2d(x, dg.constant(_r(3, 3)), [1, 1, 1, 1], "SAME")
        with pytest.raises(ValueError, match="larger than the input"):
            dg.nn.conv2d(x, dg.constant(_r(5, 5, 2, 1)), [1, 1, 1, 1], "VALID")
        with pytest.raises(ValueError, match="only data_format 'NHWC' is supported"):
            dg.nn.conv2d(x, w, [1, 1, 1, 1], "SAME", data_format="NCHW")
        with pytest.raises(ValueError, match="dilations are not supported"):
            dg.nn.conv2d(x, w, [1, 1, 1, 1], "SAME", dilations=[1, 2, 2, 1])
        with pytest.raises(TypeError, match="input must be floating-point"):
            dg.nn.conv2d(dg.constant(np.ones((1, 4, 4, 2), np.int32)), w, [1, 1, 1, 1], "SAME")
        with pytest.raises(ValueError, match="ksize must be 4 positive ints"):
            dg.nn.max_pool(x, [1, 2, 2], [1, 1, 1, 1], "SAME")


def test_channel_mismatch_found_at_run_time_names_the_op():
    with dg.Graph().as_default():
        images = dg.placeholder(dg.float32, [None, 4, 4, None], name="images")
        y = dg.nn.conv2d(
            images,
            dg.constant(np.ones((3, 3, 2, 1), np.float32)),
            [1, 1, 1, 1],
            "SAME",
            name="conv",
        )
        with dg.Session() as sess:
            with pytest.raises(
                dg.errors.InvalidArgumentError,
                match=r"conv \(Conv2D\).*has 3 "
                "channels but the filter expects 2",
            ):
                sess.run(y, {images: np.ones((1, 4, 4, 3), np.float32)})


# -- gradients ------------------------------------------------------------------------------------
@pytest.mark.parametrize("fn", [dg.nn.relu, dg.nn.relu6], ids=lambda f: f.__name__)
def test_relu_gradients(fn):
    x = _r(3, 4, low=-8, high=8)
    x[np.abs(x) < 0.05] = 0.5  # keep clear of the kinks
    x[np.abs(x - 6) < 0.05] = 5.0
    check_gradients(fn, [x])


@pytest.mark.parametrize("axis", [None, 0])
@pytest.mark.parametrize("fn", [dg.nn.softmax, dg.nn.log_softmax], ids=lambda f: f.__name__)
def test_softmax_gradients(fn, axis):
    check_gradients(lambda t: fn(t, axis=axis), [_r(3, 4)])


def test_softmax_cross_entropy_v2_gradient_flows_into_labels_and_logits():
    labels = RNG.dirichlet(np.ones(4), size=3)
    check_gradients(
        lambda y, x: dg.nn.softmax_cross_entropy_with_logits_v2(labels=y, logits=x),
        [labels, _r(3, 4)],
    )


def test_softmax_cross_entropy_v1_gradient_stops_at_labels():
    labels = RNG.dirichlet(np.ones(4), size=3)
    check_gradients(
        lambda x: dg.nn.softmax_cross_entropy_with_logits(
            labels=dg.constant(labels.T), logits=x, dim=0
        ),
        [_r(4, 3)],
    )
    with dg.Graph().as_default():
        y, x = dg.constant(labels), dg.constant(_r(3, 4))
        loss = dg.nn.softmax_cross_entropy_with_logits(labels=y, logits=x)
        gy, gx = dg.gradients(loss, [y, x])
        assert gy is None and gx is not None
        with dg.Session() as sess:
            p = np.exp(_ref_log_softmax(sess.run(x)))
            np.testing.assert_allclose(sess.run(gx), p - labels, rtol=1e-12)


def test_sparse_softmax_cross_entropy_gradient():
    labels = np.array([0, 3, 2], np.int64)
    check_gradients(
        lambda x, y: dg.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=x),
        [_r(3, 4), labels],
    )


@pytest.mark.parametrize("data_format", ["NHWC", "NCHW"])
def test_bias_add_gradient(data_format):
    bias = _r(5) if data_format == "NHWC" else _r(3)
    check_gradients(
        lambda v, b: dg.nn.bias_add(v, b, data_format=data_format), [_r(2, 3, 4, 5), bias]
    )


def test_l2_loss_gradient():
    check_gradients(dg.nn.l2_loss, [_r(3, 4)])


@pytest.mark.parametrize(("xs", "ws", "strides", "padding"), CONV_CASES, ids=str)
def test_conv2d_gradient(xs, ws, strides, padding):
    check_gradients(lambda x, w: dg.nn.conv2d(x, w, [1, *strides, 1], padding), [_r(*xs), _r(*ws)])


def test_conv2d_gradient_with_an_unknown_batch_size():
    x, w = _r(3, 4, 4, 2), _r(2, 2, 2, 2)
    with dg.Graph().as_default():
        images = dg.placeholder(dg.float64, [None, 4, 4, 2], name="images")
        filt = dg.constant(w)
        y = dg.nn.conv2d(images, filt, [1, 2, 2, 1], "SAME")
        dx, dw = dg.gradients(dg.reduce_sum(y), [images, filt])
        assert dx.shape == (None, 4, 4, 2) and dw.shape == w.shape
        with dg.Session() as sess:
            dx, dw = sess.run([dx, dw], {images: x})
    want_dw = np.array([[x[:, i::2, j::2].sum(axis=(0, 1, 2)) for j in range(2)] for i in range(2)])
    np.testing.assert_allclose(dw, np.repeat(want_dw[..., None], 2, axis=3))
    np.testing.assert_allclose(dx, np.broadcast_to(np.tile(w.sum(axis=3), (2, 2, 1)), x.shape))


def test_conv2d_gradient_with_unknown_spatial_sizes():
    x, w = _r(2, 5, 4, 2), _r(3, 2, 2, 3)
    with dg.Graph().as_default():
        images = dg.placeholder(dg.float64, [None, None, None, 2], name="images")
        filt = dg.constant(w)
        y = dg.nn.conv2d(images, filt, [1, 2, 2, 1], "SAME")
        dx, dw = dg.gradients(dg.reduce_sum(y * y), [images, filt])
        with dg.Session() as sess:
            dx, dw = sess.run([dx, dw], {images: x})
    with dg.Graph().as_default():  # the same with every size known
        tx, tw = dg.constant(x), dg.constant(w)
        y = dg.nn.conv2d(tx, tw, [1, 2, 2, 1], "SAME")
        with dg.Session() as sess:
            want = sess.run(dg.gradients(dg.reduce_sum(y * y), [tx, tw]))
    np.testing.assert_allclose(dx, want[0])
    np.testing.assert_allclose(dw, want[1])


@pytest.mark.parametrize(("xs", "ksize", "strides", "padding"), POOL_CASES, ids=str)
def test_max_pool_gradient(xs, ksize, strides, padding):
    x = RNG.permutation(int(np.prod(xs))).reshape(xs) / 10.0  # distinct: no ties
    check_gradients(lambda t: dg.nn.max_pool(t, [1, *ksize, 1], [1, *strides, 1], padding), [x])


# -- dropout --------------------------------------------------------------------------------------
@pytest.mark.parametrize("keep", [0.25, 0.5, 0.9])
def test_dropout_keeps_with_probability_keep_prob_and_scales(keep):
    x = _r(200, 100, low=0.5, high=1.5).astype(np.float32)
    with dg.Graph().as_default():
        t = dg.placeholder(dg.float32, [None, 100], name="x")
        y = dg.nn.dropout(t, keep_prob=keep, seed=3)
        (g,) = dg.gradients(dg.reduce_sum(y), [t])
        assert y.shape == (None, 100) and y.dtype == dg.float32
        with dg.Session() as sess:
            y1, g1 = sess.run([y, g], {t: x})
            y2 = sess.run(y, {t: x})
    kept = y1 != 0
    assert abs(kept.mean() - keep) < 0.02
    np.testing.assert_allclose(y1[kept], x[kept] / keep, rtol=1e-6)
    np.testing.assert_allclose(g1, kept / np.float32(keep), rtol=1e-6)  # the same mask
    assert not np.array_equal(y1 != 0, y2 != 0)  # a new mask every run


def test_dropout_rate_tensor_keep_prob_and_noise_shape():
    x = np.ones((400, 50), np.float32)
    with dg.Graph().as_default():
        keep_prob = dg.placeholder(dg.float32, [], name="keep_prob")
        by_rows = dg.nn.dropout(dg.constant(x), keep_prob=keep_prob, noise_shape=[400, 1])
        by_rate = dg.nn.dropout(dg.constant(x), rate=0.75)
        with dg.Session() as sess:
            rows, evaluated = sess.run([by_rows, by_rows], {keep_prob: 0.5})
            assert np.array_equal(rows, evaluated)  # one fetch, one draw
            full = sess.run(by_rows, {keep_prob: 1.0})
            rated = sess.run(by_rate)
    assert np.all((rows == 0) | (rows == 2)) and np.all(rows == rows[:, :1])  # whole rows
    assert 0.4 < (rows[:, 0] > 0).mean() < 0.6
    np.testing.assert_array_equal(full, x)
    assert abs((rated > 0).mean() - 0.25) < 0.02 and np.allclose(rated[rated > 0], 4.0)
    with dg.Graph().as_default():
        t = dg.constant(x)
        assert dg.nn.dropout(t, keep_prob=1.0) is t
        with pytest.raises(ValueError, match=r"keep_prob must be in \(0, 1\]; got 0.0"):
            dg.nn.dropout(t, keep_prob=0.0)
        with pytest.raises(ValueError, match=r"rate must be in \[0, 1\); got 1.0"):
            dg.nn.dropout(t, rate=1.0)
        with pytest.raises(ValueError, match="exactly one of keep_prob and rate"):
            dg.nn.dropout(t, keep_prob=0.5, rate=0.5)


# -- TensorFlow 1 names ---------------------------------------------------------------------------
def test_tf_nn_is_the_nn_namespace_of_native_ops():
    import daskgraph.compat.v1 as tf

    assert tf.nn is dg.nn
    for name in dg.nn.__all__:
        assert getattr(tf.nn, name) is getattr(dg, name), name
    assert tf.nn.softmax_cross_entropy_with_logits is dg.softmax_cross_entropy_with_logits
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, 8, 8, 1])
        w = tf.Variable(tf.truncated_normal([3, 3, 1, 4], stddev=0.1))
        h = tf.nn.relu(tf.nn.conv2d(x, w, strides=[1, 1, 1, 1], padding="SAME"))
        p = tf.nn.max_pool(h, ksize=[1, 2, 2, 1], strides=[1, 2, 2, 1], padding="SAME")
        logits = tf.reshape(p, [-1, 64])
        labels = tf.placeholder(tf.int64, [None])
        loss = tf.reduce_mean(
            tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)
        )
        accuracy = tf.reduce_mean(tf.cast(tf.equal(tf.argmax(logits, 1), labels), tf.float32))
        (gw,) = dg.gradients(loss, [w])
        assert gw.shape == (3, 3, 1, 4) and accuracy.shape == ()


# -- on a (virtual) GPU ---------------------------------------------------------------------------
def _small_cnn(images, w, b, labels):
    h = dg.nn.relu(dg.nn.bias_add(dg.nn.conv2d(images, w, [1, 1, 1, 1], "SAME"), b))
    p = dg.nn.max_pool(h, [1, 2, 2, 1], [1, 2, 2, 1], "SAME")
    logits = dg.reduce_sum(p, axis=[1, 2])
    loss = dg.reduce_mean(
        dg.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)
    )
    return [loss, dg.nn.softmax(logits), *dg.gradients(loss, [w, b])]


@pytest.mark.virtual_gpus(1)
def test_a_small_cnn_runs_on_a_virtual_gpu_with_the_cpu_values(dg_session):
    x = RNG.uniform(size=(4, 8, 8, 1)).astype(np.float32)
    w = RNG.normal(size=(3, 3, 1, 3)).astype(np.float32)
    b = RNG.normal(size=3).astype(np.float32)
    labels = np.array([0, 1, 2, 1], np.int32)
    results = []
    for device in ("/cpu:0", "/gpu:0"):
        with dg.device(device):
            outs = _small_cnn(dg.constant(x), dg.constant(w), dg.constant(b), dg.constant(labels))
        results.append(dg_session.run(outs))
        plan = dg_session.placement(outs)
        conv_ops = [o for o in plan.ops if o.type in ("Conv2D", "Conv2DBackpropFilter")]
        assert conv_ops and all(device.upper()[1:4] in o.assigned for o in conv_ops)
    for cpu, gpu in zip(*results, strict=True):
        np.testing.assert_allclose(gpu, cpu, rtol=1e-5)


@pytest.mark.virtual_gpus(1)
def test_conv2d_gradient_on_a_virtual_gpu(dg_client):
    check_gradients(
        lambda x, w: dg.nn.conv2d(x, w, [1, 2, 2, 1], "SAME"),
        [_r(1, 4, 5, 2), _r(3, 3, 2, 2)],
        device="/gpu:0",
        target=dg_client,
    )
