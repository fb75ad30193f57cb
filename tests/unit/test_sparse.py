"""Sparse tensors (daskgraph/ops/sparse_tensor.py, ops/sparse_ops.py, ops/sparse_structure.py,
ops/sparse_lookup.py, compat/sparse.py): fetching and feeding them as TensorFlow's session
tests also check, and every op against the values TensorFlow 2.21 (``tensorflow.compat.v1``,
graph mode) computed for the same inputs, pasted here; gradients against TF's numbers and
finite differences; TF1's signatures; errors; the GPU kernels on a virtual GPU."""

from __future__ import annotations

import collections

import numpy as np
import pytest

import daskgraph as dg
import daskgraph.compat.v1 as tf
from daskgraph.compat.gradient_check import check_gradients


def _run(fetches, feed_dict=None):
    with dg.Session() as sess:
        return sess.run(fetches, feed_dict)


def _same(value, indices, values, dense_shape):
    assert isinstance(value, tf.SparseTensorValue)
    np.testing.assert_array_equal(value.indices, indices)
    if value.values.dtype.kind == "f":  # TensorFlow's float32 numbers, to the last bit or so
        np.testing.assert_allclose(value.values, values, rtol=1e-6)
    else:
        np.testing.assert_array_equal(value.values, values)
    np.testing.assert_array_equal(value.dense_shape, dense_shape)


@pytest.fixture
def graph():
    with dg.Graph().as_default() as g:
        yield g


# -- feeding and fetching, behaviours TensorFlow's session tests also check ----------------------
FED_INDICES = np.array([[0, 1], [2, 0], [2, 3]], np.int64)
FED_VALUES = np.array([0.5, -1.5, 4.0], np.float32)
FED_SHAPE = np.array([3, 5], np.int64)
FED_DENSE = np.zeros((3, 5), np.float32)
FED_DENSE[0, 1], FED_DENSE[2, 0], FED_DENSE[2, 3] = 0.5, -1.5, 4.0


def _components(sp):
    """Identity copies of a SparseTensor's three tensors, fetched as plain tensors."""
    return [tf.identity(sp.indices), tf.identity(sp.values), tf.identity(sp.dense_shape)]


def test_a_fetched_sparse_tensor_keeps_its_place_in_the_fetch_structure(graph):
    sp = tf.SparseTensor(tf.constant(FED_INDICES), tf.constant(FED_VALUES), tf.constant(FED_SHAPE))
    Fetched = collections.namedtuple("Fetched", "sparse dense")
    with tf.Session() as s:
        alone = s.run(sp)
        where, what, size = alone  # a SparseTensorValue unpacks as (indices, values, shape)
        _same(alone, FED_INDICES, FED_VALUES, FED_SHAPE)
        assert (where.dtype, what.dtype, size.tolist()) == (np.int64, np.float32, [3, 5])
        got = s.run(
            {
                "pair": (sp, [sp]),
                "named": Fetched(sp, tf.sparse_tensor_to_dense(sp)),
                "deep": [[sp]],
            }
        )
    assert isinstance(got["pair"], tuple) and isinstance(got["pair"][1], list)
    for value in (got["pair"][0], got["pair"][1][0], got["named"].sparse, got["deep"][0][0]):
        _same(value, FED_INDICES, FED_VALUES, FED_SHAPE)
    assert isinstance(got["named"], Fetched)
    np.testing.assert_array_equal(got["named"].dense, FED_DENSE)


def test_a_sparse_tensor_of_placeholders_is_fed_as_one_key(graph):
    sp = tf.SparseTensor(
        tf.placeholder(tf.int64, shape=(None, 2)),
        tf.placeholder(tf.float32, shape=(None,)),
        tf.placeholder(tf.int64, shape=(2,)),
    )
    copies = _components(sp)
    rebuilt = tf.SparseTensor(*copies)
    doubled = tf.sparse_tensor_to_dense(rebuilt) * 2.0
    as_value = tf.SparseTensorValue(FED_INDICES, FED_VALUES, FED_SHAPE)
    with tf.Session() as s:
        for fed in ((FED_INDICES, FED_VALUES, FED_SHAPE), as_value):
            where, what, size = s.run(copies, {sp: fed})
            _same(tf.SparseTensorValue(where, what, size), FED_INDICES, FED_VALUES, FED_SHAPE)
            _same(s.run(sp, {sp: fed}), FED_INDICES, FED_VALUES, FED_SHAPE)
            _same(s.run(rebuilt, {sp: fed}), FED_INDICES, FED_VALUES, FED_SHAPE)
        np.testing.assert_array_equal(s.run(doubled, {sp: as_value}), 2 * FED_DENSE)
        fewer = (
            FED_INDICES[:1],
            FED_VALUES[:1],
            np.array([1, 2], np.int64),
        )  # another size each run
        _same(s.run(rebuilt, {sp: fewer}), [[0, 1]], [0.5], [1, 2])


@pytest.mark.parametrize("shape", [None, [None, 5], [3, None]])
def test_a_sparse_placeholder_of_an_open_shape_is_fed(graph, shape):
    sp = tf.sparse_placeholder(tf.float32, shape=shape, name="open")
    copies = _components(sp)
    dense = tf.sparse_tensor_to_dense(tf.SparseTensor(*copies))
    with tf.Session() as s:
        for fed in (
            (FED_INDICES, FED_VALUES, FED_SHAPE),
            tf.SparseTensorValue(FED_INDICES, FED_VALUES, FED_SHAPE),
        ):
            where, what, size = s.run(copies, {sp: fed})
            _same(tf.SparseTensorValue(where, what, size), FED_INDICES, FED_VALUES, FED_SHAPE)
            np.testing.assert_array_equal(s.run(dense, {sp: fed}), FED_DENSE)


def test_a_sparse_placeholder_of_a_known_shape_is_fed_without_it(graph):
    sp = tf.sparse_placeholder(tf.float32, shape=[3, 5], name="known")
    copies = _components(sp)
    column_sums = tf.reduce_sum(tf.sparse_tensor_to_dense(sp), axis=0)
    with tf.Session() as s:
        assert sp.dense_shape.eval(session=s).tolist() == [3, 5]  # no feed needed
        where, what, size = s.run(
            copies, {sp: (FED_INDICES, FED_VALUES)}
        )  # indices and values only
        _same(tf.SparseTensorValue(where, what, size), FED_INDICES, FED_VALUES, FED_SHAPE)
        np.testing.assert_array_equal(
            s.run(column_sums, {sp: (FED_INDICES, FED_VALUES)}), FED_DENSE.sum(axis=0)
        )


# -- the SparseTensor object and the session's handling of it -------------------------------------
def test_sparse_tensor_properties_as_tensorflow(graph):
    sp = tf.SparseTensor([[0, 0], [0, 2], [1, 1], [2, 3]], [1.0, 2.0, 3.0, 4.0], [3, 4])
    assert (sp.indices.name, sp.values.name, sp.dense_shape.name, sp.op.name) == (
        "SparseTensor/indices:0", "SparseTensor/values:0", "SparseTensor/dense_shape:0",
        "SparseTensor/values",
    )  # fmt: skip
    assert sp.shape == (3, 4) and sp.get_shape().as_list() == [3, 4] and sp.dtype == tf.float32
    assert sp.graph is graph and sp.indices.shape == (4, 2)
    p = tf.sparse_placeholder(tf.float32, shape=[None, 9, 2], name="ph")
    assert (p.indices.name, p.values.name, p.dense_shape.name) == (
        "ph/indices:0", "ph/values:0", "ph/shape:0")  # fmt: skip
    assert p.shape.as_list() == [None, 9, 2] and p.indices.shape == (None, 3)
    assert p.dense_shape.op.type == "PlaceholderWithDefault"
    q = tf.sparse_placeholder(tf.float32)
    assert q.shape.ndims is None and q.indices.name == "Placeholder_2:0"
    assert q.dense_shape.name == "Placeholder:0"
    r = tf.sparse_placeholder(tf.float32, shape=tf.constant([-1, 4]))  # a shape tensor
    assert r.shape.as_list() == [None, 4] and r.indices.shape == (None, 2)
    with tf.Session():
        _same(sp.eval(), [[0, 0], [0, 2], [1, 1], [2, 3]], [1, 2, 3, 4], [3, 4])
        assert sp.with_values(sp.values * 2.0).eval().values.tolist() == [2, 4, 6, 8]
        _same(r.eval({r: ([[5, 1]], [2.0])}), [[5, 1]], [2], [-1, 4])  # TF's default shape


def test_fetches_keep_their_structures_and_feed_by_names(graph):
    pair = collections.namedtuple("Pair", ["sparse", "dense"])
    sp = tf.sparse_placeholder(tf.int32, name="sp")
    dense = tf.sparse_tensor_to_dense(sp)
    value = tf.SparseTensorValue([[0, 1]], [5], [2, 2])
    with tf.Session() as s:
        got = s.run(pair(sp, dense), {sp: value})
        assert isinstance(got, pair) and got.dense.tolist() == [[0, 5], [0, 0]]
        _same(got.sparse, [[0, 1]], [5], [2, 2])
        call = s.make_callable(dense, [sp])
        assert call(([[1, 0]], [7], [2, 2])).tolist() == [[0, 0], [7, 0]]
        fed = {"sp/indices:0": [[1, 1]], "sp/values:0": [3], "sp/shape:0": [2, 2]}
        assert s.run(dense, fed).tolist() == [[0, 0], [0, 3]]


def test_feeding_a_sparse_tensor_what_it_cannot_take(graph):
    sp = tf.sparse_placeholder(tf.float32)
    with tf.Session() as s:
        with pytest.raises(TypeError, match="SparseTensorValue or a tuple"):
            s.run(sp, {sp: np.zeros(3)})
        with pytest.raises(TypeError, match="cannot be a Tensor"):
            s.run(sp.values, {sp.values: sp})
        with pytest.raises(ValueError, match="fed twice"):
            s.run(sp.values, {sp: ([[0]], [1.0], [2]), sp.values: [2.0]})


def test_conversions_and_construction_errors(graph):
    sp = tf.SparseTensor([[0, 0]], [1.0], [2, 2])
    with pytest.raises(TypeError, match="Failed to convert elements of SparseTensor"):
        tf.constant(sp)
    with pytest.raises(RuntimeError, match=r"Sparse dtype mismatch\. Requested: int32"):
        tf.convert_to_tensor_or_sparse_tensor(sp, dtype=tf.int32)
    assert tf.convert_to_tensor_or_sparse_tensor(sp) is sp
    assert isinstance(tf.convert_to_tensor_or_sparse_tensor(tf.SparseTensorValue([[0]], [1], [1])),
                      tf.SparseTensor)  # fmt: skip
    assert tf.SparseTensor.from_value(sp) is sp
    with pytest.raises(ValueError, match="Dimensions 1 and 2 are not compatible"):
        tf.SparseTensor([[0, 0]], [1.0, 2.0], [2, 2])
    with pytest.raises(TypeError, match="indices must be int64"):
        tf.SparseTensor(tf.constant([[0, 0]]), [1.0], [2, 2])
    with pytest.raises(ValueError, match="not compatible"):
        sp.set_shape([3, 2])


# -- ops against TensorFlow 2.21's values ---------------------------------------------------------
A_INDICES = [[0, 0], [0, 2], [1, 1], [2, 3]]


def _a():
    return tf.SparseTensor([[0, 0], [0, 2], [1, 1], [2, 3]], [1.0, 2.0, 3.0, 4.0], [3, 4])


def _b():
    return tf.SparseTensor([[0, 0], [1, 1], [1, 2], [2, 0]], [10.0, -3.0, 5.0, 7.0], [3, 4])


def _t3():
    return tf.SparseTensor([[0, 1, 2], [1, 0, 1], [1, 2, 0]], [1, 2, 3], [2, 3, 4])


def _signed():
    return tf.SparseTensor(A_INDICES, [-1.0, 2.0, -3.0, 4.0], [3, 4])


def _other():
    return tf.SparseTensor([[0, 0], [1, 2], [2, 3]], [5.0, -1.0, -6.0], [3, 4])


def _ids():
    return tf.SparseTensor([[0, 0], [0, 1], [1, 0], [2, 0], [2, 1]],
                           np.array([0, 3, 2, 1, 3], np.int64), [3, 2])  # fmt: skip


M = [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0], [7.0, 8.0]]
M3 = [[1.0, -1.0], [2.0, 0.5], [3.0, 2.0]]
DENSE = np.arange(12, dtype=np.float32).reshape(3, 4)
DATA = [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]
PARAMS = np.arange(12, dtype=np.float32).reshape(4, 3)


def _weights():
    return tf.SparseTensor([[0, 0], [0, 1], [1, 0], [2, 0], [2, 1]], [1.0, 2.0, 0.5, 3.0, 1.0],
                           [3, 2])  # fmt: skip


DENSE_CASES = {  # name: (builder, TensorFlow 2.21's value)
    "to_dense": (lambda: tf.sparse_tensor_to_dense(_a(), default_value=-1.0),
                 [[1, -1, 2, -1], [-1, 3, -1, -1], [-1, -1, -1, 4]]),
    "to_dense_3d": (lambda: tf.sparse.to_dense(_t3()),
                    [[[0, 0, 0, 0], [0, 0, 1, 0], [0, 0, 0, 0]],
                     [[0, 2, 0, 0], [0, 0, 0, 0], [3, 0, 0, 0]]]),
    "s2d_matrix": (lambda: tf.sparse_to_dense([[0, 1], [2, 3]], [3, 4], [5, 6]),
                   [[0, 5, 0, 0], [0, 0, 0, 0], [0, 0, 0, 6]]),
    "s2d_scalar": (lambda: tf.sparse_to_dense([[0, 1], [2, 3]], [3, 4], 7.0, default_value=-1.0),
                   [[-1, 7, -1, -1], [-1, -1, -1, -1], [-1, -1, -1, 7]]),
    "s2d_vector": (lambda: tf.sparse_to_dense([1, 3], [5], 9), [0, 9, 0, 9, 0]),
    "s2d_one": (lambda: tf.sparse_to_dense(2, [4], 1.5), [0, 0, 1.5, 0]),
    "add_sd": (lambda: tf.sparse_add(_a(), tf.constant(DENSE)),
               [[1, 1, 4, 3], [4, 8, 6, 7], [8, 9, 10, 15]]),
    "add_ds": (lambda: tf.sparse_add(tf.constant(DENSE), _a()),
               [[1, 1, 4, 3], [4, 8, 6, 7], [8, 9, 10, 15]]),
    "matmul": (lambda: tf.sparse_tensor_dense_matmul(_a(), M), [[11, 14], [9, 12], [28, 32]]),
    "matmul_adj_a": (lambda: tf.sparse_tensor_dense_matmul(_a(), M3, adjoint_a=True),
                     [[1, -1], [6, 1.5], [2, -2], [12, 8]]),
    "matmul_adj_b": (lambda: tf.sparse.matmul(_a(), np.transpose(M), adjoint_b=True),
                     [[11, 14], [9, 12], [28, 32]]),
    "matmul_adj_ab": (lambda: tf.sparse.sparse_dense_matmul(_a(), np.transpose(M3), True, True),
                      [[1, -1], [6, 1.5], [2, -2], [12, 8]]),
    "rsum": (lambda: tf.sparse_reduce_sum(_a()), 10.0),
    "rsum0": (lambda: tf.sparse_reduce_sum(_a(), axis=0), [1, 3, 2, 4]),
    "rsum1k": (lambda: tf.sparse_reduce_sum(_a(), axis=1, keep_dims=True), [[3], [3], [4]]),
    "rsum3": (lambda: tf.sparse_reduce_sum(_t3(), reduction_axes=[0, 2]), [2, 1, 3]),
    "rsum_neg": (lambda: tf.sparse.reduce_sum(_t3(), axis=-1), [[0, 1, 0], [2, 0, 3]]),
    "rmax": (lambda: tf.sparse_reduce_max(_neg()), -1.0),
    "rmax0": (lambda: tf.sparse_reduce_max(_neg(), 0), [-1, -3, -2]),
    "rmax1": (lambda: tf.sparse_reduce_max(_neg(), 1), [-1, -3]),
    "rmax1k": (lambda: tf.sparse.reduce_max(_a(), 1, keepdims=True), [[2], [3], [4]]),
    "rmax_empty": (lambda: tf.sparse_reduce_max(tf.SparseTensor([[0, 1]], [-1.0], [3, 2]), 1),
                   [-1, 0, 0]),
    "indicator": (lambda: tf.sparse_to_indicator(_ids(), 4),
                  [[True, False, False, True], [False, False, True, False],
                   [False, True, False, True]]),
    "seg_sum": (lambda: tf.sparse_segment_sum(DATA, [0, 2, 1, 1], [0, 0, 1, 3]),
                [[6, 8], [3, 4], [0, 0], [3, 4]]),
    "seg_mean": (lambda: tf.sparse_segment_mean(DATA, [0, 2, 1, 1], [0, 0, 1, 3]),
                 [[3, 4], [3, 4], [0, 0], [3, 4]]),
    "seg_sqrt": (lambda: tf.sparse_segment_sqrt_n(DATA, [0, 2, 1, 1], [0, 0, 1, 3]),
                 [[4.242640495300293, 5.656854152679443], [3, 4], [0, 0], [3, 4]]),
    "seg_sum_n": (lambda: tf.sparse.segment_sum(DATA, [0, 2, 1], [0, 0, 2], num_segments=4),
                  [[6, 8], [0, 0], [3, 4], [0, 0]]),
    "seg_mean_n": (lambda: tf.sparse.segment_mean(DATA, [0, 2, 1], [0, 0, 2], num_segments=4),
                   [[3, 4], [0, 0], [3, 4], [0, 0]]),
    "seg_sqrt_n": (lambda: tf.sparse_segment_sqrt_n(DATA, [0, 2, 1], [0, 0, 2], num_segments=4),
                   [[4.242640495300293, 5.656854152679443], [0, 0], [3, 4], [0, 0]]),
    "els_mean": (lambda: tf.nn.embedding_lookup_sparse(PARAMS, _ids(), None),
                 [[4.5, 5.5, 6.5], [6, 7, 8], [6, 7, 8]]),
    "els_sum": (lambda: tf.nn.embedding_lookup_sparse(PARAMS, _ids(), None, combiner="sum"),
                [[9, 11, 13], [6, 7, 8], [12, 14, 16]]),
    "els_sqrtn": (lambda: tf.nn.embedding_lookup_sparse(PARAMS, _ids(), None, combiner="sqrtn"),
                  [[6.3639607429504395, 7.77817440032959, 9.192387580871582], [6, 7, 8],
                   [8.485280990600586, 9.899495124816895, 11.313708305358887]]),
    "els_w_mean": (lambda: tf.nn.embedding_lookup_sparse(PARAMS, _ids(), _weights()),
                   [[6, 7, 8], [6, 7, 8], [4.5, 5.5, 6.5]]),
    "els_w_sqrtn": (lambda: tf.nn.embedding_lookup_sparse(PARAMS, _ids(), _weights(), "mod",
                                                          combiner="sqrtn"),
                    [[8.049844741821289, 9.391485214233398, 10.733125686645508], [6, 7, 8],
                     [5.692099571228027, 6.957010746002197, 8.221921920776367]]),
}  # fmt: skip


def _neg():
    return tf.SparseTensor([[0, 0], [0, 2], [1, 1]], [-1.0, -2.0, -3.0], [2, 3])


@pytest.mark.parametrize("name", sorted(DENSE_CASES))
def test_dense_results_as_tensorflow(graph, name):
    build, expected = DENSE_CASES[name]
    np.testing.assert_allclose(_run(build()), expected, rtol=1e-6)


def _first(pair):
    return pair[0]


SPARSE_CASES = {  # name: (builder, TensorFlow 2.21's indices, values, dense shape)
    "from_dense": (lambda: tf.sparse.from_dense([[0, 1, 0], [2, 0, 3]]),
                   [[0, 1], [1, 0], [1, 2]], [1, 2, 3], [2, 3]),
    "add_ss": (lambda: tf.sparse_add(_a(), _b()),
               [[0, 0], [0, 2], [1, 1], [1, 2], [2, 0], [2, 3]], [11, 2, 0, 5, 7, 4], [3, 4]),
    "add_ss_t": (lambda: tf.sparse_add(_a(), _b(), thresh=2.5),
                 [[0, 0], [0, 2], [1, 2], [2, 0], [2, 3]], [11, 2, 5, 7, 4], [3, 4]),
    "add_ss_t2": (lambda: tf.sparse.add(_a(), _b(), 11.5),
                  [[0, 2], [1, 2], [2, 0], [2, 3]], [2, 5, 7, 4], [3, 4]),
    "reorder": (lambda: tf.sparse_reorder(tf.SparseTensor([[2, 1], [0, 3], [1, 0], [0, 1]],
                                                          [1.0, 2.0, 3.0, 4.0], [3, 4])),
                [[0, 1], [0, 3], [1, 0], [2, 1]], [4, 2, 3, 1], [3, 4]),
    "reshape": (lambda: tf.sparse_reshape(_a(), [2, 6]),
                [[0, 0], [0, 2], [0, 5], [1, 5]], [1, 2, 3, 4], [2, 6]),
    "reshape_m1": (lambda: tf.sparse.reshape(_t3(), [-1, 4]),
                   [[1, 2], [3, 1], [5, 0]], [1, 2, 3], [6, 4]),
    "retain": (lambda: tf.sparse_retain(_a(), [True, False, True, False]),
               [[0, 0], [1, 1]], [1, 3], [3, 4]),
    "transpose": (lambda: tf.sparse_transpose(_a()),
                  [[0, 0], [1, 1], [2, 0], [3, 2]], [1, 3, 2, 4], [4, 3]),
    "transpose3": (lambda: tf.sparse.transpose(_t3(), [2, 0, 1]),
                   [[0, 1, 2], [1, 1, 0], [2, 0, 1]], [3, 2, 1], [4, 2, 3]),
    "concat0": (lambda: tf.sparse_concat(0, [_a(), _b()]),
                [[0, 0], [0, 2], [1, 1], [2, 3], [3, 0], [4, 1], [4, 2], [5, 0]],
                [1, 2, 3, 4, 10, -3, 5, 7], [6, 4]),
    "concat1": (lambda: tf.sparse_concat(1, [_a(), _b()]),
                [[0, 0], [0, 2], [0, 4], [1, 1], [1, 5], [1, 6], [2, 3], [2, 4]],
                [1, 2, 10, 3, -3, 5, 4, 7], [3, 8]),
    "concat_expand": (lambda: tf.sparse.concat(1, [_a(), tf.SparseTensor([[0, 0], [1, 4]],
                                                                        [8.0, 9.0], [2, 5])],
                                               expand_nonconcat_dim=True),
                      [[0, 0], [0, 2], [0, 4], [1, 1], [1, 8], [2, 3]], [1, 2, 8, 3, 9, 4], [3, 9]),
    "slice": (lambda: tf.sparse_slice(_a(), [0, 1], [2, 2]), [[0, 1], [1, 0]], [2, 3], [2, 2]),
    "slice_over": (lambda: tf.sparse.slice(_a(), [1, 2], [5, 5]), [[1, 1]], [4], [2, 2]),
    "softmax": (lambda: tf.sparse_softmax(_a()), [[0, 0], [0, 2], [1, 1], [2, 3]],
                [0.2689414322376251, 0.7310585975646973, 1, 1], [3, 4]),
    "softmax3": (lambda: tf.sparse.softmax(tf.SparseTensor(
                     [[0, 0, 0], [0, 0, 2], [0, 1, 1], [1, 0, 0]], [1.0, 2.0, 3.0, 4.0],
                     [2, 2, 3])),
                 [[0, 0, 0], [0, 0, 2], [0, 1, 1], [1, 0, 0]],
                 [0.2689414322376251, 0.7310585975646973, 1, 1], [2, 2, 3]),
    "fill": (lambda: _first(tf.sparse_fill_empty_rows(
                 tf.SparseTensor([[0, 1], [2, 0], [2, 2]], [1.0, 2.0, 3.0], [4, 3]), -1.0)),
             [[0, 1], [1, 0], [2, 0], [2, 2], [3, 0]], [1, -1, 2, 3, -1], [4, 3]),
    "split1_0": (lambda: tf.sparse_split(sp_input=_a(), num_split=2, axis=1)[0],
                 [[0, 0], [1, 1]], [1, 3], [3, 2]),
    "split1_1": (lambda: tf.sparse_split(sp_input=_a(), num_split=2, axis=1)[1],
                 [[0, 0], [2, 1]], [2, 4], [3, 2]),
    "split0_0": (lambda: tf.sparse.split(sp_input=_a(), num_split=2, split_dim=0)[0],
                 [[0, 0], [0, 2], [1, 1]], [1, 2, 3], [2, 4]),
    "split0_1": (lambda: tf.sparse_split(sp_input=_a(), num_split=2, axis=0)[1],
                 [[0, 3]], [4], [1, 4]),
    "split3_1": (lambda: tf.sparse_split(sp_input=_a(), num_split=3, axis=1)[1],
                 [[0, 0]], [2], [3, 1]),
    "split3_2": (lambda: tf.sparse_split(sp_input=_a(), num_split=3, axis=1)[2],
                 [[2, 0]], [4], [3, 1]),
    "maximum": (lambda: tf.sparse_maximum(_signed(), _other()),
                [[0, 0], [0, 2], [1, 1], [1, 2], [2, 3]], [5, 2, 0, 0, 4], [3, 4]),
    "minimum": (lambda: tf.sparse.minimum(_signed(), _other()),
                [[0, 0], [0, 2], [1, 1], [1, 2], [2, 3]], [-1, 0, -3, -1, -6], [3, 4]),
    "reset_shape": (lambda: tf.sparse_reset_shape(_signed()), A_INDICES, [-1, 2, -3, 4], [3, 4]),
    "reset_shape_new": (lambda: tf.sparse.reset_shape(_signed(), [4, 5]), A_INDICES,
                        [-1, 2, -3, 4], [4, 5]),
    "reset_shape_empty": (lambda: tf.sparse_reset_shape(tf.SparseTensor(
                              tf.zeros([0, 2], tf.int64), tf.zeros([0]), [3, 4])),
                          np.zeros((0, 2)), [], [0, 0]),
    "expand_dims0": (lambda: tf.sparse.expand_dims(_signed(), 0),
                     [[0, 0, 0], [0, 0, 2], [0, 1, 1], [0, 2, 3]], [-1, 2, -3, 4], [1, 3, 4]),
    "expand_dims_last": (lambda: tf.sparse.expand_dims(_signed()),
                         [[0, 0, 0], [0, 2, 0], [1, 1, 0], [2, 3, 0]], [-1, 2, -3, 4], [3, 4, 1]),
    "eye": (lambda: tf.sparse.eye(3, 2, dtype=tf.int32), [[0, 0], [1, 1]], [1, 1], [3, 2]),
    "eye_square": (lambda: tf.sparse.eye(tf.constant(2)), [[0, 0], [1, 1]], [1, 1], [2, 2]),
    "mul": (lambda: _a() * tf.constant([1.0, 2.0, 4.0, 8.0]), A_INDICES, [1, 8, 6, 32], [3, 4]),
    "rmul": (lambda: tf.constant([1.0, 2.0, 4.0, 8.0]) * _a(), A_INDICES, [1, 8, 6, 32], [3, 4]),
    "mul_scalar": (lambda: 2.0 * _a(), A_INDICES, [2, 4, 6, 8], [3, 4]),
    "mul_column": (lambda: _signed() * tf.constant([[1.0], [2.0], [3.0]]), A_INDICES,
                   [-1, 2, -6, 12], [3, 4]),
    "div": (lambda: _a() / tf.constant([1.0, 2.0, 4.0, 8.0]), A_INDICES, [1, 0.5, 1.5, 0.5],
            [3, 4]),
    "div_column": (lambda: _a() / tf.constant([[2.0], [4.0], [8.0]]), A_INDICES,
                   [0.5, 1, 0.75, 0.5], [3, 4]),
    "div_int": (lambda: tf.SparseTensor([[0, 0], [1, 1]], [7, -7], [2, 2]) / tf.constant([2, 2]),
                [[0, 0], [1, 1]], [3.5, -3.5], [2, 2]),
    "string_split": (lambda: tf.string_split(["hello world", "a b  c", ""]),
                     [[0, 0], [0, 1], [1, 0], [1, 1], [1, 2]],
                     [b"hello", b"world", b"a", b"b", b"c"], [3, 3]),
    "string_split_keep_empty": (lambda: tf.string_split(["a b  c", " x"], skip_empty=False),
                                [[0, 0], [0, 1], [0, 2], [0, 3], [1, 0], [1, 1]],
                                [b"a", b"b", b"", b"c", b"", b"x"], [2, 4]),
    "string_split_bytes": (lambda: tf.string_split(["abc", "de"], delimiter=""),
                           [[0, 0], [0, 1], [0, 2], [1, 0], [1, 1]],
                           [b"a", b"b", b"c", b"d", b"e"], [2, 3]),
    "string_split_chars": (lambda: tf.string_split(["a,b;c", "d"], ",;"),
                           [[0, 0], [0, 1], [0, 2], [1, 0]], [b"a", b"b", b"c", b"d"], [2, 3]),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(SPARSE_CASES))
def test_sparse_results_as_tensorflow(graph, name):
    build, indices, values, dense_shape = SPARSE_CASES[name]
    _same(_run(build()), indices, values, dense_shape)


TF1_SPARSE_NAMES = (  # dir(tf.compat.v1.sparse) of TensorFlow 2.21
    "SparseConditionalAccumulator SparseTensor add bincount concat cross cross_hashed expand_dims "
    "eye fill_empty_rows from_dense mask matmul maximum merge minimum placeholder reduce_max "
    "reduce_max_sparse reduce_sum reduce_sum_sparse reorder reset_shape reshape retain "
    "segment_mean segment_sqrt_n segment_sum slice softmax sparse_dense_matmul split to_dense "
    "to_indicator transpose"
).split()


def test_the_sparse_namespace_has_27_of_tf1s_35_names():
    missing = [n for n in TF1_SPARSE_NAMES if not hasattr(tf.sparse, n)]
    assert missing == ["SparseConditionalAccumulator", "bincount", "cross", "cross_hashed",
                       "mask", "merge", "reduce_max_sparse", "reduce_sum_sparse"]  # fmt: skip
    assert tf.sparse.SparseTensor is tf.SparseTensor is dg.SparseTensor
    assert tf.sparse.reorder is tf.sparse_reorder and tf.sparse.maximum is tf.sparse_maximum


def test_operators_with_dense_tensors_and_their_gradients():
    def product(values, dense):
        return tf.reduce_sum((tf.SparseTensor(A_INDICES, values, [3, 4]) * dense).values
                             * [1.0, 2.0, 3.0, 4.0])  # fmt: skip

    def quotient(values, dense):
        return tf.reduce_sum((tf.SparseTensor(A_INDICES, values, [3, 4]) / dense).values
                             * [1.0, 2.0, 3.0, 4.0])  # fmt: skip

    g_values, g_dense = _grads(product, A_VALUES, [[1.0, 2.0, 4.0, 8.0]])
    assert g_values.tolist() == [1, 8, 6, 32] and g_dense.tolist() == [[1, 9, 4, 16]]
    g_values, g_dense = _grads(quotient, A_VALUES, [[1.0, 2.0, 4.0, 8.0]])
    assert g_values.tolist() == [1, 0.5, 1.5, 0.5]
    assert g_dense.tolist() == [[-1, -2.25, -0.25, -0.25]]
    check_gradients(lambda v, d: (tf.SparseTensor(A_INDICES, v, [3, 4]) * d).values,
                    [A_VALUES, np.array([[1.5], [2.0], [-1.0]])])  # fmt: skip
    with dg.Graph().as_default():
        with pytest.raises(TypeError):
            _a() + tf.ones([4])  # as in TensorFlow: no + - with a SparseTensor
        with pytest.raises(TypeError, match="two SparseTensors is not supported"):
            _a() * _b()
        with pytest.raises(ValueError, match="does not broadcast"):
            _a() * tf.ones([5])
        with pytest.raises(ValueError, match="Requested new_shape should have dimension sizes"):
            tf.sparse_reset_shape(_a(), [2, 5])
        assert tf.sparse.expand_dims(_a(), 1).shape == (3, 1, 4)
        assert type(np.ones(4, np.float32) * _a()) is tf.SparseTensor


def test_static_shapes_as_tensorflow(graph):
    p = tf.sparse_placeholder(tf.float32)
    assert tf.sparse.from_dense([[0, 1, 0], [2, 0, 3]]).shape == (2, 3)
    assert tf.sparse_add(_a(), _b()).shape == (3, 4) and tf.sparse_reorder(_a()).shape == (3, 4)
    assert tf.sparse_transpose(_a()).shape == (4, 3)
    assert tf.sparse_reshape(_t3(), [-1, 4]).shape == (6, 4)
    assert tf.sparse_concat(1, [_a(), _b()]).shape == (3, 8)
    assert tf.sparse_slice(_a(), [0, 1], [2, 2]).shape == (None, None)
    assert tf.sparse_tensor_to_dense(_a()).shape == (3, 4)
    assert tf.sparse_tensor_to_dense(p).shape is None
    assert tf.sparse_reduce_sum(_a(), 1).shape == (3,) and tf.sparse_reduce_sum(p, 1).shape is None
    assert tf.sparse_tensor_dense_matmul(_a(), M).shape == (3, 2)
    assert tf.sparse_to_dense([[0, 1]], tf.placeholder(tf.int32, [2]), 1.0).shape == (None, None)
    assert tf.sparse_fill_empty_rows(_a(), 0.0)[1].shape == (3,)


# -- gradients ------------------------------------------------------------------------------------
def _grads(loss_of, *inputs):
    with dg.Graph().as_default():
        xs = [tf.constant(np.asarray(x, np.float64)) for x in inputs]
        return _run(tf.gradients(loss_of(*xs), xs))


A_VALUES = [1.0, 2.0, 3.0, 4.0]
W = np.array([[1.0, -1.0], [2.0, 0.5], [3.0, 2.0]])
W4 = np.array(M)


@pytest.mark.parametrize(
    "adjoint_a, adjoint_b, b, weights, expected_b",  # TensorFlow 2.21's gradients
    [
        (False, False, M, W, [[1, -1], [6, 1.5], [2, -2], [12, 8]]),
        (True, False, M3, W4, [[11, 14], [9, 12], [28, 32]]),
        (False, True, np.transpose(M), W, [[1, 6, 2, 12], [-1, 1.5, -2, 8]]),
        (True, True, np.transpose(M3), W4, [[11, 9, 28], [14, 12, 32]]),
    ],
)
def test_sparse_dense_matmul_gradients_as_tensorflow(adjoint_a, adjoint_b, b, weights, expected_b):
    def loss(values, dense):
        sp = tf.SparseTensor(A_INDICES, values, [3, 4])
        y = tf.sparse_tensor_dense_matmul(sp, dense, adjoint_a=adjoint_a, adjoint_b=adjoint_b)
        return tf.reduce_sum(y * weights)

    g_values, g_b = _grads(loss, A_VALUES, b)
    np.testing.assert_allclose(g_values, [-1, -1, 8, 37])
    np.testing.assert_allclose(g_b, expected_b)
    check_gradients(lambda v, d: tf.sparse_tensor_dense_matmul(
        tf.SparseTensor(A_INDICES, v, [3, 4]), d, adjoint_a, adjoint_b), [A_VALUES, b])  # fmt: skip


def test_reduction_and_dense_gradients_as_tensorflow():
    def sp(values):
        return tf.SparseTensor(A_INDICES, values, [3, 4])

    (g,) = _grads(lambda v: tf.reduce_sum(tf.sparse_reduce_sum(sp(v), 1) * [1.0, 2.0, 3.0]),
                  A_VALUES)  # fmt: skip
    assert g.tolist() == [1, 1, 2, 3]
    (g,) = _grads(
        lambda v: tf.reduce_sum(
            tf.sparse_reduce_sum(sp(v), 0, keep_dims=True) * [[1.0, 2.0, 3.0, 4.0]]
        ),
        A_VALUES,
    )
    assert g.tolist() == [1, 3, 2, 4]
    (g,) = _grads(lambda v: tf.sparse_reduce_sum(sp(v)) * 3.0, A_VALUES)
    assert g.tolist() == [3, 3, 3, 3]
    dense_weights = np.arange(12.0).reshape(3, 4)
    (g,) = _grads(lambda v: tf.reduce_sum(tf.sparse_tensor_to_dense(sp(v), 0.5) * dense_weights),
                  A_VALUES)  # fmt: skip
    assert g.tolist() == [0, 2, 5, 11]
    g_values, g_dense = _grads(lambda v, d: tf.reduce_sum(tf.sparse_add(sp(v), d) * dense_weights),
                               A_VALUES, np.arange(12.0).reshape(3, 4))  # fmt: skip
    assert g_values.tolist() == [0, 2, 5, 11] and g_dense.tolist() == dense_weights.tolist()
    check_gradients(lambda v: tf.sparse_reduce_sum(sp(v), [1], keepdims=True), [A_VALUES])
    check_gradients(lambda v: tf.sparse_to_dense([[0, 1], [2, 0]], [3, 2], v), [[1.5, 2.0]])


def test_sparse_add_softmax_and_fill_gradients_as_tensorflow():
    b_values = [10.0, -3.0, 5.0, 7.0]

    def add_values(a, b):
        total = tf.sparse_add(tf.SparseTensor(A_INDICES, a, [3, 4]),
                              tf.SparseTensor([[0, 0], [1, 1], [1, 2], [2, 0]], b, [3, 4]),
                              thresh=0.5)  # fmt: skip
        return tf.reduce_sum(total.values * [1.0, 2.0, 3.0, 4.0, 5.0])

    g_a, g_b = _grads(add_values, A_VALUES, b_values)
    assert g_a.tolist() == [1, 2, 0, 5] and g_b.tolist() == [1, 0, 3, 4]
    (g,) = _grads(lambda v: tf.reduce_sum(
        tf.sparse_softmax(tf.SparseTensor(A_INDICES, v, [3, 4])).values * [1.0, 2.0, 3.0, 4.0]),
        A_VALUES)  # fmt: skip
    np.testing.assert_allclose(g, [-0.1966119332414819, 0.19661193324148177, 0, 0], atol=1e-12)

    def filled(values, default):
        sp = tf.SparseTensor([[0, 1], [2, 0], [2, 2]], values, [4, 3])
        return tf.reduce_sum(tf.sparse_fill_empty_rows(sp, default)[0].values * [1, 2, 3, 4, 5.0])

    g_values, g_default = _grads(filled, [1.0, 2.0, 3.0], -1.0)
    assert g_values.tolist() == [1, 3, 4] and float(g_default) == 7.0
    check_gradients(lambda v: tf.sparse_softmax(tf.SparseTensor(A_INDICES, v, [3, 4])).values,
                    [A_VALUES])  # fmt: skip


def test_gradients_of_picked_entries_and_segments():
    (g,) = _grads(
        lambda d: tf.reduce_sum(
            tf.sparse_segment_sqrt_n(d, [0, 2, 1, 1], [0, 0, 1, 3]) * ([[1.0, 2.0]] * 4)
        ),
        DATA,
    )
    np.testing.assert_allclose(g, [[0.7071067811865475, 1.414213562373095], [2, 4],
                                   [0.7071067811865475, 1.414213562373095]])  # fmt: skip
    (g,) = _grads(
        lambda d: tf.reduce_sum(
            tf.sparse_segment_mean(d, [0, 2, 1, 1], [0, 0, 1, 3]) * ([[1.0, 2.0]] * 4)
        ),
        DATA,
    )
    assert g.tolist() == [[0.5, 1], [2, 4], [0.5, 1]]
    unordered = [[2, 1], [0, 3], [1, 0], [0, 1]]
    for build in (
        lambda v: tf.sparse_reorder(tf.SparseTensor(unordered, v, [3, 4])).values,
        lambda v: tf.sparse_slice(tf.SparseTensor(A_INDICES, v, [3, 4]), [0, 1], [2, 3]).values,
        lambda v: tf.sparse_concat(1, [tf.SparseTensor(A_INDICES, v, [3, 4])] * 2).values,
        lambda v: tf.sparse_transpose(tf.SparseTensor(A_INDICES, v, [3, 4])).values,
    ):
        check_gradients(build, [A_VALUES])
    check_gradients(
        lambda p: tf.nn.embedding_lookup_sparse(p, _ids(), _weights(), combiner="sqrtn"),
        [PARAMS.astype(np.float64)],
    )


def test_training_with_sparse_features_matches_numpy(graph):
    """A TF1-style model: a sparse linear part and a summed sparse embedding, trained by
    gradient descent; the losses and weights after three steps equal NumPy's."""
    sp = tf.sparse_placeholder(tf.float32, name="x")
    ids = tf.sparse_placeholder(tf.int64, name="ids")
    y = tf.placeholder(tf.float32, [None, 1])
    w = tf.Variable(np.zeros((4, 1), np.float32))
    emb = tf.Variable(np.ones((5, 2), np.float32))
    looked_up = tf.nn.embedding_lookup_sparse(emb, ids, None, combiner="sum")
    pred = tf.sparse_tensor_dense_matmul(sp, w) + tf.reduce_sum(looked_up, 1, keepdims=True)
    loss = tf.reduce_mean(tf.square(pred - y))
    step = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
    feed = {sp: ([[0, 0], [1, 3]], [1.0, 2.0], [2, 4]), y: [[1.0], [2.0]],
            ids: ([[0, 0], [1, 0], [1, 1]], [0, 4, 4], [2, 2])}  # fmt: skip
    x, rows, target = np.array([[1.0, 0, 0, 0], [0, 0, 0, 2.0]]), [[0], [4, 4]], np.array([1, 2.0])
    w_np, emb_np, losses = np.zeros(4), np.ones((5, 2)), []
    for _ in range(3):  # NumPy's gradient descent on the same model
        err = x @ w_np + np.array([emb_np[r].sum() for r in rows]) - target
        losses.append((err**2).mean())
        w_np -= 0.1 * x.T @ err
        for i, r in enumerate(rows):
            for row in r:
                emb_np[row] -= 0.1 * err[i]
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        got = [s.run([loss, step], feed)[0] for _ in range(3)]
        np.testing.assert_allclose(got, losses, rtol=1e-5)
        np.testing.assert_allclose(s.run(w).ravel(), w_np, rtol=1e-5)
        np.testing.assert_allclose(s.run(emb), emb_np, rtol=1e-5)


# -- errors ---------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "indices, message",
    [
        ([[1, 0], [0, 1]], r"indices\[1\] = \[0,1\] is out of order. Many sparse ops require"),
        ([[0, 1], [0, 1]], r"indices\[1\] = \[0,1\] is repeated"),
        ([[0, 1], [5, 1]], r"indices\[1\] = \[5,1\] is out of bounds: need 0 <= index < \[2,2\]"),
    ],
)
def test_to_dense_checks_indices_as_tensorflow(graph, indices, message):
    sp = tf.SparseTensor(indices, [1.0, 2.0], [2, 2])
    with pytest.raises(tf.errors.InvalidArgumentError, match=message):
        _run(tf.sparse_tensor_to_dense(sp))
    if "bounds" not in message:  # not validated: the last value written wins
        assert _run(tf.sparse_tensor_to_dense(sp, validate_indices=False)).sum() > 0


def test_run_time_errors_in_tensorflow_words(graph):
    cases = [
        (tf.sparse_to_dense([[0, 1], [1, 1]], [2, 2], [1.0, 2.0, 3.0]),
         r"sparse_values has incorrect shape \[3\], should be \[\] or \[2\]"),
        (tf.sparse_add(tf.SparseTensor([[0, 1]], [1.0], [2, 2]),
                       tf.placeholder_with_default(tf.zeros([2, 3]), shape=None)),
         "Dimension 1 does not equal \\(no broadcasting is supported\\): sparse side 2 vs "
         "dense side 3"),
        (tf.sparse_concat(1, [tf.sparse_placeholder(tf.float32, name="x"), _a()]),
         "Input shapes must match: expected 2 for dimension 0 but got 3 at position 1"),
        (tf.sparse_fill_empty_rows(tf.SparseTensor([[5, 1]], [1.0], [3, 2]), 0.0)[0].indices,
         r"indices\(0, 0\) is invalid: 5 >= 3"),
        (tf.sparse_to_indicator(tf.SparseTensor([[0, 0]], np.array([7], np.int64), [3, 2]), 4),
         r"Indices are not valid \(out of bounds\).  Shape: \[3,4\]"),
        (tf.sparse_segment_sum(tf.ones([3, 2]), [0, 1, 2], [1, 0, 1]),
         "segment ids are not increasing"),
        (tf.sparse_reshape(tf.sparse_placeholder(tf.float32, name="y"), [5]).indices,
         "Input to reshape is a tensor with 6 dense values, but the requested shape has 5"),
        (tf.sparse_reshape(tf.sparse_placeholder(tf.float32, name="z"),
                           tf.placeholder_with_default(np.array([-1, -1]), [2])).indices,
         "only one output dimension may be -1, not both 0 and 1"),
    ]  # fmt: skip
    feeds = {"x": ([[0, 1]], [1.0], [2, 2]), "y": ([[0, 1]], [1.0], [2, 3]),
             "z": ([[0, 1]], [1.0], [2, 3])}  # fmt: skip
    feed_dict = {graph.get_tensor_by_name(f"{k}/{part}:0"): v[i] for k, v in feeds.items()
                 for i, part in enumerate(["indices", "values", "shape"])}  # fmt: skip
    for fetch, message in cases:
        with pytest.raises(tf.errors.InvalidArgumentError, match=message):
            _run(fetch, feed_dict)


def test_build_time_errors(graph):
    with pytest.raises(ValueError, match="Shapes"):
        tf.sparse_add(_a(), tf.SparseTensor([[0, 1]], [1.0], [2, 3]))
    with pytest.raises(TypeError, match="at least one input should be a SparseTensor"):
        tf.sparse_add(tf.ones([2]), tf.ones([2]))
    with pytest.raises(ValueError, match="inner dimensions differ"):
        tf.sparse_tensor_dense_matmul(tf.SparseTensor([[0, 5]], [1.0], [2, 6]), tf.ones([3, 2]))
    with pytest.raises(ValueError, match="Dimensions 4 and 2 are not compatible"):
        tf.sparse_retain(_a(), [True, False])
    with pytest.raises(ValueError, match="must be a vector"):
        tf.string_split([["a b"]])
    with pytest.raises(ValueError, match="RaggedTensor"):
        tf.string_split(["a b"], result_type="RaggedTensor")
    with pytest.raises(ValueError, match="at most one dimension may be -1"):
        tf.sparse_reshape(_a(), [-1, -1])
    with pytest.raises(ValueError, match="cannot reshape a SparseTensor of shape"):
        tf.sparse_reshape(_a(), [5, -1])
    with pytest.raises(ValueError, match="Keyword arguments are required"):
        tf.sparse_split(_a(), 2, 1)
    with pytest.raises(ValueError, match="Cannot specify both 'threshold' and 'thresh'"):
        tf.sparse_add(_a(), _b(), threshold=1.0, thresh=1.0)
    with pytest.raises(TypeError, match="expected a SparseTensor"):
        tf.sparse_reorder(tf.ones([2, 2]))
    with pytest.raises(ValueError, match="combiner must be one of"):
        tf.nn.embedding_lookup_sparse(PARAMS, _ids(), None, combiner="max")


# -- placement ------------------------------------------------------------------------------------
@pytest.mark.virtual_gpus(1)
def test_gpu_kernels_on_a_virtual_gpu(dg_session):
    with dg.device("/gpu:0"):
        sp = tf.sparse_placeholder(tf.float32, name="sp")
        dense = tf.sparse_tensor_to_dense(sp)
        product = tf.sparse_tensor_dense_matmul(sp, tf.ones([4, 2]))
        total = tf.sparse_reduce_sum(sp, 1)
        part = tf.sparse_slice(sp, [0, 1], [2, 2])
        reshaped = tf.sparse_reshape(sp, [2, 6])
        ordered = tf.sparse_reorder(sp)
    feed = {sp: (A_INDICES, A_VALUES, [3, 4])}
    got = dg_session.run([dense, product, total, part, reshaped, ordered], feed)
    assert got[0].tolist() == [[1, 0, 2, 0], [0, 3, 0, 0], [0, 0, 0, 4]]
    assert got[1].tolist() == [[3, 3], [3, 3], [4, 4]] and got[2].tolist() == [3, 3, 4]
    _same(got[3], [[0, 1], [1, 0]], [2, 3], [2, 2])
    _same(got[4], [[0, 0], [0, 2], [0, 5], [1, 5]], A_VALUES, [2, 6])
    _same(got[5], A_INDICES, A_VALUES, [3, 4])
    fetches = [dense, product, total, part.indices, reshaped.indices, ordered.indices]
    placed = {o.name: o.assigned for o in dg_session.placement(fetches, feed).ops}
    for op in ("SparseToDense", "SparseTensorDenseMatMul", "SparseReduceSum"):
        assert "GPU" in placed[op].upper()
    with dg.device("/gpu:0"):
        soft = tf.sparse_softmax(sp)  # CPU only, as in TensorFlow
    with pytest.raises(tf.errors.InvalidArgumentError, match="no supported kernel for GPU"):
        dg_session.run(soft, feed)
