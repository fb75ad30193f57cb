"""Optimizers against NumPy implementations of TensorFlow's update formulas, slot variables
(names, devices, initialization), the global step, and concurrent steps losing no update."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import daskgraph as dg
from daskgraph.ops.training import apply_adam, apply_gradient_descent, apply_momentum
from daskgraph.training.namespace import (
    AdamOptimizer,
    GradientDescentOptimizer,
    MomentumOptimizer,
    create_global_step,
    get_global_step,
    get_or_create_global_step,
    global_step,
)

RNG = np.random.default_rng(3)
X = RNG.normal(size=(8, 3))
Y = RNG.normal(size=(8, 1))
W0 = RNG.normal(size=(3, 1))
B0 = np.array([0.5])
STEPS = 4


# -- NumPy references: TensorFlow's kernels (tensorflow/core/kernels/training_ops.cc) -------------
def _least_squares_grads(w, b):
    residual = X @ w + b - Y
    return 2.0 / len(X) * X.T @ residual, 2.0 / len(X) * residual.sum(axis=0)


def _sgd(params, grads, state, lr):
    return [p - lr * g for p, g in zip(params, grads, strict=True)], state


def _momentum(params, grads, state, lr, mu, nesterov):
    accums = [a * mu + g for a, g in zip(state, grads, strict=True)]
    if nesterov:
        steps = [g * lr + a * mu * lr for g, a in zip(grads, accums, strict=True)]
    else:
        steps = [a * lr for a in accums]
    return [p - s for p, s in zip(params, steps, strict=True)], accums


def _adam(params, grads, state, lr, b1, b2, eps):
    ms, vs, (p1, p2) = state
    # the beta powers are float32 variables (made from Python floats), cast to the var's dtype
    lr_t = lr * np.sqrt(1 - np.float64(p2)) / (1 - np.float64(p1))
    ms = [m + (g - m) * (1 - b1) for m, g in zip(ms, grads, strict=True)]
    vs = [v + (g * g - v) * (1 - b2) for v, g in zip(vs, grads, strict=True)]
    params = [p - m * lr_t / (np.sqrt(v) + eps) for p, m, v in zip(params, ms, vs, strict=True)]
    powers = (np.float32(p1 * np.float32(b1)), np.float32(p2 * np.float32(b2)))
    return params, (ms, vs, powers)


def _reference(update, state, steps=STEPS, **hyper):
    params = [W0.copy(), B0.copy()]
    for _ in range(steps):
        params, state = update(params, list(_least_squares_grads(*params)), state, **hyper)
    return params


def _train(optimizer, steps=STEPS):
    """Minimize the least-squares loss in float64; the variables and the global step after."""
    with dg.Graph().as_default():
        w = dg.Variable(W0, name="w")
        b = dg.Variable(B0, name="b")
        step = get_or_create_global_step()
        loss = dg.reduce_mean(dg.square(dg.matmul(dg.constant(X), w) + b - dg.constant(Y)))
        train = optimizer.minimize(loss, global_step=step)
        with dg.Session() as sess:
            sess.run(dg.global_variables_initializer())
            for _ in range(steps):
                sess.run(train)
            return sess.run([w, b]), global_step(sess, step)


ZEROS = [np.zeros_like(W0), np.zeros_like(B0)]
CASES = {
    "sgd": (lambda: GradientDescentOptimizer(0.1), _sgd, None, {"lr": 0.1}),
    "momentum": (
        lambda: MomentumOptimizer(0.05, 0.9),
        _momentum,
        ZEROS,
        {"lr": 0.05, "mu": 0.9, "nesterov": False},
    ),
    "nesterov": (
        lambda: MomentumOptimizer(0.05, 0.8, use_nesterov=True),
        _momentum,
        ZEROS,
        {"lr": 0.05, "mu": 0.8, "nesterov": True},
    ),
    "adam": (
        lambda: AdamOptimizer(0.1),
        _adam,
        (ZEROS, ZEROS, (np.float32(0.9), np.float32(0.999))),
        {"lr": 0.1, "b1": 0.9, "b2": 0.999, "eps": 1e-8},
    ),
    "adam_hyper": (
        lambda: AdamOptimizer(0.02, beta1=0.5, beta2=0.75, epsilon=1e-3),
        _adam,
        (ZEROS, ZEROS, (np.float32(0.5), np.float32(0.75))),
        {"lr": 0.02, "b1": 0.5, "b2": 0.75, "eps": 1e-3},
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_steps_match_tensorflows_formulas(case):
    make, update, state, hyper = CASES[case]
    (w, b), steps = _train(make())
    want_w, want_b = _reference(update, state, **hyper)
    assert steps == STEPS
    np.testing.assert_allclose(w, want_w, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(b, want_b, rtol=1e-12, atol=1e-14)
    assert not np.allclose(w, W0)  # it did move


def test_float32_adam_with_hand_made_gradients():
    """apply_gradients with given gradient tensors; float32 arithmetic as TensorFlow's."""
    grads = [np.float32([0.5, -1.0]), np.float32([2.0, 0.25])]
    with dg.Graph().as_default():
        w = dg.Variable(np.float32([1.0, 2.0]), name="w")
        g = dg.placeholder(dg.float32, [2])
        opt = AdamOptimizer(0.1)
        train = opt.apply_gradients([(g, w)])
        with dg.Session() as sess:
            sess.run(dg.global_variables_initializer())
            for grad in grads:
                sess.run(train, {g: grad})
            got, m, v = sess.run([w, opt.get_slot(w, "m"), opt.get_slot(w, "v")])
    f = np.float32
    want, want_m, want_v, p1, p2 = f([1.0, 2.0]), f([0, 0]), f([0, 0]), f(0.9), f(0.999)
    for grad in grads:
        lr_t = f(0.1) * np.sqrt(f(1) - p2) / (f(1) - p1)
        want_m = want_m + (grad - want_m) * (f(1) - f(0.9))
        want_v = want_v + (grad * grad - want_v) * (f(1) - f(0.999))
        want = want - want_m * lr_t / (np.sqrt(want_v) + f(1e-8))
        p1, p2 = p1 * f(0.9), p2 * f(0.999)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, want, rtol=1e-6)
    np.testing.assert_allclose(m, want_m, rtol=1e-6)
    np.testing.assert_allclose(v, want_v, rtol=1e-6)


def test_learning_rate_may_be_a_tensor_of_another_dtype():
    with dg.Graph().as_default():
        w = dg.Variable(np.float32([1.0]), name="w")
        lr = dg.placeholder(dg.float64, [])
        train = GradientDescentOptimizer(lr).minimize(dg.reduce_sum(w * w))
        with dg.Session() as sess:
            sess.run(w.initializer)
            sess.run(train, {lr: 0.25})
            sess.run(train, {lr: 0.5})
            assert sess.run(w).tolist() == [0.0]  # 1 - 0.25 * 2 = 0.5; 0.5 - 0.5 * 1 = 0


def test_training_ops_directly():
    with dg.Graph().as_default():
        w = dg.Variable([1.0, 1.0], name="w")
        acc = dg.Variable([0.0, 0.0], name="acc", trainable=False)
        m = dg.Variable([0.0, 0.0], name="m")
        v = dg.Variable([0.0, 0.0], name="v")
        gd = apply_gradient_descent(w, 0.5, [1.0, 2.0])
        mom = apply_momentum(w, acc, 0.5, [1.0, 2.0], 0.9)
        adam = apply_adam(w, m, v, 0.9, 0.999, 0.1, 0.9, 0.999, 1e-8, [1.0, 2.0])
        with dg.Session() as sess:
            sess.run(dg.global_variables_initializer())
            assert sess.run(gd).tolist() == [0.5, 0.0]
            assert sess.run(mom).tolist() == [0.0, -1.0]
            assert sess.run(acc).tolist() == [1.0, 2.0]
            np.testing.assert_allclose(sess.run(adam), [0.0 - 0.1, -1.0 - 0.1], rtol=1e-5)
        with pytest.raises(ValueError, match=r"gradient .* of shape \(3,\) does not match"):
            apply_gradient_descent(w, 0.5, [1.0, 2.0, 3.0])
        with pytest.raises(TypeError, match="training ops update float variables only"):
            apply_gradient_descent(dg.Variable([1, 2]), 1, [1, 1])
        with pytest.raises(TypeError, match="has dtype float64; the variable 'w' is float32"):
            apply_gradient_descent(w, 0.5, dg.constant(np.ones(2)))


# -- slots, names, global step ---------------------------------------------------------------------
def test_slot_variables_are_named_like_tensorflows_and_initialized():
    with dg.Graph().as_default():
        with dg.variable_scope("layer"):
            w = dg.get_variable("w", [2, 3])
        b = dg.Variable([1.0, 2.0], name="b")
        loss = dg.reduce_sum(w) + dg.reduce_sum(b)
        momentum = MomentumOptimizer(0.1, 0.9)
        adam = AdamOptimizer()
        momentum.minimize(loss)
        adam.minimize(loss)
        adam.minimize(loss)  # again: the same slots
        assert momentum.get_slot_names() == ["momentum"]
        assert adam.get_slot_names() == ["m", "v"]
        assert momentum.get_slot(w, "momentum").op.name == "layer/w/Momentum"
        assert adam.get_slot(w, "m").op.name == "layer/w/Adam"
        assert adam.get_slot(w, "v").op.name == "layer/w/Adam_1"
        assert adam.get_slot(b, "m").op.name == "b/Adam"
        assert adam.get_slot(w, "nothing") is None
        assert [v.op.name for v in adam.variables()] == [
            "b/Adam",
            "b/Adam_1",
            "beta1_power",
            "beta2_power",
            "layer/w/Adam",
            "layer/w/Adam_1",
        ]
        made = [*momentum.variables(), *adam.variables()]
        assert all(not v.trainable and v in dg.global_variables() for v in made)
        assert dg.trainable_variables() == [w, b]
        # Adam's beta powers are colocated with the first variable by name
        assert adam.variables()[2].op.colocation == "b"
        with dg.Session() as sess:
            sess.run(dg.global_variables_initializer())
            slot = sess.run(adam.get_slot(w, "v"))
            powers = sess.run(adam.variables()[2:4])
        assert slot.shape == (2, 3) and not slot.any()
        np.testing.assert_allclose(powers, [0.9, 0.999], rtol=1e-7)


def test_train_op_names_and_the_train_op_collection():
    with dg.Graph().as_default() as g:
        w = dg.Variable(1.0, name="w")
        step = create_global_step()
        first = GradientDescentOptimizer(0.1).minimize(w * w, global_step=step)
        second = GradientDescentOptimizer(0.1).minimize(w * w)
        named = AdamOptimizer().minimize(w * w, name="train")
        assert (first.name, first.type) == ("GradientDescent", "AssignAdd")
        assert (second.name, second.type) == ("GradientDescent_1", "NoOp")
        assert named.name == "train"
        assert g.get_collection(dg.GraphKeys.TRAIN_OP) == [first, second, named]
        update = g.get_operation_by_name("GradientDescent/update_w/ApplyGradientDescent")
        assert update.inputs[0].op is w.op


def test_global_step_counts_one_per_apply():
    with dg.Graph().as_default() as g:
        assert get_global_step() is None
        step = get_or_create_global_step()
        assert get_or_create_global_step() is step and get_global_step(g) is step
        assert (step.op.name, step.dtype, step.shape, step.device) == (
            "global_step",
            dg.int64,
            (),
            "",  # TF1's graph mode requests no device; the placer puts it on a CPU
        )
        assert g.get_collection(dg.GraphKeys.GLOBAL_STEP) == [step]
        assert step in dg.global_variables() and step not in dg.trainable_variables()
        with pytest.raises(ValueError, match='"global_step" already exists'):
            create_global_step()
        w = dg.Variable(4.0, name="w")
        train = MomentumOptimizer(0.1, 0.5).minimize(w * w, global_step=step)
        with dg.Session() as sess:
            sess.run(dg.global_variables_initializer())
            counts = []
            for _ in range(3):
                sess.run(train)
                counts.append(global_step(sess, step))
        assert counts == [1, 2, 3]


def test_the_global_step_is_made_in_the_root_scope_on_the_cpu():
    with dg.Graph().as_default():
        with dg.device("/gpu:0"), dg.variable_scope("tower"), dg.name_scope("inner"):
            step = get_or_create_global_step()
        assert step.op.name == "global_step" and step.device == "/device:CPU:0"
    with dg.Graph().as_default():
        dg.Variable(1.0, name="global_step")  # not an integer: refused, as in TensorFlow
        with pytest.raises(TypeError, match="must be an integer type"):
            get_global_step()


def test_errors_say_what_is_wrong():
    with dg.Graph().as_default():
        w = dg.Variable(1.0, name="w")
        i = dg.Variable(1, name="i")
        opt = GradientDescentOptimizer(0.1)
        with pytest.raises(ValueError, match="No variables provided"):
            opt.apply_gradients([])
        with pytest.raises(ValueError, match="No gradients provided for any variable"):
            opt.apply_gradients([(None, w)])
        with pytest.raises(ValueError, match="No gradients provided for any variable, check"):
            opt.minimize(dg.constant(1.0) * 2.0, var_list=[w])
        with pytest.raises(ValueError, match="Invalid type int32 for variable 'i'"):
            opt.minimize(w * w, var_list=[w, i])
        with pytest.raises(TypeError, match="grads_and_vars must be"):
            opt.apply_gradients([w])
        with pytest.raises(ValueError, match="Must specify the optimizer name"):
            GradientDescentOptimizer(0.1, name="")
    with dg.Graph().as_default():
        dg.Variable(1.0, name="frozen", trainable=False)
        with pytest.raises(ValueError, match="No variables to optimize"):
            GradientDescentOptimizer(0.1).minimize(dg.constant(1.0) * 2.0)


# -- devices and concurrency ---------------------------------------------------------------------
@pytest.mark.virtual_gpus(1)
@pytest.mark.parametrize(("var_device", "loss_device"), [("CPU", "GPU"), ("GPU", "CPU")])
def test_slots_and_updates_sit_on_the_variables_device(dg_session, var_device, loss_device):
    with dg.device(f"/{var_device.lower()}:0"):
        w = dg.get_variable("w", initializer=W0)
        b = dg.get_variable("b", initializer=B0)
    with dg.device(f"/{loss_device.lower()}:0"):
        loss = dg.reduce_mean(dg.square(dg.matmul(dg.constant(X), w) + b - dg.constant(Y)))
    step = get_or_create_global_step()
    opt = AdamOptimizer(0.1)
    train = opt.minimize(loss, global_step=step)
    # (the loss too: a train op alone needs its gradients, not its value)
    assigned = {op.name: op.assigned for op in dg_session.placement([train, loss]).ops}
    on_var_device = [
        "w/Adam",
        "w/Adam_1",
        "b/Adam",
        "beta1_power",
        "beta2_power",
        "Adam/update_w/ApplyAdam",
        "Adam/update_w/learning_rate",
        "Adam/update_b/ApplyAdam",
        "Adam/Assign",
    ]
    for name in on_var_device:
        assert assigned[name].endswith(f"{var_device}:0"), (name, assigned[name])
    assert assigned[loss.op.name].endswith(f"{loss_device}:0")
    assert assigned["global_step"].endswith("CPU:0") and assigned["Adam"].endswith("CPU:0")
    init = dg.global_variables_initializer()
    init_assigned = {op.name: op.assigned for op in dg_session.placement(init).ops}
    assert init_assigned["w/Adam/Initializer/zeros"].endswith(f"{var_device}:0")
    dg_session.run(init)
    for _ in range(2):
        dg_session.run(train)
    want = _reference(
        _adam,
        (ZEROS, ZEROS, (np.float32(0.9), np.float32(0.999))),
        steps=2,
        lr=0.1,
        b1=0.9,
        b2=0.999,
        eps=1e-8,
    )
    for got, expected in zip(dg_session.run([w, b]), want, strict=True):
        np.testing.assert_allclose(got, expected, rtol=1e-12)
    assert dg_session.run(step) == 2


def test_concurrent_steps_lose_no_update():
    """Threads running the train op at once (asynchronous towers): every update lands."""
    threads, runs = 4, 25
    with dg.Graph().as_default():
        w = dg.Variable(np.zeros(3), name="w")
        acc_w = dg.Variable(np.zeros(3), name="w2")
        step = get_or_create_global_step()
        grad = dg.constant(np.ones(3))
        train = dg.group(
            GradientDescentOptimizer(0.5).apply_gradients([(grad, w)], global_step=step),
            MomentumOptimizer(1.0, 0.0).apply_gradients([(grad, acc_w)]),
        )
        with dg.Session() as sess:
            sess.run(dg.global_variables_initializer())

            def work():
                for _ in range(runs):
                    sess.run(train)

            workers = [threading.Thread(target=work) for _ in range(threads)]
            for t in workers:
                t.start()
            for t in workers:
                t.join(120)
            total = threads * runs
            assert sess.run(w).tolist() == [-0.5 * total] * 3
            assert sess.run(acc_w).tolist() == [-1.0 * total] * 3
            assert global_step(sess, step) == total
