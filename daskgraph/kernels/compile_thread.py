"""A background compiler that process exit never waits for.

Its one job is the thread on which daskgraph compiles what a run would otherwise wait for
(fused chains with Numba, :mod:`daskgraph.kernels.fused`; hot programs as Python,
:mod:`daskgraph.runtime.worker.codegen`). A ``concurrent.futures.ThreadPoolExecutor``
would do, but the interpreter joins its threads at exit: a program that ends while Numba
compiles a long chain waits for it (111 s for a 10,000-op chain, measured), and a compiler
cannot be interrupted. Here the thread is a daemon, registered with nothing: at exit the
jobs not started are dropped (their futures cancelled) and the one running is abandoned
with the thread.

**A compile that arrives under a busy run loop.** Numba compiles through llvmlite, whose
thousands of ``ctypes`` calls each release the GIL; a thread that gives the GIL away waits
the interpreter's switch interval (5 ms) to get it back from a thread that keeps it, such
as a ``Session.run`` loop. On the 2-core VM a continuous loop of the fine-grained program
(4,000 ops) so kept its 40 kernels away for 6-8 s, loaded from the cache or compiled. While
a job runs, the process's switch interval is :data:`SWITCH_INTERVAL` (0.2 ms; put back when
no job runs): the same loop then ran its compiled kernels from its second second with a warm
cache and its third with a cold one (:func:`quick_switches`).

>>> compiler = CompileThread("daskgraph-doctest")
>>> compiler.submit(sum, [1, 2, 3]).result(timeout=30)
6
"""

from __future__ import annotations

import atexit
import logging
import queue
import sys
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from contextlib import contextmanager
from typing import Any

__all__ = ["SWITCH_INTERVAL", "Builds", "CompileThread", "quick_switches"]

#: the interpreter's switch interval (seconds) while a compile job runs (see the module)
SWITCH_INTERVAL = 0.0002

_switches = threading.Lock()
_running = 0  # compile jobs running in the process, on any CompileThread
_saved = 0.005  # the switch interval before the first of them started


@contextmanager
def quick_switches() -> Iterator[None]:
    """While inside, the process's switch interval is at most :data:`SWITCH_INTERVAL`; the
    interval it had is put back when the last such block of the process ends.

    >>> before = sys.getswitchinterval()
    >>> with quick_switches():
    ...     sys.getswitchinterval() <= SWITCH_INTERVAL
    True
    >>> sys.getswitchinterval() == before
    True
    """
    global _running, _saved
    with _switches:
        if _running == 0:
            _saved = sys.getswitchinterval()
            sys.setswitchinterval(min(_saved, SWITCH_INTERVAL))
        _running += 1
    try:
        yield
    finally:
        with _switches:
            _running -= 1
            if _running == 0:
                sys.setswitchinterval(_saved)


#: set once the interpreter exits: no job starts after that
_EXITING = threading.Event()
atexit.register(_EXITING.set)


class CompileThread:
    """Jobs run one at a time, in order, on a daemon thread started by the first one.

    Parameters
    ----------
    name
        The thread's name (as a traceback or a profiler shows it).
    """

    def __init__(self, name: str) -> None:
        self.name = name
        self._jobs: queue.SimpleQueue[tuple[Future, Callable[..., Any], tuple]] = (
            queue.SimpleQueue()
        )
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def submit(self, fn: Callable[..., Any], *args: Any) -> Future:
        """Run ``fn(*args)`` on the thread; its future (cancelled if the process exits
        before the job starts)."""
        future: Future = Future()
        self._jobs.put((future, fn, args))
        with self._lock:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._work, name=self.name, daemon=True)
                self._thread.start()
        return future

    def _work(self) -> None:
        while True:
            future, fn, args = self._jobs.get()
            if _EXITING.is_set():
                future.cancel()
                continue
            if not future.set_running_or_notify_cancel():
                continue
            try:
                with quick_switches():
                    result = fn(*args)
            except BaseException as exc:  # (the job's caller reads it from the future)
                future.set_exception(exc)
            else:
                future.set_result(result)


logger = logging.getLogger("daskgraph.kernels.compile_thread")

_PENDING = object()  # (a key claimed, its thing not made yet)


class Builds:
    r"""What a :class:`CompileThread` makes, by key: the thing, None where it could not be
    made, and nothing yet for a key not asked for or being made (rent or buy: who asks
    first :meth:`claim`\ s a key, and the thread :meth:`make`\ s it).

    >>> builds = Builds(CompileThread("daskgraph-doctest"))
    >>> builds.claim("k"), builds.claim("k"), builds.known("k"), builds.get("k")
    (True, False, True, None)
    >>> builds.thread.submit(builds.make, "k", lambda: 42, "k").result(timeout=30)
    42
    >>> builds.get("k"), builds.make("k", lambda: 0, "k")
    (42, 42)
    """

    def __init__(self, thread: CompileThread) -> None:
        self.thread = thread
        self._made: dict[Any, Any] = {}
        self._lock = threading.Lock()

    def known(self, key: Any) -> bool:
        """Whether ``key`` was claimed (made or being made)."""
        return key in self._made

    def get(self, key: Any) -> Any:
        """What was made for ``key``, or None (not made, not yet or not at all)."""
        found = self._made.get(key)
        return None if found is _PENDING else found

    def claim(self, key: Any) -> bool:
        """Mark ``key`` as being made; False where it was claimed before."""
        with self._lock:
            if key in self._made:
                return False
            self._made[key] = _PENDING
            return True

    def make(self, key: Any, make: Callable[[], Any], what: Any) -> Any:
        """What was made for ``key``, made now by ``make()`` in this thread where it is not
        yet (None where ``make`` fails: ``what`` names it in the debug log)."""
        found = self._made.get(key, _PENDING)
        if found is not _PENDING:
            return found
        try:
            made = make()
        except Exception as exc:  # (no Numba, or a loop it cannot type): the slow way stays
            logger.debug("%r not compiled: %s", what, exc)
            made = None
        self._made[key] = made
        return made

    def settle(self, timeout: float) -> None:
        """Wait until the jobs queued on the thread so far are done."""
        self.thread.submit(lambda: None).result(timeout)
