"""Quiet, ordered teardown of the Dask processes and objects daskgraph starts.

A program that did its job exits 0 and prints nothing it did not print itself. Closing a Dask
cluster races its own comms: a worker's heartbeat in flight when its connections close, a
batched stream that notices the other end is gone, a client whose reconnection to a lost
scheduler is cancelled; Dask logs each of these (INFO to ERROR, often with a traceback), and
``SpecCluster`` gives its handlers their old level back before the last of them. This module
keeps those lines out of the user's stderr, and only those:

* :func:`quiet_close` — while daskgraph closes its own clients and clusters, a filter on the
  handlers that print Dask's loggers (``distributed``, ``tornado``, ``asyncio``) drops their
  records, but only those emitted in the closing thread and in the threads of the event loops
  being closed, and it stays until those loops' threads have ended. Everything else Dask logs
  (other threads, other clusters, any other time) prints as before. The records dropped go to
  the ``daskgraph.cluster.shutdown`` logger at DEBUG.
* :func:`quiet_process` — in daskgraph's nanny and worker processes, once their nanny or
  worker closes (:class:`~daskgraph.cluster.nanny_setup.DeviceNanny`, :func:`dask_teardown`): the
  process is about to end, and what Dask logs in it from then on is dropped the same way
  (the process's stderr is the user's; ``Nanny.close`` even gives the handlers their old
  level back before its last line).
* :func:`close_workers` — closes the workers of an embedded cluster in an order that leaves
  nothing behind: a worker process's nanny is asked to stop (SIGTERM, which ``dask spec``
  answers by closing its nanny, which closes its worker) and given :data:`NANNY_GRACE`
  seconds to exit on its own, so that its multiprocessing resources (the semaphores
  ``/mp-...`` of the nanny's queues and their resource tracker) are released by their owner;
  only then is what is left killed. (Killing the nanny's children first, as
  ``SubprocessWorker.close`` does, can kill the resource tracker while the nanny still runs:
  the nanny starts a new one, which then prints ``KeyError: '/mp-...'`` for every semaphore it
  never saw.)
* :func:`quiet_peer_departures` — a client that goes without closing (a program on another
  task stopped with Ctrl-C, or killed) makes the scheduler log a CRITICAL ``CommClosedError``
  traceback as it sends that client the news of its own departure; in the processes where
  daskgraph runs a scheduler, that record becomes one INFO line naming the peer.
* :func:`end_quietly_at_exit` — a run still under way on a daemon thread when the program
  exits meets the embedded cluster closing under it; rather than print that error's
  traceback (``Exception in thread ...``), the thread waits for the interpreter to end it,
  as a daemon thread inside TensorFlow's ``Session.run`` does.

>>> import logging
>>> with quiet_close():
...     logging.getLogger("distributed.batched").error("Batched Comm Closed")  # dropped
>>> quieting_now()
False
"""

from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import contextlib
import logging
import signal
import threading
from collections.abc import Iterable, Iterator
from typing import Any

__all__ = [
    "DASK_LOGGERS",
    "NANNY_GRACE",
    "close_workers",
    "dask_teardown",
    "end_quietly_at_exit",
    "exiting",
    "loop_thread",
    "quiet_at_exit",
    "quiet_close",
    "quiet_peer_departures",
    "quiet_process",
    "quieting_now",
]

logger = logging.getLogger("daskgraph.cluster.shutdown")

#: the loggers whose close-time records are dropped (and their children)
DASK_LOGGERS = ("distributed", "tornado", "asyncio")
#: seconds a worker process's nanny has to close its worker and exit before it is killed
#: (a nanny gives its worker 4 s: ``Nanny.close``'s 5 s timeout, times 0.8)
NANNY_GRACE = 7.0
#: seconds to wait for a closed loop's thread to end before the filter is taken away
LOOP_JOIN_TIMEOUT = 5.0
#: what CPython's thread pools say of work submitted once the interpreter is shutting down
_INTERPRETER_EXIT = "after interpreter shutdown"
#: ... and of work submitted to a pool shut down (at exit, the interpreter's last act before
#: its main thread ends is to stop every pool's threads; their pools then say this)
_POOL_SHUT = "cannot schedule new futures after"
#: seconds a daemon thread whose run met a pool shut down waits to see the main thread end
_EXIT_WAIT = 2.0
#: seconds to wait for a running loop to say which thread it runs in
_ASK_TIMEOUT = 2.0


class _CloseTimeFilter(logging.Filter):
    """Drops the records of :data:`DASK_LOGGERS` emitted in the threads being closed (every
    thread where ``everywhere``; every thread once the main thread has ended, where
    ``at_exit``), and sends them to ``daskgraph.cluster.shutdown`` at DEBUG."""

    def __init__(self) -> None:
        super().__init__()
        self.threads: collections.Counter[int] = collections.Counter()
        self.everywhere = False
        self.at_exit = False

    def filter(self, record: logging.LogRecord) -> bool:
        if not record.name.startswith(DASK_LOGGERS):
            return True
        if not (
            self.everywhere
            or self.threads[record.thread] > 0  # type: ignore[index]
            or (self.at_exit and _exit_noise(record))
        ):
            return True
        if not getattr(record, "daskgraph_quieted", False) and logger.isEnabledFor(logging.DEBUG):
            record.daskgraph_quieted = True  # one copy, however many handlers it reaches
            logger.debug("while closing: %s - %s", record.name, record.getMessage())
        return False


class _PeerGoneFilter(logging.Filter):
    """Turns the scheduler's CRITICAL "Closed comm ... while trying to write" record (with
    its traceback) into one INFO line naming the client that left."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno >= logging.ERROR and str(record.msg).startswith(_CLOSED_COMM):
            comm = record.args[0] if isinstance(record.args, tuple) and record.args else None
            peer = getattr(getattr(comm, "comm", None), "peer_address", None) or "a client"
            record.msg, record.args = "client %s left without closing its connection", (peer,)
            record.levelno, record.levelname = logging.INFO, "INFO"
            record.exc_info = record.exc_text = record.stack_info = None
        return True


#: how the scheduler's message about a client connection found closed begins
_CLOSED_COMM = "Closed comm %r while trying to write"
_peer_filter = _PeerGoneFilter()


def quiet_peer_departures() -> None:
    """In this process, a client that left without closing its connection is one INFO line
    of the scheduler's logger, not a CRITICAL traceback (see the module); idempotent.

    >>> quiet_peer_departures()
    >>> _peer_filter in logging.getLogger("distributed.scheduler").filters
    True
    """
    logging.getLogger("distributed.scheduler").addFilter(_peer_filter)  # (once: a set-like add)


def _exit_noise(record: logging.LogRecord) -> bool:
    """Whether ``record`` was logged while the process exits (see :func:`exiting`)."""
    error = record.exc_info[1] if record.exc_info else None
    return _POOL_SHUT in str(record.msg) or exiting(error, wait=False)


_filter = _CloseTimeFilter()
_lock = threading.Lock()
_handlers: set[logging.Handler] = set()  # the handlers _filter is on


def _dask_handlers() -> set[logging.Handler]:
    """The handlers that print records of :data:`DASK_LOGGERS`: theirs, their ancestors' (as
    far as records propagate) and ``logging.lastResort``."""
    found: set[logging.Handler] = set()
    for name in DASK_LOGGERS:
        log: logging.Logger | None = logging.getLogger(name)
        while log is not None:
            found.update(log.handlers)
            log = log.parent if log.propagate else None
    if logging.lastResort is not None:
        found.add(logging.lastResort)
    return found


def _enter(threads: Iterable[int] = (), everywhere: bool = False) -> None:
    """Put the filter on the handlers that print Dask's loggers now (again, for handlers added
    since), for ``threads`` (every thread where ``everywhere``)."""
    with _lock:
        _filter.threads.update(threads)
        _filter.everywhere = _filter.everywhere or everywhere
        for handler in _dask_handlers() - _handlers:
            handler.addFilter(_filter)
            _handlers.add(handler)


def _leave(threads: Iterable[int]) -> None:
    """``threads`` are done closing; the filter goes once no thread is."""
    with _lock:
        _filter.threads.subtract(threads)
        if _filter.everywhere or _filter.at_exit or +_filter.threads:
            return
        _filter.threads.clear()
        for handler in _handlers:
            handler.removeFilter(_filter)
        _handlers.clear()


def quiet_at_exit() -> None:
    """From now on, what Dask logs once the main thread has ended (the process is exiting:
    the embedded cluster closes, and a daemon thread's run in flight meets its scheduler
    shutting down) is dropped, in every thread. For processes that run an embedded cluster.
    """
    with _lock:
        _filter.at_exit = True
    _enter()


def quieting_now() -> bool:
    """Whether a :func:`quiet_close` block (or :func:`quiet_process`) is in force."""
    return bool(_filter.everywhere or +_filter.threads)


def loop_thread(loop: Any) -> int | None:
    """The ident of the thread running Tornado ``loop`` (a Dask client's or cluster's
    ``.loop``), or ``None`` where there is none or it is not running."""
    asyncio_loop = getattr(loop, "asyncio_loop", None)
    if asyncio_loop is None or not asyncio_loop.is_running():
        return None
    with contextlib.suppress(RuntimeError):  # no loop runs in this thread
        if asyncio.get_running_loop() is asyncio_loop:
            return threading.get_ident()
    answer: concurrent.futures.Future[int] = concurrent.futures.Future()
    try:
        loop.add_callback(lambda: answer.set_result(threading.get_ident()))
        return answer.result(timeout=_ASK_TIMEOUT)
    except (RuntimeError, concurrent.futures.TimeoutError):  # closed meanwhile, or stuck
        return None


@contextlib.contextmanager
def quiet_close(*loops: Any) -> Iterator[None]:
    """A block in which daskgraph closes its own Dask clients and clusters: what Dask logs in
    this thread and in the threads of ``loops`` (in every thread, when the process is
    exiting) is dropped, until the block ends and the
    threads of the loops it stopped have ended (at most :data:`LOOP_JOIN_TIMEOUT` seconds
    each; a loop still running afterwards, shared with others, is not waited for).

    Parameters
    ----------
    *loops
        The Tornado event loops (a client's or cluster's ``.loop``) of the objects being
        closed; ``None`` entries are skipped.
    """
    here = threading.get_ident()
    running = {loop: loop_thread(loop) for loop in loops if loop is not None}
    threads = [here, *(t for t in running.values() if t is not None and t != here)]
    # at exit (the main thread has ended), what Dask logs in any thread is close-time noise:
    # an in-flight run's submission from a daemon thread meets the scheduler shutting down
    _enter(threads, everywhere=not threading.main_thread().is_alive())
    try:
        yield
    finally:
        _join({t for loop, t in running.items() if t is not None and not _is_running(loop)})
        _leave(threads)


def _is_running(loop: Any) -> bool:
    asyncio_loop = getattr(loop, "asyncio_loop", None)
    return asyncio_loop is not None and asyncio_loop.is_running()


def _join(idents: set[int]) -> None:
    """Wait for the threads ``idents`` to end: a stopped loop's thread may still be finishing
    (and logging), and a thread's ident may be reused once it has ended, so the filter must
    neither end before it nor outlive it."""
    idents.discard(threading.get_ident())
    for thread in threading.enumerate():
        if thread.ident in idents:
            thread.join(LOOP_JOIN_TIMEOUT)


def quiet_process() -> None:
    """Drop what Dask logs in this process from now on (for a worker process that is
    closing; never in a user's process)."""
    _enter(everywhere=True)


def end_quietly_at_exit(error: BaseException | None = None) -> None:
    """Never return when the process is exiting and this is a daemon thread; otherwise
    return at once. A run that failed calls it with its ``error`` before raising it: an
    in-flight run at exit ends with the process, printing nothing.

    The process is exiting once its main thread has ended (the interpreter then only runs
    its exit hooks, which close the clusters, and ends the daemon threads with itself), or
    when ``error`` (or its cause) is the interpreter refusing new work at exit (its thread
    pools shut down just before the main thread ends).

    >>> end_quietly_at_exit()  # the main thread runs: nothing happens
    """
    if threading.current_thread().daemon and exiting(error):
        threading.Event().wait()


def exiting(error: BaseException | None = None, wait: bool = True) -> bool:
    """Whether the process is exiting: its main thread and every other non-daemon thread
    have ended (the interpreter runs its exit hooks), or ``error`` (or an error it was raised
    from) says the interpreter is shutting down: its pools refuse new work (then, where
    ``wait``, at most :data:`_EXIT_WAIT` seconds to see the main thread end, as it does at
    exit; never in the main thread).

    >>> exiting(), exiting(RuntimeError("cannot schedule new futures after interpreter shutdown"))
    (False, True)
    """
    if _threads_ended():
        return True
    seen = 0
    while error is not None and seen < 8:
        if _INTERPRETER_EXIT in str(error):
            return True
        if (
            wait
            and _POOL_SHUT in str(error)
            and threading.current_thread() is not threading.main_thread()
        ):
            threading.main_thread().join(_EXIT_WAIT)
            return _threads_ended()
        error, seen = error.__cause__ or error.__context__, seen + 1
    return False


def _threads_ended() -> bool:
    """Whether the main thread and every other non-daemon thread have ended."""
    return not threading.main_thread().is_alive() and not any(
        t.is_alive() and not t.daemon for t in threading.enumerate()
    )


def dask_teardown(worker: Any) -> None:
    """Dask's preload teardown hook (of :mod:`daskgraph.cluster.worker_preload`), run in a closing
    worker: a worker with a nanny lives in a process of its own, which ends with it, so what
    Dask logs there from now on (its comms closing) is dropped. A worker without a nanny (in
    a user's process) is left alone."""
    if getattr(worker, "nanny", None):
        quiet_process()


async def close_workers(workers: Iterable[Any], grace: float = NANNY_GRACE) -> None:
    """Close an embedded cluster's workers together: in-process ones by ``close()``, process
    ones (``SubprocessWorker``) by asking their nanny to stop and waiting up to ``grace``
    seconds for it to exit before ``close()`` kills what is left."""
    await asyncio.gather(*(_close_one(w, grace) for w in workers), return_exceptions=True)


async def _close_one(worker: Any, grace: float) -> None:
    process = getattr(worker, "process", None)
    if isinstance(process, asyncio.subprocess.Process) and process.returncode is None:
        with contextlib.suppress(ProcessLookupError):
            process.send_signal(signal.SIGTERM)  # `dask spec`: close the nanny, then exit
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(process.wait(), grace)
    await worker.close()
