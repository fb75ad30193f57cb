"""tf.contrib's common subset (issue 26): TF 1.15's names, defaults, variable names and
values for layers, slim and framework; a clear error for the rest."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import daskgraph.compat.v1 as tf

slim = tf.contrib.slim
layers = tf.contrib.layers


def _run(fetches, feed=None, init=True):
    with tf.Session() as session:
        if init:
            session.run(tf.global_variables_initializer())
        return session.run(fetches, feed)


def test_fully_connected_names_its_variables_as_tensorflow_and_computes_relu_x_w_b():
    x = np.arange(6, dtype=np.float32).reshape(2, 3) - 2.0
    w = np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4)
    with tf.Graph().as_default() as g:
        y = layers.fully_connected(
            tf.constant(x), 4, weights_initializer=tf.constant_initializer(w),
            biases_initializer=tf.constant_initializer(0.25),
        )  # fmt: skip
        z = layers.fully_connected(tf.constant(x), 2, activation_fn=None)
        names = [v.op.name for v in g.get_collection(tf.GraphKeys.MODEL_VARIABLES)]
        assert names == [
            "fully_connected/weights", "fully_connected/biases",
            "fully_connected_1/weights", "fully_connected_1/biases",
        ]  # fmt: skip
        assert {v.op.name for v in tf.trainable_variables()} == set(names)
        value, other = _run([y, z])
    np.testing.assert_allclose(value, np.maximum(x @ w + 0.25, 0), rtol=1e-6)
    assert other.shape == (2, 2) and (other < 0).any()  # no activation


def test_conv2d_pool_flatten_and_their_scopes():
    images = np.random.default_rng(0).random((2, 6, 6, 3), dtype=np.float32)
    with tf.Graph().as_default() as g:
        x = tf.constant(images)
        net = layers.conv2d(x, 5, 3, weights_initializer=tf.ones_initializer())
        pooled = layers.max_pool2d(net, 2)
        averaged = layers.avg_pool2d(net, [2, 2], stride=2)
        flat = layers.flatten(pooled)
        assert [v.op.name for v in slim.get_model_variables()] == ["Conv/weights", "Conv/biases"]
        assert g.get_tensor_by_name("Conv/weights:0").shape == (3, 3, 3, 5)
        assert pooled.op.name.startswith("MaxPool2D/") and flat.op.name.startswith("Flatten/")
        assert flat.shape == (2, 45)
        net_value, pooled_value, averaged_value = _run([net, pooled, averaged])
    padded = np.pad(images, ((0, 0), (1, 1), (1, 1), (0, 0)))
    window_sums = sum(
        padded[:, i : i + 6, j : j + 6, :].sum(-1) for i in range(3) for j in range(3)
    )
    np.testing.assert_allclose(net_value[..., 0], window_sums, rtol=1e-5)  # relu(sum) >= 0
    blocks = net_value.reshape(2, 3, 2, 3, 2, 5)
    np.testing.assert_allclose(pooled_value, blocks.max(axis=(2, 4)), rtol=1e-6)
    np.testing.assert_allclose(averaged_value, blocks.mean(axis=(2, 4)), rtol=1e-5)


def test_arg_scope_sets_defaults_nests_and_stays_in_its_thread():
    seen = {}
    with tf.Graph().as_default():
        x = tf.ones([1, 2])
        with slim.arg_scope([slim.fully_connected], activation_fn=None, num_outputs=3):
            with slim.arg_scope([slim.fully_connected], biases_initializer=None) as scope:
                inner = slim.fully_connected(x)

                def other_thread():
                    seen["scope"] = tf.contrib.framework.current_arg_scope()

                thread = threading.Thread(target=other_thread)
                thread.start()
                thread.join()
            outer = slim.fully_connected(x, scope="outer")
        with slim.arg_scope(scope):  # re-entered
            again = slim.fully_connected(x, scope="again")
        names = [v.op.name for v in slim.get_variables()]
    assert seen["scope"] == {}
    assert inner.shape == outer.shape == again.shape == (1, 3)
    assert "fully_connected/biases" not in names and "outer/biases" in names
    assert "again/biases" not in names
    with pytest.raises(ValueError, match="is not decorated with @add_arg_scope"):
        with slim.arg_scope([tf.matmul], transpose_a=True):
            pass
    with pytest.raises(TypeError, match="list/tuple or reused scope"):
        with slim.arg_scope(slim.conv2d, padding="VALID"):
            pass


def test_regularizers_add_their_penalties_as_tensorflow():
    w = np.array([[1.0, -2.0], [3.0, 0.5]], np.float32)
    with tf.Graph().as_default():
        layers.fully_connected(
            tf.ones([1, 2]), 2, weights_initializer=tf.constant_initializer(w),
            weights_regularizer=layers.l2_regularizer(0.1),
            biases_regularizer=layers.l1_regularizer(0.5),
            biases_initializer=tf.constant_initializer(-2.0),
        )  # fmt: skip
        penalties = tf.get_collection(tf.GraphKeys.REGULARIZATION_LOSSES)
        total = layers.apply_regularization(
            layers.sum_regularizer([layers.l1_regularizer(1.0), layers.l2_regularizer(1.0)]),
            [tf.constant(w)],
        )
        values = _run([*penalties, total])
    assert values[0] == pytest.approx(0.1 * (w**2).sum() / 2)
    assert values[1] == pytest.approx(0.5 * 4.0)
    assert values[2] == pytest.approx(np.abs(w).sum() + (w**2).sum() / 2)
    assert layers.l2_regularizer(0.0)(tf.ones([1])) is None
    for bad, message in ((1, "cannot be an integer"), (-0.5, "less than 0")):
        with pytest.raises(ValueError, match=message):
            layers.l2_regularizer(bad)


def test_contribs_initializers_have_tensorflow_1_15s_spread():
    fan_in, fan_out = 200, 300
    with tf.Graph().as_default():
        xavier = tf.get_variable(
            "x", [fan_in, fan_out], initializer=layers.xavier_initializer(seed=1)
        )
        he = tf.get_variable(
            "h", [fan_in, fan_out], initializer=layers.variance_scaling_initializer(seed=2)
        )
        xavier_value, he_value = _run([xavier, he])
    limit = np.sqrt(6.0 / (fan_in + fan_out))
    assert np.abs(xavier_value).max() <= limit and np.abs(xavier_value).max() > 0.95 * limit
    stddev = np.sqrt(1.3 * 2.0 / fan_in)  # contrib's truncated normal: sqrt(1.3 * factor / n)
    assert np.abs(he_value).max() <= 2 * stddev
    assert he_value.std() == pytest.approx(stddev * 0.8796, rel=0.03)  # (cut at 2 stddevs)
    with pytest.raises(TypeError, match="Unknown mode"):
        layers.variance_scaling_initializer(mode="FAN_MAX")


def test_repeat_stack_and_the_variables_to_restore():
    with tf.Graph().as_default():
        x = tf.ones([2, 4, 4, 1])
        net = slim.repeat(x, 2, slim.conv2d, 2, [3, 3], scope="conv1")
        net = slim.stack(slim.flatten(net), slim.fully_connected, [8, 4], scope="fc")
        names = [v.op.name for v in slim.get_model_variables()]
        kept = [v.op.name for v in slim.get_variables_to_restore(exclude=["fc/fc_2"])]
        weights = [v.op.name for v in slim.get_variables_by_name("weights")]
        assert net.shape == (2, 4)
    assert names == [
        "conv1/conv1_1/weights", "conv1/conv1_1/biases", "conv1/conv1_2/weights",
        "conv1/conv1_2/biases", "fc/fc_1/weights", "fc/fc_1/biases", "fc/fc_2/weights",
        "fc/fc_2/biases",
    ]  # fmt: skip
    assert kept == names[:6]
    assert weights == names[::2]


def test_dropout_one_hot_and_batch_norm():
    with tf.Graph().as_default():
        x = tf.ones([100, 10])
        dropped = layers.dropout(x, keep_prob=0.5, seed=3)
        kept = layers.dropout(x, is_training=False)
        hot = layers.one_hot_encoding(tf.constant([0, 2]), 3)
        normed = layers.batch_norm(tf.constant([[1.0, 2.0], [3.0, 6.0]]), is_training=True)
        names = [v.op.name for v in tf.global_variables()]
        dropped_value, kept_value, hot_value, normed_value = _run([dropped, kept, hot, normed])
        with pytest.raises(TypeError, match="Python bool"):
            layers.dropout(x, is_training=tf.constant(True))
    assert set(np.unique(dropped_value)) == {0.0, 2.0} and (kept_value == 1.0).all()
    np.testing.assert_array_equal(hot_value, [[1, 0, 0], [0, 0, 1]])
    assert "BatchNorm/beta" in names and "BatchNorm/moving_mean" in names
    np.testing.assert_allclose(normed_value, [[-1, -1], [1, 1]], atol=1e-3)


def test_a_training_program_in_slim_learns():
    rng = np.random.default_rng(4)
    labels = np.arange(16) % 2
    images = rng.random((16, 6, 6, 1), dtype=np.float32) + labels[:, None, None, None]
    with tf.Graph().as_default():
        tf.set_random_seed(5)  # (the initializers' draws: the same run every time)
        x = tf.placeholder(tf.float32, [None, 6, 6, 1])
        y = tf.placeholder(tf.int64, [None])
        with slim.arg_scope([slim.conv2d, slim.fully_connected],
                            weights_regularizer=slim.l2_regularizer(1e-4)):  # fmt: skip
            net = slim.conv2d(x, 4, [3, 3], scope="conv1")
            net = slim.max_pool2d(net, [2, 2], scope="pool1")
            logits = slim.fully_connected(slim.flatten(net), 2, activation_fn=None, scope="fc")
        loss = tf.losses.sparse_softmax_cross_entropy(y, logits)
        total = loss + tf.add_n(tf.losses.get_regularization_losses())
        train = tf.train.AdamOptimizer(0.05).minimize(total)
        with tf.Session() as session:
            session.run(tf.global_variables_initializer())
            first = session.run(loss, {x: images, y: labels})
            for _ in range(60):
                session.run(train, {x: images, y: labels})
            last = session.run(loss, {x: images, y: labels})
    assert last < first / 2


def test_the_rest_of_contrib_raises_an_error_that_says_where_to_look():
    for reach in (lambda: tf.contrib.rnn, lambda: slim.learning, lambda: tf.contrib.seq2seq):
        with pytest.raises(AttributeError, match=r"common subset.*docs/compat\.md"):
            reach()
