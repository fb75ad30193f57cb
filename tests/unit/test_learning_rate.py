"""Learning-rate schedules (``tf.train.*_decay``) against TensorFlow 2.21's numbers.

The expected values were computed with ``tensorflow.compat.v1`` (graph mode, an int64 step
fed through a placeholder) at the steps in ``STEPS``.
"""

from __future__ import annotations

import numpy as np
import pytest

import daskgraph as dg
from daskgraph.training import learning_rate as lr

STEPS = [0, 3, 5, 6, 10, 15, 16, 25, 40]

# name -> (builder, TensorFlow's values at STEPS)
CASES = {
    "exponential": (
        lambda s: lr.exponential_decay(0.1, s, 10, 0.5),
        [0.10000000149011612, 0.08122523874044418, 0.0707106813788414, 0.06597539037466049,
         0.05000000074505806, 0.0353553406894207, 0.032987695187330246, 0.01767767034471035,
         0.0062500000931322575],
    ),
    "exponential_staircase": (
        lambda s: lr.exponential_decay(0.1, s, 10, 0.5, staircase=True),
        [0.10000000149011612, 0.10000000149011612, 0.10000000149011612, 0.10000000149011612,
         0.05000000074505806, 0.05000000074505806, 0.05000000074505806, 0.02500000037252903,
         0.0062500000931322575],
    ),
    "piecewise_constant": (
        lambda s: lr.piecewise_constant(s, [5, 15], [1.0, 0.5, 0.1]),
        [1.0, 1.0, 1.0, 0.5, 0.5, 0.5, 0.10000000149011612, 0.10000000149011612,
         0.10000000149011612],
    ),
    "polynomial": (
        lambda s: lr.polynomial_decay(0.1, s, 20, 0.01, power=2.0),
        [0.10000000149011612, 0.07502499967813492, 0.06062500178813934, 0.054099999368190765,
         0.032499998807907104, 0.015625, 0.013599999248981476, 0.009999999776482582,
         0.009999999776482582],
    ),
    "polynomial_cycle": (
        lambda s: lr.polynomial_decay(0.1, s, 20, 0.01, power=0.5, cycle=True),
        [0.10000000149011612, 0.09297589957714081, 0.08794228732585907, 0.08529940247535706,
         0.07363960891962051, 0.054999999701976776, 0.05024922639131546, 0.06511352211236954,
         0.009999999776482582],
    ),
    "inverse_time": (
        lambda s: lr.inverse_time_decay(0.1, s, 10, 0.5),
        [0.10000000149011612, 0.08695652335882187, 0.07999999821186066, 0.07692307978868484,
         0.06666667014360428, 0.05714285746216774, 0.055555559694767, 0.04444444552063942,
         0.03333333507180214],
    ),
    "inverse_time_staircase": (
        lambda s: lr.inverse_time_decay(0.1, s, 10, 0.5, staircase=True),
        [0.10000000149011612, 0.10000000149011612, 0.10000000149011612, 0.10000000149011612,
         0.06666667014360428, 0.06666667014360428, 0.06666667014360428, 0.05000000074505806,
         0.03333333507180214],
    ),
    "natural_exp": (
        lambda s: lr.natural_exp_decay(0.1, s, 10, 0.5),
        [0.10000000149011612, 0.08607079833745956, 0.07788007706403732, 0.07408182322978973,
         0.060653068125247955, 0.04723665863275528, 0.04493289813399315, 0.02865048125386238,
         0.013533529825508595],
    ),
    "natural_exp_staircase": (
        lambda s: lr.natural_exp_decay(0.1, s, 10, 0.5, staircase=True),
        [0.10000000149011612, 0.10000000149011612, 0.10000000149011612, 0.10000000149011612,
         0.060653068125247955, 0.060653068125247955, 0.060653068125247955, 0.03678794577717781,
         0.013533529825508595],
    ),
    "cosine": (
        lambda s: lr.cosine_decay(0.1, s, 20, alpha=0.1),
        [0.10000000149011612, 0.09509529173374176, 0.08681981265544891, 0.08145033568143845,
         0.05499999597668648, 0.023180196061730385, 0.018594233319163322, 0.010000000707805157,
         0.010000000707805157],
    ),
    "cosine_restarts": (
        lambda s: lr.cosine_decay_restarts(0.1, s, 10, t_mul=2.0, m_mul=0.5, alpha=0.1),
        [0.10000000149011612, 0.08145033568143845, 0.05499999597668648, 0.04109422490000725,
         0.055000003427267075, 0.04840990528464317, 0.04572516679763794, 0.016590097919106483,
         0.029204953461885452],
    ),
    "linear_cosine": (
        lambda s: lr.linear_cosine_decay(0.1, s, 20),
        [0.10010000318288803, 0.08046778291463852, 0.06411650776863098, 0.055672477930784225,
         0.025099998340010643, 0.0037611653096973896, 0.002009829506278038,
         0.00010000000474974513, 0.00010000000474974513],
    ),
}  # fmt: skip


@pytest.fixture(scope="module")
def computed() -> dict[str, list[float]]:
    """Every schedule's values at STEPS, from one graph and session."""
    with dg.Graph().as_default():
        step = dg.placeholder(dg.int64, [])
        tensors = {name: build(step) for name, (build, _) in CASES.items()}
        with dg.Session() as sess:
            runs = [sess.run(tensors, {step: s}) for s in STEPS]
    return {name: [float(run[name]) for run in runs] for name in CASES}


@pytest.mark.parametrize("name", sorted(CASES))
def test_schedule_matches_tensorflow(computed: dict[str, list[float]], name: str) -> None:
    np.testing.assert_allclose(computed[name], CASES[name][1], rtol=2e-6)


def test_the_rate_follows_the_global_step_variable() -> None:
    with dg.Graph().as_default():
        step = dg.train.get_or_create_global_step()
        rate = lr.exponential_decay(0.1, step, 10, 0.5, staircase=True)
        advance = step.assign_add(10)
        with dg.Session() as sess:
            sess.run(dg.global_variables_initializer())
            seen = []
            for _ in range(3):
                seen.append(float(sess.run(rate)))
                sess.run(advance)
    np.testing.assert_allclose(seen, [0.1, 0.05, 0.025], rtol=1e-6)
    assert rate.dtype == dg.float32 and rate.op.name == "ExponentialDecay"


def test_float64_learning_rate_keeps_its_dtype() -> None:
    with dg.Graph().as_default():
        rate = lr.inverse_time_decay(dg.constant(0.1, dg.float64), dg.constant(10), 10, 0.5)
        with dg.Session() as sess:
            value = sess.run(rate)
    assert rate.dtype == dg.float64 and value == pytest.approx(0.1 / 1.5, rel=1e-15)


def test_errors_in_tensorflows_words() -> None:
    with dg.Graph().as_default():
        with pytest.raises(ValueError, match="global_step is required for exponential_decay"):
            lr.exponential_decay(0.1, None, 10, 0.5)
        with pytest.raises(ValueError, match="Boundaries \\(float32\\) must have the same dtype"):
            lr.piecewise_constant(dg.constant(1), [1.5], [1.0, 2.0])
        with pytest.raises(ValueError, match="Values must have elements all with the same dtype"):
            lr.piecewise_constant(dg.constant(1), [2], [1.0, 2])
