"""MonitoredTrainingSession, MonitoredSession and the standard hooks, as TensorFlow 1 runs them."""

from __future__ import annotations

import logging
import os

import numpy as np
import pytest
from tensorboardX.proto.event_pb2 import SessionLog
from test_summary import read_events

import daskgraph as dg
from daskgraph import errors
from daskgraph.summary import FileWriterCache, scalar
from daskgraph.training.monitored_session import (
    ChiefSessionCreator,
    MonitoredSession,
    MonitoredTrainingSession,
    SingularMonitoredSession,
)
from daskgraph.training.session_hooks import (
    CheckpointSaverHook,
    CheckpointSaverListener,
    FeedFnHook,
    FinalOpsHook,
    LoggingTensorHook,
    NanLossDuringTrainingError,
    NanTensorHook,
    SecondOrStepTimer,
    SessionRunArgs,
    SessionRunHook,
    StopAtStepHook,
)
from daskgraph.training.session_manager import Scaffold, SessionManager


@pytest.fixture(autouse=True)
def _fresh_writers():
    """Hooks share FileWriterCache's writers: each test closes and forgets them."""
    yield
    FileWriterCache.clear()


def _model():
    """w -> w - 0.1 * 2w per step (gradient descent on w^2), counting the global step."""
    w = dg.Variable([1.0, -2.0], name="w")
    step = dg.train.get_or_create_global_step()
    loss = dg.reduce_sum(w * w)
    train = dg.train.GradientDescentOptimizer(0.1).minimize(loss, global_step=step)
    return w, step, loss, train


class Recorder(SessionRunHook):
    """Records the calls; fetches the global step; asks to stop at ``stop_at`` runs."""

    def __init__(self, step, stop_at: int | None = None) -> None:
        self.calls: list[str] = []
        self.step = step
        self.stop_at = stop_at
        self.results: list[int] = []

    def begin(self):
        self.calls.append("begin")

    def after_create_session(self, session, coord):
        self.calls.append("after_create_session")

    def before_run(self, run_context):
        self.calls.append("before_run")
        return SessionRunArgs(self.step)

    def after_run(self, run_context, run_values):
        self.calls.append("after_run")
        self.results.append(int(run_values.results))
        if self.stop_at is not None and len(self.results) >= self.stop_at:
            run_context.request_stop()

    def end(self, session):
        self.calls.append("end")


def test_stop_at_step_checkpoints_and_restores(tmp_path) -> None:
    directory = str(tmp_path)
    with dg.Graph().as_default() as graph:
        w, step, _, train = _model()
        hooks = [StopAtStepHook(num_steps=5)]
        with MonitoredTrainingSession(
            checkpoint_dir=directory, hooks=hooks, save_checkpoint_steps=2
        ) as sess:
            assert graph.finalized
            runs = 0
            while not sess.should_stop():
                sess.run(train)
                runs += 1
        assert not graph.finalized  # un-finalized on close, as TensorFlow does
    assert runs == 5
    assert dg.train.latest_checkpoint(directory) == os.path.join(directory, "model.ckpt-5")
    saved = sorted(n for n in os.listdir(directory) if n.endswith(".index"))
    assert saved == [f"model.ckpt-{i}.index" for i in (0, 2, 4, 5)]
    assert os.path.exists(os.path.join(directory, "graph.pbtxt"))
    events = read_events(directory)
    logged = [e.step for e in events if e.session_log.status == SessionLog.CHECKPOINT]
    assert logged == [0, 2, 4, 5] and any(e.graph_def for e in events)

    with dg.Graph().as_default():  # a new process's graph: restores instead of initializing
        w, step, _, train = _model()
        with MonitoredTrainingSession(
            checkpoint_dir=directory, hooks=[StopAtStepHook(last_step=7)]
        ) as sess:
            restored = (int(sess.run(step)), sess.run(w))
            runs = 0
            while not sess.should_stop():
                sess.run(train)
                runs += 1
    assert restored[0] == 5
    np.testing.assert_allclose(restored[1], np.array([1.0, -2.0]) * 0.8**5, rtol=1e-6)
    assert runs == 2
    assert dg.train.latest_checkpoint(directory).endswith("model.ckpt-7")  # saved at the end


def test_hooks_are_called_in_tensorflows_order() -> None:
    with dg.Graph().as_default():
        _, step, _, train = _model()
        recorder = Recorder(step, stop_at=2)
        with MonitoredSession(hooks=[recorder]) as sess:
            while not sess.should_stop():
                sess.run(train)
            with pytest.raises(RuntimeError, match="Run called even after should_stop"):
                sess.run(train)
    assert recorder.calls == [
        "begin",
        "after_create_session",
        "before_run",
        "after_run",
        "before_run",
        "after_run",
        "end",
    ]
    assert recorder.results in ([0, 1], [1, 2])  # read before or after the step's update


def test_feeds_fetches_and_final_ops() -> None:
    with dg.Graph().as_default():
        x = dg.placeholder(dg.float32, [], name="x")
        y = dg.placeholder(dg.float32, [], name="y")
        total = dg.Variable(0.0, name="total")
        add = total.assign_add(x * y)
        final = FinalOpsHook(total)
        with SingularMonitoredSession(hooks=[FeedFnHook(lambda: {x: 2.0}), final]) as sess:
            assert isinstance(sess.raw_session(), dg.Session)
            values = [float(sess.run(add, feed_dict={y: v})) for v in (1.0, 3.0)]
            with pytest.raises(RuntimeError, match="Same tensor is fed by a SessionRunHook"):
                sess.run(add, feed_dict={x: 1.0, y: 1.0})
    assert values == [2.0, 8.0] and float(final.final_ops_values) == 8.0


def test_out_of_range_ends_the_loop_cleanly_and_other_errors_pass() -> None:
    with dg.Graph().as_default():
        _, step, _, train = _model()
        recorder = Recorder(step)
        with MonitoredSession(hooks=[recorder]) as sess:
            sess.run(train)
            raise errors.OutOfRangeError("End of sequence", op=None)
        assert recorder.calls[-1] == "end"
    with dg.Graph().as_default():
        _, step, _, train = _model()
        recorder = Recorder(step)
        with pytest.raises(ValueError, match="boom"), MonitoredSession(hooks=[recorder]):
            raise ValueError("boom")
        assert "end" not in recorder.calls  # hooks' end only after a clean exit


def test_a_lost_worker_remakes_the_session() -> None:
    class FailOnce(SessionRunHook):
        created = 0
        failed = False

        def after_create_session(self, session, coord):
            FailOnce.created += 1

        def before_run(self, run_context):
            if not FailOnce.failed:
                FailOnce.failed = True
                raise errors.AbortedError("worker lost", op=None)
            return None

    with dg.Graph().as_default():
        w, _, _, train = _model()
        with MonitoredSession(hooks=[FailOnce()]) as sess:
            sess.run(train)
            value = sess.run(w)
    assert FailOnce.created == 2
    np.testing.assert_allclose(value, [0.8, -1.6], rtol=1e-6)  # one step on a fresh session


def test_nan_tensor_hook() -> None:
    with dg.Graph().as_default():
        loss = dg.placeholder(dg.float32, [])
        with (
            pytest.raises(NanLossDuringTrainingError, match="NaN loss during training"),
            MonitoredSession(hooks=[NanTensorHook(loss)]) as sess,
        ):
            sess.run(loss, {loss: 1.0})
            sess.run(loss, {loss: np.nan})
    with dg.Graph().as_default():
        loss = dg.placeholder(dg.float32, [])
        with MonitoredSession(hooks=[NanTensorHook(loss, fail_on_nan_loss=False)]) as sess:
            sess.run(loss, {loss: np.nan})
            assert sess.should_stop()


def test_logging_tensor_hook_logs_every_n_iter(caplog) -> None:
    with dg.Graph().as_default():
        count = dg.Variable(0, name="count")
        bump = count.assign_add(1)
        hook = LoggingTensorHook({"count": count}, every_n_iter=2, at_end=True)
        with caplog.at_level(logging.INFO, logger="tensorflow"):
            with MonitoredSession(hooks=[hook]) as sess:
                for _ in range(4):
                    sess.run(bump)
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("count")]
    assert len(lines) == 3 and lines[-1].startswith("count = 4 (")
    assert lines[0] in ("count = 0", "count = 1") and lines[1].endswith("sec)")
    with pytest.raises(ValueError, match="exactly one of every_n_iter and every_n_secs"):
        LoggingTensorHook({"count": count})


def test_summaries_and_step_rates_are_written_to_the_checkpoint_dir(tmp_path) -> None:
    directory = str(tmp_path)
    with dg.Graph().as_default():
        _, _, loss, train = _model()
        scalar("loss", loss)
        with MonitoredTrainingSession(
            checkpoint_dir=directory,
            hooks=[StopAtStepHook(last_step=3)],
            save_summaries_steps=1,
            log_step_count_steps=1,
            save_checkpoint_secs=None,
        ) as sess:
            while not sess.should_stop():
                sess.run(train)
    events = read_events(directory)
    losses = [(e.step, v.simple_value) for e in events for v in e.summary.value if v.tag == "loss"]
    assert [s for s, _ in losses] == [1, 2, 3]
    np.testing.assert_allclose([v for _, v in losses], [5.0, 3.2, 2.048], rtol=1e-5)
    assert any(v.tag == "global_step/sec" for e in events for v in e.summary.value)
    assert [e.session_log.status for e in events if e.HasField("session_log")] == [SessionLog.START]
    assert not [n for n in os.listdir(directory) if n.endswith(".index")]  # no checkpoint hook


def test_checkpoint_listeners_and_saver_choice(tmp_path) -> None:
    class Listener(CheckpointSaverListener):
        seen: list[tuple[str, int]] = []

        def before_save(self, session, global_step_value):
            self.seen.append(("before", global_step_value))

        def after_save(self, session, global_step_value):
            self.seen.append(("after", global_step_value))
            return global_step_value >= 1  # asks to stop

    with dg.Graph().as_default():
        _, _, _, train = _model()
        saver = dg.train.Saver()
        hook = CheckpointSaverHook(str(tmp_path), save_steps=1, saver=saver, listeners=[Listener()])
        with SingularMonitoredSession(hooks=[hook]) as sess:
            while not sess.should_stop():
                sess.run(train)
    assert Listener.seen == [("before", 0), ("after", 0), ("before", 1), ("after", 1)]
    with pytest.raises(ValueError, match="cannot provide both saver and scaffold"):
        CheckpointSaverHook(str(tmp_path), save_steps=1, saver=saver, scaffold=Scaffold())


def test_scaffold_and_session_manager() -> None:
    with dg.Graph().as_default() as graph:
        w = dg.Variable(1.0, name="w")
        local = dg.Variable(5.0, name="local", collections=[dg.ops.LOCAL_VARIABLES])
        seen = []
        scaffold = Scaffold(init_fn=lambda scaffold, sess: seen.append(float(sess.run(w))))
        with MonitoredSession(ChiefSessionCreator(scaffold)) as sess:
            assert float(sess.run(local)) == 5.0
        assert seen == [1.0] and scaffold.saver in graph.get_collection("savers")
        assert Scaffold.get_or_default("init_op", "init_op", lambda: None) is scaffold.init_op
        manager = SessionManager(ready_op=scaffold.ready_op, recovery_wait_secs=0.05)
        with pytest.raises(RuntimeError, match="Init operations did not make model ready"):
            manager.prepare_session("", init_op=scaffold.local_init_op)
        with pytest.raises(errors.DeadlineExceededError, match="not ready after waiting"):
            manager.wait_for_session("", max_wait_secs=0.1)


def test_second_or_step_timer() -> None:
    timer = SecondOrStepTimer(every_steps=3)
    assert timer.should_trigger_for_step(0)
    assert timer.update_last_triggered_step(0) == (None, None)
    assert not timer.should_trigger_for_step(0) and not timer.should_trigger_for_step(2)
    assert timer.should_trigger_for_step(3)
    assert timer.update_last_triggered_step(3)[1] == 3 and timer.last_triggered_step() == 3
    with pytest.raises(ValueError, match="Either every_secs or every_steps"):
        SecondOrStepTimer()
    with pytest.raises(ValueError, match="Can not provide both"):
        SecondOrStepTimer(1.0, 1)


def test_stop_at_step_needs_a_global_step() -> None:
    with dg.Graph().as_default():
        dg.Variable(1.0)
        with pytest.raises(RuntimeError, match="Global step should be created to use StopAtStep"):
            MonitoredSession(hooks=[StopAtStepHook(num_steps=1)])
    with pytest.raises(ValueError, match="One of num_steps or last_step must be specified"):
        StopAtStepHook()


def test_run_step_fn() -> None:
    with dg.Graph().as_default():
        _, step, _, train = _model()
        recorder = Recorder(step)

        def step_fn(step_context):
            value = step_context.run_with_hooks(train)
            if int(step_context.session.run(step)) >= 2:
                step_context.request_stop()
            return value

        with MonitoredSession(hooks=[recorder]) as sess:
            while not sess.should_stop():
                sess.run_step_fn(step_fn)
        assert len(recorder.results) == 2 and recorder.calls[-1] == "end"
        with (
            MonitoredSession() as other,
            pytest.raises(ValueError, match="`step_fn` may either have one `step_context`"),
        ):
            other.run_step_fn(lambda context: None)


@pytest.mark.virtual_gpus(1)
def test_master_is_the_session_target(dg_client) -> None:
    address = dg_client.scheduler.address
    with dg.Graph().as_default():
        with dg.device("/gpu:0"):
            w, _, _, train = _model()
        hooks = [StopAtStepHook(last_step=2)]
        with SingularMonitoredSession(hooks=hooks, master=address) as sess:
            session = sess.raw_session()
            assert session.client.scheduler.address == address
            assert any(d.device_type == "GPU" for d in session.list_devices())
            value = sess.run(w)
            while not sess.should_stop():
                sess.run(train)
    np.testing.assert_allclose(value, [1.0, -2.0])
