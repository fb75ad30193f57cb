"""Proximal optimizers (ProximalGradientDescent, ProximalAdagrad, AdagradDA): three steps on a
small problem, against TensorFlow 2.21's ``tf.compat.v1.train`` numbers, with and without L1
and L2; slot names; argument checks; compat.v1 names."""

from __future__ import annotations

import numpy as np
import pytest

import daskgraph as dg
import daskgraph.compat.v1 as tf
from daskgraph.training.proximal_optimizers import (
    AdagradDAOptimizer,
    ProximalAdagradOptimizer,
    ProximalGradientDescentOptimizer,
)

# TensorFlow 2.21 (tf.compat.v1, graph mode): w = [1, -2, 0.05], loss = sum(w * w * x + w),
# x = [0.5 + i, 1, -0.25 * i] at step i, three steps; (l1, l2) -> (w, slots)
TF_NUMBERS = {
    "pgd": {
        (0.0, 0.0): ([0.12999999523162842, -1.2680000066757202, -0.2677500247955322], []),
        (0.1, 0.0): ([0.11150001734495163, -1.2436000108718872, -0.235199972987175], []),
        (0.0, 0.2): ([0.1177525743842125, -1.2001794576644897, -0.258186936378479], []),
        (0.3, 0.2): ([0.06402888894081116, -1.1296072006225586, -0.16440510749816895], []),
    },
    "pag": {
        (0.0, 0.0): (
            [0.7366483211517334, -1.778161883354187, -0.1757313758134842],
            [[43.495994567871094, 24.048465728759766, 3.3894405364990234]],
        ),
        (0.1, 0.0): (
            [0.7280184626579285, -1.77057945728302, -0.15323171019554138],
            [[43.021202087402344, 23.951156616210938, 3.343087673187256]],
        ),
        (0.0, 0.2): (
            [0.7221692204475403, -1.7503929138183594, -0.1713896244764328],
            [[42.672027587890625, 23.68646812438965, 3.383218288421631]],
        ),
        (0.3, 0.2): (
            [0.6963751316070557, -1.7277073860168457, -0.10545440018177032],
            [[41.28242111206055, 23.40093421936035, 3.249075412750244]],
        ),
    },
    "ada": {
        (0.0, 0.0): (
            [-0.14127512276172638, 0.020114747807383537, -0.17045989632606506],
            [
                [3.0730507373809814, -0.6901326179504395, 3.1858019828796387],
                [4.731601238250732, 11.771610260009766, 3.4929561614990234],
            ],
        ),
        (0.1, 0.0): (
            [-0.12944883108139038, 0.011930509470403194, -0.1543281525373459],
            [
                [3.1324028968811035, -0.7086019515991211, 3.1675045490264893],
                [4.787555694580078, 11.72959041595459, 3.4523749351501465],
            ],
        ),
        (0.0, 0.2): (
            [-0.13793520629405975, 0.01984742470085621, -0.16515521705150604],
            [
                [3.0871076583862305, -0.6926977634429932, 3.1812777519226074],
                [4.744056224822998, 11.765684127807617, 3.4828333854675293],
            ],
        ),
        (0.3, 0.2): (
            [-0.10362228751182556, 0.0, -0.11758309602737427],
            [
                [3.2617077827453613, -0.7476119995117188, 3.127509832382202],
                [4.924628257751465, 11.641958236694336, 3.365072011947632],
            ],
        ),
    },
}

MAKERS = {
    "pgd": lambda gs, l1, l2: ProximalGradientDescentOptimizer(0.1, l1, l2),
    "pag": lambda gs, l1, l2: ProximalAdagradOptimizer(0.1, 0.1, l1, l2),
    "ada": lambda gs, l1, l2: AdagradDAOptimizer(0.1, gs, 0.1, l1, l2),
}


def _train(kind: str, l1: float, l2: float) -> tuple[list, list, list[str], list[str]]:
    with dg.Graph().as_default():
        w = dg.Variable([1.0, -2.0, 0.05], name="w")
        x = dg.placeholder(dg.float32, [3])
        loss = dg.reduce_sum(w * w * x + w)
        gs = dg.train.get_or_create_global_step()
        opt = MAKERS[kind](gs, l1, l2)
        train = opt.minimize(loss, global_step=gs)
        names = opt.get_slot_names()
        with dg.Session() as sess:
            sess.run(dg.global_variables_initializer())
            for i in range(3):
                sess.run(train, {x: [0.5 + i, 1.0, -0.25 * i]})
            slots = [sess.run(opt.get_slot(w, n)).tolist() for n in names]
            assert int(sess.run(gs)) == 3
            return sess.run(w).tolist(), slots, names, [opt.get_slot(w, n).op.name for n in names]


@pytest.mark.parametrize("kind", sorted(TF_NUMBERS))
@pytest.mark.parametrize("l1,l2", [(0.0, 0.0), (0.1, 0.0), (0.0, 0.2), (0.3, 0.2)])
def test_three_steps_match_tensorflow(kind, l1, l2):
    weights, slots, _, _ = _train(kind, l1, l2)
    want_w, want_slots = TF_NUMBERS[kind][(l1, l2)]
    np.testing.assert_allclose(weights, want_w, rtol=2e-6, atol=1e-7)
    assert len(slots) == len(want_slots)
    for got, want in zip(slots, want_slots, strict=True):
        np.testing.assert_allclose(got, want, rtol=2e-6)


def test_slot_names_are_tensorflows():
    assert _train("pag", 0.0, 0.0)[2:] == (["accumulator"], ["w/ProximalAdagrad"])
    assert _train("ada", 0.0, 0.0)[2:] == (
        ["gradient_accumulator", "gradient_squared_accumulator"],
        ["w/AdagradDA", "w/AdagradDA_1"],
    )


def test_arguments_are_checked_as_tensorflow_does():
    with pytest.raises(ValueError, match=r"initial_accumulator_value must be positive: 0\.0"):
        ProximalAdagradOptimizer(0.1, 0.0)
    with pytest.raises(
        ValueError, match=r"initial_gradient_squared_accumulator_value must be positive: -1\.0"
    ):
        AdagradDAOptimizer(0.1, None, -1.0)


def test_compat_names_are_the_native_classes():
    assert tf.train.ProximalGradientDescentOptimizer is ProximalGradientDescentOptimizer
    assert tf.train.ProximalAdagradOptimizer is ProximalAdagradOptimizer
    assert tf.train.AdagradDAOptimizer is AdagradDAOptimizer
