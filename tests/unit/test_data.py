"""``tf.data``: datasets' values against NumPy (and TensorFlow 2.21's, same values for every
pipeline without randomness), epochs ending in ``OutOfRangeError``, components fetched together
from one element, initializable and one-shot iterators, state per session, and a training loop
reading its batches from a dataset."""

from __future__ import annotations

import numpy as np
import pytest

import daskgraph as dg
import daskgraph.compat.v1 as tf
from daskgraph.data.dataset import (
    Dataset,
    Iterator,
    make_initializable_iterator,
    make_one_shot_iterator,
)


@pytest.fixture
def graph():
    with dg.Graph().as_default() as g:
        yield g


def drain(sess, fetches, most=1000):
    """Every value ``fetches`` give until the end of the sequence."""
    values = []
    for _ in range(most):
        try:
            values.append(sess.run(fetches))
        except tf.errors.OutOfRangeError:
            return values
    raise AssertionError("no OutOfRangeError")


def test_batched_epochs_end_in_out_of_range(graph):
    features = np.arange(14.0).reshape(7, 2)
    labels = [1, 2, 3, 4, 5, 6, 7]
    ds = Dataset.from_tensor_slices((features, labels)).batch(3)
    assert ds.output_types == (dg.float64, dg.int32)  # Python ints: int32, as in TensorFlow
    assert ds.output_shapes == (tf.TensorShape([None, 2]), tf.TensorShape([None]))
    x, y = ds.make_one_shot_iterator().get_next()
    assert (x.shape, y.shape, x.op.name, x.op.inputs[0].op.type) == (
        (None, 2), (None,), "IteratorGetNext/component_0", "IteratorGetNext"
    )  # fmt: skip
    with dg.Session() as sess:
        batches = drain(sess, [x, y])
        with pytest.raises(tf.errors.OutOfRangeError, match="End of sequence") as info:
            sess.run(y)  # and again: the iterator stays at its end
    assert info.value.op == "IteratorGetNext"
    assert [b[1].tolist() for b in batches] == [[1, 2, 3], [4, 5, 6], [7]]
    np.testing.assert_array_equal(np.concatenate([b[0] for b in batches]), features)
    dropped = Dataset.from_tensor_slices(features).batch(3, drop_remainder=True)
    assert dropped.output_shapes == tf.TensorShape([3, 2])


def test_components_fetched_together_come_from_one_element(graph):
    values = np.arange(50)
    ds = Dataset.from_tensor_slices({"a": values, "b": values * 10}).shuffle(50).repeat(2)
    element = ds.make_one_shot_iterator().get_next()
    with dg.Session() as sess:
        pairs = drain(sess, element)
        with pytest.raises(tf.errors.OutOfRangeError):
            sess.run(element["a"])
    assert len(pairs) == 100 and all(p["b"] == p["a"] * 10 for p in pairs)
    assert sorted(p["a"] for p in pairs[:50]) == values.tolist()  # each epoch a permutation
    assert [p["a"] for p in pairs[:50]] != [p["a"] for p in pairs[50:]]  # reshuffled


def test_runs_advance_the_iterator_and_get_next_calls_share_it(graph):
    it = Dataset.range(6).make_one_shot_iterator()
    first, second = it.get_next(), it.get_next()
    with dg.Session() as sess:
        assert [sess.run(first), sess.run(second), sess.run(first)] == [0, 1, 2]
        assert sorted(sess.run([first, second])) == [3, 4]  # two ops: two elements
    with dg.Session() as sess:  # a new session starts over
        assert sess.run(second) == 0


def test_initializable_iterator_reads_fed_placeholders(graph):
    p = dg.placeholder(dg.float32, [None, 3])
    ds = Dataset.from_tensor_slices(p).map(lambda row: dg.reduce_sum(row) * 2.0)
    it = make_initializable_iterator(ds)
    total = it.get_next()
    assert total.shape == () and it.initializer.type == "MakeIterator"
    with dg.Session() as sess:
        with pytest.raises(tf.errors.FailedPreconditionError, match="not been initialized"):
            sess.run(total)
        sess.run(it.initializer, {p: np.ones((2, 3))})
        assert drain(sess, total) == [6.0, 6.0]
        sess.run(it.initializer, {p: np.arange(6.0).reshape(2, 3)})
        first = sess.run(total)
        sess.run(it.initializer, {p: np.full((1, 3), 5.0)})  # restarts mid-way
        assert (first, drain(sess, total)) == (6.0, [30.0])
    with pytest.raises(ValueError, match=r"Cannot capture a placeholder \(name:Placeholder"):
        make_one_shot_iterator(ds)
    with pytest.raises(ValueError, match="does not have an initializer"):
        _ = Dataset.range(2).make_one_shot_iterator().initializer


def test_transformations_against_python(graph):
    k = dg.constant(100)
    pipelines = {
        "map_filter_skip_take": Dataset.range(20)
        .map(lambda v: (v * 2, dg.cast(v, dg.float32)))
        .filter(lambda a, b: a > 4)
        .skip(1)
        .take(3),
        "repeat_batch": Dataset.range(3).repeat(2).batch(4),
        "zip": Dataset.zip((Dataset.range(3), Dataset.from_tensor_slices(["a", "b", "c", "d"]))),
        "concatenate": Dataset.range(2).concatenate(Dataset.range(5, 7)),
        "captured": Dataset.from_tensor_slices([1, 2]).map(lambda v: {"x": v + k}),
        "from_tensors": Dataset.from_tensors(([1, 2, 3], "s")).repeat(2),
        "prefetch_range_step": Dataset.range(10, 0, -3).prefetch(tf.data.AUTOTUNE),
        "py_func": Dataset.range(3).map(lambda v: tf.py_func(lambda a: a * 3, [v], dg.int64)),
        "random": Dataset.range(3).map(lambda v: dg.random_uniform([2]) + dg.cast(v, dg.float32)),
    }
    iterators = {name: ds.make_one_shot_iterator().get_next() for name, ds in pipelines.items()}
    with dg.Session() as sess:
        got = {name: drain(sess, t) for name, t in iterators.items()}
    assert got["map_filter_skip_take"] == [(8, 4.0), (10, 5.0), (12, 6.0)]
    assert [b.tolist() for b in got["repeat_batch"]] == [[0, 1, 2, 0], [1, 2]]
    assert got["zip"] == [(0, b"a"), (1, b"b"), (2, b"c")]
    assert got["concatenate"] == [0, 1, 5, 6]
    assert got["captured"] == [{"x": 101}, {"x": 102}]
    assert [(a.tolist(), s) for a, s in got["from_tensors"]] == [([1, 2, 3], b"s")] * 2
    assert got["prefetch_range_step"] == [10, 7, 4, 1]
    assert got["py_func"] == [0, 3, 6]
    drawn = np.array(got["random"])
    assert drawn.shape == (3, 2) and len(set((drawn % 1).ravel().tolist())) == 6  # fresh draws
    assert (np.floor(drawn) == [[0, 0], [1, 1], [2, 2]]).all()
    assert pipelines["zip"].output_types == (dg.int64, dg.string)


def test_shuffle_seeds_and_reshuffling(graph):
    def orders(ds, epochs=2):
        element = ds.make_one_shot_iterator().get_next()
        with dg.Session() as sess:
            values = drain(sess, element)
        return [values[i * 8 : (i + 1) * 8] for i in range(epochs)]

    seeded = Dataset.range(8).shuffle(8, seed=7).repeat(2)
    a, b = orders(seeded), orders(seeded)
    assert a == b and a[0] != a[1] and sorted(a[0]) == list(range(8))  # same seed, same run
    fixed = orders(Dataset.range(8).shuffle(8, seed=3, reshuffle_each_iteration=False).repeat(2))
    assert fixed[0] == fixed[1] != list(range(8))
    small = orders(Dataset.range(8).shuffle(1), epochs=1)[0]
    assert small == list(range(8))  # a buffer of one keeps the order, as in TensorFlow


def test_from_structure_iterators_switch_datasets(graph):
    it = Iterator.from_structure(dg.int64, tf.TensorShape([]))
    train_init = it.make_initializer(Dataset.range(3))
    test_init = it.make_initializer(Dataset.range(10, 12))
    value = it.get_next()
    with dg.Session() as sess:
        sess.run(train_init)
        first = drain(sess, value)
        sess.run(test_init)
        second = drain(sess, value)
    assert (first, second) == ([0, 1, 2], [10, 11])
    with pytest.raises(TypeError, match="Expected output types"):
        it.make_initializer(Dataset.range(3).map(lambda v: dg.cast(v, dg.float32)))


def test_a_training_loop_reads_its_batches_from_a_dataset(graph):
    rng = np.random.default_rng(0)
    x_data = rng.normal(size=(40, 3)).astype(np.float32)
    y_data = (x_data @ np.array([[1.0], [-2.0], [0.5]], np.float32) + 0.3).astype(np.float32)
    ds = Dataset.from_tensor_slices((x_data, y_data)).repeat(3).batch(16)
    x, y = ds.make_one_shot_iterator().get_next()
    w = dg.Variable(np.zeros((3, 1), np.float32))
    b = dg.Variable(np.float32(0.0))
    loss = dg.reduce_mean(dg.square(dg.matmul(x, w) + b - y))
    train_op = dg.train.GradientDescentOptimizer(0.1).minimize(loss)
    steps = 0
    with dg.Session() as sess:
        sess.run(dg.global_variables_initializer())
        while True:
            try:
                sess.run(train_op)
            except tf.errors.OutOfRangeError:
                break
            steps += 1
        got_w, got_b = sess.run([w, b])
    ref_w, ref_b = np.zeros((3, 1), np.float32), np.float32(0.0)
    epochs = np.concatenate([x_data] * 3), np.concatenate([y_data] * 3)
    for start in range(0, 120, 16):
        bx, by = epochs[0][start : start + 16], epochs[1][start : start + 16]
        err = bx @ ref_w + ref_b - by
        ref_w = ref_w - 0.1 * (2 * bx.T @ err / err.size)
        ref_b = ref_b - 0.1 * np.float32(2 * err.mean())
    assert steps == 8  # 120 examples in batches of 16
    np.testing.assert_allclose(got_w, ref_w, rtol=1e-5)
    np.testing.assert_allclose(got_b, ref_b, rtol=1e-5)


@pytest.mark.virtual_gpus(1)
def test_iterator_ops_run_on_the_cpu(dg_session):
    ds = Dataset.from_tensor_slices(np.arange(6.0, dtype=np.float32)).batch(3)
    batch = ds.make_one_shot_iterator().get_next()
    with dg.device("/gpu:0"):
        doubled = batch * 2.0
    assert [v.tolist() for v in drain(dg_session, doubled)] == [[0, 2, 4], [6, 8, 10]]
    placed = {op.name: op.assigned for op in dg_session.placement(doubled).ops}
    assert placed["IteratorGetNext"].endswith("CPU:0") and placed["mul"].endswith("GPU:0")


def test_compat_namespace(graph):
    ds = tf.data.Dataset.from_tensor_slices({"a": [1.0, 2.0], "b": np.array([[1], [2]])})
    assert tf.data.get_output_types(ds) == {"a": dg.float32, "b": dg.int64}  # as TensorFlow
    assert tf.data.get_output_shapes(ds) == {"a": tf.TensorShape([]), "b": tf.TensorShape([1])}
    assert tf.data.get_output_classes(ds) == {"a": dg.Tensor, "b": dg.Tensor}
    element = tf.data.make_one_shot_iterator(ds).get_next()
    with tf.Session() as sess:
        assert [(e["a"], e["b"].tolist()) for e in drain(sess, element)] == [(1.0, [1]), (2.0, [2])]
    with pytest.raises(ValueError, match="Dimensions 3 and 4 are not compatible"):
        tf.data.Dataset.from_tensor_slices((np.zeros(3), np.zeros(4)))


def test_from_generator_unbatch_and_enumerate_as_tensorflow(graph):
    def pairs(n):
        for i in range(n):
            yield i, [i] * 2

    count = dg.placeholder(dg.int64, [])
    generated = Dataset.from_generator(
        pairs, (dg.int64, dg.float32), (tf.TensorShape([]), tf.TensorShape([2])), args=(count,)
    )
    assert generated.output_shapes == (tf.TensorShape([]), tf.TensorShape([2]))
    it = generated.make_initializable_iterator()
    element = it.get_next()
    rows = Dataset.from_tensor_slices(np.arange(6).reshape(3, 2)).unbatch()
    named = Dataset.from_tensor_slices(["a", "b", "c"]).enumerate(5).batch(2)
    assert rows.output_shapes == tf.TensorShape([]) and named.output_types == (dg.int64, dg.string)
    with dg.Session() as sess:
        sess.run(it.initializer, {count: 3})
        got = drain(sess, element)
        flat = drain(sess, rows.make_one_shot_iterator().get_next())
        batches = drain(sess, named.make_one_shot_iterator().get_next())
    assert [(i, v.tolist()) for i, v in got] == [(0, [0.0, 0.0]), (1, [1.0, 1.0]), (2, [2.0, 2.0])]
    assert got[0][1].dtype == np.float32 and flat == [0, 1, 2, 3, 4, 5]
    assert [(i.tolist(), s.tolist()) for i, s in batches] == [([5, 6], [b"a", b"b"]), ([7], [b"c"])]
    assert batches[0][1].dtype == object  # strings stay bytes objects, as TensorFlow's


@pytest.mark.parametrize(
    ("generator", "shape", "error", "message"),
    [  # TensorFlow 2.21 raises InvalidArgumentError with these TypeErrors' words
        (lambda: iter([[1, 2], [3]]), [2], tf.errors.InvalidArgumentError,
         r"yielded an element of shape \(1,\) where an element of shape \(2,\) was expected"),
        (lambda: iter([1.5]), None, tf.errors.InvalidArgumentError,
         "could not be converted to the expected type int32"),
        (lambda: (1 / 0 for _ in range(2)), None, tf.errors.UnknownError, "ZeroDivisionError"),
    ],
)  # fmt: skip
def test_from_generator_errors(graph, generator, shape, error, message):
    element = Dataset.from_generator(generator, dg.int32, shape).make_one_shot_iterator()
    value = element.get_next()
    with dg.Session() as sess, pytest.raises(error, match=message):
        drain(sess, value)
