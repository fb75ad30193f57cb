"""Adagrad, RMSProp (plain and centered), Adadelta and FTRL against TensorFlow 2.21's numbers.

Each case trains ``w = [1, -2, 3]`` and ``b = 0.5`` for three steps on
``sum((w * x + b - 1)^2) + 0.1 * sum(w^3)`` with ``x = [0.5, 1.5, -1]``; the expected
values (``w`` then ``b`` after each step, and the slots of ``w`` after the last) were printed
by ``tensorflow.compat.v1`` in graph mode, with the same optimizer arguments.
"""

from __future__ import annotations

import numpy as np
import pytest

import daskgraph as dg
from daskgraph.training.adaptive_optimizers import (
    AdadeltaOptimizer,
    AdagradOptimizer,
    FtrlOptimizer,
    RMSPropOptimizer,
)

CASES = {
    "adagrad": (
        lambda: AdagradOptimizer(0.1),
        {"accumulator": ("w/Adagrad", [0.4058612883090973, 229.4942626953125, 253.68185424804688])},
        [[0.9311752915382385, -1.9000577926635742, 2.900053024291992, 0.599974513053894],
         [0.8713199496269226, -1.8319005966186523, 2.8315603733062744, 0.6679237484931946],
         [0.819309651851654, -1.777553915977478, 2.776732921600342, 0.722030520439148]],
    ),
    "adagrad_initial_accumulator": (
        lambda: AdagradOptimizer(0.1, initial_accumulator_value=0.5),
        {"accumulator": ("w/Adagrad", [0.8623563647270203, 229.94110107421875, 254.1260528564453])},
        [[0.960943341255188, -1.9002878665924072, 2.9002647399902344, 0.5998727083206177],
         [0.9187600612640381, -1.8322103023529053, 2.831845283508301, 0.6677054166793823],
         [0.8778049945831299, -1.7779051065444946, 2.7770564556121826, 0.7216900587081909]],
    ),
    "rmsprop": (
        lambda: RMSPropOptimizer(0.01),
        {"momentum": ("w/RMSProp_1", [0.003973743412643671, -0.018599923700094223,
                                      0.018663356080651283]),
         "rms": ("w/RMSProp", [0.7579087018966675, 23.24026870727539, 25.33954620361328])},
        [[0.9968534111976624, -1.9699043035507202, 2.9697890281677246, 0.5309208035469055],
         [0.9932565093040466, -1.9477425813674927, 2.9475555419921875, 0.5533501505851746],
         [0.9892827868461609, -1.929142713546753, 2.928892135620117, 0.5720685720443726]],
    ),
    "rmsprop_centered": (
        lambda: RMSPropOptimizer(0.01, decay=0.8, momentum=0.5, epsilon=1e-6, centered=True),
        {"mg": ("w/RMSProp_1", [0.15931269526481628, -4.441478729248047, 4.644826889038086]),
         "momentum": ("w/RMSProp_2", [0.007540584076195955, -0.03565548360347748,
                                      0.035757243633270264]),
         "rms": ("w/RMSProp", [0.5641941428184509, 40.94626998901367, 44.73077392578125])},
        [[0.9966756701469421, -1.9756927490234375, 2.9756388664245605, 0.5246871113777161],
         [0.9910690784454346, -1.9431922435760498, 2.943065881729126, 0.5575365424156189],
         [0.9835284948348999, -1.9075367450714111, 2.907308578491211, 0.5934453010559082]],
    ),
    "adadelta": (
        lambda: AdadeltaOptimizer(1.0, rho=0.9, epsilon=1e-6),
        {"accum": ("w/Adadelta", [0.02433537133038044, 23.330583572387695, 25.394514083862305]),
         "accum_update": ("w/Adadelta_1", [2.843123183993157e-06, 2.839763510564808e-06,
                                           2.840605930032325e-06])},
        [[0.9968379139900208, -1.9968377351760864, 2.996837615966797, 0.5031622648239136],
         [0.99359530210495, -1.9935965538024902, 2.993596076965332, 0.5064032077789307],
         [0.9902985095977783, -1.990303635597229, 2.990302324295044, 0.5096957087516785]],
    ),
    "ftrl": (
        lambda: FtrlOptimizer(0.1),
        {"accum": ("w/Ftrl", [0.3138813078403473, 222.8994140625, 241.88223266601562]),
         "linear": ("w/Ftrl_1", [-1.657792568206787, 255.4431915283203, -416.99462890625])},
        [[0.20569902658462524, -1.8320910930633545, 2.802302360534668, 0.588683545589447],
         [0.26184800267219543, -1.764771819114685, 2.735201597213745, 0.6577203869819641],
         [0.29590171575546265, -1.7109601497650146, 2.6811954975128174, 0.7121425867080688]],
    ),
    "ftrl_power_l1_l2": (
        lambda: FtrlOptimizer(
            0.1,
            learning_rate_power=-0.7,
            l1_regularization_strength=0.01,
            l2_regularization_strength=0.1,
        ),
        {"accum": ("w/Ftrl", [0.3618091344833374, 246.08941650390625, 267.6609802246094]),
         "linear": ("w/Ftrl_1", [-1.9003314971923828, 894.9427490234375, -1446.422607421875])},
        [[0.24698996543884277, -1.93972647190094, 2.932405471801758, 0.5320171117782593],
         [0.3199808895587921, -1.9147751331329346, 2.9078786373138428, 0.5535367131233215],
         [0.37004727125167847, -1.8960129022598267, 2.8894095420837402, 0.5694769024848938]],
    ),
    "ftrl_shrinkage_beta": (
        lambda: FtrlOptimizer(
            0.1,
            l1_regularization_strength=0.01,
            l2_shrinkage_regularization_strength=0.05,
            beta=0.2,
        ),
        {"accum": ("w/Ftrl", [0.38236474990844727, 219.23875427246094, 235.11355590820312]),
         "linear": ("w/Ftrl_1", [-1.63179349899292, 250.65231323242188, -407.10101318359375])},
        [[0.12370400875806808, -1.7913333177566528, 2.7425899505615234, 0.5799718499183655],
         [0.16852588951587677, -1.7241514921188354, 2.6752703189849854, 0.6477130651473999],
         [0.19817689061164856, -1.6702014207839966, 2.620744228363037, 0.7012631297111511]],
    ),
}  # fmt: skip


def _train(make):
    """Three steps of the case's optimizer: per-step values, the slots of w, the optimizer."""
    with dg.Graph().as_default():
        w = dg.Variable([1.0, -2.0, 3.0], name="w")
        b = dg.Variable(0.5, name="b")
        x = dg.constant([0.5, 1.5, -1.0])
        loss = dg.reduce_sum(dg.square(w * x + b - 1.0)) + 0.1 * dg.reduce_sum(w * w * w)
        opt = make()
        train = opt.minimize(loss)
        slots = {name: opt.get_slot(w, name) for name in opt.get_slot_names()}
        with dg.Session() as sess:
            sess.run(dg.global_variables_initializer())
            values = []
            for _ in range(3):
                sess.run(train)
                w_value, b_value = sess.run([w, b])
                values.append([*w_value.tolist(), float(b_value)])
            slot_values = {n: (v.op.name, sess.run(v)) for n, v in slots.items()}
            names = sorted(v.op.name for v in dg.global_variables())
    return values, slot_values, names, train


@pytest.mark.parametrize("case", sorted(CASES))
def test_matches_tensorflow(case: str) -> None:
    make, want_slots, want_values = CASES[case]
    values, slots, names, train = _train(make)
    np.testing.assert_allclose(values, want_values, rtol=2e-6, atol=1e-7)
    assert sorted(slots) == sorted(want_slots)
    for name, (op_name, expected) in want_slots.items():
        assert slots[name][0] == op_name
        np.testing.assert_allclose(slots[name][1], expected, rtol=2e-6)
    slot_vars = {op_name for op_name, _ in want_slots.values()}
    assert set(names) == {"w", "b"} | slot_vars | {n.replace("w/", "b/") for n in slot_vars}
    assert train.name == make().get_name()


def test_learning_rate_may_be_a_schedule_of_the_global_step() -> None:
    with dg.Graph().as_default():
        w = dg.Variable([1.0], name="w")
        step = dg.train.get_or_create_global_step()
        rate = dg.train.piecewise_constant(step, [1], [0.1, 0.0])
        train = AdagradOptimizer(rate).minimize(dg.reduce_sum(w * w), global_step=step)
        with dg.Session() as sess:
            sess.run(dg.global_variables_initializer())
            seen = []
            for _ in range(4):
                sess.run(train)
                seen.append(float(sess.run(w)[0]))
            final_step = int(sess.run(step))
    # steps 0 and 1 use 0.1, later steps 0.0: w stops moving
    assert seen[1] < seen[0] < 1.0 and seen[3] == seen[2] == seen[1]
    assert final_step == 4


@pytest.mark.virtual_gpus(1)
def test_updates_run_next_to_variables_on_a_gpu(dg_session) -> None:
    with dg.device("/gpu:0"):
        w = dg.Variable([1.0, -2.0, 3.0], name="w")
    train = RMSPropOptimizer(0.01, momentum=0.5, centered=True).minimize(dg.reduce_sum(w * w))
    assigned = {op.name: op.assigned for op in dg_session.placement(train).ops}
    for name in (
        "w/RMSProp",
        "w/RMSProp_1",
        "w/RMSProp_2",
        "RMSProp/update_w/ApplyCenteredRMSProp",
    ):
        assert assigned[name].endswith("GPU:0"), (name, assigned[name])
    dg_session.run(dg.global_variables_initializer())
    dg_session.run(train)
    # one step from rms=1, mg=0, mom=0: mom = lr * g / sqrt(ms - mg^2 + eps)
    g = 2 * np.array([1.0, -2.0, 3.0], np.float32)
    ms, mg = 1 + (g * g - 1) * 0.1, g * 0.1
    want = np.array([1.0, -2.0, 3.0]) - 0.01 * g / np.sqrt(ms - mg * mg + 1e-10)
    np.testing.assert_allclose(dg_session.run(w), want, rtol=1e-6)


def test_arguments_are_checked_in_tensorflows_words() -> None:
    with pytest.raises(ValueError, match=r"initial_accumulator_value must be positive: 0.0"):
        AdagradOptimizer(0.1, initial_accumulator_value=0.0)
    with pytest.raises(ValueError, match=r"learning_rate_power 0.500000 needs to be negative"):
        FtrlOptimizer(0.1, learning_rate_power=0.5)
    with pytest.raises(ValueError, match=r"l1_regularization_strength -1.000000 needs to be"):
        FtrlOptimizer(0.1, l1_regularization_strength=-1.0)
    with pytest.raises(ValueError, match=r"initial_accumulator_value -0.100000 needs to be"):
        FtrlOptimizer(0.1, initial_accumulator_value=-0.1)
    with dg.Graph().as_default():
        i = dg.Variable(1, name="i")
        with pytest.raises(ValueError, match="expected a float type"):
            AdadeltaOptimizer().minimize(dg.cast(i, dg.float32), var_list=[i])
