"""Array-manipulation ops (slicing, concat/split, stack/unstack, expand_dims/squeeze, fills,
one_hot, shape/size, tile, gather, stop_gradient): values against NumPy, static shapes, and
clear errors for bad axes, shapes and indices."""

from __future__ import annotations

import numpy as np
import pytest

import daskgraph as dg
import daskgraph.compat.v1 as tf
from daskgraph import errors

X = np.arange(3 * 4 * 5, dtype=np.float32).reshape(3, 4, 5)


def run(fetches, feeds=None):
    with dg.Session() as sess:
        return sess.run(fetches, feeds)


@pytest.fixture(autouse=True)
def graph():
    with dg.Graph().as_default() as g:
        yield g


# -- tensor[...] and strided_slice ----------------------------------------------------------------
KEYS = {
    "mixed": (slice(1, None), slice(None, None, -1), None, Ellipsis, 0),
    "int": 0,
    "negative int": (-1, slice(None), 2),
    "ellipsis last axis": (Ellipsis, 1),
    "newaxis first": None,
    "newaxis middle": (slice(None), None, slice(1, 3)),
    "steps": (slice(None, None, 2), slice(None, None, -2)),
    "negative bounds": (slice(-2, None), slice(-3, None, -1)),
    "empty": slice(5, None),
    "numpy int": (np.int64(2), np.int32(-1)),
    "clipped": (slice(-10, 10), slice(2, 100, 3)),
    "full": Ellipsis,
}


@pytest.mark.parametrize("key", list(KEYS.values()), ids=list(KEYS))
def test_getitem_matches_numpy(key):
    x = dg.constant(X)
    p = dg.placeholder(dg.float32, [None, None, 5])
    expected = X[key]
    y, z = x[key], p[key]
    assert y.shape == expected.shape
    assert len(z.shape) == expected.ndim
    got, fed = run([y, z], {p: X})
    np.testing.assert_array_equal(got, expected)
    np.testing.assert_array_equal(fed, expected)
    assert y.op.type == "StridedSlice" and y.op.name.startswith("strided_slice")


def test_getitem_static_shapes_with_unknown_dims():
    p = dg.placeholder(dg.float32, [None, 4, 5])
    assert p[1:, ::-1, None, ..., 0].shape == (None, 4, 1)
    assert p[0].shape == (4, 5)
    assert p[:, 1::2].shape == (None, 2, 5)
    assert dg.placeholder(dg.float32)[0].shape is None


def test_getitem_of_a_variable_and_a_scalar_constant_index():
    v = dg.Variable(X)
    y = v[dg.constant(1), :2]
    with dg.Session() as sess:
        sess.run(dg.global_variables_initializer())
        np.testing.assert_array_equal(sess.run(y), X[1, :2])


@pytest.mark.parametrize(
    ("key", "error", "match"),
    [
        ((0, 0, 0, 0), ValueError, "too many indices"),
        (3, ValueError, "index 3 is out of range for dimension 0"),
        ((0, -5), ValueError, "index -5 is out of range for dimension 1"),
        (slice(None, None, 0), ValueError, "step cannot be zero"),
        ((Ellipsis, Ellipsis), ValueError, "single ellipsis"),
        ([0, 1], TypeError, "Use gather"),
        (1.5, TypeError, "only ints, slices"),
        (True, TypeError, "only ints, slices"),
        (slice(0.5, 2), TypeError, "slice bounds must be ints"),
    ],
)
def test_getitem_errors(key, error, match):
    with pytest.raises(error, match=match):
        dg.constant(X)[key]


def test_getitem_with_a_computed_tensor_is_refused():
    x = dg.constant(X)
    with pytest.raises(TypeError, match="Use gather"):
        x[dg.constant(1) + 1]


def test_getitem_out_of_range_at_run_time_names_the_op():
    p = dg.placeholder(dg.float32, [None])
    with pytest.raises(errors.InvalidArgumentError, match="strided_slice"):
        run(p[4], {p: np.zeros(3, np.float32)})


STRIDED = [
    # (begin, end, strides, masks, NumPy key)
    ([1, 0], [3, 4], [1, 2], {}, (slice(1, 3), slice(0, 4, 2))),
    ([0, 2, 1], [0, 0, 3], [1, -1, 1], {"begin_mask": 1, "end_mask": 3},
     (slice(None), slice(2, None, -1), slice(1, 3))),
    ([0, 1], [0, 0], [1, 1], {"ellipsis_mask": 1, "shrink_axis_mask": 2}, (Ellipsis, 1)),
    ([0, 0, 2], [0, 0, 4], [1, 1, 1], {"new_axis_mask": 2, "shrink_axis_mask": 1},
     (0, None, slice(2, 4))),
    ([-1], [0], [1], {"shrink_axis_mask": 1}, -1),
    ([2], [-4], [-1], {}, slice(2, -4, -1)),
]  # fmt: skip


@pytest.mark.parametrize(("begin", "end", "strides", "masks", "key"), STRIDED)
def test_strided_slice_masks_match_numpy(begin, end, strides, masks, key):
    y = dg.strided_slice(dg.constant(X), begin, end, strides, **masks)
    expected = X[key]
    assert y.shape == expected.shape
    np.testing.assert_array_equal(run(y), expected)


def test_strided_slice_errors():
    x = dg.constant(X)
    with pytest.raises(ValueError, match="one length"):
        dg.strided_slice(x, [0, 0], [1], [1])
    with pytest.raises(ValueError, match="strides\\[0\\] must be non-zero"):
        dg.strided_slice(x, [0], [1], [0])
    with pytest.raises(ValueError, match="one bit"):
        dg.strided_slice(x, [0, 0], [1, 1], [1, 1], ellipsis_mask=3)
    with pytest.raises(TypeError, match="begin must be known"):
        dg.strided_slice(x, dg.shape(x), [1], [1])


def test_slice_values_and_bounds():
    y = dg.slice(dg.constant(X), [1, 0, 2], [-1, 2, 3])
    assert y.shape == (2, 2, 3) and y.op.type == "Slice"
    np.testing.assert_array_equal(run(y), X[1:, 0:2, 2:5])
    with pytest.raises(ValueError, match="out of bounds of dimension 2"):
        dg.slice(dg.constant(X), [0, 0, 3], [1, 1, 3])
    with pytest.raises(ValueError, match="one entry per dimension"):
        dg.slice(dg.constant(X), [0, 0], [1, 1])
    with pytest.raises(ValueError, match="begin must be >= 0"):
        dg.slice(dg.constant(X), [-1, 0, 0], [1, 1, 1])
    p = dg.placeholder(dg.float32, [None])
    with pytest.raises(errors.InvalidArgumentError, match="out of bounds"):
        run(dg.slice(p, [1], [3]), {p: np.zeros(3, np.float32)})


# -- concat, split, stack, unstack ----------------------------------------------------------------
@pytest.mark.parametrize("axis", [0, 1, 2, -1, -3])
def test_concat_matches_numpy(axis):
    a, b = X, X[:, :, ::-1] * 2 if axis in (0, -3) else X * 2
    y = dg.concat([dg.constant(a), dg.constant(b)], axis)
    expected = np.concatenate([a, b], axis=axis)
    assert y.shape == expected.shape
    np.testing.assert_array_equal(run(y), expected)


def test_concat_shapes_python_values_and_errors():
    p = dg.placeholder(dg.float32, [None, 2])
    y = dg.concat([p, [[1.0, 2.0]]], 0)
    assert y.shape == (None, 2) and y.dtype == dg.float32
    np.testing.assert_array_equal(run(y, {p: np.zeros((1, 2))}), [[0, 0], [1, 2]])
    assert dg.concat([p], 0).op.type == "Identity"
    with pytest.raises(ValueError, match="one rank"):
        dg.concat([p, dg.constant([1.0])], 0)
    with pytest.raises(ValueError, match="dimension 1 differs"):
        dg.concat([p, dg.constant([[1.0, 2.0, 3.0]])], 0)
    with pytest.raises(ValueError, match="axis 2 is out of range"):
        dg.concat([p, p], 2)
    with pytest.raises(ValueError, match="scalars"):
        dg.concat([dg.constant(1.0), dg.constant(2.0)], 0)
    with pytest.raises(TypeError, match="one dtype"):
        dg.concat([p, dg.constant([[1, 2]])], 0)


@pytest.mark.parametrize(
    ("splits", "axis"), [(2, 0), (3, 0), (5, -1), ([1, 3], 1), ([2, -1, 1], 1), ([0, 5], 2)]
)
def test_split_matches_numpy(splits, axis):
    x = np.arange(6 * 4 * 5, dtype=np.float32).reshape(6, 4, 5)
    pieces = dg.split(dg.constant(x), splits, axis)
    if isinstance(splits, int):
        expected = np.split(x, splits, axis)
    else:
        sizes = [x.shape[axis] - sum(s for s in splits if s != -1) if s == -1 else s
                 for s in splits]  # fmt: skip
        expected = np.split(x, np.cumsum(sizes)[:-1], axis)
    assert [p.shape for p in pieces] == [e.shape for e in expected]
    for got, want in zip(run(pieces), expected, strict=True):
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("splits", [3, [1, -1, 2], [2, 1, -1], [-1, 2], [1, 2, 3]])
def test_split_of_an_unknown_dimension(splits):
    p = dg.placeholder(dg.float32, [None, 2])
    pieces = dg.split(p, splits)
    x = np.arange(12, dtype=np.float32).reshape(6, 2)
    rest = 6 - sum(s for s in np.atleast_1d(splits) if s != -1)
    sizes = [2, 2, 2] if splits == 3 else [rest if s == -1 else s for s in splits]
    expected = np.split(x, np.cumsum(sizes)[:-1])
    for got, want in zip(run(pieces, {p: x}), expected, strict=True):
        np.testing.assert_array_equal(got, want)
    assert all(piece.shape == (None, 2) for piece in pieces)


def test_split_names_and_errors():
    pieces = dg.split(dg.constant(X), 3, name="parts")
    assert [p.op.name for p in pieces] == ["parts/output_0", "parts/output_1", "parts/output_2"]
    with pytest.raises(ValueError, match="into 2 equal pieces"):
        dg.split(dg.constant(X), 2)
    with pytest.raises(ValueError, match="do not add up"):
        dg.split(dg.constant(X), [1, 1])
    with pytest.raises(ValueError, match="at most one of them -1"):
        dg.split(dg.constant(X), [-1, -1, 1])
    with pytest.raises(ValueError, match="axis 3 is out of range"):
        dg.split(dg.constant(X), 1, axis=3)
    with pytest.raises(ValueError, match="num is 2"):
        dg.split(dg.constant(X), 3, num=2)
    p = dg.placeholder(dg.float32, [None])
    with pytest.raises(errors.InvalidArgumentError, match="equal pieces"):
        run(dg.split(p, 2), {p: np.zeros(3, np.float32)})


@pytest.mark.parametrize("axis", [0, 1, 3, -1, -4])
def test_stack_and_unstack_match_numpy(axis):
    values = [X, X + 1, X * 2]
    y = dg.stack([dg.constant(v) for v in values], axis=axis)
    expected = np.stack(values, axis=axis)
    assert y.shape == expected.shape
    np.testing.assert_array_equal(run(y), expected)
    rows = dg.unstack(dg.constant(expected), axis=axis)
    assert len(rows) == 3 and rows[0].shape == X.shape
    for got, want in zip(run(rows), values, strict=True):
        np.testing.assert_array_equal(got, want)


def test_stack_unstack_errors_and_unknown_dims():
    p = dg.placeholder(dg.float32, [None, 3])
    assert dg.stack([p, p], axis=1).shape == (None, 2, 3)
    assert [t.shape for t in dg.unstack(p, axis=1)] == [(None,)] * 3
    with pytest.raises(ValueError, match="cannot infer num"):
        dg.unstack(p)
    with pytest.raises(ValueError, match="num is 2"):
        dg.unstack(p, num=2, axis=1)
    with pytest.raises(ValueError, match="axis 3 is out of range"):
        dg.stack([p, p], axis=3)
    with pytest.raises(ValueError, match="dimension 1 differs"):
        dg.stack([p, dg.placeholder(dg.float32, [None, 4])])
    with pytest.raises(ValueError, match="rank of"):
        dg.unstack(dg.placeholder(dg.float32))
    with pytest.raises(ValueError, match=r"axis 0 is out of range \[0, 0\)"):
        dg.unstack(dg.constant(1.0))
    rows = dg.unstack(p, num=2)
    got = run(rows, {p: np.ones((2, 3), np.float32)})
    np.testing.assert_array_equal(got[1], np.ones(3))


# -- expand_dims, squeeze, tile, shape, size ------------------------------------------------------
@pytest.mark.parametrize("axis", [0, 1, 3, -1, -4])
def test_expand_dims(axis):
    y = dg.expand_dims(dg.constant(X), axis)
    assert y.shape == np.expand_dims(X, axis).shape
    np.testing.assert_array_equal(run(y), np.expand_dims(X, axis))


def test_expand_dims_errors_and_tf1_dim():
    assert dg.expand_dims(dg.constant(X), dim=0).shape == (1, 3, 4, 5)
    with pytest.raises(ValueError, match="axis 4 is out of range"):
        dg.expand_dims(dg.constant(X), 4)
    with pytest.raises(ValueError, match="both 'axis' and 'dim'"):
        dg.expand_dims(dg.constant(X), 0, dim=0)
    with pytest.raises(ValueError, match="axis must be given"):
        dg.expand_dims(dg.constant(X))


@pytest.mark.parametrize("axis", [None, 0, [2], -1, [0, -1], []])
def test_squeeze(axis):
    x = np.arange(6, dtype=np.float32).reshape(1, 6, 1)
    y = dg.squeeze(dg.constant(x), axis)
    expected = np.squeeze(x, axis=None if axis in (None, []) else tuple(np.atleast_1d(axis)))
    assert y.shape == expected.shape
    np.testing.assert_array_equal(run(y), expected)


def test_squeeze_errors_and_unknown_dims():
    p = dg.placeholder(dg.float32, [None, 3, 1])
    assert dg.squeeze(p).shape is None
    assert dg.squeeze(p, squeeze_dims=[2]).shape == (None, 3)
    with pytest.raises(ValueError, match="dimension 1 of 'Placeholder:0', of size 3"):
        dg.squeeze(p, 1)
    with pytest.raises(ValueError, match="axis 3 is out of range"):
        dg.squeeze(p, 3)
    with pytest.raises(errors.InvalidArgumentError, match="Squeeze"):
        run(dg.squeeze(p, 0), {p: np.zeros((2, 3, 1), np.float32)})
    np.testing.assert_array_equal(run(dg.squeeze(p), {p: np.ones((1, 3, 1))}), np.ones(3))


def test_tile():
    y = dg.tile(dg.constant(X), [2, 1, 3])
    assert y.shape == (6, 4, 15)
    np.testing.assert_array_equal(run(y), np.tile(X, [2, 1, 3]))
    with pytest.raises(ValueError, match="multiples has 2 entries"):
        dg.tile(dg.constant(X), [2, 1])
    with pytest.raises(ValueError, match=">= 0"):
        dg.tile(dg.constant(X), [2, 1, -1])


def test_shape_and_size():
    p = dg.placeholder(dg.float32, [None, 5])
    s, n, s64 = dg.shape(p), dg.size(p), dg.shape(p, out_type=dg.int64)
    assert (s.shape, s.dtype, n.shape, n.dtype, s64.dtype) == ((2,), dg.int32, (), dg.int32,
                                                               dg.int64)  # fmt: skip
    got = run([s, n, s64], {p: np.zeros((3, 5), np.float32)})
    np.testing.assert_array_equal(got[0], [3, 5])
    assert got[1] == 15 and got[2].dtype == np.int64
    with pytest.raises(TypeError, match="out_type"):
        dg.shape(p, out_type=dg.float32)


# -- fills and one_hot ----------------------------------------------------------------------------
def test_zeros_ones_fill_with_static_and_runtime_shapes():
    p = dg.placeholder(dg.float32, [None, 2])
    z, o = dg.zeros([2, 3]), dg.ones(dg.shape(p), dg.int64)
    f = dg.fill(dg.shape(p), 7.5)
    assert (z.shape, z.dtype, o.shape, o.dtype, f.shape) == ((2, 3), dg.float32, (None, None),
                                                             dg.int64, (None, None))  # fmt: skip
    assert z.op.name == "zeros" and z.op.type == "Fill"
    got = run([z, o, f, dg.zeros(4, dg.bool_), dg.fill([2], 3)], {p: np.zeros((3, 2))})
    np.testing.assert_array_equal(got[0], np.zeros((2, 3), np.float32))
    assert got[1].dtype == np.int64 and got[1].shape == (3, 2) and (got[1] == 1).all()
    np.testing.assert_array_equal(got[2], np.full((3, 2), 7.5, np.float32))
    assert got[3].dtype == np.bool_ and not got[3].any()
    np.testing.assert_array_equal(got[4], [3, 3])


def test_fill_errors():
    with pytest.raises(ValueError, match="value must be a scalar"):
        dg.fill([2], [1.0, 2.0])
    with pytest.raises(ValueError, match=">= 0"):
        dg.zeros([2, -1])
    with pytest.raises(TypeError, match="1-D int32 or int64"):
        dg.zeros(dg.placeholder(dg.float32, [2]))
    with pytest.raises(TypeError, match="list of ints"):
        dg.ones([2.5])


def test_zeros_like_and_ones_like():
    p = dg.placeholder(dg.float32, [None, 2])
    z, o = dg.zeros_like(p), dg.ones_like(p, dtype=dg.int32)
    assert (z.shape, z.dtype, o.dtype) == ((None, 2), dg.float32, dg.int32)
    got = run([z, o], {p: np.ones((3, 2))})
    np.testing.assert_array_equal(got[0], np.zeros((3, 2), np.float32))
    np.testing.assert_array_equal(got[1], np.ones((3, 2), np.int32))
    assert got[1].dtype == np.int32


@pytest.mark.parametrize("axis", [None, -1, 0, 1, 2])
def test_one_hot_matches_a_numpy_reference(axis):
    indices = np.array([[0, 2, -1], [3, 1, 1]])  # -1 and 3 are out of range: all off
    h = dg.one_hot(indices, 3, on_value=5.0, off_value=-1.0, axis=axis)
    ref = np.where(indices[..., None] == np.arange(3), 5.0, -1.0).astype(np.float32)
    if axis not in (None, -1):
        ref = np.moveaxis(ref, -1, axis)
    assert h.shape == ref.shape and h.dtype == dg.float32
    np.testing.assert_array_equal(run(h), ref)


def test_one_hot_dtypes_and_errors():
    assert dg.one_hot([1], 2).dtype == dg.float32
    assert dg.one_hot([1], 2, on_value=3).dtype == dg.int32
    assert dg.one_hot([1], 2, dtype=dg.int64).dtype == dg.int64
    np.testing.assert_array_equal(run(dg.one_hot([1], 2, on_value=3)), [[0, 3]])
    with pytest.raises(TypeError, match="indices must be"):
        dg.one_hot([1.0], 2)
    with pytest.raises(ValueError, match="depth must be"):
        dg.one_hot([1], -2)
    with pytest.raises(ValueError, match="axis must be -1 or in"):
        dg.one_hot([1], 2, axis=2)


# -- gather and stop_gradient ---------------------------------------------------------------------
@pytest.mark.parametrize("axis", [0, 1, 2, -1])
def test_gather_matches_numpy(axis):
    indices = np.array([[0, 2], [2, 2]])
    y = dg.gather(dg.constant(X), indices, axis=axis)
    expected = np.take(X, indices, axis=axis)
    assert y.shape == expected.shape
    np.testing.assert_array_equal(run(y), expected)


def test_gather_errors():
    with pytest.raises(TypeError, match="int32 or int64"):
        dg.gather(dg.constant(X), [0.5])
    with pytest.raises(ValueError, match="axis 3 is out of range"):
        dg.gather(dg.constant(X), [0], axis=3)
    for bad in ([3], [-1]):
        with pytest.raises(errors.InvalidArgumentError, match=r"GatherV2.*not in \[0, 3\)"):
            run(dg.gather(dg.constant(X), bad))


def test_stop_gradient_is_the_identity_forward():
    y = dg.stop_gradient(dg.constant(X))
    assert y.op.type == "StopGradient" and y.shape == X.shape
    np.testing.assert_array_equal(run(y), X)


# -- TensorFlow 1 names ---------------------------------------------------------------------------
NATIVE = """concat split stack unstack expand_dims squeeze zeros ones zeros_like ones_like fill
one_hot shape size tile stop_gradient strided_slice slice random_normal random_uniform
truncated_normal set_random_seed""".split()


@pytest.mark.parametrize("name", NATIVE)
def test_tf1_names_are_the_native_ops(name):
    assert getattr(tf, name) is getattr(dg, name)


def test_tf1_gather_takes_validate_indices_third():
    y = tf.gather(tf.constant(X), [1], None, "g", 2)
    assert y.op.name == "g" and y.shape == (3, 4, 1)
    with pytest.raises(ValueError, match="batch_dims"):
        tf.gather(tf.constant(X), [1], batch_dims=1)


def test_tf_random_namespace():
    assert tf.random.normal is dg.random_normal
    assert tf.random.uniform is dg.random_uniform
    assert tf.random.truncated_normal is dg.truncated_normal
    assert tf.random.set_random_seed is dg.set_random_seed


# -- on a (virtual) GPU ---------------------------------------------------------------------------
def _every_op(c):
    outs = [c[1:, ::-1, None, ..., 0], dg.slice(c, [1, 0, 1], [2, -1, 2]), *dg.split(c, 3, 2)]
    outs += [dg.concat([c, c], -1), dg.stack([c, c], 1), *dg.unstack(c[:2]), dg.tile(c, [1, 2, 1])]
    outs += [dg.squeeze(dg.expand_dims(c, 0)), dg.gather(c, [3, 0, 3], axis=1)]
    (grad,) = dg.gradients(dg.add_n([dg.reduce_sum(o * o) for o in outs]), [c])
    more = [dg.shape(c), dg.size(c), dg.one_hot([0, 2, -1], 3), dg.zeros(dg.shape(c))]
    return [*outs, grad, *more, dg.ones_like(c, dtype=dg.int32), dg.stop_gradient(c)]


@pytest.mark.virtual_gpus(1)
def test_every_op_and_gradient_has_a_gpu_kernel(dg_session):
    x = np.random.default_rng(0).standard_normal((4, 6, 3))
    with dg.device("/cpu:0"):
        on_cpu = _every_op(dg.constant(x))
    with dg.device("/gpu:0"):
        on_gpu = _every_op(dg.constant(x))
    plan = dg_session.placement(on_gpu)
    assert all("GPU:0" in op.assigned for op in plan.ops), [
        op.name for op in plan.ops if "GPU:0" not in op.assigned
    ]
    for tensor, cpu, gpu in zip(on_gpu, *dg_session.run([on_cpu, on_gpu]), strict=True):
        np.testing.assert_allclose(gpu, cpu, err_msg=tensor.name)
