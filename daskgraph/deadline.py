"""When a run must stop waiting: its deadline (TensorFlow's ``RunOptions.timeout_in_ms`` and
``ConfigProto.operation_timeout_in_ms``), or its session closed under it.

A session opens a deadline around a run (:func:`run_deadline`); the loops that wait for the
run's results (:mod:`daskgraph.runtime.client.dispatch`) wait at most until it (:func:`wait_time`)
and then
raise :class:`~daskgraph.errors.DeadlineExceededError` (:func:`raise_if_past`). The deadline
lives in a context variable, so concurrent runs from several threads each keep their own.
The same block may carry the session's *cancel* event: once ``Session.close()`` sets it, the
next check of those loops (within a liveness tick) raises
:class:`~daskgraph.errors.CancelledError`, as TensorFlow's running call does
(:func:`raise_if_cancelled`).

>>> with run_deadline(0):
...     wait_time(1.0)
1.0
>>> with run_deadline(50):
...     wait_time(1.0) <= 0.05
True
"""

from __future__ import annotations

import contextvars
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from daskgraph.errors import CancelledError, DeadlineExceededError

__all__ = [
    "cancelled_error",
    "has_deadline",
    "raise_if_cancelled",
    "raise_if_past",
    "run_deadline",
    "sent_deadline",
    "wait_time",
    "worker_deadline",
]

# (monotonic time the run must end by, the timeout in ms), or None for no deadline
_DEADLINE: contextvars.ContextVar[tuple[float, int] | None] = contextvars.ContextVar(
    "daskgraph_run_deadline", default=None
)

# the event that cancels the current run (its session's, set by close()), or None
_CANCEL: contextvars.ContextVar[threading.Event | None] = contextvars.ContextVar(
    "daskgraph_run_cancel", default=None
)


@contextmanager
def run_deadline(timeout_ms: int, cancel: threading.Event | None = None) -> Iterator[None]:
    """Give the waits inside the block a deadline ``timeout_ms`` from now (none for 0), and
    the event ``cancel`` that cancels them once set (see :func:`raise_if_cancelled`)."""
    value = (time.monotonic() + timeout_ms / 1000, timeout_ms) if timeout_ms > 0 else None
    token = _DEADLINE.set(value)
    cancel_token = _CANCEL.set(cancel)
    try:
        yield
    finally:
        _CANCEL.reset(cancel_token)
        _DEADLINE.reset(token)


def sent_deadline(timeout_ms: int) -> tuple[float, int] | None:
    """A run's deadline ``timeout_ms`` from now as workers get it (``RunStep.deadline``):
    the wall-clock time the run must end by and the timeout in ms; None for 0 (no deadline).

    >>> sent_deadline(0) is None, sent_deadline(200)[1]
    (True, 200)
    """
    return (time.time() + timeout_ms / 1000, timeout_ms) if timeout_ms > 0 else None


@contextmanager
def worker_deadline(sent: tuple[float, int]) -> Iterator[None]:
    """Give the kernels inside the block (a partition's, on its worker) the run's deadline
    ``sent`` (see :func:`sent_deadline`): a kernel that blocks, as a queue's dequeue, waits
    at most until it (:func:`wait_time`, :func:`raise_if_past`).

    >>> with worker_deadline((time.time() + 0.05, 50)):
    ...     wait_time(1.0) <= 0.05
    True
    """
    value = (time.monotonic() + sent[0] - time.time(), sent[1])
    token = _DEADLINE.set(value)
    try:
        yield
    finally:
        _DEADLINE.reset(token)


def has_deadline() -> bool:
    """Whether the current run has a deadline (a run without one may block until it ends).

    >>> has_deadline()
    False
    >>> with run_deadline(50):
    ...     has_deadline()
    True
    """
    return _DEADLINE.get() is not None


def wait_time(tick: float) -> float:
    """How long a wait may block: ``tick``, or less when the deadline comes sooner."""
    deadline = _DEADLINE.get()
    if deadline is None:
        return tick
    return max(0.001, min(tick, deadline[0] - time.monotonic()))


def raise_if_cancelled(what: str) -> None:
    """Raise :class:`~daskgraph.errors.CancelledError` if the current run was cancelled (its
    session was closed while it ran); ``what`` says what was being waited for.

    >>> cancel = threading.Event()
    >>> with run_deadline(0, cancel):
    ...     raise_if_cancelled("the partitions of the run")
    ...     cancel.set()
    ...     raise_if_cancelled("the partitions of the run")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    daskgraph.errors.CancelledError: Run cancelled while waiting for the partitions of the run...
    """
    cancel = _CANCEL.get()
    if cancel is not None and cancel.is_set():
        raise cancelled_error(what)


def cancelled_error(what: str) -> CancelledError:
    """The error of a run whose session was closed while it ran (``what``: what it was
    doing); field ``reason`` is ``"session closed"``.

    >>> cancelled_error("its steps").reason
    'session closed'
    """
    return CancelledError(
        f"Run cancelled while waiting for {what}: its Session was closed (Session.close(), "
        "or the end of its `with` block) during the run. Its tasks were cancelled (a kernel "
        "already running finishes in the background, and its results are dropped). Close a "
        "session only once the runs of every thread using it have returned, or open a new "
        "Session to run again.",
        reason="session closed",
    )


def raise_if_past(what: str) -> None:
    """Raise DeadlineExceededError (field ``timeout_ms``) if the run's deadline has passed,
    or CancelledError if the run was cancelled (:func:`raise_if_cancelled`); ``what`` says
    what was being waited for."""
    raise_if_cancelled(what)
    deadline = _DEADLINE.get()
    if deadline is None or time.monotonic() < deadline[0]:
        return
    raise DeadlineExceededError(
        f"Timed out waiting for {what}: the run took longer than its timeout of "
        f"{deadline[1]} ms (RunOptions.timeout_in_ms or the session config's "
        "operation_timeout_in_ms). Its tasks were cancelled (a kernel already running finishes "
        "in the background); raise the timeout, or run less per call.",
        timeout_ms=deadline[1],
    )
