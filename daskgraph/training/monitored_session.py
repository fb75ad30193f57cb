"""Monitored sessions: TensorFlow 1's ``tf.train.MonitoredTrainingSession`` and its parts.

A :class:`MonitoredSession` makes its session with a session creator (the chief's
:class:`ChiefSessionCreator` restores the latest checkpoint or initializes the model; a
:class:`WorkerSessionCreator` waits for the chief), then runs each ``run(fetches,
feed_dict)`` with its hooks (:mod:`daskgraph.training.session_hooks`): their ``before_run`` requests
join the caller's run, their ``after_run`` see the results and may ask to stop, which
:meth:`~MonitoredSession.should_stop` then says. A
:class:`~daskgraph.training.coordinator.Coordinator`
is shared with the hooks; an ``AbortedError`` or ``UnavailableError`` (a lost worker) makes a
:class:`MonitoredSession` close and remake its session and run again, as TensorFlow's does.
Leaving the ``with`` block on ``OutOfRangeError`` (input exhausted) is a normal end.

:func:`MonitoredTrainingSession` adds TensorFlow's standard hooks on the chief: checkpoints
(:class:`~daskgraph.training.session_hooks.CheckpointSaverHook`), summaries and step rates in
``checkpoint_dir``.

>>> import daskgraph as dg
>>> from daskgraph.training.session_hooks import StopAtStepHook
>>> with dg.Graph().as_default():
...     step = dg.train.get_or_create_global_step()
...     train = step.assign_add(1)
...     with MonitoredTrainingSession(hooks=[StopAtStepHook(last_step=3)]) as sess:
...         while not sess.should_stop():
...             last = sess.run(train)
>>> int(last)
3
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable
from typing import Any

from daskgraph.errors import AbortedError, OutOfRangeError, UnavailableError
from daskgraph.framework.graph import get_default_graph
from daskgraph.runtime.client.session import RunMetadata, RunOptions
from daskgraph.training.coordinator import Coordinator, start_queue_runners
from daskgraph.training.session_hooks import (
    CheckpointSaverHook,
    SessionRunArgs,
    SessionRunContext,
    SessionRunHook,
    SessionRunValues,
    StepCounterHook,
    SummarySaverHook,
)
from daskgraph.training.session_manager import Scaffold, SessionManager

__all__ = [
    "ChiefSessionCreator",
    "MonitoredSession",
    "MonitoredTrainingSession",
    "SessionCreator",
    "SingularMonitoredSession",
    "StepContext",
    "WorkerSessionCreator",
]

logger = logging.getLogger("tensorflow")

_PREEMPTION_ERRORS = (AbortedError, UnavailableError)
USE_DEFAULT = object()


# -- session creators -----------------------------------------------------------------------------
class SessionCreator:
    """Makes the session a monitored session runs in."""

    def create_session(self) -> Any:
        """A new, ready session."""
        raise NotImplementedError(f"create_session is not implemented for {self}.")


class _ScaffoldedCreator(SessionCreator):
    def __init__(self, scaffold: Scaffold | None, master: Any, config: Any) -> None:
        self._scaffold = scaffold or Scaffold()
        self._master = master
        self._config = config
        self._session_manager: SessionManager | None = None

    def _manager(self) -> SessionManager:
        if self._session_manager is None:
            self._session_manager = SessionManager(
                local_init_op=self._scaffold.local_init_op,
                local_init_feed_dict=self._scaffold.local_init_feed_dict,
                ready_op=self._scaffold.ready_op,
                ready_for_local_init_op=self._scaffold.ready_for_local_init_op,
                graph=get_default_graph(),
            )
        return self._session_manager


class ChiefSessionCreator(_ScaffoldedCreator):
    """The chief's sessions: restore the latest checkpoint of ``checkpoint_dir`` (or
    ``checkpoint_filename_with_path``), else run the scaffold's init op.

    ``master`` is the session target: ``''`` (the embedded cluster), a scheduler address or
    a :class:`~daskgraph.cluster.server.Server`'s ``target``.
    """

    def __init__(
        self,
        scaffold: Scaffold | None = None,
        master: Any = "",
        config: Any = None,
        checkpoint_dir: str | None = None,
        checkpoint_filename_with_path: str | None = None,
    ) -> None:
        super().__init__(scaffold, master, config)
        self._checkpoint_dir = checkpoint_dir
        self._checkpoint_filename_with_path = checkpoint_filename_with_path

    def create_session(self) -> Any:
        """Finalize the scaffold (and the graph) and make a ready session."""
        self._scaffold.finalize()
        return self._manager().prepare_session(
            self._master,
            saver=self._scaffold.saver,
            checkpoint_dir=self._checkpoint_dir,
            checkpoint_filename_with_path=self._checkpoint_filename_with_path,
            config=self._config,
            init_op=self._scaffold.init_op,
            init_feed_dict=self._scaffold.init_feed_dict,
            init_fn=self._scaffold.init_fn,
        )


class WorkerSessionCreator(_ScaffoldedCreator):
    """Other workers' sessions: wait (up to ``max_wait_secs``) until the chief made the
    model ready."""

    def __init__(
        self,
        scaffold: Scaffold | None = None,
        master: Any = "",
        config: Any = None,
        max_wait_secs: float = 30 * 60,
    ) -> None:
        super().__init__(scaffold, master, config)
        self._max_wait_secs = max_wait_secs

    def create_session(self) -> Any:
        """Finalize the scaffold (and the graph) and wait for a ready session."""
        self._scaffold.finalize()
        return self._manager().wait_for_session(
            self._master, config=self._config, max_wait_secs=self._max_wait_secs
        )


# -- running with hooks ---------------------------------------------------------------------------
def _merged_options(options: Any, requests: list[Any]) -> Any:
    """The caller's options with the hooks' (the largest trace level and timeout)."""
    given = [o for o in [options, *requests] if o is not None]
    if not given:
        return None
    return RunOptions(
        trace_level=max(o.trace_level for o in given),
        timeout_in_ms=max(o.timeout_in_ms for o in given),
    )


def _hooked_run(
    sess: Any,
    hooks: list[SessionRunHook],
    fetches: Any,
    feed_dict: Any,
    options: Any,
    metadata: Any,
) -> tuple[Any, bool]:
    """One run with the hooks: their requests joined to the caller's; ``(the caller's
    results, whether a hook asked to stop)``."""
    context = SessionRunContext(SessionRunArgs(fetches, feed_dict), sess)
    all_fetches: dict[Any, Any] = {"caller": fetches}
    hook_feeds: dict[Any, Any] = {}
    hook_options = []
    for hook in hooks:
        request = hook.before_run(context)
        if request is None:
            continue
        if request.fetches is not None:
            all_fetches[hook] = request.fetches
        if request.feed_dict:
            _check_disjoint(hook_feeds, request.feed_dict, "Same tensor is fed by two hooks.")
            hook_feeds.update(request.feed_dict)
        hook_options.append(request.options)
    if hook_feeds and feed_dict:
        _check_disjoint(feed_dict, hook_feeds, "Same tensor is fed by a SessionRunHook and user.")
    feeds = {**hook_feeds, **(feed_dict or {})} or None
    options = _merged_options(options, hook_options)
    metadata = metadata if metadata is not None else RunMetadata()
    outputs = sess.run(all_fetches, feed_dict=feeds, options=options, run_metadata=metadata)
    for hook in hooks:
        results = outputs[hook] if hook in all_fetches else None
        hook.after_run(context, SessionRunValues(results, options, metadata))
    return outputs["caller"], context.stop_requested


def _check_disjoint(first: dict, second: dict, message: str) -> None:
    common = [k for k in second if k in first]
    if common:
        raise RuntimeError(f"{message} Conflict(s): {common}")


class StepContext:
    """What a ``run_step_fn`` step function gets: the plain ``session``, and
    :meth:`run_with_hooks` (the monitored session's ``run``)."""

    def __init__(self, session: Any, run_with_hooks_fn: Callable[..., Any]) -> None:
        self._session = session
        self._run_with_hooks_fn = run_with_hooks_fn

    @property
    def session(self) -> Any:
        """The session the hooks wrap (runs without the hooks)."""
        return self._session

    def run_with_hooks(self, *args: Any, **kwargs: Any) -> Any:
        """The monitored session's ``run``."""
        return self._run_with_hooks_fn(*args, **kwargs)

    def request_stop(self) -> None:
        """End the loop (raises ``StopIteration``, which the ``with`` block swallows)."""
        raise StopIteration("step_fn has requested the iterations to stop.")


class _MonitoredSession:
    """What :class:`MonitoredSession` and :class:`SingularMonitoredSession` share."""

    def __init__(
        self,
        session_creator: SessionCreator | None,
        hooks: list[SessionRunHook] | None,
        should_recover: bool,
        stop_grace_period_secs: float = 120,
    ) -> None:
        self._graph = get_default_graph()
        self._graph_was_finalized = self._graph.finalized
        self._hooks = list(hooks or [])
        for hook in self._hooks:
            hook.begin()
        self._creator = session_creator or ChiefSessionCreator()
        self._should_recover = should_recover
        self._stop_grace_period_secs = stop_grace_period_secs
        self._tf_sess: Any = None
        self._coord: Coordinator | None = None
        self._should_stop = False
        self._closed = False
        self._create()

    def _create(self) -> None:
        """Make the session (again, after a lost worker, when recovering) and tell the hooks."""
        while True:
            try:
                self._tf_sess = self._creator.create_session()
                break
            except _PREEMPTION_ERRORS as exc:
                if not self._should_recover:
                    raise
                logger.info("An error was raised while a session was being created: %s", exc)
        self._coord = Coordinator(clean_stop_exception_types=[])
        if self._graph.get_collection("queue_runners"):
            start_queue_runners(sess=self._tf_sess, coord=self._coord)
        for hook in self._hooks:
            hook.after_create_session(self._tf_sess, self._coord)
        self._should_stop = False

    @property
    def graph(self) -> Any:
        """The graph the session runs (None once closed)."""
        return None if self._tf_sess is None else self._tf_sess.graph

    def run(
        self, fetches: Any, feed_dict: Any = None, options: Any = None, run_metadata: Any = None
    ) -> Any:
        """Run ``fetches`` with the hooks; RuntimeError once a stop was requested."""
        if self._closed:
            raise RuntimeError("Session is already closed.")
        while True:
            if self.should_stop():
                raise RuntimeError("Run called even after should_stop requested.")
            try:
                results, stop = _hooked_run(
                    self._tf_sess, self._hooks, fetches, feed_dict, options, run_metadata
                )
            except _PREEMPTION_ERRORS as exc:
                if not self._should_recover:
                    raise
                logger.info("An error was raised; the session will be made again: %s", exc)
                self._close_session()
                self._create()
                continue
            except Exception:
                self._coord.raise_requested_exception()  # a thread's error comes first
                raise
            self._should_stop = self._should_stop or stop
            return results

    def run_step_fn(self, step_fn: Callable[[StepContext], Any]) -> Any:
        """Call ``step_fn(step_context)``: it may run the plain session
        (``step_context.session``) or run with the hooks (``step_context.run_with_hooks``),
        and end the loop with ``step_context.request_stop()``."""
        arguments = [
            p.name
            for p in inspect.signature(step_fn).parameters.values()
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
        ]
        if arguments not in (["step_context"], ["self", "step_context"]):
            raise ValueError(
                "`step_fn` may either have one `step_context` argument, or `self` and "
                f"`step_context` arguments if it's an instance method. Got {tuple(arguments)} "
                "instead."
            )
        return step_fn(StepContext(self._tf_sess, self.run))

    def should_stop(self) -> bool:
        """Whether a hook (or a thread through the coordinator) asked to stop, or the session
        is closed."""
        if self._closed or self._tf_sess is None:
            return True
        self._coord.raise_requested_exception()
        return self._should_stop or self._coord.should_stop()

    def _close_session(self) -> None:
        coord, sess = self._coord, self._tf_sess
        self._tf_sess = None
        try:
            if coord is not None:
                coord.request_stop()
                coord.join(
                    stop_grace_period_secs=self._stop_grace_period_secs, ignore_live_threads=True
                )
        finally:
            if sess is not None:
                try:
                    sess.close()
                except _PREEMPTION_ERRORS as exc:
                    logger.error("An error occurred when attempting to close the session: %s", exc)

    def close(self) -> None:
        """Tell the hooks the end (``end``), close the session and un-finalize the graph
        (when it was not finalized before)."""
        self._close_internal(None)

    def _close_internal(self, exception_type: Any) -> None:
        if self._closed:
            raise RuntimeError("Session is already closed.")
        try:
            if not exception_type:
                for hook in self._hooks:
                    hook.end(self._tf_sess)
        finally:
            self._closed = True
            try:
                self._close_session()
            finally:
                if not self._graph_was_finalized:
                    self._graph._finalized = False  # as TensorFlow's _unsafe_unfinalize

    def __enter__(self) -> Any:
        return self

    def __exit__(self, exception_type: Any, exception_value: Any, traceback: Any) -> bool:
        if exception_type in (OutOfRangeError, StopIteration):
            exception_type = None
        self._close_internal(exception_type)
        return exception_type is None


class MonitoredSession(_MonitoredSession):
    """A session that runs hooks, made by ``session_creator`` (default: a
    :class:`ChiefSessionCreator`), remade after an ``AbortedError``/``UnavailableError``."""

    def __init__(
        self,
        session_creator: SessionCreator | None = None,
        hooks: list[SessionRunHook] | None = None,
        stop_grace_period_secs: float = 120,
    ) -> None:
        super().__init__(session_creator, hooks, True, stop_grace_period_secs)


class SingularMonitoredSession(_MonitoredSession):
    """A chief's monitored session that is not remade after errors; :meth:`raw_session`
    gives the plain session."""

    def __init__(
        self,
        hooks: list[SessionRunHook] | None = None,
        scaffold: Scaffold | None = None,
        master: Any = "",
        config: Any = None,
        checkpoint_dir: str | None = None,
        stop_grace_period_secs: float = 120,
        checkpoint_filename_with_path: str | None = None,
    ) -> None:
        creator = ChiefSessionCreator(
            scaffold=scaffold,
            master=master,
            config=config,
            checkpoint_dir=checkpoint_dir,
            checkpoint_filename_with_path=checkpoint_filename_with_path,
        )
        super().__init__(creator, hooks, False, stop_grace_period_secs)

    def raw_session(self) -> Any:
        """The :class:`~daskgraph.runtime.client.session.Session` the hooks wrap."""
        return self._tf_sess


def _defaults(steps: Any, secs: Any, default_steps: Any, default_secs: Any) -> tuple[Any, Any]:
    """TensorFlow's USE_DEFAULT rule for a (steps, secs) pair."""
    if steps is USE_DEFAULT and secs is USE_DEFAULT:
        return default_steps, default_secs
    return (None if steps is USE_DEFAULT else steps), (None if secs is USE_DEFAULT else secs)


def MonitoredTrainingSession(  # TensorFlow's name
    master: Any = "",
    is_chief: bool = True,
    checkpoint_dir: str | None = None,
    scaffold: Scaffold | None = None,
    hooks: list[SessionRunHook] | None = None,
    chief_only_hooks: list[SessionRunHook] | None = None,
    save_checkpoint_secs: Any = USE_DEFAULT,
    save_summaries_steps: Any = USE_DEFAULT,
    save_summaries_secs: Any = USE_DEFAULT,
    config: Any = None,
    stop_grace_period_secs: float = 120,
    log_step_count_steps: int | None = 100,
    max_wait_secs: float = 7200,
    save_checkpoint_steps: Any = USE_DEFAULT,
    summary_dir: str | None = None,
    save_graph_def: bool = True,
) -> MonitoredSession:
    """A :class:`MonitoredSession` for training, with TensorFlow's standard hooks.

    On the chief (``is_chief``), sessions restore the latest checkpoint of
    ``checkpoint_dir`` or initialize the model, and, with a ``checkpoint_dir`` (or
    ``summary_dir``), hooks save checkpoints (every 600 seconds by default, or
    ``save_checkpoint_steps``), the summary op's value (every 100 steps by default) and
    the steps per second (every ``log_step_count_steps``); ``chief_only_hooks`` run there
    too. Other workers wait for the chief. ``master`` is the session target.
    """
    summaries_steps, summaries_secs = _defaults(
        save_summaries_steps, save_summaries_secs, 100, None
    )
    checkpoint_steps, checkpoint_secs = _defaults(
        save_checkpoint_steps, save_checkpoint_secs, None, 600
    )
    scaffold = scaffold or Scaffold()
    if not is_chief:
        creator = WorkerSessionCreator(scaffold, master, config, max_wait_secs=max_wait_secs)
        return MonitoredSession(creator, hooks or [], stop_grace_period_secs)
    all_hooks: list[SessionRunHook] = list(chief_only_hooks or [])
    creator = ChiefSessionCreator(scaffold, master, config, checkpoint_dir=checkpoint_dir)
    summary_dir = summary_dir or checkpoint_dir
    if summary_dir:
        if log_step_count_steps and log_step_count_steps > 0:
            all_hooks.append(
                StepCounterHook(every_n_steps=log_step_count_steps, output_dir=summary_dir)
            )
        if (summaries_steps and summaries_steps > 0) or (summaries_secs and summaries_secs > 0):
            all_hooks.append(
                SummarySaverHook(
                    scaffold=scaffold,
                    save_steps=summaries_steps,
                    save_secs=summaries_secs,
                    output_dir=summary_dir,
                )
            )
    if checkpoint_dir and (
        (checkpoint_secs and checkpoint_secs > 0) or (checkpoint_steps and checkpoint_steps > 0)
    ):
        all_hooks.append(
            CheckpointSaverHook(
                checkpoint_dir,
                save_steps=checkpoint_steps,
                save_secs=checkpoint_secs,
                scaffold=scaffold,
                save_graph_def=save_graph_def,
            )
        )
    all_hooks.extend(hooks or [])
    return MonitoredSession(creator, all_hooks, stop_grace_period_secs)
