"""tf.random's other ops: shuffle, multinomial/categorical, gamma, poisson, random_crop and the
stateless ops; TF1's seed rules, TensorFlow's op names (as TF 2.21 names them) and errors."""

from __future__ import annotations

import numpy as np
import pytest

import daskgraph as dg
import daskgraph.compat.v1 as tf
from daskgraph.errors import InvalidArgumentError


def test_names_are_tensorflows():
    with dg.Graph().as_default():
        made = [
            tf.random_shuffle(tf.constant([[1, 2], [3, 4], [5, 6]])),
            tf.multinomial(tf.constant([[0.0, 1.0]]), 5),
            tf.random.categorical(tf.constant([[0.0, 1.0]]), 4, dtype=tf.int32),
            tf.random_gamma([2, 3], tf.constant([1.0, 2.0]), beta=tf.constant([[1.0], [2.0]])),
            tf.random_poisson(tf.constant([1.0, 5.0]), [4]),
            tf.random_poisson(3.0, [4], dtype=tf.int64),
            tf.random_crop(tf.reshape(tf.range(24), [4, 6]), [2, 3]),
            tf.multinomial(tf.placeholder(tf.float32, [None, 3]), tf.constant(3)),
            tf.random.stateless_uniform([2], [1, 2]),
            tf.random.stateless_normal([2], [1, 2]),
            tf.random.stateless_truncated_normal([2], [1, 2]),
            tf.random.stateless_categorical([[0.0, 1.0]], 3, [1, 2]),
            tf.random.stateless_uniform([2], [1, 2], minval=1, maxval=5, dtype=tf.int32),
        ]
    got = [(t.name, t.shape, t.dtype.name) for t in made]
    assert got == [  # tf.compat.v1 (TensorFlow 2.21)
        ("RandomShuffle:0", (3, 2), "int32"),
        ("multinomial/Multinomial:0", (1, 5), "int64"),
        ("categorical/Multinomial:0", (1, 4), "int32"),
        ("random_gamma/Maximum:0", (2, 3, 2, 2), "float32"),
        ("random_poisson/RandomPoissonV2:0", (4, 2), "float32"),
        ("random_poisson_1/RandomPoissonV2:0", (4,), "int64"),
        ("random_crop:0", (2, 3), "int32"),
        ("multinomial_1/Multinomial:0", (None, 3), "int64"),
        ("stateless_random_uniform:0", (2,), "float32"),
        ("stateless_random_normal:0", (2,), "float32"),
        ("stateless_truncated_normal:0", (2,), "float32"),
        ("stateless_categorical/StatelessMultinomial:0", (1, 3), "int64"),
        ("stateless_random_uniform_1:0", (2,), "int32"),
    ]
    assert tf.random.shuffle is tf.random_shuffle and tf.random.poisson is tf.random_poisson
    assert tf.random.multinomial is tf.multinomial and tf.random.get_seed is tf.get_seed


def test_seeds_as_tensorflow_1():
    with dg.Graph().as_default():
        assert tf.get_seed(None) == (None, None) and tf.get_seed(3) == (87654321, 3)
        tf.set_random_seed(5)
        x = tf.random_shuffle(tf.range(20), seed=1)
        y = tf.random_shuffle(tf.range(20))  # the graph seed alone: seeded too
        with dg.Session() as sess:
            first = sess.run([x, y])
            second = sess.run([x, y])  # every run draws anew
        with dg.Session() as sess:
            again = sess.run([x, y])  # the same seeds: the same values in a new session
    assert all(sorted(v.tolist()) == list(range(20)) for v in first)
    assert all((a == b).all() for a, b in zip(first, again, strict=True))
    assert not (first[0] == second[0]).all()


def test_distributions():
    with dg.Graph().as_default():
        probs = np.array([0.2, 0.3, 0.5])
        draws = tf.multinomial(tf.constant([np.log(probs), [0.0, -np.inf, 0.0]]), 20000, seed=1)
        gamma = tf.random_gamma([20000], [2.0, 0.5], beta=2.0, seed=2)
        poisson = tf.random_poisson([1.5, 7.0], [20000], dtype=tf.int32, seed=3)
        with dg.Session() as sess:
            d, g, p = sess.run([draws, gamma, poisson])
    np.testing.assert_allclose(np.bincount(d[0], minlength=3) / 20000, probs, atol=0.015)
    assert set(np.unique(d[1])) == {0, 2}  # a class of -inf logit is never drawn
    np.testing.assert_allclose(g.mean(axis=0), [1.0, 0.25], rtol=0.03)  # alpha / beta
    np.testing.assert_allclose(g.var(axis=0), [0.5, 0.125], rtol=0.06)  # alpha / beta**2
    assert p.dtype == np.int32 and (p >= 0).all()
    np.testing.assert_allclose(p.mean(axis=0), [1.5, 7.0], rtol=0.03)


def test_random_crop_blocks_and_errors():
    with dg.Graph().as_default():
        grid = tf.reshape(tf.range(24), [4, 6])
        crop = tf.random_crop(grid, [2, 3], seed=4)
        value = tf.placeholder(tf.float32, [None, 4])
        too_big = tf.random_crop(value, [5, 2])
        with dg.Session() as sess:
            blocks = [sess.run(crop) for _ in range(40)]
            with pytest.raises(InvalidArgumentError, match=r"Need value.shape >= size, got \] "
                               r"\[3 4\] \[5 2\]"):  # fmt: skip
                sess.run(too_big, {value: np.zeros((3, 4))})
        with pytest.raises(ValueError, match="size must have 2 entries"):
            tf.random_crop(grid, [2, 2, 2])
    full = np.arange(24).reshape(4, 6)
    corners = [divmod(int(b[0, 0]), 6) for b in blocks]  # each block's top left corner
    assert all(
        (b == full[r : r + 2, c : c + 3]).all() for b, (r, c) in zip(blocks, corners, strict=True)
    )
    assert set(corners) == {(r, c) for r in range(3) for c in range(4)}  # every offset occurs


def test_stateless_values_follow_the_seed():
    with dg.Graph().as_default():
        seed = tf.placeholder(tf.int64, [2])
        ops = [
            tf.random.stateless_uniform([1000], seed, minval=-2.0, maxval=3.0),
            tf.random.stateless_normal([3], seed, mean=10.0),
            tf.random.stateless_truncated_normal([1000], seed, stddev=2.0),
            tf.random.stateless_uniform([1000], seed, minval=3, maxval=6, dtype=tf.int64),
            tf.random.stateless_multinomial([[0.0, 0.0, -np.inf]], 50, seed),
        ]
        with dg.Session() as sess:
            a = sess.run(ops, {seed: [7, -1]})
            b = sess.run(ops, {seed: [7, -1]})
        with dg.Session() as sess:
            c = sess.run(ops, {seed: [7, -1]})
            d = sess.run(ops, {seed: [8, -1]})
            with pytest.raises(InvalidArgumentError, match=r"seed must have shape \[2\]"):
                sess.run(tf.random.stateless_normal([2], tf.placeholder_with_default(
                    tf.constant([1, 2, 3], dtype=tf.int64), [None])))  # fmt: skip
    for x, y, z in zip(a, b, c, strict=True):
        assert (x == y).all() and (x == z).all()
    assert not (a[1] == d[1]).all()
    uniform, _, truncated, ints, classes = a
    assert uniform.min() >= -2.0 and uniform.max() < 3.0 and uniform.std() > 1.0
    assert np.abs(truncated).max() < 4.0 and truncated.std() > 1.0
    assert set(np.unique(ints)) == {3, 4, 5} and ints.dtype == np.int64
    assert set(np.unique(classes)) == {0, 1}
    with dg.Graph().as_default(), pytest.raises(ValueError, match=r"seed must have shape \[2\]"):
        tf.random.stateless_normal([2], [1, 2, 3])


def test_argument_errors_in_tensorflows_words():
    with dg.Graph().as_default():
        with pytest.raises(TypeError, match="DataType string not in list of allowed values"):
            tf.random_poisson(1.0, [2], dtype=tf.string)
        with pytest.raises(TypeError, match="must be a floating point type"):
            tf.random_gamma([2], 1.0, dtype=tf.int32)
        with pytest.raises(ValueError, match="logits must be a matrix"):
            tf.multinomial(tf.zeros([2, 2, 2]), 3)
        with pytest.raises(ValueError, match="num_samples should be nonnegative"):
            tf.multinomial(tf.zeros([2, 2]), -1)
        count = tf.placeholder(tf.int32, [])
        draws = tf.random.categorical(tf.zeros([2, 3]), count)
        with dg.Session() as sess:
            assert sess.run(draws, {count: 4}).shape == (2, 4)
            with pytest.raises(InvalidArgumentError, match="num_samples should be nonnegative"):
                sess.run(draws, {count: -2})


@pytest.mark.virtual_gpus(1)
def test_on_a_gpu(dg_session):
    with dg.device("/gpu:0"):
        shuffled = tf.random_shuffle(tf.constant(np.arange(12.0).reshape(6, 2)), seed=1)
        crop = tf.random_crop(tf.constant(np.arange(12.0).reshape(3, 4)), [3, 2], seed=2)
        gamma = tf.random_gamma([4], 3.0, seed=3)
    plan = dg_session.placement([shuffled, crop, gamma])
    assigned = {o.name: o.assigned for o in plan.ops}
    names = ("RandomShuffle", "random_crop", "random_gamma/RandomGamma")
    assert all(assigned[n].endswith("GPU:0") for n in names), assigned
    rows, block, g = dg_session.run([shuffled, crop, gamma])
    assert sorted(map(tuple, rows.tolist())) == [(2.0 * i, 2.0 * i + 1) for i in range(6)]
    assert block.shape == (3, 2) and (np.diff(block, axis=1) == 1).all()
    assert (g > 0).all()
