"""Coordinating threads: ``tf.train.Coordinator``, ``LooperThread`` and ``start_queue_runners``.

A :class:`Coordinator` lets threads that work for one training loop stop together: any of them
(or the main thread) calls :meth:`~Coordinator.request_stop`, possibly with the exception that
made it stop, all of them poll :meth:`~Coordinator.should_stop`, and
:meth:`~Coordinator.join` waits for them and re-raises the first exception reported. It is
TensorFlow 1's class (``coordinator.py``), plain threading; ``OutOfRangeError`` (an input
exhausted) counts as a clean stop. daskgraph has no queue runners, so
:func:`start_queue_runners` starts none unless the graph's ``QUEUE_RUNNERS`` collection holds
objects with TensorFlow's ``create_threads``.

>>> import threading
>>> coord = Coordinator()
>>> def work():
...     with coord.stop_on_exception():
...         raise ValueError("bad input")
>>> thread = threading.Thread(target=work)
>>> thread.start()
>>> coord.join([thread])
Traceback (most recent call last):
...
ValueError: bad input
"""

from __future__ import annotations

import contextlib
import logging
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from daskgraph.errors import OutOfRangeError
from daskgraph.framework.default_session import current

__all__ = ["Coordinator", "LooperThread", "start_queue_runners"]

logger = logging.getLogger(__name__)

QUEUE_RUNNERS = "queue_runners"


class Coordinator:
    """A coordinator for threads: stop requests, the first error, and joining.

    Parameters
    ----------
    clean_stop_exception_types
        Exception types that stop the threads without being an error
        (default: ``(OutOfRangeError,)``).
    """

    def __init__(self, clean_stop_exception_types: Iterable[type] | None = None) -> None:
        if clean_stop_exception_types is None:
            clean_stop_exception_types = (OutOfRangeError,)
        self._clean_stop_exception_types = tuple(clean_stop_exception_types)
        self._lock = threading.Lock()
        self._stop_event = threading.Event()
        self._exc_info_to_raise: tuple | None = None
        self._joined = False
        self._registered_threads: set[threading.Thread] = set()

    def _filter_exception(self, ex: Any) -> Any:
        instance = ex[1] if isinstance(ex, tuple) else ex
        return None if isinstance(instance, self._clean_stop_exception_types) else ex

    def request_stop(self, ex: Any = None) -> None:
        """Ask the threads to stop; ``ex`` (an exception or a ``sys.exc_info()`` triple) is
        recorded when it is the first error, and raised at once after :meth:`join`."""
        with self._lock:
            ex = self._filter_exception(ex)
            if self._joined and ex is not None:
                raise ex[1] if isinstance(ex, tuple) else sys.exc_info()[1] or ex
            if self._stop_event.is_set():
                return
            if ex is not None and self._exc_info_to_raise is None:
                self._exc_info_to_raise = _exc_info(ex)
            self._stop_event.set()

    def clear_stop(self) -> None:
        """Forget the stop request and the error, so the threads can be started again."""
        with self._lock:
            self._joined = False
            self._exc_info_to_raise = None
            self._stop_event.clear()

    def should_stop(self) -> bool:
        """Whether a stop was requested."""
        return self._stop_event.is_set()

    @contextlib.contextmanager
    def stop_on_exception(self) -> Iterator[None]:
        """A block whose exception (any: this is a thread's body) requests a stop with it
        and is swallowed."""
        try:
            yield
        except BaseException:
            self.request_stop(ex=sys.exc_info())

    def wait_for_stop(self, timeout: float | None = None) -> bool:
        """Wait until a stop is requested (or ``timeout`` seconds); whether it was."""
        return self._stop_event.wait(timeout)

    def register_thread(self, thread: threading.Thread) -> None:
        """Have :meth:`join` wait for ``thread`` too."""
        with self._lock:
            self._registered_threads.add(thread)

    def join(
        self,
        threads: Iterable[threading.Thread] | None = None,
        stop_grace_period_secs: float = 120,
        ignore_live_threads: bool = False,
    ) -> None:
        """Wait until a stop is requested or every thread ended, then give the threads
        ``stop_grace_period_secs`` to end; re-raise the first error reported, else raise
        ``RuntimeError`` naming threads still running (unless ``ignore_live_threads``)."""
        with self._lock:
            threads = list(self._registered_threads.union(threads or ()))
        while any(t.is_alive() for t in threads) and not self.wait_for_stop(1.0):
            pass
        wait = 0.001
        while any(t.is_alive() for t in threads) and stop_grace_period_secs >= 0.0:
            time.sleep(wait)
            stop_grace_period_secs -= wait
            wait = max(min(2 * wait, stop_grace_period_secs), 0.001)
        stragglers = [t.name for t in threads if t.is_alive()]
        with self._lock:
            self._joined = True
            self._registered_threads = set()
            if self._exc_info_to_raise:
                raise self._exc_info_to_raise[1]
            if stragglers and not ignore_live_threads:
                raise RuntimeError(
                    f"Coordinator stopped with threads still running: {' '.join(stragglers)}"
                )
            if stragglers:
                logger.info("Coordinator stopped with threads still running: %s", stragglers)

    @property
    def joined(self) -> bool:
        """Whether :meth:`join` returned (or raised)."""
        return self._joined

    def raise_requested_exception(self) -> None:
        """Raise the error a thread reported, if any."""
        with self._lock:
            if self._exc_info_to_raise:
                raise self._exc_info_to_raise[1]


def _exc_info(ex: Any) -> tuple:
    """``ex`` as a ``sys.exc_info()`` triple (an exception being handled, or ``ex`` itself)."""
    if isinstance(ex, tuple):
        logger.info("Error reported to Coordinator: %s", ex[1], exc_info=ex)
        info = ex
    else:
        logger.info("Error reported to Coordinator: %s, %s", type(ex), ex)
        info = sys.exc_info()
        if info[1] is None and isinstance(ex, BaseException):
            info = (type(ex), ex, ex.__traceback__)
    if len(info) != 3 or not info[0] or not info[1]:
        error = ValueError(
            f"ex must be a tuple or sys.exc_info must return the current exception: {info}"
        )
        info = (ValueError, error, None)
    return info


class LooperThread(threading.Thread):
    """A daemon thread that calls ``target`` in a loop (every ``timer_interval_secs``, or
    back to back when None) until the coordinator stops; registered with it.

    Subclasses may override :meth:`start_loop`, :meth:`run_loop` and :meth:`stop_loop`.
    """

    def __init__(
        self,
        coord: Coordinator,
        timer_interval_secs: float | None,
        target: Callable[..., Any] | None = None,
        args: Iterable[Any] | None = None,
        kwargs: dict[str, Any] | None = None,
    ) -> None:
        if not isinstance(coord, Coordinator):
            raise ValueError(f"'coord' argument must be a Coordinator: {coord}")
        super().__init__()
        self.daemon = True
        self._coord = coord
        self._timer_interval_secs = timer_interval_secs
        self._loop_target = target
        if target is None and (args or kwargs):
            raise ValueError("'args' and 'kwargs' argument require that you also pass 'target'")
        self._loop_args = tuple(args or ())
        self._loop_kwargs = dict(kwargs or {})
        coord.register_thread(self)

    @staticmethod
    def loop(
        coord: Coordinator,
        timer_interval_secs: float | None,
        target: Callable[..., Any],
        args: Iterable[Any] | None = None,
        kwargs: dict[str, Any] | None = None,
    ) -> LooperThread:
        """Start a :class:`LooperThread` calling ``target``; returns it."""
        looper = LooperThread(coord, timer_interval_secs, target, args, kwargs)
        looper.start()
        return looper

    def run(self) -> None:
        """The thread's body: ``start_loop``, ``run_loop`` until stopped, ``stop_loop``."""
        with self._coord.stop_on_exception():
            self.start_loop()
            if self._timer_interval_secs is None:
                while not self._coord.should_stop():
                    self.run_loop()
            else:
                next_time = time.time()
                while not self._coord.wait_for_stop(next_time - time.time()):
                    next_time += self._timer_interval_secs
                    self.run_loop()
            self.stop_loop()

    def start_loop(self) -> None:
        """Called once when the thread starts."""

    def stop_loop(self) -> None:
        """Called once when the loop ends."""

    def run_loop(self) -> None:
        """One turn of the loop: calls ``target``."""
        if self._loop_target is not None:
            self._loop_target(*self._loop_args, **self._loop_kwargs)


def start_queue_runners(
    sess: Any = None,
    coord: Coordinator | None = None,
    daemon: bool = True,
    start: bool = True,
    collection: str = QUEUE_RUNNERS,
) -> list[threading.Thread]:
    """Start the threads of the queue runners in the graph's ``collection``; returns them.

    daskgraph has no ``QueueRunner``: the list is empty unless the collection holds objects
    with TensorFlow's ``create_threads(sess, coord=, daemon=, start=)``.

    >>> import daskgraph as dg
    >>> with dg.Graph().as_default(), dg.Session() as sess:
    ...     start_queue_runners(sess, Coordinator())
    []
    """
    if sess is None:
        sess = current()
        if sess is None:
            raise ValueError(
                "Cannot start queue runners: No default session is registered. Use `with "
                "sess.as_default()` or pass an explicit session to "
                "tf.start_queue_runners(sess=sess)"
            )
    graph = getattr(sess, "graph", None)
    if not callable(getattr(sess, "run", None)) or graph is None:
        raise TypeError(f"sess must be a `tf.Session` object. Given class: {type(sess)}")
    threads: list[threading.Thread] = []
    for runner in graph.get_collection(collection):
        threads.extend(runner.create_threads(sess, coord=coord, daemon=daemon, start=start))
    return threads
