"""Towers written by hand as TensorFlow's multi-GPU CIFAR-10 trainer writes them, run
unchanged through ``daskgraph.compat.v1`` (only the import differs), and checked against
single-device training on the whole batch. The trainer's code is kept as TensorFlow wrote it
(hence the lint exceptions)."""

# ruff: noqa: B905, UP031

from __future__ import annotations

import numpy as np
import pytest

import daskgraph.compat.v1 as tf

RNG = np.random.default_rng(3)
IMAGES = RNG.normal(size=(32, 12)).astype(np.float32)
LABELS = RNG.integers(0, 4, size=32).astype(np.int64)


def _variable_on_cpu(name, shape, initializer):
    with tf.device("/cpu:0"):
        return tf.get_variable(name, shape, initializer=initializer, dtype=tf.float32)


def inference(images):
    with tf.variable_scope("local") as scope:
        weights = _variable_on_cpu("weights", [12, 16], tf.truncated_normal_initializer(
            stddev=0.1, seed=1))  # fmt: skip
        biases = _variable_on_cpu("biases", [16], tf.constant_initializer(0.1))
        local = tf.nn.relu(tf.matmul(images, weights) + biases, name=scope.name)
    with tf.variable_scope("softmax_linear") as scope:
        weights = _variable_on_cpu("weights", [16, 4], tf.truncated_normal_initializer(
            stddev=0.1, seed=2))  # fmt: skip
        biases = _variable_on_cpu("biases", [4], tf.constant_initializer(0.0))
        return tf.add(tf.matmul(local, weights), biases, name=scope.name)


def loss(logits, labels):
    cross_entropy = tf.nn.sparse_softmax_cross_entropy_with_logits(
        labels=labels, logits=logits, name="cross_entropy_per_example"
    )
    cross_entropy_mean = tf.reduce_mean(cross_entropy, name="cross_entropy")
    tf.add_to_collection("losses", cross_entropy_mean)
    return tf.add_n(tf.get_collection("losses"), name="total_loss")


def tower_loss(scope, images, labels):
    logits = inference(images)
    _ = loss(logits, labels)
    losses = tf.get_collection("losses", scope)
    return tf.add_n(losses, name="total_loss")


def average_gradients(tower_grads):
    average_grads = []
    for grad_and_vars in zip(*tower_grads):
        grads = []
        for g, _ in grad_and_vars:
            expanded_g = tf.expand_dims(g, 0)
            grads.append(expanded_g)
        grad = tf.concat(axis=0, values=grads)
        grad = tf.reduce_mean(grad, 0)
        v = grad_and_vars[0][1]
        average_grads.append((grad, v))
    return average_grads


def train(num_gpus, steps, session_target):
    with tf.Graph().as_default(), tf.device("/cpu:0"):
        global_step = tf.get_variable(
            "global_step", [], initializer=tf.constant_initializer(0), trainable=False,
            dtype=tf.int64,
        )  # fmt: skip
        opt = tf.train.GradientDescentOptimizer(0.5)
        images = tf.placeholder(tf.float32, [32, 12])
        labels = tf.placeholder(tf.int64, [32])
        image_shards = tf.split(images, num_gpus, axis=0)
        label_shards = tf.split(labels, num_gpus, axis=0)
        tower_grads = []
        with tf.variable_scope(tf.get_variable_scope()):
            for i in range(num_gpus):
                with tf.device("/gpu:%d" % i):
                    with tf.name_scope("tower_%d" % i) as scope:
                        tower = tower_loss(scope, image_shards[i], label_shards[i])
                        tf.get_variable_scope().reuse_variables()
                        grads = opt.compute_gradients(tower)
                        tower_grads.append(grads)
        grads = average_gradients(tower_grads)
        apply_gradient_op = opt.apply_gradients(grads, global_step=global_step)
        train_op = tf.group(apply_gradient_op)
        init = tf.global_variables_initializer()
        config = tf.ConfigProto(allow_soft_placement=True, log_device_placement=False)
        with tf.Session(session_target, config=config) as sess:
            sess.run(init)
            for _ in range(steps):
                sess.run(train_op, {images: IMAGES, labels: LABELS})
            return sess.run(tf.trainable_variables()), sess.run(global_step)


@pytest.mark.virtual_gpus(2)
def test_the_cifar10_multi_gpu_trainer_runs_unchanged_and_matches_one_device(dg_client):
    one, step_one = train(1, 6, dg_client)
    two, step_two = train(2, 6, dg_client)
    assert step_one == step_two == 6
    assert len(one) == len(two) == 4
    for a, b in zip(one, two, strict=True):
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6)
