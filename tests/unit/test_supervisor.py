"""tf.train.Supervisor and basic_train_loop, as TensorFlow 2.21's: default ops from the graph,
the chief's services (checkpoints, summaries, step rates, the graph) on timers, restoring from
logdir, errors from the block or a service raised after stopping, OutOfRangeError as a normal
end, a non-chief waiting for the chief on a server; summary_iterator reading the event file."""

from __future__ import annotations

import glob
import os
import threading
import time

import pytest

import daskgraph as dg
import daskgraph.compat.v1 as tf
from daskgraph.errors import AbortedError, DataLossError, NotFoundError, OutOfRangeError
from daskgraph.summary.reader import summary_iterator
from daskgraph.training.supervisor import Supervisor, basic_train_loop


def _model():
    step = dg.train.get_or_create_global_step()
    w = dg.Variable(1.0, name="w")
    dg.summary.scalar("w", w)
    bump = dg.group(step.assign_add(1), w.assign_add(0.5))
    return step, w, bump


def test_defaults_come_from_the_graph_as_tensorflows(tmp_path):
    with dg.Graph().as_default() as graph:
        step, _, _ = _model()
        sv = Supervisor(logdir=str(tmp_path))
        assert sv.global_step is step and sv.global_step.name == "global_step:0"
        assert sv.saver is graph.get_collection("savers")[0]
        assert sv.summary_op is graph.get_collection("summary_op")[0]
        assert sv.init_op is graph.get_collection("init_op")[0] and sv.init_op.name == "init"
        assert sv.ready_op is graph.get_collection("ready_op")[0]
        assert sv.ready_for_local_init_op is None  # TensorFlow's default
        assert sv.save_path == os.path.join(str(tmp_path), "model.ckpt")
        assert sv.is_chief and isinstance(sv.coord, dg.train.Coordinator)
        assert graph.finalized
    with dg.Graph().as_default():
        sv = Supervisor(logdir=None, save_model_secs=0)
        assert sv.saver is None and sv.summary_op is None and sv.global_step is None
        assert sv.summary_writer is None and sv.save_path is None


def _events(logdir):
    (path,) = glob.glob(os.path.join(logdir, "events.out.tfevents.*"))
    return list(summary_iterator(path))


def _wait_for_the_services(sv, logdir, timeout=60.0):
    """Until each service has run once (a checkpoint, the summary, the steps per second are in
    the event file), however slowly their threads get going: a wait, not a verdict."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        sv.summary_writer.flush()
        events = _events(logdir)
        tags = {v.tag for e in events if e.HasField("summary") for v in e.summary.value}
        if {"w_1", "global_step/sec"} <= tags and any(e.session_log.status == 3 for e in events):
            return
        time.sleep(0.05)


def test_the_chiefs_services_save_checkpoints_summaries_and_the_graph(tmp_path):
    logdir = str(tmp_path)
    with dg.Graph().as_default():
        _, _, bump = _model()
        sv = Supervisor(logdir=logdir, save_model_secs=0.4, save_summaries_secs=0.4)
        with sv.managed_session() as sess:
            for _ in range(4):
                sess.run(bump)
            _wait_for_the_services(sv, logdir)
    files = sorted(os.listdir(logdir))
    assert {"checkpoint", "graph.pbtxt"} <= set(files)
    assert any(f.startswith("model.ckpt-") and f.endswith(".index") for f in files)
    assert dg.train.latest_checkpoint(logdir).startswith(os.path.join(logdir, "model.ckpt-"))
    events = _events(logdir)
    kinds = [e.WhichOneof("what") for e in events]
    assert kinds[:3] == ["file_version", "graph_def", "session_log"]
    assert events[2].session_log.status == events[2].session_log.START and events[2].step == 0
    assert events[-1].session_log.status == events[-1].session_log.STOP
    tags = {v.tag for e in events if e.HasField("summary") for v in e.summary.value}
    assert tags == {"w_1", "global_step/sec"}  # TF names it w_1 too (the variable is w)
    saves = [e for e in events if e.HasField("session_log") and e.session_log.status == 3]
    assert saves and all(e.session_log.checkpoint_path.endswith("model.ckpt") for e in saves)


def _train(logdir, steps):
    with dg.Graph().as_default():
        step, w, bump = _model()
        sv = Supervisor(logdir=logdir, save_model_secs=0, save_summaries_secs=0)
        with sv.managed_session() as sess:
            for _ in range(steps):
                sess.run(bump)
            sv.saver.save(sess, sv.save_path, global_step=step)
            return int(sess.run(step)), float(sess.run(w))


def test_a_new_supervisor_restores_the_latest_checkpoint_of_logdir(tmp_path):
    assert _train(str(tmp_path), 3) == (3, 2.5)
    assert _train(str(tmp_path), 2) == (5, 3.5)


def test_managed_session_raises_the_blocks_error_after_stopping(tmp_path):
    with dg.Graph().as_default():
        _model()
        sv = Supervisor(logdir=str(tmp_path), save_model_secs=0, save_summaries_secs=0)
        with pytest.raises(ValueError, match="boom"):
            with sv.managed_session() as sess:
                raise ValueError("boom")
        with pytest.raises(RuntimeError, match="closed Session"):
            sess.run(sv.global_step)
        with sv.managed_session():
            raise OutOfRangeError("done", op=None)  # input exhausted: a normal end
        assert sv.should_stop()
        with pytest.raises(ZeroDivisionError):
            with sv.managed_session():
                sv.loop(0.01, lambda: 1 / 0)  # a service's error
                sv.wait_for_stop()


def test_loop_stop_and_summary_computed(tmp_path):
    with dg.Graph().as_default():
        dg.Variable(1.0, name="v")
        sv = Supervisor(logdir=None)
        sess = sv.prepare_or_wait_for_session("")
        calls = []
        four = threading.Event()

        def service(value: int) -> None:
            calls.append(value)
            if len(calls) == 4:
                four.set()

        sv.loop(0.02, service, args=(1,))
        assert four.wait(30), f"the service ran {len(calls)} times"
        sv.stop()
        assert calls[:4] == [1, 1, 1, 1]
        with pytest.raises(RuntimeError, match="Writing a summary requires a summary writer"):
            sv.summary_computed(sess, b"")
        with pytest.raises(RuntimeError, match="Only chief supervisor can start"):
            Supervisor.start_standard_services(_NonChief(), sess)
        sess.close()


class _NonChief:
    _is_chief = False


def test_a_non_chief_needs_devices_on_its_variables():
    with dg.Graph().as_default():
        dg.Variable(1.0, name="v")
        with pytest.raises(ValueError, match="When using replicas, all Variables must have"):
            Supervisor(is_chief=False)


def test_a_non_chief_waits_for_the_chief_on_a_server(tmp_path):
    server = tf.train.Server.create_local_server()
    try:
        with dg.Graph().as_default():
            _, _, bump = _model()
            chief = Supervisor(logdir=str(tmp_path), save_model_secs=0, save_summaries_secs=0)
            with chief.managed_session(server.target) as sess:
                sess.run(bump)
                with dg.Graph().as_default():
                    with dg.device("/job:local/task:0/cpu:0"):
                        other_step, _, _ = _model()
                    worker = Supervisor(is_chief=False, recovery_wait_secs=0.1)
                    assert worker.summary_writer is None and worker.save_path is None
                    with worker.managed_session(server.target) as worker_sess:
                        assert int(worker_sess.run(other_step)) == 1  # the chief's value
    finally:
        tf.Session.reset(server.target)


def test_basic_train_loop_retries_after_aborted_errors(tmp_path):
    with dg.Graph().as_default():
        step, _, bump = _model()
        sv = Supervisor(logdir=str(tmp_path), save_model_secs=0, save_summaries_secs=0)
        seen = []

        def train_step(sess, limit):
            value = int(sess.run(step))
            seen.append(value)
            if len(seen) == 2:
                raise AbortedError("a task restarted", op=None)
            sess.run(bump)
            if value + 1 >= limit:
                sv.request_stop()

        basic_train_loop(sv, train_step, args=(3,))
    assert seen == [0, 1, 0, 1, 2]  # a new session after the abort: initialized again


def test_summary_iterator_errors_are_tensorflows(tmp_path):
    with dg.summary.FileWriter(str(tmp_path)) as writer:
        writer.add_summary(dg.summary.Summary(), 1)
    (path,) = glob.glob(str(tmp_path / "events*"))
    data = open(path, "rb").read()
    (tmp_path / "cut").write_bytes(data[:-3])
    with pytest.raises(DataLossError, match="truncated record at "):
        list(summary_iterator(str(tmp_path / "cut")))
    bad = bytearray(data)
    bad[-6] ^= 0xFF
    (tmp_path / "bad").write_bytes(bytes(bad))
    with pytest.raises(DataLossError, match="corrupted record at "):
        list(summary_iterator(str(tmp_path / "bad")))
    with pytest.raises(NotFoundError, match="No such file or directory"):
        list(summary_iterator(str(tmp_path / "nope")))


def test_compat_names():
    assert tf.train.Supervisor is Supervisor
    assert tf.train.basic_train_loop is basic_train_loop
    assert tf.train.summary_iterator is summary_iterator
    assert Supervisor.PrepareSession is Supervisor.prepare_or_wait_for_session
