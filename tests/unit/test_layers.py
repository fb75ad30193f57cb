"""tf.layers: variable names, scopes and collections as TensorFlow 1 makes them, and values
against numbers computed with the reference TensorFlow (2.21, ``tensorflow.compat.v1``
layers, graph mode) on the same inputs and constant initializers; batch normalization's
moving averages through UPDATE_OPS; a small training loop."""

from __future__ import annotations

import numpy as np
import pytest

import daskgraph as dg
import daskgraph.compat.v1 as tf
from daskgraph.framework.graph import REGULARIZATION_LOSSES
from daskgraph.layers.base import UPDATE_OPS


def sin(*shape: int, scale: float = 1.0, offset: int = 0) -> np.ndarray:
    """The inputs the TensorFlow numbers were computed on."""
    values = np.sin(np.arange(np.prod(shape)) + offset) * scale
    return values.reshape(shape).astype(np.float32)


def cinit(shape: list[int], offset: int) -> dg.initializers.Constant:
    return dg.constant_initializer(sin(*shape, scale=0.5, offset=offset))


@pytest.fixture
def graph():
    with dg.Graph().as_default() as g:
        yield g


def _initialized_run(fetches, feeds=None):
    with dg.Session() as sess:
        sess.run(dg.global_variables_initializer())
        return sess.run(fetches, feeds)


def _names(variables):
    return [v.name for v in variables]


# -- names, scopes and collections ------------------------------------------------------------
def test_dense_names_and_collections_as_tensorflow(graph):
    x = dg.placeholder(dg.float32, [None, 3])
    y = dg.layers.dense(
        x, 4, activation=dg.nn.relu, kernel_regularizer=lambda w: 0.01 * dg.nn.l2_loss(w)
    )
    z = dg.layers.dense(y, 2, name="out")
    w2 = dg.layers.dense(y, 2)
    expected = [
        "dense/kernel:0",
        "dense/bias:0",
        "out/kernel:0",
        "out/bias:0",
        "dense_1/kernel:0",
        "dense_1/bias:0",
    ]
    assert _names(dg.global_variables()) == expected
    assert _names(dg.trainable_variables()) == expected
    regs = graph.get_collection(REGULARIZATION_LOSSES)
    assert [t.name for t in regs] == ["dense/kernel/Regularizer/mul:0"]
    assert (y.name, z.name, w2.name) == ("dense/Relu:0", "out/BiasAdd:0", "dense_1/BiasAdd:0")
    reused = dg.layers.dense(y, 2, name="out", reuse=True)
    assert len(dg.global_variables()) == 6 and reused.name == "out_1/BiasAdd:0"
    with pytest.raises(ValueError, match="Variable out/kernel already exists, disallowed"):
        dg.layers.dense(y, 2, name="out")


def test_layers_inside_variable_scopes(graph):
    x = dg.placeholder(dg.float32, [None, 3])
    with dg.variable_scope("model"):
        q = dg.layers.dense(x, 2)
    with dg.variable_scope("model", reuse=True):
        again = dg.layers.dense(x, 2, name="dense")
    with dg.variable_scope("tower", initializer=dg.constant_initializer(0.25)):
        c = dg.layers.dense(x, 1)
    assert q.name == "model/dense/BiasAdd:0"
    assert _names(dg.global_variables()) == [
        "model/dense/kernel:0",
        "model/dense/bias:0",
        "tower/dense/kernel:0",
        "tower/dense/bias:0",
    ]
    assert again.op.inputs[1].op.inputs[0].op.name == "model/dense/bias"
    out = _initialized_run(c, {x: np.ones((1, 3))})  # the scope's initializer for the kernel
    assert out.tolist() == [[0.75]]


def test_dense_class_shares_its_variables_between_calls(graph):
    x = dg.placeholder(dg.float32, [None, 3])
    layer = dg.layers.Dense(3, name="d3")
    a, b = layer(x), layer.apply(x)
    assert (a.name, b.name) == ("d3/BiasAdd:0", "d3/BiasAdd_1:0")
    assert (layer.kernel.name, layer.bias.name, layer.name) == ("d3/kernel:0", "d3/bias:0", "d3")
    assert _names(layer.trainable_variables) == ["d3/kernel:0", "d3/bias:0"]
    assert _names(layer.variables) == _names(layer.weights) == ["d3/kernel:0", "d3/bias:0"]
    assert layer.non_trainable_variables == []
    frozen = dg.layers.Dense(2, trainable=False)
    frozen(x)
    assert frozen.trainable_variables == [] and len(frozen.non_trainable_variables) == 2
    assert _names(dg.trainable_variables()) == ["d3/kernel:0", "d3/bias:0"]
    assert frozen.name == "dense" and frozen.scope_name == "dense"


# -- dense --------------------------------------------------------------------------------------
# fmt: off
DENSE_RANK3 = [
    [[0.04187379, -0.22051975, 0.32027057], [-0.1253856, -0.50128615, 0.14568834],
     [0.42486402, 0.2757621, 0.4369188]],
    [[-0.13538784, -0.44665542, 0.22896716], [0.05514441, -0.30622715, 0.2156051],
     [0.37548244, 0.22854353, 0.4404071]],
]
DENSE_ACTIVITY = [[-0.47168127, -0.15867846, 0.3002126], [0.22181624, 0.04298107, -0.17537068]]
# fmt: on


def test_dense_values_as_tensorflow(graph):
    x = dg.constant(sin(2, 3, 4))
    y = dg.layers.dense(
        x,
        3,
        kernel_initializer=cinit([4, 3], 1),
        bias_initializer=dg.constant_initializer([0.1, -0.2, 0.3]),
        activation=dg.tanh,
    )
    x2 = dg.constant(sin(2, 4, offset=5))
    y2 = dg.layers.dense(
        x2,
        3,
        kernel_initializer=cinit([4, 3], 2),
        use_bias=False,
        activity_regularizer=lambda t: dg.reduce_sum(t),
    )
    regs = graph.get_collection(REGULARIZATION_LOSSES)
    assert [r.name for r in regs] == ["dense_1/ActivityRegularizer/truediv:0"]
    assert y.shape == (2, 3, 3)
    out, out2, reg = _initialized_run([y, y2, regs[0]])
    np.testing.assert_allclose(out, DENSE_RANK3, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(out2, DENSE_ACTIVITY, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(reg, -0.12036024, rtol=1e-5)


def test_dense_on_rank3_inputs_with_unknown_sizes(graph):
    x = dg.placeholder(dg.float32, [None, None, 4])
    y = dg.layers.dense(
        x,
        3,
        kernel_initializer=cinit([4, 3], 1),
        bias_initializer=dg.constant_initializer([0.1, -0.2, 0.3]),
        activation=dg.tanh,
    )
    assert y.shape == (None, None, 3)
    np.testing.assert_allclose(
        _initialized_run(y, {x: sin(2, 3, 4)}), DENSE_RANK3, rtol=1e-5, atol=1e-6
    )


def test_dense_takes_the_dtype_of_its_inputs(graph):
    y = dg.layers.dense(dg.constant(sin(2, 4).astype(np.float64)), 2)
    assert y.dtype == dg.float64 and dg.global_variables()[-1].dtype == dg.float64


def test_dense_errors(graph):
    with pytest.raises(ValueError, match=r"expected a positive integer\. Received: units=0"):
        dg.layers.dense(dg.constant(sin(2, 4)), 0)
    with pytest.raises(ValueError, match="last dimension of the inputs to a Dense"):
        dg.layers.dense(dg.placeholder(dg.float32, [2, None]), 3)
    with pytest.raises(ValueError, match="expected min_ndim=2, found ndim=1"):
        dg.layers.dense(dg.constant([1.0, 2.0]), 3)
    with pytest.raises(ValueError, match="kernel_constraint is not supported"):
        dg.layers.dense(dg.constant(sin(2, 4)), 3, kernel_constraint=lambda w: w)


# -- convolutions and pooling -----------------------------------------------------------------
# fmt: off
CONV_VALID = [
    [[[0.05555768, 0.23574391, 0.2911278], [0.18509626, 0.10118487, 0.01618411],
      [0.07361721, -0.03673004, -0.02136829]],
     [[0.09744325, -0.0484046, -0.05780993], [0.02319579, 0.1805147, 0.26380873],
      [0.16648039, 0.18139277, 0.12147301]],
     [[0.14873281, 0.21330032, 0.17370003], [0.14379227, -0.03629998, -0.0910786],
      [0.01481915, 0.10014137, 0.18533352]]],
    [[[0.03789695, 0.2143465, 0.2856664], [0.17950949, 0.14045402, 0.06420536],
      [0.09592775, -0.04801624, -0.05587479]],
     [[0.12000153, -0.04861755, -0.08059821], [0.01592638, 0.14454031, 0.23220405],
      [0.14997254, 0.21154693, 0.1705656]],
     [[0.12853771, 0.23505497, 0.21740335], [0.16157818, -0.0151991, -0.08606281],
      [0.02021113, 0.06082442, 0.1374555]]],
]
CONV_SAME_STRIDED = [
    [[[0.0, 0.0], [0.0, 0.05561593], [0.45015502, 0.45023373]],
     [[0.0, 0.0], [0.0, 0.0], [0.0, 0.40779203]],
     [[0.49559316, 0.24564815], [0.09035712, 0.05958894], [0.0, 0.0]]],
    [[[0.0, 0.0], [0.00451398, 0.06852966], [0.4987399, 0.37006682]],
     [[0.0, 0.0], [0.0, 0.0], [0.09527092, 0.47507393]],
     [[0.50602245, 0.15284434], [0.04785532, 0.04439569], [0.0, 0.0]]],
]
MAX_POOL = [
    [[[0.9092974, 0.84147096], [0.9906074, 0.6569866]],
     [[0.9129453, 0.99991184], [0.76255846, 0.95637596]]],
    [[[0.9866276, 0.6702292], [0.92002606, 0.82682866]],
     [[0.7738907, 0.9683645], [0.7331903, 0.9995202]]],
]
AVG_POOL_SAME = [
    [[[-0.04282416, 0.10069194], [0.15163234, 0.06316265], [-0.08337846, -0.15326183],
      [-0.08223695, 0.06439622], [0.11918551, 0.28099784]],
     [[-0.10218417, 0.00108103], [0.10335237, 0.11060197], [0.01616466, -0.09313437],
      [-0.11680611, -0.03308683], [-0.06123762, 0.1500129]],
     [[-0.15200333, -0.09863082], [0.04542245, 0.14771448], [0.11419854, -0.02431105],
      [-0.14046913, -0.12748057], [-0.23594303, 0.00502136]]],
    [[[-0.07993465, 0.06684807], [0.15217097, 0.0975886], [-0.04671631, -0.14807042],
      [-0.1132893, 0.02564951], [0.04747248, 0.26097658]],
     [[-0.11615619, -0.03100049], [0.08265693, 0.12031993], [0.04736136, -0.06914103],
      [-0.12207548, -0.06277428], [-0.11618364, 0.10039064]],
     [[-0.14153233, -0.12595454], [0.00542527, 0.1318171], [0.13701689, 0.01624399],
      [-0.11946358, -0.14533688], [-0.2689918, -0.06956872]]],
]
AVG_POOL_VALID = [
    [[[-0.04282416, 0.10069194], [-0.08337846, -0.15326183]],
     [[0.11687227, 0.14657734], [-0.15142901, -0.06192414]]],
    [[[-0.07993465, 0.06684807], [-0.04671631, -0.14807042]],
     [[0.08676353, 0.1531898], [-0.1523267, -0.09653872]]],
]
# fmt: on


def test_conv_and_pooling_values_and_names_as_tensorflow(graph):
    x = dg.constant(sin(2, 5, 5, 2))
    c1 = dg.layers.conv2d(
        x,
        3,
        3,
        kernel_initializer=cinit([3, 3, 2, 3], 1),
        bias_initializer=dg.constant_initializer(0.1),
    )
    c2 = dg.layers.conv2d(
        x,
        2,
        (2, 3),
        strides=2,
        padding="same",
        kernel_initializer=cinit([2, 3, 2, 2], 3),
        activation=dg.nn.relu,
    )
    p1 = dg.layers.max_pooling2d(x, 2, 2)
    p2 = dg.layers.average_pooling2d(x, (3, 2), (2, 1), padding="same")
    p3 = dg.layers.average_pooling2d(x, 2, 2)
    f = dg.layers.flatten(c1)
    assert _names(dg.global_variables()) == [
        "conv2d/kernel:0",
        "conv2d/bias:0",
        "conv2d_1/kernel:0",
        "conv2d_1/bias:0",
    ]
    assert (c1.name, c2.name, p1.name, p2.name, p3.name, f.name) == (
        "conv2d/BiasAdd:0",
        "conv2d_1/Relu:0",
        "max_pooling2d/MaxPool:0",
        "average_pooling2d/AvgPool:0",
        "average_pooling2d_1/AvgPool:0",
        "flatten/Reshape:0",
    )
    assert (c1.shape, c2.shape, f.shape, p2.shape) == (
        (2, 3, 3, 3),
        (2, 3, 3, 2),
        (2, 27),
        (2, 3, 5, 2),
    )
    values = _initialized_run([c1, c2, p1, p2, p3, f])
    for got, want in zip(
        values,
        [CONV_VALID, CONV_SAME_STRIDED, MAX_POOL, AVG_POOL_SAME, AVG_POOL_VALID],
        strict=False,
    ):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(values[5], values[0].reshape(2, 27))


def test_channels_first_is_channels_last_transposed(graph):
    x = sin(2, 5, 5, 2)
    first = dg.constant(x.transpose(0, 3, 1, 2))
    c = dg.layers.conv2d(
        first,
        3,
        3,
        data_format="channels_first",
        kernel_initializer=cinit([3, 3, 2, 3], 1),
        bias_initializer=dg.constant_initializer([0.1, 0.2, 0.3]),
    )
    p = dg.layers.average_pooling2d(first, (3, 2), (2, 1), "same", data_format="channels_first")
    f = dg.layers.flatten(first, data_format="channels_first")
    assert c.shape == (2, 3, 3, 3) and p.shape == (2, 2, 3, 5) and f.shape == (2, 50)
    conv, pooled, flat = _initialized_run([c, p, f])
    shift = np.array([0.0, 0.1, 0.2], np.float32)  # TF's values had a bias of 0.1 everywhere
    np.testing.assert_allclose(conv.transpose(0, 2, 3, 1), np.add(CONV_VALID, shift), atol=1e-6)
    np.testing.assert_allclose(pooled.transpose(0, 2, 3, 1), AVG_POOL_SAME, atol=1e-6)
    np.testing.assert_array_equal(flat, x.reshape(2, 50))


def test_conv_errors(graph):
    x = dg.placeholder(dg.float32, [None, 8, 8, 3])
    with pytest.raises(ValueError, match="dilation_rate other than 1 is not supported"):
        dg.layers.conv2d(x, 4, 3, dilation_rate=(2, 2))
    with pytest.raises(ValueError, match=r'must be one of "valid", "same"\. Received: \'full\''):
        dg.layers.conv2d(x, 4, 3, padding="full")
    with pytest.raises(ValueError, match="`kernel_size` argument must be a tuple of 2"):
        dg.layers.conv2d(x, 4, (3, 3, 3))
    with pytest.raises(ValueError, match="expected ndim=4, found ndim=2"):
        dg.layers.max_pooling2d(dg.placeholder(dg.float32, [2, 3]), 2, 2)
    with pytest.raises(ValueError, match="channel dimension of the inputs should be defined"):
        dg.layers.conv2d(dg.placeholder(dg.float32, [None, 8, 8, None]), 4, 3)


# -- flatten and dropout ------------------------------------------------------------------------
def test_flatten_shapes(graph):
    assert dg.layers.flatten(dg.placeholder(dg.float32, [None, 2, 3])).shape == (None, 6)
    assert dg.layers.flatten(dg.placeholder(dg.float32, [4, None])).shape == (4, None)
    assert dg.layers.flatten(dg.placeholder(dg.float32, [5])).shape == (5, 1)
    with pytest.raises(ValueError, match="needs the batch size or the other dimensions"):
        dg.layers.flatten(dg.placeholder(dg.float32, [None, None, 3]))


def test_dropout_with_a_bool_and_with_a_tensor(graph):
    x = dg.ones([4, 1000])
    training = dg.placeholder(dg.bool_, [])
    off = dg.layers.dropout(x, 0.3)
    on = dg.layers.dropout(x, 0.3, training=True, seed=1)
    switched = dg.layers.dropout(x, 0.3, training=training, seed=2)
    assert off.name == "dropout/Identity:0"
    with dg.Session() as sess:
        off_v, on_v = sess.run([off, on])
        switched_off = sess.run(switched, {training: False})
        switched_on = sess.run(switched, {training: True})
    assert off_v.sum() == 4000.0 and switched_off.sum() == 4000.0
    for dropped in (on_v, switched_on):
        np.testing.assert_allclose(np.unique(dropped), [0.0, 1 / 0.7], rtol=1e-6)
        assert 0.25 < (dropped == 0).mean() < 0.35
    layer = dg.layers.Dropout(0.5, noise_shape=[None, 1])
    rows = _initialized_run(layer(x, training=True))
    assert all(len(np.unique(row)) == 1 for row in rows)


# -- batch normalization ------------------------------------------------------------------------
# fmt: off
BN2_TRAIN = [[-0.27377653, 1.1202438, 0.957842], [0.29060793, -1.1402545, -0.9780456],
             [-1.391249, 0.8593207, 1.0408025], [1.374418, -0.83930975, -1.0205989]]
BN2_MOVING = [[0.11369115, 0.10988169, 0.09698706], [0.92490846, 1.099865, 1.272426]]
BN2_INFERENCE = [[2.4990008, 5.863203, 6.1343737], [3.0631988, -0.5266968, -1.3347801],
                 [1.3818972, 5.125634, 6.4544563], [4.1466513, 0.32400346, -1.4989617]]
BN2_SWITCH_OFF = [[0.9995004, 2.6816015, 2.8171868], [1.2815994, -0.5133484, -0.91739005],
                  [0.4409486, 2.312817, 2.9772282], [1.8233256, -0.08799827, -0.99948084]]
BN2_SWITCH_ON_MOVING = [[0.01136911, 0.01098817, 0.00969871], [0.9924908, 1.0099865, 1.0272427]]
BN4_TRAIN_FIRST_ROWS = [[-0.06936337, 1.1431066], [1.2537943, 0.14765754],
                        [-1.1706191, -1.4158987]]
BN4_MOVING = [[0.10953358, 0.10744705], [1.0999136, 1.1095355]]
BN4_SWITCH_ON_MOVING = [[0.01095334, 0.01074469], [1.0099914, 1.0109535]]
BN3_AXIS1 = [
    [[-0.11802125, 1.4661275], [0.61111116, -2.0114868], [-0.25242153, -0.8436916]],
    [[-0.6440474, 1.1188184], [0.8844428, -1.0862839], [0.37003112, -0.96382236]],
    [[-1.1281707, 0.67298305], [0.88870764, -0.27316117], [1.1192566, -0.8509264]],
    [[-1.5318259, 0.16413677], [0.6235647, 0.36310816], [1.9355718, -0.5139972]],
]
BN3_AXIS1_MOVING = [[0.01125381, 0.02460597, -0.00341028], [1.0011861, 0.9933318, 0.9945743]]
# fmt: on


@pytest.mark.parametrize(
    "shape, moving, switch_on_moving",
    [((4, 3), BN2_MOVING, BN2_SWITCH_ON_MOVING), ((2, 3, 3, 2), BN4_MOVING, BN4_SWITCH_ON_MOVING)],
)
def test_batch_normalization_as_tensorflow(graph, shape, moving, switch_on_moving):
    x = dg.constant(sin(*shape) * 2 + 1)
    y = dg.layers.batch_normalization(x, training=True, momentum=0.9)
    names = [
        "batch_normalization/gamma:0",
        "batch_normalization/beta:0",
        "batch_normalization/moving_mean:0",
        "batch_normalization/moving_variance:0",
    ]
    assert _names(dg.global_variables()) == names
    assert _names(dg.trainable_variables()) == names[:2]
    updates = graph.get_collection(UPDATE_OPS)
    assert len(updates) == 2 and all(isinstance(u, dg.Operation) for u in updates)
    inference = dg.layers.batch_normalization(
        x,
        training=False,
        name="bn_inf",
        beta_initializer=dg.constant_initializer(0.5),
        gamma_initializer=dg.constant_initializer(2.0),
    )
    assert len(graph.get_collection(UPDATE_OPS)) == 2  # no updates when not training
    training = dg.placeholder(dg.bool_, [])
    switched = dg.layers.batch_normalization(x, training=training, name="bn_t")
    moving_vars = [v for v in dg.global_variables() if "moving" in v.name]
    with dg.Session() as sess:
        sess.run(dg.global_variables_initializer())
        train_out = sess.run(y)
        sess.run(updates)
        np.testing.assert_allclose(sess.run(moving_vars[:2]), moving, rtol=1e-5)
        inference_out = sess.run(inference)
        switched_off = sess.run(switched, {training: False})
        sess.run(graph.get_collection(UPDATE_OPS)[2:], {training: False})
        np.testing.assert_allclose(
            sess.run(moving_vars[4:]), [[0.0] * shape[-1], [1.0] * shape[-1]]
        )
        sess.run(graph.get_collection(UPDATE_OPS)[2:], {training: True})
        np.testing.assert_allclose(sess.run(moving_vars[4:]), switch_on_moving, rtol=1e-5)
        switched_on = sess.run(switched, {training: True})
    if len(shape) == 2:
        np.testing.assert_allclose(train_out, BN2_TRAIN, rtol=1e-5, atol=1e-5)
    else:
        np.testing.assert_allclose(train_out[0, 0], BN4_TRAIN_FIRST_ROWS, rtol=1e-5, atol=1e-5)
    # with the initial moving statistics, inference is elementwise: the same first 12 values
    np.testing.assert_allclose(inference_out.ravel()[:12], np.ravel(BN2_INFERENCE), rtol=1e-5)
    np.testing.assert_allclose(switched_off.ravel()[:12], np.ravel(BN2_SWITCH_OFF), rtol=1e-5)
    np.testing.assert_allclose(switched_on, train_out, rtol=1e-5, atol=1e-5)


def test_batch_normalization_over_axis_1_without_center_and_scale(graph):
    x = dg.constant(sin(4, 3, 2) * 2 + 1)
    y = dg.layers.batch_normalization(
        x, axis=1, center=False, scale=False, training=True, epsilon=0.01
    )
    assert _names(dg.global_variables()) == [
        "batch_normalization/moving_mean:0",
        "batch_normalization/moving_variance:0",
    ]
    with dg.Session() as sess:
        sess.run(dg.global_variables_initializer())
        np.testing.assert_allclose(sess.run(y), BN3_AXIS1, rtol=1e-5, atol=1e-6)
        sess.run(dg.get_default_graph().get_collection(UPDATE_OPS))
        np.testing.assert_allclose(sess.run(dg.global_variables()), BN3_AXIS1_MOVING, rtol=1e-5)


def test_batch_normalization_class(graph):
    bn = dg.layers.BatchNormalization()
    bn(dg.constant(sin(4, 3)), training=True)
    assert bn.name == "batch_normalization"
    assert _names(bn.trainable_variables) == [
        "batch_normalization/gamma:0",
        "batch_normalization/beta:0",
    ]
    assert _names(bn.non_trainable_variables) == [
        "batch_normalization/moving_mean:0",
        "batch_normalization/moving_variance:0",
    ]
    assert len(bn.variables) == 4 and len(bn.updates) == 2
    assert bn.updates == graph.get_collection(UPDATE_OPS)
    assert (bn.moving_mean.name, bn.gamma.name) == (
        "batch_normalization/moving_mean:0",
        "batch_normalization/gamma:0",
    )
    with pytest.raises(ValueError, match="renorm is not supported"):
        dg.layers.BatchNormalization(renorm=True)


def test_batch_norm_updates_run_with_the_train_op(graph):
    """The TF1 pattern: the train op depends on UPDATE_OPS, so training moves the averages."""
    rng = np.random.default_rng(0)
    data = (rng.normal(size=(64, 3)) * [1.0, 2.0, 0.5] + [3.0, -1.0, 0.5]).astype(np.float32)
    x = tf.placeholder(tf.float32, [None, 3])
    h = tf.layers.batch_normalization(x, training=True, momentum=0.5)
    loss = tf.reduce_mean(tf.square(tf.layers.dense(h, 1)))
    with tf.control_dependencies(tf.get_collection(tf.GraphKeys.UPDATE_OPS)):
        train_op = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
    moving_mean = next(v for v in tf.global_variables() if "moving_mean" in v.name)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for _ in range(8):
            sess.run(train_op, {x: data})
        np.testing.assert_allclose(sess.run(moving_mean), data.mean(0) * (1 - 0.5**8), rtol=1e-4)


# -- training -----------------------------------------------------------------------------------
def test_a_tf1_training_loop_with_layers_and_losses_learns(graph):
    tf.set_random_seed(1)
    rng = np.random.default_rng(1)
    features = rng.normal(size=(120, 4)).astype(np.float32)
    classes = (features[:, 0] + features[:, 1] > 0).astype(int) + (features[:, 2] > 1)
    onehot = np.eye(3, dtype=np.float32)[classes]
    x = tf.placeholder(tf.float32, [None, 4])
    labels = tf.placeholder(tf.float32, [None, 3])
    hidden = tf.layers.dense(
        x, 16, activation=tf.nn.relu, kernel_regularizer=lambda w: 1e-4 * tf.nn.l2_loss(w)
    )
    logits = tf.layers.dense(hidden, 3)
    tf.losses.softmax_cross_entropy(labels, logits)
    loss = tf.losses.get_total_loss()
    train_op = tf.train.GradientDescentOptimizer(0.5).minimize(loss)
    feed = {x: features, labels: onehot}
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        losses = [sess.run([train_op, loss], feed)[1] for _ in range(40)]
        accuracy = (sess.run(logits, feed).argmax(1) == classes).mean()
    assert losses[-1] < 0.5 * losses[0]
    assert accuracy > 0.85


def test_a_tf1_layer_subclass(graph):
    class Scale(tf.layers.Layer):
        def build(self, input_shape):
            self.w = self.add_variable("w", [input_shape[-1]], initializer=tf.ones_initializer(),
                                       regularizer=tf.nn.l2_loss)  # fmt: skip
            self.steps = self.add_weight("steps", [], tf.int32, trainable=False)

        def call(self, inputs):
            return inputs * self.w

    layer = Scale(name="scale")
    y = layer(dg.constant([[1.0, 2.0]]))
    assert _names(layer.trainable_variables) == ["scale/w:0"]
    assert _names(layer.non_trainable_variables) == ["scale/steps:0"]
    assert [t.name for t in layer.losses] == ["scale/w/Regularizer/L2Loss:0"]
    assert _initialized_run(y).tolist() == [[1.0, 2.0]]
    with pytest.raises(ValueError, match="constraint is not supported"):
        Scale.add_weight(layer, "v", [1], constraint=lambda v: v)


@pytest.mark.virtual_gpus(1)
def test_layers_on_a_virtual_gpu_give_the_cpu_values(dg_session):
    x = sin(4, 6, 6, 2)
    results = []
    for device in ("/cpu:0", "/gpu:0"):
        with dg.device(device), dg.variable_scope(device[1:4]):
            h = dg.layers.conv2d(dg.constant(x), 3, 3, kernel_initializer=cinit([3, 3, 2, 3], 1),
                                 activation=dg.nn.relu)  # fmt: skip
            h = dg.layers.batch_normalization(h, training=True)
            h = dg.layers.average_pooling2d(h, 2, 2)
            logits = dg.layers.dense(dg.layers.flatten(h), 3, kernel_initializer=cinit([12, 3], 2))
            loss = dg.losses.sparse_softmax_cross_entropy([0, 1, 2, 1], logits)
            grads = dg.gradients(loss, tf.trainable_variables(scope=device[1:4]))
        dg_session.run(dg.global_variables_initializer())
        results.append(dg_session.run([loss, *grads]))
        plan = dg_session.placement(loss)
        assert all(device.upper()[1:4] in o.assigned for o in plan.ops if o.type == "Conv2D")
    for cpu, gpu in zip(*results, strict=True):
        np.testing.assert_allclose(gpu, cpu, rtol=1e-5, atol=1e-6)


def test_batch_normalization_gradient_against_finite_differences(graph):
    x = dg.placeholder(dg.float64, [4, 3])
    y = dg.layers.batch_normalization(x, training=True, gamma_initializer=cinit([3], 1),
                                      beta_initializer=cinit([3], 2))  # fmt: skip
    loss = dg.reduce_sum(y * sin(4, 3, offset=7).astype(np.float64))
    (grad,) = dg.gradients(loss, [x])
    point = sin(4, 3).astype(np.float64) * 2 + 1
    with dg.Session() as sess:
        sess.run(dg.global_variables_initializer())
        analytic = sess.run(grad, {x: point})
        numeric = np.zeros_like(point)
        for index in np.ndindex(*point.shape):
            step = np.zeros_like(point)
            step[index] = 1e-5
            up, down = sess.run(loss, {x: point + step}), sess.run(loss, {x: point - step})
            numeric[index] = (up - down) / 2e-5
    np.testing.assert_allclose(analytic, numeric, rtol=1e-5, atol=1e-7)
