"""``while_loop``, ``map_fn``, ``scan``, ``foldl``, ``foldr``: values against NumPy and
Python, TensorFlow 1's return structures and shape/dtype errors (TensorFlow 2.21's messages),
captured tensors, one loop run per run, stateful bodies, placement, no gradient."""

from __future__ import annotations

import numpy as np
import pytest

import daskgraph as dg
import daskgraph.compat.v1 as tf
from daskgraph.ops.loops import foldl, foldr, map_fn, scan, while_loop
from daskgraph.ops.script_ops import py_func


@pytest.fixture
def graph():
    with dg.Graph().as_default() as g:
        yield g


def run(fetches, feed=None):
    with dg.Session() as sess:
        return sess.run(fetches, feed)


def test_counting_to_n_with_several_loop_variables(graph):
    n = dg.placeholder(dg.int32, [])
    i, a, b = while_loop(
        lambda i, a, b: i < n, lambda i, a, b: (i + 1, b, a + b), (0, 0, 1), name="fib"
    )
    assert [t.op.name for t in (i, a, b)] == ["fib/Exit", "fib/Exit_1", "fib/Exit_2"]
    assert i.op.inputs[0].op.type == "StatelessWhile"
    x, y = 0, 1
    for _ in range(20):
        x, y = y, x + y
    assert run([i, a, b], {n: 20}) == [20, x, y]
    assert run(a, {n: 0}) == 0  # cond false at once: the initial values


def test_return_structures_as_in_tensorflow_1(graph):
    i = dg.constant(0)
    assert isinstance(while_loop(lambda i: i < 3, lambda i: i + 1, [i]), dg.Tensor)
    assert isinstance(while_loop(lambda i: i < 3, lambda i: i + 1, i), dg.Tensor)
    same = while_loop(lambda i: i < 3, lambda i: i + 1, [i], return_same_structure=True)
    as_list = while_loop(lambda i, j: i < 3, lambda i, j: [i + 1, j * 2.0], [i, 1.0])
    nested = while_loop(
        lambda i, p: i < 10, lambda i, p: (i + 1, (p[0] + 1, p[1])), (i, (i, dg.constant(7)))
    )
    as_dict = while_loop(lambda d: d["k"] < 4, lambda d: {"k": d["k"] + 1}, {"k": i})
    assert isinstance(same, list) and isinstance(as_list, list)
    assert isinstance(nested, tuple) and isinstance(nested[1], tuple)
    assert run([same, as_list, nested, as_dict]) == [[3], [3, 8.0], (10, (10, 7)), {"k": 4}]


def test_captured_tensors_variables_and_maximum_iterations(graph):
    x = dg.placeholder(dg.float32, [None])
    w = dg.Variable(3.0)
    limit = dg.placeholder(dg.int32, [])
    grown = while_loop(lambda v: dg.reduce_sum(v) < 1e6, lambda v: v * w, [x])
    steps, capped = while_loop(
        lambda k, v: k < 100, lambda k, v: (k + 1, v + x), (0, x), maximum_iterations=limit
    )
    value = np.array([1.0, 2.0], np.float32)
    with dg.Session() as sess:
        sess.run(w.initializer)
        got, k, c = sess.run([grown, steps, capped], {x: value, limit: 4})
        sess.run(w.assign(2.0))  # the loop reads the variable's value of each run
        again = sess.run(grown, {x: value})
    expected = value.copy()
    while expected.sum() < 1e6:
        expected = expected * 3
    np.testing.assert_array_equal(got, expected)
    assert k == 4 and c.tolist() == [5.0, 10.0]
    assert again.sum() >= 1e6 and again[0] == 2.0 ** np.ceil(np.log2(1e6 / 3))


def test_shape_invariants_and_tensorflow_errors(graph):
    i = dg.constant(0)
    x = dg.constant([1.0])
    _, grown = while_loop(
        lambda i, v: i < 3,
        lambda i, v: (i + 1, dg.concat([v, v], 0)),
        [i, x],
        shape_invariants=[tf.TensorShape([]), [None]],
    )
    assert grown.shape == (None,)
    assert run(grown).tolist() == [1.0] * 8
    with pytest.raises(ValueError, match=r"enters the loop with shape \(1,\), but has shape"):
        while_loop(lambda i, v: i < 3, lambda i, v: (i + 1, dg.concat([v, v], 0)), [i, x])
    with pytest.raises(TypeError, match="enters the loop with type int32 but has type float32"):
        while_loop(lambda i: i < 3, lambda i: dg.cast(i, dg.float32), [i])
    with pytest.raises(ValueError, match="not the structure"):
        while_loop(lambda i: i < 3, lambda i: (i, i), [i])
    with pytest.raises(TypeError, match="scalar bool"):
        while_loop(lambda i: i, lambda i: i, [i])
    with pytest.raises(ValueError, match="No loop variables"):
        while_loop(lambda: True, lambda: (), [])


def test_bodies_may_not_update_or_create_variables(graph):
    v = dg.Variable(0.0)
    with pytest.raises(tf.errors.UnimplementedError, match="updates a variable"):
        while_loop(lambda i: i < 3, lambda i: [v.assign_add(1.0) * 0 + i], [0.0])
    with pytest.raises(tf.errors.UnimplementedError, match="creates a variable"):
        while_loop(lambda i: i < 3, lambda i: i + dg.Variable(1.0).value(), [0.0])
    with pytest.raises(ValueError, match="makes a placeholder"):
        while_loop(lambda i: i < 3, lambda i: i + dg.placeholder(dg.float32, []), [0.0])


def test_the_loop_runs_once_per_run_and_stateful_bodies(graph):
    calls = []

    def note(k):
        calls.append(int(k))
        return k

    def body(k, t):
        counted = py_func(note, [k + 1], dg.int32)  # of unknown shape, as in TensorFlow
        return dg.reshape(counted, []), t * 2

    k, twice = while_loop(lambda k, t: k < 5, body, [0, 1])
    assert k.op.inputs[0].op.type == "While"  # a stateful op inside (the py_func)
    assert run([k, twice]) == [5, 32]
    assert calls == [1, 2, 3, 4, 5]  # each iteration once, although two results were fetched
    draws = while_loop(
        lambda n, acc: n < 3,
        lambda n, acc: (n + 1, dg.concat([acc, dg.random_uniform([1], seed=1)], 0)),
        [0, dg.zeros([0])],
        shape_invariants=[tf.TensorShape([]), [None]],
    )[1]
    values = run(draws)
    assert values.shape == (3,) and len(set(values.tolist())) == 3  # fresh numbers each time


def test_nested_loops_and_errors_naming_the_inner_op(graph):
    def outer_body(i, total):
        inner = while_loop(lambda j, s: j < i, lambda j, s: (j + 1, s + j), (0, 0))[1]
        return i + 1, total + inner

    _, total = while_loop(lambda i, t: i < 5, outer_body, (0, 0))
    assert run(total) == sum(sum(range(i)) for i in range(5))
    m = dg.placeholder(dg.float32, [None, None])
    bad = while_loop(lambda i, v: i < 2, lambda i, v: (i + 1, dg.matmul(v, v)), (0, m))[1]
    with pytest.raises(tf.errors.InvalidArgumentError, match="while_1/body/MatMul"):
        run(bad, {m: np.ones((2, 3), np.float32)})


def test_map_fn_against_numpy(graph):
    x = dg.placeholder(dg.float32, [None, 3])
    scale = dg.constant(2.0)
    value = np.arange(12, dtype=np.float32).reshape(4, 3)
    norms = map_fn(lambda r: dg.sqrt(dg.reduce_sum(r * r)) * scale, x)
    pairs = map_fn(lambda e: (e[0] + e[1], e[1]), (x, x * 10.0), dtype=(dg.float32, dg.float32))
    labelled = map_fn(lambda e: dg.cast(e["a"], dg.int32), {"a": x}, dtype=dg.int32)
    assert norms.shape == (None,) and labelled.shape == (None, 3)
    got, (sums, tens), ints = run([norms, pairs, labelled], {x: value})
    np.testing.assert_allclose(got, 2 * np.linalg.norm(value, axis=1), rtol=1e-6)
    np.testing.assert_array_equal(sums, value * 11)
    np.testing.assert_array_equal(tens, value * 10)
    assert ints.dtype == np.int32 and ints.tolist() == value.astype(np.int32).tolist()
    empty = run(norms, {x: np.zeros((0, 3), np.float32)})
    assert empty.shape == (0,) and empty.dtype == np.float32
    with pytest.raises(TypeError, match="not the dtypes given"):
        map_fn(lambda r: r, x, dtype=dg.int32)


def test_scan_and_folds_against_numpy(graph):
    x = dg.constant([1.0, 2.0, 3.0, 4.0])
    running = scan(lambda a, v: a + v, x)
    with_init = scan(lambda a, v: (a[0] + v, a[1] * v), x, initializer=(0.0, 1.0))
    backwards = scan(lambda a, v: a * 2.0 + v, x, initializer=0.0, reverse=True)
    left, right = foldl(lambda a, v: a - v, x), foldr(lambda a, v: a - v, x)
    digits = foldl(lambda a, v: a * 10 + v, dg.constant([1, 2, 3]), initializer=0)
    got = run([running, with_init, backwards, left, right, digits])
    np.testing.assert_array_equal(got[0], np.cumsum([1.0, 2, 3, 4]))
    np.testing.assert_array_equal(got[1][0], np.cumsum([1.0, 2, 3, 4]))
    np.testing.assert_array_equal(got[1][1], np.cumprod([1.0, 2, 3, 4]))
    np.testing.assert_array_equal(got[2], [49.0, 24.0, 11.0, 4.0])  # TensorFlow's, too
    assert (got[3], got[4], got[5]) == (1.0 - 2 - 3 - 4, 4.0 - 3 - 2 - 1, 123)
    with pytest.raises(tf.errors.InvalidArgumentError, match="no element and no initializer"):
        run(foldl(lambda a, v: a + v, dg.zeros([0])))


def test_no_gradient_through_a_loop(graph):
    w = dg.Variable(2.0)
    looped = while_loop(lambda i, v: i < 2, lambda i, v: (i + 1, v * w), (0, 1.0))[1]
    with pytest.raises(tf.errors.UnimplementedError, match="no gradients through while_loop"):
        dg.gradients(looped, [w])
    assert dg.gradients(looped + w, [w], stop_gradients=[looped])[0] is not None


@pytest.mark.virtual_gpus(1)
def test_a_loop_runs_on_a_gpu_and_a_py_func_keeps_it_on_the_cpu(dg_session):
    x = dg.placeholder(dg.float32, [None])
    on_gpu = map_fn(lambda v: v * v + 1.0, x)
    on_cpu = map_fn(lambda v: py_func(lambda a: a + 1, [v], dg.float32), x)
    value = np.array([1.0, 2.0, 3.0], np.float32)
    got = dg_session.run([on_gpu, on_cpu], {x: value})
    np.testing.assert_array_equal(got[0], value**2 + 1)
    np.testing.assert_array_equal(got[1], value + 1)
    placed = {op.name: op.assigned for op in dg_session.placement([on_gpu, on_cpu], {x: value}).ops}
    assert placed["map"].endswith("GPU:0") and placed["map/output"].endswith("GPU:0")
    assert placed["map_1"].endswith("CPU:0")


def test_compat_names(graph):
    assert (tf.while_loop, tf.map_fn, tf.scan, tf.foldl, tf.foldr) == (
        while_loop,
        map_fn,
        scan,
        foldl,
        foldr,
    )


def test_ops_reading_no_loop_variable_run_once_and_fail_only_when_reached(graph):
    m = dg.placeholder(dg.float32, [None, None])
    n = dg.placeholder(dg.int32, [])
    total = while_loop(
        lambda i, v: i < n, lambda i, v: (i + 1, v + dg.reduce_sum(dg.matmul(m, m))), (0, 0.0)
    )[1]
    square = np.full((2, 2), 0.5, np.float32)
    with dg.Session() as sess:
        assert sess.run(total, {m: square, n: 3}) == 6.0
        wide = np.ones((2, 3), np.float32)  # matmul(m, m) fails, in the body only
        assert sess.run(total, {m: wide, n: 0}) == 0.0
        with pytest.raises(tf.errors.InvalidArgumentError, match="body/MatMul"):
            sess.run(total, {m: wide, n: 1})


def test_tf_nest_as_tensorflow():
    structure = {"b": 1, "a": [2, (3,)]}
    assert tf.nest.flatten(structure) == [2, 3, 1] and tf.nest.flatten(None) == [None]
    assert tf.nest.pack_sequence_as(structure, [20, 30, 10]) == {"b": 10, "a": [20, (30,)]}
    assert tf.nest.map_structure(lambda x, y: x * y, (1, [2]), (3, [4])) == (3, [8])
    assert not tf.nest.is_nested("ab") and tf.nest.is_nested((1,))
    with pytest.raises(ValueError):
        tf.nest.assert_same_structure((1, 2), [1, 2])  # check_types: a list is not a tuple
    tf.nest.assert_same_structure((1, 2), [1, 2], check_types=False)
