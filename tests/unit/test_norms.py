"""Norms, clipping, moments, cumulative sums and segment reductions (``daskgraph.ops.norms``,
``daskgraph.ops.cumulative``, ``daskgraph.ops.segments``): values against NumPy (and numbers
computed with TensorFlow 2.21 where its conventions matter), gradients against finite
differences, errors in TensorFlow's words, and clip_by_global_norm in a training loop."""

from __future__ import annotations

import numpy as np
import pytest

import daskgraph as dg
from daskgraph.compat.gradient_check import check_gradients
from daskgraph.errors import InvalidArgumentError

RNG = np.random.default_rng(5)


def _run(build, *arrays):
    with dg.Graph().as_default():
        out = build(*[dg.constant(a) for a in arrays])
        with dg.Session() as sess:
            return sess.run(out)


# -- norms and moments ----------------------------------------------------------------------------
M = np.array([[1.0, -3.0], [2.0, 4.0]])


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        ({}, np.sqrt(30.0)),
        ({"ord": np.inf}, 4.0),  # TensorFlow: 4.0
        ({"ord": 1}, 10.0),
        ({"ord": 3, "axis": 1}, [3.0365891, 4.1601677]),  # TensorFlow's values
        ({"ord": 1, "axis": [0, 1]}, 7.0),  # TensorFlow: 7.0
        ({"ord": np.inf, "axis": [0, 1]}, 6.0),  # TensorFlow: 6.0
        ({"ord": "fro", "axis": [0, 1], "keepdims": True}, [[np.sqrt(30.0)]]),
        ({"keepdims": True}, [[np.sqrt(30.0)]]),
        ({"axis": -1}, np.linalg.norm(M, axis=-1)),
        ({"ord": 1, "axis": [1, 0]}, 6.0),  # rows as the columns
    ],
    ids=str,
)
def test_norm_matches_tensorflow(kwargs, expected):
    out = _run(lambda m: dg.norm(m, **kwargs), M)
    np.testing.assert_allclose(out, expected, rtol=1e-7)
    assert np.shape(out) == np.shape(expected)


def test_norm_refuses_unsupported_orders():
    with dg.Graph().as_default():
        m = dg.constant(M)
        with pytest.raises(ValueError, match="'ord' must be a supported vector norm, got -1"):
            dg.norm(m, ord=-1)
        with pytest.raises(ValueError, match="supported matrix norm"):
            dg.norm(m, ord=2, axis=[0, 1])
        with pytest.raises(ValueError, match="tuple of 2 unique integers"):
            dg.norm(m, axis=[0, 0])


@pytest.mark.parametrize(
    "fn",
    [
        lambda t: dg.norm(t),
        lambda t: dg.norm(t, ord=3.0, axis=0),
        lambda t: dg.norm(t, ord=1, axis=[0, 1]),
        lambda t: dg.reduce_euclidean_norm(t, axis=1, keepdims=True),
        lambda t: dg.reduce_variance(t, axis=0),
        lambda t: dg.reduce_std(t),
        lambda t: dg.clip_by_norm(t, 1.0, axes=[1]),
        lambda t: dg.clip_by_average_norm(t, 0.1),
        lambda t: dg.global_norm([t, None, t * 2.0]),
    ],
)
def test_norm_gradients(fn):
    check_gradients(fn, [RNG.uniform(0.5, 2.0, (3, 4))])


def test_moments_and_euclidean_norm_against_numpy():
    x = RNG.normal(size=(3, 4, 5))
    var, std, e = _run(
        lambda t: [
            dg.reduce_variance(t, axis=[0, 2], keepdims=True),
            dg.reduce_std(t, axis=1),
            dg.reduce_euclidean_norm(t, axis=[1, 2]),
        ],
        x,
    )
    np.testing.assert_allclose(var, x.var(axis=(0, 2), keepdims=True), rtol=1e-12)
    np.testing.assert_allclose(std, x.std(axis=1), rtol=1e-12)
    np.testing.assert_allclose(e, np.sqrt((x * x).sum(axis=(1, 2))), rtol=1e-12)
    assert _run(dg.reduce_euclidean_norm, np.array([1, 2, 3], np.int32)) == 3  # TF: 3
    with dg.Graph().as_default(), pytest.raises(TypeError, match="Received integer type"):
        dg.reduce_variance(dg.constant([1]))


def test_count_nonzero():
    x = np.array([[0, 1, 2], [0, 0, 3]], np.int32)
    rows, total = _run(lambda t: [dg.count_nonzero(t, axis=1), dg.count_nonzero(t)], x)
    assert rows.tolist() == [2, 1] and rows.dtype == np.int64 and total == 3
    strings = _run(lambda: dg.count_nonzero(dg.constant(["", "a", "b"]), dtype=dg.int32))
    assert strings == 2 and strings.dtype == np.int32
    flags = _run(lambda t: dg.count_nonzero(t, keepdims=True), np.array([[True, False]]))
    assert flags.tolist() == [[1]]


# -- clipping by norm -----------------------------------------------------------------------------
def test_clipping_values_match_tensorflow():
    x = np.array([[3.0, 4.0], [0.0, 0.5]], np.float32)
    by_norm, average = _run(
        lambda t: [dg.clip_by_norm(t, 1.0, axes=[1]), dg.clip_by_average_norm(t, 1.0)], x
    )
    np.testing.assert_allclose(by_norm, [[0.6, 0.8], [0.0, 0.5]], rtol=1e-6)  # TF's values
    np.testing.assert_allclose(average, [[2.3880894, 3.1841192], [0.0, 0.3980149]], rtol=1e-6)
    assert _run(lambda t: dg.clip_by_norm(t, 1.0), np.zeros(2)).tolist() == [0.0, 0.0]


def test_clip_by_global_norm_keeps_none_and_makes_nan_of_an_infinite_norm():
    with dg.Graph().as_default():
        a, b = dg.constant([3.0, 4.0]), dg.constant(12.0)
        clipped, norm = dg.clip_by_global_norm([a, None, b], 6.5)
        assert clipped[1] is None and len(clipped) == 3
        small, _ = dg.clip_by_global_norm([a, b], 100.0)
        given, used = dg.clip_by_global_norm([a], 1.0, use_norm=dg.constant(10.0))
        infinite, _ = dg.clip_by_global_norm([dg.constant([np.inf, 4.0])], 2.0)
        with dg.Session() as sess:
            values = sess.run([clipped[0], clipped[2], norm, small, given, used, infinite])
    np.testing.assert_allclose(values[0], [1.5, 2.0])
    np.testing.assert_allclose(values[1], 6.0)
    assert values[2] == 13.0
    np.testing.assert_allclose(values[3][0], [3.0, 4.0])
    np.testing.assert_allclose(values[4][0], [0.3, 0.4], rtol=1e-6)
    assert values[5] == 10.0
    assert np.isnan(values[6][0]).all()  # TensorFlow: [nan nan]
    with dg.Graph().as_default(), pytest.raises(TypeError, match="should be a sequence"):
        dg.clip_by_global_norm(dg.constant([1.0]), 1.0)


def test_clip_by_global_norm_in_a_training_loop():
    """compute_gradients -> clip_by_global_norm -> apply_gradients, a variable without a
    gradient among them (None passes through), against the same loop in NumPy."""
    rng = np.random.default_rng(0)
    x_data, y_data = rng.normal(size=(32, 3)), rng.normal(size=(32, 1))
    w0 = rng.normal(size=(3, 1)) * 5.0
    with dg.Graph().as_default():
        x, y = dg.placeholder(dg.float64, [None, 3]), dg.placeholder(dg.float64, [None, 1])
        w = dg.Variable(w0, name="w")
        unused = dg.Variable(np.zeros(2), name="unused")
        loss = dg.reduce_mean(dg.square(dg.matmul(x, w) - y))
        opt = dg.train.GradientDescentOptimizer(0.1)
        pairs = opt.compute_gradients(loss, var_list=[w, unused])
        grads, norm = dg.clip_by_global_norm([g for g, _ in pairs], 1.0)
        assert grads[1] is None
        variables = [v for _, v in pairs]
        train = opt.apply_gradients(
            [(g, v) for g, v in zip(grads, variables, strict=True) if g is not None]
        )
        norms = []
        with dg.Session() as sess:
            sess.run(dg.global_variables_initializer())
            for _ in range(5):
                _, n = sess.run([train, norm], {x: x_data, y: y_data})
                norms.append(float(n))
            final = sess.run(w)
    expected, w_np = [], w0.copy()
    for _ in range(5):
        g = 2 * x_data.T @ (x_data @ w_np - y_data) / len(x_data)
        n = np.linalg.norm(g)
        expected.append(n)
        w_np -= 0.1 * g * min(1.0, 1.0 / n)
    np.testing.assert_allclose(norms, expected, rtol=1e-10)
    np.testing.assert_allclose(final, w_np, rtol=1e-10)
    assert norms[0] > 1.0  # the clipping mattered


# -- cumulative sums and products -----------------------------------------------------------------
@pytest.mark.parametrize("exclusive", [False, True])
@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_cumsum_and_cumprod_against_numpy(exclusive, reverse, axis):
    x = RNG.uniform(0.5, 2.0, (3, 4))

    def reference(scan, identity):
        v = np.flip(x, axis) if reverse else x
        out = scan(v, axis=axis)
        if exclusive:
            first = np.full_like(np.take(out, [0], axis=axis), identity)
            out = np.concatenate([first, np.delete(out, -1, axis=axis)], axis=axis)
        return np.flip(out, axis) if reverse else out

    s, p = _run(
        lambda t: [
            dg.cumsum(t, axis, exclusive=exclusive, reverse=reverse),
            dg.cumprod(t, axis, exclusive=exclusive, reverse=reverse),
        ],
        x,
    )
    np.testing.assert_allclose(s, reference(np.cumsum, 0.0), rtol=1e-12)
    np.testing.assert_allclose(p, reference(np.cumprod, 1.0), rtol=1e-12)
    check_gradients(lambda t: dg.cumsum(t, axis, exclusive=exclusive, reverse=reverse), [x])
    check_gradients(lambda t: dg.cumprod(t, axis, exclusive=exclusive, reverse=reverse), [x])


def test_cumsum_tensorflow_values_and_dtypes():
    out = _run(lambda t: dg.cumsum(t, axis=1, exclusive=True, reverse=True),
               np.array([[1, 2, 3], [4, 5, 6]], np.int32))  # fmt: skip
    assert out.tolist() == [[5, 3, 0], [11, 6, 0]] and out.dtype == np.int32  # TF's values
    assert _run(lambda t: dg.cumprod(t, exclusive=True), np.array([1.0, 2.0, 3.0])).tolist() == [
        1.0,
        1.0,
        2.0,
    ]
    assert _run(dg.cumsum, np.zeros((0, 2))).shape == (0, 2)
    with dg.Graph().as_default(), pytest.raises(ValueError, match="axis 2 is out of range"):
        dg.cumsum(dg.constant([[1.0]]), axis=2)


# -- segments -------------------------------------------------------------------------------------
DATA = np.array([1.0, 2.0, 3.0, 4.0])
SORTED = np.array([0, 0, 2, 2], np.int32)


def test_sorted_segments_match_tensorflow():
    out = _run(
        lambda d, i: [dg.segment_sum(d, i), dg.segment_mean(d, i), dg.segment_max(d, i),
                      dg.segment_min(d, i), dg.segment_prod(d, i)],
        DATA, SORTED,
    )  # fmt: skip
    assert [o.tolist() for o in out] == [  # TensorFlow's values, empty segment 1 included
        [3.0, 0.0, 7.0],
        [1.5, 0.0, 3.5],
        [2.0, 0.0, 4.0],
        [1.0, 0.0, 3.0],
        [2.0, 1.0, 12.0],
    ]


def test_unsorted_segments_match_tensorflow():
    ids = np.array([0, 3, -1, 3], np.int32)
    total, top, low, prod, mean, sqrt_n = _run(
        lambda d, i: [dg.unsorted_segment_sum(d, i, 5), dg.unsorted_segment_max(d, i, 5),
                      dg.unsorted_segment_min(d, i, 5), dg.unsorted_segment_prod(d, i, 5),
                      dg.unsorted_segment_mean(d, i, 5), dg.unsorted_segment_sqrt_n(d, i, 5)],
        DATA, ids,
    )  # fmt: skip
    lowest = np.finfo(np.float64).min
    assert total.tolist() == [1.0, 0.0, 0.0, 6.0, 0.0]  # TensorFlow: [1 0 0 6 0]
    assert top.tolist() == [1.0, lowest, lowest, 4.0, lowest]  # TF: float's lowest
    assert low.tolist()[3] == 2.0 and low.tolist()[1] == np.finfo(np.float64).max
    assert prod.tolist() == [1.0, 1.0, 1.0, 8.0, 1.0]
    assert mean.tolist() == [1.0, 0.0, 0.0, 3.0, 0.0]
    np.testing.assert_allclose(sqrt_n, [1.0, 0.0, 0.0, 6.0 / np.sqrt(2.0), 0.0])


def test_unsorted_segments_with_matrix_ids_and_rows():
    data = RNG.normal(size=(2, 3, 4))
    ids = np.array([[0, 2, 0], [1, 1, -1]], np.int64)
    out = _run(lambda d, i: dg.unsorted_segment_sum(d, i, 3), data, ids)
    expected = np.zeros((3, 4))
    for (r, c), s in np.ndenumerate(ids):
        if s >= 0:
            expected[s] += data[r, c]
    np.testing.assert_allclose(out, expected, rtol=1e-12)
    with dg.Graph().as_default():
        t = dg.unsorted_segment_sum(dg.constant(data), dg.constant(ids), 3)
        assert t.shape == (3, 4)
        assert dg.segment_sum(dg.constant(DATA), dg.constant(SORTED)).shape == (3,)


@pytest.mark.parametrize(
    "fn",
    [dg.segment_sum, dg.segment_mean, dg.segment_max, dg.segment_min, dg.segment_prod],
    ids=lambda f: f.__name__,
)
def test_sorted_segment_gradients(fn):
    data = RNG.uniform(0.5, 2.0, (5, 3))
    ids = np.array([0, 0, 1, 3, 3], np.int32)
    check_gradients(fn, [data, ids])


@pytest.mark.parametrize(
    "fn",
    [dg.unsorted_segment_sum, dg.unsorted_segment_max, dg.unsorted_segment_min,
     dg.unsorted_segment_prod, dg.unsorted_segment_mean, dg.unsorted_segment_sqrt_n],
    ids=lambda f: f.__name__,
)  # fmt: skip
def test_unsorted_segment_gradients(fn):
    data = RNG.uniform(0.5, 2.0, (5, 3))
    ids = np.array([2, 0, -1, 1, 0], np.int32)
    check_gradients(lambda d, i: fn(d, i, 3), [data, ids])


def test_segment_max_gradient_is_shared_among_ties_and_prod_handles_zeros():
    with dg.Graph().as_default():
        d = dg.constant([2.0, 2.0, 1.0, 0.0, 3.0, 0.0, 0.0])
        ids = dg.constant([0, 0, 0, 1, 1, 2, 2])
        (gmax,) = dg.gradients(dg.segment_max(d, ids), [d])
        (gprod,) = dg.gradients(dg.segment_prod(d, ids), [d])
        with dg.Session() as sess:
            gmax, gprod = sess.run([gmax, gprod])
    assert gmax.tolist() == [0.5, 0.5, 0.0, 0.0, 1.0, 0.5, 0.5]
    assert gprod.tolist() == [2.0, 2.0, 4.0, 3.0, 0.0, 0.0, 0.0]


def test_segment_errors_in_tensorflows_words():
    with pytest.raises(InvalidArgumentError, match="segment ids are not increasing"):
        _run(dg.segment_sum, np.array([1.0, 2.0]), np.array([1, 0], np.int32))
    with pytest.raises(InvalidArgumentError, match=r"segment_ids\[1\] = 7 is out of range"):
        _run(lambda d, i: dg.unsorted_segment_sum(d, i, 3), np.array([1.0, 2.0]),
             np.array([0, 7], np.int32))  # fmt: skip
    with pytest.raises(InvalidArgumentError, match="Segment id -1 out of range"):
        _run(dg.segment_sum, np.array([1.0, 2.0]), np.array([-1, 0], np.int32))


# -- counts ---------------------------------------------------------------------------------------
def test_bincount_and_confusion_matrix_match_tensorflow():
    arr = np.array([1, 1, 4], np.int32)
    plain, capped, weighted = _run(
        lambda a: [dg.bincount(a, minlength=2), dg.bincount(a, maxlength=3),
                   dg.bincount(a, weights=dg.constant([0.5, 1.0, 2.0]))],
        arr,
    )  # fmt: skip
    assert plain.tolist() == [0, 2, 0, 0, 1] and plain.dtype == np.int32  # TF's values
    assert capped.tolist() == [0, 2, 0]
    assert weighted.tolist() == [0.0, 1.5, 0.0, 0.0, 2.0] and weighted.dtype == np.float32
    with pytest.raises(InvalidArgumentError, match="Input arr must be non-negative!"):
        _run(dg.bincount, np.array([-1, 2], np.int32))
    m, w = _run(
        lambda: [dg.confusion_matrix([0, 1, 2, 1], [0, 2, 2, 1]),
                 dg.confusion_matrix([0, 1], [1, 1], num_classes=3, weights=[2, 3])]
    )  # fmt: skip
    assert m.tolist() == [[1, 0, 0], [0, 1, 1], [0, 0, 1]]  # TensorFlow's values
    assert w.tolist() == [[0, 2, 0], [0, 3, 0], [0, 0, 0]]


@pytest.mark.virtual_gpus(1)
def test_on_a_virtual_gpu(dg_session):
    with dg.device("/gpu:0"):
        d = dg.constant([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
        ids = dg.constant([1, 0, 1])
        outs = [
            dg.unsorted_segment_sum(d, ids, 2),
            dg.segment_max(d, dg.constant([0, 0, 1])),
            dg.cumsum(d, axis=1, reverse=True),
            dg.norm(d, axis=1),
            dg.bincount(ids),
        ]
        (g,) = dg.gradients(dg.reduce_sum(outs[0]) + dg.reduce_sum(outs[1]), [d])
    s, m, c, n, b = dg_session.run(outs)
    assert s.tolist() == [[3.0, 4.0], [6.0, 8.0]]
    assert m.tolist() == [[3.0, 4.0], [5.0, 6.0]]
    assert c.tolist() == [[3.0, 2.0], [7.0, 4.0], [11.0, 6.0]]
    np.testing.assert_allclose(n, np.linalg.norm([[1, 2], [3, 4], [5, 6]], axis=1), rtol=1e-6)
    assert b.tolist() == [1, 2]
    assert dg_session.run(g).tolist() == [[1.0, 1.0], [2.0, 2.0], [2.0, 2.0]]
    assigned = {op.name: op.assigned for op in dg_session.placement(outs).ops}
    assert all("GPU" in assigned[t.op.name] for t in outs)


def test_scatter_goes_through_the_host_for_what_cupy_cannot_scatter():
    """On CuPy, products and dtypes cupyx cannot scatter are done on the host (here a
    stand-in array module that is not NumPy, so the kernel takes its CuPy branch)."""
    from daskgraph.kernels import segments

    class NotNumPy:
        asnumpy = staticmethod(np.asarray)
        asarray = staticmethod(np.asarray)

    out = np.ones(3)
    segments._scatter(NotNumPy, "prod", out, np.array([0, 0, 2]), np.array([2.0, 3.0, 4.0]))
    assert out.tolist() == [6.0, 1.0, 4.0]
    pairs = np.zeros((2, 2), np.int64)
    ids = (np.array([0, 1, 1]), np.array([1, 1, 1]))
    segments._scatter(NotNumPy, "sum", pairs, ids, np.array([1, 2, 3], np.int64))
    assert pairs.tolist() == [[0, 1], [0, 5]]
