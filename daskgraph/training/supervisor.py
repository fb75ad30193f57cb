"""TensorFlow 1's ``tf.train.Supervisor``: a session made ready, with checkpoints and summaries
saved by background threads, and TF's ``basic_train_loop``.

A :class:`Supervisor` gathers the ops a training session needs (``init_op``, ``ready_op``,
``local_init_op``, ``summary_op``, a :class:`~daskgraph.training.saver.Saver`, the global step; each
made or taken from the graph's collections by default, as TensorFlow does) and finalizes the
graph. :meth:`~Supervisor.prepare_or_wait_for_session` makes a session on a target with a
:class:`~daskgraph.training.session_manager.SessionManager`: the chief restores the latest
checkpoint of
``logdir`` or runs the init op, then starts the standard services, threads of the
supervisor's :class:`~daskgraph.training.coordinator.Coordinator` that save a checkpoint every
``save_model_secs``, and every ``save_summaries_secs`` the summary op's value and the steps
per second, to ``logdir``; other tasks wait until the chief made the model ready.
:meth:`~Supervisor.managed_session` does the same as a context manager that stops the
services and closes the session when the block ends, raising again what went wrong in the
block or in a service (an ``OutOfRangeError`` is a normal end).

>>> import tempfile
>>> import daskgraph as dg
>>> logdir = tempfile.mkdtemp()
>>> def train(steps):
...     with dg.Graph().as_default():
...         step = dg.train.get_or_create_global_step()
...         bump = step.assign_add(1)
...         sv = Supervisor(logdir=logdir, save_model_secs=0, save_summaries_secs=0)
...         with sv.managed_session() as sess:
...             for _ in range(steps):
...                 sess.run(bump)
...             sv.saver.save(sess, sv.save_path, global_step=step)
...             return int(sess.run(step))
>>> train(3), train(2)  # the second supervisor restores the first one's checkpoint
(3, 5)
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
from collections.abc import Callable, Iterator
from typing import Any

from daskgraph.errors import AbortedError
from daskgraph.framework.graph import GLOBAL_STEP, Graph, get_default_graph
from daskgraph.ops.array import group
from daskgraph.ops.state import global_variables, global_variables_initializer
from daskgraph.ops.variable_status import (
    local_variables_initializer,
    report_uninitialized_variables,
)
from daskgraph.summary.summary_ops import merge_all
from daskgraph.summary.writer import FileWriter
from daskgraph.training.coordinator import QUEUE_RUNNERS, Coordinator, LooperThread
from daskgraph.training.global_step import global_step as global_step_value
from daskgraph.training.saver import Saver
from daskgraph.training.session_hooks import write_graph
from daskgraph.training.session_manager import (
    INIT_OP,
    LOCAL_INIT_OP,
    READY_FOR_LOCAL_INIT_OP,
    READY_OP,
    SAVERS,
    SUMMARY_OP,
    SessionManager,
)

__all__ = ["Supervisor", "basic_train_loop"]

logger = logging.getLogger("tensorflow")

_VARIABLE_OP_TYPES = ("Variable", "VariableV2")


class Supervisor:
    """Makes a ready session and runs the standard services (checkpoints, summaries, step
    rates) on a timer; TensorFlow 1's ``tf.train.Supervisor``.

    Each of ``ready_op``, ``init_op``, ``local_init_op``, ``summary_op``, ``saver`` and
    ``global_step`` left at :attr:`USE_DEFAULT` is the first of its graph collection, else
    made (and added to it) as in TensorFlow: every variable uninitialized, initialize the
    global variables, initialize the local variables, merge the summaries, a ``Saver`` of the
    global variables, the tensor ``global_step:0``. None leaves it out.

    Parameters
    ----------
    is_chief
        The chief initializes or restores the model and runs the standard services; others
        wait for it (their variables must have devices).
    logdir
        Where the chief restores from and saves ``checkpoint_basename`` checkpoints, summaries
        and the graph (``graph.pbtxt``); None: no services.
    save_summaries_secs, save_model_secs
        The services' periods (0 or None: that service does not run).
    """

    USE_DEFAULT = 0

    def __init__(
        self,
        graph: Graph | None = None,
        ready_op: Any = USE_DEFAULT,
        ready_for_local_init_op: Any = USE_DEFAULT,
        is_chief: bool = True,
        init_op: Any = USE_DEFAULT,
        init_feed_dict: Any = None,
        local_init_op: Any = USE_DEFAULT,
        logdir: str | None = None,
        summary_op: Any = USE_DEFAULT,
        saver: Any = USE_DEFAULT,
        global_step: Any = USE_DEFAULT,
        save_summaries_secs: float | None = 120,
        save_model_secs: float | None = 600,
        recovery_wait_secs: float = 30,
        stop_grace_secs: float = 120,
        checkpoint_basename: str = "model.ckpt",
        session_manager: SessionManager | None = None,
        summary_writer: Any = USE_DEFAULT,
        init_fn: Callable[[Any], None] | None = None,
        local_init_run_options: Any = None,
    ) -> None:
        graph = graph if graph is not None else get_default_graph()
        with graph.as_default():
            self._ready_op = _default(ready_op, READY_OP, report_uninitialized_variables)
            self._ready_for_local_init_op = _default(
                ready_for_local_init_op, READY_FOR_LOCAL_INIT_OP, lambda: None
            )
            self._init_op = _default(init_op, INIT_OP, global_variables_initializer)
            self._init_feed_dict = init_feed_dict
            self._local_init_op = _default(local_init_op, LOCAL_INIT_OP, _local_init)
            self._saver = _default(saver, SAVERS, _default_saver)
            self._summary_op = _default(summary_op, SUMMARY_OP, merge_all)
            self._global_step = _default(global_step, GLOBAL_STEP, _default_global_step)
            build = getattr(self._saver, "build", None)
            if callable(build):
                build()  # its restore ops, before the graph is finalized
        self._graph = graph
        self._is_chief = is_chief
        self._coord = Coordinator()
        self._recovery_wait_secs = recovery_wait_secs
        self._stop_grace_secs = stop_grace_secs
        self._init_fn = init_fn
        self._local_init_run_options = local_init_run_options
        self._logdir = logdir if is_chief else None
        self._save_summaries_secs = save_summaries_secs if is_chief else None
        self._save_model_secs = save_model_secs if is_chief else None
        self._save_path = os.path.join(logdir, checkpoint_basename) if is_chief and logdir else None
        self._summary_writer = None
        if is_chief:
            if summary_writer is Supervisor.USE_DEFAULT:
                self._summary_writer = FileWriter(logdir) if logdir else None
            else:
                self._summary_writer = summary_writer
        self._graph_added_to_summary = False
        self._session_manager = session_manager or SessionManager(
            local_init_op=self._local_init_op,
            ready_op=self._ready_op,
            ready_for_local_init_op=self._ready_for_local_init_op,
            graph=graph,
            recovery_wait_secs=recovery_wait_secs,
            local_init_run_options=local_init_run_options,
        )
        self._verify_setup()
        graph.finalize()

    def _verify_setup(self) -> None:
        if self._is_chief:
            return
        for op in self._graph.get_operations():
            if op.type in _VARIABLE_OP_TYPES and not op.device:
                raise ValueError(
                    f"When using replicas, all Variables must have their device set: {op}"
                )

    # -- what it holds ------------------------------------------------------------------------
    @property
    def is_chief(self) -> bool:
        """Whether this is the chief's supervisor."""
        return self._is_chief

    @property
    def session_manager(self) -> SessionManager:
        """The :class:`~daskgraph.training.session_manager.SessionManager` making the sessions."""
        return self._session_manager

    @property
    def coord(self) -> Coordinator:
        """The coordinator of the services' threads (and of the caller's)."""
        return self._coord

    @property
    def init_op(self) -> Any:
        """The op initializing the model when no checkpoint is restored."""
        return self._init_op

    @property
    def init_feed_dict(self) -> Any:
        """The feeds of ``init_op``."""
        return self._init_feed_dict

    @property
    def ready_op(self) -> Any:
        """The op naming the variables not yet initialized."""
        return self._ready_op

    @property
    def ready_for_local_init_op(self) -> Any:
        """The op saying whether ``local_init_op`` can run."""
        return self._ready_for_local_init_op

    @property
    def summary_writer(self) -> Any:
        """The chief's :class:`~daskgraph.summary.writer.FileWriter` (None elsewhere)."""
        return self._summary_writer

    @property
    def summary_op(self) -> Any:
        """The summary op the summary service runs."""
        return self._summary_op

    @property
    def save_summaries_secs(self) -> float | None:
        """The summary service's period."""
        return self._save_summaries_secs

    @property
    def global_step(self) -> Any:
        """The global step (None when the graph has none)."""
        return self._global_step

    @property
    def saver(self) -> Any:
        """The saver of checkpoints."""
        return self._saver

    @property
    def save_model_secs(self) -> float | None:
        """The checkpoint service's period."""
        return self._save_model_secs

    @property
    def save_path(self) -> str | None:
        """Where checkpoints are saved (``logdir/checkpoint_basename``)."""
        return self._save_path

    # -- sessions -----------------------------------------------------------------------------
    def prepare_or_wait_for_session(
        self,
        master: Any = "",
        config: Any = None,
        wait_for_checkpoint: bool = False,
        max_wait_secs: float = 7200,
        start_standard_services: bool = True,
    ) -> Any:
        """A ready session on ``master``: the chief's restored from ``logdir`` or initialized
        (then the graph is written and the standard services start), another task's once
        the chief made the model ready."""
        self._coord.clear_stop()
        if self._summary_writer:
            self._summary_writer.reopen()
        if self._is_chief:
            sess = self._session_manager.prepare_session(
                master,
                init_op=self._init_op,
                saver=self._saver,
                checkpoint_dir=self._logdir,
                wait_for_checkpoint=wait_for_checkpoint,
                max_wait_secs=max_wait_secs,
                config=config,
                init_feed_dict=self._init_feed_dict,
                init_fn=self._init_fn,
            )
            self._write_graph()
            if start_standard_services:
                logger.info("Starting standard services.")
                self.start_standard_services(sess)
        else:
            sess = self._session_manager.wait_for_session(
                master, config=config, max_wait_secs=max_wait_secs
            )
        if start_standard_services:
            logger.info("Starting queue runners.")
            self.start_queue_runners(sess)
        return sess

    @contextlib.contextmanager
    def managed_session(
        self,
        master: Any = "",
        config: Any = None,
        start_standard_services: bool = True,
        close_summary_writer: bool = True,
    ) -> Iterator[Any]:
        """A ready session (as :meth:`prepare_or_wait_for_session`) for a ``with`` block; at
        its end the services stop and the session closes. An error in the block or in a
        service is raised again then (``OutOfRangeError`` is a normal end)."""
        sess = None
        try:
            sess = self.prepare_or_wait_for_session(
                master=master, config=config, start_standard_services=start_standard_services
            )
            yield sess
        except Exception as exc:
            self.request_stop(exc)
        finally:
            try:
                self.stop(close_summary_writer=close_summary_writer)
            finally:
                if sess is not None:
                    with contextlib.suppress(Exception):
                        sess.close()

    def _write_graph(self) -> None:
        if self._logdir:
            write_graph(self._graph, self._logdir, "graph.pbtxt")
        if self._summary_writer and not self._graph_added_to_summary:
            self._summary_writer.add_graph(self._graph)
            self._graph_added_to_summary = True

    # -- services -----------------------------------------------------------------------------
    def start_standard_services(self, sess: Any) -> list[LooperThread] | None:
        """Start the chief's services on ``sess``: summaries and step rates every
        ``save_summaries_secs``, checkpoints every ``save_model_secs``; returns their threads
        (None without a ``logdir``)."""
        if not self._is_chief:
            raise RuntimeError(
                "Only chief supervisor can start standard services. Because only chief "
                "supervisors can write events."
            )
        if not self._logdir:
            logger.warning("Standard services need a 'logdir' passed to the SessionManager")
            return None
        if self._global_step is not None and self._summary_writer:
            step = global_step_value(sess, self._global_step)
            self._summary_writer.add_session_log(_session_log("START"), step)
        threads: list[LooperThread] = []
        if self._save_summaries_secs and self._summary_writer:
            if self._summary_op is not None:
                threads.append(_SummaryThread(self, sess))
            if self._global_step is not None:
                threads.append(_StepCounterThread(self, sess))
        if self._saver and self._save_model_secs:
            threads.append(_CheckpointThread(self, sess))
        for thread in threads:
            thread.start()
        return threads

    def start_queue_runners(self, sess: Any, queue_runners: Any = None) -> list[Any]:
        """Start the threads of ``queue_runners`` (default: the graph's ``queue_runners``
        collection; daskgraph makes none) with the supervisor's coordinator."""
        if queue_runners is None:
            queue_runners = self._graph.get_collection(QUEUE_RUNNERS)
        threads = []
        for runner in queue_runners:
            threads.extend(runner.create_threads(sess, coord=self._coord, daemon=True, start=True))
        return threads

    def loop(
        self,
        timer_interval_secs: float | None,
        target: Callable[..., Any],
        args: Any = None,
        kwargs: Any = None,
    ) -> LooperThread:
        """Start a thread calling ``target(*args, **kwargs)`` every ``timer_interval_secs``
        (back to back when None) until a stop is requested; :meth:`stop` joins it."""
        return LooperThread.loop(self._coord, timer_interval_secs, target, args, kwargs)

    def stop(
        self,
        threads: Any = None,
        close_summary_writer: bool = True,
        ignore_live_threads: bool = False,
    ) -> None:
        """Stop the services (and ``threads``) and join them, raising an error one reported;
        close the summary writer after a ``STOP`` session log. The session stays open."""
        self._coord.request_stop()
        try:
            self._coord.join(
                threads,
                stop_grace_period_secs=self._stop_grace_secs,
                ignore_live_threads=ignore_live_threads,
            )
        finally:
            if close_summary_writer and self._summary_writer:
                self._summary_writer.add_session_log(_session_log("STOP"))
                self._summary_writer.close()
                self._graph_added_to_summary = False

    def request_stop(self, ex: Any = None) -> None:
        """Ask the services and the training loop to stop; ``ex`` is raised by :meth:`stop`."""
        self._coord.request_stop(ex=ex)

    def should_stop(self) -> bool:
        """Whether a stop was requested."""
        return self._coord.should_stop()

    def stop_on_exception(self) -> Any:
        """A context manager requesting a stop when its block raises."""
        return self._coord.stop_on_exception()

    def wait_for_stop(self) -> None:
        """Wait until a stop is requested."""
        self._coord.wait_for_stop()

    def summary_computed(self, sess: Any, summary: Any, global_step: Any = None) -> None:
        """Write ``summary`` (a ``Summary`` or its bytes) at ``global_step`` (default: the
        global step's value now)."""
        if not self._summary_writer:
            raise RuntimeError("Writing a summary requires a summary writer.")
        if global_step is None and self._global_step is not None:
            global_step = global_step_value(sess, self._global_step)
        self._summary_writer.add_summary(summary, global_step)

    # TensorFlow's CamelCase aliases
    PrepareSession = prepare_or_wait_for_session
    StartQueueRunners = start_queue_runners
    StartStandardServices = start_standard_services
    Stop = stop
    RequestStop = request_stop
    Loop = loop
    ShouldStop = should_stop
    StopOnException = stop_on_exception
    WaitForStop = wait_for_stop
    SummaryComputed = summary_computed


def _default(value: Any, collection: str, make: Callable[[], Any]) -> Any:
    """``value``, or for ``USE_DEFAULT`` the first of ``collection``, else ``make()`` (added
    to the collection when not None)."""
    if value is not Supervisor.USE_DEFAULT:
        return value
    graph = get_default_graph()
    found = graph.get_collection(collection)
    if len(found) > 1:
        logger.info("Found %d %s operations. Returning the first one.", len(found), collection)
    if found:
        return found[0]
    made = make()
    if made is not None:
        graph.add_to_collection(collection, made)
    return made


def _local_init() -> Any:
    return group(local_variables_initializer())


def _default_saver() -> Saver | None:
    return Saver() if global_variables() else None


def _default_global_step() -> Any:
    try:
        step = get_default_graph().get_tensor_by_name("global_step:0")
    except KeyError:
        return None
    if step.dtype.name in ("int32", "int64"):
        return step
    logger.warning("Found 'global_step' is not an int type: %s", step.dtype)
    return None


def _session_log(status: str, **fields: Any) -> Any:
    from tensorboardX.proto.event_pb2 import SessionLog

    return SessionLog(status=getattr(SessionLog, status), **fields)


# -- the standard services ------------------------------------------------------------------------
class _SummaryThread(LooperThread):
    """Writes the summary op's value every ``save_summaries_secs``."""

    def __init__(self, sv: Supervisor, sess: Any) -> None:
        super().__init__(sv.coord, sv.save_summaries_secs)
        self._sv = sv
        self._sess = sess

    def run_loop(self) -> None:
        if self._sv.global_step is not None:
            summary, step = self._sess.run([self._sv.summary_op, self._sv.global_step])
        else:
            summary, step = self._sess.run(self._sv.summary_op), None
        if self._sv.summary_writer:
            logger.info("Recording summary at step %s.", step)
            self._sv.summary_writer.add_summary(summary, step)


class _StepCounterThread(LooperThread):
    """Writes the global steps per second (``<global step>/sec``) every
    ``save_summaries_secs``."""

    def __init__(self, sv: Supervisor, sess: Any) -> None:
        super().__init__(sv.coord, sv.save_summaries_secs)
        self._sv = sv
        self._sess = sess
        self._last_time = 0.0
        self._last_step = 0
        self._summary_tag = f"{sv.global_step.op.name}/sec"

    def start_loop(self) -> None:
        self._last_time = time.time()
        self._last_step = global_step_value(self._sess, self._sv.global_step)

    def run_loop(self) -> None:
        from tensorboardX.proto.summary_pb2 import Summary

        step = global_step_value(self._sess, self._sv.global_step)
        added, self._last_step = step - self._last_step, step
        now = time.time()
        elapsed, self._last_time = now - self._last_time, now
        rate = added / elapsed if elapsed > 0.0 else float("inf")
        if self._sv.summary_writer:
            value = Summary.Value(tag=self._summary_tag, simple_value=rate)
            self._sv.summary_writer.add_summary(Summary(value=[value]), step)
        logger.info("%s: %g", self._summary_tag, rate)


class _CheckpointThread(LooperThread):
    """Saves a checkpoint every ``save_model_secs`` (the first when it starts)."""

    def __init__(self, sv: Supervisor, sess: Any) -> None:
        super().__init__(sv.coord, sv.save_model_secs)
        self._sv = sv
        self._sess = sess

    def run_loop(self) -> None:
        logger.info("Saving checkpoint to path %s", self._sv.save_path)
        self._sv.saver.save(self._sess, self._sv.save_path, global_step=self._sv.global_step)
        if self._sv.summary_writer and self._sv.global_step is not None:
            step = global_step_value(self._sess, self._sv.global_step)
            log = _session_log("CHECKPOINT", checkpoint_path=self._sv.save_path)
            self._sv.summary_writer.add_session_log(log, step)


def basic_train_loop(
    supervisor: Supervisor,
    train_step_fn: Callable[..., Any],
    args: Any = None,
    kwargs: Any = None,
    master: str = "",
) -> None:
    """Call ``train_step_fn(session, *args, **kwargs)`` until ``supervisor`` should stop, in
    its managed session on ``master``; an ``AbortedError`` starts over with a new session
    (TensorFlow's ``basic_train_loop``)."""
    args = list(args or [])
    kwargs = dict(kwargs or {})
    should_retry = True
    while should_retry:
        try:
            should_retry = False
            with supervisor.managed_session(master) as sess:
                while not supervisor.should_stop():
                    train_step_fn(sess, *args, **kwargs)
        except AbortedError:
            should_retry = True  # a task of the cluster restarted
