"""ExponentialMovingAverage against TensorFlow 2.21's numbers and names.

The expected values were printed by ``tensorflow.compat.v1`` (graph mode) for the same graph:
``w`` doubled and the step advanced by 5 before each update, a tensor ``2 * t`` averaged with
zero debiasing.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

import daskgraph as dg
from daskgraph.training.moving_averages import (
    ExponentialMovingAverage,
    assign_moving_average,
    moving_average_variables,
)


def test_matches_tensorflow() -> None:
    with dg.Graph().as_default():
        w = dg.Variable([1.0, 2.0], name="w")
        b = dg.Variable(5.0, name="b")
        t = dg.placeholder(dg.float32, [], name="t")
        doubled = t * 2.0
        step = dg.Variable(0, dtype=dg.int64, name="step", trainable=False)
        ema = ExponentialMovingAverage(0.9, num_updates=step)
        debiased = ExponentialMovingAverage(0.8, zero_debias=True, name="Debiased")
        assert ema.average_name(w) == "w/ExponentialMovingAverage" and ema.average(w) is None
        update = ema.apply([w, b])
        update_tensor = debiased.apply([doubled])
        names = {k: v.op.name for k, v in ema.variables_to_restore().items()}
        averaged = [v.op.name for v in moving_average_variables()]
        with dg.Session() as sess:
            sess.run(dg.global_variables_initializer())
            seen = []
            for i in range(3):
                sess.run(w.assign(w * 2.0))
                sess.run(step.assign_add(5))
                sess.run([update, update_tensor], {t: float(i + 1)})
                w_avg, b_avg, t_avg = sess.run(
                    [ema.average(w), ema.average(b), debiased.average(doubled)]
                )
                seen.append([*w_avg.tolist(), float(b_avg), float(t_avg)])
    np.testing.assert_allclose(
        seen,
        [
            [1.600000023841858, 3.200000047683716, 5.0, 2.0],
            [2.680000066757202, 5.360000133514404, 5.0, 3.1111111640930176],
            [4.595200061798096, 9.190400123596191, 5.0, 4.295081615447998],
        ],
        rtol=1e-6,
    )
    assert (update.name, update.type, update_tensor.name) == (
        "ExponentialMovingAverage",
        "NoOp",
        "Debiased",
    )
    assert debiased.average(doubled).op.name == "mul/Debiased"
    assert averaged == ["w", "b"]
    assert names == {
        "w/ExponentialMovingAverage": "w",
        "b/ExponentialMovingAverage": "b",
        "step": "step",
        "mul/Debiased": "mul/Debiased",
        "mul/Debiased/biased": "mul/Debiased/biased",
        "mul/Debiased/local_step": "mul/Debiased/local_step",
    }


def test_restoring_the_averages_into_the_variables(tmp_path: os.PathLike) -> None:
    """Train with averages, save; an evaluation graph restores the averages as variables."""
    with dg.Graph().as_default():
        w = dg.Variable(0.0, name="w")
        ema = ExponentialMovingAverage(0.5)
        update = ema.apply([w])
        advance = w.assign_add(4.0)
        with dg.Session() as sess:
            sess.run(dg.global_variables_initializer())
            for _ in range(2):  # w 4, average 2; w 8, average 5
                sess.run(advance)
                sess.run(update)
            path = dg.train.Saver().save(sess, os.path.join(tmp_path, "model"))
    with dg.Graph().as_default():
        w = dg.Variable(0.0, name="w")
        ema = ExponentialMovingAverage(0.5)
        with dg.Session() as sess:
            dg.train.Saver(ema.variables_to_restore()).restore(sess, path)
            assert float(sess.run(w)) == 5.0


def test_average_sits_next_to_its_variable_and_starts_at_its_initial_value() -> None:
    with dg.Graph().as_default():
        with dg.device("/cpu:0"):
            w = dg.Variable([3.0, 4.0], name="w")
        ema = ExponentialMovingAverage(0.9)
        update = ema.apply()
        average = ema.average(w)
        assert average.op.colocation == "w" and not average.trainable
        assert average.device == "/device:CPU:0"
        with dg.Session() as sess:
            sess.run(dg.global_variables_initializer())
            assert sess.run(average).tolist() == [3.0, 4.0]
            sess.run(update)
            assert sess.run(average).tolist() == [3.0, 4.0]


def test_assign_moving_average_with_a_tensor_decay() -> None:
    with dg.Graph().as_default():
        v = dg.Variable([1.0, 1.0], dtype=dg.float64, name="v")
        decay = dg.placeholder(dg.float32, [])
        update = assign_moving_average(v, [3.0, 5.0], decay, zero_debias=False)
        with dg.Session() as sess:
            sess.run(v.initializer)
            got = sess.run(update, {decay: 0.75})
    assert got.dtype == np.float64 and got.tolist() == [1.5, 2.0]


def test_errors_in_tensorflows_words() -> None:
    with dg.Graph().as_default():
        w = dg.Variable(1.0, name="w")
        i = dg.Variable(1, name="i")
        ema = ExponentialMovingAverage(0.9)
        ema.apply([w])
        with pytest.raises(ValueError, match="Moving average already computed for: w:0"):
            ema.apply([w])
        with pytest.raises(TypeError, match="must be half, float, or double: i:0"):
            ema.apply([i])


def test_averages_made_after_a_train_op_see_its_update() -> None:
    # TF's pattern: `with tf.control_dependencies([train]): ema.apply(...)`; TF 2.21 gives
    # w [0.5, -1] and its average [0.75, -1.5] (the updated value, not the one before)
    with dg.Graph().as_default():
        w = dg.Variable([1.0, -2.0], name="w")
        ema = ExponentialMovingAverage(0.5)
        train = dg.train.GradientDescentOptimizer(0.25).minimize(dg.reduce_sum(w * w))
        with dg.control_dependencies([train]):
            step = ema.apply([w])
        with dg.Session() as sess:
            sess.run(dg.global_variables_initializer())
            sess.run(step)
            assert sess.run(w).tolist() == [0.5, -1.0]
            assert sess.run(ema.average(w)).tolist() == [0.75, -1.5]
