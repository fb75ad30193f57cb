"""Feeds whose values survive the cast to the placeholder's dtype are converted, as TensorFlow
converts them: the TF 1 training pattern that feeds float32 one-hot labels (0.0/1.0) to an int32
placeholder trains; a value the cast would change is refused before anything runs, the message
naming the element, the placeholder and both dtypes."""

from __future__ import annotations

import numpy as np
import pytest

import daskgraph.compat.v1 as tf
from daskgraph.errors import LossyCastError

# three separable classes in two features, their labels one-hot as float32 (as a data loader
# that one-hot encodes with np.eye gives them)
POINTS = np.array(
    [[2.0, 0.0], [2.5, 0.5], [0.0, 2.0], [0.5, 2.5], [-2.0, -2.0], [-2.5, -1.5]], np.float32
)
CLASSES = np.array([0, 0, 1, 1, 2, 2])
ONE_HOT = np.eye(3, dtype=np.float32)[CLASSES]


def _softmax_model(labels: tf.Tensor, sparse: bool):
    x = tf.placeholder(tf.float32, [None, 2], name="X_placeholder")
    w = tf.Variable(tf.zeros([2, 3]), name="w")
    b = tf.Variable(tf.zeros([3]), name="b")
    logits = tf.matmul(x, w) + b
    if sparse:
        losses = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)
    else:
        losses = tf.nn.softmax_cross_entropy_with_logits_v2(
            labels=tf.cast(labels, tf.float32), logits=logits
        )
    loss = tf.reduce_mean(losses)
    train = tf.train.GradientDescentOptimizer(0.5).minimize(loss)
    predicted = tf.argmax(logits, 1, output_type=tf.int32)
    return x, loss, train, predicted


@pytest.mark.parametrize("sparse", [False, True], ids=["one-hot", "sparse"])
def test_float_labels_fed_to_an_int32_placeholder_train(sparse: bool) -> None:
    with tf.Graph().as_default():
        shape = [None] if sparse else [None, 3]
        y = tf.placeholder(tf.int32, shape, name="Y_placeholder")
        x, loss, train, predicted = _softmax_model(y, sparse)
        labels = CLASSES.astype(np.float32) if sparse else ONE_HOT
        feed = {x: POINTS, y: labels}
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            first = sess.run(loss, feed)
            for _ in range(50):
                sess.run(train, feed)
            last, guesses = sess.run([loss, predicted], feed)
    assert first == pytest.approx(np.log(3.0), rel=1e-5)  # all-zero weights: uniform
    assert last < first / 4
    assert guesses.tolist() == CLASSES.tolist()


def test_the_fed_labels_arrive_as_the_placeholders_integers() -> None:
    with tf.Graph().as_default():
        y = tf.placeholder(tf.int32, [None, 3], name="Y_placeholder")
        doubled = y * 2
        with tf.Session() as sess:
            got = sess.run(doubled, {y: ONE_HOT})
    assert got.dtype == np.int32
    assert got.tolist() == (ONE_HOT * 2).astype(int).tolist()


def test_a_label_the_cast_would_change_is_refused_naming_it() -> None:
    with tf.Graph().as_default():
        y = tf.placeholder(tf.int32, [None, 3], name="Y_placeholder")
        x, _, train, _ = _softmax_model(y, sparse=False)
        labels = ONE_HOT.copy()
        labels[4, 2] = 0.5
        labels[5, 0] = 0.25  # a later offender: not the one named
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            with pytest.raises(ValueError) as info:
                sess.run(train, {x: POINTS, y: labels})
            weights = sess.run(tf.global_variables()[0])
    err = info.value
    assert isinstance(err, LossyCastError)
    assert str(err).startswith(
        "Cannot feed value of dtype float32 to tensor 'Y_placeholder:0' of dtype int32: "
        "element [4, 2] is 0.5, which is not an integer."
    )
    assert (err.tensor, err.index, err.value) == ("Y_placeholder:0", (4, 2), 0.5)
    assert (err.source, err.target) == ("float32", "int32")
    assert not weights.any()  # refused before the step ran: nothing was trained


@pytest.mark.parametrize(
    ("dtype", "value", "named"),
    [
        (tf.int32, [1.0, 3.7], "element [1] is 3.7, which is not an integer"),
        (tf.int64, [0.0, np.nan], "element [1] is nan, which is not a finite number"),
        (tf.uint8, [7, -1], "element [1] is -1, outside uint8's range [0, 255]"),
        (tf.float64, np.array([2**53 + 1]), "element [0] is 9007199254740993, which cannot"),
        (tf.bool, [1.0, 2.0], "element [1] is 2.0, which is neither 0 nor 1"),
    ],
    ids=["fraction", "nan", "negative-unsigned", "2**53+1", "bool"],
)
def test_lossy_feeds_are_refused_with_the_element_named(dtype, value, named) -> None:
    with tf.Graph().as_default():
        p = tf.placeholder(dtype, [None], name="p")
        with tf.Session() as sess, pytest.raises(LossyCastError, match=r"tensor 'p:0'") as info:
            sess.run(tf.identity(p), {p: value})
    assert named in str(info.value)


def test_float64_feeds_to_float32_are_rounded_as_tensorflow_does() -> None:
    with tf.Graph().as_default():
        p = tf.placeholder(tf.float32, [None], name="p")
        with tf.Session() as sess:
            got = sess.run(tf.identity(p), {p: np.array([0.1, 1e-50, np.inf])})
            with pytest.raises(LossyCastError, match=r"element \[0\] is 1e\+300, which overflows"):
                sess.run(tf.identity(p), {p: np.array([1e300])})
    assert got.dtype == np.float32
    assert got.tolist() == [np.float32(0.1), 0.0, np.inf]


@pytest.mark.parametrize(
    ("dtype", "value"), [(tf.int32, 2**40), (tf.uint8, -1), (tf.float64, 2**53 + 1)]
)
def test_a_python_int_a_placeholder_cannot_hold_is_tensorflows_type_error(dtype, value) -> None:
    with tf.Graph().as_default():
        p = tf.placeholder(dtype, [], name="p")
        with tf.Session() as sess, pytest.raises(TypeError) as info:
            sess.run(tf.identity(p), {p: value})
    assert str(info.value).startswith(
        f"Type of feed value {value} with type <class 'int'> is not compatible with Tensor type "
        f"{dtype.as_numpy_dtype}. Try explicitly setting the type of the feed tensor to a "
        "larger type (e.g. int64)."
    )
    assert isinstance(info.value, LossyCastError)  # a ValueError too, with daskgraph's fields
    assert (info.value.tensor, info.value.value) == ("p:0", value)
