"""``make_template``: variables made on the first call and shared by later calls, with
TensorFlow 1's names for the variables and ops (TF 2.21's, from the same program)."""

from __future__ import annotations

import numpy as np
import pytest

import daskgraph as dg
import daskgraph.compat.v1 as tf
from daskgraph.ops.template import make_template


def _scale(x, factor=2.0):
    w = tf.get_variable("w", shape=[2], initializer=tf.constant_initializer(factor))
    return tf.multiply(x, w, name="mul")


def test_variables_are_shared_and_named_as_tensorflow_names_them():
    with tf.Graph().as_default():
        t = tf.make_template("scale", _scale, factor=3.0)
        x = tf.constant([1.0, 2.0])
        a, b = t(x), t(x)
        with tf.name_scope("outer"):
            c = t(x)
        d = tf.make_template("scale", _scale)(x)
        t3 = tf.make_template("now", _scale, create_scope_now_=True)
        e, f = t3(x), t3(x)
        g = tf.make_template("u", _scale, unique_name_="custom")(x)
        names = [v.name for v in tf.global_variables()]
        scoped = [[v.name for v in t.variables], [v.name for v in t.trainable_variables]]
        assert t.non_trainable_variables == []
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            values = sess.run([a, b, c, d])
    # TF 2.21: ['scale/w:0', 'scale_1/w:0', 'now/w:0', 'custom/w:0']
    assert names == ["scale/w:0", "scale_1/w:0", "now/w:0", "custom/w:0"]
    assert [a.name, b.name, c.name, d.name] == [
        "scale/mul:0",
        "scale_1/mul:0",
        "outer/scale/mul:0",
        "scale_2/mul:0",
    ]
    assert [e.name, f.name, g.name] == ["now/mul:0", "now_1/mul:0", "custom/mul:0"]
    np.testing.assert_array_equal(values[0], [3.0, 6.0])
    np.testing.assert_array_equal(values[2], [3.0, 6.0])
    np.testing.assert_array_equal(values[3], [2.0, 4.0])  # the second template's own w
    assert t.name == "scale" and t.variable_scope.name == "scale"
    assert t.variable_scope_name == "scale/" and t3.variable_scope_name == "now/"
    assert scoped == [["scale/w:0"], ["scale/w:0"]]


def test_a_template_under_a_variable_scope_keeps_it():
    with tf.Graph().as_default():
        x = tf.constant([1.0, 2.0])
        with tf.variable_scope("vs"):
            t = tf.make_template("six", _scale)
            h = t(x)
        h2 = t(x)
        assert (h.name, h2.name) == ("vs/six/mul:0", "six/mul:0")  # TF 2.21's names
        assert [v.name for v in t.variables] == ["vs/six/w:0"]


def test_before_the_first_call_there_is_no_scope_and_no_variable():
    with tf.Graph().as_default():
        t = make_template("five", _scale)
        assert (t.variable_scope, t.variable_scope_name, t.variables) == (None, None, [])


def test_a_trainable_variable_made_by_a_later_call_is_an_error():
    with tf.Graph().as_default():
        t = tf.make_template("bad", lambda x: x * tf.Variable(1.0))
        x = tf.constant(1.0)
        t(x)
        with pytest.raises(ValueError, match="Trainable variable created when calling a "
                           "template after the first time") as info:  # fmt: skip
            t(x)
        assert "originally defined at:" in str(info.value)


def test_bad_arguments():
    with pytest.raises(ValueError, match=r"name cannot be None\."):
        make_template(None, _scale)
    with pytest.raises(ValueError, match="custom_getter_"):
        make_template("t", _scale, custom_getter_=lambda getter, *a, **k: getter(*a, **k))


def test_a_template_trains_one_set_of_weights():
    """Two towers through one template: one weight, moved by both losses' gradients."""
    with dg.Graph().as_default():

        def layer(x):
            return x * dg.get_variable("w", [], dg.float32, dg.ones_initializer())

        net = make_template("net", layer)
        loss = net(dg.constant(2.0)) + net(dg.constant(3.0))
        (grad,) = dg.gradients(loss, dg.trainable_variables())
        with dg.Session() as sess:
            sess.run(dg.global_variables_initializer())
            assert float(sess.run(grad)) == 5.0
