"""TensorFlow 1's ``QueueRunner``: threads that run a queue's enqueue ops over and over, for
:func:`~daskgraph.training.coordinator.start_queue_runners` to start from the graph's
``QUEUE_RUNNERS`` collection.

Each enqueue op gets a thread running it in a loop until the coordinator stops, or until the
queue is closed (``OutOfRangeError`` from an input that ran out, ``CancelledError`` from a
closed queue: a clean end, as TensorFlow's); the last thread to end closes the queue, so
that its consumers get ``OutOfRangeError`` once it is empty. Another error closes the queue
and is reported to the coordinator. When the coordinator stops, a thread closes the queue
cancelling pending enqueues, so that no runner stays blocked on a full queue.

>>> import daskgraph as dg
>>> from daskgraph.training.coordinator import Coordinator, start_queue_runners
>>> from daskgraph.data.queues import FIFOQueue
>>> with dg.Graph().as_default():
...     q = FIFOQueue(4, dg.float32, shapes=())
...     add_queue_runner(QueueRunner(q, [q.enqueue(1.5)]))
...     deq = q.dequeue()
...     with dg.Session() as sess:
...         coord = Coordinator()
...         threads = start_queue_runners(sess, coord)
...         values = [float(sess.run(deq)) for _ in range(3)]
...         coord.request_stop()
...         coord.join(threads)
>>> values
[1.5, 1.5, 1.5]
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from typing import Any

from daskgraph.errors import CancelledError, OutOfRangeError
from daskgraph.framework.graph import get_default_graph
from daskgraph.training.coordinator import QUEUE_RUNNERS, Coordinator

__all__ = ["QueueRunner", "add_queue_runner"]

logger = logging.getLogger(__name__)


class QueueRunner:
    """Runs ``enqueue_ops`` of ``queue`` in one thread each (TF1's ``tf.train.QueueRunner``).

    Parameters
    ----------
    queue
        The queue the ops fill.
    enqueue_ops
        The ops, one thread each.
    close_op, cancel_op
        The ops that close the queue when the runners end, and when the coordinator stops
        (default: ``queue.close()`` and ``queue.close(cancel_pending_enqueues=True)``).
    queue_closed_exception_types
        Errors that end a thread cleanly (default ``(OutOfRangeError, CancelledError)``).
    """

    def __init__(
        self,
        queue: Any = None,
        enqueue_ops: Sequence[Any] | None = None,
        close_op: Any = None,
        cancel_op: Any = None,
        queue_closed_exception_types: Sequence[type] | None = None,
        queue_runner_def: Any = None,
        import_scope: Any = None,
    ) -> None:
        if queue_runner_def is not None:
            raise ValueError("queue_runner_def is not supported: build the runner from its ops")
        if not enqueue_ops:
            raise ValueError("Must provide enqueue_ops.")
        self._queue = queue
        self._enqueue_ops = list(enqueue_ops)
        self._close_op = close_op if close_op is not None else queue.close()
        self._cancel_op = (
            cancel_op if cancel_op is not None else queue.close(cancel_pending_enqueues=True)
        )
        types = queue_closed_exception_types or (OutOfRangeError, CancelledError)
        self._queue_closed_exception_types = tuple(types)
        self._lock = threading.Lock()
        self._runs_per_session: dict[Any, int] = {}
        self._exceptions_raised: list[BaseException] = []

    @property
    def queue(self) -> Any:
        """The queue the runner fills."""
        return self._queue

    @property
    def enqueue_ops(self) -> list[Any]:
        """The enqueue ops, one thread each."""
        return list(self._enqueue_ops)

    @property
    def close_op(self) -> Any:
        """The op that closes the queue once every thread ended."""
        return self._close_op

    @property
    def cancel_op(self) -> Any:
        """The op that closes the queue, cancelling pending enqueues, on a stop."""
        return self._cancel_op

    @property
    def queue_closed_exception_types(self) -> tuple[type, ...]:
        """The errors that end a thread cleanly."""
        return self._queue_closed_exception_types

    @property
    def exceptions_raised(self) -> list[BaseException]:
        """The errors the threads raised (other than the clean ends)."""
        return list(self._exceptions_raised)

    @property
    def name(self) -> str:
        """The name of the queue."""
        return self._queue.name

    def _run(self, sess: Any, enqueue_op: Any, coord: Coordinator | None) -> None:
        """One thread's body: run ``enqueue_op`` until stopped or the queue is closed."""
        decremented = False
        try:
            while not (coord is not None and coord.should_stop()):
                try:
                    sess.run(enqueue_op)
                except self._queue_closed_exception_types:
                    with self._lock:
                        self._runs_per_session[sess] -= 1
                        decremented = True
                        if self._runs_per_session[sess] == 0:
                            self._close_quietly(sess, self._close_op)
                    return
        except Exception as exc:
            if coord is not None:
                coord.request_stop(exc)
            else:
                logger.error("Exception in QueueRunner: %s", exc)
                with self._lock:
                    self._exceptions_raised.append(exc)
                raise
        finally:
            if not decremented:
                with self._lock:
                    self._runs_per_session[sess] -= 1

    def _close_on_stop(self, sess: Any, coord: Coordinator) -> None:
        """Wait for the coordinator to stop, then cancel the queue's pending enqueues."""
        coord.wait_for_stop()
        self._close_quietly(sess, self._cancel_op)

    @staticmethod
    def _close_quietly(sess: Any, op: Any) -> None:
        try:
            sess.run(op)
        except Exception as exc:  # the session may be closing: nothing left to wake
            logger.debug("Ignored exception closing a queue: %s", exc)

    def create_threads(
        self, sess: Any, coord: Coordinator | None = None, daemon: bool = False, start: bool = False
    ) -> list[threading.Thread]:
        """The threads that run the enqueue ops in ``sess`` (plus, with ``coord``, one that
        closes the queue when it stops), started when ``start``; none while this runner's
        threads for ``sess`` still run."""
        with self._lock:
            if self._runs_per_session.get(sess, 0) > 0:
                return []
            self._runs_per_session[sess] = len(self._enqueue_ops)
            self._exceptions_raised = []
        threads = [
            threading.Thread(target=self._run, args=(sess, op, coord), daemon=daemon)
            for op in self._enqueue_ops
        ]
        if coord is not None:
            threads.append(
                threading.Thread(target=self._close_on_stop, args=(sess, coord), daemon=True)
            )
        for thread in threads:
            if coord is not None:
                coord.register_thread(thread)
            if start:
                thread.start()
        return threads


def add_queue_runner(qr: QueueRunner, collection: str = QUEUE_RUNNERS) -> None:
    """Add ``qr`` to the default graph's ``collection`` (``QUEUE_RUNNERS``)."""
    get_default_graph().add_to_collection(collection, qr)
