"""tf.train.SyncReplicasOptimizer with every replica in one graph: two towers' mean gradient
applied once per run (TensorFlow 2.21's numbers for Adam on the whole batch), one worker with
the session-run hook (TF's numbers for the steps its token queue applies), a Supervisor
program as TF's mnist_replica.py writes it, moving averages, TF's errors, and a group of
replicas left incomplete refused."""

from __future__ import annotations

import numpy as np
import pytest

import daskgraph as dg
import daskgraph.compat.v1 as tf
from daskgraph.training.sync_replicas import SyncReplicasOptimizer

FEEDS = [[1.0, 2.0], [0.5, -1.0], [2.0, 0.25], [1.5, 1.0], [-0.5, 3.0]]

# TensorFlow 2.21: AdamOptimizer(0.1) on the mean of the two towers' losses (the whole batch),
# w = [1, -2], loss = sum(w * w * x + w); tower 0 gets FEEDS[i], tower 1 FEEDS[i + 1]
TF_WHOLE_BATCH_ADAM = [
    [0.8999999761581421, -1.9000000953674316],
    [0.8001659512519836, -1.9432653188705444],
    [0.7001440525054932, -1.9420547485351562],
    [0.6048411130905151, -1.8884814977645874],
    [0.5143409967422485, -1.8176119327545166],
]


def _loss(w, x):
    return dg.reduce_sum(w * w * x + w)


def _towers(devices=(None, None)):
    w = dg.Variable([1.0, -2.0], name="w")
    xs = [dg.placeholder(dg.float32, [2]) for _ in devices]
    gs = dg.train.get_or_create_global_step()
    opt = SyncReplicasOptimizer(dg.train.AdamOptimizer(0.1), replicas_to_aggregate=len(xs))
    trains = []
    for x, device in zip(xs, devices, strict=True):
        with dg.device(device):
            trains.append(opt.minimize(_loss(w, x), global_step=gs))
    return w, xs, gs, opt, trains


def test_two_towers_are_one_step_of_the_whole_batch():
    with dg.Graph().as_default():
        w, xs, gs, opt, trains = _towers()
        hook = opt.make_session_run_hook(is_chief=True)
        with dg.train.MonitoredTrainingSession(hooks=[hook]) as sess:
            for i, want in enumerate(TF_WHOLE_BATCH_ADAM):
                sess.run(trains, {xs[0]: FEEDS[i], xs[1]: FEEDS[(i + 1) % 5]})
                np.testing.assert_allclose(sess.run(w), want, rtol=1e-6)
                assert int(sess.run(gs)) == i + 1
        assert opt.get_slot_names() == ["m", "v"] and opt.get_slot(w, "m").op.name == "w/Adam"
        assert opt.variables() == opt._opt.variables()


@pytest.mark.virtual_gpus(2)
def test_towers_on_two_gpus(dg_session):
    w, xs, _, opt, trains = _towers(("/gpu:0", "/gpu:1"))
    dg_session.run([dg.global_variables_initializer(), dg.local_variables_initializer()])
    dg_session.run(opt.chief_init_op)
    steps = [dg_session.run(trains, {xs[0]: FEEDS[i], xs[1]: FEEDS[i + 1]}) for i in range(2)]
    np.testing.assert_allclose(dg_session.run(w), TF_WHOLE_BATCH_ADAM[1], rtol=1e-6)
    assert [int(s[1]) for s in steps] == [1, 2]  # the last tower's train op: the local step
    plan = dg_session.placement(trains, {xs[0]: FEEDS[0], xs[1]: FEEDS[1]})
    devices = {op.name: op.assigned for op in plan.ops}
    grads = [name for name in devices if name.startswith("gradients") and "_grad/mul" in name]
    assert {devices[n].rsplit("/", 1)[-1] for n in grads} == {"device:GPU:0", "device:GPU:1"}


def test_one_worker_applies_every_step_as_tensorflows_steady_state():
    # TensorFlow's token queue drops the second run's gradient as stale (it starts with a
    # token per replica); its updates are then Adam's on FEEDS 0, 2, 3, 4, which daskgraph
    # applies in four runs. TF 2.21's weights after them:
    tf_after = [0.619010865688324, -1.6812697649002075]
    with dg.Graph().as_default():
        w = dg.Variable([1.0, -2.0], name="w")
        x = dg.placeholder(dg.float32, [2])
        gs = dg.train.get_or_create_global_step()
        opt = SyncReplicasOptimizer(dg.train.AdamOptimizer(0.1), replicas_to_aggregate=1)
        train = opt.minimize(_loss(w, x), global_step=gs)
        with dg.train.MonitoredTrainingSession(hooks=[opt.make_session_run_hook(True)]) as sess:
            local_steps = [int(sess.run(train, {x: FEEDS[i]})) for i in (0, 2, 3, 4)]
            np.testing.assert_allclose(sess.run(w), tf_after, rtol=1e-6)
    assert local_steps == [1, 2, 3, 4]


def test_a_supervisor_program_as_tensorflows_mnist_replica(tmp_path):
    with dg.Graph().as_default():
        w = dg.Variable([1.0, -2.0], name="w")
        x = dg.placeholder(dg.float32, [2])
        gs = dg.Variable(0, name="global_step", trainable=False)
        opt = tf.train.SyncReplicasOptimizer(
            tf.train.GradientDescentOptimizer(0.1), replicas_to_aggregate=1, total_num_replicas=1
        )
        train_step = opt.minimize(_loss(w, x), global_step=gs)
        local_init_op = opt.chief_init_op
        ready_for_local_init_op = opt.ready_for_local_init_op
        chief_queue_runner = opt.get_chief_queue_runner()
        sync_init_op = opt.get_init_tokens_op()
        sv = tf.train.Supervisor(
            is_chief=True,
            logdir=str(tmp_path),
            init_op=tf.global_variables_initializer(),
            local_init_op=local_init_op,
            ready_for_local_init_op=ready_for_local_init_op,
            recovery_wait_secs=1,
            global_step=gs,
            save_model_secs=0,
            save_summaries_secs=0,
        )
        sess = sv.prepare_or_wait_for_session("")
        sess.run(sync_init_op)
        assert sv.start_queue_runners(sess, [chief_queue_runner]) == []
        want = np.array([1.0, -2.0])
        for i in range(3):
            local_step, _ = sess.run([train_step, gs], {x: FEEDS[i]})
            assert local_step == i + 1  # the global step after this step's update
            want = want - 0.1 * (2 * want * np.array(FEEDS[i]) + 1)
        np.testing.assert_allclose(sess.run(w), want, rtol=1e-6)
        sv.stop()
        sess.close()


def test_moving_averages_follow_each_update():
    with dg.Graph().as_default():
        w = dg.Variable([1.0, -2.0], name="w")
        gs = dg.train.get_or_create_global_step()
        ema = dg.train.ExponentialMovingAverage(0.5)
        opt = SyncReplicasOptimizer(
            dg.train.GradientDescentOptimizer(0.25), 1, variable_averages=ema,
            variables_to_average=[w],
        )  # fmt: skip
        train = opt.minimize(dg.reduce_sum(w * w), global_step=gs)
        with dg.Session() as sess:
            sess.run([dg.global_variables_initializer(), opt.local_step_init_op])
            sess.run(train)
            # w: [0.5, -1]; the average moves halfway from its start [1, -2]
            assert sess.run(ema.average(w)).tolist() == [0.75, -1.5]


def test_an_incomplete_group_of_replicas_is_refused():
    with dg.Graph().as_default():
        w = dg.Variable(1.0, name="w")
        gs = dg.train.get_or_create_global_step()
        opt = SyncReplicasOptimizer(dg.train.GradientDescentOptimizer(0.1), 2)
        opt.minimize(w * w, global_step=gs)
        for call in (
            opt.get_chief_queue_runner,
            opt.get_init_tokens_op,
            lambda: opt.make_session_run_hook(True).begin(),
        ):
            with pytest.raises(ValueError, match=r"a step takes the gradients of 2 replicas"):
                call()


def test_errors_are_tensorflows():
    with dg.Graph().as_default():
        w = dg.Variable(1.0, name="w")
        gs = dg.train.get_or_create_global_step()
        opt = SyncReplicasOptimizer(dg.train.GradientDescentOptimizer(0.1), 3, 2)
        with pytest.raises(ValueError, match="Should be called after apply_gradients"):
            opt.get_chief_queue_runner()
        with pytest.raises(ValueError, match="get_init_tokens_op\\(\\) should be called after"):
            opt.get_init_tokens_op()
        with pytest.raises(ValueError, match="apply_gradient should be called before using"):
            opt.make_session_run_hook(False).begin()
        with pytest.raises(ValueError, match="Must supply at least one variable"):
            opt.apply_gradients([], global_step=gs)
        with pytest.raises(ValueError, match="Global step is required to check staleness"):
            opt.minimize(w * w)
        for _ in range(3):
            opt.minimize(w * w, global_step=gs)
        with pytest.raises(ValueError, match=r"Too few tokens to finish the first step: 0 \(gi"):
            opt.get_init_tokens_op(num_tokens=0)
        assert opt.get_init_tokens_op().type == "NoOp"


def test_compat_name():
    assert tf.train.SyncReplicasOptimizer is SyncReplicasOptimizer
