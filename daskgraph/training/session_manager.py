"""Making a ready session: TensorFlow 1's ``tf.train.Scaffold`` and ``tf.train.SessionManager``.

A :class:`Scaffold` gathers what a training session needs besides the model: the ops that
initialize it (``init_op``, ``local_init_op``), the ops that say whether it is ready
(``ready_op``: the names of uninitialized variables), the summary op and the
:class:`~daskgraph.training.saver.Saver`. :meth:`Scaffold.finalize` makes the missing ones (reusing
those in the graph's collections, as TensorFlow does) and finalizes the graph.

A :class:`SessionManager` makes a :class:`~daskgraph.runtime.client.session.Session` on a target
(``''``:
the embedded cluster; a scheduler address or a ``Server``'s target) and readies it: the chief
restores the latest checkpoint of ``checkpoint_dir`` or runs the init op
(:meth:`~SessionManager.prepare_session`); other workers wait until the chief did
(:meth:`~SessionManager.wait_for_session`).

>>> import daskgraph as dg
>>> with dg.Graph().as_default():
...     w = dg.Variable(2.0, name="w")
...     scaffold = Scaffold().finalize()
...     sess = SessionManager().prepare_session("", init_op=scaffold.init_op)
...     float(sess.run(w)), dg.get_default_graph().finalized
...     sess.close()
(2.0, True)
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from daskgraph.errors import DeadlineExceededError, FailedPreconditionError
from daskgraph.framework.graph import Graph, get_default_graph
from daskgraph.ops.array import group
from daskgraph.ops.state import global_variables, global_variables_initializer
from daskgraph.ops.variable_status import (
    local_variables_initializer,
    report_uninitialized_variables,
)
from daskgraph.runtime.client.session import Session
from daskgraph.summary.summary_ops import merge_all
from daskgraph.training.saver import Saver, get_checkpoint_state

__all__ = ["Scaffold", "SessionManager"]

logger = logging.getLogger("tensorflow")

INIT_OP = "init_op"
LOCAL_INIT_OP = "local_init_op"
READY_OP = "ready_op"
READY_FOR_LOCAL_INIT_OP = "ready_for_local_init_op"
SUMMARY_OP = "summary_op"
SAVERS = "savers"


class Scaffold:
    """The ops and objects a monitored training session needs besides the model.

    Every argument left None is made by :meth:`finalize`: ``init_op`` initializes the global
    variables, ``ready_op`` reports uninitialized variables, ``local_init_op`` initializes
    the local variables, ``summary_op`` merges the summaries, ``saver`` saves every
    variable. ``init_fn(scaffold, session)`` runs after ``init_op``. ``copy_from_scaffold``
    gives the defaults of the arguments not given.
    """

    def __init__(
        self,
        init_op: Any = None,
        init_feed_dict: Any = None,
        init_fn: Callable[[Scaffold, Any], None] | None = None,
        ready_op: Any = None,
        ready_for_local_init_op: Any = None,
        local_init_op: Any = None,
        summary_op: Any = None,
        saver: Any = None,
        copy_from_scaffold: Scaffold | None = None,
        local_init_feed_dict: Any = None,
    ) -> None:
        if copy_from_scaffold is not None:
            if not isinstance(copy_from_scaffold, Scaffold):
                raise TypeError("copy_from_scaffold is not a Scaffold instance.")
            other = copy_from_scaffold
            init_op = _first(init_op, other.init_op)
            init_feed_dict = _first(init_feed_dict, other.init_feed_dict)
            init_fn = _first(init_fn, other._user_init_fn)
            ready_op = _first(ready_op, other.ready_op)
            ready_for_local_init_op = _first(ready_for_local_init_op, other.ready_for_local_init_op)
            local_init_op = _first(local_init_op, other.local_init_op)
            local_init_feed_dict = _first(local_init_feed_dict, other.local_init_feed_dict)
            summary_op = _first(summary_op, other.summary_op)
            saver = _first(saver, other.saver)
        self._user_init_fn = init_fn
        self._init_fn = (lambda sess: init_fn(self, sess)) if init_fn else None
        self._init_op = init_op
        self._init_feed_dict = init_feed_dict
        self._ready_op = ready_op
        self._ready_for_local_init_op = ready_for_local_init_op
        self._local_init_op = local_init_op
        self._local_init_feed_dict = local_init_feed_dict
        self._summary_op = summary_op
        self._saver = saver

    def finalize(self) -> Scaffold:
        """Make the missing ops and the saver, then finalize the default graph."""
        if self._init_op is None:
            self._init_op = self.get_or_default("init_op", INIT_OP, _default_init_op)
        if self._ready_op is None:
            self._ready_op = self.get_or_default(
                "ready_op", READY_OP, report_uninitialized_variables
            )
        if self._ready_for_local_init_op is None:
            self._ready_for_local_init_op = self.get_or_default(
                "ready_for_local_init_op", READY_FOR_LOCAL_INIT_OP, _default_ready_for_local_init
            )
        if self._local_init_op is None:
            self._local_init_op = self.get_or_default(
                "local_init_op", LOCAL_INIT_OP, Scaffold.default_local_init_op
            )
        if self._summary_op is None:
            self._summary_op = self.get_or_default("summary_op", SUMMARY_OP, merge_all)
        if self._saver is None:
            self._saver = _saver_or_default()
        build = getattr(self._saver, "build", None)
        if callable(build):
            build()
        get_default_graph().finalize()
        logger.info("Graph was finalized.")
        return self

    @property
    def init_fn(self) -> Callable[[Any], None] | None:
        """``init_fn`` bound to this scaffold: a function of the session."""
        return self._init_fn

    @property
    def init_op(self) -> Any:
        """The op initializing the model (when no checkpoint is restored)."""
        return self._init_op

    @property
    def init_feed_dict(self) -> Any:
        """The feeds of ``init_op``."""
        return self._init_feed_dict

    @property
    def ready_op(self) -> Any:
        """The op naming the variables not yet initialized (empty: ready)."""
        return self._ready_op

    @property
    def ready_for_local_init_op(self) -> Any:
        """The op naming the global variables not yet initialized."""
        return self._ready_for_local_init_op

    @property
    def local_init_op(self) -> Any:
        """The op initializing the local variables."""
        return self._local_init_op

    @property
    def local_init_feed_dict(self) -> Any:
        """The feeds of ``local_init_op``."""
        return self._local_init_feed_dict

    @property
    def summary_op(self) -> Any:
        """The merged summaries (None when the graph has none)."""
        return self._summary_op

    @property
    def saver(self) -> Any:
        """The saver of checkpoints."""
        return self._saver

    @staticmethod
    def get_or_default(arg_name: str, collection_key: str, default_constructor: Callable) -> Any:
        """The one item of the collection ``collection_key``, else a new one from
        ``default_constructor`` (added to the collection)."""
        graph = get_default_graph()
        elements = graph.get_collection(collection_key)
        if elements:
            if len(elements) > 1:
                raise RuntimeError(
                    f'More than one item in the collection "{collection_key}". Please indicate '
                    f"which one to use by passing it to the tf.Scaffold constructor as:  "
                    f"tf.Scaffold({arg_name}=item to use)"
                )
            return elements[0]
        made = default_constructor()
        if made is not None:
            graph.add_to_collection(collection_key, made)
        return made

    @staticmethod
    def default_local_init_op() -> Any:
        """The default ``local_init_op``: initialize the local variables."""
        return group(local_variables_initializer(), name="group_deps")


def _first(value: Any, default: Any) -> Any:
    return value if value is not None else default


def _default_init_op() -> Any:
    return group(global_variables_initializer(), name="group_deps")


def _default_ready_for_local_init() -> Any:
    return report_uninitialized_variables(global_variables())


def _saver_or_default() -> Saver:
    graph = get_default_graph()
    savers = graph.get_collection(SAVERS)
    if savers:
        if len(savers) > 1:
            raise RuntimeError(
                f"More than one item in collection {SAVERS}. Please indicate which one to use "
                "by passing it to the constructor."
            )
        return savers[0]
    saver = Saver(sharded=True, allow_empty=True)
    graph.add_to_collection(SAVERS, saver)
    return saver


class SessionManager:
    """Makes sessions whose model is ready: restored, initialized, or initialized by another
    task (the chief).

    Parameters
    ----------
    local_init_op, ready_op, ready_for_local_init_op
        As :class:`Scaffold`'s; None skips that step.
    graph
        The graph of the sessions (default: the default graph).
    recovery_wait_secs
        How long to wait between checks while waiting for a checkpoint or the chief.
    """

    def __init__(
        self,
        local_init_op: Any = None,
        ready_op: Any = None,
        ready_for_local_init_op: Any = None,
        graph: Graph | None = None,
        recovery_wait_secs: float = 30,
        local_init_run_options: Any = None,
        local_init_feed_dict: Any = None,
    ) -> None:
        if ready_for_local_init_op is not None and local_init_op is None:
            raise ValueError(
                "If you pass a ready_for_local_init_op you must also pass a local_init_op , "
                f"ready_for_local_init_op [{ready_for_local_init_op}]"
            )
        self._local_init_op = local_init_op
        self._ready_op = ready_op
        self._ready_for_local_init_op = ready_for_local_init_op
        self._graph = graph if graph is not None else get_default_graph()
        self._recovery_wait_secs = recovery_wait_secs
        self._local_init_run_options = local_init_run_options
        self._local_init_feed_dict = local_init_feed_dict

    def _session(self, master: Any, config: Any) -> Session:
        return Session(master or None, graph=self._graph, config=config)

    def _restore_checkpoint(
        self,
        master: Any,
        saver: Any,
        checkpoint_dir: str | None,
        checkpoint_filename_with_path: str | None,
        wait_for_checkpoint: bool,
        max_wait_secs: float,
        config: Any,
    ) -> tuple[Session, bool]:
        if checkpoint_dir and checkpoint_filename_with_path:
            raise ValueError(
                "Can not provide both checkpoint_dir and checkpoint_filename_with_path."
            )
        sess = self._session(master, config)
        if not saver or not (checkpoint_dir or checkpoint_filename_with_path):
            return sess, False
        if checkpoint_filename_with_path:
            saver.restore(sess, checkpoint_filename_with_path)
            return sess, True
        waited = 0.0
        state = get_checkpoint_state(checkpoint_dir)
        while state is None or not state.model_checkpoint_path:
            if not wait_for_checkpoint or waited >= max_wait_secs:
                return sess, False
            logger.info("Waiting for checkpoint to be available.")
            time.sleep(self._recovery_wait_secs)
            waited += self._recovery_wait_secs
            state = get_checkpoint_state(checkpoint_dir)
        saver.restore(sess, state.model_checkpoint_path)
        saver.recover_last_checkpoints(state.all_model_checkpoint_paths)
        return sess, True

    def prepare_session(
        self,
        master: Any,
        init_op: Any = None,
        saver: Any = None,
        checkpoint_dir: str | None = None,
        checkpoint_filename_with_path: str | None = None,
        wait_for_checkpoint: bool = False,
        max_wait_secs: float = 7200,
        config: Any = None,
        init_feed_dict: Any = None,
        init_fn: Callable[[Any], None] | None = None,
    ) -> Session:
        """A session whose model is ready: restored from the latest checkpoint of
        ``checkpoint_dir`` (or ``checkpoint_filename_with_path``), else initialized by
        ``init_op`` and ``init_fn``; then ``local_init_op``. RuntimeError when the model is
        still not ready."""
        sess, restored = self._restore_checkpoint(
            master,
            saver,
            checkpoint_dir,
            checkpoint_filename_with_path,
            wait_for_checkpoint,
            max_wait_secs,
            config,
        )
        if not restored:
            if init_op is None and not init_fn and self._local_init_op is None:
                raise RuntimeError(
                    "Model is not initialized and no init_op or init_fn or local_init_op was given"
                )
            if init_op is not None:
                sess.run(init_op, feed_dict=init_feed_dict)
            if init_fn:
                init_fn(sess)
        ok, message = self._try_run_local_init_op(sess)
        if not ok:
            raise RuntimeError(
                "Init operations did not make model ready for local_init.  Init op: "
                f"{_name(init_op)}, init fn: {init_fn}, error: {message}"
            )
        ready, message = self._model_ready(sess)
        if not ready:
            raise RuntimeError(
                f"Init operations did not make model ready.  Init op: {_name(init_op)}, init "
                f"fn: {init_fn}, local_init_op: {self._local_init_op}, error: {message}"
            )
        return sess

    def recover_session(
        self,
        master: Any,
        saver: Any = None,
        checkpoint_dir: str | None = None,
        checkpoint_filename_with_path: str | None = None,
        wait_for_checkpoint: bool = False,
        max_wait_secs: float = 7200,
        config: Any = None,
    ) -> tuple[Session, bool]:
        """A session restored from a checkpoint when there is one: ``(session, whether it
        was restored and is ready)``."""
        sess, restored = self._restore_checkpoint(
            master,
            saver,
            checkpoint_dir,
            checkpoint_filename_with_path,
            wait_for_checkpoint,
            max_wait_secs,
            config,
        )
        ok, message = self._try_run_local_init_op(sess)
        if not restored:
            return sess, False
        if not ok:
            logger.info("Restoring model did not make model ready for local init: %s", message)
            return sess, False
        ready, message = self._model_ready(sess)
        if not ready:
            logger.info("Restoring model did not make model ready: %s", message)
            return sess, False
        return sess, True

    def wait_for_session(
        self, master: Any, config: Any = None, max_wait_secs: float | None = float("inf")
    ) -> Session:
        """A session once another task (the chief) made the model ready; waits
        ``recovery_wait_secs`` between tries, DeadlineExceededError after ``max_wait_secs``."""
        deadline = time.time() + (float("inf") if max_wait_secs is None else max_wait_secs)
        while True:
            sess = self._session(master, config)
            ok, local_message = self._try_run_local_init_op(sess)
            message = None
            if ok:
                ready, message = self._model_ready(sess)
                if ready:
                    return sess
            sess.close()
            if deadline - time.time() - self._recovery_wait_secs < 0:
                raise DeadlineExceededError(
                    f"Session was not ready after waiting {max_wait_secs} secs.", op=None
                )
            logger.info(
                "Waiting for model to be ready.  Ready_for_local_init_op:  %s, ready: %s",
                local_message,
                message,
            )
            time.sleep(self._recovery_wait_secs)

    def _model_ready(self, sess: Session) -> tuple[bool, str | None]:
        return _ready(self._ready_op, sess)

    def _try_run_local_init_op(self, sess: Session) -> tuple[bool, str | None]:
        if self._local_init_op is None:
            return True, None
        ready, message = _ready(self._ready_for_local_init_op, sess)
        if not ready:
            return False, message
        sess.run(self._local_init_op, feed_dict=self._local_init_feed_dict)
        return True, None


def _ready(op: Any, sess: Session) -> tuple[bool, str | None]:
    """Whether ``op`` (a report of uninitialized variables) reports none, and which."""
    if op is None:
        return True, None
    try:
        value = sess.run(op)
    except FailedPreconditionError as exc:
        if "uninitialized" not in str(exc):
            raise
        return False, str(exc)
    if value is None or getattr(value, "size", 0) == 0:
        return True, None
    names = ", ".join(v.decode("utf-8") if isinstance(v, bytes) else str(v) for v in value)
    return False, f"Variables not initialized: {names}"


def _name(op: Any) -> str:
    return "None" if op is None else getattr(op, "name", f"<no name for {type(op)}>")
