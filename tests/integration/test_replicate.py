"""Data-parallel towers: sync equals single-device training on the whole batch, async applies
exactly one update per tower step, and every tower runs on its own device."""

from __future__ import annotations

import numpy as np
import pytest

import daskgraph as dg
from daskgraph.training.replicate import replica_device_setter

RNG = np.random.default_rng(0)
X = RNG.normal(size=(64, 8)).astype(np.float32)
Y = (X @ RNG.normal(size=(8, 1)) + 0.5).astype(np.float32)


def _model(x, y):
    w = dg.get_variable("w", [8, 1], initializer=dg.zeros_initializer())
    b = dg.get_variable("b", [1], initializer=dg.zeros_initializer())
    return dg.reduce_mean(dg.square(dg.matmul(x, w) + b - y))


def _train(session, devices, mode, steps, optimizer):
    x = dg.placeholder(dg.float32, [64, 8], name="x")
    y = dg.placeholder(dg.float32, [64, 1], name="y")
    step = dg.train.get_or_create_global_step()
    towers = dg.train.replicate(
        _model, devices, mode, inputs=(x, y), optimizer=optimizer, global_step=step
    )
    session.run(dg.global_variables_initializer())
    feeds = {x: X, y: Y}
    if mode == "sync":
        losses = [session.run([towers.train_op, towers.loss], feeds)[1] for _ in range(steps)]
    else:
        losses = []
        towers.run_async(session, steps, feed_fn=lambda i, k: feeds,
                         on_step=lambda i, k, loss: losses.append(loss))  # fmt: skip
    values = session.run(dg.trainable_variables())
    return towers, values, int(session.run(step)), losses


@pytest.mark.virtual_gpus(2)
@pytest.mark.parametrize("optimizer", ["sgd", "adam"])
def test_sync_towers_equal_single_device_training_on_the_whole_batch(dg_client, optimizer):
    make = {
        "sgd": lambda: dg.train.GradientDescentOptimizer(0.1),
        "adam": lambda: dg.train.AdamOptimizer(0.05),
    }[optimizer]
    results = {}
    for devices in (["/cpu:0"], ["/gpu:0", "/gpu:1"]):
        with dg.Graph().as_default(), dg.Session(dg_client) as session:
            _, values, steps, losses = _train(session, devices, "sync", 8, make())
        results[len(devices)] = values
        assert steps == 8
        assert losses[-1] < losses[0]
    for one, two in zip(results[1], results[2], strict=True):
        np.testing.assert_allclose(two, one, rtol=1e-5, atol=1e-6)


@pytest.mark.virtual_gpus(2)
def test_async_towers_apply_exactly_one_update_per_tower_step(dg_client):
    with dg.Graph().as_default(), dg.Session(dg_client) as session:
        towers, _, steps, losses = _train(
            session, ["/gpu:0", "/gpu:1"], "async", 15, dg.train.GradientDescentOptimizer(0.05)
        )
    assert steps == 2 * 15  # every tower step incremented the global step exactly once
    assert len(losses) == 30 and np.mean(losses[-4:]) < np.mean(losses[:4])
    assert len(towers.tower_train_ops) == 2


@pytest.mark.virtual_gpus(2)
def test_towers_run_on_their_devices_with_the_parameters_on_the_cpu(dg_session):
    x = dg.placeholder(dg.float32, [64, 8], name="x")
    y = dg.placeholder(dg.float32, [64, 1], name="y")
    towers = dg.train.replicate(
        _model, ["/gpu:0", "/gpu:1"], "sync", inputs=(x, y),
        optimizer=dg.train.MomentumOptimizer(0.1, 0.9),
    )  # fmt: skip
    plan = dg_session.placement(towers.train_op, {x: X, y: Y})
    where = {o.name: o.assigned[-5:] for o in plan.ops}
    assert where["w"] == "CPU:0" and where["b"] == "CPU:0"
    assert where["w/Momentum"] == "CPU:0"  # slots sit with their variable
    for i in (0, 1):
        tower = {n: d for n, d in where.items() if n.startswith(f"tower_{i}/")}
        assert tower and all(d == f"GPU:{i}" for d in tower.values()), tower
        grads = {n: d for n, d in tower.items() if n.startswith(f"tower_{i}/gradients/")}
        assert grads and all(d == f"GPU:{i}" for d in grads.values()), grads


def test_bad_arguments_are_refused_clearly():
    with dg.Graph().as_default():
        x = dg.placeholder(dg.float32, [10, 8])
        opt = dg.train.GradientDescentOptimizer(0.1)
        with pytest.raises(ValueError, match="mode must be 'sync' or 'async'"):
            dg.train.replicate(_model, ["/cpu:0"], "sometimes", optimizer=opt)
        with pytest.raises(ValueError, match="at least one device"):
            dg.train.replicate(_model, [], optimizer=opt)
        with pytest.raises(ValueError, match="do not split evenly into 3 towers"):
            dg.train.replicate(_model, ["/cpu:0"] * 3, inputs=(x, x), optimizer=opt)


def test_the_device_setter_sends_variables_to_the_parameter_device():
    with dg.Graph().as_default():
        with dg.device(replica_device_setter("/job:ps/task:0/cpu:0", "/job:worker/gpu:0")):
            v = dg.Variable(1.0, name="v")
            y = v * 2.0
            with dg.device("/cpu:0"):
                z = y + 1.0
    assert v.device == "/job:ps/task:0/device:CPU:0"
    assert y.device == "/job:worker/device:GPU:0"
    assert z.device == "/job:worker/device:CPU:0"


@pytest.mark.virtual_gpus(2)
def test_concurrent_multi_device_runs_lose_no_update(dg_session):
    """Runs from several threads through the scheduler (as async towers make them) each get
    their own run number and step: none is taken for another, no assign is dropped."""
    from concurrent.futures import ThreadPoolExecutor

    with dg.device("/cpu:0"):
        counter = dg.Variable(0.0, name="counter")
    with dg.device("/gpu:0"):
        a = dg.constant(1.0) * 1.0
    with dg.device("/gpu:1"):
        b = dg.constant(0.0) * 1.0
    bump = counter.assign_add(a + b)
    dg_session.run(counter.initializer)
    with ThreadPoolExecutor(4) as pool:
        list(pool.map(lambda _: dg_session.run(bump), range(80)))
    assert dg_session.run(counter) == 80.0
