"""Variable scopes and get_variable (reuse semantics and TF1's errors, names, devices) and the
initializers (values against their distributions, seeds, fans)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import daskgraph as dg
from daskgraph.ops import initializers as init
from daskgraph.ops.variable_scope import new_variable


@pytest.fixture
def graph():
    with dg.Graph().as_default() as g:
        yield g


def _values(*tensors):
    with dg.Session() as sess:
        sess.run(dg.global_variables_initializer())
        return sess.run(list(tensors))


# -- reuse --------------------------------------------------------------------------------------
def test_a_second_get_variable_without_reuse_is_refused_with_tf_message(graph):
    with dg.variable_scope("x"):
        dg.get_variable("w", [2])
    with dg.variable_scope("x"), pytest.raises(ValueError) as err:
        dg.get_variable("w", [2])
    message = str(err.value)
    assert message.startswith(
        "Variable x/w already exists, disallowed. Did you mean to set reuse=True or "
        "reuse=tf.AUTO_REUSE in VarScope? Originally defined at:"
    )
    assert "test_variable_scope.py" in message  # where it was made, as TensorFlow shows


def test_reuse_of_a_missing_variable_is_refused_with_tf_message(graph):
    with dg.variable_scope("x", reuse=True), pytest.raises(ValueError) as err:
        dg.get_variable("w", [2])
    assert str(err.value) == (
        "Variable x/w does not exist, or was not created with tf.get_variable(). Did you mean "
        "to set reuse=tf.AUTO_REUSE in VarScope?"
    )


def test_a_plain_variable_cannot_be_reused(graph):
    dg.Variable(1.0, name="v")
    dg.get_variable_scope().reuse_variables()
    with pytest.raises(ValueError, match="does not exist, or was not created"):
        dg.get_variable("v", [])


def test_reuse_returns_the_same_variable_and_is_inherited(graph):
    with dg.variable_scope("model"):
        with dg.variable_scope("layer"):
            w = dg.get_variable("w", [3, 2])
    with dg.variable_scope("model", reuse=True) as outer:
        with dg.variable_scope("layer") as inner:
            again = dg.get_variable("w", [3, 2])
            assert inner.reuse is True and outer.reuse is True
            with dg.variable_scope("deeper", reuse=False):  # False inherits, as TF1's None
                assert dg.get_variable_scope().reuse is True
    assert again is w
    assert [v.op.name for v in dg.global_variables()] == ["model/layer/w"]


def test_auto_reuse_makes_then_reuses(graph):
    def layer():
        with dg.variable_scope("dense", reuse=dg.AUTO_REUSE):
            return dg.get_variable("w", [2])

    first, second = layer(), layer()
    assert first is second
    assert first.op.name == "dense/w"


def test_reuse_variables_switches_a_scope_to_reuse(graph):
    with dg.variable_scope("s") as scope:
        w = dg.get_variable("w", [1])
        scope.reuse_variables()
        assert dg.get_variable("w", [1]) is w
        with dg.variable_scope("inner"):
            assert dg.get_variable_scope().reuse is True


def test_root_scope_reuse_variables_lasts(graph):
    w = dg.get_variable("w", [1])
    dg.get_variable_scope().reuse_variables()
    assert dg.get_variable("w") is w
    with dg.Graph().as_default():  # another graph has its own root scope
        assert dg.get_variable_scope().reuse is False


def test_shape_and_dtype_are_checked_on_reuse(graph):
    with dg.variable_scope("x"):
        dg.get_variable("w", [2])
    with dg.variable_scope("x", reuse=True):
        with pytest.raises(ValueError) as err:
            dg.get_variable("w", [3])
        assert str(err.value) == (
            "Trying to share variable x/w, but specified shape [3] and found shape [2]."
        )
        with pytest.raises(ValueError, match="specified dtype float64 and found dtype float32"):
            dg.get_variable("w", [2], dtype=dg.float64)
        assert dg.get_variable("w", [None]).shape == (2,)  # compatible
        assert dg.get_variable("w").shape == (2,)  # no shape given: no check


def test_reusing_a_scope_object_and_default_names(graph):
    with dg.variable_scope("model") as model:
        with dg.variable_scope(None, default_name="dense"):
            a = dg.get_variable("w", [1])
        with dg.variable_scope(None, default_name="dense"):
            b = dg.get_variable("w", [1])
    with dg.variable_scope(model, reuse=True) as again:
        assert again.name == "model" and again.original_name_scope == "model/"
        # the sub-scope counts restart in a re-entered scope, so layers find their variables
        with dg.variable_scope(None, default_name="dense"):
            assert dg.get_variable("w", [1]) is a
        with dg.variable_scope(None, default_name="dense"):
            assert dg.get_variable("w", [1]) is b
    assert (a.op.name, b.op.name) == ("model/dense/w", "model/dense_1/w")
    with pytest.raises(ValueError, match="reuse=True cannot be used without a name_or_scope"):
        with dg.variable_scope(None, default_name="x", reuse=True):
            pass
    with pytest.raises(TypeError, match="name_or_scope or default_name"):
        with dg.variable_scope(None):
            pass
    with pytest.raises(ValueError, match="reuse must be True"):
        with dg.variable_scope("y", reuse="yes"):
            pass


def test_variables_are_named_by_the_variable_scope_and_ops_by_the_name_scope(graph):
    with dg.name_scope("outer"):
        with dg.variable_scope("vs"):
            w = dg.get_variable("w", [2], initializer=dg.ones_initializer())
            y = dg.multiply(w, 2.0, name="y")
    with dg.variable_scope("vs", reuse=True):
        z = dg.multiply(dg.get_variable("w"), 3.0, name="z")
    assert w.op.name == "vs/w"
    assert w.initial_value.op.name == "vs/w/Initializer/ones"
    assert y.op.name == "outer/vs/y"
    assert z.op.name == "vs/z"


def test_get_variable_ignores_control_dependencies(graph):
    c = dg.constant(1.0)
    with dg.control_dependencies([c]):
        w = dg.get_variable("w", [1])
    assert w.op.control_inputs == [] and w.initializer.control_inputs == []


def test_shapes_and_initializer_values(graph):
    with pytest.raises(ValueError, match=r"Shape of a new variable \(a\) must be fully defined"):
        dg.get_variable("a", [None, 2])
    with pytest.raises(ValueError, match="must be fully defined, but instead was <unknown>"):
        dg.get_variable("b")
    with pytest.raises(ValueError, match="if initializer is a constant, do not specify shape"):
        dg.get_variable("c", [2], initializer=np.ones(2))
    d = dg.get_variable("d", initializer=np.arange(6, dtype=np.float64).reshape(2, 3))
    e = dg.get_variable("e", initializer=dg.constant([1, 2]))
    f = dg.get_variable("f", [2], dtype=dg.int32)  # integers default to zeros
    g = dg.get_variable("g", [2], initializer=dg.zeros_initializer)  # a class, as TF allows
    assert (d.dtype, d.shape, e.dtype, f.dtype) == (dg.float64, (2, 3), dg.int32, dg.int32)
    vd, ve, vf, vg = _values(d, e, f, g)
    np.testing.assert_array_equal(vd, np.arange(6).reshape(2, 3))
    assert ve.tolist() == [1, 2] and vf.tolist() == [0, 0] and vg.tolist() == [0.0, 0.0]


def test_scope_initializer_and_dtype_are_inherited(graph):
    with dg.variable_scope("s", initializer=dg.constant_initializer(3.0), dtype=dg.float64):
        with dg.variable_scope("t"):
            w = dg.get_variable("w", [2])
            b = dg.get_variable("b", [2], initializer=dg.zeros_initializer())
    assert w.dtype == dg.float64
    vw, vb = _values(w, b)
    assert vw.tolist() == [3.0, 3.0] and vb.tolist() == [0.0, 0.0]


def test_the_default_initializer_is_glorot_uniform(graph):
    w = dg.get_variable("w", [40, 60])
    (value,) = _values(w)
    limit = math.sqrt(6.0 / (40 + 60))
    assert value.dtype == np.float32 and value.shape == (40, 60)
    assert np.abs(value).max() <= limit
    assert abs(value.std() - limit / math.sqrt(3)) < 0.01  # uniform's standard deviation
    assert len(np.unique(value)) > 2000


def test_trainable_and_collections(graph):
    w = dg.get_variable("w", [1])
    s = dg.get_variable("s", [], dtype=dg.int64, trainable=False)
    local = dg.get_variable("local", [1], collections=["mine"], trainable=False)
    assert dg.trainable_variables() == [w]
    assert dg.global_variables() == [w, s]
    assert graph.get_collection("mine") == [local]
    assert graph.get_collection(dg.GraphKeys.TRAINABLE_VARIABLES) == [w]


def test_variables_respect_device_scopes_and_initializers_are_colocated(graph):
    with dg.device("/gpu:1"), dg.variable_scope("tower_1"):
        with dg.device("/cpu:0"):
            w = dg.get_variable("w", [2, 2], initializer=dg.random_normal_initializer(seed=1))
        y = dg.matmul(w, w)
    assert w.device == "/device:CPU:0" and y.device == "/device:GPU:1"
    made = [op for op in graph.get_operations() if op.name.startswith("tower_1/w/Initializer/")]
    assert made and all(op.colocation == "tower_1/w" for op in made)
    assert all(op.device == "/device:CPU:0" for op in made)


def test_a_device_function_sees_the_variable(graph):
    seen = []

    def setter(op):
        seen.append(op.type)
        return "/cpu:0" if op.type == "VariableV2" else "/gpu:0"

    with dg.device(setter):
        w = dg.get_variable("w", [2], initializer=dg.zeros_initializer())
    assert "VariableV2" in seen and w.device == "/device:CPU:0"
    assert w.initial_value.op.device == "/device:CPU:0"  # colocated with the variable


@pytest.mark.virtual_gpus(2)
def test_towers_share_variables_on_the_cpu(dg_session):
    losses = []
    for gpu in range(2):
        with dg.device(f"/gpu:{gpu}"), dg.variable_scope("model", reuse=gpu > 0):
            with dg.device("/cpu:0"):
                w = dg.get_variable("w", [2], initializer=dg.constant_initializer([1.0, 2.0]))
            losses.append(dg.reduce_sum(w * float(gpu + 1), name="loss"))
    assert len(dg.global_variables()) == 1
    dg_session.run(dg.global_variables_initializer())
    assert dg_session.run(losses) == [3.0, 6.0]
    plan = {op.name: op.assigned for op in dg_session.placement(losses).ops}
    assert plan["model/w"].endswith("CPU:0")
    assert plan["model/loss"].endswith("GPU:0") and plan["model_1/loss"].endswith("GPU:1")


def test_new_variable_names_uniquely_under_no_name_scope(graph):
    with dg.name_scope("ignored"):
        a = new_variable("w/Momentum", [1], initializer=dg.zeros_initializer())
        b = new_variable("w/Momentum", [1], initializer=dg.zeros_initializer(), trainable=False)
    assert (a.op.name, b.op.name) == ("w/Momentum", "w/Momentum_1")
    assert b.initial_value.op.name == "w/Momentum_1/Initializer/zeros"
    assert dg.trainable_variables() == [a]


# -- initializers -------------------------------------------------------------------------------
def _draw(initializer, shape, dtype=dg.float32):
    with dg.Graph().as_default():
        tensor = initializer(shape, dtype=dtype)
        with dg.Session() as sess:
            return sess.run(tensor)


def test_constant_initializers():
    assert _draw(init.zeros_initializer(), [2]).tolist() == [0.0, 0.0]
    assert _draw(init.ones_initializer(dtype=dg.int32), [2], dtype=None).tolist() == [1, 1]
    assert _draw(init.constant_initializer(2.5), [2], dtype=dg.float64).dtype == np.float64
    value = _draw(init.constant_initializer([1, 2, 3, 4]), [2, 2])
    assert value.tolist() == [[1.0, 2.0], [3.0, 4.0]]
    with pytest.raises(ValueError, match="cannot give a value with 3 elements the shape"):
        _draw(init.constant_initializer([1, 2, 3]), [2, 2])


def test_random_uniform_and_normal_initializers():
    u = _draw(init.random_uniform_initializer(-2.0, 3.0, seed=4), [20000])
    assert u.min() >= -2.0 and u.max() < 3.0 and abs(u.mean() - 0.5) < 0.05
    n = _draw(init.random_normal_initializer(1.0, 2.0, seed=4), [20000])
    assert abs(n.mean() - 1.0) < 0.05 and abs(n.std() - 2.0) < 0.05
    t = _draw(init.truncated_normal_initializer(1.0, 2.0, seed=4), [20000])
    assert t.min() >= -3.0 and t.max() <= 5.0
    assert abs(t.std() - 2.0 * 0.87962566103423978) < 0.05


def test_seeded_initializers_repeat_and_unseeded_do_not():
    first = _draw(init.random_normal_initializer(seed=11), [50])
    np.testing.assert_array_equal(first, _draw(init.random_normal_initializer(seed=11), [50]))
    assert not np.array_equal(first, _draw(init.random_normal_initializer(seed=12), [50]))


@pytest.mark.parametrize(
    ("initializer", "variance", "kind"),
    [
        (init.glorot_uniform_initializer(seed=3), 2.0 / (300 + 200), "uniform"),
        (init.glorot_normal_initializer(seed=3), 2.0 / (300 + 200), "truncated"),
        (init.variance_scaling_initializer(seed=3), 1.0 / 300, "truncated"),
        (
            init.variance_scaling_initializer(2.0, "fan_out", "uniform", seed=3),
            2.0 / 200,
            "uniform",
        ),
        (
            init.variance_scaling_initializer(1.0, "fan_in", "untruncated_normal", seed=3),
            1.0 / 300,
            "normal",
        ),
        (init.he_normal(seed=3), 2.0 / 300, "truncated"),
        (init.lecun_uniform(seed=3), 1.0 / 300, "uniform"),
    ],
    ids=["glorot_uniform", "glorot_normal", "vs", "vs_fan_out", "vs_untruncated", "he", "lecun"],
)
def test_variance_scaling_family(initializer, variance, kind):
    value = _draw(initializer, [300, 200]).astype(np.float64)
    assert abs(value.var() / variance - 1.0) < 0.05
    limit = {"uniform": math.sqrt(3 * variance), "truncated": 2 * math.sqrt(variance) / 0.8796}
    if kind in limit:
        assert np.abs(value).max() <= limit[kind] * (1 + 1e-6)
    else:
        assert np.abs(value).max() > 2.5 * math.sqrt(variance)  # tails beyond two stddevs


def test_variance_scaling_checks_its_arguments():
    with pytest.raises(ValueError, match="`scale` must be positive"):
        init.variance_scaling_initializer(0.0)
    with pytest.raises(ValueError, match="Invalid `mode` argument"):
        init.variance_scaling_initializer(mode="fan_sideways")
    with pytest.raises(ValueError, match="Invalid `distribution` argument"):
        init.variance_scaling_initializer(distribution="cauchy")


def test_compute_fans():
    assert init.compute_fans([]) == (1, 1)
    assert init.compute_fans([5]) == (5, 5)
    assert init.compute_fans([3, 4]) == (3, 4)
    assert init.compute_fans([2, 3, 4, 5]) == (24, 30)


def test_initializers_have_their_config():
    assert init.random_normal_initializer(0.0, 2.0, seed=1).get_config() == {
        "mean": 0.0,
        "stddev": 2.0,
        "seed": 1,
        "dtype": "float32",
    }
    assert "GlorotUniform(seed=None" in repr(init.glorot_uniform_initializer())


# -- TensorFlow 1's names --------------------------------------------------------------------------
def test_a_tf1_training_program_runs_with_the_compat_names():
    import daskgraph.compat.v1 as tf

    with tf.Graph().as_default():
        x = tf.constant([[1.0, 2.0]])
        with tf.variable_scope("net", initializer=tf.initializers.constant(0.5)):
            # TF1's positional order: name, shape, dtype, initializer, regularizer, trainable
            w = tf.get_variable("w", [2, 1], tf.float32, None, lambda v: tf.reduce_sum(v * v))
            b = tf.get_variable("b", [1], tf.float32, tf.zeros_initializer())
        with tf.variable_scope("net", reuse=True):
            assert tf.get_variable("w") is w
        frozen = tf.get_variable("frozen", [], initializer=tf.ones_initializer(), trainable=False)
        loss = tf.reduce_sum(tf.matmul(x, w) + b) + tf.add_n(
            tf.get_collection(tf.GraphKeys.REGULARIZATION_LOSSES)
        )
        step = tf.train.get_or_create_global_step()
        train = tf.train.MomentumOptimizer(0.1, 0.9).minimize(loss, global_step=step)
        assert tf.trainable_variables("net") == [w, b] and tf.trainable_variables("x") == []
        slot = "net/w/Momentum:0"
        assert [v.name for v in tf.get_collection(tf.GraphKeys.GLOBAL_VARIABLES, "net/w")] == [
            "net/w:0",
            slot,
        ]
        assert frozen not in tf.trainable_variables()
        with pytest.raises(ValueError, match="partitioner is not supported"):
            tf.get_variable("p", [4], partitioner=lambda shape, dtype: [2])
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(train)
            assert tf.train.global_step(sess, step) == 1
            # d loss / d w = x^T + 2 w = [[1 + 1], [2 + 1]]; one step of lr 0.1 from 0.5
            np.testing.assert_allclose(sess.run(w), [[0.3], [0.2]], rtol=1e-6)
