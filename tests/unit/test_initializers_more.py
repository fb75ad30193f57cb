"""``orthogonal_initializer``, ``tf.initializers.identity`` and
``uniform_unit_scaling_initializer`` (daskgraph/ops/initializers.py) and the rest of
``tf.initializers``: the properties TensorFlow's values have (its random draws differ)."""

from __future__ import annotations

import json
import pathlib

import numpy as np
import pytest

import daskgraph.compat.v1 as tf

SNAPSHOT = pathlib.Path(tf.__file__).with_name("tf1_api.json")


def _values(shapes_and_initializers):
    with tf.Graph().as_default():
        tf.set_random_seed(7)
        variables = [
            tf.get_variable(f"v{i}", shape, tf.float64, initializer=init)
            for i, (shape, init) in enumerate(shapes_and_initializers)
        ]
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            return sess.run(variables)


def test_orthogonal():
    tall, wide, conv, scaled = _values([
        ([5, 3], tf.orthogonal_initializer()),
        ([3, 5], tf.orthogonal_initializer(seed=2)),
        ([2, 2, 3, 4], tf.initializers.orthogonal()),
        ([4, 4], tf.orthogonal_initializer(gain=2.0)),
    ])  # fmt: skip
    np.testing.assert_allclose(tall.T @ tall, np.eye(3), atol=1e-12)
    np.testing.assert_allclose(wide @ wide.T, np.eye(3), atol=1e-12)
    flat = conv.reshape(-1, 4)
    np.testing.assert_allclose(flat.T @ flat, np.eye(4), atol=1e-12)
    np.testing.assert_allclose(scaled.T @ scaled, 4.0 * np.eye(4), atol=1e-12)
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="at least two-dimensional"):
            tf.get_variable("v", [3], initializer=tf.orthogonal_initializer())


def test_identity_and_uniform_unit_scaling():
    square, wide, uniform = _values([
        ([3, 3], tf.initializers.identity()),
        ([2, 3], tf.initializers.identity(gain=0.5)),
        ([300, 40], tf.uniform_unit_scaling_initializer(factor=2.0)),
    ])  # fmt: skip
    assert square.tolist() == np.eye(3).tolist()  # TF 2.21: the same
    assert wide.tolist() == [[0.5, 0.0, 0.0], [0.0, 0.5, 0.0]]
    limit = 2.0 * np.sqrt(3.0 / 300)
    assert np.abs(uniform).max() <= limit and np.abs(uniform).max() > 0.95 * limit
    assert abs(uniform.mean()) < 0.01 and abs(uniform.std() - limit / np.sqrt(3)) < 0.01
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="only be used for 2D matrices"):
            tf.get_variable("v", [2, 2, 2], initializer=tf.initializers.identity())
    config = tf.uniform_unit_scaling_initializer(1.5, seed=3).get_config()
    assert config == {"factor": 1.5, "seed": 3, "dtype": "float32"}


def test_tf_initializers_has_every_name_of_tf1():
    names = json.loads(SNAPSHOT.read_text())["namespaces"]["initializers"]
    assert [n for n in names if not hasattr(tf.initializers, n)] == []
    with tf.Graph().as_default():
        tables = tf.initializers.tables_initializer()
        local = tf.initializers.local_variables()
    assert (tables.name, tables.type, local.type) == ("init_all_tables", "NoOp", "NoOp")
