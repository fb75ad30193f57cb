"""Session-run hooks: TensorFlow 1's ``tf.train.SessionRunHook`` and the standard hooks.

A :class:`SessionRunHook` watches a :class:`~daskgraph.training.monitored_session.MonitoredSession`:
``begin()`` before the session is made (the graph may still grow), ``after_create_session``,
``before_run`` (it may add fetches, feeds and options to the caller's run with
:class:`SessionRunArgs`), ``after_run`` (it gets its fetches' values in
:class:`SessionRunValues` and may :meth:`SessionRunContext.request_stop`) and ``end``. The
standard hooks are TensorFlow's (``basic_session_run_hooks.py``): stop at a step, fail on a NaN
loss, log tensors, save checkpoints (with :class:`~daskgraph.training.saver.Saver`) and summaries
(with
:class:`~daskgraph.summary.writer.FileWriter`), count steps per second. They log to Python's
``"tensorflow"`` logger, as TensorFlow's do (``tf.logging.set_verbosity(tf.logging.INFO)``
shows them).

>>> args = SessionRunArgs(fetches={"loss": "loss:0"})
>>> args.fetches, args.feed_dict, args.options
({'loss': 'loss:0'}, None, None)
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

from daskgraph.framework.graph import Graph, Tensor, get_default_graph
from daskgraph.summary.writer import FileWriter, FileWriterCache, graph_def_proto
from daskgraph.training.global_step import get_global_step

__all__ = [
    "CheckpointSaverHook",
    "CheckpointSaverListener",
    "FeedFnHook",
    "FinalOpsHook",
    "GlobalStepWaiterHook",
    "LoggingTensorHook",
    "NanLossDuringTrainingError",
    "NanTensorHook",
    "SecondOrStepTimer",
    "SessionRunArgs",
    "SessionRunContext",
    "SessionRunHook",
    "SessionRunValues",
    "StepCounterHook",
    "StopAtStepHook",
    "SummarySaverHook",
    "write_graph",
]

logger = logging.getLogger("tensorflow")  # TensorFlow's hooks log there too

SAVERS = "savers"


# -- the protocol ---------------------------------------------------------------------------------
class SessionRunHook:
    """Hook into a monitored session's life; every method does nothing by default."""

    def begin(self) -> None:
        """Called once before the session is made; the graph can still be changed."""

    def after_create_session(self, session: Any, coord: Any) -> None:
        """Called when the session is made (or remade after an error), variables ready."""

    def before_run(self, run_context: SessionRunContext) -> SessionRunArgs | None:
        """Called before each run: what to add to it (fetches, feeds, options), or None."""
        return None

    def after_run(self, run_context: SessionRunContext, run_values: SessionRunValues) -> None:
        """Called after each run with the values of this hook's fetches."""

    def end(self, session: Any) -> None:
        """Called when the monitored session closes without an error."""


class SessionRunArgs(NamedTuple):
    """What a hook adds to a run: ``fetches`` (any fetch structure), ``feed_dict``,
    ``options`` (a ``RunOptions``)."""

    fetches: Any
    feed_dict: Any = None
    options: Any = None


class SessionRunValues(NamedTuple):
    """What a hook gets after a run: its fetches' ``results``, the run's ``options`` and
    ``run_metadata``."""

    results: Any
    options: Any
    run_metadata: Any


class SessionRunContext:
    """The run under way, as hooks see it: the caller's ``original_args``, the ``session``
    (the plain session, to run more), and a way to ask the loop to stop."""

    def __init__(self, original_args: SessionRunArgs, session: Any) -> None:
        self._original_args = original_args
        self._session = session
        self._stop_requested = False

    @property
    def original_args(self) -> SessionRunArgs:
        """The caller's fetches and feeds."""
        return self._original_args

    @property
    def session(self) -> Any:
        """The session the monitored session runs in."""
        return self._session

    @property
    def stop_requested(self) -> bool:
        """Whether a hook asked to stop."""
        return self._stop_requested

    def request_stop(self) -> None:
        """Ask the monitored session to stop: its ``should_stop()`` becomes true."""
        self._stop_requested = True


# -- timers ---------------------------------------------------------------------------------------
class SecondOrStepTimer:
    """Triggers every ``every_secs`` seconds or every ``every_steps`` steps (one of them)."""

    def __init__(self, every_secs: float | None = None, every_steps: int | None = None) -> None:
        self.reset()
        self._every_secs = every_secs
        self._every_steps = every_steps
        if every_secs is None and every_steps is None:
            raise ValueError("Either every_secs or every_steps should be provided.")
        if every_secs is not None and every_steps is not None:
            raise ValueError("Can not provide both every_secs and every_steps.")

    def reset(self) -> None:
        """Forget the last trigger."""
        self._last_triggered_step: int | None = None
        self._last_triggered_time: float | None = None

    def should_trigger_for_step(self, step: int) -> bool:
        """Whether ``step`` is due: the first step, or enough seconds or steps since the last
        trigger (never the same step twice)."""
        if self._last_triggered_step is None:
            return True
        if self._last_triggered_step == step:
            return False
        if (
            self._every_secs is not None
            and time.time() >= self._last_triggered_time + self._every_secs
        ):
            return True
        return (
            self._every_steps is not None and step >= self._last_triggered_step + self._every_steps
        )

    def update_last_triggered_step(self, step: int) -> tuple[float | None, int | None]:
        """Record a trigger at ``step``; the seconds and steps since the previous one."""
        now = time.time()
        if self._last_triggered_time is None:
            elapsed: tuple[float | None, int | None] = (None, None)
        else:
            elapsed = (now - self._last_triggered_time, step - self._last_triggered_step)
        self._last_triggered_time = now
        self._last_triggered_step = step
        return elapsed

    def last_triggered_step(self) -> int | None:
        """The step of the last trigger, or None."""
        return self._last_triggered_step


class _NeverTriggerTimer(SecondOrStepTimer):
    def __init__(self) -> None:
        super().__init__(every_steps=1)

    def should_trigger_for_step(self, step: int) -> bool:
        return False


def _global_step(what: str) -> Any:
    step = get_global_step()
    if step is None:
        raise RuntimeError(f"Global step should be created to use {what}.")
    return step


# -- the standard hooks ---------------------------------------------------------------------------
class StopAtStepHook(SessionRunHook):
    """Asks to stop once the global step reaches ``last_step`` (or ``num_steps`` more steps
    than when the session was made)."""

    def __init__(self, num_steps: int | None = None, last_step: int | None = None) -> None:
        if num_steps is None and last_step is None:
            raise ValueError("One of num_steps or last_step must be specified.")
        if num_steps is not None and last_step is not None:
            raise ValueError("Only one of num_steps or last_step can be specified.")
        self._num_steps = num_steps
        self._last_step = last_step

    def begin(self) -> None:
        """Find the global step."""
        self._global_step_tensor = _global_step("StopAtStepHook")

    def after_create_session(self, session: Any, coord: Any) -> None:
        """Fix the last step from the current one when ``num_steps`` was given."""
        if self._last_step is None:
            self._last_step = int(session.run(self._global_step_tensor)) + self._num_steps

    def before_run(self, run_context: SessionRunContext) -> SessionRunArgs:
        """Fetch the global step with the run."""
        return SessionRunArgs(self._global_step_tensor)

    def after_run(self, run_context: SessionRunContext, run_values: SessionRunValues) -> None:
        """Stop once the step (read again after the run) reached the last step."""
        if run_values.results + 1 >= self._last_step:
            if run_context.session.run(self._global_step_tensor) >= self._last_step:
                run_context.request_stop()


class NanLossDuringTrainingError(RuntimeError):
    """The loss became NaN (raised by :class:`NanTensorHook`)."""

    def __str__(self) -> str:
        return "NaN loss during training."


class NanTensorHook(SessionRunHook):
    """Fetches ``loss_tensor`` with every run; on a NaN raises
    :class:`NanLossDuringTrainingError` (or, without ``fail_on_nan_loss``, asks to stop)."""

    def __init__(self, loss_tensor: Any, fail_on_nan_loss: bool = True) -> None:
        self._loss_tensor = loss_tensor
        self._fail_on_nan_loss = fail_on_nan_loss

    def before_run(self, run_context: SessionRunContext) -> SessionRunArgs:
        """Fetch the loss with the run."""
        return SessionRunArgs(self._loss_tensor)

    def after_run(self, run_context: SessionRunContext, run_values: SessionRunValues) -> None:
        """Check the loss."""
        if np.isnan(run_values.results):
            message = "Model diverged with loss = NaN."
            if self._fail_on_nan_loss:
                logger.error(message)
                raise NanLossDuringTrainingError
            logger.warning(message)
            run_context.request_stop()


class LoggingTensorHook(SessionRunHook):
    """Logs tensors' values every ``every_n_iter`` runs or ``every_n_secs`` seconds (and/or
    at the end): ``name = value, ... (0.123 sec)`` at INFO level.

    Parameters
    ----------
    tensors
        A dict of tag -> tensor (or tensor name), or a list of tensors or names.
    formatter
        A function of the dict of tag -> value returning the line to log.
    """

    def __init__(
        self,
        tensors: Any,
        every_n_iter: int | None = None,
        every_n_secs: float | None = None,
        at_end: bool = False,
        formatter: Callable[[dict], str] | None = None,
    ) -> None:
        only_at_end = at_end and every_n_iter is None and every_n_secs is None
        if not only_at_end and (every_n_iter is None) == (every_n_secs is None):
            raise ValueError(
                "either at_end and/or exactly one of every_n_iter and every_n_secs must be "
                "provided."
            )
        if every_n_iter is not None and every_n_iter <= 0:
            raise ValueError(f"invalid every_n_iter={every_n_iter}.")
        if isinstance(tensors, dict):
            self._tag_order = sorted(tensors)
        else:
            self._tag_order = list(tensors)
            tensors = {item: item for item in tensors}
        self._tensors = tensors
        self._formatter = formatter
        self._timer = (
            _NeverTriggerTimer()
            if only_at_end
            else SecondOrStepTimer(every_secs=every_n_secs, every_steps=every_n_iter)
        )
        self._log_at_end = at_end

    def begin(self) -> None:
        """Resolve the tensors in the default graph."""
        self._timer.reset()
        self._iter_count = 0
        graph = get_default_graph()
        self._current = {tag: _as_graph_element(t, graph) for tag, t in self._tensors.items()}

    def before_run(self, run_context: SessionRunContext) -> SessionRunArgs | None:
        """Fetch the tensors when a log is due."""
        self._should_trigger = self._timer.should_trigger_for_step(self._iter_count)
        return SessionRunArgs(self._current) if self._should_trigger else None

    def _log_tensors(self, values: dict) -> None:
        elapsed, _ = self._timer.update_last_triggered_step(self._iter_count)
        with np.printoptions(suppress=True):
            if self._formatter is not None:
                logger.info(self._formatter(values))
                return
            line = ", ".join(f"{tag} = {values[tag]}" for tag in self._tag_order)
            if elapsed is not None:
                logger.info("%s (%.3f sec)", line, elapsed)
            else:
                logger.info("%s", line)

    def after_run(self, run_context: SessionRunContext, run_values: SessionRunValues) -> None:
        """Log the values fetched."""
        if self._should_trigger:
            self._log_tensors(run_values.results)
        self._iter_count += 1

    def end(self, session: Any) -> None:
        """Log the values once more with ``at_end``."""
        if self._log_at_end:
            self._log_tensors(session.run(self._current))


def _as_graph_element(item: Any, graph: Graph) -> Any:
    """A tensor (or op) of ``graph``: ``item`` itself, or the one its name names."""
    if not isinstance(item, str):
        if getattr(item, "graph", None) is not graph:
            raise ValueError(
                f"Passed {item} should have graph attribute that is equal to current graph {graph}."
            )
        return item
    if ":" in item:
        return graph.get_tensor_by_name(item)
    op = graph.get_operation_by_name(item)
    if len(op.outputs) > 1:
        raise ValueError(
            f"Name {item} is ambiguous, as this `Operation` has multiple outputs (at least 2)."
        )
    return op.outputs[0] if op.outputs else op


class FeedFnHook(SessionRunHook):
    """Feeds ``feed_fn()`` (a feed dict) to every run."""

    def __init__(self, feed_fn: Callable[[], dict]) -> None:
        self.feed_fn = feed_fn

    def before_run(self, run_context: SessionRunContext) -> SessionRunArgs:
        """Add the feeds."""
        return SessionRunArgs(fetches=None, feed_dict=self.feed_fn())


class FinalOpsHook(SessionRunHook):
    """Runs ``final_ops`` when the session ends; their values are in ``final_ops_values``."""

    def __init__(self, final_ops: Any, final_ops_feed_dict: Any = None) -> None:
        self._final_ops = final_ops
        self._final_ops_feed_dict = final_ops_feed_dict
        self._final_ops_values = None

    @property
    def final_ops_values(self) -> Any:
        """The final ops' values (None before the end)."""
        return self._final_ops_values

    def end(self, session: Any) -> None:
        """Run the final ops."""
        if self._final_ops is not None:
            self._final_ops_values = session.run(self._final_ops, self._final_ops_feed_dict)


class GlobalStepWaiterHook(SessionRunHook):
    """Delays the first run until the global step reaches ``wait_until_step`` (a worker
    waiting for the chief to start training)."""

    def __init__(self, wait_until_step: int) -> None:
        self._wait_until_step = wait_until_step

    def begin(self) -> None:
        """Find the global step."""
        self._worker_is_started = False
        self._global_step_tensor = _global_step("_GlobalStepWaiterHook")

    def before_run(self, run_context: SessionRunContext) -> None:
        """Wait (polling every half second) until the step is reached."""
        if self._worker_is_started:
            return None
        if self._wait_until_step > 0:
            logger.info(
                "Waiting for global step %d before starting training.", self._wait_until_step
            )
            while run_context.session.run(self._global_step_tensor) < self._wait_until_step:
                time.sleep(0.5)
        self._worker_is_started = True
        return None


# -- writing: checkpoints, summaries, step rates --------------------------------------------------
def write_graph(graph_or_graph_def: Any, logdir: str, name: str, as_text: bool = True) -> str:
    """Write a graph (a daskgraph graph or a ``GraphDef`` protocol buffer) to
    ``logdir/name``, as text or binary; returns the path."""
    from google.protobuf import text_format

    proto = (
        graph_def_proto(graph_or_graph_def)
        if isinstance(graph_or_graph_def, Graph)
        else graph_or_graph_def
    )
    os.makedirs(logdir, exist_ok=True)
    path = os.path.join(logdir, name)
    if as_text:
        with open(path, "w", encoding="utf-8") as out:
            out.write(text_format.MessageToString(proto))
    else:
        with open(path, "wb") as out:
            out.write(proto.SerializeToString())
    return path


class CheckpointSaverListener:
    """Told about each checkpoint a :class:`CheckpointSaverHook` saves; ``after_save``
    returning True asks training to stop."""

    def begin(self) -> None:
        """Called in the hook's ``begin``."""

    def before_save(self, session: Any, global_step_value: int) -> None:
        """Called before each save."""

    def after_save(self, session: Any, global_step_value: int) -> bool | None:
        """Called after each save; True asks to stop."""
        return None

    def end(self, session: Any, global_step_value: int) -> None:
        """Called at the end, after the last save."""


class CheckpointSaverHook(SessionRunHook):
    """Saves a checkpoint ``checkpoint_dir/<checkpoint_basename>-<step>`` when the session is
    made, every ``save_secs`` seconds or ``save_steps`` steps, and at the end; writes the
    graph (``graph.pbtxt`` and to the directory's event file) and a ``CHECKPOINT`` session
    log per save.

    The saver is ``saver``, the ``scaffold``'s, or the one in the ``savers`` collection.
    """

    def __init__(
        self,
        checkpoint_dir: str,
        save_secs: float | None = None,
        save_steps: int | None = None,
        saver: Any = None,
        checkpoint_basename: str = "model.ckpt",
        scaffold: Any = None,
        listeners: list[CheckpointSaverListener] | None = None,
        save_graph_def: bool = True,
    ) -> None:
        if saver is not None and scaffold is not None:
            raise ValueError("You cannot provide both saver and scaffold.")
        self._saver = saver
        self._checkpoint_dir = checkpoint_dir
        self._save_path = os.path.join(checkpoint_dir, checkpoint_basename)
        self._scaffold = scaffold
        self._timer = SecondOrStepTimer(every_secs=save_secs, every_steps=save_steps)
        self._listeners = listeners or []
        self._save_graph_def = save_graph_def

    def begin(self) -> None:
        """Find the writer and the global step; tell the listeners."""
        self._summary_writer = FileWriterCache.get(self._checkpoint_dir)
        self._global_step_tensor = _global_step("CheckpointSaverHook")
        for listener in self._listeners:
            listener.begin()

    def after_create_session(self, session: Any, coord: Any) -> None:
        """Write the graph and save the first checkpoint."""
        step = int(session.run(self._global_step_tensor))
        graph = get_default_graph()
        if self._save_graph_def:
            write_graph(graph, self._checkpoint_dir, "graph.pbtxt")
        self._summary_writer.add_graph(graph)
        self._save(session, step)
        self._timer.update_last_triggered_step(step)

    def before_run(self, run_context: SessionRunContext) -> SessionRunArgs:
        """Fetch the global step with the run."""
        return SessionRunArgs(self._global_step_tensor)

    def after_run(self, run_context: SessionRunContext, run_values: SessionRunValues) -> None:
        """Save when due (the step read again after the run)."""
        if self._timer.should_trigger_for_step(int(run_values.results) + 1):
            step = int(run_context.session.run(self._global_step_tensor))
            if self._timer.should_trigger_for_step(step):
                self._timer.update_last_triggered_step(step)
                if self._save(run_context.session, step):
                    run_context.request_stop()

    def end(self, session: Any) -> None:
        """Save the last step (unless just saved); tell the listeners; flush the events."""
        last_step = int(session.run(self._global_step_tensor))
        if last_step != self._timer.last_triggered_step():
            self._save(session, last_step)
        for listener in self._listeners:
            listener.end(session, last_step)
        self._summary_writer.flush()

    def _save(self, session: Any, step: int) -> bool:
        """Save; whether a listener asked to stop."""
        from tensorboardX.proto.event_pb2 import SessionLog

        for listener in self._listeners:
            listener.before_save(session, step)
        logger.info("Saving checkpoints for %d into %s.", step, self._save_path)
        self._get_saver().save(session, self._save_path, global_step=step)
        log = SessionLog(status=SessionLog.CHECKPOINT, checkpoint_path=self._save_path)
        self._summary_writer.add_session_log(log, step)
        stop = False
        for listener in self._listeners:
            if listener.after_save(session, step):
                logger.info("A CheckpointSaverListener requested that training be stopped.")
                stop = True
        return stop

    def _get_saver(self) -> Any:
        if self._saver is not None:
            return self._saver
        if self._scaffold is not None:
            return self._scaffold.saver
        savers = get_default_graph().get_collection(SAVERS)
        if not savers:
            raise RuntimeError(
                f"No items in collection {SAVERS}. Please add a saver to the collection or "
                "provide a saver or scaffold."
            )
        if len(savers) > 1:
            raise RuntimeError(
                f"More than one item in collection {SAVERS}. Please indicate which one to use "
                "by passing it to the constructor."
            )
        self._saver = savers[0]
        return self._saver


class StepCounterHook(SessionRunHook):
    """Logs and writes (as the summary ``<global step name>/sec``) the steps per second,
    every ``every_n_steps`` steps or ``every_n_secs`` seconds."""

    def __init__(
        self,
        every_n_steps: int | None = 100,
        every_n_secs: float | None = None,
        output_dir: str | None = None,
        summary_writer: FileWriter | None = None,
    ) -> None:
        if (every_n_steps is None) == (every_n_secs is None):
            raise ValueError("exactly one of every_n_steps and every_n_secs should be provided.")
        self._timer = SecondOrStepTimer(every_steps=every_n_steps, every_secs=every_n_secs)
        self._summary_writer = summary_writer
        self._output_dir = output_dir
        self._last_global_step = None

    def begin(self) -> None:
        """Find the writer and the global step."""
        if self._summary_writer is None and self._output_dir:
            self._summary_writer = FileWriterCache.get(self._output_dir)
        self._global_step_tensor = _global_step("StepCounterHook")
        self._summary_tag = f"{self._global_step_tensor.op.name}/sec"

    def before_run(self, run_context: SessionRunContext) -> SessionRunArgs:
        """Fetch the global step with the run."""
        return SessionRunArgs(self._global_step_tensor)

    def after_run(self, run_context: SessionRunContext, run_values: SessionRunValues) -> None:
        """Log and write the rate when due."""
        stale = int(run_values.results)
        if self._timer.should_trigger_for_step(stale + 1):
            step = int(run_context.session.run(self._global_step_tensor))
            if self._timer.should_trigger_for_step(step):
                elapsed_time, elapsed_steps = self._timer.update_last_triggered_step(step)
                if elapsed_time is not None:
                    self._log_and_record(elapsed_steps, elapsed_time, step)
        if stale == self._last_global_step:
            logger.warning(
                "It seems that global step (tf.train.get_global_step) has not been increased. "
                "Current value (could be stable): %s vs previous value: %s.",
                stale,
                self._last_global_step,
            )
        self._last_global_step = stale

    def _log_and_record(self, elapsed_steps: int, elapsed_time: float, step: int) -> None:
        from tensorboardX.proto.summary_pb2 import Summary

        rate = elapsed_steps / elapsed_time if elapsed_time > 0 else float("inf")
        if self._summary_writer is not None:
            value = Summary.Value(tag=self._summary_tag, simple_value=rate)
            self._summary_writer.add_summary(Summary(value=[value]), step)
        logger.info("%s: %g", self._summary_tag, rate)


class SummarySaverHook(SessionRunHook):
    """Runs the summary op (``summary_op``, or the ``scaffold``'s) every ``save_steps`` steps
    or ``save_secs`` seconds and writes its value, with a ``START`` session log first."""

    def __init__(
        self,
        save_steps: int | None = None,
        save_secs: float | None = None,
        output_dir: str | None = None,
        summary_writer: FileWriter | None = None,
        scaffold: Any = None,
        summary_op: Any = None,
    ) -> None:
        if (scaffold is None) == (summary_op is None):
            raise ValueError("Exactly one of scaffold or summary_op must be provided.")
        self._summary_op = summary_op
        self._summary_writer = summary_writer
        self._output_dir = output_dir
        self._scaffold = scaffold
        self._timer = SecondOrStepTimer(every_secs=save_secs, every_steps=save_steps)

    def begin(self) -> None:
        """Find the writer and the global step."""
        if self._summary_writer is None and self._output_dir:
            self._summary_writer = FileWriterCache.get(self._output_dir)
        self._next_step = None
        self._global_step_tensor = _global_step("SummarySaverHook")

    def _summary_ops(self) -> list[Tensor] | None:
        op = self._summary_op if self._summary_op is not None else self._scaffold.summary_op
        if op is None:
            return None
        return op if isinstance(op, list) else [op]

    def before_run(self, run_context: SessionRunContext) -> SessionRunArgs:
        """Fetch the global step, and the summaries when due."""
        self._request_summary = self._next_step is None or self._timer.should_trigger_for_step(
            self._next_step
        )
        requests: dict[str, Any] = {"global_step": self._global_step_tensor}
        if self._request_summary and self._summary_ops() is not None:
            requests["summary"] = self._summary_ops()
        return SessionRunArgs(requests)

    def after_run(self, run_context: SessionRunContext, run_values: SessionRunValues) -> None:
        """Write the summaries fetched."""
        if not self._summary_writer:
            return
        step = int(run_values.results["global_step"]) + 1
        if self._next_step is None or self._request_summary:
            step = int(run_context.session.run(self._global_step_tensor))
        if self._next_step is None:
            from tensorboardX.proto.event_pb2 import SessionLog

            self._summary_writer.add_session_log(SessionLog(status=SessionLog.START), step)
        if self._request_summary:
            self._timer.update_last_triggered_step(step)
            for summary in run_values.results.get("summary", ()):
                self._summary_writer.add_summary(summary, step)
        self._next_step = step + 1

    def end(self, session: Any = None) -> None:
        """Flush the writer."""
        if self._summary_writer:
            self._summary_writer.flush()
