"""Gradients of the array-manipulation ops against central finite differences, their
unknown-dimension paths against NumPy, and second derivatives through the gradient ops."""

from __future__ import annotations

import numpy as np
import pytest

import daskgraph as dg
from daskgraph.compat.gradient_check import check_gradients

RNG = np.random.default_rng(11)


def _r(*shape: int) -> np.ndarray:
    return RNG.uniform(-2.0, 2.0, shape)


X = _r(3, 4, 5)

SLICES = {
    "mixed": lambda x: x[1:, ::-1, None, ..., 0],
    "int": lambda x: x[1],
    "steps": lambda x: x[::2, 3:0:-2, -1],
    "ellipsis": lambda x: x[..., 1:4],
    "strided_slice masks": lambda x: dg.strided_slice(
        x, [0, 1, 0], [0, 0, 0], [1, 1, 1], begin_mask=1, end_mask=5, shrink_axis_mask=2
    ),
    "slice": lambda x: dg.slice(x, [1, 0, 2], [-1, 3, 2]),
}


@pytest.mark.parametrize("fn", list(SLICES.values()), ids=list(SLICES))
def test_slicing_gradients(fn):
    check_gradients(fn, [X])


@pytest.mark.parametrize("splits", [3, [1, -1, 1]])
def test_split_gradients(splits):
    def fn(x):
        pieces = dg.split(x, splits, axis=1)
        return pieces[0] * 2.0 + pieces[-1] * pieces[-1]

    check_gradients(fn, [_r(2, 3, 2)])


@pytest.mark.parametrize("axis", [0, 2, -1])
def test_concat_gradients(axis):
    a, b = _r(2, 3, 4), _r(2, 3, 4)
    check_gradients(lambda x, y: dg.concat([x, y * y, x], axis), [a, b])


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_stack_and_unstack_gradients(axis):
    check_gradients(lambda x, y: dg.stack([x, y * 3.0], axis=axis), [_r(2, 3), _r(2, 3)])

    def unstacked(x):
        rows = dg.unstack(x, axis=axis)
        return rows[0] * rows[-1]

    check_gradients(unstacked, [_r(3, 2, 4)])


def test_expand_dims_squeeze_and_tile_gradients():
    check_gradients(lambda x: dg.expand_dims(x, -1) * 2.0, [_r(2, 3)])
    check_gradients(lambda x: dg.squeeze(x) * 2.0, [_r(1, 3, 1)])
    check_gradients(lambda x: dg.squeeze(x, [0]), [_r(1, 3, 1)])
    check_gradients(lambda x: dg.tile(x, [2, 3]), [_r(2, 3)])
    check_gradients(lambda x: dg.tile(x, [1, 1, 2]), [_r(2, 1, 3)])


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_gather_gradient_adds_up_repeated_indices(axis):
    indices = np.array([[2, 0], [2, 2]], dtype=np.int32)
    check_gradients(lambda p, i: dg.gather(p, i, axis=axis), [_r(3, 3, 4), indices])


def test_fill_gradient_goes_to_the_value_only():
    check_gradients(lambda v: dg.fill([2, 3], v), [np.array(1.5)])

    def runtime_shape(x, v):
        return dg.fill(dg.shape(x), v) * x

    check_gradients(runtime_shape, [_r(2, 2), np.array(0.5)])


def test_stop_gradient_and_the_non_differentiable_ops():
    with dg.Graph().as_default():
        x = dg.constant(3.0)
        y = x * dg.stop_gradient(x) + dg.reduce_sum(dg.zeros_like(x) + dg.ones_like(x))
        h = dg.one_hot([1, 0], 2) * x
        gx, gh = dg.gradients([y, h], [x, x])
        with dg.Session() as sess:
            assert float(sess.run(gx)) == 3.0 + 2.0  # d(x * const)/dx + d(sum(h))/dx
            assert float(sess.run(gh)) == 5.0


def test_gradients_with_unknown_dimensions_take_runtime_shapes():
    """Split of an unknown dimension (equal pieces), concat of tensors of unknown sizes
    (the offsets are read at run time) and a slice's gradient of a fed batch."""
    with dg.Graph().as_default():
        a = dg.placeholder(dg.float64, [None, 2])
        b = dg.placeholder(dg.float64, [None, 2])
        first, second = dg.split(a, 2)
        joined = dg.concat([a, b * 2.0], axis=0)
        loss = dg.reduce_sum(first * 3.0) + dg.reduce_sum(second) + dg.reduce_sum(joined * joined)
        loss += dg.reduce_sum(b[1:, ::-1] * 5.0)
        ga, gb = dg.gradients(loss, [a, b])
        va, vb = _r(4, 2), _r(3, 2)
        with dg.Session() as sess:
            got_a, got_b = sess.run([ga, gb], {a: va, b: vb})
    want_a = np.concatenate([np.full((2, 2), 3.0), np.ones((2, 2))]) + 2 * va
    want_b = 8 * vb + np.concatenate([np.zeros((1, 2)), np.full((2, 2), 5.0)])
    np.testing.assert_allclose(got_a, want_a)
    np.testing.assert_allclose(got_b, want_b)


SECOND_ORDER = {
    "slice": lambda x: x[1:, ::2],
    "tile": lambda x: dg.tile(x, [2, 1]),
    "gather": lambda x: dg.gather(x, [0, 0, 2]),
}


@pytest.mark.parametrize("inner", list(SECOND_ORDER.values()), ids=list(SECOND_ORDER))
def test_second_derivatives_through_the_gradient_ops(inner):
    """The gradient of ``sum(inner(x) ** 3)`` goes through SliceGrad / TileGrad / GatherGrad,
    whose own gradients are then checked."""

    def first_derivative(x):
        (g,) = dg.gradients(dg.reduce_sum(inner(x) * inner(x) * inner(x)), [x])
        return g

    check_gradients(first_derivative, [_r(3, 4)], atol=1e-4)
